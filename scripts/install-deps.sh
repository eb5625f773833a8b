#!/usr/bin/env bash
# Installs, with apt, whatever hpcplane needs to build, test and run that is missing.
# Idempotent: a second run installs nothing and takes a fraction of a second.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libyaml-cpp-dev nlohmann-json3-dev libcpp-httplib-dev libssl-dev libsqlite3-dev libpq-dev postgresql
  libspdlog-dev libfmt-dev libcli11-dev libboost1.74-dev libgtest-dev libgmock-dev libbenchmark-dev
  slurm-wlm slurmrestd slurm-wlm-jwt-plugin slurmdbd munge mariadb-server
  iproute2 util-linux procps curl
  bc python3 openssl
  prometheus-cpp-dev prometheus
  chromium chromium-driver python3-selenium
  python3-kubernetes python3-yaml
)

# `install-deps.sh fuzz`: also what `make fuzz` needs (clang with libFuzzer).
if [ "${1:-}" = fuzz ]; then
  packages+=(clang libclang-rt-dev)
fi

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
