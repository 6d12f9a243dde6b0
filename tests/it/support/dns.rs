//! A real DNS server (dnsmasq) on `127.0.0.1:<free port>` serving SRV records for etcd discovery,
//! and a tiny UDP DNS client to check what it serves.
//!
//! netctl is pointed at it with `NETCTL_RESOLVER=127.0.0.1:<port>` ([`DnsServer::resolver_env`]).
//! dnsmasq runs with no upstream, no `/etc/hosts` and no config file, so it answers only the
//! records given here: SRV records, plus an A record `127.0.0.1` for every SRV target that has no
//! explicit [`DnsServerBuilder::host`] entry.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::process::{self, OwnedChild};

const INSTALL_HINT: &str = "apt-get install dnsmasq-base";

/// The environment variable through which netctl is told which DNS server to use.
pub const RESOLVER_ENV: &str = "NETCTL_RESOLVER";

const START_TIMEOUT: Duration = Duration::from_secs(10);
const START_ATTEMPTS: usize = 5;

/// One SRV record: `name` (e.g. `_etcd-client._tcp.example.test`) → `target:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrvRecord {
    pub name: String,
    pub target: String,
    pub port: u16,
    pub priority: u16,
    pub weight: u16,
}

impl SrvRecord {
    /// A record with priority 0 and weight 0.
    pub fn new(name: &str, target: &str, port: u16) -> SrvRecord {
        SrvRecord {
            name: name.trim_end_matches('.').to_owned(),
            target: target.trim_end_matches('.').to_owned(),
            port,
            priority: 0,
            weight: 0,
        }
    }

    /// `_etcd-client._tcp.<domain>` (plain etcd endpoints).
    pub fn etcd_client(domain: &str, target: &str, port: u16) -> SrvRecord {
        SrvRecord::new(&format!("_etcd-client._tcp.{domain}"), target, port)
    }

    /// `_etcd-client-ssl._tcp.<domain>` (TLS etcd endpoints).
    pub fn etcd_client_ssl(domain: &str, target: &str, port: u16) -> SrvRecord {
        SrvRecord::new(&format!("_etcd-client-ssl._tcp.{domain}"), target, port)
    }

    pub fn priority(mut self, priority: u16) -> SrvRecord {
        self.priority = priority;
        self
    }

    pub fn weight(mut self, weight: u16) -> SrvRecord {
        self.weight = weight;
        self
    }
}

/// Configures a [`DnsServer`].
#[derive(Debug, Default)]
pub struct DnsServerBuilder {
    srv: Vec<SrvRecord>,
    hosts: Vec<(String, Vec<IpAddr>)>,
}

impl DnsServerBuilder {
    pub fn srv(mut self, record: SrvRecord) -> Self {
        self.srv.push(record);
        self
    }

    /// Adds `_etcd-client._tcp.<domain>` → `target:port`.
    pub fn etcd_client(
        self,
        domain: &str,
        target: &str,
        port: u16,
        priority: u16,
        weight: u16,
    ) -> Self {
        self.srv(
            SrvRecord::etcd_client(domain, target, port)
                .priority(priority)
                .weight(weight),
        )
    }

    /// Adds `_etcd-client-ssl._tcp.<domain>` → `target:port`.
    pub fn etcd_client_ssl(
        self,
        domain: &str,
        target: &str,
        port: u16,
        priority: u16,
        weight: u16,
    ) -> Self {
        self.srv(
            SrvRecord::etcd_client_ssl(domain, target, port)
                .priority(priority)
                .weight(weight),
        )
    }

    /// A and/or AAAA records for `name` (instead of the default `127.0.0.1` for SRV targets).
    pub fn host(mut self, name: &str, addresses: &[IpAddr]) -> Self {
        self.hosts
            .push((name.trim_end_matches('.').to_owned(), addresses.to_vec()));
        self
    }

