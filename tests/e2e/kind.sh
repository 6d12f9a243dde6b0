#!/usr/bin/env bash
# End-to-end check of the `kubernetes` datastore and the executor's `kube.*` actions against a real
# cluster made with kind — the same scenarios `tests/it/kube_datastore.rs`, `tests/it/kube_actions.rs` and
# `tests/it/kube_coordination.rs` run against the in-process API server.
#
# Needs: kind, kubectl, docker (for kind), network access to fetch the Calico CRDs, and a built
# netctl (`cargo build`; override with NETCTL=path). It creates the cluster `netctl-e2e` (reuses it
# when it exists) and deletes it at the end unless KEEP_CLUSTER=1.
#
#   tests/e2e/kind.sh                       # create, test, delete
#   KEEP_CLUSTER=1 tests/e2e/kind.sh        # keep the cluster for a second look
#
# It is not run by `cargo test`: it needs a container runtime and minutes per run.

set -euo pipefail

CLUSTER=${CLUSTER:-netctl-e2e}
CALICO_VERSION=${CALICO_VERSION:-v3.29.2}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NETCTL=${NETCTL:-$ROOT/target/debug/netctl}
WORK=$(mktemp -d -t netctl-e2e-XXXXXX)
export KUBECONFIG=$WORK/kubeconfig
export DATASTORE_TYPE=kubernetes
FAILURES=0

for program in kind kubectl; do
  command -v "$program" >/dev/null || { echo "error: $program is required" >&2; exit 2; }
done
[ -x "$NETCTL" ] || { echo "error: $NETCTL is missing: run \`cargo build\` first" >&2; exit 2; }

cleanup() {
  if [ "${KEEP_CLUSTER:-0}" != 1 ]; then kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

pass() { echo "ok   $1"; }
fail() { echo "FAIL $1" >&2; FAILURES=$((FAILURES + 1)); }

# expect_output NAME NEEDLE COMMAND...: the command succeeds and its stdout contains NEEDLE.
expect_output() {
  local name=$1 needle=$2; shift 2
  local out
  if out=$("$@" 2>"$WORK/stderr") && grep -qF -- "$needle" <<<"$out"; then pass "$name"
  else fail "$name: expected \`$needle\` in: $out $(cat "$WORK/stderr")"; fi
}

# expect_error NAME NEEDLE COMMAND...: the command fails with exit code 1 and NEEDLE on stderr.
expect_error() {
  local name=$1 needle=$2; shift 2
  local code=0
  "$@" >/dev/null 2>"$WORK/stderr" || code=$?
  if [ "$code" = 1 ] && grep -qF -- "$needle" "$WORK/stderr"; then pass "$name"
  else fail "$name: exit $code, expected \`$needle\` in: $(cat "$WORK/stderr")"; fi
}

echo "== cluster"
kind get clusters 2>/dev/null | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER" --wait 120s
kind get kubeconfig --name "$CLUSTER" >"$KUBECONFIG"
kubectl apply --server-side -f "https://raw.githubusercontent.com/projectcalico/calico/$CALICO_VERSION/manifests/crds.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/ippools.crd.projectcalico.org crd/clusterinformations.crd.projectcalico.org >/dev/null
kubectl apply --server-side -f - >/dev/null <<YAML
apiVersion: crd.projectcalico.org/v1
kind: ClusterInformation
metadata: {name: default}
spec: {calicoVersion: v3.26.4, datastoreReady: true}
YAML

echo "== resource commands"
cat >"$WORK/policy.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-all-upgrade, labels: {team: net}}
spec:
  selector: has(host-endpoint-upgrade)
  types: [Ingress, Egress]
  ingress: [{action: Allow}]
  egress: [{action: Allow}]
YAML
expect_output "apply a policy" "Successfully applied 1 resource(s)" "$NETCTL" apply -f "$WORK/policy.yaml"
expect_output "stored under the tiered name" "default.allow-all-upgrade" kubectl get globalnetworkpolicies.crd.projectcalico.org -o name
expect_output "reads back under its own name" "name: allow-all-upgrade" "$NETCTL" get gnp allow-all-upgrade -o yaml
expect_output "label" "Successfully set label" "$NETCTL" label gnp allow-all-upgrade stage=upgrade
expect_output "patch" "Successfully" "$NETCTL" patch gnp allow-all-upgrade -p '{"spec":{"order":10}}'
stale=$("$NETCTL" get gnp allow-all-upgrade -o yaml | sed 's/order: 10/order: 20/')
"$NETCTL" label gnp allow-all-upgrade moved=yes >/dev/null
expect_error "stale resourceVersion is a conflict" "update conflict" "$NETCTL" replace -f - <<<"$stale"
expect_error "not found" "resource does not exist: IPPool(ghost)" "$NETCTL" get ippool ghost
expect_output "delete" "Successfully" "$NETCTL" delete gnp allow-all-upgrade
expect_output "nodes are Kubernetes nodes" "orchestrator: k8s" "$NETCTL" get nodes -o yaml
expect_output "profiles from namespaces" "kns.default" "$NETCTL" get profiles -o name

echo "== errors"
kubectl create serviceaccount netctl-e2e-nobody -n default >/dev/null 2>&1 || true
token=$(kubectl create token netctl-e2e-nobody -n default)
server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
expect_error "forbidden" "permission denied by the datastore" \
  env -u KUBECONFIG HOME="$WORK" K8S_API_ENDPOINT="$server" K8S_API_TOKEN="$token" K8S_INSECURE_SKIP_TLS_VERIFY=true \
  "$NETCTL" get ippools
sed "s#server: .*#server: https://127.0.0.1:1#" "$KUBECONFIG" >"$WORK/unreachable"
KUBECONFIG=$WORK/unreachable expect_error "unreachable" "no datastore endpoint could be reached" "$NETCTL" get ippools

echo "== kube actions through upgrade apply"
mkdir -p "$WORK/runbooks" "$WORK/state"
cp "$ROOT/runbooks/releases.yaml" "$WORK/runbooks/"
cat >"$WORK/runbooks/e2e.yaml" <<'YAML'
apiVersion: netctl.projectcalico.org/v1
kind: Runbook
metadata: {name: e2e, description: every kube action once}
spec:
  appliesTo:
    installMethods: [manifest]
    datastoreTypes: [kubernetes]
  phase: upgrade
  steps:
    - id: apply
      description: apply a namespace, a config map and a two-container DaemonSet
      action: kube.apply
      with:
        server_side: true
        force_conflicts: true
        source:
          inline: |
            apiVersion: v1
            kind: Namespace
            metadata: {name: netctl-e2e}
            ---
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: settings, namespace: netctl-e2e}
            data: {mtu: "1440"}
            ---
            apiVersion: apps/v1
            kind: DaemonSet
            metadata: {name: agent, namespace: netctl-e2e}
            spec:
              selector: {matchLabels: {app: agent}}
              template:
                metadata: {labels: {app: agent}}
                spec:
                  tolerations: [{operator: Exists}]
                  containers:
                    - {name: one, image: registry.k8s.io/pause:3.9}
                    - {name: two, image: registry.k8s.io/pause:3.9}
            ---
            apiVersion: v1
            kind: Pod
            metadata: {name: old-agent, namespace: netctl-e2e, labels: {app: old-agent}}
            spec: {containers: [{name: c, image: registry.k8s.io/pause:3.9}]}
    - id: patch
      needs: [apply]
      description: raise the MTU
      action: kube.patch
      with:
        object: {api_version: v1, kind: ConfigMap, name: settings, namespace: netctl-e2e}
        patch: {data: {mtu: "1450"}}
    - id: annotate
      needs: [apply]
      description: annotate the DaemonSet
      action: kube.annotate
      with:
        object: {api_version: apps/v1, kind: DaemonSet, name: agent, namespace: netctl-e2e}
        values: {netctl/e2e: "yes"}
    - id: label-node
      needs: [apply]
      description: label the node
      action: kube.label
      with:
        object: {api_version: v1, kind: Node, name: netctl-e2e-control-plane}
        values: {netctl-e2e: "yes"}
    - id: delete-old
      needs: [apply]
      description: delete the old agent pod
      action: kube.delete
      with: {api_version: v1, kind: Pod, namespace: netctl-e2e, selector: app=old-agent}
    - id: wait
      needs: [apply]
      description: wait for the DaemonSet
      action: kube.wait-rollout
      with: {namespace: netctl-e2e, kind: DaemonSet, name: agent, ready: 2/2, timeout: 3m}
