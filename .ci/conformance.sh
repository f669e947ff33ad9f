#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance) here.
#
# Usage:
#   .ci/conformance.sh [reference]
#       Default (used by `make conformance`). In a loopback-only network namespace:
#       start the reference server (.venv/bin/mcp-elicit serve-reference ...), run the
#       2025-11-25 and 2026-07-28 server legs against http://127.0.0.1:PORT/mcp, and,
#       when CONFORMANCE_CLIENT_COMMAND is set, the client leg against that command.
#   .ci/conformance.sh server URL SPEC_VERSION [SCENARIO...]
#       Run server scenarios against an already running server (URL must be loopback).
#       Without SCENARIO, runs this project's set for SPEC_VERSION (see below).
#   .ci/conformance.sh client SPEC_VERSION COMMAND [SCENARIO...]
#       Run client scenarios against COMMAND inside a loopback-only network namespace.
#       The suite appends the mock server's URL as the last argument of COMMAND and sets
#       MCP_CONFORMANCE_SCENARIO / MCP_CONFORMANCE_PROTOCOL_VERSION (and, for some
#       scenarios, MCP_CONFORMANCE_CONTEXT). COMMAND is split on single spaces by the
#       suite, then run through a shell: no quoted arguments with spaces.
#   .ci/conformance.sh list [--server|--client] [--spec-version V]
#   .ci/conformance.sh install        install Node and the suite only (idempotent)
#   .ci/conformance.sh suite ARGS...  the suite's own CLI, for debugging
#
# Environment:
#   CONFORMANCE_SERVER_COMMAND  server command for `reference`; `{port}` is replaced by the
#                               port (default: the mcp-elicit reference server, HTTP, 127.0.0.1)
#   CONFORMANCE_CLIENT_COMMAND  client command for the client leg of `reference` (default: the kit's
#                               `mcp-elicit conformance-client`; set to "" and the
#                               client leg is reported as not configured)
#   CONFORMANCE_RESULTS         where checks.json and logs go (default .cache/conformance/results/<time>)
#
# Every scenario must end with checks that all succeed: a FAILURE, a WARNING (a SHOULD the
# suite reports without failing), a scenario the suite skips, or a crash fails this script.
# There is deliberately no expected-failures file.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SELF="${REPO}/.ci/$(basename "${BASH_SOURCE[0]}")"
CACHE="${REPO}/.cache/conformance"

# Pinned versions. The suite needs Node >= 22 (it imports fs.globSync); Debian ships 20.
NODE_VERSION="22.23.3"
SUITE_VERSION="0.2.0-alpha.12"
# The suite declares its dependencies as ^ranges; pin the resolved versions it was tested
# with, so a new release of its MCP SDK or JSON-schema validator cannot change the verdict.
SUITE_OVERRIDES='{
    "@modelcontextprotocol/sdk": "1.32.2",
    "@octokit/rest": "22.0.1",
    "ajv": "8.20.0",
    "ajv-formats": "3.0.1",
    "commander": "14.0.3",
    "eventsource-parser": "3.1.1",
    "express": "5.3.0",
    "jose": "6.2.17",
    "undici": "7.30.2",
    "yaml": "2.9.1",
    "zod": "4.6.7"
  }'

# This project's scenario sets. The three elicitation scenarios exist only up to
# 2025-11-25 (the suite marks them removed in 2026-07-28); the input-required-result ones
# only from 2026-07-28; basic-sampling and basic-list-roots run too, as `gather` serves them.
SERVER_SCENARIOS_2025_11_25=(
  tools-call-elicitation
  elicitation-sep1034-defaults
  elicitation-sep1330-enums
)
SERVER_SCENARIOS_2026_07_28=(
  input-required-result-basic-elicitation
  input-required-result-basic-sampling
  input-required-result-basic-list-roots
  input-required-result-request-state
  input-required-result-multiple-input-requests
  input-required-result-multi-round
  input-required-result-missing-input-response
  input-required-result-non-tool-request
  input-required-result-result-type
  input-required-result-unsupported-methods
  input-required-result-tampered-state
  input-required-result-capability-check
  input-required-result-ignore-extra-params
  input-required-result-validate-input
)
CLIENT_SCENARIOS_2025_11_25=(
  elicitation-sep1034-client-defaults
)

