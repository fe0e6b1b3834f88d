//! How ipmitool reaches the BMC: its path, the interface, and the credentials, which go in
//! the child's environment or a file, never on its command line (`ps` shows that).

use std::ffi::{CString, OsString};
use std::path::{Path, PathBuf};

use crate::PowerError;

const DEVICES: [&str; 3] = ["/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0"];
pub const LOCAL: &str = "the local BMC";

pub struct Login {
    /// ipmitool's connection options: `-I lanplus -H host -p port -U user -E` or `-f FILE`,
    /// `-I open`. No secret among them.
    pub args: Vec<OsString>,
    /// For the child's `IPMI_PASSWORD` (password_env).
    pub password: Option<String>,
    /// How messages name the BMC: "the BMC at `host:port`" or "the local BMC".
    pub bmc: String,
}

pub fn login(
    interface: &str,
    host: Option<&str>,
    port: Option<u16>,
    user: Option<&str>,
    password_env: Option<&str>,
    password_file: Option<&Path>,
) -> Result<Login, PowerError> {
    match interface {
        "open" => {
            if let Some(host) = host {
                return Err(PowerError::invalid(
                    format!("host `{host}` is given but interface is `open` (the local BMC)"),
                    "use interface=lanplus to read a BMC over the network",
                ));
            }
            local_device()?;
            Ok(Login {
                args: vec!["-I".into(), "open".into()],
                password: None,
                bmc: LOCAL.into(),
            })
        }
        "lanplus" | "lan" => {
            let Some(host) = host.filter(|h| !h.is_empty()) else {
                return Err(PowerError::invalid(
                    format!("interface `{interface}` needs the BMC's host"),
                    "give host=ADDRESS (and user, password_env or password_file)",
                ));
            };
            let bmc = format!("the BMC at `{host}:{}`", port.unwrap_or(623));
            let mut args: Vec<OsString> = vec!["-I".into(), interface.into(), "-H".into()];
            args.push(host.into());
            if let Some(port) = port {
                args.extend(["-p".into(), port.to_string().into()]);
            }
            if let Some(user) = user {
                args.extend(["-U".into(), user.into()]);
            }
            let password = password(&bmc, password_env, password_file, &mut args)?;
            Ok(Login {
                args,
                password,
                bmc,
            })
        }
        other => Err(PowerError::invalid(
            format!("IPMI interface `{other}` is not one of open, lanplus, lan"),
            "open reads the local BMC (/dev/ipmi0); lanplus a BMC over the network",
        )),
    }
}

/// Adds `-E` or `-f FILE` to `args`; returns the password to put in `IPMI_PASSWORD`.
fn password(
    bmc: &str,
    password_env: Option<&str>,
    password_file: Option<&Path>,
    args: &mut Vec<OsString>,
) -> Result<Option<String>, PowerError> {
    match (password_env, password_file) {
        (Some(_), Some(_)) => Err(PowerError::invalid(
            "both password_env and password_file are given",
            "give one of them",
        )),
        (Some(var), None) => {
            let Some(value) = std::env::var_os(var) else {
                return Err(PowerError::invalid(
                    format!("password_env names `{var}`, which is not set"),
                    format!("export {var} with the BMC's password, or use password_file"),
                ));
            };
            args.push("-E".into());
            Ok(Some(value.to_string_lossy().into_owned()))
        }
        (None, Some(file)) => {
            if let Err(e) = std::fs::File::open(file) {
                return Err(PowerError::invalid(
                    format!("password_file `{}` cannot be read: {e}", file.display()),
                    "give a file holding the BMC's password (readable by this user only)",
                ));
            }
            args.extend(["-f".into(), file.into()]);
            Ok(None)
        }
        // ipmitool reads it from the environment the child inherits.
        (None, None) if std::env::var_os("IPMI_PASSWORD").is_some() => {
            args.push("-E".into());
            Ok(None)
        }
        (None, None) => Err(PowerError::invalid(
            format!("no password for {bmc}"),
            "set password_env=VAR (a variable holding it) or password_file=FILE, or export \
             IPMI_PASSWORD",
        )),
    }
}

