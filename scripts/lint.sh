#!/usr/bin/env bash
# Lint: clang-format (.clang-format) over the C++ of src/, testkit/, tests/, bench/ and fuzz/, then
# clang-tidy (.clang-tidy, a small check set) over src/, then the web console's JavaScript:
# ESLint (web/eslint.config.js) and TypeScript's checkJs (web/tsconfig.json), installed from
# web/'s lockfile, and shellcheck over the scripts the binary carries (SHELL_SCRIPTS). Prints every finding and exits 1 if there is any; `make lint` runs it, and
# `make test` runs it first.
#
# Usage: bash scripts/lint.sh [BUILD_DIR]        check (clang-tidy's compile database goes under BUILD_DIR)
#        bash scripts/lint.sh --fix               rewrite misformatted files in place
#        bash scripts/lint.sh --format FILE...    check only the formatting of FILEs
#        bash scripts/lint.sh --console           check only the web console
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=${JOBS:-$(nproc)}
for tool in clang-format clang-tidy shellcheck; do
  command -v "$tool" >/dev/null || { echo "lint: $tool is needed (scripts/install-deps.sh test installs it)" >&2; exit 1; }
done

cxx_files() {  # the project's C++ under the given folders, tracked or not (build outputs excluded)
  find "$@" -type f \( -name '*.cc' -o -name '*.h' \) -not -path '*/node_modules/*' | sort
}

check_format() {  # FILE...: one line per misformatted file, with the first lines clang-format would change
  local bad=0 f
  for f in "$@"; do
    if ! diff_out=$(clang-format --style="file:$top/.clang-format" "$f" | diff -u --label "$f" --label "$f (clang-format)" "$f" - ); then
      echo "lint: $f is not formatted as .clang-format says (make format fixes it):"
      head -n 12 <<<"$diff_out" | sed 's/^/    /'
      bad=1
    fi
  done
  return "$bad"
}

lint_console() {  # ESLint and tsc --checkJs over web/console (npm ci again only when the lockfile changed)
  command -v npm >/dev/null || { echo "lint: node and npm are needed for the web console's checks" >&2; return 1; }
  if ! cmp -s web/package-lock.json web/node_modules/.installed-from-lock 2>/dev/null; then
    (cd web && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.installed-from-lock) || {
      echo "lint: npm ci in web/ failed" >&2
      return 1
    }
  fi
  local start=$SECONDS
  (cd web && ./node_modules/.bin/eslint --max-warnings 0 . && ./node_modules/.bin/tsc -p tsconfig.json) || {
    echo "lint: the web console has the problems above (web/eslint.config.js, web/tsconfig.json)" >&2
    return 1
  }
  echo "lint: web console: ESLint and tsc --checkJs clean ($((SECONDS - start)) s)"
}

# Scripts compiled into the binary and run in pods, where a mistake shows only as a node that
# never drains or drains for nothing.
SHELL_SCRIPTS=(src/slurm/health_check.sh)
lint_shell() {
  # SC1090: the health check sources its nodeset's settings from a path known only in the pod
  # (HealthCheckConfig writes them); a directive in the script would change what every worker
  # runs, and so every rendered ConfigMap, for a comment.
  shellcheck --severity=style --exclude=SC1090 "${SHELL_SCRIPTS[@]}" || {
    echo "lint: shellcheck found the problems above" >&2
    return 1
  }
  echo "lint: shellcheck: ${#SHELL_SCRIPTS[@]} embedded script(s) clean"
}

case "${1:-}" in
  --console)
    lint_console
    exit $?
    ;;
  --fix)
    cxx_files src testkit tests bench fuzz | xargs clang-format --style="file:$top/.clang-format" -i
    echo "lint: formatted src/ testkit/ tests/ bench/ fuzz/"
    exit 0
    ;;
  --format)
    shift
    check_format "$@"
    exit $?
    ;;
esac

build=$(mkdir -p "${1:-build}" && cd "${1:-build}" && pwd)
start=$SECONDS
mapfile -t files < <(cxx_files src testkit tests bench fuzz)
if ! check_format "${files[@]}"; then
  exit 1
fi
echo "lint: clang-format: ${#files[@]} files formatted ($((SECONDS - start)) s)"
lint_shell
lint_console

# clang-tidy reads a compile database of its own configuration: the real build's unity batches
# (16 sources each, so the heavy headers are parsed a dozen times, not a hundred; findings in a
# batch's sources are reported against them) without its precompiled headers (GCC's, which clang
# cannot read). Configuring it takes a second and compiles nothing.
db=$build/lint
cmake -S "$top" -B "$db" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DHPCPLANE_PCH=OFF -DHPCPLANE_UNITY_BATCH=16 \
  -DCMAKE_CXX_COMPILER_LAUNCHER= >/dev/null
start=$SECONDS
# The compile units of src/: the batches of the product's targets and the sources compiled alone.
# Left out: src/runtime/kubernetes/exec_stream.cc, whose Boost.Asio coroutines clang 14 cannot
# parse with libstdc++ 12 (it lacks __cpp_impl_coroutine), so clang-tidy would report only that.
mapfile -t units < <(python3 - "$db/compile_commands.json" "$top/src" <<'PY'
import json, sys
db, src = sys.argv[1], sys.argv[2] + "/"
for entry in json.load(open(db)):
    f = entry["file"]
    product = "/CMakeFiles/hpcplane" in f and "/hpcplane_it_harness.dir/" not in f and "/hpcplane_testkit.dir/" not in f
    if (product and "/Unity/" in f) or (f.startswith(src) and not f.endswith("/exec_stream.cc")):
        print(f)
PY
)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if printf '%s\n' "${units[@]}" | xargs -P "$jobs" -n 1 clang-tidy -p "$db" --quiet >"$log" 2>&1; then
  echo "lint: clang-tidy: src/ clean in ${#units[@]} units ($((SECONDS - start)) s)"
else
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' "$log"
  echo "lint: clang-tidy found the problems above (.clang-tidy lists its checks)" >&2
  exit 1
fi
