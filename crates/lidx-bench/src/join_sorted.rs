//! `lidx experiment join-sorted`: paper 1's joins of sorted tables (sections 5.3, 5.5 and
//! 5.6). The outer table is a uniform 1/ratio sample of the inner (so every outer key
//! matches); INLJ through sampled PGM and a B+tree (windows of 256, 1024, 4096 tuples, read
//! with one call each), sort-merge and hash joins, on 1..N threads, and (beyond the paper)
//! with 32 window reads in flight. Fig. 6 is time against ratio, Fig. 10 against threads,
//! Fig. 11 against window size; Fig. 8 (HDD) is the cost model's prediction under an assumed
//! disk, labelled as such.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::bail;
use lidx::index::file::{self, KeysFingerprint};
use lidx::index::{AnyIndex, AnyParams, IndexKind};
use lidx::join::cost::{self, Choice};
use lidx::join::{JoinMethod, JoinRecord};
use lidx::storage::TUPLE_SIZE;
use lidx::storage::profile::StorageProfile;
use serde::Serialize;

use crate::csv_rows::{Fixed, write_rows};
use crate::harness::{ColdJoin, KeySet, Scratch, Setup, Study, write_table};
use crate::plot::{Scale, Series, chart};
use crate::progress::Progress;
use crate::stats::medians;
use crate::text::human_bytes;

/// The study's own settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Size ratios |S|/|R|: the outer table is a uniform 1/ratio sample of the inner.
    pub ratios: Vec<u64>,
    /// Thread counts; `None`: those of 1, 2, 4, 6, 8 up to the machine's cores.
    pub threads: Option<Vec<usize>>,
    /// Index windows in tuples for the INLJ methods; each window is read with one call.
    pub windows: Vec<u64>,
    /// Window reads in flight per INLJ thread (1 is paper 1's synchronous reading).
    pub io_depths: Vec<usize>,
    /// Indexes of the INLJ methods: the learned one first, then the baseline.
    pub indexes: Vec<IndexKind>,
    /// Bytes per sequential read of a scanned table in the large-read baseline.
    pub read_size: u64,
    /// Measurements per cell; every figure of a cell is the median of its repeats.
    pub repeat: usize,
}

impl Options {
    /// Checks every setting and fills in the default threads.
    fn validate(&mut self) -> anyhow::Result<()> {
        if self.ratios.is_empty() || self.ratios.contains(&0) {
            bail!("invalid ratios: each must be at least 1");
        }
        if self.windows.is_empty() || self.windows.iter().any(|&w| w < 4) {
            bail!("invalid windows: each must be at least 4 tuples");
        }
        if self.io_depths.is_empty() || self.io_depths.contains(&0) {
            bail!("invalid io-depths: each must be at least 1");
        }
        if self.indexes.is_empty() || self.indexes.contains(&IndexKind::Binary) {
            bail!("invalid indexes: give one or more of pgm, sampled-pgm, rs, rmi, btree");
        }
        if self.repeat == 0 {
            bail!("invalid repeat: at least 1 measurement per cell");
        }
        if self.read_size < 4096 || !self.read_size.is_multiple_of(4096) {
            bail!("invalid read-size: a positive multiple of 4 KiB");
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = self.threads.take().unwrap_or_else(|| {
            [1, 2, 4, 6, 8]
                .into_iter()
                .filter(|&t| t == 1 || t <= cores)
                .collect()
        });
        if threads.is_empty() || threads.contains(&0) {
            bail!("invalid threads: each must be at least 1");
        }
        self.threads = Some(threads);
        Ok(())
    }

    fn threads(&self) -> &[usize] {
        self.threads.as_deref().unwrap_or(&[1])
    }

    /// Joins per ratio and repeat.
    fn runs_per_ratio(&self) -> u64 {
        let inlj = self.indexes.len() * self.windows.len() * self.io_depths.len();
        (self.threads().len() * (2 * (self.windows.len() + 1) + inlj)) as u64
    }

    /// The learned index kind (the first), and the baseline (the B+tree if measured).
    fn learned_and_baseline(&self) -> (IndexKind, IndexKind) {
        let learned = self.indexes[0];
        let baseline = self
            .indexes
            .iter()
            .copied()
            .find(|&k| k == IndexKind::BTree)
            .unwrap_or(learned);
        (learned, baseline)
    }
}

/// A built, saved index of the inner table.
struct SavedIndex {
    kind: IndexKind,
    window: u64,
    path: std::path::PathBuf,
    bytes: u64,
    max_window: u64,
    build_s: f64,
}

/// One measurement.
struct Row {
    set: String,
    ratio: u64,
    index: Option<IndexKind>,
    /// Tuples per read of every table (the INLJ's window); 0 for the large-read baseline.
    window: u64,
    index_bytes: u64,
    index_max_window: u64,
    index_build_s: f64,
    repeat: usize,
    rec: JoinRecord,
}

/// The cell a measurement belongs to (its repeats share it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Cell {
    set: String,
    ratio: u64,
    method: String,
    window: u64,
    threads: usize,
    depth: usize,
}

