//! A workload on a `Handle`: a run on its own thread, watched, cancelled and waited for.

use std::time::{Duration, Instant};

use iowatt_metrics::{now_ns, realtime_ns, Handle};
use iowatt_workload::{Phase, Status, Workload};

use iowatt_workload::FileIo;

use crate::fileio;
use crate::support::{exclusive, TempDir};

#[test]
fn a_handle_runs_in_the_background_and_keeps_its_outcome() {
    let _alone = exclusive();
    let dir = TempDir::new("handle");
    let mut cfg = light(fileio("randomread", &dir));
    cfg.runtime_ns = 400_000_000;
    let run = Handle::new(cfg.build().unwrap());
    assert!(
        !run.wait(Duration::ZERO),
        "a run never started has not ended"
    );
    assert!(run.with_outcome(|_| ()).is_none());
    assert!(run.start());
    assert!(!run.start(), "a run starts once");
    assert!(
        !run.wait(Duration::from_millis(50)),
        "still running after 50 ms"
    );
    let t0 = Instant::now();
    while !run.wait(Duration::from_millis(20)) {
        assert!(t0.elapsed() < Duration::from_secs(30));
    }
    let ops = run.progress().snapshot().ops;
    let (status, out_ops) = status_and_ops(&run);
    assert_eq!(status, Status::Complete);
    assert!(out_ops > 0 && ops > 0);
    assert!(run.wait(Duration::ZERO), "an ended run stays ended");
}

#[test]
fn cancelling_ends_a_long_run_early_with_what_it_measured() {
    let _alone = exclusive();
    let dir = TempDir::new("cancel");
    let mut cfg = light(fileio("randomread", &dir));
    cfg.runtime_ns = 60_000_000_000;
    let run = Handle::new(cfg.build().unwrap());
    assert!(run.start());
    let t0 = Instant::now();
    while run.progress().snapshot().ops == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the run never measured"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    run.cancel();
    assert!(
        run.wait(Duration::from_secs(10)),
        "a cancelled run ends promptly"
    );
    let (status, ops) = status_and_ops(&run);
    assert_eq!(status, Status::Cancelled);
    assert!(ops > 0);
    assert!(t0.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_held_run_prepares_then_waits_until_released_at_an_instant() {
    let _alone = exclusive();
    let dir = TempDir::new("held");
    let mut cfg = light(fileio("randomread", &dir));
    cfg.runtime_ns = 200_000_000;
    let run = Handle::new(cfg.build().unwrap());
    start_held(&run);
    // Ready means laid out and waiting: nothing measured, however long it waits.
    assert!(!run.wait(Duration::from_millis(300)));
    let waiting = run.progress().snapshot();
    assert_eq!((waiting.phase, waiting.ops), (Phase::Ready, 0));
    let lead = 100_000_000;
    let (mono, real) = (now_ns(), realtime_ns());
    run.progress().release(real + lead);
    assert!(run.wait(Duration::from_secs(30)));
    let (status, ops) = status_and_ops(&run);
    assert_eq!(status, Status::Complete);
    assert!(ops > 0);
    // Measuring starts at the instant given, read on the other clock, not before — up to the
    // microseconds between reading the two clocks, here and in the engine.
    let start = run.progress().snapshot().measure_start_ns;
    let due = mono + lead;
    assert!(
        start + 50_000 >= due,
        "started {} ns early",
        due.saturating_sub(start)
    );
}

#[test]
fn a_held_run_cancelled_before_release_ends_without_measuring() {
    let _alone = exclusive();
    let dir = TempDir::new("held-cancel");
    let run = Handle::new(light(fileio("randomread", &dir)).build().unwrap());
    start_held(&run);
    run.cancel();
    assert!(
        run.wait(Duration::from_secs(10)),
        "a cancelled held run ends"
    );
    assert_eq!(status_and_ops(&run), (Status::Cancelled, 0));
}

/// Starts `run` held and waits until it is laid out and ready.
fn start_held(run: &Handle<Workload>) {
    run.progress().hold();
    assert!(run.start());
    let t0 = Instant::now();
    while run.progress().snapshot().phase != Phase::Ready {
        assert!(t0.elapsed() < Duration::from_secs(30), "never ready");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn status_and_ops(run: &Handle<Workload>) -> (Status, u64) {
    run.with_outcome(|o| {
        let out = o.as_ref().expect("the run produced an output");
        (out.status.clone(), out.ops())
    })
    .expect("the run has ended")
}

/// One rate-limited thread: these runs share the machine with the tests that time the engine.
fn light(mut cfg: FileIo) -> FileIo {
    cfg.nthreads = 1;
    cfg.rate = Some(2000.0);
    cfg
}

#[test]
fn the_latencies_so_far_hold_every_stored_interval_by_band() {
    let _alone = exclusive();
    let dir = TempDir::new("latency-so-far");
    let mut cfg = light(fileio("randomread", &dir));
    cfg.runtime_ns = 1_500_000_000;
    let run = Handle::new(cfg.build().unwrap());
    let edges = [10_000, 100_000, 1_000_000];
    assert_eq!(run.progress().live().latency_so_far(&edges).count, 0);
    assert!(run.start());
    while !run.wait(Duration::from_millis(20)) {}
    let so_far = run.progress().live().latency_so_far(&edges);
    assert_eq!(so_far.bands.iter().sum::<u64>(), so_far.count);
    let (stored, ops, last_interval) = run
        .with_outcome(|o| {
            let out = o.as_ref().unwrap();
            let mut hist = iowatt_metrics::LatencyHistogram::new();
            for f in &out.flowops {
                hist.merge(&f.hist);
            }
            let last = out.intervals.iter().map(|r| r.ops).max().unwrap_or(0);
            (hist.counts_by_edges(&edges), out.ops(), last)
        })
        .unwrap();
    assert!(ops > 0);
    // The scrape sees every measured operation; it may also hold those completing after the
    // window closed, which the stored run drops (at most an interval's worth).
    for (live, kept) in so_far.bands.iter().zip(&stored) {
        assert!(live >= kept, "{:?} < {:?}", so_far.bands, stored);
    }
    assert!(so_far.count <= ops + last_interval);
    assert!(so_far.sum_ns > 0.0);
}
