//! `lidx experiment warm`: the CPU a get costs when every block is in memory, for each of
//! lidx's layouts beside LMDB (a memory-mapped B+tree: the warm state paper 2's mmap
//! baselines converge to, Fig. 3) and RocksDB, on the same records, in one run.
//!
//! Paper 2 reports warm latency after 70K lookups (section 3) and paper 4 serves gets from
//! a block cache (section 5); once the blocks a get needs are in memory, what is left is
//! CPU: mapping the key to a block, finding the block in the cache, searching it. Here
//! every system holds the whole table in memory: lidx's layouts and RocksDB in a block
//! cache larger than their file, LMDB in the page cache behind its map; each hands its
//! value over without a copy (lidx's pinned value, RocksDB's `get_pinned`, LMDB's slice
//! of its map), and the timed loop reads the same bytes of each value. Each is
//! warmed by a get of every record in key order, then timed over the same uniformly drawn
//! keys (copied in order into one buffer, so no system pays for fetching them) on one
//! thread: CPU time of the thread (`CLOCK_THREAD_CPUTIME_ID`) and wall time,
//! per get. In each round the systems take turns of 100,000 gets over the same keys, a
//! different system going first each round, so load from other work on the machine falls on
//! all alike; the summary takes the median of the rounds, and each system's CPU against
//! LMDB's as the median over rounds of the two's ratio in the same round. Every answer is checked: the values each system returns are folded into
//! a digest that must equal the records'.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, bail};
use lidx::kv::input::{RecordInput, generate_tsv};
use lidx::kv::write::Record;
use lidx::kv::{BlockCache, BuildOptions, KvFile, Layout, ModelKind, Reader};
use lidx::storage::ReadMode;
use rand::{Rng as _, SeedableRng as _};
use serde::Serialize;

use crate::csv_rows::{Fixed, LIDX_VERSION, write_rows};
use crate::harness::{Experiment, Places, measure};
use crate::plot::{Scale, Series, bars};
use crate::progress::Progress;
use crate::stats::median;
use crate::text::{human_bytes, table};

/// The study's settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Records in the table.
    pub rows: u64,
    /// Bytes of each value, one table per size.
    pub value_sizes: Vec<u64>,
    /// Block (and page) size of lidx's layouts and RocksDB (LMDB's page is the OS page).
    pub block_size: u64,
    /// Timed gets per system and round.
    pub gets: usize,
    /// Rounds; the summary takes the median.
    pub repeat: usize,
    /// Measure RocksDB too (where built with the `rocksdb` feature).
    pub rocksdb: bool,
    /// The systems to measure by name (`learned`, `sstable`, `btree`, `tuned`, `lmdb`,
    /// `rocksdb`); empty: all.
    pub systems: Vec<String>,
    /// Where the data and the results go.
    pub places: Places,
    /// Seed of the records and of the keys asked for.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rows: 1_000_000,
            value_sizes: vec![100, 1024],
            block_size: 4096,
            gets: 1_000_000,
            repeat: 3,
            rocksdb: cfg!(feature = "rocksdb"),
            systems: Vec::new(),
            places: Places::default(),
            seed: 42,
        }
    }
}

/// One CSV row: one system, table and round.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// The experiment.
    pub experiment: &'static str,
    /// lidx's version.
    pub lidx_version: &'static str,
    /// The machine.
    pub machine: String,
    /// Records in the table.
    pub rows: u64,
    /// Bytes of each value.
    pub value_size: u64,
    /// Block size of lidx's layouts and RocksDB.
    pub block_size: u64,
    /// The system: a lidx layout, `lmdb` or `rocksdb`.
    pub system: String,
    /// How it is set up.
    pub settings: String,
    /// Bytes of its files.
    pub file_bytes: u64,
    /// Bytes of its block cache (LMDB: none; the page cache holds its file).
    pub cache_bytes: u64,
    /// The round, from 0.
    pub round: usize,
    /// Gets timed.
    pub gets: usize,
    /// CPU time of the thread per get, ns.
    pub cpu_ns_per_get: Fixed<1>,
    /// Wall time per get, ns.
    pub wall_ns_per_get: Fixed<1>,
    /// Blocks a timed get read from the file (lidx and RocksDB: cache misses; 0 when warm).
    pub block_reads: u64,
    /// Page faults that read from the file during the timed gets (the thread's major
    /// faults; LMDB's misses; 0 when warm).
    pub major_faults: u64,
}

