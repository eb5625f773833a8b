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
GPUS=0  # the GPUs this worker declares (its nodeset's gpus)
NVIDIA_SMI=nvidia-smi
SMI_TMP=/run  # root's: a user filling /tmp cannot make the GPU check fail
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

# The worker's GPUs as nvidia-smi sees them: each one there, no uncorrectable ECC error since the
# driver loaded, no retired page or remapped row waiting for a reset, no failed row remapping,
# and (where this worker may read the kernel's log) no Xid that needs a reset or a reboot since
# the worker started. Each GPU's utilisation, memory and temperature go into the report for the
# operator's metrics and the console. A worker without nvidia-smi (no driver files in it) is not
# checked: what cannot be seen is no reason to drain.
gpu_stats=""

# Runs nvidia-smi with "$@" into $smi_out and sets smi_rc (124: no answer within the timeout).
# Not under `timeout` in a command substitution: a GPU that fell off the bus can leave nvidia-smi
# in uninterruptible sleep, where `timeout` (waiting for its child) and the substitution (waiting
# for the pipe) would wait for ever and this run would hold the lock, its last report standing.
smi_out=""
smi_rc=0
smi() {
  local file pid waited=0
  file=$(mktemp "$SMI_TMP/.hpcplane-smi.XXXXXX") || { smi_rc=1; smi_out="mktemp in $SMI_TMP failed"; return; }
  # Without the lock (fd 9): one stuck for good must not keep every later run from checking.
  "$NVIDIA_SMI" "$@" >"$file" 2>&1 </dev/null 9>&- &
  pid=$!
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt $((TIMEOUT * 20)) ]; do
    sleep 0.05
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null
    smi_rc=124
  else
    wait "$pid"
    smi_rc=$?
  fi
  smi_out=$(head -c 65536 "$file")
  rm -f "$file"
}

