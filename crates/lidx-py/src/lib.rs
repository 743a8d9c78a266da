//! lidx for Python: the extension module `lidx._lidx` under the `lidx` package
//! (`python/lidx`), which gives it its Python-facing names, argument checks and docs.
//!
//! Every function here is a thin wrapper over the library: arrays of keys come in as
//! read-only views of numpy's `uint64` buffers (no copy) and go out as numpy arrays that
//! take over the vectors the library returns (no copy either); long work runs with the GIL
//! released. A [`lidx::Error`] becomes a [`LidxError`] carrying the message the command line
//! prints, so a bad file raises, naming the file and the problem, and never takes down the
//! interpreter.

use pyo3::prelude::*;

mod index;
mod join;
mod keys;
mod kv;
#[cfg(feature = "sql")]
mod sql;
mod table;
mod updatable;

pyo3::create_exception!(
    _lidx,
    LidxError,
    pyo3::exceptions::PyException,
    "An error lidx reports: bad input (a missing, corrupt or wrong file; an impossible \
     parameter) or a failed operation, with the one-line message `lidx` prints."
);

/// The Python exception for a library error: [`LidxError`] with its message.
pub(crate) fn raise(error: lidx::Error) -> PyErr {
    LidxError::new_err(error.to_string())
}

/// Converts a library result for Python.
pub(crate) trait OrRaise<T> {
    /// The value, or the error as a [`LidxError`].
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for lidx::Result<T> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(raise)
    }
}

/// Runs the `lidx` command line `args` (its name first) in this process and returns its exit
/// code; `executable` is the script that runs it, which an experiment starts its
/// measurements with. For the package's `lidx` script only: it installs the process's
/// SIGINT and SIGTERM handler, and an interrupt ends the process.
#[pyfunction]
fn cli_main(py: Python<'_>, args: Vec<std::ffi::OsString>, executable: std::path::PathBuf) -> u8 {
    py.detach(|| lidx_cli::run(args, Some(executable)))
}

/// The module: its functions and classes, registered by each part.
#[pymodule(name = "_lidx")]
fn lidx_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("LidxError", m.py().get_type::<LidxError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    keys::register(m)?;
    index::register(m)?;
    table::register(m)?;
    join::register(m)?;
    kv::register(m)?;
    updatable::register(m)?;
    #[cfg(feature = "sql")]
    sql::register(m)?;
    Ok(())
}
