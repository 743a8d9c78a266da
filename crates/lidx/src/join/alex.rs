//! Index nested loop join through ALEX on disk (paper 1, section 5.2: Fig. 5's ALEX row,
//! "the data nodes are stored as a contiguous file on disk, while the inner nodes are stored
//! in main memory"). The outer table is scanned with large sequential reads; each outer key
//! is looked up in the inner side's [`AlexFile`], which holds the inner table's tuples in
//! its data nodes, so the inner table itself is not read. Every page read is counted as the
//! inner side's I/O, and the reader keeps the last pages it read, as the other INLJs keep
//! their last window's blocks.
//!
//! It emits, in outer order, the multiset every join of lidx emits: a `(key, outer value,
//! inner value)` triple per pair of tuples with equal keys, the inner matches of a key in
//! the inner table's order. [`driver`](super::driver) runs it as `inlj:alex`: it builds or
//! checks the ALEX file first.

use super::scan::Scan;
use super::{JoinSink, JoinStats};
use crate::Result;
use crate::memory::MemoryBudget;
use crate::storage::{ReadMode, Table};
use crate::updatable::alex::file::{AlexFile, AlexReader};

/// Joins `outer` (any order) with the table whose ALEX file is `inner`, reading both with
/// `mode`, the outer `outer_read_tuples` tuples at a time; emits into `sink`.
pub fn inlj(
    outer: &Table,
    inner: &AlexFile,
    mode: ReadMode,
    outer_read_tuples: u64,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    // The scan's buffers are fixed and small, as the other INLJs' are.
    let unlimited = MemoryBudget::unlimited();
    let mut scan = Scan::new(outer, mode, outer_read_tuples, 0..outer.len(), &unlimited)?;
    let mut reader = AlexReader::new(inner, mode)?;
    let mut matches = Vec::new();
    let mut output = 0u64;
    while let Some(t) = scan.peek()? {
        scan.advance();
        matches.clear();
        reader.matches(t.key, |v| matches.push(v))?;
        for &v in &matches {
            sink.emit(t.key, t.value, v)?;
        }
        output += matches.len() as u64;
    }
    Ok(JoinStats {
        outer_io: scan.stats(),
        inner_io: reader.stats(),
        lookups: reader.lookups(),
        output,
        spilled_bytes: 0,
    })
}
