//! `lidx join`: join two tables on disk by index nested loop (through any index), sort-merge
//! or hash (paper 1, sections 3 and 4.3), on one or more threads, counting every block read.
//! The join itself is `lidx::join::driver`'s; this module parses and prints.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::bail;
use lidx::index::IndexKind;
use lidx::join::cost;
use lidx::join::driver::{self, JoinMethod, JoinRequest, JoinRun};
use lidx::join::{CountSink, JoinRecord};
use lidx::memory::MemoryBudget;
use lidx::partition::UnsortedRecord;
use lidx::partition::join::{
    UnsortedJoin, UnsortedJoinReport, UnsortedMethod, run_unsorted as run_unsorted_with,
};
use lidx::storage::profile::StorageProfile;
use lidx::storage::{IoBackend, IoStats, ReadMode, Table, TableWriter};
use lidx::updatable::alex::join::{self as alex_join, AlexJoin};

use crate::progress::Context;
use crate::units::{human_bytes, parse_size};

/// The grace hash join's memory budget when none is given.
const GRACE_BUDGET: u64 = 256 << 20;

/// The most threads a join runs on: far more than any machine lidx targets has cores, and
/// few enough that starting them cannot exhaust the system's threads.
const MAX_THREADS: u64 = 1024;

/// The most window reads an inlj thread keeps in flight (the library's cap,
/// [`IoBackend::MAX_DEPTH`]): far beyond the 256 or so that keep an NVMe SSD busy.
const MAX_IO_DEPTH: u64 = IoBackend::MAX_DEPTH as u64;

/// `--method`: a join method, or `auto` for the cost model's pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MethodArg(Option<JoinMethod>);

/// `--method` as given: one of the joins of sorted tables (or grace, any order), or a join
/// of unsorted tables through unclustered indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MethodChoice {
    Sorted(MethodArg),
    /// `inlj:alex`: through ALEX on disk, whose file holds the inner table's tuples.
    Alex,
    Unsorted(UnsortedMethod),
}

impl FromStr for MethodChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(m) = UnsortedMethod::ALL.into_iter().find(|m| m.name() == s) {
            return Ok(MethodChoice::Unsorted(m));
        }
        if s == alex_join::METHOD {
            return Ok(MethodChoice::Alex);
        }
        s.parse().map(MethodChoice::Sorted).map_err(|e: String| {
            format!(
                "{e}; also inlj:alex (ALEX on disk); over unsorted tables: partition, btree-inserts, sort-merge"
            )
        })
    }
}

impl FromStr for MethodArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(MethodArg(None));
        }
        s.parse()
            .map(|m| MethodArg(Some(m)))
            .map_err(|e: lidx::Error| {
                if s.starts_with("inlj:") {
                    e.to_string() // the index kind is what is wrong
                } else {
                    let kinds = IndexKind::ALL.map(IndexKind::name).join(", ");
                    format!("'{s}' is not one of inlj:KIND ({kinds}), merge, hash, grace, auto")
                }
            })
    }
}

