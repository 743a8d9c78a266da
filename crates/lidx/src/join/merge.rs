//! Sort-merge join of two sorted tables (paper 1, section 4.3, "sort join"; the sort phase
//! is skipped because both inputs are sorted): two cursors with large sequential reads,
//! advancing the smaller key; equal runs give their cross product.

use std::ops::Range;

use super::scan::Scan;
use super::{JoinSink, JoinStats};
use crate::Result;
use crate::storage::{ReadMode, Table};

/// Joins sorted `outer` and `inner`, reading each in chunks of `read_tuples` tuples.
pub fn merge_join(
    outer: &Table,
    inner: &Table,
    mode: ReadMode,
    read_tuples: u64,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    merge_join_ranges(
        outer,
        0..outer.len(),
        inner,
        0..inner.len(),
        mode,
        read_tuples,
        sink,
    )
}

/// [`merge_join`] of outer positions `outer_range` with inner positions `inner_range` (a
/// thread's share; see [`parallel`](super::parallel)).
pub fn merge_join_ranges(
    outer: &Table,
    outer_range: Range<u64>,
    inner: &Table,
    inner_range: Range<u64>,
    mode: ReadMode,
    read_tuples: u64,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    outer.require_sorted("a sort-merge join")?;
    inner.require_sorted("a sort-merge join")?;
    let mut r = Scan::new(outer, mode, read_tuples, outer_range)?;
    let mut s = Scan::new(inner, mode, read_tuples, inner_range)?;
    let mut output = 0u64;
    let mut run: Vec<u64> = Vec::new();
    while let (Some(a), Some(b)) = (r.peek()?, s.peek()?) {
        if a.key < b.key {
            r.advance();
        } else if a.key > b.key {
            s.advance();
        } else {
            // The inner run of this key, then every outer tuple of it against the run.
            let key = a.key;
            run.clear();
            while let Some(t) = s.peek()?.filter(|t| t.key == key) {
                run.push(t.value);
                s.advance();
            }
            while let Some(t) = r.peek()?.filter(|t| t.key == key) {
                for &v in &run {
                    sink.emit(key, t.value, v)?;
                }
                output += run.len() as u64;
                r.advance();
            }
        }
    }
    Ok(JoinStats {
        outer_io: r.stats(),
        inner_io: s.stats(),
        lookups: 0,
        output,
        spilled_bytes: 0,
    })
}
