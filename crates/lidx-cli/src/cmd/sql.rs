//! `lidx sql`: one SQL query through DataFusion over lidx tables and Parquet files named by
//! path, with the learned index nested loop join (paper 1, sections 3 and 4.3) put in place
//! of a hash join where the cost model predicts it faster (`lidx_datafusion::rule`). This
//! module parses, registers, runs and prints; the tables, the join and the rule are
//! lidx-datafusion's.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, anyhow, bail};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::DataFusionError;
use datafusion::execution::context::SQLOptions;
use datafusion::physical_plan::{collect, displayable};
use lidx::files::AtomicFile;
use lidx::storage::profile::StorageProfile;
use lidx::storage::{IoBackend, ReadMode};
use lidx_datafusion::counts::{QueryRecord, first_prediction, query_counts};
use lidx_datafusion::rule::IndexJoin;
use lidx_datafusion::session::{DEFAULT_IO_DEPTH, SqlOptions, TableFile, context, register};
use lidx_datafusion::table::IndexSource;

use crate::progress::Context;

/// The most threads (DataFusion partitions) a query runs on.
const MAX_THREADS: u64 = 1024;

/// How the rows are printed or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// A table for people.
    Table,
    /// CSV with a header line.
    Csv,
    /// One JSON object per row.
    Json,
}

/// `--index-join`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum IndexJoinArg {
    /// Where paper 1's cost model predicts it faster than the hash join.
    Auto,
    /// Wherever it can run.
    On,
    /// Never: DataFusion's own joins only.
    Off,
}

/// Run one SQL query over tables named by path.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  lidx sql 'SELECT count(*) FROM r JOIN s ON r.key = s.key' --table r=r.tbl --table s=s.tbl --index s=s.idx\n  lidx sql 'SELECT key, value FROM s WHERE key BETWEEN 10 AND 20' --table s=s.tbl --format csv --out rows.csv\n  lidx sql 'SELECT sum(p.value) FROM p JOIN s ON p.key = s.key' --table p=r.parquet --table s=s.tbl --explain"
)]
pub struct Args {
    /// The query (DataFusion's SQL).
    query: String,
    /// A table the query names: NAME=PATH, a lidx table (.tbl) or a Parquet file; repeat
    /// for each. A sorted lidx table of (key, value) pairs gets an index for the learned
    /// join: the one --index names, else one built when the query starts (a sampled PGM).
    #[arg(long = "table", value_name = "NAME=PATH", required = true)]
    tables: Vec<String>,
    /// A saved index of a table (`lidx index build`): NAME=PATH.
    #[arg(long = "index", value_name = "NAME=PATH")]
    indexes: Vec<String>,
    /// Give this table no index (it is only scanned).
    #[arg(long = "no-index", value_name = "NAME")]
    no_index: Vec<String>,
    /// When the learned index nested loop join replaces a hash join.
    #[arg(long, value_enum, default_value = "auto")]
    index_join: IndexJoinArg,
    /// Threads (DataFusion's partitions), 1 to 1024 [default: the machine's cores].
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_THREADS))]
    threads: Option<usize>,
    /// Window reads each learned join keeps in flight (1 to 4096).
    #[arg(
        long,
        default_value_t = DEFAULT_IO_DEPTH,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=IoBackend::MAX_DEPTH as u64)
    )]
    io_depth: usize,
    /// What keeps them in flight: uring, threads or auto.
    #[arg(long, default_value = "auto")]
    io_backend: IoBackend,
    /// Read lidx tables with O_DIRECT (Parquet files are read through the page cache).
    #[arg(long)]
    direct: bool,
    /// Drop every table's pages from the OS page cache before the query runs.
    #[arg(long)]
    cold: bool,
    /// Storage profile for the cost model (from `lidx bench disk`) [default: an assumed SSD].
    #[arg(long, value_name = "PROFILE.json")]
    profile: Option<PathBuf>,
    /// Print the physical plan instead of running the query.
    #[arg(long, conflicts_with = "analyze")]
    explain: bool,
    /// Run the query, then print the plan with each operator's counts (rows, blocks read,
    /// lookups) instead of the rows.
    #[arg(long)]
    analyze: bool,
    /// How the rows are printed (or written, with --out).
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Write the rows to this file instead of stdout (written whole, then renamed into place).
    #[arg(long, short, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print one JSON object (time, rows, each count of the plan's operators) instead of the
    /// rows (for scripts and `lidx experiment sql-join`).
    #[arg(long, conflicts_with_all = ["explain", "analyze", "out"])]
    json: bool,
}

/// Splits `NAME=VALUE`, naming the option in the error.
fn name_value<'a>(option: &str, text: &'a str) -> anyhow::Result<(&'a str, &'a str)> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => Ok((name, value)),
        _ => bail!("{option} '{text}': expected NAME=PATH"),
    }
}

/// The tables to register: name, path and where the index comes from.
fn tables(args: &Args) -> anyhow::Result<Vec<(String, PathBuf, IndexSource)>> {
    let mut out: Vec<(String, PathBuf, IndexSource)> = Vec::new();
    for t in &args.tables {
        let (name, path) = name_value("--table", t)?;
        if out.iter().any(|(n, _, _)| n == name) {
            bail!("--table {name}: named twice");
        }
        let index = if args.no_index.iter().any(|n| n == name) {
            IndexSource::None
        } else {
            IndexSource::default_build()
        };
        out.push((name.to_string(), PathBuf::from(path), index));
    }
    for i in &args.indexes {
        let (name, path) = name_value("--index", i)?;
        let Some(entry) = out.iter_mut().find(|(n, _, _)| n == name) else {
            bail!("--index {name}: no --table {name}=PATH to index");
        };
        if matches!(entry.2, IndexSource::None) {
            bail!("--index {name}: the table is also named by --no-index");
        }
        entry.2 = IndexSource::Saved(PathBuf::from(path));
    }
    for n in &args.no_index {
        if !out.iter().any(|(name, _, _)| name == n) {
            bail!("--no-index {n}: no --table {n}=PATH");
        }
    }
    Ok(out)
}

