//! Grace hash join (beyond paper 1's in-memory hash join, issue 10): when the outer table's
//! hash table and a scan's read buffers would not fit in the memory budget, both tables are
//! split by a hash of the key into partitions on disk, small enough that each outer
//! partition's hash table fits, and each pair of partitions is joined in memory. Output comes partition by partition
//! (not in key order), the same multiset as every other method.
//!
//! Everything it holds is reserved from the [`MemoryBudget`]: the partition writers'
//! buffers and one scan while partitioning, then one partition's hash table and one scan
//! per pair. Its scans read at most an eighth of the budget at a time (at least a block),
//! so a small budget means small reads rather than a refusal. Not counted: the block
//! checksums a partition keeps while written and opened (4 bytes per 4 KiB block).

use std::path::Path;

use super::hash::{HASH_ENTRY_BYTES, HashTable, hash_join};
use super::scan::{self, Scan};
use super::{JoinSink, JoinStats};
use crate::memory::MemoryBudget;
use crate::storage::table::key_hash;
use crate::storage::{BLOCK_SIZE, IoStats, ReadMode, TUPLES_PER_BLOCK, Table, TableWriter};
use crate::{Error, Result};

/// Write buffer of each partition being written.
const PARTITION_BUFFER: usize = 8 << 10;

/// Bytes one open partition writer holds: its write buffer and the block it is filling.
const WRITER_BYTES: u64 = (PARTITION_BUFFER + BLOCK_SIZE) as u64;

/// The most partition files a grace hash join keeps open at once (each open partition
/// writer costs its buffer and a block, and a file descriptor): this join's, and the LSM
/// joins' hash join's.
pub const MAX_PARTITION_FILES: usize = 1024;

/// [`MAX_PARTITION_FILES`] as a count of partitions.
const MAX_PARTITIONS: u64 = MAX_PARTITION_FILES as u64;

/// The largest read (whole blocks, at most the blocks `read_tuples` spans) whose scan
/// buffers take at most an eighth of `available` bytes; at least one block.
fn fitted_read(read_tuples: u64, available: u64) -> u64 {
    let block_bytes = scan::buffer_bytes(TUPLES_PER_BLOCK);
    let most = read_tuples.max(1).div_ceil(TUPLES_PER_BLOCK);
    (available / 8 / block_bytes).clamp(1, most) * TUPLES_PER_BLOCK
}

/// How a partitioned join fits its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    /// Partitions of each table.
    parts: u64,
    /// Tuples per read of every scan.
    read_tuples: u64,
}

/// The partitions and read size that keep a grace join of `outer_tuples` within
/// `available` bytes, or the error naming what cannot fit.
fn plan(outer_tuples: u64, read_tuples: u64, available: u64, limit: u64) -> Result<Plan> {
    let read_tuples = fitted_read(read_tuples, available);
    let scan = scan::buffer_bytes(read_tuples);
    let over = |what: String, need: u64| Error::OverBudget {
        what,
        need,
        available,
        limit,
    };
    let room = available
        .checked_sub(scan)
        .ok_or_else(|| over("the read buffers of a one-block scan".to_string(), scan))?;
    // Twice the partitions the average needs, so uneven ones still fit.
    let table = outer_tuples.saturating_mul(HASH_ENTRY_BYTES);
    let parts = table
        .div_ceil(room.max(1))
        .saturating_mul(2)
        .clamp(2, MAX_PARTITIONS);
    let writers = parts * WRITER_BYTES;
    if writers.saturating_add(scan) > available {
        return Err(over(
            format!(
                "partitioning a hash table of about {table} bytes: {parts} partition writers and a scan"
            ),
            writers + scan,
        ));
    }
    if table.div_ceil(parts) > room {
        return Err(over(
            format!(
                "the hash table of one of {MAX_PARTITIONS} partitions of {outer_tuples} outer tuples"
            ),
            table.div_ceil(parts) + scan,
        ));
    }
    Ok(Plan { parts, read_tuples })
}

