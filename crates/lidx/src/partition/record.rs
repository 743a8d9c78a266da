//! [`UnsortedRecord`]: every figure of one run of a command on unsorted tables (an
//! unclustered index build, a sort, or a join through unclustered indexes), the contract
//! between those commands and whoever measures them. With `--json` they print one as a
//! JSON object; `lidx experiment unsorted` (paper 1, section 5.4) starts each run as a
//! fresh process and reads the record back, so each run's peak RSS is its own.
//!
//! The record is flat, so that it is one CSV row: figures that do not apply to a run are 0.

use serde::{Deserialize, Serialize};

use super::btree::{self, BTreeStats};
use super::sort::IndexSortReport;
use super::{BuildReport, PartitionIndex};
use crate::index::Index as _;
use crate::sort::SortReport;
use crate::storage::{BLOCK_SIZE, TUPLE_SIZE};

/// What a run did: an index build, a sort or a join.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// `lidx index build --kind partition|btree-inserts`.
    IndexBuild,
    /// `lidx sort`.
    Sort,
    /// `lidx join` of unsorted tables.
    Join,
}

impl Operation {
    /// The name the JSON record gives it: `index-build`, `sort` or `join`.
    pub fn name(self) -> &'static str {
        match self {
            Operation::IndexBuild => "index-build",
            Operation::Sort => "sort",
            Operation::Join => "join",
        }
    }
}

/// Every figure of one run. Serialized as one flat JSON object with these field names.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnsortedRecord {
    /// What ran; `None` only in a default record.
    pub operation: Option<Operation>,
    /// The method as the command line names it: `partition`, `btree-inserts` (builds and
    /// joins), `external`, `learned`, `btree-inserts` (sorts), `sort-merge` (joins).
    pub method: String,
    /// What the unclustered indexes hold ([`Entries`](super::Entries)): `pointers` or
    /// `tuples`, `OUTER/INNER` for a join whose two differ; empty for sorts and
    /// `sort-merge`.
    #[serde(default)]
    pub entries: String,
    /// Tuples of the table built on or sorted, or of the join's outer table.
    pub tuples: u64,
    /// Tuples of the join's inner table (0 for builds and sorts).
    pub inner_tuples: u64,
    /// The memory limit in bytes (`--memory-limit`).
    pub memory_limit: u64,
    /// The most bytes reserved from the limit at once.
    pub peak_reserved: u64,
    /// The process's peak resident set size in bytes, where the kernel reports it.
    pub peak_rss: Option<u64>,
    /// The memory limit of the cgroup the process ran in (`--cgroup`), if any.
    pub cgroup_limit: Option<u64>,
    /// Bytes the process read from storage, page-cache hits not counted (`read_bytes` of
    /// `/proc/self/io`), where the kernel reports it.
    #[serde(default)]
    pub storage_read_bytes: Option<u64>,
    /// Seconds of the run's main work: the build, the whole sort, or the join itself.
    pub seconds: f64,
    /// Seconds of work before it, not counted in `seconds`: a join's index builds (0 when
    /// both were given) or sorts (sort-merge); an index-driven sort's index build (which
    /// `seconds` does include).
    pub prepare_s: f64,
    /// Bytes read (the input's passes, scratch runs, partition pages or table blocks).
    pub bytes_read: u64,
    /// Read calls, where counted.
    pub read_calls: u64,
    /// Bytes written (index files, scratch runs, the output table).
    pub bytes_written: u64,
    /// Write calls, where counted.
    pub write_calls: u64,
    /// 4 KiB pages the writes of an index build touched (a B+tree's leaf writes, a
    /// partitioning's flushes, each a page or two; the index's pages and the header).
    #[serde(default)]
    pub pages_written: u64,
    /// Bytes of the file an index build wrote.
    #[serde(default)]
    pub file_bytes: u64,
    /// Bytes the index holds in memory: the model and partition map, or the B+tree's
    /// levels above the leaves.
    pub index_memory_bytes: u64,
    /// Bytes of the learned partition index's model alone (the PGM on the sample).
    pub model_bytes: u64,
    /// Output tuples of a join (or tuples written by a sort).
    pub output_tuples: u64,
    /// Inner-index lookups of a join.
    pub lookups: u64,
    /// B+tree leaves (builds).
    pub leaves: u64,
    /// B+tree leaf I/O, splits, pool hits and evictions (both trees of a join).
    pub leaf_reads: u64,
    /// Leaves written.
    pub leaf_writes: u64,
    /// Leaf splits.
    pub splits: u64,
    /// Leaf visits found in the pool.
    pub pool_hits: u64,
    /// Leaves evicted from the pool.
    pub evictions: u64,
    /// Partitions (builds).
    pub partitions: u64,
    /// Tuples of the largest partition.
    pub largest_partition: u64,
    /// Partitions with no tuples.
    pub empty_partitions: u64,
    /// Partitions past their first page.
    pub overflowed_partitions: u64,
    /// Pages of the partitions file.
    pub pages: u64,
    /// Partitions read by a join (both sides).
    pub partitions_read: u64,
}

