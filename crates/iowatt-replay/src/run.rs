//! The replay: probe the target, then issue every request at its due time on an absolute
//! schedule, independently of completions, and wait for the last to end.

use std::sync::Arc;
use std::time::Duration;

use hyper::header::HeaderValue;
use hyper::Method;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::client::{exchange, request_uri, Ask, Dial, Pool, Reached};
use crate::records::{latencies, Slots};
use crate::timer::Timer;
use crate::tls;
use crate::{Config, ErrorKind, Histograms, Plan, Progress, Records, ReplayError, Target};

/// The probe connection's limit.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// A plan checked against its configuration, ready to run.
pub struct Replay {
    plan: Plan,
    config: Config,
    target: Target,
    dial: Dial,
    methods: Vec<Method>,
    hosts: Vec<HeaderValue>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Complete,
    Cancelled,
}

#[derive(Debug)]
pub struct Output {
    pub records: Records,
    pub histograms: Histograms,
    /// CLOCK_MONOTONIC ns of the schedule's zero (every record's times are after it).
    pub t0_ns: u64,
    pub status: Status,
    /// From t0 to the last request's end.
    pub elapsed_ns: u64,
}

impl Replay {
    pub fn new(plan: Plan, config: Config) -> Result<Self, ReplayError> {
        plan.check()?;
        if config.threads == 0 {
            return Err(ReplayError::Plan(
                "a replay needs at least one thread".into(),
            ));
        }
        if config.max_conns == Some(0) {
            return Err(ReplayError::Plan("max_conns must be at least 1".into()));
        }
        let target = Target::parse(&config.target)?;
        let tls = match &target.tls_host {
            None => None,
            Some(host) => Some((tls::connector(&config.tls)?, tls::server_name(host)?)),
        };
        let dial = Dial {
            addr: target.addr,
            tls,
        };
        let methods = plan
            .methods
            .iter()
            .map(|m| {
                Method::from_bytes(m.as_bytes())
                    .map_err(|_| ReplayError::Plan(format!("{m:?} is not an HTTP method")))
            })
            .collect::<Result<_, _>>()?;
        let header = |h: &str| {
            HeaderValue::from_str(h)
                .map_err(|_| ReplayError::Plan(format!("{h:?} cannot be a Host header")))
        };
        // The given Host, else the log's per request, else (and where a line has none) the
        // target's authority.
        let default = config.host.as_deref().unwrap_or(&target.authority);
        let hosts = if config.host.is_some() || plan.host.is_empty() {
            vec![header(default)?]
        } else {
            plan.hosts
                .iter()
                .map(|h| header(if h.is_empty() { default } else { h }))
                .collect::<Result<_, _>>()?
        };
        Ok(Self {
            plan,
            config,
            target,
            dial,
            methods,
            hosts,
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    fn host(&self, i: usize) -> &HeaderValue {
        match self.hosts.len() {
            1 => &self.hosts[0],
            _ => &self.hosts[self.plan.host[i] as usize],
        }
    }
}

struct Shared {
    replay: Arc<Replay>,
    slots: Slots,
    progress: Progress,
    pool: Option<Pool>,
    t0: u64,
}

/// Runs the replay to its end (or its cancel) on a runtime of its own.
pub fn run(replay: &Arc<Replay>, progress: &Progress) -> Result<Output, ReplayError> {
    let threads = replay.config.threads;
    let mut builder = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(threads);
        b
    };
    let rt = builder
        .enable_all()
        .build()
        .map_err(|source| ReplayError::Io {
            op: "starting the replay's runtime",
            source,
        })?;
    let out = rt.block_on(replay_all(replay.clone(), progress.clone()));
    // Dropping the runtime ends every task, so every record is final before it is read.
    drop(rt);
    let (shared, status, end) = out?;
    let records = shared.slots.collect(&replay.plan.due_ns);
    let histograms = Histograms::of(&records, replay.config.window);
    Ok(Output {
        records,
        histograms,
        t0_ns: shared.t0,
        status,
        elapsed_ns: end.saturating_sub(shared.t0),
    })
}

async fn replay_all(
    replay: Arc<Replay>,
    progress: Progress,
) -> Result<(Arc<Shared>, Status, u64), ReplayError> {
    probe(&replay.target).await?;
    let timer = Timer::new().map_err(|source| ReplayError::Io {
        op: "creating the schedule's timer",
        source,
    })?;
    let config = &replay.config;
    let cap = config.max_conns.map(|n| Arc::new(Semaphore::new(n)));
    let pool = config
        .keep_alive
        .then(|| Pool::new(config.max_conns.unwrap_or(usize::MAX)));
    let shared = Arc::new(Shared {
        slots: Slots::new(replay.plan.len()),
        progress: progress.clone(),
        pool,
        t0: iowatt_metrics::now_ns() + config.lead.as_nanos() as u64,
        replay: replay.clone(),
    });
    let mut tasks = JoinSet::new();
    let mut status = Status::Complete;
    for (i, &due) in replay.plan.due_ns.iter().enumerate() {
        if !wait_until(&timer, shared.t0 + due, &progress).await? {
            status = Status::Cancelled;
            break;
        }
        let permit = match &cap {
            None => None,
            Some(sem) => match acquire(sem, &progress).await {
                Some(p) => Some(p),
                None => {
                    status = Status::Cancelled;
                    break;
                }
            },
        };
        tasks.spawn(one(shared.clone(), i, permit));
        while tasks.try_join_next().is_some() {}
    }
    tokio::select! {
        () = async { while tasks.join_next().await.is_some() {} } => {}
        () = progress.until_cancelled() => status = Status::Cancelled,
    }
    // Requests still in flight at a cancel are given up (their records say `cancelled`).
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    Ok((shared, status, iowatt_metrics::now_ns()))
}

/// Sleeps until `deadline`; false if the replay was cancelled meanwhile.
async fn wait_until(
    timer: &Timer,
    deadline: u64,
    progress: &Progress,
) -> Result<bool, ReplayError> {
    if progress.cancelled() {
        return Ok(false);
    }
    if iowatt_metrics::now_ns() >= deadline {
        return Ok(true);
    }
    let slept = tokio::select! {
        slept = timer.sleep_until(deadline) => slept,
        () = progress.until_cancelled() => return Ok(false),
    };
    slept.map(|()| true).map_err(|source| ReplayError::Io {
        op: "waiting for a request's due time",
        source,
    })
}

/// A connection slot, waited for in order; None if the replay was cancelled meanwhile.
async fn acquire(sem: &Arc<Semaphore>, progress: &Progress) -> Option<OwnedSemaphorePermit> {
    if let Ok(permit) = sem.clone().try_acquire_owned() {
        return Some(permit);
    }
    tokio::select! {
        permit = sem.clone().acquire_owned() => permit.ok(),
        () = progress.until_cancelled() => None,
    }
}

async fn probe(target: &Target) -> Result<(), ReplayError> {
    let unreachable = |source| ReplayError::Unreachable {
        addr: target.addr.to_string(),
        source,
    };
    match tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(target.addr)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(unreachable(e)),
        Err(_) => Err(unreachable(std::io::ErrorKind::TimedOut.into())),
    }
}

/// One request, from its send to its end; the permit (a connection slot) is held throughout.
async fn one(shared: Arc<Shared>, i: usize, _permit: Option<OwnedSemaphorePermit>) {
    let replay = &shared.replay;
    let (t0, plan) = (shared.t0 as i64, &replay.plan);
    let sent = iowatt_metrics::now_ns();
    let rel = |t: u64| if t == 0 { -1 } else { t as i64 - t0 };
    shared.slots.sent(i, rel(sent));
    shared.progress.sent(rel(sent) - plan.due_ns[i] as i64);
    let mut reached = Reached::default();
    let error = match request_uri(&replay.target.prefix, plan.target(i)) {
        None => ErrorKind::Protocol,
        Some(uri) => {
            let ask = Ask {
                method: &replay.methods[plan.method[i] as usize],
                uri,
                host: replay.host(i),
                client: plan.client[i],
            };
            let exchange = exchange(&replay.dial, shared.pool.as_ref(), ask, &mut reached);
            match tokio::time::timeout(replay.config.timeout, exchange).await {
                Ok(Ok(())) => ErrorKind::None,
                Ok(Err(kind)) => kind,
                Err(_) => ErrorKind::Timeout,
            }
        }
    };
    let done = iowatt_metrics::now_ns();
    let (first_byte, done) = (rel(reached.first_byte), rel(done));
    shared.slots.ended(
        i,
        [rel(reached.connected), first_byte, done],
        reached.status,
        reached.bytes,
        error,
    );
    // From the same numbers as the request's record, so a scrape agrees with requests.parquet.
    let took = match error {
        ErrorKind::None => Ok(latencies(
            plan.due_ns[i] as i64,
            rel(sent),
            first_byte,
            done,
        )),
        kind => Err(kind.name()),
    };
    shared.progress.ended(reached.bytes, took);
}
