#!/usr/bin/env bash
# `make lint` refuses a misformatted file and passes the same file once formatted: the format
# check can fail, and says which file and what clang-format would change.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /tmp/hpcplane-lint-test-XXXXXX)
trap 'rm -rf "$dir"' EXIT
printf 'namespace hpc {\nint  Add( int a,int b ){return a+b;}\n}\n' >"$dir/bad.cc"
if out=$(bash "$top/scripts/lint.sh" --format "$dir/bad.cc" 2>&1); then
  echo "FAIL: lint passed a misformatted file:"; echo "$out"; exit 1
fi
grep -q "$dir/bad.cc is not formatted" <<<"$out" || { echo "FAIL: lint did not name the file:"; echo "$out"; exit 1; }
grep -q '^    +int Add(int a, int b) { return a + b; }' <<<"$out" || { echo "FAIL: lint did not show the fix:"; echo "$out"; exit 1; }
clang-format --style="file:$top/.clang-format" -i "$dir/bad.cc"
bash "$top/scripts/lint.sh" --format "$dir/bad.cc" || { echo "FAIL: lint refused a formatted file"; exit 1; }
echo "lint format check: 2 passed, 0 failed"
