//! lidx: learned indexes on data that lives on disk.
//!
//! The layers point one way: each module uses only those listed before it.
//!
//! - [`files`]: opening, memory-mapping, atomic writes and page-cache control of files.
//! - [`last_mile`]: the lower bound that finishes every search in a window.
//! - [`memory`]: the one [`MemoryBudget`](memory::MemoryBudget) everything a command may
//!   limit reserves its memory from.
//! - [`pla`]: the model fitting every index shares, needing nothing but numbers: the
//!   optimal piecewise-linear approximation (PGM, hardness, partitioning) and, in
//!   [`pla::fit`], the least-squares fits (RMI, ALEX, the kv models, the storage profile).
//! - [`data`]: key sets: SOSD key files, seeded synthetic distributions, samples.
//! - [`storage`]: the `.tbl` table format, block reads (buffered or `O_DIRECT`, one at a
//!   time or many in flight) that count their I/O, and the disk benchmark that produces a
//!   storage profile.
//! - [`index`]: one [`Index`](index::Index) trait and its kinds (PGM, sampled PGM,
//!   RadixSpline, RMI, B+tree, binary search), with one window convention, index files,
//!   lookup measurement and per-data-set tuning.
//! - [`partition`] and [`sort`]: paper 1's unsorted half (unclustered indexes, external
//!   and learned sorts under a memory limit).
//! - [`kv`]: key-value files with a learned block layout (paper 4) and tuned layers
//!   (paper 2).
//! - [`updatable`]: paper 3's updatable indexes and workloads, and ALEX on disk
//!   ([`updatable::alex::file`]: its data nodes in a file, for paper 1's Fig. 5).
//! - [`join`]: every join of two tables on disk (index nested loop through any index or
//!   ALEX on disk, sort-merge, hash, grace hash, and the unclustered joins of unsorted
//!   tables), on threads, with paper 1's cost model and the one driver `lidx join` runs.
//! - [`sniff`]: what a file is (a table, an index of any kind, a key-value file, SOSD
//!   keys), from its bytes.
//!
//! `unsafe` code is denied everywhere but in three places, each with its argument: the
//! memory map of an input file (`files`), the parent-death signal set in a child between
//! fork and exec (`files::end_with_this_process`), and the submission of a read to
//! `io_uring`, which writes into a buffer after the call returns (`storage`'s read queue).
//!
//! # Example
//!
//! Generate a key set, store it as a table, and read the blocks under a window of
//! positions, counting the I/O:
//!
//! ```
//! use lidx::data::{generate, Distribution, GenParams};
//! use lidx::storage::table::build_from_keys;
//! use lidx::storage::{BlockReader, IoStats, ReadMode, Table, ValueSource};
//!
//! # fn main() -> lidx::Result<()> {
//! let dir = tempfile::tempdir().expect("a temporary directory");
//! let path = dir.path().join("lognormal.tbl");
//! let keys = generate(&GenParams::new(Distribution::Lognormal, 10_000, 42))?;
//! build_from_keys(&keys, ValueSource::RowId, &path, |_| {})?;
//!
//! let table = Table::open(&path)?;
//! assert!(table.header().sorted);
//! let mut reader = BlockReader::new(&table, ReadMode::Buffered)?;
//! // Positions 1000..1300 lie in blocks 3, 4 and 5 (256 tuples per block).
//! let run = reader.read_window(1000, 1300)?;
//! let lower_bound = run.first_position + run.tuples.partition_point(|t| t.key < keys[1100]) as u64;
//! assert_eq!(lower_bound, 1100);
//! assert_eq!(
//!     reader.stats(),
//!     IoStats { blocks: 3, bytes: 3 * 4096, reads: 1, ..IoStats::default() }
//! );
//! # Ok(())
//! # }
//! ```
//! `docs/FORMAT.md` in the repository gives every file format byte by byte.

#![warn(missing_docs)]

#[cfg(not(target_endian = "little"))]
compile_error!(
    "lidx maps little-endian files straight into memory and supports little-endian targets only"
);

pub mod data;
pub mod error;
pub mod files;
pub mod index;
pub mod join;
pub mod kv;
pub mod last_mile;
pub mod memory;
#[doc(hidden)]
pub mod names;
pub mod partition;
pub mod pla;
mod prefetch;
pub mod sniff;
pub mod sort;
pub mod storage;
pub mod updatable;

pub use error::{Error, FormatError, Result};
