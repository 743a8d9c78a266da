//! Writing a key-value file in either layout (paper 4, sections 2 and 4).
//!
//! - **Learned**: the key map is trained on all keys, the model fitted to `S(k)` (the
//!   bytes of the records before `k`, as [`record_bytes`] counts them), and record
//!   `⟨k, v⟩` goes to block `⌊f(k)/τ⌋` of `⌈S_total/τ⌉`; blocks the model skips stay
//!   empty (size 0 in the block-location array).
//! - **SSTable**: blocks are filled to τ (a record that would pass τ starts the next
//!   block, and a block holds at least one record); each block's last key and handle go to
//!   level-1 index blocks of τ, whose last keys and handles form level 0.

use std::path::Path;

use super::block::{BlockBuilder, Compression, MAX_KEY, TRAILER, record_bytes};
use super::file::{Footer, Handle, KeyEncoding, LayerPlace, Layout, Meta, display_key};
use super::keymap::KeyMap;
use super::layers::{Candidate, tune};
use super::model::{BlockModel, ModelKind};
use crate::files::AtomicFile;
use crate::storage::profile::{AffineCost, named_profile};
use crate::{Error, Result};

/// One record to write: a key and its value, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Record<'a> {
    /// The key (at most 65535 bytes).
    pub key: &'a [u8],
    /// The value (any length a block can hold).
    pub value: &'a [u8],
}

/// The smallest target block size accepted.
pub const MIN_BLOCK_SIZE: u64 = 64;
/// The largest target block size accepted.
pub const MAX_BLOCK_SIZE: u64 = 1 << 30;

/// How to write a key-value file.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BuildOptions {
    /// The layout.
    pub layout: Layout,
    /// Target block size τ in bytes (the paper: 32 KiB).
    pub block_size: u64,
    /// Block compression.
    pub compression: Compression,
    /// The learned layout's model.
    pub model: ModelKind,
    /// The PGM model's error in bytes (default τ/4).
    pub epsilon: Option<u64>,
    /// The RMI model's leaves (default one per 1024 records).
    pub leaves: Option<usize>,
    /// How keys were written (recorded in the footer for the commands that read them).
    pub key_encoding: KeyEncoding,
    /// The tuned layout's storage: the cost of a read it is tuned for (default: the `ssd`
    /// profile's).
    pub profile: Option<AffineCost>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            layout: Layout::Learned,
            block_size: 32 * 1024,
            compression: Compression::None,
            model: ModelKind::Linear,
            epsilon: None,
            leaves: None,
            key_encoding: KeyEncoding::Bytes,
            profile: None,
        }
    }
}

/// The distribution of stored block sizes (trailers included, empty blocks as 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct BlockSizes {
    /// Blocks, empty ones included.
    pub blocks: u64,
    /// Blocks holding no record.
    pub empty: u64,
    /// Mean bytes over all blocks.
    pub mean: f64,
    /// Median bytes.
    pub p50: u64,
    /// 99th percentile bytes.
    pub p99: u64,
    /// The largest block.
    pub max: u64,
}

impl BlockSizes {
    /// The distribution of `sizes`.
    pub fn of(sizes: &[u64]) -> BlockSizes {
        let mut sorted = sizes.to_vec();
        sorted.sort_unstable();
        let at = |q: f64| {
            let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len().max(1)) - 1;
            sorted.get(i).copied().unwrap_or(0)
        };
        BlockSizes {
            blocks: sizes.len() as u64,
            empty: sizes.iter().filter(|&&s| s == 0).count() as u64,
            mean: sizes.iter().sum::<u64>() as f64 / sizes.len().max(1) as f64,
            p50: at(0.5),
            p99: at(0.99),
            max: sorted.last().copied().unwrap_or(0),
        }
    }
}