SCENARIO_TIMEOUT_MS=30000     # the suite's own per-scenario timeout (its default)
SCENARIO_WALL_SECONDS=120     # hard stop for one suite run, in case the suite itself hangs
SERVER_START_SECONDS=30       # how long the reference server may take to accept connections

log() { printf '%s\n' "$*" >&2; }
die() { log "conformance: $*"; exit 2; }

node_arch() {
  case "$(uname -m)" in
    x86_64 | amd64) echo x64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) die "no Node package for architecture $(uname -m)" ;;
  esac
}

NODE_DIR="${CACHE}/node-${NODE_VERSION}"
NODE_PKG="node-linux-$(node_arch)"
NODE_BIN="${NODE_DIR}/node_modules/${NODE_PKG}/bin/node"
SUITE_DIR="${CACHE}/suite-${SUITE_VERSION}"
SUITE_JS="${SUITE_DIR}/node_modules/@modelcontextprotocol/conformance/dist/index.js"

npm_install() {
  # --ignore-scripts: nothing here needs an install script. The user's npmrc may carry
  # settings npm warns about; --loglevel=error keeps the output to real problems.
  (cd "$1" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error) >&2
}

install_node() {
  if [[ -x "$NODE_BIN" ]] && [[ "$("$NODE_BIN" --version 2>/dev/null)" == "v${NODE_VERSION}" ]]; then
    return
  fi
  log "conformance: installing Node ${NODE_VERSION} into ${NODE_DIR}"
  mkdir -p "$NODE_DIR"
  # node-linux-<arch> is the package `npm install node@22` fetches from its preinstall
  # script; installing it directly gives the same binary without running any script.
  printf '{ "private": true, "dependencies": { "%s": "%s" } }\n' "$NODE_PKG" "$NODE_VERSION" \
    >"${NODE_DIR}/package.json"
  npm_install "$NODE_DIR"
  [[ "$("$NODE_BIN" --version)" == "v${NODE_VERSION}" ]] || die "Node install failed"
}

install_suite() {
  local manifest stamp
  manifest="$(printf '{\n  "private": true,\n  "dependencies": { "@modelcontextprotocol/conformance": "%s" },\n  "overrides": %s\n}\n' \
    "$SUITE_VERSION" "$SUITE_OVERRIDES")"
  stamp="$(printf '%s' "$manifest" | sha256sum | cut -d' ' -f1)"
  if [[ -f "$SUITE_JS" ]] && [[ "$(cat "${SUITE_DIR}/.installed" 2>/dev/null)" == "$stamp" ]]; then
    return
  fi
  log "conformance: installing @modelcontextprotocol/conformance@${SUITE_VERSION} into ${SUITE_DIR}"
  mkdir -p "$SUITE_DIR"
  rm -f "${SUITE_DIR}/.installed"
  printf '%s' "$manifest" >"${SUITE_DIR}/package.json"
  npm_install "$SUITE_DIR"
  [[ -f "$SUITE_JS" ]] || die "suite install failed: ${SUITE_JS} missing"
  printf '%s' "$stamp" >"${SUITE_DIR}/.installed"
}

install_all() {
  command -v npm >/dev/null || die "npm is required"
  install_node
  install_suite
}

suite() {
  PATH="$(dirname "$NODE_BIN"):${PATH}" "$NODE_BIN" "$SUITE_JS" "$@"
}

in_netns() { [[ "${CONFORMANCE_IN_NETNS:-}" == 1 ]]; }

