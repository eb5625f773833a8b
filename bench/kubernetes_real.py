#!/usr/bin/env python3
"""Benchmark: hpcplane on a real Kubernetes cluster (tests/kubernetes/realcluster.py: Kubernetes
1.34 built here, two kubelets with containerd; installed with the Helm chart) against the local
runtime on this machine, the same SlurmCluster (Slurm 26.05, one static worker, an autoscaled
nodeset at zero), in one run:

- apply -> Ready: `kubectl apply` of the manifest until the SlurmCluster's Ready condition (local:
  `hpcplane up`, which waits for the same);
- cold start: `sbatch -p burst` until the job is RUNNING on a worker scaled from zero, step by step:
  on Kubernetes the burst pod's progress as the API server shows it (created, bound, each
  container running or done, Ready), and on both sides when slurmd registered and the job ran;
- idle, over IDLE seconds after both are Ready: the operator's API requests (the API server's
  audit log of its ServiceAccount, by verb and resource) and the leading operator's CPU and RSS
  (local: the cluster's daemon, which reconciles the same way);
- with WIDE (100) worker pods: a NodeSet pinned at WIDE replicas whose pods no node accepts (a
  nodeSelector no node has: they stay Pending, never run, never register in Slurm), so the
  operator holds WIDE more pods in its caches and passes; the time until they all exist, then
  the same idle measurement, against the idle one above (this machine runs two kubelets, not a
  hundred: what is measured is the operator's own work per pod, not Slurm's).

Usage: /usr/bin/python3 bench/kubernetes_real.py [BUILD_DIR]   (IDLE=60 seconds, WIDE=100, as root)

tests/kubernetes/real_test.py runs it at a smoke size (IDLE=5, WIDE=10) on the real cluster of its
own sequence (kubernetes_side(k)), so `make test` brings up one real cluster, not two.

"""
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "kubernetes"))
import hpcplane_on_kubernetes  # noqa: E402
from realcluster import RealCluster, proc_cpu_rss, run, wait_for  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if __name__ == "__main__" and len(sys.argv) > 1 else
                        os.environ.get("HPCPLANE_BUILD", "build"))
HPCPLANE = os.path.join(BUILD, "hpcplane")
IDLE = float(os.environ.get("IDLE", "60"))
WIDE = int(os.environ.get("WIDE", "100"))
NS, CLUSTER = "slurm", "bench"
OPERATOR_SA = f"system:serviceaccount:{hpcplane_on_kubernetes.SYSTEM}:hpcplane-operator"


def manifest(local):
    head = f"""apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata:
  name: {CLUSTER}
  {"" if local else f"namespace: {NS}"}
spec:
  {"environment: slurm-26.05" if local else ""}
  {"network: {subnet: 10.239.86.0/24}" if local else ""}
  users: [{{name: alice, uid: 2001}}]
  scheduling: {{maxNodeCount: {max(64, WIDE + 8)}}}
"""
    nodesets = ""
    for name, spec in (("cpu", "replicas: 1, maxReplicas: 1"), ("burst", "minReplicas: 0, maxReplicas: 1, idleTimeout: 5s")):
        nodesets += f"""---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata:
  name: {name}
  {"" if local else f"namespace: {NS}"}
spec: {{cluster: {CLUSTER}, {spec}, resources: {{cpus: 1, memoryMiB: 500}}}}
"""
    return head + nodesets


def idle_usage(pid, seconds):
    cpu0, _ = proc_cpu_rss(pid)
    time.sleep(seconds)
    cpu1, rss = proc_cpu_rss(pid)
    return 100 * (cpu1 - cpu0) / seconds, rss


# Run as root in the controller pod: submits alice's job to the burst nodeset at zero and prints, in
# the pod's clock (the host's), when sbatch was called and returned, when a burst node first shows
# registered in Slurm, and when the job runs (RUNNING without CONFIGURING: squeue's %T says
# CONFIGURING while its nodes still boot). Polled in the pod every 20 ms: a kubectl exec per poll
# would take longer than the steps it times.
COLD_START_PROBE = r"""
t() { date +%s.%N; }
echo "sbatch $(t)"
job=$(setpriv --reuid=alice --regid=alice --init-groups -- sbatch --parsable --chdir=/tmp -p burst --wrap 'sleep 30')
job=${job%%;*}
[ -n "$job" ] || { echo "sbatch failed" >&2; exit 1; }
echo "submitted $(t) $job"
registered=
for _ in $(seq 15000); do
  if [ -z "$registered" ] && [ -n "$(sinfo -h -N -p burst -t idle,alloc,mix -o %N 2>/dev/null)" ]; then
    registered=1; echo "registered $(t)"
  fi
  case $(squeue -h -j "$job" -o %T 2>/dev/null) in
    RUNNING|COMPLETING|COMPLETED) echo "running $(t)"; exit 0 ;;
  esac
  sleep 0.02
done
echo "job $job did not run" >&2; exit 1
"""


