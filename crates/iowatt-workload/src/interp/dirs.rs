//! Directory flowops: makedir and removedir on a fileset's leaf directories, listdir.

use std::os::unix::ffi::OsStrExt;

use iowatt_metrics::now_ns;

use super::{last_errno, Interp, Step};
use crate::spec::OpKind;

impl Interp<'_> {
    pub(super) fn leafdir(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let make = f.kind == OpKind::MakeDir;
        let Some(set) = f.fileset else {
            return Step::Broken("needs a fileset".into());
        };
        let fs = &self.shared.filesets[set];
        // `flowoplib_pickleafdir` scales the draw by half the leaf directories.
        let n = fs.leafdirs.len();
        let at = f.index.as_ref().map(|d| {
            let draw = d.sample(&mut self.rng).saturating_mul((n / 2) as u64);
            (draw % n.max(1) as u64) as u32
        });
        let Some(d) = fs.pick_leafdir(!make, at, &|| self.stopping()) else {
            let which = if make { "absent" } else { "existing" };
            return Step::NoFile(format!(
                "flowop `{}` could not obtain an {which} leaf directory from fileset `{}`",
                f.name, fs.name
            ));
        };
        let path = fs.leafdirs[d as usize].as_ptr();
        let t0 = now_ns();
        // SAFETY: a NUL-terminated path.
        let res = unsafe {
            if make {
                libc::mkdir(path, 0o755)
            } else {
                libc::rmdir(path)
            }
        };
        let t1 = now_ns();
        let errno = (res < 0).then(last_errno);
        fs.release_leafdir(d, Some(make));
        match errno {
            Some(e) if e != libc::EEXIST && e != libc::ENOENT => Step::Failed(e),
            _ => {
                self.record(i, t0, t1, 0);
                Step::Ok
            }
        }
    }

    pub(super) fn list_dir(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let Some(set) = f.fileset else {
            return Step::Broken("listdir needs a fileset".into());
        };
        let fs = &self.shared.filesets[set];
        let Some(d) = fs.next_dir() else {
            return Step::NoFile(format!("fileset `{}` has no directories", fs.name));
        };
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(fs.dirs[d].as_bytes()));
        let t0 = now_ns();
        let entries = match std::fs::read_dir(path) {
            Ok(rd) => rd.count(),
            Err(e) => return Step::Failed(e.raw_os_error().unwrap_or(libc::EIO)),
        };
        let _ = entries;
        self.record(i, t0, now_ns(), 0);
        Step::Ok
    }
}
