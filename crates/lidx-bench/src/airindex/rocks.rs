//! RocksDB as paper 2's baseline: the records in one SST file and a block cache of the
//! study's budget. Under a latency profile its reads are the mount's, as every system's;
//! on the local disk they are counted as the process's read calls (`/proc/self/io`),
//! which also counts reads of files that are not the store's (sysfs, `/proc`).

use std::path::Path;

use lidx::kv::Compression;
use lidx::kv::write::Record;
use lidx_lsm::{RocksKv, RocksKvOptions};

use lidx::storage::IoStats;

use super::Options;
use super::probe::Probe;
use super::systems::{Built, System};
use crate::machine::{ProcessReads, process_reads};

fn options(o: &Options) -> RocksKvOptions {
    RocksKvOptions {
        block_size: o.page_size as usize,
        compression: Compression::None,
        cache_bytes: o.cache_bytes,
        direct: !o.buffered,
        filter_bits_per_key: o.rocksdb_bloom_bits,
        statistics: false,
    }
}

pub(super) fn build(
    records: &[Record<'_>],
    dir: &Path,
    name: &str,
    o: &Options,
) -> anyhow::Result<Built> {
    let path = dir.join(format!("{name}-rocksdb"));
    // Only with --keep-data can it exist (else `dir` is a new scratch directory): it
    // is not lidx's to remove, whoever made it.
    if path.symlink_metadata().is_ok() {
        anyhow::bail!(
            "{}: exists; lidx removes nothing it did not make in this run: remove it or choose another --dir",
            path.display()
        );
    }
    RocksKv::build(records, &path, &options(o))?;
    let kv = RocksKv::open(&path, &options(o))?;
    let figures = kv.table_figures();
    Ok(Built {
        system: System::RocksDb,
        tuned_for: String::new(),
        path,
        model_path: None,
        structure: format!(
            "two-level index of {} over {} data blocks ({})",
            crate::text::human_bytes(figures.index_bytes),
            figures.data_blocks,
            options(o).describe()
        ),
        index_bytes: figures.index_bytes,
    })
}

/// Opens the database with a fresh block cache of the study's budget.
pub(super) fn open(path: &Path, o: &Options) -> anyhow::Result<RocksKv> {
    Ok(RocksKv::open(path, &options(o))?)
}

/// RocksDB's gets.
pub(super) struct RocksProbe<'a> {
    kv: &'a RocksKv,
    value: Vec<u8>,
    opened: ProcessReads,
    /// What one reading of `/proc/self/io` adds to its own counters.
    overhead: ProcessReads,
    /// Readings made since `opened`.
    asked: u64,
}

impl<'a> RocksProbe<'a> {
    pub(super) fn new(kv: &'a RocksKv) -> RocksProbe<'a> {
        let a = process_reads();
        let b = process_reads();
        RocksProbe {
            kv,
            value: Vec::new(),
            opened: process_reads(),
            overhead: ProcessReads {
                calls: b.calls - a.calls,
                chars: b.chars - a.chars,
                storage_bytes: 0,
            },
            asked: 0,
        }
    }
}

impl Probe for RocksProbe<'_> {
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>> {
        let key = lidx::kv::keys::u64_key(key);
        if !self.kv.get_into(&key, &mut self.value)? {
            return Ok(None);
        }
        Ok(std::str::from_utf8(&self.value)
            .ok()
            .and_then(|s| s.parse().ok()))
    }

    /// The process's read calls and bytes since the store was opened, less those of this
    /// probe's own readings of `/proc/self/io`.
    fn io(&mut self) -> anyhow::Result<IoStats> {
        self.asked += 1;
        let now = process_reads();
        let own = |per: u64| per * self.asked;
        Ok(IoStats {
            reads: (now.calls - self.opened.calls).saturating_sub(own(self.overhead.calls)),
            bytes: (now.chars - self.opened.chars).saturating_sub(own(self.overhead.chars)),
            ..IoStats::default()
        })
    }
}