impl Row {
    fn cell(&self) -> Cell {
        Cell {
            set: self.set.clone(),
            ratio: self.ratio,
            method: self.rec.method.clone(),
            window: self.window,
            threads: self.rec.threads,
            depth: self.rec.io_depth,
        }
    }
}

/// Runs the study; returns the report to print.
pub fn run(setup: &Setup, mut options: Options, progress: &dyn Progress) -> anyhow::Result<String> {
    options.validate()?;
    let options = &options;
    let (study, [mut csv_out, mut hdd_out, mut summary_out]) = setup.begin(
        "join-sorted",
        [
            "join_sorted.csv",
            "join_sorted_hdd_prediction.csv",
            "summary.md",
        ],
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

    let total = sets.len() as u64
        * options.ratios.len() as u64
        * options.repeat as u64
        * options.runs_per_ratio();
    progress.start(total, "join-sorted", "joins");
    let mut rows: Vec<Row> = Vec::new();
    let mut hdd_rows: Vec<HddRow> = Vec::new();
    for set in sets {
        let name = set.name();
        progress.message(&format!("{name}: data"));
        rows.extend(measure_set(
            setup,
            options,
            set,
            &dirs.data,
            profile_path,
            progress,
        )?);
        hdd_rows.extend(hdd_prediction(options, &name, &rows));
    }
    progress.finish();

    let csv_rows: Vec<CsvRow<'_>> = rows
        .iter()
        .map(|r| CsvRow::new(r, machine, profile))
        .collect();
    write_rows(&mut csv_out.file, &csv_rows)?;
    write_rows(&mut hdd_out.file, &hdd_rows)?;
    let summary = summarize(options, sets, &rows, profile);
    let mut md = format!(
        "# lidx experiment join-sorted\n\nMachine: {machine}. Device: {}. {} key sets of {} keys; every join a fresh process, cold, {}.\n\n",
        profile.device,
        sets.len(),
        setup.n,
        setup.reads()
    );
    md.push_str(&summary);
    summary_out.file.write_all(md.as_bytes())?;
    let paths = [&csv_out, &hdd_out, &summary_out].map(|o| o.path.display().to_string());
    csv_out.finish()?;
    hdd_out.finish()?;
    summary_out.finish()?;
    let plots = plot_all(options, sets, &rows, &hdd_rows, &dirs.out)?;
    dirs.finish();
    Ok(format!(
        "{summary}\n\n{} joins in {:.0} s. Wrote {}, {}, {}, {} and {plots} plots in {}\n",
        rows.len(),
        started.elapsed().as_secs_f64(),
        paths[0],
        paths[1],
        paths[2],
        profile_path.display(),
        dirs.out.display()
    ))
}

/// Builds the inner table and its indexes for one key set, then measures every ratio.
fn measure_set(
    setup: &Setup,
    options: &Options,
    set: &KeySet,
    data: &Path,
    profile: &Path,
    progress: &dyn Progress,
) -> anyhow::Result<Vec<Row>> {
    let name = set.name();
    let keys = set.load()?;
    let mut scratch = Scratch::new(setup.keep_data);
    let inner = scratch.add(data.join(format!("{name}.tbl")));
    write_table(&keys, &inner)?;

    // Paper 1: the indexes are built and saved first, and loaded by each join.
    let fingerprint = KeysFingerprint::of(&keys);
    let mut indexes = Vec::new();
    for &kind in &options.indexes {
        for &window in &options.windows {
            let Some(params) = AnyParams::for_width(kind, window) else {
                continue;
            };
            let t = Instant::now();
            let index = AnyIndex::build(&keys, &params)?;
            let build_s = t.elapsed().as_secs_f64();
            let path = scratch.add(data.join(format!("{name}.{kind}.w{window}.idx")));
            file::save(&path, &index, &fingerprint)?;
            indexes.push(SavedIndex {
                kind,
                window,
                path,
                bytes: index.size_in_bytes(),
                max_window: index.max_width(),
                build_s,
            });
        }
    }

    let mut rows = Vec::new();
    for (i, &ratio) in options.ratios.iter().enumerate() {
        let outer_keys = if ratio == 1 {
            keys.clone()
        } else {
            lidx::data::sample::random_fraction(&keys, 1.0 / ratio as f64, setup.seed + i as u64)?
        };
        let mut outer_scratch = Scratch::new(setup.keep_data);
        let outer = outer_scratch.add(data.join(format!("{name}.r{ratio}.tbl")));
        write_table(&outer_keys, &outer)?;
        drop(outer_keys);
        for repeat in 0..options.repeat {
            for &threads in options.threads() {
                progress.message(&format!("{name} 1:{ratio} t{threads}"));
                let join = |method: JoinMethod, read_size| ColdJoin {
                    outer: &outer,
                    inner: &inner,
                    method,
                    index: None,
                    threads,
                    read_size,
                    io_depth: 1,
                    profile,
                };
                let row = |index: Option<&SavedIndex>, window, rec| Row {
                    set: name.clone(),
                    ratio,
                    index: index.map(|i| i.kind),
                    window,
                    index_bytes: index.map_or(0, |i| i.bytes),
                    index_max_window: index.map_or(0, |i| i.max_window),
                    index_build_s: index.map_or(0.0, |i| i.build_s),
                    repeat,
                    rec,
                };
                // Paper 1 streams tables in pages and reads each window with one call: a
                // cell of window W reads W tuples per call everywhere. Window 0 is the
                // tuned baseline: merge and hash with large reads.
                for window in options.windows.iter().copied().chain([0]) {
                    let read_size = match window {
                        0 => options.read_size,
                        w => w * TUPLE_SIZE as u64,
                    };
                    for method in [JoinMethod::Merge, JoinMethod::Hash] {
                        let rec = setup.cold_join(&join(method, read_size))?;
                        progress.step();
                        rows.push(row(None, window, rec));
                    }
                }
                for index in &indexes {
                    for &io_depth in &options.io_depths {
                        let rec = setup.cold_join(&ColdJoin {
                            index: Some(&index.path),
                            io_depth,
                            ..join(
                                JoinMethod::Inlj(index.kind),
                                index.window * TUPLE_SIZE as u64,
                            )
                        })?;
                        progress.step();
                        rows.push(row(Some(index), index.window, rec));
                    }
                }
            }
        }
    }
    Ok(rows)
}

/// One predicted time of Fig. 8, as a row of `join_sorted_hdd_prediction.csv`.
#[derive(Serialize, Default)]
struct HddRow {
    key_set: String,
    inner_tuples: u64,
    outer_tuples: u64,
    ratio: u64,
    method: &'static str,
    window: u64,
    predicted_s: Fixed<6>,
    profile: String,
}

/// Fig. 8 stand-in: the cost model's times under an assumed hard disk, per ratio.
fn hdd_prediction(options: &Options, set: &str, rows: &[Row]) -> Vec<HddRow> {
    let window = options.windows[0];
    let device = cost::assumed_hdd().device;
    let mut out = Vec::new();
    for &ratio in &options.ratios {
        let Some(row) = rows.iter().find(|r| r.set == set && r.ratio == ratio) else {
            continue;
        };
        let (outer, inner) = (row.rec.outer_tuples, row.rec.inner_tuples);
        let e = cost::predict_hdd(outer, inner, window);
        for (method, choice) in [
            ("inlj", Choice::Inlj),
            ("merge", Choice::Merge),
            ("hash", Choice::Hash),
        ] {
            out.push(HddRow {
                key_set: set.to_string(),
                inner_tuples: inner,
                outer_tuples: outer,
                ratio,
                method,
                window,
                predicted_s: Fixed(e.seconds(choice)),
                profile: device.clone(),
            });
        }
    }
    out
}

/// One join, as a row of `join_sorted.csv`.
#[derive(Serialize, Default)]
struct CsvRow<'a> {
    experiment: &'static str,
    key_set: &'a str,
    inner_tuples: u64,
    outer_tuples: u64,
    ratio: u64,
    method: &'a str,
    index: Option<&'static str>,
    window: u64,
    index_max_window: u64,
    index_bytes: u64,
    index_build_s: Fixed<6>,
    threads: usize,
    io_depth: usize,
    io_backend: &'a str,
    cursor: bool,
    monotone: bool,
    max_window_blocks: u64,
    read_size: u64,
    direct: bool,
    repeat: usize,
    join_s: Fixed<6>,
    build_s: Option<Fixed<6>>,
    output_tuples: u64,
    lookups: u64,
    outer_blocks: u64,
    outer_bytes: u64,
    outer_reads: u64,
    inner_blocks: u64,
    inner_bytes: u64,
    inner_reads: u64,
    model_s: Fixed<6>,
    model_device: &'a str,
    machine: &'a str,
    device: &'a str,
    profile_seq_latency_us: Fixed<1>,
    profile_seq_mb_s: Fixed<1>,
    profile_rand_latency_us: Fixed<1>,
    profile_rand_mb_s: Fixed<1>,
    profile_qd32_speedup: Fixed<2>,
}