/// Join two tables.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  lidx join --outer r.tbl --inner s.tbl --method inlj:sampled-pgm --index s.idx --direct --out rs.tbl\n  lidx join --outer r.tbl --inner s.tbl --method merge --threads 2 --count-only"
)]
pub struct Args {
    /// The outer (smaller) table.
    #[arg(long, value_name = "R.tbl")]
    outer: PathBuf,
    /// The inner table (sorted).
    #[arg(long, value_name = "S.tbl")]
    inner: PathBuf,
    /// inlj:pgm, inlj:sampled-pgm, inlj:rs, inlj:rmi, inlj:btree, inlj:binary, merge, hash,
    /// grace, or auto (the cost model's pick); inlj:alex (through ALEX on disk, whose file
    /// holds the inner table's tuples: `lidx index build --kind alex`); over unsorted
    /// tables, partition (learned partition indexes), btree-inserts (B+trees built by
    /// inserts) or sort-merge (an external merge sort of each, then merge).
    #[arg(long)]
    method: MethodChoice,
    /// Saved unclustered indexes of the outer and inner tables (partition, btree-inserts);
    /// each one absent is built next to the output and removed after, its time reported
    /// apart.
    #[arg(long, value_name = "R.idx")]
    outer_index: Option<PathBuf>,
    /// See --outer-index.
    #[arg(long, value_name = "S.idx")]
    inner_index: Option<PathBuf>,
    /// Storage profile for the cost model (from `lidx bench disk`) [default: an assumed SSD,
    /// labelled as such].
    #[arg(long, value_name = "PROFILE.json")]
    profile: Option<PathBuf>,
    /// A saved index of the inner table (inlj; an ALEX file for inlj:alex); without it one
    /// is built with the kind's defaults, and its build time is reported apart.
    #[arg(long, value_name = "S.idx")]
    index: Option<PathBuf>,
    /// Threads, each joining a contiguous share of the outer table (of the inner for hash);
    /// 1 to 1024.
    #[arg(
        long,
        default_value_t = 1,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_THREADS)
    )]
    threads: usize,
    /// Read the inputs with O_DIRECT (cold reads, as paper 1 measures).
    #[arg(long)]
    direct: bool,
    /// Bytes per sequential read of a scanned table.
    #[arg(long, value_parser = parse_size, default_value = "1MiB")]
    read_size: u64,
    /// Turn off paper 1's monotone-window optimization (inlj).
    #[arg(long)]
    no_monotone: bool,
    /// Turn off paper 1's first optimization, moving along the index's lowest level (inlj):
    /// every key is searched from the root.
    #[arg(long)]
    no_cursor: bool,
    /// Window reads each inlj thread keeps in flight at once (1: one at a time, as paper 1
    /// reads; at most 4096); the output stays in key order.
    #[arg(
        long,
        default_value_t = 1,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_IO_DEPTH)
    )]
    io_depth: usize,
    /// What keeps deep reads in flight: uring (Linux io_uring), threads (anywhere), or auto.
    #[arg(long, default_value = "auto")]
    io_backend: IoBackend,
    /// Drop the inputs' pages from the OS page cache before joining (paper 1 starts cold;
    /// O_DIRECT reads bypass the cache anyway).
    #[arg(long)]
    cold: bool,
    /// Print one JSON object with every figure instead of the report (for scripts and
    /// `lidx experiment`).
    #[arg(long)]
    json: bool,
    /// Output table of (key, outer value, inner value) tuples.
    #[arg(
        long,
        short,
        value_name = "OUT.tbl",
        required_unless_present = "count_only",
        conflicts_with = "count_only"
    )]
    out: Option<PathBuf>,
    /// Count the output instead of writing it.
    #[arg(long)]
    count_only: bool,
    /// Memory the join may hold: the hash table and read buffers of hash, merge and grace
    /// joins. The grace join partitions both tables next to the inner one to stay within
    /// it; hash and merge fail beyond it [default: 256MiB for grace, no limit otherwise].
    #[arg(long, value_parser = parse_size, alias = "memory-limit")]
    memory_budget: Option<u64>,
    /// Run inside this cgroup, made by the user (see `lidx sort`).
    #[arg(long, value_name = "DIR")]
    cgroup: Option<PathBuf>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    let cgroup_limit = crate::limits::enter_cgroup(args.cgroup.as_deref(), args.json)?;
    let method = match args.method {
        MethodChoice::Sorted(m) => m,
        MethodChoice::Alex => return run_alex(ctx, &args),
        MethodChoice::Unsorted(m) => return run_unsorted(ctx, &args, m, cgroup_limit),
    };
    if args.outer_index.is_some() || args.inner_index.is_some() {
        bail!("--outer-index and --inner-index apply to --method partition and btree-inserts");
    }
    if args.index.is_some() && !matches!(method.0, Some(JoinMethod::Inlj(_))) {
        bail!("--index applies to inlj methods only");
    }
    let profile = match &args.profile {
        Some(path) => StorageProfile::load(path)?,
        None => cost::assumed_ssd(),
    };
    let grace = method.0 == Some(JoinMethod::Grace);
    let memory = match (args.memory_budget, grace) {
        (Some(limit), _) => MemoryBudget::new(limit),
        (None, true) => MemoryBudget::new(GRACE_BUDGET),
        (None, false) => MemoryBudget::unlimited(),
    };
    let request = JoinRequest {
        outer: args.outer.clone(),
        inner: args.inner.clone(),
        method: method.0,
        index: args.index.clone(),
        profile,
        threads: args.threads,
        mode: if args.direct {
            ReadMode::Direct
        } else {
            ReadMode::Buffered
        },
        read_size: args.read_size,
        cursor: !args.no_cursor,
        monotone: !args.no_monotone,
        io_depth: args.io_depth,
        io_backend: args.io_backend,
        cold: args.cold,
        output: args.out.clone(),
        memory,
    };
    let plan = driver::plan(&request)?;
    if request.method.is_none() && !args.json {
        let e = plan.estimate();
        say!(
            "auto: the cost model predicts inlj {:.3} s, merge {:.3} s, hash {:.3} s on {}; running {}",
            e.inlj_s,
            e.merge_s,
            e.hash_s,
            request.profile.device,
            plan.method()
        );
    }
    // The JSON object is the only output: no progress either.
    let spinner = Context {
        quiet: ctx.quiet || args.json,
    }
    .spinner("joining");
    let run = plan.run(|stage| spinner.set_message(stage.to_string()));
    spinner.finish_and_clear();
    let run = run.map_err(|e| match e {
        lidx::Error::OverBudget { .. } => anyhow::anyhow!("{e}; raise --memory-budget"),
        e => e.into(),
    })?;
    if args.json {
        let record = JoinRecord {
            peak_rss: lidx::memory::peak_rss(),
            ..run.record
        };
        say!("{}", serde_json::to_string(&record)?);
        return Ok(());
    }
    report(&request, &run)
}