/// The systems measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum System {
    Kv(Layout),
    Lmdb,
    RocksDb,
}

impl System {
    /// The systems `o` measures, in the order they run.
    fn all(o: &Options) -> Vec<System> {
        System::known(o)
            .into_iter()
            .filter(|s| o.systems.is_empty() || o.systems.iter().any(|n| n == s.name()))
            .collect()
    }

    /// Every system this build can measure.
    fn known(o: &Options) -> Vec<System> {
        let mut all: Vec<System> = [
            Layout::Learned,
            Layout::Sstable,
            Layout::Btree,
            Layout::Tuned,
        ]
        .into_iter()
        .map(System::Kv)
        .collect();
        all.push(System::Lmdb);
        if o.rocksdb {
            all.push(System::RocksDb);
        }
        all
    }

    fn name(self) -> &'static str {
        match self {
            System::Kv(layout) => layout.name(),
            System::Lmdb => "lmdb",
            System::RocksDb => "rocksdb",
        }
    }
}

/// A system built and open.
enum Open {
    Kv(Box<KvFile>, BlockCache),
    Lmdb(lidx_lmdb::LmdbKv),
    #[cfg(feature = "rocksdb")]
    RocksDb(Box<lidx_lsm::RocksKv>),
}

struct Built {
    system: System,
    open: Open,
    settings: String,
    file_bytes: u64,
    cache_bytes: u64,
}

/// What a system's gets did in a round, summed over its turns.
#[derive(Clone, Copy, Default)]
struct Pass {
    gets: usize,
    cpu_ns: f64,
    wall_ns: f64,
    block_reads: u64,
    major_faults: u64,
    /// The digest of the values so far ([`fold`]).
    digest: u64,
}

/// Gets a system makes in one turn before the next system takes its turn: 0.1 to 0.6 s, so
/// that every system of a round sees the same load from other work on the machine, and
/// long enough that refilling the processor's caches after the others' turns (a few MB of
/// hot index and cache metadata, a few milliseconds) is a few percent of a turn.
const TURN: usize = 100_000;

/// Folds a value into a digest of the values a pass returns: its length and its first and
/// last bytes, so a wrong, short or missing value changes it.
fn fold(digest: u64, value: &[u8]) -> u64 {
    let ends = u64::from(value.first().copied().unwrap_or(0)) << 8
        | u64::from(value.last().copied().unwrap_or(0));
    digest
        .rotate_left(5)
        .wrapping_add(value.len() as u64 ^ ends << 20)
}

fn thread_cpu_ns() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
}

impl Built {
    /// Gets `keys` in order, timed, adding to `so_far` (the digest continued); a miss is an
    /// error (every key asked for exists).
    fn pass(&self, keys: &[&[u8]], so_far: Pass) -> anyhow::Result<Pass> {
        let faults = crate::machine::thread_major_faults();
        let (cpu, wall) = (thread_cpu_ns(), Instant::now());
        let missing = |key: &[u8]| {
            anyhow::anyhow!(
                "{}: key {} not found",
                self.system.name(),
                String::from_utf8_lossy(key)
            )
        };
        let mut digest = so_far.digest;
        let block_reads;
        match &self.open {
            Open::Kv(file, cache) => {
                let mut reader = Reader::new(file, cache);
                for key in keys {
                    let value = reader.get_pinned(key)?.ok_or_else(|| missing(key))?;
                    digest = fold(digest, &value);
                }
                block_reads = reader.stats().io.reads;
            }
            Open::Lmdb(kv) => {
                let reader = kv.reader()?;
                for key in keys {
                    let value = reader.get(key)?.ok_or_else(|| missing(key))?;
                    digest = fold(digest, value);
                }
                block_reads = 0;
            }
            #[cfg(feature = "rocksdb")]
            Open::RocksDb(kv) => {
                for key in keys {
                    digest = kv
                        .get_with(key, |value| fold(digest, value))?
                        .ok_or_else(|| missing(key))?;
                }
                block_reads = 0;
            }
        }
        Ok(Pass {
            gets: so_far.gets + keys.len(),
            cpu_ns: so_far.cpu_ns + thread_cpu_ns() - cpu,
            wall_ns: so_far.wall_ns + wall.elapsed().as_secs_f64() * 1e9,
            block_reads: so_far.block_reads + block_reads,
            major_faults: so_far.major_faults
                + crate::machine::thread_major_faults().saturating_sub(faults),
            digest,
        })
    }
}

