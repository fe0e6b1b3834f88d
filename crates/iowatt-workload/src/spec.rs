//! The workload model, in FileBench's terms: files, threads with instances, and flowops.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// pread/pwrite, one operation in flight per thread.
    Psync,
    /// io_uring, `iodepth` operations in flight per thread.
    IoUring,
}

/// A flowop's type, named as in FileBench's workload language.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    #[default]
    Read,
    Write,
    CreateFile,
    OpenFile,
    CloseFile,
    DeleteFile,
    StatFile,
    ReadWholeFile,
    WriteWholeFile,
    AppendFile,
    AppendFileRand,
    Fsync,
    FsyncSet,
    AioWrite,
    AioWait,
    MakeDir,
    RemoveDir,
    ListDir,
    Hog,
    Delay,
    EventLimit,
    OpsLimit,
    IopsLimit,
    BwLimit,
    SemBlock,
    SemPost,
    Block,
    Wakeup,
    FinishOnCount,
    FinishOnBytes,
    /// A composite flowop (`define flowop`): runs the `value` flowops after it, its body,
    /// `iters` times; its own statistics time the whole body.
    Composite,
}

impl OpKind {
    /// FileBench's FLOW_TYPE_IO and FLOW_TYPE_AIO: the operations its "IO Summary" counts.
    /// The rest (waits, limits, CPU work) have their own statistics but no share of ops/s.
    pub fn is_io(self) -> bool {
        !matches!(
            self,
            OpKind::Hog
                | OpKind::Delay
                | OpKind::EventLimit
                | OpKind::OpsLimit
                | OpKind::IopsLimit
                | OpKind::BwLimit
                | OpKind::SemBlock
                | OpKind::SemPost
                | OpKind::Block
                | OpKind::Wakeup
                | OpKind::FinishOnCount
                | OpKind::FinishOnBytes
                | OpKind::Composite
        )
    }

    /// FileBench's FLOW_ATTR_READ / FLOW_ATTR_WRITE: what `iopslimit` and `bwlimit` count.
    pub fn moves_data(self) -> bool {
        matches!(
            self,
            OpKind::Read
                | OpKind::Write
                | OpKind::ReadWholeFile
                | OpKind::WriteWholeFile
                | OpKind::AppendFile
                | OpKind::AppendFileRand
                | OpKind::AioWrite
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::CreateFile => "createfile",
            OpKind::OpenFile => "openfile",
            OpKind::CloseFile => "closefile",
            OpKind::DeleteFile => "deletefile",
            OpKind::StatFile => "statfile",
            OpKind::ReadWholeFile => "readwholefile",
            OpKind::WriteWholeFile => "writewholefile",
            OpKind::AppendFile => "appendfile",
            OpKind::AppendFileRand => "appendfilerand",
            OpKind::Fsync => "fsync",
            OpKind::FsyncSet => "fsyncset",
            OpKind::AioWrite => "aiowrite",
            OpKind::AioWait => "aiowait",
            OpKind::MakeDir => "makedir",
            OpKind::RemoveDir => "removedir",
            OpKind::ListDir => "listdir",
            OpKind::Hog => "hog",
            OpKind::Delay => "delay",
            OpKind::EventLimit => "eventlimit",
            OpKind::OpsLimit => "opslimit",
            OpKind::IopsLimit => "iopslimit",
            OpKind::BwLimit => "bwlimit",
            OpKind::SemBlock => "semblock",
            OpKind::SemPost => "sempost",
            OpKind::Block => "block",
            OpKind::Wakeup => "wakeup",
            OpKind::FinishOnCount => "finishoncount",
            OpKind::FinishOnBytes => "finishonbytes",
            OpKind::Composite => "composite",
        }
    }
}

/// A size drawn for each file of a fileset (or each operation of a flowop), with FileBench's
/// distributions: `cvar-gamma` / randvar `gamma`, `cvar-uniform` / `uniform`, and `tabular`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SizeDist {
    Fixed(u64),
    /// `min` plus a gamma draw of this mean and shape (FileBench's `gamma` parameter, 1.5 in
    /// its shipped files); a randvar's `min` shifts the distribution.
    Gamma {
        mean: f64,
        shape: f64,
        #[serde(default)]
        min: u64,
    },
    Uniform {
        min: u64,
        max: u64,
    },
    /// Rows of (weight, min, max): a row is chosen by weight, then a value uniform in it.
    Tabular(Vec<(f64, u64, u64)>),
    /// A draw of `of` rounded to the nearest multiple of `round` (if not 0), then clamped to
    /// [`min`, `max`]: a randvar's `round`, a cvar's `round`, `min` and `max`.
    Bounded {
        of: Box<SizeDist>,
        #[serde(default)]
        round: u64,
        #[serde(default)]
        min: u64,
        #[serde(default = "u64_max")]
        max: u64,
    },
}

