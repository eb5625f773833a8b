#!/usr/bin/env bash
# Fault campaign: a stream of jobs from two workspaces (ann-astro, ben-bio) with the control
# plane on (`hpcplane server` on SQLite and `hpcplane agent`, separate processes), and meanwhile
# kill -9, one at a time, of each component: slurmctld, slurmdbd, MariaDB, slurmrestd, sackd,
# a worker's slurmd, a whole worker pod, the hpcplane daemon, the agent and the server. The
# pods come back by their restart policy; the daemon, the agent and the server are started
# again by this script, as systemd or Kubernetes would. For each: the time from the kill until
# the component runs again and the cluster is Ready (for the agent and the server: until the
# data plane's report is fresh again). At the end every job whose submission was acknowledged
# must be in sacct in a final state (matched by its --comment, since ids can repeat), and every
# record slurmdbd holds for the two users must be in the control plane's history exactly once
# with the same state; a job Slurm requeued (its worker died under it) is counted, and each of
# its attempts is one record, in sacct -D as in the history. Jobs slurmctld itself loses (kill -9
# within 5 s of accepting them: it saves its state at most every 5 s) are counted apart. Prints the table; exits 1 when a job is lost or duplicated or a component does not
# come back.
#
# Usage: bash bench/faults.sh [build-dir]
#   FAULTS="slurmctld ..."  which faults, in order (default: all)
#   SUBMIT_EVERY=1 JOB_SECONDS=2 SETTLE=6  the stream, and the seconds of stream between faults
#   KEEP=1  leave the cluster running at the end (to look into a failure)
set -euo pipefail
BUILD=${1:-build}
H=$(realpath "$BUILD/hpcplane")
FAULTS=${FAULTS:-"slurmctld slurmdbd mariadb slurmrestd sackd slurmd worker-pod daemon agent server"}
SUBMIT_EVERY=${SUBMIT_EVERY:-1}
JOB_SECONDS=${JOB_SECONDS:-2}
SETTLE=${SETTLE:-6}
RECOVERY_LIMIT=${RECOVERY_LIMIT:-180}
STATE=$(mktemp -d /tmp/hpcplane-faults.XXXXXX)
NAME=fc$$
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
export HPCPLANE_STATE_DIR=$STATE HPCPLANE_CLUSTER=$NAME
CD=$STATE/clusters/$NAME
CP=$STATE/controlplane
SERVER_PID="" AGENT_PID="" STREAM_PID=""

cleanup() {
  touch "$STATE/stop-stream"
  for pid in $STREAM_PID $AGENT_PID $SERVER_PID; do kill "$pid" 2>/dev/null || true; done
  for pid in $STREAM_PID $AGENT_PID $SERVER_PID; do wait "$pid" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then
    log "KEEP set: the cluster runs on, state in $STATE (HPCPLANE_STATE_DIR=$STATE HPCPLANE_CLUSTER=$NAME)"
    return
  fi
  "$H" down --purge >/dev/null 2>&1 || true
  rm -rf "$STATE"
}
trap cleanup EXIT
log() { echo "[$(date +%T)] $*" >&2; }
# What a failure is read with: the cluster's conditions and pods as hpcplane sees them, and the
# end of its daemon's and slurmctld's logs.
fail() {
  set +e  # every diagnostic below is shown, whichever of them fails
  log "FAILED: $*"
  {
    echo "--- hpcplane status"
    timeout 30 "$H" status 2>&1 | sed -n '/Conditions:/,$p'
    echo "--- pods"
    timeout 30 "$H" get pods 2>&1
    echo "--- daemon log (last 40 lines)"
    tail -n 40 "$CD/daemon.log" 2>&1
    # A daemon that stopped supervising (a pod left Pending) shows where it waits.
    local pid
    pid=$(cut -d' ' -f1 "$CD/daemon.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
      echo "--- the daemon's threads (pid $pid): what each waits in"
      for t in /proc/"$pid"/task/*; do echo "${t##*/} $(cat "$t/comm") $(cat "$t/wchan" 2>/dev/null) $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"; done
      command -v gdb >/dev/null && timeout 60 gdb -p "$pid" -batch -ex "thread apply all bt 12" 2>/dev/null | grep -E '^(Thread|#)'
      echo "--- its children"
      ps --ppid "$pid" -o pid,stat,etime,wchan:20,args 2>&1 | cut -c1-200
    fi
    echo "--- slurmctld's log (last 30 lines)"
    timeout 30 "$H" logs --tail 30 "$NAME-controller" 2>&1
  } >&2
  exit 1
}

