//! The key-value file (FORMAT.md section 8): data blocks, then (SSTable layout) the
//! level-1 index blocks, then the in-memory index ("meta": the learned layout's key map,
//! model and block-location array, or the SSTable's level-0 entries), then a 72-byte
//! footer with magic, version, the layout and the meta's place and CRC32C.
//!
//! [`KvFile::open`] reads the footer and the meta, checks both, and keeps the meta in
//! memory; blocks are read on demand by a [`Reader`](super::Reader).
#![deny(clippy::indexing_slicing)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::block::{Compression, TRAILER};
use super::keymap::{KeyMap, MAX_SPAN};
use super::layers::{Layer, STORED_PIECE};
use super::model::BlockModel;
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::files::{open_regular, reopen};
use crate::storage::ReadMode;
use crate::storage::profile::AffineCost;
use crate::{Error, FormatError, Result};

/// The footer's first 8 bytes.
pub const MAGIC: [u8; 8] = *b"LIDXKV\0\0";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// Bytes of the footer.
pub const FOOTER: usize = 72;

/// Bytes of the file's end that opening it reads at once: the footer, and the meta with
/// it when it fits.
const TAIL_READ: u64 = 4096;

/// How records are laid out in blocks and found again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Paper 4: a monotone model of each key's byte offset decides its block; the model
    /// and a block-location array find it again, no key stored.
    #[default]
    Learned,
    /// Bigtable's classic SSTable: blocks filled to τ, a two-level index of each block's
    /// last key (level 1 in index blocks in the file, level 0 in memory).
    Sstable,
    /// Paper 2's layered index (AirIndex): fixed-size pages, and layers of models on
    /// storage each predicting byte offsets in the one below, tuned to a storage profile.
    Tuned,
    /// Paper 2's B+tree baseline: the tuned layout's fixed-size pages under a disk B+tree
    /// of nodes of the same size, read from the root down.
    Btree,
}

crate::names::name_table!(Layout, "layout", [
    Learned => "learned",
    Sstable => "sstable",
    Tuned => "tuned",
    Btree => "btree",
]);

/// How keys were written, so that commands read and print them the user's way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyEncoding {
    /// Byte strings as given (TSV input).
    #[default]
    Bytes,
    /// `u64` keys as 8 big-endian bytes, so byte order is numeric order.
    U64Be,
    /// `u64` keys as decimal strings (the paper's integer keys encoded as strings).
    Decimal,
}

crate::names::name_table!(KeyEncoding, "key encoding", [
    Bytes => "bytes",
    U64Be => "u64-be",
    Decimal => "decimal",
]);

impl KeyEncoding {
    fn tag(self) -> u8 {
        match self {
            KeyEncoding::Bytes => 0,
            KeyEncoding::U64Be => 1,
            KeyEncoding::Decimal => 2,
        }
    }

    /// The stored bytes of a key given on a command line: a `u64` for the integer
    /// encodings, the argument's bytes otherwise.
    pub fn parse(self, arg: &str) -> Result<Vec<u8>> {
        let int = || {
            arg.parse::<u64>().map_err(|_| {
                Error::param(
                    "key",
                    format!("'{arg}' is not a u64, and the file's keys are"),
                )
            })
        };
        Ok(match self {
            KeyEncoding::Bytes => arg.as_bytes().to_vec(),
            KeyEncoding::U64Be => u64_key(int()?).to_vec(),
            KeyEncoding::Decimal => int()?.to_string().into_bytes(),
        })
    }

    /// A stored key the way a user wrote it: the integer for `u64-be`, the bytes otherwise.
    pub fn render(self, key: &[u8]) -> Vec<u8> {
        match (self, <[u8; 8]>::try_from(key)) {
            (KeyEncoding::U64Be, Ok(b)) => key_u64(b).to_string().into_bytes(),
            _ => key.to_vec(),
        }
    }
}

/// A `u64` key as 8 bytes whose byte order is the numbers' order (big-endian).
#[allow(
    clippy::big_endian_bytes,
    reason = "keys compare as bytes: only big-endian keeps numeric order"
)]
pub fn u64_key(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

/// The `u64` of a key written by [`u64_key`].
#[allow(
    clippy::big_endian_bytes,
    reason = "keys compare as bytes: only big-endian keeps numeric order"
)]
pub fn key_u64(b: [u8; 8]) -> u64 {
    u64::from_be_bytes(b)
}

