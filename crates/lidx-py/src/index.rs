//! Static indexes over sorted keys (`lidx::index`): build over an array or a table, search
//! many keys in one call (the GIL released, on threads), save and load index files.

use std::path::PathBuf;

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use lidx::index::file::{self, KeysFingerprint};
use lidx::index::{AnyIndex, AnyParams, IndexKind};
use lidx::last_mile;
use lidx::storage::Table;

use crate::OrRaise;
use crate::keys::{Array, slice, to_numpy};

/// Queries a thread takes at a time: enough to pay for starting it many times over.
const QUERIES_PER_TASK: usize = 1 << 16;

/// A static index over sorted `u64` keys, of any kind.
#[pyclass(module = "lidx._lidx", frozen)]
pub struct Index {
    index: AnyIndex,
    /// The keys it was built on, for saving and for checking the keys of `lower_bound`.
    fingerprint: KeysFingerprint,
}

/// The parameters of `kind` with `params` (name, value as text) applied.
fn kind_params(kind: &str, given: Vec<(String, String)>) -> PyResult<AnyParams> {
    let kind: IndexKind = kind.parse().or_raise()?;
    let mut params = AnyParams::default_for(kind);
    for (name, value) in given {
        params.set(&name, &value).or_raise()?;
    }
    Ok(params)
}

/// Runs `each` over `queries` and `out` in matching chunks, on up to `threads` threads.
fn on_threads(
    queries: &[u64],
    outs: (&mut [u64], &mut [u64]),
    threads: usize,
    each: impl Fn(&[u64], &mut [u64], &mut [u64]) + Sync,
) {
    let threads = threads.clamp(1, queries.len().div_ceil(QUERIES_PER_TASK).max(1));
    if threads == 1 {
        return each(queries, outs.0, outs.1);
    }
    let chunk = queries.len().div_ceil(threads);
    std::thread::scope(|s| {
        let parts = queries
            .chunks(chunk)
            .zip(outs.0.chunks_mut(chunk))
            .zip(outs.1.chunks_mut(chunk));
        for ((q, a), b) in parts {
            let each = &each;
            s.spawn(move || each(q, a, b));
        }
    });
}

#[pymethods]
impl Index {
    /// Builds an index of `kind` over the sorted array `keys`.
    #[staticmethod]
    #[pyo3(signature = (keys, kind, params, threads))]
    fn build(
        py: Python<'_>,
        keys: PyReadonlyArray1<'_, u64>,
        kind: &str,
        params: Vec<(String, String)>,
        threads: usize,
    ) -> PyResult<Index> {
        let params = kind_params(kind, params)?;
        let keys = slice(&keys)?;
        py.detach(|| {
            let index = AnyIndex::build_on(keys, &params, threads.max(1))?;
            Ok(Index {
                index,
                fingerprint: KeysFingerprint::of(keys),
            })
        })
        .or_raise()
    }

    /// Builds an index of `kind` over the keys of the sorted table at `path`.
    #[staticmethod]
    #[pyo3(signature = (path, kind, params, threads))]
    fn build_table(
        py: Python<'_>,
        path: PathBuf,
        kind: &str,
        params: Vec<(String, String)>,
        threads: usize,
    ) -> PyResult<Index> {
        let params = kind_params(kind, params)?;
        py.detach(|| {
            let table = Table::open(&path)?;
            table.require_sorted("building an index")?;
            let keys = table.read_keys()?;
            let index = AnyIndex::build_on(&keys, &params, threads.max(1))?;
            Ok(Index {
                index,
                fingerprint: KeysFingerprint::of(&keys),
            })
        })
        .or_raise()
    }

