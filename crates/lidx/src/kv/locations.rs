//! Where the learned layout's data blocks start (paper 4, section 4: the "compressible
//! mapping table"; FORMAT.md section 8.6): `P + 1` increasing byte offsets, the last the
//! data's end, as Elias–Fano sequences.
//!
//! A small table sits in the meta and is read with it at open ([`Locations::Inline`]).
//! A larger one would make every open read and check it whole (at 5M records of 1 KiB in
//! 4 KiB blocks, 2 MB), so from format version 4 it is stored in **chunks** of
//! `blocks_per_chunk` blocks between the data and the meta, each sealed with a CRC, and the
//! meta keeps only a directory (each chunk's length and first offset). A chunk is read the
//! first time a get needs it, checked against the directory, and kept in memory with the
//! open file: the open reads a directory of 12 bytes a chunk, and a get reads at most one
//! chunk before its data block, once per chunk for the file's life.

#![deny(clippy::indexing_slicing)]

use std::sync::{Arc, OnceLock};

use crate::files::codec::{Decoder, Encoder, invalid};
use crate::kv::block::{TRAILER, seal, unseal};
use crate::kv::elias_fano::EliasFano;
use crate::kv::file::Handle;
use crate::kv::read::{Reader, problem};
use crate::kv::write::Writer;
use crate::{Error, FormatError, Result};

/// The largest table kept inline in the meta when the builder chooses (bytes of its
/// Elias–Fano sequence): one read of the meta at open is cheap below it.
pub const INLINE_MAX_BYTES: u64 = 64 << 10;

/// Blocks a chunk covers when the builder chooses: about 8 KiB a chunk at the 14–17 bits
/// a block Elias–Fano takes for blocks of 4–32 KiB.
pub const BLOCKS_PER_CHUNK: u64 = 4096;

/// The block offsets, inline or in chunks.
#[derive(Clone, Debug)]
pub(crate) enum Locations {
    /// All of them, read with the meta.
    Inline(EliasFano),
    /// In chunks stored before the meta, each read when first needed.
    Chunked(Chunks),
}

/// The chunked table: where each chunk lies, and those read so far.
#[derive(Clone, Debug)]
pub(crate) struct Chunks {
    /// Blocks per chunk (the last may cover fewer).
    per_chunk: u64,
    /// Data blocks in all.
    blocks: u64,
    /// Each chunk's place in the file (they lie one after another from the data's end).
    places: Vec<Handle>,
    /// Each chunk's first offset; one more, the data's end.
    firsts: Vec<u64>,
    /// The chunks read so far.
    loaded: Vec<OnceLock<Arc<EliasFano>>>,
}

/// A chunk's values, or why they are wrong.
type Checked = std::result::Result<EliasFano, FormatError>;

impl Locations {
    /// The table of `offsets` (from 0, increasing, the last the data's end), inline or
    /// chunked as `per_chunk` says (`None`: inline up to [`INLINE_MAX_BYTES`], else chunks
    /// of [`BLOCKS_PER_CHUNK`]); chunks are written through `w`, which must stand at the
    /// data's end.
    pub(crate) fn write(w: &mut Writer, offsets: &[u64], per_chunk: Option<u64>) -> Result<Self> {
        let whole = sequence(offsets)?;
        let per_chunk = match per_chunk {
            None if whole.size_in_bytes() <= INLINE_MAX_BYTES => {
                return Ok(Locations::Inline(whole));
            }
            None => BLOCKS_PER_CHUNK,
            Some(n) => n.max(1),
        };
        let blocks = offsets.len().saturating_sub(1) as u64;
        let (mut places, mut firsts) = (Vec::new(), Vec::new());
        let mut body = Vec::new();
        for start in (0..blocks.max(1)).step_by(per_chunk as usize) {
            let end = (start + per_chunk).min(blocks);
            let values = offsets
                .get(start as usize..=end as usize)
                .unwrap_or_default();
            let first = values.first().copied().unwrap_or(0);
            // Relative to the chunk's first offset (kept in the directory), so the low bits
            // are those of the chunk's span, not of the file's.
            let relative: Vec<u64> = values.iter().map(|v| v - first).collect();
            body.clear();
            sequence(&relative)?.encode(&mut body);
            places.push(w.append_sealed(|c, out| {
                seal(&body, c, out);
                Ok(())
            })?);
            firsts.push(first);
        }
        firsts.push(offsets.last().copied().unwrap_or(0));
        Ok(Locations::Chunked(Chunks::new(
            per_chunk, blocks, places, firsts,
        )))
    }

