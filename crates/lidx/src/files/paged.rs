//! Paged files: their shape, the one reader of their pages, and the one I/O counter.
//!
//! - The shape lidx's paged files share (FORMAT.md sections 6, 7 and 10: the partitions
//!   file, the inserted B+tree file, the ALEX file): a 4096-byte header block (magic,
//!   version, three `u64` fields, the tail's length and CRC32C, the header's own CRC32C, then
//!   zeros to the block's end), 4096-byte pages, then a tail holding the index
//!   ([`write_tail_and_header`], [`open`]).
//! - [`Pages`] and [`PageReader`]: the one way lidx reads checksummed 4096-byte pages of a
//!   file (these three formats' pages and the `.tbl` data blocks): a run of consecutive
//!   pages in one read call, each page checked against its CRC32C (kept apart from the
//!   pages, or in a trailer inside each page: [`PageCrc`]), every read counted in an
//!   [`IoStats`], and the last pages read kept in a least-recently-used cache of a given
//!   number of pages (the one cache policy of page readers; the shared, byte-budgeted
//!   `storage::cache::BlockCache` serves the key-value files' byte ranges).
//! - [`IoStats`]: what reads did (blocks, bytes, calls, cache hits and misses, modelled
//!   time), counted by every reader of lidx's files; richer counters embed it.
#![deny(clippy::indexing_slicing)]

use std::fs::File;
use std::io;
use std::num::NonZeroUsize;
use std::ops::AddAssign;
use std::os::unix::fs::FileExt;
use std::path::Path;

use lru::LruCache;

use super::aligned::AlignedBuf;
use super::codec::{Decoder, Encoder};
use super::{AtomicFile, open_regular};
use crate::{Error, FormatError, Result};

/// Bytes of the header block and of every page (the `.tbl` block size).
pub(crate) const PAGE_SIZE: usize = 4096;

/// Bytes of the header's fields before its own CRC.
const HEADER_FIELDS: usize = 52;
/// Byte offset of the reserved `u32` after the version.
const OFF_RESERVED: usize = 12;
/// Bytes of the header that mean something: the fields and their CRC; the rest of the
/// block is zero.
const HEADER_USED: usize = HEADER_FIELDS + 4;

/// Byte offset of page `page`.
pub(crate) fn page_offset(page: u64) -> u64 {
    (1 + page) * PAGE_SIZE as u64
}

/// Writes `tail` after `pages` pages and the header in front; returns the bytes written.
pub(crate) fn write_tail_and_header(
    out: &mut AtomicFile,
    magic: [u8; 8],
    version: u32,
    fields: [u64; 3],
    pages: u64,
    tail: &[u8],
) -> Result<u64> {
    out.write_all_at(page_offset(pages), tail)?;
    let mut header = Vec::with_capacity(PAGE_SIZE);
    let mut e = Encoder(&mut header);
    for b in magic {
        e.u8(b);
    }
    e.u32(version);
    e.u32(0);
    for f in fields {
        e.u64(f);
    }
    e.u64(tail.len() as u64);
    e.u32(crc32c::crc32c(tail));
    let crc = crc32c::crc32c(&header);
    Encoder(&mut header).u32(crc);
    header.resize(PAGE_SIZE, 0);
    out.write_all_at(0, &header)?;
    Ok((tail.len() + header.len()) as u64)
}

/// 4 KiB pages a write of `len` bytes at byte `offset` touches.
pub(crate) fn pages_touched(offset: u64, len: u64) -> u64 {
    match len {
        0 => 0,
        _ => (offset + len - 1) / PAGE_SIZE as u64 - offset / PAGE_SIZE as u64 + 1,
    }
}

/// Pages [`write_tail_and_header`] touched, given the bytes it returned: the header and
/// the tail's pages (the tail starts on a page).
pub(crate) fn pages_of_tail_and_header(written: u64) -> u64 {
    written.div_ceil(PAGE_SIZE as u64)
}

/// A file of this shape, opened and checked as far as the shape goes.
pub(crate) struct Opened {
    pub file: File,
    /// The format version the header names, one of those `open` was given.
    pub version: u32,
    pub fields: [u64; 3],
    pub tail: Vec<u8>,
}

