//! The file system's own traffic under a web server (docs/sim-raid.md, "The file system's
//! traffic"): what an ext2/ext3-style file system reads and writes beside a file's data.
//!
//! - A file's directory block and inode block are read before its data unless the metadata
//!   cache (the kernel's buffer cache of metadata blocks) holds them.
//! - Every read dirties the file's inode block for its access time (`strict`), once a day per
//!   file (`relatime`), or never (`noatime`).
//! - Dirty blocks are written home by the flusher, which wakes every `writeback_s` and writes
//!   what has been dirty for `expire_s`, in block order.
//! - With a journal (ext3), each commit (every `commit_s` while anything was dirtied) first
//!   writes the dirtied blocks, a descriptor and a commit block to the journal, sequentially.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::cache::PageCache;
use super::{RaidError, DAY_NS};
use crate::disk::ns;

/// A metadata block, bytes (ext2's block for large file systems).
pub const BLOCK: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Atime {
    Strict,
    Relatime,
    Noatime,
}

/// The file system model's parameters (raid.toml's `[fs]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsConfig {
    pub atime: Atime,
    /// The flusher's period and the age at which a dirty block is written, s.
    pub writeback_s: f64,
    pub expire_s: f64,
    /// A journal (ext3) with its commit period, s, where it sits on the array and its size.
    pub journal: bool,
    pub commit_s: f64,
    pub journal_offset: u64,
    pub journal_bytes: u64,
    /// The metadata blocks the kernel keeps, bytes.
    pub metadata_cache_bytes: u64,
}

impl FsConfig {
    pub fn check(&self) -> Result<(), RaidError> {
        for (k, v) in [
            ("writeback_s", self.writeback_s),
            ("expire_s", self.expire_s),
            ("commit_s", self.commit_s),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(RaidError::Config(format!("[fs] {k} = {v} must be above 0")));
            }
        }
        if self.journal && self.journal_bytes < 3 * BLOCK {
            return Err(RaidError::Config(format!(
                "[fs] journal_mb gives {} bytes: a journal holds at least three blocks",
                self.journal_bytes
            )));
        }
        Ok(())
    }
}

/// A write the file system makes on its own: array offset and bytes.
pub type FsWrite = (u64, u64);

pub struct Fs {
    config: FsConfig,
    cache: PageCache,
    /// Dirty block → when it was first dirtied, ns.
    dirty: HashMap<u64, u64>,
    /// Blocks dirtied since the last commit.
    uncommitted: u64,
    /// File (its array offset) → its access time, ns (relatime).
    accessed: HashMap<u64, u64>,
    journal_at: u64,
}

impl Fs {
    pub fn new(config: FsConfig) -> Self {
        Self {
            cache: PageCache::new(config.metadata_cache_bytes),
            config,
            dirty: HashMap::new(),
            uncommitted: 0,
            accessed: HashMap::new(),
            journal_at: 0,
        }
    }

    pub fn writeback_every_ns(&self) -> u64 {
        ns(self.config.writeback_s)
    }

    pub fn commit_every_ns(&self) -> Option<u64> {
        self.config.journal.then(|| ns(self.config.commit_s))
    }

    /// The metadata blocks to read before a file's data (those not cached; either way they
    /// are cached after), into `out`: its directory's, then its inode's (u64::MAX: none).
    pub fn lookup(&mut self, dir_at: u64, inode_at: u64, out: &mut Vec<u64>) {
        out.clear();
        for at in [dir_at, inode_at] {
            if at != u64::MAX && !self.cache.access(at, BLOCK) && !out.contains(&at) {
                out.push(at);
            }
        }
    }

    /// The file at `file` was read at `now`: its inode block is dirtied as the atime rule says.
    pub fn read(&mut self, now: u64, file: u64, inode_at: u64) {
        if inode_at == u64::MAX {
            return;
        }
        let update = match self.config.atime {
            Atime::Noatime => false,
            Atime::Strict => true,
            Atime::Relatime => match self.accessed.get(&file) {
                Some(&at) => now >= at + DAY_NS,
                None => true,
            },
        };
        if update {
            if self.config.atime == Atime::Relatime {
                self.accessed.insert(file, now);
            }
            if let std::collections::hash_map::Entry::Vacant(e) = self.dirty.entry(inode_at) {
                e.insert(now);
                self.uncommitted += 1;
            }
        }
    }

