#!/usr/bin/env bash
# Install the TypeScript SDK (npm @modelcontextprotocol/sdk) into .cache/ts-peer, for the peer
# server tests/peers/ts_server.mjs (tests/peers/test_ts_server.py). Uses the Node 22 that
# .ci/conformance.sh installs when present, else the node on PATH. Idempotent; the tests skip
# naming this script when the package is absent.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SDK_VERSION="1.32.2"
DIR="${REPO}/.cache/ts-peer"
NODE_BIN_DIR="$(ls -d "${REPO}"/.cache/conformance/node-22*/node_modules/node-linux-*/bin 2>/dev/null | head -n 1 || true)"
if [[ -f "${DIR}/node_modules/@modelcontextprotocol/sdk/package.json" ]] && [[ "$(cat "${DIR}/.installed" 2>/dev/null)" == "$SDK_VERSION" ]]; then
  exit 0
fi
echo "ts-peer: installing @modelcontextprotocol/sdk@${SDK_VERSION} into ${DIR}" >&2
mkdir -p "$DIR"
rm -f "${DIR}/.installed"
printf '{ "private": true, "type": "module", "dependencies": { "@modelcontextprotocol/sdk": "%s" } }\n' "$SDK_VERSION" >"${DIR}/package.json"
(cd "$DIR" && PATH="${NODE_BIN_DIR:+${NODE_BIN_DIR}:}${PATH}" npm install --no-audit --no-fund --ignore-scripts --loglevel=error) >&2
printf '%s' "$SDK_VERSION" >"${DIR}/.installed"
