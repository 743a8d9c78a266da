//! lidx: learned indexes on data that lives on disk.
//!
//! Data flows through the modules in the order they are listed:
//!
//! - [`data`]: key sets: SOSD key files, seeded synthetic distributions, samples.
//! - [`storage`]: the `.tbl` table format, atomic writers, block reads (buffered or
//!   `O_DIRECT`) that count their I/O, page-cache control and the disk benchmark that
//!   produces a storage profile.
//!
//! Later modules (indexes, joins, partitioning, key-value paths) build on these two.
//! `docs/FORMAT.md` in the repository gives every file format byte by byte.

#[cfg(not(target_endian = "little"))]
compile_error!(
    "lidx maps little-endian files straight into memory and supports little-endian targets only"
);

pub mod data;
pub mod error;
pub mod storage;

pub use error::{Error, FormatError, Result};
