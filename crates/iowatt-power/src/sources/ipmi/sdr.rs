//! SDR sensors as channels: their names, and the repository cached once for every poll.

use std::collections::{HashMap, HashSet};
use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

use super::parse::SdrRow;
use super::run::Ipmitool;

/// A channel name for each row: its SDR name, made unique with the sensor number
/// (`Temp (0Eh)`) when a BMC repeats names (one `Temp` per CPU), and also the entity
/// (`Fan (30h, 29.1)`) when it repeats numbers too (sensors of other controllers). Names in
/// `taken` (`dcmi`) are avoided; the new ones are added to it.
pub fn channel_names<'a>(
    rows: impl IntoIterator<Item = &'a SdrRow> + Clone,
    taken: &mut HashSet<String>,
) -> Vec<String> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut numbers: HashMap<(&str, u8), usize> = HashMap::new();
    for row in rows.clone() {
        *names.entry(row.name.as_str()).or_default() += 1;
        *numbers.entry((row.name.as_str(), row.number)).or_default() += 1;
    }
    rows.into_iter()
        .map(|row| {
            let candidates = [
                row.name.clone(),
                format!("{} ({:02X}h)", row.name, row.number),
                format!("{} ({:02X}h, {})", row.name, row.number, row.entity),
            ];
            let first = if numbers[&(row.name.as_str(), row.number)] > 1 {
                2
            } else {
                usize::from(names[row.name.as_str()] > 1)
            };
            let name = candidates[first..]
                .iter()
                .find(|c| !taken.contains(*c))
                .cloned()
                .unwrap_or_else(|| {
                    (2..)
                        .map(|i| format!("{} #{i}", candidates[2]))
                        .find(|c| !taken.contains(c))
                        .expect("an unused name")
                });
            taken.insert(name.clone());
            name
        })
        .collect()
}

/// The SDR repository dumped once at open (`ipmitool sdr dump FILE`) and given to every poll
/// with `-S FILE`, so ipmitool fetches only the readings, not every record again. It lives in
/// a directory of its own (mode 0700, never a predictable file in /tmp) removed with it.
pub struct SdrCache {
    dir: PathBuf,
    pub file: PathBuf,
}

impl SdrCache {
    /// `None` if the dump fails: polls then read the repository from the BMC each time.
    pub fn dump(tool: &Ipmitool, source_name: &str) -> Option<SdrCache> {
        let safe: String = source_name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let dir = std::env::temp_dir().join(format!(
            "iowatt-ipmi-{}-{safe}-{}",
            std::process::id(),
            iowatt_metrics::now_ns()
        ));
        DirBuilder::new().mode(0o700).create(&dir).ok()?;
        let cache = SdrCache {
            file: dir.join("sdr.cache"),
            dir,
        };
        let args = [
            "sdr".into(),
            "dump".into(),
            cache.file.clone().into_os_string(),
        ];
        match tool.run(&args) {
            Ok(done) if done.status.success() && cache.file.is_file() => Some(cache),
            _ => None,
        }
    }
}

impl Drop for SdrCache {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_sdr_line;
    use super::*;

    #[test]
    fn repeated_names_are_told_apart() {
        let rows: Vec<SdrRow> = [
            "Temp             | 0Eh | ok  |  3.1 | 40 degrees C",
            "Temp             | 0Fh | ok  |  3.2 | 38 degrees C",
            "Inlet Temp       | 04h | ok  |  7.1 | 23 degrees C",
            "dcmi             | 05h | ok  |  7.1 | 100 Watts",
            "Fan              | 30h | ok  | 29.1 | 4200 RPM",
            "Fan              | 30h | ok  | 29.2 | 4300 RPM",
        ]
        .iter()
        .map(|l| parse_sdr_line(l).unwrap())
        .collect();
        let mut taken = HashSet::from(["dcmi".to_string()]);
        assert_eq!(
            channel_names(&rows, &mut taken),
            [
                "Temp (0Eh)",
                "Temp (0Fh)",
                "Inlet Temp",
                "dcmi (05h)",
                "Fan (30h, 29.1)",
                "Fan (30h, 29.2)",
            ]
        );
        assert!(taken.contains("Inlet Temp"));
    }
}
