//! Grace hash join (beyond paper 1's in-memory hash join, issue 10): when the outer table's
//! hash table would exceed the memory budget, both tables are split by a hash of the key
//! into partitions on disk, small enough that each outer partition's hash table fits, and
//! each pair of partitions is joined in memory. Output comes partition by partition (not in
//! key order), the same multiset as every other method.

use std::path::Path;

use super::hash::{HashTable, hash_join};
use super::scan::Scan;
use super::{JoinSink, JoinStats};
use crate::storage::table::key_hash;
use crate::storage::{BLOCK_SIZE, ReadMode, Table, TableWriter};
use crate::{Error, Result};

/// Estimated bytes of one outer tuple in an in-memory hash table (key, value, the map's
/// slot and the value list's share), used to size partitions against the budget.
pub const HASH_ENTRY_BYTES: u64 = 48;

/// Write buffer of each partition being written.
const PARTITION_BUFFER: usize = 16 << 10;

/// Most partitions: each open partition writer costs its buffer and a block.
const MAX_PARTITIONS: u64 = 1024;

/// Joins `outer` (hashed) with `inner`, keeping the hash table within `budget` bytes:
/// in memory when it fits, otherwise through partitions written under `temp_dir` (removed
/// afterwards). Fails with a clear error when the budget cannot hold even the partition
/// writers, or when one key's tuples alone exceed it.
pub fn grace_hash_join(
    outer: &Table,
    inner: &Table,
    mode: ReadMode,
    read_tuples: u64,
    budget: u64,
    temp_dir: &Path,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    let need = outer.len().saturating_mul(HASH_ENTRY_BYTES);
    if need <= budget {
        return hash_join(outer, inner, mode, read_tuples, sink);
    }
    // Twice the partitions the average needs, so uneven ones still fit.
    let parts = need
        .div_ceil(budget.max(1))
        .saturating_mul(2)
        .clamp(2, MAX_PARTITIONS);
    let writers_bytes = parts * (PARTITION_BUFFER + BLOCK_SIZE) as u64;
    if writers_bytes > budget || need.div_ceil(parts) > budget {
        return Err(Error::param(
            "memory budget",
            format!(
                "{budget} bytes cannot join {} outer tuples: the hash table needs about {need} bytes, and {parts} partitions need {writers_bytes} bytes of write buffers; raise --memory-budget",
                outer.len()
            ),
        ));
    }
    let dir = tempfile::Builder::new()
        .prefix(".lidx-grace-")
        .tempdir_in(temp_dir)
        .map_err(|e| {
            Error::io(
                temp_dir,
                "create a directory for grace hash partitions in",
                e,
            )
        })?;
    let mut stats = JoinStats::default();
    let outer_parts = partition(
        outer,
        "r",
        parts,
        dir.path(),
        mode,
        read_tuples,
        &mut stats.outer_io,
        &mut stats.spilled_bytes,
    )?;
    let inner_parts = partition(
        inner,
        "s",
        parts,
        dir.path(),
        mode,
        read_tuples,
        &mut stats.inner_io,
        &mut stats.spilled_bytes,
    )?;
    for (r, s) in outer_parts.iter().zip(&inner_parts) {
        if r.len().saturating_mul(HASH_ENTRY_BYTES) > budget {
            return Err(Error::param(
                "memory budget",
                format!(
                    "a partition of {} outer tuples (keys too skewed to split by hash) exceeds {budget} bytes; raise --memory-budget",
                    r.len()
                ),
            ));
        }
        let part = HashTable::build(r, ReadMode::Buffered, read_tuples)?.probe(
            s,
            ReadMode::Buffered,
            read_tuples,
            sink,
        )?;
        stats.output += part.output;
        stats.outer_io += part.outer_io;
        stats.inner_io += part.inner_io;
    }
    Ok(stats)
}

/// Splits `table` into `parts` tables by the hash of the key, returning them opened.
#[expect(
    clippy::too_many_arguments,
    reason = "the partitioner threads the join's settings and counters through"
)]
fn partition(
    table: &Table,
    name: &str,
    parts: u64,
    dir: &Path,
    mode: ReadMode,
    read_tuples: u64,
    io: &mut crate::storage::IoStats,
    spilled: &mut u64,
) -> Result<Vec<Table>> {
    let paths: Vec<_> = (0..parts)
        .map(|i| dir.join(format!("{name}{i}.tbl")))
        .collect();
    let mut writers = paths
        .iter()
        .map(|p| TableWriter::create_with_buffer(p, PARTITION_BUFFER))
        .collect::<Result<Vec<_>>>()?;
    let mut scan = Scan::new(table, mode, read_tuples, 0..table.len())?;
    while let Some(t) = scan.peek()? {
        let p = (key_hash(t.key) % parts) as usize;
        if let Some(w) = writers.get_mut(p) {
            w.push(t)?;
        }
        scan.advance();
    }
    *io += scan.stats();
    for w in writers {
        w.finish()?;
    }
    let tables = paths
        .iter()
        .map(|p| Table::open(p))
        .collect::<Result<Vec<_>>>()?;
    *spilled += tables.iter().map(|t| t.layout().file_len()).sum::<u64>();
    Ok(tables)
}
