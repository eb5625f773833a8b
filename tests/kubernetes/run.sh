#!/usr/bin/env bash
# Installs the validators (npm ci, from the lockfile; again only when it changed) into the build
# dir and validates the Kubernetes manifests and `hpcplane render`'s output (validate.mjs), then
# compares render's output with the golden files (UPDATE_GOLDEN=1 rewrites them).
# Usage: bash tests/kubernetes/run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
work=$2/kubernetes-validate
here=$src/tests/kubernetes
command -v kubectl >/dev/null || { echo "kubectl is needed (kubectl kustomize renders the manifests)" >&2; exit 1; }
command -v npm >/dev/null || { echo "node and npm are needed" >&2; exit 1; }
mkdir -p "$work"
if ! cmp -s "$here/package-lock.json" "$work/package-lock.json" || [ ! -d "$work/node_modules" ]; then
  cp "$here/package.json" "$here/package-lock.json" "$work/"
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
fi
cp "$here/validate.mjs" "$work/"
node "$work/validate.mjs" "$src" "$2/hpcplane"
# Golden files: a change to what the operator creates shows in review as a diff of these.
golden=$here/golden
for manifest in deploy/kubernetes/examples/cluster.yaml tests/kubernetes/samples/valid-full-cluster.yaml \
  tests/kubernetes/render/gpu-tier.yaml; do
  name=$(basename "$(dirname "$manifest")")-$(basename "$manifest")
  out=$work/$name
  "$2/hpcplane" render -f "$src/$manifest" --image hpcplane-slurm:golden >"$out"
  if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$out" "$golden/$name"
  elif ! diff -u "$golden/$name" "$out"; then
    echo "render $manifest differs from $golden/$name (UPDATE_GOLDEN=1 to accept the change)" >&2
    exit 1
  fi
done
echo "render: output matches the golden files"