/// What [`build`] wrote.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BuildReport {
    /// The options used.
    pub options: BuildOptions,
    /// Records written.
    pub records: u64,
    /// Bytes of the records as blocks count them (`S` after the last key).
    pub record_bytes: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// Stored data block sizes.
    pub data_blocks: BlockSizes,
    /// Level-1 index blocks (SSTable) or 0.
    pub index_blocks: u64,
    /// Bytes of the index on disk (level-1 blocks and the meta).
    pub index_disk_bytes: u64,
    /// The learned model's pieces (0 for the SSTable layout).
    pub model_pieces: u64,
    /// Character positions the key map reads (0 for the SSTable layout).
    pub key_positions: u64,
    /// What the tuner chose, and the best structure it found for each number of layers.
    pub tuned: Option<TunedReport>,
}

/// The tuned layout's choice.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TunedReport {
    /// The read cost it was tuned for.
    pub cost: AffineCost,
    /// Bytes of a data page.
    pub page_size: u64,
    /// The best structure for each number of layers, cheapest (the choice) first.
    pub candidates: Vec<Candidate>,
    /// Structures sketched.
    pub sketched: u64,
}

impl BuildOptions {
    /// Checks the settings: a block size from [`MIN_BLOCK_SIZE`] to [`MAX_BLOCK_SIZE`], a
    /// PGM error and an RMI leaf count of at least 1 where given.
    pub fn check(&self) -> Result<()> {
        let tau = self.block_size;
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&tau) {
            return Err(Error::param(
                "block size",
                format!("{tau} bytes is outside {MIN_BLOCK_SIZE} bytes to 1 GiB"),
            ));
        }
        if self.epsilon == Some(0) {
            return Err(Error::param("epsilon", "at least 1 byte"));
        }
        if self.leaves == Some(0) {
            return Err(Error::param("leaves", "at least 1 leaf"));
        }
        if let Some(profile) = &self.profile {
            profile.check()?;
        }
        Ok(())
    }
}

