//! `lidx index build|info|verify|bench`: the index family of paper 1, sections 2.2, 4.2
//! and 5.2.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::bail;
use lidx::files::refuse_same_file;
use lidx::index::file::{self, FileKind, KeysFingerprint, VerifyReport};
use lidx::index::measure::Queries;
use lidx::index::{AnyIndex, AnyParams, Index, IndexKind, RootKind, tune};
use lidx::memory::MemoryBudget;
use lidx::partition::btree::{self, InsertedBTree};
use lidx::partition::{self, Entries, PartitionFile, PartitionParams, UnsortedRecord};
use lidx::storage::{TUPLE_SIZE, Table};
use lidx::updatable::alex::{self, AlexFile, AlexParams};

use crate::progress::Context;
use crate::units::{human_bytes, parse_count, parse_size};

/// Indexes over sorted tables.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Build an index over a sorted table and save it.
    #[command(
        after_help = "Examples:\n  lidx index build --table books.tbl --kind sampled-pgm --out books.idx\n  lidx index build --table books.tbl --kind pgm --epsilon 64 --max-height 1 --out flat.idx\n  lidx index build --table books.tbl --kind rs --tune --out books.rs.idx"
    )]
    Build(BuildArgs),
    /// Print what an index file holds; with --table, check it was built for that table.
    Info {
        /// The index file.
        #[arg(value_name = "FILE.idx")]
        index: PathBuf,
        /// A table to check the index against.
        #[arg(long, value_name = "FILE.tbl")]
        table: Option<PathBuf>,
    },
    /// Read a whole index file of any kind and check every checksum and invariant of its
    /// format; with --table, also that it finds every tuple of that table where it is.
    #[command(
        after_help = "Examples:\n  lidx index verify books.idx --table books.tbl\n  lidx index verify u.pidx"
    )]
    Verify {
        /// The index file: .idx (any kind), .alex, .pidx or .bti.
        #[arg(value_name = "FILE")]
        index: PathBuf,
        /// The table it was built from: every key of it is looked up through the index
        /// (learned kinds: every key must lie in its window).
        #[arg(long, value_name = "FILE.tbl")]
        table: Option<PathBuf>,
    },
    /// Measure every kind on a table: build time, size, lookups in memory and on disk,
    /// windows, and a sweep of window sizes; prints a table, writes CSV and PNG plots.
    #[command(after_help = "Example:\n  lidx index bench --table lognormal.tbl --out-dir bench/")]
    Bench(BenchArgs),
}

/// What `--kind` names: a kind of the index family (over a sorted table), ALEX on disk
/// (over a sorted table), or one of the unclustered kinds over an unsorted table (paper 1,
/// section 4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A kind of the index family.
    Sorted(IndexKind),
    /// ALEX on disk: the table's tuples in the data nodes of a file (paper 1, Fig. 5).
    Alex,
    /// The learned partition index.
    Partition,
    /// The B+tree built by inserts.
    BTreeInserts,
}

impl std::str::FromStr for Kind {
    type Err = String;

    fn from_str(s: &str) -> Result<Kind, String> {
        match s {
            "partition" => Ok(Kind::Partition),
            "btree-inserts" => Ok(Kind::BTreeInserts),
            "alex" => Ok(Kind::Alex),
            _ => s.parse::<IndexKind>().map(Kind::Sorted).map_err(|e| {
                format!(
                    "{e}; also alex (ALEX on disk); over unsorted tables: partition, btree-inserts"
                )
            }),
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Sorted(k) => k.fmt(f),
            Kind::Alex => f.write_str("alex"),
            Kind::Partition => f.write_str("partition"),
            Kind::BTreeInserts => f.write_str("btree-inserts"),
        }
    }
}

