//! Joins over LSM-trees (paper 5, "Are Joins over LSM-trees Ready?"): two tables R and S
//! in RocksDB, secondary indexes of three designs kept consistent two ways, and the 29 join
//! methods of the paper over them.
//!
//! - [`method`]: the 29 methods by name, and the indexes each reads.
//! - [`config`]: the RocksDB settings of every tree (paper 5, section 4).
//! - [`cost`]: paper 5's cost model (Tables 2–4) as an advisor over the 29 methods.
//! - [`rows`]: how a row and an index entry's keys are stored (10-digit keys).
//! - [`data`]: the seeded workload generator (Table 5's knobs).
//! - [`keys`]: join attributes read from SOSD key files (the paper's Face and Wiki).
//! - [`db`]: a join database on disk: R, S, their indexes, and how changes reach them.
//! - `recovery`: how the database changes all at once or not at all (its lock, creation in
//!   a scratch directory, a change's mark and rollback).
//! - [`run`]: INLJ, sort-merge and grace hash joins over it.

pub mod config;
pub mod cost;
pub mod data;
pub mod db;
pub mod keys;
pub mod method;
mod recovery;
pub mod rows;
pub mod run;
mod tree;

#[cfg(test)]
mod tests;

pub use config::LsmConfig;
pub use data::{Batch, Change, Workload};
pub use db::{ApplyTimes, LsmDb, UpdateMix, refuse_output_inside};
pub use keys::{AttrFiles, GivenAttrs};
pub use method::{Algorithm, Design, IndexSpec, JoinOn, Maintenance, Method, Shape, Side};
pub use run::{LsmJoinReport, join, join_with_threads};
pub use tree::TreeStats;
