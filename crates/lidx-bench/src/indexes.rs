//! `lidx experiment indexes`: paper 1's index study (section 5.2). For every index kind
//! and key set: the in-memory size, the build time (keys in memory, as the paper measures),
//! and the time of a cold INLJ self-join through the saved index in a fresh process
//! (Fig. 5), ALEX on disk among them (its data nodes, holding the tuples, in a file read a
//! page at a time; its inner nodes in memory); and the sizes of PGM and sampled PGM as
//! their window grows (Table 2).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::bail;
use lidx::index::file::{self, KeysFingerprint};
use lidx::index::measure::Queries;
use lidx::index::{AnyIndex, AnyParams, IndexKind, tune};
use lidx::join::{JoinMethod, JoinRecord};
use lidx::storage::{TUPLE_SIZE, Table};
use lidx::updatable::alex::{self, AlexParams};
use serde::Serialize;

use crate::csv_rows::{Fixed, write_rows};
use crate::harness::{ColdJoin, Scratch, Setup, Study, write_table};
use crate::plot::{Scale, Series, chart};
use crate::progress::Progress;
use crate::text::{human_bytes, times};

/// The window every kind of Fig. 5 is built for: one block of 256 tuples.
const FIG5_WINDOW: u64 = 256;

/// An index of Fig. 5: a kind of the index family, or ALEX on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fig5Index {
    /// A kind of the index family, at its 256-position setting (or tuned).
    Family(IndexKind),
    /// ALEX on disk (`lidx index build --kind alex`), at its default densities.
    Alex,
}

impl Fig5Index {
    /// The name on the command line and in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Fig5Index::Family(kind) => kind.name(),
            Fig5Index::Alex => "alex",
        }
    }
}

impl std::fmt::Display for Fig5Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Fig5Index {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "alex" {
            return Ok(Fig5Index::Alex);
        }
        s.parse()
            .map(Fig5Index::Family)
            .map_err(|e: lidx::Error| format!("{e}, or alex"))
    }
}

/// The study's own settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Indexes for Fig. 5, each family kind built for windows of at most 256 positions.
    pub indexes: Vec<Fig5Index>,
    /// Windows for Table 2 (PGM and sampled PGM sizes).
    pub windows: Vec<u64>,
    /// Tune RadixSpline and RMI on each key set (the fastest lookups within 1% of the
    /// data's size) instead of their 256-position settings.
    pub tune: bool,
}

/// One index of Fig. 5 and its self-join.
struct Row {
    set: String,
    kind: Fig5Index,
    params: String,
    bytes: u64,
    max_window: u64,
    build_s: f64,
    /// Bytes of the file the join reads on the inner side: the table, or ALEX's file.
    inner_file_bytes: u64,
    join: JoinRecord,
}

/// One size of Table 2, as a row of `table2_sizes.csv`.
#[derive(Serialize, Default)]
struct SizeRow {
    key_set: String,
    index: &'static str,
    window: u64,
    index_bytes: u64,
    build_s: Fixed<6>,
    machine: String,
}

/// One index of Fig. 5, as a row of `indexes.csv`.
#[derive(Serialize, Default)]
struct CsvRow<'a> {
    experiment: &'static str,
    key_set: &'a str,
    n: u64,
    index: &'static str,
    params: &'a str,
    max_window: u64,
    index_bytes: u64,
    inner_file_bytes: u64,
    build_s: Fixed<6>,
    self_join_s: Fixed<6>,
    direct: bool,
    output_tuples: u64,
    inner_blocks: u64,
    inner_bytes: u64,
    inner_reads: u64,
    outer_reads: u64,
    model_s: Fixed<6>,
    machine: &'a str,
    device: &'a str,
}