start_server() {
  "$H" server --listen "127.0.0.1:$PORT" --unreachable-after 6 >>"$STATE/server.log" 2>&1 &
  SERVER_PID=$!
}
start_agent() {
  "$H" agent --server "$URL" --token-file "$CP/agent.token" --name "$NAME" --interval 1 >>"$STATE/agent.log" 2>&1 &
  AGENT_PID=$!
}
api() { [ -s "$CP/admin.token" ] && curl -sf -H "Authorization: Bearer $(cat "$CP/admin.token")" "$URL$1"; }

# pod_field POD FIELD: a field of the pod from `get pods -o json` ("" when absent).
pod_field() {
  "$H" get pods -o json 2>/dev/null | python3 -c "
import json, sys
for p in json.load(sys.stdin):
    if p['name'] == '$1': print(str(p.get('$2', '')).lower())"
}
cluster_ready() {
  "$H" get clusters -o json 2>/dev/null | python3 -c "
import json, sys
c = json.load(sys.stdin)[0]
print(any(x['type'] == 'Ready' and x['status'] == 'True' for x in c['status']['conditions']))" | grep -q True
}
report_after() {  # the data plane reported after unix second $1
  api /api/v1/dataplanes | python3 -c "
import json, sys
print(any(d['name'] == '$NAME' and d['lastReport'] > $1 and d['state'] == 'Healthy' for d in json.load(sys.stdin)['dataPlanes']))" 2>/dev/null | grep -q True
}
# until_true LIMIT CMD...: seconds (with ms) until CMD succeeds, or fails after LIMIT seconds.
until_true() {
  local limit=$1 start
  shift
  start=$(date +%s.%N)
  until "$@"; do
    if python3 -c "import sys; sys.exit(0 if $(date +%s.%N) - $start > $limit else 1)"; then return 1; fi
    sleep 0.2
  done
}

cat > "$STATE/cluster.yaml" <<EOF
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata:
  name: $NAME
spec:
  network:
    subnet: 10.251.$((RANDOM % 200)).0/24
  scheduling:
    extraConfig:
      - MinJobAge=3600
  healthChecks:
    replaceAfter: 10s  # a worker Slurm drains for a launch failure comes back quickly
EOF
log "bringing up $NAME with two workspaces and the control plane"
"$H" up -f "$STATE/cluster.yaml" --detach >/dev/null
for u in ann ben; do "$H" users add "$u" >/dev/null; done
"$H" workspace launch --user ann --project astro --max-workers 2 --idle-timeout 60s >/dev/null
"$H" workspace launch --user ben --project bio --max-workers 2 --idle-timeout 60s >/dev/null
mkdir -p "$CP"
start_server
until_true 30 api /api/v1/dataplanes >/dev/null || fail "the server did not answer"
"$H" tokens create --subject "$NAME" --role agent --out "$CP/agent.token" --server "$URL" \
  --token-file "$CP/admin.token" >/dev/null
start_agent
until_true 60 report_after 0 || fail "the agent did not report"
START=$(date +%s)

# The stream: one job every SUBMIT_EVERY seconds, alternating workspaces. An acknowledged
# submission's id goes to `submitted`; a refused one (its component was down) to `refused`.
stream() {
  local i=0 ws out
  while [ ! -e "$STATE/stop-stream" ]; do
    i=$((i + 1))
    ws=$([ $((i % 2)) = 0 ] && echo ann-astro || echo ben-bio)
    if out=$(timeout 60 "$H" workspace exec "$ws" -- sbatch --parsable -o /dev/null --comment "fc-$i" \
      --wrap "sleep $JOB_SECONDS" 2>&1); then
      echo "$i $ws ${out%%;*}" >>"$STATE/submitted"
    else
      echo "$i $ws $(date +%s) $(echo "$out" | tail -1)" >>"$STATE/refused"
    fi
    sleep "$SUBMIT_EVERY"
  done
}
stream &
STREAM_PID=$!
sleep "$SETTLE"

