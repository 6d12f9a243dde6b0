//! An in-process Kubernetes API server for tests: the subset of the REST protocol netctl (and
//! `kubectl get` / `kubectl apply --server-side`) uses, served over plain HTTP on loopback.
//!
//! It keeps objects in memory with one cluster-wide `resourceVersion` counter and implements:
//! discovery (`/version`, `/api`, `/apis`, group and group-version resource lists); get, list (with
//! `labelSelector`, `limit` and `continue`), create, update (`resourceVersion` preconditions, 409 with a
//! `Status` body), delete (with preconditions) and delete-collection; JSON merge, JSON and strategic
//! patches (the last applied as a merge patch, which is what metadata changes need); server-side apply
//! (`application/apply-patch+yaml`) with per-field ownership by field manager and `force`; `dryRun=All`
//! on every write; 403 for configurable paths; SelfSubjectAccessReviews (decoded strictly, answered
//! allowed unless a test denies a verb on a resource, [`KubeApiServer::deny_access`]); and types a
//! test withdraws, as a newer Kubernetes removed them ([`KubeApiServer::withdraw`]). Tests drive `status` (pods, daemonsets, deployments)
//! through [`KubeApiServer::set_status`], as the kubelet and controllers would. Pods' `log` and
//! `exec` subresources (the websocket channel protocol) are served by [`super::kube_streams`],
//! from the lines and programs a test gives ([`KubeApiServer::set_pod_log`],
//! [`KubeApiServer::program`]).
//!
//! Request bodies of the core kinds are decoded strictly into their `k8s-openapi` types as a real
//! API server decodes them ([`super::kube_strict`]): a value of the wrong type (`defaultMode:
//! "0400"`) or an unknown field is refused with the status code and `Status` message a real server
//! gives, for create/update and for server-side apply alike. Custom resources whose CRD schema
//! [`super::kube_crd`] carries (CalicoNodeStatus in both Calico groups, the IPAM kinds in both, every kind of v3.32's
//! native `projectcalico.org/v3` CRDs) are checked against it on create and update (`422 Invalid`,
//! unknown fields pruned); a PUT writes their `status` unless the CRD has a status subresource (of
//! the v1 CRDs only KubeControllersConfiguration; of the v3 ones also IPPool and Tier), and a POST
//! drops it then.
//!
//! The Calico CRDs of `crd.projectcalico.org/v1`, `projectcalico.org/v3` or both are served
//! ([`KubeApiServer::start_serving`]); [`KubeApiServer::serve_calico_api_server`] makes discovery
//! show `projectcalico.org/v3` as the Calico API server presents it.
//!
//! It does not implement watches, RBAC, admission, defaulting, field selectors, tables, protobuf or
//! the OpenAPI documents: clients that ask for tables get plain lists, as from an older server, and
//! `kubectl apply` needs `--validate=false` (`tests/it/kube_kubectl.rs` checks kubectl against it).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The Kubernetes version the server reports.
pub const SERVER_MINOR: &str = "33";

/// One resource type the server knows.
#[derive(Debug, Clone, Copy)]
pub struct ResourceType {
    /// `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const fn kind(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> ResourceType {
    ResourceType {
        group,
        version,
        kind,
        plural,
        namespaced,
    }
}

/// The group of the Calico CRDs every release has.
pub const CALICO_GROUP: &str = "crd.projectcalico.org";

/// The group of v3.32's native Calico CRDs (and of the Calico API server's view of the v1 ones).
pub const CALICO_V3_GROUP: &str = "projectcalico.org";

/// Which Calico groups a server serves by CRDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalicoGroups {
    /// `crd.projectcalico.org/v1` only: every release before v3.32's native CRDs.
    V1,
    /// `projectcalico.org/v3` only: a v3.32 cluster installed with the native CRDs.
    V3,
    /// Both, each by CRDs of its own: a switch half done (rancher/rke2-charts#1205).
    Both,
    /// Neither: a cluster Calico was never installed on (the target of a migration). The types
    /// are served once their CustomResourceDefinitions are created.
    None,
}

/// Every resource type served.
pub const RESOURCE_TYPES: &[ResourceType] = &[
    kind("", "v1", "Node", "nodes", false),
    kind("", "v1", "Namespace", "namespaces", false),
    kind("", "v1", "ServiceAccount", "serviceaccounts", true),
    kind("", "v1", "Pod", "pods", true),
    kind("", "v1", "ConfigMap", "configmaps", true),
    kind("", "v1", "Secret", "secrets", true),
    kind("apps", "v1", "Deployment", "deployments", true),
    kind("apps", "v1", "DaemonSet", "daemonsets", true),
    kind("", "v1", "Service", "services", true),
    kind("batch", "v1", "Job", "jobs", true),
    kind(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
    ),
    kind("coordination.k8s.io", "v1", "Lease", "leases", true),
    kind(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    kind(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    // Served by clusters before Kubernetes 1.25, where pre-v3.23 Helm installs ran.
    kind(
        "policy",
        "v1beta1",
        "PodSecurityPolicy",
        "podsecuritypolicies",
        false,
    ),
    kind(
        "operator.tigera.io",
        "v1",
        "Installation",
        "installations",
        false,
    ),
    kind("operator.tigera.io", "v1", "APIServer", "apiservers", false),
    kind(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ),
    kind(
        CALICO_GROUP,
        "v1",
        "BGPConfiguration",
        "bgpconfigurations",
        false,
    ),
    kind(CALICO_GROUP, "v1", "BGPFilter", "bgpfilters", false),
    kind(CALICO_GROUP, "v1", "BGPPeer", "bgppeers", false),
    kind(
        CALICO_GROUP,
        "v1",
        "CalicoNodeStatus",
        "caliconodestatuses",
        false,
    ),
    kind(
        CALICO_GROUP,
        "v1",
        "ClusterInformation",
        "clusterinformations",
        false,
    ),
    kind(
        CALICO_GROUP,
        "v1",
        "FelixConfiguration",
        "felixconfigurations",
        false,
    ),
    kind(
        CALICO_GROUP,
        "v1",
        "GlobalNetworkPolicy",
        "globalnetworkpolicies",
        false,
    ),
    kind(
        CALICO_GROUP,
        "v1",
        "GlobalNetworkSet",
        "globalnetworksets",
        false,
    ),
    kind(CALICO_GROUP, "v1", "HostEndpoint", "hostendpoints", false),
    kind(CALICO_GROUP, "v1", "IPPool", "ippools", false),
    kind(CALICO_GROUP, "v1", "IPReservation", "ipreservations", false),
    kind(
        CALICO_GROUP,
        "v1",
        "KubeControllersConfiguration",
        "kubecontrollersconfigurations",
        false,
    ),
    kind(CALICO_GROUP, "v1", "NetworkPolicy", "networkpolicies", true),
    kind(CALICO_GROUP, "v1", "NetworkSet", "networksets", true),
    kind(
        CALICO_GROUP,
        "v1",
        "StagedGlobalNetworkPolicy",
        "stagedglobalnetworkpolicies",
        false,
    ),
    kind(
        CALICO_GROUP,
        "v1",
        "StagedKubernetesNetworkPolicy",
        "stagedkubernetesnetworkpolicies",
        true,
    ),
    kind(
        CALICO_GROUP,
        "v1",
        "StagedNetworkPolicy",
        "stagednetworkpolicies",
        true,
    ),
    kind(CALICO_GROUP, "v1", "Tier", "tiers", false),
    // What `cluster diags` reads besides the above.
    kind("", "v1", "Event", "events", true),
    kind("apps", "v1", "ReplicaSet", "replicasets", true),
    kind("apps", "v1", "StatefulSet", "statefulsets", true),
    kind(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
    ),
    kind(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    ),
    kind(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    ),
    kind(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        false,
    ),
    kind(
        "operator.tigera.io",
        "v1",
        "TigeraStatus",
        "tigerastatuses",
        false,
    ),
    kind(CALICO_GROUP, "v1", "IPAMBlock", "ipamblocks", false),
    kind(
        CALICO_GROUP,
        "v1",
        "BlockAffinity",
        "blockaffinities",
        false,
    ),
    kind(CALICO_GROUP, "v1", "IPAMHandle", "ipamhandles", false),
    kind(CALICO_GROUP, "v1", "IPAMConfig", "ipamconfigs", false),
    // v3.32's native CRDs (`api/config/crd/`), served when a test asks for them
    // ([`KubeApiServer::start_serving`]).
    kind(
        CALICO_V3_GROUP,
        "v3",
        "BGPConfiguration",
        "bgpconfigurations",
        false,
    ),
    kind(CALICO_V3_GROUP, "v3", "BGPFilter", "bgpfilters", false),
    kind(CALICO_V3_GROUP, "v3", "BGPPeer", "bgppeers", false),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "CalicoNodeStatus",
        "caliconodestatuses",
        false,
    ),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "ClusterInformation",
        "clusterinformations",
        false,
    ),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "FelixConfiguration",
        "felixconfigurations",
        false,
    ),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "GlobalNetworkPolicy",
        "globalnetworkpolicies",
        false,
    ),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "GlobalNetworkSet",
        "globalnetworksets",
        false,
    ),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "HostEndpoint",
        "hostendpoints",
        false,
    ),
    kind(CALICO_V3_GROUP, "v3", "IPPool", "ippools", false),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "IPReservation",
        "ipreservations",
        false,
    ),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "KubeControllersConfiguration",
        "kubecontrollersconfigurations",
        false,
    ),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "NetworkPolicy",
        "networkpolicies",
        true,
    ),
    kind(CALICO_V3_GROUP, "v3", "NetworkSet", "networksets", true),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "StagedGlobalNetworkPolicy",
        "stagedglobalnetworkpolicies",
        false,
    ),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "StagedKubernetesNetworkPolicy",
        "stagedkubernetesnetworkpolicies",
        true,
    ),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "StagedNetworkPolicy",
        "stagednetworkpolicies",
        true,
    ),
    kind(CALICO_V3_GROUP, "v3", "Tier", "tiers", false),
    kind(CALICO_V3_GROUP, "v3", "IPAMBlock", "ipamblocks", false),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "BlockAffinity",
        "blockaffinities",
        false,
    ),
    kind(CALICO_V3_GROUP, "v3", "IPAMHandle", "ipamhandles", false),
    kind(
        CALICO_V3_GROUP,
        "v3",
        "IPAMConfiguration",
        "ipamconfigurations",
        false,
    ),
];