/// A DataFusion error as one line: lidx's own message where it is one.
fn one_line(e: DataFusionError) -> anyhow::Error {
    anyhow!(lidx_datafusion::message(&e))
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    let tables = tables(&args)?;
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let options = SqlOptions {
        threads,
        index_join: match args.index_join {
            IndexJoinArg::Auto => IndexJoin::Auto,
            IndexJoinArg::On => IndexJoin::Always,
            IndexJoinArg::Off => IndexJoin::Off,
        },
        profile: match &args.profile {
            Some(path) => StorageProfile::load(path)?,
            None => lidx::join::cost::assumed_ssd(),
        },
        io_depth: args.io_depth,
        io_backend: args.io_backend,
        mode: if args.direct {
            ReadMode::Direct
        } else {
            ReadMode::Buffered
        },
    };
    if let Some(out) = &args.out {
        // Refused before any work: an output that is one of the inputs.
        for (_, path, _) in &tables {
            lidx::files::refuse_same_file(path, out)?;
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .context("start the query's threads")?;
    runtime.block_on(query(ctx, &args, &options, &tables))
}

async fn query(
    ctx: &Context,
    args: &Args,
    options: &SqlOptions,
    tables: &[(String, PathBuf, IndexSource)],
) -> anyhow::Result<()> {
    let session = context(options);
    // Said once the query has run, so that an error is the only line a failure prints.
    let mut notes = Vec::new();
    for (name, path, index) in tables {
        let spinner = ctx.spinner(&format!("opening {name}"));
        let started = Instant::now();
        let kind = register(&session, name, path, index, options.mode).await;
        spinner.finish_and_clear();
        let kind = kind.map_err(one_line)?;
        if let (TableFile::Lidx { indexed: true }, IndexSource::Build(params)) = (kind, index) {
            notes.push(format!(
                "lidx: {name}: built a {} index in {:.3} s (--index {name}=FILE takes one saved by `lidx index build`)",
                params.kind(),
                started.elapsed().as_secs_f64()
            ));
        }
    }
    // Queries only: a statement that writes (COPY, INSERT, CREATE ...) would replace files
    // in place; rows go out through --out, written whole.
    let read_only = SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false);
    let frame = session
        .sql_with_options(&args.query, read_only)
        .await
        .map_err(one_line)?;
    let plan = frame.create_physical_plan().await.map_err(one_line)?;
    if args.explain {
        say!("{}", displayable(plan.as_ref()).indent(true));
        notes.iter().for_each(|n| eprintln!("{n}"));
        return Ok(());
    }
    if args.cold {
        for (_, path, _) in tables {
            lidx::files::drop_cached_pages(path)?;
        }
    }
    let spinner = ctx.spinner("running the query");
    let started = Instant::now();
    let batches = collect(plan.clone(), session.task_ctx()).await;
    spinner.finish_and_clear();
    let batches = batches.map_err(one_line)?;
    let seconds = started.elapsed().as_secs_f64();
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if args.json {
        let record = QueryRecord {
            seconds,
            rows: rows as u64,
            index_join: format!("{:?}", args.index_join).to_lowercase(),
            threads: options.threads,
            io_depth: options.io_depth,
            cold: args.cold,
            direct: args.direct,
            counts: query_counts(plan.as_ref()),
            predicted_learned_s: first_prediction(plan.as_ref()).map(|p| p.inlj_s),
            predicted_hash_s: first_prediction(plan.as_ref()).map(|p| p.hash_s),
            peak_rss: lidx::memory::peak_rss(),
        };
        say!("{}", serde_json::to_string(&record)?);
        return Ok(());
    }
    if args.analyze {
        say!(
            "{}",
            datafusion::physical_plan::display::DisplayableExecutionPlan::with_metrics(
                plan.as_ref()
            )
            .indent(true)
        );
    } else {
        write_rows(&batches, args.format, args.out.as_deref())?;
    }
    notes.iter().for_each(|n| eprintln!("{n}"));
    eprintln!("lidx: {rows} rows in {seconds:.3} s");
    Ok(())
}

/// Prints `batches` in `format`, or writes them to `out`.
fn write_rows(batches: &[RecordBatch], format: Format, out: Option<&Path>) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    match format {
        Format::Table => {
            bytes.extend_from_slice(pretty_format_batches(batches)?.to_string().as_bytes());
            bytes.push(b'\n');
        }
        Format::Csv => {
            let mut w = datafusion::arrow::csv::Writer::new(&mut bytes);
            for b in batches {
                w.write(b)?;
            }
        }
        Format::Json => {
            let mut w = datafusion::arrow::json::LineDelimitedWriter::new(&mut bytes);
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
        }
    }
    match out {
        Some(path) => {
            let mut file = AtomicFile::create(path)?;
            file.write_all(&bytes)?;
            file.finish()?;
        }
        None => {
            use std::io::Write;
            std::io::stdout().write_all(&bytes)?;
        }
    }
    Ok(())
}
