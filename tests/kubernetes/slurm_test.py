#!/usr/bin/env python3
"""Real Slurm from Kubernetes objects: `hpcplane operator` against the test API server
(apiserver.py), with the stand-in kubelet (kubelet.cc) running the pods it creates as local
pods. Everything is driven and observed the way a user of a Kubernetes cluster would: kubectl
apply, get, scale, exec, delete.

- the cluster comes up Ready and `srun -N2 hostname` runs across two worker pods (kubectl exec
  into the login pod, through pods/exec over WebSocket);
- an autoscaled NodeSet at zero gets a worker for a queued job, and after idleTimeout goes back
  to zero with the worker drained in Slurm before its pod is deleted;
- `kubectl scale nodeset` pins a static NodeSet's size, in Slurm too;
- the operator killed with -9 while a job runs, and restarted, neither duplicates nor deletes
  the busy worker, and the job completes;
- the API server restarting (every watch broken, every resourceVersion expired) loses nothing;
- a Workspace resource gets its partition, its user's login pod with credentials injected
  (`kubectl exec` into it is the user's shell) and workers from zero; stopped through its spec,
  everything it had goes once its jobs and workers are, and it is marked Stopped; deleted
  directly (kubectl delete), its finalizer keeps it until all of that is gone;
- deleting the SlurmCluster removes every object and stops every pod.

Run: /usr/bin/python3 tests/kubernetes/slurm_test.py BUILD_DIR   (as root: local pods)
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testcluster import TestApiServer, terminate, wait_for  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
HPCPLANE = os.path.join(BUILD, "hpcplane")
KUBELET = os.path.join(BUILD, "kubernetes_test_kubelet")
NS = "slurm"
CLUSTER = "kube"
KINDS = "pods,configmaps,secrets,persistentvolumeclaims,services"

MANIFEST = f"""apiVersion: v1
kind: Namespace
metadata:
  name: {NS}
---
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata:
  name: {CLUSTER}
  namespace: {NS}
spec:
  users:
    - name: alice
      uid: 2001
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata:
  name: cpu
  namespace: {NS}
spec:
  cluster: {CLUSTER}
  replicas: 2
  maxReplicas: 3
  resources:
    cpus: 1
    memoryMiB: 500
  partition:
    default: true
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata:
  name: burst
  namespace: {NS}
spec:
  cluster: {CLUSTER}
  minReplicas: 0
  maxReplicas: 2
  idleTimeout: 5s
  resources:
    cpus: 1
    memoryMiB: 500
