//! Writing a key-value file (paper 4, sections 3 and 4; paper 2, section 2): the options
//! and the report, the checks every layout's records pass, and the [`Writer`] of blocks
//! each layout's writer (in [`layout`](super::layout)) drives: it decides where a block
//! ends and which index to write after the data; [`build`] then appends the meta and the
//! footer and publishes the file.

use std::path::Path;

use super::block::{BlockBuilder, Compression, MAX_KEY, record_bytes};
use super::file::{Footer, Handle};
use super::input::RecordInput;
use super::keys::{KeyEncoding, display_key};
use super::layers::{Candidate, Families};
use super::layout::learned::LearnedBuild;
use super::layout::{Layout, Meta, tuned};
use super::model::ModelKind;
use crate::files::AtomicFile;
use crate::storage::profile::AffineCost;
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
    /// The learned layout's cap: the most record bytes a data block holds, unless one
    /// record is larger (default 2τ); a logical block the model fills past it continues
    /// in overflow blocks.
    pub max_block: Option<u64>,
    /// The model families the tuned layout's layers are drawn from (default both, PGM
    /// and step).
    pub families: Families,
    /// The learned layout's block locations: `None` (default) inline in the meta up to
    /// [`INLINE_MAX_BYTES`](crate::kv::locations::INLINE_MAX_BYTES), else in chunks of
    /// [`BLOCKS_PER_CHUNK`](crate::kv::locations::BLOCKS_PER_CHUNK) blocks read when
    /// first needed; `Some(n)`: in chunks of `n` blocks always.
    pub location_chunk_blocks: Option<u64>,
}

/// The most blocks a location chunk covers (its stored length must fit a `u32`).
pub const MAX_LOCATION_CHUNK_BLOCKS: u64 = 1 << 20;

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
            max_block: None,
            families: Families::ALL,
            location_chunk_blocks: None,
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
    /// Index blocks written: level-1 blocks (SSTable) or nodes (B+tree); 0 for the learned
    /// layout and for the tuned one (its layers count in `model_pieces`).
    pub index_blocks: u64,
    /// Bytes of the index on disk (level-1 blocks and the meta).
    pub index_disk_bytes: u64,
    /// The learned model's pieces, or the tuned layers' stored pieces; 0 for the SSTable
    /// and B+tree layouts.
    pub model_pieces: u64,
    /// Character positions the key map reads (learned, tuned; 0 for the SSTable and
    /// B+tree layouts).
    pub key_positions: u64,
    /// What the tuner chose, and the best structure it found for each number of layers.
    pub tuned: Option<TunedReport>,
    /// The learned layout's model, largest logical block and overflow blocks.
    pub learned: Option<LearnedBuild>,
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
        if let Some(n) = self.location_chunk_blocks
            && !(1..=MAX_LOCATION_CHUNK_BLOCKS).contains(&n)
        {
            return Err(Error::param(
                "location chunk",
                format!("{n} blocks is outside 1 to {MAX_LOCATION_CHUNK_BLOCKS}"),
            ));
        }
        if let Some(cap) = self.max_block
            && !(tau..=MAX_BLOCK_SIZE).contains(&cap)
        {
            return Err(Error::param(
                "max block",
                format!("{cap} bytes is outside the block size ({tau} bytes) to 1 GiB"),
            ));
        }
        Ok(())
    }

    /// Fails where an option is set that the layout does not use: a cap on data blocks
    /// (`max_block`, the learned layout's), model families or a storage profile (the tuned
    /// layout's). For front ends that take options from users, who would otherwise think
    /// them applied; [`build`] itself ignores them.
    pub fn refuse_unused(&self) -> Result<()> {
        let unused = [
            ("max block", self.max_block.is_some(), Layout::Learned),
            ("families", self.families != Families::ALL, Layout::Tuned),
            ("profile", self.profile.is_some(), Layout::Tuned),
        ];
        match unused
            .into_iter()
            .find(|&(_, set, uses)| set && self.layout != uses)
        {
            Some((name, _, uses)) => Err(Error::param(
                name,
                format!(
                    "only the {uses} layout takes one, and this file's layout is {}",
                    self.layout
                ),
            )),
            None => Ok(()),
        }
    }

    /// The learned layout's cap in bytes: `max_block`, or twice the block size.
    pub fn max_block_bytes(&self) -> u64 {
        self.max_block.unwrap_or(2 * self.block_size)
    }
}

