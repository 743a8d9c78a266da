//! The study's CSV row, one per run, and the median figures of a cell that its plots and
//! summary read.

use lidx::kv::Layout;
use serde::Serialize;

use super::Options;
use super::systems::{Built, System};
use crate::clients::{Measured, Op};
use crate::csv_rows::{Fixed, LIDX_VERSION};
use crate::stats::median;

/// One CSV row: one layout, table size, memory budget and operation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// The experiment.
    pub experiment: &'static str,
    /// lidx's version.
    pub lidx_version: &'static str,
    /// The machine.
    pub machine: String,
    /// Rows in the table.
    pub rows: u64,
    /// Bytes of each value.
    pub value_size: u64,
    /// Target block size.
    pub block_size: u64,
    /// Block compression.
    pub compression: String,
    /// The layout.
    pub layout: String,
    /// The learned layout's model (empty for the SSTable).
    pub model: String,
    /// How blocks were read.
    pub reads_with: &'static str,
    /// Where the files were read from: `local disk`, or the profile every system's files
    /// were read through (a FUSE mount; reads and bytes are then what reached it).
    pub storage: String,
    /// The memory budget in bytes: the system's resident index plus its block cache
    /// (0: no cache for any system, not at equal memory).
    pub memory_budget: u64,
    /// The block cache the system was given: the budget less its resident index.
    pub cache_bytes: u64,
    /// get or scan.
    pub op: String,
    /// Rows per scan (1 for gets).
    pub rows_per_op: u64,
    /// Clients.
    pub clients: usize,
    /// Requests each keeps in flight.
    pub outstanding: usize,
    /// Which run of the cell (from 0).
    pub repeat: usize,
    /// Measured seconds.
    pub seconds: Fixed<3>,
    /// Operations completed.
    pub ops: u64,
    /// Operations per second.
    pub ops_per_s: Fixed<1>,
    /// Rows per second.
    pub rows_per_s: Fixed<1>,
    /// Mean latency, µs.
    pub mean_us: Fixed<1>,
    /// Median latency, µs.
    pub p50_us: u64,
    /// 99th percentile latency, µs.
    pub p99_us: u64,
    /// 99.9th percentile latency, µs.
    pub p999_us: u64,
    /// Largest latency, µs.
    pub max_us: u64,
    /// Mean latency per 1 KiB row returned, µs.
    pub mean_us_per_kib_row: Fixed<2>,
    /// Operations the counts per operation below come from: `ops`, or (RocksDB, timed with
    /// its statistics and perf counters off) those of a separate counting run.
    pub counted_ops: u64,
    /// Read calls per operation (RocksDB: the process's read system calls).
    pub reads_per_op: Fixed<3>,
    /// Bytes read per operation (RocksDB: the process's bytes read from storage).
    pub bytes_per_op: Fixed<0>,
    /// Blocks read from the file per operation, index and data (RocksDB: its perf
    /// context's count, which leaves out what its iterators read ahead).
    pub blocks_per_op: Fixed<3>,
    /// Data blocks read from the file per operation (NaN where the system does not tell
    /// them from index blocks: RocksDB without a cache).
    pub data_blocks_per_op: Fixed<3>,
    /// Index blocks read from the file per operation (NaN as above).
    pub index_blocks_per_op: Fixed<3>,
    /// Cache hits over the measured time.
    pub cache_hits: u64,
    /// Cache misses.
    pub cache_misses: u64,
    /// Cache evictions.
    pub cache_evictions: u64,
    /// Bytes of index the system keeps in memory outside its cache (charged to its budget).
    pub resident_index_bytes: u64,
    /// Every byte that must be in memory for a get to read no index block.
    pub full_index_bytes: u64,
    /// Bytes of the index on disk.
    pub index_disk_bytes: u64,
    /// Bytes of the Bloom filter (RocksDB; 0 for none).
    pub filter_bytes: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Empty data blocks.
    pub empty_blocks: u64,
    /// Mean stored data block bytes.
    pub block_mean: Fixed<0>,
    /// 99th percentile stored block bytes.
    pub block_p99: u64,
    /// Largest stored block.
    pub block_max: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// The store's settings (RocksDB's; empty for lidx's files, whose are the columns).
    pub settings: String,
}

/// Which run a row is: its table size, system, cache size, operation and repeat.
pub(super) struct RunId {
    pub(super) rows: u64,
    pub(super) system: System,
    pub(super) memory_budget: u64,
    pub(super) cache_bytes: u64,
    pub(super) op: Op,
    pub(super) repeat: usize,
}

