#!/usr/bin/env bash
# The layer check (scripts/check-layers.sh over src/layers.txt) can fail: on a tree that is the
# project's graph with one bad include it exits 1 and names the file, the line and the edge; the
# same tree without that include passes. The cases are the ones the graph exists to stop: the
# control plane's server including the operator, the server and the data plane's agent including
# each other (siblings that speak only messages/), a benchmark including the tests' code, a
# layer including one above it, and a file that is in no layer.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /tmp/hpcplane-layers-test-XXXXXX)
trap 'rm -rf "$dir"' EXIT
passed=0

tree() {
  rm -rf "$dir/root" && mkdir -p "$dir/root/src" && cp "$top/src/layers.txt" "$dir/root/src/"
  local f
  for f in src/common/result.h src/api/types.h src/runtime/pod_runtime.h src/operator/store.h src/server/store.h \
           src/agent/agent.h src/messages/relay_messages.h \
           tests/integration/harness.h testkit/processes.h bench/x.cc; do
    mkdir -p "$dir/root/$(dirname "$f")" && echo '#include "common/result.h"' >"$dir/root/$f"
  done
  echo '#pragma once' >"$dir/root/src/common/result.h"
}

refused() {  # refused NAME FILE INCLUDE EXPECTED-MESSAGE
  tree
  mkdir -p "$dir/root/$(dirname "$2")" && printf '#pragma once\n#include "%s"\n' "$3" >>"$dir/root/$2"
  if out=$(bash "$top/scripts/check-layers.sh" "$dir/root" 2>&1); then
    echo "FAIL: $1: the check passed:"; echo "$out"; exit 1
  fi
  grep -qF "$4" <<<"$out" || { echo "FAIL: $1: expected '$4' in:"; echo "$out"; exit 1; }
  passed=$((passed + 1))
}

tree
bash "$top/scripts/check-layers.sh" "$dir/root" >/dev/null || { echo "FAIL: a clean tree was refused"; exit 1; }
passed=$((passed + 1))
refused "server -> operator" src/server/store.h operator/store.h \
  "src/server/store.h:3: server includes operator (operator/store.h)"
refused "agent -> server" src/agent/agent.h server/store.h "src/agent/agent.h:3: agent includes server (server/store.h)"
refused "server -> agent" src/server/store.h agent/agent.h "src/server/store.h:3: server includes agent (agent/agent.h)"
refused "messages -> server" src/messages/relay_messages.h server/store.h "messages includes server"
refused "bench -> tests" bench/x.cc ../tests/integration/harness.h \
  "bench/x.cc:3: bench includes tests/integration (../tests/integration/harness.h)"
refused "upward" src/api/types.h operator/store.h "src/api/types.h:3: api includes operator"
refused "no layer" src/nowhere/x.h common/result.h "src/nowhere/x.h: not in a layer of src/layers.txt"
refused "only app wires a runtime" src/operator/store.h runtime/local/x.h \
  "operator includes runtime/local"
echo "layer check: $passed passed, 0 failed"