/// Opens the file at `path` and checks its shape: at least a header block, `magic`,
/// the header CRC, a version in `versions`, the reserved word and bytes `56..4096` of the header block
/// zero, a length of exactly the header, `fields[pages_field]` pages and the tail, and the
/// tail's CRC. `what` names the kind of file in errors.
pub(crate) fn open(
    path: &Path,
    magic: [u8; 8],
    versions: std::ops::RangeInclusive<u32>,
    what: &'static str,
    pages_field: usize,
) -> Result<Opened> {
    let (file, len) = open_regular(path)?;
    let fail = |problem| Error::format(path, problem);
    if len < PAGE_SIZE as u64 {
        return Err(fail(FormatError::Truncated {
            what,
            expected: PAGE_SIZE as u64,
            actual: len,
        }));
    }
    let mut block = vec![0u8; PAGE_SIZE];
    file.read_exact_at(&mut block, 0)
        .map_err(|e| Error::io(path, "read", e))?;
    let (header, unused) = block.split_at(HEADER_USED);
    if header.get(..8) != Some(&magic[..]) {
        return Err(fail(FormatError::BadMagic {
            expected: what,
            found: header.get(..8).unwrap_or_default().to_vec(),
        }));
    }
    let (fields, stored) = header.split_at(HEADER_FIELDS);
    let stored = u32::from_le_bytes(stored.try_into().unwrap_or_default());
    let got = crc32c::crc32c(fields);
    if stored != got {
        return Err(fail(FormatError::HeaderChecksum {
            expected: stored,
            got,
        }));
    }
    let (version, fields, tail_len, tail_crc) =
        header_fields(fields, versions, what).map_err(fail)?;
    // The reserved word and the rest of the block: no CRC covers the latter, so a flipped
    // bit there is only seen here.
    let reserved = header
        .get(OFF_RESERVED..OFF_RESERVED + 4)
        .unwrap_or_default();
    if let Some(problem) = nonzero_at(reserved, OFF_RESERVED, "header byte")
        .or_else(|| nonzero_at(unused, HEADER_USED, "header byte"))
    {
        return Err(fail(FormatError::Inconsistent(problem)));
    }
    let pages = fields.get(pages_field).copied().unwrap_or(0);
    let expected_len = pages
        .checked_add(1)
        .and_then(|b| b.checked_mul(PAGE_SIZE as u64))
        .and_then(|b| b.checked_add(tail_len));
    if expected_len != Some(len) {
        return Err(fail(FormatError::CountMismatch {
            count: pages,
            unit: "pages and an index",
            expected: expected_len.unwrap_or(u64::MAX),
            actual: len,
        }));
    }
    let mut tail = vec![0u8; usize::try_from(tail_len).unwrap_or(usize::MAX)];
    file.read_exact_at(&mut tail, page_offset(pages))
        .map_err(|e| Error::io(path, "read", e))?;
    let got = crc32c::crc32c(&tail);
    if got != tail_crc {
        return Err(fail(FormatError::FileChecksum {
            expected: tail_crc,
            got,
        }));
    }
    Ok(Opened {
        file,
        version,
        fields,
        tail,
    })
}

/// The fields after the magic, the version checked against `versions`: the version, the
/// three `u64`s, the tail's length and CRC.
fn header_fields(
    bytes: &[u8],
    versions: std::ops::RangeInclusive<u32>,
    what: &'static str,
) -> std::result::Result<(u32, [u64; 3], u64, u32), FormatError> {
    let mut d = Decoder::new(bytes.get(8..).unwrap_or_default(), what);
    let found = d.u32()?;
    if !versions.contains(&found) {
        return Err(FormatError::UnsupportedVersion {
            found,
            oldest: *versions.start(),
            newest: *versions.end(),
        });
    }
    let _reserved = d.u32()?;
    let fields = [d.u64()?, d.u64()?, d.u64()?];
    Ok((found, fields, d.u64()?, d.u32()?))
}

/// The first non-zero byte of `bytes`, which start at byte `offset` of what `what` names
/// ("header byte"), as a sentence that names it: "header byte 100 is 0x40 where the format
/// has zero". `None` when every byte is zero.
pub(crate) fn nonzero_at(bytes: &[u8], offset: usize, what: &str) -> Option<String> {
    let (i, b) = bytes.iter().enumerate().find(|(_, b)| **b != 0)?;
    Some(format!(
        "{what} {} is {b:#04x} where the format has zero",
        offset + i
    ))
}

