//! A mount for a test: BACKING and MOUNT under the temp directory, the emulation started on
//! them and waited for, and stopped with nothing left mounted.

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use iowatt_emulate::{Emulation, Options, Record};
use iowatt_metrics::Handle;
use iowatt_sim::disk::DiskModel;

/// A model of python/iowatt/sim/disks.toml.
pub fn shipped(name: &str) -> DiskModel {
    let text = include_str!("../../../../python/iowatt/sim/disks.toml");
    let mut all: std::collections::HashMap<String, DiskModel> =
        toml::from_str(text).expect("the shipped models parse");
    all.remove(name).expect("a shipped model")
}

pub struct Mounted {
    pub handle: Handle<Emulation>,
    pub root: PathBuf,
    pub backing: PathBuf,
    pub mount: PathBuf,
}

impl Mounted {
    /// (root, BACKING, MOUNT) for `tag`, the two made.
    pub fn dirs(tag: &str) -> (PathBuf, PathBuf, PathBuf) {
        let root =
            std::env::temp_dir().join(format!("iowatt-emulate-{tag}-{}", std::process::id()));
        let (backing, mount) = (root.join("backing"), root.join("mount"));
        fs::create_dir_all(&backing).unwrap();
        fs::create_dir_all(&mount).unwrap();
        (root, backing, mount)
    }

    /// `options` (on [`Self::dirs`]'s directories under `root`) mounted and ready.
    pub fn start(root: PathBuf, options: Options) -> Self {
        let (backing, mount) = (options.backing.clone(), options.mount.clone());
        let handle = Handle::new(Emulation { options });
        assert!(handle.start());
        let m = Mounted {
            handle,
            root,
            backing,
            mount,
        };
        m.until("the mount is ready", |m| {
            m.handle.progress().epoch_ns().is_some()
        });
        m
    }

    /// Waits for `ready` (a state the mount reports), failing after 30 s.
    pub fn until(&self, what: &str, ready: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready(self) {
            assert!(
                !self.handle.wait(Duration::ZERO),
                "the mount ended before {what}"
            );
            assert!(Instant::now() < deadline, "no {what} within 30 s");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A counter file under MOUNT/.iowatt, trimmed.
    pub fn control(&self, name: &str) -> String {
        fs::read_to_string(self.mount.join(".iowatt").join(name))
            .expect("a counter file")
            .trim()
            .to_string()
    }

    /// Unmounts, checks nothing is left mounted, removes the directories.
    pub fn stop(self) -> Record {
        self.handle.cancel();
        assert!(
            self.handle.wait(Duration::from_secs(30)),
            "unmounted in time"
        );
        let record = self
            .handle
            .with_outcome(|o| o.clone())
            .unwrap()
            .expect("ran");
        let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(
            !mounts.contains(self.mount.to_str().unwrap()),
            "nothing left mounted"
        );
        fs::remove_dir_all(&self.root).unwrap();
        record
    }
}
