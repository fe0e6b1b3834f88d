//! Meter log timestamps to wall-clock nanoseconds: epoch seconds, epoch milliseconds, ISO 8601
//! (`2026-11-21T10:00:00.250`, a space for the `T`, an optional `Z` or `±hh:mm`) and seconds
//! elapsed since a given start. Parsed by hand: the formats are few, and a line costs no
//! allocation.

use iowatt_metrics::calendar::{civil_from_days, days_from_civil, days_in_month};

use crate::PowerError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeFormat {
    Epoch,
    EpochMs,
    Iso,
    Elapsed,
}

impl TimeFormat {
    /// The `time_format` option; `None` for "auto".
    pub fn from_option(text: &str) -> Result<Option<TimeFormat>, PowerError> {
        Ok(Some(match text {
            "auto" => return Ok(None),
            "epoch" => TimeFormat::Epoch,
            "epoch_ms" => TimeFormat::EpochMs,
            "iso" => TimeFormat::Iso,
            "elapsed" => TimeFormat::Elapsed,
            other => {
                return Err(PowerError::invalid(
                    format!("unknown time format `{other}`"),
                    "time formats are auto, epoch, epoch_ms, iso and elapsed",
                ))
            }
        }))
    }

    /// Guesses the format from one timestamp. Numbers are told apart by size: epoch
    /// milliseconds are past 1e11 (1973 in ms), epoch seconds past 1e8 (1973 in s), and
    /// anything smaller is seconds since the start of the log.
    pub fn detect(field: &str) -> Option<TimeFormat> {
        if parse_iso(field).is_some() {
            return Some(TimeFormat::Iso);
        }
        let v: f64 = field.parse().ok().filter(|v: &f64| v.is_finite())?;
        Some(if v >= 1e11 {
            TimeFormat::EpochMs
        } else if v >= 1e8 {
            TimeFormat::Epoch
        } else {
            TimeFormat::Elapsed
        })
    }
}

/// What naive ISO times (without a zone) are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    /// Seconds east of UTC.
    Fixed(i64),
    Local,
}

impl Zone {
    /// The `utc_offset` option: `+02:00`, `-0530`, `+02`, `Z`, `UTC`; local time when absent.
    pub fn from_option(text: Option<&str>) -> Result<Zone, PowerError> {
        let Some(text) = text else {
            return Ok(Zone::Local);
        };
        parse_offset(text.trim()).map(Zone::Fixed).ok_or_else(|| {
            PowerError::invalid(
                format!("utc_offset `{text}` is not an offset"),
                "write it as `+02:00`, `-05:30` or `Z`",
            )
        })
    }
}

/// Converts the time column of one log: a fixed format (or one detected once), a zone for naive
/// ISO times and, for elapsed times, the log's start.
pub struct Clock {
    pub format: Option<TimeFormat>,
    zone: Zone,
    start_ns: Option<i64>,
    /// The local offset of the last hour converted: mktime costs a lock and a TZ lookup.
    local_hour: Option<(i64, i64)>,
}

impl Clock {
    pub fn new(
        format: Option<TimeFormat>,
        start: Option<&str>,
        zone: Zone,
    ) -> Result<Clock, PowerError> {
        let mut clock = Clock {
            format,
            zone,
            start_ns: None,
            local_hour: None,
        };
        if let Some(start) = start {
            let ns = match TimeFormat::detect(start.trim()) {
                Some(TimeFormat::Iso) => clock.iso_ns(start.trim()),
                Some(TimeFormat::Epoch | TimeFormat::EpochMs) => {
                    decimal_ns(start.trim(), 1_000_000_000)
                }
                _ => None,
            };
            clock.start_ns = Some(ns.ok_or_else(|| {
                PowerError::invalid(
                    format!("start `{start}` is not a time"),
                    "give the log's wall-clock start in ISO 8601, e.g. 2026-11-21T10:00:00+01:00",
                )
            })?);
        }
        if format == Some(TimeFormat::Elapsed) && clock.start_ns.is_none() {
            return Err(elapsed_without_start(None));
        }
        Ok(clock)
    }

