//! How every LSM-tree of a join database is set up (paper 5, section 4, "Implementation",
//! and the paper's code, `lsm_join/exp_context.hpp`): 4 KiB blocks, a size ratio of 5,
//! Bloom filters of 10 bits per key, no block cache unless one is asked for, no
//! compression, no write-ahead log; and 16 MB of memory for the sort and hash joins.
//!
//! The text says "a 16MB write buffer"; the code that measured gives the data trees
//! RocksDB's default write buffer (64 MiB, their first level 256 MiB) and every index tree
//! half of its memory M = 16 MiB less three pages ((M − 12 KiB) / 2 = 8,382,464 bytes, its first level that
//! times T), starts a compaction at the first level-0 file, cuts compaction output at a
//! quarter of a mebibyte per entry byte (256 Ki entries), sizes levels statically, and
//! keeps the data trees' Bloom filters at 10 bits per key whatever the index trees' are.
//! These are the defaults here, each a field so an experiment can sweep or scale it.
//!
//! A Lazy index's tree has a merge operator that concatenates posting lists; a Composite
//! index's tree a 10-byte prefix extractor, so its Bloom filters hold attributes (prefixes)
//! and a lookup by attribute can skip levels.

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, SliceTransform};
use serde::{Deserialize, Serialize};

use super::rows::KEY_BYTES;

/// The least memory the sort and hash joins may be given: room for a merge of 16 runs.
pub const MIN_JOIN_MEMORY: u64 = 1 << 20;

/// The largest write buffer a tree may have (RocksDB takes up to 64 GiB).
const MAX_WRITE_BUFFER: usize = 16 << 30;

/// The largest block cache per tree, and the most join memory: 1 TiB.
const MAX_MEMORY: u64 = 1 << 40;

/// The most level-0 files that may wait for a compaction (RocksDB stops writes at 36).
const MAX_L0_TRIGGER: u32 = 32;

/// The paper's code's memory M of an index tree, of which its write buffer is half less
/// three pages.
const PAPER_INDEX_MEMORY: usize = 16 << 20;

/// The rows of a table the paper's code's settings are for.
const PAPER_ROWS: f64 = 10e6;

/// Entries in an SST file that compaction writes, in the paper's code (entry bytes × 1 MiB
/// / 4 bytes).
pub const PAPER_FILE_ENTRIES: u64 = 1 << 18;

/// The RocksDB settings of a join database's trees, and the memory its joins work in.
///
/// Fields a manifest of version 2 or older lacks read as the paper's values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LsmConfig {
    /// Data block size in bytes (paper: 4 KiB).
    pub block_size: usize,
    /// Write buffer (memtable) size of the data trees R and S in bytes (paper's code:
    /// RocksDB's default, 64 MiB).
    pub write_buffer: usize,
    /// Write buffer of every index tree in bytes (paper's code: (M − 3 pages) / 2 with
    /// M = 16 MiB: 8,382,464). An index tree's first level holds this times the size
    /// ratio.
    #[serde(default = "paper_index_write_buffer")]
    pub index_write_buffer: usize,
    /// Bytes of a data tree's first level (paper's code: RocksDB's default, 256 MiB).
    #[serde(default = "paper_data_level_base")]
    pub data_level_base: u64,
    /// Size ratio between adjacent levels (paper: 5).
    pub size_ratio: f64,
    /// Bloom filter bits per key of the index trees; 0 turns their filters off (paper: 10).
    pub bloom_bits: f64,
    /// Bloom filter bits per key of the data trees (paper's code: always 10; its Bloom
    /// filter sweep, Fig. 12, changes the index trees' alone).
    #[serde(default = "paper_data_bloom_bits")]
    pub data_bloom_bits: f64,
    /// Block cache per tree in bytes; 0: none (paper's default).
    pub block_cache: u64,
    /// Memory of the sort-merge join's runs and of the grace hash join's partitions, in
    /// bytes (paper: 16 MB).
    #[serde(default = "paper_join_memory")]
    pub join_memory: u64,
    /// Level-0 files that start a compaction into level 1 (paper's code: 1).
    #[serde(default = "paper_l0_trigger")]
    pub l0_trigger: u32,
    /// Size of the SST files compactions write, in bytes (paper's code: a quarter of a
    /// mebibyte per byte of an entry, 16 MiB for its 64-byte entries; see
    /// [`LsmConfig::paper_file_size`]).
    #[serde(default = "paper_target_file_size")]
    pub target_file_size: u64,
}