/// Builds `system` on `records` in `dir`, opens it and warms it with a get of every record.
fn build(system: System, records: &[Record<'_>], o: &Options, dir: &Path) -> anyhow::Result<Built> {
    let name = format!("records-{}", system.name());
    let path = dir.join(&name);
    let (open, settings, file_bytes, cache_bytes) = match system {
        System::Kv(layout) => {
            let options = BuildOptions {
                layout,
                block_size: o.block_size,
                model: ModelKind::Pgm,
                ..BuildOptions::default()
            };
            lidx::kv::build(records, &options, &path)?;
            let file_bytes = std::fs::metadata(&path)?.len();
            // Twice the file, so every block stays: the cache's shards fill by hash and
            // its eviction is approximate, so a cache a quarter larger than the file still
            // pushed blocks out of a full shard now and then (a run read 316 blocks while
            // timed; the timed passes must read none).
            let cache_bytes = 2 * file_bytes + (1 << 20);
            let file = KvFile::open(&path, ReadMode::Buffered)?;
            let settings = format!(
                "{} B blocks{}, read through lidx's block cache",
                o.block_size,
                if layout == Layout::Learned {
                    ", PGM model"
                } else {
                    ""
                }
            );
            (
                Open::Kv(Box::new(file), BlockCache::new(cache_bytes)),
                settings,
                file_bytes,
                cache_bytes,
            )
        }
        System::Lmdb => {
            let figures =
                lidx_lmdb::LmdbKv::build(records.iter().map(|r| (r.key, r.value)), &path)?;
            let settings = format!(
                "LMDB through heed: B+tree of {} levels, {} B pages ({} branch, {} leaf, {} overflow), memory-mapped, read-only, no read-ahead, one read transaction per turn",
                figures.depth,
                figures.page_size,
                figures.branch_pages,
                figures.leaf_pages,
                figures.overflow_pages
            );
            (
                Open::Lmdb(lidx_lmdb::LmdbKv::open(&path)?),
                settings,
                figures.file_bytes,
                0,
            )
        }
        #[cfg(feature = "rocksdb")]
        System::RocksDb => {
            let mut options = lidx_lsm::RocksKvOptions {
                block_size: usize::try_from(o.block_size)?,
                compression: lidx::kv::Compression::None,
                cache_bytes: 0,
                direct: false,
                filter_bits_per_key: 10,
                statistics: false,
            };
            let file_bytes = lidx_lsm::RocksKv::build(records, &path, &options)?;
            options.cache_bytes = file_bytes + file_bytes / 4 + (8 << 20);
            let kv = lidx_lsm::RocksKv::open(&path, &options)?;
            (
                Open::RocksDb(Box::new(kv)),
                options.describe(),
                file_bytes,
                options.cache_bytes,
            )
        }
        #[cfg(not(feature = "rocksdb"))]
        System::RocksDb => bail!("this lidx was built without the rocksdb feature"),
    };
    let built = Built {
        system,
        open,
        settings,
        file_bytes,
        cache_bytes,
    };
    let in_order: Vec<&[u8]> = records.iter().map(|r| r.key).collect();
    built.pass(&in_order, Pass::default())?;
    Ok(built)
}

struct Measuring<'a> {
    o: &'a Options,
    dir: &'a Path,
    machine: &'a str,
}

