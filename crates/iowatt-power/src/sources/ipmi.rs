//! A BMC through ipmitool: the DCMI power reading (whole-node watts, averaged over a window
//! the vendor chooses) and the SDR sensors in watts, rpm, °C, volts and amps, in-band
//! (`interface=open`, /dev/ipmi0) or over the LAN (`lanplus`, `lan`).
//!
//! Open checks the session (`mc info`), probes `dcmi power reading`, reads the SDR once to
//! choose the channels and caches it (`sdr dump`). Each poll runs `dcmi power reading` and
//! `-S cache sdr elist full`, each stamped at the middle of its command and killed at
//! `timeout_s`. DCMI readings of 0 W, 65535 W or a deactivated state are counted as invalid,
//! not recorded; sensors showing no reading count as missing values.

mod login;
mod parse;
mod run;
mod sdr;

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use self::login::{find_program, login, LOCAL};
use self::parse::{parse_dcmi, parse_sdr_line};
use self::run::{Finished, Ipmitool, RunError};
use self::sdr::{channel_names, SdrCache};
use crate::reading::{ChannelInfo, SourceStats, Unit};
use crate::source::{ClockAnchor, LocalReading, Source};
use crate::{PowerError, SourceConfig, SourceKind};

const MC_INFO: [&str; 2] = ["mc", "info"];
const DCMI: [&str; 3] = ["dcmi", "power", "reading"];
const SDR: [&str; 3] = ["sdr", "elist", "full"];
const MAX_EXAMPLES: usize = 10;
/// Sensors without a reading at open that the warning names before "and N more".
const NAMED_SKIPS: usize = 6;

/// How to reach an IPMI source's BMC with ipmitool, checked (program found, credentials
/// readable); the sweep's fan driver runs its vendor commands through the same connection.
pub struct CommandLine {
    pub program: PathBuf,
    /// Connection options (`-I lanplus -H … -C 3 -E`); never a secret.
    pub args: Vec<OsString>,
    /// For the child's `IPMI_PASSWORD` when the password came from `password_env`.
    pub password: Option<String>,
    /// "the BMC at `host:port`" or "the local BMC", for messages.
    pub bmc: String,
}

pub fn command_line(config: &SourceConfig) -> Result<CommandLine, PowerError> {
    let SourceKind::Ipmi {
        ipmitool,
        interface,
        host,
        port,
        user,
        password_env,
        password_file,
        cipher_suite,
        ..
    } = &config.kind
    else {
        return Err(PowerError::invalid(
            format!("source `{}` is not an IPMI source", config.name),
            "give kind ipmi",
        ));
    };
    let program = find_program(ipmitool)?;
    let mut login = login(
        interface,
        host.as_deref(),
        *port,
        user.as_deref(),
        password_env.as_deref(),
        password_file.as_deref(),
    )?;
    if let Some(suite) = cipher_suite {
        if interface != "lanplus" {
            return Err(PowerError::invalid(
                format!("cipher_suite `{suite}` applies to interface lanplus only"),
                "drop cipher_suite, or use interface=lanplus",
            ));
        }
        login.args.extend(["-C".into(), suite.to_string().into()]);
    }
    Ok(CommandLine {
        program,
        args: login.args,
        password: login.password,
        bmc: login.bmc,
    })
}

