#!/usr/bin/env bash
# Throughput parity: does the autoscaler cost Slurm throughput? JOBS short jobs (default 3000,
# `--wrap true`) are submitted held, then released at once, and timed until Slurm has finished
# them all, on one nodeset of 4 one-CPU workers:
#   peer:     Slurm alone, hpcplane's daemon stopped (SIGSTOP; the workers run on untouched)
#   hpcplane: the same workers as an autoscaled nodeset (0..4, already at 4) with the daemon
#             running: it lists the whole queue every pass and decides the nodeset's size.
# HEALTH_CHECKS=false runs the same with the cluster's health checks off (spec.healthChecks).
# ROUNDS (default 2) pairs run in ABBA order (peer, hpcplane, hpcplane, peer, ...) on the same
# cluster, each starting from an empty job table (MinJobAge=2: finished jobs are purged within
# about 10 s), so neither side inherits the other's load or drift. Prints
# jobs/s per round, the daemon's and slurmctld's CPU share during the hpcplane rounds, and the
# ratio hpcplane/peer of the median rounds (target >= 0.97).
set -euo pipefail
build=$(readlink -f "${1:-build}")
jobs=${JOBS:-3000}
case ${HEALTH_CHECKS:-true} in true | false) ;; *) echo "HEALTH_CHECKS is true or false, not ${HEALTH_CHECKS}" >&2; exit 2 ;; esac
rounds=${ROUNDS:-2}
work=$(mktemp -d /tmp/hpcplane-tput-XXXXXX)
chmod 755 "$work"
hp() { "$build/hpcplane" --state-dir "$work" --cluster tput "$@"; }
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill -CONT "$daemon" 2>/dev/null || true
  # DAEMON_LOG=FILE keeps the daemon's log of the run.
  [ -n "${DAEMON_LOG:-}" ] && cp "$work/clusters/tput/daemon.log" "$DAEMON_LOG" 2>/dev/null || true
  hp down --purge >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
cat > "$work/cluster.yaml" <<YAML
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: tput}
spec:
  network: {subnet: 10.239.83.0/24}
  users: [{name: alice, uid: 2001}]
  healthChecks: {enabled: ${HEALTH_CHECKS:-true}}
  scheduling:
    extraConfig: ["MaxJobCount=50000", "MinJobAge=2"]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: auto}
spec: {minReplicas: 0, maxReplicas: 4, idleTimeout: 30m, resources: {cpus: 1, memoryMiB: 400}}
YAML
hp up -f "$work/cluster.yaml" --detach >/dev/null
daemon=$(cut -d' ' -f1 "$work/clusters/tput/daemon.pid")
login() { hp exec tput-login --user alice -- "$@"; }

# Warm the nodeset to its 4 workers, as an autoscaled nodeset that has seen work.
login bash -c 'for i in 1 2 3 4 5 6 7 8; do sbatch -Q -p auto -o /dev/null --wrap "sleep 2"; done'
deadline=$((SECONDS + 120))
until [ "$(hp exec tput-login -- sinfo -h -p auto -t idle -o %D 2>/dev/null | awk '{s+=$1} END {print s+0}')" = 4 ] &&
  [ -z "$(login squeue -h -o %i)" ]; do
  [ $SECONDS -lt $deadline ] || { echo "the nodeset did not reach 4 idle workers" >&2; exit 1; }
  sleep 0.5
done

jiffies() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
slurmctld_pid() {
  local init
  init=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$work/clusters/tput/runtime/pods/tput-controller/state.json")
  pgrep -P "$init" -x slurmctld || echo "$init"
}
ctld=$(slurmctld_pid)
hz=$(getconf CLK_TCK)

# round LABEL: submits $jobs held jobs, releases them and prints "LABEL jobs/s seconds".
round() {
  local label=$1
  login bash -c "for i in \$(seq 1 $jobs); do sbatch --parsable --hold -p auto -o /dev/null --wrap true; done" > "$work/ids" 2> "$work/submit.err" || true
  [ "$(wc -l < "$work/ids")" = "$jobs" ] || { echo "submission failed:" >&2; cat "$work/submit.err" >&2; head -c 300 "$work/ids" >&2; exit 1; }
  local d0 c0 t0 t1
  d0=$(jiffies "$daemon"); c0=$(jiffies "$ctld")
  t0=$(date +%s.%N)
  login scontrol release "$(paste -sd, "$work/ids")"
  until [ -z "$(login squeue -h -o %i)" ]; do sleep 0.2; done
  t1=$(date +%s.%N)
  local d1 c1
  d1=$(jiffies "$daemon"); c1=$(jiffies "$ctld")
  awk -v l="$label" -v n="$jobs" -v t0="$t0" -v t1="$t1" -v dd=$((d1 - d0)) -v dc=$((c1 - c0)) -v hz="$hz" 'BEGIN {
    s = t1 - t0; printf "%-9s %6.1f jobs/s  (%d jobs in %.1f s; daemon %.1f%%, slurmctld %.1f%% of one core)\n",
    l, n / s, n, s, 100 * dd / hz / s, 100 * dc / hz / s }' | tee -a "$work/rounds"
}

# empty_table: waits until slurmctld has purged every finished job of the previous round.
empty_table() {
  local deadline=$((SECONDS + 120))
  until [ -z "$(login squeue -h -t all -o %i)" ]; do
    [ $SECONDS -lt $deadline ] || { echo "finished jobs were not purged" >&2; exit 1; }
    sleep 0.5
  done
}
peer_round() { empty_table; kill -STOP "$daemon"; round peer; kill -CONT "$daemon"; }
hpcplane_round() {
  empty_table
  round hpcplane
  local workers
  workers=$(hp exec tput-login -- sinfo -h -p auto -o %D | awk '{s+=$1} END {print s+0}')
  [ "$workers" = 4 ] || { echo "the nodeset left its 4 workers during the run ($workers)" >&2; exit 1; }
}

echo "throughput: $jobs jobs of 'true' on 4 one-CPU workers, $rounds round(s) each (health checks ${HEALTH_CHECKS:-true})"
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then peer_round; hpcplane_round; else hpcplane_round; peer_round; fi
done
median() { grep "^$1 " "$work/rounds" | awk '{print $2}' | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
p=$(median peer)
h=$(median hpcplane)
echo
echo "throughput: hpcplane ${h} jobs/s, Slurm alone ${p} jobs/s; ratio hpcplane/peer = $(echo "scale=3; $h / $p" | bc) (target >= 0.97)"
