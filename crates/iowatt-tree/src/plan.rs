//! A manifest's entries, checked before anything is made: every path stays beneath the
//! destination (relative, no `.` or `..`, no empty component), appears once, and lies in a
//! directory the manifest lists — never under one of its files or symlinks.

use std::collections::HashMap;

use crate::TreeError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
}

impl Kind {
    /// `"dir"`, `"file"` or `"symlink"`, as the manifest's `type` column has them.
    pub fn parse(text: &str) -> Option<Kind> {
        match text {
            "dir" => Some(Kind::Dir),
            "file" => Some(Kind::File),
            "symlink" => Some(Kind::Symlink),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Dir => "dir",
            Kind::File => "file",
            Kind::Symlink => "symlink",
        }
    }
}

/// One row of the manifest.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Relative to the destination, components separated by `/`.
    pub path: String,
    pub kind: Kind,
    /// Bytes of a file (ignored for directories and symlinks).
    pub size: u64,
    /// Permission bits (`st_mode & 0o7777`); symlinks have none of their own on Linux.
    pub mode: u32,
    pub mtime_ns: i64,
    pub atime_ns: i64,
    /// A symlink's target, as it will be written.
    pub target: Option<String>,
}

/// The entries grouped by directory: node 0 is the destination itself, entry `i` is node
/// `i + 1`; `children[node]` lists entry indexes, directories first.
pub(crate) struct Plan {
    pub entries: Vec<Entry>,
    pub children: Vec<Vec<u32>>,
    /// Directory entries by depth (1 = directly in the destination).
    pub dirs_by_depth: Vec<Vec<u32>>,
    pub total_bytes: u64,
}

impl Plan {
    pub(crate) fn new(entries: Vec<Entry>) -> Result<Plan, TreeError> {
        if entries.len() >= u32::MAX as usize {
            return Err(TreeError::Manifest {
                row: u32::MAX as usize,
                path: String::new(),
                reason: "is past the 4 billion entries a recreation takes".into(),
            });
        }
        let bad = |row: usize, e: &Entry, reason: String| TreeError::Manifest {
            row,
            path: e.path.clone(),
            reason,
        };
        let mut index: HashMap<&str, u32> = HashMap::with_capacity(entries.len());
        for (row, e) in entries.iter().enumerate() {
            check_path(&e.path).map_err(|r| bad(row, e, r.into()))?;
            if e.kind == Kind::Symlink {
                match &e.target {
                    None => return Err(bad(row, e, "is a symlink without a target".into())),
                    Some(t) if t.is_empty() || t.contains('\0') => {
                        return Err(bad(
                            row,
                            e,
                            "has a symlink target that is empty or holds NUL".into(),
                        ))
                    }
                    Some(_) => {}
                }
            }
            if index.insert(e.path.as_str(), row as u32).is_some() {
                return Err(bad(row, e, "appears twice".into()));
            }
        }
        let mut children = vec![Vec::new(); entries.len() + 1];
        let mut total_bytes = 0u64;
        for (row, e) in entries.iter().enumerate() {
            let parent = match e.path.rfind('/') {
                None => 0,
                Some(cut) => {
                    let parent = &e.path[..cut];
                    let Some(&p) = index.get(parent) else {
                        return Err(bad(
                            row,
                            e,
                            format!("is in `{parent}`, which the manifest does not list"),
                        ));
                    };
                    let kind = entries[p as usize].kind;
                    if kind != Kind::Dir {
                        return Err(bad(
                            row,
                            e,
                            format!(
                                "is under `{parent}`, which the manifest says is a {}",
                                kind.as_str()
                            ),
                        ));
                    }
                    p as usize + 1
                }
            };
            children[parent].push(row as u32);
            if e.kind == Kind::File {
                total_bytes = total_bytes.saturating_add(e.size);
            }
        }
        // A listed parent makes a directory's depth its number of components.
        let mut dirs_by_depth: Vec<Vec<u32>> = Vec::new();
        for (row, e) in entries.iter().enumerate() {
            let d = e.path.bytes().filter(|&b| b == b'/').count() + 1;
            if e.kind == Kind::Dir {
                if dirs_by_depth.len() < d {
                    dirs_by_depth.resize(d, Vec::new());
                }
                dirs_by_depth[d - 1].push(row as u32);
            }
        }
        for list in &mut children {
            // Directories first, so the jobs for their contents start early.
            list.sort_by_key(|&i| entries[i as usize].kind != Kind::Dir);
        }
        Ok(Plan {
            entries,
            children,
            dirs_by_depth,
            total_bytes,
        })
    }
}

fn check_path(path: &str) -> Result<(), &'static str> {
    if path.is_empty() {
        return Err("is empty");
    }
    if path.starts_with('/') {
        return Err("is absolute");
    }
    if path.contains('\0') {
        return Err("holds a NUL byte");
    }
    for c in path.split('/') {
        match c {
            "" => return Err("has an empty component"),
            "." | ".." => return Err("has a `.` or `..` component"),
            _ => {}
        }
    }
    Ok(())
}
