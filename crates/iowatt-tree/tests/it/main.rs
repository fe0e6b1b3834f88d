//! Recreations in real temporary directories: structure, sizes, modes and times; refused
//! manifests; resume; and writes that never leave the destination.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use iowatt_tree::{run, Config, Entry, Kind, Progress, Recreation, Status, TreeError};

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "iowatt-tree-it-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chmod")
            .args(["-R", "u+rwx"])
            .arg(&self.0)
            .status();
        let _ = fs::remove_dir_all(&self.0);
    }
}

const T: i64 = 1_600_000_000_123_456_789;

fn entry(path: &str, kind: Kind, size: u64, mode: u32) -> Entry {
    Entry {
        path: path.into(),
        kind,
        size,
        mode,
        mtime_ns: T,
        atime_ns: T - 1_000_000_000,
        target: None,
    }
}

fn link(path: &str, target: &str) -> Entry {
    Entry {
        target: Some(target.into()),
        ..entry(path, Kind::Symlink, target.len() as u64, 0o777)
    }
}

fn config(dest: &Path) -> Config {
    Config {
        dest: dest.into(),
        sparse: false,
        resume: false,
        threads: 4,
        seed: 7,
    }
}

fn tree() -> Vec<Entry> {
    let mut v = vec![
        entry("a", Kind::Dir, 0, 0o755),
        entry("a/b", Kind::Dir, 0, 0o500),
        entry("a/b/f", Kind::File, 100_000, 0o600),
        entry("a/empty", Kind::File, 0, 0o644),
        link("a/l", "b/f"),
        link("up", "../outside"),
    ];
    for i in 0..600 {
        v.push(entry(&format!("a/many{i}"), Kind::File, i, 0o640));
    }
    v
}

fn recreate(cfg: Config, entries: Vec<Entry>) -> Result<iowatt_tree::Output, TreeError> {
    let rec = Recreation::new(cfg, entries)?;
    run(&rec, &Progress::new())
}

#[test]
fn a_tree_comes_back_with_its_sizes_modes_times_and_links() {
    let tmp = TempDir::new();
    let out = recreate(config(&tmp.0), tree()).unwrap();
    assert_eq!(out.status, Status::Complete);
    assert_eq!(
        (out.counts.dirs, out.counts.files, out.counts.links),
        (2, 602, 2)
    );
    let f = fs::symlink_metadata(tmp.0.join("a/b/f")).unwrap();
    assert_eq!(f.len(), 100_000);
    assert_eq!(f.mode() & 0o7777, 0o600);
    assert_eq!(f.mtime() * 1_000_000_000 + f.mtime_nsec(), T);
    assert_eq!(
        f.atime() * 1_000_000_000 + f.atime_nsec(),
        T - 1_000_000_000
    );
    // Directories get their times after their content is made.
    let b = fs::symlink_metadata(tmp.0.join("a/b")).unwrap();
    assert_eq!(b.mode() & 0o7777, 0o500);
    assert_eq!(b.mtime() * 1_000_000_000 + b.mtime_nsec(), T);
    let a = fs::symlink_metadata(tmp.0.join("a")).unwrap();
    assert_eq!(a.mtime() * 1_000_000_000 + a.mtime_nsec(), T);
    assert_eq!(
        fs::read_link(tmp.0.join("up")).unwrap(),
        Path::new("../outside")
    );
    let l = fs::symlink_metadata(tmp.0.join("a/l")).unwrap();
    assert_eq!(l.mtime() * 1_000_000_000 + l.mtime_nsec(), T);
    assert_eq!(fs::metadata(tmp.0.join("a/many599")).unwrap().len(), 599);
}

#[test]
fn content_is_random_and_set_by_the_seed() {
    let (t1, t2) = (TempDir::new(), TempDir::new());
    recreate(config(&t1.0), tree()).unwrap();
    recreate(config(&t2.0), tree()).unwrap();
    let x = fs::read(t1.0.join("a/b/f")).unwrap();
    assert_eq!(x, fs::read(t2.0.join("a/b/f")).unwrap());
    let distinct: std::collections::HashSet<u8> = x.iter().copied().collect();
    assert_eq!(distinct.len(), 256);
}

