//! `lidx experiment bigtable`: paper 4's Fig. 1 (a–d). The learned block layout against
//! Bigtable's two-level SSTable index, on the same records, under concurrent clients.
//!
//! The records are the paper's: random integer keys written as strings (20 digits), each
//! with a value of `--value-size` (1 KiB), in blocks of 32 KiB. For every table size, both
//! layouts are built from the same records. Then, for every block cache size, each layout
//! serves two closed-loop workloads (paper 4, section 5):
//! - **gets**: `clients × outstanding` single-row reads kept in flight (the paper: 15 × 100),
//!   each a thread that sends its next request when the reply comes;
//! - **scans** of 100 consecutive rows, the same way, the next block read with the one
//!   needed.
//!
//! Keys are drawn uniformly from the records. Blocks are read with `O_DIRECT` (the OS
//! page cache would otherwise hold the whole table and hide the block cache), through one
//! byte-budget cache that starts empty for each run. Each run warms up, then measures for a
//! fixed time: every operation's latency goes into an HDR histogram; reads, bytes, index and
//! data blocks are counted per operation.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use hdrhistogram::Histogram;
use lidx::files::AtomicFile;
use lidx::kv::input::{RecordInput, generate_tsv};
use lidx::kv::{BlockCache, BuildOptions, Compression, KvFile, Layout, ModelKind, OpStats, Reader};
use lidx::storage::ReadMode;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;

use crate::csv_rows::{Fixed, LIDX_VERSION, write_rows};
use crate::plot::{Scale, Series, chart};
use crate::progress::Progress;
use crate::stats::median;
use crate::text::{human_bytes, times};

/// The study's settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Table sizes in rows.
    pub rows: Vec<u64>,
    /// Bytes of each value.
    pub value_size: u64,
    /// Target block size τ.
    pub block_size: u64,
    /// Block compression.
    pub compression: Compression,
    /// The learned layout's model.
    pub model: ModelKind,
    /// Block cache budgets in bytes (0: no cache).
    pub cache_sizes: Vec<u64>,
    /// Clients.
    pub clients: usize,
    /// Requests each client keeps in flight.
    pub outstanding: usize,
    /// Rows per scan.
    pub scan_rows: usize,
    /// Time each run warms its cache before measuring.
    pub warmup: Duration,
    /// Time each run measures.
    pub measure: Duration,
    /// Runs per cell; the summary and plots take the median, and the layouts take turns
    /// going first.
    pub repeat: usize,
    /// Read through the page cache instead of `O_DIRECT`.
    pub buffered: bool,
    /// Where the records and files go; `None`: `OUT/data`.
    pub dir: Option<PathBuf>,
    /// Where the CSV, plots and summary go; `None`: `results/bigtable`.
    pub out_dir: Option<PathBuf>,
    /// Keep the generated files.
    pub keep_data: bool,
    /// Seed of the records and of the clients' keys.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rows: vec![250_000, 1_000_000],
            value_size: 1024,
            block_size: 32 * 1024,
            compression: Compression::None,
            model: ModelKind::Linear,
            cache_sizes: vec![256 << 10, 1 << 20, 8 << 20, 64 << 20],
            clients: 15,
            outstanding: 100,
            scan_rows: 100,
            warmup: Duration::from_secs(1),
            measure: Duration::from_secs(3),
            repeat: 1,
            buffered: false,
            dir: None,
            out_dir: None,
            keep_data: false,
            seed: 42,
        }
    }
}

/// One kind of operation the clients send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// A single-row read.
    Get,
    /// A scan of `scan_rows` consecutive rows.
    Scan,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Scan => "scan",
        }
    }
}

/// What one closed-loop run measured.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Operations completed within the measured time.
    pub ops: u64,
    /// Rows they returned.
    pub rows: u64,
    /// The measured time.
    pub elapsed: Duration,
    /// Latency of every operation, microseconds.
    pub latency: Histogram<u64>,
    /// Blocks, reads and bytes of the measured operations.
    pub io: OpStats,
    /// The cache's counters over the measured time.
    pub cache: lidx::kv::CacheStats,
}