/// The CSV row of run `c` of the study `o`, which measured `m` on a system built as `built`.
pub(super) fn row(o: &Options, machine: &str, c: &RunId, m: &Measured, built: &Built) -> Row {
    let RunId {
        rows,
        system,
        memory_budget,
        cache_bytes,
        op,
        repeat,
    } = *c;
    let secs = m.elapsed.as_secs_f64();
    let per_op = |v: u64| m.per_counted_op(v);
    let mean = m.latency.mean();
    let rows_per_op = match op {
        Op::Get => 1,
        Op::Scan { rows } => rows as u64,
    };
    let kib_rows =
        (m.rows.max(1) as f64 / m.ops.max(1) as f64) * (o.value_size as f64 / 1024.0).max(1e-9);
    Row {
        experiment: "bigtable",
        lidx_version: LIDX_VERSION,
        machine: machine.to_string(),
        rows,
        value_size: o.value_size,
        block_size: o.block_size,
        compression: o.compression.to_string(),
        layout: system.name().to_string(),
        model: match system {
            System::Kv(Layout::Learned) => o.model.to_string(),
            _ => String::new(),
        },
        reads_with: if o.buffered { "buffered" } else { "O_DIRECT" },
        storage: o.profile.clone().unwrap_or_else(|| "local disk".into()),
        memory_budget,
        cache_bytes,
        op: op.name().to_string(),
        rows_per_op,
        clients: o.clients,
        outstanding: o.outstanding,
        repeat,
        seconds: Fixed(secs),
        ops: m.ops,
        ops_per_s: Fixed(m.ops as f64 / secs),
        rows_per_s: Fixed(m.rows as f64 / secs),
        mean_us: Fixed(mean),
        p50_us: m.latency.value_at_quantile(0.5),
        p99_us: m.latency.value_at_quantile(0.99),
        p999_us: m.latency.value_at_quantile(0.999),
        max_us: m.latency.max(),
        mean_us_per_kib_row: Fixed(mean / kib_rows),
        counted_ops: m.counted_ops,
        reads_per_op: Fixed(per_op(m.io.io.reads)),
        bytes_per_op: Fixed(per_op(m.io.io.bytes)),
        blocks_per_op: Fixed(per_op(m.io.data_block_reads + m.io.index_block_reads)),
        data_blocks_per_op: Fixed(match m.counters.blocks_split {
            true => per_op(m.io.data_block_reads),
            false => f64::NAN,
        }),
        index_blocks_per_op: Fixed(match m.counters.blocks_split {
            true => per_op(m.io.index_block_reads),
            false => f64::NAN,
        }),
        cache_hits: m.counters.cache.hits,
        cache_misses: m.counters.cache.misses,
        cache_evictions: m.counters.cache.evictions,
        resident_index_bytes: built.resident_index_bytes,
        full_index_bytes: built.full_index_bytes,
        index_disk_bytes: built.index_disk_bytes,
        filter_bytes: built.filter_bytes,
        data_blocks: built.data_blocks,
        empty_blocks: built.empty_blocks,
        block_mean: Fixed(built.block_mean),
        block_p99: built.block_p99,
        block_max: built.block_max,
        file_bytes: built.file_bytes,
        settings: built.settings.clone(),
    }
}

/// A cell's figures, each the median over its runs.
pub(super) struct Cell {
    pub(super) mean_us: f64,
    pub(super) p99_us: f64,
    pub(super) rows_per_s: f64,
    pub(super) index_blocks_per_op: f64,
    pub(super) data_blocks_per_op: f64,
    pub(super) runs: usize,
}

/// The median figures of the runs of one table size, system, memory budget and operation,
/// if any ran.
pub(super) fn cell(rows: &[Row], n: u64, system: &str, budget: u64, op: &str) -> Option<Cell> {
    let runs: Vec<&Row> = rows
        .iter()
        .filter(|r| r.rows == n && r.layout == system && r.memory_budget == budget && r.op == op)
        .collect();
    let med = |f: &dyn Fn(&Row) -> f64| median(&mut runs.iter().map(|r| f(r)).collect::<Vec<_>>());
    (!runs.is_empty()).then(|| Cell {
        mean_us: med(&|r| r.mean_us.0),
        p99_us: med(&|r| r.p99_us as f64),
        rows_per_s: med(&|r| r.rows_per_s.0),
        index_blocks_per_op: med(&|r| r.index_blocks_per_op.0),
        data_blocks_per_op: med(&|r| r.data_blocks_per_op.0),
        runs: runs.len(),
    })
}

/// The systems of a study, by name, in the order they are drawn and tabled.
pub(super) fn system_names(o: &Options) -> Vec<&'static str> {
    System::all(o).into_iter().map(System::name).collect()
}
