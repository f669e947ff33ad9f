#!/usr/bin/env bash
# Install the TypeScript MCP SDK (npm @modelcontextprotocol/sdk), a third-party client peer driven by
# tests/peers/ts_client.mjs, into .cache/ts-sdk on the Node 22 that .ci/conformance.sh installs.
# Idempotent; the tests in tests/peers/ skip with this command when it is absent.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TS_SDK_VERSION="1.32.2"
DIR="${REPO}/.cache/ts-sdk"

bash "${REPO}/.ci/conformance.sh" install
NODE_BIN_DIR="$(ls -d "${REPO}"/.cache/conformance/node-22*/node_modules/node-linux-*/bin | head -n 1)"
if [[ -f "${DIR}/node_modules/@modelcontextprotocol/sdk/package.json" ]] && [[ "$(cat "${DIR}/.installed" 2>/dev/null)" == "$TS_SDK_VERSION" ]]; then
  exit 0
fi
echo "ts-sdk: installing @modelcontextprotocol/sdk@${TS_SDK_VERSION} into ${DIR}" >&2
mkdir -p "$DIR"
rm -f "${DIR}/.installed"
printf '{ "private": true, "type": "module", "dependencies": { "@modelcontextprotocol/sdk": "%s" } }\n' "$TS_SDK_VERSION" >"${DIR}/package.json"
(cd "$DIR" && PATH="${NODE_BIN_DIR}:${PATH}" npm install --no-audit --no-fund --ignore-scripts --loglevel=error) >&2
[[ -f "${DIR}/node_modules/@modelcontextprotocol/sdk/package.json" ]] || { echo "ts-sdk: the SDK is missing after install" >&2; exit 2; }
printf '%s' "$TS_SDK_VERSION" >"${DIR}/.installed"
