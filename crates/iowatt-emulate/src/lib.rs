//! The emulated disk: BACKING served at MOUNT through FUSE, each read and write answered when
//! iowatt-sim's disk model — the one `iowatt sim raid` simulates arrays of — says the disk
//! would have finished it: seek from the head's last position, the seeded rotational position,
//! zoned transfer, FIFO queueing, and the power states (idle, standby after a spin-down, the
//! spin-up the next request pays) with their energy.
//!
//! An [`Emulation`] is an engine job like the others (`iowatt_metrics::Handle`): it mounts,
//! serves until cancelled, then answers what is still queued, unmounts and hands back every
//! request's charge and every state change.

mod array;
mod control;
mod device;
mod drive;
mod fs;
mod meta;
mod place;

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use fuser::{Config, MountOption};
use iowatt_metrics::Work;
use iowatt_sim::disk::DiskModel;
use iowatt_sim::raid::{self, ArrayConfig, Spec};

use crate::place::Placement;
use iowatt_sim::Streams;
use thiserror::Error;

pub use array::{ArrayCounters, ArrayDrive, ArrayLog, ArrayServed};
pub use control::{array_json, json as counters_json};
pub use drive::{
    Answer, Change, Counters, Drive, Log, Pending, Reply, Served, SetError, Stimulus, Vibration,
};
pub use iowatt_sim::disk::Discipline;
pub use meta::LayoutConfig;

/// The source name the mount carries in /proc/self/mountinfo: how `iowatt emulate unmount`
/// knows a mount is an emulated disk.
pub const FS_NAME: &str = "iowatt-emulate";

#[derive(Debug, Error, Clone, PartialEq)]
pub enum EmulateError {
    #[error("cannot mount {mount}: {reason}")]
    Mount { mount: String, reason: String },
    #[error("{0}")]
    Config(String),
    #[error("the emulated disk stopped unexpectedly (an iowatt bug)")]
    Panicked,
}

/// An array of emulated disks behind the mount: the simulator's array (disks, model, stripe
/// unit, spin-up stagger, file system model) under `spec`, its files' data using `used`
/// bytes of it (PARAID's replicas lie after), with `layout` placing their metadata when the
/// file system model is on. Its page cache is the kernel's (`Options::page_cache`): the
/// configuration's own is not used.
#[derive(Debug, Clone)]
pub struct ArrayOptions {
    pub config: ArrayConfig,
    pub spec: Spec,
    pub personality: String,
    pub used: u64,
    pub layout: LayoutConfig,
    /// The directories holding files at mount (backing inodes), in their paths' name order.
    pub dirs: Vec<u64>,
}

/// What to emulate, where.
#[derive(Debug, Clone)]
pub struct Options {
    pub backing: PathBuf,
    pub mount: PathBuf,
    pub model: DiskModel,
    /// Idle this long, the disk spins down; None: it never does.
    pub spin_down: Option<Duration>,
    /// The rotational positions' stream (`iowatt sim raid`'s disk 0 of the same seed), and
    /// the tails' draws (stream 1).
    pub seed: u64,
    /// Let the kernel cache pages above the disk (reads it holds never reach the model).
    pub page_cache: bool,
    /// How the disk picks its next request.
    pub discipline: Discipline,
    /// A throughput curve slowing the disk at the stimulus in force.
    pub vibration: Option<Vibration>,
    /// Serve from an array of disks of `model` instead of one.
    pub array: Option<ArrayOptions>,
    /// `.iowatt/config.json`'s text: how the caller set the mount up (its model's name, its
    /// scheduler), for a program using the mount to record.
    pub settings: String,
}

/// Everything the disk served, its state changes and its counters at the end.
#[derive(Debug, Clone)]
pub struct Record {
    /// The mount's clock zero on CLOCK_MONOTONIC, ns.
    pub t0_ns: u64,
    pub served: Vec<Served>,
    pub changes: Vec<Change>,
    pub stimuli: Vec<Stimulus>,
    pub counters: Counters,
    /// Files were still open at the end, so the mount was detached lazily.
    pub lazy_unmount: bool,
    /// An array's account (then `served` and `changes` are empty).
    pub array: Option<ArrayLog>,
}

pub type Outcome = Result<Record, EmulateError>;

/// What is mounted: one disk, or an array.
enum Mounted {
    Disk(Arc<Drive<drive::Reply>>),
    Array(Arc<ArrayDrive<drive::Reply>>),
}

/// Shared with the caller while the disk is mounted.
#[derive(Default)]
pub struct Progress {
    mounted: OnceLock<Mounted>,
    stop: Mutex<bool>,
    stopped: Condvar,
}

impl Progress {
    /// The counters so far; None until the mount is ready (or for an array).
    pub fn counters(&self) -> Option<Counters> {
        self.drive().map(|d| d.counters())
    }

    /// The mounted disk, once mounted: to set its stimulus.
    pub fn drive(&self) -> Option<&Drive<drive::Reply>> {
        match self.mounted.get()? {
            Mounted::Disk(d) => Some(&**d),
            Mounted::Array(_) => None,
        }
    }

