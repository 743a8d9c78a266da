//! What a query read and did, summed over its plan's operators after it ran: the learned
//! joins' lookups and inner-table reads, the lidx scans' reads, the Parquet scans' bytes,
//! and which joins ran, so a comparison can argue in counts, not only in seconds.

use datafusion::error::DataFusionError;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanVisitor, accept};
use serde::{Deserialize, Serialize};

use crate::join::{LearnedInljExec, Prediction};

/// Counts of one run of a plan (zero where no operator of the kind ran).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryCounts {
    /// Learned index nested loop joins in the plan.
    pub learned_joins: u64,
    /// Hash joins in the plan.
    pub hash_joins: u64,
    /// Other joins in the plan (sort-merge, nested loop, ...).
    pub other_joins: u64,
    /// Index lookups of the learned joins.
    pub lookups: u64,
    /// Blocks, bytes and reads of the inner tables the learned joins looked up.
    pub lookup_blocks: u64,
    /// See [`lookup_blocks`](Self::lookup_blocks).
    pub lookup_bytes: u64,
    /// See [`lookup_blocks`](Self::lookup_blocks).
    pub lookup_reads: u64,
    /// Blocks, bytes and reads of lidx table scans.
    pub scan_blocks: u64,
    /// See [`scan_blocks`](Self::scan_blocks).
    pub scan_bytes: u64,
    /// See [`scan_blocks`](Self::scan_blocks).
    pub scan_reads: u64,
    /// Bytes DataFusion's file scans (Parquet) read.
    pub file_bytes: u64,
}

/// One run of a query as `lidx sql --json` reports it: its settings, time, rows and counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryRecord {
    /// Seconds from the first batch asked for to the last received (planning, opening
    /// tables and building indexes before).
    pub seconds: f64,
    /// Rows the query returned.
    pub rows: u64,
    /// `auto`, `on` or `off`.
    pub index_join: String,
    /// DataFusion's partitions.
    pub threads: usize,
    /// Window reads each learned join kept in flight.
    pub io_depth: usize,
    /// Every table's pages were dropped from the page cache first.
    pub cold: bool,
    /// lidx tables were read with O_DIRECT.
    pub direct: bool,
    /// What the plan read and did.
    #[serde(flatten)]
    pub counts: QueryCounts,
    /// The cost model's seconds for the first learned join in the plan, and for the hash
    /// join it replaced, where it predicted them.
    pub predicted_learned_s: Option<f64>,
    /// See [`predicted_learned_s`](Self::predicted_learned_s).
    pub predicted_hash_s: Option<f64>,
    /// The process's peak resident memory, where known.
    pub peak_rss: Option<u64>,
}

/// Sums the counts of every operator of `plan` (after it ran).
pub fn query_counts(plan: &dyn ExecutionPlan) -> QueryCounts {
    let mut visitor = Summing(QueryCounts::default());
    // The visitor never fails.
    let _ = accept(plan, &mut visitor);
    visitor.0
}

/// The cost model's prediction for the first learned join in `plan`, if any.
pub fn first_prediction(plan: &dyn ExecutionPlan) -> Option<Prediction> {
    if let Some(join) = plan.downcast_ref::<LearnedInljExec>() {
        return join.prediction();
    }
    plan.children()
        .into_iter()
        .find_map(|c| first_prediction(c.as_ref()))
}

struct Summing(QueryCounts);

impl ExecutionPlanVisitor for Summing {
    type Error = DataFusionError;

    fn pre_visit(&mut self, plan: &dyn ExecutionPlan) -> Result<bool, Self::Error> {
        let metric = |name: &str| -> u64 {
            plan.metrics()
                .and_then(|m| m.sum_by_name(name))
                .map_or(0, |v| v.as_usize() as u64)
        };
        let c = &mut self.0;
        match plan.name() {
            "LearnedInljExec" => {
                c.learned_joins += 1;
                c.lookups += metric("lookups");
                c.lookup_blocks += metric("blocks_read");
                c.lookup_bytes += metric("bytes_read");
                c.lookup_reads += metric("reads");
            }
            "LidxTableScan" => {
                c.scan_blocks += metric("blocks_read");
                c.scan_bytes += metric("bytes_read");
                c.scan_reads += metric("reads");
            }
            "HashJoinExec" => c.hash_joins += 1,
            "DataSourceExec" => c.file_bytes += metric("bytes_scanned"),
            name if name.contains("Join") => c.other_joins += 1,
            _ => {}
        }
        Ok(true)
    }
}