/// Paper 5's memory for the sort and hash joins: 16 MB.
fn paper_join_memory() -> u64 {
    16 << 20
}

/// The paper's code's index write buffer: (M − 3 pages) / 2.
fn paper_index_write_buffer() -> usize {
    (PAPER_INDEX_MEMORY - 3 * 4096) / 2
}

/// RocksDB's default first level, which the paper's code keeps for the data trees.
fn paper_data_level_base() -> u64 {
    256 << 20
}

fn paper_data_bloom_bits() -> f64 {
    10.0
}

fn paper_l0_trigger() -> u32 {
    1
}

/// The paper's file size for its default 64-byte entries.
fn paper_target_file_size() -> u64 {
    LsmConfig::paper_file_size(64)
}

impl Default for LsmConfig {
    fn default() -> Self {
        LsmConfig {
            block_size: 4096,
            write_buffer: 64 << 20,
            index_write_buffer: paper_index_write_buffer(),
            data_level_base: paper_data_level_base(),
            size_ratio: 5.0,
            bloom_bits: 10.0,
            data_bloom_bits: paper_data_bloom_bits(),
            block_cache: 0,
            join_memory: paper_join_memory(),
            l0_trigger: paper_l0_trigger(),
            target_file_size: paper_target_file_size(),
        }
    }
}

/// What a tree holds, which decides its write buffer, merge operator and prefix extractor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TreeKind {
    /// A data table, R or S.
    Data,
    /// An Eager index: plain puts and gets.
    Eager,
    /// A Lazy index: posting lists appended by merges.
    Lazy,
    /// A Composite index: keys prefixed by the attribute.
    Composite,
}

impl LsmConfig {
    /// The paper's code's compaction output size for `entry_size`-byte entries: 256 Ki
    /// entries.
    pub fn paper_file_size(entry_size: usize) -> u64 {
        PAPER_FILE_ENTRIES * entry_size as u64
    }

    /// These settings as a database of manifest version 1 or 2 ran with them: every tree
    /// with the one write buffer and Bloom filter, its first level that times the size ratio, RocksDB's
    /// level-0 trigger (4) and file size (64 MiB).
    pub(crate) fn as_before_version_3(self) -> LsmConfig {
        LsmConfig {
            index_write_buffer: self.write_buffer,
            data_level_base: (self.write_buffer as f64 * self.size_ratio) as u64,
            l0_trigger: 4,
            target_file_size: 64 << 20,
            data_bloom_bits: self.bloom_bits,
            ..self
        }
    }

    /// The paper's settings for tables of `rows` rows of `entry_size` bytes, where the
    /// paper's code sets them for 10M rows: every size (write buffers, the data trees'
    /// first level, files, join memory) scaled by rows / 10M, each at least 64 KiB (the join
    /// memory at least 1 MiB, the first level four data write buffers), so a smaller table
    /// keeps the paper's shape of levels.
    pub fn scaled_to(rows: u64, entry_size: usize) -> LsmConfig {
        let paper = LsmConfig::default();
        let scale = |bytes: u64, floor: u64| -> u64 {
            ((bytes as f64 * rows as f64 / PAPER_ROWS) as u64).max(floor)
        };
        let write_buffer = scale(paper.write_buffer as u64, 64 << 10);
        LsmConfig {
            write_buffer: usize::try_from(write_buffer).unwrap_or(MAX_WRITE_BUFFER),
            index_write_buffer: usize::try_from(scale(paper.index_write_buffer as u64, 64 << 10))
                .unwrap_or(MAX_WRITE_BUFFER),
            data_level_base: scale(paper.data_level_base, 64 << 10).max(4 * write_buffer),
            target_file_size: scale(Self::paper_file_size(entry_size), 64 << 10),
            join_memory: scale(paper.join_memory, MIN_JOIN_MEMORY),
            ..paper
        }
    }

