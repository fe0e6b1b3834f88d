//! ipmitool's text output, parsed: `dcmi power reading` (ipmitool/ipmitool `lib/ipmi_dcmi.c`,
//! `ipmi_dcmi_pwr_rd`) and `sdr elist full` (`lib/ipmi_sdr.c`, `ipmi_sdr_print_sensor_fc`).
//! Pure functions, tested on output captured from ipmitool 1.8.19 against the simulated BMC of
//! `tests/bmc/` (in `testdata/`) and on the shapes real BMCs print.

use crate::reading::Unit;

/// A DCMI Get Power Reading, in whole watts as the BMC reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DcmiReading {
    pub current_w: u32,
    pub minimum_w: Option<u32>,
    pub maximum_w: Option<u32>,
    pub average_w: Option<u32>,
    /// The BMC's statistics window ("Sampling period"), when printed.
    pub period_s: Option<u32>,
    pub activated: bool,
}

impl DcmiReading {
    /// Why the reading cannot be true, if it cannot: broken BMCs answer 0 W, 65535 W or a
    /// deactivated reading state (openbmc/phosphor-host-ipmid#167).
    pub fn invalid_because(&self) -> Option<&'static str> {
        if !self.activated {
            Some("`deactivated`")
        } else if self.current_w == 0 {
            Some("0 W")
        } else if self.current_w == 0xFFFF {
            Some("65535 W")
        } else {
            None
        }
    }
}

/// Parses `ipmitool dcmi power reading`. Labels are found anywhere in a line: ipmitool 1.8.19
/// prints the timestamp without its newline, so "Sampling period" follows it on one line.
pub fn parse_dcmi(text: &str) -> Result<DcmiReading, String> {
    let mut current = None;
    let mut reading = DcmiReading {
        current_w: 0,
        minimum_w: None,
        maximum_w: None,
        average_w: None,
        period_s: None,
        // Without a "Power reading state" line nothing says the reading is off.
        activated: true,
    };
    for line in text.lines() {
        if let Some(v) = after(line, "Instantaneous power reading:") {
            current = Some(watts(v)?);
        }
        if let Some(v) = after(line, "Minimum during sampling period:") {
            reading.minimum_w = Some(watts(v)?);
        }
        if let Some(v) = after(line, "Maximum during sampling period:") {
            reading.maximum_w = Some(watts(v)?);
        }
        if let Some(v) = after(line, "Average power reading over sample period:") {
            reading.average_w = Some(watts(v)?);
        }
        if let Some(v) = after(line, "Sampling period:") {
            reading.period_s = first_word(v).parse().ok();
        }
        if let Some(v) = after(line, "Power reading state is:") {
            reading.activated = match first_word(v) {
                "activated" => true,
                "deactivated" => false,
                other => return Err(format!("unknown power reading state `{other}`")),
            };
        }
    }
    reading.current_w =
        current.ok_or_else(|| "no `Instantaneous power reading:` line".to_string())?;
    Ok(reading)
}

fn after<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    line.find(label).map(|i| &line[i + label.len()..])
}

fn first_word(text: &str) -> &str {
    text.split_whitespace().next().unwrap_or("")
}

/// `   215 Watts` → 215.
fn watts(text: &str) -> Result<u32, String> {
    let mut words = text.split_whitespace();
    match (words.next(), words.next()) {
        (Some(n), Some("Watts")) => n.parse().map_err(|_| format!("`{n}` is not whole watts")),
        _ => Err(format!("`{}` is not `N Watts`", text.trim())),
    }
}

/// One line of `ipmitool sdr elist full`:
/// `name | NNh | status | entity.instance | reading` (`%-16s | %02Xh | %-3s | %2d.%1d | …`).
#[derive(Clone, Debug, PartialEq)]
pub struct SdrRow {
    pub name: String,
    pub number: u8,
    /// `ok`, `nc`, `cr`, `nr`, `lnc`, `ucr` …; `ns` when there is no reading.
    pub status: String,
    /// `entity.instance`, e.g. `29.1`: with the number it tells apart sensors of one name.
    pub entity: String,
    /// The reading as printed: `4200 RPM`, `3.50 Amps`, `No Reading`, `Disabled`, or the
    /// state of a discrete sensor (`Presence detected`).
    pub reading: String,
}

impl SdrRow {
    /// The value and its unit text (`4200`, `RPM`), when the reading is a number.
    pub fn value(&self) -> Option<(f64, &str)> {
        // An analog sensor with discrete states appends them after ", ".
        let analog = self.reading.split(", ").next().unwrap_or("");
        let (number, unit) = analog.split_once(' ')?;
        let value: f64 = number.parse().ok()?;
        value.is_finite().then_some((value, unit.trim()))
    }

    /// The value converted to the unit iowatt records, if it is a quantity iowatt records.
    pub fn quantity(&self) -> Option<(SdrUnit, f64)> {
        let (value, unit) = self.value()?;
        let unit = SdrUnit::from_ipmitool(unit)?;
        Some((unit, unit.to_si(value)))
    }
}