/// What reads did: the one I/O counter every reader of lidx's files keeps (the block reader
/// of tables, the paged-file reader, the byte-range reads of key-value files). Counters that
/// need more (a key-value reader's data and index blocks) embed it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoStats {
    /// 4096-byte blocks (pages) read from the file: the blocks the read calls covered.
    pub blocks: u64,
    /// Bytes read from the file (whole pages with `O_DIRECT`).
    pub bytes: u64,
    /// Read calls (each one contiguous `pread`).
    pub reads: u64,
    /// Blocks or pages found in a shared cache (`storage::cache::BlockCache`); 0 for the
    /// readers that only keep pages of their own (the table's block reader, the paged-file
    /// reader), whose kept pages cost and count nothing.
    pub cache_hits: u64,
    /// Blocks or pages looked for in a shared cache and not found.
    pub cache_misses: u64,
    /// Time the reads took under a latency model, nanoseconds (0 without one).
    pub modelled_ns: u64,
}

impl IoStats {
    /// What happened between `earlier` (a snapshot of the same counter) and `self`.
    pub fn since(&self, earlier: &IoStats) -> IoStats {
        IoStats {
            blocks: self.blocks - earlier.blocks,
            bytes: self.bytes - earlier.bytes,
            reads: self.reads - earlier.reads,
            cache_hits: self.cache_hits - earlier.cache_hits,
            cache_misses: self.cache_misses - earlier.cache_misses,
            modelled_ns: self.modelled_ns - earlier.modelled_ns,
        }
    }
}

impl AddAssign for IoStats {
    fn add_assign(&mut self, other: IoStats) {
        self.blocks += other.blocks;
        self.bytes += other.bytes;
        self.reads += other.reads;
        self.cache_hits += other.cache_hits;
        self.cache_misses += other.cache_misses;
        self.modelled_ns += other.modelled_ns;
    }
}

/// Where the CRC32C of each page of a [`Pages`] file lives.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PageCrc<'a> {
    /// Apart from the pages (a table's checksum array, a paged file's tail): page `g`'s
    /// CRC32C over all its [`PAGE_SIZE`] bytes is `crcs[g]`.
    Apart(&'a [u32]),
    /// In each page (the ALEX file's): the CRC32C of bytes `..at` as a little-endian `u32`
    /// at bytes `at..at + 4`, then zeros to the page's end (else
    /// [`FormatError::NonZeroPadding`] of "a page").
    Trailer {
        /// Byte offset of the CRC in the page.
        at: usize,
    },
}

/// A file of checksummed [`PAGE_SIZE`]-byte pages, as a [`PageReader`] reads it: the open
/// handle (opened with `O_DIRECT` or not), where page 0 starts, how many pages there are and
/// where their CRCs live.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pages<'a> {
    /// The open file (with `O_DIRECT` when `direct`).
    pub file: &'a File,
    /// Its path, for errors.
    pub path: &'a Path,
    /// Byte offset of page 0.
    pub start: u64,
    /// Pages the file holds; a read past them is refused as a misuse.
    pub count: u64,
    /// The number [`Error::ChecksumMismatch`] gives page 0: 0 where pages are counted from
    /// the data (a table's data blocks), 1 where the header block is block 0 (paged files).
    pub block_base: u64,
    /// Where each page's CRC32C is.
    pub crc: PageCrc<'a>,
    /// Whether `file` was opened with `O_DIRECT`: a read it refuses as invalid then fails
    /// with [`Error::DirectUnsupported`].
    pub direct: bool,
}

