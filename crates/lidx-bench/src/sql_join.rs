//! `lidx experiment sql-join`: one join in SQL, the same tuples read three ways through
//! DataFusion (issue 38): its own hash join over Parquet files of the tuples, over lidx
//! tables with the learned index nested loop join off, and with the learned join where
//! paper 1's cost model (section 3.2) picks it; and the learned join wherever it can run,
//! to judge the picks. The outer table is a uniform 1/ratio sample of the inner, as in
//! paper 1's section 5.3; every query is a fresh `lidx sql --json --cold` process, every
//! file read through the page cache with its pages dropped first (DataFusion reads Parquet
//! no other way), on the same threads.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::bail;
use lidx::index::{AnyIndex, AnyParams, IndexKind, file};
use lidx::storage::Table;
use lidx::storage::profile::StorageProfile;
use lidx_datafusion::counts::QueryRecord;
use lidx_datafusion::parquet::{ParquetCompression, export};
use serde::Serialize;

use crate::csv_rows::{Fixed, write_rows};
use crate::harness::{
    self, Experiment, Finding, Findings, KeySet, Scratch, SetTable, Setup, Study, Verdict,
    write_table,
};
use crate::plot::{Scale, Series, chart};
use crate::progress::Progress;
use crate::stats::median;
use crate::text::{human_bytes, times};

/// The query every way runs: every matching pair, counted and summed (so every column of
/// both sides is read, and the output costs nothing).
pub const QUERY: &str =
    "SELECT count(*) AS n, sum(r.value) AS rv, sum(s.value) AS sv FROM r JOIN s ON r.key = s.key";

/// The study's own settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Size ratios |S|/|R|.
    pub ratios: Vec<u64>,
    /// DataFusion's partitions, for every way.
    pub threads: usize,
    /// Window reads each learned join keeps in flight.
    pub io_depth: usize,
    /// Measurements per way and cell; each figure is the median of its repeats.
    pub repeat: usize,
    /// How the Parquet files' pages are compressed.
    pub compression: ParquetCompression,
}

impl Options {
    fn validate(&self) -> anyhow::Result<()> {
        if self.ratios.is_empty() || self.ratios.contains(&0) {
            bail!("invalid ratios: each must be at least 1");
        }
        if self.threads == 0 || self.io_depth == 0 || self.repeat == 0 {
            bail!("invalid threads, io-depth or repeat: each must be at least 1");
        }
        Ok(())
    }
}

/// How a query reads the tuples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Way {
    /// Parquet files, DataFusion's own plan.
    Parquet,
    /// lidx tables, the learned join off.
    LidxOff,
    /// lidx tables, the learned join where the cost model picks it.
    LidxAuto,
    /// lidx tables, the learned join wherever it can run.
    LidxOn,
}

impl Way {
    const ALL: [Way; 4] = [Way::Parquet, Way::LidxOff, Way::LidxAuto, Way::LidxOn];

    /// The name in the CSV, the summary and the plots.
    pub fn name(self) -> &'static str {
        match self {
            Way::Parquet => "parquet",
            Way::LidxOff => "lidx-off",
            Way::LidxAuto => "lidx-auto",
            Way::LidxOn => "lidx-on",
        }
    }

    fn index_join(self) -> &'static str {
        match self {
            Way::Parquet | Way::LidxOff => "off",
            Way::LidxAuto => "auto",
            Way::LidxOn => "on",
        }
    }
}

/// One query as measured.
struct Row {
    set: String,
    ratio: u64,
    way: Way,
    repeat: usize,
    outer_tuples: u64,
    inner_tuples: u64,
    /// Bytes of the two files the way reads.
    file_bytes: u64,
    rec: QueryRecord,
}

