//! Gets and scans through any layout, block by block through the shared [`BlockCache`],
//! counting what each operation reads (paper 4, section 5 argues in index and data blocks
//! read; paper 2, section 3 in reads per layer). Each layout (in
//! [`layout`](super::layout)) finds a key's block or page through the reads this module
//! offers: single blocks with prefetch, windows of pages, byte ranges through the cache's
//! pages, each counted by kind and level.
//!
//! A [`Reader`] belongs to one thread; any number share a [`KvFile`] and a cache.
#![deny(clippy::indexing_slicing)]

use std::sync::Arc;

use super::block::{Block, BlockProblem, PinnedValue};
use super::file::SEPARATOR_INDEX_VERSION;
use super::file::{Handle, KvFile};
use super::index_block::IndexBlock;
use super::layout::open_page;
use crate::storage::IoStats;
use crate::storage::cache::{BlockCache, CacheKey};
use crate::storage::paged::PagedReads;
use crate::storage::profile::LatencyModel;
use crate::{Error, Result};

/// What a reader did, summed over the operations since it was made or last reset: the one
/// I/O counter, and the key-value file's blocks by kind and read calls by level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct OpStats {
    /// Data blocks read from the file (prefetched ones included).
    pub data_block_reads: u64,
    /// Level-1 index blocks read from the file.
    pub index_block_reads: u64,
    /// Read calls, the bytes they read (whole pages with `O_DIRECT`) and the 4096-byte
    /// pages they covered; blocks found in the cache and not; the time the reads took under
    /// the reader's latency model, nanoseconds (0 without one).
    pub io: IoStats,
    /// Read calls by level: `[0]` data blocks or pages; `[i]` layer `i` of the tuned
    /// layout, level `i` of the B+tree's nodes, or (`[1]`) the SSTable's level-1 blocks;
    /// the last counts every level from there up.
    pub reads_by_level: [u64; LEVELS],
}

/// Levels [`OpStats::reads_by_level`] tells apart.
pub const LEVELS: usize = 8;

impl OpStats {
    /// What happened between `earlier` (a snapshot of the same reader) and `self`.
    pub fn since(&self, earlier: &OpStats) -> OpStats {
        OpStats {
            data_block_reads: self.data_block_reads - earlier.data_block_reads,
            index_block_reads: self.index_block_reads - earlier.index_block_reads,
            io: self.io.since(&earlier.io),
            reads_by_level: {
                let mut by_level = self.reads_by_level;
                for (a, b) in by_level.iter_mut().zip(earlier.reads_by_level) {
                    *a -= b;
                }
                by_level
            },
        }
    }
}

impl std::ops::AddAssign for OpStats {
    fn add_assign(&mut self, o: OpStats) {
        self.data_block_reads += o.data_block_reads;
        self.index_block_reads += o.index_block_reads;
        self.io += o.io;
        for (a, b) in self.reads_by_level.iter_mut().zip(o.reads_by_level) {
            *a += b;
        }
    }
}

/// What a read fetches, for the counters.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Data blocks or pages.
    Data,
    /// Index blocks: level-1 blocks, layer pieces, nodes.
    Index,
}

/// Reads records of one file through a cache, for one thread.
pub struct Reader<'a> {
    file: &'a KvFile,
    cache: &'a BlockCache,
    io: PagedReads,
    /// Bytes of the pages a batch read, reused.
    batch: Vec<u8>,
    prefetch: bool,
    /// A data block read ahead by a scan, by offset.
    prefetched: Option<(u64, Arc<Block>)>,
    stats: OpStats,
    /// The level the reads under way belong to (`None`: data 0, index 1).
    level: Option<usize>,
}