# kill_in_pod POD PROGRAM: kill -9 of the pod's daemon; back when the pod restarted and is ready.
kill_in_pod() {
  local pod=$1 prog=$2 before
  # A daemon may be between two runs (slurmdbd restarts until MariaDB answers): wait for it.
  until_true 60 "$H" exec "$pod" -- pgrep -x "$prog" >/dev/null || fail "no $prog in $pod within 60 s"
  before=$(pod_field "$pod" restarts)
  # pkill's own status says little: when the daemon is the pod's main process, the pod ends
  # with it and takes the exec'd pkill along. The restart count going up is the proof.
  "$H" exec "$pod" -- pkill -9 -x "$prog" || true
  until_true "$RECOVERY_LIMIT" pod_back "$pod" "$before"
}
pod_back() { [ "$(pod_field "$1" restarts)" -gt "$2" ] && [ "$(pod_field "$1" ready)" = true ] && cluster_ready; }
# A workspace worker, busy if one is.
some_worker() {
  local w
  until_true 60 worker_exists || fail "no workspace worker to kill"
  w=$("$H" exec "$NAME-controller" --user slurm -- squeue -h -t R -o %N 2>/dev/null | grep -m1 -E '^(ann-astro|ben-bio)-[0-9]+$' || true)
  [ -n "$w" ] || w=$("$H" get pods -o json | python3 -c "
import json, sys
print([p['name'] for p in json.load(sys.stdin) if p['labels'].get('hpcplane.io/component') == 'worker'][0])")
  echo "$w"
}
worker_exists() {
  "$H" get pods -o json | python3 -c "
import json, sys
sys.exit(0 if any(p['labels'].get('hpcplane.io/component') == 'worker' and p['ready'] for p in json.load(sys.stdin)) else 1)"
}

# kill_and_restart PID START: kill -9 of a process this script started, started again as its
# supervisor would; back once the data plane reports Healthy through it again.
kill_and_restart() {
  kill -9 "$1"
  wait "$1" 2>/dev/null || true
  "$2"
  until_true "$RECOVERY_LIMIT" report_after "$kill_time"
}

printf '%-12s %-44s %s\n' FAULT KILLED "BACK (s)" >"$STATE/table"
for fault in $FAULTS; do
  t0=$(date +%s.%N)
  kill_time=$(date +%s)
  case $fault in
    slurmctld) what="slurmctld in $NAME-controller"; kill_in_pod "$NAME-controller" "slurmctld(-wlm)?" ;;  # 23.11 on: its real name once it re-executed
    slurmdbd) what="slurmdbd in $NAME-slurmdbd"; kill_in_pod "$NAME-slurmdbd" slurmdbd ;;
    mariadb) what="mariadbd in $NAME-mariadb"; kill_in_pod "$NAME-mariadb" mariadbd ;;
    slurmrestd) what="slurmrestd in $NAME-restapi"; kill_in_pod "$NAME-restapi" slurmrestd ;;
    sackd) what="sackd in $NAME-sackd"; kill_in_pod "$NAME-sackd" sackd ;;  # Slurm 23.11 on (auth/slurm)
    munge) what="munged in $NAME-munge"; kill_in_pod "$NAME-munge" munged ;;  # 22.05
    slurmd)
      w=$(some_worker)
      what="slurmd in $w"
      t0=$(date +%s.%N)
      kill_in_pod "$w" "slurmd(-wlm)?"
      ;;
    worker-pod)
      w=$(some_worker)
      what="every process of pod $w"
      before=$(pod_field "$w" restarts)
      pid=$(python3 -c "import json; print(json.load(open('$CD/runtime/pods/$w/state.json'))['pid'])")
      t0=$(date +%s.%N)
      kill -9 "$pid"
      until_true "$RECOVERY_LIMIT" pod_back "$w" "$before"
      ;;
    daemon)
      pid=$(cut -d' ' -f1 "$CD/daemon.pid")
      what="hpcplane daemon (pid $pid)"
      kill -9 "$pid"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
      "$H" up --detach --timeout "$RECOVERY_LIMIT" >/dev/null # adopts the running pods
      ;;
    agent)
      what="hpcplane agent (pid $AGENT_PID)"
      kill_and_restart "$AGENT_PID" start_agent
      ;;
    server)
      what="hpcplane server (pid $SERVER_PID)"
      kill_and_restart "$SERVER_PID" start_server
      ;;
    *) fail "unknown fault $fault" ;;
  esac || fail "$fault: not back within ${RECOVERY_LIMIT}s"
  back=$(python3 -c "print('%.1f' % ($(date +%s.%N) - $t0))")
  printf '%-12s %-44s %s\n' "$fault" "$what" "$back" >>"$STATE/table"
  log "$fault: back after ${back}s"
  # A slow recovery says why: what each component reported, and the daemon's last words.
  if python3 -c "import sys; sys.exit(0 if $back > 10 else 1)"; then
    "$H" get clusters -o json 2>/dev/null | python3 -c "