/// Parses one line of `sdr elist full`; `None` for a line of another shape. Fields are split
/// from the right, so a `|` in a sensor name stays in the name.
pub fn parse_sdr_line(line: &str) -> Option<SdrRow> {
    let mut fields = line.rsplitn(5, '|').map(str::trim);
    let reading = fields.next()?;
    let entity = fields.next()?;
    let status = fields.next()?;
    let number = fields.next()?;
    let name = fields.next()?;
    let number = u8::from_str_radix(number.strip_suffix('h')?, 16).ok()?;
    let entity_ok = entity
        .split_once('.')
        .is_some_and(|(id, inst)| id.parse::<u8>().is_ok() && inst.parse::<u8>().is_ok());
    if name.is_empty() || !entity_ok || status.is_empty() || status.contains(' ') {
        return None;
    }
    Some(SdrRow {
        name: name.to_string(),
        number,
        status: status.to_string(),
        entity: entity.to_string(),
        reading: reading.to_string(),
    })
}

/// The SDR units iowatt records (ipmitool's `unit_desc` strings, without modifiers or `%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdrUnit {
    Watts,
    Rpm,
    Celsius,
    Fahrenheit,
    Volts,
    Amps,
}

impl SdrUnit {
    pub fn from_ipmitool(unit: &str) -> Option<SdrUnit> {
        Some(match unit {
            "Watts" => SdrUnit::Watts,
            "RPM" => SdrUnit::Rpm,
            "degrees C" => SdrUnit::Celsius,
            "degrees F" => SdrUnit::Fahrenheit,
            "Volts" => SdrUnit::Volts,
            "Amps" => SdrUnit::Amps,
            _ => return None,
        })
    }

    pub fn unit(self) -> Unit {
        match self {
            SdrUnit::Watts => Unit::Watts,
            SdrUnit::Rpm => Unit::Rpm,
            SdrUnit::Celsius | SdrUnit::Fahrenheit => Unit::Celsius,
            SdrUnit::Volts => Unit::Volts,
            SdrUnit::Amps => Unit::Amps,
        }
    }