impl<'a> CsvRow<'a> {
    fn new(r: &'a Row, machine: &'a str, profile: &'a StorageProfile) -> Self {
        let rec = &r.rec;
        CsvRow {
            experiment: "join-sorted",
            key_set: &r.set,
            inner_tuples: rec.inner_tuples,
            outer_tuples: rec.outer_tuples,
            ratio: r.ratio,
            method: &rec.method,
            index: r.index.map(IndexKind::name),
            window: r.window,
            index_max_window: r.index_max_window,
            index_bytes: r.index_bytes,
            index_build_s: Fixed(r.index_build_s),
            threads: rec.threads,
            io_depth: rec.io_depth,
            io_backend: &rec.io_backend,
            cursor: rec.cursor,
            monotone: rec.monotone,
            max_window_blocks: rec.max_window_blocks,
            read_size: rec.read_size,
            direct: rec.direct,
            repeat: r.repeat,
            join_s: Fixed(rec.join_s),
            build_s: rec.build_s.map(Fixed),
            output_tuples: rec.output_tuples,
            lookups: rec.lookups,
            outer_blocks: rec.outer_blocks,
            outer_bytes: rec.outer_bytes,
            outer_reads: rec.outer_reads,
            inner_blocks: rec.inner_blocks,
            inner_bytes: rec.inner_bytes,
            inner_reads: rec.inner_reads,
            model_s: Fixed(rec.model_s),
            model_device: &rec.model_device,
            machine,
            device: &profile.device,
            profile_seq_latency_us: Fixed(profile.sequential.latency_us),
            profile_seq_mb_s: Fixed(profile.sequential.bandwidth_mb_s),
            profile_rand_latency_us: Fixed(profile.random.latency_us),
            profile_rand_mb_s: Fixed(profile.random.bandwidth_mb_s),
            profile_qd32_speedup: Fixed(profile.random_speedup(32)),
        }
    }
}

