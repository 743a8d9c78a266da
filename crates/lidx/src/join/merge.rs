//! Sort-merge join of two sorted tables (paper 1, section 4.3, "sort join"; the sort phase
//! is skipped because both inputs are sorted): two cursors with large sequential reads,
//! advancing the smaller key; equal runs give their cross product. Both scans' read buffers
//! and the run of equal inner keys held for the cross product are reserved from a
//! [`MemoryBudget`].

use std::ops::Range;

use super::scan::Scan;
use super::{JoinSink, JoinStats};
use crate::Result;
use crate::memory::MemoryBudget;
use crate::storage::{ReadMode, Table};

/// Joins sorted `outer` and `inner`, reading each in chunks of `read_tuples` tuples, its
/// buffers reserved from `budget`.
pub fn merge_join(
    outer: &Table,
    inner: &Table,
    mode: ReadMode,
    read_tuples: u64,
    budget: &MemoryBudget,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    merge_join_ranges(
        outer,
        0..outer.len(),
        inner,
        0..inner.len(),
        mode,
        read_tuples,
        budget,
        sink,
    )
}

/// [`merge_join`] of outer positions `outer_range` with inner positions `inner_range` (a
/// thread's share; see [`parallel`](super::parallel)).
#[expect(
    clippy::too_many_arguments,
    reason = "two tables with their ranges, how to read them, the budget and the sink"
)]
pub fn merge_join_ranges(
    outer: &Table,
    outer_range: Range<u64>,
    inner: &Table,
    inner_range: Range<u64>,
    mode: ReadMode,
    read_tuples: u64,
    budget: &MemoryBudget,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    outer.require_sorted("a sort-merge join")?;
    inner.require_sorted("a sort-merge join")?;
    let mut r = Scan::new(outer, mode, read_tuples, outer_range, budget)?;
    let mut s = Scan::new(inner, mode, read_tuples, inner_range, budget)?;
    let mut output = 0u64;
    let mut run: Vec<u64> = Vec::new();
    let mut run_memory = budget.reserve(0, "the values of a run of equal inner keys")?;
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
                if run.len() == run.capacity() {
                    // Reserve before the vector doubles.
                    let grown = (2 * run.capacity()).max(4) as u64 * 8;
                    run_memory.resize(grown)?;
                    run.reserve_exact(grown as usize / 8 - run.len());
                }
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
