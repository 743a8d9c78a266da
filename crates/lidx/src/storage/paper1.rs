//! Paper 1's table layout, for exchanging files with its code (paper 1, section 4.1:
//! "the first 16 bytes of the file are reserved for a header to store the number and size
//! of the key-value tuples, followed by the key-value tuples themselves").
//!
//! Layout, little-endian: `u64` tuple count, `u32` key size, `u32` value size, then the
//! tuples packed (key `u64`, value `u64`). lidx reads and writes 8-byte keys and values, the
//! sizes paper 1 uses; other sizes are refused with a clear error. Paper 1's tables are
//! sorted, so export requires a sorted table.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use super::format::{TUPLE_SIZE, TableHeader, Tuple};
use super::table::{Table, TableWriter};
use crate::files::{AtomicFile, open_regular, refuse_same_file};
use crate::{Error, FormatError, Result};

/// Bytes in paper 1's header.
pub const HEADER_LEN: usize = 16;

/// Decodes paper 1's 16-byte header and returns the tuple count, after checking the key
/// and value sizes and that a file of `file_len` bytes holds exactly that many tuples.
#[deny(clippy::indexing_slicing)]
pub fn decode_header(bytes: &[u8], file_len: u64) -> Result<u64, FormatError> {
    let Some(
        &[
            c0,
            c1,
            c2,
            c3,
            c4,
            c5,
            c6,
            c7,
            k0,
            k1,
            k2,
            k3,
            v0,
            v1,
            v2,
            v3,
        ],
    ) = bytes.first_chunk::<HEADER_LEN>()
    else {
        return Err(FormatError::Truncated {
            what: "paper 1's 16-byte header",
            expected: HEADER_LEN as u64,
            actual: bytes.len() as u64,
        });
    };
    let count = u64::from_le_bytes([c0, c1, c2, c3, c4, c5, c6, c7]);
    let key_size = u32::from_le_bytes([k0, k1, k2, k3]);
    let value_size = u32::from_le_bytes([v0, v1, v2, v3]);
    for (field, size) in [("key size", key_size), ("value size", value_size)] {
        if size != 8 {
            return Err(FormatError::BadField {
                field,
                value: size.into(),
                expected: "8 (lidx exchanges 8-byte keys and values)",
            });
        }
    }
    let expected = count
        .checked_mul(TUPLE_SIZE as u64)
        .and_then(|b| b.checked_add(HEADER_LEN as u64));
    if expected != Some(file_len) {
        return Err(FormatError::CountMismatch {
            count,
            unit: "tuples",
            expected: expected.unwrap_or(u64::MAX),
            actual: file_len,
        });
    }
    Ok(count)
}

/// Encodes paper 1's header for `count` tuples of 8-byte keys and values.
pub fn encode_header(count: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&count.to_le_bytes());
    h[8..12].copy_from_slice(&8u32.to_le_bytes());
    h[12..].copy_from_slice(&8u32.to_le_bytes());
    h
}

/// Opens paper 1's file at `src`, checks its header against its length and returns a
/// reader positioned at the first tuple, with the tuple count.
fn open_checked(src: &Path) -> Result<(BufReader<File>, u64)> {
    let (file, len) = open_regular(src)?;
    let mut reader = BufReader::with_capacity(4 << 20, file);
    let mut head = [0u8; HEADER_LEN];
    let got = read_up_to(&mut reader, &mut head).map_err(|e| Error::io(src, "read", e))?;
    let count = decode_header(&head[..got], len).map_err(|p| Error::format(src, p))?;
    Ok((reader, count))
}

/// The number of tuples in paper 1's file at `src`, after checking its header.
pub fn tuple_count(src: &Path) -> Result<u64> {
    Ok(open_checked(src)?.1)
}

/// Converts paper 1's file at `src` into a `.tbl` at `dst`; `progress` gets the tuples
/// converted so far. Refuses a `dst` that is `src` ([`Error::OutputIsInput`]).
pub fn import(src: &Path, dst: &Path, mut progress: impl FnMut(u64)) -> Result<TableHeader> {
    refuse_same_file(src, dst)?;
    let (mut reader, count) = open_checked(src)?;
    let mut writer = TableWriter::create(dst)?;
    let mut chunk = vec![Tuple::default(); 1 << 16];
    let mut left = count;
    while left > 0 {
        let take = left.min(chunk.len() as u64) as usize;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut chunk[..take]);
        reader
            .read_exact(bytes)
            .map_err(|e| Error::io(src, "read", e))?;
        for &t in &chunk[..take] {
            writer.push(t)?;
        }
        left -= take as u64;
        progress(count - left);
    }
    writer.finish()
}

/// Writes the sorted table `table` at `dst` in paper 1's layout; `progress` gets the
/// tuples written so far. Refuses a `dst` that is the table's file
/// ([`Error::OutputIsInput`]).
pub fn export(table: &Table, dst: &Path, mut progress: impl FnMut(u64)) -> Result<()> {
    refuse_same_file(table.path(), dst)?;
    table.require_sorted("export to paper 1's layout")?;
    let mut out = AtomicFile::create(dst)?;
    out.write_all(&encode_header(table.len()))?;
    let mut done = 0u64;
    table.scan(|tuples| {
        out.write_all(bytemuck::cast_slice(tuples))?;
        done += tuples.len() as u64;
        progress(done);
        Ok(())
    })?;
    out.finish()
}

fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}