/// The served type of `apiVersion` `kind` (tests name only types the server has).
pub(super) fn resource_type(api_version: &str, kind: &str) -> ResourceType {
    *RESOURCE_TYPES
        .iter()
        .find(|resource| resource.api_version() == api_version && resource.kind == kind)
        .unwrap_or_else(|| panic!("unknown type {api_version} {kind}"))
}

/// Where an object lives: resource type (by group and plural), namespace (`""` for cluster-scoped)
/// and name.
pub(super) type ObjectKey = (String, String, String, String);

#[derive(Debug, Default)]
pub(super) struct State {
    revision: u64,
    uid_counter: u64,
    pub(super) objects: BTreeMap<ObjectKey, Value>,
    /// Field ownership per object: field path (`.spec.replicas`) → field manager.
    owners: BTreeMap<ObjectKey, BTreeMap<String, String>>,
    /// `(method or None for all, path prefix)` answered with 403.
    forbidden: Vec<(Option<Method>, String)>,
    /// Every request as `METHOD path?query` (for tests that check what was sent).
    pub(super) requests: Vec<String>,
    /// Pod logs and the programs in pods' containers ([`super::kube_streams`]).
    pub(super) streams: super::kube_streams::Streams,
    /// `(group, version, plural)` of types this server does not serve (as a cluster that removed
    /// them): absent from discovery, 404 on every path.
    withdrawn: BTreeSet<(String, String, String)>,
    /// `(verb, group, plural, namespace or None for all)` a SelfSubjectAccessReview denies.
    denied: Vec<(String, String, String, Option<String>)>,
    /// Whether the Calico API server presents `projectcalico.org/v3` (its discovery lists
    /// `profiles`, which native CRDs do not have): [`KubeApiServer::serve_calico_api_server`].
    calico_api_server: bool,
    /// The DaemonSets whose controller the server stands in for ([`super::kube_daemon_sets`]).
    pub(super) daemon_sets: super::kube_daemon_sets::StandIns,
    /// Numbers the stand-in's pods.
    pub(super) pod_serial: u64,
}

/// A running API server; stops when dropped.
pub struct KubeApiServer {
    address: SocketAddr,
    state: Arc<Mutex<State>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    directory: TempDir,
}

impl KubeApiServer {
    /// Starts a server on a free loopback port, in its own thread and runtime, serving the
    /// `crd.projectcalico.org/v1` Calico CRDs.
    pub fn start() -> KubeApiServer {
        KubeApiServer::start_serving(CalicoGroups::V1)
    }