/// Which kind, with its parameters (each defaults to the kind's 256-position setting).
#[derive(clap::Args, Clone)]
pub struct KindArgs {
    /// Index kind: pgm, sampled-pgm, rs, rmi, btree or binary over a sorted table, or alex
    /// (ALEX on disk: a file of its data nodes holding the table's tuples); partition
    /// (learned partitioning) or btree-inserts over an unsorted one.
    #[arg(long)]
    kind: Kind,
    /// Error bound in positions (pgm: 127; sampled-pgm: ε′ over the samples, 1; rs: 127).
    #[arg(long)]
    epsilon: Option<u64>,
    /// Error bound of the upper PGM levels (pgm, sampled-pgm).
    #[arg(long)]
    epsilon_rec: Option<u64>,
    /// Most PGM levels; 1 = flat, as paper 1 builds it (pgm, sampled-pgm; default 1).
    #[arg(long)]
    max_height: Option<u32>,
    /// Index every k-th key (sampled-pgm: 64; btree: 256).
    #[arg(long)]
    every: Option<u64>,
    /// Radix table bits (rs: 18).
    #[arg(long)]
    radix_bits: Option<u32>,
    /// RMI root model: linear, cubic or radix.
    #[arg(long)]
    root: Option<RootKind>,
    /// RMI leaves (2^16 by default; 256, 64K, 4M, ...).
    #[arg(long, value_parser = parse_count)]
    branching: Option<u64>,
    /// Hybrid RMI: leaves whose window could exceed this many positions keep every
    /// W-th key instead (256 = the 256-position setting; default 0, a plain RMI).
    #[arg(long, value_name = "W")]
    max_window: Option<u64>,
}

impl KindArgs {
    /// The parameters: the kind's defaults with the given flags applied; a flag that does
    /// not apply to the kind is an error.
    fn params(&self, kind: IndexKind) -> anyhow::Result<AnyParams> {
        let given = [
            ("epsilon", self.epsilon.as_ref().map(ToString::to_string)),
            (
                "epsilon_rec",
                self.epsilon_rec.as_ref().map(ToString::to_string),
            ),
            (
                "max_height",
                self.max_height.as_ref().map(ToString::to_string),
            ),
            ("every", self.every.as_ref().map(ToString::to_string)),
            (
                "radix_bits",
                self.radix_bits.as_ref().map(ToString::to_string),
            ),
            ("root", self.root.as_ref().map(ToString::to_string)),
            (
                "branching",
                self.branching.as_ref().map(ToString::to_string),
            ),
            (
                "max_window",
                self.max_window.as_ref().map(ToString::to_string),
            ),
        ];
        let mut params = AnyParams::default_for(kind);
        for (name, value) in given {
            let Some(value) = value else { continue };
            if !AnyParams::names(kind).contains(&name) {
                bail!(
                    "--{} does not apply to --kind {}",
                    name.replace('_', "-"),
                    self.kind
                );
            }
            params.set(name, &value)?;
        }
        Ok(params)
    }
}

/// Arguments of `index build`.
#[derive(clap::Args)]
pub struct BuildArgs {
    /// The sorted table to index.
    #[arg(long, value_name = "FILE.tbl")]
    table: PathBuf,
    #[command(flatten)]
    kind: KindArgs,
    /// Tune on the data (rs: radix bits 16..28 at --epsilon; rmi: root and 2^8..2^22 leaves),
    /// print the size/lookup-time Pareto front and keep the fastest front configuration
    /// within --size-budget.
    #[arg(long)]
    tune: bool,
    /// Largest index the tuner may pick [default: 1% of the table's data].
    #[arg(long, value_parser = parse_size, requires = "tune")]
    size_budget: Option<u64>,
    /// Threads for the PGM's bottom level (pgm, sampled-pgm), cut into one chunk per thread
    /// as the C++ PGM-index does; each cut may add a segment [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// Memory the build may hold (partition, btree-inserts): sample, write buffers and
    /// model, or the B+tree's buffer pool.
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    memory_limit: Option<u64>,
    /// Run inside this cgroup, made by the user (partition, btree-inserts; see `lidx sort`).
    #[arg(long, value_name = "DIR")]
    cgroup: Option<PathBuf>,
    /// What the index holds for each tuple besides its key (partition, btree-inserts):
    /// pointers (its position in the table, as paper 1's indexes do: a join fetches values
    /// from the table) or tuples (its value too: a clustered copy) [default: pointers].
    #[arg(long, value_name = "pointers|tuples")]
    entries: Option<Entries>,
    /// Print one JSON object with every figure of the build (partition, btree-inserts; its
    /// fields are `lidx::partition::UnsortedRecord`'s), and nothing else.
    #[arg(long)]
    json: bool,
    /// Output index file.
    #[arg(long, short, value_name = "FILE.idx")]
    out: PathBuf,
}

