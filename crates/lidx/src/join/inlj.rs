//! Index nested loop join (paper 1, sections 3 and 4.3): the outer table is scanned with
//! large sequential reads; for each outer key the inner table's index gives a window,
//! whose blocks are read with one contiguous read (unless the buffer holds them), a
//! last-mile search finds the first match, and the run of equal inner keys is
//! emitted, reading on past the window's end where it continues.
//!
//! Paper 1's two optimizations are switchable for every index kind: [`InljOptions::cursor`]
//! moves along the index's lowest level from the previous key instead of searching from the
//! root, and [`InljOptions::monotone`] starts each search no earlier than the previous match
//! and does not read again blocks still in the buffer (without it, every lookup reads its
//! window afresh).
//!
//! Beyond the paper, [`InljOptions::io_depth`] keeps the reads of the next windows in flight
//! at once: the index gives every window without touching the disk, so the join plans the
//! outer keys ahead, starts the reads of their windows (each window's blocks once, however
//! many keys fall in them), and works through the keys in order as the reads come back, so
//! the output stays in key order.

use std::ops::Range;

use super::scan::Scan;
use super::{JoinSink, JoinStats};
use crate::index::{AnyIndex, Index, Window, with_index};
use crate::memory::MemoryBudget;
use crate::storage::{
    BlockRange, BlockReader, IoBackend, IoStats, MAX_WINDOW_READ_BLOCKS, ReadMode, Table, Tuple,
};
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
    /// Reads of windows kept in flight at once (1: one at a time, as in paper 1).
    pub io_depth: usize,
    /// What keeps those reads in flight when `io_depth > 1`.
    pub io_backend: IoBackend,
}

impl Default for InljOptions {
    fn default() -> Self {
        Self {
            mode: ReadMode::Direct,
            outer_read_tuples: 1 << 16,
            cursor: true,
            monotone: true,
            max_window_blocks: MAX_WINDOW_READ_BLOCKS,
            io_depth: 1,
            io_backend: IoBackend::Auto,
        }
    }
}

/// Outer keys planned ahead per read in flight, bounding the plan where many keys share
/// one window's blocks.
const PLANNED_PER_READ: usize = 256;

/// What became of the read of a planned key's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WindowRead {
    /// None was started (its blocks were on their way already, the queue was full, or the
    /// window is too wide to read whole): the key reads what it needs when it comes.
    NotStarted,
    /// A read of the window's blocks is in flight.
    Whole,
    /// A read of only the blocks past those already on their way is in flight; when it
    /// arrives, the held blocks from `keep_from` on stay in front of it.
    Continuing {
        /// The window's first block.
        keep_from: u64,
    },
    /// Its read was taken early, for an earlier key whose matches ran into its blocks.
    TakenEarly,
}

impl WindowRead {
    /// True while the read is in flight and not yet taken.
    fn pending(self) -> bool {
        matches!(self, WindowRead::Whole | WindowRead::Continuing { .. })
    }

    /// The blocks to keep in front of the read when it is taken.
    fn keep_from(self) -> Option<u64> {
        match self {
            WindowRead::Continuing { keep_from } => Some(keep_from),
            _ => None,
        }
    }
}

/// An outer tuple whose window is known and whose read may be in flight.
#[derive(Clone, Copy)]
struct Planned {
    tuple: Tuple,
    window: Window,
    read: WindowRead,
}

/// The outer keys planned ahead of the join (one at a time at depth 1), their windows taken
/// from the index alone, with the reads of their windows started while the queue has room.
struct Plan {
    /// Keys planned ahead are `keys[next..]`; the vector is emptied whenever all are done
    /// (cheaper than a ring buffer for the one-key plan of depth 1).
    keys: Vec<Planned>,
    next: usize,
    /// Most keys planned ahead.
    lookahead: usize,
    /// The blocks the buffer will hold once the reads started so far have arrived.
    covered: BlockRange,
    /// The index's cursor (paper 1's first optimization).
    hint: usize,
    /// Index searches so far.
    lookups: u64,
}

impl Plan {
    fn new(io_depth: usize) -> Self {
        let lookahead = if io_depth > 1 {
            io_depth.saturating_mul(PLANNED_PER_READ)
        } else {
            1
        };
        Plan {
            keys: Vec::with_capacity(lookahead.min(1 << 16)),
            next: 0,
            lookahead,
            covered: BlockRange::default(),
            hint: 0,
            lookups: 0,
        }
    }

