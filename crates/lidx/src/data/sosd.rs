//! SOSD key files: a little-endian `u64` count, then that many little-endian `u64` keys.
//!
//! This is the format of the public SOSD data sets (`books_200M_uint64`, `fb_200M_uint64`,
//! …). [`parse_keys`] works on any byte slice; [`KeyFile`] memory-maps a file and hands out
//! its keys as a `&[u64]` without copying.

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::storage::AtomicFile;
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
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
    })
}

/// A memory-mapped SOSD key file whose count was checked against its length.
pub struct KeyFile {
    path: PathBuf,
    map: Option<Mmap>,
}

impl KeyFile {
    /// Opens and checks the key file at `path`.
    pub fn open(path: &Path) -> Result<KeyFile> {
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(path, "read the metadata of", e))?
            .len();
        if len < COUNT_LEN as u64 {
            // Too short to map usefully; parse reports what is missing.
            let bytes = std::fs::read(path).map_err(|e| Error::io(path, "read", e))?;
            parse_keys(&bytes).map_err(|p| Error::format(path, p))?;
        }
        // SAFETY: the map is read-only and private; lidx writes key files only by creating a
        // new file and renaming it, so the pages change only if another program modifies the
        // file while it is mapped, which lidx documents as unsupported.
        #[expect(
            unsafe_code,
            reason = "memory-mapping a file is unsafe; see SAFETY above"
        )]
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, "memory-map", e))?;
        parse_keys(&map).map_err(|p| Error::format(path, p))?;
        Ok(KeyFile {
            path: path.to_path_buf(),
            map: Some(map),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The keys, in file order, straight from the map.
    pub fn keys(&self) -> &[u64] {
        let bytes = self.map.as_deref().unwrap_or(&[]);
        // A map starts on a page boundary, so the keys at offset 8 are aligned and
        // `try_cast_slice` succeeds; the length was checked in `open`.
        bytes
            .get(COUNT_LEN..)
            .and_then(|b| bytemuck::try_cast_slice(b).ok())
            .unwrap_or(&[])
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
