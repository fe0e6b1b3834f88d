//! Running a workload: validate, prepare files (or lay out filesets), start every thread
//! instance on one clock, collect intervals while they run, and assemble the output. FileIO
//! workloads run on the psync/io_uring workers; workloads with filesets run on the FileMacro
//! interpreter. Both share this frame.

use std::collections::BTreeMap;
use std::os::unix::io::AsRawFd;
use std::sync::mpsc;
use std::time::Duration;

use iowatt_metrics::{now_ns, realtime_ns, IntervalAccum};

use crate::collector::Collector;
use crate::error::WorkloadError;
use crate::interp::{Interp, Shared};
use crate::offsets::Offsets;
use crate::output::{FlowopOutput, OpenLoop, Output, Status};
use crate::populate::populate;
use crate::prepare::{open_for, prepare};
use crate::progress::{Phase, Progress};
use crate::recorder::{Backlog, FlowopTotals, IntervalMsg, Recorder, Window};
use crate::spec::{Engine, FileSpec, Flowop, OpKind, ThreadSpec, Workload};
use crate::sync::EventBacklog;
use crate::worker::{thread_cpu_ns, BoundFlowop, Schedule, Worker};
use iowatt_metrics::Rng;

/// Lead time between opening files and the first operation, so all threads start together.
const START_LEAD_NS: u64 = 20_000_000;

/// The run's clock: when threads start, when measuring starts and ends.
pub(crate) struct Frame {
    start: u64,
    pub(crate) measure_start: u64,
    pub(crate) end: u64,
    /// Per-thread interval between operations when the workload has a rate.
    period: Option<u64>,
    /// With a schedule: how long operations in flight at the deadline are waited for.
    drain_ns: Option<u64>,
    workers: usize,
}

impl Frame {
    fn new(w: &Workload, progress: &Progress) -> Self {
        let workers = w.total_threads() as usize;
        let start = if progress.is_held() {
            released_start(progress)
        } else {
            now_ns() + START_LEAD_NS
        };
        let measure_start = start + w.ramp_ns;
        Frame {
            start,
            measure_start,
            end: measure_start + w.runtime_ns,
            period: w
                .rate
                .map(|r| (workers as f64 * 1e9 / r).round().max(1.0) as u64),
            drain_ns: w.drain_ns(),
            workers,
        }
    }
}

/// What a thread instance is given to set itself up with.
pub(crate) struct Seat<'w> {
    pub(crate) worker: usize,
    /// Workload-wide id of the thread's first flowop.
    pub(crate) base: usize,
    /// Which instance of its thread definition it is.
    pub(crate) instance: usize,
    pub(crate) thread: &'w ThreadSpec,
    pub(crate) rng: Rng,
    pub(crate) recorder: Recorder,
}

struct WorkerResult {
    /// Totals per flowop, keyed by the flowop's workload-wide id.
    flowops: Vec<(usize, FlowopTotals)>,
    backlog: Backlog,
    errors_by_kind: BTreeMap<String, u64>,
    cpu: (u64, u64),
    fatal: Option<String>,
    engine_error: Option<WorkloadError>,
}

impl WorkerResult {
    fn new(
        mut recorder: Recorder,
        base: usize,
        cpu_start: Option<(u64, u64)>,
        fatal: Option<String>,
        engine_error: Option<WorkloadError>,
    ) -> Self {
        let cpu_end = thread_cpu_ns();
        let cpu = cpu_start.map_or((0, 0), |(u, s)| (cpu_end.0 - u, cpu_end.1 - s));
        recorder.finish();
        WorkerResult {
            flowops: std::mem::take(&mut recorder.flowops)
                .into_iter()
                .enumerate()
                .map(|(i, totals)| (base + i, totals))
                .collect(),
            backlog: std::mem::take(&mut recorder.backlog),
            errors_by_kind: std::mem::take(&mut recorder.errors_by_kind),
            cpu,
            fatal,
            engine_error,
        }
    }
}

