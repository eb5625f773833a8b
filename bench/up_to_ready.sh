#!/usr/bin/env bash
# Benchmark: `hpcplane up` → Ready, broken down by component (sackd or munge, controller, restapi,
# workers, login), median over RUNS bring-ups. Peer, measured in the same run: the same
# daemons (munged, slurmctld, slurmrestd) started by hand on loopback without hpcplane, timed
# to `scontrol ping` UP and slurmrestd accepting connections. Also `up` of the same cluster
# after `down` ("existing"). Targets: fresh <= 3 s, existing <= 1.5 s.
set -euo pipefail
bin=$(readlink -f "${1:-build/hpcplane}")
runs=${RUNS:-5}
work=$(mktemp -d /tmp/hpcplane-bench-XXXXXX)
chmod 755 "$work"  # munged and slurmctld of the peer run as their own users
peer_pids=()
cleanup() {
  for p in "${peer_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  "$bin" --state-dir "$work/state" --cluster bench down --purge >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/cluster.yaml" <<'YAML'
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: bench}
spec:
  network: {subnet: 10.239.77.0/24}
  users: [{name: alice, uid: 2001}]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: cpu}
spec: {replicas: 2, maxReplicas: 2, resources: {cpus: 1, memoryMiB: 500}}
YAML

# Polls a command until it succeeds, at most 30 s.
until_ok() {
  local deadline=$((SECONDS + 30))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "bench: timed out waiting for: $*" >&2; exit 1; }
    sleep 0.01
  done
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

declare -A samples
for i in $(seq 1 "$runs"); do
  out=$("$bin" --state-dir "$work/state" up -f "$work/cluster.yaml" --detach)
  while read -r name secs; do samples[$name]+="$secs "; done < <(
    echo "$out" | sed -n 's/^  ✓ \(nodeset [a-z0-9-]*\|[a-z]*\) .* \([0-9.]*\)s$/\1 \2/p' | sed "s/^nodeset [a-z0-9-]*/workers/" | awk '{print $1, $NF}')
  total=$(echo "$out" | sed -n 's/.*is Ready in \([0-9.]*\)s.*/\1/p')
  samples[total]+="$total "
  # The same cluster again after `down` (its state, MariaDB's data and slurmctld's kept).
  "$bin" --state-dir "$work/state" --cluster bench down >/dev/null
  again=$("$bin" --state-dir "$work/state" --cluster bench up --detach | sed -n 's/.*is Ready in \([0-9.]*\)s.*/\1/p')
  samples[existing]+="$again "
  "$bin" --state-dir "$work/state" --cluster bench down --purge >/dev/null
done

# Peer: the same daemons by hand, on loopback, no namespaces.
peer_once() {
  local d="$work/peer$1"
  mkdir -p "$d/state" "$d/munge" "$d/etc"
  chown slurm "$d/state"; chown munge "$d/munge"
  head -c 128 /dev/urandom > "$d/munge.key"; chown munge "$d/munge.key"; chmod 400 "$d/munge.key"
  head -c 32 /dev/urandom > "$d/etc/jwt.key"; chown slurm "$d/etc/jwt.key"; chmod 600 "$d/etc/jwt.key"
  cat > "$d/etc/slurm.conf" <<CONF
ClusterName=peer
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$((16817 + $1 * 10))
SlurmUser=slurm
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket.2
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$d/etc/jwt.key
StateSaveLocation=$d/state
SlurmctldPidFile=$d/slurmctld.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
MaxNodeCount=64
MailProg=/bin/true
NodeSet=ns Feature=ns
PartitionName=ns Nodes=ns
CONF
  local t0 t_munge t_ctld t_rest
  t0=$(date +%s.%N)
  setpriv --reuid=munge --regid=munge --clear-groups munged -F --key-file="$d/munge.key" \
    --socket="$d/munge/munge.socket.2" --pid-file="$d/munge/pid" --seed-file="$d/munge/seed" \
    --log-file="$d/munge/log" >/dev/null 2>&1 & peer_pids+=($!)
  until_ok munge -n -S "$d/munge/munge.socket.2"
  t_munge=$(date +%s.%N)
  SLURM_CONF="$d/etc/slurm.conf" slurmctld -D >"$d/ctld.log" 2>&1 & peer_pids+=($!)
  until_ok env SLURM_CONF="$d/etc/slurm.conf" scontrol ping
  t_ctld=$(date +%s.%N)
  SLURM_CONF="$d/etc/slurm.conf" SLURM_JWT=daemon setpriv --reuid=nobody --regid=nogroup --clear-groups \
    slurmrestd -a rest_auth/jwt -s openapi/v0.0.38 "127.0.0.1:$((16820 + $1 * 10))" >"$d/rest.log" 2>&1 & peer_pids+=($!)
  until_ok bash -c "exec 3<>/dev/tcp/127.0.0.1/$((16820 + $1 * 10))"
  t_rest=$(date +%s.%N)
  for p in "${peer_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${peer_pids[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.01; done; done
  peer_pids=()
  {
    echo "munge $(echo "$t_munge - $t0" | bc)"
    echo "controller $(echo "$t_ctld - $t0" | bc)"
    echo "restapi $(echo "$t_rest - $t0" | bc)"
  } > "$work/peer$1.times"
}
declare -A peer
for i in $(seq 1 "$runs"); do
  peer_once "$i"  # in this shell, so the EXIT trap can stop its daemons on failure
  while read -r name secs; do peer[$name]+="$secs "; done < "$work/peer$i.times"
done

printf '\nhpcplane up -> Ready, %d runs (cluster: munge, slurmctld, slurmrestd, login, 2 workers)\n' "$runs"
printf '%-12s %14s %18s %8s\n' component "hpcplane p50 s" "by hand p50 s" ratio
for c in munge sackd controller restapi workers login total existing; do
  [ -n "${samples[$c]:-}" ] || continue
  h=$(echo "${samples[$c]}" | tr ' ' '\n' | grep . | median)
  p=""; r=""
  if [ -n "${peer[$c]:-}" ]; then
    p=$(echo "${peer[$c]}" | tr ' ' '\n' | grep . | median)
    r=$(echo "scale=2; $h / $p" | bc)
  fi
  printf '%-12s %14.2f %18s %8s\n' "$c" "$h" "${p:--}" "${r:--}"
done
echo "(times are cumulative from the start of 'up'; 'by hand' starts the same daemons without namespaces or hpcplane;"
echo " 'existing': 'up' of the same cluster after 'down'; targets: total <= 3 s, existing <= 1.5 s)"
