#!/usr/bin/env bash
# hpcplane's own upgrade (issue 50, item 3), locally: a cluster brought up by the previous
# hpcplane binary, with a job running, is taken over by this one. Checks that no pod is replaced
# or restarted, the running job completes, new jobs run, and the cluster switches to what this
# version runs (auth/slurm from Slurm 23.11) only when it next starts with no pod.
#
# Usage: bash tests/upgrade/from_previous.sh PREVIOUS_HPCPLANE NEW_HPCPLANE
#   (build the previous version with `git worktree add /tmp/prev COMMIT` and `make build` there)
# Not in `make test`: it needs a second build of another commit.
set -euo pipefail
prev=$(readlink -f "$1")
new=$(readlink -f "$2")
export HPCPLANE_IMAGE_STORE=${HPCPLANE_IMAGE_STORE:-$(dirname "$new")/images}
state=$(mktemp -d /tmp/hpcplane-upgrade.XXXXXX)
name=upg$$
export HPCPLANE_STATE_DIR=$state HPCPLANE_CLUSTER=$name
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() {
  "$new" down --purge >/dev/null 2>&1 || "$prev" down --purge >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT
until_true() {  # SECONDS COMMAND...: polls every 0.2 s
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.2; done
}

sed -e "s/name: demo/name: $name/" -e "s/cluster: demo/cluster: $name/" -e "s|10.213.7.0/24|10.236.9.0/24|" \
  "$(dirname "$0")/../../examples/cluster.yaml" >"$state/cluster.yaml"
"$prev" up -f "$state/cluster.yaml" --detach >/dev/null
login() { "$1" exec "$name-login" --user alice -- "${@:2}"; }
pods() { "$1" get pods -o json | python3 -c '
import json, sys
for p in sorted(json.load(sys.stdin), key=lambda p: p["name"]):
    print(p["name"], p["startedAt"], p["restarts"])'; }

job=$(login "$prev" sbatch --parsable --chdir /shared --wrap "sleep 25")
running() { [ "$(login "$new" squeue -h -j "$job" -o %T 2>/dev/null)" = RUNNING ]; }
until_true 60 running || fail "job $job never ran under the previous version"
before=$(pods "$prev")
auth_before=$("$prev" exec "$name-controller" -- scontrol show config | awk '$1 == "AuthType" {print $3}')
echo "previous version: $(wc -l <<<"$before") pods, AuthType $auth_before, job $job running"
[ "$auth_before" = auth/munge ] || fail "the previous version must run munge for this check (it ran $auth_before)"

kill -9 "$(awk '{print $1}' "$state/clusters/$name/daemon.pid")"
"$new" up -f "$state/cluster.yaml" --detach >/dev/null
after=$(pods "$new")
[ "$before" = "$after" ] || fail "pods replaced or restarted by the takeover:
$(diff <(echo "$before") <(echo "$after"))"
echo "taken over by this version: 0 pods replaced or restarted"
done_ok() { [ "$(login "$new" sacct -n -X -P -j "$job" --format=State 2>/dev/null)" = COMPLETED ]; }
until_true 90 done_ok || fail "job $job did not complete after the takeover"
login "$new" srun -N2 true || fail "a new job failed after the takeover"
[ "$(pods "$new")" = "$before" ] || fail "pods replaced or restarted after the new daemon's passes"
echo "job $job completed; a new two-node job ran"

"$new" down >/dev/null
"$new" up -f "$state/cluster.yaml" --detach >/dev/null
auth_after=$("$new" exec "$name-controller" -- scontrol show config | awk '$1 == "AuthType" {print $3}')
login "$new" srun -N2 true || fail "a job failed after the restart on $auth_after"
echo "after down and up: AuthType $auth_after, a two-node job ran"
echo "PASS"