/// Runs `threads` closed-loop clients against `file` through `cache`: each sends `op` for a
/// uniformly drawn key of `keys`, waits for the reply, and sends the next. Nothing is
/// counted during `warmup`; then everything completed within `measure` is.
pub fn closed_loop(
    file: &KvFile,
    cache: &BlockCache,
    keys: &[&[u8]],
    (op, scan_rows): (Op, usize),
    threads: usize,
    (warmup, measure): (Duration, Duration),
    seed: u64,
) -> anyhow::Result<Measured> {
    if keys.is_empty() {
        bail!("no keys to query");
    }
    // 0: warming up, 1: measuring, 2: stop.
    let phase = AtomicU8::new(0);
    let worker = |t: usize| -> anyhow::Result<(Histogram<u64>, u64, u64, OpStats)> {
        let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
        let mut reader = Reader::new(file, cache);
        reader.set_prefetch(op == Op::Scan);
        let mut rng =
            Xoshiro256PlusPlus::seed_from_u64(seed ^ (t as u64).wrapping_mul(0x9e37_79b9));
        let mut value = Vec::new();
        let (mut ops, mut rows, mut io) = (0u64, 0u64, OpStats::default());
        loop {
            let at_start = phase.load(Ordering::Acquire);
            if at_start == 2 {
                break;
            }
            let key = keys[rng.random_range(0..keys.len())];
            let before = reader.stats();
            let started = Instant::now();
            let got = match op {
                Op::Get => u64::from(reader.get_into(key, &mut value)?),
                Op::Scan => reader.scan(key, scan_rows, |_, _| {})? as u64,
            };
            let micros = started.elapsed().as_micros() as u64;
            if at_start == 1 && phase.load(Ordering::Acquire) == 1 {
                hist.saturating_record(micros.max(1));
                ops += 1;
                rows += got;
                io += reader.stats().since(&before);
            }
        }
        Ok((hist, ops, rows, io))
    };
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let (mut ops, mut rows, mut io) = (0, 0, OpStats::default());
    let mut elapsed = Duration::ZERO;
    let mut cache_stats = lidx::kv::CacheStats::default();
    std::thread::scope(|s| -> anyhow::Result<()> {
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let worker = &worker;
            let h = std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn_scoped(s, move || worker(t));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    phase.store(2, Ordering::Release);
                    return Err(e).context("cannot start a client thread");
                }
            }
        }
        std::thread::sleep(warmup);
        cache.reset_stats();
        phase.store(1, Ordering::Release);
        let t0 = Instant::now();
        std::thread::sleep(measure);
        phase.store(2, Ordering::Release);
        elapsed = t0.elapsed();
        cache_stats = cache.stats();
        let mut first_error = None;
        for h in handles {
            match h.join() {
                Ok(Ok((hist, o, r, i))) => {
                    latency.add(&hist)?;
                    ops += o;
                    rows += r;
                    io += i;
                }
                Ok(Err(e)) => first_error = first_error.or(Some(e)),
                Err(_) => {
                    first_error = first_error.or(Some(anyhow::anyhow!("a client thread panicked")))
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })?;
    Ok(Measured {
        ops,
        rows,
        elapsed,
        latency,
        io,
        cache: cache_stats,
    })
}