/// The index of `kind` over `keys` at its Fig. 5 setting (or tuned), and its build time
/// (of the configuration chosen, not of the whole tuning search).
fn fig5_index(kind: IndexKind, keys: &[u64], tuned: bool) -> anyhow::Result<(AnyIndex, f64)> {
    // Every kind at its 256-position setting, as paper 1 compares them (its RMI and
    // RadixSpline are tuned per data set; a plain RMI's window is unbounded).
    let params =
        AnyParams::for_width(kind, FIG5_WINDOW).unwrap_or_else(|| AnyParams::default_for(kind));
    let t = Instant::now();
    if !tuned {
        let index = AnyIndex::build(keys, &params)?;
        return Ok((index, t.elapsed().as_secs_f64()));
    }
    let queries = Queries::draw(keys, 100_000, 7);
    let epsilon = match params {
        AnyParams::RadixSpline(p) => p.epsilon,
        _ => 0,
    };
    let budget = keys.len() as u64 * TUPLE_SIZE as u64 / 100;
    let (index, trials) = tune::tune(kind, keys, &queries.existing, epsilon, budget, |_| {})?;
    let chosen = index.describe();
    let build_s = trials
        .iter()
        .find(|t| t.params == chosen)
        .map_or(t.elapsed().as_secs_f64(), |t| t.build_seconds);
    Ok((index, build_s))
}

/// The cold self-join of `table` through the saved index at `index` (paper 1: one thread,
/// 1 MiB reads of the outer side, one window read at a time).
fn self_join<'a>(
    table: &'a Path,
    method: JoinMethod,
    index: &'a Path,
    profile: &'a Path,
) -> ColdJoin<'a> {
    ColdJoin {
        outer: table,
        inner: table,
        method,
        index: Some(index),
        threads: 1,
        read_size: 1 << 20,
        io_depth: 1,
        profile,
    }
}

