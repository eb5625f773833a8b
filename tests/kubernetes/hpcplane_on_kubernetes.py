"""hpcplane installed on a RealCluster (realcluster.py) as a user installs it, for the tests and
the benchmark: its images built here and imported into every node, then the Helm chart.

    import_images(cluster, BUILD_DIR)
    helm_install(cluster, helm_values=["operator.watchNamespace=slurm", ...])
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from realcluster import pack_image, run

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(SOURCE, "deploy/helm/hpcplane")
SLURM_IMAGE = ("hpcplane.test/slurm", "26.05")
HPCPLANE_IMAGE = ("hpcplane.test/hpcplane", "dev")
SYSTEM = "hpcplane-system"


def log(line):
    print(f"[hpcplane-on-kubernetes] {line}", file=sys.stderr, flush=True)


def slurm_layout(build):
    """The slurm-26.05 environment (built here when missing) as an OCI layout for Kubernetes."""
    hpcplane, images = os.path.join(build, "hpcplane"), os.path.join(build, "kubernetes-real")
    env = dict(os.environ, HPCPLANE_IMAGE_STORE=os.environ.get("HPCPLANE_IMAGE_STORE", os.path.join(build, "images")))
    layout = os.path.join(images, "slurm-layout")
    t = time.monotonic()
    state = ["--state-dir", os.path.join(images, "state")]
    run(hpcplane, *state, "environments", "build", "slurm-26.05", env=env, timeout=1800)
    run(hpcplane, *state, "environments", "export", "slurm-26.05", "--oci-layout", layout, "--tag", SLURM_IMAGE[1],
        "--for", "kubernetes", env=env, timeout=600)
    log(f"Slurm image ready in {time.monotonic() - t:.0f} s")
    return layout


def hpcplane_layout(build, directory):
    """This build's binary, the shared libraries it links (as ldd finds them here), CA
    certificates and an unprivileged user: the hpcplane image, without building hpcplane again
    in a container (images/hpcplane.Containerfile does that from source). Packed afresh under
    `directory` (the binary may have changed; it takes a second)."""
    hpcplane = os.path.join(build, "hpcplane")
    layout = os.path.join(directory, "hpcplane-layout")
    root = tempfile.mkdtemp(prefix="hpcplane-image-rootfs.")
    try:
        def copy(path, to=None):
            dest = os.path.join(root, (to or path).lstrip("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(os.path.realpath(path), dest)
        copy(hpcplane, "/usr/local/bin/hpcplane")
        for line in run("ldd", hpcplane).stdout.splitlines():
            parts = line.split()
            path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
            if path.startswith("/"):
                copy(path)
        copy("/etc/ssl/certs/ca-certificates.crt")
        with open(os.path.join(root, "etc/passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/usr/sbin/nologin\n"
                    "hpcplane:x:65532:65532::/var/lib/hpcplane:/usr/sbin/nologin\n")
        with open(os.path.join(root, "etc/group"), "w") as f:
            f.write("root:x:0:\nhpcplane:x:65532:\n")
        for d, mode, owner in (("tmp", 0o1777, 0), ("var/lib/hpcplane", 0o755, 65532)):
            os.makedirs(os.path.join(root, d), exist_ok=True)
            os.chmod(os.path.join(root, d), mode)
            os.chown(os.path.join(root, d), owner, owner)
        pack_image(root, layout, HPCPLANE_IMAGE[1], entrypoint=["/usr/local/bin/hpcplane"], cmd=["--help"],
                   user="65532:65532")
    finally:
        shutil.rmtree(root)
    return layout


def import_images(cluster, build):
    cluster.import_image(slurm_layout(build), *SLURM_IMAGE)
    cluster.import_image(hpcplane_layout(build, cluster.dir), *HPCPLANE_IMAGE)


def helm(cluster, *args):
    home = os.path.join(cluster.dir, "helm")
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfig, HELM_CACHE_HOME=f"{home}/cache",
               HELM_CONFIG_HOME=f"{home}/config", HELM_DATA_HOME=f"{home}/data")
    return subprocess.run([os.path.join(cluster.bin, "helm"), *args], env=env, capture_output=True, text=True,
                          timeout=600)


def tls_cert(cluster):
    """The control plane's certificate (self-signed: its own CA), as helm_install made it."""
    return os.path.join(cluster.dir, "controlplane-tls", "tls.crt")


def helm_install(cluster, helm_values=()):
    """The release's namespace and TLS secret as docs/kubernetes.md says to make them (the chart owns
    neither), then `helm install --wait` with the images built here, the Slurm release they
    carry, the shared claims' class, and `helm_values`."""
    cluster.kubectl("create", "namespace", SYSTEM)
    cluster.kubectl("label", "namespace", SYSTEM, "pod-security.kubernetes.io/enforce=restricted")
    # The name the agents reach the control plane at, in its certificate (they verify it).
    tls = os.path.join(cluster.dir, "controlplane-tls")
    os.makedirs(tls, exist_ok=True)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{tls}/tls.key", "-out", f"{tls}/tls.crt", "-days", "1", "-subj", "/CN=hpcplane",
        "-addext", f"subjectAltName=DNS:hpcplane-controlplane.{SYSTEM}.svc")
    cluster.kubectl("-n", SYSTEM, "create", "secret", "tls", "hpcplane-controlplane-tls", "--cert",
                    f"{tls}/tls.crt", "--key", f"{tls}/tls.key")
    os.remove(f"{tls}/tls.key")
    values = [f"image.repository={HPCPLANE_IMAGE[0]}", f"image.tag={HPCPLANE_IMAGE[1]}",
              f"slurm.image={':'.join(SLURM_IMAGE)}", "slurm.release=26.05", "storage.sharedClass=shared",
              *helm_values]
    args = ["install", "hpcplane", CHART, "--namespace", SYSTEM, "--wait", "--timeout", "4m"]
    for v in values:
        args += ["--set", v]
    r = helm(cluster, *args)
    if r.returncode != 0:
        raise AssertionError(f"helm install: {r.stdout}{r.stderr}")