/// The median of every figure of each cell over its repeats.
#[derive(Clone, Copy, Debug)]
struct Figures {
    /// Join seconds.
    time: f64,
    /// The cost model's seconds.
    model: f64,
    /// Bytes read from both tables.
    bytes: f64,
    /// Reads of the inner table.
    reads: f64,
    /// Blocks of the inner table.
    blocks: f64,
    /// Seconds building the index or hash table.
    build: f64,
}

fn cell_medians(rows: &[Row]) -> HashMap<Cell, Figures> {
    medians(rows, Row::cell, |r| {
        let rec = &r.rec;
        [
            rec.join_s,
            rec.model_s,
            (rec.outer_bytes + rec.inner_bytes) as f64,
            rec.inner_reads as f64,
            rec.inner_blocks as f64,
            rec.build_s.unwrap_or(0.0),
        ]
    })
    .into_iter()
    .map(|(c, [time, model, bytes, reads, blocks, build])| {
        let figures = Figures {
            time,
            model,
            bytes,
            reads,
            blocks,
            build,
        };
        (c, figures)
    })
    .collect()
}

/// The paper's finding for learned INLJ against B+tree INLJ at `ratio` (SSD, section 5.3).
fn paper_vs_btree(ratio: u64) -> &'static str {
    match ratio {
        1..=100 => "1.2-1.6x",
        1000 => "0.6-0.9x",
        _ => "-",
    }
}