    /// Fails naming the first setting that RocksDB cannot take.
    pub fn check(&self) -> lidx::Result<()> {
        if !(512..=(64 << 20)).contains(&self.block_size) {
            return Err(lidx::Error::param(
                "block size",
                format!("{} bytes is not in 512 B ..= 64 MiB", self.block_size),
            ));
        }
        for (what, bytes) in [
            ("write buffer", self.write_buffer),
            ("index write buffer", self.index_write_buffer),
        ] {
            if !((64 << 10)..=MAX_WRITE_BUFFER).contains(&bytes) {
                return Err(lidx::Error::param(
                    what,
                    format!("{bytes} bytes is not in 64 KiB ..= 16 GiB"),
                ));
            }
        }
        for (what, bytes) in [
            ("data level base", self.data_level_base),
            ("target file size", self.target_file_size),
        ] {
            if !((64 << 10)..=MAX_MEMORY).contains(&bytes) {
                return Err(lidx::Error::param(
                    what,
                    format!("{bytes} bytes is not in 64 KiB ..= 1 TiB"),
                ));
            }
        }
        if !(1..=MAX_L0_TRIGGER).contains(&self.l0_trigger) {
            return Err(lidx::Error::param(
                "level-0 compaction trigger",
                format!("{} files is not in 1 ..= {MAX_L0_TRIGGER}", self.l0_trigger),
            ));
        }
        if self.block_cache > MAX_MEMORY || self.join_memory > MAX_MEMORY {
            return Err(lidx::Error::param(
                "memory",
                format!(
                    "a block cache of {} bytes or join memory of {} bytes is above 1 TiB",
                    self.block_cache, self.join_memory
                ),
            ));
        }
        if !(self.size_ratio >= 2.0 && self.size_ratio <= 1000.0) {
            return Err(lidx::Error::param(
                "size ratio",
                format!("{} is not in 2 ..= 1000", self.size_ratio),
            ));
        }
        if self.join_memory < MIN_JOIN_MEMORY {
            return Err(lidx::Error::param(
                "join memory",
                format!("{} bytes is below 1 MiB", self.join_memory),
            ));
        }
        for bits in [self.bloom_bits, self.data_bloom_bits] {
            if !(0.0..=64.0).contains(&bits) {
                return Err(lidx::Error::param(
                    "Bloom filter bits per key",
                    format!("{bits} is not in 0 ..= 64"),
                ));
            }
        }
        Ok(())
    }

    /// RocksDB's options for a tree of `kind` (statistics on), and the block cache it
    /// reads through, if any.
    pub(crate) fn options(
        &self,
        kind: TreeKind,
    ) -> Result<(Options, Option<Cache>), rocksdb::Error> {
        let mut table = BlockBasedOptions::default();
        table.set_block_size(self.block_size);
        let bloom_bits = match kind {
            TreeKind::Data => self.data_bloom_bits,
            _ => self.bloom_bits,
        };
        if bloom_bits > 0.0 {
            table.set_bloom_filter(bloom_bits, false);
        }
        let cache = match self.block_cache {
            0 => {
                table.disable_cache();
                None
            }
            bytes => {
                let cache = Cache::new_lru_cache(usize::try_from(bytes).unwrap_or(usize::MAX));
                table.set_block_cache(&cache);
                Some(cache)
            }
        };
        let mut options = Options::default();
        options.set_compression_type(DBCompressionType::None);
        let (write_buffer, level_base) = match kind {
            TreeKind::Data => (self.write_buffer, self.data_level_base),
            _ => (
                self.index_write_buffer,
                (self.index_write_buffer as f64 * self.size_ratio) as u64,
            ),
        };
        options.set_write_buffer_size(write_buffer);
        options.set_max_bytes_for_level_base(level_base);
        options.set_max_bytes_for_level_multiplier(self.size_ratio);
        options.set_level_compaction_dynamic_level_bytes(false);
        options.set_level_zero_file_num_compaction_trigger(self.l0_trigger as i32);
        options.set_target_file_size_base(self.target_file_size);
        options.enable_statistics();
        match kind {
            TreeKind::Data | TreeKind::Eager => {}
            TreeKind::Lazy => options.set_merge_operator_associative("lidx-append", append),
            TreeKind::Composite => {
                table.set_whole_key_filtering(false);
                options.set_prefix_extractor(SliceTransform::create_fixed_prefix(KEY_BYTES));
            }
        }
        options.set_block_based_table_factory(&table);
        Ok((options, cache))
    }
}

/// The Lazy index's merge: posting lists are concatenated, oldest first (postings have a
/// fixed width per index, so no separator is needed).
fn append(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &rocksdb::MergeOperands,
) -> Option<Vec<u8>> {
    let mut out = existing.map(<[u8]>::to_vec).unwrap_or_default();
    for op in operands {
        out.extend_from_slice(op);
    }
    Some(out)
}
