//! The endpoints of one etcd cluster as one command uses them: a connection per endpoint, which
//! endpoint requests go to, what each failed endpoint did, and how a request is sent again.
//!
//! etcdctl's client (clientv3) keeps a gRPC connection per member and routes around members that
//! fail. netctl does the same in its own terms, because etcd-client's balanced channel neither
//! remembers failures (a dead member kept costing every request a failed dial) nor lets each
//! endpoint have its own TLS server name (an `https://[::1]:P` endpoint failed for want of one):
//!
//! - at connect, every endpoint is dialled and probed with one read at the same time; the first to
//!   answer carries the command's requests. The others finish in the background, so a hung member
//!   costs nothing unless it is the only one left;
//! - a member that fails (refused, timed out, TLS, not etcd, connection lost) is marked failed with
//!   how, and never used again in this command; requests move to the next member that answered;
//! - when etcd answers "not now" (leader changed, no leader, a proposal that timed out), the request
//!   waits a little and is sent again, for at most one request timeout;
//! - a request is sent again whatever it is: reads are idempotent, and every netctl write is a
//!   transaction guarded on the key's revision, so at most one copy of it can apply. [`Delivery`]
//!   tells the caller that an earlier copy may have applied, so it can tell its own write from
//!   someone else's (that check is the caller's, in `etcd/mod.rs`);
//! - when every member has failed, the error names each one and how it failed.
//!
//! What it does not do: follow membership changes, spread load, or come back to a failed member;
//! a netctl command is short, and the next command probes every endpoint afresh.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use etcd_client::{
    Certificate, Client, ConnectOptions, GetOptions, Identity, KvClient, StatusResponse, TlsOptions,
};
use tokio::sync::OnceCell;

use super::errors::{Classified, EndpointFailure, EndpointFailures, EtcdError, classify};
use super::{RESOURCE_ROOT, Timeouts};
use crate::config::{EtcdEndpoint, EtcdSettings, Scheme};
use crate::datastore::StoreError;
use crate::errors::error_chain;
use crate::output::Printer;

/// Where Debian-like systems keep the system CA bundle, used for `https` endpoints when no CA is configured.
pub(super) const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A large page of large resources can exceed gRPC's default 4 MiB message limit (G3).
const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The most times one request is sent while etcd answers "not now".
const MAX_BUSY_ATTEMPTS: u32 = 30;

/// After this many "no leader" answers in a row, requests move to another member.
const CUT_OFF_ANSWERS: u32 = 3;

/// The client of one endpoint: the etcd client (leases, watches) and its KV client with the
/// raised message limit.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    pub kv: KvClient,
}

/// Whether an earlier copy of a request may have been applied by etcd although its answer was lost
/// (a timeout or a connection lost after sending, or an etcd "request timed out").
#[derive(Debug, Default)]
pub struct Delivery {
    maybe_applied: bool,
}

impl Delivery {
    pub fn maybe_applied(&self) -> bool {
        self.maybe_applied
    }
}

struct Member {
    url: String,
    https: bool,
    options: ConnectOptions,
    connection: OnceCell<Connection>,
}

#[derive(Debug, Clone)]
enum Health {
    /// Not probed yet (its probe may still be running).
    Unknown,
    /// Answered a request.
    Healthy,
    /// Failed; not used again by this command.
    Failed(EndpointFailure),
}

struct State {
    /// The member requests go to.
    current: usize,
    health: Vec<Health>,
}

/// The members of one cluster, with their connections and health.
pub struct Pool {
    members: Vec<Member>,
    state: Mutex<State>,
    timeouts: Timeouts,
    /// How a member is dialled (without a TLS server name), for members found in the member list.
    base: ConnectOptions,
    tls: Option<TlsOptions>,
    /// Where the pool says which endpoints it uses and how others failed (debug detail).
    printer: Printer,
}