/// The paper's finding for learned INLJ against sort-merge at `ratio` (SSD, section 5.3).
fn paper_vs_merge(ratio: u64) -> &'static str {
    match ratio {
        1 => "<1 (merge wins)",
        10..=100 => "1.1-1.4x",
        _ => "-",
    }
}

/// The cost model's pick among the three methods `lidx join --method auto` weighs, each
/// as auto would run it (the hash join building its table), against the measured fastest:
/// both method names and how much slower the pick ran.
fn judge(
    m: &HashMap<Cell, Figures>,
    inlj: (&str, &Cell),
    merge: &Cell,
    hash: &Cell,
) -> Option<(String, String, f64)> {
    let cell_of = |c: Choice| match c {
        Choice::Inlj => inlj.1,
        Choice::Merge => merge,
        Choice::Hash => hash,
    };
    let name = |c: Choice| match c {
        Choice::Inlj => inlj.0.to_string(),
        Choice::Merge => "merge".to_string(),
        Choice::Hash => "hash".to_string(),
    };
    let measured = |c: Choice| -> Option<f64> {
        let f = m.get(cell_of(c))?;
        Some(match c {
            Choice::Hash => f.time + f.build,
            _ => f.time,
        })
    };
    let choices = [Choice::Inlj, Choice::Merge, Choice::Hash];
    let times: Vec<(Choice, f64)> = choices
        .iter()
        .map(|&c| Some((c, measured(c)?)))
        .collect::<Option<_>>()?;
    let pick = cost::fastest(true, |c| {
        m.get(cell_of(c)).map_or(f64::INFINITY, |f| f.model)
    });
    let (fastest, best) = times.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let picked = times.iter().find(|t| t.0 == pick)?.1;
    Some((name(pick), name(fastest), picked / best))
}

