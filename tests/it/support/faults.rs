//! Endpoints that fail in the ways a datastore client meets: a port nobody listens on (refused), a
//! listener that accepts connections and never answers (a hung server or a black-holing
//! firewall), a server that answers with something that is not etcd, and a proxy that can lose
//! every answer after passing the request on (a write applied whose answer never arrives).
//!
//! Real etcd members that hang or die are [`super::etcd`]'s business (`pause`, `kill`); this module
//! only fakes what is not an etcd process at all. Every socket is on loopback and closed when its
//! value is dropped. The one exception is [`another_writer_before_the_first_batch`]: another client
//! of a real etcd, cued by the test datastore standing in front of it.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use netctl::datastore::testing::{Cue, Operation, TestStore};

use super::{EtcdServer, Etcdctl};

/// A loopback port with nothing listening on it: connecting is refused at once.
///
/// The port was bound and released, so another process could take it in between; tests that need
/// the refusal use it within moments, and a foreign listener would make them fail, not pass.
pub fn refused_endpoint() -> String {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// A TCP listener that accepts every connection and never sends a byte. Accepted sockets are held
/// open until the listener is dropped, so a client waits for its own timeout.
pub struct SilentListener(Server);

impl SilentListener {
    pub fn start() -> SilentListener {
        SilentListener(Server::start(|_stream| {}))
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.0.port)
    }

    /// `https://127.0.0.1:<port>`, for lists that use TLS.
    pub fn https_endpoint(&self) -> String {
        format!("https://127.0.0.1:{}", self.0.port)
    }
}

/// A TCP server that answers every connection with an HTTP/1.1 error page: a web server or proxy
/// where etcd was expected.
pub struct NotEtcdServer(Server);

impl NotEtcdServer {
    pub fn start() -> NotEtcdServer {
        NotEtcdServer(Server::start(|mut stream| {
            let mut request = [0u8; 1024];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = stream.read(&mut request);
            let _ = stream.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot etcd\r\n",
            );
        }))
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.0.port)
    }
}

/// A TCP proxy in front of one server. Once [`ReplyDroppingProxy::drop_replies`] is called, requests
/// still reach the server but every byte it sends back is thrown away: the client sees a timeout
/// for a request the server has carried out.
pub struct ReplyDroppingProxy {
    server: Server,
    dropping: Arc<AtomicBool>,
}

impl ReplyDroppingProxy {
    /// A proxy to `127.0.0.1:target_port`.
    pub fn start(target_port: u16) -> ReplyDroppingProxy {
        let dropping = Arc::new(AtomicBool::new(false));
        let flag = dropping.clone();
        let server = Server::start(move |client| {
            let Ok(upstream) = TcpStream::connect((Ipv4Addr::LOCALHOST, target_port)) else {
                return;
            };
            let (Ok(mut client_reader), Ok(mut upstream_writer)) =
                (client.try_clone(), upstream.try_clone())
            else {
                return;
            };
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut client_reader, &mut upstream_writer);
            });
            let (mut upstream_reader, mut client_writer) = (upstream, client);
            let flag = flag.clone();
            std::thread::spawn(move || {
                let mut buffer = [0u8; 16 * 1024];
                while let Ok(read) = upstream_reader.read(&mut buffer) {
                    if read == 0 {
                        break;
                    }
                    if !flag.load(Ordering::SeqCst)
                        && client_writer.write_all(&buffer[..read]).is_err()
                    {
                        break;
                    }
                }
            });
        });
        ReplyDroppingProxy { server, dropping }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.port)
    }

    /// From now on, pass requests on and throw the answers away.
    pub fn drop_replies(&self) {
        self.dropping.store(true, Ordering::SeqCst);
    }
}

/// A loopback TCP server whose thread hands each accepted connection to a handler and keeps the
/// socket open until the server is dropped.
struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(handle: impl Fn(TcpStream) + Send + 'static) -> Server {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    if let Ok(copy) = stream.try_clone() {
                        held.push(copy);
                    }
                    handle(stream);
                }
            }
        });
        Server {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    /// Sets the stop flag, then wakes the blocking `accept` with one last connection.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(
            &(Ipv4Addr::LOCALHOST, self.port).into(),
            Duration::from_secs(1),
        );
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Another client of `etcd` changes the value stored at `key` with `change` (through `etcdctl`)
/// just before `store`, standing in front of that etcd, sends its first batch: a real conflict
/// inside a batch, on cue.
pub fn another_writer_before_the_first_batch(
    store: &TestStore,
    etcd: &EtcdServer,
    key: &str,
    change: impl Fn(&mut serde_json::Value) + Send + Sync + 'static,
) {
    let etcdctl = Etcdctl::new(vec![etcd.endpoint()]);
    let key = key.to_string();
    store.on(Operation::WriteBatch, move |call, _| {
        if call.number == 1 {
            let stored = etcdctl.get(&key).expect("the resource to change is stored");
            let mut value: serde_json::Value = serde_json::from_str(&stored).unwrap();
            change(&mut value);
            etcdctl.put(&key, value.to_string());
        }
        Cue::pass()
    });
}
