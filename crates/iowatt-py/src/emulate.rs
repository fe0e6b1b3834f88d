//! `Emulation`: the emulated disk on its handle for Python — the model and paths in; the
//! counters while mounted; every request's charge and every state change out.

use std::time::Duration;

use iowatt_emulate::{
    array_json, counters_json, ArrayCounters, ArrayLog, ArrayOptions, ArrayServed, Counters,
    Discipline, Drive, EmulateError, Emulation as Work, LayoutConfig, Options, Progress, Reply,
    Served, SetError, Vibration,
};
use iowatt_metrics::Handle;
use iowatt_sim::disk::{DiskModel, State};
use iowatt_sim::raid::{self, ArrayConfig, Spec};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::columns::column_bytes;
use crate::errors::raise;
use crate::job::engine_job;

#[pyclass(module = "iowatt._core", frozen)]
pub struct Emulation {
    handle: Handle<Work>,
}

engine_job!(Emulation, "emulated disk", start: once, progress: progress_dict, result: result_dict);

#[pymethods]
impl Emulation {
    /// BACKING served at MOUNT as a disk of `model_json` (a `DiskModel`, checked here):
    /// spinning down after `spin_down_s` idle (None: never), its rotational positions from
    /// `seed`, with the kernel's page cache above it only when `page_cache`, picking requests
    /// by `scheduler` (`fifo`, `elevator`, or `cfq` with its `slice_s` and `idle_window_s`);
    /// with `curve` ((stimulus, r) points, ascending) and `tails` (per step's stimulus, the
    /// quantiles of the multiplier of a request's added time, mean 1),
    /// slowed to r at the stimulus `at`, a stall (r = 0) failing requests after `stall_cap_s`.
    /// With `array_json` (`{"array": ArrayConfig, "spec": Spec, "used": bytes, "layout":
    /// {group_bytes, inodes_per_group, inode_bytes}}`, checked here as `iowatt sim raid`
    /// checks it), an array of such disks under the spec's personality.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (
        backing, mount, model_json, *, name, spin_down_s, seed, page_cache, scheduler="fifo",
        slice_s=0.1, idle_window_s=0.008, curve=None, at=None, stall_cap_s=30.0, tails=None,
        array_json=None
    ))]
    fn new(
        py: Python<'_>,
        backing: std::path::PathBuf,
        mount: std::path::PathBuf,
        model_json: &str,
        name: &str,
        spin_down_s: Option<f64>,
        seed: u64,
        page_cache: bool,
        scheduler: &str,
        slice_s: f64,
        idle_window_s: f64,
        curve: Option<Vec<(f64, f64)>>,
        at: Option<f64>,
        stall_cap_s: f64,
        tails: Option<Vec<(f64, Vec<f64>)>>,
        array_json: Option<&str>,
    ) -> PyResult<Self> {
        let config = |m: String| raise(py, "ConfigError", m, None);
        let model: DiskModel = serde_json::from_str(model_json)
            .map_err(|e| config(format!("disk model `{name}`: {e}")))?;
        model.check(name).map_err(|e| config(e.0))?;
        let spin_down = spin_down_s
            .map(|s| {
                Duration::try_from_secs_f64(s).map_err(|_| config(format!("--spin-down {s} s")))
            })
            .transpose()?;
        let discipline = match scheduler {
            "fifo" => Discipline::Fifo,
            "elevator" => Discipline::Elevator,
            "cfq" => {
                let ns = |s: f64, what: &str| {
                    Duration::try_from_secs_f64(s)
                        .map(|d| d.as_nanos() as u64)
                        .map_err(|_| config(format!("{what} {s} s")))
                };
                Discipline::Cfq {
                    slice_ns: ns(slice_s, "--slice")?,
                    idle_ns: ns(idle_window_s, "--idle-window")?,
                }
            }
            other => return Err(config(format!("--scheduler `{other}` is not a scheduler"))),
        };
        let vibration = match curve {
            None => None,
            Some(curve) => {
                let ok = !curve.is_empty()
                    && curve.windows(2).all(|w| w[0].0 < w[1].0)
                    && curve
                        .iter()
                        .all(|&(s, r)| s.is_finite() && (0.0..=1.0).contains(&r));
                if !ok {
                    return Err(config(
                        "the curve's stimuli must ascend and its values lie within 0..1".into(),
                    ));
                }
                let stall_cap = Duration::try_from_secs_f64(stall_cap_s)
                    .map_err(|_| config(format!("--stall-cap {stall_cap_s} s")))?;
                let at = at.unwrap_or(curve[0].0);
                let tails = tails.unwrap_or_default();
                let tails_ok = tails.windows(2).all(|w| w[0].0 < w[1].0)
                    && tails
                        .iter()
                        .all(|(_, q)| q.iter().all(|m| m.is_finite() && *m >= 0.0));
                if !tails_ok {
                    return Err(config(
                        "the tails' steps must ascend and their multipliers be 0 or more".into(),
                    ));
                }
                Some(Vibration {
                    curve,
                    at,
                    stall_cap,
                    tails,
                })
            }
        };
        let cfq = scheduler == "cfq";
        let settings = serde_json::json!({
            "disk_model": name,
            "scheduler": scheduler,
            "slice_s": cfq.then_some(slice_s),
            "idle_window_s": cfq.then_some(idle_window_s),
            "page_cache": page_cache,
            "spin_down_s": spin_down_s,
            "array": array_json.is_some(),
        })
        .to_string();
        Ok(Self {
            handle: Handle::new(Work {
                options: Options {
                    backing,
                    mount,
                    model,
                    spin_down,
                    seed,
                    page_cache,
                    discipline,
                    vibration,
                    array: array_json
                        .map(|j| array_options(j, seed))
                        .transpose()
                        .map_err(|m| raise(py, "ConfigError", m, Some(ARRAY_HINT)))?,
                    settings,
                },
            }),
        })
    }

    /// Sets the stimulus in force (`iowatt emulate set`); the speed it gives. Raises
    /// ConfigError outside the curve, without one, or while a followed BMC holds it.
    fn set_stimulus(&self, py: Python<'_>, value: f64) -> PyResult<f64> {
        let drive = self.mounted(py)?;
        drive.set_stimulus(value).map_err(|e| set_error(py, e))
    }

    /// Refuses `set_stimulus` (and `iowatt emulate set`) while `locked`: another source, a
    /// BMC's fan duty, sets the stimulus.
    fn lock(&self, py: Python<'_>, locked: bool) -> PyResult<()> {
        let drive = self.mounted(py)?;
        drive.lock(locked);
        Ok(())
    }

    /// Sets the stimulus from the source that holds the lock: `value` clamped to the curve.
    fn follow(&self, py: Python<'_>, value: f64) -> PyResult<f64> {
        let drive = self.mounted(py)?;
        drive.follow(value).map_err(|e| set_error(py, e))
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ArrayRequest {
    array: ArrayConfig,
    spec: Spec,
    used: u64,
    layout: Layout,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Layout {
    group_bytes: u64,
    inodes_per_group: u64,
    inode_bytes: u64,
    /// The directories holding files (backing inodes), in their paths' name order.
    #[serde(default)]
    dirs: Vec<u64>,
}

const ARRAY_HINT: &str = "the array is built as `iowatt sim raid` builds it, from the same \
                          raid.toml and --params (docs/sim-raid.md, \"Parameters\")";

/// The array the emulator serves from, refused (one line) where `iowatt sim raid` would
/// refuse it: built once here, as the mount will build it.
fn array_options(json: &str, seed: u64) -> Result<ArrayOptions, String> {
    let r: ArrayRequest =
        serde_json::from_str(json).map_err(|e| format!("the array's configuration: {e}"))?;
    raid::build(&r.array, &r.spec, r.used, seed, r.array.fs.is_some())
        .map_err(|e| e.to_string())?;
    let personality = match &r.spec {
        Spec::Raid0 => "raid0",
        Spec::Lru { .. } => "lru",
        Spec::Paraid(_) => "paraid",
    };
    Ok(ArrayOptions {
        personality: personality.into(),
        used: r.used,
        layout: LayoutConfig {
            group_bytes: r.layout.group_bytes,
            inodes_per_group: r.layout.inodes_per_group,
            inode_bytes: r.layout.inode_bytes,
        },
        dirs: r.layout.dirs,
        config: r.array,
        spec: r.spec,
    })
}

impl Emulation {
    /// The mounted disk, or ConfigError before it is.
    fn mounted(&self, py: Python<'_>) -> PyResult<&Drive<Reply>> {
        self.handle.progress().drive().ok_or_else(|| {
            raise(
                py,
                "ConfigError",
                "the disk is not mounted yet".into(),
                None,
            )
        })
    }
}

fn set_error(py: Python<'_>, e: SetError) -> PyErr {
    let m = match e {
        SetError::NoCurve => "this disk has no curve (mount it with --curve)".to_string(),
        SetError::Locked => "the stimulus follows a BMC: it cannot be set by hand".to_string(),
        SetError::OutOfRange { value, low, high } => {
            format!("stimulus {value} is outside the curve's {low}..{high}")
        }
    };
    raise(py, "ConfigError", m, None)
}

fn counters_dict<'py>(
    py: Python<'py>,
    c: &Counters,
    model: &DiskModel,
    range: Option<(f64, f64)>,
) -> PyResult<Bound<'py, PyAny>> {
    let json = counters_json(c, model, range).to_string();
    py.import("json")?.call_method1("loads", (json,))
}

