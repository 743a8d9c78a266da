//! lidx over RocksDB, kept out of the core library so that only what needs the `rocksdb`
//! crate (and the system's RocksDB it links) pays for it.
//!
//! - [`kv_table`]: records of a key-value file loaded into RocksDB as one SST file with a
//!   two-level (partitioned) index, served with or without a block cache: the real system
//!   beside paper 4's learned layout and Bigtable's SSTable index.
//! - [`joins`]: paper 5's joins over LSM-trees: R and S in RocksDB, eager, lazy and
//!   composite secondary indexes kept synchronously or validated, and the 29 join methods.

pub mod joins;
pub mod kv_table;

/// The RocksDB release lidx-lsm is built with (the source `librocksdb-sys` 0.16.0 bundles;
/// paper 5 ran 8.x).
pub const ROCKSDB_VERSION: &str = "8.10.0";

pub use kv_table::{RocksKv, RocksKvOptions, RocksReads, TableFigures, ThreadReads};

/// What can go wrong talking to RocksDB.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// RocksDB refused an operation.
    #[error("{}: RocksDB could not {op}: {source}", path.display())]
    RocksDb {
        /// The database directory.
        path: std::path::PathBuf,
        /// What lidx asked of it.
        op: &'static str,
        /// RocksDB's error.
        #[source]
        source: rocksdb::Error,
    },
    /// The database is damaged: a tree is missing, or RocksDB found its files corrupt.
    #[error("{}: the database is damaged: {problem}", path.display())]
    Damaged {
        /// The tree (or database) directory.
        path: std::path::PathBuf,
        /// What is wrong, in RocksDB's words where it found it.
        problem: String,
    },
    /// lidx's own error (files, parameters).
    #[error(transparent)]
    Lidx(#[from] lidx::Error),
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Maps RocksDB's error of `op` on the database at `path` by its status code: corruption
/// is [`Error::Damaged`], anything else [`Error::RocksDb`].
pub(crate) fn rocks<'p>(
    path: &'p std::path::Path,
    op: &'static str,
) -> impl FnOnce(rocksdb::Error) -> Error + 'p {
    move |source| match source.kind() {
        rocksdb::ErrorKind::Corruption => Error::Damaged {
            path: path.to_path_buf(),
            problem: format!("RocksDB could not {op}: {source}"),
        },
        _ => Error::RocksDb {
            path: path.to_path_buf(),
            op,
            source,
        },
    }
}