impl BuildArgs {
    /// Fails naming the first flag given that is not in `takes`, where the kind (one of
    /// those with flags of their own: alex and the unclustered kinds) has no use for it.
    fn refuse_flags_but(&self, takes: &[&str]) -> anyhow::Result<()> {
        let k = &self.kind;
        let given = [
            ("--epsilon", k.epsilon.is_some()),
            ("--epsilon-rec", k.epsilon_rec.is_some()),
            ("--max-height", k.max_height.is_some()),
            ("--every", k.every.is_some()),
            ("--radix-bits", k.radix_bits.is_some()),
            ("--root", k.root.is_some()),
            ("--branching", k.branching.is_some()),
            ("--max-window", k.max_window.is_some()),
            ("--tune", self.tune),
            ("--threads", self.threads.is_some()),
            ("--memory-limit", self.memory_limit.is_some()),
            ("--cgroup", self.cgroup.is_some()),
            ("--entries", self.entries.is_some()),
            ("--json", self.json),
        ];
        match given.iter().find(|(flag, on)| *on && !takes.contains(flag)) {
            Some((flag, _)) => bail!("{flag} does not apply to --kind {}", k.kind),
            None => Ok(()),
        }
    }
}

/// Opens a sorted table and loads its keys.
fn sorted_keys(
    ctx: &Context,
    path: &Path,
    what: &'static str,
) -> anyhow::Result<(Table, Vec<u64>)> {
    let table = Table::open(path)?;
    table.require_sorted(what)?;
    if table.is_empty() {
        bail!(
            "{}: the table holds no tuples; there is nothing to index",
            path.display()
        );
    }
    let bar = ctx.spinner(&format!("loading {} keys", table.len()));
    let keys = table.read_keys()?;
    bar.finish_and_clear();
    Ok((table, keys))
}