    /// Starts dnsmasq and waits until it answers; panics with its log otherwise.
    pub fn start(self) -> DnsServer {
        let program = process::find_program("dnsmasq", INSTALL_HINT);
        let mut hosts = self.hosts.clone();
        for record in &self.srv {
            if !hosts.iter().any(|(name, _)| name == &record.target) {
                hosts.push((record.target.clone(), vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]));
            }
        }
        for _ in 0..START_ATTEMPTS {
            let dir = process::server_dir("dns");
            let port = process::free_udp_and_tcp_port();
            let log = dir.path().join("dnsmasq.log");
            // An empty extra hosts file: it puts the directory on dnsmasq's command line, which is
            // how `reap` recognises a leaked dnsmasq.
            let extra_hosts = dir.path().join("hosts");
            std::fs::write(&extra_hosts, "").expect("write empty hosts file");
            let mut command = Command::new(&program);
            command.env_clear().args([
                "--no-daemon".to_owned(),
                "--no-resolv".to_owned(),
                "--no-hosts".to_owned(),
                "--conf-file=/dev/null".to_owned(),
                "--pid-file=".to_owned(),
                "--log-facility=-".to_owned(),
                "--log-queries".to_owned(),
                "--bind-interfaces".to_owned(),
                "--listen-address=127.0.0.1".to_owned(),
                format!("--port={port}"),
                format!("--addn-hosts={}", extra_hosts.display()),
            ]);
            for record in &self.srv {
                command.arg(format!(
                    "--srv-host={},{},{},{},{}",
                    record.name, record.target, record.port, record.priority, record.weight
                ));
            }
            for (name, addresses) in &hosts {
                let addresses: Vec<String> = addresses.iter().map(IpAddr::to_string).collect();
                command.arg(format!("--host-record={name},{}", addresses.join(",")));
            }
            let child = OwnedChild::spawn(command, dir.path(), &log);
            let mut server = DnsServer {
                child,
                port,
                records: self.srv.clone(),
                log,
                dir,
            };
            match server.wait_answering() {
                Ok(()) => return server,
                Err(true) => continue,
                Err(false) => panic!(
                    "dnsmasq did not answer on 127.0.0.1:{port} within {START_TIMEOUT:?}; log:\n{}",
                    server.log_tail()
                ),
            }
        }
        panic!("dnsmasq lost a port race {START_ATTEMPTS} times in a row");
    }
}

/// A running dnsmasq; killed when dropped.
pub struct DnsServer {
    // First, so it is killed before the directory is removed.
    child: OwnedChild,
    port: u16,
    records: Vec<SrvRecord>,
    log: PathBuf,
    dir: TempDir,
}

impl std::fmt::Debug for DnsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsServer")
            .field("address", &self.address())
            .field("records", &self.records)
            .finish_non_exhaustive()
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.child.kill();
        if std::thread::panicking() {
            eprintln!("--- dnsmasq log tail ---\n{}", self.log_tail());
        }
        process::release_ports(&[self.port]);
    }
}