    /// Loads the index file at `path`.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Index> {
        py.detach(|| file::load(&path))
            .map(|(index, fingerprint)| Index { index, fingerprint })
            .or_raise()
    }

    /// Saves the index at `path` (written aside and renamed into place).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| file::save(&path, &self.index, &self.fingerprint))
            .or_raise()
    }

    /// The windows `(lo, hi)` of every query: `lo <= lower_bound(q) <= hi`.
    fn search<'py>(
        &self,
        py: Python<'py>,
        queries: PyReadonlyArray1<'_, u64>,
        threads: usize,
    ) -> PyResult<(Array<'py>, Array<'py>)> {
        let queries = slice(&queries)?;
        let (lo, hi) = py.detach(|| {
            let mut lo = vec![0u64; queries.len()];
            let mut hi = vec![0u64; queries.len()];
            on_threads(queries, (&mut lo, &mut hi), threads, |q, lo, hi| {
                let mut hint = 0;
                for ((&key, lo), hi) in q.iter().zip(lo).zip(hi) {
                    let w = self.index.search_from(key, &mut hint);
                    (*lo, *hi) = (w.lo, w.hi);
                }
            });
            (lo, hi)
        });
        Ok((to_numpy(py, lo), to_numpy(py, hi)))
    }

    /// The lower bound of every query in `keys`, the array the index was built on: its
    /// window, then a binary search inside it.
    fn lower_bound<'py>(
        &self,
        py: Python<'py>,
        keys: PyReadonlyArray1<'_, u64>,
        queries: PyReadonlyArray1<'_, u64>,
        threads: usize,
    ) -> PyResult<Array<'py>> {
        let keys = slice(&keys)?;
        let f = &self.fingerprint;
        if keys.len() as u64 != f.n
            || keys.first().copied().unwrap_or(0) != f.min_key
            || keys.last().copied().unwrap_or(0) != f.max_key
        {
            return Err(PyValueError::new_err(format!(
                "the index was built on {} keys in {}..={}, not on these {} keys",
                f.n,
                f.min_key,
                f.max_key,
                keys.len()
            )));
        }
        let queries = slice(&queries)?;
        let positions = py.detach(|| {
            let mut positions = vec![0u64; queries.len()];
            let mut unused = vec![0u64; queries.len()];
            on_threads(
                queries,
                (&mut positions, &mut unused),
                threads,
                |q, p, _| {
                    let mut hint = 0;
                    for (&key, p) in q.iter().zip(p) {
                        let w = self.index.search_from(key, &mut hint);
                        let window = &keys[w.lo as usize..w.hi as usize];
                        *p = w.lo + last_mile::lower_bound(window, key, |k| *k) as u64;
                    }
                },
            );
            positions
        });
        Ok(to_numpy(py, positions))
    }

    /// The kind's name (`pgm`, `sampled-pgm`, `rs`, `rmi`, `btree`, `binary`).
    #[getter]
    fn kind(&self) -> String {
        self.index.kind().to_string()
    }

    /// The parameters, as `name=value` pairs.
    #[getter]
    fn params(&self) -> String {
        self.index.params().to_string()
    }

    /// The index's bytes in memory.
    #[getter]
    fn size_in_bytes(&self) -> u64 {
        self.index.size_in_bytes()
    }

    /// The widest window it returns, in positions.
    #[getter]
    fn max_width(&self) -> u64 {
        self.index.max_width()
    }

    /// The number of keys it was built on.
    fn __len__(&self) -> usize {
        self.index.len() as usize
    }

    fn __repr__(&self) -> String {
        format!(
            "<lidx.Index {} {} over {} keys, {} bytes, windows of at most {}>",
            self.index.kind(),
            self.index.describe(),
            self.index.len(),
            self.index.size_in_bytes(),
            self.index.max_width()
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Index>()?;
    m.add_function(wrap_pyfunction!(kinds, m)?)?;
    Ok(())
}

/// Every index kind, with the parameters it takes.
#[pyfunction]
fn kinds() -> Vec<(String, Vec<&'static str>)> {
    IndexKind::ALL
        .into_iter()
        .map(|k| (k.to_string(), AnyParams::names(k).to_vec()))
        .collect()
}
