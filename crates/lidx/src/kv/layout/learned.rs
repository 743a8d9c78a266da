//! The learned layout (paper 4, section 4, "Learned Index Training" and "Model
//! Structure"; FORMAT.md section 8): the key map is trained on all keys, the model fitted
//! to `S(k)` (the bytes of the records before `k`, as
//! [`record_bytes`](crate::kv::block::record_bytes) counts them), and record `⟨k, v⟩` goes
//! to logical block `⌊f(k)/τ⌋` of `⌈S_total/τ⌉`; blocks the model skips stay empty (a
//! data block of size 0). A get reads one data block and no index block: the key map and
//! the model give the block, the block locations its place.
//!
//! **Safe on any keys.** A logical block the model would fill past the cap (`--max-block`,
//! default 2τ) continues in overflow blocks, each found through its first key (a fence
//! kept in memory), so no data block passes the cap unless one record does. `--model auto`
//! takes the paper's line where it needs no overflow, else PGM.
//!
//! **The block locations** are paper 4's "compressible mapping table": the offsets as an
//! Elias–Fano sequence ([`EliasFano`], about `2 + log2(τ)` bits a block where version 1
//! kept 64), and with overflow blocks each logical block's first data block as another.
//! A large table is stored in chunks read when a get first needs them
//! ([`Locations`]), so opening a file reads no more than its directory.

#![deny(clippy::indexing_slicing)]

use std::sync::Arc;

use super::{Emit, LayoutIndex, Locate, Written, Wrote};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::kv::block::{Block, record_bytes};
use crate::kv::elias_fano::EliasFano;
use crate::kv::file::{CHUNKED_LOCATIONS_VERSION, Footer, Handle};
use crate::kv::keymap::{KeyMap, MAX_SPAN};
use crate::kv::locations::Locations;
use crate::kv::model::{BlockModel, ModelKind};
use crate::kv::read::{Kind, Reader};
use crate::kv::verify::{VerifyReport, check_blocks};
use crate::kv::write::{BuildOptions, Record, Writer};
use crate::{Error, FormatError, Result};

/// The learned layout's meta: key map, model, and where each data block starts.
///
/// The model names one of `B` logical blocks; each is one or more data blocks in the file
/// (an empty logical block is one data block of size 0). A logical block whose records
/// would pass the cap (`--max-block`) holds overflow blocks after its first; each overflow
/// block's first key is a fence kept in memory, so a get still reads one data block.
#[derive(Clone, Debug)]
pub(crate) struct LearnedMeta {
    pub(crate) keymap: KeyMap,
    pub(crate) model: BlockModel,
    /// Where data block `p` starts (`P + 1` values, the last `data_bytes`), compressed,
    /// inline or in chunks read when first needed.
    pub(crate) offsets: Locations,
    /// The first data block of each logical block (`B + 1` values, the last `P`); `None`
    /// when there is no overflow block (then logical block `b` is data block `b`).
    first: Option<EliasFano>,
    /// The first key of each overflow block, by data block, in increasing order.
    fences: Vec<(u64, Vec<u8>)>,
}

impl LearnedMeta {
    /// Data blocks, empty ones included.
    fn data_blocks(&self) -> usize {
        self.offsets.blocks()
    }

    /// Logical blocks: those the model names.
    pub(crate) fn blocks(&self) -> usize {
        match &self.first {
            Some(first) => first.len().saturating_sub(1),
            None => self.data_blocks(),
        }
    }

    /// Bytes in memory of where the blocks are: the offsets, the first data blocks and the
    /// fences.
    pub(crate) fn locations_bytes(&self) -> u64 {
        let fences: u64 = self
            .fences
            .iter()
            .map(|(_, k)| 8 + 24 + k.len() as u64)
            .sum();
        self.offsets.size_in_bytes()
            + self.first.as_ref().map_or(0, EliasFano::size_in_bytes)
            + fences
    }

    /// Overflow blocks: data blocks beyond the first of their logical block.
    pub(crate) fn overflow_blocks(&self) -> usize {
        self.fences.len()
    }

    /// The logical block of `key` among blocks of `tau` bytes, `⌊f(x(key)) / τ⌋` held
    /// within the blocks; `None` for a file of no block.
    pub(crate) fn block_of(&self, key: &[u8], tau: u64) -> Option<usize> {
        let blocks = self.blocks() as u64;
        (blocks > 0).then(|| self.model.block(self.keymap.map(key), tau, blocks) as usize)
    }

