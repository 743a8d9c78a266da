//! Joins of two tables on disk (`lidx::join::driver`, the pipeline `lidx join` runs).

use std::path::PathBuf;

use pyo3::prelude::*;

use lidx::join::JoinMethod;
use lidx::join::driver::{self, JoinRequest};
use lidx::memory::MemoryBudget;
use lidx::partition::Entries;
use lidx::storage::ReadMode;
use lidx::storage::profile::StorageProfile;

use crate::OrRaise;

/// Joins the tables at `outer` and `inner` by `method` (`None`: the cost model's pick),
/// writing the output to `out` or counting it; returns the method that ran and every
/// figure of the run (`lidx::join::JoinRecord`'s fields) as a dict.
#[pyfunction]
#[pyo3(signature = (
    outer, inner, method, index, outer_index, out, threads, direct, io_depth, read_size,
    memory_budget, entries, cold, profile
))]
#[expect(
    clippy::too_many_arguments,
    reason = "one per setting of `lidx join`; the Python side gives them names and defaults"
)]
fn join<'py>(
    py: Python<'py>,
    outer: PathBuf,
    inner: PathBuf,
    method: Option<&str>,
    index: Option<PathBuf>,
    outer_index: Option<PathBuf>,
    out: Option<PathBuf>,
    threads: usize,
    direct: bool,
    io_depth: usize,
    read_size: u64,
    memory_budget: Option<u64>,
    entries: Option<&str>,
    cold: bool,
    profile: Option<PathBuf>,
) -> PyResult<(String, Bound<'py, PyAny>)> {
    let method: Option<JoinMethod> = method.map(str::parse).transpose().or_raise()?;
    let entries: Option<Entries> = entries.map(str::parse).transpose().or_raise()?;
    let run = py
        .detach(|| {
            let request = JoinRequest {
                index,
                outer_index,
                profile: profile.as_deref().map(StorageProfile::load).transpose()?,
                threads,
                mode: if direct {
                    ReadMode::Direct
                } else {
                    ReadMode::Buffered
                },
                read_size,
                io_depth,
                cold,
                output: out,
                memory: memory_budget.map(MemoryBudget::new),
                entries,
                ..JoinRequest::new(&outer, &inner, method)
            };
            driver::run(&request, |_| {})
        })
        .or_raise()?;
    let record = pythonize::pythonize(py, &run.record)?;
    Ok((run.method.to_string(), record))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(join, m)?)
}
