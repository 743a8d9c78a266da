//! One module per subcommand; each has `Args` or `Command` and a `run`, and none imports
//! another: what two of them share lives in the `lidx` library or in lidx-bench.

pub mod bench;
pub mod cache;
pub mod demo;
pub mod experiment;
pub mod gen_keys;
pub mod hardness;
pub mod index;
pub mod join;
pub mod kv;
#[cfg(feature = "rocksdb")]
pub mod lsm;
pub mod sort;
#[cfg(feature = "sql")]
pub mod sql;
pub mod table;
pub mod updatable;
