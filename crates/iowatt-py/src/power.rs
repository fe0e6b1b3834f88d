//! `PowerRecorder`: opens the power sources and lets Python start, drain and stop their
//! sampling threads without holding the GIL.

use iowatt_power::{EventKind, Recorder, RecorderConfig};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::{from_power, raise};

#[pyclass(module = "iowatt._core", frozen)]
pub struct PowerRecorder {
    recorder: Recorder,
}

#[pymethods]
impl PowerRecorder {
    /// Opens every source of a `RecorderConfig` given as JSON (see `iowatt.power`).
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        let config: RecorderConfig = serde_json::from_str(config_json).map_err(|e| {
            raise(
                py,
                "ConfigError",
                format!("invalid power recorder config: {e}"),
                None,
            )
        })?;
        // Opening runs commands (cmd, ipmitool) that may take seconds.
        let recorder = py
            .detach(|| Recorder::open(&config))
            .map_err(|e| from_power(py, &e))?;
        Ok(Self { recorder })
    }

    /// The channel table; a reading's `channel` is an index into it.
    fn channels<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.recorder
            .channels()
            .iter()
            .enumerate()
            .map(|(index, c)| {
                let d = PyDict::new(py);
                d.set_item("index", index)?;
                d.set_item("source", &c.source)?;
                d.set_item("channel", &c.channel)?;
                d.set_item("unit", c.unit.as_str())?;
                d.set_item("scope", &c.scope)?;
                d.set_item("parent", &c.parent)?;
                d.set_item("label", &c.label)?;
                Ok(d)
            })
            .collect()
    }

    /// (CLOCK_REALTIME ns, CLOCK_MONOTONIC ns) read at the same moment.
    fn clock_anchor(&self) -> (i64, i64) {
        self.recorder.clock_anchor()
    }

    fn start(&self) {
        self.recorder.start();
    }

    /// Readings (as columns) and events accumulated since the last drain.
    fn drain<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (readings, events) = self.recorder.drain();
        let d = PyDict::new(py);
        d.set_item(
            "mono_ns",
            readings.iter().map(|r| r.mono_ns).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "channel",
            readings.iter().map(|r| r.channel).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "value",
            readings.iter().map(|r| r.value).collect::<Vec<_>>(),
        )?;
        let events = events
            .iter()
            .map(|e| {
                let ed = PyDict::new(py);
                ed.set_item("mono_ns", e.mono_ns)?;
                ed.set_item("source", &e.source)?;
                ed.set_item(
                    "kind",
                    match e.kind {
                        EventKind::Error => "error",
                        EventKind::Warning => "warning",
                        EventKind::Recovered => "recovered",
                    },
                )?;
                ed.set_item("message", &e.message)?;
                Ok(ed)
            })
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item("events", events)?;
        Ok(d)
    }

    /// Wakes every sampler for its final poll and joins them, without the GIL.
    fn stop(&self, py: Python<'_>) {
        py.detach(|| self.recorder.stop());
    }

    /// Per-source counters; `examples` as [line, text] pairs.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        // Waits for a poll in progress (an ipmitool call) without the GIL.
        let stats = py.detach(|| self.recorder.stats());
        stats
            .iter()
            .map(|s| {
                let d = PyDict::new(py);
                d.set_item("source", &s.source)?;
                d.set_item("polls", s.polls)?;
                d.set_item("readings", s.readings)?;
                d.set_item("errors", s.errors)?;
                d.set_item("malformed_lines", s.malformed_lines)?;
                d.set_item("missing_values", s.missing_values)?;
                d.set_item("out_of_order", s.out_of_order)?;
                d.set_item("invalid_readings", s.invalid_readings)?;
                let examples = s
                    .examples
                    .iter()
                    .map(|(line, text)| {
                        let line = line.into_pyobject(py)?.into_any();
                        PyList::new(py, [line, text.into_pyobject(py)?.into_any()])
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                d.set_item("examples", examples)?;
                Ok(d)
            })
            .collect()
    }
}

/// How to run ipmitool against an IPMI source's BMC (a `SourceConfig` as JSON): a dict with
/// `program`, `args` (connection options, no secret), `password` (for `IPMI_PASSWORD`, or
/// None) and `bmc` (its name in messages). Raises like opening the source would.
#[pyfunction]
pub fn ipmitool_command<'py>(py: Python<'py>, source_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let config: iowatt_power::SourceConfig = serde_json::from_str(source_json)
        .map_err(|e| raise(py, "ConfigError", format!("invalid IPMI source: {e}"), None))?;
    let cl = iowatt_power::sources::ipmi::command_line(&config).map_err(|e| from_power(py, &e))?;
    let d = PyDict::new(py);
    d.set_item("program", cl.program.to_string_lossy())?;
    let args: Vec<String> = cl
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    d.set_item("args", args)?;
    d.set_item("password", cl.password)?;
    d.set_item("bmc", cl.bmc)?;
    Ok(d)
}
