//! Block reads that count their I/O (paper 1, sections 4.1 and 4.2).
//!
//! A search window `lo..hi` of tuple positions is read as the run of whole data blocks that
//! covers it, with one `pread` into a reused buffer aligned to 4096 bytes, so the same code
//! serves buffered reads and `O_DIRECT` reads. A window whose blocks are all still in the
//! buffer costs no I/O (paper 1's internal buffer). Every read is counted in [`IoStats`],
//! and every block read is checked against its stored CRC32C unless the caller opts out:
//! the data blocks are read, checked and counted as the pages of the one paged-file reader
//! (`files::paged`), their CRCs apart from them in the table's checksum array.
#![deny(clippy::indexing_slicing)]

use std::fs::File;
use std::ops::Range;

pub use crate::files::IoStats;

use super::aligned::AlignedBuf;
use super::block_range::BlockRange;
use super::format::{BLOCK_SIZE, TUPLE_SIZE, TUPLES_PER_BLOCK, TableLayout, Tuple};
use super::queue::{IoBackend, ReadQueue};
use super::table::Table;
use crate::files::paged::{PageCrc, Pages};
use crate::last_mile::lower_bound;
use crate::{Error, Result};

/// Windows wider than this many blocks (128 KiB) are narrowed by an on-disk binary search
/// ([`BlockReader::lower_bound`]) instead of being read whole; only the binary-search
/// baseline's are, at the default settings of the INLJ and of lookup measurements.
pub const MAX_WINDOW_READ_BLOCKS: u64 = 32;

/// How a [`BlockReader`] reads the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// Through the OS page cache.
    Buffered,
    /// `O_DIRECT`: straight from the device into the aligned buffer, bypassing the page
    /// cache (paper 1 reads its inputs this way to measure cold I/O).
    Direct,
}

/// The tuples of the blocks that cover a window, as returned by [`BlockReader::read_window`].
#[derive(Clone, Copy, Debug)]
pub struct WindowRun<'a> {
    /// Table position of `tuples[0]`.
    pub first_position: u64,
    /// The tuples of whole blocks covering the window (clipped at the table's end): a
    /// superset of the window, starting at or before it.
    pub tuples: &'a [Tuple],
}

impl WindowRun<'_> {
    /// The positions `tuples` covers.
    pub fn positions(&self) -> Range<u64> {
        self.first_position..self.first_position + self.tuples.len() as u64
    }
}

/// Reads runs of blocks of one table, buffered or `O_DIRECT`, counting the I/O.
pub struct BlockReader<'t> {
    table: &'t Table,
    file: File,
    mode: ReadMode,
    buf: AlignedBuf,
    held: BlockRange,
    stats: IoStats,
    verify: bool,
    queue: Option<Box<ReadQueue>>,
}

impl<'t> BlockReader<'t> {
    /// A reader over `table` with its own handle to the table's file (the very file `table`
    /// opened, even if its path was renamed over since), opened for `mode`. Fails with
    /// [`Error::DirectUnsupported`] where the file system refuses `O_DIRECT`.
    pub fn new(table: &'t Table, mode: ReadMode) -> Result<Self> {
        table.require_pairs("reading windows of blocks")?;
        let file = crate::files::reopen(table.file(), table.path(), mode == ReadMode::Direct)?;
        Ok(Self {
            table,
            file,
            mode,
            buf: AlignedBuf::default(),
            held: BlockRange::default(),
            stats: IoStats::default(),
            verify: true,
            queue: None,
        })
    }

    /// A reader over `table` with `O_DIRECT` where its file system allows it, buffered
    /// otherwise; [`mode`](Self::mode) tells which.
    pub fn direct_or_buffered(table: &'t Table) -> Result<Self> {
        match Self::new(table, ReadMode::Direct) {
            Err(Error::DirectUnsupported { .. }) => Self::new(table, ReadMode::Buffered),
            reader => reader,
        }
    }

