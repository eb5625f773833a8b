#!/usr/bin/env bash
# Every include follows the layer graph of src/layers.txt: a file may include its own layer and
# the layers its line lists, nothing else. Checked over src/, testkit/, tests/, bench/ and fuzz/.
# Prints each offending include (file:line: what includes what, and what it may include); exits
# 1 if any. The build checks the same graph for the libraries' links (cmake/layers.cmake).
#
# Usage: bash scripts/check-layers.sh [repo-root]
set -euo pipefail
root=$(realpath "${1:-.}")
cd "$root"

declare -A allowed=()
while IFS= read -r line; do
  line=${line%%#*}
  [[ "$line" == *:* ]] || continue
  allowed[${line%%:*}]=" $(echo ${line#*:}) "
done <src/layers.txt

# The layer of a file, given its path from the root; empty when it is in none.
layer_of() {
  local path=$1
  case "$path" in
    src/runtime/local/*) echo runtime/local ;;
    src/runtime/kubernetes/*) echo runtime/kubernetes ;;
    src/*/*) local rest=${path#src/}; echo "${rest%%/*}" ;;
    tests/*/*) local rest=${path#tests/}; echo "tests/${rest%%/*}" ;;
    testkit/* | bench/* | fuzz/*) echo "${path%%/*}" ;;
  esac
}

# The layer an include names: "layer/..." from the include path (src/, tests/ for fakes/, the
# root for testkit/), else a path relative to the including file.
included_layer() {
  local file=$1 target=$2
  case "$target" in
    fakes/*) echo tests/fakes; return ;;
    testkit/*) echo testkit; return ;;
  esac
  if [[ "$target" == */* && "$target" != ../* && -d "src/${target%%/*}" ]]; then
    layer_of "src/$target"
    return
  fi
  local resolved
  resolved=$(realpath -m --relative-to="$root" "$(dirname "$file")/$target")
  [ -e "$resolved" ] && layer_of "$resolved"
  return 0
}

bad=0
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  target=$(sed -E 's/^#include "([^"]+)".*/\1/' <<<"${rest#*:}")
  layer=$(layer_of "$file")
  if [ -z "${allowed[$layer]+set}" ]; then
    echo "$file: not in a layer of src/layers.txt"
    bad=1
    continue
  fi
  included=$(included_layer "$file" "$target")
  [ -n "$included" ] && [ "$included" != "$layer" ] || continue  # its own layer, generated or third-party
  if [[ "${allowed[$layer]}" != *" $included "* ]]; then
    echo "$file:$line: $layer includes $included ($target); $layer may include:${allowed[$layer]:- nothing}"
    bad=1
  fi
done < <(grep -rnE '^#include "' src testkit tests bench fuzz --include='*.h' --include='*.cc' --include='*.in' 2>/dev/null)
[ "$bad" = 0 ] && echo "layers: every include follows src/layers.txt"
exit "$bad"
