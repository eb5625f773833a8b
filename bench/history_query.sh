#!/usr/bin/env bash
# The same broad query -- every job of the cluster -- three ways, on a cluster holding JOBS
# (10000) real jobs, REPEATS (20) times each: `sacct -a -P` (and slurmdbd behind it),
# slurmrestd's /jobs listing, and hpcplane's API export. Prints latency p50/p95 and peak RSS of
# the process that answers. The jobs run: arrays of `true` on 4 workers that each offer 8 CPUs
# (overcommitted on purpose: the jobs only need a slot), which runs 10,000 jobs in a few
# minutes on a 2-core machine. The timed queries start once the agent has shipped every record
# and its window has moved past them, so nothing else is reading slurmdbd meanwhile.
#
# Usage: bash bench/history_query.sh [build-dir]
set -euo pipefail
BUILD=${1:-build}
H=$(realpath "$BUILD/hpcplane")
JOBS=${JOBS:-10000}
REPEATS=${REPEATS:-20}
STATE=$(mktemp -d /tmp/hpcplane-bench-hq.XXXXXX)
NAME=hq$$
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export HPCPLANE_STATE_DIR=$STATE HPCPLANE_CLUSTER=$NAME
cleanup() { "$H" down --purge >/dev/null 2>&1 || true; rm -rf "$STATE"; }
trap cleanup EXIT

cat > "$STATE/cluster.yaml" <<EOF
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata:
  name: $NAME
spec:
  network:
    subnet: 10.250.$((RANDOM % 200)).0/24
  restApi:
    memoryLimitMiB: 0  # the peer measured as it is, not restarted by hpcplane's limit
  scheduling:
    extraConfig:
      - MaxJobCount=$((JOBS * 2 + 1000))
      - MinJobAge=86400
  users:
    - name: alice
      uid: 2001
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata:
  name: cpu
spec:
  replicas: 4
  resources:
    cpus: 8
    memoryMiB: 4000
  partition:
    default: true
EOF
"$H" up -f "$STATE/cluster.yaml" --detach --control-plane "127.0.0.1:$PORT" >/dev/null
CD=$STATE/clusters/$NAME
START=$(date +%s)
# Named states: without them sacct leaves out jobs that never became eligible (held, cancelled).
STATES=BF,CA,CD,DL,F,NF,OOM,PD,PR,R,RQ,RS,RV,S,TO
SINCE=$(date -d "@$((START - 60))" +%Y-%m-%dT%H:%M:%S)  # sacct takes local wall-clock times

wait_for() {  # description, command that prints a number, target
  for _ in $(seq 1 900); do
    n=$(set +o pipefail; eval "$2" 2>/dev/null | tail -1)
    [ "${n:-0}" -ge "$3" ] && return 0
    sleep 2
  done
  echo "timed out waiting for $1 ($n of $3)" >&2
  exit 1
}
# alice's jobs are charged to account "default" once hpcplane has added her association.
wait_for "alice's association" "\"$H\" exec $NAME-controller --user slurm -- sacctmgr -n -P show assoc where user=alice format=account | grep -c default" 1
wait_for "4 idle workers" "\"$H\" exec $NAME-controller --user slurm -- sinfo -h -t idle -o %D" 4
echo "running $JOBS jobs (arrays of up to 1000) ..."
T0=$(date +%s.%N)
left=$JOBS
while [ "$left" -gt 0 ]; do
  n=$((left < 1000 ? left : 1000))
  "$H" exec "$NAME-login" --user alice -- sbatch -o /dev/null --mem=10M --array=1-$n --wrap true >/dev/null
  left=$((left - n))