    /// Starts a server that serves the Calico CRDs of `groups`; the types of a group not served
    /// are absent from discovery and 404 on every path, as on a cluster without those CRDs.
    pub fn start_serving(groups: CalicoGroups) -> KubeApiServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).expect("non-blocking socket");
        let address = listener.local_addr().expect("local address");
        let unserved: &[&str] = match groups {
            CalicoGroups::V1 => &[CALICO_V3_GROUP],
            CalicoGroups::V3 => &[CALICO_GROUP],
            CalicoGroups::Both => &[],
            CalicoGroups::None => &[CALICO_GROUP, CALICO_V3_GROUP],
        };
        let withdrawn = RESOURCE_TYPES
            .iter()
            .filter(|resource| unserved.contains(&resource.group))
            .map(|resource| {
                (
                    resource.group.to_string(),
                    resource.version.to_string(),
                    resource.plural.to_string(),
                )
            })
            .collect();
        let state = Arc::new(Mutex::new(State {
            withdrawn,
            ..State::default()
        }));
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = state.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("test server runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
                    let state = served.clone();
                    async move { super::kube_streams::dispatch(state, request).await }
                });
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .expect("serve");
            });
        });
        let directory = tempfile::Builder::new()
            .prefix("netctl-test-kubeapi-")
            .tempdir()
            .expect("temporary directory");
        let server = KubeApiServer {
            address,
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
            directory,
        };
        std::fs::write(server.kubeconfig_path(), server.kubeconfig_yaml())
            .expect("write kubeconfig");
        server
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// A kubeconfig pointing at this server, with context `test`.
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {url}\n\
             users:\n- name: tester\n  user:\n    token: test-token\n\
             contexts:\n- name: test\n  context:\n    cluster: test\n    user: tester\n\
             current-context: test\n",
            url = self.url()
        )
    }

    /// The path of the kubeconfig written at start.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.directory.path().join("kubeconfig")
    }

    /// A scratch directory removed with the server.
    pub fn directory(&self) -> &Path {
        self.directory.path()
    }

    /// Answers every request whose path starts with `prefix` (and whose method is `method`, when
    /// given) with 403 Forbidden.
    pub fn forbid(&self, method: Option<&str>, prefix: &str) {
        let method = method.map(|text| Method::from_bytes(text.as_bytes()).expect("method"));
        self.lock().forbidden.push((method, prefix.to_string()));
    }

    /// Answers every request normally again (undoes [`KubeApiServer::forbid`]).
    pub fn allow_all(&self) {
        self.lock().forbidden.clear();
    }

    /// Stops serving the type of `api_version` and `plural`, as a cluster that removed it (e.g.
    /// `policy/v1beta1` `podsecuritypolicies` from Kubernetes 1.25 on).
    pub fn withdraw(&self, api_version: &str, plural: &str) {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.lock()
            .withdrawn
            .insert((group.to_string(), version.to_string(), plural.to_string()));
    }

    /// Makes SelfSubjectAccessReviews of `verb` on `resource` (`plural` or `plural.group`) deny it,
    /// in `namespace` or (`None`) everywhere. Only the review answers so: the requests themselves
    /// are served (this server has no RBAC), so a test sees what the pre-flight decided.
    pub fn deny_access(&self, verb: &str, resource: &str, namespace: Option<&str>) {
        let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
        self.lock().denied.push((
            verb.to_string(),
            group.to_string(),
            plural.to_string(),
            namespace.map(str::to_string),
        ));
    }

    /// Whether any type of `group` is served now.
    pub fn serves(&self, group: &str) -> bool {
        let state = self.lock();
        served(&state.withdrawn).any(|resource| resource.group == group)
    }

    /// Presents `projectcalico.org/v3` as the Calico API server does: the group in discovery with
    /// `profiles` among its resources (which native CRDs never have). Only discovery: its objects
    /// are not served.
    pub fn serve_calico_api_server(&self) {
        self.lock().calico_api_server = true;
    }

    /// Sends one request over plain HTTP as a client that does not validate would (`body` as
    /// JSON) and returns the whole response as text, status line and headers included.
    pub fn raw_request(&self, method: &str, path: &str, body: &str) -> String {
        use std::io::{Read, Write};
        let url = self.url();
        let address = url.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(address).expect("connect to the test server");
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("send the request");
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .expect("read the response");
        response
    }

    /// Every request received so far, as `METHOD path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.lock().requests.clone()
    }

    /// Stores an object as is (apiVersion, kind, metadata.name, optional metadata.namespace), as a
    /// controller would, bypassing field ownership. Returns it with its new resourceVersion.
    pub fn put(&self, object: Value) -> Value {
        let api_version = object["apiVersion"]
            .as_str()
            .expect("apiVersion")
            .to_string();
        let kind = object["kind"].as_str().expect("kind").to_string();
        let resource = RESOURCE_TYPES
            .iter()
            .find(|resource| resource.api_version() == api_version && resource.kind == kind)
            .unwrap_or_else(|| panic!("unknown type {api_version} {kind}"));
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = object["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_string();
        let key = object_key(resource, &namespace, &name);
        let mut state = self.lock();
        state.store(key, object, resource)
    }

    /// Server-side applies `object` as field manager `manager` (with force), as another tool such as
    /// Helm would, so that `manager` owns its fields.
    pub fn apply_as(&self, manager: &str, object: Value) -> Value {
        let api_version = object["apiVersion"]
            .as_str()
            .expect("apiVersion")
            .to_string();
        let kind = object["kind"].as_str().expect("kind").to_string();
        let resource = *RESOURCE_TYPES
            .iter()
            .find(|resource| resource.api_version() == api_version && resource.kind == kind)
            .unwrap_or_else(|| panic!("unknown type {api_version} {kind}"));
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = object["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_string();
        let key = object_key(&resource, &namespace, &name);
        let mut state = self.lock();
        let previous = state.objects.get(&key).cloned();
        let response = server_side_apply(
            &mut state,
            &resource,
            key.clone(),
            previous,
            object,
            manager,
            true,
            false,
        );
        assert!(
            response.status().is_success(),
            "apply_as failed: {}",
            response.status()
        );
        state.objects.get(&key).cloned().expect("applied object")
    }

    /// The field manager owning each field of an object (`.spec.template...` → manager).
    pub fn owners(
        &self,
        api_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> BTreeMap<String, String> {
        let group = api_version
            .rsplit_once('/')
            .map(|(group, _)| group)
            .unwrap_or("");
        self.lock()
            .owners
            .get(&(group.into(), plural.into(), namespace.into(), name.into()))
            .cloned()
            .unwrap_or_default()
    }

    /// The stored object, if any. `api_version` as in manifests (`v1`, `apps/v1`).
    pub fn get(
        &self,
        api_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let group = api_version
            .rsplit_once('/')
            .map(|(group, _)| group)
            .unwrap_or("");
        self.lock()
            .objects
            .get(&(group.into(), plural.into(), namespace.into(), name.into()))
            .cloned()
    }

    /// The names (`namespace/name` or `name`) of every stored object of one type, sorted.
    pub fn names(&self, api_version: &str, plural: &str) -> Vec<String> {
        let group = api_version
            .rsplit_once('/')
            .map(|(group, _)| group)
            .unwrap_or("");
        self.lock()
            .objects
            .keys()
            .filter(|key| key.0 == group && key.1 == plural)
            .map(|key| {
                if key.2.is_empty() {
                    key.3.clone()
                } else {
                    format!("{}/{}", key.2, key.3)
                }
            })
            .collect()
    }

    /// Stands in for the DaemonSet controller of the stored DaemonSet `namespace`/`name` from now
    /// on, with a pod on each of `nodes` ([`super::kube_daemon_sets`]): its pods are created from
    /// the template now, a deleted one comes back on its node, a template change replaces them all
    /// under `RollingUpdate` and none under `OnDelete`.
    pub fn run_daemon_set(&self, namespace: &str, name: &str, nodes: &[&str]) {
        let mut state = self.lock();
        state.daemon_sets.insert(
            (namespace.to_string(), name.to_string()),
            nodes.iter().map(|node| node.to_string()).collect(),
        );
        state.reconcile_daemon_set(namespace, name);
    }

    /// Replaces an object's `status` (as the kubelet or a controller would), bumping its
    /// resourceVersion.
    pub fn set_status(
        &self,
        api_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        status: Value,
    ) {
        let group = api_version
            .rsplit_once('/')
            .map(|(group, _)| group)
            .unwrap_or("");
        let key: ObjectKey = (group.into(), plural.into(), namespace.into(), name.into());
        let mut state = self.lock();
        state.revision += 1;
        let revision = state.revision.to_string();
        let object = state
            .objects
            .get_mut(&key)
            .unwrap_or_else(|| panic!("no object {key:?}"));
        object["status"] = status;
        object["metadata"]["resourceVersion"] = json!(revision);
    }

    /// Sets the log lines (each with its time) of a pod's container; `previous` for the instance
    /// before the last restart.
    pub fn set_pod_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        previous: bool,
        lines: &[(std::time::SystemTime, &str)],
    ) {
        let key = (
            (
                namespace.to_string(),
                pod.to_string(),
                container.to_string(),
            ),
            previous,
        );
        let lines = lines
            .iter()
            .map(|(time, line)| (*time, line.to_string()))
            .collect();
        self.lock().streams.logs.insert(key, lines);
    }

    /// Installs a program in a pod's container: `argv` run through `pods/exec` gives `reply`.
    /// Commands not installed fail as a missing executable does.
    pub fn program(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        argv: &[&str],
        reply: super::kube_streams::ExecReply,
    ) {
        let key = (
            (
                namespace.to_string(),
                pod.to_string(),
                container.to_string(),
            ),
            argv.iter().map(|arg| arg.to_string()).collect(),
        );
        self.lock().streams.programs.insert(key, reply);
    }

    /// Every command run through `pods/exec`: (namespace, pod, container) and argv.
    pub fn executed(&self) -> Vec<(super::kube_streams::ContainerKey, Vec<String>)> {
        self.lock().streams.executed.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for KubeApiServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(super) fn object_key(resource: &ResourceType, namespace: &str, name: &str) -> ObjectKey {
    (
        resource.group.to_string(),
        resource.plural.to_string(),
        if resource.namespaced {
            namespace.to_string()
        } else {
            String::new()
        },
        name.to_string(),
    )
}

impl State {
    /// Stores `object` at `key`: sets apiVersion, kind, uid and creationTimestamp (kept from the
    /// stored object when there is one), bumps generation when the spec changed, and sets a new
    /// resourceVersion. Returns what was stored.
    pub(super) fn store(
        &mut self,
        key: ObjectKey,
        mut object: Value,
        resource: &ResourceType,
    ) -> Value {
        self.revision += 1;
        let previous = self.objects.get(&key).cloned();
        self.finish(&key, &mut object, previous.as_ref(), resource);
        if resource.kind == "CustomResourceDefinition" {
            self.serve_defined(&object);
        }
        self.objects.insert(key, object.clone());
        object
    }

    /// A CustomResourceDefinition written: the types it serves are served from now on (as a real
    /// API server establishes a new CRD), when they are types this server knows; a version it
    /// no longer serves is withdrawn. CRDs of types this server does not know change nothing.
    fn serve_defined(&mut self, crd: &Value) {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
            let name = version["name"].as_str().unwrap_or_default();
            let known = RESOURCE_TYPES.iter().any(|resource| {
                (resource.group, resource.version, resource.plural) == (group, name, plural)
            });
            if !known {
                continue;
            }
            let key = (group.to_string(), name.to_string(), plural.to_string());
            match version["served"].as_bool() == Some(true) {
                true => self.withdrawn.remove(&key),
                false => self.withdrawn.insert(key),
            };
        }
    }

    /// Fills server-set fields without storing (also for dry-run). Uses the next revision.
    fn finish(
        &mut self,
        key: &ObjectKey,
        object: &mut Value,
        previous: Option<&Value>,
        resource: &ResourceType,
    ) {
        object["apiVersion"] = json!(resource.api_version());
        object["kind"] = json!(resource.kind);
        if !object["metadata"].is_object() {
            object["metadata"] = json!({});
        }
        let metadata = &mut object["metadata"];
        metadata["name"] = json!(key.3);
        if resource.namespaced {
            metadata["namespace"] = json!(key.2);
        }
        match previous {
            Some(previous) => {
                for field in ["uid", "creationTimestamp"] {
                    metadata[field] = previous["metadata"][field].clone();
                }
                let generation = previous["metadata"]["generation"].as_i64().unwrap_or(1);
                let changed = previous.get("spec") != object.get("spec");
                object["metadata"]["generation"] = json!(generation + i64::from(changed));
            }
            None => {
                self.uid_counter += 1;
                metadata["uid"] =
                    json!(format!("6f1e2a3b-0000-4000-8000-{:012x}", self.uid_counter));
                metadata["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
                metadata["generation"] = json!(1);
            }
        }
        object["metadata"]["resourceVersion"] = json!(self.revision.to_string());
        if let Some(map) = object["metadata"].as_object_mut() {
            map.retain(|_, value| !value.is_null());
        }
    }
}

/// What the path names.
struct Target {
    resource: ResourceType,
    namespace: Option<String>,
    name: Option<String>,
}

enum Route {
    Version,
    CoreVersions,
    Groups,
    Group(String),
    ResourceList(String, String),
    Object(Target),
}

fn route(path: &str) -> Option<Route> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["version"] => return Some(Route::Version),
        ["api"] => return Some(Route::CoreVersions),
        ["apis"] => return Some(Route::Groups),
        ["apis", group] => return Some(Route::Group(group.to_string())),
        ["api", version] => return Some(Route::ResourceList(String::new(), version.to_string())),
        ["apis", group, version] => {
            return Some(Route::ResourceList(group.to_string(), version.to_string()));
        }
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let find = |plural: &str| {
        RESOURCE_TYPES.iter().copied().find(|resource| {
            resource.group == group && resource.version == version && resource.plural == plural
        })
    };
    let (resource, namespace, name) = match rest {
        ["namespaces", namespace, plural] => (find(plural)?, Some(*namespace), None),
        ["namespaces", namespace, plural, name] => (find(plural)?, Some(*namespace), Some(*name)),
        [plural] => (find(plural)?, None, None),
        [plural, name] => (find(plural)?, None, Some(*name)),
        _ => return None,
    };
    Some(Route::Object(Target {
        resource,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
    }))
}

fn query_pairs(uri: &Uri) -> BTreeMap<String, String> {
    let mut pairs = BTreeMap::new();
    for pair in uri.query().unwrap_or_default().split('&') {
        if pair.is_empty() {
            continue;
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        pairs.insert(percent_decode(key), percent_decode(value));
    }
    pairs
}

pub(super) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' if index + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[index + 1..index + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        index += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        index += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                index += 1;
            }
            byte => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A `Status` failure body, as the API server sends.
pub(super) fn status_error(
    code: StatusCode,
    reason: &str,
    message: String,
    details: Value,
) -> Response {
    json_response(
        code,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": details,
            "code": code.as_u16(),
        }),
    )
}