    /// The mounted array, once mounted.
    pub fn array(&self) -> Option<&ArrayDrive<drive::Reply>> {
        match self.mounted.get()? {
            Mounted::Array(a) => Some(&**a),
            Mounted::Disk(_) => None,
        }
    }

    /// The mount's clock zero on CLOCK_MONOTONIC, once mounted.
    pub fn epoch_ns(&self) -> Option<u64> {
        match self.mounted.get()? {
            Mounted::Disk(d) => Some(d.epoch_ns()),
            Mounted::Array(a) => Some(a.epoch_ns()),
        }
    }
}

pub struct Emulation {
    pub options: Options,
}

fn detach(mount: &std::path::Path) {
    if let Ok(c) = std::ffi::CString::new(mount.as_os_str().as_encoded_bytes()) {
        // SAFETY: a NUL-terminated path, only read.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
            return;
        }
    }
    // Not root: the setuid helper may detach it.
    let _ = std::process::Command::new("fusermount3")
        .args(["-u", "-q", "-z", "--"])
        .arg(mount)
        .stdin(std::process::Stdio::null())
        .status();
}

/// Mounts BACKING served from `device`, its files laid out by `place` (and their metadata by
/// the layout), runs `timer` beside it until cancelled, then `stop`s the device and unmounts;
/// whether the mount had to be detached lazily.
fn serve<D: device::Device>(
    o: &Options,
    progress: &Progress,
    (device, mounted): (Arc<D>, Mounted),
    (place, layout): (Placement, Option<meta::Layout>),
    timer: impl FnOnce() + Send + 'static,
    stop: impl FnOnce(),
) -> Result<bool, EmulateError> {
    let failed = |reason: String| EmulateError::Mount {
        mount: o.mount.display().to_string(),
        reason,
    };
    let fs = fs::EmulatedFs::new(
        o.backing.clone(),
        device,
        !o.page_cache,
        (place, layout),
        o.settings.clone(),
    );
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName(FS_NAME.into()),
        MountOption::Subtype("iowatt".into()),
        MountOption::DefaultPermissions,
        MountOption::RW,
    ];
    let session = fuser::spawn_mount(fs, &o.mount, &config).map_err(|e| failed(e.to_string()))?;
    let timer = std::thread::Builder::new()
        .name("iowatt-emulate-timer".into())
        .spawn(timer)
        .map_err(|e| failed(e.to_string()))?;
    let _ = progress.mounted.set(mounted);
    {
        let mut stopped = progress.stop.lock().unwrap_or_else(|e| e.into_inner());
        while !*stopped {
            stopped = progress
                .stopped
                .wait(stopped)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
    stop();
    let _ = timer.join();
    // Busy (files still open): detach now, and let the kernel finish it once they close.
    let lazy_unmount = session.umount_and_join().is_err();
    if lazy_unmount {
        detach(&o.mount);
    }
    Ok(lazy_unmount)
}

impl Work for Emulation {
    type Progress = Progress;
    type Outcome = Outcome;

    fn run(self: Arc<Self>, progress: &Progress) -> Outcome {
        let o = &self.options;
        let streams = Streams::new(o.seed);
        let Some(a) = &o.array else {
            let drive = Arc::new(Drive::new(
                o.model.clone(),
                o.spin_down,
                (streams.stream(0), streams.stream(1)),
                o.discipline,
                o.vibration.clone(),
            ));
            let place = Placement::new(o.model.capacity_bytes());
            let (timer, stop) = (drive.clone(), drive.clone());
            let lazy_unmount = serve(
                o,
                progress,
                (drive.clone(), Mounted::Disk(drive.clone())),
                (place, None),
                move || timer.run_timer(),
                move || stop.stop(),
            )?;
            let Log {
                served,
                changes,
                stimuli,
                counters,
            } = drive.take_log();
            return Ok(Record {
                t0_ns: drive.epoch_ns(),
                served,
                changes,
                stimuli,
                counters,
                lazy_unmount,
                array: None,
            });
        };
        let metadata = a.config.fs.is_some();
        let engine = raid::build(&a.config, &a.spec, a.used, o.seed, metadata)
            .map_err(|e| EmulateError::Config(e.to_string()))?;
        let array = Arc::new(ArrayDrive::new(engine, o.model.clone(), &a.personality));
        let capacity = o.model.capacity_bytes() * a.config.disks as u64;
        let place = Placement::allocation_order(capacity, 4096);
        let layout = metadata.then(|| meta::Layout::new(a.layout, &a.dirs));
        let (timer, stop) = (array.clone(), array.clone());
        let lazy_unmount = serve(
            o,
            progress,
            (array.clone(), Mounted::Array(array.clone())),
            (place, layout),
            move || timer.run_timer(),
            move || stop.stop(),
        )?;
        let log = array.take_log();
        Ok(Record {
            t0_ns: array.epoch_ns(),
            served: Vec::new(),
            changes: Vec::new(),
            stimuli: Vec::new(),
            counters: Counters::default(),
            lazy_unmount,
            array: Some(log),
        })
    }

    fn cancel(progress: &Progress) {
        *progress.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        progress.stopped.notify_all();
    }

    fn panicked() -> Outcome {
        Err(EmulateError::Panicked)
    }
}