    /// The data block that holds `key` if any does: the first of its logical block, or
    /// the overflow block whose fence is the last at most `key`.
    pub(crate) fn data_block_of(&self, key: &[u8], tau: u64) -> Option<usize> {
        let b = self.block_of(key, tau)?;
        let Some(first) = &self.first else {
            return Some(b);
        };
        let p0 = first.get(b)?;
        let p1 = first.get(b + 1)?;
        // The fences of the overflow blocks p0 + 1 .. p1, in key order.
        let lo = self.fences.partition_point(|(p, _)| *p <= p0);
        let hi = self.fences.partition_point(|(p, _)| *p < p1);
        let fences = self.fences.get(lo..hi).unwrap_or_default();
        let after = fences.partition_point(|(_, fence)| fence.as_slice() <= key);
        Some(match after.checked_sub(1).and_then(|i| fences.get(i)) {
            Some((p, _)) => *p as usize,
            None => p0 as usize,
        })
    }

    /// Data block `p`'s handle (size 0 when empty); `None` past the last block. A
    /// location chunk not read yet is read through `r`.
    fn handle(&self, r: &mut Reader<'_>, p: usize) -> Result<Option<Handle>> {
        Ok(self.offsets.span(r, p)?.map(|(start, end)| Handle {
            offset: start,
            size: end - start,
        }))
    }
}

impl Locate for LearnedMeta {
    /// The data block the model and the fences name, unless it is empty (then the key is
    /// absent).
    fn locate(&self, r: &mut Reader<'_>, key: &[u8]) -> Result<Option<Arc<Block>>> {
        let tau = r.file().footer().block_size;
        let handle = match self.data_block_of(key, tau) {
            Some(p) => self.handle(r, p)?.filter(|h| h.size > 0),
            None => None,
        };
        match handle {
            Some(h) => r.block(h, Kind::Data, None).map(Some),
            None => Ok(None),
        }
    }

    fn scan(&self, r: &mut Reader<'_>, from: &[u8], emit: &mut Emit<'_>) -> Result<()> {
        let Some(mut p) = self.data_block_of(from, r.file().footer().block_size) else {
            return Ok(());
        };
        while let Some(h) = self.handle(r, p)? {
            if h.size > 0 {
                let next = self.handle(r, p + 1)?;
                let block = r.block(h, Kind::Data, next)?;
                if !emit(&block) {
                    return Ok(());
                }
            }
            p += 1;
        }
        Ok(())
    }

    fn data_handles(&self, r: &mut Reader<'_>) -> Result<Vec<Handle>> {
        let offsets = self.offsets.all(r)?;
        Ok(offsets
            .windows(2)
            .map(|w| {
                let (start, end) = (
                    w.first().copied().unwrap_or(0),
                    w.get(1).copied().unwrap_or(0),
                );
                Handle {
                    offset: start,
                    size: end - start,
                }
            })
            .collect())
    }
}

/// What the learned writer did beyond what every layout reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LearnedBuild {
    /// The model used (`--model auto` resolved).
    pub model: ModelKind,
    /// The most record bytes the model put in one logical block.
    pub largest_logical_block: u64,
    /// Overflow blocks written to keep every block within the cap.
    pub overflow_blocks: u64,
    /// The cap: the most record bytes a data block holds (unless one record is larger).
    pub max_block: u64,
}

/// The logical block of each record under `model` (`points` its mapped keys), and the
/// most record bytes any logical block gets.
fn place(model: &BlockModel, points: &[(u64, u64)], sizes: &[u64], tau: u64, blocks: u64) -> u64 {
    let mut largest = 0;
    let mut current = (0u64, 0u64);
    for (&(x, _), &size) in points.iter().zip(sizes) {
        let b = model.block(x, tau, blocks);
        if b != current.0 {
            current = (b, 0);
        }
        current.1 += size;
        largest = largest.max(current.1);
    }
    largest
}