fn build(ctx: &Context, args: BuildArgs) -> anyhow::Result<()> {
    refuse_same_file(&args.table, &args.out)?;
    let kind = match args.kind.kind {
        Kind::Sorted(kind) => kind,
        Kind::Alex => return build_alex(ctx, &args),
        unclustered => return build_unclustered(ctx, &args, unclustered),
    };
    if args.memory_limit.is_some() || args.cgroup.is_some() || args.json || args.entries.is_some() {
        bail!(
            "--memory-limit, --cgroup, --entries and --json apply to --kind partition and --kind btree-inserts"
        );
    }
    let params = args.kind.params(kind)?;
    let (table, keys) = sorted_keys(ctx, &args.table, "building an index")?;
    let data_bytes = table.len() * TUPLE_SIZE as u64;
    let started = Instant::now();
    let index = if args.tune {
        if !matches!(kind, IndexKind::RadixSpline | IndexKind::Rmi) {
            bail!("--tune applies to --kind rs and --kind rmi");
        }
        let k = &args.kind;
        let tuned_flags = [
            ("--radix-bits", k.radix_bits.is_some()),
            ("--root", k.root.is_some()),
            ("--branching", k.branching.is_some()),
            ("--max-window", k.max_window.is_some()),
        ];
        if let Some((flag, _)) = tuned_flags.iter().find(|(_, on)| *on) {
            bail!("{flag} is what --tune chooses; give one or the other");
        }
        let epsilon = match params {
            AnyParams::RadixSpline(p) => p.epsilon,
            _ => 0,
        };
        let budget = args.size_budget.unwrap_or(data_bytes / 100);
        let existing = Queries::draw(&keys, 100_000, 7).existing;
        let grid = tune::grid(kind, epsilon).len() as u64;
        let bar = ctx.bar(grid, "tuning", "configurations");
        let (index, trials) = tune::tune(kind, &keys, &existing, epsilon, budget, |_| bar.inc(1))?;
        bar.finish_and_clear();
        say!(
            "size/lookup-time trials ({} within budget {}), * = Pareto front, > = chosen:",
            kind,
            human_bytes(budget)
        );
        say!(
            "  {:<34} {:>12} {:>10} {:>10} {:>9}",
            "parameters",
            "size",
            "lookup ns",
            "max width",
            "build s"
        );
        let chosen = index.describe();
        for t in &trials {
            let mark = match (t.params == chosen, t.pareto) {
                (true, _) => ">",
                (false, true) => "*",
                _ => " ",
            };
            say!(
                "{mark} {:<34} {:>12} {:>10.1} {:>10} {:>9.2}",
                t.params,
                human_bytes(t.size_bytes),
                t.lookup_ns,
                t.max_width,
                t.build_seconds
            );
        }
        index
    } else {
        let bar = ctx.spinner(&format!("building {kind}"));
        let threads = match args.threads {
            Some(t) => t as usize,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let index = AnyIndex::build_on(&keys, &params, threads)?;
        bar.finish_and_clear();
        index
    };
    let seconds = started.elapsed().as_secs_f64();
    file::save(&args.out, &index, &KeysFingerprint::of(&keys))?;
    say!(
        "built {} {} over {} keys in {:.2} s{} ({:.1} M keys/s): {} ({:.3}% of the table's data), windows of at most {} positions; saved to {}",
        index.kind(),
        index.describe(),
        keys.len(),
        seconds,
        if args.tune { " with tuning" } else { "" },
        keys.len() as f64 / seconds / 1e6,
        human_bytes(index.size_in_bytes()),
        100.0 * index.size_in_bytes() as f64 / data_bytes as f64,
        index.max_width(),
        args.out.display()
    );
    Ok(())
}

/// `index build --kind alex`: ALEX's data nodes, holding the table's tuples, in a file; its
/// inner nodes and node descriptors are what `lidx join --method inlj:alex` loads.
fn build_alex(ctx: &Context, args: &BuildArgs) -> anyhow::Result<()> {
    args.refuse_flags_but(&[])?;
    let (table, keys) = sorted_keys(ctx, &args.table, "building an ALEX file")?;
    let n = table.len();
    let bar = ctx.bar(n, "choosing nodes, then placing", "tuples");
    let report = alex::file::build(&table, &keys, &args.out, &AlexParams::default(), |done| {
        bar.set_position(done)
    })?;
    bar.finish_and_clear();
    let data_bytes = n * TUPLE_SIZE as u64;
    say!(
        "built ALEX over {n} tuples in {:.2} s (choosing nodes {:.2} s, writing {:.2} s); saved to {}",
        report.plan_s + report.write_s,
        report.plan_s,
        report.write_s,
        args.out.display()
    );
    say!(
        "  {} data nodes under {} inner nodes, depth {}; {} pages of {} slots, {:.0}% full; file {}",
        report.data_nodes,
        report.inner_nodes,
        report.depth,
        report.pages,
        alex::file::SLOTS_PER_PAGE,
        100.0 * n as f64 / report.slots.max(1) as f64,
        human_bytes(report.file_bytes)
    );
    say!(
        "  in memory {} ({:.3}% of the table's data): the inner nodes and a descriptor per data node",
        human_bytes(report.memory_bytes),
        100.0 * report.memory_bytes as f64 / data_bytes.max(1) as f64
    );
    Ok(())
}

/// The default memory limit of the unclustered builds.
const DEFAULT_MEMORY_LIMIT: u64 = 256 << 20;

/// `index build --kind partition|btree-inserts`: an unclustered index over an unsorted table.
fn build_unclustered(ctx: &Context, args: &BuildArgs, kind: Kind) -> anyhow::Result<()> {
    let k = &args.kind;
    let takes: &[&str] = match kind {
        Kind::Partition => &[
            "--epsilon",
            "--memory-limit",
            "--cgroup",
            "--entries",
            "--json",
        ],
        _ => &["--memory-limit", "--cgroup", "--entries", "--json"],
    };
    args.refuse_flags_but(takes)?;
    let cgroup_limit = crate::limits::run_limited(args.cgroup.as_deref(), args.json)?;
    let ctx = &Context {
        quiet: ctx.quiet || args.json,
    };
    let table = Table::open(&args.table)?;
    if table.header().sorted && table.len() > 1 {
        bail!(
            "{}: the table is sorted; --kind {kind} indexes unsorted tables (a sorted one takes --kind pgm, btree, ...)",
            args.table.display()
        );
    }
    let limit = args.memory_limit.unwrap_or(DEFAULT_MEMORY_LIMIT);
    let budget = MemoryBudget::new(limit);
    let n = table.len();
    let entries = args.entries.unwrap_or_default();
    match kind {
        Kind::Partition => {
            let params = PartitionParams {
                entries,
                epsilon: k.epsilon.unwrap_or(PartitionParams::default().epsilon),
                ..PartitionParams::default()
            };
            let bar = ctx.bar(2 * n, "partitioning", "tuples");
            let (index, report) = partition::build(&table, &args.out, &params, &budget, |done| {
                bar.set_position(done)
            })?;
            bar.finish_and_clear();
            if args.json {
                let record = UnsortedRecord::partition_build(&index, &report, limit);
                return crate::limits::say_record(record, cgroup_limit);
            }
            let skew = index.skew();
            say!(
                "built a learned partition index of {entries} over {n} tuples in {:.2} s (sampling and training {:.2} s, partitioning {:.2} s); saved to {}",
                report.seconds.0 + report.seconds.1,
                report.seconds.0,
                report.seconds.1,
                args.out.display()
            );
            say!(
                "  model: a PGM (eps={}) on {} sampled keys, {} segments; index in memory {}",
                params.epsilon,
                report.sampled,
                index
                    .model()
                    .segments_per_level()
                    .first()
                    .copied()
                    .unwrap_or(0),
                human_bytes(index.size_in_bytes())
            );
            say!(
                "  partitions: {} (mean {:.0} tuples, largest {}, {} empty, {} past their first page; {} pages)",
                skew.partitions,
                skew.mean,
                skew.largest,
                skew.empty,
                skew.overflowed,
                skew.pages
            );
            say!(
                "  I/O: read {} twice; wrote {} in {} writes touching {} pages (write amplification {:.2} in bytes, {:.1} in pages), a file of {}; peak memory reserved {} of {}",
                human_bytes(report.bytes_read.0),
                human_bytes(report.bytes_written),
                report.write_calls,
                report.pages_written,
                report.write_amplification(),
                (report.pages_written * 4096) as f64 / (16 * n).max(1) as f64,
                human_bytes(report.file_bytes),
                human_bytes(report.peak_reserved),
                human_bytes(limit)
            );
        }
        _ => {
            let bar = ctx.bar(n, "inserting", "keys");
            let report = btree::build(&table, &args.out, entries, &budget, |done| {
                bar.set_position(done)
            })?;
            bar.finish_and_clear();
            if args.json {
                let record = UnsortedRecord::btree_build(&report, entries, limit, budget.peak());
                return crate::limits::say_record(record, cgroup_limit);
            }
            let s = report.stats;
            say!(
                "built a B+tree of {entries} by inserting {n} keys in {:.2} s; saved to {}",
                report.seconds,
                args.out.display()
            );
            say!(
                "  {} leaves of 4 KiB ({} splits), a pool of {} leaves",
                report.leaves,
                s.splits,
                report.frames
            );
            say!(
                "  I/O: {} leaf reads, {} leaf writes, {} written touching {} pages (write amplification {:.1} in bytes, {:.1} in pages), a file of {}; peak memory reserved {} of {}",
                s.leaf_reads,
                s.leaf_writes,
                human_bytes(s.bytes_written),
                report.pages_written,
                report.write_amplification(),
                (report.pages_written * 4096) as f64 / (16 * n).max(1) as f64,
                human_bytes(report.file_bytes),
                human_bytes(budget.peak()),
                human_bytes(limit)
            );
        }
    }
    if let Some(rss) = lidx::memory::peak_rss() {
        say!("  peak RSS {} ({rss} bytes)", human_bytes(rss));
    }
    Ok(())
}

/// What an unclustered index's entries are, for `index info`: pointers, or tuples laid out
/// as `tuple`.
fn holds(entries: Entries, tuple: &str) -> String {
    match entries {
        Entries::Pointers => "pointers: (key, position in the table)".to_string(),
        Entries::Tuples => format!("tuples: {tuple}"),
    }
}

fn info(ctx: &Context, path: &Path, table: Option<&Path>) -> anyhow::Result<()> {
    let kind = FileKind::of_file(path)?;
    if kind == FileKind::Partition {
        let file = PartitionFile::open(path)?;
        let index = file.index();
        let skew = index.skew();
        let rows = [
            ("file", path.display().to_string()),
            (
                "kind",
                "partition (learned partition index over an unsorted table)".to_string(),
            ),
            ("tuples", index.len().to_string()),
            ("holds", holds(index.entries(), "(key, value)")),
            (
                "model",
                format!(
                    "PGM {} on {} sampled keys, segments {:?}",
                    index.model().params(),
                    index.model().len(),
                    index.model().segments_per_level()
                ),
            ),
            (
                "partitions",
                format!(
                    "{} (mean {:.0} tuples, largest {}, {} empty, {} past their first page)",
                    skew.partitions, skew.mean, skew.largest, skew.empty, skew.overflowed
                ),
            ),
            ("pages", skew.pages.to_string()),
            ("in memory", human_bytes(index.size_in_bytes())),
        ];
        for (k, v) in rows {
            say!("{k:<12} {v}");
        }
        return check_unclustered(path, table, index.len());
    }
    if kind == FileKind::InsertedBTree {
        let tree = InsertedBTree::open(path, 1)?;
        let rows = [
            ("file", path.display().to_string()),
            (
                "kind",
                "btree-inserts (B+tree built by inserts over an unsorted table)".to_string(),
            ),
            ("entries", tree.len().to_string()),
            ("holds", holds(tree.entries(), "(key, position, value)")),
            ("leaves", tree.leaves().to_string()),
            ("in memory", human_bytes(tree.inner_bytes())),
        ];
        for (k, v) in rows {
            say!("{k:<12} {v}");
        }
        return check_unclustered(path, table, tree.len());
    }
    if kind == FileKind::Alex {
        return info_alex(ctx, path, table);
    }
    let (index, fp) = file::load(path)?;
    let rows = [
        ("file", path.display().to_string()),
        ("kind", index.kind().to_string()),
        ("parameters", index.describe()),
        ("keys", fp.n.to_string()),
        ("key range", format!("{} ..= {}", fp.min_key, fp.max_key)),
        ("keys crc32c", format!("{:#010x}", fp.crc32c)),
        (
            "size",
            format!(
                "{} ({} bytes)",
                human_bytes(index.size_in_bytes()),
                index.size_in_bytes()
            ),
        ),
        ("max window", format!("{} positions", index.max_width())),
    ];
    let pgm_rows = index.as_pgm().map(|p| {
        [
            (
                "segments",
                format!("{:?} (bottom level first)", p.segments_per_level()),
            ),
            ("segment form", p.form().to_string()),
            (
                "float slack",
                format!("{:?} positions (bottom, above)", p.slack()),
            ),
        ]
    });
    for (k, v) in rows.into_iter().chain(pgm_rows.into_iter().flatten()) {
        say!("{k:<12} {v}");
    }
    if let Some(table) = table {
        let (_, keys) = sorted_keys(ctx, table, "checking an index")?;
        fp.check(&KeysFingerprint::of(&keys), path, table)?;
        say!("matches      {}", table.display());
    }
    Ok(())
}

/// `index info` of an ALEX file; with `--table`, checks it was built from that table.
fn info_alex(ctx: &Context, path: &Path, table: Option<&Path>) -> anyhow::Result<()> {
    let alex = AlexFile::open(path)?;
    let fp = alex.fingerprint();
    let p = alex.params();
    let rows = [
        ("file", path.display().to_string()),
        (
            "kind",
            "alex (ALEX on disk: data nodes in the file, inner nodes in memory)".to_string(),
        ),
        ("tuples", alex.len().to_string()),
        ("key range", format!("{} ..= {}", fp.min_key, fp.max_key)),
        ("keys crc32c", format!("{:#010x}", fp.crc32c)),
        (
            "nodes",
            format!(
                "{} data, {} inner, depth {}",
                alex.data_nodes(),
                alex.inner_nodes(),
                alex.depth()
            ),
        ),
        (
            "pages",
            format!(
                "{} of {} slots ({} slots, {:.0}% full)",
                alex.pages(),
                alex::file::SLOTS_PER_PAGE,
                alex.slots(),
                100.0 * alex.len() as f64 / alex.slots().max(1) as f64
            ),
        ),
        (
            "parameters",
            format!(
                "density {}/{}/{}, data nodes of at most {} slots, inner nodes of at most {}",
                p.min_density, p.init_density, p.max_density, p.max_data_slots, p.max_fanout
            ),
        ),
        (
            "in memory",
            format!(
                "{} ({} bytes)",
                human_bytes(alex.size_in_bytes()),
                alex.size_in_bytes()
            ),
        ),
    ];
    for (k, v) in rows {
        say!("{k:<12} {v}");
    }
    if let Some(table) = table {
        let (_, keys) = sorted_keys(ctx, table, "checking an index")?;
        fp.check(&KeysFingerprint::of(&keys), path, table)?;
        say!("matches      {}", table.display());
    }
    Ok(())
}

/// With `--table`, checks an unclustered index holds as many tuples as the table.
fn check_unclustered(path: &Path, table: Option<&Path>, n: u64) -> anyhow::Result<()> {
    if let Some(table) = table {
        let t = Table::open(table)?;
        if t.len() != n {
            bail!(
                "{}: the index holds {n} tuples, {} holds {}; rebuild it",
                path.display(),
                table.display(),
                t.len()
            );
        }
        say!("matches      {} ({n} tuples)", table.display());
    }
    Ok(())
}

/// `index verify`: the library's check of the file's kind, then one line of what it
/// checked.
fn verify(ctx: &Context, path: &Path, table: Option<&Path>) -> anyhow::Result<()> {
    let kind = FileKind::of_file(path)?;
    let table = table.map(Table::open).transpose()?;
    let bar = ctx.spinner(&format!("verifying {}", path.display()));
    let t = table.as_ref();
    let report = match kind {
        FileKind::Index => file::verify(path, t)?,
        FileKind::Alex => AlexFile::verify_file(path, t)?,
        FileKind::Partition => PartitionFile::verify_file(path, t)?,
        FileKind::InsertedBTree => InsertedBTree::verify_file(path, t)?,
    };
    bar.finish_and_clear();
    say!("{}", verify_line(path, &report, table.as_ref()));
    Ok(())
}

/// The line `index verify` prints for `report`: what was read and checked, in counts.
fn verify_line(path: &Path, report: &VerifyReport, table: Option<&Table>) -> String {
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let held = match report.kind {
        FileKind::Index => plural(report.entries, "key", "keys"),
        FileKind::InsertedBTree => format!(
            "{} in {}",
            plural(report.entries, "entry", "entries"),
            plural(report.pages, "leaf", "leaves")
        ),
        _ => format!(
            "{} in {}",
            plural(report.entries, "tuple", "tuples"),
            plural(report.pages, "page", "pages")
        ),
    };
    let mut line = format!(
        "{}: ok: {} file of {} bytes, {held}; {} {}, every invariant holds",
        path.display(),
        report.kind,
        report.bytes,
        plural(report.checksums, "checksum", "checksums"),
        if report.checksums == 1 {
            "matches"
        } else {
            "match"
        }
    );
    if let (Some(table), Some(tuples)) = (table, report.table_tuples) {
        line += &format!(
            "; {} of {} found where the index says",
            plural(tuples, "tuple", "tuples"),
            table.path().display()
        );
    }
    line
}

/// Arguments of `index bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// The sorted table to measure on.
    #[arg(long, value_name = "FILE.tbl")]
    table: PathBuf,
    /// Kinds to measure, comma-separated [default: all].
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<IndexKind>,
    /// In-memory lookups timed per configuration (half existing keys, half random), up to
    /// 1e9.
    #[arg(long, value_parser = bounded_queries, default_value = "200000")]
    queries: u64,
    /// Cold O_DIRECT lookups per configuration (0 = none), up to 1e9.
    #[arg(long, value_parser = bounded_queries, default_value = "2000")]
    disk_queries: u64,
    /// Time these lookups (an SOSD key file, any order, duplicates allowed) in place of
    /// drawn existing keys, so that another library can time exactly the same ones.
    #[arg(long, value_name = "FILE.keys")]
    queries_file: Option<PathBuf>,
    /// Also build each PGM on this many threads and report its time and segments beside
    /// the one-thread build (lookups are always timed on one thread).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: u32,
    /// Also tune rs and rmi on the data, and add the chosen configurations as rows.
    #[arg(long)]
    tune: bool,
    /// Directory for index-bench.csv and the PNG plots.
    #[arg(long, default_value = "lidx-index-bench")]
    out_dir: PathBuf,
}

