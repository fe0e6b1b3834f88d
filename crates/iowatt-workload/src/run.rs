//! Running a workload: validate, prepare files, start every thread instance on one clock, collect
//! intervals while they run, and assemble the output.

use std::os::unix::io::AsRawFd;
use std::sync::mpsc;
use std::time::Duration;

use iowatt_metrics::now_ns;

use crate::collector::Collector;
use crate::error::WorkloadError;
use crate::offsets::Offsets;
use crate::output::{FlowopOutput, Output, Status};
use crate::prepare::{open_for, prepare};
use crate::progress::{Phase, Progress};
use crate::recorder::{FlowopTotals, Recorder};
use crate::rng::Rng;
use crate::spec::{Engine, FileSpec, Flowop, OpKind, Workload};
use crate::worker::{thread_cpu_ns, BoundFlowop, Schedule, Worker};

/// Lead time between opening files and the first operation, so all threads start together.
const START_LEAD_NS: u64 = 20_000_000;

struct WorkerResult {
    /// Totals per flowop, keyed by the flowop's workload-wide id.
    flowops: Vec<(usize, FlowopTotals)>,
    errors_by_kind: std::collections::BTreeMap<String, u64>,
    cpu: (u64, u64),
    fatal: Option<String>,
    engine_error: Option<WorkloadError>,
}

/// Runs `workload` to completion, cancellation or a fatal I/O error.
pub fn run(workload: &Workload, progress: &Progress) -> Result<Output, WorkloadError> {
    validate(workload)?;
    progress.set_phase(Phase::Preparing);
    prepare(workload, progress)?;

    // Flowops are numbered workload-wide so per-flowop results merge across instances.
    let mut flowop_ids = Vec::new();
    let mut specs = Vec::new();
    for t in &workload.threads {
        let base = flowop_ids.len();
        flowop_ids.extend(t.flowops.iter().map(|f| f.name.clone()));
        for _ in 0..t.instances {
            specs.push((base, &t.flowops));
        }
    }
    let nworkers = specs.len();
    let mut workers = Vec::with_capacity(nworkers);
    let start = now_ns() + START_LEAD_NS;
    let measure_start = start + workload.ramp_ns;
    let end = measure_start + workload.runtime_ns;
    let period = workload
        .rate
        .map(|r| (nworkers as f64 * 1e9 / r).round().max(1.0) as u64);
    let (tx, rx) = mpsc::channel();
    for (w, (base, flowops)) in specs.iter().enumerate() {
        let mut rng = Rng::stream(workload.seed, w as u64);
        let bound = flowops
            .iter()
            .map(|f| bind(f, &workload.files[f.file], &mut rng))
            .collect::<Result<Vec<_>, _>>()?;
        let recorder = Recorder::new(
            w,
            flowops.len(),
            measure_start,
            end,
            workload.interval_ns,
            tx.clone(),
            progress.clone(),
        );
        // Stagger rate-limited threads so their operations interleave rather than burst.
        let offset = period.map_or(0, |p| p * w as u64 / nworkers as u64);
        workers.push((
            *base,
            rng,
            Worker {
                flowops: bound,
                recorder,
                schedule: Schedule::new(start + offset, period),
                progress: progress.clone(),
                measure_start,
                stop_at: end,
                cpu_start: None,
                fatal: None,
            },
        ));
    }
    drop(tx);
    progress.set_window(measure_start, end);
    progress.set_phase(if workload.ramp_ns > 0 {
        Phase::Ramp
    } else {
        Phase::Running
    });

    let mut collector = Collector::new(nworkers, workload.interval_ns, workload.slow_ns.clone());
    let mut stopped_at = None;
    let results: Vec<WorkerResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|(base, rng, worker)| {
                let engine = workload.engine;
                let depth = workload.iodepth;
                scope.spawn(move || run_worker(worker, base, rng, engine, depth, start))
            })
            .collect();
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(msg) => collector.add(msg),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let now = now_ns();
            if now >= measure_start && now < end {
                progress.set_phase(Phase::Running);
            }
            if stopped_at.is_none() && (progress.is_stopping() || now >= end) {
                stopped_at = Some(now.min(end));
                progress.set_phase(Phase::Finishing);
            }
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect()
    });

    let stopped_at = stopped_at.unwrap_or(end).min(end);
    let measured_ns = stopped_at.saturating_sub(measure_start);
    let mut flowops: Vec<FlowopOutput> = flowop_ids
        .into_iter()
        .map(|name| FlowopOutput {
            name,
            ops: 0,
            bytes: 0,
            errors: 0,
            hist: Default::default(),
        })
        .collect();
    let mut output = Output {
        name: workload.name.clone(),
        status: Status::Complete,
        measure_start_ns: measure_start,
        measured_ns,
        flowops: Vec::new(),
        intervals: collector.finish(measured_ns),
        errors_by_kind: Default::default(),
        cpu_usr_ns: 0,
        cpu_sys_ns: 0,
    };
    for r in results {
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
        for (k, v) in r.errors_by_kind {
            *output.errors_by_kind.entry(k).or_insert(0) += v;
        }
        output.cpu_usr_ns += r.cpu.0;
        output.cpu_sys_ns += r.cpu.1;
        if let (Some(reason), Status::Complete) = (r.fatal, &output.status) {
            output.status = Status::Failed(reason);
        }
    }
    if output.status == Status::Complete && progress.is_cancelled() && stopped_at < end {
        output.status = Status::Cancelled;
    }
    output.flowops = flowops;
    progress.set_phase(Phase::Done);
    Ok(output)
}

fn run_worker(
    mut w: Worker,
    base: usize,
    mut rng: Rng,
    engine: Engine,
    depth: u32,
    start: u64,
) -> WorkerResult {
    while now_ns() < start {
        std::thread::sleep(Duration::from_micros(200));
    }
    let engine_error = match engine {
        Engine::Psync => {
            w.run_psync(&mut rng);
            None
        }
        Engine::IoUring => w.run_uring(depth, &mut rng).err(),
    };
    let cpu_end = thread_cpu_ns();
    let cpu = w
        .cpu_start
        .map_or((0, 0), |(u, s)| (cpu_end.0 - u, cpu_end.1 - s));
    w.recorder.finish();
    let flowops = std::mem::take(&mut w.recorder.flowops)
        .into_iter()
        .enumerate()
        .map(|(i, totals)| (base + i, totals))
        .collect();
    WorkerResult {
        flowops,
        errors_by_kind: std::mem::take(&mut w.recorder.errors_by_kind),
        cpu,
        fatal: w.fatal,
        engine_error,
    }
}

fn bind(f: &Flowop, file: &FileSpec, rng: &mut Rng) -> Result<BoundFlowop, WorkloadError> {
    let write = f.kind == OpKind::Write;
    let span = if f.workingset > 0 {
        f.workingset.min(file.size)
    } else {
        file.size
    };
    let offsets = match (f.random, f.kind) {
        (true, _) => Offsets::random(Rng::stream(rng.next_u64(), 0), span, f.iosize),
        (false, OpKind::Read) => Offsets::SeqRead {
            next: 0,
            size: file.size,
            iosize: f.iosize,
        },
        (false, OpKind::Write) => Offsets::SeqWrite {
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
        kind: f.kind,
        file: fd,
        iosize: f.iosize as usize,
        offsets,
        invalidate_on_wrap: f.kind == OpKind::Read && !f.random && !f.directio && !file.device,
    })
}

fn validate(w: &Workload) -> Result<(), WorkloadError> {
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
        for f in &t.flowops {
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
    }
    Ok(())
}
