#!/usr/bin/env bash
# Benchmark: a Slurm upgrade, 24.11 -> 26.05 (hpcplane upgrade slurm-26.05), while a job of JOB
# seconds runs on the cluster's worker. Measured for each way of upgrading, on its own cluster:
#   - the command: how long `hpcplane upgrade` takes to return;
#   - the scheduling gap: from the upgrade's start until a job submitted then (sbatch tried every
#     second from the login pod) has completed;
#   - the running job's fate (submitted --no-requeue): COMPLETED, or how it ended (NODE_FAIL:
#     killed with its worker); submissions Slurm took and then forgot;
#   - all on 26.05: from the upgrade's start until no worker runs 24.11 (sinfo's versions).
# Rolling (the default) against its peer, `upgrade --restart` (every pod at once, as hpcplane did
# before the rolling upgrade): the restart is quicker to finish, the rolling one kills no job.
#
# Usage: bash bench/upgrade.sh [build-dir]   (JOB=60; builds slurm-24.11 and slurm-26.05 where
#        HPCPLANE_IMAGE_STORE has not)
set -euo pipefail
build=$(readlink -f "${1:-build}")
job=${JOB:-60}
work=$(mktemp -d /tmp/hpcplane-bench-upgrade-XXXXXX)
clusters=("ur$$" "us$$")  # rolling, the peer restarting
cleanup() {
  for c in "${clusters[@]}"; do "$build/hpcplane" --state-dir "$work" --cluster "$c" down --purge >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
hp() { local c=$1; shift; "$build/hpcplane" --state-dir "$work" --cluster "$c" "$@"; }
now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.2f}')"; }
login() { local c=$1; shift; hp "$c" exec "$c-login" --user alice -- "$@"; }
state() { hp "$1" exec "$1-login" -- scontrol show job "$2" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }

net=$(($$ % 150 + 40))
for i in 0 1; do
  c=${clusters[$i]}
  cat > "$work/$c.yaml" <<YAML
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: $c}
spec:
  environment: slurm-24.11
  network: {subnet: 10.236.$((net + i)).0/24}
  users: [{name: alice, uid: 2001}]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: cpu}
spec: {cluster: $c, replicas: 1, maxReplicas: 2, resources: {cpus: 1, memoryMiB: 500}, partition: {default: true}}
YAML
  hp "$c" up -f "$work/$c.yaml" --detach >/dev/null
done
# The images of both releases exist before anything is timed.
hp "${clusters[0]}" environments build slurm-26.05 >/dev/null

# A job from the login pod, submitted again every second until Slurm takes it; returns once it has
# completed. A job Slurm no longer knows (taken by a slurmctld stopped before it saved its state)
# is submitted again, and counted in $work/$1.lost.
job_through() {
  local c=$1 id="" deadline=$((SECONDS + 300)) unknown=0 s
  while :; do
    if [ $SECONDS -ge "$deadline" ]; then
      echo "bench: $c: no job completed (last: ${id:-none})" >&2
      hp "$c" exec "$c-login" -- squeue >&2 || true
      [ -z "$id" ] || hp "$c" exec "$c-login" -- scontrol show job "$id" >&2 || true
      exit 1
    fi
    if [ -z "$id" ]; then
      id=$(login "$c" timeout 20 sbatch --parsable --chdir /tmp -o /dev/null --wrap true 2>/dev/null || true)
      [ -n "$id" ] || sleep 1
      continue
    fi
    s=$(state "$c" "$id" || true)
    [ "$s" = "COMPLETED" ] && return 0
    if [ -z "$s" ]; then
      unknown=$((unknown + 1))
      if [ "$unknown" -ge 25 ]; then
        echo "$id" >>"$work/$c.lost"
        id="" unknown=0
      fi
    else
      unknown=0
    fi
    sleep 0.2
  done
}
# Waits until every worker Slurm lists runs 26.05.
all_new() {
  local c=$1 deadline=$((SECONDS + job + 300)) versions
  while :; do
    versions=$(hp "$c" exec "$c-login" -- sinfo -h -N -o %v 2>/dev/null || true)
    if [ -n "$versions" ] && ! grep -qv '^26\.05' <<<"$versions"; then return 0; fi
    [ $SECONDS -lt "$deadline" ] || { echo "bench: $c: workers still on 24.11: $versions" >&2; exit 1; }
    sleep 0.5
  done
}

declare -A cmd gap fate done_at lost
for i in 0 1; do
  c=${clusters[$i]}
  job_through "$c"  # a worker runs
  # --no-requeue: a job its worker's end kills shows as killed instead of running again later.
  long=$(login "$c" sbatch --parsable --no-requeue --chdir /tmp -o /dev/null --wrap "sleep $job")
  until [ "$(state "$c" "$long")" = "RUNNING" ]; do sleep 0.2; done
  start=$(now)
  extra=""
  [ "$i" = 1 ] && extra="--restart"
  # shellcheck disable=SC2086
  (hp "$c" upgrade slurm-26.05 --timeout 300 $extra >"$work/$c.upgrade" 2>&1; since "$start" >"$work/$c.cmd") &
  upgrading=$!
  job_through "$c"
  gap[$c]=$(since "$start")
  wait "$upgrading" || { cat "$work/$c.upgrade" >&2; exit 1; }
  cmd[$c]=$(cat "$work/$c.cmd")
  all_new "$c"
  done_at[$c]=$(since "$start")
  # The long job's end: sacct keeps it whatever became of its worker.
  until f=$(hp "$c" exec "$c-login" -- sacct -n -X -P -j "$long" --format=State 2>/dev/null | head -1) &&
    [ -n "$f" ] && [ "$f" != "RUNNING" ] && [ "$f" != "PENDING" ] && [ "$f" != "REQUEUED" ]; do
    sleep 0.5
  done
  fate[$c]=$f
  lost[$c]=0
  [ -f "$work/$c.lost" ] && lost[$c]=$(wc -l <"$work/$c.lost")
  echo "$([ "$i" = 0 ] && echo rolling || echo "peer, --restart"): command ${cmd[$c]} s, scheduling gap ${gap[$c]} s, all on 26.05 after ${done_at[$c]} s, the ${job} s job: ${fate[$c]}, submissions lost ${lost[$c]}"
done

r=${clusters[0]} p=${clusters[1]}
python3 - "${gap[$r]}" "${gap[$p]}" "${cmd[$r]}" "${cmd[$p]}" "${done_at[$r]}" "${done_at[$p]}" "${fate[$r]}" "${fate[$p]}" "$job" \
  "${lost[$r]}" "${lost[$p]}" <<'PY'
import sys
gr, gp, cr, cp, dr, dp = (float(x) for x in sys.argv[1:7])
fr, fp, job, lr, lp = sys.argv[7], sys.argv[8], sys.argv[9], sys.argv[10], sys.argv[11]
killed = lambda f: 0 if f == "COMPLETED" else 1
print(f"Slurm 24.11 -> 26.05 with a {job} s job running (local pods, accounting on):")
print(f"  rolling: command {cr:.1f} s, scheduling gap {gr:.1f} s, all on 26.05 after {dr:.1f} s, jobs killed {killed(fr)}, submissions lost {lr}")
print(f"  peer, --restart: command {cp:.1f} s, scheduling gap {gp:.1f} s, all on 26.05 after {dp:.1f} s, jobs killed {killed(fp)}, submissions lost {lp}")
print(f"ratio restart/rolling scheduling gap: {gp / gr:.2f}")
PY