    /// Plans outer keys ahead until the plan is full, the queue has no room, or the outer
    /// table ends; starts the reads of their windows (blocks already on their way by an
    /// earlier key's read are not read again).
    fn fill<I: Index>(
        &mut self,
        outer: &mut impl OuterTuples,
        reader: &mut BlockReader<'_>,
        index: &I,
        opts: &InljOptions,
        n: u64,
    ) -> Result<()> {
        if self.next == self.keys.len() {
            self.keys.clear();
            self.next = 0;
        }
        while self.keys.len() - self.next < self.lookahead
            && (self.next == self.keys.len() || reader.can_prefetch())
        {
            let Some(tuple) = outer.peek()? else {
                break;
            };
            outer.advance();
            let window = if opts.cursor {
                index.search_from(tuple.key, &mut self.hint)
            } else {
                index.search(tuple.key)
            };
            self.lookups += 1;
            let read = self.start_read(reader, window, opts, n)?;
            self.keys.push(Planned {
                tuple,
                window,
                read,
            });
        }
        Ok(())
    }

    /// Starts the read of `window`'s blocks (of its first position, if empty) where the
    /// queue has room and the window is narrow enough. A match just past them (at `hi`,
    /// where the window ends on a block boundary) is usually in the next key's read, taken
    /// early; otherwise it is read when needed.
    fn start_read(
        &mut self,
        reader: &mut BlockReader<'_>,
        window: Window,
        opts: &InljOptions,
        n: u64,
    ) -> Result<WindowRead> {
        let blocks = BlockRange::for_window(window.lo, window.hi.max(window.lo + 1).min(n));
        let covered = self.covered;
        if !reader.can_prefetch()
            || blocks.count == 0
            || blocks.count > opts.max_window_blocks
            || (opts.monotone && covered.contains(&blocks))
        {
            return Ok(WindowRead::NotStarted);
        }
        self.covered = blocks;
        // With monotone windows, blocks an earlier read brings are not read again: a window
        // that starts inside them reads only the blocks past them.
        if opts.monotone && covered.first <= blocks.first && blocks.first < covered.end() {
            reader.prefetch(BlockRange {
                first: covered.end(),
                count: blocks.end() - covered.end(),
            })?;
            Ok(WindowRead::Continuing {
                keep_from: blocks.first,
            })
        } else {
            reader.prefetch(blocks)?;
            Ok(WindowRead::Whole)
        }
    }

    /// The next planned key, if any.
    fn pop(&mut self) -> Option<Planned> {
        let key = self.keys.get(self.next).copied()?;
        self.next += 1;
        Some(key)
    }

    /// Where the block of position `pos` is on its way in the oldest read in flight, takes
    /// that read now (for the later key it was started for) instead of reading the block
    /// again.
    fn take_early(&mut self, reader: &mut BlockReader<'_>, pos: u64) -> Result<()> {
        let block = BlockRange::for_window(pos, pos + 1);
        if !reader.next_prefetched().is_some_and(|r| r.contains(&block)) {
            return Ok(());
        }
        let later = self.keys.get_mut(self.next..).unwrap_or_default();
        if let Some(owner) = later.iter_mut().find(|p| p.read.pending()) {
            reader.take_prefetched(owner.read.keep_from())?;
            owner.read = WindowRead::TakenEarly;
        }
        Ok(())
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
    check_inner(inner, index)?;
    if opts.monotone {
        outer
            .require_sorted("an index nested loop join with monotone windows (its outer table)")?;
    }
    // The INLJ's buffers are fixed and small (the outer scan's chunks, one window per read
    // in flight), so they are counted against no limit.
    let unlimited = MemoryBudget::unlimited();
    let mut outer_scan = Scan::new(
        outer,
        opts.mode,
        opts.outer_read_tuples,
        outer_range,
        &unlimited,
    )?;
    let mut stats = join_outer(&mut outer_scan, inner, index, opts, sink)?;
    stats.outer_io = outer_scan.stats();
    Ok(stats)
}

/// [`inlj`] of outer tuples held in memory (a query engine's batch, say) through an index
/// of any kind: the same windows, reads and output as [`inlj`] over a table of these
/// tuples, with no outer I/O. With [`InljOptions::monotone`], `outer` must be in key
/// order ([`Error::Param`] otherwise); each call reads its windows afresh.
pub fn inlj_tuples(
    outer: &[Tuple],
    inner: &Table,
    index: &AnyIndex,
    opts: &InljOptions,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    if opts.monotone && !outer.is_sorted_by_key(|t| t.key) {
        return Err(Error::param(
            "outer tuples",
            "an index nested loop join with monotone windows needs them in key order",
        ));
    }
    with_index!(index, i => {
        check_inner(inner, i)?;
        join_outer(&mut InMemory { tuples: outer, at: 0 }, inner, i, opts, sink)
    })
}

/// Refuses an inner table that is not sorted or that `index` was not built on.
fn check_inner<I: Index>(inner: &Table, index: &I) -> Result<()> {
    inner.require_sorted("an index nested loop join (its inner table)")?;
    let n = inner.len();
    if index.len() != n {
        return Err(Error::IndexMismatch {
            path: inner.path().to_path_buf(),
            problem: format!(
                "the index indexes {} keys, but the table holds {n}; it was built for another table",
                index.len()
            ),
        });
    }
    Ok(())
}

/// The outer side of an index nested loop join: its tuples front to back.
pub(crate) trait OuterTuples {
    /// The tuple under the cursor; `None` at the end.
    fn peek(&mut self) -> Result<Option<Tuple>>;
    /// Moves past the tuple under the cursor.
    fn advance(&mut self);
}

impl OuterTuples for Scan<'_> {
    #[inline]
    fn peek(&mut self) -> Result<Option<Tuple>> {
        Scan::peek(self)
    }