# Run the arguments in a fresh network namespace whose only interface is loopback: the
# suite's client-mode mock servers listen on all interfaces, and nothing here may leave
# the machine.
loopback_netns() {
  if in_netns; then
    "$@"
    return
  fi
  local unshare=(unshare --net)
  [[ "$(id -u)" == 0 ]] || unshare=(unshare --map-root-user --net)
  CONFORMANCE_IN_NETNS=1 CONFORMANCE_RESULTS="$RESULTS" \
    "${unshare[@]}" -- bash -c 'ip link set lo up && exec "$@"' netns "$@"
}

require_loopback_url() {
  case "$1" in
    http://127.0.0.1:* | http://localhost:* | http://\[::1\]:*) ;;
    *) die "refusing non-loopback URL: $1 (use http://127.0.0.1:PORT/mcp)" ;;
  esac
}

# Results: one line per scenario in $SUMMARY, details of every failed check in $DETAILS.
RESULTS="${CONFORMANCE_RESULTS:-${CACHE}/results/$(date -u +%Y%m%dT%H%M%SZ)}"
SUMMARY="${RESULTS}/summary.tsv"
DETAILS="${RESULTS}/failures.txt"
FAILED_SCENARIOS=0
RAN_SCENARIOS=0

# Reads one checks.json; prints "passed failed warnings" and appends non-passing checks.
# shellcheck disable=SC2016 # JavaScript template literals, not shell expansions
EVALUATE_JS='
const fs = require("fs");
const [file, label, details] = process.argv.slice(1);
const checks = JSON.parse(fs.readFileSync(file, "utf8"));
const count = (s) => checks.filter((c) => c.status === s).length;
for (const c of checks) {
  if (c.status === "FAILURE" || c.status === "WARNING") {
    fs.appendFileSync(details, `${label}: ${c.status} ${c.id}: ${c.errorMessage ?? c.description}\n`);
  }
}
console.log(`${count("SUCCESS")} ${count("FAILURE")} ${count("WARNING")}`);
'

# run_scenario server|client TARGET SPEC_VERSION SCENARIO
run_scenario() {
  local mode="$1" target="$2" version="$3" scenario="$4"
  local label="${mode} ${version} ${scenario}"
  local out="${RESULTS}/${mode}-${version}/${scenario//\//_}"
  local args rc start millis seconds verdict passed=0 failed=0 warnings=0 checks
  mkdir -p "$out"
  if [[ "$mode" == server ]]; then
    args=(server --url "$target")
  else
    args=(client --command "$target")
  fi
  args+=(--scenario "$scenario" --spec-version "$version" --timeout "$SCENARIO_TIMEOUT_MS" -o "$out")
  start="$(date +%s%N)"
  set +e
  PATH="$(dirname "$NODE_BIN"):${PATH}" timeout --kill-after=10 "$SCENARIO_WALL_SECONDS" \
    "$NODE_BIN" "$SUITE_JS" "${args[@]}" >"${out}/console.log" 2>&1
  rc=$?
  set -e
  millis="$((($(date +%s%N) - start) / 1000000))"
  seconds="$((millis / 1000)).$(printf '%03d' $((millis % 1000)))"
  checks="$(find "$out" -name checks.json -print -quit)"
  if grep -q '^SKIPPED:' "${out}/console.log"; then
    verdict=SKIPPED
    printf '%s: %s\n' "$label" "$(grep -m1 '^SKIPPED:' "${out}/console.log")" >>"$DETAILS"
  elif [[ -z "$checks" ]]; then
    verdict=ERROR
    printf '%s: ERROR: no checks.json (suite exit %s), see %s\n' "$label" "$rc" "${out}/console.log" >>"$DETAILS"
  else
    read -r passed failed warnings < <("$NODE_BIN" -e "$EVALUATE_JS" "$checks" "$label" "$DETAILS" ||
      echo 0 0 0) || true
    if ((failed > 0 || warnings > 0 || passed == 0)); then
      verdict=FAIL
    elif ((rc != 0)); then
      verdict=FAIL
      printf '%s: suite exited %s with no failed check, see %s\n' "$label" "$rc" "${out}/console.log" >>"$DETAILS"
    else
      verdict=PASS
    fi
  fi
  RAN_SCENARIOS=$((RAN_SCENARIOS + 1))
  [[ "$verdict" == PASS ]] || FAILED_SCENARIOS=$((FAILED_SCENARIOS + 1))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%ss\n' "$verdict" "$mode" "$version" "$scenario" \
    "$passed" "$failed" "$warnings" "$seconds" >>"$SUMMARY"
  log "$(printf '  %-7s %-6s %-10s %-48s %3s ok %3s failed %3s warnings %8ss' \
    "$verdict" "$mode" "$version" "$scenario" "$passed" "$failed" "$warnings" "$seconds")"
}

