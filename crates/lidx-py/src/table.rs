//! Tables on disk (`lidx::storage::table`): written from arrays, read back as arrays.

use std::path::PathBuf;

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use lidx::storage::table::{Table as TableFile, TableWriter};
use lidx::storage::{OutputTuple, Tuple};

use crate::OrRaise;
use crate::keys::{Array, slice, to_numpy};

/// A table file: checksummed blocks of (key, value) tuples, or of a join's (key, outer
/// value, inner value) tuples.
#[pyclass(module = "lidx._lidx", frozen)]
pub struct Table {
    table: TableFile,
}

#[pymethods]
impl Table {
    /// Writes `keys` with `values` (the row ids where `None`) as a table at `path`, in the
    /// order given, atomically; a sorted table where the keys are sorted.
    #[staticmethod]
    #[pyo3(signature = (path, keys, values))]
    fn build(
        py: Python<'_>,
        path: PathBuf,
        keys: PyReadonlyArray1<'_, u64>,
        values: Option<PyReadonlyArray1<'_, u64>>,
    ) -> PyResult<Table> {
        let keys = slice(&keys)?;
        let values = values.as_ref().map(slice).transpose()?;
        if let Some(values) = values
            && values.len() != keys.len()
        {
            return Err(PyValueError::new_err(format!(
                "{} keys but {} values",
                keys.len(),
                values.len()
            )));
        }
        py.detach(|| {
            let mut writer = TableWriter::create(&path)?;
            for (row, &key) in keys.iter().enumerate() {
                let value = values.map_or(row as u64, |v| v[row]);
                writer.push(Tuple { key, value })?;
            }
            writer.finish()?;
            TableFile::open(&path)
        })
        .map(|table| Table { table })
        .or_raise()
    }

    /// Opens the table at `path`, checking its header.
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Table> {
        py.detach(|| TableFile::open(&path))
            .map(|table| Table { table })
            .or_raise()
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.table.path().to_path_buf()
    }

    /// Whether its keys are in ascending order (as its header says, checked when written).
    #[getter]
    fn sorted(&self) -> bool {
        self.table.header().sorted
    }

    /// Whether it holds a join's output: (key, outer value, inner value) tuples.
    #[getter]
    fn is_join_output(&self) -> bool {
        self.table.header().is_output()
    }

    /// The smallest and largest key, or `None` when empty.
    #[getter]
    fn key_range(&self) -> Option<(u64, u64)> {
        let h = self.table.header();
        (h.count > 0).then_some((h.min_key, h.max_key))
    }

    fn __len__(&self) -> usize {
        self.table.len() as usize
    }

    /// The keys, in file order (every block's checksum checked).
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Array<'py>> {
        let keys = py.detach(|| self.table.read_keys()).or_raise()?;
        Ok(to_numpy(py, keys))
    }

    /// The keys and values, in file order.
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<(Array<'py>, Array<'py>)> {
        let (keys, values) = py
            .detach(|| {
                let n = self.table.len() as usize;
                let (mut keys, mut values) = (Vec::with_capacity(n), Vec::with_capacity(n));
                self.table.scan(|tuples| {
                    keys.extend(tuples.iter().map(|t| t.key));
                    values.extend(tuples.iter().map(|t| t.value));
                    Ok(())
                })?;
                Ok((keys, values))
            })
            .or_raise()?;
        Ok((to_numpy(py, keys), to_numpy(py, values)))
    }

    /// A join output's keys, outer values and inner values, in file order.
    fn output_columns<'py>(&self, py: Python<'py>) -> PyResult<OutputColumns<'py>> {
        let [keys, outer, inner] = py.detach(|| read_output(&self.table)).or_raise()?;
        Ok((to_numpy(py, keys), to_numpy(py, outer), to_numpy(py, inner)))
    }

    /// Reads every block, checking checksums, padding and the header's facts; returns the
    /// number of tuples.
    fn verify(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| self.table.verify(|_| {}))
            .map(|report| report.header.count)
            .or_raise()
    }

    fn __repr__(&self) -> String {
        let h = self.table.header();
        format!(
            "<lidx.Table {} ({} {} tuples{})>",
            self.table.path().display(),
            h.count,
            if h.sorted { "sorted" } else { "unsorted" },
            if h.is_output() {
                ", a join's output"
            } else {
                ""
            }
        )
    }
}

/// Three arrays of a join's output: keys, outer values, inner values.
pub(crate) type OutputColumns<'py> = (Array<'py>, Array<'py>, Array<'py>);

/// The columns of the join output table `table`.
pub(crate) fn read_output(table: &TableFile) -> lidx::Result<[Vec<u64>; 3]> {
    let n = table.len() as usize;
    let mut columns = [
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    ];
    table.scan_output(|tuples: &[OutputTuple]| {
        let [keys, outer, inner] = &mut columns;
        keys.extend(tuples.iter().map(|t| t.key));
        outer.extend(tuples.iter().map(|t| t.outer));
        inner.extend(tuples.iter().map(|t| t.inner));
        Ok(())
    })?;
    Ok(columns)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Table>()
}