fn bench(ctx: &Context, args: BenchArgs) -> anyhow::Result<()> {
    let (table, keys) = sorted_keys(ctx, &args.table, "benchmarking indexes")?;
    let options = lidx_bench::index_bench::Options {
        kinds: args.kinds,
        queries: args.queries,
        queries_file: args.queries_file,
        threads: args.threads as usize,
        disk_queries: args.disk_queries,
        tune: args.tune,
        out_dir: args.out_dir,
    };
    let report = lidx_bench::index_bench::run(&table, &keys, &options, &ctx.progress())?;
    say_text!(report);
    Ok(())
}

pub fn run(ctx: &Context, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Build(args) => build(ctx, args),
        Command::Info { index, table } => info(ctx, &index, table.as_deref()),
        Command::Verify { index, table } => verify(ctx, &index, table.as_deref()),
        Command::Bench(args) => bench(ctx, args),
    }
}

/// The most lookups `index bench` times per configuration: their keys are held in memory.
const MAX_QUERIES: u64 = 1_000_000_000;

/// A count of lookups, at most [`MAX_QUERIES`].
fn bounded_queries(text: &str) -> Result<u64, String> {
    let n = parse_count(text)?;
    if n > MAX_QUERIES {
        return Err(format!("{n} is more than {MAX_QUERIES} lookups"));
    }
    Ok(n)
}
