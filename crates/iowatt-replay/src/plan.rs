//! What to replay: the requests in order with their due times, and how.

use std::time::Duration;

use crate::ReplayError;

/// The requests in trace order. Row `i` is due `due_ns[i]` after the replay starts (the
/// trace's offset already divided by the speed-up); due times never decrease.
#[derive(Debug, Default)]
pub struct Plan {
    pub due_ns: Vec<u64>,
    /// Index into `methods` per request.
    pub method: Vec<u8>,
    pub methods: Vec<String>,
    /// Request targets (path and query, as in the log) as one buffer with `n + 1` offsets.
    pub target_offsets: Vec<usize>,
    pub target_data: Vec<u8>,
    /// The client address's number per request (requests of one client may share a kept-alive
    /// connection).
    pub client: Vec<u32>,
    /// Index into `hosts` per request: the log's Host header ("" where a line has none); empty
    /// when the log has none at all.
    pub host: Vec<u32>,
    pub hosts: Vec<String>,
}

impl Plan {
    pub fn len(&self) -> usize {
        self.due_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.due_ns.is_empty()
    }

    pub fn target(&self, i: usize) -> &[u8] {
        &self.target_data[self.target_offsets[i]..self.target_offsets[i + 1]]
    }

    pub fn method(&self, i: usize) -> &str {
        &self.methods[self.method[i] as usize]
    }

    /// Checks that every column has one row per request, every index is in its table and the
    /// schedule never goes back.
    pub fn check(&self) -> Result<(), ReplayError> {
        let n = self.len();
        let bad = |why: String| Err(ReplayError::Plan(why));
        if self.method.len() != n || self.client.len() != n {
            return bad(format!(
                "{n} due times but {} methods and {} clients",
                self.method.len(),
                self.client.len()
            ));
        }
        if !self.host.is_empty() && self.host.len() != n {
            return bad(format!("{n} due times but {} hosts", self.host.len()));
        }
        if self.target_offsets.len() != n + 1
            || self.target_offsets.windows(2).any(|w| w[0] > w[1])
            || self.target_offsets.last().copied().unwrap_or(0) > self.target_data.len()
        {
            return bad("the targets' offsets do not fit the requests".into());
        }
        if let Some(m) = self
            .method
            .iter()
            .find(|&&m| m as usize >= self.methods.len())
        {
            return bad(format!("method number {m} is not in the table"));
        }
        if let Some(h) = self.host.iter().find(|&&h| h as usize >= self.hosts.len()) {
            return bad(format!("host number {h} is not in the table"));
        }
        if let Some(i) = self.due_ns.windows(2).position(|w| w[0] > w[1]) {
            return bad(format!("request {} is due before request {i}", i + 1));
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    /// `http[s]://host[:port][/prefix]`.
    pub target: String,
    /// How an https target's certificate is checked.
    pub tls: crate::TlsOptions,
    /// The Host header of every request, over the plan's; the plan's, else the target's
    /// authority, if None.
    pub host: Option<String>,
    /// Most requests in flight at once (each holds a connection); None: no cap beyond the
    /// file-descriptor limit.
    pub max_conns: Option<usize>,
    /// Reuse a connection for consecutive requests of one client.
    pub keep_alive: bool,
    /// From the request's send to its last byte.
    pub timeout: Duration,
    /// Runtime threads (1: a single-threaded runtime, as wrk -t1).
    pub threads: usize,
    /// Time between the start call and the first due time, for the connections' set-up.
    pub lead: Duration,
    /// Requests `[from, to)` form the measured window (warm-up and cool-down cut out).
    pub window: (usize, usize),
}

impl Default for Config {
    fn default() -> Self {
        Self {
            target: String::new(),
            tls: crate::TlsOptions::default(),
            host: None,
            max_conns: None,
            keep_alive: false,
            timeout: Duration::from_secs(30),
            threads: 1,
            lead: Duration::from_millis(20),
            window: (0, usize::MAX),
        }
    }
}
