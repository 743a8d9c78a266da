//! The learned index nested loop join as a DataFusion operator (paper 1, sections 3 and
//! 4.3): [`LearnedInljExec`] takes each batch of its one input, the outer side, puts its
//! keys in order, and looks them up in the inner table through its index with lidx's INLJ
//! ([`lidx::join::inlj_tuples`]: monotone windows, the index cursor, and the reads of the
//! next windows kept in flight at the I/O depth asked for). The inner table is never
//! scanned: only the blocks the outer keys' windows cover are read.
//!
//! It replaces a `HashJoinExec` (see [`crate::rule`]) and outputs exactly what that join
//! would have: the same schema (the left input's columns, then the right's, then the join's
//! projection), the same rows, in another order.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::EmissionType;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties,
    Partitioning, PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::StreamExt;
use lidx::index::AnyIndex;
use lidx::join::{InljOptions, inlj_tuples};
use lidx::storage::{Table, Tuple};

use crate::lidx_error;
use crate::table::{TableScanExec, record_batch};

/// The inner side of a learned INLJ: a sorted table of pairs, its index, and the columns of
/// it the join outputs (0 the key, 1 the value), in the order its scan gave them.
#[derive(Clone, Debug)]
pub struct InnerTable {
    /// The table looked up.
    pub table: Arc<Table>,
    /// Its index.
    pub index: Arc<AnyIndex>,
    /// The table column of each of the inner side's output columns.
    pub columns: Vec<usize>,
}

impl InnerTable {
    /// The inner side a scan reads, if it can be looked up instead: a sorted table of pairs
    /// with an index, read whole.
    pub fn of_scan(scan: &TableScanExec) -> Option<InnerTable> {
        let table = scan.table();
        let h = table.header();
        if h.is_output() || !h.sorted || !scan.reads_everything() {
            return None;
        }
        Some(InnerTable {
            table: Arc::clone(table),
            index: Arc::clone(scan.index()?),
            columns: scan.columns().to_vec(),
        })
    }
}

/// What the cost model predicted when it chose the join, shown by `EXPLAIN`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// Outer rows the planner expected.
    pub outer_rows: Option<usize>,
    /// Predicted seconds of this join.
    pub inlj_s: f64,
    /// Predicted seconds of the hash join it replaced.
    pub hash_s: f64,
}

/// The shape of the output, taken from the join replaced: the left input's columns, then
/// the right's, then the join's projection.
#[derive(Clone, Debug)]
pub struct OutputShape {
    /// The inner side was the join's left input (its columns come first).
    pub inner_is_left: bool,
    /// The join's projection of `left ++ right` columns.
    pub projection: Option<Vec<usize>>,
    /// The output schema.
    pub schema: SchemaRef,
}

/// Joins its input (the outer side) with an indexed lidx table by looking each outer key up.
#[derive(Debug)]
pub struct LearnedInljExec {
    outer: Arc<dyn ExecutionPlan>,
    outer_key: Arc<dyn PhysicalExpr>,
    inner: InnerTable,
    shape: OutputShape,
    options: InljOptions,
    prediction: Option<Prediction>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl LearnedInljExec {
    /// The join of `outer` (matched on `outer_key`, which must give `UInt64`) with `inner`,
    /// its output of `shape`.
    pub fn try_new(
        outer: Arc<dyn ExecutionPlan>,
        outer_key: Arc<dyn PhysicalExpr>,
        inner: InnerTable,
        shape: OutputShape,
        options: InljOptions,
        prediction: Option<Prediction>,
    ) -> Result<LearnedInljExec> {
        let width = outer.schema().fields().len() + inner.columns.len();
        let schema = Arc::clone(&shape.schema);
        let projection = &shape.projection;
        let out = projection.as_ref().map_or(width, Vec::len);
        if out != schema.fields().len() || projection.iter().flatten().any(|&c| c >= width) {
            return Err(DataFusionError::Plan(format!(
                "LearnedInlj: a projection of {width} join columns does not give the {} columns of {schema}",
                schema.fields().len()
            )));
        }
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(outer.output_partitioning().partition_count()),
            EmissionType::Incremental,
            outer.boundedness(),
        );
        Ok(LearnedInljExec {
            outer,
            outer_key,
            inner,
            shape,
            options,
            prediction,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The outer side.
    pub fn outer(&self) -> &Arc<dyn ExecutionPlan> {
        &self.outer
    }

    /// The inner side.
    pub fn inner(&self) -> &InnerTable {
        &self.inner
    }

    /// How it reads the inner table.
    pub fn options(&self) -> &InljOptions {
        &self.options
    }

    /// What the cost model predicted when the rule put it in the plan.
    pub fn prediction(&self) -> Option<Prediction> {
        self.prediction
    }
}

impl DisplayAs for LearnedInljExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "LearnedInlj: {} = lookup in {} through {}, I/O depth {}",
            self.outer_key,
            self.inner.table.path().display(),
            self.inner.index.describe(),
            self.options.io_depth
        )?;
        if let Some(p) = &self.prediction {
            let rows = p.outer_rows.map_or("unknown".into(), |r| r.to_string());
            write!(
                f,
                ", chosen for {rows} outer rows: predicted {:.4} s against the hash join's {:.4} s",
                p.inlj_s, p.hash_s
            )?;
        }
        Ok(())
    }
}