impl UnsortedRecord {
    /// Bytes written per byte of the table (16 per tuple): the write amplification in
    /// bytes, counted alike for every method.
    pub fn write_amplification(&self) -> f64 {
        self.bytes_written as f64 / self.table_bytes().max(1) as f64
    }

    /// Bytes of pages written per byte of the table: the write amplification of a device
    /// that writes whole 4 KiB pages, had every write reached it.
    pub fn page_write_amplification(&self) -> f64 {
        (self.pages_written * BLOCK_SIZE as u64) as f64 / self.table_bytes().max(1) as f64
    }

    /// Bytes of the tuples (16 each) of the table built on or sorted, or of the outer one.
    fn table_bytes(&self) -> u64 {
        TUPLE_SIZE as u64 * self.tuples
    }

    /// A learned partition index's build.
    pub fn partition_build(index: &PartitionIndex, report: &BuildReport, limit: u64) -> Self {
        let skew = index.skew();
        UnsortedRecord {
            operation: Some(Operation::IndexBuild),
            method: "partition".into(),
            entries: index.entries().name().into(),
            tuples: index.len(),
            memory_limit: limit,
            peak_reserved: report.peak_reserved,
            seconds: report.seconds.0 + report.seconds.1,
            bytes_read: report.bytes_read.0 + report.bytes_read.1,
            bytes_written: report.bytes_written,
            write_calls: report.write_calls,
            pages_written: report.pages_written,
            file_bytes: report.file_bytes,
            index_memory_bytes: index.size_in_bytes(),
            model_bytes: index.model().size_in_bytes(),
            partitions: skew.partitions,
            largest_partition: skew.largest,
            empty_partitions: skew.empty,
            overflowed_partitions: skew.overflowed,
            pages: skew.pages,
            ..UnsortedRecord::default()
        }
    }

    /// A B+tree's build by inserts, its leaves holding `entries`; `peak_reserved` from its
    /// budget.
    pub fn btree_build(
        report: &btree::BuildReport,
        entries: super::Entries,
        limit: u64,
        peak_reserved: u64,
    ) -> Self {
        UnsortedRecord {
            operation: Some(Operation::IndexBuild),
            method: "btree-inserts".into(),
            entries: entries.name().into(),
            tuples: report.entries,
            memory_limit: limit,
            peak_reserved,
            seconds: report.seconds,
            bytes_read: report.bytes_read,
            bytes_written: report.stats.bytes_written,
            write_calls: report.stats.leaf_writes,
            pages_written: report.pages_written,
            file_bytes: report.file_bytes,
            index_memory_bytes: btree::inner_bytes_of(report.leaves),
            leaves: report.leaves,
            ..UnsortedRecord::default().with_tree_io(&[report.stats])
        }
    }

    /// An external merge sort that took `seconds`.
    pub fn external_sort(report: &SortReport, limit: u64, seconds: f64) -> Self {
        UnsortedRecord {
            operation: Some(Operation::Sort),
            method: "external".into(),
            tuples: report.records,
            memory_limit: limit,
            peak_reserved: report.peak_reserved,
            seconds,
            bytes_read: report.bytes_read,
            read_calls: report.read_calls,
            bytes_written: report.bytes_written,
            output_tuples: report.records,
            ..UnsortedRecord::default()
        }
    }

    /// A sort through an index (`learned` or `btree-inserts`).
    pub fn index_sort(
        method: &str,
        report: &IndexSortReport,
        limit: u64,
        peak_reserved: u64,
    ) -> Self {
        UnsortedRecord {
            operation: Some(Operation::Sort),
            method: method.into(),
            tuples: report.tuples,
            memory_limit: limit,
            peak_reserved,
            seconds: report.seconds.0 + report.seconds.1,
            prepare_s: report.seconds.0,
            bytes_read: report.bytes_read,
            read_calls: report.reads,
            bytes_written: report.bytes_written.0 + report.bytes_written.1,
            output_tuples: report.tuples,
            ..UnsortedRecord::default()
        }
    }

    /// This record with the leaf I/O of `trees` summed in.
    pub(crate) fn with_tree_io(mut self, trees: &[BTreeStats]) -> Self {
        for t in trees {
            self.leaf_reads += t.leaf_reads;
            self.leaf_writes += t.leaf_writes;
            self.splits += t.splits;
            self.pool_hits += t.pool_hits;
            self.evictions += t.evictions;
        }
        self
    }
}
