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
# A sign-in token for the console that expires in 12 hours (revoke it sooner on the Admin page or
# with `hpcplane tokens revoke ID`); the bootstrap admin token itself is never printed.
signin="sign in with this token (admin, expires in 12 h): $("$bin" tokens create --subject demo-admin --role admin \
  --ttl 12h --server "http://$console" --token-file "$HPCPLANE_STATE_DIR/controlplane/admin.token" 2>/dev/null ||
  echo "(none: no control plane answers on $console)")"
cat <<EOT

Web console: http://$console/ (when the control plane runs there)
  $signin
  The bootstrap admin token is in $HPCPLANE_STATE_DIR/controlplane/admin.token (mode 0600); a user's:
  $bin tokens create --subject alice --role user --project P --out alice.token \\
    --server http://$console --token-file $HPCPLANE_STATE_DIR/controlplane/admin.token

The cluster keeps running. Try next:
  $bin status                                     # components, nodesets, pods
  $bin exec demo-login --user alice               # a shell with the Slurm CLI (sinfo, squeue, sbatch, srun)
  $bin exec demo-login --user alice -- srun -N2 hostname
  $bin scale nodeset cpu --replicas 3 --wait      # add a worker; scale back down and idle ones drain first
  $bin logs demo-controller                       # slurmctld's log
  $bin down                                       # stop everything (--purge also deletes state)
EOT