/// The counters of one partition's run.
#[derive(Clone)]
struct Counters {
    lookups: Count,
    blocks: Count,
    bytes: Count,
    reads: Count,
}

impl ExecutionPlan for LearnedInljExec {
    fn name(&self) -> &str {
        "LearnedInljExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.outer]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        f(&self.outer_key)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [outer] = <[_; 1]>::try_from(children).map_err(|c| {
            DataFusionError::Internal(format!("LearnedInlj has one input, not {}", c.len()))
        })?;
        Ok(Arc::new(LearnedInljExec::try_new(
            outer,
            Arc::clone(&self.outer_key),
            self.inner.clone(),
            self.shape.clone(),
            self.options,
            self.prediction,
        )?))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let outer = self.outer.execute(partition, context)?;
        let counter =
            |name: &'static str| MetricBuilder::new(&self.metrics).counter(name, partition);
        let counters = Counters {
            lookups: counter("lookups"),
            blocks: counter("blocks_read"),
            bytes: counter("bytes_read"),
            reads: counter("reads"),
        };
        let job = Arc::new(BatchJoin {
            outer_key: Arc::clone(&self.outer_key),
            inner: self.inner.clone(),
            shape: self.shape.clone(),
            options: self.options,
        });
        let stream = outer.then(move |batch| {
            let (job, counters) = (Arc::clone(&job), counters.clone());
            async move {
                let batch = batch?;
                tokio::task::spawn_blocking(move || job.join(&batch, &counters))
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.shape.schema),
            stream,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(partition)]
    }

    /// At most one match per outer row where the inner keys are distinct.
    fn statistics_from_inputs(
        &self,
        inputs: &[Arc<Statistics>],
        _: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let mut s = Statistics::new_unknown(&self.shape.schema);
        if self.inner.table.header().distinct
            && let Some(outer) = inputs.first()
            && let Some(&rows) = outer.num_rows.get_value()
        {
            s.num_rows = Precision::Inexact(rows);
        }
        Ok(Arc::new(s))
    }
}

/// One batch's join, run off the async threads.
struct BatchJoin {
    outer_key: Arc<dyn PhysicalExpr>,
    inner: InnerTable,
    shape: OutputShape,
    options: InljOptions,
}

impl BatchJoin {
    /// Looks up `batch`'s keys (nulls match nothing) and builds the output rows.
    fn join(&self, batch: &RecordBatch, counters: &Counters) -> Result<RecordBatch> {
        let keys = self
            .outer_key
            .evaluate(batch)?
            .into_array(batch.num_rows())?;
        let keys = keys.as_any().downcast_ref::<UInt64Array>().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "LearnedInlj: the outer key {} is {}, not UInt64",
                self.outer_key,
                keys.data_type()
            ))
        })?;
        let mut outer: Vec<Tuple> = (0..keys.len())
            .filter(|&i| keys.is_valid(i))
            .map(|i| Tuple {
                key: keys.value(i),
                value: i as u64,
            })
            .collect();
        if !outer.is_sorted_by_key(|t| t.key) {
            outer.sort_unstable_by_key(|t| t.key);
        }
        let mut matches: Vec<(u64, u64, u64)> = Vec::new();
        let stats = inlj_tuples(
            &outer,
            &self.inner.table,
            &self.inner.index,
            &self.options,
            &mut matches,
        )
        .map_err(lidx_error)?;
        counters.lookups.add(stats.lookups as usize);
        counters.blocks.add(stats.inner_io.blocks as usize);
        counters.bytes.add(stats.inner_io.bytes as usize);
        counters.reads.add(stats.inner_io.reads as usize);

        let rows = matches.len();
        let outer_rows = UInt32Array::from_iter_values(matches.iter().map(|m| m.1 as u32));
        let outer_columns = batch
            .columns()
            .iter()
            .map(|c| take(c.as_ref(), &outer_rows, None))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let inner_columns: Vec<ArrayRef> = self
            .inner
            .columns
            .iter()
            .map(|&c| -> ArrayRef {
                let values = matches.iter().map(|m| if c == 0 { m.0 } else { m.2 });
                Arc::new(UInt64Array::from_iter_values(values))
            })
            .collect();
        let all = if self.shape.inner_is_left {
            [inner_columns, outer_columns].concat()
        } else {
            [outer_columns, inner_columns].concat()
        };
        let columns = match &self.shape.projection {
            None => all,
            // Checked against the columns in `try_new`.
            Some(p) => p.iter().filter_map(|&i| all.get(i).cloned()).collect(),
        };
        record_batch(&self.shape.schema, columns, rows)
    }
}
