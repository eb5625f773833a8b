#!/usr/bin/env bash
# Installs the validators (npm ci, from the lockfile; again only when it changed) into the build
# dir and validates the Kubernetes manifests (validate.mjs).
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
node "$work/validate.mjs" "$src"
