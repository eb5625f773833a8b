#!/usr/bin/env python3
"""Benchmark: the Kubernetes operator at 100 and 1,000 running workers on a real API server.

Kubernetes 1.34 built here (tests/kubernetes/realcluster.py: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler; no kubelet) and kwok (sigs.k8s.io/kwok, built from the Go
module proxy): fake nodes whose pods the real scheduler binds and kwok turns Running, ready and
with an address, without containers. The operator is `hpcplane operator`'s own loop
(kubernetes/kubernetes_operator.h: informers, work queue, Lease, reconcile passes over the
Kubernetes runtime and store) in bench_operator_scale, with a model of Slurm in place of the
cluster's pods (bench/operator_scale.cc says what it leaves out): a worker that runs is a
registered node, and takes one of the jobs queued for its nodeset.

For each size, a SlurmCluster with autoscaled NodeSets at zero (one of 100 workers; five of 200
for 1,000: a NodeSet holds at most 240) and as many one-node jobs queued as workers:
- scale-up: from the operator's start until every worker is Running and ready (the API's view);
- the peer: the same worker pods created by `kubectl create` of one List (the API server, scheduler
  and kwok's pace on this machine, with no operator deciding anything), at the largest size;
- steady, over STEADY seconds with every worker running its job: the operator's passes (count,
  p50, p95, max), its API requests per minute (the API server's audit log of its user, by verb
  and resource), its CPU (% of one core) and RSS (MiB), then the growth from 100 to 1,000.

Usage: /usr/bin/python3 bench/operator_scale.py [BUILD_DIR]   (as root; SIZES=100,1000, STEADY=60,
       PROFILE=FILE for `perf record` of the operator over each steady window, into FILE.<size>, and
       over each scale-up, into FILE.<size>.scale-up)
"""
import calendar
import collections
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "kubernetes"))
from realcluster import Process, RealCluster, clean_leftovers, find_go, proc_cpu_rss, wait_for  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if __name__ == "__main__" and len(sys.argv) > 1 else
                        os.environ.get("HPCPLANE_BUILD", "build"))
SIZES = [int(s) for s in os.environ.get("SIZES", "100,1000").split(",")]
STEADY = float(os.environ.get("STEADY", "60"))
PROFILE = os.environ.get("PROFILE", "")  # PROFILE=FILE: perf record of the operator, FILE.<size>
KWOK_VERSION = "v0.8.0"
USER = "operator-scale"  # the operator's user in its client certificate, what the audit log counts
PER_NODESET = 200
FAKE_NODES = 30  # 110 pods each (the kubelet's default): room for 1,100 workers, their peer's copies and the rest


def kwok_binary():
    """kwok at KWOK_VERSION, built once into the build directory (`go install`: its own go.mod)."""
    out = os.path.join(BUILD, "kubernetes-real", f"kwok-{KWOK_VERSION}")
    binary = os.path.join(out, "kwok")
    if not os.path.exists(binary):
        go = find_go()
        env = dict(os.environ, GOBIN=out, GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
        print(f"building kwok {KWOK_VERSION} (go install)", flush=True)
        subprocess.run([go, "install", f"sigs.k8s.io/kwok/cmd/kwok@{KWOK_VERSION}"], env=env, check=True)
    return binary


def kwok_stages(go):
    """kwok's own `fast` stages (its kustomize/stage/fast): nodes Ready with a Lease heartbeat,
    pods Running and ready at once, deleted ones gone."""
    mod = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    stage = os.path.join(mod, f"sigs.k8s.io/kwok@{KWOK_VERSION}", "kustomize", "stage")
    files = ["node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
             "pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml"]
    return "\n---\n".join(open(os.path.join(stage, f)).read() for f in files)


def start_kwok(k):
    config = os.path.join(k.dir, "kwok.yaml")
    with open(config, "w") as f:
        f.write(kwok_stages(find_go()))
    kubeconfig = k.pki.kubeconfig("kwok", k.api_url, "kwok", org="system:masters")
    k.control["kwok"] = Process("kwok", [
        kwok_binary(), "--kubeconfig", kubeconfig, "--config", config,
        "--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake",
        "--cidr", k.cluster_cidr, "--node-ip", k.host_ip, "--node-lease-duration-seconds", "40"], k.logs)
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"kwok-{i}", "annotations": {"kwok.x-k8s.io/node": "fake"},
                           "labels": {"kubernetes.io/hostname": f"kwok-{i}", "type": "kwok"}},
              "status": {"allocatable": {"cpu": "256", "memory": "1Ti", "pods": "110"},
                         "capacity": {"cpu": "256", "memory": "1Ti", "pods": "110"}}}
             for i in range(FAKE_NODES)]
    k.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    wait_for("kwok's nodes to be Ready", lambda: ready_nodes(k) == FAKE_NODES, timeout=60, interval=0.5)


