//! End-to-end runs of the engine on real files in a temporary directory.

mod filesets;
mod handle;
mod support;

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use iowatt_workload::{run, Engine, FileIo, Progress, Status};
use support::{exclusive, mincore_pages, TempDir};

pub(crate) fn fileio(personality: &str, dir: &TempDir) -> FileIo {
    FileIo {
        name: personality.into(),
        personality: personality.into(),
        target: dir.path().to_path_buf(),
        device: false,
        iosize: 8192,
        filesize: 4 << 20,
        nthreads: 2,
        directio: false,
        dsync: false,
        engine: Engine::Psync,
        iodepth: 1,
        runtime_ns: 300_000_000,
        ramp_ns: 0,
        rate: None,
        seed: 42,
        workingset: 0,
        slow_ns: vec![100_000_000, 200_000_000],
        heat_ns: vec![1_000, 10_000, 100_000, 1_000_000],
        drain_ns: None,
    }
}

#[test]
fn random_writes_land_on_iosize_aligned_blocks_across_the_whole_file() {
    let _alone = exclusive();
    let dir = TempDir::new("rw");
    let mut cfg = fileio("randomwrite", &dir);
    cfg.runtime_ns = 1;
    // A 1 ns run only lays the file out: that is the "before" image.
    run(&cfg.build().unwrap(), &Progress::new()).unwrap();
    let path = dir.path().join("largefile1");
    let before = std::fs::read(&path).unwrap();
    cfg.runtime_ns = 200_000_000;
    let out = run(&cfg.build().unwrap(), &Progress::new()).unwrap();
    let after = std::fs::read(&path).unwrap();
    assert_eq!(
        before.len(),
        after.len(),
        "random writes stay inside the file"
    );

    let blocks: Vec<bool> = before
        .chunks(8192)
        .zip(after.chunks(8192))
        .map(|(a, b)| a != b)
        .collect();
    let changed = blocks.iter().filter(|&&c| c).count();
    assert!(out.ops() > 0 && changed > 0);
    assert!(changed as u64 <= out.ops());
    // Every changed block changed completely: writes are aligned to iosize.
    for (i, (a, b)) in before.chunks(8192).zip(after.chunks(8192)).enumerate() {
        if a != b {
            let same = a.iter().zip(b).filter(|(x, y)| x == y).count();
            assert!(
                same < 8192 / 64,
                "block {i} was partly rewritten: misaligned write"
            );
        }
    }
    // And they are spread over the whole file, not a prefix.
    let quarter = blocks.len() / 4;
    for q in 0..4 {
        let hits = blocks[q * quarter..(q + 1) * quarter]
            .iter()
            .filter(|&&c| c)
            .count();
        assert!(hits > 0, "no write landed in quarter {q} of the file");
    }
}

#[test]
fn random_reads_touch_the_whole_file() {
    let _alone = exclusive();
    let dir = TempDir::new("rr");
    let mut cfg = fileio("randomread", &dir);
    cfg.filesize = 64 << 20;
    cfg.nthreads = 1;
    cfg.runtime_ns = 100_000_000;
    let out = run(&cfg.build().unwrap(), &Progress::new()).unwrap();
    assert_eq!(out.errors(), 0);
    assert_eq!(
        out.bytes(),
        out.ops() * 8192,
        "every read returned a full iosize"
    );
    // The engine dropped the file from the page cache before the clock started, so the pages
    // resident now are the ones the run read.
    let pages = mincore_pages(&dir.path().join("largefile1"));
    let resident = pages.iter().filter(|&&p| p).count() as u64;
    // Without readahead an 8 KiB read brings in its own two pages and no more.
    assert!(
        resident <= out.ops() * 2,
        "{resident} pages resident after {} reads: readahead is inflating random reads",
        out.ops()
    );
    let eighth = pages.len() / 8;
    for part in 0..8 {
        let hits = pages[part * eighth..(part + 1) * eighth]
            .iter()
            .filter(|&&p| p)
            .count();
        assert!(hits > 0, "no read touched part {part} of 8");
    }
}

#[test]
fn sequential_writes_grow_the_file_by_exactly_the_bytes_reported() {
    let _alone = exclusive();
    let dir = TempDir::new("sw");
    let mut cfg = fileio("singlestreamwrite", &dir);
    cfg.nthreads = 1;
    cfg.iosize = 1 << 20;
    let out = run(&cfg.build().unwrap(), &Progress::new()).unwrap();
    let meta = std::fs::metadata(dir.path().join("largefile1")).unwrap();
    assert!(out.bytes() > 0);
    // Writes drained after the deadline land in the file but are not counted.
    assert!(meta.len() >= out.bytes());
    assert_eq!(meta.len() % (1 << 20), 0);
    assert!(
        meta.blocks() * 512 >= meta.len(),
        "the file must not be sparse"
    );
    let data = std::fs::read(dir.path().join("largefile1")).unwrap();
    assert!(
        data.iter().any(|&b| b != 0),
        "written data is random, not zeros"
    );
}

#[test]
fn direct_io_with_io_uring_keeps_iodepth_in_flight() {
    let _alone = exclusive();
    let dir = TempDir::new("uring");
    let mut cfg = fileio("randomread", &dir);
    cfg.engine = Engine::IoUring;
    cfg.iodepth = 16;
    cfg.directio = true;
    cfg.iosize = 4096;
    cfg.nthreads = 1;
    let out = run(&cfg.build().unwrap(), &Progress::new()).unwrap();
    assert_eq!(out.status, Status::Complete);
    assert_eq!(out.errors(), 0);
    assert!(out.ops() > 100);
    assert_eq!(out.bytes(), out.ops() * 4096);
}

