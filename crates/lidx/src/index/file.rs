//! Index files (`.idx`): a header that names the kind and the keys the index was built on,
//! the kind's payload, and a CRC32C of everything before it.
//!
//! | offset | size | field                                                 |
//! |-------:|-----:|-------------------------------------------------------|
//! | 0      | 8    | magic `LIDXIDX\0`                                     |
//! | 8      | 4    | format version (2; 1 is still read)                   |
//! | 12     | 1    | kind tag ([`IndexKind`])                              |
//! | 13     | 3    | reserved, zero                                        |
//! | 16     | 8    | keys indexed, n                                       |
//! | 24     | 8    | smallest key (0 when n = 0)                           |
//! | 32     | 8    | largest key (0 when n = 0)                            |
//! | 40     | 4    | CRC32C of the keys (little-endian `u64`s)             |
//! | 44     | 4    | reserved, zero                                        |
//! | 48     | 8    | payload length P                                      |
//! | 56     | P    | payload (see each kind's `encode`)                    |
//! | 56 + P | 4    | CRC32C of bytes `0 .. 56 + P`                          |
//!
//! The keys' facts let a join refuse an index built for another table before it reads a
//! block (the public peers' serialized indexes carry no magic, version or checksum).

#![deny(clippy::indexing_slicing)]

use std::path::Path;

use super::{AnyIndex, IndexKind};
use crate::files::codec::{Decoder, Encoder};
use crate::files::{AtomicFile, map_readonly, open_regular};
use crate::storage::Table;
use crate::{Error, FormatError, Result};

/// The first eight bytes of every index file.
pub const MAGIC: [u8; 8] = *b"LIDXIDX\0";
/// Format version written; history: 1 = first version; 2 = PGM segments in 16 bytes (the
/// PGM payload gained a form field).
pub const VERSION: u32 = 2;
/// Oldest format version read.
pub const OLDEST_VERSION: u32 = 1;
const HEADER_BYTES: usize = 56;

/// What an index file says about the keys it was built on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeysFingerprint {
    /// Number of keys.
    pub n: u64,
    /// Smallest key (0 when n = 0).
    pub min_key: u64,
    /// Largest key (0 when n = 0).
    pub max_key: u64,
    /// CRC32C of the keys as little-endian `u64`s.
    pub crc32c: u32,
}

impl KeysFingerprint {
    /// The fingerprint of `keys` (one pass, at memory speed).
    pub fn of(keys: &[u64]) -> KeysFingerprint {
        KeysFingerprint {
            n: keys.len() as u64,
            min_key: keys.first().copied().unwrap_or(0),
            max_key: keys.last().copied().unwrap_or(0),
            crc32c: crc32c::crc32c(bytemuck::cast_slice(keys)),
        }
    }
}

impl KeysFingerprint {
    /// Fails with [`Error::IndexMismatch`] unless `actual`, the fingerprint of the table at
    /// `table_path`, is this one, that of the keys the index at `index_path` was built on.
    pub fn check(
        &self,
        actual: &KeysFingerprint,
        index_path: &Path,
        table_path: &Path,
    ) -> Result<()> {
        if self == actual {
            return Ok(());
        }
        Err(Error::IndexMismatch {
            path: index_path.to_path_buf(),
            problem: format!(
                "the index was built for other keys than those of {} (index: {} keys, crc32c {:#010x}; table: {} keys, crc32c {:#010x}); rebuild it",
                table_path.display(),
                self.n,
                self.crc32c,
                actual.n,
                actual.crc32c
            ),
        })
    }
}

/// Loads the index file at `path` and checks it against `table` as far as the table's
/// header allows: the number of keys and their range (the keys' CRC needs every key; see
/// [`KeysFingerprint::check`]).
pub fn load_for(path: &Path, table: &Table) -> Result<AnyIndex> {
    let (index, stored) = load(path)?;
    check_table(path, &stored, table)?;
    Ok(index)
}

/// Fails with [`Error::IndexMismatch`] unless the index at `path`, built on keys with
/// fingerprint `stored`, agrees with `table`'s header: the number of keys and their range.
pub fn check_table(path: &Path, stored: &KeysFingerprint, table: &Table) -> Result<()> {
    let h = table.header();
    let from_header = KeysFingerprint {
        n: h.count,
        min_key: h.min_key,
        max_key: h.max_key,
        crc32c: stored.crc32c,
    };
    stored.check(&from_header, path, table.path())
}

