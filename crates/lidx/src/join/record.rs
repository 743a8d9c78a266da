//! [`JoinRecord`]: every figure of one finished join, the contract between a join and
//! whoever measures it. `lidx join --json` prints one as a JSON object; paper 1's
//! experiments start each join as a fresh process (cold, its own page cache state) and read
//! the record back.

use serde::{Deserialize, Serialize};

use super::JoinStats;
use crate::partition::btree::BTreeStats;
use crate::partition::{Entries, Operation, UnsortedRecord};
use crate::storage::IoStats;

/// Every figure of one join: its settings, sizes, time, I/O and the cost model's estimate.
/// Serialized as one flat JSON object with these field names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JoinRecord {
    /// The method as named on the command line (`inlj:sampled-pgm`, `merge`, ...), followed
    /// by ` no-cursor` and ` no-monotone` where an INLJ ran without paper 1's optimizations.
    pub method: String,
    /// Threads joining.
    pub threads: usize,
    /// Whether the inputs were read with `O_DIRECT`.
    pub direct: bool,
    /// Window reads each INLJ thread kept in flight (1 for every other method).
    pub io_depth: usize,
    /// What kept them in flight: `uring`, `threads`, or `sync` (one at a time).
    pub io_backend: String,
    /// Paper 1's first optimization (moving along the index's lowest level) was on.
    pub cursor: bool,
    /// Paper 1's monotone-window optimization was on.
    pub monotone: bool,
    /// The widest window an INLJ reads whole, in blocks (0 for other methods).
    pub max_window_blocks: u64,
    /// Bytes per sequential read of a scanned table.
    pub read_size: u64,
    /// Tuples of the outer table.
    pub outer_tuples: u64,
    /// Tuples of the inner table.
    pub inner_tuples: u64,
    /// Output tuples.
    pub output_tuples: u64,
    /// Seconds of the join itself (without building an index or hash table).
    pub join_s: f64,
    /// Seconds spent building the index (INLJ without a saved one) or the hash table.
    pub build_s: Option<f64>,
    /// Seconds spent copying the output into the output table.
    pub write_s: Option<f64>,
    /// Seconds of the output table's fsync and rename.
    pub fsync_s: Option<f64>,
    /// Index searches.
    pub lookups: u64,
    /// 4 KiB blocks read from the outer table.
    pub outer_blocks: u64,
    /// Bytes read from the outer table.
    pub outer_bytes: u64,
    /// Read calls on the outer table.
    pub outer_reads: u64,
    /// 4 KiB blocks read from the inner table.
    pub inner_blocks: u64,
    /// Bytes read from the inner table.
    pub inner_bytes: u64,
    /// Read calls on the inner table.
    pub inner_reads: u64,
    /// Bytes written to temporary partitions (grace hash join).
    pub spilled_bytes: u64,
    /// The index window the cost model assumed, in positions (0 for the grace join).
    pub index_window: f64,
    /// The cost model's prediction for this method, in seconds.
    pub model_s: f64,
    /// The storage profile the model used.
    pub model_device: String,
    /// The peak resident set size in bytes of the process that ran the join, where the
    /// command filled it in (`lidx join --json` does).
    #[serde(default)]
    pub peak_rss: Option<u64>,
    /// The figures only the joins of unsorted tables through unclustered indexes or sorted
    /// copies have (`partition`, `btree-inserts`, `sort-merge`). Not in the JSON object:
    /// those joins print an [`UnsortedRecord`] ([`UnsortedRecord::join`]).
    #[serde(skip)]
    pub unclustered: Option<UnclusteredFigures>,
}

