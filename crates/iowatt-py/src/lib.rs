//! The `iowatt._core` extension: bindings only, one file per engine, no logic of its own.

use pyo3::prelude::*;

mod anonymize;
mod columns;
mod emulate;
mod errors;
mod histogram;
mod job;
mod power;
mod raid;
mod replay;
mod sim;
mod tasks;
mod trace;
mod tree;
mod units;
mod workload;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(units::parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(units::parse_duration_ns, m)?)?;
    m.add_class::<workload::WorkloadRun>()?;
    m.add_class::<power::PowerRecorder>()?;
    m.add_class::<anonymize::LogAnonymizer>()?;
    m.add_class::<tree::TreeRecreate>()?;
    m.add_class::<replay::Replay>()?;
    m.add_class::<sim::ServerSim>()?;
    m.add_class::<emulate::Emulation>()?;
    m.add_function(wrap_pyfunction!(raid::raid_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(tasks::tasks_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(trace::derive_keys, m)?)?;
    m.add_function(wrap_pyfunction!(trace::hash_names, m)?)?;
    m.add_class::<trace::LogRead>()?;
    m.add_function(wrap_pyfunction!(power::ipmitool_command, m)?)?;
    m.add(
        "PERSONALITIES",
        iowatt_workload::personality::PERSONALITIES.to_vec(),
    )?;
    Ok(())
}
