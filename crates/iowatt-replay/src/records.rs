//! One row per request, written by the request's own task and read once the replay has ended.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

use iowatt_metrics::LatencyHistogram;

/// How a request ended without a response. A response of any status is `None` here (its
/// status says the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ErrorKind {
    None = 0,
    /// The connection was refused.
    Refused = 1,
    /// The connection could not be made for another reason.
    Connect = 2,
    /// The server closed or reset the connection before the response ended.
    Reset = 3,
    /// No complete response within the timeout.
    Timeout = 4,
    /// A response that is not HTTP, or another I/O error.
    Protocol = 5,
    /// Sent, then stopped by a cancel before it ended.
    Cancelled = 6,
    /// Never sent: the replay was cancelled before its due time.
    NotSent = 7,
    /// The TLS handshake failed (a certificate not trusted, no common protocol).
    Tls = 8,
}

impl ErrorKind {
    pub const NAMES: [&'static str; 9] = [
        "",
        "refused",
        "connect",
        "reset",
        "timeout",
        "protocol",
        "cancelled",
        "not_sent",
        "tls",
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Times are ns after the replay's start (its `t0`), -1 when the moment never came.
#[derive(Debug)]
struct Slot {
    sent: AtomicI64,
    connected: AtomicI64,
    first_byte: AtomicI64,
    done: AtomicI64,
    bytes: AtomicU64,
    /// status << 8 | error kind
    outcome: AtomicU32,
}

impl Default for Slot {
    fn default() -> Self {
        Self {
            sent: AtomicI64::new(-1),
            connected: AtomicI64::new(-1),
            first_byte: AtomicI64::new(-1),
            done: AtomicI64::new(-1),
            bytes: AtomicU64::new(0),
            outcome: AtomicU32::new(ErrorKind::NotSent as u32),
        }
    }
}

pub(crate) struct Slots(Box<[Slot]>);

impl Slots {
    pub fn new(n: usize) -> Self {
        Self((0..n).map(|_| Slot::default()).collect())
    }

    pub fn sent(&self, i: usize, t: i64) {
        self.0[i].sent.store(t, Relaxed);
        self.0[i]
            .outcome
            .store(ErrorKind::Cancelled as u32, Relaxed);
    }

    /// `[connected, first_byte, done]`: -1 where the moment never came (a kept-alive
    /// connection was not made for this request).
    pub fn ended(&self, i: usize, times: [i64; 3], status: u16, bytes: u64, error: ErrorKind) {
        let s = &self.0[i];
        let [connected, first_byte, done] = times;
        s.connected.store(connected, Relaxed);
        s.first_byte.store(first_byte, Relaxed);
        s.done.store(done, Relaxed);
        s.bytes.store(bytes, Relaxed);
        s.outcome
            .store(u32::from(status) << 8 | error as u32, Relaxed);
    }

    /// The columns, once every task has ended (the runtime's shutdown orders their writes
    /// before this read).
    pub fn collect(&self, due_ns: &[u64]) -> Records {
        let n = self.0.len();
        let mut r = Records {
            due: due_ns.iter().map(|&d| d as i64).collect(),
            sent: Vec::with_capacity(n),
            connected: Vec::with_capacity(n),
            first_byte: Vec::with_capacity(n),
            done: Vec::with_capacity(n),
            bytes: Vec::with_capacity(n),
            status: Vec::with_capacity(n),
            error: Vec::with_capacity(n),
        };
        for s in self.0.iter() {
            r.sent.push(s.sent.load(Relaxed));
            r.connected.push(s.connected.load(Relaxed));
            r.first_byte.push(s.first_byte.load(Relaxed));
            r.done.push(s.done.load(Relaxed));
            r.bytes.push(s.bytes.load(Relaxed));
            let o = s.outcome.load(Relaxed);
            r.status.push((o >> 8) as u16);
            r.error.push((o & 0xff) as u8);
        }
        r
    }
}

/// Every request's times (ns after t0; -1 for never), bytes, status (0: no response) and
/// [`ErrorKind`] code, in trace order. `done` is when the request ended: its response's last
/// byte, or its error (a completion only when the error is `None`).
#[derive(Debug, Default, Clone)]
pub struct Records {
    pub due: Vec<i64>,
    pub sent: Vec<i64>,
    pub connected: Vec<i64>,
    pub first_byte: Vec<i64>,
    pub done: Vec<i64>,
    pub bytes: Vec<u64>,
    pub status: Vec<u16>,
    pub error: Vec<u8>,
}

/// An answered request's latencies (ns), in the order of [`Histograms::NAMES`]: time to first
/// byte and completion from its due time, then both from its send. The window's histograms and
/// the live tally both take them from here, so a scrape agrees with requests.parquet.
pub(crate) fn latencies(due: i64, sent: i64, first_byte: i64, done: i64) -> [u64; 4] {
    let span = |a: i64, b: i64| (b - a).max(0) as u64;
    [
        span(due, first_byte),
        span(due, done),
        span(sent, first_byte),
        span(sent, done),
    ]
}

/// Latency histograms of the measured window's answered requests: time to first byte and
/// completion, each from the due time (what a user waited, the headline) and from the send
/// (the server's service time).
#[derive(Debug, Default)]
pub struct Histograms {
    pub ttfb: LatencyHistogram,
    pub completion: LatencyHistogram,
    pub ttfb_sent: LatencyHistogram,
    pub completion_sent: LatencyHistogram,
}

impl Histograms {
    pub const NAMES: [&'static str; 4] = ["ttfb", "completion", "ttfb_sent", "completion_sent"];

    pub fn of(records: &Records, window: (usize, usize)) -> Self {
        let mut h = Self::default();
        let (from, to) = (
            window.0.min(records.due.len()),
            window.1.min(records.due.len()),
        );
        for i in from..to.max(from) {
            if records.error[i] != ErrorKind::None as u8 || records.done[i] < 0 {
                continue;
            }
            let [ttfb, completion, ttfb_sent, completion_sent] = latencies(
                records.due[i],
                records.sent[i],
                records.first_byte[i],
                records.done[i],
            );
            h.ttfb.record(ttfb);
            h.completion.record(completion);
            h.ttfb_sent.record(ttfb_sent);
            h.completion_sent.record(completion_sent);
        }
        h
    }

    pub fn all(&self) -> [&LatencyHistogram; 4] {
        [
            &self.ttfb,
            &self.completion,
            &self.ttfb_sent,
            &self.completion_sent,
        ]
    }
}