/// Runs the study; returns the report to print.
pub fn run(setup: &Setup, options: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    if options.indexes.is_empty() {
        bail!("invalid indexes: give one or more index kinds");
    }
    if options.windows.iter().any(|&w| w < 4) {
        bail!("invalid windows: each must be at least 4 tuples");
    }
    let (study, [mut csv_out, mut sizes_out, mut summary_out]) = setup.begin(
        "indexes",
        ["indexes.csv", "table2_sizes.csv", "summary.md"],
        progress,
    )?;
    let Study {
        sets,
        dirs,
        machine,
        profile,
        profile_path,
        started,
    } = &study;

    let per_set = options.indexes.len() + 2 * options.windows.len();
    progress.start((sets.len() * per_set) as u64, "indexes", "steps");
    let mut rows = Vec::new();
    let mut sizes = Vec::new();
    for set in sets {
        let name = set.name();
        progress.message(&format!("{name}: data"));
        let keys = set.load()?;
        let mut scratch = Scratch::new(setup.keep_data);
        let table = scratch.add(dirs.data.join(format!("{name}.tbl")));
        write_table(&keys, &table)?;
        let fingerprint = KeysFingerprint::of(&keys);
        let table_bytes = std::fs::metadata(&table)?.len();
        for &index in &options.indexes {
            progress.message(&format!("{name}: {index}"));
            let row = match index {
                Fig5Index::Family(kind) => {
                    let tuned =
                        options.tune && matches!(kind, IndexKind::RadixSpline | IndexKind::Rmi);
                    let (built, build_s) = fig5_index(kind, &keys, tuned)?;
                    let path = scratch.add(dirs.data.join(format!("{name}.{kind}.idx")));
                    file::save(&path, &built, &fingerprint)?;
                    // The self-join, cold, in a fresh process through the saved index (paper 1).
                    let join = setup.cold_join(&self_join(
                        &table,
                        JoinMethod::Inlj(kind),
                        &path,
                        profile_path,
                    ))?;
                    Row {
                        set: name.clone(),
                        kind: index,
                        params: built.describe(),
                        bytes: built.size_in_bytes(),
                        max_window: built.max_width(),
                        build_s,
                        inner_file_bytes: table_bytes,
                        join,
                    }
                }
                Fig5Index::Alex => {
                    let path = scratch.add(dirs.data.join(format!("{name}.alex")));
                    let params = AlexParams::default();
                    let report =
                        alex::file::build(&Table::open(&table)?, &keys, &path, &params, |_| {})?;
                    let join = setup.cold_join(&self_join(
                        &table,
                        JoinMethod::InljAlex,
                        &path,
                        profile_path,
                    ))?;
                    Row {
                        set: name.clone(),
                        kind: index,
                        params: format!(
                            "density={} nodes={}+{}",
                            params.init_density, report.inner_nodes, report.data_nodes
                        ),
                        bytes: report.memory_bytes,
                        max_window: 0,
                        // The nodes are chosen in memory, then the tuples written: both build it.
                        build_s: report.plan_s + report.write_s,
                        inner_file_bytes: report.file_bytes,
                        join,
                    }
                }
            };
            progress.step();
            rows.push(row);
        }
        for kind in [IndexKind::Pgm, IndexKind::SampledPgm] {
            for &window in &options.windows {
                let Some(params) = AnyParams::for_width(kind, window) else {
                    continue;
                };
                let t = Instant::now();
                let index = AnyIndex::build(&keys, &params)?;
                sizes.push(SizeRow {
                    key_set: name.clone(),
                    index: kind.name(),
                    window,
                    index_bytes: index.size_in_bytes(),
                    build_s: Fixed(t.elapsed().as_secs_f64()),
                    machine: machine.clone(),
                });
                progress.step();
            }
        }
    }
    progress.finish();

    let csv_rows: Vec<CsvRow<'_>> = rows
        .iter()
        .map(|r| CsvRow {
            experiment: "indexes",
            key_set: &r.set,
            n: r.join.inner_tuples,
            index: r.kind.name(),
            params: &r.params,
            max_window: r.max_window,
            index_bytes: r.bytes,
            inner_file_bytes: r.inner_file_bytes,
            build_s: Fixed(r.build_s),
            self_join_s: Fixed(r.join.join_s),
            direct: r.join.direct,
            output_tuples: r.join.output_tuples,
            inner_blocks: r.join.inner_blocks,
            inner_bytes: r.join.inner_bytes,
            inner_reads: r.join.inner_reads,
            outer_reads: r.join.outer_reads,
            model_s: Fixed(r.join.model_s),
            machine,
            device: &profile.device,
        })
        .collect();
    write_rows(&mut csv_out.file, &csv_rows)?;
    write_rows(&mut sizes_out.file, &sizes)?;

    let summary = summarize(options, &rows, &sizes);
    let md = format!(
        "# lidx experiment indexes\n\nMachine: {machine}. Device: {}. {} keys per set; each self-join a fresh process, cold, {}.\n\n{summary}",
        profile.device,
        setup.n,
        setup.reads()
    );
    summary_out.file.write_all(md.as_bytes())?;
    let paths = [&csv_out, &sizes_out, &summary_out].map(|o| o.path.display().to_string());
    csv_out.finish()?;
    sizes_out.finish()?;
    summary_out.finish()?;
    plot(options, &rows, &sizes, &dirs.out)?;
    dirs.finish();
    Ok(format!(
        "{summary}\n\n{} indexes in {:.0} s. Wrote {}, {}, {} and 3 plots in {}\n",
        rows.len() + sizes.len(),
        started.elapsed().as_secs_f64(),
        paths[0],
        paths[1],
        paths[2],
        dirs.out.display()
    ))
}