pub fn open(config: &SourceConfig, _anchor: ClockAnchor) -> Result<Box<dyn Source>, PowerError> {
    let SourceKind::Ipmi {
        dcmi,
        sdr,
        timeout_s,
        ..
    } = &config.kind
    else {
        unreachable!("ipmi::open called with another kind of source");
    };
    if !matches!(dcmi.as_str(), "auto" | "on" | "off") {
        return Err(PowerError::invalid(
            format!("dcmi `{dcmi}` is not one of auto, on, off"),
            "dcmi=auto reads the DCMI power reading when the BMC gives one",
        ));
    }
    if dcmi == "off" && !sdr {
        return Err(PowerError::invalid(
            "dcmi=off and sdr=false leave nothing to read",
            "enable dcmi (auto) or sdr",
        ));
    }
    if !(timeout_s.is_finite() && *timeout_s > 0.0) {
        return Err(PowerError::invalid(
            format!("IPMI timeout `{timeout_s}` s is not a positive number"),
            "give timeout_s in seconds, e.g. 10",
        ));
    }
    let cl = command_line(config)?;
    let mut source = Ipmi {
        name: config.name.clone(),
        bmc: cl.bmc,
        tool: Ipmitool {
            program: cl.program,
            login: cl.args,
            password: cl.password,
            timeout: Duration::from_secs_f64(*timeout_s),
        },
        dcmi: false,
        sdr_cache: None,
        sensors: HashMap::new(),
        channels: Vec::new(),
        stats: SourceStats::default(),
        warnings: Vec::new(),
    };
    source.run(&MC_INFO).map_err(|f| f.error)?;
    if dcmi != "off" {
        // Without the SDR, DCMI is all there is to read.
        source.probe_dcmi(dcmi == "on" || !sdr)?;
    }
    if *sdr {
        source.discover_sensors()?;
    }
    if source.channels.is_empty() {
        return Err(PowerError::unavailable(
            format!(
                "{} gives neither a DCMI power reading nor SDR sensors in watts, rpm, °C, volts \
                 or amps",
                source.bmc
            ),
            "run `ipmitool sdr elist full` and `ipmitool dcmi power reading` against it to see \
             what it offers",
        ));
    }
    Ok(Box::new(source))
}

struct Ipmi {
    name: String,
    /// "the BMC at `host:port`" or "the local BMC", for messages.
    bmc: String,
    tool: Ipmitool,
    /// DCMI is read; its channel is then channel 0.
    dcmi: bool,
    sdr_cache: Option<SdrCache>,
    /// (name, number, entity) of each SDR sensor recorded → its channel.
    sensors: HashMap<(String, u8, String), usize>,
    channels: Vec<ChannelInfo>,
    stats: SourceStats,
    warnings: Vec<String>,
}

/// A command that failed: the error to return, and the short reason for warnings.
struct Failure {
    error: PowerError,
    why: String,
}

impl Ipmi {
    fn run(&self, args: &[&str]) -> Result<Finished, Failure> {
        let mut all: Vec<OsString> = Vec::new();
        if let (Some(cache), "sdr") = (&self.sdr_cache, args[0]) {
            all.extend(["-S".into(), cache.file.clone().into()]);
        }
        all.extend(args.iter().map(OsString::from));
        let shown = args.join(" ");
        let done = match self.tool.run(&all) {
            Ok(done) => done,
            Err(RunError::TimedOut) => {
                let t = self.tool.timeout.as_secs_f64();
                return Err(Failure {
                    error: PowerError::unavailable(
                        format!(
                            "{} did not answer `ipmitool {shown}` within {t} s",
                            self.bmc
                        ),
                        "check the host and port (IPMI over LAN is UDP, port 623 by default), \
                         that IPMI over LAN is enabled on the BMC and that no firewall drops \
                         it; raise timeout_s if the BMC is slow",
                    ),
                    why: format!("no answer within {t} s"),
                });
            }
            Err(RunError::Spawn(e) | RunError::Io(e)) => {
                return Err(Failure {
                    error: PowerError::unavailable(
                        format!("cannot run `{}`: {e}", self.tool.program.display()),
                        "install ipmitool (Debian: apt install ipmitool), or give its path \
                         with ipmitool=...",
                    ),
                    why: e.to_string(),
                })
            }
        };
        if done.status.success() {
            return Ok(done);
        }
        // ipmitool's DCMI errors (lib/ipmi_dcmi.c `chk_rsp`) say more than its last line.
        let why = done
            .stderr
            .lines()
            .find(|l| l.contains("DCMI request failed") || l.contains("valid DCMI command"))
            .map_or_else(|| done.error_line(), |l| l.trim().to_string());
        let try_it = format!(
            "{} {} mc info",
            self.tool.program.display(),
            self.tool.login.join(" ".as_ref()).to_string_lossy()
        );
        let hint = if self.bmc == LOCAL {
            format!("check that the BMC answers `{try_it}`")
        } else {
            format!(
                "check the user and the password (an administrator of the BMC, over the LAN) \
                 and that the BMC answers `{try_it}`"
            )
        };
        Err(Failure {
            error: PowerError::unavailable(
                format!("`ipmitool {shown}` failed on {}: {why}", self.bmc),
                hint,
            ),
            why,
        })
    }