/// `--method partition|btree-inserts|sort-merge`: a join of two unsorted tables through
/// unclustered indexes, or sorted first (`lidx::partition::join`), on one thread.
fn run_unsorted(
    ctx: &Context,
    args: &Args,
    method: UnsortedMethod,
    cgroup_limit: Option<u64>,
) -> anyhow::Result<()> {
    if args.index.is_some() || args.threads != 1 || args.io_depth != 1 {
        bail!(
            "--index, --threads and --io-depth do not apply to --method partition, btree-inserts or sort-merge"
        );
    }
    let ctx = &Context {
        quiet: ctx.quiet || args.json,
    };
    let outer = Table::open(&args.outer)?;
    let inner = Table::open(&args.inner)?;
    let scratch_dir = match &args.out {
        Some(out) => lidx::files::parent_dir(out).to_path_buf(),
        None => lidx::files::parent_dir(&args.inner).to_path_buf(),
    };
    let join = UnsortedJoin {
        outer: &outer,
        inner: &inner,
        method,
        indexes: (args.outer_index.clone(), args.inner_index.clone()),
        scratch_dir,
        budget: MemoryBudget::new(args.memory_budget.unwrap_or(GRACE_BUDGET)),
        mode: if args.direct {
            ReadMode::Direct
        } else {
            ReadMode::Buffered
        },
    };
    let spinner = ctx.spinner("joining");
    let (report, written) = match &args.out {
        Some(out) => {
            let mut writer = TableWriter::create_output(out)?;
            let report = run_unsorted_join(&join, &mut writer)?;
            writer.finish()?;
            (report, Some(out))
        }
        None => (run_unsorted_join(&join, &mut CountSink::default())?, None),
    };
    spinner.finish_and_clear();
    if args.json {
        let tuples = (outer.len(), inner.len());
        let record = UnsortedRecord::join(
            method,
            &report,
            tuples,
            join.budget.limit(),
            join.budget.peak(),
        );
        return crate::limits::say_record(record, cgroup_limit);
    }
    let name = method.name();
    say!(
        "{name} join of {} with {} (unsorted): {} output tuples in {:.3} s, {} reads",
        args.outer.display(),
        args.inner.display(),
        report.stats.output,
        report.join_s,
        if args.direct { "O_DIRECT" } else { "buffered" }
    );
    if method == UnsortedMethod::SortMerge {
        say!(
            "  both tables sorted in {:.3} s (not counted in the join)",
            report.build_s
        );
    } else if args.outer_index.is_none() || args.inner_index.is_none() {
        say!(
            "  indexes built in {:.3} s (not counted in the join)",
            report.build_s
        );
    }
    if report.stats.lookups > 0 {
        say!("  {} lookups of the inner index", report.stats.lookups);
    }
    match method {
        UnsortedMethod::Partition => say!(
            "  partitions read: {} outer, {} inner",
            report.partitions_read.0,
            report.partitions_read.1
        ),
        UnsortedMethod::BTreeInserts => say!(
            "  leaf reads: {} outer, {} inner",
            report.tree_io.0.leaf_reads,
            report.tree_io.1.leaf_reads
        ),
        UnsortedMethod::SortMerge => {}
    }
    say!("  {}", io_line("outer", report.stats.outer_io));
    say!("  {}", io_line("inner", report.stats.inner_io));
    if let Some(out) = written {
        say!("  wrote {}", out.display());
    }
    if let Some(rss) = lidx::memory::peak_rss() {
        say!(
            "  peak memory reserved {} of {}; peak RSS {} ({rss} bytes)",
            human_bytes(join.budget.peak()),
            human_bytes(join.budget.limit()),
            human_bytes(rss)
        );
    }
    Ok(())
}

