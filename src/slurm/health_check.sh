#!/bin/bash
# hpcplane worker health check (slurm/health_check.h). Run by slurmd as HealthCheckProgram and
# as Epilog. Reports into the node's Extra field and always exits 0; the operator decides.
set -u
NODE=${HPCPLANE_NODE:-$(hostname)}
NODESET=${NODE%-*}
CONF_DIR=${HPCPLANE_HEALTH_DIR:-/run/slurm-health}
# Defaults; the nodeset's settings below override them.
TIMEOUT=10
MIN_FREE=10
MAX_SKEW=30
TMP_DIR=/tmp
SPOOL_DIR=/run/slurm/spool
PROC_DIR=/proc
MUNGE_SOCKET=/run/munge/munge.socket.2
MUNGE=1
LOCK_FILE=/run/hpcplane-health.lock
REQUIRE_MOUNTS=1
DATASETS=()
if [ -r "$CONF_DIR/$NODESET.conf" ]; then . "$CONF_DIR/$NODESET.conf"; fi

if [ -z "${HPCPLANE_HEALTH_FOREGROUND:-}" ]; then
  # Detach: slurmd waits for its HealthCheckProgram before it registers, and a job's node stays
  # COMPLETING while its Epilog runs. slurmd also kills the program's process group the moment
  # the program exits, so it exits only once the detached copy leads a session of its own (the
  # 6th field of its stat, after the name): a copy still in the group would die with it, and the
  # checks would run only when the copy happened to win that race.
  HPCPLANE_HEALTH_FOREGROUND=1 setsid "$0" "$@" </dev/null >/dev/null 2>&1 &
  child=$!
  for _ in {1..250}; do  # at most ~5 s; a few milliseconds in practice
    stat=$(cat "/proc/$child/stat" 2>/dev/null) || break  # gone already: nothing left to kill
    read -r -a fields <<<"${stat##*) }"
    [ "${fields[3]:-}" = "$child" ] && break
    sleep 0.02
  done
  exit 0
fi
exec 9>"$LOCK_FILE" && flock -n 9 || exit 0  # one run at a time

failed=""
fail() { [ -n "$failed" ] || failed="$1: $2"; }

check_space() {  # <check> <directory>
  local out pct="" avail="" size=""
  if ! out=$(timeout -k 1 "$TIMEOUT" df -Pk "$2" 2>&1); then
    fail "$1" "df $2 failed or did not finish within ${TIMEOUT}s"
    return
  fi
  read -r pct avail size < <(awk 'NR == 2 && $2 > 0 { printf "%d %d %d\n", $4 * 100 / $2, $4 / 1024, $2 / 1024 }' <<<"$out")
  if [ -z "$pct" ]; then fail "$1" "cannot read the free space of $2"; return; fi
  if [ "$pct" -lt "$MIN_FREE" ]; then fail "$1" "$2 has $avail MiB free of $size MiB ($pct%, needs $MIN_FREE%)"; fi
}

check_datasets() {
  local d
  for d in "${DATASETS[@]}"; do
    if [ "$REQUIRE_MOUNTS" = 1 ] && ! timeout -k 1 "$TIMEOUT" mountpoint -q "$d"; then
      fail datasets "$d is not mounted"
      return
    fi
    if ! timeout -k 1 "$TIMEOUT" ls -A "$d" >/dev/null 2>&1; then
      fail datasets "$d is not readable or did not answer within ${TIMEOUT}s"
      return
    fi
    if [ "$(stat -c %h "$d" 2>/dev/null || echo 0)" = 0 ]; then
      fail datasets "$d was deleted under its mount"
      return
    fi
  done
}

check_munge() {
  [ "$MUNGE" = 1 ] || return 0
  if ! timeout -k 1 "$TIMEOUT" munge --no-input --socket="$MUNGE_SOCKET" --output=/dev/null >/dev/null 2>&1; then
    fail munge "munged does not answer at $MUNGE_SOCKET"
  fi
}