    /// Reads DCMI once (the session works): a BMC that does not give it is an error when
    /// `required` (dcmi=on), else a warning and DCMI stays off.
    fn probe_dcmi(&mut self, required: bool) -> Result<(), PowerError> {
        let reading = match self.run(&DCMI) {
            Ok(done) => parse_dcmi(&done.stdout).map_err(|e| format!("unreadable output: {e}")),
            Err(failure) => Err(failure.why),
        };
        let reading = match reading {
            Ok(reading) => reading,
            Err(why) if required => {
                return Err(PowerError::unavailable(
                    format!("{} gives no DCMI power reading: {why}", self.bmc),
                    "read its SDR sensors instead: sdr=true with dcmi=auto or dcmi=off",
                ))
            }
            Err(why) => {
                self.warnings.push(format!(
                    "{} gives no DCMI power reading ({why}): reading its SDR sensors only",
                    self.bmc
                ));
                return Ok(());
            }
        };
        if let Some(why) = reading.invalid_because() {
            self.warnings.push(format!(
                "the DCMI power reading of {} is {why}: readings like it are counted as \
                 invalid, not recorded",
                self.bmc
            ));
        }
        self.dcmi = true;
        self.channels.push(ChannelInfo {
            source: self.name.clone(),
            channel: "dcmi".into(),
            unit: Unit::Watts,
            scope: "node".into(),
            parent: None,
            label: Some("DCMI power reading".into()),
        });
        Ok(())
    }

    /// Reads the SDR once: sensors with a reading in a unit iowatt records become channels.
    /// Failing, it is an error unless DCMI is read, which then goes on alone.
    fn discover_sensors(&mut self) -> Result<(), PowerError> {
        let done = match self.run(&SDR) {
            Ok(done) => done,
            Err(failure) if self.dcmi => {
                self.warnings.push(format!(
                    "cannot read the SDR sensors of {} ({}): recording the DCMI power reading \
                     only",
                    self.bmc, failure.why
                ));
                return Ok(());
            }
            Err(failure) => return Err(failure.error),
        };
        let mut found = Vec::new();
        let mut skipped = Vec::new();
        for row in done.stdout.lines().filter_map(parse_sdr_line) {
            match row.quantity() {
                Some((unit, _)) => found.push((row, unit)),
                // Not a number: no reading now ("No Reading", "Disabled"), or a discrete
                // sensor's state. A number in another unit (percent, CFM) is not recorded.
                None if row.status == "ns" => skipped.push(row.name),
                None => {}
            }
        }
        let mut taken: HashSet<String> = self.channels.iter().map(|c| c.channel.clone()).collect();
        let names = channel_names(found.iter().map(|(row, _)| row), &mut taken);
        for ((row, unit), channel) in found.into_iter().zip(names) {
            let key = (row.name.clone(), row.number, row.entity.clone());
            self.sensors.insert(key, self.channels.len());
            self.channels.push(ChannelInfo {
                source: self.name.clone(),
                channel,
                unit: unit.unit(),
                scope: unit.scope().into(),
                parent: None,
                label: Some(row.name),
            });
        }
        if !skipped.is_empty() {
            self.warnings.push(format!(
                "{} SDR sensors of {} had no reading at start and are not recorded: {}",
                skipped.len(),
                self.bmc,
                name_list(&skipped)
            ));
        }
        if !self.sensors.is_empty() {
            self.sdr_cache = SdrCache::dump(&self.tool, &self.name);
        }
        Ok(())
    }