    /// The inline table `ef`, checked: from 0 to `data_bytes`, each block empty or larger
    /// than its trailer.
    pub(crate) fn checked_inline(ef: EliasFano, data_bytes: u64) -> Result<Locations, FormatError> {
        check_offsets(&ef.to_vec(), 0, data_bytes)?;
        Ok(Locations::Inline(ef))
    }

    /// Data blocks.
    pub(crate) fn blocks(&self) -> usize {
        match self {
            Locations::Inline(ef) => ef.len().saturating_sub(1),
            Locations::Chunked(c) => c.blocks as usize,
        }
    }

    /// Bytes in memory once every chunk is read: the most a get needs kept.
    pub(crate) fn size_in_bytes(&self) -> u64 {
        match self {
            Locations::Inline(ef) => ef.size_in_bytes(),
            Locations::Chunked(c) => {
                c.places.iter().map(|h| h.size).sum::<u64>() + 20 * c.places.len() as u64
            }
        }
    }

    /// Data block `p`'s offset and the next one's (its end); `None` past the last block.
    /// A chunk not read yet is read through `r`.
    pub(crate) fn span(&self, r: &mut Reader<'_>, p: usize) -> Result<Option<(u64, u64)>> {
        match self {
            Locations::Inline(ef) => Ok(ef.get(p).zip(ef.get(p + 1))),
            Locations::Chunked(c) => {
                if p as u64 >= c.blocks {
                    return Ok(None);
                }
                let i = (p as u64 / c.per_chunk) as usize;
                let chunk = c.chunk(r, i)?;
                let base = c.firsts.get(i).copied().unwrap_or(0);
                let at = p - i * c.per_chunk as usize;
                Ok(chunk
                    .get(at)
                    .zip(chunk.get(at + 1))
                    .map(|(a, b)| (base + a, base + b)))
            }
        }
    }

    /// Every offset, reading every chunk (for verifying and listing blocks).
    pub(crate) fn all(&self, r: &mut Reader<'_>) -> Result<Vec<u64>> {
        match self {
            Locations::Inline(ef) => Ok(ef.to_vec()),
            Locations::Chunked(c) => {
                let mut out = Vec::with_capacity(c.blocks as usize + 1);
                for i in 0..c.places.len() {
                    let base = c.firsts.get(i).copied().unwrap_or(0);
                    let values = c.chunk(r, i)?.to_vec();
                    let skip = usize::from(!out.is_empty());
                    out.extend(values.into_iter().skip(skip).map(|v| base + v));
                }
                Ok(out)
            }
        }
    }

    /// Version 4's encoding: 0 and the inline sequence, or 1, blocks per chunk, data
    /// blocks, chunks, then each chunk's stored length (`u32`) and first offset, and the
    /// data's end.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Locations::Inline(ef) => {
                Encoder(out).u8(0);
                ef.encode(out);
            }
            Locations::Chunked(c) => {
                let mut e = Encoder(out);
                e.u8(1);
                e.u64(c.per_chunk);
                e.u64(c.blocks);
                e.u64(c.places.len() as u64);
                for (h, first) in c.places.iter().zip(&c.firsts) {
                    e.u32(h.size as u32);
                    e.u64(*first);
                }
                e.u64(c.firsts.last().copied().unwrap_or(0));
            }
        }
    }

    /// Reads what [`encode`](Self::encode) wrote; chunks lie from `data_bytes` to
    /// `meta_offset`. Inline offsets are checked whole here; a chunk when it is read.
    pub(crate) fn decode(
        d: &mut Decoder<'_>,
        data_bytes: u64,
        meta_offset: u64,
    ) -> Result<Locations, FormatError> {
        match d.u8()? {
            0 => Locations::checked_inline(EliasFano::decode(d)?, data_bytes),
            1 => {
                let per_chunk = d.u64()?;
                let blocks = d.u64()?;
                let n = d.count(12)?;
                if per_chunk == 0 || blocks.div_ceil(per_chunk).max(1) != n as u64 {
                    return Err(invalid(
                        "location chunks",
                        n as u64,
                        "one for each blocks-per-chunk blocks",
                    ));
                }
                let (mut places, mut firsts) = (Vec::with_capacity(n), Vec::with_capacity(n + 1));
                let mut at = data_bytes;
                for _ in 0..n {
                    let size = u64::from(d.u32()?);
                    places.push(Handle { offset: at, size });
                    at = at.saturating_add(size);
                    firsts.push(d.u64()?);
                }
                firsts.push(d.u64()?);
                if at != meta_offset {
                    return Err(invalid(
                        "location chunks' bytes",
                        at - data_bytes.min(at),
                        "the bytes between the data and the meta",
                    ));
                }
                let ordered = firsts.windows(2).all(|w| w.first() <= w.get(1));
                if firsts.first() != Some(&0) || firsts.last() != Some(&data_bytes) || !ordered {
                    return Err(invalid(
                        "location chunks' first offsets",
                        firsts.first().copied().unwrap_or(0),
                        "from 0, increasing, to the data's end",
                    ));
                }
                Ok(Locations::Chunked(Chunks::new(
                    per_chunk, blocks, places, firsts,
                )))
            }
            other => Err(invalid(
                "block locations",
                other.into(),
                "0 inline or 1 chunked",
            )),
        }
    }
}

