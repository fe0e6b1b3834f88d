//! FileBench's filesets: the directory tree a fileset's entries live in (laid out as FileBench's
//! `fileset_populate` does: gamma-distributed widths and depths around the mean width, depth
//! ln(entries)/ln(width)), which entries exist, and the rotors threads pick entries with.
//!
//! Picking follows `fileset_pick`: an existing or absent entry is found from a rotor (the entry
//! at or after it, wrapping), skipping entries another thread is working on (busy). Files are
//! therefore visited in order, not at random — one of FileBench's behaviours results depend on.

use std::collections::{BTreeSet, HashMap};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::entropy::DataSource;
use crate::spec::FilesetSpec;
use iowatt_metrics::Rng;

/// Where a fileset's directories, files and leaf directories are.
pub struct Layout {
    pub root: PathBuf,
    /// Every directory to create, parents first (the root included unless `single`).
    pub dirs: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
    pub sizes: Vec<u64>,
    pub leafdirs: Vec<PathBuf>,
}

impl Layout {
    pub fn new(spec: &FilesetSpec, rng: &mut Rng) -> Self {
        let root = spec.path.join(&spec.name);
        let mut layout = Layout {
            root: root.clone(),
            dirs: Vec::new(),
            files: Vec::new(),
            sizes: Vec::new(),
            leafdirs: Vec::new(),
        };
        if spec.single {
            layout.files.push(root);
            layout.sizes.push(spec.size.sample(rng));
            return layout;
        }
        let width = spec.dirwidth as f64;
        let total = (spec.entries + spec.leafdirs).max(1) as f64;
        // Width 0 (a fileset without dirwidth, which FileBench still lays out): ln(0) is -inf,
        // so the depth is 0 and every directory under the root is a leaf of one file.
        let meandepth = match spec.dirwidth {
            0 => 0.0,
            1 => 1.0,
            _ => total.ln() / width.ln(),
        };
        let mut tree = Tree {
            spec,
            rng,
            meandepth,
            out: &mut layout,
        };
        tree.out.dirs.push(root.clone());
        tree.populate(&root, true, 0.0);
        layout
    }
}

struct Tree<'a> {
    spec: &'a FilesetSpec,
    rng: &'a mut Rng,
    meandepth: f64,
    out: &'a mut Layout,
}