    /// The flusher at `now`: the blocks dirty for `expire_s` or longer, in block order (each
    /// written home), into `out`.
    pub fn expired(&mut self, now: u64, out: &mut Vec<FsWrite>) {
        out.clear();
        let expire = ns(self.config.expire_s);
        self.dirty.retain(|&at, &mut since| {
            let old = now >= since + expire;
            if old {
                out.push((at, BLOCK));
            }
            !old
        });
        out.sort_unstable();
    }

    /// A journal commit: the blocks dirtied since the last one, with a descriptor and a
    /// commit block, written at the journal's next position (it wraps); None when nothing
    /// was dirtied.
    pub fn commit(&mut self) -> Option<FsWrite> {
        if self.uncommitted == 0 {
            return None;
        }
        let size = self.config.journal_bytes / BLOCK * BLOCK;
        let bytes = ((self.uncommitted + 2) * BLOCK).min(size);
        self.uncommitted = 0;
        if self.journal_at + bytes > size {
            self.journal_at = 0;
        }
        let at = self.config.journal_offset + self.journal_at;
        self.journal_at += bytes;
        Some((at, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(atime: Atime, journal: bool) -> Fs {
        Fs::new(FsConfig {
            atime,
            writeback_s: 5.0,
            expire_s: 30.0,
            journal,
            commit_s: 5.0,
            journal_offset: 1 << 30,
            journal_bytes: 32 << 20,
            metadata_cache_bytes: 2 * BLOCK,
        })
    }

    #[test]
    fn a_lookup_reads_what_the_metadata_cache_lacks() {
        let mut f = fs(Atime::Strict, false);
        let mut out = Vec::new();
        f.lookup(0, 8192, &mut out);
        assert_eq!(out, vec![0, 8192], "directory first, then the inode");
        f.lookup(0, 8192, &mut out);
        assert!(out.is_empty(), "both cached");
        f.lookup(0, 4096, &mut out);
        assert_eq!(out, vec![4096], "another inode block of the same directory");
        f.lookup(u64::MAX, 8192, &mut out);
        assert_eq!(
            out,
            vec![8192],
            "two blocks of cache: the oldest (8192) was evicted"
        );
    }

    #[test]
    fn dirty_inodes_go_home_once_expired_in_block_order() {
        let s = 1_000_000_000u64;
        let mut f = fs(Atime::Strict, false);
        f.read(0, 100, 8192);
        f.read(s, 200, 4096);
        f.read(2 * s, 100, 8192); // already dirty
        let mut out = Vec::new();
        f.expired(29 * s, &mut out);
        assert!(out.is_empty(), "nothing 30 s old yet");
        f.expired(31 * s, &mut out);
        assert_eq!(out, vec![(4096, BLOCK), (8192, BLOCK)]);
        f.expired(60 * s, &mut out);
        assert!(out.is_empty(), "written once");
    }

    #[test]
    fn relatime_writes_a_files_atime_once_a_day_and_noatime_never() {
        let s = 1_000_000_000u64;
        let mut out = Vec::new();
        let mut r = fs(Atime::Relatime, false);
        r.read(0, 100, 8192);
        r.expired(31 * s, &mut out);
        assert_eq!(out.len(), 1);
        r.read(40 * s, 100, 8192);
        r.expired(80 * s, &mut out);
        assert!(out.is_empty(), "the same day");
        r.read(DAY_NS, 100, 8192);
        r.expired(DAY_NS + 31 * s, &mut out);
        assert_eq!(out.len(), 1, "a day later");
        let mut n = fs(Atime::Noatime, false);
        n.read(0, 100, 8192);
        n.expired(31 * s, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_commit_journals_the_dirtied_blocks_and_two_more_and_wraps() {
        let mut f = fs(Atime::Strict, true);
        assert_eq!(f.commit(), None, "nothing dirtied");
        f.read(0, 1, 0);
        f.read(0, 2, 4096);
        f.read(0, 3, 4096);
        assert_eq!(f.commit(), Some((1 << 30, 4 * BLOCK)));
        f.read(0, 4, 8192);
        assert_eq!(f.commit(), Some(((1 << 30) + 4 * BLOCK, 3 * BLOCK)));
        assert_eq!(f.commit(), None);
        let mut small = Fs::new(FsConfig {
            journal_bytes: 5 * BLOCK,
            ..f.config.clone()
        });
        small.read(0, 1, 0);
        assert_eq!(small.commit(), Some((1 << 30, 3 * BLOCK)));
        small.read(0, 2, 4096);
        assert_eq!(small.commit(), Some((1 << 30, 3 * BLOCK)), "wrapped");
    }
}