def cold_start(exec_argv, env=None):
    """Seconds from sbatch to the job running, and the probe's moments (unix seconds)."""
    r = run(*exec_argv, "bash", "-c", COLD_START_PROBE, timeout=360, env=env)
    moments = {}
    for line in r.stdout.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("sbatch", "submitted", "registered", "running"):
            moments[words[0]] = float(words[1])
    moments.setdefault("registered", moments["running"])  # between two polls
    return moments["running"] - moments["sbatch"], moments


class PodWatch:
    """The events of pods matching a label, each with the moment it reached this process
    (`kubectl get -w`): what the API server shows of a pod's progress, step by step, to the
    millisecond (the pods' own timestamps have whole seconds)."""

    def __init__(self, k, selector):
        env = dict(os.environ, KUBECONFIG=k.kubeconfig, HOME=k.dir)
        self.proc = subprocess.Popen([k.kubectl_binary, "-n", NS, "get", "pods", "-l", selector, "-w",
                                      "--output-watch-events", "-o", "json"], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.events = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        decoder, buf = json.JSONDecoder(), ""
        for line in self.proc.stdout:
            buf += line
            try:
                obj, end = decoder.raw_decode(buf.lstrip())
            except ValueError:
                continue
            self.events.append((time.time(), obj.get("object") or {}))
            buf = buf.lstrip()[end:]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.thread.join(timeout=10)
        self.proc.stdout.close()

    def timeline(self):
        """(moment, step) of each first: the pod created, bound to a node, each container running
        (and each init container done), the pod Ready."""
        firsts = {}

        def first(step, when):
            firsts.setdefault(step, when)
        for when, pod in self.events:
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            first("pod created", when)
            if spec.get("nodeName"):
                first("pod bound to a node", when)
            for kind, key in (("init container", "initContainerStatuses"), ("container", "containerStatuses")):
                for c in status.get(key) or []:
                    state = c.get("state") or {}
                    if "running" in state or "terminated" in state:
                        first(f"{kind} {c['name']} running", when)
                    if "terminated" in state:
                        first(f"{kind} {c['name']} done", when)
                    if c.get("started"):
                        first(f"{kind} {c['name']} started (startup probe passed)", when)
            if any(x.get("type") == "Ready" and x.get("status") == "True" for x in status.get("conditions") or []):
                first("pod Ready", when)
        return sorted((when, step) for step, when in firsts.items())


def timeline_lines(moments, pod_steps):
    """The cold start step by step, in ms after sbatch was called."""
    t0 = moments["sbatch"]
    steps = [(moments["submitted"], "sbatch returned")] + list(pod_steps) + [
        (moments["registered"], "slurmd registered (sinfo)"), (moments["running"], "job RUNNING (squeue)")]
    lines, before = [], t0
    for when, step in sorted(steps):
        lines.append(f"  {1000 * (when - t0):7.0f} ms  (+{1000 * (when - before):5.0f})  {step}")
        before = when
    return lines


def kubernetes_side(k=None):
    """The Kubernetes side's numbers, on a cluster of its own, or on `k` (a RealCluster that logs
    OPERATOR_SA's requests, with hpcplane installed by the chart and namespace NS free of a
    SlurmCluster named CLUSTER)."""
    if k is not None:
        return _measure_kubernetes(k)
    with RealCluster(BUILD, tag="rb", octet=247, nodes=2, audit_users=[OPERATOR_SA]) as k:
        hpcplane_on_kubernetes.import_images(k, BUILD)
        hpcplane_on_kubernetes.helm_install(k, [f"operator.watchNamespace={NS}", f"slurmNamespaces={{{NS}}}"])
        return _measure_kubernetes(k)


def _measure_kubernetes(k):
    out = {}
    t0 = time.monotonic()
    k.kubectl("apply", "-f", "-", input=manifest(local=False))

    def ready():
        c = json.loads(k.kubectl("-n", NS, "get", "slurmcluster", CLUSTER, "-o", "json").stdout)
        return any(x["type"] == "Ready" and x["status"] == "True"
                   for x in (c.get("status") or {}).get("conditions", []))
    wait_for("the SlurmCluster to be Ready", ready, timeout=600, interval=0.2)
    out["ready"] = time.monotonic() - t0
    controller = [k.kubectl_binary, "--kubeconfig", k.kubeconfig, "-n", NS, "exec", f"{CLUSTER}-controller", "--"]
    watch = PodWatch(k, "hpcplane.io/nodeset=burst")
    try:
        out["cold"], moments = cold_start(controller)
        # The pod's last steps (Ready) may come after the job runs.
        wait_for("the burst pod to be Ready", lambda: any(s == "pod Ready" for _, s in watch.timeline()), timeout=60,
                 interval=0.1)
    finally:
        watch.stop()
    out["cold_timeline"] = timeline_lines(moments, watch.timeline())
    # Idle: the job done, the burst worker gone again.
    wait_for("the burst worker to go", lambda: not json.loads(k.kubectl(
        "-n", NS, "get", "pods", "-l", "hpcplane.io/nodeset=burst", "-o", "json").stdout)["items"], timeout=300)
    lease = json.loads(k.kubectl("-n", hpcplane_on_kubernetes.SYSTEM, "get", "lease", "hpcplane-operator",
                                 "-o", "json").stdout)
    leader_pod = lease["spec"]["holderIdentity"].rsplit("-", 1)[0]
    pid = next(p for p in os.listdir("/proc") if p.isdigit() and _is_operator_of(p, leader_pod))
    out["cpu"], out["rss"], out["requests"], out["replicas"] = _measured_idle(k, pid)

    # WIDE worker pods that no node accepts.
    t1 = time.monotonic()
    k.kubectl("apply", "-f", "-", input=f"""apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {{name: wide, namespace: {NS}}}
spec:
  cluster: {CLUSTER}
  replicas: {WIDE}
  maxReplicas: {WIDE}
  resources: {{cpus: 1, memoryMiB: 500}}
  pod: {{nodeSelector: {{hpcplane.test/no-such-node: "true"}}}}
""")
    def wide(unschedulable=False):
        pods = json.loads(k.kubectl("-n", NS, "get", "pods", "-l", "hpcplane.io/nodeset=wide", "-o", "json",
                                    timeout=60).stdout)["items"]
        if unschedulable:  # the scheduler has written its verdict into each: nothing more comes
            pods = [p for p in pods if any(c.get("reason") == "Unschedulable"
                                           for c in (p.get("status") or {}).get("conditions", []))]
        return len(pods)
    def all_created():
        conds = ((get_object(k, "nodeset", "wide").get("status") or {}).get("conditions", []))
        refused = [c["message"] for c in conds if c["type"] == "Invalid" and c["status"] == "True"]
        if refused:
            raise AssertionError(f"nodeset wide refused: {refused[0]}")
        return wide() == WIDE
    wait_for(f"{WIDE} worker pods", all_created, timeout=600, interval=1)
    out["wide_created"] = time.monotonic() - t1
    wait_for(f"{WIDE} pods marked Unschedulable", lambda: wide(unschedulable=True) == WIDE, timeout=300,
             interval=1)
    out["wide_cpu"], out["wide_rss"], out["wide_requests"], _ = _measured_idle(k, pid)
    k.kubectl("-n", NS, "delete", "nodeset", "wide", "burst", "cpu", "--wait=false")
    k.kubectl("-n", NS, "delete", "slurmcluster", CLUSTER, "--wait=false")
    return out


def get_object(k, kind, name):
    return json.loads(k.kubectl("-n", NS, "get", kind, name, "-o", "json").stdout)


def _measured_idle(k, pid):
    """The leading operator's CPU % and RSS over IDLE seconds, and every replica's API requests
    meanwhile (by verb and resource) with the number of replicas seen."""
    before = _audit_lines(k)
    cpu, rss = idle_usage(pid, IDLE)
    # One ResponseComplete event a request (a watch also logs ResponseStarted); both replicas'
    # (the standby keeps its caches warm), told apart by their pod's address.
    events = [e for e in map(json.loads, _audit_lines(k)[len(before):]) if e.get("stage") == "ResponseComplete"]
    requests = collections.Counter(
        f"{e['verb']} {e.get('objectRef', {}).get('resource', e.get('requestURI', ''))}" for e in events)
    return cpu, rss, requests, len({(e.get("sourceIPs") or ["?"])[0] for e in events})


def _audit_lines(k):
    try:
        with open(k.audit_log) as f:
            return f.readlines()
    except OSError:
        return []


def _is_operator_of(pid, pod_name):
    """The operator process of a pod: its command line, and the pod's host name in its UTS."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        if len(argv) < 2 or not argv[0].endswith(b"hpcplane") or argv[1] != b"operator":
            return False
        return run("nsenter", "-t", pid, "-u", "hostname").stdout.strip() == pod_name
    except (OSError, RuntimeError):
        return False


def local_side():
    out = {}
    work = tempfile.mkdtemp(prefix="hpcplane-bench-k8s-local.")
    os.chmod(work, 0o755)
    env = dict(os.environ, HPCPLANE_IMAGE_STORE=os.environ.get("HPCPLANE_IMAGE_STORE", os.path.join(BUILD, "images")))
    try:
        path = os.path.join(work, "cluster.yaml")
        with open(path, "w") as f:
            f.write(manifest(local=True))
        t0 = time.monotonic()
        run(HPCPLANE, "--state-dir", work, "up", "-f", path, "--detach", env=env, timeout=900)
        out["ready"] = time.monotonic() - t0
        controller = [HPCPLANE, "--state-dir", work, "--cluster", CLUSTER, "exec", f"{CLUSTER}-controller", "--"]
        out["cold"], moments = cold_start(controller, env=env)
        out["cold_timeline"] = timeline_lines(moments, [])
        with open(os.path.join(work, "clusters", CLUSTER, "daemon.pid")) as f:
            pid = f.read().split()[0]
        out["cpu"], out["rss"] = idle_usage(pid, IDLE)
    finally:
        subprocess.run([HPCPLANE, "--state-dir", work, "--cluster", CLUSTER, "down", "--purge"], capture_output=True,
                       env=env)
        subprocess.run(["rm", "-rf", work])
    return out


def report(kube, local):
    """The benchmark's lines: each number, and the ratio against the local runtime."""
    total = sum(kube["requests"].values())
    wide_total = sum(kube["wide_requests"].values())
    return "\n".join([
        f"apply -> Ready: kubernetes {kube['ready']:.1f} s, local {local['ready']:.1f} s; "
        f"kubernetes/local = {kube['ready'] / local['ready']:.2f}x",
        f"cold start sbatch -> RUNNING from zero: kubernetes {kube['cold']:.2f} s, local {local['cold']:.2f} s; "
        f"kubernetes/local = {kube['cold'] / local['cold']:.2f}x",
        "cold start on kubernetes, step by step (ms after sbatch; +ms since the step before):",
        *kube["cold_timeline"],
        "cold start on the local runtime:",
        *local["cold_timeline"],
        f"idle {IDLE:.0f} s: leading operator CPU {kube['cpu']:.2f}% RSS {kube['rss']:.0f} MiB; "
        f"local daemon CPU {local['cpu']:.2f}% RSS {local['rss']:.0f} MiB",
        f"operator API requests idle ({kube['replicas']} replicas): {total * 60 / IDLE:.1f} per minute "
        f"({', '.join(f'{v} {k}' for k, v in kube['requests'].most_common(8)) or 'none'})",
        f"with {WIDE} more worker pods (Pending: no node takes them): created in {kube['wide_created']:.1f} s; "
        f"idle {IDLE:.0f} s: leading operator CPU {kube['wide_cpu']:.2f}% RSS {kube['wide_rss']:.0f} MiB; "
        f"with/without = CPU {kube['wide_cpu'] / max(kube['cpu'], 0.01):.2f}x, "
        f"RSS {kube['wide_rss'] / kube['rss']:.2f}x; API requests {wide_total * 60 / IDLE:.1f} per minute "
        f"({', '.join(f'{v} {k}' for k, v in kube['wide_requests'].most_common(8)) or 'none'})"])


def main():
    kube = kubernetes_side()
    local = local_side()
    print(report(kube, local))


if __name__ == "__main__":
    main()
