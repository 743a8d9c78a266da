//! `lidx index build|info|bench`: the index family of paper 1, sections 2.2, 4.2 and 5.2.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use lidx::Error;
use lidx::files::cache;
use lidx::index::file::{self, KeysFingerprint};
use lidx::index::measure::{last_mile_ns, lookup_ns, partition_point_ns, window_stats};
use lidx::index::{AnyIndex, AnyParams, IndexKind, RootKind, tune};
use lidx::storage::{BlockReader, ReadMode, Table};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

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
        let mut used: Vec<&str> = Vec::new();
        match &mut p {
            AnyParams::Pgm(p) => {
                set(&mut p.epsilon, self.epsilon, "--epsilon", &mut used);
                set(
                    &mut p.epsilon_rec,
                    self.epsilon_rec,
                    "--epsilon-rec",
                    &mut used,
                );
                set(
                    &mut p.max_height,
                    self.max_height,
                    "--max-height",
                    &mut used,
                );
            }
            AnyParams::SampledPgm(p) => {
                set(&mut p.every, self.every, "--every", &mut used);
                set(&mut p.inner.epsilon, self.epsilon, "--epsilon", &mut used);
                set(
                    &mut p.inner.epsilon_rec,
                    self.epsilon_rec,
                    "--epsilon-rec",
                    &mut used,
                );
                set(
                    &mut p.inner.max_height,
                    self.max_height,
                    "--max-height",
                    &mut used,
                );
            }
            AnyParams::RadixSpline(p) => {
                set(&mut p.epsilon, self.epsilon, "--epsilon", &mut used);
                set(
                    &mut p.radix_bits,
                    self.radix_bits,
                    "--radix-bits",
                    &mut used,
                );
            }
            AnyParams::Rmi(p) => {
                set(&mut p.root, self.root, "--root", &mut used);
                set(&mut p.branching, self.branching, "--branching", &mut used);
                set(
                    &mut p.max_window,
                    self.max_window,
                    "--max-window",
                    &mut used,
                );
            }
            AnyParams::BTree(p) => set(&mut p.every, self.every, "--every", &mut used),
            AnyParams::Binary => {}
        }
        let given = [
            ("--epsilon", self.epsilon.is_some()),
            ("--epsilon-rec", self.epsilon_rec.is_some()),
            ("--max-height", self.max_height.is_some()),
            ("--every", self.every.is_some()),
            ("--radix-bits", self.radix_bits.is_some()),
            ("--root", self.root.is_some()),
            ("--branching", self.branching.is_some()),
            ("--max-window", self.max_window.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(flag, on)| *on && !used.contains(flag)) {
            bail!("{flag} does not apply to --kind {}", self.kind);
        }
        Ok(p)
    }
}

