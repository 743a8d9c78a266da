//! `lidx experiment join-sorted`: paper 1's joins of sorted tables (sections 5.3, 5.5 and
//! 5.6). The outer table is a uniform 1/ratio sample of the inner (so every outer key
//! matches); INLJ through sampled PGM and a B+tree (windows of 256, 1024, 4096 tuples, read
//! with one call each), sort-merge and hash joins, on 1..N threads, and (beyond the paper)
//! with 32 window reads in flight. Fig. 6 is time against ratio, Fig. 10 against threads,
//! Fig. 11 against window size; Fig. 8 (HDD) is the cost model's prediction under an assumed
//! disk, labelled as such.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;
use lidx::files::AtomicFile;
use lidx::index::file::{self, KeysFingerprint};
use lidx::index::{AnyIndex, IndexKind};
use lidx::join::cost;
use lidx::storage::profile::StorageProfile;

use super::{Common, KeySet, Scratch, measure_join, median, write_table};
use crate::cmd::join::JoinRecord;
use crate::plot::{Scale, Series, chart};
use crate::progress::Context;
use crate::units::{human_bytes, parse_size};

/// Run paper 1's study of joins over sorted tables.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Size ratios |S|/|R|: the outer table is a uniform 1/ratio sample of the inner.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000")]
    ratios: Vec<u64>,
    /// Thread counts [default: those of 1,2,4,6,8 up to the machine's cores].
    #[arg(long, value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Index windows in tuples for the INLJ methods; each window is read with one call.
    #[arg(long, value_delimiter = ',', default_value = "256,1024,4096")]
    windows: Vec<u64>,
    /// Window reads in flight per INLJ thread (1 is paper 1's synchronous reading).
    #[arg(long, value_delimiter = ',', default_value = "1,32")]
    io_depths: Vec<usize>,
    /// Indexes of the INLJ methods: the learned one first, then the baseline.
    #[arg(long, value_delimiter = ',', default_value = "sampled-pgm,btree")]
    indexes: Vec<IndexKind>,
    /// Bytes per sequential read of a scanned table (merge, hash, the INLJ's outer table).
    #[arg(long, value_parser = parse_size, default_value = "1MiB")]
    read_size: u64,
    /// Measurements per cell; the summary takes the median.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
}

/// Bytes of one (key, value) tuple.
const TUPLE_BYTES: u64 = 16;

