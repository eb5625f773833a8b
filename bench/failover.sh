#!/usr/bin/env bash
# Benchmark: the primary slurmctld's machine lost for OUTAGE seconds (its slurmctld stopped: no
# heartbeat, no answer; the other pods' packets to its port dropped, as to a machine gone), then
# back (network restored, slurmctld started again). Measured, TRIALS times each, in ABAB order:
#   - scheduling gap: from the loss until a job submitted then (sbatch tried every second from
#     the login pod) has completed;
#   - with a backup controller (spec.backupController): the takeover (the heartbeat in the state
#     volume names the backup) and the hand-back after the machine returns.
# Peer: the same cluster and loss without a backup, whose scheduling gap is the outage itself.
#
# Usage: bash bench/failover.sh [build-dir]   (TRIALS=5, OUTAGE=25: below 30 s, the earliest the
#        lost primary's liveness probe restarts it, still cut off from the other pods)
set -euo pipefail
build=$(readlink -f "${1:-build}")
trials=${TRIALS:-5}
outage=${OUTAGE:-25}
work=$(mktemp -d /tmp/hpcplane-bench-failover-XXXXXX)
clusters=("fb$$" "fp$$")  # with a backup, the peer without
cleanup() {
  for c in "${clusters[@]}"; do "$build/hpcplane" --state-dir "$work" --cluster "$c" down --purge >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
hp() { local c=$1; shift; "$build/hpcplane" --state-dir "$work" --cluster "$c" "$@"; }
now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.2f}')"; }

net=$(($$ % 150 + 40))
for i in 0 1; do
  c=${clusters[$i]}
  backup=""
  [ "$i" = 0 ] && backup="  backupController: {enabled: true}"
  cat > "$work/$c.yaml" <<YAML
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: $c}
spec:
  network: {subnet: 10.235.$((net + i)).0/24}
  users: [{name: alice, uid: 2001}]
  accounting: {enabled: false}
$backup
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: cpu}
spec: {cluster: $c, replicas: 1, maxReplicas: 1, resources: {cpus: 1, memoryMiB: 500}, partition: {default: true}}
YAML
  hp "$c" up -f "$work/$c.yaml" --detach >/dev/null
done

# The serving controller's index in the heartbeat (0 primary, 1 backup); -1 without one.
serving() {
  python3 - "$work/clusters/$1/runtime/volumes/controller-state/heartbeat" <<'PY'
import sys
try: b = open(sys.argv[1], "rb").read()
except OSError: b = b""
print(int.from_bytes(b[8:16], "big") if len(b) == 16 else -1)
PY
}
wait_serving() {  # wait_serving CLUSTER INDEX SECONDS
  local deadline=$((SECONDS + $3))
  until [ "$(serving "$1")" = "$2" ]; do
    [ $SECONDS -lt "$deadline" ] || { echo "bench: $1: controller $2 does not serve after $3 s" >&2; exit 1; }
    sleep 0.1
  done
}
primary_pid() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" \
  "$work/clusters/$1/runtime/pods/$1-controller/state.json"; }
# A job from the login pod, submitted again every second until Slurm takes it; returns once it
# has completed.
job_through() {
  local c=$1 id="" deadline=$((SECONDS + outage + 120))
  while [ -z "$id" ]; do
    [ $SECONDS -lt "$deadline" ] || { echo "bench: $c: no job taken" >&2; exit 1; }
    id=$(hp "$c" exec "$c-login" --user alice -- timeout 20 sbatch --parsable --chdir /tmp -o /dev/null --wrap true 2>/dev/null || true)
    [ -n "$id" ] || sleep 1
  done
  until [ "$(hp "$c" exec "$c-login" -- scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z]*')" = "JobState=COMPLETED" ]; do
    [ $SECONDS -lt "$deadline" ] || { echo "bench: $c: job $id did not complete" >&2; exit 1; }
    sleep 0.2
  done
}
lose() {  # the primary's machine lost: its port unreachable from the pods, its slurmctld stopped
  local c=$1 gateway
  gateway=$(sed -n 's/.*subnet: \([0-9.]*\)\.0\/24.*/\1.1/p' "$work/$c.yaml")
  nsenter -t "$(primary_pid "$c")" -n sh -c "nft add table inet benchloss && nft add chain inet benchloss in \
    '{ type filter hook input priority -10; }' && nft add rule inet benchloss in ip saddr != $gateway tcp dport 6817 drop"
  hp "$c" exec "$c-controller" -- pkill -STOP -x 'slurmctld(-wlm)?'
}
restore() {  # back: reachable again, slurmctld started again (the stopped one ended)
  local c=$1
  nsenter -t "$(primary_pid "$c")" -n nft delete table inet benchloss
  hp "$c" exec "$c-controller" -- pkill -9 -x 'slurmctld(-wlm)?' >/dev/null 2>&1 || true
}

declare -a gap_backup gap_peer takeover handback
for t in $(seq 1 "$trials"); do
  for c in "${clusters[@]}"; do
    [ "$c" = "${clusters[0]}" ] && wait_serving "$c" 0 120
    job_through "$c"  # the cluster schedules before the loss
    lost=$(now)
    lose "$c"
    # The machine returns after the outage, whatever the cluster does meanwhile.
    (sleep "$outage" && restore "$c" && now > "$work/back") &
    restorer=$!
    if [ "$c" = "${clusters[0]}" ]; then
      wait_serving "$c" 1 $((outage + 30))
      takeover+=("$(since "$lost")")
    fi
    job_through "$c"
    gap=$(since "$lost")
    [ "$c" = "${clusters[0]}" ] && gap_backup+=("$gap") || gap_peer+=("$gap")
    wait "$restorer"
    back=$(cat "$work/back")
    if [ "$c" = "${clusters[0]}" ]; then
      wait_serving "$c" 0 120
      handback+=("$(since "$back")")
    fi
    if [ "$c" = "${clusters[0]}" ]; then
      echo "trial $t, with a backup: scheduling gap $gap s, takeover ${takeover[-1]} s, hand-back ${handback[-1]} s"
    else
      echo "trial $t, peer: scheduling gap $gap s"
    fi
  done
done

python3 - "${gap_backup[*]}" "${gap_peer[*]}" "${takeover[*]}" "${handback[*]}" "$outage" <<'PY'
import statistics, sys
gb, gp, to, hb = ([float(x) for x in a.split()] for a in sys.argv[1:5])
outage = sys.argv[5]
p50 = statistics.median
print(f"primary's machine lost for {outage} s, {len(gb)} trials each (Slurm 26.05, local pods):")
print(f"  with a backup controller: takeover p50 {p50(to):.1f} s max {max(to):.1f} s; scheduling gap p50 {p50(gb):.1f} s "
      f"max {max(gb):.1f} s; hand-back after the machine returns p50 {p50(hb):.1f} s max {max(hb):.1f} s")
print(f"  peer, no backup: scheduling gap p50 {p50(gp):.1f} s max {max(gp):.1f} s")
print(f"ratio peer/backup scheduling gap p50: {p50(gp) / p50(gb):.2f}")
PY