fn set<T: Copy>(field: &mut T, value: Option<T>, flag: &'static str, used: &mut Vec<&'static str>) {
    used.push(flag);
    if let Some(v) = value {
        *field = v;
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
    /// Output index file.
    #[arg(long, short, value_name = "FILE.idx")]
    out: PathBuf,
}

/// Opens a sorted table and loads its keys.
pub fn sorted_keys(
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

/// Random existing keys (`count`, seeded) and random values in the key range (mostly absent).
pub fn queries(keys: &[u64], count: usize, seed: u64) -> (Vec<u64>, Vec<u64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (min, max) = (keys[0], keys[keys.len() - 1]);
    let existing = (0..count)
        .map(|_| keys[rng.random_range(0..keys.len())])
        .collect();
    let absent = (0..count).map(|_| rng.random_range(min..=max)).collect();
    (existing, absent)
}

fn build(ctx: &Context, args: BuildArgs) -> anyhow::Result<()> {
    super::refuse_same_file(&args.table, &args.out)?;
    let params = args.kind.params()?;
    let (table, keys) = sorted_keys(ctx, &args.table, "building an index")?;
    let data_bytes = table.len() * 16;
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
        let (existing, _) = queries(&keys, 100_000, 7);
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
        let index = AnyIndex::build(&keys, &params)?;
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
    for (k, v) in rows {
        say!("{k:<12} {v}");
    }
    if let Some(table) = table {
        let (_, keys) = sorted_keys(ctx, table, "checking an index")?;
        check_fingerprint(path, table, &fp, &KeysFingerprint::of(&keys))?;
        say!("matches      {}", table.display());
    }
    Ok(())
}

/// Fails unless the index at `index_path` was built on the keys of `table_path`.
pub fn check_fingerprint(
    index_path: &Path,
    table_path: &Path,
    stored: &KeysFingerprint,
    actual: &KeysFingerprint,
) -> anyhow::Result<()> {
    if stored != actual {
        bail!(
            "{}: the index was built for other keys than those of {} (index: {} keys, crc32c {:#010x}; table: {} keys, crc32c {:#010x}); rebuild it",
            index_path.display(),
            table_path.display(),
            stored.n,
            stored.crc32c,
            actual.n,
            actual.crc32c
        );
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
    /// Also tune rs and rmi on the data, and add the chosen configurations as rows.
    #[arg(long)]
    tune: bool,
    /// Directory for index-bench.csv and the PNG plots.
    #[arg(long, default_value = "lidx-index-bench")]
    out_dir: PathBuf,
}

/// One measured configuration.
pub struct Row {
    pub kind: IndexKind,
    pub params: String,
    /// The window width the configuration aims at (the sweep), or 0.
    pub target_width: u64,
    pub build_s: f64,
    pub size_bytes: u64,
    pub size_pct: f64,
    pub existing_ns: f64,
    pub absent_ns: f64,
    pub partition_point_ns: f64,
    pub mean_width: f64,
    pub max_width: u64,
    pub mean_blocks: f64,
    pub disk_us: f64,
    pub disk_blocks: f64,
    pub disk_reads: f64,
    /// Last-mile search alone: branchless lower bound and `partition_point`, ns.
    pub last_mile_ns: (f64, f64),
}

/// `partition_point` over the queries: its time and the sums of the positions it found,
/// which every index's lookups must reproduce.
pub struct Baseline {
    pub existing_ns: f64,
    pub random_ns: f64,
    pub existing_sum: u64,
    pub random_sum: u64,
}

impl Baseline {
    /// Times `partition_point` over both query sets.
    pub fn measure(keys: &[u64], queries: &(Vec<u64>, Vec<u64>)) -> Baseline {
        let (existing_ns, existing_sum) = partition_point_ns(keys, &queries.0);
        let (random_ns, random_sum) = partition_point_ns(keys, &queries.1);
        Baseline {
            existing_ns,
            random_ns,
            existing_sum,
            random_sum,
        }
    }
}

/// Windows wider than this many blocks (128 KiB) are narrowed by an on-disk binary search
/// instead of being read whole (only the binary-search baseline's are).
pub const MAX_WINDOW_READ_BLOCKS: u64 = 32;

/// Builds `params` over `keys` and measures it; `disk` gives the table and the number of
/// cold O_DIRECT lookups.
pub fn measure(
    keys: &[u64],
    params: &AnyParams,
    target_width: u64,
    queries: &(Vec<u64>, Vec<u64>),
    baseline: &Baseline,
    disk: Option<(&Table, u64)>,
) -> anyhow::Result<(Row, AnyIndex)> {
    let t = Instant::now();
    let index = AnyIndex::build(keys, params)?;
    let build_s = t.elapsed().as_secs_f64();
    let (existing_ns, sum) = lookup_ns(&index, keys, &queries.0);
    let (absent_ns, absent_sum) = lookup_ns(&index, keys, &queries.1);
    anyhow::ensure!(
        (sum, absent_sum) == (baseline.existing_sum, baseline.random_sum),
        "{} {} returned wrong positions",
        index.kind(),
        index.describe()
    );
    let all: Vec<u64> = queries.0.iter().chain(&queries.1).copied().collect();
    let stats = window_stats(&index, &all);
    let last_mile_ns = last_mile_ns(&index, keys, &queries.0);
    let (mut disk_us, mut disk_blocks, mut disk_reads) = (f64::NAN, f64::NAN, f64::NAN);
    if let Some((table, count)) = disk.filter(|(_, c)| *c > 0) {
        cache::drop_file_pages(table.path())?;
        let mut reader = match BlockReader::new(table, ReadMode::Direct) {
            Err(Error::DirectUnsupported { .. }) => BlockReader::new(table, ReadMode::Buffered)?,
            r => r?,
        };
        let probes = &queries.0[..(count as usize).min(queries.0.len())];
        let t = Instant::now();
        for &q in probes {
            let w = index.search(q);
            reader.clear_buffer();
            let found = reader.lower_bound(w.lo, w.hi, q, MAX_WINDOW_READ_BLOCKS)?;
            anyhow::ensure!(
                keys.get(found as usize) == Some(&q),
                "the on-disk lookup of {q} went wrong"
            );
        }
        disk_us = t.elapsed().as_secs_f64() * 1e6 / probes.len().max(1) as f64;
        let io = reader.stats();
        disk_blocks = io.blocks as f64 / probes.len().max(1) as f64;
        disk_reads = io.reads as f64 / probes.len().max(1) as f64;
    }
    let row = Row {
        kind: index.kind(),
        params: index.describe(),
        target_width,
        build_s,
        size_bytes: index.size_in_bytes(),
        size_pct: 100.0 * index.size_in_bytes() as f64 / (keys.len() as f64 * 16.0),
        existing_ns,
        absent_ns,
        partition_point_ns: baseline.existing_ns,
        mean_width: stats.mean_width,
        max_width: stats.max_width,
        mean_blocks: stats.mean_blocks,
        disk_us,
        disk_blocks,
        disk_reads,
        last_mile_ns,
    };
    Ok((row, index))
}

/// The parameters of `kind` whose windows are at most `width` positions, where the kind
/// has such a setting.
pub fn params_for_width(kind: IndexKind, width: u64) -> Option<AnyParams> {
    let mut p = AnyParams::default_for(kind);
    match &mut p {
        AnyParams::Pgm(p) => p.epsilon = (width - 1) / 2,
        AnyParams::SampledPgm(p) => p.every = width / 4,
        AnyParams::RadixSpline(p) => p.epsilon = (width - 1) / 2,
        AnyParams::BTree(p) => p.every = width,
        AnyParams::Rmi(p) => p.max_window = width,
        AnyParams::Binary => return None,
    }
    Some(p)
}

fn bench(ctx: &Context, args: BenchArgs) -> anyhow::Result<()> {
    let (table, keys) = sorted_keys(ctx, &args.table, "benchmarking indexes")?;
    let kinds = if args.kinds.is_empty() {
        IndexKind::ALL.to_vec()
    } else {
        args.kinds.clone()
    };
    let q = usize::try_from(args.queries / 2)
        .unwrap_or(usize::MAX)
        .max(1);
    let queries = queries(&keys, q, 42);
    let baseline = Baseline::measure(&keys, &queries);
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("{}: cannot create the directory", args.out_dir.display()))?;

    // Configurations: a sweep of window sizes 64 to 4096 for every kind that bounds its
    // windows (RMI as a hybrid), each kind's 256-position setting among them; beside it PGM
    // recursive, paper 1's sampled PGM (every 128th key, ε′ = 2), a plain RMI, binary search.
    let mut configs: Vec<(AnyParams, u64)> = Vec::new();
    for &kind in &kinds {
        match kind {
            IndexKind::Binary => configs.push((AnyParams::default_for(kind), 0)),
            _ => {
                for width in [64u64, 128, 256, 512, 1024, 2048, 4096] {
                    configs.extend(params_for_width(kind, width).map(|p| (p, width)));
                }
            }
        }
        match kind {
            IndexKind::Pgm => configs.push((
                AnyParams::Pgm(lidx::index::PgmParams {
                    max_height: 16,
                    ..Default::default()
                }),
                0,
            )),
            IndexKind::Rmi => configs.push((AnyParams::default_for(kind), 0)),
            IndexKind::SampledPgm => configs.push((
                AnyParams::SampledPgm(lidx::index::SampledParams {
                    every: 128,
                    inner: lidx::index::PgmParams {
                        epsilon: 2,
                        epsilon_rec: 4,
                        max_height: 1,
                    },
                }),
                0,
            )),
            _ => {}
        }
    }
    let bar = ctx.bar(configs.len() as u64, "measuring", "configurations");
    let mut rows = Vec::new();
    for (params, width) in &configs {
        let (row, _) = measure(
            &keys,
            params,
            *width,
            &queries,
            &baseline,
            Some((&table, args.disk_queries)),
        )?;
        rows.push(row);
        bar.inc(1);
    }
    if args.tune {
        for kind in kinds
            .iter()
            .filter(|k| matches!(k, IndexKind::RadixSpline | IndexKind::Rmi))
        {
            let (tuned, _) = tune::tune(
                *kind,
                &keys,
                &queries.0,
                127,
                table.len() * 16 / 100,
                |_| {},
            )?;
            let params = any_params_of(&tuned);
            let (row, _) = measure(
                &keys,
                &params,
                0,
                &queries,
                &baseline,
                Some((&table, args.disk_queries)),
            )?;
            rows.push(row);
        }
    }
    bar.finish_and_clear();
    print_rows(&rows, &baseline, &table, keys.len())?;
    write_outputs(&args, &table, keys.len(), &rows)
}

/// The parameters an index was built with.
pub fn any_params_of(index: &AnyIndex) -> AnyParams {
    use lidx::index::Index as _;
    match index {
        AnyIndex::Pgm(i) => AnyParams::Pgm(i.params()),
        AnyIndex::SampledPgm(i) => AnyParams::SampledPgm(i.params()),
        AnyIndex::RadixSpline(i) => AnyParams::RadixSpline(i.params()),
        AnyIndex::Rmi(i) => AnyParams::Rmi(i.params()),
        AnyIndex::BTree(i) => AnyParams::BTree(i.params()),
        AnyIndex::Binary(_) => AnyParams::Binary,
    }
}

/// Prints the rows as a table, with lookup time and size as ratios to the baselines.
pub fn print_rows(
    rows: &[Row],
    baseline: &Baseline,
    table: &Table,
    n: usize,
) -> anyhow::Result<()> {
    say!(
        "{} keys of {}; partition_point: {:.0} ns (existing keys), {:.0} ns (random)",
        n,
        table.path().display(),
        baseline.existing_ns,
        baseline.random_ns
    );
    say!(
        "{:<12} {:<40} {:>8} {:>10} {:>8} {:>8} {:>7} {:>8} {:>7} {:>8} {:>8}",
        "kind",
        "parameters",
        "build s",
        "size",
        "% data",
        "ns",
        "vs pp",
        "width",
        "blocks",
        "disk us",
        "blk/lkp"
    );
    for r in rows {
        say!(
            "{:<12} {:<40} {:>8.3} {:>10} {:>8.3} {:>8.0} {:>6.1}x {:>8.0} {:>7.2} {:>8.1} {:>8.2}",
            r.kind.name(),
            r.params,
            r.build_s,
            human_bytes(r.size_bytes),
            r.size_pct,
            r.existing_ns,
            r.partition_point_ns / r.existing_ns,
            r.mean_width,
            r.mean_blocks,
            r.disk_us,
            r.disk_blocks
        );
    }
    Ok(())
}

fn write_outputs(args: &BenchArgs, table: &Table, n: usize, rows: &[Row]) -> anyhow::Result<()> {
    let machine = crate::machine::describe();
    let header = [
        "lidx_version",
        "machine",
        "table",
        "n",
        "kind",
        "params",
        "target_width",
        "build_s",
        "size_bytes",
        "size_pct_of_data",
        "lookup_ns_existing",
        "lookup_ns_random",
        "partition_point_ns",
        "mean_width",
        "max_width",
        "mean_blocks",
        "disk_queries",
        "disk_us_per_lookup",
        "disk_blocks_per_lookup",
        "disk_reads_per_lookup",
        "last_mile_branchless_ns",
        "last_mile_partition_point_ns",
    ];
    let csv_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                env!("CARGO_PKG_VERSION").to_string(),
                machine.clone(),
                table.path().display().to_string(),
                n.to_string(),
                r.kind.name().to_string(),
                r.params.clone(),
                r.target_width.to_string(),
                format!("{:.6}", r.build_s),
                r.size_bytes.to_string(),
                format!("{:.5}", r.size_pct),
                format!("{:.2}", r.existing_ns),
                format!("{:.2}", r.absent_ns),
                format!("{:.2}", r.partition_point_ns),
                format!("{:.2}", r.mean_width),
                r.max_width.to_string(),
                format!("{:.3}", r.mean_blocks),
                args.disk_queries.to_string(),
                format!("{:.2}", r.disk_us),
                format!("{:.3}", r.disk_blocks),
                format!("{:.3}", r.disk_reads),
                format!("{:.2}", r.last_mile_ns.0),
                format!("{:.2}", r.last_mile_ns.1),
            ]
        })
        .collect();
    let csv_path = args.out_dir.join("index-bench.csv");
    let mut out = lidx::files::AtomicFile::create(&csv_path)?;
    super::write_csv(&mut out, &header, &csv_rows)?;
    out.finish()?;

    let by_kind = |f: &dyn Fn(&Row) -> Option<(f64, f64)>| -> Vec<crate::plot::Series> {
        let mut kinds: Vec<IndexKind> = Vec::new();
        for r in rows {
            if !kinds.contains(&r.kind) {
                kinds.push(r.kind);
            }
        }
        kinds
            .into_iter()
            .map(|k| crate::plot::Series {
                name: k.name().to_string(),
                points: rows.iter().filter(|r| r.kind == k).filter_map(f).collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let lookup_png = args.out_dir.join("index-size-vs-lookup.png");
    use crate::plot::Scale;
    crate::plot::chart(
        &lookup_png,
        &format!("Index size against lookup time ({n} keys, in memory)"),
        ("index size (bytes)", Scale::Log),
        ("lookup (ns, existing keys)", Scale::Linear),
        &by_kind(&|r| Some((r.size_bytes as f64, r.existing_ns))),
        false,
    )?;
    let window_png = args.out_dir.join("index-size-vs-window.png");
    crate::plot::chart(
        &window_png,
        &format!("Index size against window width ({n} keys)"),
        ("window width (positions)", Scale::Log),
        ("index size (bytes)", Scale::Log),
        &by_kind(&|r| (r.target_width > 0).then_some((r.target_width as f64, r.size_bytes as f64))),
        true,
    )?;
    say!(
        "wrote {}, {} and {}",
        csv_path.display(),
        lookup_png.display(),
        window_png.display()
    );
    Ok(())
}

pub fn run(ctx: &Context, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Build(args) => build(ctx, args),
        Command::Info { index, table } => info(ctx, &index, table.as_deref()),
        Command::Bench(args) => bench(ctx, args),
    }
}
