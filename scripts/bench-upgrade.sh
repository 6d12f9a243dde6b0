#!/usr/bin/env bash
# Times an upgrade at fleet size: `upgrade plan` and the preparation phase of `upgrade apply` for N
# all-interfaces host endpoints, against an etcd it starts on loopback (a release build of netctl).
#
#   scripts/bench-upgrade.sh 1000       # then 10000: compare per-step figures
#
# Prints, for N: the load of the host endpoints, three `upgrade plan` runs (discovered from etcd;
# wall and CPU time: on a loaded machine the CPU time is the figure to compare), the plan's size,
# and for the apply (which stops at the first step that needs a download or a cluster) the time of
# the one batched label step (the journal's duration), per host endpoint, with the number of
# checkpoint transitions it made.
# Set APPLY=0 to time planning only. Nothing is left behind but the printed directory.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:?usage: scripts/bench-upgrade.sh N}
NETCTL=${NETCTL:-target/release/netctl}
[ -x "$NETCTL" ] || cargo build --release --bin netctl
NETCTL=$(realpath "$NETCTL")
command -v etcd >/dev/null || { echo "etcd is missing: apt-get install etcd-server etcd-client" >&2; exit 1; }
WORK=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
PEER=$((PORT + 1))
etcd --name default --data-dir "$WORK/data" \
  --listen-client-urls "http://127.0.0.1:$PORT" --advertise-client-urls "http://127.0.0.1:$PORT" \
  --listen-peer-urls "http://127.0.0.1:$PEER" --initial-advertise-peer-urls "http://127.0.0.1:$PEER" \
  --initial-cluster "default=http://127.0.0.1:$PEER" --logger zap --log-outputs "$WORK/etcd.log" &
ETCD=$!
trap 'kill $ETCD 2>/dev/null || true' EXIT
until ETCDCTL_API=3 etcdctl --endpoints "http://127.0.0.1:$PORT" endpoint health >/dev/null 2>&1; do
  sleep 0.2
done
cat >"$WORK/netctl.cfg" <<CONFIG
apiVersion: projectcalico.org/v3
kind: NetAPIConfig
metadata: {}
spec:
  datastoreType: etcdv3
  etcdEndpoints: "http://127.0.0.1:$PORT"
CONFIG
export HOME=$WORK
NETCTL_COMMAND=("$NETCTL" -c "$WORK/netctl.cfg")

ETCDCTL_API=3 etcdctl --endpoints "http://127.0.0.1:$PORT" put \
  /calico/resources/v3/projectcalico.org/clusterinformations/default \
  '{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default","uid":"c1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"calicoVersion":"v3.13.2","datastoreReady":true}}' >/dev/null
for ((index = 0; index < N; index++)); do
  printf -- "---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: h%d\nspec:\n  node: n%d\n  interfaceName: '*'\n  expectedIPs: ['10.%d.%d.%d']\n" \
    "$index" $((index % 50)) $((index / 62500)) $((index / 250 % 250)) $((index % 250))
done >"$WORK/host-endpoints.yaml"
/usr/bin/time -f "load $N host endpoints: wall %e s" "${NETCTL_COMMAND[@]}" apply -f "$WORK/host-endpoints.yaml" >/dev/null

for run in 1 2 3; do
  /usr/bin/time -a -o "$WORK/times.txt" -f "upgrade plan, N=$N (run $run): wall %e s, CPU %U+%S s, %M KiB" \
    "${NETCTL_COMMAND[@]}" upgrade plan --to v3.27.0 --install-method manifest \
    --set "etcd_endpoints=http://127.0.0.1:$PORT" --out "$WORK/plan.json" -o json >/dev/null 2>"$WORK/plan.err"
done
cat "$WORK/times.txt"
echo "plan: $(grep -c '"id": ' "$WORK/plan.json" || true) ids, $(stat -c %s "$WORK/plan.json") bytes"

if [ "${APPLY:-1}" = 1 ]; then
  /usr/bin/time -a -o "$WORK/times.txt" -f "upgrade apply (preparation), N=$N: wall %e s, CPU %U+%S s, %M KiB" \
    "${NETCTL_COMMAND[@]}" upgrade apply --plan "$WORK/plan.json" --state-dir "$WORK/state" --yes --skip-preflight cluster \
    >"$WORK/apply.out" 2>"$WORK/apply.err" || true
  tail -1 "$WORK/times.txt"
  # The batched label step: its time (the journal's duration), per host endpoint, and how many
  # checkpoint transitions it made (one per batch of at most 128, plus start and end).
  duration=$(grep '"event":"succeeded"' "$WORK/state/journal.jsonl" \
    | grep '"step":"hostendpoint-preparation/label-all-interfaces-heps"' \
    | sed -E 's/.*"duration_ms":([0-9]+).*/\1/' | head -1)
  transitions=$(grep -c '"items_done"' "$WORK/state/checkpoint.log" || true)
  if [ -n "$duration" ]; then
    awk -v ms="$duration" -v n="$N" -v t="$transitions" 'BEGIN {
      printf "label step: %d ms for %d host endpoints, %.1f µs each; %d checkpoint transitions\n", ms, n, 1000 * ms / n, t
    }'
  fi
  du -b "$WORK/state/checkpoint.json" "$WORK/state/checkpoint.log" "$WORK/state/plans"
fi
echo "$WORK"
