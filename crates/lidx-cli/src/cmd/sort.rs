//! `lidx sort`: a sorted copy of an unsorted table, within a memory limit (paper 1, section
//! 5.4's sort-then-merge route for unsorted tables).

use std::path::PathBuf;
use std::time::Instant;

use lidx::memory::MemoryBudget;
use lidx::sort::{SortOptions, SortPhase, min_sort_memory, sort_table};
use lidx::storage::Table;

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
    /// in large sequential reads.
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
    /// Output table.
    #[arg(long, short, value_name = "FILE.tbl")]
    out: PathBuf,
}

/// Sorting methods.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Method {
    /// External merge sort.
    External,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    let Method::External = args.method;
    let table = Table::open(&args.table)?;
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
    say!(
        "sorted {} tuples of {} into {} in {secs:.2} s (external merge sort)",
        report.tuples,
        args.table.display(),
        args.out.display()
    );
    say!(
        "  {} run(s) of up to {} tuples, {} merge pass(es), at most {} runs merged at once",
        report.runs,
        report.run_tuples,
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
    Ok(())
}
