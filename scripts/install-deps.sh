#!/usr/bin/env bash
# Installs, with apt, whatever hpcplane needs that is missing. Idempotent: a second run installs
# nothing and takes a fraction of a second.
#
#   install-deps.sh demo   what `make demo` needs: the build tools and libraries, Slurm, MariaDB,
#                          mmdebstrap (the pods' images), umoci (them as OCI images)
#   install-deps.sh test   the demo's set and what the tests and lint use (browser, PostgreSQL,
#                          Prometheus, the Kubernetes client, clang-format, clang-tidy); the default
#   install-deps.sh fuzz   the test set and clang's libFuzzer (`make fuzz`)
set -euo pipefail
set_name=${1:-test}

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
  clang-format clang-tidy
)

case "$set_name" in
  demo) packages=("${build[@]}" "${run[@]}") ;;
  test) packages=("${build[@]}" "${run[@]}" "${test[@]}") ;;
  fuzz) packages=("${build[@]}" "${run[@]}" "${test[@]}" clang libclang-rt-dev) ;;
  *) echo "install-deps: unknown set '$set_name' (demo, test or fuzz)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run as root to install them" >&2
  exit 1
fi
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