fn not_found(resource: &ResourceType, name: &str) -> Response {
    status_error(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!(
            "{}.{} \"{name}\" not found",
            resource.plural, resource.group
        )
        .replace(". \"", " \""),
        json!({"name": name, "group": resource.group, "kind": resource.plural}),
    )
}

fn conflict(resource: &ResourceType, name: &str, why: &str) -> Response {
    status_error(
        StatusCode::CONFLICT,
        "Conflict",
        format!(
            "Operation cannot be fulfilled on {}.{} \"{name}\": {why}",
            resource.plural, resource.group
        ),
        json!({"name": name, "group": resource.group, "kind": resource.plural}),
    )
}

fn bad_request(message: String) -> Response {
    status_error(StatusCode::BAD_REQUEST, "BadRequest", message, json!({}))
}

/// Decodes a create or update body strictly (see [`super::kube_strict`]): a wrong type is refused
/// (400); unknown fields are refused with `fieldValidation=Strict` (400) and otherwise dropped, with
/// the `Warning` a real server sends. Returns the object to store and the warnings.
#[allow(clippy::result_large_err)]
fn decode_strictly(
    resource: &ResourceType,
    query: &BTreeMap<String, String>,
    mut object: Value,
) -> Result<(Value, Vec<String>), Response> {
    let api_version = resource.api_version();
    if let Some(schema) = super::kube_crd::schema(&api_version, resource.kind) {
        return check_custom_resource(resource, query, &schema, object);
    }
    match super::kube_strict::check(&api_version, resource.kind, &object) {
        Ok(()) => Ok((object, Vec::new())),
        Err(super::kube_strict::Refusal::WrongType {
            path,
            found,
            expected,
        }) => Err(bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: json: cannot unmarshal {found} into Go struct field {kind}.{path} of type {expected}",
            kind = resource.kind,
            version = resource.version,
        ))),
        Err(super::kube_strict::Refusal::Unknown { paths }) => {
            let listed: Vec<String> = paths
                .iter()
                .map(|path| format!("unknown field \"{path}\""))
                .collect();
            if query.get("fieldValidation").map(String::as_str) == Some("Strict") {
                return Err(bad_request(format!(
                    "strict decoding error: {}",
                    listed.join(", ")
                )));
            }
            for path in &paths {
                remove_path(&mut object, path);
            }
            Ok((object, listed))
        }
    }
}

/// A custom resource checked against its CRD's schema (see [`super::kube_crd`]): `422 Invalid`
/// with every cause, unknown fields pruned with a warning (refused with `fieldValidation=Strict`),
/// nulls in fields that are not nullable pruned.
#[allow(clippy::result_large_err)]
fn check_custom_resource(
    resource: &ResourceType,
    query: &BTreeMap<String, String>,
    schema: &Value,
    mut object: Value,
) -> Result<(Value, Vec<String>), Response> {
    let findings = super::kube_crd::check(schema, &object);
    let listed: Vec<String> = findings
        .unknown
        .iter()
        .map(|path| format!("unknown field \"{path}\""))
        .collect();
    if !listed.is_empty() && query.get("fieldValidation").map(String::as_str) == Some("Strict") {
        return Err(bad_request(format!(
            "strict decoding error: {}",
            listed.join(", ")
        )));
    }
    if !findings.invalid.is_empty() {
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let causes = match findings.invalid.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        return Err(status_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!(
                "{}.{} \"{name}\" is invalid: {causes}",
                resource.kind, resource.group
            ),
            json!({"name": name, "group": resource.group, "kind": resource.kind,
                   "causes": findings.invalid.iter().map(|cause| json!({"message": cause})).collect::<Vec<_>>()}),
        ));
    }
    for path in findings.unknown.iter().chain(&findings.nulls) {
        super::kube_crd::prune(&mut object, path);
    }
    Ok((object, listed))
}