impl<'a> Reader<'a> {
    /// A reader of `file` through `cache`.
    pub fn new(file: &'a KvFile, cache: &'a BlockCache) -> Reader<'a> {
        Reader {
            file,
            cache,
            io: PagedReads::default(),
            batch: Vec::new(),
            prefetch: false,
            prefetched: None,
            stats: OpStats::default(),
            level: None,
        }
    }

    /// Makes every read from the file take as long as `model` says (none: as long as the
    /// local file takes); the modelled time is counted in [`OpStats::io`].
    pub fn set_latency(&mut self, model: Option<LatencyModel>) {
        self.io.set_latency(model);
    }

    /// Scans read the next data block along with the one they need, in the same read,
    /// when the two lie side by side (they always do in one file), and keep it for the
    /// next step (and in the cache).
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch = on;
    }

    /// What this reader did so far.
    pub fn stats(&self) -> OpStats {
        self.stats
    }

    /// Sets the counters back to 0.
    pub fn reset_stats(&mut self) {
        self.stats = OpStats::default();
    }

    /// The value of `key` into `value` (cleared first); `false` when the file lacks it.
    pub fn get_into(&mut self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        value.clear();
        let found = self.get_pinned(key)?;
        if let Some(v) = &found {
            value.extend_from_slice(v);
        }
        Ok(found.is_some())
    }

    /// The value of `key`, if the file holds it, borrowed from its block with no copy
    /// (the block stays in memory while the value lives).
    pub fn get_pinned(&mut self, key: &[u8]) -> Result<Option<PinnedValue>> {
        let file = self.file;
        Ok(file
            .meta
            .locate(self, key)?
            .and_then(|block| PinnedValue::find(block, key)))
    }

    /// The value of `key`, if the file holds it.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        Ok(self.get_into(key, &mut value)?.then_some(value))
    }

    /// The `n` pages (of a tuned or B+tree layout) from page `start`, decoded: those the
    /// cache holds from it, the others read in one batch (each run of missing pages one
    /// call, all in flight together), counted as blocks of `kind`, and kept.
    pub(crate) fn read_pages(&mut self, start: u64, n: u64, kind: Kind) -> Result<Vec<Arc<Block>>> {
        self.read_window(start, n, kind, true)
    }

    /// Page `p` (of a tuned or B+tree layout), decoded: from the cache when it holds it
    /// (no allocation: the warm path of every get), else read as
    /// [`read_pages`](Self::read_pages) reads it.
    pub(crate) fn read_page(&mut self, p: u64, kind: Kind) -> Result<Arc<Block>> {
        if let Some(page) = self.cached_page(p) {
            return Ok(page);
        }
        let mut pages = self.fill_window(p, vec![None], kind, true)?;
        pages
            .pop()
            .ok_or_else(|| self.file.corrupt(format!("page {p} could not be read")))
    }

    /// Keeps page `p` in the cache.
    pub(crate) fn keep_page(&self, p: u64, page: &Arc<Block>) {
        let key = CacheKey::Block {
            file: self.file.id(),
            offset: p * self.file.footer().block_size,
        };
        self.cache
            .insert_decoded(key, Arc::clone(page), page.body_bytes() as u64);
    }

    /// [`read_pages`](Self::read_pages), keeping the pages read in the cache only when
    /// `keep`.
    fn read_window(
        &mut self,
        start: u64,
        n: u64,
        kind: Kind,
        keep: bool,
    ) -> Result<Vec<Arc<Block>>> {
        let pages = self.cached_pages(start, n);
        self.fill_window(start, pages, kind, keep)
    }

    /// Pages `start .. start + n` as the cache holds them (counting hits and misses).
    pub(crate) fn cached_pages(&mut self, start: u64, n: u64) -> Vec<Option<Arc<Block>>> {
        (start..start + n).map(|p| self.cached_page(p)).collect()
    }

    /// Page `p` if the cache holds it (counting a hit or a miss).
    pub(crate) fn cached_page(&mut self, p: u64) -> Option<Arc<Block>> {
        let file = self.file;
        let cached = self.cache.get_decoded::<Block>(CacheKey::Block {
            file: file.id(),
            offset: p * file.footer().block_size,
        });
        match cached {
            Some(_) => self.stats.io.cache_hits += 1,
            None => self.stats.io.cache_misses += 1,
        }
        cached
    }

    /// The pages from `start`, `pages` holding those already at hand: the others read in
    /// one batch, counted as blocks of `kind`, and kept in the cache when `keep`.
    #[expect(
        clippy::indexing_slicing,
        reason = "every missing page is one of the window's pages"
    )]
    pub(crate) fn fill_window(
        &mut self,
        start: u64,
        mut pages: Vec<Option<Arc<Block>>>,
        kind: Kind,
        keep: bool,
    ) -> Result<Vec<Arc<Block>>> {
        let file = self.file;
        let page = file.footer().block_size;
        let key = |p: u64| CacheKey::Block {
            file: file.id(),
            offset: p * page,
        };
        // Runs of missing pages, as (first page, pages).
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (i, _) in pages.iter().enumerate().filter(|(_, b)| b.is_none()) {
            let p = start + i as u64;
            match runs.last_mut() {
                Some((first, count)) if *first + *count == p => *count += 1,
                _ => runs.push((p, 1)),
            }
        }
        if !runs.is_empty() {
            let byte_runs: Vec<(u64, u64)> =
                runs.iter().map(|&(p, c)| (p * page, c * page)).collect();
            let before = self.io.counts();
            let mut bytes = std::mem::take(&mut self.batch);
            bytes.clear();
            self.io.read_batch(file.paged(), &byte_runs, &mut bytes)?;
            let missing = runs.iter().map(|r| r.1).sum();
            self.count(before, kind, missing);
            let mut raw = bytes.chunks_exact(page as usize);
            for &(first, count) in &runs {
                for p in first..first + count {
                    let h = Handle {
                        offset: p * page,
                        size: page,
                    };
                    let block = Arc::new(
                        raw.next()
                            .ok_or_else(|| {
                                problem(file, h, BlockProblem::Malformed("a short page"))
                            })
                            .and_then(|r| open_page(r).map_err(|e| problem(file, h, e)))?,
                    );
                    if keep {
                        let bytes = block.body_bytes() as u64;
                        match kind {
                            Kind::Index => {
                                self.cache.insert_index(key(p), Arc::clone(&block), bytes)
                            }
                            Kind::Data => {
                                self.cache.insert_decoded(key(p), Arc::clone(&block), bytes)
                            }
                        }
                    }
                    pages[(p - start) as usize] = Some(block);
                }
            }
            self.batch = bytes;
        }
        Ok(pages.into_iter().flatten().collect())
    }

    /// Visits up to `rows` records in key order from the first key at least `from`;
    /// returns how many it visited.
    pub fn scan(
        &mut self,
        from: &[u8],
        rows: usize,
        mut visit: impl FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        if rows == 0 {
            return Ok(0);
        }
        let mut left = rows;
        let mut emit = |block: &Block| {
            for i in block.lower_bound(from)..block.len() {
                if left == 0 {
                    break;
                }
                let (k, v) = block.record(i);
                visit(k, v);
                left -= 1;
            }
            left > 0
        };
        let file = self.file;
        file.meta.scan(self, from, &mut emit)?;
        Ok(rows - left)
    }

    /// Every data block's handle in file order (reads the level-1 blocks of an SSTable).
    pub fn data_handles(&mut self) -> Result<Vec<Handle>> {
        let file = self.file;
        file.meta.data_handles(self)
    }

    /// The file it reads.
    pub(crate) fn file(&self) -> &'a KvFile {
        self.file
    }

    /// Counts the reads from now on at `level` (`None`: data 0, index 1).
    pub(crate) fn set_level(&mut self, level: Option<usize>) {
        self.level = level;
    }

    /// Whether scans read the next block along with the one they need.
    pub(crate) fn prefetching(&self) -> bool {
        self.prefetch
    }

    /// Reads and decodes a data block, without the cache (for checks of the whole file).
    pub fn read_data_block(&mut self, h: Handle) -> Result<Block> {
        let bytes = self.read(h.offset, h.size, Kind::Data, 1)?;
        Block::open(bytes).map_err(|p| problem(self.file, h, p))
    }

    /// The SSTable's level-1 block at `h`, checked whole, from the cache or the file (and
    /// kept in the cache ahead of data blocks, as RocksDB keeps index blocks at high
    /// priority). Blocks of files before version 3, records of last keys and handles, are
    /// read into the same form.
    pub fn level1_block(&mut self, h: Handle) -> Result<Arc<IndexBlock>> {
        let key = CacheKey::Block {
            file: self.file.id(),
            offset: h.offset,
        };
        if let Some(block) = self.cache.get_decoded::<IndexBlock>(key) {
            self.stats.io.cache_hits += 1;
            return Ok(block);
        }
        self.stats.io.cache_misses += 1;
        let file = self.file;
        let footer = file.footer();
        let bytes = self.read(h.offset, h.size, Kind::Index, 1)?;
        let block = match footer.version >= SEPARATOR_INDEX_VERSION {
            true => IndexBlock::open(bytes, footer.data_bytes),
            false => {
                Block::open(bytes).and_then(|b| IndexBlock::from_records(&b, footer.data_bytes))
            }
        };
        let block = Arc::new(block.map_err(|p| problem(file, h, p))?);
        self.cache
            .insert_index(key, Arc::clone(&block), block.body_bytes() as u64);
        Ok(block)
    }

    /// The block at `h`, from the prefetched one, the cache or the file; `next`, when
    /// prefetching and it follows `h` on disk, is read in the same call and kept.
    pub(crate) fn block(
        &mut self,
        h: Handle,
        kind: Kind,
        next: Option<Handle>,
    ) -> Result<Arc<Block>> {
        if let Some((offset, block)) = self.prefetched.take()
            && offset == h.offset
        {
            return Ok(block);
        }
        let key = CacheKey::Block {
            file: self.file.id(),
            offset: h.offset,
        };
        if let Some(block) = self.cache.get_decoded::<Block>(key) {
            self.stats.io.cache_hits += 1;
            return Ok(block);
        }
        self.stats.io.cache_misses += 1;
        let next = next.filter(|n| {
            self.prefetch
                && kind == Kind::Data
                && n.offset == h.end()
                && n.size > 0
                && !self.cache.contains(CacheKey::Block {
                    file: self.file.id(),
                    offset: n.offset,
                })
        });
        let len = next.map_or(h.size, |n| n.end() - h.offset);
        let file = self.file;
        let bytes = self.read(h.offset, len, kind, 1 + u64::from(next.is_some()))?;
        let (first, rest) = bytes.split_at((h.size as usize).min(bytes.len()));
        let block = Arc::new(Block::open(first).map_err(|p| problem(file, h, p))?);
        let second = match next {
            Some(n) => Some(Arc::new(
                Block::open(rest).map_err(|p| problem(file, n, p))?,
            )),
            None => None,
        };
        self.cache
            .insert_decoded(key, Arc::clone(&block), block.body_bytes() as u64);
        if let (Some(n), Some(b)) = (next, second) {
            let key = CacheKey::Block {
                file: file.id(),
                offset: n.offset,
            };
            self.cache
                .insert_decoded(key, Arc::clone(&b), b.body_bytes() as u64);
            self.prefetched = Some((n.offset, b));
        }
        Ok(block)
    }

    /// The index region at `h` (the learned layout's location chunks), read from the file
    /// in one call and counted as one index block.
    pub(crate) fn read_index(&mut self, h: Handle) -> Result<&[u8]> {
        self.read(h.offset, h.size, Kind::Index, 1)
    }

    /// The `len` bytes at `offset` (the tuned layout's root, which every lookup reads
    /// whole), from the cache or read in one call and kept there at high priority as one
    /// entry: a root over several pages is then searched in place, where reading it
    /// through the cache's pages would copy them at every lookup.
    pub(crate) fn read_span(&mut self, offset: u64, len: u64, kind: Kind) -> Result<Arc<Span>> {
        let key = CacheKey::Block {
            file: self.file.id(),
            offset,
        };
        if let Some(span) = self.cache.get_decoded::<Span>(key)
            && span.0.len() as u64 == len
        {
            self.stats.io.cache_hits += 1;
            return Ok(span);
        }
        self.stats.io.cache_misses += 1;
        let span = Arc::new(Span(self.read(offset, len, kind, 1)?.into()));
        self.cache
            .insert_index(key, Arc::clone(&span), span.0.len() as u64);
        Ok(span)
    }

    /// Reads `len` bytes at `offset` in one call (widened to whole pages with
    /// `O_DIRECT`), counting it as `blocks` blocks of `kind`.
    fn read(&mut self, offset: u64, len: u64, kind: Kind, blocks: u64) -> Result<&[u8]> {
        let before = self.io.counts();
        self.io.read_exact(self.file.paged(), offset, len)?;
        self.count(before, kind, blocks);
        Ok(self.io.last())
    }

    /// Reads `len` bytes at `offset` through the cache's pages (the tuned layout's layers
    /// and pages), counting `blocks` blocks of `kind` when any page was missing.
    pub(crate) fn read_paged(
        &mut self,
        offset: u64,
        len: u64,
        kind: Kind,
        blocks: u64,
    ) -> Result<&[u8]> {
        let before = self.io.counts();
        self.io
            .read_cached(self.file.paged(), self.cache, offset, len)?;
        let after = self.io.counts();
        self.stats.io.cache_hits += after.cache_hits - before.cache_hits;
        self.stats.io.cache_misses += after.cache_misses - before.cache_misses;
        let blocks = if after.reads > before.reads {
            blocks
        } else {
            0
        };
        self.count(before, kind, blocks);
        Ok(self.io.last())
    }

    fn count(&mut self, before: IoStats, kind: Kind, blocks: u64) {
        let read = self.io.counts().since(&before);
        let level = self.level.unwrap_or(match kind {
            Kind::Data => 0,
            Kind::Index => 1,
        });
        if let Some(r) = self.stats.reads_by_level.get_mut(level.min(LEVELS - 1)) {
            *r += read.reads;
        }
        // The reader's own cache counts are added where it looks (read_paged).
        self.stats.io += IoStats {
            cache_hits: 0,
            cache_misses: 0,
            ..read
        };
        match kind {
            Kind::Data => self.stats.data_block_reads += blocks,
            Kind::Index => self.stats.index_block_reads += blocks,
        }
    }
}

/// Bytes of a file kept whole in the cache ([`Reader::read_span`]).
pub(crate) struct Span(pub(crate) Box<[u8]>);

impl crate::storage::cache::Decoded for Span {
    fn first_read(&self) -> &[u8] {
        &self.0
    }
}

pub(crate) fn problem(file: &KvFile, h: Handle, p: BlockProblem) -> Error {
    file.bad_block(
        h,
        match p {
            BlockProblem::Checksum { expected, got } => {
                format!("fails its checksum (stored {expected:#010x}, computed {got:#010x})")
            }
            BlockProblem::Malformed(what) => format!("does not decode: {what}"),
        },
    )
}