/// `{"ready": False}` until mounted, then the counters (`counters.json`'s keys), the mount's
/// clock zero on CLOCK_MONOTONIC (`t0_ns`) and ready.
fn progress_dict<'py>(
    py: Python<'py>,
    _: &Work,
    progress: &Progress,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let counters = match (progress.drive(), progress.array()) {
        (Some(drive), _) => Some(counters_dict(
            py,
            &drive.counters(),
            drive.model(),
            drive.stimulus_range(),
        )?),
        (_, Some(a)) => Some(array_dict(py, &a.counters(), a.model(), a.personality())?),
        _ => None,
    };
    match (counters, progress.epoch_ns()) {
        (Some(counters), Some(t0_ns)) => {
            d.update(counters.cast_into::<PyDict>()?.as_mapping())?;
            d.set_item("t0_ns", t0_ns)?;
            d.set_item("ready", true)?;
        }
        _ => d.set_item("ready", false)?,
    }
    Ok(d)
}

fn array_dict<'py>(
    py: Python<'py>,
    c: &ArrayCounters,
    model: &DiskModel,
    personality: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let json = array_json(c, model, personality).to_string();
    py.import("json")?.call_method1("loads", (json,))
}

/// A column of the served requests: its name and how each request gives its value.
type Column<R, T> = (&'static str, fn(&R) -> T);

/// Each column of `rows` into `into` as a buffer under its name.
fn set_columns<R, T: crate::columns::Column>(
    into: &Bound<'_, PyDict>,
    rows: &[R],
    columns: &[Column<R, T>],
) -> PyResult<()> {
    for (name, f) in columns {
        let values: Vec<T> = rows.iter().map(f).collect();
        into.set_item(name, column_bytes(into.py(), &values)?)?;
    }
    Ok(())
}

/// The mount's zero on CLOCK_MONOTONIC, every request as column buffers (times in ns from
/// it; charges in s), the state changes, the stimuli set and the counters at the end.
fn result_dict<'py>(
    py: Python<'py>,
    work: &Work,
    outcome: &Result<iowatt_emulate::Record, EmulateError>,
) -> PyResult<Bound<'py, PyDict>> {
    let r = outcome
        .as_ref()
        .map_err(|e| raise(py, "TargetError", e.to_string(), None))?;
    let d = PyDict::new(py);
    d.set_item("t0_ns", r.t0_ns)?;
    d.set_item("lazy_unmount", r.lazy_unmount)?;
    if let (Some(log), Some(a)) = (&r.array, &work.options.array) {
        array_result(py, &d, log, &work.options.model, &a.personality)?;
        return Ok(d);
    }
    let s = &r.served;
    let c = PyDict::new(py);
    let ints: [Column<Served, u64>; 9] = [
        ("arrived_ns", |x| x.arrived_ns),
        ("started_ns", |x| x.started_ns),
        ("done_ns", |x| x.done_ns),
        ("offset", |x| x.offset),
        ("bytes", |x| x.bytes),
        ("write", |x| u64::from(x.write)),
        ("drained", |x| u64::from(x.drained)),
        ("failed", |x| u64::from(x.failed)),
        ("stream", |x| u64::from(x.stream)),
    ];
    set_columns(&c, s, &ints)?;
    let floats: [Column<Served, f64>; 5] = [
        ("overhead_s", |x| x.charge.overhead_s),
        ("seek_s", |x| x.charge.seek_s),
        ("rotation_s", |x| x.charge.rotation_s),
        ("transfer_s", |x| x.charge.transfer_s),
        ("slowdown_s", |x| x.charge.slowdown_s),
    ];
    set_columns(&c, s, &floats)?;
    d.set_item("columns", c)?;
    let changes: Vec<(u64, &str)> = r
        .changes
        .iter()
        .map(|ch| (ch.t_ns, ch.state.name()))
        .collect();
    d.set_item("changes", changes)?;
    let stimuli: Vec<(u64, f64, f64)> = r
        .stimuli
        .iter()
        .map(|s| (s.t_ns, s.value, s.speed))
        .collect();
    d.set_item("stimuli", stimuli)?;
    d.set_item(
        "states",
        State::ALL.iter().map(|s| s.name()).collect::<Vec<_>>(),
    )?;
    let range = work.options.vibration.as_ref().map(Vibration::range);
    d.set_item(
        "counters",
        counters_dict(py, &r.counters, &work.options.model, range)?,
    )?;
    Ok(d)
}