/// One query as a row of `sql_join.csv`.
#[derive(Serialize, Default)]
struct CsvRow<'a> {
    experiment: &'static str,
    key_set: &'a str,
    inner_tuples: u64,
    outer_tuples: u64,
    ratio: u64,
    way: &'static str,
    index_join: &'a str,
    learned_join: bool,
    threads: usize,
    io_depth: usize,
    cold: bool,
    parquet_compression: &'a str,
    input_bytes: u64,
    repeat: usize,
    query_s: Fixed<6>,
    lookups: u64,
    lookup_blocks: u64,
    lookup_bytes: u64,
    lookup_reads: u64,
    scan_blocks: u64,
    scan_bytes: u64,
    scan_reads: u64,
    parquet_bytes_read: u64,
    predicted_learned_s: Option<Fixed<6>>,
    predicted_hash_s: Option<Fixed<6>>,
    peak_rss: Option<u64>,
    machine: &'a str,
    device: &'a str,
    profile_seq_latency_us: Fixed<1>,
    profile_seq_mb_s: Fixed<1>,
    profile_rand_latency_us: Fixed<1>,
    profile_rand_mb_s: Fixed<1>,
}

impl<'a> CsvRow<'a> {
    fn new(r: &'a Row, o: &'a Options, machine: &'a str, p: &'a StorageProfile) -> Self {
        let c = &r.rec.counts;
        CsvRow {
            experiment: "sql-join",
            key_set: &r.set,
            inner_tuples: r.inner_tuples,
            outer_tuples: r.outer_tuples,
            ratio: r.ratio,
            way: r.way.name(),
            index_join: &r.rec.index_join,
            learned_join: c.learned_joins > 0,
            threads: r.rec.threads,
            io_depth: r.rec.io_depth,
            cold: r.rec.cold,
            parquet_compression: compression_name(o.compression),
            input_bytes: r.file_bytes,
            repeat: r.repeat,
            query_s: Fixed(r.rec.seconds),
            lookups: c.lookups,
            lookup_blocks: c.lookup_blocks,
            lookup_bytes: c.lookup_bytes,
            lookup_reads: c.lookup_reads,
            scan_blocks: c.scan_blocks,
            scan_bytes: c.scan_bytes,
            scan_reads: c.scan_reads,
            parquet_bytes_read: c.file_bytes,
            predicted_learned_s: r.rec.predicted_learned_s.map(Fixed),
            predicted_hash_s: r.rec.predicted_hash_s.map(Fixed),
            peak_rss: r.rec.peak_rss,
            machine,
            device: &p.device,
            profile_seq_latency_us: Fixed(p.sequential.latency_us),
            profile_seq_mb_s: Fixed(p.sequential.bandwidth_mb_s),
            profile_rand_latency_us: Fixed(p.random.latency_us),
            profile_rand_mb_s: Fixed(p.random.bandwidth_mb_s),
        }
    }
}

fn compression_name(c: ParquetCompression) -> &'static str {
    match c {
        ParquetCompression::None => "none",
        ParquetCompression::Snappy => "snappy",
        ParquetCompression::Zstd => "zstd",
    }
}

/// A cell: one key set at one ratio.
struct Cell {
    set: usize,
    at: usize,
    ratio: u64,
}

/// A key set's inner table, its index and its Parquet file, kept for the set's cells.
struct Inner {
    set: SetTable,
    index: PathBuf,
    parquet: PathBuf,
}

struct Measuring<'a> {
    setup: &'a Setup,
    o: &'a Options,
    sets: &'a [KeySet],
    data: &'a Path,
    profile: &'a Path,
    inner: Option<Inner>,
}

/// The size of the file at `path`.
fn bytes_of(path: &Path) -> anyhow::Result<u64> {
    Ok(std::fs::metadata(path)?.len())
}

