//! Byte ranges of a file read through the shared [`BlockCache`] a page at a time, under an
//! optional latency model (paper 2, section 3: a lookup is cold while the pages it needs
//! are on storage and warm once they are in memory; RMI reads its data through `mmap`,
//! whose page faults this models).
//!
//! [`PagedReads::read_exact`] reads a range in one call, as a cold lookup does.
//! [`PagedReads::read_cached`] covers the range with [`PAGE`]-byte pages, takes those the
//! cache holds, and reads every run of missing pages, keeping them. The runs of one range
//! are in flight together, so under a [`LatencyModel`] they cost one round trip and their
//! bytes: the latency backend sleeps once for the whole batch, never less than its modelled
//! time.
#![deny(clippy::indexing_slicing)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::aligned::AlignedBuf;
use super::cache::{BlockCache, CacheKey, PAGE};
use super::profile::LatencyModel;
use super::{IoStats, ReadMode};
use crate::{Error, FormatError, Result};

/// The file a [`PagedReads`] reads: its handle, name (for errors), cache id and read mode.
#[derive(Clone, Copy, Debug)]
pub struct PagedFile<'a> {
    /// The open file.
    pub file: &'a File,
    /// Its path, for errors.
    pub path: &'a Path,
    /// Its id in the cache ([`next_file_id`](super::cache::next_file_id)).
    pub id: u64,
    /// Buffered or `O_DIRECT` (then the file must have been opened with it).
    pub mode: ReadMode,
}

/// Reads of byte ranges into a reused aligned buffer, counted in an [`IoStats`] (read
/// calls, bytes, the [`PAGE`]-byte pages the calls covered, cache hits and misses of
/// pages, modelled time), under an optional latency model; one per thread.
#[derive(Default)]
pub struct PagedReads {
    buf: AlignedBuf,
    latency: Option<LatencyModel>,
    counts: IoStats,
    /// Where the last read's bytes lie in `buf` (or in `held`).
    last: (usize, usize),
    /// The cached page the last read's bytes lie in, when it took them from one page the
    /// cache held: returned in place, with no copy.
    held: Option<Arc<[u8]>>,
}

impl PagedReads {
    /// Makes every read (or batch of reads in flight together) take as long as `model`
    /// says, or as long as the local file takes (none).
    pub fn set_latency(&mut self, model: Option<LatencyModel>) {
        self.latency = model;
    }

    /// What the reads did so far.
    pub fn counts(&self) -> IoStats {
        self.counts
    }

    /// `len` bytes at `offset` in one read call (widened to whole pages with `O_DIRECT`),
    /// without the cache.
    pub fn read_exact(&mut self, f: PagedFile<'_>, offset: u64, len: u64) -> Result<&[u8]> {
        let started = Instant::now();
        let (pages, got) = self.read_uncharged(f, offset, len)?;
        self.finish(started, 1, pages, got);
        Ok(self.last())
    }

    /// Each of `runs` (offset, length) in one read call, all in flight together (one round
    /// trip under the latency model), their bytes appended to `out` in order.
    pub fn read_batch(
        &mut self,
        f: PagedFile<'_>,
        runs: &[(u64, u64)],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let started = Instant::now();
        let (mut pages, mut bytes) = (0, 0);
        for &(offset, len) in runs {
            let (p, got) = self.read_uncharged(f, offset, len)?;
            pages += p;
            bytes += got;
            out.extend_from_slice(self.last());
        }
        if !runs.is_empty() {
            self.finish(started, runs.len() as u64, pages, bytes);
        }
        Ok(())
    }

    /// Reads `len` bytes at `offset` into the buffer ([`last`](Self::last)), without
    /// counting; returns the pages the call touched and the bytes it read.
    fn read_uncharged(&mut self, f: PagedFile<'_>, offset: u64, len: u64) -> Result<(u64, u64)> {
        let len = usize::try_from(len)
            .map_err(|_| Error::misuse("PagedReads::read_exact", "a range larger than memory"))?;
        let (start, skip, span) = match f.mode {
            ReadMode::Buffered => (offset, 0, len),
            ReadMode::Direct => {
                let start = offset / PAGE * PAGE;
                let end = (offset + len as u64).div_ceil(PAGE) * PAGE;
                (start, (offset - start) as usize, (end - start) as usize)
            }
        };
        let got = fill(f, self.buf.get_mut(span), start, skip + len)?;
        self.last = (skip, skip + len);
        self.held = None;
        Ok((pages_covered(start, got as u64), got as u64))
    }

