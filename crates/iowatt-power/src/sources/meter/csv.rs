//! The shape of a meter's CSV log and the parsing of its lines.
//!
//! Real logs are messy: a logger restarted mid-file, a field left empty when the multimeter
//! missed a channel, clocks stepping back. Each quirk is counted with the first examples kept,
//! and a line is only skipped when it cannot be read at all.

use crate::reading::{ChannelInfo, SourceStats, Unit};
use crate::source::{ClockAnchor, LocalReading};
use crate::PowerError;

use super::time::Clock;

const MAX_EXAMPLES: usize = 10;
const MAX_EXAMPLE_CHARS: usize = 200;

/// The header of a log: delimiter, column names, which one holds the time.
pub struct Layout {
    pub delim: u8,
    pub columns: Vec<String>,
    pub time_col: usize,
    /// Every line ends with a delimiter (some loggers write one): the empty last field is not
    /// a column.
    pub trailing_delim: bool,
    /// The header as written, to recognize it when a truncated log starts over.
    pub header: String,
}

impl Layout {
    pub fn from_header(header: &str, time_column: Option<&str>) -> Result<Layout, PowerError> {
        let header = header.trim_end_matches('\r');
        // The delimiter is whichever of `,` `;` tab the header uses most.
        let delim = [b',', b';', b'\t']
            .into_iter()
            .max_by_key(|d| header.bytes().filter(|b| b == d).count())
            .filter(|d| header.as_bytes().contains(d))
            .unwrap_or(b',');
        let mut columns: Vec<String> = header
            .split(char::from(delim))
            .map(|c| clean(c).to_string())
            .collect();
        let trailing_delim = columns.len() > 1 && columns.last().is_some_and(String::is_empty);
        if trailing_delim {
            columns.pop();
        }
        for i in 0..columns.len() {
            if columns[i].is_empty() {
                columns[i] = format!("column{}", i + 1);
            }
            // A repeated name gets a suffix: channels are named after columns.
            let mut n = 2;
            let base = columns[i].clone();
            while columns[..i].contains(&columns[i]) {
                columns[i] = format!("{base}#{n}");
                n += 1;
            }
        }
        let listed = || {
            columns
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let time_col = match time_column {
            None => 0,
            Some(name) => columns.iter().position(|c| c == name).ok_or_else(|| {
                PowerError::format(
                    format!("no time column `{name}`; the header has {}", listed()),
                    "set time_column to one of these names",
                )
            })?,
        };
        if columns.len() < 2 {
            return Err(PowerError::format(
                format!(
                    "the header has no value column besides the time: {}",
                    listed()
                ),
                "the first non-comment line must name the columns, separated by `,`, `;` or tabs",
            ));
        }
        Ok(Layout {
            delim,
            columns,
            time_col,
            trailing_delim,
            header: header.trim().to_string(),
        })
    }

    /// One channel per column other than the time, in column order.
    pub fn channels(&self, source: &str) -> Vec<ChannelInfo> {
        self.value_columns()
            .map(|(_, name)| ChannelInfo {
                source: source.to_string(),
                channel: name.to_string(),
                unit: Unit::Raw,
                scope: "meter".into(),
                parent: None,
                label: None,
            })
            .collect()
    }

    fn value_columns(&self) -> impl Iterator<Item = (usize, &str)> {
        self.columns
            .iter()
            .enumerate()
            .filter(move |(i, _)| *i != self.time_col)
            .map(|(i, c)| (i, c.as_str()))
    }

    /// The time field of a line, if it has enough fields.
    pub fn time_field<'a>(&self, line: &'a str) -> Option<&'a str> {
        line.split(char::from(self.delim))
            .nth(self.time_col)
            .map(clean)
    }
}