/// Runs `workload` to completion, cancellation or a fatal I/O error.
pub fn run(workload: &Workload, progress: &Progress) -> Result<Output, WorkloadError> {
    validate(workload)?;
    progress.set_phase(Phase::Preparing);
    if !workload.filesets.is_empty() {
        return run_filesets(workload, progress);
    }
    prepare(workload, progress)?;
    let frame = Frame::new(workload, progress);
    let setup = |seat: Seat<'_>| {
        let mut rng = seat.rng;
        let bound = seat
            .thread
            .flowops
            .iter()
            .map(|f| bind(f, &workload.files[f.file], &mut rng))
            .collect::<Result<Vec<_>, _>>()?;
        // Stagger rate-limited threads so their operations interleave rather than burst.
        let offset = frame
            .period
            .map_or(0, |p| p * seat.worker as u64 / frame.workers as u64);
        let worker = Worker {
            flowops: bound,
            recorder: seat.recorder,
            schedule: Schedule::new(frame.start + offset, frame.period),
            progress: progress.clone(),
            measure_start: frame.measure_start,
            stop_at: frame.end,
            drain_ns: frame.drain_ns.unwrap_or(0),
            cpu_start: None,
            fatal: None,
        };
        Ok((seat.base, rng, worker))
    };
    let body = |(base, mut rng, mut w): (usize, Rng, Worker)| {
        wait_for(frame.start);
        let engine_error = match workload.engine {
            Engine::Psync => {
                w.run_psync(&mut rng);
                None
            }
            Engine::IoUring => w.run_uring(workload.iodepth, &mut rng).err(),
        };
        WorkerResult::new(w.recorder, base, w.cpu_start, w.fatal, engine_error)
    };
    execute(workload, progress, &frame, setup, body, |_| None)
}

fn run_filesets(workload: &Workload, progress: &Progress) -> Result<Output, WorkloadError> {
    let filesets = populate(workload, progress)?;
    let frame = Frame::new(workload, progress);
    let shared = Shared::new(workload, filesets, frame.measure_start);
    let body = |(base, mut interp): (usize, Interp)| {
        wait_for(frame.start);
        interp.run();
        WorkerResult::new(interp.recorder, base, interp.cpu_start, interp.fatal, None)
    };
    execute(
        workload,
        progress,
        &frame,
        |seat| {
            Ok((
                seat.base,
                Interp::new(&shared, seat, progress.clone(), &frame),
            ))
        },
        body,
        |cutoff| shared.event_backlog(cutoff),
    )
}