/// One CSV row: one layout, table size, cache size and operation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// The experiment.
    pub experiment: &'static str,
    /// lidx's version.
    pub lidx_version: &'static str,
    /// The machine.
    pub machine: String,
    /// Rows in the table.
    pub rows: u64,
    /// Bytes of each value.
    pub value_size: u64,
    /// Target block size.
    pub block_size: u64,
    /// Block compression.
    pub compression: String,
    /// The layout.
    pub layout: String,
    /// The learned layout's model (empty for the SSTable).
    pub model: String,
    /// How blocks were read.
    pub reads_with: &'static str,
    /// The block cache budget in bytes.
    pub cache_bytes: u64,
    /// get or scan.
    pub op: String,
    /// Rows per scan (1 for gets).
    pub rows_per_op: u64,
    /// Clients.
    pub clients: usize,
    /// Requests each keeps in flight.
    pub outstanding: usize,
    /// Which run of the cell (from 0).
    pub repeat: usize,
    /// Measured seconds.
    pub seconds: Fixed<3>,
    /// Operations completed.
    pub ops: u64,
    /// Operations per second.
    pub ops_per_s: Fixed<1>,
    /// Rows per second.
    pub rows_per_s: Fixed<1>,
    /// Mean latency, µs.
    pub mean_us: Fixed<1>,
    /// Median latency, µs.
    pub p50_us: u64,
    /// 99th percentile latency, µs.
    pub p99_us: u64,
    /// 99.9th percentile latency, µs.
    pub p999_us: u64,
    /// Largest latency, µs.
    pub max_us: u64,
    /// Mean latency per 1 KiB row returned, µs.
    pub mean_us_per_kib_row: Fixed<2>,
    /// Read calls per operation.
    pub reads_per_op: Fixed<3>,
    /// Bytes read per operation.
    pub bytes_per_op: Fixed<0>,
    /// Data blocks read from the file per operation.
    pub data_blocks_per_op: Fixed<3>,
    /// Index blocks read from the file per operation.
    pub index_blocks_per_op: Fixed<3>,
    /// Cache hits over the measured time.
    pub cache_hits: u64,
    /// Cache misses.
    pub cache_misses: u64,
    /// Cache evictions.
    pub cache_evictions: u64,
    /// Bytes of the index in memory.
    pub index_memory_bytes: u64,
    /// Bytes of the index on disk.
    pub index_disk_bytes: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Empty data blocks.
    pub empty_blocks: u64,
    /// Mean stored data block bytes.
    pub block_mean: Fixed<0>,
    /// 99th percentile stored block bytes.
    pub block_p99: u64,
    /// Largest stored block.
    pub block_max: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
}

/// Runs the study; returns the text report (the summary) to print.
pub fn run(options: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    check(options)?;
    let out_dir = options
        .out_dir
        .clone()
        .unwrap_or_else(|| Path::new("results").join("bigtable"));
    let data_dir = options.dir.clone().unwrap_or_else(|| out_dir.join("data"));
    for d in [&out_dir, &data_dir] {
        std::fs::create_dir_all(d)
            .with_context(|| format!("{}: cannot create the directory", d.display()))?;
    }
    let mut csv_out = AtomicFile::create(&out_dir.join("bigtable.csv"))?;
    let mut summary_out = AtomicFile::create(&out_dir.join("summary.md"))?;
    let machine = crate::machine::describe();
    let mode = if options.buffered {
        ReadMode::Buffered
    } else {
        ReadMode::Direct
    };
    let threads = options.clients * options.outstanding;
    let mut rows_out: Vec<Row> = Vec::new();
    let mut made: Vec<PathBuf> = Vec::new();
    let started = Instant::now();
    let result = (|| -> anyhow::Result<()> {
        for &rows in &options.rows {
            let tsv = data_dir.join(format!("records-{rows}.tsv"));
            progress.start(rows, &format!("records {rows}"), "rows");
            made.push(tsv.clone());
            let value_size = usize::try_from(options.value_size)?;
            let mut last = 0;
            generate_tsv(rows, value_size, options.seed, &tsv, |n| {
                for _ in last..n.min(rows) {
                    progress.step();
                }
                last = n.min(rows);
            })?;
            progress.finish();
            let input = RecordInput::tsv(&tsv)?;
            let records = input.records();
            let keys: Vec<&[u8]> = records.iter().map(|r| r.key).collect();
            let mut files = Vec::new();
            for layout in Layout::ALL {
                progress.spin(&format!("building {layout} ({rows} rows)"));
                let path = data_dir.join(format!("records-{rows}-{layout}.kv"));
                made.push(path.clone());
                let build = BuildOptions {
                    layout,
                    block_size: options.block_size,
                    compression: options.compression,
                    model: options.model,
                    ..BuildOptions::default()
                };
                lidx::kv::build(&records, &build, &path)?;
                progress.finish();
                let file = KvFile::open(&path, mode)?;
                let info = lidx::kv::info(&file)?;
                files.push((layout, file, info));
            }
            let runs = options.cache_sizes.len() * 2 * options.repeat * files.len();
            progress.start(runs as u64, &format!("{rows} rows"), "runs");
            for &cache_bytes in &options.cache_sizes {
                for op in [Op::Get, Op::Scan] {
                    for repeat in 0..options.repeat {
                        // The layouts take turns going first, so a drift of the machine
                        // favours neither.
                        let mut order: Vec<usize> = (0..files.len()).collect();
                        if repeat % 2 == 1 {
                            order.reverse();
                        }
                        for i in order {
                            let (layout, file, info) = &files[i];
                            progress.message(&format!(
                                "{layout} {} cache {}",
                                op.name(),
                                human_bytes(cache_bytes)
                            ));
                            let cache = BlockCache::new(cache_bytes);
                            let m = closed_loop(
                                file,
                                &cache,
                                &keys,
                                (op, options.scan_rows),
                                threads,
                                (options.warmup, options.measure),
                                options.seed ^ repeat as u64,
                            )?;
                            let mut r =
                                row(options, &machine, rows, *layout, cache_bytes, op, &m, info);
                            r.repeat = repeat;
                            rows_out.push(r);
                            progress.step();
                        }
                    }
                }
            }
            progress.finish();
            drop(files);
            if !options.keep_data {
                let _ = std::fs::remove_file(&tsv);
            }
        }
        Ok(())
    })();
    if !options.keep_data {
        for p in &made {
            let _ = std::fs::remove_file(p);
        }
        if options.dir.is_none() {
            let _ = std::fs::remove_dir(&data_dir);
        }
    }
    result?;
    write_rows(&mut csv_out, &rows_out)?;
    plots(&out_dir, options, &rows_out)?;
    let summary = summary(options, &machine, &rows_out, started.elapsed());
    summary_out.write_all(summary.as_bytes())?;
    csv_out.finish()?;
    summary_out.finish()?;
    Ok(format!(
        "{summary}\nWrote {}, {} and the plots in {}.\n",
        out_dir.join("bigtable.csv").display(),
        out_dir.join("summary.md").display(),
        out_dir.display()
    ))
}

