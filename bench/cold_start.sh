#!/usr/bin/env bash
# Cold start: sbatch -> RUNNING on a scaled-to-zero nodeset (bench/cold_start.cc), TRIALS runs,
# and in the same run, on a second cluster of the same shape, the peer: the same job through Slurm's power saving with
# State=CLOUD nodes whose ResumeProgram asks for the same kind of local worker pod
# (bench/power_save_peer.cc). What the peer needed on 22.05 is in the settings below.
set -euo pipefail
build=$(readlink -f "${1:-build}")
trials=${TRIALS:-10}
# The peer takes ~30 s a trial; PEER_TRIALS (default TRIALS) keeps a run with many hpcplane trials short.
peer_trials=${PEER_TRIALS:-$trials}
work=$(mktemp -d /tmp/hpcplane-cold-XXXXXX)
chmod 755 "$work"
trap 'for c in cold peer; do "$build/hpcplane" --state-dir "$work" --cluster $c down --purge >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT
# hpcplane's side: an autoscaled nodeset and nothing else.
cat > "$work/cold.yaml" <<'YAML'
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: cold}
spec:
  network: {subnet: 10.239.78.0/24}
  users: [{name: alice, uid: 2001}]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: elastic}
spec: {minReplicas: 0, maxReplicas: 2, idleTimeout: 1s, resources: {cpus: 1, memoryMiB: 500}}
YAML
# The peer's cluster: Slurm's power saving, no hpcplane nodeset (power saving settings would
# otherwise touch hpcplane's dynamic nodes too).
cat > "$work/peer.yaml" <<'YAML'
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: peer}
spec:
  network: {subnet: 10.239.81.0/24}
  users: [{name: alice, uid: 2001}]
  scheduling:
    extraConfig:
      # The peer: Slurm's power saving for two CLOUD nodes, only in partition "cloud".
      - "NodeName=cloud-[0-1] CPUs=1 Boards=1 SocketsPerBoard=1 CoresPerSocket=1 ThreadsPerCore=1 RealMemory=500 State=CLOUD Feature=cloud"
      - "PartitionName=cloud Nodes=cloud-[0-1] State=UP"
      - "ResumeProgram=/run/slurm/state/peer/resume.sh"
      - "SuspendProgram=/run/slurm/state/peer/suspend.sh"
      - "SuspendTime=2"
      - "SuspendTimeout=10"
      - "ResumeTimeout=120"
      # Cloud nodes have no address until they register; take the one they register from.
      - "SlurmctldParameters=cloud_reg_addrs,idle_on_node_suspend"
YAML
# The controller runs ResumeProgram/SuspendProgram as SlurmUser from its state volume; they
# must exist before slurmctld starts, so the volume is prepared first.
state="$work/clusters/peer/runtime/volumes/controller-state"
mkdir -p "$state/peer"
for verb in resume suspend; do
  printf '#!/bin/sh\necho "%s $1" >> /run/slurm/state/peer/requests\n' "$verb" > "$state/peer/$verb.sh"
  chmod 755 "$state/peer/$verb.sh"
done
touch "$state/peer/requests"
chown -R slurm:slurm "$state"
chmod 700 "$state"
"$build/hpcplane" --state-dir "$work" up -f "$work/cold.yaml" --detach >/dev/null
"$build/hpcplane" --state-dir "$work" up -f "$work/peer.yaml" --detach >/dev/null
"$build/bench_cold_start" "$work" cold elastic "$trials" | tee "$work/hpcplane.out"
"$build/bench_power_save" "$work" peer "$peer_trials" | tee "$work/peer.out"
h=$(awk '/sbatch -> RUNNING/ {print $4}' "$work/hpcplane.out")
p=$(awk '/sbatch -> RUNNING/ {print $4}' "$work/peer.out")
echo
echo "cold start p50: hpcplane ${h} ms, Slurm power saving ${p} ms; peer/hpcplane = $(echo "scale=2; $p / $h" | bc)x"
