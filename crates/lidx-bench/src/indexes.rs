//! `lidx experiment indexes`: paper 1's index study (section 5.2). For every index kind
//! and key set: the in-memory size, the build time (keys in memory, as the paper measures),
//! and the time of a cold INLJ self-join through the saved index in a fresh process
//! (Fig. 5), ALEX on disk among them (its data nodes, holding the tuples, in a file read a
//! page at a time; its inner nodes in memory); and the sizes of PGM and sampled PGM as
//! their window grows (Table 2).
//!
//! The study runs as the harness's cells: per key set, each index of Fig. 5 is a cell
//! (built, saved and self-joined), then Table 2's sizes one more; the set's table is
//! written by its first cell and removed, with its indexes, after its last.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::bail;
use lidx::index::file;
use lidx::index::measure::Queries;
use lidx::index::{AnyIndex, AnyParams, IndexKind, tune};
use lidx::join::{JoinMethod, JoinRecord};
use lidx::storage::{TUPLE_SIZE, Table};
use lidx::updatable::alex::{self, AlexParams};
use serde::Serialize;

use crate::csv_rows::{Fixed, write_rows};
use crate::harness::{self, ColdJoin, Experiment, KeySet, SetTable, Setup, Study};
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

/// One index of Fig. 5 and its self-join, as measured. Its CSV row is a [`CsvRow`], which
/// adds the machine and the device.
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

/// One cell of the study.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    /// Fig. 5: `index` built over the `set`-th key set, and its cold self-join.
    Fig5 { set: usize, index: Fig5Index },
    /// Table 2: PGM and sampled PGM over the `set`-th key set at every window.
    Table2 { set: usize },
}

/// What one step measured: an index of Fig. 5 with its self-join, or a size of Table 2.
enum Measured {
    Fig5(Box<Row>),
    Table2(SizeRow),
}

/// A key set's table, kept for the set's cells; its files (the table and the saved
/// indexes) are removed when this drops (unless the data is kept).
struct Loaded {
    /// The key set's table; the indexes' files go in its scratch.
    set: SetTable,
    table_bytes: u64,
}

impl Loaded {
    /// `index` built over the set's keys and saved in `data` (`tune`: RadixSpline and RMI
    /// tuned), and its cold self-join, whose cost model reads `profile`.
    fn fig5(
        &mut self,
        setup: &Setup,
        tune: bool,
        (data, profile): (&Path, &Path),
        index: Fig5Index,
        progress: &dyn Progress,
    ) -> anyhow::Result<Row> {
        let name = &self.set.name.clone();
        progress.message(&format!("{name}: {index}"));
        Ok(match index {
            Fig5Index::Family(kind) => {
                let tuned = tune && matches!(kind, IndexKind::RadixSpline | IndexKind::Rmi);
                let (built, build_s) = fig5_index(kind, &self.set.keys, tuned)?;
                let path = self
                    .set
                    .scratch
                    .add(data.join(format!("{name}.{kind}.idx")));
                file::save(&path, &built, &self.set.fingerprint)?;
                // The self-join, cold, in a fresh process through the saved index (paper 1).
                let join = setup.cold_join(&self_join(
                    &self.set.table,
                    JoinMethod::Inlj(kind),
                    &path,
                    profile,
                ))?;
                Row {
                    set: name.clone(),
                    kind: index,
                    params: built.describe(),
                    bytes: built.size_in_bytes(),
                    max_window: built.max_width(),
                    build_s,
                    inner_file_bytes: self.table_bytes,
                    join,
                }
            }
            Fig5Index::Alex => {
                let path = self.set.scratch.add(data.join(format!("{name}.alex")));
                let params = AlexParams::default();
                let report = alex::file::build(
                    &Table::open(&self.set.table)?,
                    &self.set.keys,
                    &path,
                    &params,
                    |_| {},
                )?;
                let join = setup.cold_join(&self_join(
                    &self.set.table,
                    JoinMethod::InljAlex,
                    &path,
                    profile,
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
        })
    }
}

/// Paper 1's index study as the harness runs it: per key set, each index of Fig. 5 a
/// cell, then Table 2's sizes.
struct Measuring<'a> {
    setup: &'a Setup,
    o: &'a Options,
    sets: &'a [KeySet],
    /// Where the table and indexes go.
    data: &'a Path,
    machine: &'a str,
    /// The storage profile every self-join's cost model reads.
    profile: &'a Path,
    /// The key set whose cells are running, written by its first.
    set: Option<Loaded>,
}

impl Measuring<'_> {
    /// Makes the `i`-th key set the one loaded: kept where it is already, else the previous
    /// set's files removed and its table written now.
    fn load(&mut self, i: usize, progress: &dyn Progress) -> anyhow::Result<()> {
        if self.set.as_ref().is_some_and(|s| s.set.set == i) {
            return Ok(());
        }
        // The previous set's files go first: a set of the same name writes the same paths.
        self.set = None;
        let set = SetTable::write(self.sets, i, (self.data, self.setup.keep_data), progress)?;
        let table_bytes = std::fs::metadata(&set.table)?.len();
        self.set = Some(Loaded { set, table_bytes });
        Ok(())
    }
}

/// Table 2's indexes: PGM and sampled PGM at each of `windows` they have a setting for.
fn table2_params(windows: &[u64]) -> impl Iterator<Item = (IndexKind, u64, AnyParams)> + '_ {
    [IndexKind::Pgm, IndexKind::SampledPgm]
        .into_iter()
        .flat_map(move |kind| {
            windows.iter().filter_map(move |&window| {
                Some((kind, window, AnyParams::for_width(kind, window)?))
            })
        })
}

