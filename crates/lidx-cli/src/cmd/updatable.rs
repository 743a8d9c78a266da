//! `lidx updatable run`: one updatable index on one of paper 3's workloads (GRE), reporting
//! throughput, mean and tail latency, size and where the work went.

use std::path::PathBuf;

use lidx::data::{Distribution, GenParams, KeyFile, generate};
use lidx::updatable::{Kind, Workload};
use lidx_bench::updatable::baselines::ConcurrentKind;
use lidx_bench::updatable::threads::{MAX_THREADS, ThreadOptions, run_threads};
use lidx_bench::updatable::{PlanOptions, RunOptions, Tail, make_plan, run_plan};

use crate::units::{human_bytes, parse_count};

/// The longest scan of the scan workload: a million entries (paper 3 scans 100).
const MAX_SCAN_LEN: u64 = 1_000_000;

/// Updatable learned indexes (paper 3).
#[derive(clap::Subcommand)]
pub enum Command {
    /// Run a workload against one index kind.
    #[command(
        after_help = "Examples:\n  lidx updatable run --kind dynamic-pgm --workload balanced --dist lognormal --n 1M\n  lidx updatable run --kind btree --workload read-only --keys books_200M_uint64 --ops 10M --json\n  lidx updatable run --kind dynamic-pgm --workload write-only --dist clustered --n 100K --verify"
    )]
    Run(RunArgs),
}

/// Arguments of `updatable run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The index: dynamic-pgm, alex, lipp, btree, art or btreemap; with --threads, a
    /// concurrent kind: alex+, lipp+, finedex, art-olc, btree-olc, scc-tree or locked-btreemap.
    #[arg(long)]
    kind: String,
    /// Run the operations on this many threads (1 to 1024) with a concurrent kind, as
    /// paper 3's multi-threaded runs do (section 4.2); without it, one thread and a
    /// single-threaded kind.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_THREADS as u64))]
    threads: Option<usize>,
    /// read-only, read-intensive, balanced, write-heavy, write-only, delete-intensive,
    /// delete-balanced, delete-heavy, delete-only (Fig. 7), scan, ycsb-a, ycsb-b, ycsb-c
    /// (paper 3, section 3.3), duplicates (every key repeated 2
    /// times on average, as in a wiki-like set, then balanced: App. B), or shift
    /// (bulk-load these keys, insert --insert-keys or --insert-dist: section 6.2).
    #[arg(long)]
    workload: Workload,
    /// A sorted SOSD key file (duplicates allowed).
    #[arg(long, value_name = "FILE", conflicts_with = "dist")]
    keys: Option<PathBuf>,
    /// Or a synthetic key set of this distribution.
    #[arg(long, required_unless_present = "keys")]
    dist: Option<Distribution>,
    /// Keys of the synthetic set.
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    n: u64,
    /// The shift workload: a sorted SOSD key file to insert (paper 3, section 6.2).
    #[arg(long, value_name = "FILE", conflicts_with = "insert_dist")]
    insert_keys: Option<PathBuf>,
    /// The shift workload: or a synthetic set of this distribution (--n keys, another seed).
    #[arg(long)]
    insert_dist: Option<Distribution>,
    /// At most this many operations after the bulk load [default: the workload's own].
    #[arg(long, value_parser = parse_count)]
    ops: Option<u64>,
    /// Entries per scan (the scan workload); 1 to 1000000.
    #[arg(
        long,
        default_value_t = 100,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_SCAN_LEN)
    )]
    scan_len: usize,
    /// With --kind alex: build its data nodes this full instead of 0.7 (above 0 and below
    /// 0.875), the other densities scaled alike: paper 3's ALEX-M (Fig. 9) at 0.2-0.25.
    #[arg(long, value_name = "D", conflicts_with = "threads")]
    alex_density: Option<f64>,
    /// Time every insert's phases (search, collision, statistics, SMO: paper 3, Fig. 3);
    /// the clock's reads slow the run.
    #[arg(long, conflicts_with = "threads")]
    time_phases: bool,
    /// Seed of the keys and the workload.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Check every answer against a BTreeMap; exit non-zero at the first difference.
    #[arg(long)]
    verify: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Also write the bulk load and the operations to FILE (format: `Plan::write`), for
    /// a program outside lidx to replay the very same run.
    #[arg(long, value_name = "FILE")]
    plan_out: Option<PathBuf>,
}

