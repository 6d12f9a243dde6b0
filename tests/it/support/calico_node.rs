//! A stand-in for calico-node's status reporter (`node/pkg/status/` upstream): it watches the
//! CalicoNodeStatus objects of the datastore and, for each whose `spec.node` is one of its nodes,
//! writes `status` as calico-node does — the BIRD daemons, the BGP sessions and their counts, the
//! routes, and `lastUpdated` — after a delay (the syncer delivering the object and BIRD being
//! asked).
//!
//! As the real reporter: the first report comes once the object is seen; when that report fails
//! ([`Behaviour::first_report_fails`]) the next comes `updatePeriodSeconds` later; the write is an
//! update guarded by the revision it read (so an object deleted meanwhile is not created again);
//! and objects of other nodes are left alone. On etcd it uses a real etcd watch and a guarded
//! transaction (the `etcd-client` crate); on the test Kubernetes API server, which has no watches,
//! it lists the custom resources every 50 ms and writes with a `PUT` carrying the
//! `resourceVersion`, over plain HTTP, so the server's CRD schema checks what it writes.
//!
//! The thread stops when the value is dropped; objects it saw are recorded ([`CalicoNodeStandIn::seen`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The etcd prefix of CalicoNodeStatus objects.
pub const ETCD_PREFIX: &str = "/calico/resources/v3/projectcalico.org/caliconodestatuses/";
/// The custom resources' path on the Kubernetes API (`crd.projectcalico.org/v1`).
pub const KUBE_PATH: &str = "/apis/crd.projectcalico.org/v1/caliconodestatuses";
/// Their path under v3.32's native CRDs (`projectcalico.org/v3`), which calico-node reads there.
pub const KUBE_V3_PATH: &str = "/apis/projectcalico.org/v3/caliconodestatuses";

/// How the stand-in behaves.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// The nodes it reports for (each node's calico-node reports only its own).
    pub nodes: Vec<String>,
    /// From seeing an object to writing its status.
    pub delay: Duration,
    /// The first report fails (BIRD did not answer); the next comes a period later.
    pub first_report_fails: bool,
    /// Peers whose session is down (`Active`) instead of established: a node that lost them.
    pub lost_peers: Vec<String>,
}

impl Behaviour {
    pub fn for_nodes(nodes: &[&str], delay: Duration) -> Behaviour {
        Behaviour {
            nodes: nodes.iter().map(|node| node.to_string()).collect(),
            delay,
            first_report_fails: false,
            lost_peers: Vec::new(),
        }
    }
}

pub struct CalicoNodeStandIn {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeSet<String>>>,
    reported: Arc<Mutex<BTreeMap<String, Instant>>>,
    thread: Option<JoinHandle<()>>,
}

impl CalicoNodeStandIn {
    /// Watches etcd at `endpoints`.
    pub fn on_etcd(endpoints: Vec<String>, behaviour: Behaviour) -> CalicoNodeStandIn {
        CalicoNodeStandIn::spawn(move |stop, seen, reported| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the stand-in");
            runtime.block_on(watch_etcd(endpoints, behaviour, stop, seen, reported));
        })
    }

    /// Lists the custom resources of the test API server at `url` (`http://127.0.0.1:PORT`).
    pub fn on_kube(url: String, behaviour: Behaviour) -> CalicoNodeStandIn {
        CalicoNodeStandIn::on_kube_path(url, KUBE_PATH, behaviour)
    }

    /// Lists the custom resources at `path` ([`KUBE_PATH`] or [`KUBE_V3_PATH`]).
    pub fn on_kube_path(
        url: String,
        path: &'static str,
        behaviour: Behaviour,
    ) -> CalicoNodeStandIn {
        CalicoNodeStandIn::spawn(move |stop, seen, reported| {
            poll_kube(&url, path, &behaviour, &stop, &seen, &reported)
        })
    }

    fn spawn(
        body: impl FnOnce(
            Arc<AtomicBool>,
            Arc<Mutex<BTreeSet<String>>>,
            Arc<Mutex<BTreeMap<String, Instant>>>,
        ) + Send
        + 'static,
    ) -> CalicoNodeStandIn {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let reported = Arc::new(Mutex::new(BTreeMap::new()));
        let thread = {
            let (stop, seen, reported) = (stop.clone(), seen.clone(), reported.clone());
            std::thread::spawn(move || body(stop, seen, reported))
        };
        CalicoNodeStandIn {
            stop,
            seen,
            reported,
            thread: Some(thread),
        }
    }

    /// The names of the objects it has seen for its nodes.
    pub fn seen(&self) -> BTreeSet<String> {
        self.seen.lock().unwrap().clone()
    }

    /// The objects it wrote a status into, and when.
    pub fn reported(&self) -> BTreeMap<String, Instant> {
        self.reported.lock().unwrap().clone()
    }
}

