#!/usr/bin/env bash
# The OpenAPI document a real `hpcplane server` serves (GET /api/v1/openapi.json) is valid
# OpenAPI 3.1 by PyPI's openapi-spec-validator (scripts/python-tools.txt, installed by
# scripts/install-deps.sh test), every error printed. The server runs on loopback with a state
# directory of its own, both gone when the test ends.
#
# Usage: bash tests/lint/openapi_valid_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: openapi_valid_test.sh BUILD_DIR}" && pwd)
validator=${OPENAPI_SPEC_VALIDATOR:-/opt/hpcplane/python-tools/bin/openapi-spec-validator}
[ -x "$validator" ] || { echo "FAIL: no $validator (scripts/install-deps.sh test installs it)"; exit 1; }

state=$(mktemp -d /tmp/hpcplane-openapi-test-XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$state"
}
trap cleanup EXIT
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HPCPLANE_STATE_DIR=$state "$build/hpcplane" server --listen "127.0.0.1:$port" >"$state/server.log" 2>&1 &
server_pid=$!
token_file=$state/controlplane/admin.token
for _ in $(seq 300); do
  # The token in a header file (0600, in the state directory), never on a command line.
  [ -s "$token_file" ] && (umask 077 && printf 'Authorization: Bearer %s\n' "$(cat "$token_file")" >"$state/auth") &&
    curl -sf -o "$state/openapi.json" -H "@$state/auth" "http://127.0.0.1:$port/api/v1/openapi.json" && break
  kill -0 "$server_pid" 2>/dev/null || { echo "FAIL: the server exited:"; cat "$state/server.log"; exit 1; }
  sleep 0.1
done
[ -s "$state/openapi.json" ] || { echo "FAIL: the server served no document in 30 s:"; cat "$state/server.log"; exit 1; }
if ! out=$("$validator" --schema 3.1 --errors all "$state/openapi.json" 2>&1); then
  echo "FAIL: GET /api/v1/openapi.json is not valid OpenAPI 3.1:"
  echo "$out" | head -n 60
  exit 1
fi
paths=$(/usr/bin/python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["paths"]))' "$state/openapi.json")
echo "openapi: the served document ($paths paths) is valid OpenAPI 3.1 ($("$validator" --help >/dev/null && basename "$validator"))"