/// Whether the type's `status` is a subresource, which a PUT of the object leaves alone and a
/// POST drops. Calico's v1 CRDs have none but KubeControllersConfiguration (a PUT of a
/// CalicoNodeStatus writes its status, as calico-node's does); the v3 ones add IPPool and Tier
/// ([`super::kube_crd::calico_status_subresource`]).
fn has_status_subresource(resource: &ResourceType) -> bool {
    match resource.group {
        CALICO_GROUP | CALICO_V3_GROUP => {
            super::kube_crd::calico_status_subresource(resource.group, resource.kind)
        }
        _ => true,
    }
}

/// Refuses a server-side apply body that does not decode as its kind, as structured-merge-diff's
/// conversion does: a 500 with no reason.
#[allow(clippy::result_large_err)]
fn check_apply(resource: &ResourceType, key: &ObjectKey, applied: &Value) -> Result<(), Response> {
    let api_version = resource.api_version();
    let problems = match super::kube_strict::check(&api_version, resource.kind, applied) {
        Ok(()) => return Ok(()),
        Err(super::kube_strict::Refusal::WrongType {
            path,
            found,
            expected,
        }) => {
            let wanted = match expected.as_str() {
                "int32" | "int64" | "uint32" | "float64" => "numeric (int or float)",
                "string" => "string",
                "bool" => "boolean",
                "[]interface {}" => "list",
                _ => "map",
            };
            vec![format!(".{path}: expected {wanted}, got {found}")]
        }
        Err(super::kube_strict::Refusal::Unknown { paths }) => paths
            .iter()
            .map(|path| format!(".{path}: field not declared in schema"))
            .collect(),
    };
    let object = if key.2.is_empty() {
        key.3.clone()
    } else {
        format!("{}/{}", key.2, key.3)
    };
    let detail = match problems.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    Err(status_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "",
        format!(
            "failed to create typed patch object ({object}; {api_version}, Kind={}): {detail}",
            resource.kind
        ),
        json!({}),
    ))
}

/// Removes the field at a path (`a.b[0].c`) from an object.
fn remove_path(object: &mut Value, path: &str) {
    let (parent, last) = match path.rsplit_once('.') {
        Some((parent, last)) => (Some(parent), last),
        None => (None, path),
    };
    let mut node = object;
    if let Some(parent) = parent {
        for part in parent.split('.') {
            let (name, indexes) = match part.find('[') {
                Some(at) => (&part[..at], &part[at..]),
                None => (part, ""),
            };
            node = &mut node[name];
            for index in indexes
                .split(['[', ']'])
                .filter_map(|index| index.parse::<usize>().ok())
            {
                node = &mut node[index];
            }
        }
    }
    if let Some(map) = node.as_object_mut() {
        map.remove(last);
    }
}

/// Adds `Warning` headers (`299 - "<text>"`) to a response.
fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let text = format!(
            "299 - {}",
            serde_json::to_string(warning).unwrap_or_default()
        );
        if let Ok(value) = axum::http::HeaderValue::from_str(&text) {
            response.headers_mut().append("warning", value);
        }
    }
    response
}

pub(super) fn handle(
    state: &Arc<Mutex<State>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let path = uri.path().to_string();
    // DELETE may carry `dryRun` in its DeleteOptions body instead of the query; both count, and
    // the request log shows it either way.
    let body_dry_run = method == Method::DELETE
        && serde_json::from_slice::<Value>(&body).is_ok_and(|options| {
            options["dryRun"]
                .as_array()
                .is_some_and(|values| values.iter().any(|value| value == "All"))
        });
    let mut line = match uri.query() {
        Some(query) => format!("{method} {path}?{query}"),
        None => format!("{method} {path}"),
    };
    if body_dry_run {
        line.push_str(" (body: dryRun=All)");
    }
    state.requests.push(line);
    let forbidden = state.forbidden.iter().any(|(forbidden_method, prefix)| {
        path.starts_with(prefix.as_str())
            && forbidden_method
                .as_ref()
                .is_none_or(|forbidden| *forbidden == method)
    });
    if forbidden {
        return status_error(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!(
                "{path} is forbidden: User \"tester\" cannot {} this resource",
                method.as_str().to_lowercase()
            ),
            json!({}),
        );
    }
    if path.trim_end_matches('/') == ACCESS_REVIEWS_PATH {
        return match method {
            Method::POST => access_review(&state, &body),
            _ => status_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource".to_string(),
                json!({}),
            ),
        };
    }
    let withdrawn = |resource: &ResourceType| {
        state.withdrawn.contains(&(
            resource.group.to_string(),
            resource.version.to_string(),
            resource.plural.to_string(),
        ))
    };
    match route(&path) {
        Some(Route::Object(target)) if withdrawn(&target.resource) => return not_found_path(),
        _ => {}
    }
    let Some(route) = route(&path) else {
        return status_error(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource".into(),
            json!({}),
        );
    };
    let mut query = query_pairs(&uri);
    if body_dry_run {
        query.insert("dryRun".into(), "All".into());
    }
    match (route, method.clone()) {
        (Route::Version, Method::GET) => json_response(
            StatusCode::OK,
            json!({
                "major": "1", "minor": SERVER_MINOR, "gitVersion": format!("v1.{SERVER_MINOR}.0"),
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0", "compiler": "gc",
                "platform": "linux/amd64"
            }),
        ),
        (Route::CoreVersions, Method::GET) => json_response(
            StatusCode::OK,
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:0"}]}),
        ),
        (Route::Groups, Method::GET) => {
            let mut listed = groups(&state.withdrawn);
            if state.calico_api_server && !listed.contains(&CALICO_V3_GROUP) {
                listed.push(CALICO_V3_GROUP);
            }
            let groups: Vec<Value> = listed
                .into_iter()
                .map(|group| match group {
                    CALICO_V3_GROUP if state.calico_api_server => json!({"name": group,
                        "versions": [{"groupVersion": "projectcalico.org/v3", "version": "v3"}],
                        "preferredVersion": {"groupVersion": "projectcalico.org/v3", "version": "v3"}}),
                    _ => group_json(group, &state.withdrawn),
                })
                .collect();
            json_response(
                StatusCode::OK,
                json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
            )
        }
        (Route::Group(group), Method::GET)
            if groups(&state.withdrawn).contains(&group.as_str()) =>
        {
            let mut body = group_json(&group, &state.withdrawn);
            body["kind"] = json!("APIGroup");
            body["apiVersion"] = json!("v1");
            json_response(StatusCode::OK, body)
        }
        (Route::ResourceList(group, version), Method::GET)
            if group == "authorization.k8s.io" && version == "v1" =>
        {
            json_response(
                StatusCode::OK,
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "authorization.k8s.io/v1",
                       "resources": [{"name": "selfsubjectaccessreviews", "singularName": "selfsubjectaccessreview",
                                      "namespaced": false, "kind": "SelfSubjectAccessReview", "verbs": ["create"]}]}),
            )
        }
        (Route::ResourceList(group, version), Method::GET)
            if state.calico_api_server && group == CALICO_V3_GROUP && version == "v3" =>
        {
            // The Calico API server's own list: every Calico kind, Profiles among them.
            let mut resources: Vec<Value> = RESOURCE_TYPES
                .iter()
                .filter(|resource| resource.group == CALICO_V3_GROUP)
                .map(|resource| {
                    json!({"name": resource.plural, "singularName": resource.kind.to_lowercase(),
                    "namespaced": resource.namespaced, "kind": resource.kind,
                    "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]})
                })
                .collect();
            resources.push(
                json!({"name": "profiles", "singularName": "profile", "namespaced": false,
                "kind": "Profile", "verbs": ["get", "list", "watch"]}),
            );
            json_response(
                StatusCode::OK,
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "projectcalico.org/v3", "resources": resources}),
            )
        }
        (Route::ResourceList(group, version), Method::GET) => {
            let resources: Vec<Value> = RESOURCE_TYPES
                .iter()
                .filter(|resource| resource.group == group && resource.version == version)
                .filter(|resource| !withdrawn(resource))
                .map(|resource| {
                    json!({
                        "name": resource.plural,
                        "singularName": resource.kind.to_lowercase(),
                        "namespaced": resource.namespaced,
                        "kind": resource.kind,
                        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                    })
                })
                .collect();
            if resources.is_empty() {
                return not_found_path();
            }
            let group_version = if group.is_empty() {
                version
            } else {
                format!("{group}/{version}")
            };
            json_response(
                StatusCode::OK,
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
            )
        }
        (Route::Object(target), method) => {
            let content_type = headers
                .get("content-type")
                .and_then(|value| value.to_str().ok())
                .unwrap_or("application/json")
                .to_string();
            object_request(&mut state, target, method, &query, &content_type, &body)
        }
        _ => status_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".to_string(),
            json!({}),
        ),
    }
}