/// Writes the records of `input` to `path` atomically, as [`build`] does: the pipeline
/// behind `lidx kv build`. Refuses a `path` that is the input's file
/// ([`Error::OutputIsInput`]) before reading the records.
pub fn build_from_input(
    input: &RecordInput,
    options: &BuildOptions,
    path: &Path,
) -> Result<BuildReport> {
    crate::files::refuse_same_file(input.path(), path)?;
    build(&input.records(), options, path)
}

/// Writes `records` (keys in strictly increasing byte order) to `path` atomically.
pub fn build(records: &[Record<'_>], options: &BuildOptions, path: &Path) -> Result<BuildReport> {
    options.check()?;
    check_records(records, path)?;
    let mut w = Writer::new(Some(AtomicFile::create(path)?), options.compression);
    let record_total: u64 = records.iter().map(|r| record_bytes(r.key, r.value)).sum();
    let (meta, written) = Meta::write(&mut w, records, options)?;
    let data_bytes = w.data_bytes;
    let meta_offset = w.written;
    let mut meta_bytes = Vec::new();
    meta.encode(&mut meta_bytes);
    let footer = Footer {
        version: crate::kv::file::VERSION,
        layout: options.layout,
        key_encoding: options.key_encoding,
        compression: options.compression,
        records: records.len() as u64,
        data_blocks: w.sizes.len() as u64,
        block_size: written.block_size,
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
        index_blocks: written.index_blocks,
        index_disk_bytes: meta_offset - data_bytes + meta_bytes.len() as u64,
        model_pieces: written.model_pieces,
        key_positions: written.key_positions,
        tuned: written.tuned,
        learned: written.learned,
    })
}

/// What [`build`] with the tuned layout would choose for `records` under `options`
/// (its profile), without writing anything: the pages are laid out and the tuner run, as
/// for the file. Lets one compare the tuner's choices under several profiles cheaply.
pub fn sketch_tuned(records: &[Record<'_>], options: &BuildOptions) -> Result<TunedReport> {
    options.check()?;
    check_records(records, Path::new("(sketch)"))?;
    let mut w = Writer::new(None, options.compression);
    Ok(tuned::write_tuned(&mut w, records, options)?.1)
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

/// The file being written: the data region grows block by block; each layout's writer
/// decides where a block ends and what index follows the data.
pub(crate) struct Writer {
    /// Where the file goes; `None` when only sketching (nothing is written).
    out: Option<AtomicFile>,
    pub(crate) compression: Compression,
    /// The block being built.
    pub(crate) block: BlockBuilder,
    /// The last block sealed.
    pub(crate) sealed: Vec<u8>,
    /// Bytes written so far.
    pub(crate) written: u64,
    /// Stored size of each data block so far.
    pub(crate) sizes: Vec<u64>,
    /// Bytes of the data blocks, set by the layout's writer when the data ends.
    pub(crate) data_bytes: u64,
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

    /// Appends `bytes` as they are (an index the layout encoded itself).
    pub(crate) fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(out) = &mut self.out {
            out.write_all(bytes)?;
        }
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Appends the last block sealed.
    pub(crate) fn write_sealed(&mut self) -> Result<()> {
        if let Some(out) = &mut self.out {
            out.write_all(&self.sealed)?;
        }
        self.written += self.sealed.len() as u64;
        Ok(())
    }

    /// Seals the block being built (if it holds a record) and appends it; returns its
    /// handle (size 0 when empty).
    pub(crate) fn flush(&mut self) -> Result<Handle> {
        if self.block.is_empty() {
            return Ok(Handle {
                offset: self.written,
                size: 0,
            });
        }
        let mut block = std::mem::take(&mut self.block);
        let h = self.append_sealed(|compression, out| block.finish(compression, out));
        self.block = block;
        h
    }

    /// Seals a block through `seal` (given the file's compression and the buffer to seal
    /// into) and appends it; its handle.
    pub(crate) fn append_sealed(
        &mut self,
        seal: impl FnOnce(Compression, &mut Vec<u8>) -> std::result::Result<(), String>,
    ) -> Result<Handle> {
        let offset = self.written;
        seal(self.compression, &mut self.sealed).map_err(|e| Error::param("block size", e))?;
        self.write_sealed()?;
        Ok(Handle {
            offset,
            size: self.sealed.len() as u64,
        })
    }

    /// Adds a record to the block being built.
    pub(crate) fn add(&mut self, r: &Record<'_>) -> Result<()> {
        self.block
            .add(r.key, r.value)
            .map_err(|e| Error::param("block size", e))
    }

    /// Seals and appends a data block (possibly empty), counting its size.
    pub(crate) fn close_data_block(&mut self) -> Result<Handle> {
        let h = self.flush()?;
        self.sizes.push(h.size);
        Ok(h)
    }
}
