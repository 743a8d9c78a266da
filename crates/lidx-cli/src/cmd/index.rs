//! `lidx index build|info|bench`: the index family of paper 1, sections 2.2, 4.2 and 5.2.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::bail;
use lidx::files::refuse_same_file;
use lidx::index::file::{self, KeysFingerprint};
use lidx::index::measure::Queries;
use lidx::index::{AnyIndex, AnyParams, IndexKind, RootKind, tune};
use lidx::storage::{TUPLE_SIZE, Table};

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
    /// Measure every kind on a table: build time, size, lookups in memory and on disk,
    /// windows, and a sweep of window sizes; prints a table, writes CSV and PNG plots.
    #[command(after_help = "Example:\n  lidx index bench --table lognormal.tbl --out-dir bench/")]
    Bench(BenchArgs),
}

/// Which kind, with its parameters (each defaults to the kind's 256-position setting).
#[derive(clap::Args, Clone)]
pub struct KindArgs {
    /// Index kind: pgm, sampled-pgm, rs, rmi, btree or binary.
    #[arg(long)]
    kind: IndexKind,
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
    fn params(&self) -> anyhow::Result<AnyParams> {
        let mut p = AnyParams::default_for(self.kind);
        // The flags the kind takes, each applied where given.
        let mut takes: Vec<&str> = Vec::new();
        macro_rules! apply {
            ($field:expr, $flag:ident) => {{
                takes.push(stringify!($flag));
                if let Some(v) = self.$flag {
                    $field = v;
                }
            }};
        }
        macro_rules! apply_pgm {
            ($pgm:expr) => {{
                apply!($pgm.epsilon, epsilon);
                apply!($pgm.epsilon_rec, epsilon_rec);
                apply!($pgm.max_height, max_height);
            }};
        }
        match &mut p {
            AnyParams::Pgm(p) => apply_pgm!(p),
            AnyParams::SampledPgm(p) => {
                apply!(p.every, every);
                apply_pgm!(p.inner);
            }
            AnyParams::RadixSpline(p) => {
                apply!(p.epsilon, epsilon);
                apply!(p.radix_bits, radix_bits);
            }
            AnyParams::Rmi(p) => {
                apply!(p.root, root);
                apply!(p.branching, branching);
                apply!(p.max_window, max_window);
            }
            AnyParams::BTree(p) => apply!(p.every, every),
            AnyParams::Binary => {}
        }
        let given = [
            ("epsilon", self.epsilon.is_some()),
            ("epsilon_rec", self.epsilon_rec.is_some()),
            ("max_height", self.max_height.is_some()),
            ("every", self.every.is_some()),
            ("radix_bits", self.radix_bits.is_some()),
            ("root", self.root.is_some()),
            ("branching", self.branching.is_some()),
            ("max_window", self.max_window.is_some()),
        ];
        if let Some((name, _)) = given.iter().find(|(name, on)| *on && !takes.contains(name)) {
            bail!(
                "--{} does not apply to --kind {}",
                name.replace('_', "-"),
                self.kind
            );
        }
        Ok(p)
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
    /// Output index file.
    #[arg(long, short, value_name = "FILE.idx")]
    out: PathBuf,
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
    let params = args.kind.params()?;
    let (table, keys) = sorted_keys(ctx, &args.table, "building an index")?;
    let data_bytes = table.len() * TUPLE_SIZE as u64;
    let started = Instant::now();
    let index = if args.tune {
        if !matches!(args.kind.kind, IndexKind::RadixSpline | IndexKind::Rmi) {
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
        let grid = tune::grid(args.kind.kind, epsilon).len() as u64;
        let bar = ctx.bar(grid, "tuning", "configurations");
        let (index, trials) =
            tune::tune(args.kind.kind, &keys, &existing, epsilon, budget, |_| {
                bar.inc(1)
            })?;
        bar.finish_and_clear();
        say!(
            "size/lookup-time trials ({} within budget {}), * = Pareto front, > = chosen:",
            args.kind.kind,
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
        let bar = ctx.spinner(&format!("building {}", args.kind.kind));
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

fn info(ctx: &Context, path: &Path, table: Option<&Path>) -> anyhow::Result<()> {
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

/// Arguments of `index bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// The sorted table to measure on.
    #[arg(long, value_name = "FILE.tbl")]
    table: PathBuf,
    /// Kinds to measure, comma-separated [default: all].
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<IndexKind>,
    /// In-memory lookups timed per configuration (half existing keys, half random).
    #[arg(long, value_parser = parse_count, default_value = "200000")]
    queries: u64,
    /// Cold O_DIRECT lookups per configuration (0 = none).
    #[arg(long, value_parser = parse_count, default_value = "2000")]
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
        Command::Bench(args) => bench(ctx, args),
    }
}
