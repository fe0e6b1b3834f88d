//! The FileMacro engine on real filesets: FileBench's flowops, file picking, thread
//! coordination and run endings, checked against what ends up on disk.

use std::path::Path;

use iowatt_workload::{run, Output, Progress, Status, Workload};
use serde_json::{json, Value};

use crate::support::{exclusive, mincore_pages, TempDir};

fn workload(dir: &Path, filesets: Value, threads: Value, extra: Value) -> Workload {
    let mut w = json!({
        "name": "macro",
        "filesets": filesets,
        "threads": threads,
        "engine": "psync",
        "iodepth": 1,
        "runtime_ns": 600_000_000u64,
        "ramp_ns": 0,
        "rate": null,
        "seed": 9,
    });
    w.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let mut w: Workload = serde_json::from_value(w).unwrap();
    for fs in &mut w.filesets {
        fs.path = dir.to_path_buf();
    }
    w
}

fn flowop<'a>(out: &'a Output, name: &str) -> &'a iowatt_workload::FlowopOutput {
    out.flowops.iter().find(|f| f.name == name).unwrap()
}

fn files_under(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            n += files_under(&e.path());
        } else {
            n += 1;
        }
    }
    n
}

fn fileserver(dir: &Path, nthreads: u32) -> Workload {
    workload(
        dir,
        json!([{"name": "bigfileset", "path": "/", "entries": 400,
                "size": {"gamma": {"mean": 16384.0, "shape": 1.5}},
                "dirwidth": 20, "prealloc": 80}]),
        json!([{"name": "filereaderthread", "instances": nthreads, "flowops": [
            {"name": "createfile1", "kind": "createfile", "fileset": 0, "fd": 1},
            {"name": "wrtfile1", "kind": "writewholefile", "srcfd": 1, "fd": 1, "iosize": 1048576},
            {"name": "closefile1", "kind": "closefile", "fd": 1},
            {"name": "openfile1", "kind": "openfile", "fileset": 0, "fd": 1},
            {"name": "appendfilerand1", "kind": "appendfilerand", "iosize": 16384, "fd": 1},
            {"name": "closefile2", "kind": "closefile", "fd": 1},
            {"name": "openfile2", "kind": "openfile", "fileset": 0, "fd": 1},
            {"name": "readfile1", "kind": "readwholefile", "fd": 1, "iosize": 1048576},
            {"name": "closefile3", "kind": "closefile", "fd": 1},
            {"name": "deletefile1", "kind": "deletefile", "fileset": 0},
            {"name": "statfile1", "kind": "statfile", "fileset": 0}]}]),
        json!({}),
    )
}

#[test]
fn fileserver_runs_every_flowop_and_the_tree_holds_what_was_created_and_deleted() {
    let _alone = exclusive();
    let dir = TempDir::new("fileserver");
    let w = fileserver(dir.path(), 4);
    let out = run(&w, &Progress::new()).unwrap();
    assert_eq!(out.status, Status::Complete);
    for f in &out.flowops {
        assert!(f.ops > 0, "{} ran no operation", f.name);
        assert_eq!(f.hist.count(), f.ops);
    }
    let existed = files_under(&dir.path().join("bigfileset"));
    let created = flowop(&out, "createfile1").ops as i64;
    let deleted = flowop(&out, "deletefile1").ops as i64;
    // 80 % of 400 entries start out created (drawn per entry, so about 320); every create
    // and delete since shows up in the tree, give or take one per thread still in flight.
    let start = existed as i64 - created + deleted;
    assert!((270..=370).contains(&start), "{start} files before the run");
    // A whole-file write writes the size its entry was given; reads read what is there.
    let wrt = flowop(&out, "wrtfile1");
    assert!(
        wrt.bytes / wrt.ops > 4096,
        "{} bytes per whole-file write",
        wrt.bytes / wrt.ops
    );
    // appendfilerand appends uniform [0, iosize): iosize/2 on average.
    let app = flowop(&out, "appendfilerand1");
    let mean = app.bytes as f64 / app.ops as f64;
    assert!((0.4..0.6).contains(&(mean / 16384.0)), "mean append {mean}");
    // The run's ops are the I/O flowops' (all of fileserver's are I/O).
    assert_eq!(out.ops(), out.flowops.iter().map(|f| f.ops).sum::<u64>());
}

