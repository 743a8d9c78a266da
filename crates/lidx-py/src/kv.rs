//! Key-value files (`lidx::kv`): paper 4's learned block layout, the SSTable, paper 2's
//! tuned layers and the disk B+tree, built from records and read with counted I/O.

use std::path::PathBuf;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use lidx::kv::layers::Families;
use lidx::kv::{self, BlockCache, BuildOptions, OpStats, Reader, Record};
use lidx::storage::ReadMode;
use lidx::storage::profile::{LatencyModel, resolve_profile};

use crate::OrRaise;

/// Builds a key-value file at `path` from `records` (any order; each key once) and returns
/// the build report (`lidx::kv::BuildReport`'s fields) as a dict.
#[pyfunction]
#[pyo3(signature = (
    path, records, layout, block_size, compression, model, epsilon, leaves, max_block,
    families, profile, key_encoding
))]
#[expect(
    clippy::too_many_arguments,
    reason = "one per option of `lidx kv build`; the Python side gives them names and defaults"
)]
fn kv_build<'py>(
    py: Python<'py>,
    path: PathBuf,
    mut records: Vec<(Vec<u8>, Vec<u8>)>,
    layout: &str,
    block_size: u64,
    compression: &str,
    model: &str,
    epsilon: Option<u64>,
    leaves: Option<usize>,
    max_block: Option<u64>,
    families: Option<Vec<String>>,
    profile: Option<String>,
    key_encoding: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let families = match families {
        None => Families::ALL,
        Some(names) => {
            let mut f = Families {
                pgm: false,
                step: false,
            };
            for name in &names {
                match name.as_str() {
                    "pgm" => f.pgm = true,
                    "step" => f.step = true,
                    other => {
                        return Err(crate::raise(lidx::Error::param(
                            "families",
                            format!("{other:?} is not pgm or step"),
                        )));
                    }
                }
            }
            f
        }
    };
    let options = BuildOptions {
        layout: layout.parse().or_raise()?,
        block_size,
        compression: compression.parse().or_raise()?,
        model: model.parse().or_raise()?,
        epsilon,
        leaves,
        key_encoding: key_encoding.parse().or_raise()?,
        profile: profile
            .as_deref()
            .map(|p| resolve_profile(p).map(|p| p.random))
            .transpose()
            .or_raise()?,
        max_block,
        families,
        location_chunk_blocks: None,
    };
    options.refuse_unused().or_raise()?;
    options.check().or_raise()?;
    let report = py
        .detach(|| {
            records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let borrowed: Vec<Record<'_>> = records
                .iter()
                .map(|(key, value)| Record { key, value })
                .collect();
            kv::build(&borrowed, &options, &path)
        })
        .or_raise()?;
    Ok(pythonize::pythonize(py, &report)?)
}

/// A key-value file open for reading through a block cache of its own, counting every
/// block it reads.
#[pyclass(module = "lidx._lidx", frozen)]
pub struct KvFile {
    file: kv::KvFile,
    cache: BlockCache,
    latency: Option<LatencyModel>,
    /// What every read so far did.
    stats: Mutex<OpStats>,
}

impl KvFile {
    /// Runs `read` with a reader of the file, adding what it did to the counters.
    fn with_reader<T>(
        &self,
        read: impl FnOnce(&mut Reader<'_>) -> lidx::Result<T>,
    ) -> lidx::Result<T> {
        let mut reader = Reader::new(&self.file, &self.cache);
        reader.set_latency(self.latency);
        let out = read(&mut reader);
        *self.stats.lock() += reader.stats();
        out
    }
}

#[pymethods]
impl KvFile {
    /// Opens the key-value file at `path` with a block cache of `cache_bytes`, reading with
    /// O_DIRECT where `direct`, and every read taking as long as the storage profile
    /// `profile` (`ssd`, `nfs`, `hdd` or a saved profile) says where one is given.
    #[new]
    #[pyo3(signature = (path, cache_bytes, direct, profile))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        cache_bytes: u64,
        direct: bool,
        profile: Option<String>,
    ) -> PyResult<KvFile> {
        let mode = if direct {
            ReadMode::Direct
        } else {
            ReadMode::Buffered
        };
        let latency = profile
            .as_deref()
            .map(|p| resolve_profile(p).map(|p| LatencyModel::timed(p.random)))
            .transpose()
            .or_raise()?;
        let file = py.detach(|| kv::KvFile::open(&path, mode)).or_raise()?;
        Ok(KvFile {
            file,
            cache: BlockCache::new(cache_bytes),
            latency,
            stats: Mutex::new(OpStats::default()),
        })
    }

    /// The value of `key`, or `None`.
    fn get<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let value = py.detach(|| self.with_reader(|r| r.get(key))).or_raise()?;
        Ok(value.map(|v| PyBytes::new(py, &v)))
    }

    /// The values of `keys`, `None` where absent, in one call.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: Vec<Vec<u8>>,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let values = py
            .detach(|| {
                self.with_reader(|r| {
                    keys.iter()
                        .map(|k| r.get(k))
                        .collect::<lidx::Result<Vec<_>>>()
                })
            })
            .or_raise()?;
        Ok(values
            .into_iter()
            .map(|v| v.map(|v| PyBytes::new(py, &v)))
            .collect())
    }

    /// Up to `rows` records in key order from the first key at least `start`.
    fn scan<'py>(
        &self,
        py: Python<'py>,
        start: &[u8],
        rows: usize,
    ) -> PyResult<Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        let records = py
            .detach(|| {
                self.with_reader(|r| {
                    let mut records = Vec::new();
                    r.scan(start, rows, |k, v| records.push((k.to_vec(), v.to_vec())))?;
                    Ok(records)
                })
            })
            .or_raise()?;
        Ok(records
            .into_iter()
            .map(|(k, v)| (PyBytes::new(py, &k), PyBytes::new(py, &v)))
            .collect())
    }

    /// What every read so far did (`lidx::kv::OpStats`'s fields), as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stats = *self.stats.lock();
        Ok(pythonize::pythonize(py, &stats)?)
    }

    /// Sets the counters back to 0.
    fn reset_stats(&self) {
        *self.stats.lock() = OpStats::default();
    }

    /// The number of records.
    fn __len__(&self) -> usize {
        self.file.footer().records as usize
    }

    /// The layout's name.
    #[getter]
    fn layout(&self) -> String {
        self.file.footer().layout.to_string()
    }

    /// Bytes of the index kept in memory while the file is open.
    #[getter]
    fn index_memory_bytes(&self) -> u64 {
        self.file.index_memory_bytes()
    }

    /// Reads the whole file and checks every block and the index; returns the report
    /// (`lidx::kv::VerifyReport`'s fields) as a dict.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let report = py.detach(|| kv::verify(&self.file)).or_raise()?;
        Ok(pythonize::pythonize(py, &report)?)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kv_build, m)?)?;
    m.add_class::<KvFile>()
}
