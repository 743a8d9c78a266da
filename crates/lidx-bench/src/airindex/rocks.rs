//! RocksDB as paper 2's baseline: the records in one SST file, a block cache of the
//! study's budget, and its reads charged by the process's read calls.

use std::path::Path;

use lidx::kv::Compression;
use lidx::kv::write::Record;
use lidx::storage::profile::LatencyModel;
use lidx_lsm::{RocksKv, RocksKvOptions};

use lidx::storage::IoStats;

use super::Options;
use super::probe::{Probe, modelled, proc_overhead, process_delta};
use super::systems::{Built, System};
use crate::machine::{ProcessReads, process_reads};

fn options(o: &Options) -> RocksKvOptions {
    RocksKvOptions {
        block_size: o.page_size as usize,
        compression: Compression::None,
        cache_bytes: o.cache_bytes,
        direct: !o.buffered,
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
            "two-level index of {} over {} data blocks",
            crate::text::human_bytes(figures.index_bytes),
            figures.data_blocks
        ),
        index_bytes: figures.index_bytes,
    })
}

/// Opens the database with a fresh block cache of the study's budget.
pub(super) fn open(path: &Path, o: &Options) -> anyhow::Result<RocksKv> {
    Ok(RocksKv::open(path, &options(o))?)
}

/// RocksDB's gets; under a latency model, each followed by a sleep of the modelled
/// cost of the read calls and bytes the process made during it.
pub(super) struct RocksProbe<'a> {
    kv: &'a RocksKv,
    latency: Option<LatencyModel>,
    io: IoStats,
    value: Vec<u8>,
    overhead: ProcessReads,
    opened: ProcessReads,
}

impl<'a> RocksProbe<'a> {
    pub(super) fn new(kv: &'a RocksKv) -> RocksProbe<'a> {
        RocksProbe {
            kv,
            latency: None,
            io: IoStats::default(),
            value: Vec::new(),
            overhead: proc_overhead(),
            opened: process_reads(),
        }
    }
}

impl Probe for RocksProbe<'_> {
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>> {
        let key = lidx::kv::keys::u64_key(key);
        let found = match self.latency {
            None => self.kv.get_into(&key, &mut self.value)?,
            Some(model) => {
                let before = process_reads();
                let found = self.kv.get_into(&key, &mut self.value)?;
                let (calls, bytes) = process_delta(before, process_reads(), self.overhead);
                let charge = modelled(&model, calls, bytes);
                if model.sleep {
                    std::thread::sleep(charge);
                }
                self.io.reads += calls;
                self.io.bytes += bytes;
                self.io.modelled_ns += charge.as_nanos() as u64;
                found
            }
        };
        if !found {
            return Ok(None);
        }
        Ok(std::str::from_utf8(&self.value)
            .ok()
            .and_then(|s| s.parse().ok()))
    }

    fn set_latency(&mut self, model: Option<LatencyModel>) {
        if self.latency.is_none() && model.is_some() {
            // Reads so far, unmodelled, go into the totals before counting per get.
            let (calls, bytes) = process_delta(self.opened, process_reads(), self.overhead);
            self.io.reads = calls;
            self.io.bytes = bytes;
        }
        self.latency = model;
    }

    fn io(&mut self) -> IoStats {
        match self.latency {
            Some(_) => self.io,
            None => {
                let (calls, bytes) = process_delta(self.opened, process_reads(), self.overhead);
                IoStats {
                    reads: calls,
                    bytes,
                    modelled_ns: self.io.modelled_ns,
                    ..IoStats::default()
                }
            }
        }
    }
}
