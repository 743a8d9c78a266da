//! `lidx experiment bigtable`: paper 4's Fig. 1 (a–d). The learned block layout against
//! Bigtable's two-level SSTable index, and against RocksDB itself, on the same records,
//! under concurrent clients.
//!
//! The records are the paper's: random integer keys written as strings (20 digits), each
//! with a value of `--value-size` (1 KiB), in blocks of 32 KiB. For every table size, both
//! layouts are built from the same records, and (with the `rocksdb` feature) the records are
//! loaded into RocksDB as one SST file with a two-level index. Then, for every block cache
//! size, each system serves two closed-loop workloads ([`clients`](crate::clients), paper 4
//! section 5): gets of one row, and scans of 100 consecutive rows.
//!
//! Keys are drawn uniformly from the records. Blocks are read with `O_DIRECT` (the OS page
//! cache would otherwise hold the whole table and hide the block cache), through a cache
//! that starts empty for each run. Each run warms up, then measures for a fixed time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;
use lidx::kv::input::{RecordInput, generate_tsv};
use lidx::kv::write::Record;
use lidx::kv::{BlockCache, BuildOptions, Compression, KvFile, Layout, ModelKind};
use lidx::storage::ReadMode;
use serde::Serialize;

use crate::clients::{KvStore, Load, Measured, Op, closed_loop};
use crate::csv_rows::{Fixed, LIDX_VERSION, write_rows};
use crate::harness::{Results, data_dir};
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
    /// Measure RocksDB too (where built with the `rocksdb` feature).
    pub rocksdb: bool,
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
            rocksdb: cfg!(feature = "rocksdb"),
            dir: None,
            out_dir: None,
            keep_data: false,
            seed: 42,
        }
    }
}

/// The systems the study compares, as the CSV's `layout` column names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum System {
    /// lidx's file in a layout.
    Kv(Layout),
    /// RocksDB holding the same records.
    RocksDb,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Kv(layout) => layout.name(),
            System::RocksDb => "rocksdb",
        }
    }
}

/// A system's index and blocks, as built.
#[derive(Clone, Copy, Debug, Default)]
struct Built {
    index_memory_bytes: u64,
    index_disk_bytes: u64,
    data_blocks: u64,
    empty_blocks: u64,
    block_mean: f64,
    block_p99: u64,
    block_max: u64,
    file_bytes: u64,
}

impl Built {
    fn of(info: &lidx::kv::KvInfo) -> Built {
        Built {
            index_memory_bytes: info.index_memory_bytes,
            index_disk_bytes: info.index_disk_bytes,
            data_blocks: info.data_blocks.blocks,
            empty_blocks: info.data_blocks.empty,
            block_mean: info.data_blocks.mean,
            block_p99: info.data_blocks.p99,
            block_max: info.data_blocks.max,
            file_bytes: info.file_bytes,
        }
    }
}

