//! The Python methods every engine's class shares, written once: a class holding an
//! `iowatt_metrics::Handle` in a field named `handle` gets them from [`engine_job!`], and
//! declares only its constructor, its conversions and what its engine alone offers.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Writes a class's job methods over its `handle` field: `start`, `cancel`, `wait` (without
/// the GIL), `result` and, when a conversion is given, `progress`. PyO3 classes cannot be
/// generic, so each engine's class gets its own copy; the `iowatt._core` stub declares them
/// per class too.
///
/// ```ignore
/// engine_job!(WorkloadRun, "run", start: once, progress: progress_dict, result: result_of);
/// ```
///
/// - `"run"` names the job in errors ("the run has not ended; call wait()").
/// - `start: once` raises `RuntimeError` on a second start; `start: idempotent` makes a second
///   start do nothing and `start()` answer whether this call started the job (a log read is
///   started early, then driven like the rest).
/// - `progress: f` is `f(py, &work, &progress) -> PyResult<Bound<PyDict>>`.
/// - `result: f` is `f(py, &work, &outcome) -> PyResult<T>`: the output as Python data, or the
///   engine's error raised as an `iowatt.errors` exception.
macro_rules! engine_job {
    (
        $class:ident, $what:literal,
        start: $start:ident,
        $(progress: $progress:path,)?
        result: $result:path $(,)?
    ) => {
        #[pyo3::pymethods]
        impl $class {
            #[doc = concat!("Asks the ", $what, " to stop; it ends soon (wait() says when).")]
            fn cancel(&self) {
                self.handle.cancel();
            }

            #[doc = concat!(
                "Waits up to `timeout_s` for the ", $what,
                " to end, without the GIL; true when it has."
            )]
            fn wait(&self, py: pyo3::Python<'_>, timeout_s: f64) -> bool {
                let timeout = std::time::Duration::from_secs_f64(timeout_s.max(0.0));
                py.detach(|| self.handle.wait(timeout))
            }

            #[doc = concat!(
                "What the ", $what, " produced; raises its error if it failed, ",
                "RuntimeError before it has ended."
            )]
            fn result<'py>(
                &self,
                py: pyo3::Python<'py>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                use pyo3::IntoPyObjectExt;
                self.handle
                    .with_outcome(|outcome| {
                        $result(py, self.handle.work(), outcome)?.into_bound_py_any(py)
                    })
                    .unwrap_or_else(|| Err($crate::job::not_ended($what)))
            }

            $(
                fn progress<'py>(
                    &self,
                    py: pyo3::Python<'py>,
                ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::types::PyDict>> {
                    $progress(py, self.handle.work(), self.handle.progress())
                }
            )?
        }

        $crate::job::engine_job!(@start $start, $class, $what);
    };
    (@start once, $class:ident, $what:literal) => {
        #[pyo3::pymethods]
        impl $class {
            #[doc = concat!("Starts the ", $what, " on its own thread; once only.")]
            fn start(&self) -> pyo3::PyResult<()> {
                $crate::job::started(self.handle.start(), $what)
            }
        }
    };
    (@start idempotent, $class:ident, $what:literal) => {
        #[pyo3::pymethods]
        impl $class {
            #[doc = concat!(
                "Starts the ", $what, " on its own thread; false if it was started before."
            )]
            fn start(&self) -> bool {
                self.handle.start()
            }
        }
    };
}

pub(crate) use engine_job;

/// `Ok` when `first` (the handle's `start` returned true), else the error naming `what`.
pub(crate) fn started(first: bool, what: &str) -> PyResult<()> {
    if first {
        Ok(())
    } else {
        Err(PyRuntimeError::new_err(format!(
            "the {what} was already started"
        )))
    }
}

/// The error of asking for `what`'s result before it has ended.
pub(crate) fn not_ended(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("the {what} has not ended; call wait()"))
}