YAML
"$NETCTL" upgrade plan --runbooks "$WORK/runbooks" --from v3.26.4 --to v3.29.2 \
  --datastore-type kubernetes --install-method manifest --out "$WORK/plan.json" >/dev/null
expect_output "dry-run asks the server" "server dry-run accepted" \
  "$NETCTL" upgrade apply --plan "$WORK/plan.json" --state-dir "$WORK/state" --dry-run
expect_error "nothing written by the dry-run" "NotFound" kubectl get namespace netctl-e2e
USER=e2e "$NETCTL" upgrade apply --plan "$WORK/plan.json" --state-dir "$WORK/state" --yes \
  && pass "upgrade apply ran every kube action" || fail "upgrade apply"
expect_output "patched" "1450" kubectl get configmap settings -n netctl-e2e -o jsonpath='{.data.mtu}'
expect_output "annotated" "yes" kubectl get daemonset agent -n netctl-e2e -o jsonpath='{.metadata.annotations.netctl/e2e}'
expect_output "node labelled" "yes" kubectl get node netctl-e2e-control-plane -o jsonpath='{.metadata.labels.netctl-e2e}'
expect_error "old pod deleted" "NotFound" kubectl get pod old-agent -n netctl-e2e
leases=$(kubectl get leases -n kube-system -l app.kubernetes.io/managed-by=netctl -o name)
if [ -z "$leases" ]; then pass "lock lease released"; else fail "lock lease released: $leases"; fi
expect_output "checkpoint mirrored" "configmap/netctl-upgrade-checkpoint" kubectl get configmaps -n kube-system -o name

echo
if [ "$FAILURES" = 0 ]; then echo "all end-to-end checks passed"; else echo "$FAILURES check(s) failed" >&2; exit 1; fi