/// An array's account into `d`: every request answered as column buffers (`arrived_ns`,
/// `first_ns`, `done_ns` on the mount's clock; a lookup has 0 bytes), each disk's state
/// changes, PARAID's gears, the engine's energy, cycles and power bins per disk, and the
/// counters at the end.
fn array_result(
    py: Python<'_>,
    d: &Bound<'_, PyDict>,
    log: &ArrayLog,
    model: &DiskModel,
    personality: &str,
) -> PyResult<()> {
    let s = &log.served;
    let c = PyDict::new(py);
    let ints: [Column<ArrayServed, u64>; 8] = [
        ("arrived_ns", |x| x.arrived_ns),
        ("first_ns", |x| x.first_ns),
        ("done_ns", |x| x.done_ns),
        ("offset", |x| x.offset),
        ("bytes", |x| x.bytes),
        ("write", |x| u64::from(x.write)),
        ("drained", |x| u64::from(x.drained)),
        ("stream", |x| u64::from(x.stream)),
    ];
    set_columns(&c, s, &ints)?;
    d.set_item("columns", c)?;
    let changes: Vec<(u64, usize, &str)> = log
        .changes
        .iter()
        .map(|&(t, disk, state)| (t, disk, state.name()))
        .collect();
    d.set_item("disk_changes", changes)?;
    let run = &log.run;
    d.set_item("gears", run.gears.clone())?;
    d.set_item("energy_j", run.energy_j.clone())?;
    d.set_item("spin_cycles", run.spin_cycles.clone())?;
    d.set_item("most_cycles_a_day", run.most_cycles_a_day.clone())?;
    for (name, bins) in [
        ("bin_energy_j", &run.bin_energy_j),
        ("bin_standby_s", &run.bin_standby_s),
    ] {
        let buffers = bins
            .iter()
            .map(|v| column_bytes(py, v))
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item(name, buffers)?;
    }
    d.set_item("synced_bytes", run.synced_bytes)?;
    d.set_item("fs_reads", run.fs_reads)?;
    d.set_item("fs_writes", run.fs_writes)?;
    d.set_item("end_ns", run.end_ns)?;
    d.set_item(
        "counters",
        array_dict(py, &log.counters, model, personality)?,
    )?;
    Ok(())
}