/// The (key set, kind) pairs of Table 2, in the order they were measured.
fn size_series(sizes: &[SizeRow]) -> Vec<(&str, &'static str)> {
    let mut seen: Vec<(&str, &'static str)> = Vec::new();
    for r in sizes {
        if !seen.contains(&(r.key_set.as_str(), r.index)) {
            seen.push((r.key_set.as_str(), r.index));
        }
    }
    seen
}

fn summarize(options: &Options, rows: &[Row], sizes: &[SizeRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Fig. 5: size in memory, build time (keys in memory) and a cold INLJ self-join through each index. Paper (SSD, 200M-800M keys): PGM 1.1-1.7x faster than the B+tree in the self-join, 4x (real) to 10x (synthetic) smaller; learned indexes slower to build; ALEX on disk (data nodes in a file, inner nodes in memory) not competitive in the self-join and out of memory on OSM and Books. ALEX's build writes its file (the table's tuples in gapped data nodes), and its self-join reads that file, not the table.\n"
    );
    let _ = writeln!(
        s,
        "| key set | index | params | max window | size | inner file | build s | self-join s | inner reads | speedup vs btree | btree size / size |"
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let btree = rows
            .iter()
            .find(|b| b.set == r.set && b.kind == Fig5Index::Family(IndexKind::BTree));
        let (vs_join, vs_size) = match btree {
            Some(b) => (
                times(b.join.join_s / r.join.join_s),
                times(b.bytes as f64 / r.bytes.max(1) as f64),
            ),
            None => ("-".into(), "-".into()),
        };
        let window = match r.kind {
            Fig5Index::Alex => "-".to_string(),
            Fig5Index::Family(_) => r.max_window.to_string(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {window} | {} | {} | {:.3} | {:.3} | {} | {vs_join} | {vs_size} |",
            r.set,
            r.kind,
            r.params,
            human_bytes(r.bytes),
            human_bytes(r.inner_file_bytes),
            r.build_s,
            r.join.join_s,
            r.join.inner_reads,
        );
    }
    let _ = writeln!(
        s,
        "\nTable 2: index size against window (paper, sampled PGM: shrinks several-fold from 256 to 4096).\n"
    );
    let mut header = "| key set | index |".to_string();
    let mut rule = "|---|---|".to_string();
    for w in &options.windows {
        let _ = write!(header, " w={w} |");
        rule.push_str("---:|");
    }
    let _ = writeln!(s, "{header}\n{rule}");
    for (set, kind) in size_series(sizes) {
        let mut line = format!("| {set} | {kind} |");
        for w in &options.windows {
            let size = sizes
                .iter()
                .find(|x| x.key_set == set && x.index == kind && x.window == *w)
                .map_or("-".to_string(), |x| human_bytes(x.index_bytes));
            let _ = write!(line, " {size} |");
        }
        let _ = writeln!(s, "{line}");
    }
    s
}

fn plot(options: &Options, rows: &[Row], sizes: &[SizeRow], out: &Path) -> anyhow::Result<()> {
    let by_kind = |f: &dyn Fn(&Row) -> (f64, f64)| -> Vec<Series> {
        options
            .indexes
            .iter()
            .map(|&kind| Series {
                name: kind.to_string(),
                points: rows.iter().filter(|r| r.kind == kind).map(f).collect(),
            })
            .collect()
    };
    chart(
        &out.join("fig5_size_vs_self_join.png"),
        "Index size against cold INLJ self-join time (one point per key set)",
        ("index size (bytes)", Scale::Log),
        ("self-join time (s)", Scale::Log),
        &by_kind(&|r| (r.bytes as f64, r.join.join_s)),
        false,
    )?;
    chart(
        &out.join("fig5_size_vs_build.png"),
        "Index size against build time (one point per key set)",
        ("index size (bytes)", Scale::Log),
        ("build time (s)", Scale::Log),
        &by_kind(&|r| (r.bytes as f64, r.build_s)),
        false,
    )?;
    let series: Vec<Series> = size_series(sizes)
        .into_iter()
        .map(|(set, kind)| Series {
            name: format!("{set} {kind}"),
            points: sizes
                .iter()
                .filter(|x| x.key_set == set && x.index == kind)
                .map(|x| (x.window as f64, x.index_bytes as f64))
                .collect(),
        })
        .collect();
    chart(
        &out.join("table2_size_vs_window.png"),
        "Table 2: PGM and sampled PGM size against window",
        ("window (positions)", Scale::Log),
        ("index size (bytes)", Scale::Log),
        &series,
        true,
    )
}