default_server_scenarios() {
  case "$1" in
    2025-11-25) printf '%s\n' "${SERVER_SCENARIOS_2025_11_25[@]}" ;;
    2026-07-28) printf '%s\n' "${SERVER_SCENARIOS_2026_07_28[@]}" ;;
    *) die "no default server scenarios for spec version $1" ;;
  esac
}

default_client_scenarios() {
  case "$1" in
    2025-11-25) printf '%s\n' "${CLIENT_SCENARIOS_2025_11_25[@]}" ;;
    2026-07-28) ;;
    *) die "no default client scenarios for spec version $1" ;;
  esac
}

begin_results() {
  mkdir -p "$RESULTS"
  : >"$SUMMARY"
  : >"$DETAILS"
}

print_summary() {
  log ""
  log "=== MCP conformance summary (suite ${SUITE_VERSION}, node ${NODE_VERSION}) ==="
  if [[ -s "$SUMMARY" ]]; then
    while IFS=$'\t' read -r verdict mode version scenario passed failed warnings seconds; do
      log "$(printf '  %-7s %-6s %-10s %-48s %3s ok %3s failed %3s warnings %8s' \
        "$verdict" "$mode" "$version" "$scenario" "$passed" "$failed" "$warnings" "$seconds")"
    done <"$SUMMARY"
  fi
  if [[ -s "$DETAILS" ]]; then
    log ""
    log "Problems:"
    sed 's/^/  /' "$DETAILS" >&2
  fi
  log ""
  log "${RAN_SCENARIOS} scenario run(s), ${FAILED_SCENARIOS} not passing. Logs: ${RESULTS}"
  if ((RAN_SCENARIOS == 0)); then
    log "conformance: FAILED (nothing ran)"
    return 1
  fi
  if ((FAILED_SCENARIOS > 0)); then
    log "conformance: FAILED"
    return 1
  fi
  log "conformance: PASSED"
}

run_server_leg() {
  local url="$1" version="$2" scenario
  shift 2
  log "--- server scenarios, spec ${version}, against ${url}"
  for scenario in "$@"; do
    run_scenario server "$url" "$version" "$scenario"
  done
}

run_client_leg() {
  local command="$1" version="$2" scenario
  shift 2
  log "--- client scenarios, spec ${version}, command: ${command}"
  for scenario in "$@"; do
    run_scenario client "$command" "$version" "$scenario"
  done
}

