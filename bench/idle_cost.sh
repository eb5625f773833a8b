#!/usr/bin/env bash
# Idle cost: CPU (jiffies) of every process of an idle data plane -- one autoscaled nodeset at
# zero, accounting on, no job -- over IDLE_SECONDS (60), by process, against the same cluster
# with hpcplane's daemon stopped (SIGSTOP; its pods keep running: the peer is Slurm alone).
# Target: the whole idle data plane under 2% of one core.
set -euo pipefail
build=$(readlink -f "${1:-build}")
seconds=${IDLE_SECONDS:-60}
work=$(mktemp -d /tmp/hpcplane-idle-XXXXXX)
hp() { "$build/hpcplane" --state-dir "$work" --cluster idle "$@"; }
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill -CONT "$daemon" 2>/dev/null || true
  hp down --purge >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
cat > "$work/cluster.yaml" <<'YAML'
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: idle}
spec:
  network: {subnet: 10.239.82.0/24}
  users: [{name: alice, uid: 2001}]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: elastic}
spec: {minReplicas: 0, maxReplicas: 2, idleTimeout: 5s, resources: {cpus: 1, memoryMiB: 500}}
YAML
hp up -f "$work/cluster.yaml" --detach >/dev/null
daemon=$(cut -d' ' -f1 "$work/clusters/idle/daemon.pid")
# Let start-up work (accounting sync, first passes) finish before measuring.
sleep 10

# measure LABEL: jiffies per process name over $seconds, the daemon (with the processes it ran
# and waited for) and everything under each pod's init.
measure() {
  python3 - "$work/clusters/idle/runtime/pods" "$daemon" "$seconds" "$1" <<'PY'
import json, os, sys, time
pods_dir, daemon, seconds, label = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f: s = f.read()
    except OSError: return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    f = s[s.rindex(")") + 2:].split()
    return comm, int(f[1]), sum(int(x) for x in f[11:15])  # ppid; utime+stime+cutime+cstime
def snapshot():
    procs = {}
    for e in os.listdir("/proc"):
        if e.isdigit():
            st = stat(int(e))
            if st: procs[int(e)] = st
    roots = {daemon: "hpcplane daemon"}
    for pod in os.listdir(pods_dir):
        try: roots[json.load(open(f"{pods_dir}/{pod}/state.json"))["pid"]] = pod
        except (OSError, KeyError, ValueError): pass
    out = {}
    for pid, (comm, ppid, t) in procs.items():
        p, owner = pid, None
        while p > 1 and owner is None:
            owner = roots.get(p)
            p = procs[p][1] if p in procs else 0
        if owner: out[pid] = (owner if pid == daemon else f"{comm} ({owner})", t)
    return out
a = snapshot(); time.sleep(seconds); b = snapshot()
by = {}
for pid, (name, t) in b.items():
    by[name] = by.get(name, 0) + t - (a[pid][1] if pid in a else 0)
hz = os.sysconf("SC_CLK_TCK")
total = sum(by.values())
print(f"{label}: {total} jiffies in {seconds:.0f} s = {100.0 * total / (hz * seconds):.2f}% of one core")
for name, t in sorted(by.items(), key=lambda kv: -kv[1]):
    if t: print(f"  {t:6d}  {name}")
print(f"TOTAL {label} {total}")
PY
}
measure "hpcplane (daemon + cluster)" | tee "$work/hpcplane.out"
kill -STOP "$daemon"
measure "peer: the same cluster with hpcplane's daemon stopped" | tee "$work/peer.out"
kill -CONT "$daemon"
h=$(awk '/^TOTAL/ {print $NF}' "$work/hpcplane.out")
p=$(awk '/^TOTAL/ {print $NF}' "$work/peer.out")
echo
echo "idle cost over ${seconds}s: hpcplane ${h} jiffies, Slurm alone ${p} jiffies; ratio hpcplane/peer = $(echo "scale=2; $h / ($p + 0.0001)" | bc) (target: whole data plane < 2% of one core)"