    /// `len` bytes at `offset` through the cache's pages: the pages it holds are copied
    /// (or, for a range within one cached page, returned in place), each run of missing
    /// ones read in one call and kept. With a disabled cache, the same as
    /// [`read_exact`](Self::read_exact).
    #[expect(
        clippy::indexing_slicing,
        reason = "pages, runs and cached pages (at most a page each) lie within the buffer of the range's pages"
    )]
    pub fn read_cached(
        &mut self,
        f: PagedFile<'_>,
        cache: &BlockCache,
        offset: u64,
        len: u64,
    ) -> Result<&[u8]> {
        if cache.is_disabled() || len == 0 {
            return self.read_exact(f, offset, len);
        }
        let first = offset / PAGE;
        let last = (offset + len - 1) / PAGE;
        let pages = (last - first + 1) as usize;
        let page = PAGE as usize;
        let span = pages * page;
        let end = (offset - first * PAGE + len) as usize;
        let page_key = |p: u64| CacheKey::Page {
            file: f.id,
            page: p,
        };
        let from = (offset - first * PAGE) as usize;
        let mut first_page = cache.get_page_for(page_key(first), from, end.min(page) - from);
        if let Some(p) = first_page.take_if(|p| pages == 1 && end <= p.len()) {
            // Within one cached page: in place.
            self.counts.cache_hits += 1;
            self.last = (from, end);
            self.held = Some(p);
            return Ok(self.last());
        }
        let buf = self.buf.get_mut(span);
        // Which pages are missing, copying those the cache holds.
        let mut missing = vec![false; pages];
        for (i, m) in missing.iter_mut().enumerate() {
            let found = match i {
                0 => first_page.take(),
                _ => cache.get_page(page_key(first + i as u64)),
            };
            match found {
                Some(p) => {
                    self.counts.cache_hits += 1;
                    // Only the file's last page is short: a range past it is past the end.
                    let have = i * page + p.len();
                    if have < end.min((i + 1) * page) {
                        return Err(Error::format(
                            f.path,
                            FormatError::Truncated {
                                what: "a block",
                                expected: offset + len,
                                actual: first * PAGE + have as u64,
                            },
                        ));
                    }
                    // Only the part of the range the page holds: the range is what is
                    // returned, and a window crossing into a page needs little of it.
                    let (lo, hi) = (from.max(i * page), end.min(have));
                    if lo < hi {
                        buf[lo..hi].copy_from_slice(&p[lo - i * page..hi - i * page]);
                    }
                }
                None => {
                    self.counts.cache_misses += 1;
                    *m = true;
                }
            }
        }
        let started = Instant::now();
        let (mut runs, mut read_pages, mut bytes) = (0, 0, 0);
        let mut i = 0;
        while i < pages {
            if !missing[i] {
                i += 1;
                continue;
            }
            let j = (i..pages).find(|&j| !missing[j]).unwrap_or(pages);
            // Whole pages, at least up to the range's end; only the file's last page is short.
            let want = (j * page).min(end) - i * page;
            let got = fill(
                f,
                &mut buf[i * page..j * page],
                (first + i as u64) * PAGE,
                want,
            )?;
            for p in i..j {
                let have = got.saturating_sub((p - i) * page).min(page);
                if have > 0 {
                    let key = CacheKey::Page {
                        file: f.id,
                        page: first + p as u64,
                    };
                    cache.insert_page(key, &buf[p * page..p * page + have]);
                }
            }
            runs += 1;
            read_pages += got.div_ceil(page) as u64;
            bytes += got as u64;
            i = j;
        }
        if runs > 0 {
            self.finish(started, runs, read_pages, bytes);
        }
        self.last = (from, end);
        self.held = None;
        Ok(self.last())
    }

    /// The bytes the last read returned.
    #[expect(
        clippy::indexing_slicing,
        reason = "the last read's bounds lie within the bytes it read into the buffer or the page it holds"
    )]
    pub fn last(&self) -> &[u8] {
        match &self.held {
            Some(page) => &page[self.last.0..self.last.1],
            None => &self.buf.get(self.last.1)[self.last.0..],
        }
    }

    /// Counts `reads` calls in flight together that read `bytes` covering `pages` pages,
    /// sleeping out the model.
    fn finish(&mut self, started: Instant, reads: u64, pages: u64, bytes: u64) {
        if let Some(model) = self.latency {
            self.counts.modelled_ns += model.finish(started, bytes).as_nanos() as u64;
        }
        self.counts.reads += reads;
        self.counts.blocks += pages;
        self.counts.bytes += bytes;
    }
}

/// The [`PAGE`]-byte pages of the file that `bytes` bytes read at `offset` touch.
fn pages_covered(offset: u64, bytes: u64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    (offset + bytes).div_ceil(PAGE) - offset / PAGE
}