/// `--method inlj:alex`: the index nested loop join through ALEX on disk, on one thread.
fn run_alex(ctx: &Context, args: &Args) -> anyhow::Result<()> {
    let refused = [
        ("--threads", args.threads != 1),
        ("--io-depth", args.io_depth != 1),
        ("--no-cursor", args.no_cursor),
        ("--no-monotone", args.no_monotone),
        ("--outer-index", args.outer_index.is_some()),
        ("--inner-index", args.inner_index.is_some()),
        ("--memory-budget", args.memory_budget.is_some()),
        ("--profile", args.profile.is_some()),
    ];
    if let Some((flag, _)) = refused.iter().find(|(_, on)| *on) {
        bail!(
            "{flag} does not apply to --method inlj:alex (one thread, one page read at a time, no cost model)"
        );
    }
    let scratch_dir = match &args.out {
        Some(out) => lidx::files::parent_dir(out),
        None => lidx::files::parent_dir(&args.inner),
    };
    let join = AlexJoin {
        outer: &args.outer,
        inner: &args.inner,
        index: args.index.as_deref(),
        scratch_dir,
        mode: if args.direct {
            ReadMode::Direct
        } else {
            ReadMode::Buffered
        },
        read_size: args.read_size,
        cold: args.cold,
        output: args.out.as_deref(),
    };
    let spinner = Context {
        quiet: ctx.quiet || args.json,
    }
    .spinner("joining");
    let record = alex_join::run(&join, |stage| spinner.set_message(stage.to_string()));
    spinner.finish_and_clear();
    let record = JoinRecord {
        peak_rss: lidx::memory::peak_rss(),
        ..record?
    };
    if args.json {
        say!("{}", serde_json::to_string(&record)?);
        return Ok(());
    }
    say_headline(&record, &args.outer, &args.inner, "")?;
    if let Some(b) = record.build_s {
        say!("  ALEX file built in {b:.3} s (not counted in the join), removed after");
    }
    say!(
        "  {} lookups; the inner side is the ALEX file's pages",
        record.lookups
    );
    say!("  {}", io_line("outer", record.outer_io()));
    say!("  {}", io_line("inner", record.inner_io()));
    if let (Some(synced), Some(out)) = (record.fsync_s, &args.out) {
        say!(
            "  wrote {} as the join ran, fsync and rename {synced:.3} s",
            out.display()
        );
    }
    Ok(())
}