/// Encodes `index` built on keys with `fingerprint` as index-file bytes.
pub fn encode(index: &AnyIndex, fingerprint: &KeysFingerprint) -> Vec<u8> {
    let mut payload = Vec::new();
    index.encode(&mut payload);
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len() + 4);
    let mut e = Encoder(&mut out);
    for b in MAGIC {
        e.u8(b);
    }
    e.u32(VERSION);
    e.u8(index.kind() as u8);
    for _ in 0..3 {
        e.u8(0);
    }
    e.u64(fingerprint.n);
    e.u64(fingerprint.min_key);
    e.u64(fingerprint.max_key);
    e.u32(fingerprint.crc32c);
    e.u32(0);
    e.u64(payload.len() as u64);
    out.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes index-file bytes: magic, version, checksum, header, then the kind's payload.
pub fn decode(bytes: &[u8]) -> Result<(AnyIndex, KeysFingerprint), FormatError> {
    let head = bytes.get(..MAGIC.len()).unwrap_or(bytes);
    if MAGIC.get(..head.len()) != Some(head) {
        return Err(FormatError::BadMagic {
            expected: "lidx index file",
            found: head.to_vec(),
        });
    }
    let Some((body, crc)) = bytes
        .split_last_chunk::<4>()
        .filter(|(b, _)| b.len() >= HEADER_BYTES)
    else {
        return Err(FormatError::Truncated {
            what: "an index file header",
            expected: HEADER_BYTES as u64 + 4,
            actual: bytes.len() as u64,
        });
    };
    let mut d = Decoder::new(body, "an index file header");
    for _ in 0..MAGIC.len() {
        d.u8()?;
    }
    let version = d.u32()?;
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(FormatError::UnsupportedVersion {
            found: version,
            oldest: OLDEST_VERSION,
            newest: VERSION,
        });
    }
    let stored = u32::from_le_bytes(*crc);
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(FormatError::FileChecksum {
            expected: stored,
            got: computed,
        });
    }
    let tag = d.u8()?;
    let kind = IndexKind::from_tag(tag).ok_or(FormatError::BadField {
        field: "index kind",
        value: tag.into(),
        expected: "a kind this build knows (pgm, sampled-pgm, rs, rmi, btree, binary)",
    })?;
    let reserved = [d.u8()?, d.u8()?, d.u8()?];
    let fingerprint = KeysFingerprint {
        n: d.u64()?,
        min_key: d.u64()?,
        max_key: d.u64()?,
        crc32c: d.u32()?,
    };
    let reserved2 = d.u32()?;
    if reserved != [0; 3] || reserved2 != 0 {
        return Err(FormatError::NonZeroPadding {
            what: "the index file header",
        });
    }
    let payload_len = d.u64()?;
    let payload = body.get(HEADER_BYTES..).unwrap_or_default();
    if payload_len != payload.len() as u64 {
        return Err(FormatError::CountMismatch {
            count: payload_len,
            unit: "payload bytes",
            expected: HEADER_BYTES as u64 + payload_len + 4,
            actual: bytes.len() as u64,
        });
    }
    let index = AnyIndex::decode_version(kind, payload, version)?;
    if index.len() != fingerprint.n {
        return Err(FormatError::HeaderDisagrees {
            field: "key count",
            header: fingerprint.n,
            data: index.len(),
        });
    }
    if fingerprint.min_key > fingerprint.max_key {
        return Err(FormatError::BadField {
            field: "smallest key",
            value: fingerprint.min_key,
            expected: "at most the largest key",
        });
    }
    Ok((index, fingerprint))
}

/// Saves `index` (built on keys with `fingerprint`) at `path`, atomically.
pub fn save(path: &Path, index: &AnyIndex, fingerprint: &KeysFingerprint) -> Result<()> {
    let mut out = AtomicFile::create(path)?;
    out.write_all(&encode(index, fingerprint))?;
    out.finish()
}

/// Loads the index file at `path`: maps it into memory and decodes it (the structures are
/// rebuilt from the mapped bytes once; their fields are interleaved in the file, so they are
/// not used in place).
pub fn load(path: &Path) -> Result<(AnyIndex, KeysFingerprint)> {
    let (file, len) = open_regular(path)?;
    if len < (HEADER_BYTES + 4) as u64 {
        // Too short to map (or to be an index): decode the few bytes to say what is wrong.
        let mut head = vec![0u8; len as usize];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut head, 0)
            .map_err(|e| Error::io(path, "read", e))?;
        return decode(&head).map_err(|p| Error::format(path, p));
    }
    let len = usize::try_from(len).map_err(|_| {
        Error::format(
            path,
            FormatError::BadField {
                field: "file length",
                value: len,
                expected: "a length this machine can map",
            },
        )
    })?;
    let map = map_readonly(&file, path, 0, len)?;
    decode(&map).map_err(|p| Error::format(path, p))
}
