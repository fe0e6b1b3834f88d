//! MOUNT/.iowatt: what the disk has done, as small text files a power sampler, a script or
//! `cat` reads — `energy_uj` grows like RAPL's `energy_uj`, in microjoules. The directory is
//! found by its path and never listed at the root, so a workload walking the tree never sees
//! it.

use std::ffi::OsStr;
use std::time::UNIX_EPOCH;

use fuser::{FileAttr, FileType, INodeNo};
use iowatt_sim::disk::{DiskModel, State};

use crate::drive::{Counters, StreamCounts};

pub const NAME: &str = ".iowatt";
/// Inode numbers far above any the mount hands out.
const DIR: u64 = u64::MAX - 64;
const FILES: [&str; 10] = [
    "energy_uj",
    "state",
    "queue",
    "ops",
    "bytes",
    "cycles",
    "counters.json",
    "stimulus",
    "speed",
    "streams.json",
];
/// The one file a user writes: the stimulus in force (`iowatt emulate set`).
pub const STIMULUS: INodeNo = INodeNo(DIR + 8);
/// What each process had served: where /proc/PID/io counts nothing for FUSE.
pub const STREAMS: INodeNo = INodeNo(DIR + 10);

fn file_attr(ino: u64, kind: FileType) -> FileAttr {
    let dir = kind == FileType::Directory;
    FileAttr {
        ino: INodeNo(ino),
        // Sizes are unknown until read; files are opened for direct I/O, so 0 reads whole.
        size: 0,
        blocks: 0,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind,
        perm: match (dir, INodeNo(ino) == STIMULUS) {
            (true, _) => 0o555,
            (false, true) => 0o644,
            (false, false) => 0o444,
        },
        nlink: if dir { 2 } else { 1 },
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

/// `.iowatt` in the root, or a counter file in it.
pub fn lookup(parent: INodeNo, name: &OsStr) -> Option<FileAttr> {
    if parent == INodeNo::ROOT && name == NAME {
        return getattr(INodeNo(DIR));
    }
    if parent.0 != DIR {
        return None;
    }
    let i = FILES.iter().position(|f| OsStr::new(f) == name)?;
    getattr(INodeNo(DIR + 1 + i as u64))
}

pub fn getattr(ino: INodeNo) -> Option<FileAttr> {
    match ino.0 {
        DIR => Some(file_attr(DIR, FileType::Directory)),
        i if i > DIR && i <= DIR + FILES.len() as u64 => Some(file_attr(i, FileType::RegularFile)),
        _ => None,
    }
}

/// The control directory's own listing.
pub fn entries() -> impl Iterator<Item = (u64, FileType, &'static str)> {
    [
        (DIR, FileType::Directory, "."),
        (INodeNo::ROOT.0, FileType::Directory, ".."),
    ]
    .into_iter()
    .chain(
        FILES
            .iter()
            .enumerate()
            .map(|(i, f)| (DIR + 1 + i as u64, FileType::RegularFile, *f)),
    )
}

/// A counter file's text.
pub fn read(ino: INodeNo, c: &Counters, model: &DiskModel, range: Option<(f64, f64)>) -> String {
    let name = FILES.get((ino.0 - DIR - 1) as usize).copied().unwrap_or("");
    match name {
        "energy_uj" => format!("{}\n", (c.energy_j * 1e6).round() as u64),
        "state" => format!("{}\n", c.state.name()),
        "queue" => format!("{}\n", c.queue),
        "ops" => format!("{}\n", c.read_ops + c.write_ops),
        "bytes" => format!("{}\n", c.read_bytes + c.write_bytes),
        "cycles" => format!("{}\n", c.cycles),
        "stimulus" => c.stimulus.map_or("none\n".into(), |v| format!("{v}\n")),
        "speed" => format!("{}\n", c.speed),
        _ => format!("{}\n", json(c, model, range)),
    }
}

/// Every counter as one JSON object (times in seconds, energy in joules).
pub fn json(c: &Counters, model: &DiskModel, range: Option<(f64, f64)>) -> serde_json::Value {
    let per_state = |f: &dyn Fn(usize, State) -> f64| {
        State::ALL
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name().to_string(), f(i, *s).into()))
            .collect::<serde_json::Map<_, _>>()
    };
    serde_json::json!({
        "t_s": c.now_ns as f64 / 1e9,
        "state": c.state.name(),
        "queue": c.queue,
        "read_ops": c.read_ops,
        "write_ops": c.write_ops,
        "read_bytes": c.read_bytes,
        "write_bytes": c.write_bytes,
        "drained": c.drained,
        "failed": c.failed,
        "cycles": c.cycles,
        "stimulus": c.stimulus,
        "stimulus_range": range.map(|(low, high)| [low, high]),
        "speed": c.speed,
        "stalled": c.stalled,
        "energy_j": c.energy_j,
        "energy_uj": (c.energy_j * 1e6).round() as u64,
        "state_s": per_state(&|i, _| c.state_ns[i] as f64 / 1e9),
        "state_j": per_state(&|i, s| s.watts(model) * c.state_ns[i] as f64 / 1e9),
    })
}

/// `streams.json`: per process (pid), the requests and bytes it had served.
pub fn streams(streams: &[(u32, StreamCounts)]) -> String {
    let map: serde_json::Map<String, serde_json::Value> = streams
        .iter()
        .map(|(pid, c)| {
            let v = serde_json::json!({
                "read_ops": c.read_ops,
                "read_bytes": c.read_bytes,
                "write_ops": c.write_ops,
                "write_bytes": c.write_bytes,
            });
            (pid.to_string(), v)
        })
        .collect();
    format!("{}\n", serde_json::Value::Object(map))
}
