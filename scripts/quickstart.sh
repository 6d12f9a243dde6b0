#!/usr/bin/env bash
# Quickstart: builds netctl, starts a throw-away local etcd on loopback, seeds it with a few nodes and
# walks through the everyday commands. Everything lives in a temporary directory; etcd is stopped and
# the directory removed on every way out (pass --keep to leave both after a finished walk-through and
# get the environment to use them). Needs bash and what scripts/prerequisites.sh installs, no python3.
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
etcd_pid=""
finished=false
# On every way out (error, Ctrl-C, kill): stop etcd and remove the directory, unless --keep was
# given and the walk-through finished.
cleanup() {
  if [ "$keep" = true ] && [ "$finished" = true ]; then
    return
  fi
  if [ -n "$etcd_pid" ]; then
    kill "$etcd_pid" 2>/dev/null || true
    wait "$etcd_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
trap 'echo "error: the quickstart failed at line ${LINENO}: ${BASH_COMMAND}" >&2' ERR

# Free loopback ports without python3 or ss: any port the kernel's socket tables list is taken.
ports_in_use() {
  local table local_address
  for table in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$table" ] || continue
    while read -r _ local_address _; do
      [ "$local_address" = local_address ] || echo $((16#${local_address##*:}))
    done <"$table"
  done
}
free_port() { # a port in 20000..52767 neither in use nor among "$@"
  local taken port
  taken=" $(ports_in_use | tr '\n' ' ') $* "
  while :; do
    port=$((20000 + RANDOM))
    case "$taken" in *" ${port} "*) continue ;; esac
    echo "$port"
    return
  done
}

# Another program may take a port between the check and etcd's bind: then start again.
for attempt in 1 2 3 4 5; do
  client_port=$(free_port); peer_port=$(free_port "$client_port")
  endpoint="http://127.0.0.1:${client_port}"
  echo "==> starting etcd at ${endpoint} (data in ${work})" >&2
  rm -rf "${work}/data"
  etcd --name quickstart --data-dir "${work}/data" \
    --listen-client-urls "${endpoint}" --advertise-client-urls "${endpoint}" \
    --listen-peer-urls "http://127.0.0.1:${peer_port}" --initial-advertise-peer-urls "http://127.0.0.1:${peer_port}" \
    --initial-cluster "quickstart=http://127.0.0.1:${peer_port}" --listen-metrics-urls "" \
    >"${work}/etcd.log" 2>&1 &
  etcd_pid=$!
  healthy=false
  for _ in $(seq 1 100); do
    if ETCDCTL_API=3 etcdctl --endpoints "$endpoint" endpoint health >/dev/null 2>&1; then
      healthy=true
      break
    fi
    kill -0 "$etcd_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ "$healthy" = true ] && break
  kill "$etcd_pid" 2>/dev/null || true
  wait "$etcd_pid" 2>/dev/null || true
  etcd_pid=""
  if ! grep -q 'address already in use' "${work}/etcd.log" || [ "$attempt" -eq 5 ]; then
    echo "error: etcd did not start; the end of its log:" >&2
    tail -n 20 "${work}/etcd.log" >&2
    exit 1
  fi
done

export DATASTORE_TYPE=etcdv3 ETCD_ENDPOINTS="$endpoint"
run() { echo; echo "\$ netctl $*" >&2; "$netctl" "$@"; }

run config view
echo; echo "==> an empty datastore lists no nodes (not an error)" >&2
run get nodes
put() { ETCDCTL_API=3 etcdctl --endpoints "$endpoint" put "$1" "$2" >/dev/null; }
echo "==> registering three nodes and the cluster information, as the node agent would" >&2
# Each node its own address; node-a also has the IPIP tunnel address its node agent allocated.
address=1
for node in node-a node-b node-c; do
  tunnel=""
  [ "$node" = node-a ] && tunnel=',"ipv4IPIPTunnelAddr":"192.168.10.0"'
  put "/calico/resources/v3/projectcalico.org/nodes/${node}" \
    "{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"Node\",\"metadata\":{\"name\":\"${node}\"},\"spec\":{\"bgp\":{\"ipv4Address\":\"10.0.0.${address}/24\"${tunnel}}}}"
  address=$((address + 1))
done
put /calico/resources/v3/projectcalico.org/clusterinformations/default \
  '{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"clusterGUID":"8b6f1c2d3e4f40a1b2c3d4e5f6a7b8c9","calicoVersion":"v3.13.2","clusterType":"bgp","datastoreReady":true}}'
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

echo; echo "==> an IP pool, and the addresses the node agents and the CNI plugin allocated from it" >&2
cat > "${work}/ippool.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: default-ipv4-ippool}
spec: {cidr: 192.168.0.0/16, blockSize: 26, ipipMode: Always, natOutgoing: true}
YAML
run apply -f "${work}/ippool.yaml"
# Blocks as the allocator writes them (/calico/ipam/v2/...): node-a's holds its tunnel address and
# two pods' addresses, node-b's one pod's. Pod gone-0 was deleted while its node was down, so its
# address was never released: the leak `ipam check` finds below.
owner() { printf '{"handle_id":"%s","secondary":{%s}}' "$1" "$2"; }
pod() { printf '"namespace":"default","node":"%s","pod":"%s"' "$1" "$2"; }
free() { seq -s, "$1" 63; }
nulls() { printf 'null%.0s,' $(seq "$1" 63) | sed 's/,$//'; }
put /calico/ipam/v2/assignment/ipv4/block/192.168.10.0-26 \
  "{\"cidr\":\"192.168.10.0/26\",\"affinity\":\"host:node-a\",\"allocations\":[0,1,2,$(nulls 3)],\"unallocated\":[$(free 3)],\"attributes\":[$(owner ipip-tunnel-addr-node-a '"node":"node-a","type":"ipipTunnelAddress"'),$(owner k8s-pod-network.web-0 "$(pod node-a web-0)"),$(owner k8s-pod-network.gone-0 "$(pod node-a gone-0)")],\"sequenceNumber\":3,\"sequenceNumberForAllocation\":{\"0\":0,\"1\":1,\"2\":2},\"deleted\":false}"
put /calico/ipam/v2/assignment/ipv4/block/192.168.20.0-26 \
  "{\"cidr\":\"192.168.20.0/26\",\"affinity\":\"host:node-b\",\"allocations\":[0,$(nulls 1)],\"unallocated\":[$(free 1)],\"attributes\":[$(owner k8s-pod-network.db-0 "$(pod node-b db-0)")],\"sequenceNumber\":1,\"sequenceNumberForAllocation\":{\"0\":0},\"deleted\":false}"
for affinity in node-a/ipv4/block/192.168.10.0-26 node-b/ipv4/block/192.168.20.0-26; do
  put "/calico/ipam/v2/host/${affinity}" '{"state":"confirmed","deleted":false}'
done
for handle in ipip-tunnel-addr-node-a:10 k8s-pod-network.web-0:10 k8s-pod-network.gone-0:10 k8s-pod-network.db-0:20; do
  put "/calico/ipam/v2/handle/${handle%:*}" "{\"block\":{\"192.168.${handle##*:}.0/26\":1},\"deleted\":false}"
done
# The workload endpoints of the pods that still run (the CNI plugin writes them).
for wep in node--a:web--0:web-0:node-a:192.168.10.1 node--b:db--0:db-0:node-b:192.168.20.0; do
  IFS=: read -r node_part pod_part pod_name node_name ip <<<"$wep"
  put "/calico/resources/v3/projectcalico.org/workloadendpoints/default/${node_part}-k8s-${pod_part}-eth0" \
    "{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"WorkloadEndpoint\",\"metadata\":{\"name\":\"${node_part}-k8s-${pod_part}-eth0\",\"namespace\":\"default\"},\"spec\":{\"orchestrator\":\"k8s\",\"node\":\"${node_name}\",\"pod\":\"${pod_name}\",\"endpoint\":\"eth0\",\"interfaceName\":\"cali0${pod_part%%-*}\",\"ipNetworks\":[\"${ip}/32\"],\"profiles\":[\"kns.default\"]}}"
done

echo; echo "==> what this cluster can be upgraded to (README \"Upgrading\", step 0)" >&2
run upgrade plan
echo; echo "==> planning the upgrade v3.13 -> v3.27 from facts read from this datastore" >&2
run upgrade plan --to v3.27.0
echo; echo "==> the same plan as a dry run: exactly what would be written, nothing changed" >&2
run upgrade apply --to v3.27.0 --dry-run --state-dir "${work}/state" || true

echo; echo "==> IPAM: the pool's use, then a check that finds the leaked address of pod gone-0" >&2
run ipam show --show-blocks
run ipam check --show-problem-ips

finished=true
if [ "$keep" = true ]; then
  echo
  echo "etcd keeps running (pid ${etcd_pid}, data in ${work}). To use it:"
  echo "  export DATASTORE_TYPE=etcdv3 ETCD_ENDPOINTS=${endpoint}"
  echo "Stop it with: kill ${etcd_pid}"
fi
