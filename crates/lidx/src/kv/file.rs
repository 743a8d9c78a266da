//! The key-value file (FORMAT.md section 8; paper 4, section 3's SSTable with paper 4's and
//! paper 2's indexes): data blocks or pages, then the index blocks of the layout (the
//! SSTable's level-1 blocks, the tuned layers, the B+tree's nodes), then the in-memory
//! index ("meta", one per layout, in [`layout`](super::layout)), then a 72-byte footer
//! with magic, version, the layout and the meta's place and CRC32C.
//!
//! [`KvFile::open`] reads the footer and the meta, checks both, and keeps the meta in
//! memory; blocks are read on demand by a [`Reader`](super::Reader).
#![deny(clippy::indexing_slicing)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::block::Compression;
use super::keymap::KeyMap;
use super::keys::KeyEncoding;
use super::layout::tuned::LayerPlace;
use super::layout::{Layout, Meta};
use super::model::BlockModel;
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::files::{open_regular, reopen};
use crate::storage::ReadMode;
use crate::storage::profile::AffineCost;
use crate::{Error, FormatError, Result};

/// The footer's first 8 bytes.
pub const MAGIC: [u8; 8] = *b"LIDXKV\0\0";
/// The format version this build writes (it reads [`OLDEST_VERSION`] on).
pub const VERSION: u32 = 4;

/// The first version whose SSTable level-1 blocks are index blocks
/// ([`IndexBlock`](super::index_block::IndexBlock): separators, prefix compression, restart
/// points); before it they are blocks of records, each a data block's last key and handle.
pub const SEPARATOR_INDEX_VERSION: u32 = 3;

/// The first version whose tuned layout says of each layer whether it is a step layer
/// (before it every layer is a PGM layer).
pub const STEP_LAYER_VERSION: u32 = 3;

/// The first version whose learned files may keep their block locations in chunks read
/// when first needed (FORMAT.md section 8.6), tagged inline or chunked in the meta.
pub const CHUNKED_LOCATIONS_VERSION: u32 = 4;
/// The oldest format version this build reads.
pub const OLDEST_VERSION: u32 = 1;
/// Bytes of the footer.
pub const FOOTER: usize = 72;

/// Bytes of the file's end that opening it reads at once: the footer, and the meta with
/// it when it fits.
const TAIL_READ: u64 = 4096;

/// Where a block lies: its byte offset and its sealed size (trailer included; 0 for an
/// empty block of the learned layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handle {
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes on disk.
    pub size: u64,
}

impl Handle {
    /// Bytes an encoded handle takes.
    pub(crate) const BYTES: usize = 16;

    pub(crate) fn encode(self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u64(self.offset);
        e.u64(self.size);
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Handle> {
        let mut d = Decoder::new(bytes, "block handle");
        let h = Handle {
            offset: d.u64().ok()?,
            size: d.u64().ok()?,
        };
        d.finish().ok().map(|()| h)
    }

    /// One past its last byte.
    pub fn end(self) -> u64 {
        self.offset + self.size
    }
}

/// The footer's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Footer {
    /// The format version the file was written in.
    pub version: u32,
    /// The layout.
    pub layout: Layout,
    /// How keys were written.
    pub key_encoding: KeyEncoding,
    /// How blocks are stored.
    pub compression: Compression,
    /// Records in the file.
    pub records: u64,
    /// Data blocks (empty ones of the learned layout included).
    pub data_blocks: u64,
    /// The target block size τ in bytes (of uncompressed bodies).
    pub block_size: u64,
    /// Bytes of the data blocks, from offset 0.
    pub data_bytes: u64,
    /// Where the meta starts (after the level-1 index blocks, if any).
    pub meta_offset: u64,
    /// Bytes of the meta.
    pub meta_len: u64,
}