#[test]
fn a_thread_that_runs_out_of_files_stops_a_timed_run_and_says_why() {
    let _alone = exclusive();
    let dir = TempDir::new("nofile");
    let w = workload(
        dir.path(),
        json!([{"name": "few", "path": "/", "entries": 10, "size": {"fixed": 0}, "prealloc": 0}]),
        json!([{"name": "t", "instances": 1, "flowops": [
            {"name": "create", "kind": "createfile", "fileset": 0},
            {"name": "close", "kind": "closefile"}]}]),
        json!({}),
    );
    let out = run(&w, &Progress::new()).unwrap();
    assert_eq!(flowop(&out, "create").ops, 10);
    match out.status {
        Status::Failed(why) => assert!(why.contains("could not obtain an absent file"), "{why}"),
        s => panic!("{s:?}"),
    }
    assert_eq!(files_under(&dir.path().join("few")), 10);
}

#[test]
fn finishoncount_ends_an_alldone_run_when_every_thread_is_done() {
    let _alone = exclusive();
    let dir = TempDir::new("finish");
    let w = workload(
        dir.path(),
        json!([{"name": "f", "path": "/", "entries": 1, "size": {"fixed": 65536},
                "prealloc": 100, "single": true}]),
        json!([{"name": "t", "instances": 2, "flowops": [
            {"name": "rd", "kind": "read", "fileset": 0, "iosize": 4096, "random": true},
            {"name": "enough", "kind": "finishoncount", "value": 500, "target": "rd"}]}]),
        json!({"quit": "alldone", "runtime_ns": 30_000_000_000u64}),
    );
    let out = run(&w, &Progress::new()).unwrap();
    assert_eq!(out.status, Status::Complete);
    let reads = flowop(&out, "rd").ops;
    // Each thread checks after its own read: at most one extra read per thread.
    assert!((500..=502).contains(&reads), "{reads} reads");
    assert!(out.measured_ns < 30_000_000_000);
    assert_eq!(out.ops(), reads, "finishoncount is not I/O");
}

#[test]
fn semblock_waits_for_value_posts_from_other_threads() {
    let _alone = exclusive();
    let dir = TempDir::new("sem");
    let w = workload(
        dir.path(),
        json!([{"name": "f", "path": "/", "entries": 1, "size": {"fixed": 65536},
                "prealloc": 100, "single": true}]),
        json!([
            {"name": "poster", "instances": 2, "flowops": [
                {"name": "rd", "kind": "read", "fileset": 0, "iosize": 4096, "random": true},
                {"name": "post", "kind": "sempost", "value": 1, "target": "gate", "blocking": true}]},
            {"name": "waiter", "instances": 1, "flowops": [
                {"name": "gate", "kind": "semblock", "value": 10, "highwater": 20},
                {"name": "wr", "kind": "write", "fileset": 0, "iosize": 4096, "random": true}]}]),
        json!({"runtime_ns": 400_000_000u64}),
    );
    let out = run(&w, &Progress::new()).unwrap();
    assert_eq!(out.status, Status::Complete);
    let posts = flowop(&out, "post").ops;
    let blocks = flowop(&out, "gate").ops;
    assert!(blocks > 0);
    // Ten posts per block, and the high-water mark keeps posters at most 20 + 10 ahead. The
    // run's end may fall between a post reaching the semaphore and its count, one per poster.
    assert!(
        posts + 2 >= blocks * 10 && posts <= blocks * 10 + 30,
        "{posts} posts, {blocks} blocks"
    );
    // One write per block, except that the run's end may fall between the last block and its
    // write (threads stop at any flowop boundary).
    let writes = flowop(&out, "wr").ops;
    assert!(
        writes == blocks || writes + 1 == blocks,
        "{writes} writes, {blocks} blocks"
    );
}

