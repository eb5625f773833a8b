#!/usr/bin/env bash
# MPI between two workers: mpi4py's ping-pong (bench/README, "Slurm releases") of two ranks on two
# worker pods (over the pods' network), against the same two ranks on one worker (shared memory),
# in one run: latency at the smallest message and bandwidth at the largest, each with its ratio.
# A third column runs the two workers' ranks spinning while idle (Open MPI's default, which the
# images turn off: see api::BaseFiles), to show what yielding buys where ranks fill the CPUs.
#
#   bash bench/mpi_pingpong.sh [BUILD_DIR]     MAX_SIZE=1048576 LOOP=200 ENVIRONMENT=slurm-26.05
set -euo pipefail
build=$(readlink -f "${1:-build}")
max_size=${MAX_SIZE:-1048576}
loop=${LOOP:-200}
environment=${ENVIRONMENT:-slurm-26.05}
work=$(mktemp -d /tmp/hpcplane-mpi-XXXXXX)
chmod 755 "$work"
H() { "$build/hpcplane" --state-dir "$work" "$@"; }
trap 'H --cluster mpi down --purge >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

cat >"$work/mpi.yaml" <<YAML
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: mpi}
spec:
  environment: $environment
  network: {subnet: 10.239.93.0/24}
  users: [{name: alice, uid: 2001}]
  datasets: [{name: shared, mountPath: /shared}]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: mpi}
spec: {replicas: 2, maxReplicas: 2, resources: {cpus: 2, memoryMiB: 1000}, partition: {default: true}}
YAML
H up -f "$work/mpi.yaml" --detach >/dev/null
out="$work/clusters/mpi/runtime/volumes/dataset-shared"
# Bounded: every size LOOP times (mpi4py's defaults for large messages run for minutes). Debian's
# mpi4py links Open MPI, whose launcher is mpirun.openmpi (`mpirun` is MPICH's on 26.05).
pingpong="mpirun.openmpi python3 -m mpi4py.bench pingpong -a none -m 1 -n $max_size -l $loop -s 10 \
  --loop-large $loop --skip-large 10 --loop-huge $loop --skip-huge 2"
run() {  # name, environment for the ranks ("" for none), sbatch placement...
  local name=$1 env=$2
  shift 2
  H exec mpi-login --user alice -- sbatch --wait -o "/shared/$name.out" "$@" --wrap "$env $pingpong" >/dev/null
  grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9.]+[[:space:]]+\|' "$out/$name.out" > "$work/$name.table" ||
    { echo "mpi pingpong: no table in the $name job's output:" >&2; cat "$out/$name.out" >&2; exit 1; }
}
run two_workers "" -N2 --ntasks-per-node=1
run one_worker "" -N1 -n2
run spinning "OMPI_MCA_mpi_yield_when_idle=0" -N2 --ntasks-per-node=1
printf '\nMPI ping-pong (%s, Open MPI via mpirun.openmpi, mpi4py), %d round trips a size\n' "$environment" "$loop"
printf '%-12s %18s %18s %8s %24s\n' "" "two workers" "one worker" ratio "two workers, spinning"
row() {  # label, awk program printing one value from a table
  local a b s
  a=$(awk "$2" "$work/two_workers.table")
  b=$(awk "$2" "$work/one_worker.table")
  s=$(awk "$2" "$work/spinning.table")
  printf '%-12s %18s %18s %8s %24s\n' "$1" "$a" "$b" "$(echo "scale=2; $a / $b" | bc)" "$s"
}
# mpi4py's columns: size [B], bandwidth [MB/s], "|", mean time [s], "±", its deviation, samples.
row "latency µs" 'NR == 1 {printf "%.1f", $4 * 1e6}'
row "MB/s" 'END {print $2}'
echo "(first row: the smallest message; bandwidth at $max_size bytes; ratio two workers / one worker)"
