//! A sequential cursor over a table: large contiguous reads (the read size a parameter),
//! one tuple at a time to the join, every read counted.
//!
//! Double buffering: a scan longer than two chunks reads ahead on a thread of its own, so the
//! next chunk is on its way from the device while the join works through the current one.
//! At most one chunk waits ahead (a channel of one), and the reader stops when the scan is
//! dropped. Its reads are counted as they happen, so the statistics include any chunk read
//! ahead that the join, stopping early, never used.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use crate::memory::{MemoryBudget, Reservation};
use crate::storage::{BlockReader, IoStats, ReadMode, TUPLE_SIZE, TUPLES_PER_BLOCK, Table, Tuple};
use crate::{Error, Result};

/// Bytes a scan reading `chunk` tuples per call holds at most, reserved from the join's
/// budget: four chunks (the reader's block buffer, the chunk it is filling, the one waiting
/// in the channel, the one the join works through), each rounded up to whole blocks.
pub(crate) fn buffer_bytes(chunk: u64) -> u64 {
    4 * whole_blocks(chunk) * TUPLE_SIZE as u64
}

/// `chunk` rounded up to whole blocks (at least one).
fn whole_blocks(chunk: u64) -> u64 {
    chunk.max(1).next_multiple_of(TUPLES_PER_BLOCK)
}

/// One chunk read ahead: its first position and its tuples.
type Chunk = Result<(u64, Vec<Tuple>)>;

/// I/O counters a read-ahead thread updates as it reads.
#[derive(Default)]
struct SharedStats {
    blocks: AtomicU64,
    bytes: AtomicU64,
    reads: AtomicU64,
}

/// Where the chunks come from.
enum Source<'t> {
    /// Read on the join's thread.
    Inline(BlockReader<'t>),
    /// Read ahead by a reader thread.
    Ahead(Receiver<Chunk>, Arc<SharedStats>),
}

/// Reads positions `start..end` of a table front to back in chunks of `chunk` tuples.
pub(crate) struct Scan<'t> {
    source: Source<'t>,
    /// One past the last position to read.
    n: u64,
    chunk: u64,
    /// The tuples of the current chunk and the position of its first.
    buf: Vec<Tuple>,
    start: u64,
    at: usize,
    _memory: Reservation,
}

/// Reads positions `lo..hi` of `reader`'s table: the tuples of exactly those positions.
fn read_chunk(reader: &mut BlockReader<'_>, lo: u64, hi: u64) -> Result<Vec<Tuple>> {
    let run = reader.read_window(lo, hi)?;
    // The run holds whole blocks; keep just positions lo..hi.
    let skip = (lo - run.first_position) as usize;
    Ok(run
        .tuples
        .get(skip..skip + (hi - lo) as usize)
        .unwrap_or_default()
        .to_vec())
}

/// Reads `range` of `table` in chunks of `chunk` tuples into `tx`, counting into `stats`,
/// until the end or until the receiving scan is gone.
fn read_ahead(
    table: Table,
    mode: ReadMode,
    chunk: u64,
    range: Range<u64>,
    tx: SyncSender<Chunk>,
    stats: Arc<SharedStats>,
) {
    let mut reader = match BlockReader::new(&table, mode) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let mut next = range.start;
    while next < range.end {
        let hi = (next + chunk).min(range.end);
        let before = reader.stats();
        let item = read_chunk(&mut reader, next, hi).map(|t| (next, t));
        let after = reader.stats();
        stats
            .blocks
            .fetch_add(after.blocks - before.blocks, Ordering::Relaxed);
        stats
            .bytes
            .fetch_add(after.bytes - before.bytes, Ordering::Relaxed);
        stats
            .reads
            .fetch_add(after.reads - before.reads, Ordering::Relaxed);
        let failed = item.is_err();
        if tx.send(item).is_err() || failed {
            return;
        }
        next = hi;
    }
}

impl<'t> Scan<'t> {
    /// A cursor over positions `range` (clipped to the table); `chunk` is rounded up to
    /// whole blocks. Its buffers ([`buffer_bytes`]) are reserved from `budget`.
    pub(crate) fn new(
        table: &'t Table,
        mode: ReadMode,
        chunk: u64,
        range: Range<u64>,
        budget: &MemoryBudget,
    ) -> Result<Self> {
        let memory = budget.reserve(
            buffer_bytes(chunk),
            format!("the read buffers of a scan of {}", table.path().display()),
        )?;
        let chunk = whole_blocks(chunk);
        let end = range.end.min(table.len());
        let start = range.start.min(end);
        // Made here in either case, so refusals (O_DIRECT, a join output) surface at once.
        let reader = BlockReader::new(table, mode)?;
        let source = if end - start > 2 * chunk {
            drop(reader);
            let (tx, rx) = sync_channel(1);
            let owned = table.try_clone()?;
            let shared = Arc::new(SharedStats::default());
            let counters = Arc::clone(&shared);
            std::thread::spawn(move || read_ahead(owned, mode, chunk, start..end, tx, counters));
            Source::Ahead(rx, shared)
        } else {
            Source::Inline(reader)
        };
        Ok(Scan {
            source,
            n: end,
            chunk,
            buf: Vec::new(),
            start,
            at: 0,
            _memory: memory,
        })
    }

    /// The tuple under the cursor, reading (or receiving) the next chunk when the current
    /// one is used up.
    #[inline]
    pub(crate) fn peek(&mut self) -> Result<Option<Tuple>> {
        if self.at >= self.buf.len() {
            let next = self.start + self.buf.len() as u64;
            if next >= self.n {
                return Ok(None);
            }
            self.buf = match &mut self.source {
                Source::Inline(reader) => {
                    read_chunk(reader, next, (next + self.chunk).min(self.n))?
                }
                Source::Ahead(rx, _) => {
                    // The reader sends every error it meets, so a closed channel means it
                    // panicked.
                    let (first, tuples) = rx
                        .recv()
                        .map_err(|_| Error::ThreadPanicked { what: "read-ahead" })??;
                    debug_assert_eq!(first, next);
                    tuples
                }
            };
            self.start = next;
            self.at = 0;
        }
        Ok(self.buf.get(self.at).copied())
    }

    /// Moves past the tuple under the cursor.
    #[inline]
    pub(crate) fn advance(&mut self) {
        self.at += 1;
    }

    /// I/O so far (reads ahead included).
    pub(crate) fn stats(&self) -> IoStats {
        match &self.source {
            Source::Inline(reader) => reader.stats(),
            Source::Ahead(_, shared) => IoStats {
                blocks: shared.blocks.load(Ordering::Relaxed),
                bytes: shared.bytes.load(Ordering::Relaxed),
                reads: shared.reads.load(Ordering::Relaxed),
                ..IoStats::default()
            },
        }
    }
}