fn check(o: &Options) -> anyhow::Result<()> {
    if o.rows.is_empty() || o.rows.contains(&0) {
        bail!("invalid rows: give at least one table size, each at least 1 row");
    }
    if o.cache_sizes.is_empty() {
        bail!("invalid cache-sizes: give at least one (0 for no cache)");
    }
    if o.clients == 0 || o.outstanding == 0 {
        bail!("invalid clients/outstanding: at least 1 each");
    }
    if o.clients * o.outstanding > 4096 {
        bail!(
            "invalid clients × outstanding: {} threads; at most 4096",
            o.clients * o.outstanding
        );
    }
    if o.repeat == 0 {
        bail!("invalid repeat: at least 1 run per cell");
    }
    if o.scan_rows == 0 {
        bail!("invalid scan-rows: at least 1");
    }
    if o.measure.is_zero() {
        bail!("invalid seconds: measure for some time");
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn row(
    o: &Options,
    machine: &str,
    rows: u64,
    layout: Layout,
    cache_bytes: u64,
    op: Op,
    m: &Measured,
    info: &lidx::kv::KvInfo,
) -> Row {
    let secs = m.elapsed.as_secs_f64();
    let per_op = |v: u64| v as f64 / m.ops.max(1) as f64;
    let mean = m.latency.mean();
    let rows_per_op = match op {
        Op::Get => 1,
        Op::Scan => o.scan_rows as u64,
    };
    let kib_rows =
        (m.rows.max(1) as f64 / m.ops.max(1) as f64) * (o.value_size as f64 / 1024.0).max(1e-9);
    Row {
        experiment: "bigtable",
        lidx_version: LIDX_VERSION,
        machine: machine.to_string(),
        rows,
        value_size: o.value_size,
        block_size: o.block_size,
        compression: o.compression.to_string(),
        layout: layout.to_string(),
        model: match layout {
            Layout::Learned => o.model.to_string(),
            Layout::Sstable => String::new(),
        },
        reads_with: if o.buffered { "buffered" } else { "O_DIRECT" },
        cache_bytes,
        op: op.name().to_string(),
        rows_per_op,
        clients: o.clients,
        outstanding: o.outstanding,
        repeat: 0,
        seconds: Fixed(secs),
        ops: m.ops,
        ops_per_s: Fixed(m.ops as f64 / secs),
        rows_per_s: Fixed(m.rows as f64 / secs),
        mean_us: Fixed(mean),
        p50_us: m.latency.value_at_quantile(0.5),
        p99_us: m.latency.value_at_quantile(0.99),
        p999_us: m.latency.value_at_quantile(0.999),
        max_us: m.latency.max(),
        mean_us_per_kib_row: Fixed(mean / kib_rows),
        reads_per_op: Fixed(per_op(m.io.reads)),
        bytes_per_op: Fixed(per_op(m.io.bytes)),
        data_blocks_per_op: Fixed(per_op(m.io.data_block_reads)),
        index_blocks_per_op: Fixed(per_op(m.io.index_block_reads)),
        cache_hits: m.cache.hits,
        cache_misses: m.cache.misses,
        cache_evictions: m.cache.evictions,
        index_memory_bytes: info.index_memory_bytes,
        index_disk_bytes: info.index_disk_bytes,
        data_blocks: info.data_blocks.blocks,
        empty_blocks: info.data_blocks.empty,
        block_mean: Fixed(info.data_blocks.mean),
        block_p99: info.data_blocks.p99,
        block_max: info.data_blocks.max,
        file_bytes: info.file_bytes,
    }
}

/// A cell's figures, each the median over its runs.
struct Cell {
    mean_us: f64,
    p99_us: f64,
    rows_per_s: f64,
    index_blocks_per_op: f64,
    data_blocks_per_op: f64,
    runs: usize,
}

fn cell(rows: &[Row], n: u64, layout: Layout, cache: u64, op: Op) -> Option<Cell> {
    let runs: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            r.rows == n && r.layout == layout.name() && r.cache_bytes == cache && r.op == op.name()
        })
        .collect();
    let med = |f: &dyn Fn(&Row) -> f64| median(&mut runs.iter().map(|r| f(r)).collect::<Vec<_>>());
    (!runs.is_empty()).then(|| Cell {
        mean_us: med(&|r| r.mean_us.0),
        p99_us: med(&|r| r.p99_us as f64),
        rows_per_s: med(&|r| r.rows_per_s.0),
        index_blocks_per_op: med(&|r| r.index_blocks_per_op.0),
        data_blocks_per_op: med(&|r| r.data_blocks_per_op.0),
        runs: runs.len(),
    })
}

