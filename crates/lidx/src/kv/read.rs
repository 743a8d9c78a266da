//! Gets and scans through either layout, block by block through the shared
//! [`BlockCache`], counting what each operation reads (paper 4, section 5 argues in index
//! and data blocks read).
//!
//! - **Learned**: the key map and the model give the block, the block-location array its
//!   place; one data block, no index block. An empty block means the key is absent.
//! - **SSTable**: level 0 (in memory) gives the level-1 index block, which gives the data
//!   block: one index block and one data block, each from the cache when it holds them.
//!
//! A [`Reader`] belongs to one thread; any number share a [`KvFile`] and a cache.
#![deny(clippy::indexing_slicing)]

use std::sync::Arc;

use super::block::{Block, BlockProblem, TRAILER};
use super::file::{Handle, KvFile, Meta};
use super::layers::{STORED_PIECE, StoredPiece};
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
    Data,
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
        if let Meta::Tuned { .. } | Meta::Btree { .. } = &self.file.meta {
            let Some((_, page)) = self.page_of(key)? else {
                return Ok(false);
            };
            return Ok(match page.get(key) {
                Some(v) => {
                    value.extend_from_slice(v);
                    true
                }
                None => false,
            });
        }
        let Some(handle) = self.data_handle(key)? else {
            return Ok(false);
        };
        let block = self.block(handle, Kind::Data, None)?;
        Ok(match block.get(key) {
            Some(v) => {
                value.extend_from_slice(v);
                true
            }
            None => false,
        })
    }

    /// The value of `key`, if the file holds it.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        Ok(self.get_into(key, &mut value)?.then_some(value))
    }

    /// The data block that holds `key` if any block does; `None` when none can.
    fn data_handle(&mut self, key: &[u8]) -> Result<Option<Handle>> {
        let file = self.file;
        match &file.meta {
            Meta::Learned { offsets, .. } => Ok(file
                .learned_block(key)
                .map(|b| KvFile::learned_handle(offsets, b))
                .filter(|h| h.size > 0)),
            Meta::Sstable { level0 } => {
                let i = level0.partition_point(|(last, _)| **last < *key);
                let Some(&(_, ih)) = level0.get(i) else {
                    return Ok(None);
                };
                let index = self.block(ih, Kind::Index, None)?;
                let j = index.lower_bound(key);
                if j == index.len() {
                    return Err(
                        file.bad_block(ih, "ends below the level-0 key that points at it".into())
                    );
                }
                self.entry_handle(&index, ih, j).map(Some)
            }
            Meta::Tuned { .. } | Meta::Btree { .. } => Err(Error::misuse(
                "kv::Reader::data_handle",
                "the tuned and B+tree layouts find pages through `page_of`",
            )),
        }
    }

    /// The page that holds `key` in a layout of fixed pages (tuned or B+tree) if any
    /// does, and its number.
    fn page_of(&mut self, key: &[u8]) -> Result<Option<(u64, Arc<Block>)>> {
        let found = match &self.file.meta {
            Meta::Btree { levels } => self.btree_page(key, levels),
            _ => self.tuned_page(key),
        };
        self.level = None;
        found
    }

    /// The B+tree layout's page that could hold `key`: from the root down, in each node
    /// the last entry whose key is at most `key` (the first when there is none).
    #[expect(
        clippy::indexing_slicing,
        reason = "levels run from 1 below the starts of the node levels, which open checked"
    )]
    fn btree_page(&mut self, key: &[u8], levels: &[u64]) -> Result<Option<(u64, Arc<Block>)>> {
        let file = self.file;
        let data_pages = file.footer().data_blocks;
        // Level `l`'s first page (level 0: the data pages).
        let mut starts = Vec::with_capacity(levels.len() + 1);
        starts.push(0);
        let mut next = data_pages;
        for &n in levels {
            starts.push(next);
            next += n;
        }
        let Some(mut page) = next.checked_sub(1).filter(|_| !levels.is_empty()) else {
            return Ok(None);
        };
        for level in (1..=levels.len()).rev() {
            self.level = Some(level);
            let node = self.read_pages(page, 1, Kind::Index)?.remove(0);
            let j = node.lower_bound(key);
            // Below every key, the first child: a scan from there starts at page 0.
            let j = if j < node.len() && node.key(j) == key {
                j
            } else {
                j.saturating_sub(1)
            };
            let child = <[u8; 8]>::try_from(node.record(j).1)
                .ok()
                .map(u64::from_le_bytes)
                .filter(|c| (starts[level - 1]..starts[level]).contains(c));
            let Some(child) = child else {
                let size = file.footer().block_size;
                return Err(file.bad_block(
                    Handle {
                        offset: page * size,
                        size,
                    },
                    format!("holds a child page at entry {j} outside the level below"),
                ));
            };
            page = child;
        }
        self.level = None;
        Ok(Some((
            page,
            self.read_pages(page, 1, Kind::Data)?.remove(0),
        )))
    }

    /// The tuned layout's page that holds `key` if any does, and its number: the root read
    /// whole, a window of each layer below it, then the window of pages, of which the last
    /// whose first key is at most `key`.
    #[expect(
        clippy::indexing_slicing,
        reason = "i runs over the layers; read_pieces returns at least one piece, so a partition point less one is a piece"
    )]
    fn tuned_page(&mut self, key: &[u8]) -> Result<Option<(u64, Arc<Block>)>> {
        let file = self.file;
        let Meta::Tuned { keymap, layers, .. } = &file.meta else {
            return Ok(None);
        };
        let Some(root) = layers.last() else {
            return Ok(None);
        };
        let x = keymap.map(key);
        self.level = Some(layers.len());
        let pieces = self.read_pieces(root.offset, root.pieces)?;
        let mut piece = pieces[pieces.partition_point(|p| p.first_x <= x).saturating_sub(1)];
        for i in (0..layers.len()).rev() {
            let shape = layers[i].shape();
            let start = shape.window_start(piece.predict(x));
            let n = shape.window_units();
            if i == 0 {
                self.level = None;
                return self.last_mile(key, start, n);
            }
            self.level = Some(i);
            let below = &layers[i - 1];
            let window = self.read_pieces(below.offset + start * STORED_PIECE, n)?;
            piece = window[window.partition_point(|p| p.first_x <= x).saturating_sub(1)];
        }
        Ok(None)
    }

    /// Reads and checks `n` (at least 1) stored pieces from `offset` (for checks of the
    /// whole file).
    pub(crate) fn read_pieces_at(&mut self, offset: u64, n: u64) -> Result<Vec<StoredPiece>> {
        self.read_pieces(offset, n)
    }

    /// Reads and checks `n` (at least 1) stored pieces from `offset`.
    fn read_pieces(&mut self, offset: u64, n: u64) -> Result<Vec<StoredPiece>> {
        let file = self.file;
        let bytes = self.read_paged(offset, n * STORED_PIECE, Kind::Index, 1)?;
        let pieces: Option<Vec<StoredPiece>> = bytes
            .chunks_exact(STORED_PIECE as usize)
            .map(StoredPiece::decode)
            .collect();
        match pieces {
            Some(p) if !p.is_empty() => Ok(p),
            _ => Err(file.bad_block(
                Handle {
                    offset,
                    size: n * STORED_PIECE,
                },
                "holds a layer piece that fails its checksum or does not decode".into(),
            )),
        }
    }

    /// The `n` pages (of a tuned or B+tree layout) from page `start`, decoded: those the
    /// cache holds from it, the others read in one batch (each run of missing pages one
    /// call, all in flight together), counted as blocks of `kind`, and kept.
    pub(crate) fn read_pages(&mut self, start: u64, n: u64, kind: Kind) -> Result<Vec<Arc<Block>>> {
        self.read_window(start, n, kind, true)
    }

    /// The page of the window `start .. start + n` that holds `key` if any does (the last
    /// whose first key is at most `key`, or the first). Cached pages narrow the window
    /// first: one whose keys span `key` is the answer, one that starts above `key` rules
    /// out itself and those after it, one that ends below rules out those before it. The
    /// rest are read in one batch; only the page the key leads to is kept, since its
    /// neighbours were read only to find it and would crowd the cache.
    #[expect(
        clippy::indexing_slicing,
        reason = "lo..hi lies within the window's cached pages"
    )]
    fn last_mile(&mut self, key: &[u8], start: u64, n: u64) -> Result<Option<(u64, Arc<Block>)>> {
        let cached = self.cached_pages(start, n);
        let (mut lo, mut hi) = (start, start + n);
        for (p, b) in (start..).zip(&cached) {
            let Some(b) = b else { continue };
            if key < b.key(0) {
                hi = hi.min(p);
            } else if key <= b.key(b.len() - 1) {
                return Ok(Some((p, Arc::clone(b))));
            } else {
                lo = lo.max(p);
            }
        }
        if hi <= lo {
            // Below the window's first page (then cached): the first page, as without
            // the cache.
            return Ok(cached.into_iter().next().flatten().map(|b| (start, b)));
        }
        let pages: Vec<Option<Arc<Block>>> =
            cached[(lo - start) as usize..(hi - start) as usize].to_vec();
        let pages = self.fill_window(lo, pages, Kind::Data, false)?;
        let within = pages.partition_point(|b| b.key(0) <= key).saturating_sub(1);
        let Some(page) = pages.into_iter().nth(within) else {
            return Ok(None);
        };
        let p = lo + within as u64;
        self.keep_page(p, &page);
        Ok(Some((p, page)))
    }

    /// Keeps page `p` in the cache.
    fn keep_page(&self, p: u64, page: &Arc<Block>) {
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
    fn cached_pages(&mut self, start: u64, n: u64) -> Vec<Option<Arc<Block>>> {
        let file = self.file;
        let page = file.footer().block_size;
        (start..start + n)
            .map(|p| {
                let cached = self.cache.get_decoded::<Block>(CacheKey::Block {
                    file: file.id(),
                    offset: p * page,
                });
                match cached {
                    Some(_) => self.stats.io.cache_hits += 1,
                    None => self.stats.io.cache_misses += 1,
                }
                cached
            })
            .collect()
    }

    /// The pages from `start`, `pages` holding those already at hand: the others read in
    /// one batch, counted as blocks of `kind`, and kept in the cache when `keep`.
    #[expect(
        clippy::indexing_slicing,
        reason = "every missing page is one of the window's pages"
    )]
    fn fill_window(
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
                        self.cache.insert_decoded(
                            key(p),
                            Arc::clone(&block),
                            block.body_bytes() as u64,
                        );
                    }
                    pages[(p - start) as usize] = Some(block);
                }
            }
            self.batch = bytes;
        }
        Ok(pages.into_iter().flatten().collect())
    }

    /// Entry `j`'s data block handle in level-1 block `index` (at `ih`), checked.
    fn entry_handle(&self, index: &Block, ih: Handle, j: usize) -> Result<Handle> {
        let data_bytes = self.file.footer().data_bytes;
        Handle::decode(index.record(j).1)
            .filter(|h| h.size > TRAILER as u64 + 4 && h.end() <= data_bytes)
            .ok_or_else(|| {
                self.file
                    .bad_block(ih, format!("holds a bad data block handle at entry {j}"))
            })
    }

    /// Visits up to `rows` records in key order from the first key at least `from`;
    /// returns how many it visited.
    #[expect(clippy::indexing_slicing, reason = "i stays below level 0's length")]
    pub fn scan(
        &mut self,
        from: &[u8],
        rows: usize,
        mut visit: impl FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut left = rows;
        let file = self.file;
        let mut emit = |block: &Block, left: &mut usize| {
            let start = block.lower_bound(from);
            for i in start..block.len() {
                if *left == 0 {
                    break;
                }
                let (k, v) = block.record(i);
                visit(k, v);
                *left -= 1;
            }
        };
        match &file.meta {
            Meta::Learned { offsets, .. } => {
                let blocks = offsets.len() - 1;
                let Some(mut b) = file.learned_block(from).filter(|_| rows > 0) else {
                    return Ok(0);
                };
                while left > 0 && b < blocks {
                    let h = KvFile::learned_handle(offsets, b);
                    if h.size > 0 {
                        let next = (b + 1 < blocks).then(|| KvFile::learned_handle(offsets, b + 1));
                        let block = self.block(h, Kind::Data, next)?;
                        emit(&block, &mut left);
                    }
                    b += 1;
                }
            }
            Meta::Sstable { level0 } => {
                let mut i = level0.partition_point(|(last, _)| **last < *from);
                while left > 0 && i < level0.len() {
                    let ih = level0[i].1;
                    let index = self.block(ih, Kind::Index, None)?;
                    let mut j = index.lower_bound(from);
                    while left > 0 && j < index.len() {
                        let h = self.entry_handle(&index, ih, j)?;
                        let next = match j + 1 < index.len() {
                            true => Some(self.entry_handle(&index, ih, j + 1)?),
                            false => None,
                        };
                        let block = self.block(h, Kind::Data, next)?;
                        emit(&block, &mut left);
                        j += 1;
                    }
                    i += 1;
                }
            }
            Meta::Tuned { .. } | Meta::Btree { .. } => {
                if rows == 0 {
                    return Ok(0);
                }
                let Some((mut p, first)) = self.page_of(from)? else {
                    return Ok(0);
                };
                emit(&first, &mut left);
                let pages = file.footer().data_blocks;
                p += 1;
                while left > 0 && p < pages {
                    let n = if self.prefetch { 2.min(pages - p) } else { 1 };
                    for page in self.read_pages(p, n, Kind::Data)? {
                        emit(&page, &mut left);
                    }
                    p += n;
                }
            }
        }
        Ok(rows - left)
    }

    /// Every data block's handle in file order (reads the level-1 blocks of an SSTable).
    pub fn data_handles(&mut self) -> Result<Vec<Handle>> {
        let file = self.file;
        match &file.meta {
            Meta::Learned { offsets, .. } => Ok((0..offsets.len() - 1)
                .map(|b| KvFile::learned_handle(offsets, b))
                .collect()),
            Meta::Sstable { level0 } => {
                let mut out = Vec::new();
                for &(_, ih) in level0 {
                    let index = self.block(ih, Kind::Index, None)?;
                    out.extend(self.entry_handles(&index, ih)?);
                }
                Ok(out)
            }
            Meta::Tuned { .. } | Meta::Btree { .. } => {
                let page = file.footer().block_size;
                Ok((0..file.footer().data_blocks)
                    .map(|p| Handle {
                        offset: p * page,
                        size: page,
                    })
                    .collect())
            }
        }
    }

    /// Every data block handle level-1 block `index` (at `ih`) holds, checked.
    pub(crate) fn entry_handles(&self, index: &Block, ih: Handle) -> Result<Vec<Handle>> {
        (0..index.len())
            .map(|j| self.entry_handle(index, ih, j))
            .collect()
    }

    /// Reads and decodes a data block, without the cache (for checks of the whole file).
    pub fn read_data_block(&mut self, h: Handle) -> Result<Block> {
        let bytes = self.read(h.offset, h.size, Kind::Data, 1)?;
        Block::open(bytes).map_err(|p| problem(self.file, h, p))
    }

    /// The level-1 block at `h` (SSTable), through the cache.
    pub fn index_block(&mut self, h: Handle) -> Result<Arc<Block>> {
        self.block(h, Kind::Index, None)
    }

    /// The block at `h`, from the prefetched one, the cache or the file; `next`, when
    /// prefetching and it follows `h` on disk, is read in the same call and kept.
    fn block(&mut self, h: Handle, kind: Kind, next: Option<Handle>) -> Result<Arc<Block>> {
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
    fn read_paged(&mut self, offset: u64, len: u64, kind: Kind, blocks: u64) -> Result<&[u8]> {
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

/// A page of the tuned layout: a sealed block, zeros, and the sealed block's length as a
/// `u32` in the last 4 bytes.
pub(crate) fn open_page(page: &[u8]) -> Result<Block, BlockProblem> {
    let malformed = BlockProblem::Malformed;
    let (body, len) = page
        .split_last_chunk::<4>()
        .ok_or(malformed("a page shorter than its length"))?;
    let len = u32::from_le_bytes(*len) as usize;
    let (sealed, padding) = body
        .split_at_checked(len)
        .ok_or(malformed("a page's block longer than the page"))?;
    if padding.iter().any(|&b| b != 0) {
        return Err(malformed("non-zero bytes after a page's block"));
    }
    let block = Block::open(sealed)?;
    if block.is_empty() {
        return Err(malformed("a page with no record"));
    }
    Ok(block)
}

fn problem(file: &KvFile, h: Handle, p: BlockProblem) -> Error {
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