done
wait_for "the queue to drain" "\"$H\" exec $NAME-controller --user slurm -- squeue -h -r -o %i | wc -l | awk '{print (\$1 == 0)}'" 1
FINISHED=$(date +%s)
python3 -c "print('ran $JOBS jobs in %.0f s (%.1f jobs/s)' % ($FINISHED - $T0, $JOBS / ($FINISHED - $T0)))"
wait_for "slurmdbd records" "\"$H\" exec $NAME-controller --user slurm -- sacct -a -X -n -P -S $SINCE -E now -s CD -o JobIDRaw | wc -l" "$JOBS"
TOKEN_FILE=$STATE/controlplane/admin.token
API="http://127.0.0.1:$PORT/api/v1/projects/default/jobs"
wait_for "control plane records" \
  "curl -s -H \"Authorization: Bearer \$(cat $TOKEN_FILE)\" '$API/export?format=ndjson&state=COMPLETED' | wc -l" "$JOBS"
# The agent re-reads an overlap window; wait until it has moved past the last job.
wait_for "the agent's window to pass the jobs" \
  "python3 -c \"import json; print(int(json.load(open('$CD/agent-window.json'))['windowStart'] > $FINISHED))\"" 1

pid_of() { python3 -c "import json,sys; print(json.load(open('$CD/runtime/pods/$1/state.json'))['pid'])"; }
# The daemon inside a pod: the child of the pod's init.
child_pid() { pgrep -P "$(pid_of "$1")" | head -1; }
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
DAEMON=$(cut -d' ' -f1 "$CD/daemon.pid")
DBD=$(child_pid "$NAME-slurmdbd")
RESTD=$(child_pid "$NAME-restapi")
REST_IP=$("$H" get pods -o json | python3 -c "import json,sys; print([p['ip'] for p in json.load(sys.stdin) if p['name'].endswith('-restapi')][0])")
JWT=$(python3 - "$CD/runtime/secrets/jwt-key/jwt_hs256.key" <<'EOF'
import base64, hashlib, hmac, json, sys, time
key = open(sys.argv[1], 'rb').read()
b = lambda x: base64.urlsafe_b64encode(x).rstrip(b'=')
h = b(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
now = int(time.time())
p = b(json.dumps({"exp": now + 3600, "iat": now, "sun": "slurm"}).encode())
print((h + b'.' + p + b'.' + b(hmac.new(key, h + b'.' + p, hashlib.sha256).digest())).decode())
EOF
)

# slurmrestd's API version for the cluster's Slurm (slurm/release.h): v0.0.38 on 22.05, v0.0.42 on.
SLURM_VERSION=$("$H" status | awk '$1 == "slurm/slurmrestd" {print $2}')
case "$SLURM_VERSION" in 2[0-2].* | 23.02.*) REST_API=v0.0.38 ;; *) REST_API=v0.0.42 ;; esac

stats() {  # label, file of "seconds" lines
  python3 - "$1" "$2" <<'EOF'
import sys
v = sorted(float(x) for x in open(sys.argv[2]))
p = lambda q: v[min(len(v) - 1, int(q * len(v)))]
print(f"{sys.argv[1]:<34} p50 {p(0.5)*1000:8.0f} ms  p95 {p(0.95)*1000:8.0f} ms", end="")
EOF
}

# One timed `sacct -a -P -X` in the controller pod, appended to FILE.seconds and FILE.rss; its
# line count goes to $T.lines.
time_sacct() {
  "$H" exec "$NAME-controller" --user slurm -- python3 -c "
import resource, subprocess, time
t = time.time()
out = subprocess.run(['sacct', '-a', '-P', '-X', '-S', '$SINCE', '-E', 'now', '-s', '$STATES', '-o', 'JobIDRaw,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,TotalCPU,MaxRSS,NNodes,NodeList,AllocTRES'], stdout=subprocess.PIPE).stdout
print(time.time() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, out.count(b'\n'))" > "$T.one"
  awk '{print $1}' "$T.one" >> "$1.seconds"; awk '{print $2}' "$T.one" >> "$1.rss"; awk '{print $3}' "$T.one" > "$T.lines"
}

