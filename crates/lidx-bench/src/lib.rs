//! lidx-bench: the studies behind `lidx experiment`, `lidx index bench`, `lidx bench disk`
//! and `lidx demo`, kept out of the `lidx` library (they need plots and CSV) and out of
//! the command line (which only parses arguments, draws progress and prints).
//!
//! One module per study, each a `run` over typed options that returns the report to
//! print, beside the parts they share:
//!
//! - [`join_sorted`]: paper 1's joins of sorted tables (Figs. 6, 8, 10, 11).
//! - [`indexes`]: paper 1's index study (Fig. 5, Table 2).
//! - [`index_bench`]: every index kind on one table, with a sweep of window widths.
//! - [`unsorted`]: paper 1's joins of unsorted tables under a memory limit (Fig. 9), and
//!   three ways to sort.
//! - [`bigtable`]: paper 4's learned block layout against the SSTable index under
//!   concurrent clients (Fig. 1).
//! - [`airindex`]: paper 2's tuned layered index against its baselines, cold and warm,
//!   on the local disk and under a latency profile (Figs. 2 and 3).
//! - [`warm`]: the CPU of a warm get, every layout beside LMDB and RocksDB with the whole
//!   table in memory.
//! - [`updatable`]: one run of an updatable index on one of paper 3's workloads.
//! - [`gre`]: paper 3's study of updatable indexes over the hardness plane (Figs. 2, 3,
//!   8, 10–13).
//! - [`gre_threads`]: paper 3's multi-threaded half, concurrent updatable indexes as the
//!   threads grow (Figs. 4–6).
//! - `lsm_joins` (feature `rocksdb`): paper 5's joins over LSM-trees in RocksDB (Figs.
//!   5–12) and its cost model as an advisor.
//! - [`disk`]: the disk benchmark and the storage profile it saves.
//! - [`demo`]: `lidx demo`, a short tour of every capability on small generated data,
//!   its lines passed on one by one as they are made.
//!
//! Every study has one shape ([`harness::Experiment`]): its cells, one cell run, its CSV
//! rows, its plots, and its findings beside the paper's ([`harness::Findings`]); the large
//! ones are folders with a file per part.
//!
//! Shared: [`cgroups`] (memory cgroups a study makes, one per limit), [`clients`] (closed-loop concurrent clients against a key-value store),
//! [`harness`] (key sets, directories, result files, scratch files, the storage profile,
//! the findings table, and the cold harness that runs each join as a fresh
//! `lidx join --json` process), [`stats`]
//! (medians over repeats), [`csv_rows`] (CSV rows as typed records), [`plot`] (PNG
//! charts), [`text`] and [`machine`] (what summaries and rows say), and [`progress`] (what
//! a study reports while it works).

pub mod airindex;
pub mod alloc_meter;
pub mod bigtable;
pub mod cgroups;
pub mod clients;
pub mod csv_rows;
pub mod demo;
pub mod disk;
pub mod gre;
pub mod gre_threads;
pub mod harness;
pub mod index_bench;
pub mod indexes;
pub mod join_sorted;
pub mod key_source;
#[cfg(feature = "rocksdb")]
pub mod lsm_joins;
pub mod machine;
pub mod plot;
pub mod profiled_fs;
pub mod progress;
#[cfg(feature = "sql")]
pub mod sql_join;
pub mod stats;
pub mod text;
pub mod unsorted;
pub mod updatable;
pub mod warm;

pub use harness::Setup;
pub use progress::{Progress, Quiet};
