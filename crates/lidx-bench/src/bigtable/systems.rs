//! The systems compared (paper 4, section 5): lidx's file in the learned and the SSTable
//! layout, and RocksDB holding the same records; how each is built and serves a load.

use std::path::{Path, PathBuf};

#[cfg(not(feature = "rocksdb"))]
use anyhow::bail;
use lidx::kv::write::Record;
use lidx::kv::{BlockCache, BuildOptions, KvFile, Layout};
use lidx::storage::ReadMode;

use super::Options;
use crate::clients::{KvStore, Load, Measured, closed_loop};
use crate::profiled_fs::ProfiledMount;

/// The systems the study compares, as the CSV's `layout` column names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum System {
    /// lidx's file in a layout.
    Kv(Layout),
    /// RocksDB holding the same records.
    RocksDb,
}

impl System {
    /// The systems the study `o` compares, in the order they are built.
    pub(super) fn all(o: &Options) -> Vec<System> {
        let mut systems = vec![System::Kv(Layout::Learned), System::Kv(Layout::Sstable)];
        if o.rocksdb {
            systems.push(System::RocksDb);
        }
        systems
    }

    /// The system's name in rows, plots and the summary.
    pub(super) fn name(self) -> &'static str {
        match self {
            System::Kv(layout) => layout.name(),
            System::RocksDb => "rocksdb",
        }
    }
}

/// A system's index and blocks, as built.
#[derive(Clone, Debug, Default)]
pub(super) struct Built {
    /// Bytes of index the system keeps in memory outside its block cache while serving
    /// with one: charged to its memory budget.
    pub(super) resident_index_bytes: u64,
    /// Every byte that must be in memory for a get to read no index block.
    pub(super) full_index_bytes: u64,
    pub(super) index_disk_bytes: u64,
    /// Bytes of the Bloom filter (RocksDB; 0 for none).
    pub(super) filter_bytes: u64,
    /// The store's settings, for the rows.
    pub(super) settings: String,
    pub(super) data_blocks: u64,
    pub(super) empty_blocks: u64,
    pub(super) block_mean: f64,
    pub(super) block_p99: u64,
    pub(super) block_max: u64,
    pub(super) file_bytes: u64,
}

impl Built {
    /// What `info` says of a lidx file.
    fn of(info: &lidx::kv::KvInfo) -> Built {
        Built {
            resident_index_bytes: info.index_memory_bytes,
            full_index_bytes: info.full_index_bytes,
            index_disk_bytes: info.index_disk_bytes,
            data_blocks: info.data_blocks.blocks,
            empty_blocks: info.data_blocks.empty,
            block_mean: info.data_blocks.mean,
            block_p99: info.data_blocks.p99,
            block_max: info.data_blocks.max,
            file_bytes: info.file_bytes,
            ..Built::default()
        }
    }

    /// The block cache that keeps this system within `budget` bytes of memory: the budget
    /// less its resident index (`Some(0)` for a budget of 0, "no cache"); `None` when the
    /// index alone passes the budget.
    pub(super) fn cache_within(&self, budget: u64) -> Option<u64> {
        match budget {
            0 => Some(0),
            b => b
                .checked_sub(self.resident_index_bytes)
                .filter(|&cache| cache > 0),
        }
    }
}

/// A system ready to serve: a lidx file, or a RocksDB directory.
pub(super) enum Served {
    Kv(Box<KvFile>),
    #[cfg(feature = "rocksdb")]
    RocksDb(PathBuf),
}