    /// Turns checksum checking of each block read on (the default) or off.
    pub fn set_verify_checksums(&mut self, verify: bool) {
        self.verify = verify;
    }

    /// The read mode.
    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    /// I/O counted since creation or the last [`reset_stats`](Self::reset_stats).
    pub fn stats(&self) -> IoStats {
        self.stats
    }

    /// Zeroes the counters.
    pub fn reset_stats(&mut self) {
        self.stats = IoStats::default();
    }

    /// Forgets what the buffer holds, so the next read goes to the file.
    pub fn clear_buffer(&mut self) {
        self.held = BlockRange::default();
    }

    /// Lets up to `depth` reads submitted by [`prefetch`](Self::prefetch) be in flight at
    /// once on `backend`; a depth of 0 or 1 turns read-ahead off.
    pub fn set_io_depth(&mut self, depth: usize, backend: IoBackend) -> Result<()> {
        self.queue = None;
        if depth > 1 {
            let path = self.table.path();
            let file = self
                .file
                .try_clone()
                .map_err(|e| Error::io(path, "open a second handle to", e))?;
            let queue = ReadQueue::new(file, depth, backend)
                .map_err(|e| Error::io(path, "set up deep reads of", e))?;
            self.queue = Some(Box::new(queue));
        }
        Ok(())
    }

    /// The backend keeping read-ahead in flight, if [`set_io_depth`](Self::set_io_depth)
    /// turned it on.
    pub fn io_backend(&self) -> Option<IoBackend> {
        self.queue.as_deref().map(ReadQueue::backend)
    }

    /// True when read-ahead is on and another read may be submitted.
    pub fn can_prefetch(&self) -> bool {
        self.queue.as_deref().is_some_and(ReadQueue::has_room)
    }

    /// Reads in flight.
    pub fn prefetching(&self) -> usize {
        self.queue.as_deref().map_or(0, ReadQueue::in_flight)
    }

    /// The blocks of the oldest read started by [`prefetch`](Self::prefetch) and not yet
    /// taken.
    pub fn next_prefetched(&self) -> Option<BlockRange> {
        self.queue.as_deref().and_then(ReadQueue::oldest)
    }

    /// True when the buffer holds the block of tuple position `pos`.
    pub fn holds(&self, pos: u64) -> bool {
        let block = pos / TUPLES_PER_BLOCK;
        self.held.count > 0 && self.held.first <= block && block < self.held.end()
    }

    /// Starts reading data blocks `range` in the background (counted now). The reads come
    /// back, oldest first, through [`take_prefetched`](Self::take_prefetched); the caller
    /// checks [`can_prefetch`](Self::can_prefetch) first.
    pub fn prefetch(&mut self, range: BlockRange) -> Result<()> {
        self.check_range(range)?;
        let len = range.count as usize * BLOCK_SIZE;
        let offset = TableLayout::data_block_offset(range.first);
        let Some(queue) = self.queue.as_mut().filter(|q| q.has_room()) else {
            return Err(Error::misuse(
                "BlockReader::prefetch",
                "no read-ahead slot is free (check can_prefetch first)",
            ));
        };
        queue
            .submit(range, offset, len)
            .map_err(|e| table_pages(self.table, &self.file, self.mode).read_error(e))?;
        self.stats += IoStats {
            blocks: range.count,
            bytes: len as u64,
            reads: 1,
            ..IoStats::default()
        };
        Ok(())
    }