impl Pages<'_> {
    /// The paged-file layout (page 0 after the header block, block numbers from 1) of
    /// `count` pages of `file`.
    pub(crate) fn paged<'a>(
        file: &'a File,
        path: &'a Path,
        count: u64,
        crc: PageCrc<'a>,
        direct: bool,
    ) -> Pages<'a> {
        Pages {
            file,
            path,
            start: page_offset(0),
            count,
            block_base: 1,
            crc,
            direct,
        }
    }

    /// Reads pages `first..` (as many as `into` holds whole pages of, at least one byte's
    /// worth) with one read call, counts the call, its pages and bytes in `io`, and, when
    /// `verify`, checks each page against its CRC ([`check`](Self::check)). Fails with
    /// [`Error::Misuse`] for pages past [`count`](Self::count) or a buffer that is not
    /// whole pages, and names the file in every other error.
    pub(crate) fn read_into(
        &self,
        first: u64,
        into: &mut [u8],
        io: &mut IoStats,
        verify: bool,
    ) -> Result<()> {
        let pages = (into.len() / PAGE_SIZE) as u64;
        if !into.len().is_multiple_of(PAGE_SIZE)
            || first.checked_add(pages).is_none_or(|end| end > self.count)
        {
            return Err(Error::misuse(
                "paged::Pages::read_into",
                format!(
                    "{} bytes from page {first} are not whole pages among the file's {}",
                    into.len(),
                    self.count
                ),
            ));
        }
        self.file
            .read_exact_at(into, self.start + first * PAGE_SIZE as u64)
            .map_err(|e| self.read_error(e))?;
        *io += IoStats {
            blocks: pages,
            bytes: into.len() as u64,
            reads: 1,
            ..IoStats::default()
        };
        if verify {
            self.check(first, into)?;
        }
        Ok(())
    }

    /// Checks consecutive pages, the first of them page `first`, against their CRCs;
    /// `bytes` holds whole pages. A mismatch is [`Error::ChecksumMismatch`] naming block
    /// [`block_base`](Self::block_base)` + page`.
    pub(crate) fn check(&self, first: u64, bytes: &[u8]) -> Result<()> {
        for (i, page) in bytes.chunks_exact(PAGE_SIZE).enumerate() {
            let number = first + i as u64;
            let (expected, got) = match self.crc {
                PageCrc::Apart(crcs) => {
                    let expected = usize::try_from(number)
                        .ok()
                        .and_then(|g| crcs.get(g).copied())
                        .ok_or_else(|| {
                            Error::misuse(
                                "paged::Pages::check",
                                format!("page {number} has no checksum"),
                            )
                        })?;
                    (expected, crc32c::crc32c(page))
                }
                PageCrc::Trailer { at } => {
                    let (body, rest) = page.split_at_checked(at).unwrap_or((page, &[]));
                    let (stored, padding) = rest.split_at_checked(4).unwrap_or((&[], &[]));
                    let stored = u32::from_le_bytes(stored.try_into().unwrap_or_default());
                    let got = crc32c::crc32c(body);
                    if stored == got && padding.iter().any(|&b| b != 0) {
                        return Err(Error::format(
                            self.path,
                            FormatError::NonZeroPadding { what: "a page" },
                        ));
                    }
                    (stored, got)
                }
            };
            if expected != got {
                return Err(Error::ChecksumMismatch {
                    path: self.path.to_path_buf(),
                    block: self.block_base + number,
                    expected,
                    got,
                });
            }
        }
        Ok(())
    }

    /// A failed read, naming `O_DIRECT` where the file system refused it.
    pub(crate) fn read_error(&self, e: io::Error) -> Error {
        if self.direct && e.kind() == io::ErrorKind::InvalidInput {
            Error::DirectUnsupported {
                path: self.path.to_path_buf(),
                source: e,
            }
        } else {
            Error::io(self.path, "read", e)
        }
    }
}

/// Reads runs of pages of a [`Pages`] file into a reused aligned buffer, checking and
/// counting each read, and keeps the last pages it read in a least-recently-used cache of
/// a fixed number of pages (none: every page is read each time it is asked for). One per
/// thread.
pub(crate) struct PageReader {
    buf: AlignedBuf,
    cache: Option<LruCache<u64, AlignedBuf>>,
    io: IoStats,
}

impl PageReader {
    /// A reader keeping the last `cached` pages it read (0: none).
    pub(crate) fn new(cached: usize) -> PageReader {
        PageReader {
            buf: AlignedBuf::default(),
            cache: NonZeroUsize::new(cached).map(LruCache::new),
            io: IoStats::default(),
        }
    }

    /// What the reads did so far: calls, pages and bytes (pages served from those kept are
    /// not reads, and are not counted).
    pub(crate) fn stats(&self) -> IoStats {
        self.io
    }

