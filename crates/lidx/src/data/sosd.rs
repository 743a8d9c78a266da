//! SOSD key files: a little-endian `u64` count, then that many little-endian `u64` keys.
//!
//! This is the format of the public SOSD data sets (`books_200M_uint64`, `fb_200M_uint64`,
//! …). [`parse_keys`] works on any byte slice; [`KeyFile`] memory-maps a file (through
//! `files`, which alone opens and maps) and hands out its keys as a `&[u64]`
//! without copying.

#![deny(clippy::indexing_slicing)]

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::files::{AtomicFile, map_readonly, open_regular};
use crate::{Error, FormatError, Result};

/// Bytes before the first key.
const COUNT_LEN: usize = 8;

/// Parses SOSD bytes: checks that the count agrees with the length exactly and returns the
/// keys, borrowed when `bytes` is 8-byte aligned after the count, copied otherwise.
pub fn parse_keys(bytes: &[u8]) -> Result<Cow<'_, [u64]>, FormatError> {
    let Some((count, body)) = bytes.split_first_chunk::<COUNT_LEN>() else {
        return Err(FormatError::Truncated {
            what: "the 8-byte key count of an SOSD key file",
            expected: COUNT_LEN as u64,
            actual: bytes.len() as u64,
        });
    };
    let count = u64::from_le_bytes(*count);
    let expected = count
        .checked_mul(8)
        .and_then(|b| b.checked_add(COUNT_LEN as u64));
    if expected != Some(bytes.len() as u64) {
        return Err(FormatError::CountMismatch {
            count,
            unit: "keys",
            expected: expected.unwrap_or(u64::MAX),
            actual: bytes.len() as u64,
        });
    }
    Ok(match bytemuck::try_cast_slice::<u8, u64>(body) {
        Ok(keys) => Cow::Borrowed(keys),
        Err(_) => Cow::Owned(
            body.chunks_exact(8)
                .filter_map(|c| c.first_chunk::<8>())
                .map(|c| u64::from_le_bytes(*c))
                .collect(),
        ),
    })
}

/// A memory-mapped SOSD key file whose count was checked against its length.
pub struct KeyFile {
    path: PathBuf,
    map: Mmap,
}

impl KeyFile {
    /// Opens and checks the key file at `path`.
    pub fn open(path: &Path) -> Result<KeyFile> {
        let (file, len) = open_regular(path)?;
        if len < COUNT_LEN as u64 {
            // Too short to hold the count, let alone to map.
            return Err(Error::format(
                path,
                FormatError::Truncated {
                    what: "the 8-byte key count of an SOSD key file",
                    expected: COUNT_LEN as u64,
                    actual: len,
                },
            ));
        }
        let map = map_readonly(&file, path, 0, len as usize)?;
        parse_keys(&map).map_err(|p| Error::format(path, p))?;
        Ok(KeyFile {
            path: path.to_path_buf(),
            map,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The keys, in file order, straight from the map.
    pub fn keys(&self) -> &[u64] {
        // A map starts on a page boundary, so the keys at offset 8 are aligned, and `open`
        // checked the length: the cast cannot fail.
        bytemuck::cast_slice(self.map.get(COUNT_LEN..).unwrap_or_default())
    }

    /// Fails with [`Error::Unsorted`] naming the file, the first key out of order and
    /// `needs` (what needs the keys sorted), unless the keys are in non-decreasing order.
    pub fn require_sorted(&self, needs: &'static str) -> Result<()> {
        let keys = self.keys();
        match super::first_unsorted(keys) {
            None => Ok(()),
            Some(i) => Err(Error::Unsorted {
                path: self.path.clone(),
                position: i as u64,
                previous: keys.get(i.wrapping_sub(1)).copied().unwrap_or_default(),
                key: keys.get(i).copied().unwrap_or_default(),
                hint: needs,
            }),
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys().len()
    }

    /// True when the file holds no keys.
    pub fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }
}

/// Writes `keys` as an SOSD key file at `path`, atomically.
pub fn write_keys(path: &Path, keys: &[u64]) -> Result<()> {
    let mut out = AtomicFile::create(path)?;
    out.write_all(&(keys.len() as u64).to_le_bytes())?;
    for chunk in keys.chunks(1 << 16) {
        out.write_all(bytemuck::cast_slice(chunk))?;
    }
    out.finish()
}
