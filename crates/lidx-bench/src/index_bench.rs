//! `lidx index bench`: every index kind on one table (paper 1, section 5.2): build time,
//! size, lookups in memory (against `partition_point`) and cold on disk, windows, and a
//! sweep of window widths from 64 to 4096 positions. A table printed, a CSV row per
//! configuration, and plots of size against lookup time and against window width.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use lidx::data::KeyFile;
use lidx::files::AtomicFile;
use lidx::index::measure::{Baseline, IndexMeasurement, Queries, measure};
use lidx::index::{AnyParams, IndexKind, PgmParams, SampledParams, tune};
use lidx::storage::{TUPLE_SIZE, Table};
use serde::Serialize;

use crate::csv_rows::{Fixed, LIDX_VERSION, write_rows};
use crate::plot::{Scale, Series, chart};
use crate::progress::Progress;
use crate::text::human_bytes;

/// What to measure.
#[derive(Clone, Debug)]
pub struct Options {
    /// Kinds to measure; empty: all.
    pub kinds: Vec<IndexKind>,
    /// In-memory lookups timed per configuration (half existing keys, half random).
    pub queries: u64,
    /// An SOSD key file whose keys are the lookups timed in place of the drawn existing
    /// keys, in the file's order (so another library can time exactly the same lookups).
    pub queries_file: Option<PathBuf>,
    /// Threads for the parallel PGM builds, timed beside the one-thread build (1: none).
    pub threads: usize,
    /// Cold `O_DIRECT` lookups per configuration (0: none).
    pub disk_queries: u64,
    /// Also tune RadixSpline and RMI on the data and add the chosen configurations.
    pub tune: bool,
    /// Directory for `index-bench.csv` and the plots.
    pub out_dir: PathBuf,
}

/// The configurations measured: a sweep of window widths 64 to 4096 for every kind that
/// bounds its windows (RMI as a hybrid), each kind's 256-position setting among them, and
/// the recursive PGM (ε_rec = 4, as the C++ library's default) at the same widths; beside
/// them paper 1's sampled PGM (every 128th key, ε′ = 2), a plain RMI and binary search. Each
/// with the width it aims at (0: none).
const WIDTHS: [u64; 7] = [64, 128, 256, 512, 1024, 2048, 4096];

