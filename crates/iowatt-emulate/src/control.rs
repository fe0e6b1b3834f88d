//! MOUNT/.iowatt: what the disk has done, as small text files a power sampler, a script or
//! `cat` reads — `energy_uj` grows like RAPL's `energy_uj`, in microjoules. The directory is
//! found by its path and never listed at the root, so a workload walking the tree never sees
//! it.

use std::ffi::OsStr;
use std::time::UNIX_EPOCH;

use fuser::{FileAttr, FileType, INodeNo};
use iowatt_sim::disk::{DiskModel, State};

use crate::array::ArrayCounters;
use crate::drive::{Counters, StreamCounts};

pub const NAME: &str = ".iowatt";
/// Inode numbers far above any the mount hands out: the directory's, then its entries'.
const DIR: u64 = u64::MAX - 4096;
/// The files of one disk's control directory.
pub const DISK_FILES: [&str; 10] = [
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
/// How the mount was set up (`Options::settings`), the same for a disk and an array.
pub const SETTINGS: &str = "config.json";
/// The one file a user writes: the stimulus in force (`iowatt emulate set`).
pub const STIMULUS: &str = "stimulus";

/// An entry under `.iowatt`: its path there (`energy_uj`, `disk0/state`), and its parent's
/// inode.
struct Entry {
    path: String,
    parent: u64,
    dir: bool,
}

/// The control directory's tree, numbered from [`DIR`]: the files a device gives, with the
/// directories their paths need.
pub struct Control {
    entries: Vec<Entry>,
}

impl Control {
    /// A tree of `files`, paths relative to `.iowatt` (one level of directories).
    pub fn new<S: AsRef<str>>(files: &[S]) -> Self {
        let mut entries: Vec<Entry> = Vec::new();
        for f in files {
            let f = f.as_ref();
            let parent = match f.rsplit_once('/') {
                Some((dir, _)) => match entries.iter().position(|e| e.dir && e.path == dir) {
                    Some(i) => DIR + 1 + i as u64,
                    None => {
                        entries.push(Entry {
                            path: dir.to_string(),
                            parent: DIR,
                            dir: true,
                        });
                        DIR + entries.len() as u64
                    }
                },
                None => DIR,
            };
            entries.push(Entry {
                path: f.to_string(),
                parent,
                dir: false,
            });
        }
        Control { entries }
    }

    fn entry(&self, ino: INodeNo) -> Option<&Entry> {
        ino.0
            .checked_sub(DIR + 1)
            .and_then(|i| self.entries.get(i as usize))
    }

    /// Whether `ino` is the control directory or one of its entries.
    pub fn owns(&self, ino: INodeNo) -> bool {
        ino.0 == DIR || self.entry(ino).is_some()
    }

    /// A file's path under `.iowatt`, None for a directory or another inode.
    pub fn path(&self, ino: INodeNo) -> Option<&str> {
        self.entry(ino).filter(|e| !e.dir).map(|e| e.path.as_str())
    }

    /// `.iowatt` in the root, or an entry of a control directory.
    pub fn lookup(&self, parent: INodeNo, name: &OsStr) -> Option<FileAttr> {
        if parent == INodeNo::ROOT && name == NAME {
            return self.getattr(INodeNo(DIR));
        }
        let i = self
            .entries
            .iter()
            .position(|e| e.parent == parent.0 && OsStr::new(leaf(&e.path)) == name)?;
        self.getattr(INodeNo(DIR + 1 + i as u64))
    }

    pub fn getattr(&self, ino: INodeNo) -> Option<FileAttr> {
        if ino.0 == DIR {
            return Some(file_attr(DIR, FileType::Directory, false));
        }
        let e = self.entry(ino)?;
        let kind = if e.dir {
            FileType::Directory
        } else {
            FileType::RegularFile
        };
        Some(file_attr(ino.0, kind, e.path == STIMULUS))
    }

    /// A control directory's listing.
    pub fn entries(&self, ino: INodeNo) -> Vec<(u64, FileType, &str)> {
        let parent = self.entry(ino).map_or(INodeNo::ROOT.0, |e| e.parent);
        let mut out = vec![
            (ino.0, FileType::Directory, "."),
            (parent, FileType::Directory, ".."),
        ];
        out.extend(
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.parent == ino.0)
                .map(|(i, e)| {
                    let kind = if e.dir {
                        FileType::Directory
                    } else {
                        FileType::RegularFile
                    };
                    (DIR + 1 + i as u64, kind, leaf(&e.path))
                }),
        );
        out
    }
}

