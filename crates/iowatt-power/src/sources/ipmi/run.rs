//! Runs ipmitool with the BMC's connection options, a deadline and the password in its
//! environment (never on its command line, which `ps` shows).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

pub use crate::sources::child::{Finished, RunError};

pub struct Ipmitool {
    pub program: PathBuf,
    /// `-I lanplus -H host -p port -U user -E` or `-f FILE`; `-I open` in-band.
    pub login: Vec<OsString>,
    /// Given to the child as `IPMI_PASSWORD` (read with `-E`).
    pub password: Option<String>,
    pub timeout: Duration,
}

impl Ipmitool {
    pub fn run(&self, args: &[OsString]) -> Result<Finished, RunError> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.login).args(args);
        if let Some(password) = &self.password {
            cmd.env("IPMI_PASSWORD", password);
        }
        crate::sources::child::run(&mut cmd, self.timeout)
    }
}

impl Finished {
    /// ipmitool's own error: its last non-empty line on stderr (its messages end with the
    /// cause), else the exit status.
    pub fn error_line(&self) -> String {
        self.stderr
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .map_or_else(
                || format!("ipmitool exited with {}", self.status),
                str::to_string,
            )
    }
}