/// Writes `records` (keys in strictly increasing byte order) to `path` atomically.
pub fn build(records: &[Record<'_>], options: &BuildOptions, path: &Path) -> Result<BuildReport> {
    options.check()?;
    let tau = options.block_size;
    check_records(records, path)?;
    let mut w = Writer::new(Some(AtomicFile::create(path)?), options.compression);
    let record_total: u64 = records.iter().map(|r| record_bytes(r.key, r.value)).sum();
    let mut tuned = None;
    let mut tau = tau;
    let (meta, index_blocks, model_pieces, key_positions) = match options.layout {
        Layout::Learned => {
            let (meta, pieces, positions) = w.learned(records, options, record_total)?;
            (meta, 0, pieces, positions)
        }
        Layout::Tuned => {
            let (meta, report) = w.tuned(records, options)?;
            tau = report.page_size;
            let (pieces, positions) = match &meta {
                Meta::Tuned { keymap, layers, .. } => (
                    layers.iter().map(|l| l.pieces).sum(),
                    keymap.positions() as u64,
                ),
                _ => (0, 0),
            };
            tuned = Some(report);
            (meta, 0, pieces, positions)
        }
        Layout::Btree => {
            let (meta, page) = w.btree(records, tau)?;
            tau = page;
            let nodes = match &meta {
                Meta::Btree { levels } => levels.iter().sum(),
                _ => 0,
            };
            (meta, nodes, 0, 0)
        }
        Layout::Sstable => {
            let meta = w.sstable(records, tau)?;
            let n = match &meta {
                Meta::Sstable { level0 } => level0.len() as u64,
                _ => 0,
            };
            (meta, n, 0, 0)
        }
    };
    let data_bytes = w.data_bytes;
    let meta_offset = w.written;
    let mut meta_bytes = Vec::new();
    meta.encode(&mut meta_bytes);
    let footer = Footer {
        layout: options.layout,
        key_encoding: options.key_encoding,
        compression: options.compression,
        records: records.len() as u64,
        data_blocks: w.sizes.len() as u64,
        block_size: tau,
        data_bytes,
        meta_offset,
        meta_len: meta_bytes.len() as u64,
    };
    let Some(mut out) = w.out.take() else {
        return Err(Error::Internal {
            problem: "kv::build lost its output".into(),
        });
    };
    out.write_all(&meta_bytes)?;
    let footer_bytes = footer.encode(crc32c::crc32c(&meta_bytes));
    out.write_all(&footer_bytes)?;
    out.finish()?;
    Ok(BuildReport {
        options: *options,
        records: records.len() as u64,
        record_bytes: record_total,
        file_bytes: meta_offset + meta_bytes.len() as u64 + footer_bytes.len() as u64,
        data_blocks: BlockSizes::of(&w.sizes),
        index_blocks,
        index_disk_bytes: meta_offset - data_bytes + meta_bytes.len() as u64,
        model_pieces,
        key_positions,
        tuned,
    })
}

/// What [`build`] with the tuned layout would choose for `records` under `options`
/// (its profile), without writing anything: the pages are laid out and the tuner run, as
/// for the file. Lets one compare the tuner's choices under several profiles cheaply.
pub fn sketch_tuned(records: &[Record<'_>], options: &BuildOptions) -> Result<TunedReport> {
    options.check()?;
    check_records(records, Path::new("(sketch)"))?;
    let mut w = Writer::new(None, options.compression);
    Ok(w.tuned(records, options)?.1)
}

/// Keys strictly increasing and within [`MAX_KEY`]; `path` names the output in errors.
fn check_records(records: &[Record<'_>], path: &Path) -> Result<()> {
    if let Some(r) = records.iter().find(|r| r.key.len() > MAX_KEY) {
        return Err(Error::param(
            "key",
            format!(
                "a key of {} bytes is longer than the {MAX_KEY} bytes a file holds",
                r.key.len()
            ),
        ));
    }
    for pair in records.windows(2) {
        if pair[0].key == pair[1].key {
            return Err(Error::DuplicateKey {
                path: path.to_path_buf(),
                key: display_key(pair[0].key),
            });
        }
        if pair[0].key > pair[1].key {
            return Err(Error::misuse(
                "kv::build",
                format!(
                    "records must come in increasing key order, and {} follows {}",
                    display_key(pair[1].key),
                    display_key(pair[0].key)
                ),
            ));
        }
    }
    Ok(())
}

/// The file being written: the data region grows block by block.
struct Writer {
    /// Where the file goes; `None` when only sketching (nothing is written).
    out: Option<AtomicFile>,
    compression: Compression,
    block: BlockBuilder,
    sealed: Vec<u8>,
    /// Bytes written so far.
    written: u64,
    /// Stored size of each data block so far.
    sizes: Vec<u64>,
    data_bytes: u64,
}

impl Writer {
    /// A writer of blocks compressed with `compression` into `out` (`None`: sketching).
    fn new(out: Option<AtomicFile>, compression: Compression) -> Writer {
        Writer {
            out,
            compression,
            block: BlockBuilder::default(),
            sealed: Vec::new(),
            written: 0,
            sizes: Vec::new(),
            data_bytes: 0,
        }
    }

    /// Seals the block being built (if it holds a record) and appends it; returns its
    /// handle (size 0 when empty).
    fn flush(&mut self) -> Result<Handle> {
        let offset = self.written;
        if self.block.is_empty() {
            return Ok(Handle { offset, size: 0 });
        }
        self.block
            .finish(self.compression, &mut self.sealed)
            .map_err(|e| Error::param("block size", e))?;
        if let Some(out) = &mut self.out {
            out.write_all(&self.sealed)?;
        }
        self.written += self.sealed.len() as u64;
        Ok(Handle {
            offset,
            size: self.sealed.len() as u64,
        })
    }

    fn add(&mut self, r: &Record<'_>) -> Result<()> {
        self.block
            .add(r.key, r.value)
            .map_err(|e| Error::param("block size", e))
    }

    fn learned(
        &mut self,
        records: &[Record<'_>],
        options: &BuildOptions,
        total: u64,
    ) -> Result<(Meta, u64, u64)> {
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
            total.div_ceil(tau).max(1)
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
                self.close_data_block()?;
                offsets.push(self.written);
                current += 1;
            }
            self.add(r)?;
        }
        while current < blocks {
            self.close_data_block()?;
            offsets.push(self.written);
            current += 1;
        }
        self.data_bytes = self.written;
        let pieces = model.pieces() as u64;
        let positions = keymap.positions() as u64;
        Ok((
            Meta::Learned {
                keymap,
                model,
                offsets,
            },
            pieces,
            positions,
        ))
    }

    /// Paper 2's layout: pages of a fixed size (the block size, or more where a record
    /// needs it), each a sealed block, zeros and the block's length; then the layers the
    /// tuner chose for the profile, layer 1 first.
    fn tuned(
        &mut self,
        records: &[Record<'_>],
        options: &BuildOptions,
    ) -> Result<(Meta, TunedReport)> {
        // The PGM's PLA is exact on any u64: the widest span, the fewest ties.
        let keymap = KeyMap::train_within(records.iter().map(|r| r.key), u64::MAX);
        let page = self.page_size(records, options.block_size, 0);
        let firsts: Vec<u64> = self
            .pages(records, page)?
            .into_iter()
            .map(|i| keymap.map(records[i].key))
            .collect();
        let cost = options
            .profile
            .or_else(|| named_profile("ssd").map(|p| p.random))
            .unwrap_or(AffineCost {
                latency_us: 250.0,
                bandwidth_mb_s: 175.0,
            });
        let mut places = Vec::new();
        let mut report = TunedReport {
            cost,
            page_size: page,
            candidates: Vec::new(),
            sketched: 0,
        };
        if !firsts.is_empty() {
            let tuned = tune(&firsts, page, &cost)?;
            for layer in &tuned.index.layers {
                let mut bytes = Vec::with_capacity(layer.bytes() as usize);
                for p in &layer.pieces {
                    p.encode(&mut bytes);
                }
                places.push(LayerPlace {
                    offset: self.written,
                    pieces: layer.pieces.len() as u64,
                    delta: layer.delta,
                    unit: layer.unit,
                    units_below: layer.units_below,
                });
                if let Some(out) = &mut self.out {
                    out.write_all(&bytes)?;
                }
                self.written += bytes.len() as u64;
            }
            report.candidates = tuned.per_layers;
            report.sketched = tuned.sketched;
        }
        Ok((
            Meta::Tuned {
                keymap,
                layers: places,
                cost,
            },
            report,
        ))
    }

    /// The most bytes a block of `body` bytes takes sealed, with a page's length word.
    fn worst_sealed(&self, body: u64) -> u64 {
        let stored = match self.compression {
            Compression::None => body,
            Compression::Lz4 => body + body / 255 + 16 + 4,
        };
        stored + TRAILER as u64 + 4
    }

    /// A page size for `records`: the target, or more where one record (or, with
    /// `entries_per_node` > 0, that many B+tree entries of the longest key) needs it.
    fn page_size(&self, records: &[Record<'_>], target: u64, entries_per_node: u64) -> u64 {
        let largest = records
            .iter()
            .map(|r| self.worst_sealed(record_bytes(r.key, r.value) + 4))
            .max()
            .unwrap_or(0);
        let longest_key = records.iter().map(|r| r.key.len()).max().unwrap_or(0);
        let entry = record_bytes(&vec![0; longest_key], &[0; 8]) + 4;
        let node = self.worst_sealed(entries_per_node * entry);
        target.max(largest).max(node)
    }

    /// Writes `records` into pages of `page` bytes, each filled while its sealed block
    /// fits; returns the index of each page's first record.
    fn pages(&mut self, records: &[Record<'_>], page: u64) -> Result<Vec<usize>> {
        let mut firsts = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let size = record_bytes(r.key, r.value);
            if !self.block.is_empty()
                && self.worst_sealed(self.block.body_bytes() as u64 + size) > page
            {
                self.close_page(page)?;
            }
            if self.block.is_empty() {
                firsts.push(i);
            }
            self.add(r)?;
        }
        if !self.block.is_empty() {
            self.close_page(page)?;
        }
        self.data_bytes = self.written;
        Ok(firsts)
    }

    /// The disk B+tree baseline (paper 2's PostgreSQL): data pages as in the tuned layout,
    /// then nodes of the same size, level by level up to the root, each entry the first
    /// key of a page or node below and its page number.
    fn btree(&mut self, records: &[Record<'_>], target: u64) -> Result<(Meta, u64)> {
        let page = self.page_size(records, target, 2);
        let firsts = self.pages(records, page)?;
        let mut below: Vec<(&[u8], u64)> = firsts
            .iter()
            .enumerate()
            .map(|(p, &i)| (records[i].key, p as u64))
            .collect();
        let mut next_page = below.len() as u64;
        let mut levels = Vec::new();
        while below.len() > 1 || (levels.is_empty() && !below.is_empty()) {
            let mut level = Vec::new();
            for &(key, child) in &below {
                let size = record_bytes(key, &child.to_le_bytes());
                if !self.block.is_empty()
                    && self.worst_sealed(self.block.body_bytes() as u64 + size) > page
                {
                    self.close_node(page)?;
                    next_page += 1;
                }
                if self.block.is_empty() {
                    level.push((key, next_page));
                }
                self.block
                    .add(key, &child.to_le_bytes())
                    .map_err(|e| Error::param("block size", e))?;
            }
            self.close_node(page)?;
            next_page += 1;
            levels.push(level.len() as u64);
            below = level;
        }
        Ok((Meta::Btree { levels }, page))
    }

    /// Seals a B+tree node into a page, not counted among the data blocks.
    fn close_node(&mut self, page: u64) -> Result<()> {
        self.close_page(page)?;
        self.sizes.pop();
        Ok(())
    }

    /// Seals the block being built into a page of `page` bytes and appends it.
    fn close_page(&mut self, page: u64) -> Result<()> {
        self.block
            .finish(self.compression, &mut self.sealed)
            .map_err(|e| Error::param("block size", e))?;
        let sealed = self.sealed.len() as u64;
        if sealed + 4 > page {
            return Err(Error::Internal {
                problem: format!("a sealed block of {sealed} bytes does not fit a page of {page}"),
            });
        }
        self.sealed.resize(page as usize - 4, 0);
        self.sealed
            .extend_from_slice(&(sealed as u32).to_le_bytes());
        if let Some(out) = &mut self.out {
            out.write_all(&self.sealed)?;
        }
        self.written += page;
        self.sizes.push(page);
        Ok(())
    }

    fn close_data_block(&mut self) -> Result<Handle> {
        let h = self.flush()?;
        self.sizes.push(h.size);
        Ok(h)
    }

    fn sstable(&mut self, records: &[Record<'_>], tau: u64) -> Result<Meta> {
        // Level 1: (last key of a data block, its handle), collected, then written.
        let mut level1: Vec<(&[u8], Handle)> = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let size = record_bytes(r.key, r.value);
            if !self.block.is_empty() && self.block.body_bytes() as u64 + size > tau {
                let h = self.close_data_block()?;
                level1.push((records[i - 1].key, h));
            }
            self.add(r)?;
        }
        if let Some(last) = records.last() {
            let h = self.close_data_block()?;
            level1.push((last.key, h));
        }
        self.data_bytes = self.written;
        let mut level0 = Vec::new();
        let mut handle = Vec::with_capacity(Handle::BYTES);
        for (i, &(key, h)) in level1.iter().enumerate() {
            handle.clear();
            h.encode(&mut handle);
            let size = record_bytes(key, &handle);
            if !self.block.is_empty() && self.block.body_bytes() as u64 + size > tau {
                let ih = self.flush()?;
                level0.push((level1[i - 1].0.into(), ih));
            }
            self.block
                .add(key, &handle)
                .map_err(|e| Error::param("block size", e))?;
        }
        if let Some(&(last, _)) = level1.last() {
            let ih = self.flush()?;
            level0.push((last.into(), ih));
        }
        Ok(Meta::Sstable { level0 })
    }
}
