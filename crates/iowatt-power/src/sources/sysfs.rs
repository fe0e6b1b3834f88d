//! Reading sysfs attributes cheaply. A sysfs file regenerates its value on every read at offset
//! 0, so a sampler opens each attribute once and re-reads it with `pread(fd, buf, 0)`: one
//! syscall and no allocation per reading.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::PowerError;

/// An open attribute holding one integer (`energy_uj`, `power1_input` …).
pub struct SysfsValue {
    file: File,
    path: PathBuf,
}

impl SysfsValue {
    /// Opens the attribute and reads it once, so an unreadable one (EACCES on `energy_uj`,
    /// EISDIR, ENODATA from a disabled sensor) is found at open rather than at every poll.
    pub fn open(path: PathBuf) -> io::Result<(SysfsValue, i64)> {
        let file = File::open(&path)?;
        let value = SysfsValue { file, path };
        let first = value.read()?;
        Ok((value, first))
    }

    pub fn read(&self) -> io::Result<i64> {
        let mut buf = [0u8; 32];
        let n = self.file.read_at(&mut buf, 0)?;
        parse_i64(&buf[..n]).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not an integer: {:?}", String::from_utf8_lossy(&buf[..n])),
            )
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The failed read as a poll error naming the file.
    pub fn error(&self, source: io::Error) -> PowerError {
        PowerError::Io {
            op: "read",
            path: self.path.clone(),
            source,
        }
    }
}

/// The leading integer of a sysfs value (`"123456\n"`, `"-4500\n"`).
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let text = bytes.trim_ascii_start();
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let mut value: i64 = 0;
    let mut any = false;
    for &b in digits.iter().take_while(|b| b.is_ascii_digit()) {
        value = value.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
        any = true;
    }
    any.then_some(if negative { -value } else { value })
}

/// A small text attribute (`name`, `*_label`), trimmed.
pub fn read_text(path: &Path) -> io::Result<String> {
    Ok(std::fs::read_to_string(path)?.trim().to_string())
}

/// "cannot read `path`: error" for warnings, with the errno's text.
pub fn describe(path: &Path, e: &io::Error) -> String {
    format!("cannot read `{}`: {e}", path.display())
}

/// EACCES or EPERM: the file exists but this user may not read it.
pub fn is_permission(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
        || e.kind() == io::ErrorKind::PermissionDenied
}

#[cfg(test)]
mod tests {
    use super::parse_i64;

    #[test]
    fn parses_sysfs_integers() {
        assert_eq!(parse_i64(b"123456\n"), Some(123456));
        assert_eq!(parse_i64(b"-4500\n"), Some(-4500));
        assert_eq!(parse_i64(b"  7"), Some(7));
        assert_eq!(parse_i64(b"\n"), None);
        assert_eq!(parse_i64(b"abc"), None);
        assert_eq!(parse_i64(b"99999999999999999999999"), None);
    }
}