fn local_device() -> Result<(), PowerError> {
    let Some(device) = DEVICES.iter().find(|d| Path::new(d).exists()) else {
        return Err(PowerError::unavailable(
            "no local BMC device (/dev/ipmi0, /dev/ipmi/0 or /dev/ipmidev/0)",
            "load the drivers (modprobe ipmi_devintf ipmi_si) if the machine has a BMC, or read \
             it over the network with interface=lanplus host=...",
        ));
    };
    let c_path = CString::new(*device).expect("no NUL in a constant path");
    // SAFETY: a valid NUL-terminated path; access(2) only reads it.
    if unsafe { libc::access(c_path.as_ptr(), libc::R_OK | libc::W_OK) } != 0 {
        return Err(PowerError::unavailable(
            format!("`{device}` is not readable and writable by this user"),
            "run as root, or give a group access to it with a udev rule \
             (KERNEL==\"ipmi*\", GROUP=\"ipmi\", MODE=\"0660\")",
        ));
    }
    Ok(())
}

/// The ipmitool to run: a path as given, or the first match on PATH.
pub fn find_program(name: &str) -> Result<PathBuf, PowerError> {
    let missing = || {
        PowerError::unavailable(
            format!("ipmitool not found (`{name}`)"),
            "install it (Debian: apt install ipmitool), or give its path with ipmitool=...",
        )
    };
    if name.contains('/') {
        let path = PathBuf::from(name);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(missing())
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
        .ok_or_else(missing)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(login: &Login) -> Vec<String> {
        login
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_password_never_reaches_the_command_line() {
        std::env::set_var("IOWATT_TEST_BMC_PASSWORD", "s3cret");
        let l = login(
            "lanplus",
            Some("bmc1"),
            Some(6230),
            Some("admin"),
            Some("IOWATT_TEST_BMC_PASSWORD"),
            None,
        )
        .unwrap();
        assert_eq!(
            args(&l),
            ["-I", "lanplus", "-H", "bmc1", "-p", "6230", "-U", "admin", "-E"]
        );
        assert_eq!(l.password.as_deref(), Some("s3cret"));
        assert_eq!(l.bmc, "the BMC at `bmc1:6230`");

        let file = std::env::temp_dir().join(format!("iowatt-pw-test-{}", std::process::id()));
        std::fs::write(&file, "s3cret\n").unwrap();
        let l = login("lan", Some("bmc1"), None, None, None, Some(&file)).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(args(&l)[..4], ["-I", "lan", "-H", "bmc1"]);
        assert_eq!(args(&l)[4], "-f");
        assert_eq!(l.password, None);
        assert_eq!(l.bmc, "the BMC at `bmc1:623`");
    }

    #[test]
    fn bad_logins_are_invalid() {
        let invalid = |r: Result<Login, PowerError>| match r {
            Err(PowerError::Invalid { message, .. }) => message,
            Err(e) => panic!("not Invalid: {e}"),
            Ok(_) => panic!("accepted"),
        };
        let m = invalid(login("lanplus", None, None, None, None, None));
        assert_eq!(m, "interface `lanplus` needs the BMC's host");
        let m = invalid(login("ipmb", None, None, None, None, None));
        assert_eq!(m, "IPMI interface `ipmb` is not one of open, lanplus, lan");
        let m = invalid(login("open", Some("bmc1"), None, None, None, None));
        assert!(m.starts_with("host `bmc1` is given"), "{m}");
        let unset = Some("IOWATT_TEST_UNSET_VARIABLE");
        let m = invalid(login("lanplus", Some("h"), None, None, unset, None));
        assert_eq!(
            m,
            "password_env names `IOWATT_TEST_UNSET_VARIABLE`, which is not set"
        );
        let nofile = Some(Path::new("/nonexistent/iowatt-password"));
        let m = invalid(login("lanplus", Some("h"), None, None, None, nofile));
        assert!(m.starts_with("password_file `/nonexistent/iowatt-password` cannot be read"));
    }

    #[test]
    fn a_missing_ipmitool_is_unavailable() {
        for name in ["iowatt-no-such-ipmitool", "/nonexistent/ipmitool"] {
            match find_program(name) {
                Err(PowerError::Unavailable { message, hint }) => {
                    assert_eq!(message, format!("ipmitool not found (`{name}`)"));
                    assert!(hint.contains("apt install ipmitool"));
                }
                _ => panic!("{name} was found"),
            }
        }
        assert!(find_program("sh").is_ok());
    }
}
