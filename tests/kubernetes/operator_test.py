#!/usr/bin/env python3
"""`hpcplane operator` against the test API server (tests/kubernetes/apiserver.py), driven and
observed with kubectl: what it creates is what `hpcplane render` prints, status and conditions
say what it waits for, a resource that validation refuses is marked Invalid and gets nothing,
two replicas elect one leader and a killed leader's successor resumes without duplicating or
deleting anything, an API server restart loses nothing, deleting the SlurmCluster removes
everything.

No kubelet runs here: pods stay Pending unless a test reports them running (as a kubelet would,
through pods/status), so Slurm never starts; slurm_test.py runs real Slurm with a stand-in
kubelet.

Run: /usr/bin/python3 tests/kubernetes/operator_test.py BUILD_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testcluster import SOURCE, TestApiServer, terminate, wait_for  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(SOURCE, "build"))
HPCPLANE = os.path.join(BUILD, "hpcplane")
EXAMPLE = os.path.join(SOURCE, "deploy/kubernetes/examples/cluster.yaml")
NS = "slurm"
KINDS = "pods,configmaps,secrets,persistentvolumeclaims,services,networkpolicies"




class OperatorTest(unittest.TestCase):
    def setUp(self):
        self.api = TestApiServer(bookmark_interval=0.5, crds=True).start()
        self.state = tempfile.mkdtemp(prefix="hpcplane-operator-test.")
        self.operators = []
        self.kubectl("create", "--validate=false", "-f", "-", input=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n")

    def tearDown(self):
        for p, log in self.operators:
            terminate(p, timeout=15)
            log.close()
        self.api.__exit__(None, None, None)
        shutil.rmtree(self.state, ignore_errors=True)

    def kubectl(self, *args, **kw):
        return self.api.kubectl(*args, **kw)

    def start_operator(self, identity, every_namespace=False):
        log = open(os.path.join(self.state, f"{identity}.log"), "w")
        scope = [] if every_namespace else ["--namespace", NS]
        p = subprocess.Popen([HPCPLANE, "operator", "--kubeconfig", self.api.kubeconfig, *scope,
                              "--lease-namespace", NS, "--identity", identity,
                              "--state-dir", os.path.join(self.state, identity),
                              "--lease-seconds", "4", "--image", "hpcplane-slurm:golden"],
                             stdout=log, stderr=subprocess.STDOUT)
        self.operators.append((p, log))
        return p

    def log(self, identity):
        with open(os.path.join(self.state, f"{identity}.log")) as f:
            return f.read()

    def objects(self):
        out = json.loads(self.kubectl("-n", NS, "get", KINDS, "-l", "app.kubernetes.io/managed-by=hpcplane",
                                      "-o", "json").stdout)
        return {f"{o['kind']}/{o['metadata']['name']}": o for o in out["items"]}

    def rendered(self):
        out = subprocess.run([HPCPLANE, "render", "-f", EXAMPLE, "--image", "hpcplane-slurm:golden"],
                             capture_output=True, text=True, check=True).stdout
        import yaml
        return {f"{o['kind']}/{o['metadata']['name']}": o for o in yaml.safe_load_all(out) if o}

    def report_running(self, pod):
        """What a kubelet reports once a pod's containers run and are ready."""
        self.kubectl("-n", NS, "patch", "pod", pod, "--subresource=status", "--type=merge", "-p", json.dumps(
            {"status": {"phase": "Running", "podIP": "10.0.0.9", "startTime": "2026-12-01T00:00:00Z",
                        "conditions": [{"type": "Ready", "status": "True"}]}}))

    def cluster_status(self):
        return json.loads(self.kubectl("-n", NS, "get", "slurmcluster", "research", "-o", "json").stdout).get("status", {})

    def test_objects_are_what_render_prints_and_status_says_what_it_waits_for(self):
        self.kubectl("-n", NS, "create", "--validate=false", "-f", EXAMPLE)
        self.start_operator("a", every_namespace=True)
        rendered = self.rendered()
        wait_for("the controller pod", lambda: "Pod/research-controller" in self.objects())
        objects = wait_for("the first objects", lambda: self.objects() if "Service/research-hosts" in self.objects() else None)
        uid = json.loads(self.kubectl("-n", NS, "get", "slurmcluster", "research", "-o", "json").stdout)["metadata"]["uid"]
        for key, o in objects.items():
            self.assertIn(key, rendered, f"{key} is created but render does not print it")
            want = rendered[key]
            self.assertEqual(o["metadata"]["ownerReferences"][0]["uid"], uid, key)
            if o["kind"] == "Pod":
                self.assertEqual(o["spec"], want["spec"], f"{key}: spec differs from render's")
            elif o["kind"] == "ConfigMap":
                self.assertEqual(o["data"], want["data"], key)
            elif o["kind"] == "Secret":
                self.assertEqual(sorted(o["data"]), want["metadata"]["annotations"]["hpcplane.io/generated-keys"].split(","), key)
            else:
                self.assertEqual(o["spec"], want["spec"], key)
        # Workers wait for slurmctld. Nothing else is missing: slurmdbd's pod starts beside
        # MariaDB's and waits for it inside (its command), so its Service has an endpoint early.
        self.assertEqual(set(rendered) - set(objects), {"Pod/research-cpu-0", "Pod/research-cpu-1"})
        self.assertIn("/dev/tcp/research-mariadb/3306", objects["Pod/research-slurmdbd"]["spec"]["containers"][0]["command"][2])
        st = wait_for("a status", lambda: self.cluster_status().get("conditions"))
        conditions = {c["type"]: c for c in st}
        self.assertEqual(conditions["Ready"]["status"], "False")
        self.assertEqual(conditions["Progressing"]["status"], "True")
        self.assertIn("waiting for", conditions["Progressing"]["message"])
        # A kubelet reports MariaDB running: the status says so.
        self.report_running("research-mariadb")
        wait_for("mariadb Ready", lambda: self.cluster_status()["components"].get("mariadb") == "Ready")
        # slurmctld reported running: the static nodeset's workers follow, as render prints them.
        self.report_running("research-controller")
        for worker in ("Pod/research-cpu-0", "Pod/research-cpu-1"):
            pod = wait_for(worker, lambda: self.objects().get(worker))
            self.assertEqual(pod["spec"], rendered[worker]["spec"], worker)
        self.assertNotIn("Pod/research-gpu-0", self.objects(), "an autoscaled nodeset starts at its minimum")
        # The decision is one Event of the NodeSet, as `kubectl describe nodeset cpu` shows it.
        time.sleep(1.0)  # noqa: later passes must not post it again
        events = json.loads(self.kubectl("-n", NS, "get", "events", "-o", "json").stdout)["items"]
        ups = [e for e in events if e["involvedObject"]["kind"] == "NodeSet" and e["involvedObject"]["name"] == "cpu"
               and e["message"].startswith("scale up 0")]
        self.assertEqual(len(ups), 1, events)
        # kubectl scale pins the nodeset through the scale subresource; the HPA's selector is there.
        self.kubectl("-n", NS, "scale", "nodeset", "cpu", "--replicas=3")
        wait_for("a third worker", lambda: "Pod/research-cpu-2" in self.objects())
        scale = json.loads(self.kubectl("get", "--raw", f"/apis/hpcplane.io/v1alpha1/namespaces/{NS}/nodesets/cpu/scale").stdout)
        self.assertEqual(scale["status"]["selector"], "hpcplane.io/cluster=research,hpcplane.io/nodeset=cpu")
        # Scaling down needs Slurm to drain the workers first. Slurm cannot be seen here (no
        # kubelet runs slurmrestd): nothing is deleted.
        self.kubectl("-n", NS, "scale", "nodeset", "cpu", "--replicas=1")
        time.sleep(2.0)  # noqa: passes' worth of time in which a deletion would show
        self.assertTrue({"Pod/research-cpu-0", "Pod/research-cpu-1", "Pod/research-cpu-2"} <= set(self.objects()),
                        "fail closed: no worker is deleted while Slurm's state is unknown")

    def test_passes_read_the_informers_caches_not_the_api(self):
        self.kubectl("-n", NS, "create", "--validate=false", "-f", EXAMPLE)
        self.start_operator("a")
        wait_for("the first objects", lambda: "Service/research-hosts" in self.objects())
        self.report_running("research-mariadb")
        self.report_running("research-controller")
        wait_for("the workers", lambda: {"Pod/research-cpu-0", "Pod/research-cpu-1"} <= set(self.objects()))
        before = self.api.requests("hpcplane/")
        # A change to act on, and a resync's worth of passes over everything it made.
        self.kubectl("-n", NS, "scale", "nodeset", "cpu", "--replicas=3")
        wait_for("a third worker", lambda: "Pod/research-cpu-2" in self.objects())
        time.sleep(2.5)  # noqa: the window measured, longer than the operator's 2 s resync
        after = self.api.requests("hpcplane/")
        sent = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}
        print(f"\noperator requests in the window: {sent}", file=sys.stderr)
        self.assertGreaterEqual(sent.get("create pods", 0), 1, sent)
        for resource in ("pods", "configmaps", "secrets", "services", "persistentvolumeclaims",
                         "networkpolicies", "slurmclusters", "nodesets", "workspaces"):
            for verb in ("get", "list"):
                self.assertEqual(sent.get(f"{verb} {resource}", 0), 0,
                                 f"a pass sent {verb} {resource}; it should read the cache: {sent}")

    def test_a_resource_validation_refuses_is_marked_invalid_and_gets_nothing(self):
        bad = {"apiVersion": "hpcplane.io/v1alpha1", "kind": "SlurmCluster", "metadata": {"name": "bad"},
               "spec": {"users": [{"name": "root", "uid": 0}],
                        "scheduling": {"extraConfig": ["SlurmUser=root\nAuthType=auth/none"]}}}
        self.kubectl("-n", NS, "create", "--validate=false", "-f", "-", input=json.dumps(bad))
        self.start_operator("a")
        st = wait_for("the Invalid condition", lambda: {c["type"]: c for c in json.loads(self.kubectl(
            "-n", NS, "get", "slurmcluster", "bad", "-o", "json").stdout).get("status", {}).get("conditions", [])}.get("Invalid"))
        self.assertEqual(st["status"], "True")
        self.assertIn("spec.", st["message"], "the message names the field")
        time.sleep(1.0)  # noqa: a further pass must not create anything either
        self.assertEqual(self.objects(), {})
        self.assertNotIn("auth/none", self.kubectl("-n", NS, "get", "configmaps", "-o", "yaml").stdout)

    def test_an_environment_without_an_image_is_invalid_until_mended_and_takes_nothing_down(self):
        """A NodeSet edited to name an environment this data plane has no image for is Invalid,
        saying which, pass after pass (the store's refusal is not undone by the pass that goes on
        with its last valid spec), and valid again once mended; a SlurmCluster naming one gets
        nothing at all."""
        self.kubectl("-n", NS, "create", "--validate=false", "-f", EXAMPLE)
        self.start_operator("a")
        wait_for("the controller pod", lambda: "Pod/research-controller" in self.objects())

        def condition(kind, name):
            out = json.loads(self.kubectl("-n", NS, "get", kind, name, "-o", "json").stdout)
            return {c["type"]: c for c in out.get("status", {}).get("conditions", [])}.get("Invalid")
        self.kubectl("-n", NS, "patch", "nodeset", "cpu", "--type=merge", "-p",
                     json.dumps({"spec": {"environment": "gpu-26.05"}}))
        c = wait_for("cpu to be Invalid", lambda: (c := condition("nodeset", "cpu")) and c["status"] == "True" and c)
        self.assertIn('spec.environment: environment "gpu-26.05" has no image on this data plane', c["message"])
        # Resyncs every 2 s: over several passes it stays refused.
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            self.assertEqual(condition("nodeset", "cpu")["status"], "True")
            time.sleep(0.25)  # noqa: polls a condition that must hold over a window
        self.kubectl("-n", NS, "patch", "nodeset", "cpu", "--type=merge", "-p",
                     json.dumps({"spec": {"environment": None}}))
        c = wait_for("cpu to be valid again", lambda: (c := condition("nodeset", "cpu")) and c["status"] == "False" and c)
        self.assertEqual(c["reason"], "Valid")

        other = {"apiVersion": "hpcplane.io/v1alpha1", "kind": "SlurmCluster", "metadata": {"name": "elsewhere"},
                 "spec": {"environment": "slurm-24.11"}}
        self.kubectl("-n", NS, "create", "--validate=false", "-f", "-", input=json.dumps(other))
        c = wait_for("elsewhere to be Invalid", lambda: condition("slurmcluster", "elsewhere"))
        self.assertEqual(c["status"], "True")
        self.assertIn('environment "slurm-24.11" has no image on this data plane (the operator\'s --environments '
                      'lists: slurm-26.05)', c["message"])
        self.assertFalse([k for k in self.objects() if "elsewhere" in k])

    def test_two_replicas_one_leader_and_a_killed_leader_is_succeeded_without_churn(self):
        self.kubectl("-n", NS, "create", "--validate=false", "-f", EXAMPLE)
        a = self.start_operator("a")
        wait_for("a to lead", lambda: self.lease_holder() == "a")
        self.start_operator("b")
        wait_for("the controller pod", lambda: "Pod/research-controller" in self.objects())
        time.sleep(1.5)  # noqa: b runs passes' worth of time without the lease
        self.assertEqual(self.lease_holder(), "a")
        self.assertNotIn("reconciling", self.log("b"), "a replica without the lease does nothing")
        before = {k: (o["metadata"]["uid"], o["metadata"]["resourceVersion"]) for k, o in self.objects().items()}
        a.send_signal(signal.SIGKILL)
        a.wait()
        wait_for("b to take over after the lease expires", lambda: self.lease_holder() == "b", timeout=20)
        wait_for("b to reconcile", lambda: "reconciling" in self.log("b"))
        time.sleep(1.5)  # noqa: b's passes over everything a made
        after = {k: (o["metadata"]["uid"], o["metadata"]["resourceVersion"]) for k, o in self.objects().items()}
        self.assertEqual(set(after), set(before), "nothing created twice, nothing deleted")
        for key in before:
            self.assertEqual(after[key][0], before[key][0], f"{key} was replaced")
            if key.startswith("Pod/"):
                self.assertEqual(after[key][1], before[key][1], f"{key} was rewritten")

    def lease_holder(self):
        r = self.kubectl("-n", NS, "get", "--raw", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/hpcplane-operator",
                         check=False)
        return json.loads(r.stdout)["spec"].get("holderIdentity") if r.returncode == 0 else None

    def test_an_api_server_restart_loses_nothing_and_deleting_the_cluster_removes_everything(self):
        self.kubectl("-n", NS, "create", "--validate=false", "-f", EXAMPLE)
        self.start_operator("a")
        wait_for("the controller pod", lambda: "Pod/research-controller" in self.objects())
        self.api.restart()  # every watch breaks; their resourceVersions are expired
        # A change after the restart is seen through the new watches: a deleted ConfigMap returns.
        self.kubectl("-n", NS, "delete", "configmap", "research-slurm-scripts")
        wait_for("the ConfigMap to be recreated", lambda: "ConfigMap/research-slurm-scripts" in self.objects())
        # The informers list again once their watches come back (not necessarily before the
        # ConfigMap was made again: a pass reads the API when its cache misses it).
        wait_for("the informers to list again, their resourceVersions expired",
                 lambda: "listing again" in self.log("a"))
        # A workspace of the cluster: held by hpcplane's finalizer until what it has is gone.
        ws = {"apiVersion": "hpcplane.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "ws-bob"},
              "spec": {"cluster": "research", "user": {"name": "bob", "uid": 2002, "gid": 2002}, "project": "demo",
                       "resources": {"cpus": 1, "memoryMiB": 500}}}
        self.kubectl("-n", NS, "create", "--validate=false", "-f", "-", input=json.dumps(ws))
        wait_for("the workspace's finalizer", lambda: "hpcplane.io/workspace" in self.finalizers("ws-bob"))
        self.kubectl("-n", NS, "delete", "slurmcluster", "research")
        wait_for("every object to be gone", lambda: self.objects() == {})
        # The cluster's garbage took the workspace's login pod and token with it: nothing is
        # left to wait for, and deleting the workspace goes through.
        wait_for("the finalizer to be released", lambda: self.finalizers("ws-bob") == [])
        self.kubectl("-n", NS, "delete", "workspace", "ws-bob", "--timeout=10s")
        time.sleep(1.0)  # noqa: the operator's next passes must not bring anything back
        self.assertEqual(self.objects(), {})

    def finalizers(self, workspace):
        r = self.kubectl("-n", NS, "get", "workspace", workspace, "-o", "json", check=False)
        return json.loads(r.stdout)["metadata"].get("finalizers", []) if r.returncode == 0 else None


if __name__ == "__main__":
    unittest.main(verbosity=2)