fn leaf(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, l)| l)
}

fn file_attr(ino: u64, kind: FileType, writable: bool) -> FileAttr {
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
        perm: match (dir, writable) {
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

/// A disk's counter file's text.
pub fn read(name: &str, c: &Counters, model: &DiskModel, range: Option<(f64, f64)>) -> String {
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
    let (state_s, state_j) = by_state(model, &c.state_ns);
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
        "state_s": state_s,
        "state_j": state_j,
    })
}

/// Seconds and joules in each state (by its name), from the ns spent in each.
fn by_state(model: &DiskModel, state_ns: &[u64; 5]) -> (serde_json::Value, serde_json::Value) {
    let per_state = |f: &dyn Fn(usize, State) -> f64| {
        State::ALL
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name().to_string(), f(i, *s).into()))
            .collect::<serde_json::Map<_, _>>()
    };
    (
        per_state(&|i, _| state_ns[i] as f64 / 1e9).into(),
        per_state(&|i, s| s.watts(model) * state_ns[i] as f64 / 1e9).into(),
    )
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

/// The files of an array's control directory: the array's, then each disk's under
/// `disk<N>/`.
pub fn array_files(disks: usize) -> Vec<String> {
    let array = [
        "energy_uj",
        "cycles",
        "ops",
        "bytes",
        "queue",
        "gear",
        "disks",
        "counters.json",
    ];
    let disk = ["energy_uj", "state", "cycles", "queue"];
    let mut files: Vec<String> = array.iter().map(|f| f.to_string()).collect();
    for d in 0..disks {
        files.extend(disk.iter().map(|f| format!("disk{d}/{f}")));
    }
    files
}

fn uj(j: f64) -> u64 {
    (j * 1e6).round() as u64
}

/// An array's counter file's text.
pub fn array_read(path: &str, c: &ArrayCounters, model: &DiskModel, personality: &str) -> String {
    if let Some((disk, name)) = path.split_once('/') {
        let Some(d) = disk
            .strip_prefix("disk")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| c.disks.get(n))
        else {
            return String::new();
        };
        return match name {
            "energy_uj" => format!("{}\n", uj(d.energy_j)),
            "state" => format!("{}\n", d.state.name()),
            "cycles" => format!("{}\n", d.cycles),
            _ => format!("{}\n", d.queued),
        };
    }
    match path {
        "energy_uj" => format!("{}\n", uj(c.energy_j())),
        "cycles" => format!("{}\n", c.cycles()),
        "ops" => format!("{}\n", c.read_ops + c.write_ops),
        "bytes" => format!("{}\n", c.read_bytes + c.write_bytes),
        "queue" => format!("{}\n", c.pending),
        "gear" => format!("{}\n", c.gear.unwrap_or(c.disks.len())),
        "disks" => format!("{}\n", c.disks.len()),
        _ => format!("{}\n", array_json(c, model, personality)),
    }
}

/// Every counter of an array as one JSON object (times in seconds, energy in joules), each
/// disk's under `disks`.
pub fn array_json(c: &ArrayCounters, model: &DiskModel, personality: &str) -> serde_json::Value {
    let disks: Vec<_> = c
        .disks
        .iter()
        .map(|d| {
            let (state_s, state_j) = by_state(model, &d.state_ns);
            serde_json::json!({
                "state": d.state.name(),
                "queue": d.queued,
                "cycles": d.cycles,
                "energy_j": d.energy_j,
                "energy_uj": uj(d.energy_j),
                "state_s": state_s,
                "state_j": state_j,
            })
        })
        .collect();
    serde_json::json!({
        "t_s": c.now_ns as f64 / 1e9,
        "personality": personality,
        "gear": c.gear,
        "queue": c.pending,
        "read_ops": c.read_ops,
        "write_ops": c.write_ops,
        "lookups": c.lookups,
        "read_bytes": c.read_bytes,
        "write_bytes": c.write_bytes,
        "drained": c.drained,
        "fs_reads": c.fs_reads,
        "fs_writes": c.fs_writes,
        "cycles": c.cycles(),
        "energy_j": c.energy_j(),
        "energy_uj": uj(c.energy_j()),
        "disks": disks,
    })
}
