//! `lidx join`: join two tables on disk by index nested loop (through any index or ALEX on
//! disk), sort-merge, hash or grace hash (paper 1, sections 3, 4.3 and 5), or two unsorted
//! tables through unclustered indexes (section 4.4), counting every block read. The join
//! itself is `lidx::join::driver`'s, one pipeline for every method; this module parses and
//! prints.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use lidx::index::IndexKind;
use lidx::join::driver::{self, JoinRequest, JoinRun};
use lidx::join::{JoinMethod, JoinRecord};
use lidx::memory::MemoryBudget;
use lidx::partition::UnsortedRecord;
use lidx::storage::profile::StorageProfile;
use lidx::storage::{IoBackend, IoStats, ReadMode};

use crate::progress::Context;
use crate::units::{human_bytes, parse_size};

/// The most threads a join runs on: far more than any machine lidx targets has cores, and
/// few enough that starting them cannot exhaust the system's threads.
const MAX_THREADS: u64 = 1024;

/// The most window reads an inlj thread keeps in flight (the library's cap,
/// [`IoBackend::MAX_DEPTH`]): far beyond the 256 or so that keep an NVMe SSD busy.
const MAX_IO_DEPTH: u64 = IoBackend::MAX_DEPTH as u64;

/// `--method`: a join method, or `auto` for the cost model's pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MethodArg(Option<JoinMethod>);

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
                    format!(
                        "'{s}' is not one of inlj:KIND ({kinds}), inlj:alex, merge, hash, grace, auto, or over unsorted tables partition, btree-inserts, sort-merge"
                    )
                }
            })
    }
}

/// Join two tables.
#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("output").required(true).args(["count_only", "out"]))]
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
    method: MethodArg,
    /// A saved unclustered index of the outer table (partition, btree-inserts); without it
    /// one is built next to the output and removed after, its time reported apart.
    #[arg(long, value_name = "R.idx")]
    outer_index: Option<PathBuf>,
    /// Storage profile for the cost model (from `lidx bench disk`) [default: an assumed SSD,
    /// labelled as such].
    #[arg(long, value_name = "PROFILE.json")]
    profile: Option<PathBuf>,
    /// A saved index of the inner table: of the method's kind (inlj), an ALEX file
    /// (inlj:alex), or the inner table's unclustered index (partition, btree-inserts; also
    /// spelled --inner-index). Without it one is built with the kind's defaults (next to
    /// the output, removed after), and its build time is reported apart.
    #[arg(long, value_name = "S.idx", visible_alias = "inner-index")]
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
    #[arg(long, short, value_name = "OUT.tbl")]
    out: Option<PathBuf>,
    /// Count the output instead of writing it (this or --out).
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
    /// What the unclustered indexes hold (partition, btree-inserts): pointers (positions
    /// into the tables, whose values the join fetches, as paper 1's indexes do) or tuples
    /// (values too). Indexes the join builds hold these; saved ones must [default: pointers,
    /// or what the saved indexes hold].
    #[arg(long, value_name = "pointers|tuples")]
    entries: Option<lidx::partition::Entries>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    // A join without a limit keeps the allocator's defaults (freed memory kept a while for
    // reuse).
    let cgroup_limit = if args.memory_budget.is_some() || args.cgroup.is_some() {
        crate::limits::run_limited(args.cgroup.as_deref(), args.json)?
    } else {
        None
    };
    let request = JoinRequest {
        outer: args.outer.clone(),
        inner: args.inner.clone(),
        method: args.method.0,
        index: args.index.clone(),
        outer_index: args.outer_index.clone(),
        profile: match &args.profile {
            Some(path) => Some(StorageProfile::load(path)?),
            None => None,
        },
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
        memory: args.memory_budget.map(MemoryBudget::new),
        entries: args.entries,
    };
    let plan = driver::plan(&request)?;
    if request.method.is_none() && !args.json {
        let e = plan.estimate();
        say!(
            "auto: the cost model predicts inlj {:.3} s, merge {:.3} s, hash {:.3} s on {}; running {}",
            e.inlj_s,
            e.merge_s,
            e.hash_s,
            plan.profile().device,
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
    let mut run = run.map_err(|e| match e {
        lidx::Error::OverBudget { .. } => anyhow::anyhow!("{e}; raise --memory-budget"),
        e => e.into(),
    })?;
    run.record.peak_rss = lidx::memory::peak_rss();
    let unsorted = JoinMethod::UNSORTED.contains(&run.method);
    match (args.json, unsorted) {
        (true, true) => crate::limits::say_record(UnsortedRecord::join(&run.record), cgroup_limit),
        (true, false) => {
            say!("{}", serde_json::to_string(&run.record)?);
            Ok(())
        }
        (false, true) => report_unsorted(&request, &run),
        (false, false) => report(&request, &run),
    }
}

/// The report of a finished join of sorted tables (or grace, or ALEX): what ran, its I/O,
/// and the cost model beside it.
fn report(request: &JoinRequest, run: &JoinRun) -> anyhow::Result<()> {
    let (r, e) = (&run.record, &run.estimate);
    let device = &run.profile.device;
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
        (JoinMethod::InljAlex, Some(b)) => {
            say!("  ALEX file built in {b:.3} s (not counted in the join), removed after")
        }
        _ => {}
    }
    if run.method == JoinMethod::InljAlex {
        say!(
            "  {} lookups; the inner side is the ALEX file's pages",
            r.lookups
        );
    } else if r.lookups > 0 {
        say!("  {} index lookups", r.lookups);
    }
    say!("  {}", io_line("outer", r.outer_io()));
    say!("  {}", io_line("inner", r.inner_io()));
    match (r.write_s, r.fsync_s, &request.output) {
        (Some(written), Some(synced), Some(out)) => say!(
            "  wrote {} in {written:.3} s, fsync and rename {synced:.3} s",
            out.display()
        ),
        (None, Some(synced), Some(out)) => say!(
            "  wrote {} as the join ran, fsync and rename {synced:.3} s",
            out.display()
        ),
        _ => {}
    }
    match run.method {
        JoinMethod::Grace => {
            say!(
                "  {} spilled to partitions (memory budget {})",
                human_bytes(r.spilled_bytes),
                human_bytes(run.memory.limit())
            );
            say!(
                "  cost model ({device}): {:.3} s predicted for an in-memory hash join, {:.3} s measured",
                r.model_s,
                r.join_s
            );
        }
        JoinMethod::InljAlex => {}
        _ => say!(
            "  cost model ({device}): {:.3} s predicted, {:.3} s measured; |S|/W = {:.0}, inlj breaks even with merge near |R| = {:.0}",
            r.model_s,
            r.join_s,
            e.crossover_outer,
            e.break_even_outer
        ),
    }
    Ok(())
}

