#!/usr/bin/env python3
"""The test API server's fidelity, checked with the official clients: kubectl (1.34, built with the
real cluster's components) and the Kubernetes Python client (Debian's python3-kubernetes). Whatever the operator's tests rely on
(resourceVersion, conflicts, list+watch with bookmarks, 410 Gone, subresources, garbage
collection, 429) is shown here to behave the way those clients expect of a real API server.

kubectl's client-side schema check needs the server's OpenAPI document, which this server does
not publish, so writes pass --validate=false; kubectl's typed `create namespace|configmap`
send protobuf, which it does not speak, so objects are created from JSON or YAML with -f.

Run: /usr/bin/python3 tests/kubernetes/apiserver_test.py
"""
import base64
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import unittest
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testcluster import SOURCE, TestApiServer, wait_for  # noqa: E402

import kubernetes  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

NAMESPACE = "slurm"
GROUP, VERSION = "hpcplane.io", "v1alpha1"




class ApiServerFidelity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.api = TestApiServer(bookmark_interval=0.3, history=200).start()
        cls.kubectl = cls.api.kubectl
        cls.kubectl("create", "--validate=false", "-f", "-", input=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n")
        cls.kubectl("create", "--validate=false", "-f", os.path.join(SOURCE, "deploy/kubernetes/base/crds.yaml"))

    @classmethod
    def tearDownClass(cls):
        cls.api.__exit__(None, None, None)

    def client(self):
        conf = kubernetes.client.Configuration()
        conf.host = self.api.url
        conf.ssl_ca_cert = self.api.ca
        conf.api_key = {"authorization": f"Bearer {self.api.token}"}
        return kubernetes.client.ApiClient(conf)

    def create_cluster(self, name):
        manifest = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "SlurmCluster", "metadata": {"name": name},
                    "spec": {}}
        nodeset = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeSet", "metadata": {"name": f"{name}-cpu"},
                   "spec": {"cluster": name, "replicas": 1}}
        self.kubectl("-n", NAMESPACE, "create", "--validate=false", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [manifest, nodeset]}))

    def get_json(self, *args):
        return json.loads(self.kubectl("-n", NAMESPACE, "get", *args, "-o", "json").stdout)

    # --- kubectl ---------------------------------------------------------------------------
    def test_kubectl_crds_printer_columns_and_status_subresource(self):
        self.create_cluster("cols")
        out = self.kubectl("-n", NAMESPACE, "get", "nodesets", "cols-cpu").stdout
        self.assertRegex(out.splitlines()[0], r"NAME\s+READY\s+REPLICAS\s+DESIRED\s+BUSY\s+IDLE\s+AGE")
        before = self.get_json("nodeset", "cols-cpu")
        status = {"status": {"replicas": 1, "desired": 1, "busy": 0, "idle": 1,
                             "conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": "",
                                             "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}
        self.kubectl("-n", NAMESPACE, "patch", "nodeset", "cols-cpu", "--subresource=status", "--type=merge",
                     "-p", json.dumps(status))
        row = self.kubectl("-n", NAMESPACE, "get", "nodeset", "cols-cpu", "--no-headers").stdout.split()
        self.assertEqual(row[:6], ["cols-cpu", "True", "1", "1", "0", "1"])
        after = self.get_json("nodeset", "cols-cpu")
        self.assertEqual(after["metadata"]["generation"], before["metadata"]["generation"],
                         "a status write is not a spec change")
        # Through the main resource, status does not change.
        self.kubectl("-n", NAMESPACE, "patch", "nodeset", "cols-cpu", "--type=merge", "-p",
                     json.dumps({"status": {"replicas": 9}}))
        self.assertEqual(self.get_json("nodeset", "cols-cpu")["status"]["replicas"], 1)

    def test_kubectl_scale_uses_the_scale_subresource(self):
        self.create_cluster("scale")
        gen = self.get_json("nodeset", "scale-cpu")["metadata"]["generation"]
        self.kubectl("-n", NAMESPACE, "scale", "nodeset", "scale-cpu", "--replicas=3")
        ns = self.get_json("nodeset", "scale-cpu")
        self.assertEqual(ns["spec"]["replicas"], 3)
        self.assertEqual(ns["metadata"]["generation"], gen + 1)
        scale = json.loads(self.kubectl("get", "--raw",
                                        f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/nodesets/scale-cpu/scale").stdout)
        self.assertEqual((scale["kind"], scale["apiVersion"], scale["spec"]["replicas"]), ("Scale", "autoscaling/v1", 3))
        r = self.kubectl("-n", NAMESPACE, "scale", "slurmcluster", "scale", "--replicas=2", check=False)
        self.assertNotEqual(r.returncode, 0, "SlurmCluster has no scale subresource")

    def test_kubectl_conflicts_and_already_exists(self):
        self.create_cluster("conflict")
        r = self.kubectl("-n", NAMESPACE, "create", "--validate=false", "-f", "-", check=False,
                         input=json.dumps({"apiVersion": f"{GROUP}/{VERSION}", "kind": "SlurmCluster",
                                           "metadata": {"name": "conflict"}, "spec": {}}))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("AlreadyExists", r.stderr)
        stale = self.get_json("slurmcluster", "conflict")
        self.kubectl("-n", NAMESPACE, "label", "slurmcluster", "conflict", "step=1")
        stale["metadata"].setdefault("labels", {})["step"] = "stale"
        r = self.kubectl("-n", NAMESPACE, "replace", "--validate=false", "-f", "-", input=json.dumps(stale), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Conflict", r.stderr)
        self.assertIn("the object has been modified", r.stderr)
        self.assertEqual(self.get_json("slurmcluster", "conflict")["metadata"]["labels"]["step"], "1")

    def test_kubectl_watch_sees_added_modified_deleted(self):
        env = dict(os.environ, KUBECONFIG=self.api.kubeconfig, HOME=self.api.dir)
        watch = subprocess.Popen(["kubectl", "-n", NAMESPACE, "get", "slurmclusters", "--watch", "--output-watch-events",
                                  "-o", "jsonpath={.type} {.object.metadata.name}{\"\\n\"}"],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(iter(watch.stdout.readline, "")), daemon=True)
        reader.start()
        try:
            time.sleep(0.5)  # noqa: the watch must be open before the writes (it starts with ADDED for existing)
            self.create_cluster("watched")
            self.kubectl("-n", NAMESPACE, "label", "slurmcluster", "watched", "seen=yes")
            self.kubectl("-n", NAMESPACE, "delete", "slurmcluster", "watched")
            wait_for("ADDED, MODIFIED and DELETED of watched",
                     lambda: {"ADDED watched", "MODIFIED watched", "DELETED watched"} <= {l.strip() for l in lines})
        finally:
            watch.terminate()
            watch.wait(timeout=10)
            watch.stdout.close()
            watch.stderr.close()

    def test_deleting_an_owner_collects_its_dependents(self):
        self.create_cluster("owner")
        uid = self.get_json("slurmcluster", "owner")["metadata"]["uid"]
        owned = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "owner-slurm-config", "ownerReferences": [
                     {"apiVersion": f"{GROUP}/{VERSION}", "kind": "SlurmCluster", "name": "owner", "uid": uid,
                      "controller": True, "blockOwnerDeletion": True}]},
                 "data": {"slurm.conf": "ClusterName=owner\n"}}
        grandchild = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated"}, "data": {}}
        self.kubectl("-n", NAMESPACE, "create", "--validate=false", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [owned, grandchild]}))
        self.kubectl("-n", NAMESPACE, "delete", "slurmcluster", "owner")
        wait_for("the owned ConfigMap to be collected",
                 lambda: self.kubectl("-n", NAMESPACE, "get", "configmap", "owner-slurm-config", check=False).returncode != 0)
        self.assertEqual(self.kubectl("-n", NAMESPACE, "get", "configmap", "unrelated", check=False).returncode, 0,
                         "an object without the owner's uid stays")

    def test_a_finalizer_keeps_a_deleted_object_until_it_is_removed(self):
        ws = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Workspace",
              "metadata": {"name": "held", "finalizers": ["hpcplane.io/workspace"]},
              "spec": {"cluster": "c", "user": {"name": "bob", "uid": 2002}}}
        self.kubectl("-n", NAMESPACE, "create", "--validate=false", "-f", "-", input=json.dumps(ws))
        self.kubectl("-n", NAMESPACE, "delete", "workspace", "held", "--wait=false")
        held = self.get_json("workspace", "held")
        self.assertIn("deletionTimestamp", held["metadata"], "marked, not removed")
        self.kubectl("-n", NAMESPACE, "label", "workspace", "held", "still=here")  # other writes go on
        self.kubectl("-n", NAMESPACE, "patch", "workspace", "held", "--type=merge", "-p",
                     '{"metadata":{"finalizers":null}}')
        self.assertNotEqual(self.kubectl("-n", NAMESPACE, "get", "workspace", "held", check=False).returncode, 0,
                            "gone once its last finalizer is")

    def test_unauthenticated_requests_are_refused(self):
        bad = os.path.join(self.api.dir, "kubeconfig-bad-token")
        with open(self.api.kubeconfig) as f, open(bad, "w") as out:
            out.write(f.read().replace(f'tokenFile: "{self.api.token_file}"', 'token: "wrong-token-wrong-token"'))
        env = dict(os.environ, KUBECONFIG=bad, HOME=self.api.dir)
        r = subprocess.run(["kubectl", "get", "ns"], env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Unauthorized", r.stderr + r.stdout)

    def test_kubectl_retries_429_after_retry_after(self):
        self.api.debug("throttle", count=1, retryAfter=1)
        start = time.monotonic()
        self.kubectl("-n", NAMESPACE, "get", "slurmclusters")
        self.assertGreaterEqual(time.monotonic() - start, 0.9, "client-go waits Retry-After before retrying")

    # --- the Python client -----------------------------------------------------------------
    def test_python_list_watch_with_bookmarks_and_patch(self):
        api = kubernetes.client.CustomObjectsApi(self.client())
        listed = api.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "slurmclusters")
        rv = listed["metadata"]["resourceVersion"]
        threading.Timer(0.3, lambda: self.create_cluster("pywatch")).start()
        events = []
        w = kubernetes.watch.Watch()
        for e in w.stream(api.list_namespaced_custom_object, GROUP, VERSION, NAMESPACE, "slurmclusters",
                          resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=3):
            events.append((e["type"], e["object"]["metadata"].get("name")))
            if ("ADDED", "pywatch") in events and any(t == "BOOKMARK" for t, _ in events):
                w.stop()
        self.assertIn(("ADDED", "pywatch"), events)
        self.assertTrue(any(t == "BOOKMARK" for t, _ in events), events)
        self.assertNotIn(("ADDED", "conflict"), events, "a watch from a resourceVersion replays nothing older")
        patched = api.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "slurmclusters", "pywatch",
                                                     {"metadata": {"labels": {"patched": "yes"}}})
        self.assertEqual(patched["metadata"]["labels"]["patched"], "yes")
        core = kubernetes.client.CoreV1Api(self.client())
        cm = core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": "pycm"}, "data": {"a": "1"}})
        cm = core.patch_namespaced_config_map("pycm", NAMESPACE, {"data": {"b": "2"}})
        self.assertEqual(cm.data, {"a": "1", "b": "2"})
        with self.assertRaises(ApiException) as err:
            core.replace_namespaced_config_map("pycm", NAMESPACE, {"metadata": {"name": "pycm", "resourceVersion": "1"},
                                                                   "data": {}})
        self.assertEqual(err.exception.status, 409)

    def test_python_watch_from_a_compacted_version_is_gone(self):
        core = kubernetes.client.CoreV1Api(self.client())
        rv = core.list_namespaced_config_map(NAMESPACE).metadata.resource_version
        core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": "before-compaction"}, "data": {}})
        self.api.debug("compact")
        with self.assertRaises(ApiException) as err:
            for _ in kubernetes.watch.Watch().stream(core.list_namespaced_config_map, NAMESPACE, resource_version=rv,
                                                     timeout_seconds=3):
                pass
        self.assertEqual(err.exception.status, 410)
        # The way back: list again, watch from the list's version.
        rv = core.list_namespaced_config_map(NAMESPACE).metadata.resource_version
        threading.Timer(0.3, lambda: core.create_namespaced_config_map(
            NAMESPACE, {"metadata": {"name": "after-compaction"}, "data": {}})).start()
        w = kubernetes.watch.Watch()
        seen = []
        for e in w.stream(core.list_namespaced_config_map, NAMESPACE, resource_version=rv, timeout_seconds=3):
            seen.append(e["object"].metadata.name)
            if "after-compaction" in seen:
                w.stop()
        self.assertEqual(seen, ["after-compaction"])

    def test_pods_bound_to_a_node_are_deleted_by_their_kubelet(self):
        core = kubernetes.client.CoreV1Api(self.client())
        pod = {"metadata": {"name": "bound"}, "spec": {"nodeName": "node-a", "containers": [{"name": "m", "image": "x"}]}}
        core.create_namespaced_pod(NAMESPACE, pod)
        core.delete_namespaced_pod("bound", NAMESPACE)
        still = core.read_namespaced_pod("bound", NAMESPACE)
        self.assertIsNotNone(still.metadata.deletion_timestamp, "a running pod is terminating, not gone")
        core.delete_namespaced_pod("bound", NAMESPACE, grace_period_seconds=0)  # what its kubelet does
        with self.assertRaises(ApiException) as err:
            core.read_namespaced_pod("bound", NAMESPACE)
        self.assertEqual(err.exception.status, 404)

    def test_kubectl_exec_over_websocket_reaches_the_nodes_kubelet(self):
        """kubectl exec (1.34 speaks WebSocket, v5.channel.k8s.io) through the server's pods/exec to
        the kubelet endpoint of the pod's Node: command, stdin (-i), stdout, stderr, exit code."""
        seen = []

        class FakeKubelet(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                seen.append((self.path, body["command"], self.headers.get("Authorization")))
                stdin = base64.b64decode(body["stdin"])
                code = 7 if body["command"][-1] == "fail" else 0
                data = json.dumps({"exitCode": code, "stdout": base64.b64encode(stdin.upper()).decode(),
                                   "stderr": base64.b64encode(b"to stderr\n").decode()}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        kubelet = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeKubelet)
        threading.Thread(target=kubelet.serve_forever, daemon=True).start()
        try:
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "exec-node"}}
            self.kubectl("create", "--validate=false", "-f", "-", input=json.dumps(node))
            self.kubectl("patch", "node", "exec-node", "--subresource=status", "--type=merge", "-p",
                         json.dumps({"status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.server_port}}}}))
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "exec-pod"},
                   "spec": {"nodeName": "exec-node", "containers": [{"name": "main", "image": "x"}]}}
            self.kubectl("-n", NAMESPACE, "create", "--validate=false", "-f", "-", input=json.dumps(pod))
            r = self.kubectl("-n", NAMESPACE, "exec", "exec-pod", "--", "true", check=False)
            self.assertNotEqual(r.returncode, 0, "a pod that does not run has nothing to exec into")
            self.assertEqual(seen, [])
            self.kubectl("-n", NAMESPACE, "patch", "pod", "exec-pod", "--subresource=status", "--type=merge", "-p",
                         json.dumps({"status": {"phase": "Running"}}))
            r = self.kubectl("-n", NAMESPACE, "exec", "-i", "exec-pod", "--", "tr", "a-z", "A-Z", input="hello\n")
            self.assertEqual(r.stdout, "HELLO\n")
            self.assertIn("to stderr", r.stderr)
            self.assertEqual(seen[-1][0], f"/exec/{NAMESPACE}/exec-pod/main")
            self.assertEqual(seen[-1][1], ["tr", "a-z", "A-Z"])
            self.assertEqual(seen[-1][2], f"Bearer {self.api.token}")
            r = self.kubectl("-n", NAMESPACE, "exec", "exec-pod", "-c", "main", "--", "fail", check=False)
            self.assertEqual(r.returncode, 7, r.stderr)
            r = self.kubectl("-n", NAMESPACE, "exec", "exec-pod", "-c", "nope", "--", "true", check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("container nope is not valid", r.stderr)
        finally:
            kubelet.shutdown()
            kubelet.server_close()

    def test_zz_restart_keeps_objects_and_expires_versions(self):
        core = kubernetes.client.CoreV1Api(self.client())
        core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": "survivor"}, "data": {"k": "v"}})
        rv = core.list_namespaced_config_map(NAMESPACE).metadata.resource_version
        old = int(rv) - 1
        self.api.restart()
        core = kubernetes.client.CoreV1Api(self.client())
        self.assertEqual(core.read_namespaced_config_map("survivor", NAMESPACE).data, {"k": "v"})
        with self.assertRaises(ApiException) as err:
            for _ in kubernetes.watch.Watch().stream(core.list_namespaced_config_map, NAMESPACE,
                                                     resource_version=str(old), timeout_seconds=3):
                pass
        self.assertEqual(err.exception.status, 410)
        self.assertGreaterEqual(int(core.list_namespaced_config_map(NAMESPACE).metadata.resource_version), int(rv),
                                "resourceVersions never go back")


if __name__ == "__main__":
    # The Python client leaves its pooled TLS connections to the garbage collector.
    warnings.simplefilter("ignore", ResourceWarning)
    unittest.main(verbosity=2)
