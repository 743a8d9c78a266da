//! SQL through DataFusion over lidx tables and Parquet files (`lidx_datafusion`, the
//! engine `lidx sql` runs), with the learned index nested loop join where the cost model
//! picks it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::{cast, concat};
use datafusion::arrow::datatypes::{self as types, DataType, SchemaRef};
use datafusion::error::DataFusionError;
use datafusion::execution::context::SQLOptions;
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::{collect, displayable};
use lidx::storage::profile::StorageProfile;
use lidx::storage::{IoBackend, ReadMode};
use lidx_datafusion::rule::IndexJoin;
use lidx_datafusion::session::{SqlOptions, context, register as register_table};
use lidx_datafusion::table::IndexSource;
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::{LidxError, OrRaise};

/// A query's result before it meets Python: its column names, its columns whole, the plan.
struct Answer {
    schema: SchemaRef,
    columns: Vec<ArrayRef>,
    plan: String,
    seconds: f64,
}

/// A DataFusion error as a [`LidxError`] with lidx's one-line message.
fn raise(e: DataFusionError) -> PyErr {
    LidxError::new_err(lidx_datafusion::message(&e))
}

/// Runs `query` over `tables` (name, path, a saved index, whether to build one) and returns
/// the column names, each column (a numpy array for numbers and booleans without nulls, a
/// list otherwise: strings, or `None` for nulls), the physical plan (with each operator's
/// counts when `analyze`) and the seconds the query ran. `explain` plans without running.
#[pyfunction]
#[pyo3(signature = (query, tables, index_join, threads, io_depth, direct, cold, profile, explain, analyze))]
#[expect(
    clippy::too_many_arguments,
    reason = "one per setting of `lidx sql`; the Python side gives them names and defaults"
)]
#[expect(
    clippy::type_complexity,
    reason = "the tuple Python unpacks: names, columns, plan, seconds"
)]
fn sql(
    py: Python<'_>,
    query: &str,
    tables: Vec<(String, PathBuf, Option<PathBuf>, bool)>,
    index_join: &str,
    threads: usize,
    io_depth: usize,
    direct: bool,
    cold: bool,
    profile: Option<PathBuf>,
    explain: bool,
    analyze: bool,
) -> PyResult<(Vec<String>, Vec<Py<PyAny>>, String, f64)> {
    let index_join = match index_join {
        "auto" => IndexJoin::Auto,
        "on" => IndexJoin::Always,
        "off" => IndexJoin::Off,
        other => {
            return Err(LidxError::new_err(format!(
                "invalid index_join: '{other}' is not auto, on or off"
            )));
        }
    };
    let profile = match profile {
        Some(path) => StorageProfile::load(&path).or_raise()?,
        None => lidx::join::cost::assumed_ssd(),
    };
    let options = SqlOptions {
        threads,
        index_join,
        profile,
        io_depth,
        io_backend: IoBackend::Auto,
        mode: if direct {
            ReadMode::Direct
        } else {
            ReadMode::Buffered
        },
    };
    let answer = py.detach(|| -> Result<Answer, DataFusionError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let ctx = context(&options);
            for (name, path, saved, build) in &tables {
                let index = match (saved, build) {
                    (Some(saved), _) => IndexSource::Saved(saved.clone()),
                    (None, true) => IndexSource::default_build(),
                    (None, false) => IndexSource::None,
                };
                register_table(&ctx, name, path, &index, options.mode).await?;
            }
            let read_only = SQLOptions::new()
                .with_allow_ddl(false)
                .with_allow_dml(false)
                .with_allow_statements(false);
            let frame = ctx.sql_with_options(query, read_only).await?;
            let plan = frame.create_physical_plan().await?;
            let schema = plan.schema();
            if explain {
                return Ok(Answer {
                    columns: Vec::new(),
                    schema: Arc::new(datafusion::arrow::datatypes::Schema::empty()),
                    plan: displayable(plan.as_ref()).indent(true).to_string(),
                    seconds: 0.0,
                });
            }
            if cold {
                for (_, path, _, _) in &tables {
                    lidx::files::drop_cached_pages(path).map_err(lidx_datafusion::lidx_error)?;
                }
            }
            let started = Instant::now();
            let batches = collect(Arc::clone(&plan), ctx.task_ctx()).await?;
            let seconds = started.elapsed().as_secs_f64();
            let text = if analyze {
                DisplayableExecutionPlan::with_metrics(plan.as_ref())
                    .indent(true)
                    .to_string()
            } else {
                displayable(plan.as_ref()).indent(true).to_string()
            };
            Ok(Answer {
                columns: whole_columns(&schema, &batches)?,
                schema,
                plan: text,
                seconds,
            })
        })
    });
    let answer = answer.map_err(raise)?;
    let names = answer
        .schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let columns = answer
        .columns
        .iter()
        .map(|c| to_python(py, c))
        .collect::<PyResult<_>>()?;
    Ok((names, columns, answer.plan, answer.seconds))
}

/// Each column of `batches` as one array.
fn whole_columns(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<Vec<ArrayRef>, DataFusionError> {
    (0..schema.fields().len())
        .map(|i| {
            let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
            if parts.is_empty() {
                Ok(datafusion::arrow::array::new_empty_array(
                    schema.field(i).data_type(),
                ))
            } else {
                Ok(concat(&parts)?)
            }
        })
        .collect()
}

/// A column for Python: numbers and booleans without nulls as numpy arrays (no copy of
/// the values beyond Arrow's), anything else as a list of strings and `None`s.
fn to_python(py: Python<'_>, column: &ArrayRef) -> PyResult<Py<PyAny>> {
    macro_rules! numbers {
        ($t:ty) => {
            Ok(column
                .as_primitive::<$t>()
                .values()
                .to_vec()
                .into_pyarray(py)
                .into_any()
                .unbind())
        };
    }
    if column.null_count() == 0 {
        match column.data_type() {
            DataType::UInt64 => return numbers!(types::UInt64Type),
            DataType::UInt32 => return numbers!(types::UInt32Type),
            DataType::UInt16 => return numbers!(types::UInt16Type),
            DataType::UInt8 => return numbers!(types::UInt8Type),
            DataType::Int64 => return numbers!(types::Int64Type),
            DataType::Int32 => return numbers!(types::Int32Type),
            DataType::Int16 => return numbers!(types::Int16Type),
            DataType::Int8 => return numbers!(types::Int8Type),
            DataType::Float64 => return numbers!(types::Float64Type),
            DataType::Float32 => return numbers!(types::Float32Type),
            DataType::Boolean => {
                let values: Vec<bool> = column.as_boolean().values().iter().collect();
                return Ok(values.into_pyarray(py).into_any().unbind());
            }
            _ => {}
        }
    }
    let text = cast(column, &DataType::Utf8).map_err(|e| raise(e.into()))?;
    let text = text.as_string::<i32>();
    let values: Vec<Option<&str>> = (0..text.len())
        .map(|i| text.is_valid(i).then(|| text.value(i)))
        .collect();
    Ok(PyList::new(py, values)?.into_any().unbind())
}

/// Registers the SQL function.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sql, m)?)
}