/// A built, saved index of the inner table.
struct SavedIndex {
    kind: IndexKind,
    window: u64,
    path: PathBuf,
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

impl Row {
    /// The cell this measurement belongs to (repeats share it).
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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Cell {
    set: String,
    ratio: u64,
    method: String,
    window: u64,
    threads: usize,
    depth: usize,
}

impl Args {
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
        if self.read_size < 4096 || self.read_size % 4096 != 0 {
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
}

pub fn run(ctx: &Context, mut args: Args) -> anyhow::Result<()> {
    args.validate()?;
    let sets = args.common.key_sets()?;
    let dirs = args.common.dirs("join-sorted")?;
    let machine = crate::machine::describe();
    // Outputs are created first: an unwritable path fails before minutes of measuring.
    let csv_path = dirs.out.join("join_sorted.csv");
    let hdd_path = dirs.out.join("join_sorted_hdd_prediction.csv");
    let summary_path = dirs.out.join("summary.md");
    let mut csv_out = AtomicFile::create(&csv_path)?;
    let mut hdd_out = AtomicFile::create(&hdd_path)?;
    let mut summary_out = AtomicFile::create(&summary_path)?;
    let (profile, profile_path) = args.common.profile(ctx, &dirs)?;
    let started = Instant::now();

    let total =
        sets.len() as u64 * args.ratios.len() as u64 * args.repeat as u64 * args.runs_per_ratio();
    let bar = ctx.bar(total, "join-sorted", "joins");
    let mut rows: Vec<Row> = Vec::new();
    let mut hdd_rows: Vec<Vec<String>> = Vec::new();
    for set in &sets {
        let name = set.name();
        bar.set_message(format!("{name}: data"));
        rows.extend(measure_set(&args, set, &dirs.data, &profile_path, &bar)?);
        hdd_rows.extend(hdd_prediction(&args, &name, &rows));
    }
    bar.finish_and_clear();

    write_csv(&mut csv_out, &rows, &machine, &profile)?;
    super::super::write_csv(
        &mut hdd_out,
        &[
            "key_set",
            "inner_tuples",
            "outer_tuples",
            "ratio",
            "method",
            "window",
            "predicted_s",
            "profile",
        ],
        &hdd_rows,
    )?;
    let summary = summarize(&args, &sets, &rows, &profile);
    say!("{summary}");
    let mut md = format!(
        "# lidx experiment join-sorted\n\nMachine: {machine}. Device: {}. {} key sets of {} keys; every join a fresh process, cold, {}.\n\n",
        profile.device,
        sets.len(),
        args.common.n,
        if args.common.buffered {
            "buffered (pages dropped)"
        } else {
            "O_DIRECT"
        }
    );
    md.push_str(&summary);
    summary_out.write_all(md.as_bytes())?;
    csv_out.finish()?;
    hdd_out.finish()?;
    summary_out.finish()?;
    let plots = plot_all(&args, &sets, &rows, &hdd_rows, &dirs.out)?;
    dirs.finish(&args.common);
    say!(
        "\n{} joins in {:.0} s. Wrote {}, {}, {}, {} and {} plots in {}",
        rows.len(),
        started.elapsed().as_secs_f64(),
        csv_path.display(),
        hdd_path.display(),
        summary_path.display(),
        profile_path.display(),
        plots,
        dirs.out.display()
    );
    Ok(())
}

/// Builds the inner table and its indexes for one key set, then measures every ratio.
fn measure_set(
    args: &Args,
    set: &KeySet,
    data: &std::path::Path,
    profile_path: &std::path::Path,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Vec<Row>> {
    let name = set.name();
    let keys = set.load()?;
    let mut scratch = Scratch::new(args.common.keep_data);
    let inner_path = scratch.add(data.join(format!("{name}.tbl")));
    write_table(&keys, &inner_path)?;

    // Paper 1: the indexes are built and saved first, and loaded by each join.
    let fingerprint = KeysFingerprint::of(&keys);
    let mut indexes = Vec::new();
    for &kind in &args.indexes {
        for &window in &args.windows {
            let Some(params) = crate::cmd::index::params_for_width(kind, window) else {
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
    for (i, &ratio) in args.ratios.iter().enumerate() {
        let outer = if ratio == 1 {
            keys.clone()
        } else {
            lidx::data::sample::random_fraction(
                &keys,
                1.0 / ratio as f64,
                args.common.seed + i as u64,
            )?
        };
        let mut outer_scratch = Scratch::new(args.common.keep_data);
        let outer_path = outer_scratch.add(data.join(format!("{name}.r{ratio}.tbl")));
        write_table(&outer, &outer_path)?;
        drop(outer);
        for repeat in 0..args.repeat {
            for &threads in args.threads() {
                bar.set_message(format!("{name} 1:{ratio} t{threads}"));
                // Every read of a scanned table is `read_size` bytes.
                let base = |method: &str, read_size: u64| -> Vec<OsString> {
                    let mut a: Vec<OsString> = vec![
                        "--outer".into(),
                        outer_path.clone().into(),
                        "--inner".into(),
                        inner_path.clone().into(),
                        "--method".into(),
                        method.into(),
                        "--threads".into(),
                        threads.to_string().into(),
                        "--read-size".into(),
                        read_size.to_string().into(),
                        "--profile".into(),
                        profile_path.into(),
                    ];
                    a.extend(args.common.read_flags().into_iter().map(OsString::from));
                    a
                };
                // Paper 1 streams tables in pages and reads each window with one call: a
                // cell of window W reads W tuples per call everywhere. Window 0 is the
                // tuned baseline: merge and hash with --read-size reads.
                let scan_windows = args.windows.iter().copied().chain([0]);
                for window in scan_windows {
                    let read_size = match window {
                        0 => args.read_size,
                        w => w * TUPLE_BYTES,
                    };
                    for method in ["merge", "hash"] {
                        let rec = measure_join(&base(method, read_size))?;
                        bar.inc(1);
                        rows.push(Row {
                            set: name.clone(),
                            ratio,
                            index: None,
                            window,
                            index_bytes: 0,
                            index_max_window: 0,
                            index_build_s: 0.0,
                            repeat,
                            rec,
                        });
                    }
                }
                for index in &indexes {
                    for &depth in &args.io_depths {
                        let mut a =
                            base(&format!("inlj:{}", index.kind), index.window * TUPLE_BYTES);
                        a.extend([
                            "--index".into(),
                            index.path.clone().into(),
                            "--io-depth".into(),
                            depth.to_string().into(),
                        ]);
                        let rec = measure_join(&a)?;
                        bar.inc(1);
                        rows.push(Row {
                            set: name.clone(),
                            ratio,
                            index: Some(index.kind),
                            window: index.window,
                            index_bytes: index.bytes,
                            index_max_window: index.max_window,
                            index_build_s: index.build_s,
                            repeat,
                            rec,
                        });
                    }
                }
            }
        }
    }
    Ok(rows)
}

/// Fig. 8 stand-in: the cost model's times under an assumed hard disk, per ratio.
fn hdd_prediction(args: &Args, set: &str, rows: &[Row]) -> Vec<Vec<String>> {
    let hdd = cost::assumed_hdd();
    let window = args.windows[0];
    let mut out = Vec::new();
    for &ratio in &args.ratios {
        let Some(row) = rows.iter().find(|r| r.set == set && r.ratio == ratio) else {
            continue;
        };
        let shape = cost::JoinShape {
            outer: row.rec.outer_tuples,
            inner: row.rec.inner_tuples,
            window: window as f64,
            read_bytes: window * TUPLE_BYTES,
            tuple_bytes: TUPLE_BYTES,
            threads: 1,
            io_depth: 1,
        };
        let e = cost::estimate(&shape, &hdd, &cost::CpuCosts::default());
        for (method, s) in [("inlj", e.inlj_s), ("merge", e.merge_s), ("hash", e.hash_s)] {
            out.push(vec![
                set.to_string(),
                shape.inner.to_string(),
                shape.outer.to_string(),
                ratio.to_string(),
                method.to_string(),
                window.to_string(),
                format!("{s:.6}"),
                hdd.device.clone(),
            ]);
        }
    }
    out
}

fn write_csv(
    out: &mut AtomicFile,
    rows: &[Row],
    machine: &str,
    profile: &StorageProfile,
) -> anyhow::Result<()> {
    let header = [
        "experiment",
        "key_set",
        "inner_tuples",
        "outer_tuples",
        "ratio",
        "method",
        "index",
        "window",
        "index_max_window",
        "index_bytes",
        "index_build_s",
        "threads",
        "io_depth",
        "io_backend",
        "cursor",
        "monotone",
        "max_window_blocks",
        "read_size",
        "direct",
        "repeat",
        "join_s",
        "build_s",
        "output_tuples",
        "lookups",
        "outer_blocks",
        "outer_bytes",
        "outer_reads",
        "inner_blocks",
        "inner_bytes",
        "inner_reads",
        "model_s",
        "model_device",
        "machine",
        "device",
        "profile_seq_latency_us",
        "profile_seq_mb_s",
        "profile_rand_latency_us",
        "profile_rand_mb_s",
        "profile_qd32_speedup",
    ];
    let records: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let rec = &r.rec;
            vec![
                "join-sorted".to_string(),
                r.set.clone(),
                rec.inner_tuples.to_string(),
                rec.outer_tuples.to_string(),
                r.ratio.to_string(),
                rec.method.clone(),
                r.index.map_or(String::new(), |k| k.to_string()),
                r.window.to_string(),
                r.index_max_window.to_string(),
                r.index_bytes.to_string(),
                format!("{:.6}", r.index_build_s),
                rec.threads.to_string(),
                rec.io_depth.to_string(),
                rec.io_backend.clone(),
                rec.cursor.to_string(),
                rec.monotone.to_string(),
                rec.max_window_blocks.to_string(),
                rec.read_size.to_string(),
                rec.direct.to_string(),
                r.repeat.to_string(),
                format!("{:.6}", rec.join_s),
                rec.build_s.map_or(String::new(), |b| format!("{b:.6}")),
                rec.output_tuples.to_string(),
                rec.lookups.to_string(),
                rec.outer_blocks.to_string(),
                rec.outer_bytes.to_string(),
                rec.outer_reads.to_string(),
                rec.inner_blocks.to_string(),
                rec.inner_bytes.to_string(),
                rec.inner_reads.to_string(),
                format!("{:.6}", rec.model_s),
                rec.model_device.clone(),
                machine.to_string(),
                profile.device.clone(),
                format!("{:.1}", profile.sequential.latency_us),
                format!("{:.1}", profile.sequential.bandwidth_mb_s),
                format!("{:.1}", profile.random.latency_us),
                format!("{:.1}", profile.random.bandwidth_mb_s),
                format!("{:.2}", profile.random_speedup(32)),
            ]
        })
        .collect();
    super::super::write_csv(out, &header, &records)
}

/// Medians per cell.
struct Medians {
    time: HashMap<Cell, f64>,
    model: HashMap<Cell, f64>,
    bytes: HashMap<Cell, u64>,
    reads: HashMap<Cell, u64>,
    blocks: HashMap<Cell, u64>,
    build: HashMap<Cell, f64>,
}

impl Medians {
    fn of(rows: &[Row]) -> Self {
        let mut times: HashMap<Cell, Vec<f64>> = HashMap::new();
        let mut model = HashMap::new();
        let mut bytes = HashMap::new();
        let mut reads = HashMap::new();
        let mut blocks = HashMap::new();
        let mut build = HashMap::new();
        for r in rows {
            reads.insert(r.cell(), r.rec.inner_reads);
            blocks.insert(r.cell(), r.rec.inner_blocks);
            build.insert(r.cell(), r.rec.build_s.unwrap_or(0.0));
            times.entry(r.cell()).or_default().push(r.rec.join_s);
            model.insert(r.cell(), r.rec.model_s);
            bytes.insert(r.cell(), r.rec.outer_bytes + r.rec.inner_bytes);
        }
        let time = times
            .into_iter()
            .map(|(c, mut v)| (c, median(&mut v)))
            .collect();
        Self {
            time,
            model,
            bytes,
            reads,
            blocks,
            build,
        }
    }

    fn get(&self, cell: &Cell) -> Option<f64> {
        self.time.get(cell).copied()
    }
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

fn summarize(args: &Args, sets: &[KeySet], rows: &[Row], profile: &StorageProfile) -> String {
    let m = Medians::of(rows);
    let learned = args.indexes[0];
    let baseline = args
        .indexes
        .iter()
        .copied()
        .find(|&k| k == IndexKind::BTree)
        .unwrap_or(learned);
    let window = args.windows[0];
    let t1 = args.threads()[0];
    let shallow = args.io_depths[0];
    let deep = args.io_depths.iter().copied().max().unwrap_or(1);
    let cell = |set: &str, ratio, method: String, window, threads, depth| Cell {
        set: set.to_string(),
        ratio,
        method,
        window,
        threads,
        depth,
    };
    let mut s = String::new();
    let big = human_bytes(args.read_size);
    let _ = writeln!(
        s,
        "Join time in seconds: {t1} thread(s); INLJ window {window} tuples and every scan reading {window} tuples per call (paper 1 streams pages); merge/hash {big} with {big} reads; INLJ at io-depth {shallow} unless named; medians of {} run(s). Speedups are time ratios, above 1 when {learned} INLJ is faster. Inner blocks and reads as counted. Hash times leave out building its table (as the paper does); the model's pick is checked against hash times with the build.\n",
        args.repeat
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
    for set in sets {
        let name = set.name();
        for &ratio in &args.ratios {
            let at = |method: String, window, depth| cell(&name, ratio, method, window, t1, depth);
            let l_cell = at(format!("inlj:{learned}"), window, shallow);
            let b_cell = at(format!("inlj:{baseline}"), window, shallow);
            let d_cell = at(format!("inlj:{learned}"), window, deep);
            let merge_cell = at("merge".into(), window, 1);
            let hash_cell = at("hash".into(), window, 1);
            let big_cell = at("merge".into(), 0, 1);
            let (Some(l), Some(b), Some(mg), Some(h), Some(d), Some(big_s)) = (
                m.get(&l_cell),
                m.get(&b_cell),
                m.get(&merge_cell),
                m.get(&hash_cell),
                m.get(&d_cell),
                m.get(&big_cell),
            ) else {
                continue;
            };
            // The cost model's pick among the three methods `--method auto` weighs, each
            // as auto would run it (the hash join builds its table): once with every scan
            // reading the window's tuples per call, once with merge and hash at large reads.
            let big_hash = at("hash".into(), 0, 1);
            let judge = |merge: &Cell, hash: &Cell| -> Option<(String, String, f64)> {
                let built = |c: &Cell| Some(m.get(c)? + m.build.get(c).copied().unwrap_or(0.0));
                let contenders = [
                    (format!("inlj:{learned}"), l_cell.clone(), l),
                    ("merge".to_string(), merge.clone(), m.get(merge)?),
                    ("hash".to_string(), hash.clone(), built(hash)?),
                ];
                let model = |c: &Cell| m.model.get(c).copied().unwrap_or(f64::INFINITY);
                let pick = contenders
                    .iter()
                    .min_by(|a, b| model(&a.1).total_cmp(&model(&b.1)))?;
                let fastest = contenders.iter().min_by(|a, b| a.2.total_cmp(&b.2))?;
                Some((pick.0.clone(), fastest.0.clone(), pick.2 / fastest.2))
            };
            let (pick, fastest) = match judge(&merge_cell, &hash_cell) {
                Some((pick, fastest, slower)) => {
                    picks += 1;
                    matched += usize::from(pick == fastest);
                    near += usize::from(slower <= 1.1);
                    (pick, fastest)
                }
                None => ("-".to_string(), "-".to_string()),
            };
            if let Some((pick, fastest, _)) = judge(&big_cell, &big_hash) {
                big_picks += 1;
                big_matched += usize::from(pick == fastest);
            }
            if ratio == 1 {
                if let Some(&bytes) = m.bytes.get(&big_cell) {
                    merge_bw.push((name.clone(), bytes as f64 / big_s / 1e6));
                }
            }
            let count = |map: &HashMap<Cell, u64>, c: &Cell| map.get(c).copied().unwrap_or(0);
            let _ = writeln!(
                s,
                "| {name} | {ratio} | {l:.3} | {b:.3} | {mg:.3} | {h:.3} | {big_s:.3} | {:.2}x | {} | {:.2}x | {} | {} / {} | {} / {} | {d:.3} | {:.2}x | {pick} | {fastest} |",
                b / l,
                paper_vs_btree(ratio),
                mg / l,
                paper_vs_merge(ratio),
                count(&m.blocks, &l_cell),
                count(&m.blocks, &b_cell),
                count(&m.reads, &l_cell),
                count(&m.reads, &b_cell),
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
    let seq_at_read = args.read_size as f64 / profile.sequential.read_us(args.read_size);
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
    args: &Args,
    sets: &[KeySet],
    rows: &[Row],
    hdd_rows: &[Vec<String>],
    out: &std::path::Path,
) -> anyhow::Result<usize> {
    let m = Medians::of(rows);
    let window = args.windows[0];
    let t1 = args.threads()[0];
    let shallow = args.io_depths[0];
    let deep = args.io_depths.iter().copied().max().unwrap_or(1);
    // Figs. 10 and 11 at ratio 100, as in the paper, or the middle ratio given.
    let focus = if args.ratios.contains(&100) {
        100
    } else {
        args.ratios[args.ratios.len() / 2]
    };
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
        for kind in &args.indexes {
            methods.push((format!("inlj:{kind}"), window, shallow));
            if deep != shallow {
                methods.push((format!("inlj:{kind}"), window, deep));
            }
        }
        for method in ["merge", "hash"] {
            methods.push((method.into(), window, 1));
            methods.push((method.into(), 0, 1));
        }
        let big = human_bytes(args.read_size);
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
                        .filter_map(|&x| m.get(&at(x, method, *w, *depth)).map(|s| (x as f64, s)))
                        .collect(),
                })
                .collect()
        };

        // Fig. 6: time against ratio.
        let series = per_method(&args.ratios, &|r, method, w, depth| {
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
        let threads: Vec<u64> = args.threads().iter().map(|&t| t as u64).collect();
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
        let learned = format!("inlj:{}", args.indexes[0]);
        let series: Vec<Series> = args
            .threads()
            .iter()
            .map(|&t| Series {
                name: format!("{learned}, {t} thread(s)"),
                points: args
                    .windows
                    .iter()
                    .filter_map(|&w| {
                        m.get(&cell(focus, &learned, w, t, shallow))
                            .map(|s| (w as f64, s))
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
                    .filter(|r| r[0] == name && r[4] == method)
                    .filter_map(|r| Some((r[3].parse().ok()?, r[6].parse().ok()?)))
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
