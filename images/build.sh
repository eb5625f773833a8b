#!/usr/bin/env bash
# The images the Helm chart names, as OCI image layouts: the ones the real-cluster test
# (tests/kubernetes/real_test.py) installs, built by this script there too. Push a layout to your
# registry (`skopeo copy oci:DIR:TAG docker://registry.example/NAME:TAG`) or import it into each
# node (`tar -C DIR -c . | ctr -n k8s.io images import -`).
#
#   images/build.sh slurm LAYOUT [TAG]      hpcplane-slurm: the slurm-26.05 environment exported for
#                                           Kubernetes (default tag 26.05; ENVIRONMENT=NAME another
#                                           environment, e.g. workspace-26.05, for slurm.environments)
#   images/build.sh hpcplane LAYOUT [TAG]   hpcplane: this build's binary, the shared libraries it
#                                           links (as ldd finds them here), CA certificates and an
#                                           unprivileged user, 65532 (default tag: its version)
#
# HPCPLANE is the binary (default build/hpcplane); HPCPLANE_STATE_DIR the state directory whose
# image store builds the environment (default: the binary's own default). Needs root (the
# images' files keep their owners), umoci, and for the Slurm image what `hpcplane environments
# build` needs (mmdebstrap and Debian's archive).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: images/build.sh slurm|hpcplane LAYOUT [TAG]" >&2; exit 2; }
[ $# -ge 2 ] || usage
which=$1 layout=$2 tag=${3:-}
hpcplane=${HPCPLANE:-build/hpcplane}
[ -x "$hpcplane" ] || { echo "images/build.sh: $hpcplane is not built (cmake --build build --target hpcplane)" >&2; exit 1; }
state=()
[ -n "${HPCPLANE_STATE_DIR:-}" ] && state=(--state-dir "$HPCPLANE_STATE_DIR")

case $which in
  slurm)
    environment=${ENVIRONMENT:-slurm-26.05}
    "$hpcplane" "${state[@]}" environments build "$environment"
    "$hpcplane" "${state[@]}" environments export "$environment" --oci-layout "$layout" --tag "${tag:-26.05}" \
      --for kubernetes
    ;;
  hpcplane)
    tag=${tag:-$("$hpcplane" --version | awk '{print $NF}')}
    command -v umoci >/dev/null || { echo "images/build.sh: needs umoci (apt-get install umoci)" >&2; exit 1; }
    root=$(mktemp -d /tmp/hpcplane-image-rootfs.XXXXXX)
    trap 'rm -rf "$root"' EXIT
    chmod 0755 "$root"  # the image's /, which its unprivileged user must traverse
    install -D -m 0755 "$hpcplane" "$root/usr/local/bin/hpcplane"
    # Each library at the path the binary's loader looks for it, with the content and mode of the
    # file it resolves to (the loader itself must stay executable).
    ldd "$hpcplane" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
      mkdir -p "$root$(dirname "$lib")"
      cp -L --preserve=mode "$lib" "$root$lib"
    done
    install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
    printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nhpcplane:x:65532:65532::/var/lib/hpcplane:/usr/sbin/nologin\n' \
      >"$root/etc/passwd"
    printf 'root:x:0:\nhpcplane:x:65532:\n' >"$root/etc/group"
    install -d -m 1777 "$root/tmp"
    install -d -m 0755 -o 65532 -g 65532 "$root/var/lib/hpcplane"
    [ -e "$layout/oci-layout" ] || umoci init --layout "$layout"
    umoci rm --image "$layout:$tag" 2>/dev/null || true
    umoci new --image "$layout:$tag"
    umoci insert --image "$layout:$tag" "$root" /
    umoci config --image "$layout:$tag" --author=hpcplane --config.entrypoint=/usr/local/bin/hpcplane \
      --config.cmd=--help --config.user=65532:65532
    umoci gc --layout "$layout"
    # What the image holds, run from its own files: the binary, as its unprivileged user.
    version=$(chroot --userspec=65532:65532 "$root" /usr/local/bin/hpcplane --version)
    echo "hpcplane:$tag: hpcplane $version, run as 65532 from the image's files"
    ;;
  *) usage ;;
esac
