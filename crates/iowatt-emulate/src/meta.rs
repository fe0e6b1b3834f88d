//! Where the array's file system keeps a file's metadata, by the rule `iowatt sim raid` lays
//! a tree's out by (python/iowatt/sim/fs_layout.py): block groups of `group_bytes`, each
//! starting with four header blocks and its inode table, then its directories' blocks. A
//! file's inode is in the group of its data's first byte, numbered in the order files are
//! first seen there (the simulator numbers them in its layout's order, which for the mount is
//! the order files are met); a directory's block is in the group of the first file seen in
//! it, numbered as the simulator numbers directories, by their paths' name order (those made
//! after the mount after them). Only a file's own directory is charged, as the simulator
//! charges it.

use std::collections::HashMap;

const BLOCK: u64 = 4096;
const HEADER_BLOCKS: u64 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutConfig {
    pub group_bytes: u64,
    pub inodes_per_group: u64,
    pub inode_bytes: u64,
}

pub struct Layout {
    config: LayoutConfig,
    /// Each directory's number (by its backing inode), in name order.
    rank: HashMap<u64, u64>,
    /// Files and directories seen in each group so far.
    files_in: HashMap<u64, u64>,
    dirs_in: HashMap<u64, u64>,
    inodes: HashMap<u64, u64>,
    dirs: HashMap<u64, u64>,
}

impl Layout {
    /// The layout of `config`, with `dirs` (backing inodes) the directories holding files,
    /// in their paths' name order.
    pub fn new(config: LayoutConfig, dirs: &[u64]) -> Self {
        Layout {
            rank: dirs
                .iter()
                .enumerate()
                .map(|(i, &d)| (d, i as u64))
                .collect(),
            config: LayoutConfig {
                group_bytes: config.group_bytes.max(BLOCK * 64),
                inodes_per_group: config.inodes_per_group.max(1),
                inode_bytes: config.inode_bytes.max(1),
            },
            files_in: HashMap::new(),
            dirs_in: HashMap::new(),
            inodes: HashMap::new(),
            dirs: HashMap::new(),
        }
    }

    /// The inode block of file `key` whose data start at array byte `data_at` (numbered on
    /// first sight).
    pub fn inode(&mut self, key: u64, data_at: u64) -> u64 {
        let c = self.config;
        let group = data_at / c.group_bytes;
        *self.inodes.entry(key).or_insert_with(|| {
            let n = self.files_in.entry(group).or_default();
            let index = *n % c.inodes_per_group;
            *n += 1;
            group * c.group_bytes + HEADER_BLOCKS * BLOCK + index * c.inode_bytes / BLOCK * BLOCK
        })
    }

    /// The block of directory `dir` (its backing inode), whose first file seen has its data
    /// at `data_at`.
    pub fn dir(&mut self, dir: u64, data_at: u64) -> u64 {
        let c = self.config;
        let group = data_at / c.group_bytes;
        let ranked = self.rank.len() as u64;
        let rank = self.rank.get(&dir).copied();
        *self.dirs.entry(dir).or_insert_with(|| {
            let index = rank.unwrap_or_else(|| {
                let n = self.dirs_in.entry(group).or_default();
                *n += 1;
                ranked + *n - 1
            });
            let table_blocks = (c.inodes_per_group * c.inode_bytes).div_ceil(BLOCK);
            let room = (c.group_bytes / BLOCK)
                .saturating_sub(HEADER_BLOCKS + table_blocks)
                .max(1);
            group * c.group_bytes + (HEADER_BLOCKS + table_blocks + index % room) * BLOCK
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inodes_and_directories_are_numbered_in_their_group_as_first_seen() {
        let config = LayoutConfig {
            group_bytes: 128 << 20,
            inodes_per_group: 8192,
            inode_bytes: 128,
        };
        let mut l = Layout::new(config, &[]);
        let g1 = 128 << 20;
        // The first file of group 0: the first inode block, after the four header blocks; its
        // directory's block after the inode table's 256 blocks.
        assert_eq!(l.inode(10, 0), 4 * 4096);
        assert_eq!(l.dir(1, 0), (4 + 256) * 4096);
        // 32 inodes share a block; the 33rd file of the group starts the next one.
        for k in 11..42 {
            l.inode(k, 4096);
        }
        assert_eq!(l.inode(42, 8192), 5 * 4096);
        // A file in group 1 with a new directory: both in group 1.
        assert_eq!(l.inode(50, g1 + 5), g1 + 4 * 4096);
        assert_eq!(l.dir(2, g1 + 5), g1 + 260 * 4096);
        // Seen again: the same blocks, wherever met.
        assert_eq!(l.inode(10, g1), 4 * 4096);
        assert_eq!(l.dir(1, g1), 260 * 4096);
        // Directories known at the mount are numbered in the order given (their names'),
        // whenever met; one made later after them.
        let mut l = Layout::new(config, &[7, 5, 9]);
        assert_eq!(l.dir(9, 0), (260 + 2) * 4096);
        assert_eq!(l.dir(7, 0), 260 * 4096);
        assert_eq!(l.dir(40, 0), (260 + 3) * 4096);
    }
}