    /// What a channel of this unit covers: a BMC's watts are the node's (or a supply's)
    /// input, the other sensors are read for context.
    pub fn scope(self) -> &'static str {
        match self {
            SdrUnit::Watts => "node",
            SdrUnit::Rpm => "fan",
            SdrUnit::Celsius | SdrUnit::Fahrenheit => "temperature",
            SdrUnit::Volts | SdrUnit::Amps => "sensor",
        }
    }

    pub fn to_si(self, value: f64) -> f64 {
        match self {
            SdrUnit::Fahrenheit => (value - 32.0) * 5.0 / 9.0,
            _ => value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dcmi(file: &str) -> DcmiReading {
        parse_dcmi(file).unwrap()
    }

    #[test]
    fn dcmi_from_ipmitool_1_8_19() {
        // The timestamp and "Sampling period" share a line (ipmitool 1.8.19).
        let r = dcmi(include_str!("testdata/dcmi.txt"));
        assert_eq!(
            r,
            DcmiReading {
                current_w: 215,
                minimum_w: Some(162),
                maximum_w: Some(276),
                average_w: Some(176),
                period_s: Some(1),
                activated: true,
            }
        );
        assert_eq!(r.invalid_because(), None);
    }

    #[test]
    fn dcmi_from_the_reference_example() {
        // lovoo/ipmi_exporter#18, as quoted in the reference doc §3.4.
        let text = "
    Instantaneous power reading:                   215 Watts
    Minimum during sampling period:                162 Watts
    Maximum during sampling period:                276 Watts
    Average power reading over sample period:      176 Watts
    IPMI timestamp:                           Wed Feb 15 12:49:51 2017
    Sampling period:                          01131466 Seconds.
    Power reading state is:                   activated
";
        let r = dcmi(text);
        assert_eq!(
            (r.current_w, r.average_w, r.period_s),
            (215, Some(176), Some(1131466))
        );
        assert!(r.activated);
    }

    #[test]
    fn dcmi_readings_that_cannot_be_true() {
        let zero = dcmi(include_str!("testdata/dcmi_0.txt"));
        assert_eq!(zero.current_w, 0);
        assert_eq!(zero.invalid_because(), Some("0 W"));
        let max = dcmi(include_str!("testdata/dcmi_65535.txt"));
        assert_eq!(max.current_w, 65535);
        assert_eq!(max.invalid_because(), Some("65535 W"));
        let off = dcmi(include_str!("testdata/dcmi_deactivated.txt"));
        assert_eq!((off.current_w, off.activated), (120, false));
        assert_eq!(off.invalid_because(), Some("`deactivated`"));
    }

    #[test]
    fn dcmi_output_without_a_reading_is_an_error() {
        assert!(parse_dcmi("").is_err());
        assert!(parse_dcmi("\n    DCMI request failed because: Invalid command (c1)\n").is_err());
        assert!(parse_dcmi("    Instantaneous power reading:   many Watts\n").is_err());
        let odd_state =
            "    Instantaneous power reading: 5 Watts\n    Power reading state is: on\n";
        assert!(parse_dcmi(odd_state).is_err());
    }

    #[test]
    fn sdr_elist_full_from_the_simulated_bmc() {
        let rows: Vec<SdrRow> = include_str!("testdata/sdr_elist_full.txt")
            .lines()
            .map(|l| parse_sdr_line(l).unwrap())
            .collect();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Pwr Consumption",
                "FAN1",
                "FAN2",
                "CPU Temp",
                "Inlet Temp",
                "12V",
                "PSU1 Current",
                "DIMM Temp",
                "Exhaust Temp"
            ]
        );
        assert_eq!(
            rows[1],
            SdrRow {
                name: "FAN1".into(),
                number: 2,
                status: "ok".into(),
                entity: "29.1".into(),
                reading: "4200 RPM".into(),
            }
        );
        let q: Vec<Option<(SdrUnit, f64)>> = rows.iter().map(SdrRow::quantity).collect();
        assert_eq!(
            q,
            [
                Some((SdrUnit::Watts, 200.0)),
                Some((SdrUnit::Rpm, 4200.0)),
                Some((SdrUnit::Rpm, 3900.0)),
                Some((SdrUnit::Celsius, 45.0)),
                Some((SdrUnit::Celsius, 22.0)),
                Some((SdrUnit::Volts, 12.0)),
                Some((SdrUnit::Amps, 3.5)),
                None, // No Reading
                None, // Disabled
            ]
        );
        assert_eq!(
            (rows[7].status.as_str(), rows[7].reading.as_str()),
            ("ns", "No Reading")
        );
    }

    #[test]
    fn sdr_lines_as_real_bmcs_print_them() {
        // The reference doc's example, then hand-written lines in the shapes BMCs print:
        // duplicate names told apart by number, °F, a threshold state, an analog sensor with
        // a discrete state, a discrete sensor, a unit iowatt does not record.
        let fan = parse_sdr_line("FAN1             | 41h | ok  | 29.1 | 4200 RPM").unwrap();
        assert_eq!(
            (fan.number, fan.quantity()),
            (0x41, Some((SdrUnit::Rpm, 4200.0)))
        );
        let t0 = parse_sdr_line("Temp             | 0Eh | ok  |  3.1 | 40 degrees C").unwrap();
        let t1 = parse_sdr_line("Temp             | 0Fh | ok  |  3.2 | 38 degrees C").unwrap();
        assert_eq!(
            (t0.name.as_str(), t0.number, t0.entity.as_str()),
            ("Temp", 0x0E, "3.1")
        );
        assert_eq!((t1.number, t1.entity.as_str()), (0x0F, "3.2"));
        let f = parse_sdr_line("Ambient          | 30h | ok  | 64.1 | 95 degrees F").unwrap();
        let (unit, celsius) = f.quantity().unwrap();
        assert_eq!(unit, SdrUnit::Fahrenheit);
        assert!((celsius - 35.0).abs() < 1e-9);
        let hot = parse_sdr_line("CPU1 Temp        | 01h | ucr | 3.1 | 97 degrees C").unwrap();
        assert_eq!(
            (hot.status.as_str(), hot.quantity()),
            ("ucr", Some((SdrUnit::Celsius, 97.0)))
        );
        let mixed = "PS1 Voltage      | 5Ah | ok  | 10.1 | 230 Volts, Limit Not Exceeded";
        assert_eq!(
            parse_sdr_line(mixed).unwrap().quantity(),
            Some((SdrUnit::Volts, 230.0))
        );
        let status = parse_sdr_line("PS1 Status       | 64h | ok  | 10.1 | Presence detected");
        assert_eq!(status.unwrap().quantity(), None);
        let pct = parse_sdr_line("Fan Duty         | 50h | ok  |  7.1 | 35 percent").unwrap();
        assert_eq!(
            (pct.value(), pct.quantity()),
            (Some((35.0, "percent")), None)
        );
        let neg = parse_sdr_line("Sub Zero         | 52h | ok  |  7.1 | -5 degrees C").unwrap();
        assert_eq!(neg.quantity(), Some((SdrUnit::Celsius, -5.0)));
        let piped = parse_sdr_line("A|B              | 53h | ok  |  7.1 | 3 Watts").unwrap();
        assert_eq!(piped.name, "A|B");
    }

    #[test]
    fn other_lines_are_not_sdr_rows() {
        for line in [
            "",
            "Error: Unable to establish IPMI v2 / RMCP+ session",
            "Get SDR 0000 command failed: Requested sensor, data, or record not found",
            "FAN1             | 4200 RPM          | ok",
            "FAN1             | 41 | ok  | 29.1 | 4200 RPM",
            "FAN1             | 41h | ok  | fan | 4200 RPM",
            "                 | 41h | ok  | 29.1 | 4200 RPM",
        ] {
            assert_eq!(parse_sdr_line(line), None, "{line:?}");
        }
    }
}
