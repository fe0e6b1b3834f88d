//! RunHandle: a run on its own thread, watched, cancelled and waited for.

use std::time::{Duration, Instant};

use iowatt_workload::{RunHandle, Status};

use iowatt_workload::FileIo;

use crate::fileio;
use crate::support::{exclusive, TempDir};

#[test]
fn a_handle_runs_in_the_background_and_keeps_its_outcome() {
    let _alone = exclusive();
    let dir = TempDir::new("handle");
    let mut cfg = light(fileio("randomread", &dir));
    cfg.runtime_ns = 400_000_000;
    let run = RunHandle::new(cfg.build().unwrap());
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
    let run = RunHandle::new(cfg.build().unwrap());
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

fn status_and_ops(run: &RunHandle) -> (Status, u64) {
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