/// Joins `outer` (hashed) with `inner` within `budget`: in memory when the hash table and
/// one scan's buffers fit (reading less at a time if that makes them fit), otherwise
/// through partitions written in a [`scratch_dir`](crate::files::scratch_dir) made in
/// `temp_dir` (removed afterwards, or after a kill; see its documentation). Fails
/// with [`Error::OverBudget`] when the budget cannot hold even the partition writers and
/// one scan, or when one key's tuples alone exceed it.
pub fn grace_hash_join(
    outer: &Table,
    inner: &Table,
    mode: ReadMode,
    read_tuples: u64,
    budget: &MemoryBudget,
    temp_dir: &Path,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    let available = budget.available();
    // In memory where the table fits with reads as asked, or with smaller ones.
    for read in [read_tuples, fitted_read(read_tuples, available)] {
        if HashTable::memory_needed(outer.len(), read) <= available {
            return hash_join(outer, inner, mode, read, budget, sink);
        }
    }
    let Plan { parts, read_tuples } = plan(outer.len(), read_tuples, available, budget.limit())?;
    // Named as lidx's temporary files: removed when done, by the signal handler on SIGINT
    // or SIGTERM, and by the next run writing into `temp_dir` after a SIGKILL.
    let dir = crate::files::scratch_dir(temp_dir)?;
    let mut stats = JoinStats::default();
    let partitioner = Partitioner {
        parts,
        dir: dir.path(),
        mode,
        read_tuples,
        budget,
    };
    let outer_parts =
        partitioner.split(outer, "r", &mut stats.outer_io, &mut stats.spilled_bytes)?;
    let inner_parts =
        partitioner.split(inner, "s", &mut stats.inner_io, &mut stats.spilled_bytes)?;
    for (r, s) in outer_parts.iter().zip(&inner_parts) {
        let hashed =
            HashTable::build(r, ReadMode::Buffered, read_tuples, budget).map_err(|e| match e {
                Error::OverBudget {
                    what,
                    need,
                    available,
                    limit,
                } => Error::OverBudget {
                    what: format!("{what} in one partition (keys too skewed to split by hash)"),
                    need,
                    available,
                    limit,
                },
                other => other,
            })?;
        let part = hashed.probe(s, ReadMode::Buffered, read_tuples, sink)?;
        stats.output += part.output;
        stats.outer_io += part.outer_io;
        stats.inner_io += part.inner_io;
    }
    Ok(stats)
}

/// Splits tables into partitions by the hash of the key.
struct Partitioner<'a> {
    parts: u64,
    dir: &'a Path,
    mode: ReadMode,
    read_tuples: u64,
    budget: &'a MemoryBudget,
}

impl Partitioner<'_> {
    /// Splits `table` into `parts` tables named `{name}{i}.tbl`, returning them opened;
    /// counts the reads into `io` and the bytes written into `spilled`.
    fn split(
        &self,
        table: &Table,
        name: &str,
        io: &mut IoStats,
        spilled: &mut u64,
    ) -> Result<Vec<Table>> {
        let _writers = self.budget.reserve(
            self.parts * WRITER_BYTES,
            format!("the write buffers of {} partitions", self.parts),
        )?;
        let paths: Vec<_> = (0..self.parts)
            .map(|i| self.dir.join(format!("{name}{i}.tbl")))
            .collect();
        let mut writers = paths
            .iter()
            .map(|p| TableWriter::create_with_buffer(p, PARTITION_BUFFER))
            .collect::<Result<Vec<_>>>()?;
        let mut scan = Scan::new(
            table,
            self.mode,
            self.read_tuples,
            0..table.len(),
            self.budget,
        )?;
        while let Some(t) = scan.peek()? {
            let p = (key_hash(t.key) % self.parts) as usize;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_fit_their_budget_or_name_what_does_not() {
        for (outer, read, budget) in [
            (2000, 65536, 90 << 10),
            (3000, 256, 100_000),
            (1 << 30, 65536, 256 << 20),
        ] {
            let Plan { parts, read_tuples } = plan(outer, read, budget, budget).unwrap();
            let scan = scan::buffer_bytes(read_tuples);
            assert!(read_tuples >= TUPLES_PER_BLOCK && read_tuples <= read.max(TUPLES_PER_BLOCK));
            assert!(parts * WRITER_BYTES + scan <= budget, "{outer} {budget}");
            assert!(
                outer * HASH_ENTRY_BYTES / parts + scan <= budget,
                "{outer} {budget}"
            );
        }
        // No room for a one-block scan, or for the writers of enough partitions.
        for (outer, budget) in [(2000, 10 << 10), (10_000_000_000, 1 << 20)] {
            let err = plan(outer, 65536, budget, budget).unwrap_err();
            assert!(matches!(err, Error::OverBudget { .. }), "{err}");
        }
    }
}