#[test]
fn whole_file_reads_and_appends_leave_the_position_at_the_end_as_filebench_does() {
    let _alone = exclusive();
    let dir = TempDir::new("position");
    let w = workload(
        dir.path(),
        json!([{"name": "f", "path": "/", "entries": 1, "size": {"fixed": 65536},
                "prealloc": 100, "single": true}]),
        json!([{"name": "t", "instances": 1, "flowops": [
            {"name": "open", "kind": "openfile", "fileset": 0, "fd": 1},
            {"name": "whole", "kind": "readwholefile", "fd": 1, "iosize": 16384},
            {"name": "after-whole", "kind": "read", "fd": 1, "iosize": 4096},
            {"name": "append", "kind": "appendfile", "fd": 1, "iosize": 100},
            {"name": "after-append", "kind": "read", "fd": 1, "iosize": 4096},
            {"name": "close", "kind": "closefile", "fd": 1}]}]),
        json!({"runtime_ns": 200_000_000u64}),
    );
    let out = run(&w, &Progress::new()).unwrap();
    assert_eq!(out.status, Status::Complete);
    let appends = flowop(&out, "append").ops;
    assert!(appends > 0);
    // A sequential read after either finds the end of the file (and starts over).
    for name in ["after-whole", "after-append"] {
        assert!(flowop(&out, name).ops > 0, "{name} never ran");
        assert_eq!(flowop(&out, name).bytes, 0, "{name} read data");
    }
    // Every append landed at the end; every whole-file read read all there was then. The run's
    // end may fall after an append wrote and before it was counted (threads stop at any
    // flowop boundary, and an operation ending past the deadline is not measured).
    let size = std::fs::metadata(dir.path().join("f")).unwrap().len();
    assert!(
        size == 65536 + 100 * appends || size == 65536 + 100 * (appends + 1),
        "{size} bytes after {appends} appends"
    );
    let whole = flowop(&out, "whole");
    let reads = whole.ops;
    assert!(whole.bytes >= 65536 * reads && whole.bytes <= size * reads);
}

#[test]
fn eventlimit_paces_a_thread_at_the_event_rate() {
    let _alone = exclusive();
    let dir = TempDir::new("events");
    let w = workload(
        dir.path(),
        json!([{"name": "s", "path": "/", "entries": 20, "size": {"fixed": 0}, "prealloc": 100}]),
        json!([{"name": "t", "instances": 2, "flowops": [
            {"name": "stat", "kind": "statfile", "fileset": 0},
            {"name": "limit", "kind": "eventlimit"}]}]),
        json!({"eventgen_rate": 100.0, "runtime_ns": 1_000_000_000u64}),
    );
    let out = run(&w, &Progress::new()).unwrap();
    let stats = flowop(&out, "stat").ops;
    // 100 events/s for 1 s, shared by both threads: never more (plus one event in flight per
    // thread), and not many fewer unless the machine is starved.
    assert!((70..=102).contains(&stats), "{stats} stats at 100 events/s");
    // The events are the schedule: the 99 generated before the deadline were taken, or
    // count as never issued.
    let open = out
        .open_loop
        .as_ref()
        .expect("an eventlimit keeps the generator's schedule");
    assert_eq!(open.rate, 100.0);
    assert_eq!(open.events.unwrap() + open.not_issued, 99);
}

#[test]
fn an_event_generator_nobody_takes_from_is_no_schedule() {
    let _alone = exclusive();
    let dir = TempDir::new("no-events");
    let w = workload(
        dir.path(),
        json!([{"name": "s", "path": "/", "entries": 5, "size": {"fixed": 0}, "prealloc": 100}]),
        json!([{"name": "t", "instances": 1, "flowops": [
            {"name": "stat", "kind": "statfile", "fileset": 0}]}]),
        json!({"eventgen_rate": 100.0, "runtime_ns": 100_000_000u64}),
    );
    let out = run(&w, &Progress::new()).unwrap();
    assert!(out.open_loop.is_none());
}

#[test]
fn opennext_rotates_slots_and_opens_every_file_of_the_set() {
    let _alone = exclusive();
    let dir = TempDir::new("opennext");
    let w = workload(
        dir.path(),
        json!([{"name": "data", "path": "/", "entries": 5, "size": {"fixed": 65536},
                "prealloc": 100, "dirwidth": 1024}]),
        json!([{"name": "t", "instances": 1, "flowops": [
            {"name": "rd", "kind": "read", "fileset": 0, "iosize": 2048, "random": true,
             "opennext": true, "iters": 10}]}]),
        json!({"runtime_ns": 200_000_000u64}),
    );
    let out = run(&w, &Progress::new()).unwrap();
    assert_eq!(out.status, Status::Complete);
    assert!(flowop(&out, "rd").ops >= 128);
    // The files start out of the page cache; each slot opened the next file in turn, so every
    // file has been read from. Without opennext, slot 0 would read the first file only.
    let mut paths = Vec::new();
    collect_files(&dir.path().join("data"), &mut paths);
    assert_eq!(paths.len(), 5);
    for p in paths {
        assert!(mincore_pages(&p).iter().any(|&c| c), "{p:?} was never read");
    }
}

fn collect_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            collect_files(&p, out);
        } else {
            out.push(p);
        }
    }
}