/// Builds a lidx file of `records` in `layout` at `path`, and opens it to serve.
pub(super) fn build_kv(
    records: &[Record<'_>],
    layout: Layout,
    path: &Path,
    o: &Options,
    mount: Option<&ProfiledMount>,
) -> anyhow::Result<(Served, Built)> {
    let build = BuildOptions {
        layout,
        block_size: o.block_size,
        compression: o.compression,
        model: o.model,
        ..BuildOptions::default()
    };
    lidx::kv::build(records, &build, path)?;
    let mode = if o.buffered {
        ReadMode::Buffered
    } else {
        ReadMode::Direct
    };
    let built = Built::of(&lidx::kv::info(&KvFile::open(path, mode)?)?);
    let file = match mount {
        Some(mount) => KvFile::open(&mount.view(path)?, mode)?,
        None => KvFile::open(path, mode)?,
    };
    Ok((Served::Kv(Box::new(file)), built))
}

/// One run of `load` against `served` with a block cache of `cache_bytes`. RocksDB runs
/// twice: timed with its statistics and perf counters off, then again for as long as its
/// warm-up (at most `load.measure`) with them on, whose counts (blocks, reads, bytes and
/// cache hits per operation) the result carries.
pub(super) fn serve(
    served: &Served,
    cache_bytes: u64,
    keys: &[&[u8]],
    load: &Load,
    #[allow(unused_variables)] options: &Options,
    mount: Option<&ProfiledMount>,
) -> anyhow::Result<Measured> {
    match served {
        Served::Kv(file) => {
            let store = KvStore {
                file,
                cache: BlockCache::new(cache_bytes),
            };
            closed_loop(&store, keys, load, mount)
        }
        #[cfg(feature = "rocksdb")]
        Served::RocksDb(dir) => {
            use crate::clients::rocks::RocksStore;
            let run = |counting: bool, load: &Load| {
                let kv =
                    lidx_lsm::RocksKv::open(dir, &rocks_options(options, cache_bytes, counting))?;
                closed_loop(
                    &RocksStore::new(kv, cache_bytes, counting),
                    keys,
                    load,
                    mount,
                )
            };
            let mut timed = run(false, load)?;
            let counting = Load {
                measure: load
                    .warmup
                    .clamp(std::time::Duration::from_millis(200), load.measure),
                ..*load
            };
            timed.take_counts(run(true, &counting)?);
            Ok(timed)
        }
    }
}

/// RocksDB's settings in the study `o` with a cache of `cache_bytes`; `statistics` on only
/// for counting.
#[cfg(feature = "rocksdb")]
fn rocks_options(o: &Options, cache_bytes: u64, statistics: bool) -> lidx_lsm::RocksKvOptions {
    lidx_lsm::RocksKvOptions {
        block_size: usize::try_from(o.block_size).unwrap_or(usize::MAX),
        compression: o.compression,
        cache_bytes,
        direct: !o.buffered,
        filter_bits_per_key: o.rocksdb_bloom_bits,
        statistics,
    }
}

/// Loads `records` into RocksDB at `dir`; its index and blocks as RocksDB reports them.
#[cfg(feature = "rocksdb")]
pub(super) fn rocks_build(
    records: &[Record<'_>],
    dir: &Path,
    o: &Options,
) -> anyhow::Result<Built> {
    let sst_bytes = lidx_lsm::RocksKv::build(records, dir, &rocks_options(o, 0, false))?;
    // With a cache, the index and filter go through it; what the table reader keeps
    // besides is charged to RocksDB's budget.
    let with_cache = rocks_options(o, 1 << 20, false);
    let kv = lidx_lsm::RocksKv::open(dir, &with_cache)?;
    let t = kv.table_figures();
    Ok(Built {
        resident_index_bytes: kv.table_reader_bytes(),
        full_index_bytes: t.index_bytes,
        index_disk_bytes: t.index_bytes,
        filter_bytes: t.filter_bytes,
        settings: lidx_lsm::RocksKvOptions {
            cache_bytes: 0,
            ..with_cache
        }
        .describe()
        .replace(", a cache of 0 B", "")
        .replace(
            "statistics off",
            "index and filter blocks through the cache at high priority (top level pinned), statistics off while timing (on in a separate run that counts)",
        ),
        data_blocks: t.data_blocks,
        block_mean: t.data_bytes as f64 / t.data_blocks.max(1) as f64,
        file_bytes: sst_bytes,
        ..Built::default()
    })
}

#[cfg(not(feature = "rocksdb"))]
pub(super) fn rocks_build(_: &[Record<'_>], _: &Path, _: &Options) -> anyhow::Result<Built> {
    bail!("this lidx was built without the rocksdb feature")
}

#[cfg(feature = "rocksdb")]
pub(super) fn rocks_served(dir: PathBuf) -> anyhow::Result<Served> {
    Ok(Served::RocksDb(dir))
}

#[cfg(not(feature = "rocksdb"))]
pub(super) fn rocks_served(_: PathBuf) -> anyhow::Result<Served> {
    bail!("this lidx was built without the rocksdb feature")
}
