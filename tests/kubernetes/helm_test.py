#!/usr/bin/env python3
"""The Helm chart (deploy/helm/hpcplane) with Helm's own CLI (built from tests/kubernetes/cluster):
it lints; it renders with its defaults and with the values users set; the operator's RBAC is a
Role in one namespace when told to watch only that one; its CRDs are `hpcplane crds`; a cluster
older than 1.30 is refused. `helm install` on a real cluster is in real_test.py.

Run: /usr/bin/python3 tests/kubernetes/helm_test.py BUILD_DIR
"""
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(SOURCE, "deploy/helm/hpcplane")
HELM = os.path.join(BUILD, "kubernetes-real/bin/helm")


class HelmChartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.home = tempfile.TemporaryDirectory(prefix="hpcplane-helm.")
        if not os.path.exists(HELM):
            raise unittest.SkipTest(f"{HELM} is not built (make kubernetes-binaries)")

    @classmethod
    def tearDownClass(cls):
        cls.home.cleanup()

    def helm(self, *args, check=True):
        h = self.home.name
        env = dict(os.environ, HELM_CACHE_HOME=f"{h}/cache", HELM_CONFIG_HOME=f"{h}/config",
                   HELM_DATA_HOME=f"{h}/data")
        r = subprocess.run([HELM, *args], env=env, capture_output=True, text=True, timeout=120)
        if check:
            self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def render(self, *values, kube_version="1.34.0"):
        args = ["template", "hpcplane", CHART, "--namespace", "hpcplane-system", "--kube-version", kube_version,
                "--include-crds"]
        for v in values:
            args += ["--set", v]
        return [d for d in yaml.safe_load_all(self.helm(*args).stdout) if d]

    def find(self, docs, kind, name):
        found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
        self.assertEqual(len(found), 1, f"{kind}/{name} in {[(d['kind'], d['metadata']['name']) for d in docs]}")
        return found[0]

    def test_lints_strictly(self):
        r = self.helm("lint", "--strict", CHART)
        self.assertIn("0 chart(s) failed", r.stdout)

    def test_defaults_install_the_operator_cluster_wide_and_the_control_plane(self):
        docs = self.render()
        kinds = sorted({d["kind"] for d in docs})
        self.assertEqual(kinds, ["ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment",
                                 "PersistentVolumeClaim", "Role", "RoleBinding", "Service", "ServiceAccount"])
        op = self.find(docs, "Deployment", "hpcplane-operator")
        self.assertEqual(op["spec"]["replicas"], 2)
        args = op["spec"]["template"]["spec"]["containers"][0]["args"]
        self.assertIn("--image=hpcplane-slurm:26.05", args)
        self.assertIn("--slurm-release=26.05", args)
        self.assertFalse([a for a in args if a.startswith("--environments")], "no table: clusters run --image")
        self.assertIn("--lease-namespace=hpcplane-system", args)
        self.assertFalse([a for a in args if a.startswith("--namespace=")])
        self.assertEqual(op["spec"]["template"]["spec"]["containers"][0]["image"], "ghcr.io/hpcplane/hpcplane:0.1.0")
        # The chart's CRDs are exactly what the binary prints.
        crds = subprocess.run([os.path.join(BUILD, "hpcplane"), "crds"], capture_output=True, text=True, check=True)
        want = {d["metadata"]["name"]: d for d in yaml.safe_load_all(crds.stdout) if d}
        got = {d["metadata"]["name"]: d for d in docs if d["kind"] == "CustomResourceDefinition"}
        self.assertEqual(got, want)

    def test_values_users_set_reach_the_operator(self):
        docs = self.render("image.repository=registry.example/hpcplane", "image.tag=1.2.3",
                           "slurm.image=registry.example/slurm:26.05", "slurm.release=26.05",
                           "storage.stateClass=fast", "storage.sharedClass=nfs", "clusterDomain=corp.local",
                           "controlPlane.enabled=false", "slurmNamespaces={slurm,hpc}")
        op = self.find(docs, "Deployment", "hpcplane-operator")
        c = op["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(c["image"], "registry.example/hpcplane:1.2.3")
        for a in ("--image=registry.example/slurm:26.05", "--slurm-release=26.05", "--storage-class=fast",
                  "--shared-storage-class=nfs", "--cluster-domain=corp.local"):
            self.assertIn(a, c["args"])
        self.assertFalse([d for d in docs if d["metadata"]["name"] == "hpcplane-controlplane"])
        for ns in ("slurm", "hpc"):
            n = self.find(docs, "Namespace", ns)
            self.assertEqual(n["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "baseline")
            self.assertEqual(n["metadata"]["annotations"]["helm.sh/resource-policy"], "keep")

    def test_one_watched_namespace_makes_the_operators_rights_a_role_there(self):
        docs = self.render("operator.watchNamespace=slurm")
        self.assertFalse([d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding")])
        role = self.find(docs, "Role", "hpcplane-operator")
        self.assertEqual(role["metadata"]["namespace"], "slurm")
        resources = {r for rule in role["rules"] for r in rule["resources"]}
        self.assertTrue({"secrets", "pods/exec", "slurmclusters"} <= resources)
        binding = self.find(docs, "RoleBinding", "hpcplane-operator")
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": "hpcplane-operator",
                                                "namespace": "hpcplane-system"}])
        args = self.find(docs, "Deployment", "hpcplane-operator")["spec"]["template"]["spec"]["containers"][0]["args"]
        self.assertIn("--namespace=slurm", args)

    def test_each_listed_cluster_gets_an_agent_with_rights_in_its_namespace_only(self):
        self.assertFalse([d for d in self.render() if "agent" in d["metadata"]["name"]])
        docs = self.render("agents[0].name=kube", "agents[0].namespace=slurm", "agents[1].name=gpu",
                           "agents[1].namespace=hpc", "agents[1].dataPlane=gpu-eu")
        for cluster, ns, data_plane in (("kube", "slurm", "kube"), ("gpu", "hpc", "gpu-eu")):
            d = self.find(docs, "Deployment", f"hpcplane-agent-{cluster}")
            self.assertEqual(d["metadata"]["namespace"], "hpcplane-system")
            pod = d["spec"]["template"]["spec"]
            c = pod["containers"][0]
            for a in ("agent", "--server=https://hpcplane-controlplane.hpcplane-system.svc",
                      f"--slurm-cluster={cluster}", f"--kubernetes-namespace={ns}", f"--name={data_plane}",
                      "--token-file=/etc/hpcplane/agent/token", "--ca-file=/etc/hpcplane/ca/tls.crt"):
                self.assertIn(a, c["args"])
            # PodSecurity restricted, as the release's namespace is.
            self.assertTrue(pod["securityContext"]["runAsNonRoot"])
            self.assertEqual(c["securityContext"]["capabilities"], {"drop": ["ALL"]})
            self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])
            secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
            self.assertEqual(secrets, {"token": f"hpcplane-agent-{cluster}", "ca": "hpcplane-controlplane-tls"})
            role = self.find(docs, "Role", f"hpcplane-agent-{cluster}")
            self.assertEqual(role["metadata"]["namespace"], ns)
            rights = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
            self.assertTrue({("workspaces", "create"), ("workspaces", "delete"), ("pods/exec", "create"),
                             ("slurmclusters", "get")} <= rights, rights)
            # Nothing it need not have: no secrets, no pod writes, no status writes.
            self.assertFalse({r for r, v in rights if r in ("secrets", "slurmclusters/status", "workspaces/status")
                              or (r == "pods" and v not in ("get", "list"))}, rights)
            binding = self.find(docs, "RoleBinding", f"hpcplane-agent-{cluster}")
            self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": f"hpcplane-agent-{cluster}",
                                                    "namespace": "hpcplane-system"}])
            self.assertEqual(pod["serviceAccountName"], f"hpcplane-agent-{cluster}")
        # A cluster without its namespace is refused, not rendered into an empty one.
        r = self.helm("template", "hpcplane", CHART, "--kube-version", "1.34.0", "--set", "agents[0].name=kube",
                      check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("'/agents/0': missing property 'namespace'", r.stderr)

    def test_environments_reach_the_operator_as_a_table_it_reads_at_start(self):
        docs = self.render("slurm.environments.slurm-26\\.05.image=registry.example/slurm:26.05",
                           "slurm.environments.slurm-26\\.05.slurm=26.05",
                           "slurm.environments.workspace-26\\.05.image=registry.example/workspace:26.05",
                           "slurm.environments.workspace-26\\.05.slurm=26.05")
        table = yaml.safe_load(self.find(docs, "ConfigMap", "hpcplane-environments")["data"]["environments.yaml"])
        self.assertEqual(table, {"slurm-26.05": {"image": "registry.example/slurm:26.05", "slurm": "26.05"},
                                 "workspace-26.05": {"image": "registry.example/workspace:26.05", "slurm": "26.05"}})
        pod = self.find(docs, "Deployment", "hpcplane-operator")["spec"]["template"]
        self.assertIn("--environments=/etc/hpcplane/environments.yaml", pod["spec"]["containers"][0]["args"])
        self.assertIn({"name": "environments", "mountPath": "/etc/hpcplane", "readOnly": True},
                      pod["spec"]["containers"][0]["volumeMounts"])
        self.assertIn("hpcplane.io/environments", pod["metadata"]["annotations"], "a new table restarts it")
        # The table the chart writes is one the operator reads.
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write(self.find(docs, "ConfigMap", "hpcplane-environments")["data"]["environments.yaml"])
            f.flush()
            r = subprocess.run([os.path.join(BUILD, "hpcplane"), "operator", "--environments", f.name,
                                "--kubeconfig", "/nonexistent"], capture_output=True, text=True, timeout=30)
            self.assertNotIn("--environments", r.stderr)
            self.assertIn("/nonexistent", r.stderr)

    def test_values_outside_the_schema_are_refused_saying_which(self):
        for value, says in (("slurm.relase=26.05", "relase"),  # a misspelt key is not ignored
                            ("slurm.release=latest", "'/slurm/release': 'latest' does not match"),
                            ("operator.replicas=0", "'/operator/replicas'"),
                            ("podSecurity=restricted", "'/podSecurity'"),
                            ("slurm.environments.Bad_Name.image=a", "Bad_Name"),
                            ("slurm.environments.slurm-26\\.05.image=a", "missing property 'slurm'")):
            r = self.helm("template", "hpcplane", CHART, "--kube-version", "1.34.0", "--set", value, check=False)
            self.assertNotEqual(r.returncode, 0, value)
            self.assertIn("schema", r.stderr, value)
            self.assertIn(says, r.stderr, value)

    def test_helm_test_runs_a_two_node_job_in_each_agents_cluster_with_exec_rights_there_only(self):
        self.assertFalse([d for d in self.render() if d["metadata"]["name"].startswith("hpcplane-test-")])
        docs = self.render("agents[0].name=kube", "agents[0].namespace=slurm")
        pod = self.find(docs, "Pod", "hpcplane-test-kube-two-node-job")
        self.assertEqual(pod["metadata"]["annotations"]["helm.sh/hook"], "test")
        c = pod["spec"]["containers"][0]
        self.assertEqual(c["args"][:5], ["kube-attach", "--namespace=slurm", "--pod=kube-login", "--container=login",
                                         "--"])
        self.assertIn("--nodes=2", c["args"])
        self.assertEqual(c["args"][5:7], ["setpriv", "--reuid=nobody"], "the job is not root's")
        for kind in ("ServiceAccount", "Role", "RoleBinding"):
            policy = self.find(docs, kind, "hpcplane-test-kube")["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
            self.assertIn("hook-failed", policy, f"{kind}: a failed test leaves no exec rights behind")
            self.assertIn("hook-succeeded", policy, kind)
        self.assertEqual(pod["spec"]["securityContext"]["runAsUser"], 65532)
        self.assertEqual(c["securityContext"]["capabilities"], {"drop": ["ALL"]})
        role = self.find(docs, "Role", "hpcplane-test-kube")
        self.assertEqual(role["metadata"]["namespace"], "slurm")
        self.assertEqual({(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]},
                         {("pods", "get"), ("pods/exec", "create"), ("pods/exec", "get")})
        self.assertTrue(all(rule["resourceNames"] == ["kube-login"] for rule in role["rules"]), "its login pod only")
        # A release installed by a chart without helmTest, upgraded with --reuse-values, has none.
        docs = self.render("agents[0].name=kube", "agents[0].namespace=slurm", "helmTest=null")
        self.find(docs, "Pod", "hpcplane-test-kube-two-node-job")
        # Clusters of its own instead of the agents'.
        docs = self.render("helmTest.clusters[0].name=hpc", "helmTest.clusters[0].namespace=research")
        self.find(docs, "Pod", "hpcplane-test-hpc-two-node-job")
        self.assertEqual(self.find(docs, "Role", "hpcplane-test-hpc")["metadata"]["namespace"], "research")

    def test_a_cluster_older_than_1_30_is_refused(self):
        args = ["template", "hpcplane", CHART, "--kube-version", "1.29.5"]
        r = self.helm(*args, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(">=1.30.0-0", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