impl LayoutIndex for LearnedMeta {
    fn write(w: &mut Writer, records: &[Record<'_>], options: &BuildOptions) -> Wrote<Self> {
        let tau = options.block_size;
        let cap = options.max_block_bytes();
        let keymap = KeyMap::train(records.iter().map(|r| r.key));
        let mut points = Vec::with_capacity(records.len());
        let mut sizes = Vec::with_capacity(records.len());
        let mut s = 0u64;
        for r in records {
            points.push((keymap.map(r.key), s));
            let size = record_bytes(r.key, r.value);
            sizes.push(size);
            s += size;
        }
        let blocks = if records.is_empty() {
            0
        } else {
            s.div_ceil(tau).max(1)
        };
        let epsilon = options.epsilon.unwrap_or(tau / 4).max(1);
        let leaves = options.leaves.unwrap_or(records.len() / 1024).max(1);
        let fit = |kind| -> Result<(BlockModel, u64)> {
            let model = BlockModel::fit(kind, &points, epsilon, leaves)?;
            let largest = place(&model, &points, &sizes, tau, blocks);
            Ok((model, largest))
        };
        // Auto: the paper's line where it keeps every block within the cap, else PGM,
        // whose error bound keeps blocks near τ (unless keys map to one integer).
        let (kind, (model, largest)) = match options.model {
            ModelKind::Auto => match fit(ModelKind::Linear)? {
                (line, largest) if largest <= cap => (ModelKind::Linear, (line, largest)),
                _ => (ModelKind::Pgm, fit(ModelKind::Pgm)?),
            },
            kind => (kind, fit(kind)?),
        };
        let mut offsets = Vec::with_capacity(blocks as usize + 1);
        offsets.push(0);
        let mut first = Vec::with_capacity(blocks as usize + 1);
        first.push(0u64);
        let mut fences = Vec::new();
        let mut current = 0u64;
        let mut in_block = 0u64;
        for ((r, &(x, _)), &size) in records.iter().zip(&points).zip(&sizes) {
            let b = model.block(x, tau, blocks);
            if b < current {
                return Err(Error::Internal {
                    problem: format!("the block model went back from block {current} to {b}"),
                });
            }
            while current < b {
                w.close_data_block()?;
                offsets.push(w.written);
                first.push(offsets.len() as u64 - 1);
                current += 1;
                in_block = 0;
            }
            if in_block > 0 && in_block + size > cap {
                w.close_data_block()?;
                offsets.push(w.written);
                fences.push((offsets.len() as u64 - 1, r.key.to_vec()));
                in_block = 0;
            }
            w.add(r)?;
            in_block += size;
        }
        while current < blocks {
            w.close_data_block()?;
            offsets.push(w.written);
            first.push(offsets.len() as u64 - 1);
            current += 1;
        }
        w.data_bytes = w.written;
        let written = Written {
            block_size: tau,
            model_pieces: model.pieces() as u64,
            key_positions: keymap.positions() as u64,
            learned: Some(LearnedBuild {
                model: kind,
                largest_logical_block: largest,
                overflow_blocks: fences.len() as u64,
                max_block: cap,
            }),
            ..Written::default()
        };
        let sequence = |values: &[u64]| {
            EliasFano::new(values).ok_or_else(|| Error::Internal {
                problem: "block offsets went back".into(),
            })
        };
        let meta = LearnedMeta {
            keymap,
            model,
            offsets: Locations::write(w, &offsets, options.location_chunk_blocks)?,
            first: match fences.is_empty() {
                true => None,
                false => Some(sequence(&first)?),
            },
            fences,
        };
        Ok((meta, written))
    }

    /// Version 4: the key map, the model, the data blocks' offsets (inline or a directory
    /// of chunks, [`Locations::encode`]), whether there are overflow blocks and then the
    /// logical blocks' first data blocks (Elias–Fano) and the fences (data block, key
    /// length `u32`, key). Versions 2 and 3 had the offsets inline without the tag.
    fn encode(&self, out: &mut Vec<u8>) {
        self.keymap.encode(out);
        self.model.encode(out);
        self.offsets.encode(out);
        match &self.first {
            None => Encoder(out).u8(0),
            Some(first) => {
                Encoder(out).u8(1);
                first.encode(out);
            }
        }
        let mut e = Encoder(out);
        e.u64(self.fences.len() as u64);
        for (p, key) in &self.fences {
            e.u64(*p);
            e.u32(key.len() as u32);
            out.extend_from_slice(key);
            e = Encoder(out);
        }
    }

    fn decode(d: &mut Decoder<'_>, footer: &Footer) -> Result<Self, FormatError> {
        let keymap = KeyMap::decode(d, MAX_SPAN)?;
        let model = BlockModel::decode(d)?;
        let (offsets, first, fences) = match footer.version {
            1 => (decode_raw_offsets(d, footer)?, None, Vec::new()),
            v => decode_blocks(d, footer, v >= CHUNKED_LOCATIONS_VERSION)?,
        };
        if offsets.blocks() as u64 != footer.data_blocks {
            return Err(FormatError::HeaderDisagrees {
                field: "data blocks",
                header: footer.data_blocks,
                data: offsets.blocks() as u64,
            });
        }
        let data_blocks = footer.data_blocks;
        if let Some(first) = &first {
            let starts = first.to_vec();
            if starts.first() != Some(&0) || starts.last() != Some(&data_blocks) || starts.len() < 2
            {
                return Err(invalid(
                    "first data blocks",
                    starts.len() as u64,
                    "from 0 to the data blocks, at least one logical block",
                ));
            }
            if starts.len() as u64 + fences.len() as u64 != data_blocks + 1 {
                return Err(FormatError::HeaderDisagrees {
                    field: "logical blocks + overflow blocks",
                    header: data_blocks,
                    data: starts.len() as u64 - 1 + fences.len() as u64,
                });
            }
        }
        let mut last: Option<&(u64, Vec<u8>)> = None;
        for fence in &fences {
            let ordered = last.is_none_or(|(p, key)| *p < fence.0 && key < &fence.1);
            if !ordered || fence.0 == 0 || fence.0 >= data_blocks {
                return Err(invalid(
                    "fence",
                    fence.0,
                    "overflow blocks within the data blocks, in increasing order of block and key",
                ));
            }
            last = Some(fence);
        }
        Ok(LearnedMeta {
            keymap,
            model,
            offsets,
            first,
            fences,
        })
    }

    fn memory_bytes(&self) -> u64 {
        self.keymap.size_in_bytes() + self.model.size_in_bytes() + self.locations_bytes()
    }

    fn index_blocks(&self) -> u64 {
        0
    }

    /// Every block in order, and each key in the block the model and the fences place it
    /// in.
    fn verify(&self, r: &mut Reader<'_>) -> Result<VerifyReport> {
        let tau = r.file().footer().block_size;
        let handles = self.data_handles(r)?.into_iter().map(|h| (h, None));
        check_blocks(r, handles.collect(), &|key| self.data_block_of(key, tau))
    }
}

/// Version 1's block-location array: `B + 1` raw `u64` offsets (no overflow blocks).
fn decode_raw_offsets(d: &mut Decoder<'_>, footer: &Footer) -> Result<Locations, FormatError> {
    let n = d.count(8)?;
    let mut offsets = Vec::with_capacity(n);
    for _ in 0..n {
        offsets.push(d.u64()?);
    }
    let ef = EliasFano::new(&offsets).ok_or_else(|| {
        invalid(
            "block offset",
            0,
            "offsets from 0, each block empty or larger than its trailer",
        )
    })?;
    Locations::checked_inline(ef, footer.data_bytes)
}

/// The data blocks from version 2: offsets (from version 4 tagged inline or chunked),
/// first data blocks, fences.
type Blocks = (Locations, Option<EliasFano>, Vec<(u64, Vec<u8>)>);

fn decode_blocks(
    d: &mut Decoder<'_>,
    footer: &Footer,
    tagged: bool,
) -> Result<Blocks, FormatError> {
    let offsets = match tagged {
        true => Locations::decode(d, footer.data_bytes, footer.meta_offset)?,
        false => Locations::checked_inline(EliasFano::decode(d)?, footer.data_bytes)?,
    };
    let first = match d.u8()? {
        0 => None,
        1 => Some(EliasFano::decode(d)?),
        other => return Err(invalid("overflow flag", other.into(), "0 or 1")),
    };
    let n = d.count(12)?;
    let mut fences = Vec::with_capacity(n);
    for _ in 0..n {
        let p = d.u64()?;
        let len = d.u32()? as usize;
        fences.push((p, d.bytes(len)?.to_vec()));
    }
    if first.is_none() != fences.is_empty() {
        return Err(invalid(
            "fences",
            n as u64,
            "fences exactly where there are overflow blocks",
        ));
    }
    Ok((offsets, first, fences))
}