/// Reads into `buf` from `at` until it is full or the file ends, which is an error naming
/// the file when fewer than `need` bytes came; returns the bytes read.
#[expect(
    clippy::indexing_slicing,
    reason = "got stays below the buffer's length"
)]
fn fill(f: PagedFile<'_>, buf: &mut [u8], at: u64, need: usize) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        let n = f
            .file
            .read_at(&mut buf[got..], at + got as u64)
            .map_err(|e| Error::io(f.path, "read a block of", e))?;
        if n == 0 {
            break;
        }
        got += n;
    }
    if got < need {
        return Err(Error::format(
            f.path,
            FormatError::Truncated {
                what: "a block",
                expected: at + need as u64,
                actual: at + got as u64,
            },
        ));
    }
    Ok(got)
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use super::*;
    use crate::storage::profile::AffineCost;

    fn file_of(len: usize) -> (tempfile::NamedTempFile, Vec<u8>) {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, &bytes).unwrap();
        (f, bytes)
    }

    #[test]
    fn cached_reads_return_the_bytes_and_read_each_page_once() {
        let (tmp, bytes) = file_of(5 * 4096 + 123);
        let file = File::open(tmp.path()).unwrap();
        let f = PagedFile {
            file: &file,
            path: tmp.path(),
            id: 9,
            mode: ReadMode::Buffered,
        };
        let cache = BlockCache::new(1 << 20);
        let mut r = PagedReads::default();
        for &(offset, len) in &[
            (100u64, 50u64),
            (4000, 200),
            (0, 4096),
            (20_000, 603),
            (3, 20_000),
        ] {
            let got = r.read_cached(f, &cache, offset, len).unwrap().to_vec();
            assert_eq!(got, bytes[offset as usize..(offset + len) as usize]);
        }
        // Six pages in the file, each read once.
        let c = r.counts();
        assert_eq!(c.cache_misses, 6, "{c:?}");
        assert_eq!(c.bytes, bytes.len() as u64);
        assert!(r.read_cached(f, &cache, 20_000, 604).is_err());
        // Within one cached page: in place, a hit, nothing read; past the short last page
        // the same error.
        let before = r.counts();
        assert_eq!(
            r.read_cached(f, &cache, 4100, 10).unwrap(),
            &bytes[4100..4110]
        );
        assert_eq!(r.last(), &bytes[4100..4110]);
        let after = r.counts();
        assert_eq!(after.cache_hits, before.cache_hits + 1, "{after:?}");
        assert_eq!(
            (after.reads, after.cache_misses),
            (before.reads, before.cache_misses)
        );
        assert!(r.read_cached(f, &cache, 20_500, 200).is_err());
        // A read that follows returns its own bytes, not the page held before.
        assert_eq!(
            r.read_cached(f, &cache, 4100, 10).unwrap(),
            &bytes[4100..4110]
        );
        assert_eq!(r.read_exact(f, 7, 10).unwrap(), &bytes[7..17]);
        assert_eq!(r.last(), &bytes[7..17]);
    }

    #[test]
    fn a_batch_of_runs_in_flight_costs_one_round_trip() {
        let (tmp, _) = file_of(8 * 4096);
        let file = File::open(tmp.path()).unwrap();
        let f = PagedFile {
            file: &file,
            path: tmp.path(),
            id: 1,
            mode: ReadMode::Buffered,
        };
        let cache = BlockCache::new(1 << 20);
        let mut r = PagedReads::default();
        let cost = AffineCost {
            latency_us: 1000.0,
            bandwidth_mb_s: 4096.0 / 1000.0,
        };
        r.set_latency(Some(LatencyModel::timed(cost)));
        // Pages 1 and 3 cached; reading 0..5 leaves runs {0}, {2}, {4}: three calls,
        // one round trip, three pages' bytes.
        r.read_cached(f, &cache, 4096, 1).unwrap();
        r.read_cached(f, &cache, 3 * 4096, 1).unwrap();
        let before = r.counts();
        r.read_cached(f, &cache, 0, 5 * 4096).unwrap();
        let c = r.counts();
        assert_eq!(c.reads - before.reads, 3);
        assert_eq!(c.bytes - before.bytes, 3 * 4096);
        let modelled = c.modelled_ns - before.modelled_ns;
        assert_eq!(
            modelled,
            LatencyModel::timed(cost).read_time(3 * 4096).as_nanos() as u64
        );
        // The charge is the model's, not the clock's: the same reads under a model that
        // only counts are charged the same (how long the sleeps took depends on the load).
        let cache = BlockCache::new(1 << 20);
        let mut counted = PagedReads::default();
        counted.set_latency(Some(LatencyModel::counted(cost)));
        counted.read_cached(f, &cache, 4096, 1).unwrap();
        counted.read_cached(f, &cache, 3 * 4096, 1).unwrap();
        counted.read_cached(f, &cache, 0, 5 * 4096).unwrap();
        assert_eq!(counted.counts(), c);
    }
}
