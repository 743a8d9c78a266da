//! Key-value files with a learned block layout (paper 4, Bigtable): byte-string keys and
//! values in blocks, where a monotone model of each key's byte offset decides which block
//! a record goes into, so the model alone finds it; beside it the baseline the paper
//! replaced, Bigtable's SSTable with a two-level index of each block's last key; and
//! paper 2's layered index tuned to a storage profile (AirIndex) with its B+tree baseline.
//!
//! - [`layout`]: one module per layout (learned, sstable, tuned, btree), each with its
//!   meta and codec, its writer, its locate and scan, and its verify; the one dispatch.
//! - [`keymap`]: byte-string keys as integers a model learns from (paper 4, section 4).
//! - [`keys`]: how keys were written (bytes, `u64` big-endian, decimal) and are printed.
//! - [`LineFit`](crate::pla::LineFit): the least-squares line fitted in one pass to the
//!   bytes before each key (section 4, "Learned Index Training"; shared in `pla::fit`).
//! - [`model`]: the monotone models (line, PGM, RMI) that place records in blocks.
//! - [`layers`]: paper 2's layered index (AirIndex) over fixed pages, and its tuner; the
//!   same pages also sit under a disk B+tree, paper 2's baseline ([`Layout::Btree`]).
//! - [`block`]: a block's records and its sealed form (compression byte, CRC32C).
//! - [`index_block`]: the SSTable's level-1 index blocks (separators, prefix compression,
//!   restart points, delta-encoded handles), as LevelDB and RocksDB build them.
//! - [`write`], [`file`], [`read`], [`verify`]: writing, opening (footer), reading (gets
//!   and scans through the shared [`BlockCache`] of `storage::cache`, counting blocks and
//!   reads by level, under an optional latency model) and checking a file; each asks the
//!   file's layout for what differs.
//! - [`input`]: records from TSV or SOSD files, and the paper's generated records.

pub mod block;
pub mod elias_fano;
pub mod file;
pub mod index_block;
pub mod input;
pub mod keymap;
pub mod keys;
pub mod layers;
pub mod layout;
pub mod locations;
pub mod model;
pub mod read;
pub mod verify;
pub mod write;

#[cfg(test)]
mod tests;

pub use crate::storage::cache::{BlockCache, CacheStats};
pub use block::{Compression, PinnedValue};
pub use file::{Footer, KvFile};
pub use keymap::KeyMap;
pub use keys::KeyEncoding;
pub use layout::Layout;
pub use layout::learned::LearnedBuild;
pub use model::{BlockModel, ModelKind};
pub use read::{LEVELS, OpStats, Reader};
pub use verify::{KvInfo, LearnedInfo, VerifyReport, info, verify};
pub use write::{BlockSizes, BuildOptions, BuildReport, Record, build, build_from_input};