impl Pool {
    /// Dials and probes every endpoint at once and returns as soon as one answers. Fails when none
    /// does (naming each endpoint and how it failed) or at once when an answer is final (wrong
    /// credentials, no permission to read `/calico/`).
    pub async fn connect(
        endpoints: &[EtcdEndpoint],
        settings: &EtcdSettings,
        timeouts: Timeouts,
        printer: Printer,
    ) -> Result<Arc<Pool>, StoreError> {
        let tls = match endpoints
            .iter()
            .any(|endpoint| endpoint.scheme == Scheme::Https)
        {
            true => Some(tls_options(settings)?),
            false => None,
        };
        let mut base = ConnectOptions::new()
            .with_connect_timeout(timeouts.connect)
            .with_timeout(timeouts.request)
            .with_keep_alive(Duration::from_secs(30), Duration::from_secs(10))
            // A member cut off from the leader answers "no leader" at once instead of holding the
            // request until etcd's own timeout; the request then goes elsewhere.
            .with_require_leader(true);
        if let Some(credentials) = &settings.credentials {
            // Tokens expire (`--auth-token-ttl`, 300 s by default); without refresh a long upgrade would
            // fail half-way with "invalid auth token" (G5).
            base = base
                .with_user(credentials.username.clone(), credentials.password.expose())
                .with_auto_token_refresh(true);
        }
        let dial = (base.clone(), tls.clone());
        let members: Vec<Member> = endpoints
            .iter()
            .map(|endpoint| {
                let mut options = base.clone();
                if let (Scheme::Https, Some(tls)) = (endpoint.scheme, &tls) {
                    // The server name is the host as written, IPv6 without brackets: tonic would
                    // otherwise take `[::1]` from the URL, which is no valid name (issue 14).
                    options = options.with_tls(tls.clone().domain_name(endpoint.host.clone()));
                }
                Member {
                    url: endpoint.url(),
                    https: endpoint.scheme == Scheme::Https,
                    options,
                    connection: OnceCell::new(),
                }
            })
            .collect();
        let count = members.len();
        let pool = Arc::new(Pool {
            state: Mutex::new(State {
                current: 0,
                health: vec![Health::Unknown; count],
            }),
            members,
            timeouts,
            base: dial.0,
            tls: dial.1,
            printer,
        });

        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        for index in 0..count {
            let (pool, sender) = (pool.clone(), sender.clone());
            tokio::spawn(async move {
                let outcome = pool.probe(index).await;
                let _ = sender.send((index, outcome));
            });
        }
        drop(sender);
        let mut busy = None;
        while let Some((index, outcome)) = receiver.recv().await {
            match outcome {
                Ok(()) => {
                    pool.state().current = index;
                    pool.printer.debug(format!(
                        "using etcd endpoint `{}` (the first of {count} to answer)",
                        pool.members[index].url
                    ));
                    return Ok(pool);
                }
                Err(Classified::Final(error)) => return Err(error),
                Err(Classified::Busy(message)) => {
                    busy.get_or_insert((index, message));
                }
                Err(Classified::Endpoint(_)) => {}
            }
        }
        // Nobody answered cleanly; a member that answered "not now" is still worth its requests,
        // which wait for the cluster like any other.
        if let Some((index, message)) = busy {
            pool.printer.debug(format!(
                "using etcd endpoint `{}`, which answered `{message}`",
                pool.members[index].url
            ));
            pool.state().current = index;
            return Ok(pool);
        }
        Err(pool.exhausted().await)
    }

    /// Asks the member serving clients at `url` (any member of the cluster, configured or not) for
    /// its status on a connection of its own, within the connect and request time limits. The
    /// error says what went wrong in words for a message.
    pub async fn status_at(&self, url: &str) -> Result<StatusResponse, String> {
        let endpoint = EtcdEndpoint::parse(url).map_err(|reason| format!("`{url}`: {reason}"))?;
        let mut options = self.base.clone();
        match (endpoint.scheme, &self.tls) {
            (Scheme::Https, Some(tls)) => {
                options = options.with_tls(tls.clone().domain_name(endpoint.host.clone()));
            }
            (Scheme::Https, None) => {
                return Err("it serves TLS and no TLS settings are configured".to_string());
            }
            (Scheme::Http, _) => {}
        }
        let connect = Client::connect([url], Some(options));
        let mut client = match tokio::time::timeout(self.timeouts.connect, connect).await {
            Ok(Ok(client)) => client,
            Ok(Err(error)) => {
                return Err(format!("cannot connect: {}", error_chain(&error)));
            }
            Err(_) => {
                return Err(format!(
                    "no connection within {}",
                    humantime::format_duration(self.timeouts.connect)
                ));
            }
        };
        let silent = format!(
            "no answer within {}",
            humantime::format_duration(self.timeouts.request)
        );
        match tokio::time::timeout(self.timeouts.request, client.status()).await {
            Ok(Ok(status)) => Ok(status),
            // The client's own request timeout (the same limit) fired first.
            Ok(Err(error)) if error_chain(&error).contains("Timeout expired") => Err(silent),
            Ok(Err(error)) => Err(error_chain(&error)),
            Err(_) => Err(silent),
        }
    }

