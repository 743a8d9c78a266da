//! Index nested loop join (paper 1, sections 3 and 4.3): the outer table is scanned with
//! large sequential reads; for each outer key the inner table's index gives a window,
//! whose blocks are read with one contiguous read (unless the buffer holds them), a
//! branchless last-mile search finds the first match, and the run of equal inner keys is
//! emitted, reading on past the window's end where it continues.
//!
//! Paper 1's two optimizations are switchable for every index kind: [`InljOptions::cursor`]
//! moves along the index's lowest level from the previous key instead of searching from the
//! root, and [`InljOptions::monotone`] starts each search no earlier than the previous match
//! and does not read again blocks still in the buffer (without it, every lookup reads its
//! window afresh).

use std::ops::Range;

use super::scan::Scan;
use super::{JoinSink, JoinStats};
use crate::index::{AnyIndex, Index};
use crate::storage::{BlockReader, ReadMode, Table};
use crate::{Error, Result};

/// How an index nested loop join reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InljOptions {
    /// How the inner table's windows are read.
    pub mode: ReadMode,
    /// Tuples per sequential read of the outer table.
    pub outer_read_tuples: u64,
    /// Paper 1's first optimization: each search moves along the index's lowest level from
    /// the previous key's place ([`Index::search_from`]) instead of starting at the root.
    pub cursor: bool,
    /// Paper 1's monotone-window optimization (needs a sorted outer table).
    pub monotone: bool,
    /// Windows wider than this many blocks are narrowed block by block instead of read whole.
    pub max_window_blocks: u64,
}

impl Default for InljOptions {
    fn default() -> Self {
        Self {
            mode: ReadMode::Direct,
            outer_read_tuples: 1 << 16,
            cursor: true,
            monotone: true,
            max_window_blocks: 32,
        }
    }
}

/// Joins `outer` with the sorted `inner` through `index`, built on `inner`'s keys.
pub fn inlj<I: Index>(
    outer: &Table,
    inner: &Table,
    index: &I,
    opts: &InljOptions,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    inlj_range(outer, 0..outer.len(), inner, index, opts, sink)
}

/// [`inlj`] of outer positions `outer_range` only (a thread's share).
pub fn inlj_range<I: Index>(
    outer: &Table,
    outer_range: Range<u64>,
    inner: &Table,
    index: &I,
    opts: &InljOptions,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    inner.require_sorted("an index nested loop join (its inner table)")?;
    if opts.monotone {
        outer
            .require_sorted("an index nested loop join with monotone windows (its outer table)")?;
    }
    let n = inner.len();
    if index.len() != n {
        return Err(Error::param(
            "index",
            format!(
                "it indexes {} keys, but {} holds {n}",
                index.len(),
                inner.path().display()
            ),
        ));
    }
    let mut outer_scan = Scan::new(outer, opts.mode, opts.outer_read_tuples, outer_range)?;
    let mut reader = BlockReader::new(inner, opts.mode)?;
    let (mut lookups, mut output, mut floor) = (0u64, 0u64, 0u64);
    let mut hint = 0usize;
    while let Some(t) = outer_scan.peek()? {
        let key = t.key;
        let mut w = if opts.cursor {
            index.search_from(key, &mut hint)
        } else {
            index.search(key)
        };
        lookups += 1;
        if opts.monotone {
            // The previous key's answer bounds this one's from below (outer keys ascend).
            w.lo = w.lo.max(floor).min(w.hi);
        } else {
            reader.clear_buffer();
        }
        let mut pos = reader.lower_bound(w.lo, w.hi, key, opts.max_window_blocks)?;
        floor = pos;
        // Emit the run of equal inner keys, block by block.
        while pos < n {
            let run = reader.read_window(pos, pos + 1)?;
            let from = (pos - run.first_position) as usize;
            let rest = run.tuples.get(from..).unwrap_or_default();
            let matched = rest.iter().take_while(|u| u.key == key).count();
            for u in &rest[..matched] {
                sink.emit(key, t.value, u.value)?;
            }
            pos += matched as u64;
            output += matched as u64;
            if matched < rest.len() {
                break;
            }
        }
        outer_scan.advance();
    }
    Ok(JoinStats {
        outer_io: outer_scan.stats(),
        inner_io: reader.stats(),
        lookups,
        output,
        spilled_bytes: 0,
    })
}

/// [`inlj`] through an index of any kind (matched once, not per key).
pub fn inlj_any(
    outer: &Table,
    inner: &Table,
    index: &AnyIndex,
    opts: &InljOptions,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    inlj_any_range(outer, 0..outer.len(), inner, index, opts, sink)
}

/// [`inlj_range`] through an index of any kind.
pub fn inlj_any_range(
    outer: &Table,
    outer_range: Range<u64>,
    inner: &Table,
    index: &AnyIndex,
    opts: &InljOptions,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    let r = outer_range;
    match index {
        AnyIndex::Pgm(i) => inlj_range(outer, r, inner, i, opts, sink),
        AnyIndex::SampledPgm(i) => inlj_range(outer, r, inner, i, opts, sink),
        AnyIndex::RadixSpline(i) => inlj_range(outer, r, inner, i, opts, sink),
        AnyIndex::Rmi(i) => inlj_range(outer, r, inner, i, opts, sink),
        AnyIndex::BTree(i) => inlj_range(outer, r, inner, i, opts, sink),
        AnyIndex::Binary(i) => inlj_range(outer, r, inner, i, opts, sink),
    }
}