    /// Pages `first..first + count` of `f` with one read call, each checked against its
    /// CRC; the cache is neither asked nor filled.
    pub(crate) fn read_run(&mut self, f: &Pages<'_>, first: u64, count: u64) -> Result<&[u8]> {
        let len = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(PAGE_SIZE))
            .ok_or_else(|| {
                Error::misuse("paged::PageReader::read_run", "a run larger than memory")
            })?;
        f.read_into(first, self.buf.get_mut(len), &mut self.io, true)?;
        Ok(self.buf.get(len))
    }

    /// Page `page` of `f`: one of the pages kept (which costs and counts nothing, as a
    /// block reader's buffer does), or read with one call, checked against its CRC and kept,
    /// the least recently used page making room. Without a cache, the same as a run of one
    /// page.
    pub(crate) fn page(&mut self, f: &Pages<'_>, page: u64) -> Result<&[u8]> {
        if self.cache.is_none() {
            return self.read_run(f, page, 1);
        }
        let Some(cache) = self.cache.as_mut() else {
            return Err(Error::misuse(
                "paged::PageReader::page",
                "the cache is gone",
            ));
        };
        if !cache.contains(&page) {
            let mut buf = if cache.len() == cache.cap().get() {
                cache.pop_lru().map_or_else(AlignedBuf::default, |(_, b)| b)
            } else {
                AlignedBuf::default()
            };
            f.read_into(page, buf.get_mut(PAGE_SIZE), &mut self.io, true)?;
            cache.put(page, buf);
        }
        cache
            .get(&page)
            .map(|b| b.get(PAGE_SIZE))
            .ok_or_else(|| Error::misuse("paged::PageReader::page", "a page just kept is gone"))
    }
}

/// Test helpers for the paged formats' tests.
#[cfg(test)]
#[allow(clippy::indexing_slicing, reason = "tests index what they built")]
pub(crate) mod testing {
    use super::{HEADER_FIELDS, PAGE_SIZE};

    /// The little-endian `u64` at byte `at` of `bytes`.
    pub(crate) fn u64_at(bytes: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
    }

    /// Makes the tail's CRC and then the header's fit the bytes as they are, as a forger
    /// would: `pages` pages precede the tail.
    pub(crate) fn reseal(bytes: &mut [u8], pages: u64) {
        let tail_at = PAGE_SIZE * (1 + pages as usize);
        let crc = crc32c::crc32c(&bytes[tail_at..]);
        bytes[HEADER_FIELDS - 4..HEADER_FIELDS].copy_from_slice(&crc.to_le_bytes());
        let crc = crc32c::crc32c(&bytes[..HEADER_FIELDS]);
        bytes[HEADER_FIELDS..HEADER_FIELDS + 4].copy_from_slice(&crc.to_le_bytes());
    }

    /// Flips bit 6 of byte `at` (0x40): the flip the audit made at bytes 100 and 4095.
    pub(crate) fn flipped(bytes: &[u8], at: usize) -> Vec<u8> {
        let mut out = bytes.to_vec();
        out[at] ^= 0x40;
        out
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, reason = "tests index what they built")]
mod tests {
    use super::*;