import json, sys
for c in json.load(sys.stdin):
    print('components:', c['status'].get('components'))
    print('conditions:', [(x['type'], x['status'], x['message']) for x in c['status']['conditions']])" >&2 || true
    tail -n 25 "$CD/daemon.log" >&2 || true
  fi
  sleep "$SETTLE"
done

touch "$STATE/stop-stream"
wait "$STREAM_PID" || true
STREAM_PID=""
log "stream stopped; waiting for the queue to drain and the records to arrive"
# A job whose launch failed (slurmctld, restarted from state saved before the job started,
# launched it again where it already ran: "Duplicate jobid") is requeued and held by Slurm; its
# user releases it, as the reason asks, and it is counted.
release_held() {
  local id user
  "$H" exec "$NAME-controller" --user slurm -- squeue -h -u ann,ben -t PD -o "%i %u %r" 2>/dev/null |
    while read -r id user reason; do
      [ "$reason" = "launch failed requeued held" ] || continue
      ws=$([ "$user" = ann ] && echo ann-astro || echo ben-bio)
      "$H" workspace exec "$ws" -- scontrol release "$id" >/dev/null 2>&1 && echo "$id" >>"$STATE/released"
    done
}
# A job Slurm requeued after a failed launch (its node or munged was down at that moment) may
# wait out a BeginTime Slurm set minutes ahead; the cluster's admin starts it now, and it is
# counted. The stream's jobs never ask for a later start themselves.
release_begin_time() {
  local id reason
  "$H" exec "$NAME-controller" --user slurm -- squeue -h -u ann,ben -t PD -o "%i %r" 2>/dev/null |
    while read -r id reason; do
      [ "$reason" = BeginTime ] || continue
      "$H" exec "$NAME-controller" --user slurm -- scontrol update JobId="$id" StartTime=now >/dev/null 2>&1 &&
        echo "$id" >>"$STATE/begin-released"
    done
}
queue_empty() {
  release_held
  release_begin_time
  [ -z "$("$H" exec "$NAME-controller" --user slurm -- squeue -h -u ann,ben -o %i 2>/dev/null)" ]
}
# Up to 3 minutes of this are Slurm's own: a job slurmctld's old state shows running, whose end
# the restarted slurmctld never heard of, stays RUNNING until its node next registers.
if ! until_true 420 queue_empty; then
  "$H" exec "$NAME-controller" --user slurm -- squeue -u ann,ben -o "%i %T %r %N %P %S %c" >&2 || true
  "$H" exec "$NAME-controller" --user slurm -- sinfo -N -o "%N %T %E" >&2 || true
  "$H" get nodesets >&2 || true
  fail "the queue did not drain"
fi