fn configurations(kinds: &[IndexKind]) -> Vec<(AnyParams, u64)> {
    let mut configs = Vec::new();
    for &kind in kinds {
        if kind == IndexKind::Binary {
            configs.push((AnyParams::default_for(kind), 0));
        }
        for width in WIDTHS {
            configs.extend(AnyParams::for_width(kind, width).map(|p| (p, width)));
        }
        match kind {
            IndexKind::Pgm => {
                for width in WIDTHS {
                    if let Some(AnyParams::Pgm(flat)) = AnyParams::for_width(kind, width) {
                        let recursive = PgmParams {
                            max_height: 16,
                            ..flat
                        };
                        configs.push((AnyParams::Pgm(recursive), width));
                    }
                }
            }
            IndexKind::Rmi => configs.push((AnyParams::default_for(kind), 0)),
            IndexKind::SampledPgm => configs.push((
                AnyParams::SampledPgm(SampledParams {
                    every: 128,
                    inner: PgmParams {
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
    configs
}

/// Measures every configuration on `table` (its sorted `keys`), writes the CSV and plots,
/// and returns the report to print.
pub fn run(
    table: &Table,
    keys: &[u64],
    options: &Options,
    progress: &dyn Progress,
) -> anyhow::Result<String> {
    let kinds = if options.kinds.is_empty() {
        IndexKind::ALL.to_vec()
    } else {
        options.kinds.clone()
    };
    let q = usize::try_from(options.queries / 2)
        .unwrap_or(usize::MAX)
        .max(1);
    let mut queries = Queries::draw(keys, q, 42);
    if let Some(path) = &options.queries_file {
        queries.existing = KeyFile::open(path)?.keys().to_vec();
    }
    let baseline = Baseline::measure(keys, &queries);
    std::fs::create_dir_all(&options.out_dir)
        .with_context(|| format!("{}: cannot create the directory", options.out_dir.display()))?;
    let configs = configurations(&kinds);
    progress.start(configs.len() as u64, "measuring", "configurations");
    let disk = Some((table, options.disk_queries));
    let mut rows = Vec::new();
    for (params, width) in &configs {
        rows.push(
            measure(
                keys,
                params,
                *width,
                &queries,
                &baseline,
                disk,
                options.threads,
            )?
            .0,
        );
        progress.step();
    }
    if options.tune {
        for &kind in kinds
            .iter()
            .filter(|k| matches!(k, IndexKind::RadixSpline | IndexKind::Rmi))
        {
            let budget = table.len() * TUPLE_SIZE as u64 / 100;
            let (tuned, _) = tune::tune(kind, keys, &queries.existing, 127, budget, |_| {})?;
            rows.push(measure(keys, &tuned.params(), 0, &queries, &baseline, disk, 1)?.0);
        }
    }
    progress.finish();
    let mut report = measurements_table(&rows, &baseline, table, keys.len());
    if let Some(path) = &options.queries_file {
        let _ = writeln!(
            report,
            "lookups of existing keys: the {} keys of {}, in its order",
            queries.existing.len(),
            path.display()
        );
    }
    if options.threads > 1 {
        report.push_str(&parallel_builds(&rows, options.threads));
    }
    report.push_str(&write_outputs(
        options,
        table,
        keys.len(),
        queries.existing.len(),
        &rows,
    )?);
    Ok(report)
}

/// The measurements as a table, with lookup time and size as ratios to the baselines.
pub fn measurements_table(
    rows: &[IndexMeasurement],
    baseline: &Baseline,
    table: &Table,
    n: usize,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} keys of {}; partition_point: {:.0} ns (existing keys), {:.0} ns (random)",
        n,
        table.path().display(),
        baseline.existing_ns,
        baseline.random_ns
    );
    let _ = writeln!(
        s,
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
        let _ = writeln!(
            s,
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
    s
}

/// The PGM builds on one thread and on `threads`: times and bottom-level segments.
fn parallel_builds(rows: &[IndexMeasurement], threads: usize) -> String {
    let mut s = format!(
        "\nPGM builds on 1 and {threads} threads\n{:<12} {:<40} {:>9} {:>9} {:>7} {:>10} {:>10}\n",
        "kind", "parameters", "1 thr s", "N thr s", "speedup", "segs 1 thr", "segs N thr"
    );
    for r in rows.iter().filter(|r| !r.build_threads_s.is_nan()) {
        let _ = writeln!(
            s,
            "{:<12} {:<40} {:>9.3} {:>9.3} {:>6.2}x {:>10} {:>10}",
            r.kind.name(),
            r.params,
            r.build_s,
            r.build_threads_s,
            r.build_s / r.build_threads_s,
            r.segments.0,
            r.segments.1
        );
    }
    s
}

/// One configuration, as a row of `index-bench.csv`.
#[derive(Serialize, Default)]
struct BenchRow<'a> {
    lidx_version: &'static str,
    machine: &'a str,
    table: String,
    n: usize,
    kind: &'static str,
    params: &'a str,
    target_width: u64,
    build_s: Fixed<6>,
    size_bytes: u64,
    size_pct_of_data: Fixed<5>,
    lookup_ns_existing: Fixed<2>,
    lookup_ns_random: Fixed<2>,
    partition_point_ns: Fixed<2>,
    mean_width: Fixed<2>,
    max_width: u64,
    mean_blocks: Fixed<3>,
    disk_queries: u64,
    disk_us_per_lookup: Fixed<2>,
    disk_blocks_per_lookup: Fixed<3>,
    disk_reads_per_lookup: Fixed<3>,
    last_mile_branchless_ns: Fixed<2>,
    last_mile_partition_point_ns: Fixed<2>,
    queries_file: String,
    existing_queries: usize,
    segments: u64,
    threads: usize,
    build_threads_s: Fixed<6>,
    segments_threads: u64,
}

/// Writes `index-bench.csv` and the two plots; returns the line saying so.
fn write_outputs(
    options: &Options,
    table: &Table,
    n: usize,
    existing_queries: usize,
    rows: &[IndexMeasurement],
) -> anyhow::Result<String> {
    let machine = crate::machine::describe();
    let csv_rows: Vec<BenchRow<'_>> = rows
        .iter()
        .map(|r| BenchRow {
            lidx_version: LIDX_VERSION,
            machine: &machine,
            table: table.path().display().to_string(),
            n,
            kind: r.kind.name(),
            params: &r.params,
            target_width: r.target_width,
            build_s: Fixed(r.build_s),
            size_bytes: r.size_bytes,
            size_pct_of_data: Fixed(r.size_pct),
            lookup_ns_existing: Fixed(r.existing_ns),
            lookup_ns_random: Fixed(r.absent_ns),
            partition_point_ns: Fixed(r.partition_point_ns),
            mean_width: Fixed(r.mean_width),
            max_width: r.max_width,
            mean_blocks: Fixed(r.mean_blocks),
            disk_queries: options.disk_queries,
            disk_us_per_lookup: Fixed(r.disk_us),
            disk_blocks_per_lookup: Fixed(r.disk_blocks),
            disk_reads_per_lookup: Fixed(r.disk_reads),
            last_mile_branchless_ns: Fixed(r.last_mile_ns.0),
            last_mile_partition_point_ns: Fixed(r.last_mile_ns.1),
            queries_file: options
                .queries_file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            existing_queries,
            segments: r.segments.0,
            threads: r.threads,
            build_threads_s: Fixed(r.build_threads_s),
            segments_threads: r.segments.1,
        })
        .collect();
    let csv_path = options.out_dir.join("index-bench.csv");
    let mut out = AtomicFile::create(&csv_path)?;
    write_rows(&mut out, &csv_rows)?;
    out.finish()?;

    let lookup_png = options.out_dir.join("index-size-vs-lookup.png");
    chart(
        &lookup_png,
        &format!("Index size against lookup time ({n} keys, in memory)"),
        ("index size (bytes)", Scale::Log),
        ("lookup (ns, existing keys)", Scale::Linear),
        &by_kind(rows, |r| Some((r.size_bytes as f64, r.existing_ns))),
        false,
    )?;
    let window_png = options.out_dir.join("index-size-vs-window.png");
    chart(
        &window_png,
        &format!("Index size against window width ({n} keys)"),
        ("window width (positions)", Scale::Log),
        ("index size (bytes)", Scale::Log),
        &by_kind(rows, |r| {
            (r.target_width > 0).then_some((r.target_width as f64, r.size_bytes as f64))
        }),
        true,
    )?;
    Ok(format!(
        "wrote {}, {} and {}\n",
        csv_path.display(),
        lookup_png.display(),
        window_png.display()
    ))
}

/// One series per kind, in the order the kinds first appear, of the points `point` gives.
fn by_kind(
    rows: &[IndexMeasurement],
    point: impl Fn(&IndexMeasurement) -> Option<(f64, f64)>,
) -> Vec<Series> {
    let mut kinds: Vec<IndexKind> = Vec::new();
    for r in rows {
        if !kinds.contains(&r.kind) {
            kinds.push(r.kind);
        }
    }
    kinds
        .into_iter()
        .map(|k| Series {
            name: k.name().to_string(),
            points: rows
                .iter()
                .filter(|r| r.kind == k)
                .filter_map(&point)
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}
