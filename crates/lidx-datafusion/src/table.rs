//! A lidx table (`.tbl`, paper 1 section 4.1) as a DataFusion table: [`LidxTable`] tells
//! the planner what the file's header knows (row count, key range, sortedness, distinct
//! keys) and scans it with [`TableScanExec`], contiguous ranges of positions read in large
//! block runs, one per partition, each in key order when the table is sorted. A sorted
//! table of `(key, value)` pairs also carries the index the learned index nested loop join
//! looks its keys up through ([`crate::join`]).

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchReceiverStream;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use lidx::index::{AnyIndex, AnyParams, IndexKind, file};
use lidx::storage::{BlockReader, ReadMode, TUPLES_PER_BLOCK, Table, Tuple};

use crate::keys::{KeyRange, key_range};
use crate::lidx_error;

/// Rows per record batch a scan hands on (32 blocks of the table: one read each).
pub const BATCH_ROWS: usize = 8192;

/// Where the index of a sorted pair table comes from.
#[derive(Clone, Debug)]
pub enum IndexSource {
    /// An index file saved by `lidx index build` for this table (checked against it).
    Saved(PathBuf),
    /// Built over the table's keys when the table is opened, where it can have one (a
    /// sorted table of pairs); none otherwise.
    Build(AnyParams),
    /// None: the table is only scanned, never looked up.
    None,
}

impl IndexSource {
    /// The index `lidx join --method auto` builds: a sampled PGM of window 256.
    pub fn default_build() -> IndexSource {
        IndexSource::Build(AnyParams::default_for(IndexKind::SampledPgm))
    }
}

/// A `.tbl` file as a table: columns `key` and `value` (`UInt64`, never null) for a table
/// of pairs, `key`, `outer_value` and `inner_value` for a join's output.
#[derive(Debug)]
pub struct LidxTable {
    table: Arc<Table>,
    schema: SchemaRef,
    index: Option<Arc<AnyIndex>>,
    mode: ReadMode,
}

impl LidxTable {
    /// Opens the table at `path`, read `mode`, with its index from `index` where it is a
    /// sorted table of pairs. Fails naming the file when it is not a lidx table, is
    /// damaged, or a saved index was built for another table or names one that cannot have
    /// an index (unsorted, or a join's output).
    pub fn open(path: &Path, index: &IndexSource, mode: ReadMode) -> lidx::Result<LidxTable> {
        let table = Table::open(path)?;
        let header = *table.header();
        let names: &[&str] = if header.is_output() {
            &["key", "outer_value", "inner_value"]
        } else {
            &["key", "value"]
        };
        let schema = Arc::new(Schema::new(
            names
                .iter()
                .map(|n| Field::new(*n, DataType::UInt64, false))
                .collect::<Vec<_>>(),
        ));
        let indexable = !header.is_output() && header.sorted;
        let index = match index {
            IndexSource::None => None,
            IndexSource::Saved(file_path) if indexable => {
                Some(Arc::new(file::load_for(file_path, &table)?))
            }
            IndexSource::Build(params) if indexable => {
                let keys = table.read_keys()?;
                Some(Arc::new(AnyIndex::build(&keys, params)?))
            }
            IndexSource::Build(_) => None,
            IndexSource::Saved(_) if header.is_output() => {
                return Err(lidx::Error::param(
                    "index",
                    format!(
                        "{} holds a join's output; only a table of (key, value) pairs is indexed",
                        path.display()
                    ),
                ));
            }
            IndexSource::Saved(_) => {
                return Err(lidx::Error::param(
                    "index",
                    format!(
                        "{} is not sorted by key, so no index can be built on it",
                        path.display()
                    ),
                ));
            }
        };
        Ok(LidxTable {
            table: Arc::new(table),
            schema,
            index,
            mode,
        })
    }

    /// The table file.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// The index its keys are looked up through, if it has one.
    pub fn index(&self) -> Option<&Arc<AnyIndex>> {
        self.index.as_ref()
    }