impl Tree<'_> {
    fn draw(&mut self, mean: f64) -> f64 {
        let shape = self.spec.dirgamma;
        if shape > 0.0 {
            self.rng.gamma(shape, mean / shape)
        } else {
            mean
        }
    }

    /// `fileset_populate_subdir`: a directory of random width holding files if it is as deep
    /// as its random depth, subdirectories otherwise; the root keeps going until every entry
    /// has a place.
    fn populate(&mut self, dir: &Path, is_root: bool, depth: f64) {
        let depth = depth + 1.0;
        let randepth = (self.draw(self.meandepth) as u64).max(1) as f64;
        let ranwidth = self.draw(self.spec.dirwidth as f64).max(1.0);
        let leaf = !is_root && depth >= randepth;
        let mut i = 1u64;
        while (is_root || (i as f64) < ranwidth + 1.0)
            && (self.out.files.len() as u64) < self.spec.entries
        {
            let child = dir.join(format!("{i:08}"));
            if leaf {
                self.out.files.push(child);
                let size = self.spec.size.sample(self.rng);
                self.out.sizes.push(size);
            } else {
                self.out.dirs.push(child.clone());
                self.populate(&child, false, depth);
            }
            i += 1;
        }
        // Leaf directories are numbered on after the files, so the two never share a name
        // (FileBench restarts at 1, which collides when a fileset has both).
        let files_named = i - 1;
        let mut i = 1u64;
        while (is_root || (i as f64) < ranwidth + 1.0)
            && (self.out.leafdirs.len() as u64) < self.spec.leafdirs
        {
            let child = dir.join(format!("{:08}", files_named + i));
            if leaf {
                self.out.leafdirs.push(child);
            } else {
                self.out.dirs.push(child.clone());
                self.populate(&child, false, depth);
            }
            i += 1;
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Pick {
    Got(u32),
    /// Entries of the kind exist, but other threads are working on every one.
    AllBusy,
    None,
}

/// Entries of one kind (files or leaf directories) and which of them exist, are busy, or open.
struct Entries {
    exists: BTreeSet<u32>,
    absent: BTreeSet<u32>,
    busy: Vec<bool>,
    open: Vec<u32>,
    /// Rotor for existing entries: shared (key 0) or one per thread with `opennext`.
    ex_rotor: HashMap<u64, u32>,
    ne_rotor: u32,
}

impl Entries {
    fn new(exists: &[bool]) -> Self {
        let mut e = Entries {
            exists: BTreeSet::new(),
            absent: BTreeSet::new(),
            busy: vec![false; exists.len()],
            open: vec![0; exists.len()],
            ex_rotor: HashMap::new(),
            ne_rotor: 0,
        };
        for (i, &x) in exists.iter().enumerate() {
            if x {
                e.exists.insert(i as u32);
            } else {
                e.absent.insert(i as u32);
            }
        }
        e
    }

    /// The entry at or after the rotor (or at or after `at`, FileBench's pick by index,
    /// which moves no rotor), skipping busy ones.
    fn pick(&mut self, exists: bool, tid: u64, closed: bool, at: Option<u32>) -> Pick {
        let (set, rotor) = if exists {
            (&self.exists, *self.ex_rotor.get(&tid).unwrap_or(&0))
        } else {
            (&self.absent, self.ne_rotor)
        };
        let rotor = at.unwrap_or(rotor);
        if set.is_empty() {
            return Pick::None;
        }
        let (busy, open) = (&self.busy, &self.open);
        let Some(found) = set
            .range(rotor..)
            .chain(set.range(..rotor))
            .find(|&&i| !(busy[i as usize] || closed && open[i as usize] > 0))
            .copied()
        else {
            return Pick::AllBusy;
        };
        self.busy[found as usize] = true;
        match (at, exists) {
            (Some(_), _) => {}
            (None, true) => {
                self.ex_rotor.insert(tid, found + 1);
            }
            (None, false) => self.ne_rotor = found + 1,
        }
        Pick::Got(found)
    }

    fn release(&mut self, i: u32, exists: Option<bool>, open_delta: i32) {
        self.busy[i as usize] = false;
        let open = &mut self.open[i as usize];
        *open = open.saturating_add_signed(open_delta);
        match exists {
            Some(true) if self.absent.remove(&i) => {
                self.exists.insert(i);
            }
            Some(false) if self.exists.remove(&i) => {
                self.absent.insert(i);
            }
            _ => {}
        }
    }

    fn claim(&mut self, i: u32) -> bool {
        let busy = &mut self.busy[i as usize];
        !std::mem::replace(busy, true)
    }
}

/// What every thread shares about a fileset while the run goes on.
pub struct FilesetState {
    pub name: String,
    /// What writes to the fileset's files are filled with, when not random bytes.
    pub data: Option<DataSource>,
    pub readonly: bool,
    pub writeonly: bool,
    /// Whole paths, as FileBench passes them: every open, stat, create and delete resolves
    /// the path from `/`, paying the lookups the file system under test would (NFS, FUSE and
    /// deep trees make them costly), not only those below a held directory.
    pub files: Vec<CString>,
    pub sizes: Vec<u64>,
    pub leafdirs: Vec<CString>,
    pub dirs: Vec<CString>,
    picks: Mutex<Picks>,
}

struct Picks {
    files: Entries,
    leafdirs: Entries,
    dir_rotor: usize,
}

pub fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("paths built by iowatt hold no NUL byte")
}

impl FilesetState {
    pub fn new(
        spec: &FilesetSpec,
        layout: &Layout,
        files: &[bool],
        leafdirs: &[bool],
        data: Option<DataSource>,
    ) -> Self {
        FilesetState {
            name: spec.name.clone(),
            data,
            readonly: spec.readonly,
            writeonly: spec.writeonly,
            files: layout.files.iter().map(|p| cpath(p)).collect(),
            sizes: layout.sizes.clone(),
            leafdirs: layout.leafdirs.iter().map(|p| cpath(p)).collect(),
            dirs: layout.dirs.iter().map(|p| cpath(p)).collect(),
            picks: Mutex::new(Picks {
                files: Entries::new(files),
                leafdirs: Entries::new(leafdirs),
                dir_rotor: 0,
            }),
        }
    }

    /// Picks with `f`; while every candidate is busy, waits for one to come free (as
    /// FileBench waits for an idle entry) until `stopping` says the run is over.
    fn pick_with(
        &self,
        stopping: &dyn Fn() -> bool,
        f: impl Fn(&mut Picks) -> Pick,
    ) -> Option<u32> {
        for tries in 0u32.. {
            match f(&mut self.lock()) {
                Pick::Got(i) => return Some(i),
                Pick::None => return None,
                Pick::AllBusy if stopping() => return None,
                Pick::AllBusy if tries < 64 => std::thread::yield_now(),
                Pick::AllBusy => std::thread::sleep(std::time::Duration::from_micros(100)),
            }
        }
        None
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Picks> {
        // A worker that panicked holding the lock leaves consistent data: every update is a
        // single step, so the poison can be ignored.
        self.picks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An existing (or absent) file, marked busy until [`Self::release_file`]: the next in
    /// rotation, or with `at` the first at or after that index.
    pub fn pick_file(
        &self,
        exists: bool,
        tid: u64,
        at: Option<u32>,
        stopping: &dyn Fn() -> bool,
    ) -> Option<u32> {
        self.pick_with(stopping, |p| p.files.pick(exists, tid, false, at))
    }

    /// An existing file no thread has open, for deletefile. FileBench picks the next existing
    /// file and skips the delete if it is open; then creates outrun deletes until no absent
    /// entry is left and the run stops ("could not obtain a file"), in a few seconds for
    /// varmail on fast storage. Moving on to the next closed file keeps them in step.
    pub fn pick_closed_file(&self, stopping: &dyn Fn() -> bool) -> Option<u32> {
        self.pick_with(stopping, |p| p.files.pick(true, 0, true, None))
    }

    pub fn release_file(&self, i: u32, exists: Option<bool>, open_delta: i32) {
        self.lock().files.release(i, exists, open_delta);
    }

    /// One open descriptor of the file fewer.
    pub fn closed(&self, i: u32) {
        let mut p = self.lock();
        let open = &mut p.files.open[i as usize];
        *open = open.saturating_sub(1);
    }

    /// Marks a given file busy; false while another thread has it busy.
    pub fn claim_file(&self, i: u32) -> bool {
        self.lock().files.claim(i)
    }

    pub fn open_count(&self, i: u32) -> u32 {
        self.lock().files.open[i as usize]
    }

    pub fn pick_leafdir(
        &self,
        exists: bool,
        at: Option<u32>,
        stopping: &dyn Fn() -> bool,
    ) -> Option<u32> {
        self.pick_with(stopping, |p| p.leafdirs.pick(exists, 0, false, at))
    }

    pub fn release_leafdir(&self, i: u32, exists: Option<bool>) {
        self.lock().leafdirs.release(i, exists, 0);
    }

    /// The next directory of the tree, in turn.
    pub fn next_dir(&self) -> Option<usize> {
        if self.dirs.is_empty() {
            return None;
        }
        let mut p = self.lock();
        let i = p.dir_rotor % self.dirs.len();
        p.dir_rotor = i + 1;
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SizeDist;

    fn spec(entries: u64, dirwidth: u64) -> FilesetSpec {
        FilesetSpec {
            name: "bigfileset".into(),
            path: "/w".into(),
            entries,
            size: SizeDist::Fixed(4096),
            dirwidth,
            dirgamma: 1.5,
            leafdirs: 0,
            prealloc: 80,
            reuse: false,
            paralloc: false,
            readonly: false,
            writeonly: false,
            single: false,
            entropy: None,
        }
    }

    #[test]
    fn every_entry_gets_a_unique_path_under_the_root() {
        for (entries, width) in [(10_000, 20), (1000, 1_000_000), (1, 20), (500, 1)] {
            let l = Layout::new(&spec(entries, width), &mut Rng::new(1));
            assert_eq!(l.files.len() as u64, entries);
            let unique: BTreeSet<_> = l.files.iter().collect();
            assert_eq!(unique.len(), l.files.len());
            assert!(l.files.iter().all(|f| f.starts_with("/w/bigfileset/")));
            // Parents come before children, so creating them in order never fails.
            let mut made: BTreeSet<&Path> = BTreeSet::new();
            made.insert(Path::new("/w"));
            for d in &l.dirs {
                assert!(made.contains(d.parent().unwrap()), "{d:?}");
                made.insert(d);
            }
            assert!(l.files.iter().all(|f| made.contains(f.parent().unwrap())));
        }
    }

    #[test]
    fn files_and_leaf_directories_never_share_a_path() {
        let mut s = spec(300, 10);
        s.leafdirs = 50;
        let l = Layout::new(&s, &mut Rng::new(4));
        assert_eq!(l.leafdirs.len(), 50);
        let dirs: BTreeSet<&Path> = l.dirs.iter().map(|d| d.as_path()).collect();
        let files: BTreeSet<&Path> = l.files.iter().map(|f| f.as_path()).collect();
        for d in &l.leafdirs {
            assert!(
                !files.contains(d.as_path()) && !dirs.contains(d.as_path()),
                "{d:?}"
            );
            assert!(dirs.contains(d.parent().unwrap()));
        }
    }

    #[test]
    fn a_flat_fileset_puts_every_file_in_one_directory() {
        // varmail's meandirwidth=1000000: mean depth ln(1000)/ln(10^6) = 0.5, so one leaf dir.
        let l = Layout::new(&spec(1000, 1_000_000), &mut Rng::new(2));
        let parents: BTreeSet<_> = l.files.iter().map(|f| f.parent().unwrap()).collect();
        assert_eq!(parents.len(), 1);
    }

    #[test]
    fn directories_average_near_the_mean_width() {
        let l = Layout::new(&spec(10_000, 20), &mut Rng::new(3));
        let parents: BTreeSet<_> = l.files.iter().map(|f| f.parent().unwrap()).collect();
        let per_dir = l.files.len() as f64 / parents.len() as f64;
        assert!(
            (8.0..=40.0).contains(&per_dir),
            "{per_dir} files per leaf dir"
        );
    }

    #[test]
    fn a_pick_by_index_starts_there_and_moves_no_rotor() {
        let mut e = Entries::new(&[true, false, true, true]);
        // 1 does not exist: the next existing entry at or after it.
        assert_eq!(e.pick(true, 0, false, Some(1)), Pick::Got(2));
        // 2 is busy now: on to 3, and past the end back to 0.
        assert_eq!(e.pick(true, 0, false, Some(2)), Pick::Got(3));
        assert_eq!(e.pick(true, 0, false, Some(3)), Pick::Got(0));
        e.release(0, None, 0);
        // The rotor never moved: a pick in rotation still starts at 0.
        assert_eq!(e.pick(true, 0, false, None), Pick::Got(0));
    }

    #[test]
    fn picks_go_round_in_order_and_skip_busy_entries() {
        let mut e = Entries::new(&[true, false, true, true]);
        assert_eq!(e.pick(true, 0, false, None), Pick::Got(0));
        assert_eq!(e.pick(true, 0, false, None), Pick::Got(2));
        e.release(2, None, 1);
        assert_eq!(e.pick(true, 0, false, None), Pick::Got(3));
        // 0 is still busy: the rotor wraps past it to 2.
        assert_eq!(e.pick(true, 0, false, None), Pick::Got(2));
        assert_eq!(e.pick(false, 0, false, None), Pick::Got(1));
        assert_eq!(
            e.pick(false, 0, false, None),
            Pick::AllBusy,
            "the only absent entry is busy"
        );
        e.release(1, Some(true), 0);
        assert!(e.exists.contains(&1) && e.absent.is_empty());
        assert_eq!(
            e.pick(false, 0, false, None),
            Pick::None,
            "no absent entry at all"
        );
        // A thread with its own rotor (opennext) starts from the beginning.
        e.release(0, None, 0);
        assert_eq!(e.pick(true, 7, false, None), Pick::Got(0));
    }

    #[test]
    fn a_pick_for_deletion_passes_over_open_files() {
        let mut e = Entries::new(&[true, true, true]);
        assert_eq!(e.pick(true, 0, false, None), Pick::Got(0));
        e.release(0, None, 1); // 0 is open
        e.ex_rotor.insert(0, 0);
        assert_eq!(e.pick(true, 0, true, None), Pick::Got(1));
        e.release(1, None, 0);
        e.ex_rotor.insert(0, 0);
        assert_eq!(
            e.pick(true, 0, false, None),
            Pick::Got(0),
            "opening it again is fine"
        );
    }
}