impl Drop for CalicoNodeStandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The status calico-node v3.32 writes for `node` (the shape of `node/pkg/status/populators/`):
/// BIRD for IPv4 ready, BIRD for IPv6 not running, two of three IPv4 sessions up, two routes.
pub fn report(node: &str) -> Value {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let router = match node {
        "node-2" => "10.0.0.2",
        _ => "10.0.0.1",
    };
    json!({
        "lastUpdated": now,
        "agent": {
            "birdV4": {
                "state": "Ready",
                "version": "v0.3.3+birdv1.6.8",
                "routerID": router,
                "lastBootTime": "2026-03-01 09:58:36",
                "lastReconfigurationTime": "2026-03-01 09:58:36"
            },
            "birdV6": {"state": "NotReady"}
        },
        "bgp": {
            "numberEstablishedV4": 2,
            "numberEstablishedV6": 0,
            "numberNotEstablishedV4": 1,
            "numberNotEstablishedV6": 0,
            "peersV4": [
                {"peerIP": "10.0.0.3", "since": "09:58:37", "state": "Established", "type": "NodeMesh"},
                {"peerIP": "10.0.0.4", "since": "09:58:37", "state": "Established", "type": "NodeMesh"},
                {"peerIP": "192.0.2.1", "since": "09:58:40", "state": "Active", "type": "GlobalPeer"}
            ]
        },
        "routes": {
            "routesV4": [
                {"destination": "0.0.0.0/0", "gateway": "10.0.0.254", "interface": "eth0",
                 "learnedFrom": {"sourceType": "Kernel"}, "type": "FIB"},
                {"destination": "192.168.82.0/26", "gateway": "10.0.0.3", "interface": "eth0",
                 "learnedFrom": {"peerIP": "10.0.0.3", "sourceType": "NodeMesh"}, "type": "FIB"}
            ]
        }
    })
}

/// [`report`] with the sessions to `lost` peers down (`Active`), the counts following.
pub fn report_losing(node: &str, lost: &[String]) -> Value {
    let mut status = report(node);
    let bgp = &mut status["bgp"];
    for peer in bgp["peersV4"].as_array_mut().into_iter().flatten() {
        if lost.iter().any(|lost| peer["peerIP"] == lost.as_str()) && peer["state"] == "Established"
        {
            peer["state"] = json!("Active");
        }
    }
    let peers = bgp["peersV4"].as_array().cloned().unwrap_or_default();
    let up = peers
        .iter()
        .filter(|peer| peer["state"] == "Established")
        .count();
    bgp["numberEstablishedV4"] = json!(up);
    bgp["numberNotEstablishedV4"] = json!(peers.len() - up);
    status
}

/// When to write an object's first status, from when it was seen.
fn due(behaviour: &Behaviour, object: &Value, seen_at: Instant) -> Instant {
    let period = object["spec"]["updatePeriodSeconds"].as_u64().unwrap_or(0);
    if behaviour.first_report_fails {
        seen_at + behaviour.delay + Duration::from_secs(period)
    } else {
        seen_at + behaviour.delay
    }
}

fn is_ours(behaviour: &Behaviour, object: &Value) -> bool {
    object["spec"]["node"]
        .as_str()
        .is_some_and(|node| behaviour.nodes.iter().any(|ours| ours == node))
}

