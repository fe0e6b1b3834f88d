"""Where an ext2-style file system keeps a web site's metadata on the array, for the RAID
simulator's file system model (docs/sim-raid.md, "The file system's traffic").

The array is cut into block groups of ``group_mb``; each group starts with its superblock
copy, group descriptors and two bitmaps (four blocks), then its inode table
(``inodes_per_group`` × ``inode_bytes``), then its directories' blocks. A file's inode is in
the group that holds its data's first byte, numbered in layout order (wrapping when a group has
more files than inodes, as when small files crowd a group); a directory's block is in the group
of its first file. The files' data keep the offsets they were laid out at.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa

BLOCK = 4096
HEADER_BLOCKS = 4  # superblock copy, group descriptors, block and inode bitmaps


def metadata_blocks(
    offsets: npt.NDArray[np.uint64], paths: pa.Array, fs: Mapping[str, Any]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Each file's directory block and inode block (array offsets), for files at ``offsets``
    with ``paths`` (layout order, absolute)."""
    group = round(fs["group_mb"] * 2**20)
    per_group = int(fs["inodes_per_group"])
    inode_bytes = int(fs["inode_bytes"])
    table_blocks = -(-per_group * inode_bytes // BLOCK)
    offsets = np.asarray(offsets, dtype=np.uint64)
    g = (offsets // np.uint64(group)).astype(np.int64)
    # The number of each file within its group, in layout order.
    order = np.argsort(g, kind="stable")
    first = np.searchsorted(g[order], g[order], side="left")
    index = np.empty_like(g)
    index[order] = np.arange(g.size) - first
    start = g * group + HEADER_BLOCKS * BLOCK
    inode = start + (index % per_group) * inode_bytes // BLOCK * BLOCK
    # Each directory, numbered in name order: the group of its first file.
    first_file, which = _directories(paths)
    dir_group = g[first_file]
    by_group = np.argsort(dir_group, kind="stable")
    dir_first = np.searchsorted(dir_group[by_group], dir_group[by_group], side="left")
    dir_index = np.empty_like(dir_group)
    dir_index[by_group] = np.arange(dir_group.size) - dir_first
    room = group // BLOCK - HEADER_BLOCKS - table_blocks  # blocks left for directories
    dir_block = dir_group * group + (HEADER_BLOCKS + table_blocks + dir_index % room) * BLOCK
    return dir_block[which].astype(np.uint64), inode.astype(np.uint64)


def _directories(paths: pa.Array) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The files' directories numbered in name order: each one's first file, and each file's
    directory (as numpy's ``unique`` gives its index and inverse, without a Python string per
    file)."""
    import pyarrow.compute as pc

    dirs = pc.replace_substring_regex(paths, r"/[^/]*$", "")
    dirs = pc.if_else(pc.equal(dirs, ""), "/", dirs).dictionary_encode()
    codes = dirs.indices.to_numpy().astype(np.int64)
    order = np.asarray(pc.sort_indices(dirs.dictionary), dtype=np.int64)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    _, first = np.unique(codes, return_index=True)  # per code, in code order
    return first[order], rank[codes]