/// Fig. 1 (a–d) at the largest table: latency (mean, p99) and throughput against the cache
/// size, for gets and scans; and gets' latency against the table size at the smallest cache.
fn plots(dir: &Path, o: &Options, rows: &[Row]) -> anyhow::Result<()> {
    let largest = o.rows.iter().copied().max().unwrap_or(0);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    for op in [Op::Get, Op::Scan] {
        let mut latency = Vec::new();
        let mut throughput = Vec::new();
        for layout in Layout::ALL {
            let of = |f: &dyn Fn(&Cell) -> f64| -> Vec<(f64, f64)> {
                o.cache_sizes
                    .iter()
                    .filter_map(|&c| cell(rows, largest, layout, c, op).map(|r| (mib(c), f(&r))))
                    .collect()
            };
            latency.push(Series {
                name: format!("{layout} p99"),
                points: of(&|r| r.p99_us),
            });
            latency.push(Series {
                name: format!("{layout} mean"),
                points: of(&|r| r.mean_us),
            });
            throughput.push(Series {
                name: layout.to_string(),
                points: of(&|r| r.rows_per_s),
            });
        }
        let what = match op {
            Op::Get => "point lookups".to_string(),
            Op::Scan => format!("scans of {} rows", o.scan_rows),
        };
        let setting = format!(
            "{largest} rows, {} clients x {} outstanding",
            o.clients, o.outstanding
        );
        chart(
            &dir.join(format!("fig1_{}_latency.png", op.name())),
            &format!("Latency of {what} ({setting})"),
            ("block cache (MiB)", Scale::Log),
            ("latency (µs)", Scale::Log),
            &latency,
            true,
        )?;
        chart(
            &dir.join(format!("fig1_{}_throughput.png", op.name())),
            &format!("Throughput of {what} ({setting})"),
            ("block cache (MiB)", Scale::Log),
            ("rows per second", Scale::Log),
            &throughput,
            true,
        )?;
    }
    if o.rows.len() > 1 {
        let smallest_cache = o.cache_sizes.iter().copied().min().unwrap_or(0);
        let mut series = Vec::new();
        for layout in Layout::ALL {
            let pts = |f: &dyn Fn(&Cell) -> f64| -> Vec<(f64, f64)> {
                o.rows
                    .iter()
                    .filter_map(|&n| {
                        cell(rows, n, layout, smallest_cache, Op::Get).map(|r| (n as f64, f(&r)))
                    })
                    .collect()
            };
            series.push(Series {
                name: format!("{layout} p99"),
                points: pts(&|r| r.p99_us),
            });
            series.push(Series {
                name: format!("{layout} mean"),
                points: pts(&|r| r.mean_us),
            });
        }
        chart(
            &dir.join("table_sizes.png"),
            &format!(
                "Point lookups against table size (cache {})",
                human_bytes(smallest_cache)
            ),
            ("rows", Scale::Log),
            ("latency (µs)", Scale::Log),
            &series,
            true,
        )?;
    }
    Ok(())
}