impl Measuring<'_> {
    /// The `i`-th key set's inner table, its sampled PGM (saved, as `lidx index build`
    /// does) and its Parquet file, built where they are not already.
    fn build_inner(&mut self, i: usize, progress: &dyn Progress) -> anyhow::Result<()> {
        if self.inner.as_ref().is_some_and(|inner| inner.set.set == i) {
            return Ok(());
        }
        self.inner = None;
        let mut set = SetTable::write(self.sets, i, (self.data, self.setup.keep_data), progress)?;
        let name = set.name.clone();
        let params = AnyParams::default_for(IndexKind::SampledPgm);
        let index = AnyIndex::build(&set.keys, &params)?;
        let index_path = set.scratch.add(self.data.join(format!("{name}.idx")));
        file::save(&index_path, &index, &set.fingerprint)?;
        let parquet = set.scratch.add(self.data.join(format!("{name}.parquet")));
        progress.message(&format!("{name}: Parquet"));
        export(
            &Table::open(&set.table)?,
            &parquet,
            self.o.compression,
            |_| {},
        )?;
        self.inner = Some(Inner {
            set,
            index: index_path,
            parquet,
        });
        Ok(())
    }

    /// Every way of `cell`, each repeat.
    fn queries(
        &self,
        inner: &Inner,
        cell: &Cell,
        progress: &dyn Progress,
    ) -> anyhow::Result<Vec<Row>> {
        let (name, ratio) = (&inner.set.name, cell.ratio);
        let outer_keys = if ratio == 1 {
            inner.set.keys.clone()
        } else {
            lidx::data::sample::random_fraction(
                &inner.set.keys,
                1.0 / ratio as f64,
                self.setup.seed + cell.at as u64,
            )?
        };
        let mut scratch = Scratch::new(self.setup.keep_data);
        let outer = scratch.add(self.data.join(format!("{name}.r{ratio}.tbl")));
        write_table(&outer_keys, &outer)?;
        let outer_parquet = scratch.add(self.data.join(format!("{name}.r{ratio}.parquet")));
        export(
            &Table::open(&outer)?,
            &outer_parquet,
            self.o.compression,
            |_| {},
        )?;
        let tbl_bytes = bytes_of(&outer)? + bytes_of(&inner.set.table)?;
        let parquet_bytes = bytes_of(&outer_parquet)? + bytes_of(&inner.parquet)?;
        let mut rows = Vec::new();
        for repeat in 0..self.o.repeat {
            for way in Way::ALL {
                progress.message(&format!("{name} 1:{ratio} {}", way.name()));
                let table = |n: &str, p: &Path| -> [OsString; 2] {
                    let mut spec = OsString::from(format!("{n}="));
                    spec.push(p);
                    ["--table".into(), spec]
                };
                let mut args: Vec<OsString> = vec![QUERY.into()];
                if way == Way::Parquet {
                    args.extend(table("r", &outer_parquet));
                    args.extend(table("s", &inner.parquet));
                } else {
                    args.extend(table("r", &outer));
                    args.extend(table("s", &inner.set.table));
                    let mut index = OsString::from("s=");
                    index.push(&inner.index);
                    args.extend(["--index".into(), index, "--no-index".into(), "r".into()]);
                }
                args.extend(
                    [
                        "--index-join",
                        way.index_join(),
                        "--threads",
                        &self.o.threads.to_string(),
                        "--io-depth",
                        &self.o.io_depth.to_string(),
                        "--cold",
                        "--json",
                    ]
                    .map(OsString::from),
                );
                args.extend(["--profile".into(), self.profile.into()]);
                let rec: QueryRecord = self.setup.run_json("sql", &args)?;
                progress.step();
                rows.push(Row {
                    set: name.clone(),
                    ratio,
                    way,
                    repeat,
                    outer_tuples: outer_keys.len() as u64,
                    inner_tuples: inner.set.keys.len() as u64,
                    file_bytes: if way == Way::Parquet {
                        parquet_bytes
                    } else {
                        tbl_bytes
                    },
                    rec,
                });
            }
        }
        Ok(rows)
    }
}

impl Experiment for Measuring<'_> {
    type Cell = Cell;
    type Row = Row;

    fn cells(&self) -> anyhow::Result<Vec<Cell>> {
        Ok((0..self.sets.len())
            .flat_map(|set| {
                (self.o.ratios.iter().enumerate()).map(move |(at, &ratio)| Cell { set, at, ratio })
            })
            .collect())
    }

    fn steps(&self, _: &Cell) -> u64 {
        (self.o.repeat * Way::ALL.len()) as u64
    }

    fn run_cell(&mut self, cell: &Cell, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        self.build_inner(cell.set, progress)?;
        let inner = self
            .inner
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the key set was just built"))?;
        let rows = self.queries(inner, cell, progress)?;
        if cell.at + 1 == self.o.ratios.len() {
            self.inner = None;
        }
        Ok(rows)
    }
}