/// A system ready to serve: a lidx file, or a RocksDB directory.
enum Served {
    Kv(Box<KvFile>),
    #[cfg(feature = "rocksdb")]
    RocksDb(PathBuf),
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
    /// Read calls per operation (RocksDB: the process's read system calls).
    pub reads_per_op: Fixed<3>,
    /// Bytes read per operation (RocksDB: the process's bytes read from storage).
    pub bytes_per_op: Fixed<0>,
    /// Blocks read from the file per operation, index and data (RocksDB: its perf
    /// context's count, which leaves out what its iterators read ahead).
    pub blocks_per_op: Fixed<3>,
    /// Data blocks read from the file per operation (NaN where the system does not tell
    /// them from index blocks: RocksDB without a cache).
    pub data_blocks_per_op: Fixed<3>,
    /// Index blocks read from the file per operation (NaN as above).
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
    let mut results = Results::create(
        options.out_dir.as_deref(),
        "bigtable",
        ["bigtable.csv", "summary.md"],
    )?;
    // The data goes into a scratch directory inside --dir (or OUT/data) unless kept.
    let data = data_dir(options.dir.as_deref(), &results.dir, options.keep_data)?;
    let data_dir = data.path().to_path_buf();
    let machine = crate::machine::describe();
    let mode = if options.buffered {
        ReadMode::Buffered
    } else {
        ReadMode::Direct
    };
    let threads = options.clients * options.outstanding;
    let mut rows_out: Vec<Row> = Vec::new();
    let started = Instant::now();
    let result = (|| -> anyhow::Result<()> {
        for &rows in &options.rows {
            let tsv = data_dir.join(format!("records-{rows}.tsv"));
            progress.start(rows, &format!("records {rows}"), "rows");
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
            let mut systems: Vec<(System, Served, Built)> = Vec::new();
            for layout in [Layout::Learned, Layout::Sstable] {
                progress.spin(&format!("building {layout} ({rows} rows)"));
                let path = data_dir.join(format!("records-{rows}-{layout}.kv"));
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
                let built = Built::of(&lidx::kv::info(&file)?);
                systems.push((System::Kv(layout), Served::Kv(Box::new(file)), built));
            }
            if options.rocksdb {
                progress.spin(&format!("loading RocksDB ({rows} rows)"));
                let dir = data_dir.join(format!("records-{rows}-rocksdb"));
                let built = rocks_build(&records, &dir, options)?;
                progress.finish();
                systems.push((System::RocksDb, rocks_served(dir)?, built));
            }
            let runs = options.cache_sizes.len() * 2 * options.repeat * systems.len();
            progress.start(runs as u64, &format!("{rows} rows"), "runs");
            let ops = [
                Op::Get,
                Op::Scan {
                    rows: options.scan_rows,
                },
            ];
            for &cache_bytes in &options.cache_sizes {
                for op in ops {
                    for repeat in 0..options.repeat {
                        // The systems take turns going first, so a drift of the machine
                        // favours none.
                        let mut order: Vec<usize> = (0..systems.len()).collect();
                        order.rotate_left(repeat % systems.len());
                        for i in order {
                            let (system, served, built) = &systems[i];
                            progress.message(&format!(
                                "{} {} cache {}",
                                system.name(),
                                op.name(),
                                human_bytes(cache_bytes)
                            ));
                            let load = Load {
                                op,
                                threads,
                                warmup: options.warmup,
                                measure: options.measure,
                                seed: options.seed ^ repeat as u64,
                            };
                            let m = serve(served, cache_bytes, &keys, &load, options)?;
                            let cell = Cell0 {
                                rows,
                                system: *system,
                                cache_bytes,
                                op,
                                repeat,
                            };
                            rows_out.push(row(options, &machine, &cell, &m, built));
                            progress.step();
                        }
                    }
                }
            }
            progress.finish();
            drop(systems);
            if !options.keep_data {
                let _ = std::fs::remove_file(&tsv);
            }
        }
        Ok(())
    })();
    drop(data);
    result?;
    write_rows(results.file(0), &rows_out)?;
    plots(&results.dir, options, &rows_out)?;
    let summary = summary(options, &machine, &rows_out, started.elapsed());
    results.file(1).write_all(summary.as_bytes())?;
    let (dir, [csv, summary_path]) = results.publish()?;
    Ok(format!(
        "{summary}\nWrote {}, {} and the plots in {}.\n",
        csv.display(),
        summary_path.display(),
        dir.display()
    ))
}

/// One run of `load` against `served` with a block cache of `cache_bytes`.
fn serve(
    served: &Served,
    cache_bytes: u64,
    keys: &[&[u8]],
    load: &Load,
    #[allow(unused_variables)] options: &Options,
) -> anyhow::Result<Measured> {
    match served {
        Served::Kv(file) => {
            let store = KvStore {
                file,
                cache: BlockCache::new(cache_bytes),
            };
            closed_loop(&store, keys, load)
        }
        #[cfg(feature = "rocksdb")]
        Served::RocksDb(dir) => {
            let kv = lidx_lsm::RocksKv::open(dir, &rocks_options(options, cache_bytes))?;
            let store = crate::clients::rocks::RocksStore::new(kv, cache_bytes);
            closed_loop(&store, keys, load)
        }
    }
}

#[cfg(feature = "rocksdb")]
fn rocks_options(o: &Options, cache_bytes: u64) -> lidx_lsm::RocksKvOptions {
    lidx_lsm::RocksKvOptions {
        block_size: usize::try_from(o.block_size).unwrap_or(usize::MAX),
        compression: o.compression,
        cache_bytes,
        direct: !o.buffered,
    }
}

