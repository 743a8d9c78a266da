//! `lidx experiment bigtable`: paper 4's Fig. 1 (a–d). The learned block layout against
//! Bigtable's two-level SSTable index, and against RocksDB itself, on the same records,
//! under concurrent clients.
//!
//! The records are the paper's: random integer keys written as strings (20 digits), each
//! with a value of `--value-size` (1 KiB), in blocks of 32 KiB. For every table size, both
//! layouts are built from the same records, and (with the `rocksdb` feature) the records are
//! loaded into RocksDB as one SST file with a two-level index. Then, for every memory
//! budget (each system's in-memory index plus its block cache), each system serves two
//! closed-loop workloads ([`clients`](crate::clients), paper 4
//! section 5): gets of one row, and scans of 100 consecutive rows.
//!
//! Keys are drawn uniformly from the records. Blocks are read with `O_DIRECT` (the OS page
//! cache would otherwise hold the whole table and hide the block cache), through a cache
//! that starts empty for each run. Each run warms up, then measures for a fixed time.

mod measure;
mod plots;
mod rows;
mod summary;
mod systems;

use std::time::{Duration, Instant};

use anyhow::bail;
use lidx::kv::{Compression, ModelKind};

use crate::csv_rows::write_rows;
use crate::harness::{Places, measure};
use crate::profiled_fs::ProfiledMount;
use crate::progress::Progress;
use measure::Measuring;
use plots::plots;
pub use rows::Row;
use summary::summary;

/// The study's settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Table sizes in rows.
    pub rows: Vec<u64>,
    /// Bytes of each value.
    pub value_size: u64,
    /// Target block size τ.
    pub block_size: u64,
    /// Block compression.
    pub compression: Compression,
    /// The learned layout's model.
    pub model: ModelKind,
    /// Memory budgets in bytes, one cell each: every system gets a block cache of the
    /// budget less the index it keeps in memory outside the cache (the learned layout's
    /// model and block locations, the SSTable's level 0, RocksDB's table readers), so all
    /// hold the same bytes; a system whose index alone passes the budget sits the cell
    /// out. 0: no block cache for any system (each keeps its index as it does without
    /// one; not at equal memory).
    pub memory_budgets: Vec<u64>,
    /// Clients.
    pub clients: usize,
    /// Requests each client keeps in flight.
    pub outstanding: usize,
    /// Rows per scan.
    pub scan_rows: usize,
    /// Time each run warms its cache before measuring.
    pub warmup: Duration,
    /// Time each run measures.
    pub measure: Duration,
    /// Runs per cell; the summary and plots take the median, and the layouts take turns
    /// going first.
    pub repeat: usize,
    /// Read through the page cache instead of `O_DIRECT`.
    pub buffered: bool,
    /// Measure RocksDB too (where built with the `rocksdb` feature).
    pub rocksdb: bool,
    /// Bits a key of RocksDB's Bloom filter (partitioned like its index, through the
    /// cache); 0: none. RocksDB's documentation recommends 10 for point reads; every key
    /// the study asks for exists, so here a filter spares no read and takes cache space.
    pub rocksdb_bloom_bits: u32,
    /// Where the data and the results go.
    pub places: Places,
    /// The storage every system reads its files from: `None` the local disk; else a
    /// profile `resolve_profile` knows (`ssd`, `nfs`, `hdd`, a saved file), served through
    /// one FUSE mount (paper 4's setting is a distributed file system).
    pub profile: Option<String>,
    /// The `lidx` executable, whose `lidx bench mount` serves the files under a profile.
    pub lidx_exe: Option<std::path::PathBuf>,
    /// Seed of the records and of the clients' keys.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rows: vec![250_000, 1_000_000],
            value_size: 1024,
            block_size: 32 * 1024,
            compression: Compression::None,
            model: ModelKind::Linear,
            memory_budgets: vec![128 << 10, 256 << 10, 1 << 20, 8 << 20, 64 << 20],
            clients: 15,
            outstanding: 100,
            scan_rows: 100,
            warmup: Duration::from_secs(1),
            measure: Duration::from_secs(3),
            repeat: 1,
            buffered: false,
            rocksdb: cfg!(feature = "rocksdb"),
            rocksdb_bloom_bits: 10,
            places: Places::default(),
            profile: None,
            lidx_exe: None,
            seed: 42,
        }
    }
}

/// Runs the study; returns the text report (the summary) to print.
pub fn run(options: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    check(options)?;
    // The data goes into a scratch directory inside --dir (or OUT/data) unless kept.
    let (mut results, data) = options
        .places
        .create("bigtable", ["bigtable.csv", "summary.md"])?;
    let machine = crate::machine::describe();
    let started = Instant::now();
    // Under a profile every system reads its files through one mount of the data
    // directory (beside it: never inside what it shows).
    let mount = match &options.profile {
        None => None,
        Some(name) => {
            let cost = lidx::storage::profile::resolve_profile(name)?.random;
            let Some(exe) = &options.lidx_exe else {
                bail!(
                    "--profile needs the lidx executable, whose `lidx bench mount` serves the profiled storage"
                );
            };
            Some(ProfiledMount::mount(exe, data.path(), data.dir(), cost)?)
        }
    };
    let mut measuring = Measuring::new(options, data.path(), mount.as_ref(), &machine);
    let (_, rows) = measure(&mut measuring, "paper 4's study", "runs", progress)?;
    drop(mount);
    drop(data);
    write_rows(results.file(0), &rows)?;
    plots(&results.dir, options, &rows)?;
    let summary = summary(options, &machine, &rows, started.elapsed());
    results.finish(&summary)
}

fn check(o: &Options) -> anyhow::Result<()> {
    if o.rocksdb && !cfg!(feature = "rocksdb") {
        bail!("invalid rocksdb: this lidx was built without the rocksdb feature");
    }
    if o.rows.is_empty() || o.rows.contains(&0) {
        bail!("invalid rows: give at least one table size, each at least 1 row");
    }
    if o.memory_budgets.is_empty() {
        bail!("invalid memory: give at least one budget (0 for no cache)");
    }
    if o.memory_budgets.iter().any(|&b| b > 1 << 40) {
        bail!("invalid memory: a budget of at most 1 TiB");
    }
    if o.clients == 0 || o.outstanding == 0 {
        bail!("invalid clients/outstanding: at least 1 each");
    }
    if o.clients * o.outstanding > 4096 {
        bail!(
            "invalid clients × outstanding: {} threads; at most 4096",
            o.clients * o.outstanding
        );
    }
    if o.repeat == 0 {
        bail!("invalid repeat: at least 1 run per cell");
    }
    if o.scan_rows == 0 {
        bail!("invalid scan-rows: at least 1");
    }
    if o.measure.is_zero() {
        bail!("invalid seconds: measure for some time");
    }
    Ok(())
}
