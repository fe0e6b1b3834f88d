//! A small HTTP/1.1 server on loopback, one thread per connection, whose routes hold, stall,
//! hang up or answer, and which counts what it saw — the replayer's counterpart in these
//! tests (nginx is the server of the Python tests and benchmarks).
//!
//! - `/hold`: answers once `release()` is called;
//! - `/after/N`: answers once the server has received N requests in all (a server stall that
//!   only an open-loop client gets past);
//! - `/hang`: never answers; `/reset`: closes without answering; `/missing`: 404;
//! - anything else: 200 with `?bytes=N` bytes (default 100).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long a held response waits for its condition before it answers anyway (the test then
/// fails on what it checks, instead of hanging).
const HOLD_LIMIT: Duration = Duration::from_secs(20);

#[derive(Default)]
pub struct Seen {
    /// Connections that sent a request (the replayer's probe sends none).
    pub connections: usize,
    pub requests: usize,
    pub open: usize,
    pub max_open: usize,
    pub released: bool,
    pub paths: Vec<String>,
    pub hosts: Vec<String>,
}

#[derive(Clone)]
pub struct Server {
    pub url: String,
    state: Arc<(Mutex<Seen>, Condvar)>,
}

impl Server {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new((Mutex::new(Seen::default()), Condvar::new()));
        let s = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || serve(stream, &s));
            }
        });
        Self { url, state }
    }

    pub fn seen<R>(&self, read: impl FnOnce(&Seen) -> R) -> R {
        read(&self.state.0.lock().unwrap())
    }

    pub fn release(&self) {
        self.state.0.lock().unwrap().released = true;
        self.state.1.notify_all();
    }
}

fn serve(stream: TcpStream, state: &(Mutex<Seen>, Condvar)) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    let mut first = true;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split(' ').nth(1).unwrap_or("").to_owned();
        let (mut close, mut host) = (false, String::new());
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let lower = h.to_ascii_lowercase();
            if lower == "\r\n" {
                break;
            }
            close |= lower.starts_with("connection:") && lower.contains("close");
            if let Some(v) = lower.strip_prefix("host:") {
                host = v.trim().to_owned();
            }
        }
        let (lock, cvar) = state;
        {
            let mut seen = lock.lock().unwrap();
            seen.requests += 1;
            seen.connections += usize::from(std::mem::take(&mut first));
            seen.open += 1;
            seen.max_open = seen.max_open.max(seen.open);
            seen.paths.push(path.clone());
            seen.hosts.push(host);
            cvar.notify_all();
        }
        let wait = |ready: &dyn Fn(&Seen) -> bool| {
            let seen = lock.lock().unwrap();
            let _ = cvar
                .wait_timeout_while(seen, HOLD_LIMIT, |s| !ready(s))
                .unwrap();
        };
        let status = if path == "/hold" {
            wait(&|s| s.released);
            "200 OK"
        } else if let Some(n) = path.strip_prefix("/after/") {
            let n: usize = n.parse().unwrap();
            wait(&|s| s.requests >= n);
            "200 OK"
        } else if path == "/hang" {
            // Until the client gives up and closes.
            let _ = reader.read_line(&mut String::new());
            "000 none"
        } else if path == "/missing" {
            "404 Not Found"
        } else {
            "200 OK"
        };
        lock.lock().unwrap().open -= 1;
        if path == "/reset" || path == "/hang" {
            return;
        }
        let bytes: usize = path
            .split_once("?bytes=")
            .map_or(100, |(_, n)| n.parse().unwrap());
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {bytes}\r\n{}\r\n",
            if close { "Connection: close\r\n" } else { "" }
        );
        let body = vec![b'x'; bytes];
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&body).is_err() || close {
            return;
        }
    }
}