T=$STATE/t
: > "$T.sacct.seconds"; : > "$T.sacct.rss"
DBD0=$(hwm "$DBD")
for _ in $(seq "$REPEATS"); do time_sacct "$T.sacct"; done
stats "sacct -a -P ($(cat "$T.lines") lines)" "$T.sacct.seconds"
echo "  peak RSS: sacct $(sort -n "$T.sacct.rss" | tail -1) KiB, slurmdbd $DBD0 -> $(hwm "$DBD") KiB"

: > "$T.rest"
R0=$(hwm "$RESTD")
for _ in $(seq "$REPEATS"); do
  curl -s -o "$T.body" -w '%{time_total}\n' -H "X-SLURM-USER-NAME: slurm" -H "X-SLURM-USER-TOKEN: $JWT" \
    "http://$REST_IP:6820/slurm/$REST_API/jobs" >> "$T.rest"
done
RROWS=$(python3 -c "import json; print(len(json.load(open('$T.body'))['jobs']))")
stats "slurmrestd /jobs ($RROWS jobs)" "$T.rest"
echo "  peak RSS: slurmrestd $R0 -> $(hwm "$RESTD") KiB"

: > "$T.api"
A0=$(hwm "$DAEMON")
for _ in $(seq "$REPEATS"); do
  curl -s -o "$T.body" -w '%{time_total}\n' -H "Authorization: Bearer $(cat "$TOKEN_FILE")" \
    "$API/export?format=ndjson" >> "$T.api"
done
AROWS=$(wc -l < "$T.body")
stats "hpcplane API export ($AROWS jobs)" "$T.api"
echo "  peak RSS: hpcplane (operator + API + agent, one process) $A0 -> $(hwm "$DAEMON") KiB"
: > "$T.page"
for _ in $(seq "$REPEATS"); do
  curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $(cat "$TOKEN_FILE")" "$API?limit=100" >> "$T.page"
done
stats "hpcplane API one page of 100" "$T.page"
echo

# With CLONE_TO (e.g. 1000000): slurmdbd's job table is grown to that many records by copying
# the real ones (new job ids, the same times, states and statistics) straight in MariaDB, and
# `sacct -a -X -P` is timed over all of them, CLONE_REPEATS (3) times: the peer of the
# console's first HPC-tab page with a million jobs stored (bench/console_render.py). The
# copies have no steps; sacct -X lists allocations only, as above.
CLONE_TO=${CLONE_TO:-0}
if [ "$CLONE_TO" -gt "$JOBS" ]; then
  SQL() { "$H" exec "$NAME-mariadb" -- mariadb -u root --socket=/tmp/mysqld.sock -N -B slurm_acct_db -e "$1"; }
  TABLE=${NAME}_job_table
  COLS=$(SQL "SELECT GROUP_CONCAT(CONCAT(CHAR(96), column_name, CHAR(96)) ORDER BY ordinal_position) FROM information_schema.columns
              WHERE table_schema = 'slurm_acct_db' AND table_name = '$TABLE' AND column_name NOT IN ('job_db_inx', 'id_job')")
  COPIES=$(( (CLONE_TO + JOBS - 1) / JOBS - 1 ))
  C0=$(date +%s.%N)
  SQL "INSERT INTO $TABLE (id_job, $COLS) SELECT t.id_job + s.seq * 1000000, $COLS FROM $TABLE t
       JOIN seq_1_to_$COPIES s WHERE t.id_job < 1000000"
  TOTAL=$(SQL "SELECT COUNT(*) FROM $TABLE")
  python3 -c "print('copied the job table to $TOTAL records in %.0f s' % ($(date +%s.%N) - $C0))"
  : > "$T.big.seconds"; : > "$T.big.rss"
  for _ in $(seq "${CLONE_REPEATS:-3}"); do time_sacct "$T.big"; done
  stats "sacct -a -P ($(cat "$T.lines") lines)" "$T.big.seconds"
  echo "  peak RSS: sacct $(sort -n "$T.big.rss" | tail -1) KiB, slurmdbd $(hwm "$DBD") KiB"
fi