/// What a join of unsorted tables did besides a [`JoinRecord`]'s figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnclusteredFigures {
    /// Partitions read from the outer and the inner table's partition files (`partition`).
    pub partitions_read: (u64, u64),
    /// Leaf I/O of the outer and the inner B+tree (`btree-inserts`).
    pub tree_io: (BTreeStats, BTreeStats),
    /// What the outer and the inner index hold (`partition`, `btree-inserts`; `None` for
    /// `sort-merge`, which joins through none).
    pub entries: Option<(Entries, Entries)>,
    /// The memory budget's limit in bytes.
    pub memory_limit: u64,
    /// The most bytes reserved from it at once.
    pub peak_reserved: u64,
}

impl UnsortedRecord {
    /// The record `lidx join --json` prints for a join of unsorted tables (`record` has
    /// its [`UnclusteredFigures`]; without them the figures they hold are 0).
    pub fn join(record: &JoinRecord) -> UnsortedRecord {
        let figures = record.unclustered.unwrap_or_default();
        let out = UnsortedRecord {
            operation: Some(Operation::Join),
            method: record.method.clone(),
            tuples: record.outer_tuples,
            inner_tuples: record.inner_tuples,
            memory_limit: figures.memory_limit,
            peak_reserved: figures.peak_reserved,
            peak_rss: record.peak_rss,
            seconds: record.join_s,
            prepare_s: record.build_s.unwrap_or(0.0),
            bytes_read: record.outer_bytes + record.inner_bytes,
            read_calls: record.outer_reads + record.inner_reads,
            output_tuples: record.output_tuples,
            lookups: record.lookups,
            partitions_read: figures.partitions_read.0 + figures.partitions_read.1,
            entries: figures.entries.map(entries_name).unwrap_or_default(),
            ..UnsortedRecord::default()
        };
        out.with_tree_io(&[figures.tree_io.0, figures.tree_io.1])
    }
}

/// What a join's two indexes held, as its record names it: `pointers` or `tuples` where
/// both sides' did alike, `OUTER/INNER` where they differ.
fn entries_name((outer, inner): (Entries, Entries)) -> String {
    if outer == inner {
        outer.name().to_string()
    } else {
        format!("{outer}/{inner}")
    }
}

impl JoinRecord {
    /// The figures of a join that ran as `method` over `tuples` (outer, inner), its
    /// inputs read with `O_DIRECT` where `direct`, scanned `read_size` bytes at a time, in
    /// `join_s` seconds, doing `stats`: one thread, one read at a time, neither of paper 1's
    /// optimizations, no build, no output written, no cost model; callers set what differs.
    pub fn measured(
        method: String,
        direct: bool,
        read_size: u64,
        tuples: (u64, u64),
        stats: &JoinStats,
        join_s: f64,
    ) -> JoinRecord {
        JoinRecord {
            method,
            threads: 1,
            direct,
            io_depth: 1,
            io_backend: "sync".to_string(),
            cursor: false,
            monotone: false,
            max_window_blocks: 0,
            read_size,
            outer_tuples: tuples.0,
            inner_tuples: tuples.1,
            output_tuples: stats.output,
            join_s,
            build_s: None,
            write_s: None,
            fsync_s: None,
            lookups: stats.lookups,
            outer_blocks: stats.outer_io.blocks,
            outer_bytes: stats.outer_io.bytes,
            outer_reads: stats.outer_io.reads,
            inner_blocks: stats.inner_io.blocks,
            inner_bytes: stats.inner_io.bytes,
            inner_reads: stats.inner_io.reads,
            spilled_bytes: stats.spilled_bytes,
            index_window: 0.0,
            model_s: 0.0,
            model_device: String::new(),
            peak_rss: None,
            unclustered: None,
        }
    }

    /// The reads of the outer table.
    pub fn outer_io(&self) -> IoStats {
        IoStats {
            blocks: self.outer_blocks,
            bytes: self.outer_bytes,
            reads: self.outer_reads,
            ..IoStats::default()
        }
    }

    /// The reads of the inner table.
    pub fn inner_io(&self) -> IoStats {
        IoStats {
            blocks: self.inner_blocks,
            bytes: self.inner_bytes,
            reads: self.inner_reads,
            ..IoStats::default()
        }
    }
}