#[test]
fn intervals_add_up_to_the_totals() {
    let _alone = exclusive();
    let dir = TempDir::new("iv");
    let mut cfg = fileio("randomread", &dir);
    cfg.runtime_ns = 2_000_000_000;
    cfg.ramp_ns = 300_000_000;
    let out = run(&cfg.build().unwrap(), &Progress::new()).unwrap();
    assert_eq!(out.intervals.len(), 2);
    assert_eq!(out.intervals.iter().map(|r| r.ops).sum::<u64>(), out.ops());
    assert_eq!(
        out.intervals.iter().map(|r| r.bytes).sum::<u64>(),
        out.bytes()
    );
    assert_eq!(out.histogram().count(), out.ops());
    assert_eq!(out.measured_ns, 2_000_000_000);
    // Each interval's heatmap bands hold its operations, once each.
    for row in &out.intervals {
        assert_eq!(row.heat_ops.len(), 5);
        assert_eq!(row.heat_ops.iter().sum::<u64>(), row.ops);
    }
}

#[test]
fn a_rate_limit_issues_the_intended_number_of_operations() {
    let _alone = exclusive();
    let dir = TempDir::in_memory("rate");
    let mut cfg = fileio("randomread", &dir);
    cfg.rate = Some(400.0);
    cfg.runtime_ns = 1_000_000_000;
    let out = run(&cfg.build().unwrap(), &Progress::new()).unwrap();
    assert!(
        (360..=402).contains(&out.ops()),
        "400 ops/s for 1 s gave {} ops",
        out.ops()
    );
}

#[test]
fn a_rate_limited_run_accounts_for_every_operation_due_before_its_deadline() {
    let _alone = exclusive();
    let dir = TempDir::in_memory("due");
    for engine in [Engine::Psync, Engine::IoUring] {
        let mut cfg = fileio("randomread", &dir);
        cfg.engine = engine;
        cfg.iodepth = if engine == Engine::IoUring { 4 } else { 1 };
        // Two threads at 400 ops/s: each is due every 5 ms, the second 2.5 ms after the first,
        // so 60 of each are due in 300 ms.
        cfg.rate = Some(400.0);
        cfg.runtime_ns = 300_000_000;
        let out = run(&cfg.build().unwrap(), &Progress::new()).unwrap();
        let open = out.open_loop.as_ref().expect("a rate is a schedule");
        assert_eq!(open.rate, 400.0);
        assert_eq!(out.errors(), 0);
        assert_eq!(
            out.ops() + open.not_issued + open.outstanding,
            120,
            "{engine:?}: {} completed, {} not issued, {} outstanding",
            out.ops(),
            open.not_issued,
            open.outstanding,
        );
        assert_eq!(open.outstanding, 0, "{engine:?}: the drain waits for each");
        // The lateness of what never completed is in the workload's histogram and intervals.
        let late = open.not_issued + open.outstanding;
        assert_eq!(out.histogram().count(), out.ops() + late);
        let counted: u64 = out
            .intervals
            .iter()
            .map(|r| r.heat_ops.iter().sum::<u64>())
            .sum();
        assert_eq!(counted, out.ops() + late);
        assert_eq!(out.intervals.iter().map(|r| r.ops).sum::<u64>(), out.ops());
    }
}

#[test]
fn a_closed_loop_keeps_no_schedule() {
    let _alone = exclusive();
    let dir = TempDir::in_memory("closed");
    let mut cfg = fileio("randomread", &dir);
    cfg.runtime_ns = 100_000_000;
    cfg.drain_ns = Some(0);
    let out = run(&cfg.build().unwrap(), &Progress::new()).unwrap();
    assert!(out.open_loop.is_none());
    assert_eq!(out.histogram().count(), out.ops());
}

#[test]
fn cancelling_stops_a_long_run_promptly_and_keeps_what_was_measured() {
    let _alone = exclusive();
    let dir = TempDir::new("cancel");
    let mut cfg = fileio("randomread", &dir);
    cfg.runtime_ns = 60_000_000_000;
    let progress = Progress::new();
    let p = progress.clone();
    let canceller = std::thread::spawn(move || {
        while p.snapshot().ops < 1000 {
            std::thread::sleep(Duration::from_millis(5));
        }
        p.cancel();
        Instant::now()
    });
    let out = run(&cfg.build().unwrap(), &progress).unwrap();
    let returned = Instant::now();
    let cancelled = canceller.join().unwrap();
    assert_eq!(out.status, Status::Cancelled);
    assert!(out.ops() > 0);
    assert!(out.measured_ns < 60_000_000_000);
    assert!(returned.duration_since(cancelled) < Duration::from_secs(1));
}

#[test]
fn unknown_personalities_and_impossible_configs_are_refused() {
    let _alone = exclusive();
    let dir = TempDir::new("bad");
    let mut cfg = fileio("randomsomething", &dir);
    let err = cfg.build().unwrap_err();
    assert!(err.to_string().contains("`randomsomething`"));
    cfg.personality = "randomread".into();
    cfg.filesize = 1024;
    let err = run(&cfg.build().unwrap(), &Progress::new()).unwrap_err();
    assert!(err.to_string().contains("smaller than iosize"), "{err}");
}