/// A key as text for messages: as is when it is printable UTF-8, else in hex.
pub fn display_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(s) if !s.chars().any(char::is_control) => format!("'{s}'"),
        _ => {
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            format!("0x{hex} ({} bytes)", key.len())
        }
    }
}

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
        e.u32(VERSION);
        e.u8(match self.layout {
            Layout::Learned => 1,
            Layout::Sstable => 2,
            Layout::Tuned => 3,
            Layout::Btree => 4,
        });
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
        if bytes[..8] != MAGIC {
            return Err(FormatError::BadMagic {
                expected: "lidx key-value file",
                found: bytes[..8].to_vec(),
            });
        }
        let mut d = Decoder::new(&bytes[8..], "footer");
        let version = d.u32()?;
        if version != VERSION {
            return Err(FormatError::UnsupportedVersion {
                found: version,
                oldest: VERSION,
                newest: VERSION,
            });
        }
        let stored = u32::from_le_bytes(bytes[FOOTER - 4..].try_into().unwrap_or_default());
        let got = crc32c::crc32c(&bytes[..FOOTER - 4]);
        if stored != got {
            return Err(FormatError::HeaderChecksum {
                expected: stored,
                got,
            });
        }
        let layout = match d.u8()? {
            1 => Layout::Learned,
            2 => Layout::Sstable,
            3 => Layout::Tuned,
            4 => Layout::Btree,
            t => {
                return Err(invalid(
                    "layout",
                    t.into(),
                    "1 (learned), 2 (sstable), 3 (tuned) or 4 (btree)",
                ));
            }
        };
        let key_encoding = match d.u8()? {
            0 => KeyEncoding::Bytes,
            1 => KeyEncoding::U64Be,
            2 => KeyEncoding::Decimal,
            t => return Err(invalid("key encoding", t.into(), "0, 1 or 2")),
        };
        let compression = d.u8()?;
        let compression = Compression::from_tag(compression)
            .ok_or_else(|| invalid("compression", compression.into(), "0 (none) or 1 (lz4)"))?;
        if d.u8()? != 0 {
            return Err(FormatError::NonZeroPadding { what: "the footer" });
        }
        let footer = Footer {
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

/// The index a file keeps in memory.
#[derive(Clone, Debug)]
pub(crate) enum Meta {
    /// The learned layout: key map, model, and `offsets[b]` where data block `b` starts
    /// (`data_blocks + 1` entries, the last `data_bytes`).
    Learned {
        keymap: KeyMap,
        model: BlockModel,
        offsets: Vec<u64>,
    },
    /// The SSTable layout's level 0: the last key of each level-1 index block, in
    /// increasing order, and where that block lies.
    Sstable { level0: Vec<(Box<[u8]>, Handle)> },
    /// The tuned layout: the key map, where each layer lies (layer 1 first; its pieces
    /// follow the data pages, layer after layer) and the profile it was tuned for.
    Tuned {
        keymap: KeyMap,
        layers: Vec<LayerPlace>,
        cost: AffineCost,
    },
    /// The B+tree layout: nodes per level, leaves' parents first, the root (one node)
    /// last; level `i`'s nodes are the pages right after level `i − 1`'s (after the data
    /// pages for the first).
    Btree { levels: Vec<u64> },
}

/// Where a layer of the tuned layout lies and how it reads the layer below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerPlace {
    /// Byte offset of its first stored piece.
    pub offset: u64,
    /// Stored pieces.
    pub pieces: u64,
    /// Its error bound Δ in bytes.
    pub delta: u64,
    /// Bytes of a unit of the layer below (the page size, or a stored piece).
    pub unit: u64,
    /// Units in the layer below.
    pub units_below: u64,
}

impl LayerPlace {
    /// The layer's window rule, without its pieces.
    pub(crate) fn shape(&self) -> Layer {
        Layer {
            pieces: Vec::new(),
            delta: self.delta,
            unit: self.unit,
            units_below: self.units_below,
        }
    }

    /// Bytes of the layer.
    pub fn bytes(&self) -> u64 {
        self.pieces * STORED_PIECE
    }
}

