#!/usr/bin/env bash
# Includes follow the layers (DESIGN.md, Layers): a file may include its own layer and layers
# below it, never one above or beside it. Prints each offending include; exits 1 if any.
#
#   common(0) <- api(1), runtime(1) <- slurm(2), platform(2) <- operator(3) <- controlplane(4)
#   <- app(5) <- cli(6)
#
# A concrete runtime (runtime/<name>/) is included only by itself and by app/ (the runtime
# factory): every other layer sees the runtime through runtime/pod_runtime.h.
#
# Usage: bash scripts/check-layers.sh [src-dir]
set -euo pipefail
src=${1:-src}
declare -A rank=([common]=0 [api]=1 [runtime]=1 [slurm]=2 [platform]=2 [operator]=3 [controlplane]=4 [app]=5
                 [cli]=6)
bad=0
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  included=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"${rest#*:}")
  layer=$(realpath --relative-to="$src" "$file" | cut -d/ -f1)
  [ -n "${rank[$layer]:-}" ] || { echo "$file: not in a known layer"; bad=1; continue; }
  [ -n "${rank[$included]:-}" ] || continue  # a generated or third-party header
  if [ "$included" != "$layer" ] && [ "${rank[$included]}" -ge "${rank[$layer]}" ]; then
    echo "$file:$line: $layer (layer ${rank[$layer]}) includes $included (layer ${rank[$included]})"
    bad=1
  fi
done < <(grep -rnE '^#include "[a-z_]+/' "$src" --include='*.h' --include='*.cc' --include='*.in')
while IFS= read -r hit; do
  file=${hit%%:*}
  rel=$(realpath --relative-to="$src" "$file")
  concrete=$(sed -E 's/.*#include "runtime\/([a-z_]+)\/.*/\1/' <<<"${hit#*:*:}")
  case "$rel" in app/* | "runtime/$concrete"/*) continue ;; esac
  echo "${hit%%:#*}: only app/ may include a concrete runtime (runtime/$concrete/)"
  bad=1
done < <(grep -rnE '^#include "runtime/[a-z_]+/' "$src" --include='*.h' --include='*.cc' --include='*.in')
[ "$bad" = 0 ] && echo "layers: every include points down"
exit "$bad"
