#!/usr/bin/env bash
# Builds the hpcplane and Slurm images with podman (or buildah), outside `make test`.
#
#   bash images/build.sh [TAG]                  FROM the registry's debian:12-slim
#   BASE=localhost/debian:12 bash images/build.sh   FROM an image already in local storage
#   DEBOOTSTRAP=1 bash images/build.sh          no registry: debootstrap Debian 12 from Debian's
#                                               mirror and import it as localhost/debian:12 first
#   ISOLATION=chroot bash images/build.sh       build steps without an OCI runtime (see below)
#
# Prints the images' names and sizes. Needs root (or rootless podman), podman or buildah, and
# for DEBOOTSTRAP=1 the debootstrap package.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-dev}
base=${BASE:-docker.io/library/debian:12-slim}
# ISOLATION=chroot runs the build steps without an OCI runtime: for hosts whose cgroups crun
# cannot use (hybrid cgroup v1/v2, as in this project's sandboxes).
isolation=${ISOLATION:+--isolation=$ISOLATION}
if command -v podman >/dev/null; then
  build() { podman build $isolation "$@"; }
  tool=podman
elif command -v buildah >/dev/null; then
  build() { buildah bud $isolation "$@"; }
  tool=buildah
else
  echo "images/build.sh: needs podman or buildah (apt-get install podman)" >&2
  exit 1
fi
if [ "${DEBOOTSTRAP:-0}" = 1 ]; then
  root=$(mktemp -d /tmp/hpcplane-rootfs.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase bookworm "$root" "${MIRROR:-http://deb.debian.org/debian}" >/dev/null
  tar -C "$root" -c . | "$tool" import - localhost/debian:12 >/dev/null
  base=localhost/debian:12
fi
build --build-arg BASE="$base" -f images/hpcplane.Containerfile -t "hpcplane:$tag" .
build --build-arg BASE="$base" -f images/slurm.Containerfile -t "hpcplane-slurm:$tag" .
"$tool" images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "^(localhost/)?hpcplane(-slurm)?:$tag "
# Smoke check of what each image holds, run in the image's root file system (chroot: no OCI
# runtime needed): the binary as its unprivileged user, and each Slurm daemon's version.
if [ "$tool" = podman ] && [ "$(id -u)" = 0 ]; then
  root=$(podman image mount "hpcplane:$tag")
  echo "hpcplane:$tag: hpcplane $(chroot --userspec=65532:65532 "$root" /usr/local/bin/hpcplane --version)"
  podman image unmount "hpcplane:$tag" >/dev/null
  root=$(podman image mount "hpcplane-slurm:$tag")
  chroot "$root" /bin/sh -ec 'echo "hpcplane-slurm:'"$tag"': slurmctld $(slurmctld -V), slurmd $(slurmd -V), slurmrestd $(slurmrestd -V), $(munged -V | cut -d" " -f1), $(mariadbd --version | cut -d" " -f1-4)"'
  podman image unmount "hpcplane-slurm:$tag" >/dev/null
fi