fn not_found_path() -> Response {
    status_error(
        StatusCode::NOT_FOUND,
        "NotFound",
        "the server could not find the requested resource".into(),
        json!({}),
    )
}

/// The path of SelfSubjectAccessReviews (a question, never stored).
const ACCESS_REVIEWS_PATH: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

type Withdrawn = BTreeSet<(String, String, String)>;

fn served(withdrawn: &Withdrawn) -> impl Iterator<Item = &'static ResourceType> + '_ {
    RESOURCE_TYPES.iter().filter(|resource| {
        !withdrawn.contains(&(
            resource.group.to_string(),
            resource.version.to_string(),
            resource.plural.to_string(),
        ))
    })
}

fn groups(withdrawn: &Withdrawn) -> Vec<&'static str> {
    let mut groups: Vec<&'static str> = vec!["authorization.k8s.io"];
    for resource in served(withdrawn) {
        if !resource.group.is_empty() && !groups.contains(&resource.group) {
            groups.push(resource.group);
        }
    }
    groups
}

fn group_json(group: &str, withdrawn: &Withdrawn) -> Value {
    let mut versions: Vec<&str> = Vec::new();
    if group == "authorization.k8s.io" {
        versions.push("v1");
    }
    for resource in served(withdrawn).filter(|resource| resource.group == group) {
        if !versions.contains(&resource.version) {
            versions.push(resource.version);
        }
    }
    let listed: Vec<Value> = versions
        .iter()
        .map(|version| json!({"groupVersion": format!("{group}/{version}"), "version": version}))
        .collect();
    let preferred = listed
        .first()
        .cloned()
        .unwrap_or_else(|| json!({"groupVersion": format!("{group}/v1"), "version": "v1"}));
    json!({"name": group, "versions": listed, "preferredVersion": preferred})
}

/// `POST .../selfsubjectaccessreviews`: decodes the review strictly (a wrong type or an unknown
/// field is a 400, as with `fieldValidation=Strict`), requires `spec.resourceAttributes` or
/// `spec.nonResourceAttributes`, and answers the review with `status.allowed` — false for what
/// [`KubeApiServer::deny_access`] denies, with a reason in RBAC's words.
fn access_review(state: &State, body: &[u8]) -> Response {
    let review = match parse_body("application/json", body) {
        Ok(review) => review,
        Err(response) => return response,
    };
    if review["apiVersion"] != "authorization.k8s.io/v1"
        || review["kind"] != "SelfSubjectAccessReview"
    {
        return bad_request(format!(
            "the body is not an authorization.k8s.io/v1 SelfSubjectAccessReview: apiVersion {}, kind {}",
            review["apiVersion"], review["kind"]
        ));
    }
    match super::kube_strict::check(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &review,
    ) {
        Ok(()) => {}
        Err(super::kube_strict::Refusal::WrongType {
            path,
            found,
            expected,
        }) => {
            return bad_request(format!(
                "SelfSubjectAccessReview in version \"v1\" cannot be handled as a SelfSubjectAccessReview: json: cannot unmarshal {found} into Go struct field SelfSubjectAccessReview.{path} of type {expected}"
            ));
        }
        Err(super::kube_strict::Refusal::Unknown { paths }) => {
            let listed: Vec<String> = paths
                .iter()
                .map(|path| format!("unknown field \"{path}\""))
                .collect();
            return bad_request(format!("strict decoding error: {}", listed.join(", ")));
        }
    }
    let attributes = &review["spec"]["resourceAttributes"];
    if !attributes.is_object() && !review["spec"]["nonResourceAttributes"].is_object() {
        return status_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified".to_string(),
            json!({}),
        );
    }
    let field = |name: &str| attributes[name].as_str().unwrap_or("").to_string();
    let (verb, group, resource, namespace) = (
        field("verb"),
        field("group"),
        field("resource"),
        field("namespace"),
    );
    let denied = state
        .denied
        .iter()
        .any(|(d_verb, d_group, d_plural, d_namespace)| {
            *d_verb == verb
                && *d_group == group
                && *d_plural == resource
                && d_namespace
                    .as_ref()
                    .is_none_or(|wanted| *wanted == namespace)
        });
    let mut answer = review.clone();
    answer["metadata"] = json!({"creationTimestamp": null});
    answer["status"] = match denied {
        true => json!({"allowed": false, "reason": format!(
            "RBAC: user \"tester\" cannot {verb} resource \"{resource}\" in API group \"{group}\"{}",
            match namespace.as_str() { "" => String::new(), ns => format!(" in the namespace \"{ns}\"") }
        )}),
        false => {
            json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"tester\""})
        }
    };
    json_response(StatusCode::CREATED, answer)
}

// A test server answers one request at a time; the size of an error response does not matter.
#[allow(clippy::result_large_err)]
fn parse_body(content_type: &str, body: &[u8]) -> Result<Value, Response> {
    let text = std::str::from_utf8(body).map_err(|_| bad_request("body is not UTF-8".into()))?;
    if content_type.contains("yaml") {
        netctl::yaml::from_str(text).map_err(|error| bad_request(format!("invalid YAML: {error}")))
    } else {
        serde_json::from_str(text).map_err(|error| bad_request(format!("invalid JSON: {error}")))
    }
}