impl Experiment for Measuring<'_> {
    type Cell = Cell;
    type Row = Measured;

    /// Every key set in order; in each, every index of Fig. 5, then Table 2.
    fn cells(&self) -> anyhow::Result<Vec<Cell>> {
        let mut cells = Vec::new();
        for set in 0..self.sets.len() {
            cells.extend(
                self.o
                    .indexes
                    .iter()
                    .map(|&index| Cell::Fig5 { set, index }),
            );
            cells.push(Cell::Table2 { set });
        }
        Ok(cells)
    }

    /// One per index of Fig. 5 (built and self-joined) and per size of Table 2.
    fn steps(&self, cell: &Cell) -> u64 {
        match cell {
            Cell::Fig5 { .. } => 1,
            Cell::Table2 { .. } => table2_params(&self.o.windows).count() as u64,
        }
    }

    /// The cell's index (or sizes); the key set's table is written by its first cell and
    /// removed, with its indexes, after its last (or when the study ends, on an error too).
    fn run_cell(&mut self, cell: &Cell, progress: &dyn Progress) -> anyhow::Result<Vec<Measured>> {
        let (Cell::Fig5 { set, .. } | Cell::Table2 { set }) = *cell;
        self.load(set, progress)?;
        let (setup, o, data, profile) = (self.setup, self.o, self.data, self.profile);
        let s = self
            .set
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("the key set was just loaded"))?;
        match *cell {
            Cell::Fig5 { index, .. } => {
                let row = s.fig5(setup, o.tune, (data, profile), index, progress)?;
                progress.step();
                Ok(vec![Measured::Fig5(Box::new(row))])
            }
            Cell::Table2 { .. } => {
                let mut sizes = Vec::new();
                for (kind, window, params) in table2_params(&o.windows) {
                    let t = Instant::now();
                    let index = AnyIndex::build(&s.set.keys, &params)?;
                    sizes.push(Measured::Table2(SizeRow {
                        key_set: s.set.name.clone(),
                        index: kind.name(),
                        window,
                        index_bytes: index.size_in_bytes(),
                        build_s: Fixed(t.elapsed().as_secs_f64()),
                        machine: self.machine.to_string(),
                    }));
                    progress.step();
                }
                // The set's last cell: its table and indexes go.
                self.set = None;
                Ok(sizes)
            }
        }
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

    let mut measuring = Measuring {
        setup,
        o: options,
        sets,
        data: &dirs.data,
        machine,
        profile: profile_path,
        set: None,
    };
    let (_, measured) = harness::measure(&mut measuring, "indexes", "steps", progress)?;
    drop(measuring);
    let mut rows = Vec::new();
    let mut sizes = Vec::new();
    for m in measured {
        match m {
            Measured::Fig5(row) => rows.push(*row),
            Measured::Table2(size) => sizes.push(size),
        }
    }

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

#[cfg(test)]
mod tests {
    use lidx::data::Distribution;

    use super::*;
    use crate::join_sorted::tests::{Counted, files, setup};

    /// The study's cells against a small run: per key set every index of Fig. 5, then
    /// Table 2, a step per index and per size. The self-joins run in a stand-in for `lidx`
    /// (see the sorted joins' tests), so the test needs no `lidx` executable and judges no
    /// time.
    #[test]
    fn every_index_of_every_set_is_a_cell_and_table_2_one_more() {
        let dir = tempfile::tempdir().unwrap();
        let setup = setup(
            dir.path(),
            &[Distribution::Udense, Distribution::Lognormal],
            2_000,
        );
        let indexes: Vec<Fig5Index> = ["pgm", "btree", "alex"]
            .iter()
            .map(|k| k.parse().unwrap())
            .collect();
        let o = Options {
            indexes: indexes.clone(),
            windows: vec![256, 1024, 4096],
            tune: false,
        };
        let (study, _outputs) = setup
            .begin("indexes", ["x.csv"], &Counted::default())
            .unwrap();
        let mut measuring = Measuring {
            setup: &setup,
            o: &o,
            sets: &study.sets,
            data: &study.dirs.data,
            machine: &study.machine,
            profile: &study.profile_path,
            set: None,
        };

        let cells = measuring.cells().unwrap();
        let mut want = Vec::new();
        for set in 0..2 {
            want.extend(indexes.iter().map(|&index| Cell::Fig5 { set, index }));
            want.push(Cell::Table2 { set });
        }
        assert_eq!(cells, want);
        let steps: Vec<u64> = cells.iter().map(|c| measuring.steps(c)).collect();
        // PGM and sampled PGM at 3 windows.
        assert_eq!(steps, [1, 1, 1, 2 * 3, 1, 1, 1, 2 * 3]);

        let counted = Counted::default();
        let (_, measured) = harness::measure(&mut measuring, "indexes", "steps", &counted).unwrap();
        let total: u64 = steps.iter().sum();
        assert_eq!(*counted.totals.borrow(), [total]);
        assert_eq!(counted.steps.get(), total);
        assert_eq!(measured.len() as u64, total);
        let shown: Vec<String> = measured
            .iter()
            .map(|m| match m {
                Measured::Fig5(r) => format!("{} {}", r.set, r.kind),
                Measured::Table2(s) => format!("{} {} w{}", s.key_set, s.index, s.window),
            })
            .collect();
        let mut want = Vec::new();
        for set in ["udense", "lognormal"] {
            want.extend(["pgm", "btree", "alex"].map(|k| format!("{set} {k}")));
            for kind in ["pgm", "sampled-pgm"] {
                want.extend([256, 1024, 4096].map(|w| format!("{set} {kind} w{w}")));
            }
        }
        assert_eq!(shown, want);
        // Each set's table and indexes went after its last cell.
        let data = &study.dirs.data;
        assert!(files(data).is_empty(), "{:?}", files(data));
    }
}