impl DnsServer {
    pub fn builder() -> DnsServerBuilder {
        DnsServerBuilder::default()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `("NETCTL_RESOLVER", "127.0.0.1:<port>")`, ready for `Netctl::env`.
    pub fn resolver_env(&self) -> (&'static str, String) {
        (RESOLVER_ENV, self.address().to_string())
    }

    pub fn records(&self) -> &[SrvRecord] {
        &self.records
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last 40 lines of dnsmasq's log (queries are logged).
    pub fn log_tail(&self) -> String {
        process::log_tail(&self.log, process::LOG_TAIL_LINES)
    }

    /// The SRV records served for `name`, in the server's order.
    pub fn query_srv(&self, name: &str) -> Vec<SrvRecord> {
        match query(self.address(), name, TYPE_SRV, Duration::from_secs(2)) {
            Ok(answers) => answers
                .into_iter()
                .filter_map(|answer| match answer {
                    Answer::Srv(record) => Some(record),
                    Answer::A(..) => None,
                })
                .collect(),
            Err(error) => panic!(
                "SRV query for `{name}` failed: {error}\n{}",
                self.log_tail()
            ),
        }
    }

    /// The A records served for `name`.
    pub fn query_a(&self, name: &str) -> Vec<Ipv4Addr> {
        match query(self.address(), name, TYPE_A, Duration::from_secs(2)) {
            Ok(answers) => answers
                .into_iter()
                .filter_map(|answer| match answer {
                    Answer::A(_, address) => Some(address),
                    Answer::Srv(..) => None,
                })
                .collect(),
            Err(error) => panic!("A query for `{name}` failed: {error}\n{}", self.log_tail()),
        }
    }

    /// `Err(true)`: lost the port race, try again; `Err(false)`: failed otherwise.
    fn wait_answering(&mut self) -> Result<(), bool> {
        let deadline = Instant::now() + START_TIMEOUT;
        let probe_name = self.records.first().map_or_else(
            || "ready.netctl-test.invalid".to_owned(),
            |record| record.name.clone(),
        );
        loop {
            if self.child.exited().is_some() {
                let tail = self.log_tail();
                return Err(tail.to_lowercase().contains("address already in use"));
            }
            if query(
                self.address(),
                &probe_name,
                TYPE_SRV,
                Duration::from_millis(200),
            )
            .is_ok()
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(false);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A minimal DNS client (RFC 1035): one question, answers of type A and SRV, name compression.

const TYPE_A: u16 = 1;
const TYPE_SRV: u16 = 33;
const CLASS_IN: u16 = 1;

#[derive(Debug)]
enum Answer {
    A(String, Ipv4Addr),
    Srv(SrvRecord),
}

/// Sends one query over UDP and returns the answers; `Err` on timeout, a malformed reply or an
/// error response code other than NXDOMAIN/REFUSED (which count as an empty answer).
fn query(
    server: SocketAddr,
    name: &str,
    record_type: u16,
    timeout: Duration,
) -> Result<Vec<Answer>, String> {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|error| error.to_string())?;
    socket
        .set_read_timeout(Some(timeout))
        .map_err(|error| error.to_string())?;
    static NEXT_ID: AtomicU16 = AtomicU16::new(1);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    // Connected, so a closed port fails at once (ICMP port unreachable) instead of timing out.
    socket.connect(server).map_err(|error| error.to_string())?;
    socket
        .send(&encode_query(id, name, record_type))
        .map_err(|error| error.to_string())?;
    let mut buffer = [0u8; 4096];
    loop {
        let length = socket
            .recv(&mut buffer)
            .map_err(|error| error.to_string())?;
        let packet = &buffer[..length];
        if packet.len() >= 2 && u16::from_be_bytes([packet[0], packet[1]]) == id {
            return decode_response(packet).ok_or_else(|| "malformed DNS response".to_owned());
        }
    }
}

fn encode_query(id: u16, name: &str, record_type: u16) -> Vec<u8> {
    let mut packet = Vec::with_capacity(32 + name.len());
    packet.extend_from_slice(&id.to_be_bytes());
    packet.extend_from_slice(&0x0100u16.to_be_bytes()); // standard query, recursion desired
    packet.extend_from_slice(&1u16.to_be_bytes()); // one question
    packet.extend_from_slice(&[0; 6]); // no answer, authority or additional records
    for label in name.trim_end_matches('.').split('.') {
        packet.push(label.len() as u8);
        packet.extend_from_slice(label.as_bytes());
    }
    packet.push(0);
    packet.extend_from_slice(&record_type.to_be_bytes());
    packet.extend_from_slice(&CLASS_IN.to_be_bytes());
    packet
}

fn decode_response(packet: &[u8]) -> Option<Vec<Answer>> {
    let u16_at = |offset: usize| -> Option<u16> {
        Some(u16::from_be_bytes([
            *packet.get(offset)?,
            *packet.get(offset + 1)?,
        ]))
    };
    let flags = u16_at(2)?;
    let rcode = flags & 0x000f;
    if rcode == 3 || rcode == 5 {
        return Some(Vec::new()); // NXDOMAIN or REFUSED
    }
    if rcode != 0 {
        return None;
    }
    let questions = u16_at(4)?;
    let answers = u16_at(6)?;
    let mut offset = 12;
    for _ in 0..questions {
        offset = read_name(packet, offset)?.1 + 4;
    }
    let mut result = Vec::new();
    for _ in 0..answers {
        let (owner, next) = read_name(packet, offset)?;
        let record_type = u16_at(next)?;
        let length = usize::from(u16_at(next + 8)?);
        let data = next + 10;
        let rdata = packet.get(data..data + length)?;
        match record_type {
            TYPE_A if length == 4 => {
                result.push(Answer::A(
                    owner,
                    Ipv4Addr::new(rdata[0], rdata[1], rdata[2], rdata[3]),
                ));
            }
            TYPE_SRV if length >= 7 => result.push(Answer::Srv(SrvRecord {
                name: owner,
                priority: u16_at(data)?,
                weight: u16_at(data + 2)?,
                port: u16_at(data + 4)?,
                target: read_name(packet, data + 6)?.0,
            })),
            _ => {}
        }
        offset = data + length;
    }
    Some(result)
}

/// Reads a possibly compressed name at `offset`; returns it and the offset just after it.
fn read_name(packet: &[u8], mut offset: usize) -> Option<(String, usize)> {
    let mut labels = Vec::new();
    let mut end = None;
    for _ in 0..128 {
        let length = *packet.get(offset)?;
        match length {
            0 => {
                return Some((labels.join("."), end.unwrap_or(offset + 1)));
            }
            length if length & 0xc0 == 0xc0 => {
                let pointer =
                    usize::from(u16::from_be_bytes([length, *packet.get(offset + 1)?]) & 0x3fff);
                end.get_or_insert(offset + 2);
                offset = pointer;
            }
            length => {
                let start = offset + 1;
                let label = packet.get(start..start + usize::from(length))?;
                labels.push(String::from_utf8_lossy(label).into_owned());
                offset = start + usize::from(length);
            }
        }
    }
    None // a compression loop
}