/// The report of a finished join of unsorted tables: what ran, what was built or sorted,
/// the partitions or leaves read, its I/O and its memory.
fn report_unsorted(request: &JoinRequest, run: &JoinRun) -> anyhow::Result<()> {
    let r = &run.record;
    let figures = r.unclustered.unwrap_or_default();
    say!(
        "{} join of {} with {} (unsorted): {} output tuples in {:.3} s, {} reads",
        run.method,
        request.outer.display(),
        request.inner.display(),
        r.output_tuples,
        r.join_s,
        if r.direct { "O_DIRECT" } else { "buffered" }
    );
    match (run.method, r.build_s) {
        (JoinMethod::SortMerge, Some(b)) => {
            say!("  both tables sorted in {b:.3} s (not counted in the join)")
        }
        (_, Some(b)) => say!("  indexes built in {b:.3} s (not counted in the join)"),
        _ => {}
    }
    if r.lookups > 0 {
        say!("  {} lookups of the inner index", r.lookups);
    }
    match run.method {
        JoinMethod::Partition => say!(
            "  partitions read: {} outer, {} inner",
            figures.partitions_read.0,
            figures.partitions_read.1
        ),
        JoinMethod::BTreeInserts => say!(
            "  leaf reads: {} outer, {} inner",
            figures.tree_io.0.leaf_reads,
            figures.tree_io.1.leaf_reads
        ),
        _ => {}
    }
    say!("  {}", io_line("outer", r.outer_io()));
    say!("  {}", io_line("inner", r.inner_io()));
    if let Some(out) = &request.output {
        say!("  wrote {}", out.display());
    }
    if let Some(rss) = r.peak_rss {
        say!(
            "  peak memory reserved {} of {}; peak RSS {} ({rss} bytes)",
            human_bytes(run.memory.peak()),
            human_bytes(run.memory.limit()),
            human_bytes(rss)
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
        assert!(
            err.contains("partition, btree-inserts, sort-merge"),
            "{err}"
        );
        assert_eq!(
            "inlj:alex".parse(),
            Ok(MethodArg(Some(JoinMethod::InljAlex)))
        );
        assert_eq!(
            "sort-merge".parse(),
            Ok(MethodArg(Some(JoinMethod::SortMerge)))
        );
        let err = "inlj:art".parse::<MethodArg>().unwrap_err();
        assert!(
            err.contains("'art' is not one of pgm") && !err.contains("auto"),
            "{err}"
        );
    }
}