impl Chunks {
    /// The directory of `places.len()` chunks of `per_chunk` of `blocks` blocks, none read.
    fn new(per_chunk: u64, blocks: u64, places: Vec<Handle>, firsts: Vec<u64>) -> Chunks {
        let loaded = places.iter().map(|_| OnceLock::new()).collect();
        Chunks {
            per_chunk,
            blocks,
            places,
            firsts,
            loaded,
        }
    }

    /// Chunk `i`, read and checked the first time.
    fn chunk(&self, r: &mut Reader<'_>, i: usize) -> Result<Arc<EliasFano>> {
        let slot = self.loaded.get(i).ok_or_else(|| Error::Internal {
            problem: format!("location chunk {i} of {}", self.loaded.len()),
        })?;
        if let Some(chunk) = slot.get() {
            return Ok(Arc::clone(chunk));
        }
        let h = *self.places.get(i).ok_or_else(|| Error::Internal {
            problem: format!("location chunk {i} has no place"),
        })?;
        let start = i as u64 * self.per_chunk;
        let values = (self.blocks - start).min(self.per_chunk) + 1;
        let range = (
            self.firsts.get(i).copied().unwrap_or(0),
            self.firsts.get(i + 1).copied().unwrap_or(0),
        );
        let file = r.file();
        let bytes = r.read_index(h)?;
        let checked = match unseal(bytes) {
            Ok(body) => open_chunk(&body, values, range),
            Err(p) => return Err(problem(file, h, p)),
        };
        let chunk =
            Arc::new(checked.map_err(|p| {
                file.bad_block(h, format!("location chunk {i} does not decode: {p}"))
            })?);
        Ok(Arc::clone(slot.get_or_init(|| chunk)))
    }
}

/// A chunk's body: `values` offsets less `first`, from 0 to `last - first`, each block
/// empty or larger than its trailer.
fn open_chunk(body: &[u8], values: u64, (first, last): (u64, u64)) -> Checked {
    let mut d = Decoder::new(body, "location chunk");
    let ef = EliasFano::decode(&mut d)?;
    if ef.len() as u64 != values || d.remaining() != 0 {
        return Err(invalid(
            "location chunk's offsets",
            ef.len() as u64,
            "one more than its blocks",
        ));
    }
    check_offsets(&ef.to_vec(), 0, last.saturating_sub(first))?;
    Ok(ef)
}

/// Offsets from `first` to `last`, each step 0 (an empty block) or more than a block's
/// trailer.
fn check_offsets(values: &[u64], first: u64, last: u64) -> Result<(), FormatError> {
    if values.first() != Some(&first) || values.last() != Some(&last) {
        return Err(invalid(
            "block offsets",
            values.first().copied().unwrap_or(0),
            "from the first block's offset to the data's end",
        ));
    }
    for w in values.windows(2) {
        let (a, b) = (
            w.first().copied().unwrap_or(0),
            w.get(1).copied().unwrap_or(0),
        );
        let size = b.checked_sub(a);
        if !matches!(size, Some(s) if s == 0 || s > TRAILER as u64 + 4) {
            return Err(invalid(
                "block offset",
                b,
                "offsets from 0, each block empty or larger than its trailer",
            ));
        }
    }
    Ok(())
}

/// The Elias–Fano sequence of increasing `values`.
fn sequence(values: &[u64]) -> Result<EliasFano> {
    EliasFano::new(values).ok_or_else(|| Error::Internal {
        problem: "block offsets went back".into(),
    })
}