fn u64_max() -> u64 {
    u64::MAX
}

/// A FileBench fileset: `entries` files in a directory tree under `path/name`, or, for
/// `define file`, the single file `path/name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesetSpec {
    pub name: String,
    pub path: PathBuf,
    pub entries: u64,
    pub size: SizeDist,
    /// Mean entries per directory; the tree's mean depth is ln(entries)/ln(dirwidth).
    #[serde(default = "default_dirwidth")]
    pub dirwidth: u64,
    /// Shape of the gamma distribution directory widths and depths are drawn from; 0 fixes them.
    #[serde(default = "default_dirgamma")]
    pub dirgamma: f64,
    /// Empty leaf directories for makedir/removedir/listdir.
    #[serde(default)]
    pub leafdirs: u64,
    /// Percentage of entries created (and filled) before the clock starts.
    #[serde(default)]
    pub prealloc: u32,
    /// Keep an existing tree (of the same layout) instead of recreating it.
    #[serde(default)]
    pub reuse: bool,
    /// Create files on several threads.
    #[serde(default)]
    pub paralloc: bool,
    #[serde(default)]
    pub readonly: bool,
    #[serde(default)]
    pub writeonly: bool,
    /// `define file`: one file at `path/name`, no tree.
    #[serde(default)]
    pub single: bool,
    /// Bits per byte of the data laid out and written to the fileset's files (the FSL fork's
    /// `entropy`); none: incompressible random data.
    #[serde(default)]
    pub entropy: Option<f64>,
}

fn default_dirwidth() -> u64 {
    20
}

fn default_dirgamma() -> f64 {
    1.5
}

/// How a run ends (FileBench's `set mode quit ...`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quit {
    /// At the runtime; a thread that runs out of files stops the run early.
    #[default]
    Timeout,
    /// When every thread has finished (finishoncount/finishonbytes, or out of files).
    AllDone,
    /// When the first thread has finished.
    FirstDone,
}

/// A file (or whole block device) the workload reads and writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileSpec {
    pub name: String,
    pub path: PathBuf,
    /// Size in bytes; 0 creates an empty file that sequential writes grow.
    pub size: u64,
    /// Create the file and fill it with incompressible data before the clock starts.
    pub prealloc: bool,
    /// Keep an existing file of the right size instead of rewriting it.
    pub reuse: bool,
    /// The path is a block device: never created, truncated or filled; writes wrap at `size`.
    #[serde(default)]
    pub device: bool,
}

/// One operation in a thread's loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flowop {
    pub name: String,
    pub kind: OpKind,
    /// Index into [`Workload::files`] (FileIO workloads).
    #[serde(default)]
    pub file: usize,
    /// Index into [`Workload::filesets`]; when set, the flowop works on the fileset instead.
    #[serde(default)]
    pub fileset: Option<usize>,
    #[serde(default)]
    pub iosize: u64,
    /// Draw each operation's size from this instead of using `iosize`.
    #[serde(default)]
    pub iosize_dist: Option<SizeDist>,
    /// Random iosize-aligned offsets within the working set; otherwise sequential.
    #[serde(default)]
    pub random: bool,
    #[serde(default)]
    pub directio: bool,
    #[serde(default)]
    pub dsync: bool,
    /// Bytes at the start of the file random offsets are drawn from; 0 means the whole file.
    #[serde(default)]
    pub workingset: u64,
    /// The thread's descriptor slot (FileBench's `fd`); 0 is the default slot.
    #[serde(default)]
    pub fd: u32,
    /// Pick the file at this index (drawn each time, modulo the fileset's entries) instead of
    /// the next in rotation: FileBench's `indexed`.
    #[serde(default)]
    pub index: Option<SizeDist>,
    /// The slot whose file's size `writewholefile` writes.
    #[serde(default)]
    pub srcfd: u32,
    /// Rotate through the thread's descriptor slots, opening a file in each on first use.
    #[serde(default)]
    pub opennext: bool,
    /// `POSIX_FADV_RANDOM` on open.
    #[serde(default)]
    pub noreadahead: bool,
    /// Times the flowop runs each pass of the loop.
    #[serde(default = "one")]
    pub iters: u32,
    /// The count, size or duration a flowop takes (hog loops, delay seconds, semaphore counts,
    /// finishoncount ops, finishonbytes bytes, a composite's body length).
    #[serde(default)]
    pub value: u64,
    /// The flowop a sempost/wakeup signals, or whose counts a limit or finish flowop watches.
    #[serde(default)]
    pub target: Option<String>,
    /// sempost: wait while the target is `highwater` posts ahead.
    #[serde(default)]
    pub blocking: bool,
    #[serde(default)]
    pub highwater: u64,
}

