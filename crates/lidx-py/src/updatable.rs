//! Updatable indexes (`lidx::updatable`, paper 3): one key to one payload, in memory, with
//! bulk operations on arrays.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use lidx::updatable::{AnyUpdatable, Kind};

use crate::OrRaise;
use crate::keys::{Array, slice, to_numpy};

/// An updatable index of `u64` keys to `u64` payloads, of any kind, with its count of keys.
#[pyclass(module = "lidx._lidx")]
pub struct Updatable {
    index: AnyUpdatable,
    /// Keys held: kept here, since the contract's inserts and removals do not say whether
    /// the key was there.
    len: u64,
}

/// Two arrays of the same length, or a ValueError.
fn same_length(a: &[u64], b: &[u64], what: &str) -> PyResult<()> {
    if a.len() == b.len() {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "{} keys but {} {what}",
        a.len(),
        b.len()
    )))
}

impl Updatable {
    /// Sets `key` to `payload`, counting it where it is new.
    fn put(&mut self, key: u64, payload: u64) {
        if self.index.get(key).is_none() {
            self.len += 1;
        }
        self.index.insert(key, payload);
    }

    /// Removes `key`; whether it was there.
    fn take(&mut self, key: u64) -> bool {
        let held = self.index.get(key).is_some();
        if held {
            self.index.remove(key);
            self.len -= 1;
        }
        held
    }
}

#[pymethods]
impl Updatable {
    /// Bulk-loads an index of `kind` from `keys` and `payloads` (any order; the last payload
    /// of a repeated key wins).
    #[new]
    fn new(
        py: Python<'_>,
        kind: &str,
        keys: PyReadonlyArray1<'_, u64>,
        payloads: PyReadonlyArray1<'_, u64>,
    ) -> PyResult<Updatable> {
        let kind: Kind = kind.parse().or_raise()?;
        let (keys, payloads) = (slice(&keys)?, slice(&payloads)?);
        same_length(keys, payloads, "payloads")?;
        py.detach(|| {
            let mut entries: Vec<(u64, u64)> =
                keys.iter().copied().zip(payloads.iter().copied()).collect();
            // Stable: equal keys keep their order, so the last one given wins.
            entries.sort_by_key(|e| e.0);
            let index = AnyUpdatable::bulk_load(kind, &entries)?;
            let distinct = entries.windows(2).filter(|w| w[0].0 != w[1].0).count() as u64
                + u64::from(!entries.is_empty());
            Ok(Updatable {
                index,
                len: distinct,
            })
        })
        .or_raise()
    }

    /// The payload of `key`, or `None`.
    fn get(&mut self, key: u64) -> Option<u64> {
        self.index.get(key)
    }

    /// Sets `key` to `payload`.
    fn insert(&mut self, key: u64, payload: u64) {
        self.put(key, payload);
    }

    /// Removes `key`; whether it was there.
    fn remove(&mut self, key: u64) -> bool {
        self.take(key)
    }

    /// The payloads of `keys` and whether each was found (0 where not).
    fn get_many<'py>(
        &mut self,
        py: Python<'py>,
        keys: PyReadonlyArray1<'_, u64>,
    ) -> PyResult<(Array<'py>, Array<'py, bool>)> {
        let keys = slice(&keys)?;
        let (payloads, found): (Vec<u64>, Vec<bool>) = py.detach(|| {
            keys.iter()
                .map(|&k| match self.index.get(k) {
                    Some(p) => (p, true),
                    None => (0, false),
                })
                .unzip()
        });
        Ok((to_numpy(py, payloads), PyArray1::from_vec(py, found)))
    }

    /// Sets every key to its payload, in order.
    fn insert_many(
        &mut self,
        py: Python<'_>,
        keys: PyReadonlyArray1<'_, u64>,
        payloads: PyReadonlyArray1<'_, u64>,
    ) -> PyResult<()> {
        let (keys, payloads) = (slice(&keys)?, slice(&payloads)?);
        same_length(keys, payloads, "payloads")?;
        py.detach(|| {
            for (&k, &p) in keys.iter().zip(payloads) {
                self.put(k, p);
            }
        });
        Ok(())
    }

    /// Removes every key; how many were there.
    fn remove_many(&mut self, py: Python<'_>, keys: PyReadonlyArray1<'_, u64>) -> PyResult<u64> {
        let keys = slice(&keys)?;
        Ok(py.detach(|| keys.iter().filter(|&&k| self.take(k)).count() as u64))
    }

    /// Up to `n` entries in key order from the first key at least `start`, as arrays.
    fn scan<'py>(&mut self, py: Python<'py>, start: u64, n: usize) -> (Array<'py>, Array<'py>) {
        let (keys, payloads): (Vec<u64>, Vec<u64>) = py.detach(|| {
            let mut out = Vec::with_capacity(n.min(1 << 20));
            self.index.scan(start, n, &mut out);
            out.into_iter().unzip()
        });
        (to_numpy(py, keys), to_numpy(py, payloads))
    }

    fn __len__(&self) -> usize {
        self.len as usize
    }

    /// The kind's name.
    #[getter]
    fn kind(&self) -> String {
        self.index.kind().to_string()
    }

    /// Bytes of the whole structure in memory.
    #[getter]
    fn size_in_bytes(&self) -> u64 {
        self.index.size_in_bytes()
    }

    /// Where the work went since the bulk load (paper 3's Fig. 3 and Table 3), as a dict.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(pythonize::pythonize(py, &self.index.counters())?)
    }

    /// Walks the structure and checks its invariants; raises naming the first broken one.
    fn check_structure(&self) -> PyResult<()> {
        self.index.check_structure().map_err(|problem| {
            crate::LidxError::new_err(format!("{}: {problem}", self.index.kind()))
        })
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Updatable>()
}
