//! The learned layout (paper 4, section 4, "Learned Index Training" and "Model
//! Structure"; FORMAT.md section 8): the key map is trained on all keys, the model fitted
//! to `S(k)` (the bytes of the records before `k`, as
//! [`record_bytes`](crate::kv::block::record_bytes) counts them), and record `⟨k, v⟩` goes
//! to block `⌊f(k)/τ⌋` of `⌈S_total/τ⌉`; blocks the model skips stay empty (size 0 in the
//! block-location array). A get reads one data block and no index block: the key map and
//! the model give the block, the block-location array its place.

#![deny(clippy::indexing_slicing)]

use std::sync::Arc;

use super::{Emit, LayoutIndex, Locate, Written, Wrote};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::kv::block::{Block, TRAILER, record_bytes};
use crate::kv::file::{Footer, Handle};
use crate::kv::keymap::{KeyMap, MAX_SPAN};
use crate::kv::model::BlockModel;
use crate::kv::read::{Kind, Reader};
use crate::kv::verify::{VerifyReport, check_blocks};
use crate::kv::write::{BuildOptions, Record, Writer};
use crate::{Error, FormatError, Result};

/// The learned layout's meta: key map, model, and `offsets[b]` where data block `b`
/// starts (`data_blocks + 1` entries, the last `data_bytes`).
#[derive(Clone, Debug)]
pub(crate) struct LearnedMeta {
    pub(crate) keymap: KeyMap,
    pub(crate) model: BlockModel,
    pub(crate) offsets: Vec<u64>,
}

impl LearnedMeta {
    /// Data blocks, empty ones included.
    fn blocks(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The block of `key` among blocks of `tau` bytes, `⌊f(x(key)) / τ⌋` held within the
    /// blocks; `None` for a file of no block.
    pub(crate) fn block_of(&self, key: &[u8], tau: u64) -> Option<usize> {
        let blocks = self.blocks() as u64;
        (blocks > 0).then(|| self.model.block(self.keymap.map(key), tau, blocks) as usize)
    }

    /// Data block `b`'s handle (size 0 when empty); `None` past the last block.
    fn handle(&self, b: usize) -> Option<Handle> {
        let start = *self.offsets.get(b)?;
        let end = *self.offsets.get(b + 1)?;
        Some(Handle {
            offset: start,
            size: end - start,
        })
    }
}

impl Locate for LearnedMeta {
    /// The model's block, unless it is empty (then the key is absent).
    fn locate(&self, r: &mut Reader<'_>, key: &[u8]) -> Result<Option<Arc<Block>>> {
        let tau = r.file().footer().block_size;
        let handle = self
            .block_of(key, tau)
            .and_then(|b| self.handle(b))
            .filter(|h| h.size > 0);
        match handle {
            Some(h) => r.block(h, Kind::Data, None).map(Some),
            None => Ok(None),
        }
    }

    fn scan(&self, r: &mut Reader<'_>, from: &[u8], emit: &mut Emit<'_>) -> Result<()> {
        let Some(mut b) = self.block_of(from, r.file().footer().block_size) else {
            return Ok(());
        };
        while let Some(h) = self.handle(b) {
            if h.size > 0 {
                let block = r.block(h, Kind::Data, self.handle(b + 1))?;
                if !emit(&block) {
                    return Ok(());
                }
            }
            b += 1;
        }
        Ok(())
    }

    fn data_handles(&self, _: &mut Reader<'_>) -> Result<Vec<Handle>> {
        Ok((0..self.blocks()).filter_map(|b| self.handle(b)).collect())
    }
}

impl LayoutIndex for LearnedMeta {
    fn write(w: &mut Writer, records: &[Record<'_>], options: &BuildOptions) -> Wrote<Self> {
        let tau = options.block_size;
        let keymap = KeyMap::train(records.iter().map(|r| r.key));
        let mut points = Vec::with_capacity(records.len());
        let mut s = 0u64;
        for r in records {
            points.push((keymap.map(r.key), s));
            s += record_bytes(r.key, r.value);
        }
        let epsilon = options.epsilon.unwrap_or(tau / 4).max(1);
        let leaves = options.leaves.unwrap_or(records.len() / 1024).max(1);
        let model = BlockModel::fit(options.model, &points, epsilon, leaves)?;
        let blocks = if records.is_empty() {
            0
        } else {
            s.div_ceil(tau).max(1)
        };
        let mut offsets = Vec::with_capacity(blocks as usize + 1);
        offsets.push(0);
        let mut current = 0u64;
        for (r, &(x, _)) in records.iter().zip(&points) {
            let b = model.block(x, tau, blocks);
            if b < current {
                return Err(Error::Internal {
                    problem: format!("the block model went back from block {current} to {b}"),
                });
            }
            while current < b {
                w.close_data_block()?;
                offsets.push(w.written);
                current += 1;
            }
            w.add(r)?;
        }
        while current < blocks {
            w.close_data_block()?;
            offsets.push(w.written);
            current += 1;
        }
        w.data_bytes = w.written;
        let written = Written {
            block_size: tau,
            model_pieces: model.pieces() as u64,
            key_positions: keymap.positions() as u64,
            ..Written::default()
        };
        let meta = LearnedMeta {
            keymap,
            model,
            offsets,
        };
        Ok((meta, written))
    }

    fn encode(&self, out: &mut Vec<u8>) {
        self.keymap.encode(out);
        self.model.encode(out);
        let mut e = Encoder(out);
        e.u64(self.offsets.len() as u64);
        for &o in &self.offsets {
            e.u64(o);
        }
    }

    fn decode(d: &mut Decoder<'_>, footer: &Footer) -> Result<Self, FormatError> {
        let keymap = KeyMap::decode(d, MAX_SPAN)?;
        let model = BlockModel::decode(d)?;
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
        Ok(LearnedMeta {
            keymap,
            model,
            offsets,
        })
    }

    fn memory_bytes(&self) -> u64 {
        self.keymap.size_in_bytes() + self.model.size_in_bytes() + 8 * self.offsets.len() as u64
    }

    fn index_blocks(&self) -> u64 {
        0
    }

    /// Every block in order, and each key in the block the model places it in.
    fn verify(&self, r: &mut Reader<'_>) -> Result<VerifyReport> {
        let tau = r.file().footer().block_size;
        let handles = self.data_handles(r)?.into_iter().map(|h| (h, None));
        check_blocks(r, handles.collect(), &|key| self.block_of(key, tau))
    }
}
