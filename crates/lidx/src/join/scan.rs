//! A sequential cursor over a table: large contiguous reads (the read size a parameter),
//! one tuple at a time to the join, every read counted.

use std::ops::Range;

use crate::Result;
use crate::storage::{BlockReader, IoStats, ReadMode, Table, Tuple};

/// Reads positions `start..end` of a table front to back in chunks of `chunk` tuples.
pub(crate) struct Scan<'t> {
    reader: BlockReader<'t>,
    /// One past the last position to read.
    n: u64,
    chunk: u64,
    /// The tuples of the current chunk and the position of its first.
    buf: Vec<Tuple>,
    start: u64,
    at: usize,
}

impl<'t> Scan<'t> {
    /// A cursor over positions `range` (clipped to the table); `chunk` is rounded up to
    /// whole blocks.
    pub(crate) fn new(
        table: &'t Table,
        mode: ReadMode,
        chunk: u64,
        range: Range<u64>,
    ) -> Result<Self> {
        let chunk = chunk
            .max(1)
            .next_multiple_of(crate::storage::TUPLES_PER_BLOCK);
        let end = range.end.min(table.len());
        Ok(Scan {
            reader: BlockReader::new(table, mode)?,
            n: end,
            chunk,
            buf: Vec::new(),
            start: range.start.min(end),
            at: 0,
        })
    }

    /// The tuple under the cursor, reading the next chunk when the current one is used up.
    #[inline]
    pub(crate) fn peek(&mut self) -> Result<Option<Tuple>> {
        if self.at >= self.buf.len() {
            let next = self.start + self.buf.len() as u64;
            if next >= self.n {
                return Ok(None);
            }
            let hi = (next + self.chunk).min(self.n);
            let run = self.reader.read_window(next, hi)?;
            // The run holds whole blocks; keep just positions next..hi.
            let skip = (next - run.first_position) as usize;
            let wanted = run
                .tuples
                .get(skip..skip + (hi - next) as usize)
                .unwrap_or_default();
            self.buf.clear();
            self.buf.extend_from_slice(wanted);
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

    /// I/O so far.
    pub(crate) fn stats(&self) -> IoStats {
        self.reader.stats()
    }
}
