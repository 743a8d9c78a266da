//! The physical optimizer rule that puts the learned index nested loop join in DataFusion's
//! plans where paper 1's cost model (section 3.2, [`lidx::join::cost`]) predicts it beats
//! the hash join: [`LearnedJoinRule`] runs right after DataFusion's `join_selection` (which
//! settles the hash join's sides from statistics) and replaces an inner equi-join on one
//! `UInt64` key whose one side is a whole scan of an indexed, sorted lidx table.
//!
//! The model weighs the hash join (scan both inputs, hash one, probe with the other)
//! against looking the outer rows up (scan the outer input, one window read per outer key
//! until the windows tile the inner table), from the outer side's row count as DataFusion's
//! statistics give it, the inner table's size, its index's window, the storage profile, the
//! threads and the I/O depth. Where the outer row count is unknown, the hash join stays.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{JoinType, NullEquality, Result};
use datafusion::config::ConfigOptions;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use lidx::join::InljOptions;
use lidx::join::cost::{self, CpuCosts, JoinShape};
use lidx::storage::TUPLE_SIZE;
use lidx::storage::profile::StorageProfile;

use crate::join::{InnerTable, LearnedInljExec, OutputShape, Prediction};
use crate::table::{BATCH_ROWS, TableScanExec};

/// When the rule puts the learned INLJ in a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexJoin {
    /// Never: DataFusion's own joins only.
    Off,
    /// Where the cost model predicts it faster than the hash join.
    Auto,
    /// Wherever it can run (an indexed lidx table's key joined with a `UInt64` column).
    Always,
}

/// Replaces hash joins by learned INLJs (see the module doc).
#[derive(Clone, Debug)]
pub struct LearnedJoinRule {
    /// When to replace.
    pub mode: IndexJoin,
    /// The device the cost model predicts for.
    pub profile: StorageProfile,
    /// How the INLJ reads the inner table (its I/O depth and backend, buffered or direct).
    pub options: InljOptions,
}

impl LearnedJoinRule {
    /// The name DataFusion lists it under (`EXPLAIN VERBOSE`).
    pub const NAME: &'static str = "lidx_learned_inlj";

    /// Where `join` can be a learned INLJ: the inner side (a whole scan of an indexed lidx
    /// table, matched on its key) and whether it was the left input; the outer side is the
    /// other. Of two such sides, the larger table is the one looked up.
    fn candidate(join: &HashJoinExec) -> Result<Option<(InnerTable, bool)>> {
        if *join.join_type() != JoinType::Inner
            || join.filter().is_some()
            || join.on().len() != 1
            || join.null_equality() != NullEquality::NullEqualsNothing
            || join.null_aware
            || join.fetch().is_some()
        {
            return Ok(None);
        }
        let Some((left_key, right_key)) = join.on().first() else {
            return Ok(None);
        };
        let mut best: Option<(InnerTable, bool)> = None;
        for (inner, inner_key, outer, outer_key, inner_is_left) in [
            (join.left(), left_key, join.right(), right_key, true),
            (join.right(), right_key, join.left(), left_key, false),
        ] {
            let Some(scan) = inner.downcast_ref::<TableScanExec>() else {
                continue;
            };
            let Some(col) = inner_key.downcast_ref::<Column>() else {
                continue;
            };
            if scan.columns().get(col.index()) != Some(&0)
                || outer_key.data_type(&outer.schema())? != DataType::UInt64
            {
                continue;
            }
            let Some(table) = InnerTable::of_scan(scan) else {
                continue;
            };
            if best
                .as_ref()
                .is_none_or(|(b, _)| b.table.len() < table.table.len())
            {
                best = Some((table, inner_is_left));
            }
        }
        Ok(best)
    }

    /// The cost model's prediction for looking up `outer_rows` keys in `inner` against
    /// hashing, on `threads` threads.
    pub fn predict(&self, outer_rows: u64, inner: &InnerTable, threads: usize) -> Prediction {
        let shape = JoinShape {
            outer: outer_rows,
            inner: inner.table.len(),
            window: inner.index.max_width() as f64,
            read_bytes: (BATCH_ROWS * TUPLE_SIZE) as u64,
            tuple_bytes: TUPLE_SIZE as u64,
            threads: threads.max(1) as u64,
            io_depth: self.options.io_depth as u64,
        };
        let e = cost::estimate(&shape, &self.profile, &CpuCosts::default());
        Prediction {
            outer_rows: usize::try_from(outer_rows).ok(),
            inlj_s: e.inlj_s,
            hash_s: e.hash_s,
        }
    }

    /// `plan` with `join` replaced, if the mode and the model say so.
    fn replace(
        &self,
        join: &HashJoinExec,
        config: &ConfigOptions,
    ) -> Result<Option<LearnedInljExec>> {
        let Some((inner, inner_is_left)) = Self::candidate(join)? else {
            return Ok(None);
        };
        let (outer, outer_key) = match (inner_is_left, join.on().first()) {
            (true, Some((_, key))) => (join.right(), key),
            (false, Some((key, _))) => (join.left(), key),
            (_, None) => return Ok(None),
        };
        let stats = StatisticsContext::new().compute(outer.as_ref(), &StatisticsArgs::new())?;
        let rows = stats.num_rows.get_value().copied();
        let threads = config.execution.target_partitions;
        let prediction = rows.map(|r| self.predict(r as u64, &inner, threads));
        let chosen = match self.mode {
            IndexJoin::Off => false,
            IndexJoin::Always => true,
            IndexJoin::Auto => prediction.is_some_and(|p| p.inlj_s < p.hash_s),
        };
        if !chosen {
            return Ok(None);
        }
        let shape = OutputShape {
            inner_is_left,
            projection: join.projection.as_ref().map(|p| p.to_vec()),
            schema: join.schema(),
        };
        Ok(Some(LearnedInljExec::try_new(
            Arc::clone(outer),
            Arc::clone(outer_key),
            inner,
            shape,
            self.options,
            prediction,
        )?))
    }
}

impl PhysicalOptimizerRule for LearnedJoinRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.mode == IndexJoin::Off {
            return Ok(plan);
        }
        plan.transform_up(|node| {
            let Some(join) = node.downcast_ref::<HashJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            match self.replace(join, config)? {
                Some(inlj) => Ok(Transformed::yes(Arc::new(inlj) as Arc<dyn ExecutionPlan>)),
                None => Ok(Transformed::no(node)),
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        Self::NAME
    }

    fn schema_check(&self) -> bool {
        true
    }
}
