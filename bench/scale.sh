#!/usr/bin/env bash
# Cost vs scale: how hpcplane's own cost grows with the data plane. One cluster, one nodeset of
# one-CPU workers; for each PENDING count (default "0 1000": held jobs in the queue, listed on
# every pass but needing no worker) and each SIZES worker count (default "1 10 50 100"):
#   0 -> N      seconds from `scale --replicas N` to N workers registered and ready
#   pass        one reconcile pass over WINDOW (10) seconds with N workers: p50/p95 (upper bounds
#               from the daemon's Prometheus histogram), mean, passes counted
#   daemon      its CPU share (children included: the squeue it runs) and RSS in that window
#   N -> 0      seconds until the nodeset has no worker and Slurm no node
# Then, with the last PENDING count queued and no worker, NODESETS (default "1 10 100")
# autoscaled nodesets at zero (each with its partition): the same pass, CPU and RSS columns.
# The daemon passes every second here even when idle (HPCPLANE_IDLE_PASS_SECONDS=1), so every
# point has samples. No peer: the curve is compared with itself (per-worker and per-job growth).
set -euo pipefail
build=$(readlink -f "${1:-build}")
sizes=${SIZES:-"1 10 50 100"}
pending_counts=${PENDING:-"0 1000"}
window=${WINDOW:-10}
nodeset_counts=${NODESETS:-"1 10 100"}
work=$(mktemp -d /tmp/hpcplane-scale-XXXXXX)
chmod 755 "$work"
hp() { "$build/hpcplane" --state-dir "$work" --cluster scale "$@"; }
trap 'hp down --purge >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
max=0
for n in $sizes; do [ "$n" -gt "$max" ] && max=$n; done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/cluster.yaml" <<YAML
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: scale}
spec:
  network: {subnet: 10.239.84.0/24}
  users: [{name: alice, uid: 2001}]
  accounting: {enabled: false}
  scheduling:
    maxNodeCount: $((max + 8))
    extraConfig: ["MaxJobCount=50000"]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: cpu}
spec: {replicas: 0, maxReplicas: $max, resources: {cpus: 1, memoryMiB: 100}}
YAML
HPCPLANE_IDLE_PASS_SECONDS=1 hp up -f "$work/cluster.yaml" --metrics-listen "127.0.0.1:$port" --detach >/dev/null
daemon=$(cut -d' ' -f1 "$work/clusters/scale/daemon.pid")
token=$(cat "$work/clusters/scale/metrics.token")
hz=$(getconf CLK_TCK)
metrics() { curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$port/metrics" | grep '^hpcplane_reconcile_pass_duration_seconds'; }
jiffies() { awk '{print $14 + $15 + $16 + $17}' "/proc/$daemon/stat"; }
nodes() { hp exec scale-controller -- sinfo -h -N -o %N 2>/dev/null | grep -c . || true; }
# stats BEFORE AFTER JIFFIES RSS COLUMNS...: one row; pass quantiles from the histogram's deltas
# over the window (the first bucket holding the quantile: an upper bound).
stats() {
  python3 - "$@" "$hz" "$window" <<'PY'
import re, sys
before, after, jif, rss, *cols, hz, window = sys.argv[1:]
def parse(text):
    b, s, c = {}, 0.0, 0
    for line in text.splitlines():
        m = re.match(r'hpcplane_reconcile_pass_duration_seconds_bucket\{le="([^"]+)"\} (\S+)', line)
        if m: b[m.group(1)] = float(m.group(2))
        elif line.startswith("hpcplane_reconcile_pass_duration_seconds_sum"): s = float(line.split()[-1])
        elif line.startswith("hpcplane_reconcile_pass_duration_seconds_count"): c = float(line.split()[-1])
    return b, s, c
b0, s0, c0 = parse(before); b1, s1, c1 = parse(after)
count = c1 - c0
def q(frac):
    if count <= 0: return "-"
    for le in sorted(b1, key=lambda k: float("inf") if k == "+Inf" else float(k)):
        if b1[le] - b0.get(le, 0) >= frac * count:
            return "<=" + ("inf" if le == "+Inf" else f"{float(le) * 1000:g}ms")
    return "-"
mean = (s1 - s0) / count * 1000 if count > 0 else 0
cpu = 100.0 * int(jif) / int(hz) / float(window)
p, n, up_ms, down_ms = cols
fmt_s = lambda ms: "-" if ms == "-" else f"{int(ms) / 1000:.2f}"
print(f"{p:>8} {n:>8} {fmt_s(up_ms):>9} {q(0.5):>9} {q(0.95):>9} {mean:9.1f} {int(count):7d} {cpu:8.1f} {rss:>8} {fmt_s(down_ms):>9}")
PY
}
rss_mib() { awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$daemon/status"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

printf "%8s %8s %9s %9s %9s %9s %7s %8s %8s %9s\n" pending workers "0->N s" "pass p50" "pass p95" "mean ms" passes "cpu %" "rss MiB" "N->0 s"
queued=0
for p in $pending_counts; do
  if [ "$p" -gt "$queued" ]; then
    hp exec scale-login --user alice -- bash -c "for i in \$(seq 1 $((p - queued))); do sbatch -Q --hold -p cpu -o /dev/null --wrap true || exit 1; done"
    queued=$p
  fi
  for n in $sizes; do
    t=$(date +%s%N)
    hp scale nodeset cpu --replicas "$n" --wait --timeout 600 >/dev/null
    up_ms=$(ms_since "$t")
    before=$(metrics); j0=$(jiffies)
    sleep "$window"
    after=$(metrics); j1=$(jiffies)
    rss=$(rss_mib)
    t=$(date +%s%N)
    hp scale nodeset cpu --replicas 0 >/dev/null
    until [ "$(hp get pods 2>/dev/null | grep -c '^cpu-' || true)" = 0 ] && [ "$(nodes)" = 0 ]; do sleep 0.1; done
    down_ms=$(ms_since "$t")
    stats "$before" "$after" "$((j1 - j0))" "$rss" "$p" "$n" "$up_ms" "$down_ms"
  done
done
echo
printf "%8s %8s %9s %9s %9s %9s %7s %8s %8s %9s\n" pending nodesets "" "pass p50" "pass p95" "mean ms" passes "cpu %" "rss MiB" ""
for k in $nodeset_counts; do
  {
    for i in $(seq 1 "$k"); do
      printf -- '---\napiVersion: hpcplane.io/v1alpha1\nkind: NodeSet\nmetadata: {name: ns%d}\n' "$i"
      printf 'spec: {minReplicas: 0, maxReplicas: 1, resources: {cpus: 1, memoryMiB: 100}}\n'
    done
  } > "$work/nodesets.yaml"
  hp apply -f "$work/nodesets.yaml" >/dev/null
  # Every nodeset's partition exists in Slurm: the daemon has taken them all in.
  deadline=$((SECONDS + 300))
  until [ "$(hp exec scale-controller -- sinfo -h -o %R 2>/dev/null | grep -c '^ns[0-9]')" -ge "$k" ]; do
    [ $SECONDS -lt $deadline ] || { echo "the $k nodesets' partitions did not appear" >&2; exit 1; }
    sleep 0.5
  done
  before=$(metrics); j0=$(jiffies)
  sleep "$window"
  after=$(metrics); j1=$(jiffies)
  stats "$before" "$after" "$((j1 - j0))" "$(rss_mib)" "$queued" "$((k + 1))" - -
done
echo "cost vs scale: done (sizes: $sizes; pending: $pending_counts; nodesets: $nodeset_counts)"
