#!/usr/bin/env bash
# `make demo`: bring up the embedded cluster, run a batch job across 2 workers as a normal
# user, print its output and what to try next. Leaves the cluster running for you to explore.
set -euo pipefail
bin=${1:-build/hpcplane}
bin=$(readlink -f "$bin")
export HPCPLANE_STATE_DIR=${HPCPLANE_STATE_DIR:-/var/lib/hpcplane}

# The control plane (REST API and web console) runs inside the daemon, on loopback.
console=${HPCPLANE_CONSOLE:-127.0.0.1:8080}

echo "== hpcplane up (the embedded demo cluster from examples/cluster.yaml, control plane on $console)"
if "$bin" status >/dev/null 2>&1; then
  "$bin" up --detach  # already running: as it was brought up
else
  "$bin" up --detach --control-plane "$console"
fi

echo
echo "== sbatch -N2 as user alice, from the login pod"
script='#!/bin/bash
#SBATCH -N2 --job-name=hello --output=/shared/hello-%j.out
echo "job $SLURM_JOB_ID on $SLURM_JOB_NUM_NODES nodes: $SLURM_JOB_NODELIST"
srun bash -c "echo hello from \$(hostname) as \$(id -un)"'
out=$("$bin" exec demo-login --user alice -- bash -c "cd /shared && sbatch --wait /dev/stdin <<'JOB'
$script
JOB")
echo "$out"
job=$(echo "$out" | awk '/Submitted batch job/ {print $4}')

echo
echo "== its output (/shared/hello-$job.out, a volume every worker and the login pod mount)"
"$bin" exec demo-login --user alice -- cat "/shared/hello-$job.out"

echo
"$bin" get nodesets

# The console's first screen: project "demo" (alice's Slurm account) on this data plane, and a
# sign-in for alice that opens its HPC tab, where the job above is once the agent has shipped it.
api=(--server "http://$console" --token-file "$HPCPLANE_STATE_DIR/controlplane/admin.token")
signin="(none: no control plane answers on $console)"
if "$bin" projects set demo --data-plane demo "${api[@]}" >/dev/null 2>&1; then
  # Until its record is there as it ended (the agent ships it running first, then as it ended).
  for _ in $(seq 60); do
    "$bin" jobs list --project demo --state COMPLETED "${api[@]}" 2>/dev/null | grep -qw "$job" && break
    sleep 1
  done
  # Sign-in tokens that expire in 12 hours (revoke them sooner on the Admin page or with
  # `hpcplane tokens revoke ID`); the bootstrap admin token itself is never printed.
  alice=$("$bin" tokens create --subject alice --role user --project demo --ttl 12h "${api[@]}")
  admin=$("$bin" tokens create --subject demo-admin --role admin --ttl 12h "${api[@]}")
  signin="sign in as alice (project demo, expires in 12 h): $alice
  or as an admin (every project, the live cluster): $admin"
fi
cat <<EOT

Web console: http://$console/#/projects/demo/jobs (job $job is on its first screen)
  $signin
  The bootstrap admin token is in $HPCPLANE_STATE_DIR/controlplane/admin.token (mode 0600); another user's:
  $bin tokens create --subject bob --role user --project P --out bob.token \\
    --server http://$console --token-file $HPCPLANE_STATE_DIR/controlplane/admin.token

The cluster keeps running. Try next:
  $bin status                                     # components, nodesets, pods
  $bin exec demo-login --user alice               # a shell with the Slurm CLI (sinfo, squeue, sbatch, srun)
  $bin exec demo-login --user alice -- srun -N2 hostname
  $bin scale nodeset cpu --replicas 3 --wait      # add a worker; scale back down and idle ones drain first
  $bin logs demo-controller                       # slurmctld's log
  $bin down                                       # stop everything (--purge also deletes state)
EOT