fn one() -> u32 {
    1
}

impl Default for Flowop {
    fn default() -> Self {
        Flowop {
            name: String::new(),
            kind: OpKind::Read,
            file: 0,
            fileset: None,
            iosize: 0,
            iosize_dist: None,
            random: false,
            directio: false,
            dsync: false,
            workingset: 0,
            fd: 0,
            srcfd: 0,
            index: None,
            opennext: false,
            noreadahead: false,
            iters: 1,
            value: 0,
            target: None,
            blocking: false,
            highwater: 0,
        }
    }
}

/// A thread definition; `instances` copies of it run, each with its own offsets and fds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSpec {
    pub name: String,
    pub instances: u32,
    pub flowops: Vec<Flowop>,
    /// The FileBench process the thread belongs to (only a name: every thread runs in iowatt).
    #[serde(default)]
    pub process: String,
    /// Bytes of I/O memory each instance gets (`memsize`); 0 sizes it to the largest I/O.
    #[serde(default)]
    pub memsize: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub name: String,
    #[serde(default)]
    pub files: Vec<FileSpec>,
    #[serde(default)]
    pub filesets: Vec<FilesetSpec>,
    pub threads: Vec<ThreadSpec>,
    pub engine: Engine,
    pub iodepth: u32,
    /// Measured time, after the ramp.
    pub runtime_ns: u64,
    /// Warm-up before the measured phase; its operations are not recorded.
    pub ramp_ns: u64,
    /// Total intended operations per second across all threads (open loop); `None` runs flat out.
    pub rate: Option<f64>,
    pub seed: u64,
    #[serde(default = "default_interval_ns")]
    pub interval_ns: u64,
    /// Latency thresholds each interval counts the operations above (the study's 100 and
    /// 200 ms by default): a second's slow share, against its throughput.
    #[serde(default = "default_slow_ns")]
    pub slow_ns: Vec<u64>,
    /// Edges of the latency bands each interval counts its operations in, for the heatmap
    /// (iowatt.histogram.HEAT_EDGES_NS); none by default.
    #[serde(default)]
    pub heat_ns: Vec<u64>,
    /// Events per second of FileBench's event generator, which eventlimit/opslimit/iopslimit/
    /// bwlimit flowops consume; `None` disables it and makes those flowops no-ops.
    #[serde(default)]
    pub eventgen_rate: Option<f64>,
    #[serde(default)]
    pub quit: Quit,
    /// With a schedule: how long operations in flight at the deadline are waited for before
    /// they count as outstanding; `None` is [`DEFAULT_DRAIN_NS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_ns: Option<u64>,
}

/// Ten seconds: a device answering within it is measured, however late.
pub const DEFAULT_DRAIN_NS: u64 = 10_000_000_000;

fn default_interval_ns() -> u64 {
    1_000_000_000
}

pub fn default_slow_ns() -> Vec<u64> {
    vec![100_000_000, 200_000_000]
}

impl Workload {
    pub fn total_threads(&self) -> u32 {
        self.threads.iter().map(|t| t.instances).sum()
    }

    /// The rate of the run's schedule, if it has one (it is then an open loop): its `rate`
    /// in I/O operations per second, or its event generator's, in events per second, when a
    /// flowop takes events from it.
    pub fn schedule(&self) -> Option<f64> {
        let limited = self.threads.iter().flat_map(|t| &t.flowops).any(|f| {
            matches!(
                f.kind,
                OpKind::EventLimit | OpKind::OpsLimit | OpKind::IopsLimit | OpKind::BwLimit
            )
        });
        self.rate.or(self
            .eventgen_rate
            .filter(|&r| r > 0.0 && limited && !self.filesets.is_empty()))
    }

    pub(crate) fn drain_ns(&self) -> Option<u64> {
        self.schedule()
            .map(|_| self.drain_ns.unwrap_or(DEFAULT_DRAIN_NS))
    }
}