    /// How its blocks are read.
    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    /// The statistics of every column, from the header: the row count exactly, the key's
    /// least and greatest value and, for a table of distinct keys, its distinct count.
    fn statistics(&self) -> Statistics {
        let h = self.table.header();
        let rows = self.table.len() as usize;
        let mut columns = vec![ColumnStatistics::new_unknown(); self.schema.fields().len()];
        for c in &mut columns {
            c.null_count = Precision::Exact(0);
        }
        if let Some(key) = columns.first_mut()
            && rows > 0
        {
            key.min_value = Precision::Exact(ScalarValue::UInt64(Some(h.min_key)));
            key.max_value = Precision::Exact(ScalarValue::UInt64(Some(h.max_key)));
            if h.distinct {
                key.distinct_count = Precision::Exact(rows);
            }
        }
        Statistics {
            num_rows: Precision::Exact(rows),
            total_byte_size: Precision::Exact(rows * 8 * columns.len()),
            column_statistics: columns,
        }
    }
}

#[async_trait]
impl TableProvider for LidxTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Bounds on the key narrow a sorted table's scan to the positions they allow;
    /// DataFusion still applies every filter to the rows (`Inexact`).
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        let sorted = self.table.header().sorted;
        Ok(filters
            .iter()
            .map(|f| {
                if sorted && key_range(f, "key").is_some() {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let range = if self.table.header().sorted {
            filters
                .iter()
                .filter_map(|f| key_range(f, "key"))
                .fold(KeyRange::ALL, KeyRange::intersect)
        } else {
            KeyRange::ALL
        };
        let parts = state.config().target_partitions();
        let scan = TableScanExec::try_new(self, projection.cloned(), range, limit, parts)?;
        Ok(Arc::new(scan))
    }
}

/// Reads a [`LidxTable`]'s positions in contiguous shares, one per partition: each share
/// read front to back in runs of [`BATCH_ROWS`] tuples (whole blocks), its blocks' checksums
/// checked. A sorted table's share comes in key order, and a key range read from a sorted
/// table starts and ends at the range's first and last position (found by binary search
/// over the blocks, or through the index).
#[derive(Debug)]
pub struct TableScanExec {
    table: Arc<Table>,
    index: Option<Arc<AnyIndex>>,
    mode: ReadMode,
    /// The table's columns this scan outputs, in order.
    columns: Vec<usize>,
    schema: SchemaRef,
    range: KeyRange,
    limit: Option<usize>,
    /// The positions of each partition (found when the scan runs, for a key range).
    shares: usize,
    statistics: Arc<Statistics>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl TableScanExec {
    fn try_new(
        table: &LidxTable,
        projection: Option<Vec<usize>>,
        range: KeyRange,
        limit: Option<usize>,
        target_partitions: usize,
    ) -> Result<TableScanExec> {
        let width = table.schema.fields().len();
        let columns = projection.unwrap_or_else(|| (0..width).collect());
        if let Some(&bad) = columns.iter().find(|&&c| c >= width) {
            return Err(DataFusionError::Plan(format!(
                "{}: no column {bad} to project",
                table.table.path().display()
            )));
        }
        let schema = Arc::new(table.schema.project(&columns)?);
        let header = table.table.header();
        let mut eq = EquivalenceProperties::new(Arc::clone(&schema));
        if header.sorted
            && let Some(at) = columns.iter().position(|&c| c == 0)
        {
            let key: Arc<dyn PhysicalExpr> = Arc::new(Column::new("key", at));
            eq.add_ordering([PhysicalSortExpr::new_default(key)]);
        }
        // A join's output is read whole in one share; a table of pairs in up to one share
        // per partition, of at least a block each.
        let blocks = table.table.len().div_ceil(TUPLES_PER_BLOCK).max(1);
        let shares = if header.is_output() {
            1
        } else {
            (target_partitions.max(1) as u64).min(blocks) as usize
        };
        let properties = PlanProperties::new(
            eq,
            Partitioning::UnknownPartitioning(shares),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        let mut statistics = table.statistics().project(Some(&columns));
        if range != KeyRange::ALL {
            // Only the rows in range are read: how many is known when the scan runs.
            statistics.num_rows = statistics.num_rows.to_inexact();
            statistics.total_byte_size = statistics.total_byte_size.to_inexact();
            for c in &mut statistics.column_statistics {
                c.distinct_count = c.distinct_count.to_inexact();
            }
        }
        if let Some(limit) = limit {
            statistics.num_rows = statistics.num_rows.min(&Precision::Exact(limit));
        }
        Ok(TableScanExec {
            table: Arc::clone(&table.table),
            index: table.index.clone(),
            mode: table.mode,
            columns,
            schema,
            range,
            limit,
            shares,
            statistics: Arc::new(statistics),
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The table it reads.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// The index of its table, if it has one.
    pub fn index(&self) -> Option<&Arc<AnyIndex>> {
        self.index.as_ref()
    }

    /// How it reads.
    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    /// The table column (0 the key, 1 the value, ...) of each output column.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// True when it reads every row: no key range, no limit.
    pub fn reads_everything(&self) -> bool {
        self.range == KeyRange::ALL && self.limit.is_none()
    }

    /// Positions `lo..hi` of share `i` of `of` over `positions`: equal contiguous runs of
    /// whole blocks.
    fn share(positions: Range<u64>, i: usize, of: usize) -> Range<u64> {
        let blocks = (positions.end - positions.start).div_ceil(TUPLES_PER_BLOCK);
        let per = blocks.div_ceil(of.max(1) as u64) * TUPLES_PER_BLOCK;
        let lo = (positions.start + per * i as u64).min(positions.end);
        lo..(lo + per).min(positions.end)
    }
}

impl DisplayAs for TableScanExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "LidxTableScan: {}, {} rows",
            self.table.path().display(),
            self.table.len()
        )?;
        if self.range != KeyRange::ALL {
            write!(f, ", key in {}", self.range)?;
        }
        if let Some(limit) = self.limit {
            write!(f, ", limit {limit}")?;
        }
        if let Some(index) = &self.index {
            write!(f, ", index {}", index.describe())?;
        }
        Ok(())
    }
}

impl ExecutionPlan for TableScanExec {
    fn name(&self) -> &str {
        "LidxTableScan"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
        _: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
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

    fn execute(&self, partition: usize, _: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition >= self.shares {
            return Err(DataFusionError::Internal(format!(
                "LidxTableScan: partition {partition} of {}",
                self.shares
            )));
        }
        let blocks = MetricBuilder::new(&self.metrics).counter("blocks_read", partition);
        let bytes = MetricBuilder::new(&self.metrics).counter("bytes_read", partition);
        let reads = MetricBuilder::new(&self.metrics).counter("reads", partition);
        let mut builder = RecordBatchReceiverStream::builder(Arc::clone(&self.schema), 2);
        let tx = builder.tx();
        let (table, index, mode) = (Arc::clone(&self.table), self.index.clone(), self.mode);
        let (columns, schema) = (self.columns.clone(), Arc::clone(&self.schema));
        let (range, limit, shares) = (self.range, self.limit, self.shares);
        builder.spawn_blocking(move || {
            let send = |batch: RecordBatch| tx.blocking_send(Ok(batch)).is_ok();
            let limit = limit.unwrap_or(usize::MAX);
            if table.header().is_output() {
                return scan_output(&table, &columns, &schema, limit, send);
            }
            let mut reader = BlockReader::new(&table, mode).map_err(lidx_error)?;
            let positions =
                positions_of(&table, index.as_deref(), &mut reader, range).map_err(lidx_error)?;
            let share = TableScanExec::share(positions, partition, shares);
            let sent = scan_pairs(&mut reader, share, range, &columns, &schema, limit, send);
            let io = reader.stats();
            blocks.add(io.blocks as usize);
            bytes.add(io.bytes as usize);
            reads.add(io.reads as usize);
            sent
        });
        Ok(builder.build())
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _: &[Arc<Statistics>],
        args: &datafusion::physical_plan::statistics::StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        match args.partition() {
            Some(p) if self.shares > 1 => {
                // A share of the whole table: its rows are known; the key bounds stay the
                // table's, as an upper bound.
                let share = TableScanExec::share(0..self.table.len(), p, self.shares);
                let mut s = self.statistics.as_ref().clone().to_inexact();
                let rows = (share.end - share.start) as usize;
                s.num_rows = if self.reads_everything() {
                    Precision::Exact(rows)
                } else {
                    Precision::Inexact(rows)
                };
                s.total_byte_size = Precision::Inexact(rows * 8 * self.columns.len());
                Ok(Arc::new(s))
            }
            _ => Ok(Arc::clone(&self.statistics)),
        }
    }
}

/// The positions of a sorted table's keys in `range` (every position for
/// [`KeyRange::ALL`]), found through `index` or by binary search over the blocks.
fn positions_of(
    table: &Table,
    index: Option<&AnyIndex>,
    reader: &mut BlockReader<'_>,
    range: KeyRange,
) -> lidx::Result<Range<u64>> {
    let n = table.len();
    if range == KeyRange::ALL {
        return Ok(0..n);
    }
    if range.is_empty() {
        return Ok(0..0);
    }
    let mut lower_bound = |key: u64| -> lidx::Result<u64> {
        let w = index.map_or(lidx::index::Window { lo: 0, hi: n }, |i| i.search(key));
        reader.lower_bound(w.lo, w.hi, key, lidx::storage::MAX_WINDOW_READ_BLOCKS)
    };
    let lo = lower_bound(range.low)?;
    let hi = match range.high.checked_add(1) {
        Some(above) => lower_bound(above)?,
        None => n,
    };
    Ok(lo..hi.max(lo))
}

/// Sends the pairs at `positions` (those with keys in `range`, at most `limit`) in batches
/// of [`BATCH_ROWS`], until done or `send` says the stream is gone.
fn scan_pairs(
    reader: &mut BlockReader<'_>,
    positions: Range<u64>,
    range: KeyRange,
    columns: &[usize],
    schema: &SchemaRef,
    mut limit: usize,
    send: impl Fn(RecordBatch) -> bool,
) -> Result<()> {
    let mut at = positions.start;
    while at < positions.end && limit > 0 {
        let hi = (at + BATCH_ROWS as u64).min(positions.end);
        let run = reader.read_window(at, hi).map_err(lidx_error)?;
        let from = (at - run.first_position) as usize;
        let tuples = run
            .tuples
            .get(from..from + (hi - at) as usize)
            .unwrap_or_default();
        let tuples: Vec<Tuple> = if range == KeyRange::ALL {
            tuples.iter().take(limit).copied().collect()
        } else {
            tuples
                .iter()
                .filter(|t| range.contains(t.key))
                .take(limit)
                .copied()
                .collect()
        };
        limit -= tuples.len();
        let arrays = columns
            .iter()
            .map(|&c| -> ArrayRef {
                let values: Vec<u64> = if c == 0 {
                    tuples.iter().map(|t| t.key).collect()
                } else {
                    tuples.iter().map(|t| t.value).collect()
                };
                Arc::new(UInt64Array::from(values))
            })
            .collect();
        let batch = record_batch(schema, arrays, tuples.len())?;
        if !send(batch) {
            return Ok(());
        }
        at = hi;
    }
    Ok(())
}

/// Sends a join output table's triples (at most `limit`) in batches.
fn scan_output(
    table: &Table,
    columns: &[usize],
    schema: &SchemaRef,
    mut limit: usize,
    send: impl Fn(RecordBatch) -> bool,
) -> Result<()> {
    let mut cols: Vec<Vec<u64>> = vec![Vec::with_capacity(BATCH_ROWS); columns.len()];
    let mut rows = 0;
    let mut stopped = false;
    let flush = |cols: &mut Vec<Vec<u64>>, rows: &mut usize| -> Result<bool> {
        let arrays = cols
            .iter_mut()
            .map(|c| Arc::new(UInt64Array::from(std::mem::take(c))) as ArrayRef)
            .collect();
        let batch = record_batch(schema, arrays, std::mem::take(rows))?;
        Ok(send(batch))
    };
    let scanned = table.scan_output(|triples| {
        for t in triples {
            if limit == 0 || stopped {
                return Ok(());
            }
            for (col, &c) in cols.iter_mut().zip(columns) {
                col.push(match c {
                    0 => t.key,
                    1 => t.outer,
                    _ => t.inner,
                });
            }
            rows += 1;
            limit -= 1;
            if rows == BATCH_ROWS {
                match flush(&mut cols, &mut rows) {
                    Ok(true) => {}
                    Ok(false) => stopped = true,
                    Err(e) => {
                        return Err(lidx::Error::param("output", e.to_string()));
                    }
                }
            }
        }
        Ok(())
    });
    scanned.map_err(lidx_error)?;
    if rows > 0 && !stopped {
        flush(&mut cols, &mut rows)?;
    }
    Ok(())
}

/// A batch of `rows` rows (columns may be none, for `count(*)`).
pub(crate) fn record_batch(
    schema: &SchemaRef,
    columns: Vec<ArrayRef>,
    rows: usize,
) -> Result<RecordBatch> {
    let options = datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &options,
    )?)
}