/// The keys of a sorted SOSD file (duplicates allowed).
fn sorted_keys(path: &std::path::Path) -> anyhow::Result<Vec<u64>> {
    let file = KeyFile::open(path)?;
    file.require_sorted("a workload bulk-loads sorted keys")?;
    Ok(file.keys().to_vec())
}

pub fn run(command: Command) -> anyhow::Result<()> {
    let Command::Run(a) = command;
    let n = usize::try_from(a.n).map_err(|_| anyhow::anyhow!("--n {} is too large", a.n))?;
    let keys = match (&a.keys, a.dist) {
        (Some(path), _) => sorted_keys(path)?,
        (None, Some(dist)) => generate(&GenParams::new(dist, n, a.seed))?,
        (None, None) => anyhow::bail!("give --keys FILE or --dist D"),
    };
    let shift_to = match (&a.insert_keys, a.insert_dist) {
        (Some(path), _) => Some(sorted_keys(path)?),
        (None, Some(dist)) => Some(generate(&GenParams::new(dist, n, a.seed ^ 0x5eed))?),
        (None, None) => None,
    };
    if shift_to.is_some() != (a.workload == Workload::Shift) {
        anyhow::bail!("--insert-keys or --insert-dist go with --workload shift, and it needs one");
    }
    let ops = a
        .ops
        .map(|o| usize::try_from(o).map_err(|_| anyhow::anyhow!("--ops {o} is too large")))
        .transpose()?;
    if let Some(threads) = a.threads {
        let kind: ConcurrentKind = a.kind.parse()?;
        return run_threaded(&a, kind, threads, &keys, shift_to.as_deref(), ops);
    }
    let kind: Kind = a.kind.parse()?;
    let options = RunOptions {
        kind,
        workload: a.workload,
        ops,
        scan_len: a.scan_len,
        seed: a.seed,
        verify: a.verify,
        sample_every: 100,
        alex_density: a.alex_density,
        time_phases: a.time_phases,
    };
    if let Some(d) = a.alex_density {
        if kind != Kind::Alex {
            anyhow::bail!("--alex-density goes with --kind alex");
        }
        lidx::updatable::AlexParams::with_density(d)
            .check()
            .map_err(|e| anyhow::anyhow!("--alex-density {d}: {e}"))?;
    }
    let plan = make_plan(&keys, shift_to.as_deref(), &(&options).into())?;
    if let Some(path) = &a.plan_out {
        plan.write(path)?;
    }
    let r = run_plan(&plan, keys.len(), &options)?;
    if a.json {
        say!("{}", serde_json::to_string(&r)?);
        return Ok(());
    }
    let [gets, inserts, removes, scans] = r.mix;
    say!(
        "{} on {} ({} keys): bulk load of {} in {:.3} s, then {} lookups, {} inserts, {} removals, {} scans",
        r.kind,
        r.workload,
        r.keys,
        r.bulk_loaded,
        r.bulk_load_s,
        gets,
        inserts,
        removes,
        scans
    );
    say!(
        "throughput: {:.0} ops/s; mean {:.0} ns; sampled 1% ({}): p50 {} ns, p99 {} ns, p99.9 {} ns",
        r.ops_per_s,
        r.mean_ns,
        r.sampled,
        r.p50_ns,
        r.p99_ns,
        r.p999_ns
    );
    say_tails(r.lookup_tail, r.insert_tail)?;
    let c = r.counters;
    let held = r.measured_bytes.map_or(String::new(), |b| {
        format!(" ({} held, by the allocator)", human_bytes(b))
    });
    say!(
        "size: {}{held}; nodes traversed {}, keys shifted {}, nodes created {}, structure modifications {}",
        human_bytes(r.size_bytes),
        c.nodes_traversed,
        c.keys_shifted,
        c.nodes_created,
        c.structure_modifications
    );
    if let Some(p) = r.phases {
        say!(
            "insert phases (ns per insert, {} inserts, less {:.0} ns a lap of the clock): search {:.0}, collision {:.0}, statistics {:.0}, smo {:.0}, undivided {:.0}",
            p.inserts,
            p.lap_cost_ns,
            p.search_ns,
            p.collision_ns,
            p.statistics_ns,
            p.smo_ns,
            p.undivided_ns
        );
    }
    say!(
        "answers: {} lookups found their key; checksum {}",
        r.found,
        r.checksum
    );
    if r.verified {
        say!("verified: every answer equals a BTreeMap's (the throughput includes the checks)");
    }
    Ok(())
}

