//! The partitions file: the pages of a learned partition index, then its model and partition
//! map, all checksummed.
//!
//! | offset | size | field                                                      |
//! |-------:|-----:|------------------------------------------------------------|
//! | 0      | 8    | magic `LIDXPRT\0`                                          |
//! | 8      | 4    | format version (1)                                         |
//! | 12     | 4    | reserved, zero                                             |
//! | 16     | 8    | tuples, n                                                  |
//! | 24     | 8    | partitions, P (at least 1)                                 |
//! | 32     | 8    | pages, G (at least P)                                      |
//! | 40     | 8    | index length L                                             |
//! | 48     | 4    | CRC32C of the index                                        |
//! | 52     | 4    | CRC32C of bytes 0 .. 52                                    |
//! | 56     | 4040 | zero                                                       |
//! | 4096·(1+g) | 4096 | page g: up to 256 (key, value) tuples, then zeros      |
//! | 4096·(1+G) | L | the index                                                |
//!
//! The index: the model's length and payload (the PGM payload of `.idx` files, version 2),
//! each partition's tuple count (`P` × `u64`), the pages of every partition in partition
//! order (`G` × `u64`; partition `p` has `max(1, ⌈count / 256⌉)` pages, the first being
//! page `p`), and each page's CRC32C over its 4096 bytes (`G` × `u32`). Integers are
//! little-endian.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{PAGE_TUPLES, PartitionIndex};
use crate::files::AtomicFile;
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::files::paged;
use crate::index::{Index, Pgm};
use crate::storage::{BLOCK_SIZE, IoStats, TUPLE_SIZE, Tuple};
use crate::{Error, FormatError, Result};

/// The first eight bytes of a partitions file.
pub const MAGIC: [u8; 8] = *b"LIDXPRT\0";
/// Format version written and read.
pub const VERSION: u32 = 1;

use crate::files::paged::page_offset;

/// Writes the index after the last page and the header in front; returns the bytes written.
pub(super) fn write_index(out: &mut AtomicFile, index: &PartitionIndex) -> Result<u64> {
    let mut payload = Vec::new();
    let mut model = Vec::new();
    index.ranker.model.encode(&mut model);
    let mut e = Encoder(&mut payload);
    e.u64(model.len() as u64);
    e.0.extend_from_slice(&model);
    for &c in &index.counts {
        e.u64(c);
    }
    for &g in &index.pages {
        e.u64(g);
    }
    for &crc in &index.page_crcs {
        e.u32(crc);
    }
    let fields = [index.n, index.partitions(), index.total_pages()];
    paged::write_tail_and_header(out, MAGIC, VERSION, fields, index.total_pages(), &payload)
}

/// An open partitions file: its checked index, and the file for reading pages.
#[derive(Debug)]
pub struct PartitionFile {
    path: PathBuf,
    file: File,
    index: PartitionIndex,
}

impl PartitionFile {
    /// Opens and checks the file at `path`: magic, version, header and index checksums,
    /// the file's length, and the partition map's invariants (counts add up to n, every
    /// page belongs to one partition, each partition has the pages its count needs).
    /// Pages are checked when read.
    pub fn open(path: &Path) -> Result<PartitionFile> {
        let opened = paged::open(path, MAGIC, VERSION, "lidx partitions file", 2)?;
        let fail = |problem| Error::format(path, problem);
        let [n, partitions, pages] = opened.fields;
        if partitions == 0 || pages < partitions {
            return Err(fail(invalid(
                "partitions",
                partitions,
                "at least 1, and at most the pages",
            )));
        }
        let index = decode_index(&opened.tail, n, partitions, pages).map_err(fail)?;
        Ok(PartitionFile {
            path: path.to_path_buf(),
            file: opened.file,
            index,
        })
    }