    fn poll_dcmi(&mut self, out: &mut Vec<LocalReading>) -> Result<(), PowerError> {
        let done = self.run(&DCMI).map_err(|f| f.error)?;
        let reading = parse_dcmi(&done.stdout).map_err(|e| {
            PowerError::format(format!("`ipmitool dcmi power reading` printed {e}"), "")
        })?;
        if reading.invalid_because().is_some() {
            self.stats.invalid_readings += 1;
            let state = if reading.activated {
                "activated"
            } else {
                "deactivated"
            };
            self.example(format!(
                "dcmi power reading: {} W, {state}",
                reading.current_w
            ));
        } else {
            out.push(LocalReading {
                mono_ns: done.mid_ns,
                channel: 0,
                value: f64::from(reading.current_w),
            });
        }
        Ok(())
    }

    fn poll_sdr(&mut self, out: &mut Vec<LocalReading>) -> Result<(), PowerError> {
        let done = self.run(&SDR).map_err(|f| f.error)?;
        for line in done.stdout.lines().filter(|l| !l.trim().is_empty()) {
            let Some(row) = parse_sdr_line(line) else {
                self.stats.malformed_lines += 1;
                self.example(format!("sdr elist: {line}"));
                continue;
            };
            let key = (row.name.clone(), row.number, row.entity.clone());
            let Some(&channel) = self.sensors.get(&key) else {
                continue; // not recorded: no reading at open, or not a quantity
            };
            match row.quantity() {
                Some((unit, value)) if unit.unit() == self.channels[channel].unit => {
                    out.push(LocalReading {
                        mono_ns: done.mid_ns,
                        channel,
                        value,
                    });
                }
                _ => self.stats.missing_values += 1,
            }
        }
        Ok(())
    }

    /// Keeps the first few distinct examples of what could not be used.
    fn example(&mut self, text: String) {
        let examples = &mut self.stats.examples;
        if examples.len() < MAX_EXAMPLES && !examples.iter().any(|(_, t)| *t == text) {
            examples.push((0, text));
        }
    }
}

/// `` `A`, `B` `` or `` `A`, … `F` and 3 more ``.
fn name_list(names: &[String]) -> String {
    let shown = names.len().min(NAMED_SKIPS);
    let mut list = format!("`{}`", names[..shown].join("`, `"));
    if names.len() > shown {
        list.push_str(&format!(" and {} more", names.len() - shown));
    }
    list
}

impl Source for Ipmi {
    fn channels(&self) -> &[ChannelInfo] {
        &self.channels
    }

    /// Both commands run even when the first fails; its error is returned after the other's
    /// readings are appended.
    fn poll(&mut self, out: &mut Vec<LocalReading>) -> Result<(), PowerError> {
        let dcmi = if self.dcmi {
            self.poll_dcmi(out)
        } else {
            Ok(())
        };
        let sdr = if self.sensors.is_empty() {
            Ok(())
        } else {
            self.poll_sdr(out)
        };
        dcmi.and(sdr)
    }

    fn stats(&self) -> SourceStats {
        self.stats.clone()
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::name_list;

    #[test]
    fn long_lists_of_names_are_cut() {
        let names: Vec<String> = (1..=8).map(|i| format!("S{i}")).collect();
        assert_eq!(name_list(&names[..2]), "`S1`, `S2`");
        assert_eq!(
            name_list(&names),
            "`S1`, `S2`, `S3`, `S4`, `S5`, `S6` and 2 more"
        );
    }
}