/// The medians of one way at one key set and ratio.
struct Point {
    seconds: f64,
    learned: bool,
    bytes_read: u64,
    reads: u64,
    lookups: u64,
    /// The cost model's (learned, hash) seconds, where the plan had a learned join.
    predicted: Option<(f64, f64)>,
}

/// The medians of `way` at (`set`, `ratio`) over its repeats; `None` if it did not run.
fn point(rows: &[Row], set: &str, ratio: u64, way: Way) -> Option<Point> {
    let of: Vec<&Row> = rows
        .iter()
        .filter(|r| r.set == set && r.ratio == ratio && r.way == way)
        .collect();
    let first = of.first()?;
    let mut seconds: Vec<f64> = of.iter().map(|r| r.rec.seconds).collect();
    let c = &first.rec.counts;
    Some(Point {
        seconds: median(&mut seconds),
        learned: c.learned_joins > 0,
        bytes_read: c.lookup_bytes + c.scan_bytes + c.file_bytes,
        reads: c.lookup_reads + c.scan_reads,
        lookups: c.lookups,
        predicted: first
            .rec
            .predicted_learned_s
            .zip(first.rec.predicted_hash_s),
    })
}

/// The summary: a line per key set and ratio, then the statements judged.
fn summarize(o: &Options, sets: &[KeySet], rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Query: `{QUERY}`. Seconds are medians of {} run(s) of the query alone (tables opened and indexes loaded before); bytes are what the plan's scans and lookups read. Speedups are time ratios, above 1 when the learned join's way (lidx-auto) is faster.\n",
        o.repeat
    );
    let _ = writeln!(
        s,
        "| key set | ratio | parquet | lidx off | lidx auto | lidx on | auto picked | parquet / auto | off / auto | bytes parquet / off / on | lookups |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|");
    let (mut beats_parquet, mut right_picks, mut cells) = (0, 0, 0);
    let (mut learned_wins_small, mut small_cells) = (0, 0);
    let mut wrong = Vec::new();
    for set in sets {
        let name = set.name();
        for &ratio in &o.ratios {
            let p = |w| point(rows, &name, ratio, w);
            let (Some(pq), Some(off), Some(auto), Some(on)) = (
                p(Way::Parquet),
                p(Way::LidxOff),
                p(Way::LidxAuto),
                p(Way::LidxOn),
            ) else {
                continue;
            };
            cells += 1;
            if auto.seconds < pq.seconds {
                beats_parquet += 1;
            }
            // The pick is right when it chose the faster of the two joins it weighs (either,
            // where they tie).
            let learned_faster = on.seconds < off.seconds;
            let right = if auto.learned {
                on.seconds <= off.seconds
            } else {
                off.seconds <= on.seconds
            };
            if right {
                right_picks += 1;
            } else {
                let predicted = on.predicted.map_or(String::new(), |(l, h)| {
                    format!(", predicted {l:.3} s against {h:.3} s")
                });
                wrong.push(format!(
                    "{name} 1:{ratio}: {} picked{predicted}; measured hash {:.3} s, learned {:.3} s ({} lookups, {} reads of {})",
                    if auto.learned { "learned" } else { "hash" },
                    off.seconds,
                    on.seconds,
                    on.lookups,
                    on.reads,
                    human_bytes(on.bytes_read),
                ));
            }
            if ratio >= 10 {
                small_cells += 1;
                if learned_faster {
                    learned_wins_small += 1;
                }
            }
            let _ = writeln!(
                s,
                "| {name} | {ratio} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {} | {} | {} / {} / {} | {} |",
                pq.seconds,
                off.seconds,
                auto.seconds,
                on.seconds,
                if auto.learned { "learned" } else { "hash" },
                times(pq.seconds / auto.seconds),
                times(off.seconds / auto.seconds),
                human_bytes(pq.bytes_read),
                human_bytes(off.bytes_read),
                human_bytes(on.bytes_read),
                on.lookups
            );
        }
    }
    let mut findings = Findings::new("statement", "this run");
    findings.push(Some(Finding {
        paper: "Paper 1 (section 5.3): an index nested loop join beats scanning and hashing when the outer table is small (ratios 10 and above)".into(),
        here: format!("the learned join faster than DataFusion's hash join over the same lidx tables in {learned_wins_small} of {small_cells} cells at ratios >= 10"),
        verdict: (small_cells > 0).then(|| Verdict::of(learned_wins_small, small_cells)),
        why: String::new(),
    }));
    findings.push(Some(Finding {
        paper: "Issue 38: the rule picks the learned join where the cost model says it pays".into(),
        here: format!("the pick was the faster of the two joins in {right_picks} of {cells} cells"),
        verdict: (cells > 0).then(|| Verdict::of(right_picks, cells)),
        why: if wrong.is_empty() {
            String::new()
        } else {
            format!("wrong: {}", wrong.join("; "))
        },
    }));
    findings.push(Some(Finding {
        paper: "Issue 38: over lidx tables with the rule on, the query beats DataFusion's hash join over Parquet".into(),
        here: format!("lidx auto faster than Parquet in {beats_parquet} of {cells} cells"),
        verdict: (cells > 0).then(|| Verdict::of(beats_parquet, cells)),
        why: String::new(),
    }));
    let _ = write!(s, "\n{}", findings.table());
    s
}