/// `updatable run --threads N`: the plan on `threads` threads of a concurrent kind.
fn run_threaded(
    a: &RunArgs,
    kind: ConcurrentKind,
    threads: usize,
    keys: &[u64],
    shift_to: Option<&[u64]>,
    ops: Option<usize>,
) -> anyhow::Result<()> {
    // The plan is the single-threaded one's, so both runs do the same operations.
    let plan_options = PlanOptions {
        workload: a.workload,
        ops,
        scan_len: a.scan_len,
        seed: a.seed,
    };
    let plan = make_plan(keys, shift_to, &plan_options)?;
    if let Some(path) = &a.plan_out {
        plan.write(path)?;
    }
    let o = ThreadOptions {
        kind,
        threads,
        verify: a.verify,
        sample_every: 100,
    };
    let r = run_threads(&plan, &o)?;
    if a.json {
        say!("{}", serde_json::to_string(&r)?);
        return Ok(());
    }
    let [gets, inserts, removes, scans] = r.mix;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    say!(
        "{} on {} ({} keys), {} threads on {} cores{}: bulk load of {} in {:.3} s, then {} lookups, {} inserts, {} removals, {} scans",
        r.kind,
        a.workload,
        keys.len(),
        r.threads,
        cores,
        if r.threads > cores {
            " (oversubscribed)"
        } else {
            ""
        },
        r.bulk_loaded,
        r.bulk_load_s,
        gets,
        inserts,
        removes,
        scans
    );
    say!(
        "throughput: {:.0} ops/s over {:.3} s",
        r.ops_per_s,
        r.seconds
    );
    say_tails(r.lookup_tail, r.insert_tail)?;
    for (i, t) in r.per_thread.iter().enumerate() {
        say!(
            "  thread {i}: {} operations in {:.3} s; lookups p99 {} ns, inserts p99 {} ns",
            t.ops,
            t.seconds,
            t.lookup_tail.p99_ns,
            t.insert_tail.p99_ns
        );
    }
    let size = r.measured_bytes.map_or_else(
        || format!("{} as the index reports it", human_bytes(r.size_bytes)),
        |b| format!("{} held (allocator)", human_bytes(b)),
    );
    say!("size: {size}; {} lookups found their key", r.found);
    if r.verified {
        say!(
            "verified: every answer is one the plan allows and the end state holds every key it should (the throughput includes the checks)"
        );
    }
    Ok(())
}

/// The sampled lookups' and inserts' latencies, where there are any.
fn say_tails(lookups: Tail, inserts: Tail) -> anyhow::Result<()> {
    for (what, t) in [("lookups", lookups), ("inserts", inserts)] {
        if t.sampled > 0 {
            say!(
                "  {what} timed alone ({}): p50 {} ns, p99 {} ns, p99.9 {} ns",
                t.sampled,
                t.p50_ns,
                t.p99_ns,
                t.p999_ns
            );
        }
    }
    Ok(())
}