fn object_request(
    state: &mut State,
    target: Target,
    method: Method,
    query: &BTreeMap<String, String>,
    content_type: &str,
    body: &[u8],
) -> Response {
    let resource = target.resource;
    if resource.namespaced != target.namespace.is_some() && target.name.is_some() {
        return not_found_path();
    }
    let namespace = target.namespace.clone().unwrap_or_default();
    let dry_run = query.get("dryRun").is_some_and(|value| value == "All");
    match (method, target.name.clone()) {
        (Method::GET, None) => list(state, &resource, target.namespace.as_deref(), query),
        (Method::GET, Some(name)) => {
            match state.objects.get(&object_key(&resource, &namespace, &name)) {
                Some(object) => json_response(StatusCode::OK, object.clone()),
                None => not_found(&resource, &name),
            }
        }
        (Method::POST, None) => {
            let object = match parse_body(content_type, body) {
                Ok(object) => object,
                Err(response) => return response,
            };
            let (object, warnings) = match decode_strictly(&resource, query, object) {
                Ok(decoded) => decoded,
                Err(response) => return response,
            };
            let Some(name) = object["metadata"]["name"].as_str().map(str::to_string) else {
                return bad_request("metadata.name: Required value: name is required".into());
            };
            // A custom resource with a status subresource is created without its status (the
            // apiextensions strategy's PrepareForCreate), to be written through `/status`.
            let mut object = object;
            if matches!(resource.group, CALICO_GROUP | CALICO_V3_GROUP)
                && has_status_subresource(&resource)
                && let Some(map) = object.as_object_mut()
            {
                map.remove("status");
            }
            let key = object_key(&resource, &namespace, &name);
            if state.objects.contains_key(&key) {
                return status_error(
                    StatusCode::CONFLICT,
                    "AlreadyExists",
                    format!(
                        "{}.{} \"{name}\" already exists",
                        resource.plural, resource.group
                    ),
                    json!({"name": name, "group": resource.group, "kind": resource.plural}),
                );
            }
            let manager = query
                .get("fieldManager")
                .cloned()
                .unwrap_or_else(|| "unknown".into());
            let response = write(
                state,
                key,
                object,
                None,
                &resource,
                &manager,
                dry_run,
                StatusCode::CREATED,
            );
            with_warnings(response, &warnings)
        }
        (Method::PUT, Some(name)) => {
            let object = match parse_body(content_type, body) {
                Ok(object) => object,
                Err(response) => return response,
            };
            let (object, warnings) = match decode_strictly(&resource, query, object) {
                Ok(decoded) => decoded,
                Err(response) => return response,
            };
            let key = object_key(&resource, &namespace, &name);
            let Some(previous) = state.objects.get(&key).cloned() else {
                return not_found(&resource, &name);
            };
            if let Some(expected) = object["metadata"]["resourceVersion"].as_str()
                && previous["metadata"]["resourceVersion"].as_str() != Some(expected)
            {
                return conflict(
                    &resource,
                    &name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                );
            }
            let mut object = object;
            if has_status_subresource(&resource) {
                if let Some(status) = previous.get("status") {
                    object["status"] = status.clone();
                }
            }
            let manager = query
                .get("fieldManager")
                .cloned()
                .unwrap_or_else(|| "unknown".into());
            let response = write(
                state,
                key,
                object,
                Some(previous),
                &resource,
                &manager,
                dry_run,
                StatusCode::OK,
            );
            with_warnings(response, &warnings)
        }
        (Method::PATCH, Some(name)) => patch(
            state,
            &resource,
            &namespace,
            &name,
            query,
            content_type,
            body,
            dry_run,
        ),
        (Method::DELETE, Some(name)) => {
            let key = object_key(&resource, &namespace, &name);
            let Some(previous) = state.objects.get(&key).cloned() else {
                return not_found(&resource, &name);
            };
            if !body.is_empty()
                && let Ok(options) = serde_json::from_slice::<Value>(body)
            {
                let preconditions = &options["preconditions"];
                for field in ["resourceVersion", "uid"] {
                    if let Some(expected) = preconditions[field].as_str()
                        && previous["metadata"][field].as_str() != Some(expected)
                    {
                        return conflict(
                            &resource,
                            &name,
                            &format!(
                                "Precondition failed: {field} in precondition: {expected}, {field} in object meta: {}",
                                previous["metadata"][field].as_str().unwrap_or_default()
                            ),
                        );
                    }
                }
            }
            if !dry_run {
                state.objects.remove(&key);
                state.owners.remove(&key);
                state.revision += 1;
                if resource.kind == "Pod" {
                    state.pod_deleted(&previous);
                }
            }
            json_response(StatusCode::OK, previous)
        }
        (Method::DELETE, None) => {
            let selector = query.get("labelSelector").cloned().unwrap_or_default();
            let matching: Vec<ObjectKey> = state
                .objects
                .iter()
                .filter(|(key, object)| {
                    key.0 == resource.group
                        && key.1 == resource.plural
                        && target
                            .namespace
                            .as_ref()
                            .is_none_or(|namespace| &key.2 == namespace)
                        && selector_matches(&selector, &object["metadata"]["labels"])
                })
                .map(|(key, _)| key.clone())
                .collect();
            let mut items = Vec::new();
            for key in matching {
                if let Some(object) = if dry_run {
                    state.objects.get(&key).cloned()
                } else {
                    state.owners.remove(&key);
                    state.objects.remove(&key)
                } {
                    items.push(object);
                }
            }
            if !dry_run {
                state.revision += 1;
            }
            json_response(
                StatusCode::OK,
                json!({"apiVersion": resource.api_version(), "kind": format!("{}List", resource.kind),
                       "metadata": {"resourceVersion": state.revision.to_string()}, "items": items}),
            )
        }
        _ => status_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".into(),
            json!({}),
        ),
    }
}

/// Stores a create or update (or, in dry-run, only computes it), recording `manager` as owner of
/// every field whose value changed.
#[allow(clippy::too_many_arguments)]
fn write(
    state: &mut State,
    key: ObjectKey,
    mut object: Value,
    previous: Option<Value>,
    resource: &ResourceType,
    manager: &str,
    dry_run: bool,
    success: StatusCode,
) -> Response {
    let before = previous.as_ref().map(field_values).unwrap_or_default();
    let changed: Vec<String> = field_values(&object)
        .into_iter()
        .filter(|(path, value)| before.get(path) != Some(value))
        .map(|(path, _)| path)
        .collect();
    if let Err(refused) = super::kube_daemon_sets::prepare(resource, &mut object) {
        return refused;
    }
    if dry_run {
        state.finish(&key, &mut object, previous.as_ref(), resource);
        return json_response(success, object);
    }
    let owners = state.owners.entry(key.clone()).or_default();
    for path in changed {
        owners.insert(path, manager.to_string());
    }
    let stored = state.store(key.clone(), object, resource);
    after_write(state, resource, &key, stored, success)
}

/// What a controller the server stands in for does once an object was stored: a DaemonSet's
/// pods follow its spec. Answers with the object as stored then.
fn after_write(
    state: &mut State,
    resource: &ResourceType,
    key: &ObjectKey,
    stored: Value,
    success: StatusCode,
) -> Response {
    if resource.kind != "DaemonSet" {
        return json_response(success, stored);
    }
    state.reconcile_daemon_set(&key.2, &key.3);
    let now = state.objects.get(key).cloned().unwrap_or(stored);
    json_response(success, now)
}

#[allow(clippy::too_many_arguments)]
fn patch(
    state: &mut State,
    resource: &ResourceType,
    namespace: &str,
    name: &str,
    query: &BTreeMap<String, String>,
    content_type: &str,
    body: &[u8],
    dry_run: bool,
) -> Response {
    let key = object_key(resource, namespace, name);
    let previous = state.objects.get(&key).cloned();
    let manager = query.get("fieldManager").cloned();
    if content_type.starts_with("application/apply-patch") {
        let Some(manager) = manager else {
            return bad_request("fieldManager is required for apply requests".into());
        };
        let applied = match parse_body(content_type, body) {
            Ok(applied) => applied,
            Err(response) => return response,
        };
        if let Err(response) = check_apply(resource, &key, &applied) {
            return response;
        }
        let force = query.get("force").is_some_and(|value| value == "true");
        return server_side_apply(
            state, resource, key, previous, applied, &manager, force, dry_run,
        );
    }
    let Some(previous) = previous else {
        return not_found(resource, name);
    };
    let document = match parse_body("application/json", body) {
        Ok(document) => document,
        Err(response) => return response,
    };
    let mut patched = previous.clone();
    if content_type.starts_with("application/json-patch+json") {
        let operations: json_patch::Patch = match serde_json::from_value(document) {
            Ok(operations) => operations,
            Err(error) => return bad_request(format!("invalid JSON patch: {error}")),
        };
        if let Err(error) = json_patch::patch(&mut patched, &operations) {
            return status_error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                format!("the JSON patch could not be applied: {error}"),
                json!({}),
            );
        }
    } else if content_type.starts_with("application/merge-patch+json")
        || content_type.starts_with("application/strategic-merge-patch+json")
    {
        if let Some(expected) = document["metadata"]["resourceVersion"].as_str()
            && previous["metadata"]["resourceVersion"].as_str() != Some(expected)
        {
            return conflict(
                resource,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            );
        }
        json_patch::merge(&mut patched, &document);
        // The patched object is decoded as its kind, as kube-apiserver decodes it.
        patched = match decode_strictly(resource, query, patched) {
            Ok((decoded, _)) => decoded,
            Err(response) => return response,
        };
    } else {
        return status_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got `{content_type}`)"
            ),
            json!({}),
        );
    }
    let manager = manager.unwrap_or_else(|| "unknown".into());
    write(
        state,
        key,
        patched,
        Some(previous),
        resource,
        &manager,
        dry_run,
        StatusCode::OK,
    )
}

