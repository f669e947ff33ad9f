#!/usr/bin/env bash
# Install the MCP Inspector (its non-interactive `mcpdo` client is a third-party peer in
# tests/e2e/test_url_mode_inspector.py) into .cache/inspector, on the Node 22 that
# .ci/conformance.sh installs. Idempotent; the tests skip with a reason when it is absent.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INSPECTOR_VERSION="2.12.0"
DIR="${REPO}/.cache/inspector"

bash "${REPO}/.ci/conformance.sh" install
NODE_BIN_DIR="$(ls -d "${REPO}"/.cache/conformance/node-22*/node_modules/node-linux-*/bin | head -n 1)"
if [[ -x "${DIR}/node_modules/.bin/mcpdo" ]] && [[ "$(cat "${DIR}/.installed" 2>/dev/null)" == "$INSPECTOR_VERSION" ]]; then
  exit 0
fi
echo "inspector: installing @modelcontextprotocol/inspector@${INSPECTOR_VERSION} into ${DIR}" >&2
mkdir -p "$DIR"
rm -f "${DIR}/.installed"
printf '{ "private": true, "dependencies": { "@modelcontextprotocol/inspector": "%s" } }\n' "$INSPECTOR_VERSION" >"${DIR}/package.json"
(cd "$DIR" && PATH="${NODE_BIN_DIR}:${PATH}" npm install --no-audit --no-fund --ignore-scripts --loglevel=error) >&2
[[ -x "${DIR}/node_modules/.bin/mcpdo" ]] || { echo "inspector: mcpdo missing after install" >&2; exit 2; }
printf '%s' "$INSPECTOR_VERSION" >"${DIR}/.installed"