impl Experiment for Measuring<'_> {
    type Cell = u64;
    type Row = Row;

    fn cells(&self) -> anyhow::Result<Vec<u64>> {
        Ok(self.o.value_sizes.clone())
    }

    fn steps(&self, _: &u64) -> u64 {
        (System::all(self.o).len() * (1 + self.o.repeat)) as u64
    }

    fn run_cell(&mut self, &value_size: &u64, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        let o = self.o;
        let dir = self.dir.join(format!("values-{value_size}"));
        std::fs::create_dir(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
        let tsv = dir.join("records.tsv");
        progress.message(&format!("records of {value_size} B"));
        generate_tsv(o.rows, usize::try_from(value_size)?, o.seed, &tsv, |_| {})?;
        let input = RecordInput::tsv(&tsv)?;
        let records = input.records();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(o.seed ^ value_size);
        let drawn: Vec<&Record<'_>> = (0..o.gets)
            .map(|_| &records[rng.random_range(0..records.len())])
            .collect();
        // The keys asked for, copied in the order asked into one buffer that every pass
        // reads in sequence: where they sat among the records, the system whose turn came
        // first would take a cache miss per key that the others find in the L3.
        let packed: Vec<u8> = drawn.iter().flat_map(|r| r.key.iter().copied()).collect();
        let mut rest = packed.as_slice();
        let asked: Vec<&[u8]> = drawn
            .iter()
            .map(|r| {
                let (key, after) = rest.split_at(r.key.len());
                rest = after;
                key
            })
            .collect();
        let expected = drawn.iter().fold(0, |d, r| fold(d, r.value));
        let mut systems = Vec::new();
        for system in System::all(o) {
            progress.message(&format!("building and warming {}", system.name()));
            systems.push(build(system, &records, o, &dir)?);
            progress.step();
        }
        let mut rows = Vec::new();
        for round in 0..o.repeat {
            let mut order: Vec<usize> = (0..systems.len()).collect();
            order.rotate_left(round % systems.len());
            progress.message(&format!("{value_size} B values: round {round}"));
            // The systems take turns of `TURN` gets over the same keys.
            let mut passes = vec![Pass::default(); systems.len()];
            for turn in asked.chunks(TURN) {
                for &i in &order {
                    if let (Some(s), Some(p)) = (systems.get(i), passes.get_mut(i)) {
                        *p = s.pass(turn, *p)?;
                    }
                }
            }
            for (s, pass) in order
                .iter()
                .filter_map(|&i| Some((systems.get(i)?, passes.get(i)?)))
            {
                let gets = pass.gets.max(1) as f64;
                if pass.digest != expected {
                    bail!(
                        "{}: the values returned differ from the records'",
                        s.system.name()
                    );
                }
                rows.push(Row {
                    experiment: "warm",
                    lidx_version: LIDX_VERSION,
                    machine: self.machine.to_string(),
                    rows: o.rows,
                    value_size,
                    block_size: o.block_size,
                    system: s.system.name().into(),
                    settings: s.settings.clone(),
                    file_bytes: s.file_bytes,
                    cache_bytes: s.cache_bytes,
                    round,
                    gets: pass.gets,
                    cpu_ns_per_get: Fixed(pass.cpu_ns / gets),
                    wall_ns_per_get: Fixed(pass.wall_ns / gets),
                    block_reads: pass.block_reads,
                    major_faults: pass.major_faults,
                });
                progress.step();
            }
        }
        Ok(rows)
    }
}

/// Runs the study; returns the text report (the summary) to print.
pub fn run(o: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    check(o)?;
    let (mut results, data) = o.places.create("warm", ["warm.csv", "summary.md"])?;
    let machine = crate::machine::describe();
    let started = Instant::now();
    let mut measuring = Measuring {
        o,
        dir: data.path(),
        machine: &machine,
    };
    let (_, rows) = measure(&mut measuring, "warm gets", "steps", progress)?;
    drop(data);
    write_rows(results.file(0), &rows)?;
    plot(&results.dir, o, &rows)?;
    let summary = summary(o, &machine, &rows, started.elapsed());
    results.finish(&summary)
}

fn check(o: &Options) -> anyhow::Result<()> {
    if o.rocksdb && !cfg!(feature = "rocksdb") {
        bail!("invalid rocksdb: this lidx was built without the rocksdb feature");
    }
    if o.rows == 0 || o.rows > 1 << 32 {
        bail!("invalid rows: 1 to 4G records");
    }
    if o.value_sizes.is_empty() || o.value_sizes.iter().any(|&v| v == 0 || v > 1 << 20) {
        bail!("invalid value-sizes: give at least one, each 1 B to 1 MiB");
    }
    if o.gets == 0 || o.gets > 1 << 30 {
        bail!("invalid gets: 1 to 1G");
    }
    if o.repeat == 0 || o.repeat > 100 {
        bail!("invalid repeat: 1 to 100 rounds");
    }
    let known = System::known(o);
    if let Some(n) = o
        .systems
        .iter()
        .find(|n| !known.iter().any(|s| s.name() == *n))
    {
        let names: Vec<&str> = known.iter().map(|s| s.name()).collect();
        bail!("invalid systems: {n} is not one of {}", names.join(", "));
    }
    if !(512..=1 << 20).contains(&o.block_size) {
        bail!("invalid block-size: 512 B to 1 MiB");
    }
    Ok(())
}

/// The median over rounds of `field` for each system and value size.
fn medians(rows: &[Row], field: impl Fn(&Row) -> f64) -> Vec<(String, u64, f64)> {
    let mut out: Vec<(String, u64, f64)> = Vec::new();
    for r in rows {
        if out
            .iter()
            .any(|(s, v, _)| *s == r.system && *v == r.value_size)
        {
            continue;
        }
        let mut values: Vec<f64> = rows
            .iter()
            .filter(|x| x.system == r.system && x.value_size == r.value_size)
            .map(&field)
            .collect();
        out.push((r.system.clone(), r.value_size, median(&mut values)));
    }
    out
}