impl Footer {
    pub(crate) fn encode(&self, meta_crc: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER);
        out.extend_from_slice(&MAGIC);
        let mut e = Encoder(&mut out);
        e.u32(self.version);
        e.u8(self.layout.tag());
        e.u8(self.key_encoding.tag());
        e.u8(self.compression.tag());
        e.u8(0);
        for v in [
            self.records,
            self.data_blocks,
            self.block_size,
            self.data_bytes,
            self.meta_offset,
            self.meta_len,
        ] {
            e.u64(v);
        }
        e.u32(meta_crc);
        let crc = crc32c::crc32c(&out);
        Encoder(&mut out).u32(crc);
        out
    }

    /// Decodes and checks a footer; returns it with the meta's CRC.
    fn decode(bytes: &[u8; FOOTER], file_len: u64) -> Result<(Footer, u32), FormatError> {
        let (magic, fields) = bytes.as_slice().split_at(MAGIC.len());
        if magic != MAGIC {
            return Err(FormatError::BadMagic {
                expected: "lidx key-value file",
                found: magic.to_vec(),
            });
        }
        let mut d = Decoder::new(fields, "footer");
        let version = d.u32()?;
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(FormatError::UnsupportedVersion {
                found: version,
                oldest: OLDEST_VERSION,
                newest: VERSION,
            });
        }
        let (covered, stored) = bytes.as_slice().split_at(FOOTER - 4);
        let stored = u32::from_le_bytes(stored.try_into().unwrap_or_default());
        let got = crc32c::crc32c(covered);
        if stored != got {
            return Err(FormatError::HeaderChecksum {
                expected: stored,
                got,
            });
        }
        let layout = Layout::from_tag(d.u8()?)?;
        let key_encoding = KeyEncoding::from_tag(d.u8()?)?;
        let compression = d.u8()?;
        let compression = Compression::from_tag(compression)
            .ok_or_else(|| invalid("compression", compression.into(), "0 (none) or 1 (lz4)"))?;
        if d.u8()? != 0 {
            return Err(FormatError::NonZeroPadding { what: "the footer" });
        }
        let footer = Footer {
            version,
            layout,
            key_encoding,
            compression,
            records: d.u64()?,
            data_blocks: d.u64()?,
            block_size: d.u64()?,
            data_bytes: d.u64()?,
            meta_offset: d.u64()?,
            meta_len: d.u64()?,
        };
        let meta_crc = d.u32()?;
        let meta_end = footer.meta_offset.checked_add(footer.meta_len);
        if meta_end != Some(file_len - FOOTER as u64) {
            return Err(FormatError::HeaderDisagrees {
                field: "meta end",
                header: meta_end.unwrap_or(u64::MAX),
                data: file_len - FOOTER as u64,
            });
        }
        if footer.data_bytes > footer.meta_offset {
            return Err(invalid(
                "data bytes",
                footer.data_bytes,
                "at most the meta's offset",
            ));
        }
        if footer.block_size == 0 {
            return Err(invalid("block size", 0, "at least 1"));
        }
        Ok((footer, meta_crc))
    }
}

/// An open key-value file: its footer and in-memory index, and the handle blocks are read
/// through.
#[derive(Debug)]
pub struct KvFile {
    path: PathBuf,
    file: File,
    mode: ReadMode,
    footer: Footer,
    pub(crate) meta: Meta,
    id: u64,
}

