#!/usr/bin/env bash
# What the README's set-up promises, checked on a bare Debian 12: a bookworm root made here with
# mmdebstrap (its `apt` variant: the essential packages and apt, nothing else), this source tree
# copied in, `scripts/install-deps.sh test` run inside it as root, then every tool `make test` uses
# asked for its version: Go new enough for the pinned modules, Node.js and npm new enough for the
# console's checks (which then run: npm ci, ESLint, tsc), the C++ toolchain and libraries (cmake
# configures the project), Slurm, MariaDB, PostgreSQL, Prometheus, chromium. A second run of
# install-deps must install nothing. The root is removed afterwards, whatever happened.
#
# Usage (as root): bash scripts/check-bare-debian.sh     (`make check-bare-debian`; ~10 minutes)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "check-bare-debian: run as root (mmdebstrap --mode=root, chroot)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "check-bare-debian: mmdebstrap is needed" >&2; exit 1; }
work=$(mktemp -d /tmp/hpcplane-bare-debian-XXXXXX)
root=$work/root
mounted=()
cleanup() {
  local i m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  # Never into a host directory still bound in: what cannot be unmounted is left, and said.
  for m in "${mounted[@]}"; do
    if mountpoint -q "$m"; then
      echo "check-bare-debian: $m is still mounted; $work is left in place" >&2
      return
    fi
  done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

start=$SECONDS
echo "check-bare-debian: a bare bookworm root (mmdebstrap --variant=apt) in $root"
mmdebstrap --quiet --mode=root --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' bookworm "$root" \
  http://deb.debian.org/debian >/dev/null
echo "deb http://deb.debian.org/debian-security bookworm-security main" >>"$root/etc/apt/sources.list"
# The tree as a clone has it (tracked and new files, no build outputs).
mkdir -p "$root/src/hpcplane"
git -C "$top" ls-files -z --cached --others --exclude-standard |
  tar -C "$top" --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -C "$root/src/hpcplane" -xf -
for m in proc sys dev dev/pts; do
  mount --bind "/$m" "$root/$m"
  mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The host's own certificate authorities (where a TLS-inspecting proxy stands between this machine
# and the registries, its CA) are the bare machine's too, as its admin would install them: the
# ca-certificates package adds them to the system's bundle, and Node.js reads that bundle too.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
# Services a package would start inside the root are not started (Debian's policy-rc.d contract).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt bash -c "cd /src/hpcplane && $1"; }
echo "check-bare-debian: bookworm ready in $((SECONDS - start)) s; scripts/install-deps.sh test inside it"
t=$SECONDS
in_root "bash scripts/install-deps.sh test"
echo "check-bare-debian: install-deps test took $((SECONDS - t)) s"

failed=0
check() {  # NAME COMMAND: prints NAME and what COMMAND printed (its first line), or fails
  local out
  if out=$(in_root "$2" 2>&1); then
    echo "check-bare-debian: ok   $1: $(head -n1 <<<"$out")"
  else
    echo "check-bare-debian: FAIL $1: $out" | head -n 12
    failed=1
  fi
}
at_least='at_least() { [ "$(printf "%s\n%s\n" "$2" "$1" | sort -V | head -n1)" = "$2" ]; }'
go_wanted=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$top"/tests/kubernetes/*/go.mod | sort -V | tail -n1)
check "go >= $go_wanted" "$at_least; v=\$(go env GOVERSION); at_least \${v#go} $go_wanted && echo \$v"
check "go reads the pinned modules" "cd tests/kubernetes/cluster && GOTOOLCHAIN=local go list -m k8s.io/kubernetes"
check "node >= 20.19" "$at_least; v=\$(node --version); at_least \${v#v} 20.19.0 && echo \$v"
check "npm" "npm --version"
check "the console's checks (npm ci, ESLint, tsc)" "bash scripts/lint.sh --console | tail -n1"
check "node --test" "node --test web/test/ >/dev/null && echo passed"
check "cmake configures the project" "cmake -S . -B /tmp/bare-build >/dev/null && echo configured"
check "slurmctld" "slurmctld -V"
check "mariadb" "mariadbd --version"
check "postgresql" "ls /usr/lib/postgresql/*/bin/postgres"
check "prometheus" "prometheus --version 2>&1 | head -n1"
check "chromium" "chromium --version"
check "containerd" "containerd --version"
check "clang-tidy" "clang-tidy --version | grep -m1 version"
check "shellcheck" "shellcheck --version | grep -m1 version"
check "the OpenAPI tools (PyPI, pinned)" \
  "/opt/hpcplane/python-tools/bin/openapi-spec-validator --help >/dev/null && /opt/hpcplane/python-tools/bin/openapi-python-client --version"
check "install-deps again installs nothing" \
  "out=\$(bash scripts/install-deps.sh test 2>&1); [ -z \"\$out\" ] && echo 'nothing to do' || { echo \"\$out\"; false; }"
echo "check-bare-debian: $([ $failed -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit $failed
