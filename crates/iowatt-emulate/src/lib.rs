//! The emulated disk: BACKING served at MOUNT through FUSE, each read and write answered when
//! iowatt-sim's disk model — the one `iowatt sim raid` simulates arrays of — says the disk
//! would have finished it: seek from the head's last position, the seeded rotational position,
//! zoned transfer, FIFO queueing, and the power states (idle, standby after a spin-down, the
//! spin-up the next request pays) with their energy.
//!
//! An [`Emulation`] is an engine job like the others (`iowatt_metrics::Handle`): it mounts,
//! serves until cancelled, then answers what is still queued, unmounts and hands back every
//! request's charge and every state change.

mod control;
mod drive;
mod fs;
mod place;

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use fuser::{Config, MountOption};
use iowatt_metrics::Work;
use iowatt_sim::disk::DiskModel;
use iowatt_sim::Streams;
use thiserror::Error;

pub use control::json as counters_json;
pub use drive::{
    Answer, Change, Counters, Drive, Log, Pending, Reply, Served, SetError, Stimulus, Vibration,
};
pub use iowatt_sim::disk::Discipline;

/// The source name the mount carries in /proc/self/mountinfo: how `iowatt emulate unmount`
/// knows a mount is an emulated disk.
pub const FS_NAME: &str = "iowatt-emulate";

#[derive(Debug, Error, Clone, PartialEq)]
pub enum EmulateError {
    #[error("cannot mount {mount}: {reason}")]
    Mount { mount: String, reason: String },
    #[error("the emulated disk stopped unexpectedly (an iowatt bug)")]
    Panicked,
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
}

pub type Outcome = Result<Record, EmulateError>;

/// Shared with the caller while the disk is mounted.
#[derive(Default)]
pub struct Progress {
    drive: OnceLock<Arc<Drive<drive::Reply>>>,
    stop: Mutex<bool>,
    stopped: Condvar,
}

impl Progress {
    /// The counters so far; None until the mount is ready.
    pub fn counters(&self) -> Option<Counters> {
        self.drive.get().map(|d| d.counters())
    }

    /// The mounted disk's model, once mounted.
    pub fn model(&self) -> Option<&DiskModel> {
        self.drive.get().map(|d| d.model())
    }

    /// The mounted disk, once mounted: to set its stimulus.
    pub fn drive(&self) -> Option<&Drive<drive::Reply>> {
        self.drive.get().map(|d| &**d)
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

impl Work for Emulation {
    type Progress = Progress;
    type Outcome = Outcome;

    fn run(self: Arc<Self>, progress: &Progress) -> Outcome {
        let o = &self.options;
        let streams = Streams::new(o.seed);
        let drive = Arc::new(Drive::new(
            o.model.clone(),
            o.spin_down,
            (streams.stream(0), streams.stream(1)),
            o.discipline,
            o.vibration.clone(),
        ));
        let fs = fs::EmulatedFs::new(o.backing.clone(), drive.clone(), !o.page_cache);
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName(FS_NAME.into()),
            MountOption::Subtype("iowatt".into()),
            MountOption::DefaultPermissions,
            MountOption::RW,
        ];
        let session =
            fuser::spawn_mount(fs, &o.mount, &config).map_err(|e| EmulateError::Mount {
                mount: o.mount.display().to_string(),
                reason: e.to_string(),
            })?;
        let timer = {
            let drive = drive.clone();
            std::thread::Builder::new()
                .name("iowatt-emulate-timer".into())
                .spawn(move || drive.run_timer())
                .map_err(|e| EmulateError::Mount {
                    mount: o.mount.display().to_string(),
                    reason: e.to_string(),
                })?
        };
        let _ = progress.drive.set(drive.clone());
        {
            let mut stop = progress.stop.lock().unwrap_or_else(|e| e.into_inner());
            while !*stop {
                stop = progress
                    .stopped
                    .wait(stop)
                    .unwrap_or_else(|e| e.into_inner());
            }
        }
        drive.stop();
        let _ = timer.join();
        // Busy (files still open): detach now, and let the kernel finish it once they close.
        let lazy_unmount = session.umount_and_join().is_err();
        if lazy_unmount {
            detach(&o.mount);
        }
        let Log {
            served,
            changes,
            stimuli,
            counters,
        } = drive.take_log();
        Ok(Record {
            t0_ns: drive.epoch_ns(),
            served,
            changes,
            stimuli,
            counters,
            lazy_unmount,
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
