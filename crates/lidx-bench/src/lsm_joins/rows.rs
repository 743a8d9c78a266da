//! The study's CSV rows (paper 5, section 4): one per join after one batch
//! (`lsm-joins.csv`), one per method of a cell as measured and predicted (`lsm-advice.csv`).

use lidx_lsm::joins::Method;
use serde::Serialize;

use super::cells::Cell;
use super::measure::Measured;
use crate::csv_rows::{Fixed, LIDX_VERSION};

/// One join after one batch: a CSV row.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    pub figure: String,
    /// The data set (synthetic, with the features of the paper's Table 5).
    pub dataset: String,
    /// The swept parameter, and its value here.
    pub param: String,
    pub x: Fixed<4>,
    /// Fig. 7's primary-key duplication c (0 elsewhere).
    pub x2: Fixed<1>,
    pub method: String,
    pub algorithm: String,
    /// Eager, Lazy, Comp or none.
    pub index_design: String,
    /// sync, validation or none.
    pub maintenance: String,
    /// F, and which of the F joins this is (1-based).
    pub joins: u64,
    pub batch: u64,
    /// Rows of S and of R written per batch.
    pub s_rows_per_batch: u64,
    pub r_rows_per_batch: u64,
    pub entry_size: usize,
    pub match_rate: Fixed<3>,
    pub dup_pk: u32,
    pub dup_attr: u32,
    pub skew: Fixed<3>,
    pub block_size: usize,
    /// The data trees' write buffer, bytes.
    pub write_buffer: usize,
    /// Every index tree's write buffer, bytes.
    pub index_write_buffer: usize,
    /// A data tree's first level, bytes.
    pub data_level_base: u64,
    /// Level-0 files that start a compaction.
    pub l0_trigger: u32,
    /// Bytes of the files compactions write.
    pub target_file_size: u64,
    pub size_ratio: Fixed<1>,
    /// Bloom filter bits per key of the index trees.
    pub bloom_bits: Fixed<1>,
    /// Bloom filter bits per key of the data trees.
    pub data_bloom_bits: Fixed<1>,
    pub block_cache: u64,
    pub join_memory: u64,
    pub threads: usize,
    /// Seconds of this join.
    pub join_s: Fixed<5>,
    /// Seconds keeping the method's indexes through this batch (zero without indexes).
    pub index_s: Fixed<5>,
    /// Seconds writing the data tables through this batch (common to every method).
    pub data_s: Fixed<5>,
    pub output: u64,
    pub lookups: u64,
    pub validations: u64,
    /// Bytes of whole entries the sort or hash join wrote to scratch runs or partitions,
    /// and the files.
    pub scratch_bytes: u64,
    pub scratch_files: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_hit_rate: Fixed<4>,
    pub bloom_useful: u64,
    pub bloom_positive: u64,
    pub bloom_true_positive: u64,
    pub bloom_false_positive_rate: Fixed<5>,
    pub prefix_checked: u64,
    pub prefix_useful: u64,
    pub get_bytes: u64,
    pub iter_bytes: u64,
    /// Levels holding data in S's tree and in the deepest index tree after the batch.
    pub s_levels: u64,
    pub index_levels: u64,
    pub seed: u64,
    pub machine: String,
    pub lidx_version: String,
}

impl Row {
    pub(super) fn new(cell: &Cell, method: Method, m: &Measured, machine: &str) -> Row {
        let w = cell.workload;
        let (s_rows, r_rows) = cell.rows_per_batch();
        let stats = &m.join.stats;
        let (maintenance, design) = match method.index {
            Some((mt, d)) => (mt.name().to_string(), d.name().to_string()),
            None => ("none".into(), "none".into()),
        };
        Row {
            figure: cell.figure.name().into(),
            dataset: cell.dataset.into(),
            param: cell.param.into(),
            x: Fixed(cell.x),
            x2: Fixed(cell.x2),
            method: method.to_string(),
            algorithm: format!("{:?}", method.algorithm).to_uppercase(),
            index_design: design,
            maintenance,
            joins: cell.joins,
            batch: m.batch,
            s_rows_per_batch: s_rows,
            r_rows_per_batch: r_rows,
            entry_size: w.entry_size,
            match_rate: Fixed(w.match_rate),
            dup_pk: w.dup_pk,
            dup_attr: w.dup_attr,
            skew: Fixed(w.skew),
            block_size: cell.config.block_size,
            write_buffer: cell.config.write_buffer,
            index_write_buffer: cell.config.index_write_buffer,
            data_level_base: cell.config.data_level_base,
            l0_trigger: cell.config.l0_trigger,
            target_file_size: cell.config.target_file_size,
            size_ratio: Fixed(cell.config.size_ratio),
            bloom_bits: Fixed(cell.config.bloom_bits),
            data_bloom_bits: Fixed(cell.config.data_bloom_bits),
            block_cache: cell.config.block_cache,
            join_memory: cell.config.join_memory,
            threads: cell.threads,
            join_s: Fixed(m.join.join_s),
            index_s: Fixed(m.apply.index_s),
            data_s: Fixed(m.apply.data_s),
            output: m.join.output,
            lookups: m.join.lookups,
            validations: m.join.validations,
            scratch_bytes: m.join.scratch_bytes,
            scratch_files: m.join.scratch_files,
            cache_hits: stats.cache_hits,
            cache_misses: stats.cache_misses,
            cache_hit_rate: Fixed(stats.cache_hit_rate()),
            bloom_useful: stats.bloom_useful,
            bloom_positive: stats.bloom_positive,
            bloom_true_positive: stats.bloom_true_positive,
            bloom_false_positive_rate: Fixed(stats.bloom_false_positive_rate()),
            prefix_checked: stats.prefix_checked,
            prefix_useful: stats.prefix_useful,
            get_bytes: stats.get_bytes,
            iter_bytes: stats.iter_bytes,
            s_levels: m.s_levels,
            index_levels: m.index_levels,
            seed: w.seed,
            machine: machine.into(),
            lidx_version: LIDX_VERSION.into(),
        }
    }
}

/// A method of a cell as measured and as the cost model predicts it: a CSV row of
/// `lsm-advice.csv`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AdviceRow {
    pub figure: String,
    pub dataset: String,
    pub param: String,
    pub x: Fixed<4>,
    pub x2: Fixed<1>,
    pub method: String,
    /// The join the method answers (`key` or `attribute`): ranks are within it.
    pub joins_on: String,
    /// Whether the cell is one the cost model's refinements were made on (in sample).
    pub refined_on: bool,
    /// Measured seconds over the cell's F joins and their index upkeep.
    pub join_s: Fixed<4>,
    pub index_s: Fixed<4>,
    pub total_s: Fixed<4>,
    /// 1 for the fastest of the cell's methods that answer the same join.
    pub rank: usize,
    /// The model under the profile calibrated on this machine.
    pub predicted_join_s: Fixed<4>,
    pub predicted_index_s: Fixed<4>,
    pub predicted_total_s: Fixed<4>,
    pub predicted_rank: usize,
    /// The model under the assumed cold SSD of `lidx lsm advise`.
    pub ssd_predicted_total_s: Fixed<4>,
    pub ssd_predicted_rank: usize,
    pub machine: String,
    pub lidx_version: String,
}