    /// The time limits requests are sent with.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// Every endpoint URL, comma-separated, for messages.
    pub fn endpoints(&self) -> String {
        self.members
            .iter()
            .map(|member| member.url.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The endpoint requests go to now.
    pub fn current(&self) -> String {
        self.members[self.state().current].url.clone()
    }

    /// Sends a request to the current member until it is answered, moving to the next member when
    /// one fails and waiting while etcd answers "not now". `delivery` records whether a copy may
    /// have applied although its answer was lost.
    pub async fn run<T, F, Fut>(
        &self,
        operation: &str,
        delivery: &mut Delivery,
        mut call: F,
    ) -> Result<T, StoreError>
    where
        F: FnMut(Connection) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let mut busy_since: Option<Instant> = None;
        let mut attempts: u32 = 0;
        let mut cut_off_answers: u32 = 0;
        loop {
            let Some(index) = self.choose() else {
                return Err(self.exhausted().await);
            };
            attempts += 1;
            let member = &self.members[index];
            // What the client library said, for the debug log.
            let mut said = String::new();
            let failure = match self.connection(index).await {
                // Dialling failed: nothing was sent.
                Err(failure) => failure,
                Ok(connection) => {
                    match tokio::time::timeout(self.timeouts.request, call(connection)).await {
                        Ok(Ok(value)) => {
                            self.mark(index, Health::Healthy);
                            return Ok(value);
                        }
                        Ok(Err(error)) => {
                            said = format!(" ({})", error_chain(&error));
                            let failure = classify(error, operation, member.https);
                            if may_have_applied(&failure) {
                                delivery.maybe_applied = true;
                            }
                            failure
                        }
                        Err(_) => {
                            delivery.maybe_applied = true;
                            Classified::Endpoint(EndpointFailure::TimedOut(self.timeouts.request))
                        }
                    }
                }
            };
            match failure {
                Classified::Final(error) => return Err(error),
                Classified::Endpoint(failure) => {
                    let failure = with_limit(failure, self.timeouts.request);
                    self.printer.debug(format!(
                        "etcd {operation}: endpoint `{}` {failure}; trying another{said}",
                        member.url
                    ));
                    self.mark(index, Health::Failed(failure));
                }
                Classified::Busy(message) => {
                    let since = *busy_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= self.timeouts.request || attempts >= MAX_BUSY_ATTEMPTS {
                        return Err(StoreError::Unavailable(Box::new(EtcdError::Busy {
                            operation: operation.to_string(),
                            attempts,
                            seconds: since.elapsed().as_secs().max(1),
                            answer: message,
                            failed: self.failures(),
                        })));
                    }
                    // A member briefly without a leader (an election, a leadership transfer) is
                    // normal; one that stays so may be cut off from the others, which may serve.
                    cut_off_answers = match member_is_cut_off(&message) {
                        true => cut_off_answers + 1,
                        false => 0,
                    };
                    if cut_off_answers >= CUT_OFF_ANSWERS {
                        cut_off_answers = 0;
                        self.rotate(index);
                    }
                    let pause = backoff(attempts);
                    self.printer.debug(format!(
                        "etcd {operation} at `{}`: `{message}`; retrying in {}",
                        member.url,
                        humantime::format_duration(pause)
                    ));
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind, still usable.
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn mark(&self, index: usize, health: Health) {
        let mut state = self.state();
        // A failure is final for this command, even if a late probe answers.
        if !matches!(state.health[index], Health::Failed(_)) {
            state.health[index] = health;
        }
    }

    /// The member to send to: the current one unless it failed, else the next that answered,
    /// else the next not yet known to have failed.
    fn choose(&self) -> Option<usize> {
        let mut state = self.state();
        if !matches!(state.health[state.current], Health::Failed(_)) {
            return Some(state.current);
        }
        let next = next_member(&state);
        if let Some(index) = next {
            state.current = index;
        }
        next
    }

    /// Moves requests off a member that answers but cannot serve (it has no leader), if another
    /// member may.
    fn rotate(&self, index: usize) {
        let mut state = self.state();
        if state.current == index
            && let Some(next) = next_member(&state)
        {
            state.current = next;
        }
    }

    /// The error once every member has failed: each one and how. A member that timed out is asked
    /// for its status first (served without the leader): one that answers it has no leader is
    /// running, and the cluster has lost quorum, which is what the user must hear.
    async fn exhausted(&self) -> StoreError {
        let timed_out: Vec<usize> = {
            let state = self.state();
            (0..self.members.len())
                .filter(|&index| {
                    matches!(
                        state.health[index],
                        Health::Failed(EndpointFailure::TimedOut(_))
                    )
                })
                .collect()
        };
        let leaderless = futures_util::future::join_all(
            timed_out.into_iter().map(|index| self.leaderless(index)),
        )
        .await;
        {
            let mut state = self.state();
            for index in leaderless.into_iter().flatten() {
                state.health[index] = Health::Failed(EndpointFailure::Leaderless);
            }
        }
        StoreError::Unavailable(Box::new(EtcdError::Endpoints(self.failures())))
    }

    /// `Some(index)` when member `index` answers a status request and has no leader.
    async fn leaderless(&self, index: usize) -> Option<usize> {
        let connection = self.members[index].connection.get()?.clone();
        let mut maintenance = connection.client.maintenance_client();
        let limit = self.timeouts.request.min(Duration::from_secs(1));
        match tokio::time::timeout(limit, maintenance.status()).await {
            Ok(Ok(status)) if status.leader() == 0 => Some(index),
            // Asked to require a leader, a member without one says so instead of answering.
            Ok(Err(error)) => {
                match classify(error, "a status request", self.members[index].https) {
                    Classified::Busy(message) if member_is_cut_off(&message) => Some(index),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The members that failed so far, each with how.
    fn failures(&self) -> EndpointFailures {
        let state = self.state();
        EndpointFailures(
            self.members
                .iter()
                .zip(&state.health)
                .filter_map(|(member, health)| match health {
                    Health::Failed(failure) => Some((member.url.clone(), failure.clone())),
                    _ => None,
                })
                .collect(),
        )
    }

    /// The connection of one member, dialled on first use (with credentials, that includes
    /// authenticating).
    async fn connection(&self, index: usize) -> Result<Connection, Classified> {
        let member = &self.members[index];
        member
            .connection
            .get_or_try_init(|| async {
                let connect = Client::connect([member.url.as_str()], Some(member.options.clone()));
                match tokio::time::timeout(self.timeouts.connect, connect).await {
                    Ok(Ok(client)) => {
                        let kv = client
                            .kv_client()
                            .max_decoding_message_size(MAX_MESSAGE_BYTES);
                        Ok(Connection { client, kv })
                    }
                    Ok(Err(error)) => Err(match classify(error, "connect", member.https) {
                        Classified::Endpoint(failure) => {
                            Classified::Endpoint(with_limit(failure, self.timeouts.connect))
                        }
                        other => other,
                    }),
                    Err(_) => Err(Classified::Endpoint(EndpointFailure::TimedOut(
                        self.timeouts.connect,
                    ))),
                }
            })
            .await
            .cloned()
    }

    /// Dials one member and reads one key (keys only): proves the address, TLS, credentials and
    /// read permission on `/calico/`. Records what it found.
    async fn probe(&self, index: usize) -> Result<(), Classified> {
        let https = self.members[index].https;
        let outcome = match self.connection(index).await {
            Err(failure) => Err(failure),
            Ok(connection) => {
                let mut kv = connection.kv;
                let probe = format!("{RESOURCE_ROOT}clusterinformations/default");
                let read = kv.get(probe, Some(GetOptions::new().with_keys_only()));
                match tokio::time::timeout(self.timeouts.request, read).await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(error)) => Err(classify(error, "a read of `/calico/`", https)),
                    Err(_) => Err(Classified::Endpoint(EndpointFailure::TimedOut(
                        self.timeouts.request,
                    ))),
                }
            }
        };
        // A plain endpoint that hangs up on the first request is no etcd: most likely a TLS one
        // (etcd closes a connection that does not start with a TLS handshake).
        let outcome = match outcome {
            Err(Classified::Endpoint(EndpointFailure::Disconnected(_))) if !https => {
                Err(Classified::Endpoint(EndpointFailure::NotEtcd(
                    "it hung up on the first request; a TLS endpoint needs `https://`".into(),
                )))
            }
            other => other,
        };
        match &outcome {
            Ok(()) => self.mark(index, Health::Healthy),
            Err(Classified::Endpoint(failure)) => {
                let failure = with_limit(failure.clone(), self.timeouts.request);
                self.printer.debug(format!(
                    "etcd endpoint `{}` {failure}",
                    self.members[index].url
                ));
                self.mark(index, Health::Failed(failure));
            }
            // It answers; whether it can serve is for the requests to find out.
            Err(Classified::Busy(_) | Classified::Final(_)) => {}
        }
        outcome
    }
}

/// Whether a request that failed this way may still have been applied: it was sent and its answer
/// lost, or etcd answered "not now" (its "request timed out" may follow an applied proposal), or
/// the failure is not understood. An answer that refuses the request (credentials, permission)
/// says it was not applied.
fn may_have_applied(failure: &Classified) -> bool {
    match failure {
        Classified::Endpoint(failure) => !failure.before_sending(),
        Classified::Busy(_) => true,
        Classified::Final(StoreError::PermissionDenied { .. } | StoreError::Unauthenticated(_)) => {
            false
        }
        Classified::Final(_) => true,
    }
}

/// After the current member: the next one that answered, else the next one not known to have failed.
fn next_member(state: &State) -> Option<usize> {
    let count = state.health.len();
    let after = |wanted: fn(&Health) -> bool| {
        (1..=count)
            .map(|offset| (state.current + offset) % count)
            .find(|&index| wanted(&state.health[index]))
    };
    after(|health| matches!(health, Health::Healthy))
        .or_else(|| after(|health| matches!(health, Health::Unknown)))
}

/// A timeout reported from below the caller's own timer carries no limit; give it the caller's.
fn with_limit(failure: EndpointFailure, limit: Duration) -> EndpointFailure {
    match failure {
        EndpointFailure::TimedOut(Duration::ZERO) => EndpointFailure::TimedOut(limit),
        other => other,
    }
}

/// etcd's answers that concern the member, not the cluster: another member may serve the request.
fn member_is_cut_off(message: &str) -> bool {
    ["no leader", "not capable", "server stopped"]
        .iter()
        .any(|needle| message.contains(needle))
}

/// 50 ms, 100 ms, 200 ms, ... at most 1 s between sends while etcd answers "not now".
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(50u64 << attempt.saturating_sub(1).min(5)).min(Duration::from_secs(1))
}

pub(super) fn tls_options(settings: &EtcdSettings) -> Result<TlsOptions, StoreError> {
    let mut tls = TlsOptions::new();
    let ca = match settings.tls.as_ref().and_then(|tls| tls.ca.as_ref()) {
        Some(ca) => ca.bytes.clone(),
        None => std::fs::read(SYSTEM_CA_BUNDLE).map_err(|source| {
            StoreError::Misconfigured(Box::new(EtcdError::NoCaBundle {
                path: SYSTEM_CA_BUNDLE,
                source,
            }))
        })?,
    };
    // Every certificate in the bundle becomes a trust root (several CAs are allowed: `README.md`,
    // "Configuration").
    tls = tls.ca_certificate(Certificate::from_pem(ca));
    if let Some(identity) = settings.tls.as_ref().and_then(|tls| tls.identity.as_ref()) {
        tls = tls.identity(Identity::from_pem(
            identity.certificate.bytes.clone(),
            identity.key.bytes.clone(),
        ));
    }
    Ok(tls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(current: usize, health: Vec<Health>) -> State {
        State { current, health }
    }

    #[test]
    fn failed_members_are_skipped_and_answering_ones_preferred() {
        let failed = || Health::Failed(EndpointFailure::Refused);
        let picked = next_member(&state(0, vec![failed(), Health::Unknown, Health::Healthy]));
        assert_eq!(
            picked,
            Some(2),
            "a member that answered before one not yet probed"
        );
        let picked = next_member(&state(0, vec![failed(), Health::Unknown, failed()]));
        assert_eq!(picked, Some(1));
        assert_eq!(next_member(&state(1, vec![failed(), failed()])), None);
    }

    #[test]
    fn backoff_grows_to_a_second() {
        assert_eq!(backoff(1), Duration::from_millis(50));
        assert_eq!(backoff(2), Duration::from_millis(100));
        assert_eq!(backoff(5), Duration::from_millis(800));
        assert_eq!(backoff(6), Duration::from_secs(1));
        assert_eq!(backoff(40), Duration::from_secs(1));
    }
}