check_gpus() {
  [ "$GPUS" -gt 0 ] 2>/dev/null || return 0
  command -v "$NVIDIA_SMI" >/dev/null 2>&1 || return 0
  local seen problem lines rows=""
  smi --format=csv,noheader,nounits \
    --query-gpu=pci.bus_id,ecc.errors.uncorrected.volatile.total,retired_pages.pending,utilization.gpu,memory.used,memory.total,temperature.gpu
  if [ "$smi_rc" = 124 ]; then fail gpu "nvidia-smi did not answer within ${TIMEOUT}s"; return; fi
  if [ "$smi_rc" != 0 ]; then fail gpu "nvidia-smi failed (exit $smi_rc): $(grep -m 1 . <<<"$smi_out")"; return; fi
  local gpus=$smi_out
  # Row remapping (A100 on) has a query of its own; GPUs and drivers without it fail it: unchecked.
  smi --format=csv,noheader,nounits --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure
  if [ "$smi_rc" = 124 ]; then fail gpu "nvidia-smi did not answer within ${TIMEOUT}s"; return; fi
  [ "$smi_rc" != 0 ] || rows=$smi_out
  # GPU lines: "<bus id>, <ecc>, <pages pending>, <util>, <used>, <total>, <temp>"; row lines:
  # "<bus id>, <pending>, <failed>". A value a GPU does not have reads "[N/A]" or "[Not
  # Supported]"; a flag reads Yes or a count. Out: the count, the first problem, and
  # "bus,util,used,total,temp" per GPU.
  mapfile -t lines < <(awk -F', *' -v rows="$rows" '
    function num(v) { return v ~ /^[0-9]+$/ ? v : "" }
    function set(v) { return v == "Yes" || num(v) > 0 }
    function key(b) { b = tolower(b); gsub(/[^0-9a-f:.]/, "", b); return b }
    BEGIN {
      n = split(rows, r, "\n")
      for (i = 1; i <= n; i++) {
        if (split(r[i], f, /, */) < 3) continue
        b = key(f[1])
        if (set(f[2])) pending[b] = 1
        if (set(f[3])) failed[b] = 1
      }
    }
    NF >= 7 {
      n_gpus++
      bus = key($1)
      if (why == "" && num($2) > 0) why = "GPU " bus ": " $2 " uncorrectable ECC error(s) since the driver loaded"
      if (why == "" && set($3)) why = "GPU " bus ": retired pages wait for a GPU reset"
      if (why == "" && (bus in failed)) why = "GPU " bus ": row remapping failed"
      if (why == "" && (bus in pending)) why = "GPU " bus ": remapped rows wait for a GPU reset"
      stats = stats (stats == "" ? "" : ";") bus "," num($4) "," num($5) "," num($6) "," num($7)
    }
    END { print n_gpus + 0; print why; print stats }' <<<"$gpus")
  seen=${lines[0]:-0}
  problem=${lines[1]:-}
  gpu_stats=${lines[2]:-}
  if [ "$seen" -lt "$GPUS" ]; then fail gpu "nvidia-smi sees $seen of the $GPUS GPU(s) this worker declares"; return; fi
  if [ -n "$problem" ]; then fail gpu "$problem"; return; fi
  check_xids
}

# Xids the driver logged for this worker's GPUs since the worker started, of the kinds NVIDIA's
# catalogue answers with a GPU reset or a reboot: 48 (double-bit ECC), 62 (micro-controller
# halt), 64 (row remapping failure), 74 (NVLink), 79 (fallen off the bus), 95 (uncontained ECC),
# 119 and 120 (GSP). Skipped where the kernel's log is not readable (dmesg_restrict).
check_xids() {
  local log stat fields since problem
  log=$(timeout -k 1 "$TIMEOUT" dmesg 2>/dev/null) || return 0
  stat=$(cat "$PROC_DIR/1/stat" 2>/dev/null) || return 0
  read -r -a fields <<<"${stat##*) }"
  since=$(( ${fields[19]:-0} / $(getconf CLK_TCK) ))  # the worker's first process, seconds after boot
  problem=$(awk -v since="$since" -v gpus="$gpu_stats" '
    BEGIN {  # "0000:3b:00" for each of the worker GPUs ("00000000:3b:00.0" in nvidia-smi)
      n = split(gpus, g, ";")
      for (i = 1; i <= n; i++) {
        split(g[i], f, ","); split(f[1], p, ":")
        mine[substr(p[1], length(p[1]) - 3) ":" p[2] ":" substr(p[3], 1, 2)] = 1
      }
      split("48 62 64 74 79 95 119 120", codes, " ")
      for (i in codes) fatal[codes[i]] = 1
    }
    /NVRM: Xid \(PCI:/ {
      ts = $0; sub(/^\[ */, "", ts); sub(/\].*/, "", ts)
      bus = $0; sub(/.*Xid \(PCI:/, "", bus); sub(/\).*/, "", bus); bus = tolower(bus)
      code = $0; sub(/.*Xid \(PCI:[^)]*\): */, "", code); sub(/[^0-9].*/, "", code)
      text = $0; sub(/.*Xid \(PCI:[^)]*\): *[0-9]+, */, "", text)
      gsub(/(pid|name)=[^,]*, */, "", text)  # which process saw it does not matter
      if (ts + 0 >= since && (bus in mine) && (code in fatal)) last = "GPU " bus ": Xid " code " (" text ")"
    }
    END { print last }' <<<"$log")
  [ -z "$problem" ] || fail gpu "$problem"
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
check_gpus
# After a job (the Epilog has SLURM_JOB_ID) the clock is left alone: one RPC fewer per job.
[ -n "${SLURM_JOB_ID:-}" ] || check_clock
run_admin_checks

if [ -n "$failed" ]; then report="fail:$failed"; else report=ok; fi
report=$(printf '%s' "$report" | tr -c 'A-Za-z0-9 ._:/%()=,+@-' '_' | cut -c 1-200)
# The GPUs' numbers follow the outcome after a '|', which the outcome never holds.
[ -z "$gpu_stats" ] || report="$report|gpus=$(printf '%s' "$gpu_stats" | tr -cd '0-9a-f:.,;' | cut -c 1-1000)"
timeout -k 1 "$TIMEOUT" scontrol update NodeName="$NODE" Extra="hpcplane-health:$(date +%s):$report" >/dev/null 2>&1
exit 0