async fn watch_etcd(
    endpoints: Vec<String>,
    behaviour: Behaviour,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeSet<String>>>,
    reported: Arc<Mutex<BTreeMap<String, Instant>>>,
) {
    use etcd_client::{Client, Compare, CompareOp, EventType, Txn, TxnOp, WatchOptions};
    let mut client = Client::connect(endpoints, None)
        .await
        .expect("the stand-in connects to etcd");
    let mut stream = client
        .watch(ETCD_PREFIX, Some(WatchOptions::new().with_prefix()))
        .await
        .expect("the stand-in watches etcd");
    // Objects to report: key → (when, revision read, the object).
    let mut pending: BTreeMap<String, (Instant, i64, Value)> = BTreeMap::new();
    while !stop.load(Ordering::SeqCst) {
        if let Ok(message) = tokio::time::timeout(Duration::from_millis(20), stream.message()).await
        {
            let Some(response) = message.expect("the watch goes on") else {
                break;
            };
            for event in response.events() {
                let Some(kv) = event.kv() else { continue };
                let key = kv.key_str().unwrap_or("").to_string();
                if event.event_type() == EventType::Delete {
                    pending.remove(&key);
                    continue;
                }
                let Ok(object) = serde_json::from_slice::<Value>(kv.value()) else {
                    continue;
                };
                if !is_ours(&behaviour, &object) || object["status"]["lastUpdated"].is_string() {
                    continue;
                }
                let name = key.trim_start_matches(ETCD_PREFIX).to_string();
                let first = seen.lock().unwrap().insert(name);
                let when = match pending.get(&key) {
                    Some((when, _, _)) if !first => *when,
                    _ => due(&behaviour, &object, Instant::now()),
                };
                pending.insert(key, (when, kv.mod_revision(), object));
            }
        }
        let now = Instant::now();
        let ready: Vec<String> = pending
            .iter()
            .filter(|(_, (when, _, _))| *when <= now)
            .map(|(key, _)| key.clone())
            .collect();
        for key in ready {
            let (_, revision, mut object) = pending.remove(&key).unwrap();
            object["status"] = report_losing(
                object["spec"]["node"].as_str().unwrap_or(""),
                &behaviour.lost_peers,
            );
            let txn = Txn::new()
                .when([Compare::mod_revision(
                    key.as_str(),
                    CompareOp::Equal,
                    revision,
                )])
                .and_then([TxnOp::put(key.as_str(), object.to_string(), None)]);
            if let Ok(response) = client.txn(txn).await {
                if response.succeeded() {
                    let name = key.trim_start_matches(ETCD_PREFIX).to_string();
                    reported.lock().unwrap().insert(name, Instant::now());
                }
            }
        }
    }
}

fn poll_kube(
    url: &str,
    collection: &str,
    behaviour: &Behaviour,
    stop: &AtomicBool,
    seen: &Mutex<BTreeSet<String>>,
    reported: &Mutex<BTreeMap<String, Instant>>,
) {
    let address = url.trim_start_matches("http://").to_string();
    let mut first_seen: BTreeMap<String, Instant> = BTreeMap::new();
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        let Ok((200, body)) = http(&address, "GET", collection, None) else {
            continue;
        };
        let Ok(list) = serde_json::from_str::<Value>(&body) else {
            continue;
        };
        for object in list["items"].as_array().into_iter().flatten() {
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if !is_ours(behaviour, object) || object["status"]["lastUpdated"].is_string() {
                continue;
            }
            seen.lock().unwrap().insert(name.clone());
            let seen_at = *first_seen.entry(name.clone()).or_insert_with(Instant::now);
            if Instant::now() < due(behaviour, object, seen_at) {
                continue;
            }
            let mut updated = object.clone();
            updated["status"] = report_losing(
                object["spec"]["node"].as_str().unwrap_or(""),
                &behaviour.lost_peers,
            );
            let path = format!("{collection}/{name}");
            if let Ok((200, _)) = http(&address, "PUT", &path, Some(&updated.to_string())) {
                reported.lock().unwrap().insert(name, Instant::now());
            }
        }
    }
}

/// One HTTP/1.1 request over a fresh connection: the status code and the body.
fn http(
    address: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let chunked = head.lines().any(|line| {
        line.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    Ok((
        code,
        if chunked {
            unchunk(rest)
        } else {
            rest.to_string()
        },
    ))
}

fn unchunk(mut text: &str) -> String {
    let mut body = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        body.push_str(&rest[..size]);
        text = rest[size..].trim_start_matches("\r\n");
    }
    body
}