/// Runs an unsorted join, naming the limit when it is too small.
fn run_unsorted_join(
    join: &UnsortedJoin<'_>,
    sink: &mut impl lidx::join::JoinSink,
) -> anyhow::Result<UnsortedJoinReport> {
    run_unsorted_with(join, sink).map_err(|e| match e {
        lidx::Error::OverBudget { .. } => anyhow::anyhow!("{e}; raise --memory-limit"),
        e => e.into(),
    })
}

/// The report of a finished join: what ran, its I/O, and the cost model beside it.
fn report(request: &JoinRequest, run: &JoinRun) -> anyhow::Result<()> {
    let (r, e) = (&run.record, &run.estimate);
    let device = &request.profile.device;
    let deep = if r.io_depth > 1 {
        format!(
            ", {} reads in flight per thread ({})",
            r.io_depth, r.io_backend
        )
    } else {
        String::new()
    };
    say_headline(r, &request.outer, &request.inner, &deep)?;
    match (run.method, r.build_s) {
        (JoinMethod::Hash, Some(b)) => say!(
            "  hash table built in {b:.3} s; {:.3} s with the build",
            r.join_s + b
        ),
        (JoinMethod::Inlj(_), Some(b)) => {
            say!("  index built in {b:.3} s (not counted in the join)")
        }
        _ => {}
    }
    if r.lookups > 0 {
        say!("  {} index lookups", r.lookups);
    }
    say!("  {}", io_line("outer", r.outer_io()));
    say!("  {}", io_line("inner", r.inner_io()));
    if let (Some(written), Some(synced), Some(out)) = (r.write_s, r.fsync_s, &request.output) {
        say!(
            "  wrote {} in {written:.3} s, fsync and rename {synced:.3} s",
            out.display()
        );
    }
    if run.method == JoinMethod::Grace {
        say!(
            "  {} spilled to partitions (memory budget {})",
            human_bytes(r.spilled_bytes),
            human_bytes(request.memory.limit())
        );
        say!(
            "  cost model ({device}): {:.3} s predicted for an in-memory hash join, {:.3} s measured",
            r.model_s,
            r.join_s
        );
    } else {
        say!(
            "  cost model ({device}): {:.3} s predicted, {:.3} s measured; |S|/W = {:.0}, inlj breaks even with merge near |R| = {:.0}",
            r.model_s,
            r.join_s,
            e.crossover_outer,
            e.break_even_outer
        );
    }
    Ok(())
}

/// The first line of a join's report: what ran, on what, its output, time and reads.
fn say_headline(r: &JoinRecord, outer: &Path, inner: &Path, deep: &str) -> anyhow::Result<()> {
    say!(
        "{} join of {} with {}: {} output tuples in {:.3} s on {} thread(s), {} reads{deep}",
        r.method,
        outer.display(),
        inner.display(),
        r.output_tuples,
        r.join_s,
        r.threads,
        if r.direct { "O_DIRECT" } else { "buffered" }
    );
    Ok(())
}

fn io_line(label: &str, io: IoStats) -> String {
    format!(
        "{label:<6} {:>10} blocks {:>10} in {:>9} reads",
        io.blocks,
        human_bytes(io.bytes),
        io.reads
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_the_cost_models_pick_and_other_names_are_methods() {
        assert_eq!("auto".parse(), Ok(MethodArg(None)));
        assert_eq!("merge".parse(), Ok(MethodArg(Some(JoinMethod::Merge))));
        let err = "nested".parse::<MethodArg>().unwrap_err();
        assert!(err.contains("merge, hash, grace, auto"), "{err}");
        let err = "inlj:alex".parse::<MethodArg>().unwrap_err();
        assert!(
            err.contains("'alex' is not one of pgm") && !err.contains("auto"),
            "{err}"
        );
    }
}