# A process of a user (uid other than 0) none of whose ancestors is a slurmstepd runs outside
# every job of this worker: a job that ended left it behind, with whatever memory it holds.
check_processes() {
  local strays count mib uids
  strays=$(grep -H -E '^(Name|State|PPid|Uid|VmRSS):' "$PROC_DIR"/[0-9]*/status 2>/dev/null | awk '
    {
      path = $0; sub(/\/status:.*/, "", path); pid = path; sub(/.*\//, "", pid)
      rest = $0; sub(/^[^:]*:/, "", rest); key = rest; sub(/:.*/, "", key)
      val = rest; sub(/^[^:]*:[ \t]*/, "", val); split(val, f, /[ \t]+/)
      if (key == "Name") name[pid] = f[1]
      else if (key == "PPid") ppid[pid] = f[1]
      else if (key == "Uid") uid[pid] = f[1]
      else if (key == "VmRSS") rss[pid] = f[1]
      else if (key == "State") state[pid] = f[1]
    }
    END {
      for (p in uid) {
        if (uid[p] == 0 || state[p] == "Z") continue  # a zombie holds nothing but its pid
        inside = 0; q = p; hops = 0
        while ((q in ppid) && q != 0 && hops++ < 64) {
          if (name[q] == "slurmstepd") { inside = 1; break }
          q = ppid[q]
        }
        if (inside) continue
        n++; kib += rss[p]
        if (!(uid[p] in seen)) { seen[uid[p]] = 1; ids = ids (ids == "" ? "" : ",") uid[p] }
      }
      if (n) printf "%d %d %s\n", n, kib / 1024, ids
    }')
  if [ -n "$strays" ]; then
    read -r count mib uids <<<"$strays"
    fail processes "$count process(es) of uid $uids outside any job hold $mib MiB"
  fi
}

# slurmctld stamps sdiag's answer with its own time: "sdiag output at <date> (<unix seconds>)".
check_clock() {
  local line ctl now skew
  line=$(timeout -k 1 "$TIMEOUT" sdiag 2>/dev/null | head -n 1)
  ctl=$(sed -n 's/.*(\([0-9][0-9]*\))$/\1/p' <<<"$line")
  [ -n "$ctl" ] || return 0  # slurmctld did not answer: not this worker's clock to blame
  now=$(date +%s)
  skew=$((now - ctl))
  skew=${skew#-}
  if [ "$skew" -gt "$MAX_SKEW" ]; then fail clock "the clock is ${skew}s off slurmctld's (at most ${MAX_SKEW}s)"; fi
}

run_admin_checks() {
  local f check out rc
  for f in "$CONF_DIR/$NODESET".*.check; do
    [ -e "$f" ] || continue
    check=${f##*/}
    check=${check#"$NODESET".}
    check=${check%.check}
    out=$(timeout -k 1 "$TIMEOUT" "$f" 2>&1 </dev/null)
    rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      fail "$check" "did not finish within ${TIMEOUT}s"
    elif [ "$rc" != 0 ]; then
      fail "$check" "exit $rc: $(head -n 1 <<<"$out")"
    fi
  done
}

# After a job its processes may take a moment to be gone: the Epilog runs as the job ends.
if [ -n "${SLURM_JOB_ID:-}" ]; then sleep "${AFTER_JOB_DELAY:-2}"; fi
check_space tmp "$TMP_DIR"
check_space spool "$SPOOL_DIR"
check_datasets
check_munge
check_processes
# After a job (the Epilog has SLURM_JOB_ID) the clock is left alone: one RPC fewer per job.
[ -n "${SLURM_JOB_ID:-}" ] || check_clock
run_admin_checks

if [ -n "$failed" ]; then report="fail:$failed"; else report=ok; fi
report=$(printf '%s' "$report" | tr -c 'A-Za-z0-9 ._:/%()=,+@-' '_' | cut -c 1-200)
timeout -k 1 "$TIMEOUT" scontrol update NodeName="$NODE" Extra="hpcplane-health:$(date +%s):$report" >/dev/null 2>&1
exit 0
