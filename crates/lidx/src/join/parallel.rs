//! Joins on several threads (paper 1, section 5.5): the outer table (the inner one for a
//! hash join's probe) is split into contiguous position ranges, one per thread; each thread
//! joins its share into its own sink, and the shares come back in range order, so their
//! outputs laid end to end are the one-thread output: placed by order, never re-sorted.
//!
//! A sort-merge thread needs the inner positions its outer keys can match:
//! `lower_bound(first key) .. lower_bound(last key + 1)`, found with a few single-block
//! reads counted in the join's statistics. Neighbouring shares overlap on the inner run of
//! a key that straddles their boundary, so each outer tuple still meets its whole run.

use std::ops::Range;

use super::hash::HashTable;
use super::inlj::{InljOptions, inlj_any_range};
use super::merge::merge_join_ranges;
use super::{JoinSink, JoinStats};
use crate::index::AnyIndex;
use crate::memory::MemoryBudget;
use crate::storage::{BlockReader, ReadMode, Table};
use crate::{Error, Result};

/// One thread's share: its outer positions and the inner positions it may read.
type Share = (Range<u64>, Range<u64>);

/// Which join each thread runs.
pub enum Method<'a> {
    /// Index nested loop join through `index` (built on the inner table).
    Inlj {
        /// The inner table's index.
        index: &'a AnyIndex,
        /// How to read.
        options: InljOptions,
    },
    /// Sort-merge join reading `read_tuples` at a time.
    Merge {
        /// How to read.
        mode: ReadMode,
        /// Tuples per sequential read.
        read_tuples: u64,
        /// What every thread's read buffers are reserved from.
        budget: &'a MemoryBudget,
    },
    /// Probes of a hash table built on the outer table.
    Hash {
        /// The outer table, hashed.
        table: &'a HashTable,
        /// How to read.
        mode: ReadMode,
        /// Tuples per sequential read.
        read_tuples: u64,
    },
}

/// `0..n` cut into `parts` contiguous ranges of nearly equal length (none empty unless n is).
pub fn split(n: u64, parts: usize) -> Vec<Range<u64>> {
    let parts = (parts.max(1) as u64).min(n.max(1));
    (0..parts)
        .map(|i| n * i / parts..n * (i + 1) / parts)
        .collect()
}

fn add(a: JoinStats, b: JoinStats) -> JoinStats {
    let mut io = a.outer_io;
    io += b.outer_io;
    let mut inner = a.inner_io;
    inner += b.inner_io;
    JoinStats {
        outer_io: io,
        inner_io: inner,
        lookups: a.lookups + b.lookups,
        output: a.output + b.output,
        spilled_bytes: a.spilled_bytes + b.spilled_bytes,
    }
}

/// Runs `method` on `threads` threads; returns each thread's sink, in range order, and the
/// statistics of all of them together.
pub fn parallel_join<S: JoinSink + Send + Default>(
    outer: &Table,
    inner: &Table,
    method: &Method<'_>,
    threads: usize,
) -> Result<(Vec<S>, JoinStats)> {
    parallel_join_with(outer, inner, method, threads, || Ok(S::default()))
}

/// [`parallel_join`] with each thread's sink made by `make_sink` (a sink that spills to a
/// file, say).
pub fn parallel_join_with<S: JoinSink + Send>(
    outer: &Table,
    inner: &Table,
    method: &Method<'_>,
    threads: usize,
    make_sink: impl Fn() -> Result<S> + Sync,
) -> Result<(Vec<S>, JoinStats)> {
    let (ranges, mut stats) = match method {
        Method::Hash { .. } => (
            split(inner.len(), threads)
                .into_iter()
                .map(|r| (r.clone(), r))
                .collect(),
            JoinStats::default(),
        ),
        Method::Inlj { .. } => (
            split(outer.len(), threads)
                .into_iter()
                .map(|r| (r, 0..0))
                .collect(),
            JoinStats::default(),
        ),
        Method::Merge { mode, .. } => merge_shares(outer, inner, *mode, threads)?,
    };
    let make_sink = &make_sink;
    let results: Vec<Result<(S, JoinStats)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ranges
            .iter()
            .cloned()
            .map(|(outer_range, inner_range)| {
                scope.spawn(move || {
                    let mut sink = make_sink()?;
                    let stats = match method {
                        Method::Inlj { index, options } => {
                            inlj_any_range(outer, outer_range, inner, index, options, &mut sink)?
                        }
                        Method::Merge {
                            mode,
                            read_tuples,
                            budget,
                        } => merge_join_ranges(
                            outer,
                            outer_range,
                            inner,
                            inner_range,
                            *mode,
                            *read_tuples,
                            budget,
                            &mut sink,
                        )?,
                        Method::Hash {
                            table,
                            mode,
                            read_tuples,
                        } => {
                            table.probe_range(inner, inner_range, *mode, *read_tuples, &mut sink)?
                        }
                    };
                    Ok((sink, stats))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or(Err(Error::ThreadPanicked { what: "join" }))
            })
            .collect()
    });
    let mut sinks = Vec::with_capacity(results.len());
    for result in results {
        let (sink, s) = result?;
        stats = add(stats, s);
        sinks.push(sink);
    }
    Ok((sinks, stats))
}

/// Each merge thread's outer range and the inner range its keys can match, and the I/O spent
/// finding them.
fn merge_shares(
    outer: &Table,
    inner: &Table,
    mode: ReadMode,
    threads: usize,
) -> Result<(Vec<Share>, JoinStats)> {
    outer.require_sorted("a sort-merge join")?;
    inner.require_sorted("a sort-merge join")?;
    if threads <= 1 {
        // One share: both tables whole, nothing to look up.
        return Ok((vec![(0..outer.len(), 0..inner.len())], JoinStats::default()));
    }
    let mut outer_reader = BlockReader::new(outer, mode)?;
    let mut inner_reader = BlockReader::new(inner, mode)?;
    let n = inner.len();
    let mut shares = Vec::new();
    for range in split(outer.len(), threads) {
        if range.is_empty() {
            shares.push((range, 0..0));
            continue;
        }
        let key_at = |reader: &mut BlockReader<'_>, pos: u64| -> Result<u64> {
            let run = reader.read_window(pos, pos + 1)?;
            Ok(run
                .tuples
                .get((pos - run.first_position) as usize)
                .map_or(0, |t| t.key))
        };
        let first = key_at(&mut outer_reader, range.start)?;
        let last = key_at(&mut outer_reader, range.end - 1)?;
        let lo = inner_reader.lower_bound(0, n, first, 1)?;
        let hi = match last.checked_add(1) {
            Some(next) => inner_reader.lower_bound(lo, n, next, 1)?,
            None => n,
        };
        shares.push((range, lo..hi));
    }
    let stats = JoinStats {
        outer_io: outer_reader.stats(),
        inner_io: inner_reader.stats(),
        ..JoinStats::default()
    };
    Ok((shares, stats))
}