free_port() {
  "$NODE_BIN" -e 'const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# `{port}` is replaced by a free port; the server must serve MCP at /mcp on 127.0.0.1.
DEFAULT_SERVER_COMMAND="${REPO}/.venv/bin/mcp-elicit serve-reference --transport http --host 127.0.0.1 --port {port}"
# The client leg defaults to the mcp-elicit kit's conformance client (accepts forms with defaults);
# set CONFORMANCE_CLIENT_COMMAND to another command, or to "" to skip the leg.
: "${CONFORMANCE_CLIENT_COMMAND=${REPO}/.venv/bin/mcp-elicit conformance-client}"

SERVER_PID=""
SERVER_COMMAND=""
stop_server() {
  local deadline
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while kill -0 "$SERVER_PID" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}

# start_server PORT: starts the server in the background and waits until it accepts
# connections on 127.0.0.1:PORT.
start_server() {
  local port="$1" command deadline placeholder='{port}'
  command="${CONFORMANCE_SERVER_COMMAND:-$DEFAULT_SERVER_COMMAND}"
  command="${command//"$placeholder"/$port}"
  SERVER_COMMAND="$command"
  log "--- starting server: ${command}"
  bash -c "exec ${command}" >"${RESULTS}/server.log" 2>&1 &
  SERVER_PID=$!
  deadline=$((SECONDS + SERVER_START_SECONDS))
  until (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      log "conformance: the server exited before accepting connections; its log:"
      sed 's/^/  /' "${RESULTS}/server.log" >&2
      return 1
    fi
    if ((SECONDS >= deadline)); then
      log "conformance: the server did not accept connections within ${SERVER_START_SECONDS}s"
      return 1
    fi
    sleep 0.2
  done
}

# The whole default run, inside the loopback-only namespace.
reference_inside() {
  local port url version started
  begin_results
  trap stop_server EXIT
  port="$(free_port)"
  url="http://127.0.0.1:${port}/mcp"
  started="$(date +%s)"
  if start_server "$port"; then
    for version in 2025-11-25 2026-07-28; do
      mapfile -t scenarios < <(default_server_scenarios "$version")
      run_server_leg "$url" "$version" "${scenarios[@]}"
    done
  else
    printf 'server did not start (command: %s), see %s\n' "$SERVER_COMMAND" "${RESULTS}/server.log" >>"$DETAILS"
    FAILED_SCENARIOS=$((FAILED_SCENARIOS + 1))
  fi
  stop_server
  if [[ -n "${CONFORMANCE_CLIENT_COMMAND:-}" ]]; then
    mapfile -t scenarios < <(default_client_scenarios 2025-11-25)
    run_client_leg "$CONFORMANCE_CLIENT_COMMAND" 2025-11-25 "${scenarios[@]}"
  else
    log "--- client scenarios: not configured (set CONFORMANCE_CLIENT_COMMAND)"
  fi
  log "--- total $(($(date +%s) - started))s"
  print_summary
}

usage() {
  sed -n '2,/^set -euo pipefail/p' "$SELF" | sed -e '$d' -e 's/^# \{0,1\}//'
}

main() {
  local command="${1:-reference}"
  [[ $# -eq 0 ]] || shift
  case "$command" in
    -h | --help | help)
      usage
      ;;
    install)
      install_all
      log "conformance: node ${NODE_BIN}, suite ${SUITE_JS}"
      ;;
    list)
      install_all
      suite list "$@"
      ;;
    suite)
      install_all
      suite "$@"
      ;;
    server)
      [[ $# -ge 2 ]] || die "usage: $0 server URL SPEC_VERSION [SCENARIO...]"
      local url="$1" version="$2"
      shift 2
      require_loopback_url "$url"
      install_all
      begin_results
      if [[ $# -eq 0 ]]; then mapfile -t scenarios < <(default_server_scenarios "$version"); else scenarios=("$@"); fi
      run_server_leg "$url" "$version" "${scenarios[@]}"
      print_summary
      ;;
    client)
      [[ $# -ge 2 ]] || die "usage: $0 client SPEC_VERSION COMMAND [SCENARIO...]"
      install_all
      loopback_netns bash "$SELF" _client-inside "$@"
      ;;
    _client-inside)
      in_netns || die "_client-inside is internal"
      local version="$1" client_command="$2"
      shift 2
      begin_results
      if [[ $# -eq 0 ]]; then mapfile -t scenarios < <(default_client_scenarios "$version"); else scenarios=("$@"); fi
      run_client_leg "$client_command" "$version" "${scenarios[@]}"
      print_summary
      ;;
    reference)
      install_all
      loopback_netns bash "$SELF" _reference-inside
      ;;
    _reference-inside)
      in_netns || die "_reference-inside is internal"
      reference_inside
      ;;
    *)
      usage >&2
      exit 2
      ;;
  esac
}

main "$@"