SINCE=$(date -d "@$((START - 60))" +%Y-%m-%dT%H:%M:%S)
STATES=BF,CA,CD,DL,F,NF,OOM,PD,PR,R,RQ,RS,RV,S,TO
sacct_all() {  # every record of ann's and ben's jobs, requeued attempts included (-D)
  "$H" exec "$NAME-controller" --user slurm -- sacct -a -X -D -n -P -u ann,ben -S "$SINCE" -E now -s "$STATES" \
    -o JobIDRaw,State,Comment >"$STATE/sacct" 2>/dev/null
}
history_all() {
  : >"$STATE/history"
  for p in astro bio; do api "/api/v1/projects/$p/jobs/export?format=ndjson" >>"$STATE/history" || return 1; done
}
# analyse: 0 when every acknowledged job is in sacct in a final state and the history holds
# each job sacct knows exactly once with its state; prints the summary.
analyse() {
  python3 - "$STATE" <<'EOF'
import collections, json, os, sys
d = sys.argv[1]
# Each acknowledged submission: its comment fc-<i> and the job id sbatch gave.
submitted = {f"fc-{l.split()[0]}": int(l.split()[2]) for l in open(f"{d}/submitted") if l.split()[2].isdigit()}
refused = sum(1 for _ in open(f"{d}/refused")) if os.path.exists(f"{d}/refused") else 0
released = sorted({int(l) for l in open(f"{d}/released")}) if os.path.exists(f"{d}/released") else []
begin_released = sorted({int(l) for l in open(f"{d}/begin-released")}) if os.path.exists(f"{d}/begin-released") else []
records = collections.defaultdict(list)  # (job id, comment) -> the state of each attempt, in order
per_id = collections.defaultdict(set)    # job id -> comments seen under it
for line in open(f"{d}/sacct"):
    jid, state, comment = (line.rstrip("\n").split("|") + ["", ""])[:3]
    records[(int(jid), comment)].append(state.split()[0])
    per_id[int(jid)].add(comment)
final = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "DEADLINE"}
not_in_sacct, not_final, lost_by_slurmctld = [], [], []
requeued = 0
for comment, jid in sorted(submitted.items(), key=lambda kv: kv[1]):
    # slurmctld saves its state at most every 5 s (SAVE_MAX_WAIT, fixed at compile time): a job
    # it accepted just before its kill -9 is gone from the restarted controller, which hands the
    # same id to a later submission; slurmdbd keeps what it heard of the lost one as running
    # ("runaway" jobs). The proof is the id: sacct has it under another submission's comment.
    reused = any(c != comment for c in per_id[jid])
    states = records.get((jid, comment))
    if not states:
        (lost_by_slurmctld if reused else not_in_sacct).append(jid)
        continue
    requeued += len(states) > 1
    if states[-1] not in final:
        (lost_by_slurmctld if reused else not_final).append(jid)
# The history mirrors slurmdbd: each (job, state) record as often as sacct -D has it.
want = collections.Counter((jid, s) for (jid, _), states in records.items() for s in states)
have = collections.Counter()
for line in open(f"{d}/history"):
    r = json.loads(line)
    have[(r["jobId"], r["state"])] += 1
missing = sorted({j for (j, s), n in want.items() if have[(j, s)] < n})
dup = sorted({j for (j, s), n in have.items() if n > want[(j, s)]})
states = collections.Counter(v[-1] for v in records.values())
print(f"jobs submitted and acknowledged: {len(submitted)}; refused while a component was down: {refused}")
print(f"sacct: {sum(want.values())} records of {len(records)} jobs, last states {dict(sorted(states.items()))}; "
      f"requeued by Slurm: {requeued}; held by Slurm after a failed launch and released by their user: "
      f"{len(released)} {released}; requeued to a later BeginTime and started by the admin: "
      f"{len(begin_released)} {begin_released}")
print(f"acknowledged but not in sacct: {len(not_in_sacct)}; not in a final state: {len(not_final)}; "
      f"lost by slurmctld's kill -9 (accepted within its 5 s state-save window, id handed out again): "
      f"{len(lost_by_slurmctld)} {lost_by_slurmctld}")
print(f"control plane history: {sum(have.values())} records; missing {len(missing)}, duplicated {len(dup)}")
bad = not_in_sacct or not_final or missing or dup
if bad:
    print(f"first problems: not in sacct {not_in_sacct[:5]}, not final {not_final[:5]}, missing {missing[:5]}, "
          f"duplicated {dup[:5]}")
print(f"lost by hpcplane {len(not_in_sacct) + len(not_final) + len(missing)}, duplicated {len(dup)}")
sys.exit(1 if bad else 0)
EOF
}
settled() { sacct_all && history_all && analyse >/dev/null; }
until_true 180 settled || true
echo
cat "$STATE/table"
echo
# What the nodesets did about workers Slurm drained or forgot.
"$H" get nodesets -o json | python3 -c "
import json, sys
ns = json.load(sys.stdin)
rep = sum(n['status'].get('replacements', 0) for n in ns)
ev = [e for n in ns for e in n['status'].get('events', [])]
lost = sum(e['reason'] == 'WorkerUnregistered' for e in ev)
print(f'workers replaced (drained by Slurm or a health check): {rep}; started again (slurmctld lost their node): {lost}')"

sacct_all && history_all && analyse
