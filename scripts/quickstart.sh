#!/usr/bin/env bash
# Quickstart: builds netctl, starts a throw-away local etcd on loopback, seeds it with a few nodes and
# walks through the everyday commands. Everything lives in a temporary directory and etcd is stopped at
# the end (pass --keep to leave it running and get the environment to use it).
set -euo pipefail
cd "$(dirname "$0")/.."
keep=false
[ "${1:-}" = "--keep" ] && keep=true

scripts/prerequisites.sh
export PATH="$PATH:/usr/sbin:/sbin"
unset RUST_BACKTRACE
echo "==> building netctl" >&2
cargo build --quiet
netctl="$PWD/target/debug/netctl"

work=$(mktemp -d -t netctl-quickstart.XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
client_port=$(free_port); peer_port=$(free_port)
endpoint="http://127.0.0.1:${client_port}"

echo "==> starting etcd at ${endpoint} (data in ${work})" >&2
etcd --name quickstart --data-dir "${work}/data" \
  --listen-client-urls "${endpoint}" --advertise-client-urls "${endpoint}" \
  --listen-peer-urls "http://127.0.0.1:${peer_port}" --initial-advertise-peer-urls "http://127.0.0.1:${peer_port}" \
  --initial-cluster "quickstart=http://127.0.0.1:${peer_port}" --listen-metrics-urls "" \
  >"${work}/etcd.log" 2>&1 &
etcd_pid=$!
cleanup() {
  if [ "$keep" = false ]; then
    kill "$etcd_pid" 2>/dev/null || true
    wait "$etcd_pid" 2>/dev/null || true
    rm -rf "$work"
  fi
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  ETCDCTL_API=3 etcdctl --endpoints "$endpoint" endpoint health >/dev/null 2>&1 && break
  sleep 0.1
done

export DATASTORE_TYPE=etcdv3 ETCD_ENDPOINTS="$endpoint"
run() { echo; echo "\$ netctl $*" >&2; "$netctl" "$@"; }

run config view
echo; echo "==> an empty datastore lists no nodes (not an error)" >&2
run get nodes
echo "==> registering three nodes and the cluster information, as the node agent would" >&2
for node in node-a node-b node-c; do
  ETCDCTL_API=3 etcdctl --endpoints "$endpoint" put "/calico/resources/v3/projectcalico.org/nodes/${node}" \
    "{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"Node\",\"metadata\":{\"name\":\"${node}\"},\"spec\":{\"bgp\":{\"ipv4Address\":\"10.0.0.1/24\"}}}" >/dev/null
done
ETCDCTL_API=3 etcdctl --endpoints "$endpoint" put /calico/resources/v3/projectcalico.org/clusterinformations/default \
  '{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.13.2","clusterType":"bgp","datastoreReady":true}}' >/dev/null
run get nodes -o wide
run version

echo; echo "==> host endpoints: one all-interfaces (\`*\`), one named" >&2
cat > "${work}/hostendpoints.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node-a-all, labels: {role: worker}}
spec: {node: node-a, interfaceName: "*"}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node-b-eth0, labels: {role: worker}}
spec: {node: node-b, interfaceName: eth0, expectedIPs: [10.0.0.2]}
YAML
run apply -f "${work}/hostendpoints.yaml"
run get hostendpoints -o wide

echo; echo "==> what this cluster can be upgraded to (README \"Upgrading\", step 0)" >&2
run upgrade plan
echo; echo "==> planning the upgrade v3.13 -> v3.27 from facts read from this datastore" >&2
run upgrade plan --to v3.27.0
echo; echo "==> the same plan as a dry run: exactly what would be written, nothing changed" >&2
run upgrade apply --to v3.27.0 --dry-run --state-dir "${work}/state" || true

if [ "$keep" = true ]; then
  echo
  echo "etcd keeps running (pid ${etcd_pid}, data in ${work}). To use it:"
  echo "  export DATASTORE_TYPE=etcdv3 ETCD_ENDPOINTS=${endpoint}"
  echo "Stop it with: kill ${etcd_pid}"
fi