impl Meta {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Meta::Learned {
                keymap,
                model,
                offsets,
            } => {
                keymap.encode(out);
                model.encode(out);
                let mut e = Encoder(out);
                e.u64(offsets.len() as u64);
                for &o in offsets {
                    e.u64(o);
                }
            }
            Meta::Sstable { level0 } => {
                Encoder(out).u64(level0.len() as u64);
                for (key, handle) in level0 {
                    Encoder(out).u64(key.len() as u64);
                    out.extend_from_slice(key);
                    handle.encode(out);
                }
            }
            Meta::Tuned {
                keymap,
                layers,
                cost,
            } => {
                keymap.encode(out);
                let mut e = Encoder(out);
                e.f64(cost.latency_us);
                e.f64(cost.bandwidth_mb_s);
                e.u64(layers.len() as u64);
                for l in layers {
                    for v in [l.offset, l.pieces, l.delta, l.unit, l.units_below] {
                        e.u64(v);
                    }
                }
            }
            Meta::Btree { levels } => {
                let mut e = Encoder(out);
                e.u64(levels.len() as u64);
                for &n in levels {
                    e.u64(n);
                }
            }
        }
    }

    fn decode(bytes: &[u8], footer: &Footer) -> Result<Meta, FormatError> {
        let mut d = Decoder::new(bytes, "index");
        let meta = match footer.layout {
            Layout::Learned => {
                let keymap = KeyMap::decode(&mut d, MAX_SPAN)?;
                let model = BlockModel::decode(&mut d)?;
                let n = d.count(8)?;
                if n as u64 != footer.data_blocks.saturating_add(1) {
                    return Err(FormatError::HeaderDisagrees {
                        field: "data blocks + 1",
                        header: footer.data_blocks.saturating_add(1),
                        data: n as u64,
                    });
                }
                let mut offsets = Vec::with_capacity(n);
                for _ in 0..n {
                    let o = d.u64()?;
                    let prev = offsets.last().copied().unwrap_or(0);
                    let size = o.checked_sub(prev);
                    if !matches!(size, Some(s) if s == 0 || s > TRAILER as u64 + 4) {
                        return Err(invalid(
                            "block offset",
                            o,
                            "offsets from 0, each block empty or larger than its trailer",
                        ));
                    }
                    offsets.push(o);
                }
                if offsets.last() != Some(&footer.data_bytes) {
                    return Err(FormatError::HeaderDisagrees {
                        field: "data bytes",
                        header: footer.data_bytes,
                        data: offsets.last().copied().unwrap_or(0),
                    });
                }
                Meta::Learned {
                    keymap,
                    model,
                    offsets,
                }
            }
            Layout::Sstable => {
                let n = d.count(8 + Handle::BYTES as u64)?;
                let mut level0: Vec<(Box<[u8]>, Handle)> = Vec::with_capacity(n);
                let mut next = footer.data_bytes;
                for _ in 0..n {
                    let len = d.count(1)?;
                    let key: Box<[u8]> = d.bytes(len)?.into();
                    let handle = Handle::decode(d.bytes(Handle::BYTES)?)
                        .ok_or_else(|| invalid("level-0 handle", 0, "16 bytes"))?;
                    if handle.offset != next || handle.size <= TRAILER as u64 + 4 {
                        return Err(invalid(
                            "level-1 block offset",
                            handle.offset,
                            "level-1 blocks one after another from the end of the data",
                        ));
                    }
                    if level0.last().is_some_and(|(k, _)| **k >= *key) {
                        return Err(invalid(
                            "level-0 key",
                            level0.len() as u64,
                            "keys in increasing order",
                        ));
                    }
                    next = handle.end();
                    level0.push((key, handle));
                }
                if next != footer.meta_offset {
                    return Err(FormatError::HeaderDisagrees {
                        field: "meta offset",
                        header: footer.meta_offset,
                        data: next,
                    });
                }
                Meta::Sstable { level0 }
            }
            Layout::Tuned => {
                let keymap = KeyMap::decode(&mut d, u64::MAX)?;
                let cost = AffineCost {
                    latency_us: d.f64()?,
                    bandwidth_mb_s: d.f64()?,
                };
                let n = d.count(40)?;
                let mut layers: Vec<LayerPlace> = Vec::with_capacity(n);
                let mut next = footer.data_bytes;
                for i in 0..n {
                    let l = LayerPlace {
                        offset: d.u64()?,
                        pieces: d.u64()?,
                        delta: d.u64()?,
                        unit: d.u64()?,
                        units_below: d.u64()?,
                    };
                    let (unit, below) = match layers.last() {
                        None => (footer.block_size, footer.data_blocks),
                        Some(prev) => (STORED_PIECE, prev.pieces),
                    };
                    let fits = l.offset == next
                        && l.pieces >= 1
                        && l.unit == unit
                        && l.units_below == below
                        && l.delta <= 1 << 60;
                    if !fits {
                        return Err(invalid(
                            "layer",
                            i as u64,
                            "layers one after another from the end of the pages, each over the one below",
                        ));
                    }
                    next = l
                        .pieces
                        .checked_mul(STORED_PIECE)
                        .and_then(|b| b.checked_add(next))
                        .ok_or_else(|| invalid("layer pieces", l.pieces, "within the file"))?;
                    layers.push(l);
                }
                if next != footer.meta_offset || (layers.is_empty() != (footer.data_blocks == 0)) {
                    return Err(FormatError::HeaderDisagrees {
                        field: "meta offset",
                        header: footer.meta_offset,
                        data: next,
                    });
                }
                if footer.data_blocks.checked_mul(footer.block_size) != Some(footer.data_bytes) {
                    return Err(invalid(
                        "data bytes",
                        footer.data_bytes,
                        "pages times the page size",
                    ));
                }
                Meta::Tuned {
                    keymap,
                    layers,
                    cost,
                }
            }
            Layout::Btree => {
                let n = d.count(8)?;
                let mut levels = Vec::with_capacity(n);
                for i in 0..n {
                    let nodes = d.u64()?;
                    let below = levels.last().copied().unwrap_or(footer.data_blocks);
                    // Each node holds at least one entry; all but the root at least two.
                    if nodes == 0 || nodes > below || (nodes == below && below > 1) {
                        return Err(invalid(
                            "B+tree level",
                            i as u64,
                            "fewer nodes than the level below, one at the root",
                        ));
                    }
                    levels.push(nodes);
                }
                if levels.last().is_some_and(|&root| root != 1)
                    || levels.is_empty() != (footer.data_blocks == 0)
                {
                    return Err(invalid("B+tree levels", n as u64, "one root node"));
                }
                let pages = levels
                    .iter()
                    .try_fold(footer.data_blocks, |a, &b| a.checked_add(b));
                if pages.and_then(|p| p.checked_mul(footer.block_size)) != Some(footer.meta_offset)
                    || footer.data_blocks.checked_mul(footer.block_size) != Some(footer.data_bytes)
                {
                    return Err(FormatError::HeaderDisagrees {
                        field: "meta offset",
                        header: footer.meta_offset,
                        data: pages.unwrap_or(0).saturating_mul(footer.block_size),
                    });
                }
                Meta::Btree { levels }
            }
        };
        d.finish()?;
        Ok(meta)
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

    /// Bytes of the index kept in memory: the learned layout's key map, model and
    /// block-location array, or the SSTable's level-0 entries.
    pub fn index_memory_bytes(&self) -> u64 {
        match &self.meta {
            Meta::Learned {
                keymap,
                model,
                offsets,
            } => keymap.size_in_bytes() + model.size_in_bytes() + 8 * offsets.len() as u64,
            Meta::Sstable { level0 } => level0
                .iter()
                .map(|(k, _)| k.len() as u64 + Handle::BYTES as u64)
                .sum(),
            Meta::Tuned { keymap, layers, .. } => keymap.size_in_bytes() + 40 * layers.len() as u64,
            Meta::Btree { levels } => 8 * levels.len() as u64,
        }
    }

    /// Bytes of the index on disk: the meta, and the level-1 index blocks of an SSTable.
    pub fn index_disk_bytes(&self) -> u64 {
        self.footer.meta_offset - self.footer.data_bytes + self.footer.meta_len
    }

    /// Index blocks on disk: level-1 blocks (SSTable), layer pieces (tuned), nodes
    /// (B+tree); 0 for the learned layout.
    pub fn index_blocks(&self) -> u64 {
        match &self.meta {
            Meta::Learned { .. } => 0,
            Meta::Sstable { level0 } => level0.len() as u64,
            Meta::Tuned { layers, .. } => layers.iter().map(|l| l.pieces).sum(),
            Meta::Btree { levels } => levels.iter().sum(),
        }
    }

    /// The B+tree layout's nodes per level (the root's level last).
    pub fn btree_levels(&self) -> Option<&[u64]> {
        match &self.meta {
            Meta::Btree { levels } => Some(levels),
            _ => None,
        }
    }

    /// The learned layout's model, key map and block offsets.
    pub fn learned(&self) -> Option<(&KeyMap, &BlockModel, &[u64])> {
        match &self.meta {
            Meta::Learned {
                keymap,
                model,
                offsets,
            } => Some((keymap, model, offsets)),
            _ => None,
        }
    }

    /// The tuned layout's layers (layer 1 first) and the profile cost it was tuned for.
    pub fn tuned(&self) -> Option<(&[LayerPlace], AffineCost)> {
        match &self.meta {
            Meta::Tuned { layers, cost, .. } => Some((layers, *cost)),
            _ => None,
        }
    }

    /// The learned layout's block of `key`, `⌊f(x(key)) / τ⌋` held within the blocks; `None`
    /// for an SSTable or a file of no block.
    pub fn learned_block(&self, key: &[u8]) -> Option<usize> {
        match &self.meta {
            Meta::Learned {
                keymap,
                model,
                offsets,
            } if offsets.len() > 1 => {
                let blocks = offsets.len() as u64 - 1;
                Some(model.block(keymap.map(key), self.footer.block_size, blocks) as usize)
            }
            _ => None,
        }
    }

    /// The learned layout's data block `b` (`b < data_blocks`).
    #[expect(
        clippy::indexing_slicing,
        reason = "callers pass b < data_blocks, and the decoded meta holds data_blocks + 1 offsets"
    )]
    pub(crate) fn learned_handle(offsets: &[u64], b: usize) -> Handle {
        let (start, end) = (offsets[b], offsets[b + 1]);
        Handle {
            offset: start,
            size: end - start,
        }
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