    #[inline]
    fn advance(&mut self) {
        Scan::advance(self)
    }
}

/// Outer tuples already in memory.
struct InMemory<'a> {
    tuples: &'a [Tuple],
    at: usize,
}

impl OuterTuples for InMemory<'_> {
    #[inline]
    fn peek(&mut self) -> Result<Option<Tuple>> {
        Ok(self.tuples.get(self.at).copied())
    }

    #[inline]
    fn advance(&mut self) {
        self.at += 1;
    }
}

/// The join itself, once the inputs are checked: every outer tuple's window planned and
/// read, its matches emitted. The outer side's I/O is its caller's to count.
fn join_outer<I: Index>(
    outer: &mut impl OuterTuples,
    inner: &Table,
    index: &I,
    opts: &InljOptions,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    let n = inner.len();
    let distinct = inner.header().distinct;
    let mut reader = BlockReader::new(inner, opts.mode)?;
    reader.set_io_depth(opts.io_depth, opts.io_backend)?;
    let mut plan = Plan::new(opts.io_depth);
    let (mut output, mut floor) = (0u64, 0u64);
    loop {
        plan.fill(outer, &mut reader, index, opts, n)?;
        let Some(Planned {
            tuple: t,
            window: mut w,
            read,
        }) = plan.pop()
        else {
            break;
        };
        let key = t.key;
        if opts.monotone {
            // The previous key's answer bounds this one's from below (outer keys ascend).
            w.lo = w.lo.max(floor).min(w.hi);
        } else {
            reader.clear_buffer();
        }
        if read.pending() {
            reader.take_prefetched(read.keep_from())?;
        }
        let mut pos = reader.lower_bound(w.lo, w.hi, key, opts.max_window_blocks)?;
        floor = pos;
        // Emit the run of equal inner keys, block by block.
        while pos < n {
            if !reader.holds(pos) {
                plan.take_early(&mut reader, pos)?;
            }
            let run = reader.read_window(pos, pos + 1)?;
            let from = (pos - run.first_position) as usize;
            let rest = run.tuples.get(from..).unwrap_or_default();
            let matched = rest.iter().take_while(|u| u.key == key).count();
            for u in &rest[..matched] {
                sink.emit(key, t.value, u.value)?;
            }
            pos += matched as u64;
            output += matched as u64;
            // A distinct inner table has at most one match: no need to look past it (which
            // could read the next block only to find another key).
            if matched < rest.len() || (distinct && matched > 0) {
                break;
            }
        }
    }
    Ok(JoinStats {
        outer_io: IoStats::default(),
        inner_io: reader.stats(),
        lookups: plan.lookups,
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
    with_index!(index, i => inlj_range(outer, outer_range, inner, i, opts, sink))
}
