//! How every LSM-tree of a join database is set up (paper 5, section 4, "Implementation"):
//! 4 KiB blocks, a 16 MB write buffer, a size ratio of 5, Bloom filters of 10 bits per key,
//! no block cache unless one is asked for, no compression, no write-ahead log; and 16 MB of
//! memory for the sort and hash joins. Each is a field, so an experiment can sweep it. A Lazy index's tree has a merge operator that
//! concatenates posting lists; a Composite index's tree a 10-byte prefix extractor, so its
//! Bloom filters hold attributes (prefixes) and a lookup by attribute can skip levels.

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, SliceTransform};
use serde::{Deserialize, Serialize};

use super::rows::KEY_BYTES;

/// The least memory the sort and hash joins may be given: room for a merge of 16 runs.
pub const MIN_JOIN_MEMORY: u64 = 1 << 20;

/// The largest write buffer a tree may have (RocksDB takes up to 64 GiB).
const MAX_WRITE_BUFFER: usize = 16 << 30;

/// The largest block cache per tree, and the most join memory: 1 TiB.
const MAX_MEMORY: u64 = 1 << 40;

/// The RocksDB settings of a join database's trees, and the memory its joins work in.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LsmConfig {
    /// Data block size in bytes (paper: 4 KiB).
    pub block_size: usize,
    /// Write buffer (memtable) size in bytes (paper: 16 MB).
    pub write_buffer: usize,
    /// Size ratio between adjacent levels (paper: 5).
    pub size_ratio: f64,
    /// Bloom filter bits per key; 0 turns the filters off (paper: 10).
    pub bloom_bits: f64,
    /// Block cache per tree in bytes; 0: none (paper's default).
    pub block_cache: u64,
    /// Memory of the sort-merge join's runs and of the grace hash join's partitions, in
    /// bytes (paper: 16 MB).
    #[serde(default = "paper_join_memory")]
    pub join_memory: u64,
}

/// Paper 5's memory for the sort and hash joins: 16 MB.
fn paper_join_memory() -> u64 {
    16 << 20
}

impl Default for LsmConfig {
    fn default() -> Self {
        LsmConfig {
            block_size: 4096,
            write_buffer: 16 << 20,
            size_ratio: 5.0,
            bloom_bits: 10.0,
            block_cache: 0,
            join_memory: paper_join_memory(),
        }
    }
}

/// What a tree holds, which decides its merge operator and prefix extractor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TreeKind {
    /// A data table, or an Eager index: plain puts and gets.
    Plain,
    /// A Lazy index: posting lists appended by merges.
    Lazy,
    /// A Composite index: keys prefixed by the attribute.
    Composite,
}

impl LsmConfig {
    /// Fails naming the first setting that RocksDB cannot take.
    pub fn check(&self) -> lidx::Result<()> {
        if !(512..=(64 << 20)).contains(&self.block_size) {
            return Err(lidx::Error::param(
                "block size",
                format!("{} bytes is not in 512 B ..= 64 MiB", self.block_size),
            ));
        }
        if !((64 << 10)..=MAX_WRITE_BUFFER).contains(&self.write_buffer) {
            return Err(lidx::Error::param(
                "write buffer",
                format!("{} bytes is not in 64 KiB ..= 16 GiB", self.write_buffer),
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
        if !(0.0..=64.0).contains(&self.bloom_bits) {
            return Err(lidx::Error::param(
                "Bloom filter bits per key",
                format!("{} is not in 0 ..= 64", self.bloom_bits),
            ));
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
        if self.bloom_bits > 0.0 {
            table.set_bloom_filter(self.bloom_bits, false);
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
        options.set_write_buffer_size(self.write_buffer);
        options.set_max_bytes_for_level_base((self.write_buffer as f64 * self.size_ratio) as u64);
        options.set_max_bytes_for_level_multiplier(self.size_ratio);
        options.enable_statistics();
        match kind {
            TreeKind::Plain => {}
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