    /// Waits for the oldest read started by [`prefetch`](Self::prefetch), checks its blocks
    /// and makes them the buffer's content (so windows inside them cost no further I/O).
    /// Where the read continues the blocks held (it starts at their end) and `keep_from` is
    /// one of them, the held blocks from `keep_from` on are kept in front of it, so a read
    /// of only the blocks past an earlier one serves windows that straddle both. Returns
    /// `false` when nothing was in flight.
    #[expect(
        clippy::indexing_slicing,
        reason = "the kept and new blocks lie within the buffer grown to hold both"
    )]
    pub fn take_prefetched(&mut self, keep_from: Option<u64>) -> Result<bool> {
        let Some(queue) = self.queue.as_mut() else {
            return Ok(false);
        };
        let Some(done) = queue.wait_oldest() else {
            return Ok(false);
        };
        let pages = table_pages(self.table, &self.file, self.mode);
        let (range, buf) = done.map_err(|e| pages.read_error(e))?;
        let len = range.count as usize * BLOCK_SIZE;
        if self.verify {
            pages.check(range.first, buf.get(len))?;
        }
        let held = self.held;
        let keep = match keep_from {
            Some(first)
                if held.end() == range.first && (held.first..held.end()).contains(&first) =>
            {
                (held.end() - first) as usize * BLOCK_SIZE
            }
            _ => 0,
        };
        if keep > 0 {
            // Move the kept blocks to the front and append the new ones after them.
            let from = held.count as usize * BLOCK_SIZE - keep;
            let all = (held.count as usize * BLOCK_SIZE).max(keep + len);
            self.buf.grow_preserving(all);
            let bytes = self.buf.get_mut(all);
            bytes.copy_within(from..from + keep, 0);
            bytes[keep..keep + len].copy_from_slice(buf.get(len));
            queue.recycle(buf);
            self.held = BlockRange {
                first: range.first - (keep / BLOCK_SIZE) as u64,
                count: range.count + (keep / BLOCK_SIZE) as u64,
            };
        } else {
            let old = std::mem::replace(&mut self.buf, buf);
            queue.recycle(old);
            self.held = range;
        }
        Ok(true)
    }

    /// Reads the blocks covering tuple positions `lo..hi` (half-open, `lo <= hi <= n`) as
    /// one contiguous read, unless the buffer already holds them all.
    #[expect(
        clippy::indexing_slicing,
        reason = "the window's blocks are held, so its bytes lie within the held blocks"
    )]
    pub fn read_window(&mut self, lo: u64, hi: u64) -> Result<WindowRun<'_>> {
        let n = self.table.len();
        if lo > hi || hi > n {
            return Err(Error::misuse(
                "BlockReader::read_window",
                format!("window {lo}..{hi} is not within the table's {n} positions"),
            ));
        }
        let range = BlockRange::for_window(lo, hi);
        if range.count == 0 {
            return Ok(WindowRun {
                first_position: lo,
                tuples: &[],
            });
        }
        if !self.held.contains(&range) {
            self.fill_missing(range)?;
        }
        let positions = range.positions(n);
        let skip = ((range.first - self.held.first) as usize) * BLOCK_SIZE;
        let len = (positions.end - positions.start) as usize * TUPLE_SIZE;
        let bytes = &self.buf.get(self.held.count as usize * BLOCK_SIZE)[skip..skip + len];
        Ok(WindowRun {
            first_position: positions.start,
            tuples: bytemuck::cast_slice(bytes),
        })
    }

    /// The lower bound of `key` (first position whose key is `>= key`) given that it lies in
    /// `lo..=hi` (an index's window, `hi <= n`), reading as little as it can: the window's
    /// blocks with one read when they are at most `max_blocks`, otherwise single blocks in a
    /// binary search until the rest fits (the binary-search baseline's on-disk path).
    pub fn lower_bound(&mut self, lo: u64, hi: u64, key: u64, max_blocks: u64) -> Result<u64> {
        let (mut lo, mut hi) = (lo, hi);
        while BlockRange::for_window(lo, hi).count > max_blocks.max(1) {
            let mid = lo + (hi - lo) / 2;
            let run = self.read_window(mid, mid + 1)?;
            let positions = run.positions();
            let (Some(first), Some(last)) = (run.tuples.first(), run.tuples.last()) else {
                break;
            };
            if last.key < key {
                lo = positions.end.min(hi);
            } else if first.key >= key {
                hi = positions.start.max(lo);
            } else {
                return Ok(positions.start + lower_bound(run.tuples, key, |t| t.key) as u64);
            }
        }
        let run = self.read_window(lo, hi)?;
        let skip = (lo - run.first_position) as usize;
        let inside = run
            .tuples
            .get(skip..skip + (hi - lo) as usize)
            .unwrap_or_default();
        Ok(lo + lower_bound(inside, key, |t| t.key) as u64)
    }

    /// Reads data blocks `range` into the buffer with one call and returns their bytes
    /// (padding of the last block included).
    pub fn read_blocks(&mut self, range: BlockRange) -> Result<&[u8]> {
        self.fill(range)?;
        Ok(self.buf.get(range.count as usize * BLOCK_SIZE))
    }

    /// Makes the buffer hold `range`, reading only the blocks it lacks when `range` starts
    /// inside the held blocks and runs past them (the overlap is moved to the buffer's
    /// front and the rest read after it): paper 1's "blocks already in the buffer are not
    /// read again" for windows that overlap the last one.
    #[expect(
        clippy::indexing_slicing,
        reason = "the held blocks and the range's blocks lie within the buffer's length"
    )]
    fn fill_missing(&mut self, range: BlockRange) -> Result<()> {
        let held = self.held;
        let overlaps = held.count > 0 && held.first <= range.first && range.first < held.end();
        let len = range.count as usize * BLOCK_SIZE;
        if !overlaps || len > self.buf.capacity() {
            return self.fill(range);
        }
        self.check_range(range)?;
        let keep = (held.end() - range.first) as usize * BLOCK_SIZE;
        let from = (range.first - held.first) as usize * BLOCK_SIZE;
        // The held blocks are in the buffer's first `held.count` blocks (within its length).
        let buf = self.buf.get_mut(len.max(held.count as usize * BLOCK_SIZE));
        buf.copy_within(from..from + keep, 0);
        let buf = &mut buf[..len];
        let missing = BlockRange {
            first: held.end(),
            count: range.end() - held.end(),
        };
        self.held = BlockRange::default();
        table_pages(self.table, &self.file, self.mode).read_into(
            missing.first,
            &mut buf[keep..],
            &mut self.stats,
            self.verify,
        )?;
        self.held = range;
        Ok(())
    }

    fn check_range(&self, range: BlockRange) -> Result<()> {
        let blocks = self.table.layout().data_blocks;
        if range
            .first
            .checked_add(range.count)
            .is_none_or(|end| end > blocks)
        {
            return Err(Error::misuse(
                "BlockReader",
                format!(
                    "blocks {}..{} are past the table's {blocks} data blocks",
                    range.first,
                    range.end()
                ),
            ));
        }
        Ok(())
    }

    fn fill(&mut self, range: BlockRange) -> Result<()> {
        self.check_range(range)?;
        let len = range.count as usize * BLOCK_SIZE;
        let buf = self.buf.get_mut(len);
        self.held = BlockRange::default();
        table_pages(self.table, &self.file, self.mode).read_into(
            range.first,
            buf,
            &mut self.stats,
            self.verify,
        )?;
        self.held = range;
        Ok(())
    }
}

/// The data blocks of `table` as pages of the one paged-file reader, read through `file`
/// (opened for `mode`): block `b` at [`TableLayout::data_block_offset`], its CRC32C the
/// table's checksum `b`, numbered `b` in errors.
fn table_pages<'a>(table: &'a Table, file: &'a File, mode: ReadMode) -> Pages<'a> {
    Pages {
        file,
        path: table.path(),
        start: TableLayout::data_block_offset(0),
        count: table.layout().data_blocks,
        block_base: 0,
        crc: PageCrc::Apart(table.checksums()),
        direct: mode == ReadMode::Direct,
    }
}