fn summarize(options: &Options, sets: &[KeySet], rows: &[Row], profile: &StorageProfile) -> String {
    let m = cell_medians(rows);
    let (learned, baseline) = options.learned_and_baseline();
    let window = options.windows[0];
    let t1 = options.threads()[0];
    let shallow = options.io_depths[0];
    let deep = options.io_depths.iter().copied().max().unwrap_or(1);
    let mut s = String::new();
    let big = human_bytes(options.read_size);
    let _ = writeln!(
        s,
        "Join time in seconds: {t1} thread(s); INLJ window {window} tuples and every scan reading {window} tuples per call (paper 1 streams pages); merge/hash {big} with {big} reads; INLJ at io-depth {shallow} unless named; medians of {} run(s). Speedups are time ratios, above 1 when {learned} INLJ is faster. Inner blocks and reads as counted. Hash times leave out building its table (as the paper does); the model's pick is checked against hash times with the build.\n",
        options.repeat
    );
    let _ = writeln!(
        s,
        "| key set | ratio | inlj:{learned} | inlj:{baseline} | merge | hash | merge {big} | vs {baseline} | paper | vs merge | paper | inner blocks {learned} / {baseline} | inner reads {learned} / {baseline} | {learned} depth {deep} | depth gain | model pick | fastest |"
    );
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---|---|"
    );
    let (mut picks, mut matched, mut near) = (0, 0, 0);
    let (mut big_picks, mut big_matched) = (0, 0);
    let mut merge_bw = Vec::new();
    let time = |c: &Cell| m.get(c).map(|f| f.time);
    for set in sets {
        let name = set.name();
        for &ratio in &options.ratios {
            let at = |method: String, window, depth| Cell {
                set: name.clone(),
                ratio,
                method,
                window,
                threads: t1,
                depth,
            };
            let learned_name = format!("inlj:{learned}");
            let l_cell = at(learned_name.clone(), window, shallow);
            let b_cell = at(format!("inlj:{baseline}"), window, shallow);
            let d_cell = at(learned_name.clone(), window, deep);
            let merge_cell = at("merge".into(), window, 1);
            let hash_cell = at("hash".into(), window, 1);
            let big_cell = at("merge".into(), 0, 1);
            let big_hash = at("hash".into(), 0, 1);
            let (Some(l), Some(b), Some(mg), Some(h), Some(d), Some(big_s)) = (
                time(&l_cell),
                time(&b_cell),
                time(&merge_cell),
                time(&hash_cell),
                time(&d_cell),
                time(&big_cell),
            ) else {
                continue;
            };
            // Judged once with every scan reading the window's tuples per call, once with
            // merge and hash at large reads.
            let inlj = (learned_name.as_str(), &l_cell);
            let (pick, fastest) = match judge(&m, inlj, &merge_cell, &hash_cell) {
                Some((pick, fastest, slower)) => {
                    picks += 1;
                    matched += usize::from(pick == fastest);
                    near += usize::from(slower <= 1.1);
                    (pick, fastest)
                }
                None => ("-".to_string(), "-".to_string()),
            };
            if let Some((pick, fastest, _)) = judge(&m, inlj, &big_cell, &big_hash) {
                big_picks += 1;
                big_matched += usize::from(pick == fastest);
            }
            if ratio == 1
                && let Some(f) = m.get(&big_cell)
            {
                merge_bw.push((name.clone(), f.bytes / big_s / 1e6));
            }
            let count = |c: &Cell, f: fn(&Figures) -> f64| m.get(c).map_or(0.0, f);
            let _ = writeln!(
                s,
                "| {name} | {ratio} | {l:.3} | {b:.3} | {mg:.3} | {h:.3} | {big_s:.3} | {:.2}x | {} | {:.2}x | {} | {} / {} | {} / {} | {d:.3} | {:.2}x | {pick} | {fastest} |",
                b / l,
                paper_vs_btree(ratio),
                mg / l,
                paper_vs_merge(ratio),
                count(&l_cell, |f| f.blocks),
                count(&b_cell, |f| f.blocks),
                count(&l_cell, |f| f.reads),
                count(&b_cell, |f| f.reads),
                l / d,
            );
        }
    }
    let _ = writeln!(
        s,
        "\nThe cost model ({}) picked the measured fastest of inlj:{learned}, merge and hash (all reading {window} tuples per call) in {matched} of {picks} cells, and a method at most 10% slower than the fastest in {near}; with merge and hash reading {big} per call, as `lidx join --method auto` runs them, it picked the fastest in {big_matched} of {big_picks}.",
        profile.device
    );
    let seq = profile.sequential.bandwidth_mb_s;
    let seq_at_read = options.read_size as f64 / profile.sequential.read_us(options.read_size);
    for (name, bw) in merge_bw {
        let _ = writeln!(
            s,
            "Sort-merge with {big} reads on {name} at ratio 1 read {bw:.0} MB/s: {:.0}% of the {seq_at_read:.0} MB/s the profile predicts for {big} sequential reads ({seq:.0} MB/s asymptotic).",
            100.0 * bw / seq_at_read,
        );
    }
    s
}