def ready_nodes(k):
    items = json.loads(k.kubectl("get", "nodes", "-o", "json", timeout=30).stdout)["items"]
    return sum(1 for n in items if any(c["type"] == "Ready" and c["status"] == "True"
                                       for c in n["status"].get("conditions", [])))


def manifest(ns, size):
    nodesets = [f"w{i}" for i in range(max(1, size // PER_NODESET))]
    per = size // len(nodesets)
    docs = [{"apiVersion": "hpcplane.io/v1alpha1", "kind": "SlurmCluster", "metadata": {"name": "scale", "namespace": ns},
             "spec": {"users": [{"name": "alice", "uid": 2001}], "accounting": {"enabled": False},
                      "scheduling": {"maxNodeCount": min(1000, size + 8)}}}]
    for name in nodesets:
        docs.append({"apiVersion": "hpcplane.io/v1alpha1", "kind": "NodeSet", "metadata": {"name": name, "namespace": ns},
                     "spec": {"cluster": "scale", "minReplicas": 0, "maxReplicas": per, "idleTimeout": "10m",
                              "resources": {"cpus": 1, "memoryMiB": 500}}})
    return nodesets, per, {"apiVersion": "v1", "kind": "List", "items": docs}


def running_workers(k, ns):
    items = json.loads(k.kubectl("-n", ns, "get", "pods", "-l", "hpcplane.io/nodeset", "-o", "json",
                                 timeout=60).stdout)["items"]
    return sum(1 for p in items if p["status"].get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])))


def audit_events(k):
    try:
        with open(k.audit_log) as f:
            lines = f.readlines()
    except OSError:
        return []
    return [e for e in map(json.loads, lines) if e.get("stage") == "ResponseComplete"]


def iso_seconds(stamp):
    """Unix seconds of the audit log's RFC 3339 timestamps ("2026-12-06T17:17:44.123456Z")."""
    whole, _, frac = stamp.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float(f"0.{frac or 0}")


def passes_since(path, since_ms):
    out = []
    with open(path) as f:
        for line in f:
            at, took, _ = line.split()
            if int(at) >= since_ms:
                out.append(int(took) / 1000)
    return out


def measure(k, size):
    ns = f"scale-{size}"
    k.kubectl("create", "namespace", ns)
    nodesets, per, docs = manifest(ns, size)
    k.kubectl("apply", "-f", "-", input=json.dumps(docs))
    state = os.path.join(k.dir, f"operator-{size}")
    os.makedirs(state)
    passes = os.path.join(state, "passes")
    kubeconfig = k.pki.kubeconfig(f"operator-{size}", k.api_url, USER, org="system:masters")
    events_at_start = len(audit_events(k))  # before the operator: its first requests count
    started_at = time.time()
    t0 = time.monotonic()
    operator = Process(f"operator-{size}", [
        os.path.join(BUILD, "bench_operator_scale"), "--kubeconfig", kubeconfig, "--namespace", ns,
        "--state-dir", state, "--jobs", str(per), "--partitions", ",".join(nodesets), "--passes", passes,
        "--storage-class", "shared"], k.logs)
    try:
        def all_running():
            if not operator.running():
                raise RuntimeError(f"the operator exited:\n{operator.tail()}")
            return running_workers(k, ns) == size
        perf = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-o", f"{PROFILE}.{size}.scale-up", "-p",
                                 str(operator.proc.pid)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) if PROFILE else None
        wait_for(f"{size} workers running", all_running, timeout=600, interval=1.0)
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait()
        scale_up = time.monotonic() - t0
        # When the operator created its last worker pod, from the audit log (the rest of the
        # scale-up is the scheduler binding and kwok starting them).
        mine = [e for e in audit_events(k)[events_at_start:] if e.get("user", {}).get("username") == USER]
        creates = [e for e in mine if e["verb"] == "create" and e.get("objectRef", {}).get("resource") == "pods"]
        scale_up_requests = collections.Counter(
            f"{e['verb']} {e.get('objectRef', {}).get('resource', '')}" for e in mine)
        last_create = max((iso_seconds(e["stageTimestamp"]) for e in creates), default=started_at) - started_at
        # Steady: every worker runs its job; a pass or two settles the statuses first.
        time.sleep(5)
        events_before = len(audit_events(k))
        cpu0, _ = proc_cpu_rss(operator.proc.pid)
        since = int(time.time() * 1000)
        if PROFILE:  # where the operator's time goes: perf's samples of it over the steady window
            subprocess.run(["perf", "record", "-F", "499", "-g", "-o", f"{PROFILE}.{size}", "-p",
                            str(operator.proc.pid), "--", "sleep", str(STEADY)], capture_output=True, check=False)
        else:
            time.sleep(STEADY)
        cpu1, rss = proc_cpu_rss(operator.proc.pid)
        events = [e for e in audit_events(k)[events_before:] if e.get("user", {}).get("username") == USER]
        took = passes_since(passes, since)
        requests = collections.Counter(
            f"{e['verb']} {e.get('objectRef', {}).get('resource', '')}" for e in events)
        return {"size": size, "nodesets": len(nodesets), "scale_up_s": scale_up, "pods_created_s": last_create,
                "pod_creates": len(creates), "scale_up_requests": dict(scale_up_requests.most_common(6)),
                "passes": len(took), "pass_p50_ms": statistics.median(took) if took else 0,
                "pass_p95_ms": sorted(took)[int(0.95 * (len(took) - 1))] if took else 0,
                "pass_max_ms": max(took) if took else 0,
                "requests_per_min": sum(requests.values()) * 60 / STEADY,
                "by_verb": {key: n * 60 / STEADY for key, n in requests.most_common(8)},
                "cpu_pct": 100 * (cpu1 - cpu0) / STEADY, "rss_mib": rss}
    finally:
        operator.stop()