    /// The model and partition map.
    pub fn index(&self) -> &PartitionIndex {
        &self.index
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Asks the kernel to start reading partition `p`'s pages into the page cache
    /// (`posix_fadvise(WILLNEED)`, one call per run of consecutive pages) and returns at
    /// once, so that they arrive while the caller works on the partition before; a later
    /// [`read_partition`](Self::read_partition) finds them there. A hint: where the kernel
    /// declines it, nothing changes.
    pub fn prefetch_partition(&self, p: u64) {
        let pages = self.index.pages_of(p);
        for run in pages.chunk_by(|a, b| b.checked_sub(*a) == Some(1)) {
            let len = std::num::NonZeroU64::new(run.len() as u64 * BLOCK_SIZE as u64);
            let _ = rustix::fs::fadvise(
                &self.file,
                page_offset(run[0]),
                len,
                rustix::fs::Advice::WillNeed,
            );
        }
    }

    /// Appends partition `p`'s tuples (unsorted, in the order they were written) to
    /// `tuples`, reading its pages (consecutive pages in one read) and checking each
    /// page's checksum. Returns the I/O.
    pub fn read_partition(&self, p: u64, tuples: &mut Vec<Tuple>) -> Result<IoStats> {
        self.scan_pages(p, usize::MAX, |page| {
            tuples.extend(
                page.chunks_exact(TUPLE_SIZE)
                    .map(|b| *bytemuck::from_bytes::<Tuple>(b)),
            );
            Ok(())
        })
    }

    /// Hands partition `p`'s tuples to `visit` in the order they were written, a read of
    /// at most `max_pages` pages at a time (consecutive pages in one read), checking each
    /// page's checksum: for partitions too large to hold. Returns the I/O.
    pub fn scan_partition(
        &self,
        p: u64,
        max_pages: usize,
        mut visit: impl FnMut(&[Tuple]) -> Result<()>,
    ) -> Result<IoStats> {
        let mut tuples: Vec<Tuple> = Vec::new();
        let mut pages_held = 0;
        self.scan_pages(p, max_pages, |page| {
            tuples.extend(
                page.chunks_exact(TUPLE_SIZE)
                    .map(|b| *bytemuck::from_bytes::<Tuple>(b)),
            );
            pages_held += 1;
            if pages_held == max_pages.max(1) {
                visit(&tuples)?;
                tuples.clear();
                pages_held = 0;
            }
            Ok(())
        })
        .and_then(|io| {
            if !tuples.is_empty() {
                visit(&tuples)?;
            }
            Ok(io)
        })
    }

    /// Calls `visit` with the tuple bytes of each of partition `p`'s pages in order,
    /// reading runs of consecutive pages (at most `max_pages`) in one call each and checking
    /// every page's checksum.
    fn scan_pages(
        &self,
        p: u64,
        max_pages: usize,
        mut visit: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<IoStats> {
        let pages = self.index.pages_of(p);
        let mut left = self.index.count(p);
        let mut buf = vec![0u8; BLOCK_SIZE];
        let mut reads = 0;
        let mut i = 0;
        while i < pages.len() {
            // A run of consecutive page numbers is one read.
            let mut j = i + 1;
            while j < pages.len() && j - i < max_pages.max(1) && pages[j] == pages[j - 1] + 1 {
                j += 1;
            }
            buf.resize((j - i) * BLOCK_SIZE, 0);
            self.file
                .read_exact_at(&mut buf, page_offset(pages[i]))
                .map_err(|e| Error::io(&self.path, "read", e))?;
            reads += 1;
            for (k, page) in buf.chunks_exact(BLOCK_SIZE).enumerate() {
                let number = pages[i + k];
                let expected = self.index.page_crcs[number as usize];
                let got = crc32c::crc32c(page);
                if got != expected {
                    return Err(Error::ChecksumMismatch {
                        path: self.path.clone(),
                        block: 1 + number,
                        expected,
                        got,
                    });
                }
                let here = left.min(PAGE_TUPLES) as usize;
                visit(&page[..here * TUPLE_SIZE])?;
                left -= here as u64;
            }
            i = j;
        }
        Ok(IoStats {
            blocks: pages.len() as u64,
            bytes: (pages.len() * BLOCK_SIZE) as u64,
            reads,
        })
    }

    /// The values of every tuple with key `key`, in the order they were written: reads
    /// exactly the key's partition.
    pub fn lookup(&self, key: u64) -> Result<Vec<u64>> {
        let mut tuples = Vec::new();
        self.read_partition(self.index.partition_of(key), &mut tuples)?;
        Ok(tuples
            .into_iter()
            .filter(|t| t.key == key)
            .map(|t| t.value)
            .collect())
    }
}

/// Decodes and checks the index of a file with `n` tuples, `partitions` and `pages`.
fn decode_index(
    bytes: &[u8],
    n: u64,
    partitions: u64,
    pages: u64,
) -> std::result::Result<PartitionIndex, FormatError> {
    let mut d = Decoder::new(bytes, "a partitions file's index");
    let model_len = d.count(1)?;
    let model = Pgm::decode(d.bytes(model_len)?)?;
    if (n == 0) != (model.len() == 0) {
        return Err(invalid(
            "model keys",
            model.len(),
            "at least one sampled key when n > 0",
        ));
    }
    let p = usize::try_from(partitions).unwrap_or(usize::MAX);
    let g = usize::try_from(pages).unwrap_or(usize::MAX);
    let mut counts = Vec::with_capacity(p.min(bytes.len() / 8));
    let mut page_start = Vec::with_capacity(counts.capacity() + 1);
    page_start.push(0u64);
    let mut total = 0u64;
    for _ in 0..partitions {
        let c = d.u64()?;
        total = total.saturating_add(c);
        counts.push(c);
        let needs = c.div_ceil(PAGE_TUPLES).max(1);
        let end = page_start
            .last()
            .copied()
            .unwrap_or(0)
            .saturating_add(needs);
        page_start.push(end);
    }
    if total != n {
        return Err(FormatError::HeaderDisagrees {
            field: "tuples",
            header: n,
            data: total,
        });
    }
    if page_start.last().copied() != Some(pages) {
        return Err(FormatError::HeaderDisagrees {
            field: "pages",
            header: pages,
            data: page_start.last().copied().unwrap_or(0),
        });
    }
    let mut seen = vec![false; g.min(bytes.len() / 8 + 1)];
    let mut list = Vec::with_capacity(seen.len());
    for _ in 0..pages {
        let page = d.u64()?;
        match seen.get_mut(usize::try_from(page).unwrap_or(usize::MAX)) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(invalid(
                    "page",
                    page,
                    "a page below the page count, listed once",
                ));
            }
        }
        list.push(page);
    }
    let mut page_crcs = Vec::with_capacity(seen.len());
    for _ in 0..pages {
        page_crcs.push(d.u32()?);
    }
    d.finish()?;
    Ok(PartitionIndex {
        ranker: super::Ranker::new(model),
        n,
        counts,
        page_start,
        pages: list,
        page_crcs,
    })
}
