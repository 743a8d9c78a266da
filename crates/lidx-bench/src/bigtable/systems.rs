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
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Built {
    pub(super) index_memory_bytes: u64,
    pub(super) index_disk_bytes: u64,
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
            index_memory_bytes: info.index_memory_bytes,
            index_disk_bytes: info.index_disk_bytes,
            data_blocks: info.data_blocks.blocks,
            empty_blocks: info.data_blocks.empty,
            block_mean: info.data_blocks.mean,
            block_p99: info.data_blocks.p99,
            block_max: info.data_blocks.max,
            file_bytes: info.file_bytes,
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

/// One run of `load` against `served` with a block cache of `cache_bytes`.
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
            let kv = lidx_lsm::RocksKv::open(dir, &rocks_options(options, cache_bytes))?;
            let store = crate::clients::rocks::RocksStore::new(kv, cache_bytes);
            closed_loop(&store, keys, load, mount)
        }
    }
}

#[cfg(feature = "rocksdb")]
fn rocks_options(o: &Options, cache_bytes: u64) -> lidx_lsm::RocksKvOptions {
    lidx_lsm::RocksKvOptions {
        block_size: usize::try_from(o.block_size).unwrap_or(usize::MAX),
        compression: o.compression,
        cache_bytes,
        direct: !o.buffered,
        filter_bits_per_key: o.rocksdb_bloom_bits,
        // The index block counters come from RocksDB's statistics.
        statistics: true,
    }
}

/// Loads `records` into RocksDB at `dir`; its index and blocks as RocksDB reports them.
#[cfg(feature = "rocksdb")]
pub(super) fn rocks_build(
    records: &[Record<'_>],
    dir: &Path,
    o: &Options,
) -> anyhow::Result<Built> {
    let sst_bytes = lidx_lsm::RocksKv::build(records, dir, &rocks_options(o, 0))?;
    let kv = lidx_lsm::RocksKv::open(dir, &rocks_options(o, 0))?;
    let t = kv.table_figures();
    Ok(Built {
        // Without a block cache, RocksDB's table reader holds the whole index in memory.
        index_memory_bytes: kv.index_memory_bytes(),
        index_disk_bytes: t.index_bytes,
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