def peer_scale_up(k, size):
    """The peer: the same worker pods (the operator's own, copied) created by `kubectl create` of
    one List into a namespace of their own; seconds until every one is Running and ready."""
    source = json.loads(k.kubectl("-n", f"scale-{size}", "get", "pods", "-l", "hpcplane.io/nodeset", "-o", "json",
                                  timeout=120).stdout)["items"]
    ns = f"peer-{size}"
    k.kubectl("create", "namespace", ns)
    keep = ("name", "labels", "annotations")
    items = [{"apiVersion": "v1", "kind": "Pod",
              "metadata": {**{key: p["metadata"][key] for key in keep if key in p["metadata"]}, "namespace": ns},
              "spec": {key: v for key, v in p["spec"].items() if key != "nodeName"}} for p in source]
    for item in items:  # its own copies: the operator's secrets and claims are in the other namespace
        item["spec"]["volumes"] = [v for v in item["spec"].get("volumes", []) if "emptyDir" in v]
        for c in item["spec"].get("initContainers", []) + item["spec"]["containers"]:
            names = {v["name"] for v in item["spec"]["volumes"]}
            c["volumeMounts"] = [m for m in c.get("volumeMounts", []) if m["name"] in names]
    t0 = time.monotonic()
    k.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), timeout=600)
    wait_for(f"the peer's {len(items)} pods running", lambda: running_workers(k, ns) == len(items), timeout=600,
             interval=1.0)
    return time.monotonic() - t0


def main():
    if os.geteuid() != 0:
        sys.exit("bench/operator_scale.py: run as root (the cluster's network and processes)")
    kwok_binary()
    clean_leftovers("os")  # a run killed at its timeout left its network and processes
    results = []
    with RealCluster(BUILD, tag="os", octet=237, nodes=0, audit_users=[USER]) as k:
        k.kubectl("apply", "-f", os.path.join(os.path.dirname(HERE), "deploy", "kubernetes", "base", "crds.yaml"))
        start_kwok(k)
        for size in SIZES:
            r = measure(k, size)
            results.append(r)
            print(f"{size:>5} workers ({r['nodesets']} nodesets): scale-up {r['scale_up_s']:.1f} s (the operator's "
                  f"{r['pod_creates']} pod creations done at {r['pods_created_s']:.1f} s); steady "
                  f"{STEADY:.0f} s: {r['passes']} passes, p50 {r['pass_p50_ms']:.1f} ms, p95 "
                  f"{r['pass_p95_ms']:.1f} ms, max {r['pass_max_ms']:.1f} ms; {r['requests_per_min']:.0f} API "
                  f"requests/min; CPU {r['cpu_pct']:.1f}% of a core; RSS {r['rss_mib']:.0f} MiB", flush=True)
            print("       requests/min by verb: " + ", ".join(f"{k_} {v:.0f}" for k_, v in r["by_verb"].items()),
                  flush=True)
            print("       scale-up requests by verb: " + ", ".join(f"{k_} {v}" for k_, v in
                                                                r["scale_up_requests"].items()), flush=True)
        peer = peer_scale_up(k, SIZES[-1])
        print(f"peer: kubectl create of the same {SIZES[-1]} worker pods, Running in {peer:.1f} s; the operator's "
              f"scale-up {results[-1]['scale_up_s'] / peer:.2f}x of it", flush=True)
    if len(results) >= 2:
        a, b = results[0], results[-1]
        ratio = lambda key: b[key] / a[key] if a[key] else float("inf")  # noqa: E731
        print(f"{b['size']} vs {a['size']} workers ({b['size'] / a['size']:.0f}x): scale-up "
              f"{ratio('scale_up_s'):.1f}x, pass p50 {ratio('pass_p50_ms'):.1f}x, requests/min "
              f"{ratio('requests_per_min'):.1f}x, CPU {ratio('cpu_pct'):.1f}x, RSS {ratio('rss_mib'):.2f}x")


if __name__ == "__main__":
    main()