/// Loads `records` into RocksDB at `dir`; its index and blocks as RocksDB reports them.
#[cfg(feature = "rocksdb")]
fn rocks_build(records: &[Record<'_>], dir: &Path, o: &Options) -> anyhow::Result<Built> {
    let sst_bytes = lidx_lsm::RocksKv::build(records, dir, &rocks_options(o, 0))?;
    let kv = lidx_lsm::RocksKv::open(dir, &rocks_options(o, 0))?;
    let t = kv.table_figures();
    Ok(Built {
        // Without a block cache, RocksDB's table reader holds the whole index in memory.
        index_memory_bytes: kv.index_memory_bytes(),
        index_disk_bytes: t.index_bytes,
        data_blocks: t.data_blocks,
        block_mean: t.data_bytes as f64 / t.data_blocks.max(1) as f64,
        file_bytes: sst_bytes,
        ..Built::default()
    })
}

#[cfg(not(feature = "rocksdb"))]
fn rocks_build(_: &[Record<'_>], _: &Path, _: &Options) -> anyhow::Result<Built> {
    bail!("this lidx was built without the rocksdb feature")
}

#[cfg(feature = "rocksdb")]
fn rocks_served(dir: PathBuf) -> anyhow::Result<Served> {
    Ok(Served::RocksDb(dir))
}

#[cfg(not(feature = "rocksdb"))]
fn rocks_served(_: PathBuf) -> anyhow::Result<Served> {
    bail!("this lidx was built without the rocksdb feature")
}

fn check(o: &Options) -> anyhow::Result<()> {
    if o.rocksdb && !cfg!(feature = "rocksdb") {
        bail!("invalid rocksdb: this lidx was built without the rocksdb feature");
    }
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

/// Which run a row is.
struct Cell0 {
    rows: u64,
    system: System,
    cache_bytes: u64,
    op: Op,
    repeat: usize,
}

fn row(o: &Options, machine: &str, c: &Cell0, m: &Measured, built: &Built) -> Row {
    let Cell0 {
        rows,
        system,
        cache_bytes,
        op,
        repeat,
    } = *c;
    let secs = m.elapsed.as_secs_f64();
    let per_op = |v: u64| v as f64 / m.ops.max(1) as f64;
    let mean = m.latency.mean();
    let rows_per_op = match op {
        Op::Get => 1,
        Op::Scan { rows } => rows as u64,
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
        layout: system.name().to_string(),
        model: match system {
            System::Kv(Layout::Learned) => o.model.to_string(),
            _ => String::new(),
        },
        reads_with: if o.buffered { "buffered" } else { "O_DIRECT" },
        cache_bytes,
        op: op.name().to_string(),
        rows_per_op,
        clients: o.clients,
        outstanding: o.outstanding,
        repeat,
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
        reads_per_op: Fixed(per_op(m.io.io.reads)),
        bytes_per_op: Fixed(per_op(m.io.io.bytes)),
        blocks_per_op: Fixed(per_op(m.io.data_block_reads + m.io.index_block_reads)),
        data_blocks_per_op: Fixed(match m.counters.blocks_split {
            true => per_op(m.io.data_block_reads),
            false => f64::NAN,
        }),
        index_blocks_per_op: Fixed(match m.counters.blocks_split {
            true => per_op(m.io.index_block_reads),
            false => f64::NAN,
        }),
        cache_hits: m.counters.cache.hits,
        cache_misses: m.counters.cache.misses,
        cache_evictions: m.counters.cache.evictions,
        index_memory_bytes: built.index_memory_bytes,
        index_disk_bytes: built.index_disk_bytes,
        data_blocks: built.data_blocks,
        empty_blocks: built.empty_blocks,
        block_mean: Fixed(built.block_mean),
        block_p99: built.block_p99,
        block_max: built.block_max,
        file_bytes: built.file_bytes,
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

fn cell(rows: &[Row], n: u64, system: &str, cache: u64, op: &str) -> Option<Cell> {
    let runs: Vec<&Row> = rows
        .iter()
        .filter(|r| r.rows == n && r.layout == system && r.cache_bytes == cache && r.op == op)
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

/// The systems of a study, by name, in the order they are drawn and tabled.
fn system_names(o: &Options) -> Vec<&'static str> {
    let mut names = vec![Layout::Learned.name(), Layout::Sstable.name()];
    if o.rocksdb {
        names.push(System::RocksDb.name());
    }
    names
}

/// Fig. 1 (a–d) at the largest table: latency (mean, p99) and throughput against the cache
/// size, for gets and scans; and gets' latency against the table size at the smallest cache.
fn plots(dir: &Path, o: &Options, rows: &[Row]) -> anyhow::Result<()> {
    let largest = o.rows.iter().copied().max().unwrap_or(0);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    for op in ["get", "scan"] {
        let mut latency = Vec::new();
        let mut throughput = Vec::new();
        for system in system_names(o) {
            let of = |f: &dyn Fn(&Cell) -> f64| -> Vec<(f64, f64)> {
                o.cache_sizes
                    .iter()
                    .filter_map(|&c| cell(rows, largest, system, c, op).map(|r| (mib(c), f(&r))))
                    .collect()
            };
            latency.push(Series {
                name: format!("{system} p99"),
                points: of(&|r| r.p99_us),
            });
            latency.push(Series {
                name: format!("{system} mean"),
                points: of(&|r| r.mean_us),
            });
            throughput.push(Series {
                name: system.to_string(),
                points: of(&|r| r.rows_per_s),
            });
        }
        let what = match op {
            "get" => "point lookups".to_string(),
            _ => format!("scans of {} rows", o.scan_rows),
        };
        let setting = format!(
            "{largest} rows, {} clients x {} outstanding",
            o.clients, o.outstanding
        );
        chart(
            &dir.join(format!("fig1_{op}_latency.png")),
            &format!("Latency of {what} ({setting})"),
            ("block cache (MiB)", Scale::Log),
            ("latency (µs)", Scale::Log),
            &latency,
            true,
        )?;
        chart(
            &dir.join(format!("fig1_{op}_throughput.png")),
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
        for system in system_names(o) {
            let pts = |f: &dyn Fn(&Cell) -> f64| -> Vec<(f64, f64)> {
                o.rows
                    .iter()
                    .filter_map(|&n| {
                        cell(rows, n, system, smallest_cache, "get").map(|r| (n as f64, f(&r)))
                    })
                    .collect()
            };
            series.push(Series {
                name: format!("{system} p99"),
                points: pts(&|r| r.p99_us),
            });
            series.push(Series {
                name: format!("{system} mean"),
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
        "# Paper 4 (Bigtable), Fig. 1: learned block layout vs SSTable index{}\n",
        if o.rocksdb { " and RocksDB" } else { "" }
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
        "| rows | system | index in memory | index on disk | data blocks | empty | block mean | block p99 | block max |\n|---|---|---|---|---|---|---|---|---|"
    );
    for &n in &o.rows {
        for system in system_names(o) {
            if let Some(r) = rows.iter().find(|r| r.rows == n && r.layout == system) {
                let _ = writeln!(
                    s,
                    "| {n} | {system} | {} | {} | {} | {} | {} | {} | {} |",
                    human_bytes(r.index_memory_bytes),
                    human_bytes(r.index_disk_bytes),
                    r.data_blocks,
                    r.empty_blocks,
                    human_bytes(r.block_mean.0 as u64),
                    human_bytes(r.block_p99),
                    human_bytes(r.block_max)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "\nThe SSTable keeps level 0 in memory and reads level-1 index blocks through the cache; the learned layout keeps its model and block-location array (8 bytes a block) in memory and stores no key. RocksDB (one SST file, two-level index: the top level in memory, index partitions through the cache; with no cache every get reads a partition and a data block) reports its data block sizes on average only; its reads and bytes per operation are the process's (RocksDB's own counters miss what its iterators read ahead), its blocks per operation its perf context's, and it tells index from data blocks only through its cache (n/a without one).\n"
    );
    let mut runs = 0;
    let others: Vec<&str> = system_names(o).into_iter().skip(1).collect();
    for other in others {
        let _ = writeln!(
            s,
            "## Learned against {other} (ratios: {other} / learned for latency, learned / {other} for throughput; above 1 favours learned)\n"
        );
        let _ = writeln!(
            s,
            "| rows | cache | op | mean µs (learned / {other}) | p99 µs (learned / {other}) | mean ratio | p99 ratio | throughput ratio | index blocks/op (learned / {other}) | data blocks/op (learned / {other}) |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for &n in &o.rows {
            for &c in &o.cache_sizes {
                for op in ["get", "scan"] {
                    let (Some(l), Some(t)) =
                        (cell(rows, n, "learned", c, op), cell(rows, n, other, c, op))
                    else {
                        continue;
                    };
                    let line = format!(
                        "| {n} | {} | {op} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {} | {} | {:.2} / {:.2} | {:.2} / {:.2} |",
                        human_bytes(c),
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
                    )
                    .replace("NaN", "n/a");
                    let _ = writeln!(s, "{line}");
                    runs = runs.max(l.runs);
                }
            }
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "Each figure is the median of {runs} run(s).");
    let _ = writeln!(
        s,
        "\nPaper 4 (5 tablet servers, 15 clients x 100 requests, 1 KB rows, 32 KB blocks): the learned index cut p99 latency of point lookups by 38% (1.61x) and mean latency by 36% (1.56x) and 22% for scans (1.28x), kept scans' p99 the same, and raised throughput by 54-55% for lookups and 28-56% for scans."
    );
    s
}