/// A held run's start on CLOCK_MONOTONIC: it waits in phase `ready` until released (or
/// cancelled: then at once, and the threads stop before their first operation).
fn released_start(progress: &Progress) -> u64 {
    progress.set_phase(Phase::Ready);
    loop {
        if progress.is_stopping() {
            return now_ns();
        }
        let at = progress.release_at();
        if at != 0 {
            let (mono, real) = clock_pair();
            return mono + at.saturating_sub(real);
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// CLOCK_MONOTONIC and CLOCK_REALTIME read together: the realtime read between two monotonic
/// ones, the tightest of a few tries (a preemption between the reads would shift every
/// conversion by its length).
fn clock_pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let (a, r, b) = (now_ns(), realtime_ns(), now_ns());
        if b - a < best.0 {
            best = (b - a, a + (b - a) / 2, r);
        }
        if b - a < 2_000 {
            break;
        }
    }
    (best.1, best.2)
}

fn wait_for(start: u64) {
    while now_ns() < start {
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Sets up every thread instance, runs them on one clock while collecting intervals, and
/// merges their results; `events` tells an event generator's backlog once they have ended.
fn execute<'w, T: Send>(
    workload: &'w Workload,
    progress: &Progress,
    frame: &Frame,
    mut setup: impl FnMut(Seat<'w>) -> Result<T, WorkloadError>,
    body: impl Fn(T) -> WorkerResult + Sync,
    events: impl FnOnce(u64) -> Option<EventBacklog>,
) -> Result<Output, WorkloadError> {
    // Flowops are numbered workload-wide so per-flowop results merge across instances.
    let mut flowops: Vec<FlowopOutput> = Vec::new();
    let mut seats = Vec::new();
    for t in &workload.threads {
        let base = flowops.len();
        flowops.extend(t.flowops.iter().map(|f| FlowopOutput {
            name: f.name.clone(),
            kind: f.kind,
            ops: 0,
            bytes: 0,
            errors: 0,
            hist: Default::default(),
        }));
        for instance in 0..t.instances as usize {
            seats.push((base, instance, t));
        }
    }
    let (tx, rx) = mpsc::channel();
    let mut workers = Vec::with_capacity(seats.len());
    for (w, (base, instance, thread)) in seats.into_iter().enumerate() {
        let recorder = Recorder::new(
            w,
            thread.flowops.len(),
            Window {
                start: frame.measure_start,
                end: frame.end,
                drain_ns: frame.drain_ns,
            },
            workload.interval_ns,
            tx.clone(),
            progress.clone(),
        );
        workers.push(setup(Seat {
            worker: w,
            base,
            instance,
            thread,
            rng: Rng::stream(workload.seed, w as u64),
            recorder,
        })?);
    }
    drop(tx);
    progress.set_window(frame.measure_start, frame.end);
    progress.set_phase(if workload.ramp_ns > 0 {
        Phase::Ramp
    } else {
        Phase::Running
    });

    let mut collector = Collector::new(
        frame.workers,
        workload.interval_ns,
        workload.slow_ns.clone(),
        workload.heat_ns.clone(),
    );
    let mut stopped_at = None;
    let mut results: Vec<(usize, WorkerResult)> = std::thread::scope(|scope| {
        let body = &body;
        // Results come back on a channel rather than by joining: a thread that gave up on
        // io_uring operations a stalled device still holds cannot exit until they end (the
        // kernel waits for them), and the run must not wait with it.
        let (done_tx, done_rx) = mpsc::channel();
        for (w, t) in workers.into_iter().enumerate() {
            let done_tx = done_tx.clone();
            scope.spawn(move || {
                let _ = done_tx.send((w, body(t)));
            });
        }
        drop(done_tx);
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(msg) => {
                    progress.live().merge_latency(&msg.accum.hist);
                    collector.add(msg);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let now = now_ns();
            if now >= frame.measure_start && now < frame.end {
                progress.set_phase(Phase::Running);
            }
            if stopped_at.is_none() && (progress.is_stopping() || now >= frame.end) {
                stopped_at = Some(now.min(frame.end));
                progress.set_phase(Phase::Finishing);
            }
        }
        done_rx.iter().collect()
    });
    results.sort_by_key(|(w, _)| *w);

    let mut backlog = Backlog::default();
    let cutoff = frame.end.min(progress.stopped_at());
    let events = events(cutoff);
    let missed = events.and_then(|e| e.missed);
    if let Some(missed) = missed.filter(|_| cutoff > frame.measure_start) {
        // The events nobody took count at the cutoff, in its interval, as a worker's own
        // operations never issued do.
        let mut accum = IntervalAccum::default();
        missed.record_late(cutoff, &mut accum.hist);
        backlog.late.merge(&accum.hist);
        backlog.not_issued += missed.n;
        let index = (cutoff - 1 - frame.measure_start) / workload.interval_ns;
        collector.add(IntervalMsg {
            worker: 0,
            // A stopped run's workers may have finished its interval already.
            index: index.max(collector.rows.len() as u64),
            accum,
            last: true,
        });
    }
    let stopped_at = stopped_at.unwrap_or(frame.end).min(frame.end);
    let measured_ns = stopped_at.saturating_sub(frame.measure_start);
    let mut output = Output {
        name: workload.name.clone(),
        status: Status::Complete,
        measure_start_ns: frame.measure_start,
        measured_ns,
        flowops: Vec::new(),
        intervals: collector.finish(measured_ns),
        errors_by_kind: Default::default(),
        cpu_usr_ns: 0,
        cpu_sys_ns: 0,
        open_loop: None,
    };
    for (_, r) in results {
        if let Some(e) = r.engine_error {
            return Err(e);
        }
        for (id, t) in r.flowops {
            let f = &mut flowops[id];
            f.ops += t.ops;
            f.bytes += t.bytes;
            f.errors += t.errors;
            f.hist.merge(&t.hist);
        }
        backlog.merge(&r.backlog);
        for (k, v) in r.errors_by_kind {
            *output.errors_by_kind.entry(k).or_insert(0) += v;
        }
        output.cpu_usr_ns += r.cpu.0;
        output.cpu_sys_ns += r.cpu.1;
        if let (Some(reason), Status::Complete) = (r.fatal, &output.status) {
            output.status = Status::Failed(reason);
        }
    }
    if output.status == Status::Complete && progress.is_cancelled() && stopped_at < frame.end {
        output.status = Status::Cancelled;
    }
    output.open_loop = workload.schedule().map(|rate| OpenLoop {
        rate,
        events: events.map(|e| e.taken),
        drained: backlog.drained,
        not_issued: backlog.not_issued,
        outstanding: backlog.outstanding,
        late: backlog.late,
    });
    output.flowops = merge_same_names(flowops);
    progress.set_phase(Phase::Done);
    Ok(output)
}

/// Flowops of one name and kind — a composite flowop used by several threads, or threads
/// of different processes naming theirs alike — are one row, as FileBench reports them.
fn merge_same_names(flowops: Vec<FlowopOutput>) -> Vec<FlowopOutput> {
    let mut out: Vec<FlowopOutput> = Vec::with_capacity(flowops.len());
    for f in flowops {
        match out
            .iter_mut()
            .find(|g| g.name == f.name && g.kind == f.kind)
        {
            Some(g) => {
                g.ops += f.ops;
                g.bytes += f.bytes;
                g.errors += f.errors;
                g.hist.merge(&f.hist);
            }
            None => out.push(f),
        }
    }
    out
}

fn bind(f: &Flowop, file: &FileSpec, rng: &mut Rng) -> Result<BoundFlowop, WorkloadError> {
    let write = f.kind == OpKind::Write;
    let span = if f.workingset > 0 {
        f.workingset.min(file.size)
    } else {
        file.size
    };
    let offsets = match (f.random, write) {
        (true, _) => Offsets::random(Rng::stream(rng.next_u64(), 0), span, f.iosize),
        (false, false) => Offsets::SeqRead {
            next: 0,
            size: file.size,
            iosize: f.iosize,
        },
        (false, true) => Offsets::SeqWrite {
            next: 0,
            wrap: file.device.then_some(file.size),
            iosize: f.iosize,
        },
    };
    let fd = open_for(file, write, f.directio, f.dsync)?;
    if !f.directio {
        // fio's default fadvise_hint: buffered random I/O must not be inflated by readahead.
        let advice = if f.random {
            libc::POSIX_FADV_RANDOM
        } else {
            libc::POSIX_FADV_SEQUENTIAL
        };
        // SAFETY: a valid fd; advice only affects caching.
        unsafe { libc::posix_fadvise(fd.as_raw_fd(), 0, 0, advice) };
    }
    Ok(BoundFlowop {
        write,
        file: fd,
        iosize: f.iosize as usize,
        offsets,
        invalidate_on_wrap: !write && !f.random && !f.directio && !file.device,
    })
}

/// Whether the engine would run `w`, without running it (`iowatt bench FILE.f --check`).
pub fn validate(w: &Workload) -> Result<(), WorkloadError> {
    let bad = |msg: String| Err(WorkloadError::Invalid(msg));
    if w.threads.is_empty() || w.total_threads() == 0 {
        return bad("it has no threads".into());
    }
    if w.iodepth == 0 {
        return bad("iodepth must be at least 1".into());
    }
    if w.runtime_ns == 0 {
        return bad("runtime must be longer than zero".into());
    }
    if let Some(r) = w.rate {
        if !(r.is_finite() && r > 0.0) {
            return bad(format!("rate `{r}` must be a positive number of ops/s"));
        }
    }
    for t in &w.threads {
        if t.flowops.is_empty() {
            return bad(format!("thread `{}` has no flowops", t.name));
        }
        validate_composites(t)?;
    }
    if w.filesets.is_empty() {
        validate_files(w)
    } else {
        validate_filesets(w)
    }
}

/// A composite's body is a non-empty run of the flowops after it, inside any composite it is
/// part of.
fn validate_composites(t: &ThreadSpec) -> Result<(), WorkloadError> {
    let mut ends: Vec<usize> = vec![t.flowops.len()];
    for (i, f) in t.flowops.iter().enumerate() {
        while ends.last().is_some_and(|&end| end <= i) {
            ends.pop();
        }
        if f.kind == OpKind::Composite {
            let end = i + 1 + f.value as usize;
            if f.value == 0 || ends.last().is_some_and(|&outer| end > outer) {
                return Err(WorkloadError::Invalid(format!(
                    "composite flowop `{}` of thread `{}` has a body of {} flowops, which does \
                     not fit in the flowops after it",
                    f.name, t.name, f.value
                )));
            }
            ends.push(end);
        }
    }
    Ok(())
}

fn validate_files(w: &Workload) -> Result<(), WorkloadError> {
    let bad = |msg: String| Err(WorkloadError::Invalid(msg));
    for f in w.threads.iter().flat_map(|t| &t.flowops) {
        if !matches!(f.kind, OpKind::Read | OpKind::Write) {
            return bad(format!(
                "flowop `{}`: {} works on filesets, and the workload has none",
                f.name,
                f.kind.as_str()
            ));
        }
        let Some(file) = w.files.get(f.file) else {
            return bad(format!("flowop `{}` names no file", f.name));
        };
        if f.iosize == 0 {
            return bad(format!("flowop `{}` has iosize 0", f.name));
        }
        if f.directio && f.iosize % 512 != 0 {
            return bad(format!(
                "flowop `{}`: O_DIRECT needs an iosize that is a multiple of 512 bytes, not {}",
                f.name, f.iosize
            ));
        }
        let needs_data = f.kind == OpKind::Read || f.random;
        if needs_data && file.size < f.iosize {
            return bad(format!(
                "flowop `{}`: file `{}` ({} bytes) is smaller than iosize {}",
                f.name, file.name, file.size, f.iosize
            ));
        }
    }
    Ok(())
}

fn validate_filesets(w: &Workload) -> Result<(), WorkloadError> {
    let bad = |msg: String| Err(WorkloadError::Invalid(msg));
    if w.rate.is_some() {
        return bad("a rate applies to FileIO workloads; filesets use eventgen".into());
    }
    for fs in &w.filesets {
        fs.size
            .validate()
            .or_else(|e| bad(format!("fileset `{}`: {e}", fs.name)))?;
        if fs.prealloc > 100 {
            return bad(format!(
                "fileset `{}`: prealloc {} is over 100 %",
                fs.name, fs.prealloc
            ));
        }
    }
    let flowops: Vec<&Flowop> = w.threads.iter().flat_map(|t| &t.flowops).collect();
    let named = |kind: OpKind, name: &str| flowops.iter().any(|f| f.kind == kind && f.name == name);
    for f in &flowops {
        if f.fileset.is_some_and(|i| i >= w.filesets.len()) {
            return bad(format!("flowop `{}` names no fileset", f.name));
        }
        if let Some(d) = &f.iosize_dist {
            d.validate()
                .or_else(|e| bad(format!("flowop `{}`: {e}", f.name)))?;
        }
        let needs_size = matches!(
            f.kind,
            OpKind::Read | OpKind::Write | OpKind::AioWrite | OpKind::AppendFile
        ) || f.kind == OpKind::AppendFileRand;
        if needs_size && f.iosize == 0 && f.iosize_dist.is_none() {
            return bad(format!("flowop `{}` has iosize 0", f.name));
        }
        let target = f.target.as_deref().unwrap_or_default();
        let missing = match f.kind {
            OpKind::SemPost => !named(OpKind::SemBlock, target),
            OpKind::Wakeup => !named(OpKind::Block, target),
            _ => f.target.is_some() && !flowops.iter().any(|g| g.name == target),
        };
        if missing {
            return bad(format!(
                "flowop `{}`: its target `{target}` is no flowop of the right kind",
                f.name
            ));
        }
    }
    Ok(())
}