    /// Settles an "auto" format from a timestamp; false when that one says nothing. An Err when
    /// the times are elapsed seconds and no start was given.
    pub fn detect(&mut self, field: &str) -> Result<bool, PowerError> {
        if self.format.is_some() {
            return Ok(true);
        }
        match TimeFormat::detect(field) {
            Some(TimeFormat::Elapsed) if self.start_ns.is_none() => {
                Err(elapsed_without_start(Some(field)))
            }
            Some(f) => {
                self.format = Some(f);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Wall-clock ns of a timestamp; `None` when it does not parse (or the format is unknown).
    pub fn wall_ns(&mut self, field: &str) -> Option<i64> {
        match self.format? {
            TimeFormat::Epoch => decimal_ns(field, 1_000_000_000),
            TimeFormat::EpochMs => decimal_ns(field, 1_000_000),
            TimeFormat::Elapsed => self
                .start_ns?
                .checked_add(decimal_ns(field, 1_000_000_000)?),
            TimeFormat::Iso => self.iso_ns(field),
        }
    }

    fn iso_ns(&mut self, field: &str) -> Option<i64> {
        let (naive_s, frac_ns, offset) = parse_iso(field)?;
        let offset = match (offset, self.zone) {
            (Some(o), _) | (None, Zone::Fixed(o)) => o,
            (None, Zone::Local) => self.local_offset(naive_s)?,
        };
        (naive_s - offset)
            .checked_mul(1_000_000_000)?
            .checked_add(frac_ns)
    }

    /// Seconds east of UTC of local time at a naive time (given as if it were UTC), per the
    /// system's time zone rules, DST included.
    fn local_offset(&mut self, naive_s: i64) -> Option<i64> {
        let hour = naive_s.div_euclid(3600);
        if let Some((h, offset)) = self.local_hour {
            if h == hour {
                return Some(offset);
            }
        }
        let days = naive_s.div_euclid(86_400);
        let secs = naive_s.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        // SAFETY: a zeroed `tm` is valid (null tm_zone); mktime only reads and normalizes it.
        let utc = unsafe {
            let mut tm: libc::tm = std::mem::zeroed();
            tm.tm_year = (y - 1900) as libc::c_int;
            tm.tm_mon = (m - 1) as libc::c_int;
            tm.tm_mday = d as libc::c_int;
            tm.tm_hour = (secs / 3600) as libc::c_int;
            tm.tm_min = (secs / 60 % 60) as libc::c_int;
            tm.tm_sec = (secs % 60) as libc::c_int;
            tm.tm_isdst = -1;
            libc::mktime(&mut tm)
        };
        if utc == -1 {
            return None;
        }
        let offset = naive_s - utc;
        self.local_hour = Some((hour, offset));
        Some(offset)
    }
}

/// Elapsed times without `start`: a bad option when asked for, a log that does not fit its
/// options when detected.
fn elapsed_without_start(example: Option<&str>) -> PowerError {
    let hint = "give the log's wall-clock start as `start` (ISO 8601), or set time_format if the \
                times are something else";
    match example {
        Some(v) => PowerError::format(
            format!(
                "the times look like seconds since the log's start (`{v}`), which need a start \
                 time, and none was given"
            ),
            hint,
        ),
        None => PowerError::invalid("time_format elapsed needs a start time", hint),
    }
}

/// A decimal number of `unit_ns` units as integer nanoseconds, exactly (`1763719200.250` s);
/// exponents fall back to floating point.
pub fn decimal_ns(text: &str, unit_ns: i64) -> Option<i64> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        let v: f64 = text.parse().ok()?;
        let ns = v * unit_ns as f64;
        return (ns.is_finite() && ns.abs() < 9.2e18).then_some(ns.round() as i64);
    }
    let whole: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    // Digits below a nanosecond are dropped.
    let mut frac_ns: i128 = 0;
    let mut scale: i128 = i128::from(unit_ns);
    for b in frac.bytes().take(18) {
        scale /= 10;
        frac_ns += i128::from(b - b'0') * scale;
        if scale == 0 {
            break;
        }
    }
    let ns = i128::from(whole) * i128::from(unit_ns) + frac_ns;
    let ns = i64::try_from(ns).ok()?;
    Some(if negative { -ns } else { ns })
}

/// `YYYY-MM-DD[T ]HH:MM[:SS[.frac]][Z|±hh[:mm]]` → (seconds of the naive time read as UTC,
/// ns fraction, zone offset in seconds east if given).
pub fn parse_iso(text: &str) -> Option<(i64, i64, Option<i64>)> {
    let b = text.trim().as_bytes();
    let num = |s: &[u8]| -> Option<i64> {
        (!s.is_empty() && s.iter().all(u8::is_ascii_digit))
            .then(|| s.iter().fold(0i64, |a, d| a * 10 + i64::from(d - b'0')))
    };
    if b.len() < 16 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (year, month, day) = (num(&b[0..4])?, num(&b[5..7])?, num(&b[8..10])?);
    if b[13] != b':' {
        return None;
    }
    let (hour, minute) = (num(&b[11..13])?, num(&b[14..16])?);
    let mut i = 16;
    let mut second = 0;
    let mut frac_ns = 0;
    if b.get(i) == Some(&b':') {
        second = num(b.get(i + 1..i + 3)?)?;
        i += 3;
        if matches!(b.get(i), Some(b'.') | Some(b',')) {
            let start = i + 1;
            i = start;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let frac = &b[start..i];
            if frac.is_empty() {
                return None;
            }
            let mut scale = 100_000_000;
            for &d in frac.iter().take(9) {
                frac_ns += i64::from(d - b'0') * scale;
                scale /= 10;
            }
        }
    }
    let offset = match b.get(i..).map(<[u8]>::trim_ascii_start) {
        None | Some([]) => None,
        Some(zone) => Some(parse_offset(std::str::from_utf8(zone).ok()?)?),
    };
    let valid = (1..=12).contains(&month)
        && (1..=days_in_month(year, month)).contains(&day)
        && hour <= 23
        && minute <= 59
        && second <= 60;
    if !valid {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some((
        days * 86_400 + hour * 3600 + minute * 60 + second,
        frac_ns,
        offset,
    ))
}

/// `Z`, `UTC`, `+02:00`, `+0200`, `+02`, `-05:30` → seconds east of UTC.
fn parse_offset(text: &str) -> Option<i64> {
    if matches!(text, "Z" | "z" | "UTC") {
        return Some(0);
    }
    let b = text.as_bytes();
    let sign = match b.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let rest = &b[1..];
    let (hh, mm) = match rest.len() {
        2 => (rest, &b"00"[..]),
        4 => (&rest[..2], &rest[2..]),
        5 if rest[2] == b':' => (&rest[..2], &rest[3..]),
        _ => return None,
    };
    if !hh.iter().chain(mm).all(u8::is_ascii_digit) {
        return None;
    }
    let two = |s: &[u8]| i64::from(s[0] - b'0') * 10 + i64::from(s[1] - b'0');
    let (hours, minutes) = (two(hh), two(mm));
    (hours <= 18 && minutes <= 59).then_some(sign * (hours * 3600 + minutes * 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_795_255_200; // 2026-11-21T10:00:00Z

    #[test]
    fn iso_times_parse_with_and_without_zones() {
        assert_eq!(
            parse_iso("2026-11-21T10:00:00.250"),
            Some((T0, 250_000_000, None))
        );
        assert_eq!(parse_iso("2026-11-21 10:00:00Z"), Some((T0, 0, Some(0))));
        assert_eq!(
            parse_iso("2026-11-21T10:00:00+01:00"),
            Some((T0, 0, Some(3600)))
        );
        assert_eq!(
            parse_iso("2026-11-21T10:00:00.5-0530"),
            Some((T0, 500_000_000, Some(-19_800)))
        );
        assert_eq!(parse_iso("2026-11-21T10:00"), Some((T0, 0, None)));
        assert_eq!(parse_iso("2026-02-30T10:00:00"), None);
        assert_eq!(parse_iso("2026-11-21T10:00:00 junk"), None);
        assert_eq!(parse_iso("1763719200"), None);
    }

    #[test]
    fn clock_applies_the_offset_of_naive_times() {
        let mut c = Clock::new(Some(TimeFormat::Iso), None, Zone::Fixed(3600)).unwrap();
        assert_eq!(
            c.wall_ns("2026-11-21T11:00:00.250"),
            Some(T0 * 1_000_000_000 + 250_000_000)
        );
        // An explicit zone wins over utc_offset.
        assert_eq!(c.wall_ns("2026-11-21T10:00:00Z"), Some(T0 * 1_000_000_000));
    }

    #[test]
    fn local_time_follows_the_system_zone() {
        let mut c = Clock::new(Some(TimeFormat::Iso), None, Zone::Local).unwrap();
        let ns = c.wall_ns("2026-11-21T10:00:00").unwrap();
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        let t = T0 as libc::time_t;
        // SAFETY: valid pointers to a time_t and a tm.
        unsafe { libc::localtime_r(&t, &mut tm) };
        assert_eq!(ns, (T0 - tm.tm_gmtoff) * 1_000_000_000);
    }

    #[test]
    fn decimals_become_exact_nanoseconds() {
        assert_eq!(
            decimal_ns("1763719200.250", 1_000_000_000),
            Some(1_763_719_200_250_000_000)
        );
        assert_eq!(
            decimal_ns("1763719200250.5", 1_000_000),
            Some(1_763_719_200_250_500_000)
        );
        assert_eq!(decimal_ns("0.000000001", 1_000_000_000), Some(1));
        assert_eq!(decimal_ns("-1.5", 1_000_000_000), Some(-1_500_000_000));
        assert_eq!(decimal_ns("1e3", 1_000_000_000), Some(1_000_000_000_000));
        assert_eq!(decimal_ns("x", 1_000_000_000), None);
        assert_eq!(decimal_ns("", 1_000_000_000), None);
    }

    #[test]
    fn formats_are_detected_from_one_value() {
        assert_eq!(TimeFormat::detect("1763719200.25"), Some(TimeFormat::Epoch));
        assert_eq!(
            TimeFormat::detect("1763719200250"),
            Some(TimeFormat::EpochMs)
        );
        assert_eq!(TimeFormat::detect("12.5"), Some(TimeFormat::Elapsed));
        assert_eq!(
            TimeFormat::detect("2026-11-21 10:00:00"),
            Some(TimeFormat::Iso)
        );
        assert_eq!(TimeFormat::detect("noon"), None);
    }

    #[test]
    fn elapsed_times_count_from_the_start() {
        let mut c = Clock::new(None, Some("2026-11-21T10:00:00Z"), Zone::Local).unwrap();
        assert!(c.detect("1.5").unwrap());
        assert_eq!(c.wall_ns("1.5"), Some(T0 * 1_000_000_000 + 1_500_000_000));
        let mut no_start = Clock::new(None, None, Zone::Local).unwrap();
        assert!(no_start.detect("1.5").is_err());
        assert!(Clock::new(Some(TimeFormat::Elapsed), None, Zone::Local).is_err());
    }

    #[test]
    fn offsets_parse() {
        assert_eq!(parse_offset("+02:00"), Some(7200));
        assert_eq!(parse_offset("-0530"), Some(-19_800));
        assert_eq!(parse_offset("+02"), Some(7200));
        assert_eq!(parse_offset("Z"), Some(0));
        assert_eq!(parse_offset("02:00"), None);
        assert_eq!(parse_offset("+2:00"), None);
        assert!(Zone::from_option(Some("nope")).is_err());
    }

    #[test]
    fn civil_dates_round_trip() {
        for days in [-719_468, -1, 0, 1, 20_413, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(2026, 11, 21) * 86_400 + 36_000, T0);
    }
}