#[test]
fn sparse_files_take_no_blocks() {
    let tmp = TempDir::new();
    let cfg = Config {
        sparse: true,
        ..config(&tmp.0)
    };
    recreate(cfg, vec![entry("big", Kind::File, 1 << 30, 0o644)]).unwrap();
    let m = fs::metadata(tmp.0.join("big")).unwrap();
    assert_eq!(m.len(), 1 << 30);
    assert!(m.blocks() < 16, "{} blocks", m.blocks());
}

fn refused(entries: Vec<Entry>, fragment: &str) {
    let tmp = TempDir::new();
    let dest = tmp.0.join("dest");
    fs::create_dir(&dest).unwrap();
    match recreate(config(&dest), entries) {
        Err(e @ TreeError::Manifest { .. }) => {
            assert!(e.to_string().contains(fragment), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fs::read_dir(&tmp.0).unwrap().count(), 1);
    assert_eq!(fs::read_dir(&dest).unwrap().count(), 0);
}

#[test]
fn manifests_that_leave_the_destination_are_refused_before_anything_is_made() {
    let f = |p: &str| entry(p, Kind::File, 1, 0o644);
    let d = |p: &str| entry(p, Kind::Dir, 0, 0o755);
    refused(vec![d("a"), f("../x")], "`.` or `..`");
    refused(vec![d("a"), f("a/../../x")], "`.` or `..`");
    refused(vec![f("/etc/x")], "absolute");
    refused(vec![f("a//x"), d("a")], "empty component");
    refused(vec![link("l", "/tmp"), f("l/x")], "says is a symlink");
    refused(vec![f("f"), f("f/x")], "says is a file");
    refused(vec![f("nodir/x")], "does not list");
    refused(vec![f("x"), f("x")], "twice");
    refused(
        vec![entry("l", Kind::Symlink, 0, 0o777)],
        "without a target",
    );
}

#[test]
fn a_symlink_planted_in_the_destination_does_not_lead_outside_on_resume() {
    let tmp = TempDir::new();
    let (dest, outside) = (tmp.0.join("dest"), tmp.0.join("outside"));
    fs::create_dir_all(&dest).unwrap();
    fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, dest.join("a")).unwrap();
    std::os::unix::fs::symlink(outside.join("f"), dest.join("f")).unwrap();
    let cfg = Config {
        resume: true,
        ..config(&dest)
    };
    let entries = vec![
        entry("a", Kind::Dir, 0, 0o755),
        entry("a/x", Kind::File, 10, 0o644),
        entry("f", Kind::File, 10, 0o644),
    ];
    recreate(cfg, entries).unwrap();
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    assert!(fs::symlink_metadata(dest.join("a")).unwrap().is_dir());
    assert!(fs::symlink_metadata(dest.join("f")).unwrap().is_file());
    assert_eq!(fs::metadata(dest.join("a/x")).unwrap().len(), 10);
}

#[test]
fn resume_keeps_what_matches_and_remakes_the_rest() {
    let tmp = TempDir::new();
    recreate(config(&tmp.0), tree()).unwrap();
    let a = tmp.0.join("a");
    fs::set_permissions(a.join("b"), fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(a.join("b/f"), b"short").unwrap(); // wrong size and mtime
    fs::remove_file(a.join("many3")).unwrap(); // missing
    fs::remove_file(a.join("l")).unwrap();
    fs::create_dir(a.join("l")).unwrap(); // a directory where a symlink goes
    let cfg = Config {
        resume: true,
        ..config(&tmp.0)
    };
    let out = recreate(cfg, tree()).unwrap();
    assert_eq!((out.counts.files, out.counts.links), (2, 1));
    assert_eq!(out.counts.skipped, 601);
    assert_eq!(fs::metadata(a.join("b/f")).unwrap().len(), 100_000);
    assert_eq!(fs::metadata(a.join("many3")).unwrap().len(), 3);
    assert_eq!(fs::read_link(a.join("l")).unwrap(), Path::new("b/f"));
    let b = fs::symlink_metadata(a.join("b")).unwrap();
    assert_eq!((b.mode() & 0o7777, b.mtime()), (0o500, T / 1_000_000_000));
}

#[test]
fn a_cancelled_run_stops_and_says_so() {
    let tmp = TempDir::new();
    let rec = Recreation::new(config(&tmp.0), tree()).unwrap();
    let progress = Progress::new();
    progress.cancel();
    let out = run(&rec, &progress).unwrap();
    assert_eq!(out.status, Status::Cancelled);
    assert!(out.counts.entries < 606);
}
