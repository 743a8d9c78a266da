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
use crate::files::{AtomicFile, open_regular};
use crate::index::codec::{Decoder, Encoder, invalid};
use crate::index::{Index, Pgm};
use crate::storage::{BLOCK_SIZE, IoStats, TUPLE_SIZE, Tuple};
use crate::{Error, FormatError, Result};

/// The first eight bytes of a partitions file.
pub const MAGIC: [u8; 8] = *b"LIDXPRT\0";
/// Format version written and read.
pub const VERSION: u32 = 1;
const HEADER_FIELDS: usize = 52;

/// Byte offset of page `page`.
pub(super) fn page_offset(page: u64) -> u64 {
    (1 + page) * BLOCK_SIZE as u64
}

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
    out.write_all_at(page_offset(index.total_pages()), &payload)?;
    let mut header = Vec::with_capacity(BLOCK_SIZE);
    let mut e = Encoder(&mut header);
    for b in MAGIC {
        e.u8(b);
    }
    e.u32(VERSION);
    e.u32(0);
    e.u64(index.n);
    e.u64(index.partitions());
    e.u64(index.total_pages());
    e.u64(payload.len() as u64);
    e.u32(crc32c::crc32c(&payload));
    let crc = crc32c::crc32c(&header);
    Encoder(&mut header).u32(crc);
    header.resize(BLOCK_SIZE, 0);
    out.write_all_at(0, &header)?;
    Ok((payload.len() + header.len()) as u64)
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
        let (file, len) = open_regular(path)?;
        let fail = |problem| Error::format(path, problem);
        let mut header = [0u8; HEADER_FIELDS + 4];
        if len < BLOCK_SIZE as u64 {
            return Err(fail(FormatError::Truncated {
                what: "a partitions file's header",
                expected: BLOCK_SIZE as u64,
                actual: len,
            }));
        }
        file.read_exact_at(&mut header, 0)
            .map_err(|e| Error::io(path, "read", e))?;
        if header[..8] != MAGIC {
            return Err(fail(FormatError::BadMagic {
                expected: "lidx partitions file",
                found: header[..8].to_vec(),
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
        let (n, partitions, pages, index_len, index_crc) = header_fields(fields).map_err(fail)?;
        if partitions == 0 || pages < partitions {
            return Err(fail(invalid(
                "partitions",
                partitions,
                "at least 1, and at most the pages",
            )));
        }
        let expected_len = pages
            .checked_add(1)
            .and_then(|b| b.checked_mul(BLOCK_SIZE as u64))
            .and_then(|b| b.checked_add(index_len));
        if expected_len != Some(len) {
            return Err(fail(FormatError::CountMismatch {
                count: pages,
                unit: "pages and an index",
                expected: expected_len.unwrap_or(u64::MAX),
                actual: len,
            }));
        }
        let mut payload = vec![0u8; usize::try_from(index_len).unwrap_or(usize::MAX)];
        file.read_exact_at(&mut payload, page_offset(pages))
            .map_err(|e| Error::io(path, "read", e))?;
        let got = crc32c::crc32c(&payload);
        if got != index_crc {
            return Err(fail(FormatError::FileChecksum {
                expected: index_crc,
                got,
            }));
        }
        let index = decode_index(&payload, n, partitions, pages).map_err(fail)?;
        Ok(PartitionFile {
            path: path.to_path_buf(),
            file,
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

    /// Appends partition `p`'s tuples (unsorted, in the order they were written) to
    /// `tuples`, reading its pages (consecutive pages in one read) and checking each
    /// page's checksum. Returns the I/O.
    pub fn read_partition(&self, p: u64, tuples: &mut Vec<Tuple>) -> Result<IoStats> {
        let pages = self.index.pages_of(p);
        let mut left = self.index.count(p);
        let mut buf = vec![0u8; BLOCK_SIZE];
        let mut reads = 0;
        let mut i = 0;
        while i < pages.len() {
            // A run of consecutive page numbers is one read.
            let mut j = i + 1;
            while j < pages.len() && pages[j] == pages[j - 1] + 1 {
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
                tuples.extend(
                    page[..here * TUPLE_SIZE]
                        .chunks_exact(TUPLE_SIZE)
                        .map(|b| *bytemuck::from_bytes::<Tuple>(b)),
                );
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

/// The version-checked header fields after the magic: n, P, G, L and the index's CRC.
fn header_fields(fields: &[u8]) -> std::result::Result<(u64, u64, u64, u64, u32), FormatError> {
    let mut d = Decoder::new(
        fields.get(8..).unwrap_or_default(),
        "a partitions file's header",
    );
    let version = d.u32()?;
    if version != VERSION {
        return Err(FormatError::UnsupportedVersion {
            found: version,
            oldest: VERSION,
            newest: VERSION,
        });
    }
    let _reserved = d.u32()?;
    Ok((d.u64()?, d.u64()?, d.u64()?, d.u64()?, d.u32()?))
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
