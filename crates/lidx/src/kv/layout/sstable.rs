//! The SSTable layout, Bigtable's baseline (paper 4, section 3; FORMAT.md section 8):
//! blocks are filled to τ (a record that would pass τ starts the next block, and a block
//! holds at least one record); each block's separator (a short key between its last key
//! and the next block's first) and handle go to level-1 index blocks of τ, prefix-compressed
//! with restart points as RocksDB's are ([`index_block`](crate::kv::index_block)), whose
//! last keys and handles form level 0, kept in memory. A get reads one level-1 block and
//! one data block, each from the cache when it holds them (level-1 blocks ahead of data
//! blocks, as RocksDB keeps index blocks at high priority).

#![deny(clippy::indexing_slicing)]

use std::sync::Arc;

use super::{Emit, LayoutIndex, Locate, Written, Wrote};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::kv::block::{Block, Fences, TRAILER, record_bytes};
use crate::kv::file::{Footer, Handle};
use crate::kv::index_block::{IndexBlockBuilder, short_successor, shortest_separator};
use crate::kv::read::{Kind, Reader};
use crate::kv::verify::{VerifyReport, check_blocks};
use crate::kv::write::{BuildOptions, Record, Writer};
use crate::{Error, FormatError, Result};

/// The SSTable layout's level 0: the last key of each level-1 index block, in increasing
/// order, and where that block lies.
#[derive(Clone, Debug)]
pub(crate) struct SstableMeta {
    pub(crate) level0: Vec<(Box<[u8]>, Handle)>,
    /// Level 0's keys as fences, searched before the keys themselves.
    fences: Fences,
}

impl SstableMeta {
    /// The meta of `level0`.
    fn new(level0: Vec<(Box<[u8]>, Handle)>) -> SstableMeta {
        let fences = Fences::new(level0.iter().map(|(k, _)| &k[..]));
        SstableMeta { level0, fences }
    }

    /// The level-0 entries from the first whose level-1 block could hold `key`.
    fn entries_from<'m>(&'m self, key: &[u8]) -> impl Iterator<Item = &'m (Box<[u8]>, Handle)> {
        let below = |i: usize| self.level0.get(i).is_some_and(|(last, _)| **last < *key);
        let i = self.fences.count_below(key, below);
        self.level0.iter().skip(i)
    }
}

impl Locate for SstableMeta {
    /// Level 0 gives the level-1 block, which gives the data block.
    fn locate(&self, r: &mut Reader<'_>, key: &[u8]) -> Result<Option<Arc<Block>>> {
        let Some(&(_, ih)) = self.entries_from(key).next() else {
            return Ok(None);
        };
        let index = r.level1_block(ih)?;
        let entry = index.seek(key);
        if !entry.valid() {
            return Err(r
                .file()
                .bad_block(ih, "ends below the level-0 key that points at it".into()));
        }
        r.block(entry.handle(), Kind::Data, None).map(Some)
    }

    fn scan(&self, r: &mut Reader<'_>, from: &[u8], emit: &mut Emit<'_>) -> Result<()> {
        for &(_, ih) in self.entries_from(from) {
            let index = r.level1_block(ih)?;
            let mut entry = index.seek(from);
            while entry.valid() {
                let h = entry.handle();
                let next = entry.advance().then(|| entry.handle());
                let block = r.block(h, Kind::Data, next)?;
                if !emit(&block) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Reads the level-1 blocks.
    fn data_handles(&self, r: &mut Reader<'_>) -> Result<Vec<Handle>> {
        let mut out = Vec::new();
        for &(_, ih) in &self.level0 {
            let index = r.level1_block(ih)?;
            out.extend(index.entries().into_iter().map(|(_, h)| h));
        }
        Ok(out)
    }
}

impl LayoutIndex for SstableMeta {
    fn write(w: &mut Writer, records: &[Record<'_>], options: &BuildOptions) -> Wrote<Self> {
        let tau = options.block_size;
        // Level 1: (separator of a data block, its handle), collected, then written. A
        // block's separator lies between its last key and the next block's first key.
        let mut level1: Vec<(Vec<u8>, Handle)> = Vec::new();
        let mut previous: Option<&[u8]> = None;
        for r in records {
            let size = record_bytes(r.key, r.value);
            if let Some(last) = previous
                && !w.block.is_empty()
                && w.block.body_bytes() as u64 + size > tau
            {
                let h = w.close_data_block()?;
                level1.push((shortest_separator(last, r.key), h));
            }
            w.add(r)?;
            previous = Some(r.key);
        }
        if let Some(last) = records.last() {
            let h = w.close_data_block()?;
            level1.push((short_successor(last.key), h));
        }
        w.data_bytes = w.written;
        // Level-1 blocks are filled to τ like data blocks; each one's last separator and
        // handle go to level 0.
        let mut level0 = Vec::new();
        let mut block = IndexBlockBuilder::default();
        let mut last: Option<&[u8]> = None;
        for (key, h) in &level1 {
            if let Some(last) = last
                && !block.is_empty()
                && block.body_bytes_with(key, *h) as u64 > tau
            {
                level0.push((last.into(), write_index_block(w, &mut block)?));
            }
            block
                .add(key, *h)
                .map_err(|e| Error::param("block size", e.to_string()))?;
            last = Some(key);
        }
        if let Some(last) = last {
            level0.push((last.into(), write_index_block(w, &mut block)?));
        }
        let written = Written {
            block_size: tau,
            index_blocks: level0.len() as u64,
            ..Written::default()
        };
        Ok((SstableMeta::new(level0), written))
    }

    fn encode(&self, out: &mut Vec<u8>) {
        Encoder(out).u64(self.level0.len() as u64);
        for (key, handle) in &self.level0 {
            Encoder(out).u64(key.len() as u64);
            out.extend_from_slice(key);
            handle.encode(out);
        }
    }

    fn decode(d: &mut Decoder<'_>, footer: &Footer) -> Result<Self, FormatError> {
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
        Ok(SstableMeta::new(level0))
    }

    fn memory_bytes(&self) -> u64 {
        let entries: u64 = self
            .level0
            .iter()
            .map(|(k, _)| k.len() as u64 + Handle::BYTES as u64)
            .sum();
        entries + self.fences.bytes()
    }

    fn index_blocks(&self) -> u64 {
        self.level0.len() as u64
    }

    /// Every block in order, each level-1 entry's key a separator of its block (at least
    /// its last key, below the next block's first), and each level-0 key the last key of
    /// its level-1 block.
    fn verify(&self, r: &mut Reader<'_>) -> Result<VerifyReport> {
        let mut handles = Vec::new();
        for (i, (l0_key, ih)) in self.level0.iter().enumerate() {
            let index = r.level1_block(*ih)?;
            if index.is_empty() || index.last_key() != &**l0_key {
                return Err(r.file().corrupt(format!(
                    "level-0 entry {i} does not name the last key of its level-1 block"
                )));
            }
            handles.extend(index.entries().into_iter().map(|(k, h)| (h, Some(k))));
        }
        check_blocks(r, handles, &|_| None)
    }
}

/// Seals the level-1 block `block` holds and appends it; its handle.
fn write_index_block(w: &mut Writer, block: &mut IndexBlockBuilder) -> Result<Handle> {
    w.append_sealed(|compression, out| block.finish(compression, out))
}