    /// A file of a header block and `pages` pages of distinct bytes; with a `trailer`,
    /// each page's CRC32C sits at that offset, zeros after it. Returns the file and the
    /// pages' CRC32Cs over their whole bytes.
    fn paged_file(pages: usize, trailer: Option<usize>) -> (tempfile::NamedTempFile, Vec<u32>) {
        let mut bytes = vec![0u8; PAGE_SIZE * (1 + pages)];
        let mut crcs = Vec::new();
        for (g, page) in bytes[PAGE_SIZE..].chunks_exact_mut(PAGE_SIZE).enumerate() {
            for (i, b) in page.iter_mut().enumerate() {
                *b = (i * 7 + g * 13) as u8;
            }
            if let Some(at) = trailer {
                page[at..].fill(0);
                let crc = crc32c::crc32c(&page[..at]);
                page[at..at + 4].copy_from_slice(&crc.to_le_bytes());
            }
            crcs.push(crc32c::crc32c(page));
        }
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, &bytes).unwrap();
        (f, crcs)
    }

    fn flip(f: &tempfile::NamedTempFile, at: u64) {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(f.path())
            .unwrap();
        let mut b = [0u8];
        file.read_exact_at(&mut b, at).unwrap();
        file.write_all_at(&[b[0] ^ 0x40], at).unwrap();
    }

    #[test]
    fn runs_are_one_read_each_checked_against_crcs_kept_apart() {
        let (tmp, crcs) = paged_file(3, None);
        let file = File::open(tmp.path()).unwrap();
        let pages = Pages::paged(&file, tmp.path(), 3, PageCrc::Apart(&crcs), false);
        let mut r = PageReader::new(0);
        let run = r.read_run(&pages, 0, 3).unwrap().to_vec();
        assert_eq!(run.len(), 3 * PAGE_SIZE);
        assert_eq!(run[PAGE_SIZE + 1], 7 + 13);
        r.page(&pages, 2).unwrap();
        assert_eq!(
            r.stats(),
            IoStats {
                blocks: 4,
                bytes: 4 * PAGE_SIZE as u64,
                reads: 2,
                ..IoStats::default()
            }
        );
        // Past the last page: refused, nothing read.
        assert!(matches!(
            r.read_run(&pages, 2, 2),
            Err(Error::Misuse { .. })
        ));
        assert_eq!(r.stats().reads, 2);
        // A flipped byte in page 1: the run holding it is refused, naming block 2 (the
        // header is block 1's predecessor), or block 1 where pages count from 0.
        flip(&tmp, page_offset(1) + 100);
        let err = r.read_run(&pages, 0, 3).unwrap_err();
        assert!(
            matches!(err, Error::ChecksumMismatch { block: 2, expected, .. } if expected == crcs[1]),
            "{err}"
        );
        let data = Pages {
            block_base: 0,
            ..pages
        };
        let err = r.read_run(&data, 1, 1).unwrap_err();
        assert!(
            matches!(err, Error::ChecksumMismatch { block: 1, .. }),
            "{err}"
        );
        r.read_run(&data, 2, 1).unwrap();
    }

    #[test]
    fn a_trailer_crc_is_checked_and_the_padding_after_it_must_be_zero() {
        const AT: usize = 4000;
        let (tmp, _) = paged_file(2, Some(AT));
        let file = File::open(tmp.path()).unwrap();
        let pages = Pages::paged(&file, tmp.path(), 2, PageCrc::Trailer { at: AT }, false);
        let mut r = PageReader::new(0);
        r.read_run(&pages, 0, 2).unwrap();
        // A byte past the CRC: the CRC holds, the padding does not.
        flip(&tmp, page_offset(1) + AT as u64 + 10);
        let err = r.page(&pages, 1).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Format {
                    problem: FormatError::NonZeroPadding { what: "a page" },
                    ..
                }
            ),
            "{err}"
        );
        // A byte under the CRC.
        flip(&tmp, page_offset(0) + 5);
        let err = r.page(&pages, 0).unwrap_err();
        assert!(
            matches!(err, Error::ChecksumMismatch { block: 1, .. }),
            "{err}"
        );
        assert_eq!(r.stats().reads, 3, "failed reads are counted too");
    }

    #[test]
    fn the_cache_keeps_the_least_recently_used_pages_and_reads_the_others() {
        let (tmp, crcs) = paged_file(3, None);
        let file = File::open(tmp.path()).unwrap();
        let pages = Pages::paged(&file, tmp.path(), 3, PageCrc::Apart(&crcs), false);
        let mut r = PageReader::new(2);
        for g in [0, 1, 0, 0] {
            r.page(&pages, g).unwrap();
        }
        assert_eq!(r.stats().reads, 2, "pages 0 and 1 read once");
        // Page 2 pushes out page 1, the least recently used; page 0 stays.
        assert_eq!(r.page(&pages, 2).unwrap()[0], 26);
        r.page(&pages, 0).unwrap();
        assert_eq!(r.stats().reads, 3);
        r.page(&pages, 1).unwrap();
        assert_eq!(r.stats().reads, 4);
        // A corrupt page is never kept: each ask reads it again.
        flip(&tmp, page_offset(2) + 1);
        let mut r = PageReader::new(2);
        for _ in 0..2 {
            assert!(r.page(&pages, 2).is_err());
        }
        assert_eq!(r.stats().reads, 2);
    }
}
