//! `lidx sort`: a sorted copy of an unsorted table, within a memory limit (paper 1, section
//! 5.4's sort-then-merge route for unsorted tables).

use std::path::PathBuf;
use std::time::Instant;

use lidx::memory::MemoryBudget;
use lidx::partition::sort::{btree_sort, learned_sort};
use lidx::partition::{PartitionParams, UnsortedRecord};
use lidx::sort::{SortOptions, SortPhase, min_sort_memory, sort_table};
use lidx::storage::{ReadMode, Table};

use crate::progress::Context;
use crate::units::{human_bytes, parse_size};

/// Sort a table by key into a new one; equal keys keep their input order.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  lidx table shuffle --table lognormal.tbl --out u.tbl\n  lidx sort --table u.tbl --memory-limit 64MiB --out sorted.tbl"
)]
pub struct Args {
    /// The table to sort.
    #[arg(long, value_name = "FILE.tbl")]
    table: PathBuf,
    /// How to sort: external = sorted runs as large as the limit allows, then k-way merges
    /// in large sequential reads; learned = a learned partition index (a PGM on a 1% sample
    /// cuts the table into page-sized key ranges), then each partition sorted in memory;
    /// btree-inserts = a B+tree built by inserting every key, then read in order, each
    /// tuple fetched through its position. All three are stable and write the same table.
    #[arg(long, value_enum, default_value = "external")]
    method: Method,
    /// Memory the sort may hold at once (input chunk, run buffer, merge buffers, output
    /// buffer).
    #[arg(long, value_parser = parse_size, default_value = "256MiB", value_name = "SIZE")]
    memory_limit: u64,
    /// Directory for the scratch runs, unnamed files that vanish with the process (default:
    /// the output's directory).
    #[arg(long, value_name = "DIR")]
    scratch_dir: Option<PathBuf>,
    /// Run inside this cgroup, made by the user (v2 `memory.max` or v1
    /// `memory.limit_in_bytes` bounds the whole process; the command never creates one:
    /// `lidx experiment unsorted` makes its own).
    #[arg(long, value_name = "DIR")]
    cgroup: Option<PathBuf>,
    /// Output table.
    #[arg(long, short, value_name = "FILE.tbl")]
    out: PathBuf,
    /// Print one JSON object with every figure of the run (its fields are
    /// `lidx::partition::UnsortedRecord`'s), and nothing else.
    #[arg(long)]
    json: bool,
}

/// Sorting methods.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Method {
    /// External merge sort.
    External,
    /// Learned partitioning, then each partition sorted.
    Learned,
    /// A B+tree built by inserts, read in order.
    BtreeInserts,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    let cgroup_limit = crate::limits::run_limited(args.cgroup.as_deref(), args.json)?;
    let ctx = &Context {
        quiet: ctx.quiet || args.json,
    };
    let table = Table::open(&args.table)?;
    match args.method {
        Method::External => {}
        Method::Learned | Method::BtreeInserts => {
            return by_index(ctx, &args, &table, cgroup_limit);
        }
    }
    if args.memory_limit < min_sort_memory() {
        anyhow::bail!(
            "--memory-limit {} is too small to sort: the smallest that works is {} ({} bytes)",
            human_bytes(args.memory_limit),
            human_bytes(min_sort_memory()),
            min_sort_memory()
        );
    }
    let options = SortOptions {
        scratch_dir: args
            .scratch_dir
            .unwrap_or_else(|| lidx::files::parent_dir(&args.out).to_path_buf()),
        budget: MemoryBudget::new(args.memory_limit),
    };
    let started = Instant::now();
    let mut bar = ctx.bar(table.len(), "forming runs", "tuples");
    let mut phase = SortPhase::Runs;
    let report = sort_table(&table, &args.out, &options, |p, done| {
        if p != phase {
            bar.finish_and_clear();
            bar = ctx.bar(table.len(), "merging", "tuples");
            phase = p;
        }
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    if args.json {
        let record = UnsortedRecord::external_sort(&report, args.memory_limit, secs);
        return crate::limits::say_record(record, cgroup_limit);
    }
    say!(
        "sorted {} tuples of {} into {} in {secs:.2} s (external merge sort)",
        report.records,
        args.table.display(),
        args.out.display()
    );
    say!(
        "  {} run(s) of up to {} tuples, {} merge pass(es), at most {} runs merged at once",
        report.runs,
        report.run_records,
        report.merge_passes,
        report.fan_in.max(1)
    );
    say!(
        "  read {} in {} calls, wrote {} (runs and output); peak memory reserved {} of {}",
        human_bytes(report.bytes_read),
        report.read_calls,
        human_bytes(report.bytes_written),
        human_bytes(report.peak_reserved),
        human_bytes(args.memory_limit)
    );
    say_peak_rss()?;
    Ok(())
}

/// `--method learned` and `--method btree-inserts`.
fn by_index(
    ctx: &Context,
    args: &Args,
    table: &Table,
    cgroup_limit: Option<u64>,
) -> anyhow::Result<()> {
    let scratch = args
        .scratch_dir
        .clone()
        .unwrap_or_else(|| lidx::files::parent_dir(&args.out).to_path_buf());
    let budget = MemoryBudget::new(args.memory_limit);
    let bar = ctx.bar(2 * table.len(), "sorting", "tuples");
    let (report, method, how) = match args.method {
        Method::Learned => (
            learned_sort(
                table,
                &args.out,
                &PartitionParams::default(),
                &scratch,
                &budget,
                |done| bar.set_position(done),
            )?,
            "learned",
            "learned partitioning, then each partition sorted",
        ),
        _ => (
            btree_sort(
                table,
                &args.out,
                &scratch,
                &budget,
                ReadMode::Buffered,
                |done| bar.set_position(done),
            )?,
            "btree-inserts",
            "a B+tree built by inserts, read in order",
        ),
    };
    bar.finish_and_clear();
    if args.json {
        let record = UnsortedRecord::index_sort(method, &report, args.memory_limit, budget.peak());
        return crate::limits::say_record(record, cgroup_limit);
    }
    say!(
        "sorted {} tuples of {} into {} in {:.2} s ({how})",
        report.tuples,
        args.table.display(),
        args.out.display(),
        report.seconds.0 + report.seconds.1
    );
    say!(
        "  partitioned (or index built) in {:.2} s, writing {}; sorted table written in {:.2} s; read {} in all",
        report.seconds.0,
        human_bytes(report.bytes_written.0),
        report.seconds.1,
        human_bytes(report.bytes_read),
    );
    if report.spilled_partitions > 0 {
        say!(
            "  {} partition(s) too large for memory sorted on disk by the external merge sort",
            report.spilled_partitions
        );
    }
    say!(
        "  peak memory reserved {} of {}",
        human_bytes(budget.peak()),
        human_bytes(args.memory_limit)
    );
    say_peak_rss()
}

/// Prints the process's peak RSS, in bytes, for scripts (and a test) to check the limit by.
fn say_peak_rss() -> anyhow::Result<()> {
    if let Some(rss) = lidx::memory::peak_rss() {
        say!("  peak RSS {} ({rss} bytes)", human_bytes(rss));
    }
    Ok(())
}