/// Server-side apply: a field another manager owns with a different value is a conflict unless
/// `force` is set (then ownership moves); the applied fields are merged into the object.
#[allow(clippy::too_many_arguments)]
fn server_side_apply(
    state: &mut State,
    resource: &ResourceType,
    key: ObjectKey,
    previous: Option<Value>,
    applied: Value,
    manager: &str,
    force: bool,
    dry_run: bool,
) -> Response {
    if applied["apiVersion"].as_str() != Some(resource.api_version().as_str())
        || applied["kind"].as_str() != Some(resource.kind)
    {
        return bad_request(format!(
            "apply patch must name apiVersion `{}` and kind `{}`",
            resource.api_version(),
            resource.kind
        ));
    }
    let applied_fields = field_values(&applied);
    let current = previous.as_ref().map(field_values).unwrap_or_default();
    let owners = state.owners.get(&key).cloned().unwrap_or_default();
    let conflicts: Vec<(String, String)> = applied_fields
        .iter()
        .filter_map(|(path, value)| {
            let owner = owners.get(path)?;
            (owner != manager && current.get(path) != Some(value))
                .then(|| (owner.clone(), path.clone()))
        })
        .collect();
    if !conflicts.is_empty() && !force {
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|(owner, path)| {
                json!({"type": "FieldManagerConflict", "message": format!("conflict with \"{owner}\""), "field": path})
            })
            .collect();
        let listed: Vec<String> = conflicts
            .iter()
            .map(|(owner, path)| format!("- conflict with \"{owner}\": {path}"))
            .collect();
        return status_error(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Apply failed with {} conflict{}: {}",
                conflicts.len(),
                if conflicts.len() == 1 { "" } else { "s" },
                listed.join("\n")
            ),
            json!({"name": key.3, "group": resource.group, "kind": resource.plural, "causes": causes}),
        );
    }
    let mut merged = previous.clone().unwrap_or_else(|| json!({}));
    deep_merge(&mut merged, &applied);
    if let Err(refused) = super::kube_daemon_sets::prepare(resource, &mut merged) {
        return refused;
    }
    if dry_run {
        state.finish(&key, &mut merged, previous.as_ref(), resource);
        return json_response(StatusCode::OK, merged);
    }
    let entry = state.owners.entry(key.clone()).or_default();
    for path in applied_fields.keys() {
        entry.insert(path.clone(), manager.to_string());
    }
    let status = if previous.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let stored = state.store(key.clone(), merged, resource);
    after_write(state, resource, &key, stored, status)
}

/// Objects merge key by key; anything else (arrays included) replaces.
fn deep_merge(target: &mut Value, source: &Value) {
    match (target, source) {
        (Value::Object(target), Value::Object(source)) => {
            for (key, value) in source {
                deep_merge(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (target, source) => *target = source.clone(),
    }
}

/// The leaf fields of an object by path (`.spec.template.spec.containers` — arrays are leaves), not
/// counting identity, server-set metadata and status.
fn field_values(object: &Value) -> BTreeMap<String, Value> {
    fn walk(prefix: String, value: &Value, out: &mut BTreeMap<String, Value>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (key, child) in map {
                    walk(format!("{prefix}.{key}"), child, out);
                }
            }
            other => {
                out.insert(prefix, other.clone());
            }
        }
    }
    const IGNORED: [&str; 10] = [
        ".apiVersion",
        ".kind",
        ".status",
        ".metadata.name",
        ".metadata.namespace",
        ".metadata.uid",
        ".metadata.resourceVersion",
        ".metadata.generation",
        ".metadata.creationTimestamp",
        ".metadata.managedFields",
    ];
    let mut out = BTreeMap::new();
    walk(String::new(), object, &mut out);
    out.retain(|path, _| {
        !IGNORED
            .iter()
            .any(|ignored| path == ignored || path.starts_with(&format!("{ignored}.")))
    });
    out
}

/// Whether labels match a selector of comma-separated `k=v`, `k==v`, `k!=v`, `k`, `!k`,
/// `k in (a,b)` and `k notin (a,b)` terms.
pub fn selector_matches(selector: &str, labels: &Value) -> bool {
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    split_terms(selector).iter().all(|term| {
        let term = term.trim();
        if term.is_empty() {
            return true;
        }
        if let Some((key, values)) = term.split_once(" notin ") {
            let values = set_values(values);
            return label(key.trim()).is_none_or(|value| !values.contains(value));
        }
        if let Some((key, values)) = term.split_once(" in ") {
            let values = set_values(values);
            return label(key.trim()).is_some_and(|value| values.contains(value));
        }
        if let Some((key, value)) = term.split_once("!=") {
            return label(key.trim()) != Some(value.trim());
        }
        if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
            return label(key.trim()) == Some(value.trim());
        }
        if let Some(key) = term.strip_prefix('!') {
            return label(key.trim()).is_none();
        }
        label(term).is_some()
    })
}

fn set_values(text: &str) -> BTreeSet<&str> {
    text.trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .collect()
}

/// Splits on commas outside parentheses.
fn split_terms(selector: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (index, character) in selector.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&selector[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// A list with `labelSelector`, `limit` and `continue` (the token is the key after which to go on).
fn list(
    state: &State,
    resource: &ResourceType,
    namespace: Option<&str>,
    query: &BTreeMap<String, String>,
) -> Response {
    let selector = query.get("labelSelector").cloned().unwrap_or_default();
    let limit: usize = query
        .get("limit")
        .and_then(|limit| limit.parse().ok())
        .filter(|limit| *limit > 0)
        .unwrap_or(usize::MAX);
    let after: Option<(String, String)> =
        match query.get("continue").filter(|token| !token.is_empty()) {
            Some(token) => match token.split_once('/') {
                Some((namespace, name)) => Some((namespace.to_string(), name.to_string())),
                None => return bad_request(format!("invalid continue token `{token}`")),
            },
            None => None,
        };
    let matching: Vec<(&ObjectKey, &Value)> = state
        .objects
        .iter()
        .filter(|(key, object)| {
            key.0 == resource.group
                && key.1 == resource.plural
                && namespace.is_none_or(|namespace| key.2 == namespace)
                && after
                    .as_ref()
                    .is_none_or(|(namespace, name)| (&key.2, &key.3) > (namespace, name))
                && selector_matches(&selector, &object["metadata"]["labels"])
        })
        .collect();
    let page: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|(_, object)| (*object).clone())
        .collect();
    let mut metadata = json!({"resourceVersion": state.revision.to_string()});
    if matching.len() > page.len()
        && let Some((key, _)) = matching.get(page.len() - 1)
    {
        metadata["continue"] = json!(format!("{}/{}", key.2, key.3));
        metadata["remainingItemCount"] = json!(matching.len() - page.len());
    }
    json_response(
        StatusCode::OK,
        json!({
            "apiVersion": resource.api_version(),
            "kind": format!("{}List", resource.kind),
            "metadata": metadata,
            "items": page,
        }),
    )
}
