"""hpcplane installed on a RealCluster (realcluster.py) as a user installs it, for the tests and
the benchmark: its images built here and imported into every node, then the Helm chart.

    import_images(cluster, BUILD_DIR)
    helm_install(cluster, helm_values=["operator.watchNamespace=slurm", ...])
"""
import os
import subprocess
import sys
import time

from realcluster import run

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(SOURCE, "deploy/helm/hpcplane")
SLURM_IMAGE = ("hpcplane.test/slurm", "26.05")
HPCPLANE_IMAGE = ("hpcplane.test/hpcplane", "dev")
SYSTEM = "hpcplane-system"


def log(line):
    print(f"[hpcplane-on-kubernetes] {line}", file=sys.stderr, flush=True)


def build_image(build, which, layout, tag):
    """images/build.sh, as an admin runs it: the chart's images are the ones the tests install."""
    env = dict(os.environ, HPCPLANE=os.path.join(build, "hpcplane"),
               HPCPLANE_STATE_DIR=os.path.join(build, "kubernetes-real", "state"),
               HPCPLANE_IMAGE_STORE=os.environ.get("HPCPLANE_IMAGE_STORE", os.path.join(build, "images")))
    t = time.monotonic()
    run("bash", os.path.join(SOURCE, "images", "build.sh"), which, layout, tag, env=env, timeout=1800)
    log(f"{which} image ready in {time.monotonic() - t:.0f} s")
    return layout


def slurm_layout(build):
    """The slurm-26.05 environment (built here when missing) as an OCI layout for Kubernetes."""
    return build_image(build, "slurm", os.path.join(build, "kubernetes-real", "slurm-layout"), SLURM_IMAGE[1])


def hpcplane_layout(build, directory):
    """This build's binary packed as the hpcplane image under `directory` (the binary may have
    changed; it takes a second)."""
    return build_image(build, "hpcplane", os.path.join(directory, "hpcplane-layout"), HPCPLANE_IMAGE[1])


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
              f"slurm.environments.slurm-26\\.05.image={':'.join(SLURM_IMAGE)}",
              "slurm.environments.slurm-26\\.05.slurm=26.05",
              *helm_values]
    args = ["install", "hpcplane", CHART, "--namespace", SYSTEM, "--wait", "--timeout", "4m"]
    for v in values:
        args += ["--set", v]
    r = helm(cluster, *args)
    if r.returncode != 0:
        raise AssertionError(f"helm install: {r.stdout}{r.stderr}")