/// Time against ratio per key set, the four ways.
fn plot(o: &Options, sets: &[KeySet], rows: &[Row], out: &Path) -> anyhow::Result<usize> {
    let mut written = 0;
    for set in sets {
        let name = set.name();
        let series: Vec<Series> = Way::ALL
            .iter()
            .map(|&way| Series {
                name: way.name().to_string(),
                points: o
                    .ratios
                    .iter()
                    .filter_map(|&r| Some((r as f64, point(rows, &name, r, way)?.seconds)))
                    .collect(),
            })
            .collect();
        chart(
            &out.join(format!("sql_join_{name}.png")),
            &format!("SQL join through DataFusion, {name}: query time against |S|/|R|"),
            ("ratio |S| / |R|", Scale::Log),
            ("seconds (cold)", Scale::Log),
            &series,
            true,
        )?;
        written += 1;
    }
    Ok(written)
}

/// Runs the study; returns the report to print.
pub fn run(setup: &Setup, options: Options, progress: &dyn Progress) -> anyhow::Result<String> {
    options.validate()?;
    let o = &options;
    let (study, [mut csv_out, mut summary_out]) =
        setup.begin("sql-join", ["sql_join.csv", "summary.md"], progress)?;
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
        o,
        sets,
        data: &dirs.data,
        profile: profile_path,
        inner: None,
    };
    let (_, rows) = harness::measure(&mut measuring, "sql-join", "queries", progress)?;
    drop(measuring);
    let csv_rows: Vec<CsvRow<'_>> = rows
        .iter()
        .map(|r| CsvRow::new(r, o, machine, profile))
        .collect();
    write_rows(&mut csv_out.file, &csv_rows)?;
    let summary = summarize(o, sets, &rows);
    let md = format!(
        "# lidx experiment sql-join\n\nMachine: {machine}. Device: {}. {} key sets of {} keys; {} threads; the learned join at I/O depth {}; Parquet pages {}; every query a fresh process, every file read through the page cache with its pages dropped first.\n\n{summary}",
        profile.device,
        sets.len(),
        setup.n,
        o.threads,
        o.io_depth,
        compression_name(o.compression),
    );
    summary_out.file.write_all(md.as_bytes())?;
    let paths = [&csv_out, &summary_out].map(|f| f.path.display().to_string());
    csv_out.finish()?;
    summary_out.finish()?;
    let plots = plot(o, sets, &rows, &dirs.out)?;
    dirs.finish();
    Ok(format!(
        "{summary}\n\n{} queries in {:.0} s. Wrote {}, {} and {plots} plots in {}\n",
        rows.len(),
        started.elapsed().as_secs_f64(),
        paths[0],
        paths[1],
        dirs.out.display()
    ))
}
