//! The shape lidx's paged files share (FORMAT.md sections 6, 7 and 10: the partitions file,
//! the inserted B+tree file, the ALEX file): a 4096-byte header block (magic, version, three
//! `u64` fields, the tail's length and CRC32C, the header's own CRC32C, then zeros to the
//! block's end), 4096-byte pages, then a tail holding the index.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

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

/// A file of this shape, opened and checked as far as the shape goes.
pub(crate) struct Opened {
    pub file: File,
    pub fields: [u64; 3],
    pub tail: Vec<u8>,
}

/// Opens the file at `path` and checks its shape: at least a header block, `magic`,
/// the header CRC, `version`, the reserved word and bytes `56..4096` of the header block
/// zero, a length of exactly the header, `fields[pages_field]` pages and the tail, and the
/// tail's CRC. `what` names the kind of file in errors.
pub(crate) fn open(
    path: &Path,
    magic: [u8; 8],
    version: u32,
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
    let (fields, tail_len, tail_crc) = header_fields(fields, version, what).map_err(fail)?;
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
    Ok(Opened { file, fields, tail })
}

/// The version-checked fields after the magic: the three `u64`s, the tail's length and CRC.
fn header_fields(
    bytes: &[u8],
    version: u32,
    what: &'static str,
) -> std::result::Result<([u64; 3], u64, u32), FormatError> {
    let mut d = Decoder::new(bytes.get(8..).unwrap_or_default(), what);
    let found = d.u32()?;
    if found != version {
        return Err(FormatError::UnsupportedVersion {
            found,
            oldest: version,
            newest: version,
        });
    }
    let _reserved = d.u32()?;
    let fields = [d.u64()?, d.u64()?, d.u64()?];
    Ok((fields, d.u64()?, d.u32()?))
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

/// Test helpers for the paged formats' tests.
#[cfg(test)]
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