/// The median over rounds of `system`'s CPU per get over LMDB's in the same round, on
/// values of `value_size` (the two took turns through the round, so load from other work
/// on the machine falls on both alike).
fn cpu_to_lmdb(rows: &[Row], system: &str, value_size: u64) -> Option<f64> {
    let of = |name: &str, round: usize| {
        rows.iter()
            .find(|r| r.system == name && r.value_size == value_size && r.round == round)
            .map(|r| r.cpu_ns_per_get.0)
    };
    let mut ratios: Vec<f64> = rows
        .iter()
        .filter(|r| r.system == system && r.value_size == value_size)
        .filter_map(|r| Some(r.cpu_ns_per_get.0 / of("lmdb", r.round)?))
        .collect();
    (!ratios.is_empty()).then(|| median(&mut ratios))
}

fn summary(o: &Options, machine: &str, rows: &[Row], took: std::time::Duration) -> String {
    let cpu = medians(rows, |r| r.cpu_ns_per_get.0);
    let wall = medians(rows, |r| r.wall_ns_per_get.0);
    let mut out = format!(
        "# lidx experiment warm\n\nMachine: {machine}. {} records of 20-digit keys, {} B blocks; every table whole in memory; {} gets of uniformly drawn keys per system and round, one thread, {} rounds (medians); {:.0} s.\n\n",
        o.rows,
        o.block_size,
        o.gets,
        o.repeat,
        took.as_secs_f64()
    );
    for &value_size in &o.value_sizes {
        let of = |v: &[(String, u64, f64)], system: &str| {
            v.iter()
                .find(|(s, size, _)| s == system && *size == value_size)
                .map(|x| x.2)
        };
        out.push_str(&format!("## Values of {value_size} B\n\n"));
        let mut table_rows = Vec::new();
        for system in System::all(o) {
            let name = system.name();
            let (Some(c), Some(w)) = (of(&cpu, name), of(&wall, name)) else {
                continue;
            };
            let r = rows
                .iter()
                .find(|r| r.system == name && r.value_size == value_size);
            let to_lmdb = cpu_to_lmdb(rows, name, value_size);
            let verdict = match (system, to_lmdb) {
                (System::Kv(_), Some(ratio)) if ratio <= 1.0 => "yes",
                (System::Kv(_), Some(_)) => "no",
                _ => "",
            };
            table_rows.push(vec![
                name.to_string(),
                format!("{c:.0}"),
                format!("{w:.0}"),
                to_lmdb.map_or(String::new(), |ratio| format!("{ratio:.2}")),
                verdict.to_string(),
                r.map_or(String::new(), |r| human_bytes(r.file_bytes)),
                r.map_or(String::new(), |r| {
                    format!("{} / {}", r.block_reads, r.major_faults)
                }),
            ]);
        }
        out.push_str(&table(
            &[
                "system",
                "CPU ns/get",
                "wall ns/get",
                "CPU / LMDB's",
                "CPU ≤ LMDB's",
                "file",
                "reads / major faults while timed",
            ]
            .map(String::from),
            &table_rows,
        ));
        out.push('\n');
    }
    out.push_str("Settings:\n\n");
    for system in System::all(o) {
        if let Some(r) = rows.iter().find(|r| r.system == system.name()) {
            out.push_str(&format!("- {}: {}\n", r.system, r.settings));
        }
    }
    out
}

fn plot(dir: &Path, o: &Options, rows: &[Row]) -> anyhow::Result<()> {
    let cpu = medians(rows, |r| r.cpu_ns_per_get.0);
    let groups: Vec<String> = System::all(o)
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    let series: Vec<Series> = o
        .value_sizes
        .iter()
        .map(|&v| Series {
            name: format!("{v} B values"),
            points: groups
                .iter()
                .enumerate()
                .filter_map(|(g, name)| {
                    cpu.iter()
                        .find(|(s, size, _)| s == name && *size == v)
                        .map(|x| (g as f64, x.2))
                })
                .collect(),
        })
        .collect();
    bars(
        &dir.join("warm_cpu_per_get.png"),
        "Warm gets: CPU per get, every block in memory",
        &groups,
        ("CPU ns per get", Scale::Linear),
        &series,
    )
}