"""


class SlurmOnKubernetesTest(unittest.TestCase):
    """One cluster for the whole sequence: bringing real Slurm up takes most of the time."""

    @classmethod
    def setUpClass(cls):
        cls.api = TestApiServer(bookmark_interval=0.5, crds=True).start()
        cls.dir = tempfile.mkdtemp(prefix="hpcplane-k8s-slurm.")
        cls.subnet = f"10.237.{random.Random(os.getpid()).randrange(250)}.0/24"
        cls.kubelet_log = open(os.path.join(cls.dir, "kubelet.log"), "w")
        cls.kubelet = subprocess.Popen(
            [KUBELET, "--kubeconfig", cls.api.kubeconfig, "--dir", os.path.join(cls.dir, "kubelet"),
             "--hpcplane", HPCPLANE, "--subnet", cls.subnet],
            stdout=cls.kubelet_log, stderr=subprocess.STDOUT)
        wait_for("the kubelet to serve", lambda: "ready, exec on" in cls.read(cls.kubelet_log.name)
                 or cls.kubelet.poll() is not None)
        if cls.kubelet.poll() is not None:
            raise RuntimeError(f"kubelet did not start: {cls.read(cls.kubelet_log.name)}")
        cls.operators = []
        cls.start_operator()
        cls.api.kubectl("apply", "--validate=false", "-f", "-", input=MANIFEST)

    @classmethod
    def tearDownClass(cls):
        cls.stop_operators()
        terminate(cls.kubelet, timeout=60)
        cls.kubelet_log.close()
        cls.api.__exit__(None, None, None)
        if os.environ.get("KEEP_LOGS"):
            print(f"logs kept in {cls.dir}")
        else:
            shutil.rmtree(cls.dir, ignore_errors=True)

    # --- helpers --------------------------------------------------------------------------
    @staticmethod
    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""

    @classmethod
    def start_operator(cls):
        n = len(cls.operators)
        log = open(os.path.join(cls.dir, f"operator-{n}.log"), "w")
        p = subprocess.Popen([HPCPLANE, "operator", "--kubeconfig", cls.api.kubeconfig, "--namespace", NS,
                              "--lease-namespace", NS, "--identity", f"op-{n}",
                              "--state-dir", os.path.join(cls.dir, "operator"), "--lease-seconds", "4",
                              "--image", "hpcplane-slurm:test"],
                             stdout=log, stderr=subprocess.STDOUT)
        cls.operators.append((p, log))
        return p

    @classmethod
    def stop_operators(cls):
        for p, log in cls.operators:
            terminate(p, timeout=20)
            log.close()

    def logs(self):
        out = [f"--- kubelet\n{self.read(self.kubelet_log.name)[-6000:]}"]
        for i in range(len(self.operators)):
            out.append(f"--- operator-{i}\n{self.read(os.path.join(self.dir, f'operator-{i}.log'))[-6000:]}")
        return "\n".join(out)

    def kubectl(self, *args, **kw):
        return self.api.kubectl(*args, **kw)

    def get(self, kind, name):
        r = self.kubectl("-n", NS, "get", kind, name, "-o", "json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def pods(self):
        out = json.loads(self.kubectl("-n", NS, "get", "pods", "-o", "json").stdout)
        return {p["metadata"]["name"]: p for p in out["items"]}

    def slurm(self, *argv, user="root", timeout=120):
        """A Slurm command in the controller pod (its container runs as root) as `user`, through
        kubectl exec (pods/exec over WebSocket, proxied to the kubelet)."""
        become = [] if user == "root" else ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]
        return self.kubectl("-n", NS, "exec", f"{CLUSTER}-controller", "--", *become, "env",
                            "SLURM_CONF=/etc/slurm/slurm.conf", *argv, check=False, timeout=timeout)

    def sbatch(self, *argv):
        r = self.slurm("sbatch", "--parsable", "--chdir=/tmp", *argv, user="alice")
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip().split(";")[0]

    def job_state(self, job):
        """slurmctld's "STATE|NODELIST" of a job (it keeps finished jobs for minutes)."""
        r = self.slurm("scontrol", "show", "job", "-o", job)
        if r.returncode != 0:
            return ""
        fields = dict(f.split("=", 1) for f in r.stdout.split() if "=" in f)
        return f"{fields.get('JobState', '')}|{fields.get('NodeList', '')}"

    def wait_job(self, job, want, timeout=90):
        """Until sacct says `want` ("STATE|NODELIST") of the job; a timeout names the last seen."""
        seen = []
        def reached():
            seen.append(self.job_state(job))
            return seen[-1] == want
        try:
            wait_for(f"job {job} to be {want}", reached, timeout=timeout)
        except AssertionError as e:
            queue = self.slurm("scontrol", "show", "job", job).stdout
            raise AssertionError(f"{e}; last seen {seen[-1:]}\n{queue}\n{self.logs()}") from None

    def pod_uids(self, prefix):
        return {n: p["metadata"]["uid"] for n, p in self.pods().items() if n.startswith(f"{CLUSTER}-{prefix}")}

    def cluster_ready(self):
        c = self.get("slurmcluster", CLUSTER)
        conds = {x["type"]: x["status"] for x in ((c or {}).get("status") or {}).get("conditions", [])}
        return conds.get("Ready") == "True"

    def nodeset(self, name):
        return (self.get("nodeset", name) or {}).get("status") or {}

    def sinfo_nodes(self):
        r = self.slurm("sinfo", "-h", "-N", "-o", "%N %T")
        if r.returncode != 0:
            return None
        return dict(line.split() for line in r.stdout.splitlines() if line.strip())

    def wait(self, what, predicate, timeout=120):
        try:
            return wait_for(what, predicate, timeout=timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.logs()}") from None

    # --- the sequence ---------------------------------------------------------------------
    def test_1_comes_up_and_runs_across_two_worker_pods(self):
        self.wait("the SlurmCluster to be Ready", self.cluster_ready, timeout=180)
        self.wait("the cpu nodeset's 2 workers to be idle in Slurm",
                  lambda: (self.sinfo_nodes() or {}).get("cpu-0") == "idle"
                  and (self.sinfo_nodes() or {}).get("cpu-1") == "idle", timeout=120)
        r = self.slurm("srun", "-N2", "-l", "hostname", user="alice")
        self.assertEqual(r.returncode, 0, r.stderr + self.logs())
        hosts = sorted(line.split(": ", 1)[1] for line in r.stdout.splitlines())
        self.assertEqual(hosts, ["cpu-0", "cpu-1"])
        # Every pod ran from its Kubernetes object: the worker's pod is what render prints.
        pods = self.pods()
        for name in (f"{CLUSTER}-controller", f"{CLUSTER}-login", f"{CLUSTER}-cpu-0", f"{CLUSTER}-cpu-1"):
            self.assertEqual(pods[name]["status"]["phase"], "Running", name)
            self.assertTrue(pods[name]["status"].get("podIP"), name)
        # An exec's exit code and stderr come back through the status channel.
        r = self.kubectl("-n", NS, "exec", f"{CLUSTER}-controller", "--", "sh", "-c", "echo oops >&2; exit 3",
                         check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("oops", r.stderr)

    def test_2_an_autoscaled_nodeset_scales_from_zero_and_back_with_drain_before_delete(self):
        self.assertEqual(self.pod_uids("burst"), {})
        job = self.sbatch("-p", "burst", "--wrap", "sleep 2; hostname")
        self.wait("a burst worker pod", lambda: self.pod_uids("burst"), timeout=60)
        self.wait_job(job, "COMPLETED|burst-0")
        deleted_at = self.wait("the burst worker pod to be deleted after idleTimeout",
                               lambda: not self.pod_uids("burst") and time.time(), timeout=90)
        self.wait("the nodeset to report 0 replicas", lambda: self.nodeset("burst").get("replicas") == 0)
        self.assertNotIn("burst-0", self.sinfo_nodes() or {"burst-0": "unknown"})
        # Slurm itself recorded the drain (slurmctld sends node events to slurmdbd in the
        # background), and it came before the pod went.
        def drains():
            r = self.slurm("sacctmgr", "-n", "-P", "list", "event", "nodes=burst-0", "format=start,state,reason")
            return [line.split("|") for line in r.stdout.splitlines() if "|DRAIN|hpcplane: scale-down" in line]
        drains = self.wait("Slurm's record of burst-0's drain", drains, timeout=60)
        started = time.mktime(time.strptime(drains[-1][0], "%Y-%m-%dT%H:%M:%S"))
        self.assertLessEqual(started, deleted_at)

    def test_3_kubectl_scale_pins_a_static_nodeset(self):
        self.kubectl("-n", NS, "scale", "nodeset", "cpu", "--replicas=3")
        self.wait("cpu-2 to be idle in Slurm", lambda: (self.sinfo_nodes() or {}).get("cpu-2") == "idle")
        self.assertEqual(self.nodeset("cpu").get("replicas"), 3)
        self.kubectl("-n", NS, "scale", "nodeset", "cpu", "--replicas=2")
        self.wait("cpu-2's pod to go", lambda: f"{CLUSTER}-cpu-2" not in self.pods())
        self.wait("Slurm to list cpu-0 and cpu-1 only", lambda: sorted(self.sinfo_nodes() or {}) == ["cpu-0", "cpu-1"])

    def test_4_an_operator_killed_with_9_neither_duplicates_nor_deletes_a_busy_worker(self):
        job = self.sbatch("-N2", "-p", "cpu", "--wrap", "srun sleep 20")
        self.wait_job(job, "RUNNING|cpu-[0-1]")
        before = self.pod_uids("cpu")
        op, _ = self.operators[-1]
        op.kill()  # SIGKILL: no lease release, no cleanup
        op.wait()
        # Asked for one worker while both are busy: one is drained, none deleted while it works.
        self.kubectl("-n", NS, "scale", "nodeset", "cpu", "--replicas=1")
        n = len(self.operators)
        self.start_operator()
        self.wait("the new operator to lead",
                  lambda: "started leading" in self.read(os.path.join(self.dir, f"operator-{n}.log")), timeout=30)
        self.wait("cpu-1 to be drained while busy",
                  lambda: (self.sinfo_nodes() or {}).get("cpu-1") in ("draining", "drng"), timeout=30)
        self.assertEqual(self.job_state(job), "RUNNING|cpu-[0-1]")
        self.assertEqual(self.pod_uids("cpu"), before)  # not recreated, not deleted, nothing added
        self.wait_job(job, "COMPLETED|cpu-[0-1]")
        self.wait("the drained worker to go once idle", lambda: f"{CLUSTER}-cpu-1" not in self.pods(), timeout=60)
        self.assertEqual(self.pod_uids("cpu"), {f"{CLUSTER}-cpu-0": before[f"{CLUSTER}-cpu-0"]})
        self.kubectl("-n", NS, "scale", "nodeset", "cpu", "--replicas=2")
        self.wait("cpu-1 to be back", lambda: (self.sinfo_nodes() or {}).get("cpu-1") == "idle")

    def test_5_an_api_server_restart_loses_nothing(self):
        before = {n: p["metadata"]["uid"] for n, p in self.pods().items()}
        self.api.restart()  # every watch broken, every earlier resourceVersion expired
        # The watches resume through a re-list: a queued job still gets a worker, and nothing
        # that ran is replaced.
        job = self.sbatch("-p", "burst", "--wrap", "hostname")
        self.wait_job(job, "COMPLETED|burst-0")
        after = {n: p["metadata"]["uid"] for n, p in self.pods().items()}
        for name, uid in before.items():
            self.assertEqual(after.get(name), uid, name)

    def apply_workspace(self, name, user, uid, idle_timeout=None):
        """A Workspace of the cluster for a user it did not know, applied and waited for until Ready."""
        spec = {"cluster": CLUSTER, "user": {"name": user, "uid": uid, "gid": uid}, "project": "demo",
                "resources": {"cpus": 1, "memoryMiB": 500}, "maxWorkers": 1}
        if idle_timeout is not None:
            spec["idleTimeoutSeconds"] = idle_timeout
        self.kubectl("apply", "--validate=false", "-f", "-", input=json.dumps(
            {"apiVersion": "hpcplane.io/v1alpha1", "kind": "Workspace",
             "metadata": {"name": name, "namespace": NS}, "spec": spec}))
        self.wait("the workspace to be Ready",
                  lambda: ((self.get("workspace", name) or {}).get("status") or {}).get("phase") == "Ready",
                  timeout=120)

    def test_5b_a_workspace_gets_its_partition_credentials_and_workers_from_zero(self):
        self.apply_workspace("ws-bob", "bob", 2002, idle_timeout=5)
        # A plain kubectl exec into its login pod is bob's shell: the container runs as bob with the
        # workspace's environment (its partition, the token wrappers).
        r = self.kubectl("-n", NS, "exec", f"{CLUSTER}-ws-bob-login", "--", "sbatch", "--parsable", "--chdir=/tmp",
                         "--wrap", "id -un; hostname", check=False)
        self.assertEqual(r.returncode, 0, r.stderr + self.logs())
        job = r.stdout.strip().split(";")[0]
        self.wait_job(job, "COMPLETED|ws-bob-0")
        self.assertIn("bob", self.slurm("scontrol", "show", "job", job).stdout)
        self.wait("the workspace's worker to go after its idle timeout",
                  lambda: f"{CLUSTER}-ws-bob-0" not in self.pods(), timeout=90)
        # Stopped through its spec: once its jobs and workers are gone, everything it had goes and
        # it is marked Stopped; the resource itself is the user's, and stays until they delete it.
        self.kubectl("-n", NS, "patch", "workspace", "ws-bob", "--type=merge", "-p", '{"spec":{"stopping":true}}')
        self.wait("the workspace to be Stopped",
                  lambda: ((self.get("workspace", "ws-bob") or {}).get("status") or {}).get("phase") == "Stopped",
                  timeout=90)
        # Its login pod is deleted by then: gone, or terminating within its grace period (a pod's
        # deletion is graceful; the kubelet ends it, slower when the machine is busy), then gone.
        login = self.pods().get(f"{CLUSTER}-ws-bob-login")
        self.assertTrue(login is None or "deletionTimestamp" in login["metadata"], login)
        self.wait("the workspace's login pod to be gone", lambda: f"{CLUSTER}-ws-bob-login" not in self.pods(),
                  timeout=60)
        self.assertNotIn("ws-bob", self.slurm("sinfo", "-h", "-o", "%R").stdout.split())
        self.assertIsNone(self.get("secret", f"{CLUSTER}-ws-bob-token"))
        # Nothing left to clean up: the finalizer comes off (right after the status), and its
        # deletion need not wait.
        self.wait("the finalizer to come off",
                  lambda: "hpcplane.io/workspace" not in (self.get("workspace", "ws-bob")["metadata"].get("finalizers") or []),
                  timeout=10)
        self.kubectl("-n", NS, "delete", "workspace", "ws-bob", "--timeout=10s")
        self.assertIsNone(self.get("workspace", "ws-bob"))

    def test_5c_a_deleted_workspace_is_stopped_before_it_goes(self):
        self.apply_workspace("ws-carol", "carol", 2003)
        self.assertIn("hpcplane.io/workspace", self.get("workspace", "ws-carol")["metadata"]["finalizers"])
        self.assertIn("ws-carol", self.slurm("sinfo", "-h", "-o", "%R").stdout.split())
        # Deleted directly, not stopped first: its login pod, token and partition are the
        # cluster's, so the finalizer holds the resource until they are gone.
        self.kubectl("-n", NS, "delete", "workspace", "ws-carol", "--wait=false")
        self.wait("the workspace to be gone", lambda: self.get("workspace", "ws-carol") is None, timeout=90)
        self.assertNotIn(f"{CLUSTER}-ws-carol-login", self.pods())
        self.assertIsNone(self.get("secret", f"{CLUSTER}-ws-carol-token"))
        self.assertNotIn("ws-carol", self.slurm("sinfo", "-h", "-o", "%R").stdout.split())

    def test_6_deleting_the_slurmcluster_removes_every_object_and_pod(self):
        self.kubectl("-n", NS, "delete", "slurmcluster", CLUSTER)
        self.wait("every object of the cluster to be gone",
                  lambda: not json.loads(self.kubectl("-n", NS, "get", KINDS, "-l", f"hpcplane.io/cluster={CLUSTER}",
                                                      "-o", "json").stdout)["items"], timeout=60)
        pods_dir = os.path.join(self.dir, "kubelet", "clusters", f"{NS}-{CLUSTER}", "pods")
        self.wait("the kubelet to stop every local pod", lambda: not os.listdir(pods_dir), timeout=60)


if __name__ == "__main__":
    unittest.main(verbosity=2)