/// Figs. 6, 8 (predicted), 10 and 11 per key set; returns how many PNGs were written.
fn plot_all(
    options: &Options,
    sets: &[KeySet],
    rows: &[Row],
    hdd_rows: &[HddRow],
    out: &Path,
) -> anyhow::Result<usize> {
    let m = cell_medians(rows);
    let window = options.windows[0];
    let t1 = options.threads()[0];
    let shallow = options.io_depths[0];
    let deep = options.io_depths.iter().copied().max().unwrap_or(1);
    let time = |c: &Cell| m.get(c).map(|f| f.time);
    // Figs. 10 and 11 at ratio 100, as in the paper, or the middle ratio given.
    let focus = if options.ratios.contains(&100) {
        100
    } else {
        options.ratios[options.ratios.len() / 2]
    };
    let big = human_bytes(options.read_size);
    let mut written = 0;
    for set in sets {
        let name = set.name();
        let cell = |ratio, method: &str, window, threads, depth| Cell {
            set: name.clone(),
            ratio,
            method: method.to_string(),
            window,
            threads,
            depth,
        };
        let mut methods: Vec<(String, u64, usize)> = Vec::new();
        for kind in &options.indexes {
            methods.push((format!("inlj:{kind}"), window, shallow));
            if deep != shallow {
                methods.push((format!("inlj:{kind}"), window, deep));
            }
        }
        for method in ["merge", "hash"] {
            methods.push((method.into(), window, 1));
            methods.push((method.into(), 0, 1));
        }
        let label = |method: &str, window: u64, depth: usize| match (window, depth) {
            (0, _) => format!("{method}, {big} reads"),
            (_, 1) => method.to_string(),
            (_, d) => format!("{method} io-depth {d}"),
        };

        // One series per method, with its time at each x where `at` names the cell.
        let per_method = |xs: &[u64], at: &dyn Fn(u64, &str, u64, usize) -> Cell| -> Vec<Series> {
            methods
                .iter()
                .map(|(method, w, depth)| Series {
                    name: label(method, *w, *depth),
                    points: xs
                        .iter()
                        .filter_map(|&x| time(&at(x, method, *w, *depth)).map(|s| (x as f64, s)))
                        .collect(),
                })
                .collect()
        };

        // Fig. 6: time against ratio.
        let series = per_method(&options.ratios, &|r, method, w, depth| {
            cell(r, method, w, t1, depth)
        });
        chart(
            &out.join(format!("fig6_{name}.png")),
            &format!("{name}: join time against |S|/|R| ({t1} thread, window {window})"),
            ("size ratio |S|/|R|", Scale::Log),
            ("join time (s)", Scale::Log),
            &series,
            true,
        )?;

        // Fig. 10: time against threads.
        let threads: Vec<u64> = options.threads().iter().map(|&t| t as u64).collect();
        let series = per_method(&threads, &|t, method, w, depth| {
            cell(focus, method, w, t as usize, depth)
        });
        chart(
            &out.join(format!("fig10_{name}.png")),
            &format!("{name}: join time against threads (ratio {focus}, window {window})"),
            ("threads", Scale::Linear),
            ("join time (s)", Scale::Log),
            &series,
            true,
        )?;

        // Fig. 11: the learned join's time against its window, one series per thread count.
        let learned = format!("inlj:{}", options.indexes[0]);
        let series: Vec<Series> = options
            .threads()
            .iter()
            .map(|&t| Series {
                name: format!("{learned}, {t} thread(s)"),
                points: options
                    .windows
                    .iter()
                    .filter_map(|&w| {
                        time(&cell(focus, &learned, w, t, shallow)).map(|s| (w as f64, s))
                    })
                    .collect(),
            })
            .collect();
        chart(
            &out.join(format!("fig11_{name}.png")),
            &format!("{name}: {learned} join time against window size (ratio {focus})"),
            ("window (tuples, one read each)", Scale::Linear),
            ("join time (s)", Scale::Linear),
            &series,
            true,
        )?;

        // Fig. 8 stand-in: predicted under the assumed HDD.
        let series: Vec<Series> = ["inlj", "merge", "hash"]
            .iter()
            .map(|&method| Series {
                name: format!("{method} (predicted)"),
                points: hdd_rows
                    .iter()
                    .filter(|r| r.key_set == name && r.method == method)
                    .map(|r| (r.ratio as f64, r.predicted_s.0))
                    .collect(),
            })
            .collect();
        chart(
            &out.join(format!("fig8_predicted_hdd_{name}.png")),
            &format!("{name}: PREDICTED join time on an assumed 7200 rpm HDD (cost model)"),
            ("size ratio |S|/|R|", Scale::Log),
            ("predicted join time (s)", Scale::Log),
            &series,
            true,
        )?;
        written += 4;
    }
    Ok(written)
}
