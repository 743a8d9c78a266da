//! The study's rows: Fig. 5's indexes and self-joins, Table 2's sizes, and the CSV row of
//! each Fig. 5 measurement.

use lidx::join::JoinRecord;
use serde::Serialize;

use super::Fig5Index;
use crate::csv_rows::Fixed;

/// One index of Fig. 5 and its self-join, as measured. Its CSV row is a [`CsvRow`], which
/// adds the machine and the device.
pub(super) struct Row {
    pub(super) set: String,
    pub(super) kind: Fig5Index,
    pub(super) params: String,
    pub(super) bytes: u64,
    pub(super) max_window: u64,
    pub(super) build_s: f64,
    /// Bytes of the file the join reads on the inner side: the table, or ALEX's file.
    pub(super) inner_file_bytes: u64,
    pub(super) join: JoinRecord,
}

/// One size of Table 2, as a row of `table2_sizes.csv`.
#[derive(Serialize, Default)]
pub(super) struct SizeRow {
    pub(super) key_set: String,
    pub(super) index: &'static str,
    pub(super) window: u64,
    pub(super) index_bytes: u64,
    pub(super) build_s: Fixed<6>,
    pub(super) machine: String,
}

/// One index of Fig. 5, as a row of `indexes.csv`.
#[derive(Serialize, Default)]
pub(super) struct CsvRow<'a> {
    pub(super) experiment: &'static str,
    pub(super) key_set: &'a str,
    pub(super) n: u64,
    pub(super) index: &'static str,
    pub(super) params: &'a str,
    pub(super) max_window: u64,
    pub(super) index_bytes: u64,
    pub(super) inner_file_bytes: u64,
    pub(super) build_s: Fixed<6>,
    pub(super) self_join_s: Fixed<6>,
    pub(super) direct: bool,
    pub(super) output_tuples: u64,
    pub(super) inner_blocks: u64,
    pub(super) inner_bytes: u64,
    pub(super) inner_reads: u64,
    pub(super) outer_reads: u64,
    pub(super) model_s: Fixed<6>,
    pub(super) machine: &'a str,
    pub(super) device: &'a str,
}