/// A line that holds no data: blank, or a `#` comment.
pub fn is_skipped(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// A field without surrounding blanks and quotes.
fn clean(field: &str) -> &str {
    let f = field.trim();
    f.strip_prefix('"')
        .and_then(|f| f.strip_suffix('"'))
        .unwrap_or(f)
        .trim()
}

fn is_missing(field: &str) -> bool {
    field.is_empty() || field == "-" || field.eq_ignore_ascii_case("nan")
}

/// Turns lines into readings, counting what it cannot use.
pub struct LineParser {
    pub layout: Layout,
    pub clock: Clock,
    anchor: ClockAnchor,
    pub stats: SourceStats,
    pub warnings: Vec<String>,
    pub error: Option<PowerError>,
    /// One slot per column, reused for every line.
    values: Vec<Option<f64>>,
    prev_wall_ns: Option<i64>,
    /// After a truncation or rotation the log may begin with its header again.
    expect_header: bool,
}

impl LineParser {
    pub fn new(layout: Layout, clock: Clock, anchor: ClockAnchor) -> LineParser {
        LineParser {
            values: vec![None; layout.columns.len()],
            layout,
            clock,
            anchor,
            stats: SourceStats::default(),
            warnings: Vec::new(),
            error: None,
            prev_wall_ns: None,
            expect_header: false,
        }
    }

    /// The log starts over (truncated or rotated): its first line may be the header again, and
    /// the order of times starts afresh.
    pub fn restart(&mut self) {
        self.expect_header = true;
        self.prev_wall_ns = None;
    }

    /// Parses line `line_no` (1-based, as an editor numbers it). Bad lines are counted; a time
    /// format that cannot be used (elapsed seconds with no start) is kept in `error` for the
    /// poll to report.
    pub fn line(&mut self, line_no: u64, bytes: &[u8], out: &mut Vec<LocalReading>) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            self.malformed(line_no, &String::from_utf8_lossy(bytes));
            return;
        };
        let text = text.trim_end_matches('\r');
        if is_skipped(text) {
            return;
        }
        if self.expect_header {
            self.expect_header = false;
            if text.trim() == self.layout.header {
                return;
            }
            let time_parses = self
                .layout
                .time_field(text)
                .is_some_and(|t| self.clock.format.is_some() && self.clock.wall_ns(t).is_some());
            if !time_parses {
                self.warnings.push(format!(
                    "the log started over with another header at line {line_no} (`{}`); its \
                     columns are still read as {}",
                    excerpt(text),
                    self.layout.header
                ));
                return;
            }
        }
        let layout = &self.layout;
        let mut n = 0;
        let mut missing = 0;
        let mut wall_ns = None;
        let mut bad = false;
        for (i, field) in text.split(char::from(layout.delim)).enumerate() {
            n += 1;
            let field = clean(field);
            if i >= layout.columns.len() {
                // Only the empty field after a trailing delimiter may be there.
                bad |= !(layout.trailing_delim && i == layout.columns.len() && field.is_empty());
                continue;
            }
            if i == layout.time_col {
                if let Err(e) = self.clock.detect(field) {
                    self.error.get_or_insert(e);
                }
                wall_ns = self.clock.wall_ns(field);
                bad |= wall_ns.is_none();
            } else if is_missing(field) {
                self.values[i] = None;
                missing += 1;
            } else {
                match field.parse::<f64>() {
                    Ok(v) if v.is_finite() => self.values[i] = Some(v),
                    _ => bad = true,
                }
            }
        }
        let expected = layout.columns.len();
        let count_ok = n == expected || (layout.trailing_delim && n == expected + 1);
        let (Some(wall_ns), false, true) = (wall_ns, bad, count_ok) else {
            self.malformed(line_no, text);
            return;
        };
        let out_of_order = self.prev_wall_ns.is_some_and(|prev| wall_ns < prev);
        self.stats.missing_values += missing;
        self.stats.out_of_order += u64::from(out_of_order);
        if missing > 0 || out_of_order {
            self.example(line_no, text);
        }
        self.prev_wall_ns = Some(wall_ns);
        let mono_ns = wall_ns - self.anchor.0 + self.anchor.1;
        for (channel, (col, _)) in self.layout.value_columns().enumerate() {
            if let Some(value) = self.values[col] {
                out.push(LocalReading {
                    mono_ns,
                    channel,
                    value,
                });
            }
        }
    }

    pub fn malformed(&mut self, line_no: u64, text: &str) {
        self.stats.malformed_lines += 1;
        self.example(line_no, text);
    }

    fn example(&mut self, line_no: u64, text: &str) {
        if self.stats.examples.len() < MAX_EXAMPLES {
            self.stats.examples.push((line_no, excerpt(text)));
        }
    }
}

fn excerpt(text: &str) -> String {
    match text.char_indices().nth(MAX_EXAMPLE_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::time::{TimeFormat, Zone};
    use super::*;

    fn parser(header: &str) -> LineParser {
        let layout = Layout::from_header(header, None).unwrap();
        let clock = Clock::new(Some(TimeFormat::Epoch), None, Zone::Fixed(0)).unwrap();
        LineParser::new(layout, clock, (0, 0))
    }

    #[test]
    fn the_delimiter_comes_from_the_header() {
        assert_eq!(Layout::from_header("t,a,b", None).unwrap().delim, b',');
        assert_eq!(Layout::from_header("t;a;b", None).unwrap().delim, b';');
        assert_eq!(Layout::from_header("t\ta\tb", None).unwrap().delim, b'\t');
        // Decimal commas in a semicolon log's header do not win.
        let l = Layout::from_header("\"time\"; \"V (12,5 V rail)\"; b", None).unwrap();
        assert_eq!(l.delim, b';');
        assert_eq!(l.columns, ["time", "V (12,5 V rail)", "b"]);
    }

    #[test]
    fn a_missing_time_column_lists_the_header() {
        let Err(e) = Layout::from_header("t,a,b", Some("time")) else {
            panic!("expected an error");
        };
        assert_eq!(
            e.to_string(),
            "no time column `time`; the header has `t`, `a`, `b`"
        );
    }

    #[test]
    fn columns_are_named_uniquely() {
        let l = Layout::from_header("t,a,,a,", None).unwrap();
        assert!(l.trailing_delim);
        assert_eq!(l.columns, ["t", "a", "column3", "a#2"]);
    }

    #[test]
    fn lines_become_readings_and_quirks_are_counted() {
        let mut p = parser("t,a,b");
        let mut out = Vec::new();
        p.line(2, b"10.5,1,2", &mut out);
        p.line(3, b"11,,NaN", &mut out);
        p.line(4, b"12,3", &mut out);
        p.line(5, b"9,x,1", &mut out);
        p.line(6, b"9,4,-\r", &mut out);
        p.line(7, b"# comment", &mut out);
        let got: Vec<(i64, usize, f64)> = out
            .iter()
            .map(|r| (r.mono_ns, r.channel, r.value))
            .collect();
        assert_eq!(
            got,
            [
                (10_500_000_000, 0, 1.0),
                (10_500_000_000, 1, 2.0),
                (9_000_000_000, 0, 4.0)
            ]
        );
        assert_eq!(p.stats.malformed_lines, 2);
        assert_eq!(p.stats.missing_values, 3);
        assert_eq!(p.stats.out_of_order, 1);
        assert_eq!(p.stats.examples[0], (3, "11,,NaN".to_string()));
    }
}
