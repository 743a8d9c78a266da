//! Key sets as numpy arrays: SOSD key files, the synthetic distributions, paper 3's
//! hardness generator and measure, samples (`lidx::data`, `lidx::pla`).

use std::path::PathBuf;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use lidx::data::{self, Distribution, GenParams, HardnessParams, KeyFile};

use crate::OrRaise;

/// A numpy array Python owns, of `u64` unless said.
pub(crate) type Array<'py, T = u64> = Bound<'py, PyArray1<T>>;

/// A contiguous view of a numpy `uint64` array (the Python side makes it so).
pub(crate) fn slice<'a>(array: &'a PyReadonlyArray1<'_, u64>) -> PyResult<&'a [u64]> {
    array
        .as_slice()
        .map_err(|_| PyValueError::new_err("the array is not contiguous"))
}

/// A vector handed to numpy without a copy.
pub(crate) fn to_numpy(py: Python<'_>, keys: Vec<u64>) -> Array<'_> {
    keys.into_pyarray(py)
}

/// `n` sorted keys of the distribution named `dist`, or with `shuffle` in a random order.
#[pyfunction]
#[pyo3(signature = (dist, n, seed, duplicates, extremes, shuffle))]
fn generate<'py>(
    py: Python<'py>,
    dist: &str,
    n: usize,
    seed: u64,
    duplicates: f64,
    extremes: bool,
    shuffle: bool,
) -> PyResult<Array<'py>> {
    let dist: Distribution = dist.parse().or_raise()?;
    let params = GenParams {
        dist,
        n,
        seed,
        duplicates,
        extremes,
        shuffle,
    };
    let keys = py.detach(|| data::generate(&params)).or_raise()?;
    Ok(to_numpy(py, keys))
}

/// `n` sorted keys whose optimal PLA has about `local` segments at ε = 32 and `global` at
/// ε = 4096 (paper 3's hardness generator).
#[pyfunction]
fn generate_hard(
    py: Python<'_>,
    n: usize,
    local: u64,
    global: u64,
    seed: u64,
) -> PyResult<Array<'_>> {
    let params = HardnessParams {
        n,
        local,
        global,
        seed,
    };
    let keys = py.detach(|| data::generate_hard(&params)).or_raise()?;
    Ok(to_numpy(py, keys))
}

/// The keys of the SOSD key file at `path`.
#[pyfunction]
fn read_keys(py: Python<'_>, path: PathBuf) -> PyResult<Array<'_>> {
    let keys = py
        .detach(|| KeyFile::open(&path).map(|file| file.keys().to_vec()))
        .or_raise()?;
    Ok(to_numpy(py, keys))
}

/// Writes `keys` as an SOSD key file at `path`, atomically.
#[pyfunction]
fn write_keys(py: Python<'_>, path: PathBuf, keys: PyReadonlyArray1<'_, u64>) -> PyResult<()> {
    let keys = slice(&keys)?;
    py.detach(|| data::write_keys(&path, keys)).or_raise()
}

/// Every `k`-th key, from the first.
#[pyfunction]
fn sample_every<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray1<'_, u64>,
    k: usize,
) -> PyResult<Array<'py>> {
    let keys = slice(&keys)?;
    let sample = py.detach(|| data::sample::every_kth(keys, k)).or_raise()?;
    Ok(to_numpy(py, sample))
}

/// A random `fraction` of the keys, in their order.
#[pyfunction]
fn sample_fraction<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray1<'_, u64>,
    fraction: f64,
    seed: u64,
) -> PyResult<Array<'py>> {
    let keys = slice(&keys)?;
    let sample = py
        .detach(|| data::sample::random_fraction(keys, fraction, seed))
        .or_raise()?;
    Ok(to_numpy(py, sample))
}

/// The keys in the order a seeded Fisher-Yates shuffle gives (a new array).
#[pyfunction]
fn shuffled<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray1<'_, u64>,
    seed: u64,
) -> PyResult<Array<'py>> {
    let mut keys = slice(&keys)?.to_vec();
    py.detach(|| data::shuffle(&mut keys, seed));
    Ok(to_numpy(py, keys))
}

/// The segments of the optimal PLA of sorted `keys` at each error bound (paper 3, 3.2).
#[pyfunction]
fn segment_counts(
    py: Python<'_>,
    keys: PyReadonlyArray1<'_, u64>,
    epsilons: Vec<u64>,
) -> PyResult<Vec<u64>> {
    let keys = slice(&keys)?;
    py.detach(|| {
        epsilons
            .iter()
            .map(|&eps| lidx::pla::segment_count(keys, eps))
            .collect::<lidx::Result<Vec<u64>>>()
    })
    .or_raise()
}

/// The mean squared error, in ranks², of one least-squares line through sorted `keys`.
#[pyfunction]
fn linear_mse(py: Python<'_>, keys: PyReadonlyArray1<'_, u64>) -> PyResult<f64> {
    let keys = slice(&keys)?;
    py.detach(|| lidx::pla::linear_mse(keys)).or_raise()
}

/// The first position whose key is smaller than the one before it, or `None` when sorted.
#[pyfunction]
fn first_unsorted(keys: PyReadonlyArray1<'_, u64>) -> PyResult<Option<usize>> {
    Ok(data::first_unsorted(slice(&keys)?))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(generate_hard, m)?)?;
    m.add_function(wrap_pyfunction!(read_keys, m)?)?;
    m.add_function(wrap_pyfunction!(write_keys, m)?)?;
    m.add_function(wrap_pyfunction!(sample_every, m)?)?;
    m.add_function(wrap_pyfunction!(sample_fraction, m)?)?;
    m.add_function(wrap_pyfunction!(shuffled, m)?)?;
    m.add_function(wrap_pyfunction!(segment_counts, m)?)?;
    m.add_function(wrap_pyfunction!(linear_mse, m)?)?;
    m.add_function(wrap_pyfunction!(first_unsorted, m)?)?;
    Ok(())
}