impl KvFile {
    /// Opens `path`, checks its footer and index, and reads blocks with `mode` from then
    /// on (`Direct`: `O_DIRECT`, past the page cache).
    pub fn open(path: &Path, mode: ReadMode) -> Result<KvFile> {
        let (file, len) = open_regular(path)?;
        let fail = |problem| Error::format(path, problem);
        if len < FOOTER as u64 {
            return Err(fail(FormatError::Truncated {
                what: "the footer",
                expected: FOOTER as u64,
                actual: len,
            }));
        }
        // One read of the file's tail: the footer, and the meta too when it is small (a
        // cold open on slow storage then costs one round trip, not two).
        let tail_len = len.min(TAIL_READ);
        let mut tail = vec![0u8; tail_len as usize];
        file.read_exact_at(&mut tail, len - tail_len)
            .map_err(|e| Error::io(path, "read the footer of", e))?;
        let raw: &[u8; FOOTER] = tail
            .get(tail.len().saturating_sub(FOOTER)..)
            .unwrap_or_default()
            .try_into()
            .map_err(|_| fail(invalid("footer", 0, "72 bytes")))?;
        let (footer, meta_crc) = Footer::decode(raw, len).map_err(fail)?;
        let meta_len = usize::try_from(footer.meta_len)
            .map_err(|_| fail(invalid("meta length", footer.meta_len, "addressable")))?;
        let in_tail = footer
            .meta_offset
            .checked_sub(len - tail_len)
            .and_then(|at| {
                let at = usize::try_from(at).ok()?;
                tail.get(at..at.checked_add(meta_len)?)
            });
        let meta = match in_tail {
            Some(bytes) => bytes.to_vec(),
            None => {
                let mut meta = vec![0u8; meta_len];
                file.read_exact_at(&mut meta, footer.meta_offset)
                    .map_err(|e| Error::io(path, "read the index of", e))?;
                meta
            }
        };
        let got = crc32c::crc32c(&meta);
        if got != meta_crc {
            return Err(fail(FormatError::FileChecksum {
                expected: meta_crc,
                got,
            }));
        }
        let meta = Meta::decode(&meta, &footer).map_err(fail)?;
        let file = match mode {
            ReadMode::Buffered => file,
            ReadMode::Direct => reopen(&file, path, true)?,
        };
        Ok(KvFile {
            path: path.to_path_buf(),
            file,
            mode,
            footer,
            meta,
            id: crate::storage::cache::next_file_id(),
        })
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The footer's fields.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// How blocks are read.
    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    /// This open file's id in a shared block cache.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The file as [`PagedReads`](crate::storage::paged::PagedReads) reads it.
    pub(crate) fn paged(&self) -> crate::storage::paged::PagedFile<'_> {
        crate::storage::paged::PagedFile {
            file: &self.file,
            path: &self.path,
            id: self.id,
            mode: self.mode,
        }
    }

    /// Bytes of the index an open file keeps in memory, outside any cache: the learned
    /// layout's key map, model and block locations, the SSTable's level-0 entries, the
    /// tuned layout's key map and layer places, or the B+tree's node counts.
    pub fn index_memory_bytes(&self) -> u64 {
        self.meta.memory_bytes()
    }

    /// Every byte that must be in memory for a get to read no index block: what the open
    /// file keeps ([`index_memory_bytes`](Self::index_memory_bytes)) and the index blocks
    /// stored between the data and the meta (the SSTable's level-1 blocks, the tuned
    /// layout's layers, the B+tree's nodes; none for the learned layout). The one
    /// definition every layout and store is compared by.
    pub fn full_index_bytes(&self) -> u64 {
        match self.footer.layout {
            // Its location chunks, between the data and the meta, are counted in memory.
            Layout::Learned => self.index_memory_bytes(),
            _ => self.index_memory_bytes() + (self.footer.meta_offset - self.footer.data_bytes),
        }
    }

    /// Bytes of the index on disk: the meta, and the level-1 index blocks (SSTable), the
    /// layers (tuned) or the nodes (B+tree).
    pub fn index_disk_bytes(&self) -> u64 {
        self.footer.meta_offset - self.footer.data_bytes + self.footer.meta_len
    }

    /// Index blocks on disk: level-1 blocks (SSTable), layer pieces (tuned), nodes
    /// (B+tree); 0 for the learned layout.
    pub fn index_blocks(&self) -> u64 {
        self.meta.index_blocks()
    }

    /// The B+tree layout's nodes per level (the root's level last).
    pub fn btree_levels(&self) -> Option<&[u64]> {
        self.meta.btree().map(|m| m.levels.as_slice())
    }

    /// The learned layout's key map and model.
    pub fn learned(&self) -> Option<(&KeyMap, &BlockModel)> {
        let m = self.meta.learned()?;
        Some((&m.keymap, &m.model))
    }

    /// The tuned layout's layers (layer 1 first) and the profile cost it was tuned for.
    pub fn tuned(&self) -> Option<(&[LayerPlace], AffineCost)> {
        let m = self.meta.tuned()?;
        Some((&m.layers, m.cost))
    }

    /// The error for a file whose parts disagree.
    pub(crate) fn corrupt(&self, problem: String) -> Error {
        Error::format(&self.path, FormatError::Inconsistent(problem))
    }

    /// The error for a block that fails its checks.
    pub(crate) fn bad_block(&self, handle: Handle, problem: String) -> Error {
        Error::BadBlock {
            path: self.path.clone(),
            offset: handle.offset,
            problem,
        }
    }
}