fn summary(o: &Options, machine: &str, rows: &[Row], took: Duration) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Paper 4 (Bigtable), Fig. 1: learned block layout vs SSTable index\n"
    );
    let _ = writeln!(
        s,
        "Machine: {machine}. Records: random u64 keys as 20-digit strings, values of {}; blocks of {} ({} compression), read with {}. Clients: {} x {} outstanding (threads), closed loop, {:.1} s measured after {:.1} s of warm-up, keys drawn uniformly. The learned layout's model: {}. Took {:.0} s.\n",
        human_bytes(o.value_size),
        human_bytes(o.block_size),
        o.compression,
        if o.buffered {
            "the page cache"
        } else {
            "O_DIRECT"
        },
        o.clients,
        o.outstanding,
        o.measure.as_secs_f64(),
        o.warmup.as_secs_f64(),
        o.model,
        took.as_secs_f64()
    );
    let _ = writeln!(s, "## Index\n");
    let _ = writeln!(
        s,
        "| rows | layout | index in memory | index on disk | data blocks | empty | block p99 | block max |\n|---|---|---|---|---|---|---|---|"
    );
    for &n in &o.rows {
        for layout in Layout::ALL {
            if let Some(r) = rows
                .iter()
                .find(|r| r.rows == n && r.layout == layout.name())
            {
                let _ = writeln!(
                    s,
                    "| {n} | {layout} | {} | {} | {} | {} | {} | {} |",
                    human_bytes(r.index_memory_bytes),
                    human_bytes(r.index_disk_bytes),
                    r.data_blocks,
                    r.empty_blocks,
                    human_bytes(r.block_p99),
                    human_bytes(r.block_max)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "\nThe SSTable keeps level 0 in memory and reads level-1 index blocks through the cache; the learned layout keeps its model and block-location array (8 bytes a block) in memory and stores no key.\n"
    );
    let _ = writeln!(
        s,
        "## Learned against SSTable (ratios: SSTable / learned for latency, learned / SSTable for throughput; above 1 favours learned)\n"
    );
    let _ = writeln!(
        s,
        "| rows | cache | op | mean µs (learned / sstable) | p99 µs (learned / sstable) | mean ratio | p99 ratio | throughput ratio | index blocks/op (learned / sstable) | data blocks/op (learned / sstable) |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    let mut runs = 0;
    for &n in &o.rows {
        for &c in &o.cache_sizes {
            for op in [Op::Get, Op::Scan] {
                let (Some(l), Some(t)) = (
                    cell(rows, n, Layout::Learned, c, op),
                    cell(rows, n, Layout::Sstable, c, op),
                ) else {
                    continue;
                };
                let _ = writeln!(
                    s,
                    "| {n} | {} | {} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {} | {} | {:.2} / {:.2} | {:.2} / {:.2} |",
                    human_bytes(c),
                    op.name(),
                    l.mean_us,
                    t.mean_us,
                    l.p99_us,
                    t.p99_us,
                    times(t.mean_us / l.mean_us.max(1e-9)),
                    times(t.p99_us / l.p99_us.max(1e-9)),
                    times(l.rows_per_s / t.rows_per_s.max(1e-9)),
                    l.index_blocks_per_op,
                    t.index_blocks_per_op,
                    l.data_blocks_per_op,
                    t.data_blocks_per_op,
                );
                runs = runs.max(l.runs);
            }
        }
    }
    let _ = writeln!(s, "\nEach figure is the median of {runs} run(s).");
    let _ = writeln!(
        s,
        "\nPaper 4 (5 tablet servers, 15 clients x 100 requests, 1 KB rows, 32 KB blocks): the learned index cut p99 latency of point lookups by 38% (1.61x) and mean latency by 36% (1.56x) and 22% for scans (1.28x), kept scans' p99 the same, and raised throughput by 54-55% for lookups and 28-56% for scans."
    );
    s
}
