//! A stand-in BIRD daemon on a Unix socket, speaking BIRD's control-socket protocol: on connect it
//! greets with `0001 BIRD <version> ready.`, then reads one command per line and answers with
//! numbered reply lines (`2002-` heading, `1002-` first row, rows starting with a space, `0000`
//! at the end; `9001` for a command it does not know, as BIRD answers a syntax error).
//!
//! What it answers `show protocols` with is the test's [`Reply`]: a whole reply, one that stops
//! half way and closes the socket, or none at all (a hung daemon: the connection stays open and
//! silent). Each command received is recorded. The listener thread and the socket file go when the
//! value is dropped.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The greeting of calico/node's BIRD (its fork of BIRD 1.6).
pub const GREETING: &str = "0001 BIRD v0.3.3+birdv1.6.8 ready.";

/// How the stand-in answers `show protocols`.
#[derive(Debug, Clone)]
pub enum Reply {
    /// These lines (each sent with a line feed), then the connection stays open for more commands.
    Lines(Vec<String>),
    /// These lines, then the socket is closed (a daemon that died half way).
    Partial(Vec<String>),
    /// Nothing: the daemon accepted and greeted, then hangs.
    Silent,
}

impl Reply {
    /// A whole reply from text, one line each.
    pub fn text(text: &str) -> Reply {
        Reply::Lines(text.lines().map(str::to_string).collect())
    }
}

pub struct BirdStandIn {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    commands: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl BirdStandIn {
    /// Listens at `path` (its directory is created).
    pub fn start(path: &Path, reply: Reply) -> BirdStandIn {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the socket's directory");
        }
        let listener = UnixListener::bind(path).expect("bind the stand-in BIRD socket");
        let stop = Arc::new(AtomicBool::new(false));
        let commands = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let stop = stop.clone();
            let commands = commands.clone();
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let reply = reply.clone();
                    let commands = commands.clone();
                    let stop = stop.clone();
                    held.push(std::thread::spawn(move || {
                        serve(stream, reply, commands, stop)
                    }));
                }
            })
        };
        BirdStandIn {
            path: path.to_path_buf(),
            stop,
            commands,
            thread: Some(thread),
        }
    }

    /// The commands received, in order.
    pub fn commands(&self) -> Vec<String> {
        self.commands.lock().unwrap().clone()
    }
}

fn serve(
    stream: UnixStream,
    reply: Reply,
    commands: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
) {
    let mut writer = stream.try_clone().expect("clone the stand-in's stream");
    if writeln!(writer, "{GREETING}").is_err() {
        return;
    }
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let command = line.trim_end().to_string();
        commands.lock().unwrap().push(command.clone());
        if command != "show protocols" {
            let _ = writeln!(writer, "9001 syntax error, unexpected CF_SYM_UNDEFINED");
            continue;
        }
        match &reply {
            Reply::Lines(lines) => {
                for line in lines {
                    let _ = writeln!(writer, "{line}");
                }
            }
            Reply::Partial(lines) => {
                for line in lines {
                    let _ = writeln!(writer, "{line}");
                }
                let _ = writer.shutdown(std::net::Shutdown::Both);
                return;
            }
            Reply::Silent => {
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                return;
            }
        }
    }
}

impl Drop for BirdStandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = UnixStream::connect(&self.path);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}
