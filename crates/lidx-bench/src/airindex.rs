//! `lidx experiment airindex`: paper 2's Figs. 2 and 3. AirIndex (lidx's tuned layout)
//! against the baselines the paper measured, on the same records, cold and warm, on this
//! machine's disk and under a storage profile it lacks (paper 2's NFS).
//!
//! **Records.** Each key set (lidx's synthetic ones, or SOSD key files) becomes records
//! `(k_i, i)`, as the paper turns SOSD's keys into key-value pairs: the key as 8 big-endian
//! bytes, the value the position as a decimal string.
//!
//! **Systems**, all reading through one bounded, counted cache of `--cache` bytes that
//! starts empty at each fresh start, and through the same storage:
//! - `airindex`: the tuned layout (paper 2, section 2), tuned for the profile it runs
//!   under (one file per profile);
//! - `btree`: a disk B+tree of 4 KiB nodes over the same pages (paper 2's PostgreSQL);
//! - `sstable`: the two-level SSTable index of paper 4, blocks of the page size;
//! - `learned`: paper 4's learned block layout (PGM model), blocks of the page size;
//! - `rmi-mmap`: the index family's RMI (saved as an `.idx` file), held in memory once
//!   loaded, over the records as a `.tbl` table, its 16-byte tuples read a 4 KiB page at a
//!   time, as `mmap` faults them in (paper 2's "RMI over mmap"; the pages go through the
//!   same cache, so its memory is bounded like the others'; the table's header and
//!   checksums are not read, as a flat array has none);
//! - `rocksdb`: RocksDB with the records in one SST file, a two-level index and a block
//!   cache of the same budget (with the `rocksdb` feature).
//!
//! **Storage.** Under the `measured` profile the files are read from the local disk with
//! `O_DIRECT` and every latency is a wall time. Under a named or saved profile, every read
//! is made to take the profile's latency + bytes / bandwidth (lidx's latency backend: the
//! read is done locally, then the thread sleeps out the rest). RocksDB's reads cannot be
//! intercepted from Rust: after each of its operations the thread sleeps the modelled cost
//! of the read calls and bytes the process made meanwhile (`/proc/self/io`). Opening a
//! store (reading its footer, index root or model, RocksDB's manifest and table footers) is
//! charged the same way, for every system.
//!
//! **Cold and warm** (paper 2, section 3). Cold latency: over `--cold-starts` fresh starts
//! (the OS's cached pages of the files dropped, the cache empty), the time to open the
//! store and look up one key. Fig. 3: from one more fresh start, the mean latency over the
//! first `n` lookups of a sequence of `--queries` (the first including the open), for `n`
//! = 1, 2, 4, … Warm latency: `--warm-queries` more lookups after that sequence. Under a
//! latency profile, sleeping through 70,000 lookups at 50 ms a read would take hours: the
//! cold starts, the first `--timed-queries` lookups of the sequence and the first
//! `--timed-queries` warm ones sleep; the others are charged their modelled read time
//! without sleeping (latency = wall time + modelled read time). The CSV says how many of
//! each mean were timed, and a `warm-timed` row has the slept warm lookups alone, to set
//! beside the mean of all.

use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use lidx::data::{Distribution, GenParams, KeyFile, generate, write_keys};
use lidx::files::{drop_cached_pages, open_read};
use lidx::index::file::KeysFingerprint;
use lidx::index::{AnyIndex, Index, Rmi, RmiParams};
use lidx::kv::input::RecordInput;
use lidx::kv::keys::u64_key;
use lidx::kv::write::{Record, TunedReport, sketch_tuned};
use lidx::kv::{BlockCache, BuildOptions, KeyEncoding, KvFile, Layout, ModelKind, Reader};
use lidx::storage::cache::next_file_id;
use lidx::storage::paged::{PagedFile, PagedReads};
use lidx::storage::profile::{AffineCost, LatencyModel, StorageProfile, resolve_profile};
use lidx::storage::{IoStats, ReadMode, TUPLE_SIZE, TableLayout};
use rand::{Rng as _, SeedableRng as _};
use serde::Serialize;

use crate::csv_rows::{Fixed, LIDX_VERSION, write_rows};
use crate::harness::{Results, data_dir};
use crate::machine::{ProcessReads, process_reads};
use crate::plot::{Scale, Series, bars, chart};
use crate::progress::Progress;
use crate::text::{human_bytes, times};

/// A key set the study runs on.
#[derive(Clone, Debug, PartialEq)]
pub enum KeySet {
    /// lidx's synthetic keys of a distribution, `--keys` of them.
    Synthetic(Distribution),
    /// The keys of an SOSD file (all of them, duplicates dropped).
    Sosd(PathBuf),
}

impl KeySet {
    /// The name rows and plots use.
    pub fn name(&self) -> String {
        match self {
            KeySet::Synthetic(d) => d.name().to_string(),
            KeySet::Sosd(p) => p
                .file_name()
                .map_or_else(|| p.display().to_string(), |f| f.to_string_lossy().into()),
        }
    }

    fn keys(&self, n: usize, seed: u64) -> anyhow::Result<Vec<u64>> {
        Ok(match self {
            KeySet::Synthetic(d) => generate(&GenParams::new(*d, n, seed))?,
            KeySet::Sosd(p) => {
                let mut keys = KeyFile::open(p)?.keys().to_vec();
                keys.sort_unstable();
                keys.dedup();
                keys
            }
        })
    }
}

/// The study's settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Keys per synthetic key set.
    pub keys: usize,
    /// The key sets.
    pub key_sets: Vec<KeySet>,
    /// Where reads come from: `measured` (this machine's disk) or a profile
    /// [`resolve_profile`] knows (`ssd`, `nfs`, `hdd`, a saved file).
    pub profiles: Vec<String>,
    /// The measured profile (from `lidx bench disk`) the tuner uses under `measured`;
    /// `None`: measured briefly at the start.
    pub measured_profile: Option<PathBuf>,
    /// Profiles whose tuner choice the summary shows beside those run.
    pub sketch_profiles: Vec<String>,
    /// Keys per synthetic set at which the tuner's choices are also sketched (laid out and
    /// tuned, not written nor measured): where the profiles part ways needs more pages
    /// than a quick run builds. 0: none.
    pub sketch_keys: usize,
    /// The cache budget in bytes, the same for every system.
    pub cache_bytes: u64,
    /// Bytes of a page (the tuned and B+tree layouts; the block size of the others).
    pub page_size: u64,
    /// Lookups in the cold→warm sequence (the paper: 70k).
    pub queries: usize,
    /// Lookups after the sequence whose mean is the warm latency.
    pub warm_queries: usize,
    /// Under a latency profile: lookups at the start of the sequence, and at the start of
    /// the warm ones, that sleep out their reads (the rest are counted, not slept).
    pub timed_queries: usize,
    /// Fresh starts the cold latency is the mean of.
    pub cold_starts: usize,
    /// Measure RocksDB too (where built with the `rocksdb` feature).
    pub rocksdb: bool,
    /// Read through the OS page cache instead of `O_DIRECT` (for file systems without
    /// it; each fresh start still drops the files' cached pages).
    pub buffered: bool,
    /// Where the records and files go; `None`: `OUT/data`.
    pub dir: Option<PathBuf>,
    /// Where the CSV, plots and summary go; `None`: `results/airindex`.
    pub out_dir: Option<PathBuf>,
    /// Keep the generated files.
    pub keep_data: bool,
    /// Seed of the keys and the lookups.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            keys: 2_000_000,
            key_sets: vec![
                KeySet::Synthetic(Distribution::Lognormal),
                KeySet::Synthetic(Distribution::Clustered),
            ],
            profiles: vec!["measured".into(), "nfs".into()],
            measured_profile: None,
            sketch_profiles: vec!["ssd".into(), "nfs".into(), "hdd".into()],
            sketch_keys: 20_000_000,
            cache_bytes: 8 << 20,
            page_size: 4096,
            queries: 70_000,
            warm_queries: 2000,
            timed_queries: 40,
            cold_starts: 3,
            rocksdb: cfg!(feature = "rocksdb"),
            buffered: false,
            dir: None,
            out_dir: None,
            keep_data: false,
            seed: 42,
        }
    }
}

/// The systems compared, as the CSV names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum System {
    AirIndex,
    Btree,
    Sstable,
    Learned,
    RmiMmap,
    #[cfg_attr(
        not(feature = "rocksdb"),
        expect(dead_code, reason = "built only with the rocksdb feature")
    )]
    RocksDb,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::AirIndex => "airindex",
            System::Btree => "btree",
            System::Sstable => "sstable",
            System::Learned => "learned",
            System::RmiMmap => "rmi-mmap",
            System::RocksDb => "rocksdb",
        }
    }
}

/// Where a run's reads come from.
#[derive(Clone, Debug)]
struct RunProfile {
    name: String,
    /// The cost the tuner is given (the measured profile's random reads, or the named one).
    cost: AffineCost,
    /// `None`: the local disk, timed as it is.
    model: Option<LatencyModel>,
    device: String,
}

/// A system as built on one key set.
struct Built {
    system: System,
    /// The profile an `airindex` file was tuned for (empty for the others).
    tuned_for: String,
    /// The `.kv` file, the RMI's `.tbl` records, or RocksDB's directory.
    path: PathBuf,
    /// The RMI's `.idx` file.
    model_path: Option<PathBuf>,
    /// What the index is, in a few words.
    structure: String,
    /// Bytes of the index (on disk for the layouts, in memory for the RMI and RocksDB).
    index_bytes: u64,
}

/// One CSV row: one system, key set and profile, one phase.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// The experiment.
    pub experiment: &'static str,
    /// lidx's version.
    pub lidx_version: &'static str,
    /// The machine.
    pub machine: String,
    /// `measured`, or the latency profile the reads ran under.
    pub profile: String,
    /// Its random read latency, µs (the measured profile's fit for `measured`).
    pub profile_latency_us: Fixed<1>,
    /// Its bandwidth, MB/s.
    pub profile_bandwidth_mb_s: Fixed<1>,
    /// The device, or what the profile assumes.
    pub device: String,
    /// The key set.
    pub key_set: String,
    /// Its keys (records).
    pub keys: u64,
    /// The system.
    pub system: String,
    /// The profile an `airindex` file was tuned for.
    pub tuned_for: String,
    /// The index's structure.
    pub structure: String,
    /// Bytes of the index.
    pub index_bytes: u64,
    /// The cache budget, bytes.
    pub cache_bytes: u64,
    /// Bytes of a page.
    pub page_size: u64,
    /// `cold`, `curve` (the first `queries` lookups of a fresh start), `warm`, or
    /// `warm-timed` (the warm lookups that slept, under a latency profile).
    pub phase: &'static str,
    /// Lookups the figures are over.
    pub queries: u64,
    /// Of those, lookups whose reads were real or slept out (the rest charged their
    /// modelled read time without sleeping).
    pub timed_queries: u64,
    /// Mean latency, µs (cold: opening the store and one lookup).
    pub mean_us: Fixed<1>,
    /// Median latency, µs.
    pub p50_us: Fixed<1>,
    /// 99th percentile latency, µs.
    pub p99_us: Fixed<1>,
    /// Mean time to open the store, µs (cold and curve).
    pub open_us: Fixed<1>,
    /// Read calls per lookup.
    pub reads_per_query: Fixed<3>,
    /// Bytes read per lookup.
    pub bytes_per_query: Fixed<0>,
    /// Modelled read time per lookup, µs (0 under `measured`).
    pub modelled_us_per_query: Fixed<1>,
}

/// Runs the study; returns the text report (the summary) to print.
pub fn run(options: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    check(options)?;
    let mut results = Results::create(
        options.out_dir.as_deref(),
        "airindex",
        ["airindex.csv", "summary.md"],
    )?;
    // The data goes into a scratch directory inside --dir (or OUT/data) unless kept.
    let data = data_dir(options.dir.as_deref(), &results.dir, options.keep_data)?;
    let data_dir = data.path().to_path_buf();
    let machine = crate::machine::describe();
    let started = Instant::now();
    let profiles = run_profiles(options, data.dir(), progress)?;
    let mut rows: Vec<Row> = Vec::new();
    let mut sketches: Vec<Sketch> = Vec::new();
    let result = (|| -> anyhow::Result<()> {
        for set in &options.key_sets {
            progress.spin(&format!("keys {}", set.name()));
            let keys = set.keys(options.keys, options.seed)?;
            progress.finish();
            if keys.is_empty() {
                bail!("key set {} has no key", set.name());
            }
            let keys_path = data_dir.join(format!("{}.keys", set.name()));
            write_keys(&keys_path, &keys)?;
            let input = RecordInput::sosd(&keys_path, KeyEncoding::U64Be)?;
            let records = input.records();
            sketches.push(Sketch {
                set: set.name(),
                keys: keys.len() as u64,
                choices: sketch(options, &profiles, &records)?,
            });
            let built = build_all(
                options, &profiles, set, &keys, &records, &data_dir, progress,
            )?;
            drop(records);
            drop(input);
            let lookups = Lookups::new(&keys, options);
            let total = profiles.len() * (built.len() - profiles.len() + 1);
            progress.start(
                total as u64,
                &format!("lookups on {}", set.name()),
                "systems",
            );
            for profile in &profiles {
                for b in &built {
                    if b.system == System::AirIndex && b.tuned_for != profile.name {
                        continue;
                    }
                    progress.message(&format!("{} under {}", b.system.name(), profile.name));
                    let base = Row {
                        experiment: "airindex",
                        lidx_version: LIDX_VERSION,
                        machine: machine.clone(),
                        profile: profile.name.clone(),
                        profile_latency_us: Fixed(profile.cost.latency_us),
                        profile_bandwidth_mb_s: Fixed(profile.cost.bandwidth_mb_s),
                        device: profile.device.clone(),
                        key_set: set.name(),
                        keys: keys.len() as u64,
                        system: b.system.name().into(),
                        tuned_for: b.tuned_for.clone(),
                        structure: b.structure.clone(),
                        index_bytes: b.index_bytes,
                        cache_bytes: options.cache_bytes,
                        page_size: options.page_size,
                        ..Row::default()
                    };
                    rows.extend(measure(options, profile, b, &lookups, &base)?);
                    progress.step();
                }
            }
            progress.finish();
            if let KeySet::Synthetic(_) = set
                && options.sketch_keys > keys.len()
            {
                progress.spin(&format!(
                    "sketching the tuner on {} keys of {}",
                    options.sketch_keys,
                    set.name()
                ));
                let big = set.keys(options.sketch_keys, options.seed)?;
                let path = data_dir.join(format!("{}-sketch.keys", set.name()));
                write_keys(&path, &big)?;
                let input = RecordInput::sosd(&path, KeyEncoding::U64Be)?;
                sketches.push(Sketch {
                    set: set.name(),
                    keys: big.len() as u64,
                    choices: sketch(options, &profiles, &input.records())?,
                });
                drop(input);
                let _ = std::fs::remove_file(&path);
                progress.finish();
            }
        }
        Ok(())
    })();
    drop(data);
    result?;
    write_rows(results.file(0), &rows)?;
    plots(&results.dir, &rows)?;
    let summary = summary(
        options,
        &machine,
        &profiles,
        &rows,
        &sketches,
        started.elapsed(),
    );
    results.file(1).write_all(summary.as_bytes())?;
    let (dir, [csv, summary_path]) = results.publish()?;
    Ok(format!(
        "{summary}\nWrote {}, {} and the plots in {}.\n",
        csv.display(),
        summary_path.display(),
        dir.display()
    ))
}

fn check(o: &Options) -> anyhow::Result<()> {
    if o.key_sets.is_empty() || o.profiles.is_empty() {
        bail!("the study needs at least one key set and one profile");
    }
    if o.keys == 0 || o.queries == 0 || o.cold_starts == 0 || o.warm_queries == 0 {
        bail!("--keys, --queries, --cold-starts and --warm-queries must be at least 1");
    }
    if o.timed_queries == 0 {
        bail!("--timed-queries must be at least 1");
    }
    if o.page_size < 512 || !o.page_size.is_power_of_two() {
        bail!(
            "invalid page size {}: a power of two of at least 512 bytes",
            o.page_size
        );
    }
    if o.rocksdb && !cfg!(feature = "rocksdb") {
        bail!("this lidx was built without RocksDB (the rocksdb feature)");
    }
    Ok(())
}

/// The profiles to run under, `measured` resolved to this disk's profile.
fn run_profiles(
    o: &Options,
    data_dir: &Path,
    progress: &dyn Progress,
) -> anyhow::Result<Vec<RunProfile>> {
    let mut out = Vec::new();
    for name in &o.profiles {
        if out.iter().any(|p: &RunProfile| &p.name == name) {
            bail!("profile {name} is given twice");
        }
        out.push(if name == "measured" {
            let p: StorageProfile =
                crate::harness::storage_profile(o.measured_profile.as_deref(), data_dir, progress)?;
            RunProfile {
                name: name.clone(),
                cost: p.random,
                model: None,
                device: format!(
                    "{} ({})",
                    p.device,
                    if o.buffered { "buffered" } else { "O_DIRECT" }
                ),
            }
        } else {
            let p = resolve_profile(name)?;
            RunProfile {
                name: name.clone(),
                cost: p.random,
                model: Some(LatencyModel::timed(p.random)),
                device: p.device,
            }
        });
    }
    Ok(out)
}

/// The tuner's choices on one key set at one size, per profile.
struct Sketch {
    set: String,
    keys: u64,
    choices: Vec<(String, TunedReport)>,
}

/// The tuner's choice for `records` under every run profile and every sketch profile.
fn sketch(
    o: &Options,
    profiles: &[RunProfile],
    records: &[Record<'_>],
) -> anyhow::Result<Vec<(String, TunedReport)>> {
    let mut costs: Vec<(String, AffineCost)> =
        profiles.iter().map(|p| (p.name.clone(), p.cost)).collect();
    for name in &o.sketch_profiles {
        if !costs.iter().any(|(n, _)| n == name) {
            costs.push((name.clone(), resolve_profile(name)?.random));
        }
    }
    costs
        .into_iter()
        .map(|(name, cost)| {
            let options = BuildOptions {
                layout: Layout::Tuned,
                block_size: o.page_size,
                profile: Some(cost),
                ..BuildOptions::default()
            };
            Ok((name, sketch_tuned(records, &options)?))
        })
        .collect()
}

/// Every system on one key set: an `airindex` file per run profile, then the baselines.
fn build_all(
    o: &Options,
    profiles: &[RunProfile],
    set: &KeySet,
    keys: &[u64],
    records: &[Record<'_>],
    dir: &Path,
    progress: &dyn Progress,
) -> anyhow::Result<Vec<Built>> {
    let name = set.name();
    let mut out = Vec::new();
    let kv = |layout: Layout,
              tag: &str,
              profile: Option<AffineCost>|
     -> anyhow::Result<(PathBuf, KvFile, lidx::kv::BuildReport)> {
        progress.spin(&format!("building {tag} on {name}"));
        let path = dir.join(format!("{name}-{tag}.kv"));
        let options = BuildOptions {
            layout,
            block_size: o.page_size,
            model: ModelKind::Pgm,
            profile,
            ..BuildOptions::default()
        };
        let report = lidx::kv::build(records, &options, &path)?;
        progress.finish();
        let file = KvFile::open(&path, ReadMode::Buffered)?;
        Ok((path, file, report))
    };
    for p in profiles {
        let (path, _, report) = kv(Layout::Tuned, &format!("airindex-{}", p.name), Some(p.cost))?;
        let chosen = report
            .tuned
            .as_ref()
            .and_then(|t| t.candidates.first())
            .context("a tuned file without a choice")?;
        out.push(Built {
            system: System::AirIndex,
            tuned_for: p.name.clone(),
            path,
            model_path: None,
            structure: structure_of(chosen),
            index_bytes: chosen.bytes.iter().sum(),
        });
    }
    let (path, file, _) = kv(Layout::Btree, "btree", None)?;
    let levels = file.btree_levels().unwrap_or(&[]).to_vec();
    out.push(Built {
        system: System::Btree,
        tuned_for: String::new(),
        path,
        model_path: None,
        structure: format!("{} levels of nodes {levels:?}", levels.len()),
        index_bytes: levels.iter().sum::<u64>() * file.footer().block_size,
    });
    for (system, layout) in [
        (System::Sstable, Layout::Sstable),
        (System::Learned, Layout::Learned),
    ] {
        let (path, file, report) = kv(layout, system.name(), None)?;
        let structure = match layout {
            Layout::Sstable => format!("{} level-1 index blocks", report.index_blocks),
            _ => format!("pgm of {} pieces", report.model_pieces),
        };
        out.push(Built {
            system,
            tuned_for: String::new(),
            path,
            model_path: None,
            structure,
            index_bytes: file.index_memory_bytes() + file.index_disk_bytes(),
        });
    }
    progress.spin(&format!("building rmi-mmap on {name}"));
    out.push(build_rmi(keys, dir, &name)?);
    progress.finish();
    if o.rocksdb {
        progress.spin(&format!("loading RocksDB with {name}"));
        out.push(rocks::build(records, dir, &name, o)?);
        progress.finish();
    }
    Ok(out)
}

/// "L = 2: Δ 1.0 KiB / 8.6 KiB, Δ 44 B / 88 B": a tuned structure's layers, each its
/// error and bytes, layer 1 first.
pub fn structure_of(c: &lidx::kv::layers::Candidate) -> String {
    let layers: Vec<String> = c
        .deltas
        .iter()
        .zip(&c.bytes)
        .map(|(d, b)| format!("Δ {} / {}", human_bytes(*d), human_bytes(*b)))
        .collect();
    format!("L = {}: {}", c.deltas.len(), layers.join(", "))
}

/// Bytes of an RMI-over-mmap record: a `.tbl` tuple, the key and its position,
/// little-endian.
const FLAT_RECORD: u64 = TUPLE_SIZE as u64;

/// The records as a `.tbl` table of (key, position), and the RMI over its keys saved beside
/// it as an `.idx` file: the project's own formats, read as paper 2's RMI over `mmap` reads
/// its flat array (the tuples a page at a time, without the table's header or checksums).
fn build_rmi(keys: &[u64], dir: &Path, name: &str) -> anyhow::Result<Built> {
    let path = dir.join(format!("{name}-rmi.tbl"));
    crate::harness::write_table(keys, &path)?;
    let params = RmiParams::default();
    let rmi = Rmi::build(keys, &params)?;
    let mut bytes = Vec::new();
    rmi.encode(&mut bytes);
    let structure = format!("rmi {params}, windows up to {}", rmi.max_width());
    let model_path = dir.join(format!("{name}-rmi.idx"));
    lidx::index::file::save(&model_path, &AnyIndex::Rmi(rmi), &KeysFingerprint::of(keys))?;
    Ok(Built {
        system: System::RmiMmap,
        tuned_for: String::new(),
        path,
        model_path: Some(model_path),
        structure,
        index_bytes: bytes.len() as u64,
    })
}

/// The lookups every system answers: keys drawn uniformly from the records, and the
/// position each must return.
struct Lookups {
    /// One key for each cold start.
    cold: Vec<(u64, u64)>,
    /// The cold→warm sequence, then the warm lookups.
    sequence: Vec<(u64, u64)>,
}

impl Lookups {
    fn new(keys: &[u64], o: &Options) -> Lookups {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(o.seed ^ 0xA1_2024);
        let mut draw = |n: usize| -> Vec<(u64, u64)> {
            (0..n)
                .map(|_| {
                    let i = rng.random_range(0..keys.len());
                    (keys[i], i as u64)
                })
                .collect()
        };
        Lookups {
            cold: draw(o.cold_starts),
            sequence: draw(o.queries + o.warm_queries),
        }
    }
}

/// A store opened for lookups.
trait Probe {
    /// The position stored under `key`, if any.
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>>;
    /// Makes its reads take as long as `model` says (none: the local disk's time).
    fn set_latency(&mut self, model: Option<LatencyModel>);
    /// Its reads so far.
    fn io(&mut self) -> IoStats;
}

/// A store's files, open; the probe borrows them.
enum Opened {
    Kv(Box<KvFile>),
    Rmi(Box<(Rmi, File, PathBuf, u64)>),
    #[cfg(feature = "rocksdb")]
    Rocks(Box<lidx_lsm::RocksKv>),
}

struct KvProbe<'a> {
    reader: Reader<'a>,
    value: Vec<u8>,
}

impl Probe for KvProbe<'_> {
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>> {
        if !self.reader.get_into(&u64_key(key), &mut self.value)? {
            return Ok(None);
        }
        Ok(std::str::from_utf8(&self.value)
            .ok()
            .and_then(|s| s.parse().ok()))
    }

    fn set_latency(&mut self, model: Option<LatencyModel>) {
        self.reader.set_latency(model);
    }

    fn io(&mut self) -> IoStats {
        self.reader.stats().io
    }
}

struct RmiProbe<'a> {
    rmi: &'a Rmi,
    file: PagedFile<'a>,
    cache: &'a BlockCache,
    io: PagedReads,
}

impl Probe for RmiProbe<'_> {
    /// The RMI's window, and the record at its end (which may hold the key: the window
    /// bounds its lower bound), read through the cache's pages as `mmap` faults them in.
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>> {
        let w = self.rmi.search(key);
        let hi = (w.hi + 1).min(self.rmi.len());
        if w.lo >= hi {
            return Ok(None);
        }
        let bytes = self.io.read_cached(
            self.file,
            self.cache,
            // After the table's header block: its pages hold the records a headerless
            // flat array's would.
            TableLayout::data_block_offset(0) + w.lo * FLAT_RECORD,
            (hi - w.lo) * FLAT_RECORD,
        )?;
        let word = |r: &[u8], i: usize| {
            u64::from_le_bytes(r[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]))
        };
        let records: Vec<&[u8]> = bytes.chunks_exact(FLAT_RECORD as usize).collect();
        let i = records.partition_point(|r| word(r, 0) < key);
        Ok(records
            .get(i)
            .filter(|r| word(r, 0) == key)
            .map(|r| word(r, 1)))
    }

    fn set_latency(&mut self, model: Option<LatencyModel>) {
        self.io.set_latency(model);
    }

    fn io(&mut self) -> IoStats {
        self.io.counts()
    }
}

/// The read calls and bytes the process made between `before` and `after`, less what
/// reading `/proc/self/io` itself costs.
fn process_delta(before: ProcessReads, after: ProcessReads, overhead: ProcessReads) -> (u64, u64) {
    (
        (after.calls - before.calls).saturating_sub(overhead.calls),
        (after.chars - before.chars).saturating_sub(overhead.chars),
    )
}

/// The modelled time of `calls` reads of `bytes` in all, one after another.
fn modelled(model: &LatencyModel, calls: u64, bytes: u64) -> Duration {
    if calls == 0 {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(
        (calls as f64 * model.cost.latency_us + bytes as f64 / model.cost.bandwidth_mb_s).max(0.0)
            / 1e6,
    )
}

/// What reading `/proc/self/io` adds to its own counters.
fn proc_overhead() -> ProcessReads {
    let a = process_reads();
    let b = process_reads();
    ProcessReads {
        calls: b.calls - a.calls,
        chars: b.chars - a.chars,
        storage_bytes: 0,
    }
}

/// Opens `b` cold (its files' cached pages dropped): the store and the time it took, the
/// reads it made charged under `model` (slept when the model sleeps).
fn open_cold(
    o: &Options,
    b: &Built,
    model: Option<LatencyModel>,
) -> anyhow::Result<(Opened, Duration)> {
    let mut files = vec![b.path.clone()];
    files.extend(b.model_path.clone());
    if b.path.is_dir() {
        files = std::fs::read_dir(&b.path)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
    }
    for f in &files {
        drop_cached_pages(f)?;
    }
    let overhead = proc_overhead();
    let before = process_reads();
    let started = Instant::now();
    let opened = match b.system {
        System::RmiMmap => {
            let model_path = b.model_path.as_ref().context("an RMI without its model")?;
            let bytes = std::fs::read(model_path)
                .with_context(|| format!("{}: cannot read", model_path.display()))?;
            let (index, _) = lidx::index::file::decode(&bytes)
                .map_err(|e| lidx::Error::format(model_path, e))?;
            let AnyIndex::Rmi(rmi) = index else {
                bail!("{}: not an RMI", model_path.display());
            };
            let file = open_read(&b.path, !o.buffered)?;
            Opened::Rmi(Box::new((rmi, file, b.path.clone(), next_file_id())))
        }
        #[cfg(feature = "rocksdb")]
        System::RocksDb => Opened::Rocks(Box::new(rocks::open(&b.path, o)?)),
        #[cfg(not(feature = "rocksdb"))]
        System::RocksDb => bail!("this lidx was built without RocksDB"),
        _ => Opened::Kv(Box::new(KvFile::open(&b.path, read_mode(o))?)),
    };
    let wall = started.elapsed();
    let (calls, bytes) = process_delta(before, process_reads(), overhead);
    let took = match model {
        Some(m) => {
            let charge = modelled(&m, calls, bytes);
            if m.sleep {
                std::thread::sleep(charge);
            }
            wall + charge
        }
        None => wall,
    };
    Ok((opened, took))
}

fn read_mode(o: &Options) -> ReadMode {
    if o.buffered {
        ReadMode::Buffered
    } else {
        ReadMode::Direct
    }
}

/// The probe of an opened store reading through `cache`.
fn probe<'a>(
    o: &Options,
    opened: &'a Opened,
    cache: &'a BlockCache,
) -> anyhow::Result<Box<dyn Probe + 'a>> {
    Ok(match opened {
        Opened::Kv(file) => Box::new(KvProbe {
            reader: Reader::new(file, cache),
            value: Vec::new(),
        }),
        Opened::Rmi(b) => {
            let (rmi, file, path, id) = &**b;
            Box::new(RmiProbe {
                rmi,
                file: PagedFile {
                    file,
                    path,
                    id: *id,
                    mode: read_mode(o),
                },
                cache,
                io: PagedReads::default(),
            })
        }
        #[cfg(feature = "rocksdb")]
        Opened::Rocks(kv) => Box::new(rocks::RocksProbe::new(kv)),
    })
}

/// Latencies (µs) of `lookups` through `p`, each checked against its position. Under a
/// model that does not sleep, each is its wall time plus its modelled read time.
fn look_up(
    p: &mut dyn Probe,
    lookups: &[(u64, u64)],
    model: Option<LatencyModel>,
    what: &str,
    latencies: &mut Vec<f64>,
) -> anyhow::Result<()> {
    let counted = model.is_some_and(|m| !m.sleep);
    for &(key, position) in lookups {
        let m0 = if counted { p.io().modelled_ns } else { 0 };
        let started = Instant::now();
        let got = p.get(key)?;
        let mut us = started.elapsed().as_secs_f64() * 1e6;
        if counted {
            us += (p.io().modelled_ns - m0) as f64 / 1e3;
        }
        if got != Some(position) {
            bail!("{what}: key {key} gave {got:?}, not position {position}");
        }
        latencies.push(us);
    }
    Ok(())
}

/// Cold starts, the cold→warm sequence and the warm lookups of `b` under `profile`.
fn measure(
    o: &Options,
    profile: &RunProfile,
    b: &Built,
    lookups: &Lookups,
    base: &Row,
) -> anyhow::Result<Vec<Row>> {
    let what = format!(
        "{} on {} under {}",
        b.system.name(),
        base.key_set,
        profile.name
    );
    let timed = profile.model;
    let counted = profile.model.map(|m| LatencyModel::counted(m.cost));
    let mut rows = Vec::new();
    let per_query = |io: IoStats, n: usize| {
        let n = n.max(1) as f64;
        (
            Fixed(io.reads as f64 / n),
            Fixed(io.bytes as f64 / n),
            Fixed(io.modelled_ns as f64 / 1e3 / n),
        )
    };
    // Cold: open and one lookup, from fresh starts.
    let mut cold = Vec::new();
    let mut opens = Vec::new();
    let mut cold_io = IoStats::default();
    for &lookup in &lookups.cold {
        let cache = BlockCache::new(o.cache_bytes);
        let (opened, open) = open_cold(o, b, timed)?;
        let mut p = probe(o, &opened, &cache)?;
        p.set_latency(timed);
        let mut one = Vec::new();
        look_up(&mut *p, &[lookup], timed, &what, &mut one)?;
        cold_io += p.io();
        opens.push(open.as_secs_f64() * 1e6);
        cold.push(open.as_secs_f64() * 1e6 + one[0]);
    }
    let (r, by, m) = per_query(cold_io, cold.len());
    rows.push(Row {
        phase: "cold",
        queries: cold.len() as u64,
        timed_queries: cold.len() as u64,
        mean_us: Fixed(mean(&cold)),
        p50_us: Fixed(percentile(&cold, 0.5)),
        p99_us: Fixed(percentile(&cold, 0.99)),
        open_us: Fixed(mean(&opens)),
        reads_per_query: r,
        bytes_per_query: by,
        modelled_us_per_query: m,
        ..base.clone()
    });
    // The cold→warm sequence from one more fresh start, then the warm lookups.
    let cache = BlockCache::new(o.cache_bytes);
    let (opened, open) = open_cold(o, b, timed)?;
    let mut p = probe(o, &opened, &cache)?;
    let (sequence, warm) = lookups.sequence.split_at(o.queries);
    let timed_n = if timed.is_some() {
        o.timed_queries.min(sequence.len())
    } else {
        sequence.len()
    };
    let mut latencies = Vec::with_capacity(sequence.len());
    let mut ios = Vec::with_capacity(sequence.len());
    p.set_latency(timed);
    for (i, lookup) in sequence.iter().enumerate() {
        let model = if i < timed_n { timed } else { counted };
        if i == timed_n {
            p.set_latency(model);
        }
        look_up(
            &mut *p,
            std::slice::from_ref(lookup),
            model,
            &what,
            &mut latencies,
        )?;
        ios.push(p.io());
    }
    if let Some(first) = latencies.first_mut() {
        *first += open.as_secs_f64() * 1e6;
    }
    let mut n = 1;
    loop {
        let n_here = n.min(latencies.len());
        let (r, by, m) = per_query(ios[n_here - 1], n_here);
        let firsts = &latencies[..n_here];
        rows.push(Row {
            phase: "curve",
            queries: n_here as u64,
            timed_queries: n_here.min(timed_n) as u64,
            mean_us: Fixed(mean(firsts)),
            p50_us: Fixed(percentile(firsts, 0.5)),
            p99_us: Fixed(percentile(firsts, 0.99)),
            open_us: Fixed(open.as_secs_f64() * 1e6),
            reads_per_query: r,
            bytes_per_query: by,
            modelled_us_per_query: m,
            ..base.clone()
        });
        if n_here == latencies.len() {
            break;
        }
        n *= 2;
    }
    // Warm: under a latency profile, the first lookups sleep and the rest are counted,
    // as in the sequence; a second row has the slept ones alone.
    let timed_warm = if timed.is_some() {
        o.timed_queries.min(warm.len())
    } else {
        warm.len()
    };
    let mut warm_latencies = Vec::with_capacity(warm.len());
    let mut ios = vec![p.io()];
    for (i, lookup) in warm.iter().enumerate() {
        let model = if i < timed_warm { timed } else { counted };
        if i == 0 || i == timed_warm {
            p.set_latency(model);
        }
        look_up(
            &mut *p,
            std::slice::from_ref(lookup),
            model,
            &what,
            &mut warm_latencies,
        )?;
        ios.push(p.io());
    }
    let mut phases = vec![("warm", warm.len())];
    if timed_warm < warm.len() {
        phases.push(("warm-timed", timed_warm));
    }
    for (phase, n) in phases {
        let (before, after) = (ios[0], ios[n]);
        let io = after.since(&before);
        let (r, by, m) = per_query(io, n);
        let latencies = &warm_latencies[..n];
        rows.push(Row {
            phase,
            queries: n as u64,
            timed_queries: n.min(timed_warm) as u64,
            mean_us: Fixed(mean(latencies)),
            p50_us: Fixed(percentile(latencies, 0.5)),
            p99_us: Fixed(percentile(latencies, 0.99)),
            reads_per_query: r,
            bytes_per_query: by,
            modelled_us_per_query: m,
            ..base.clone()
        });
    }
    Ok(rows)
}

/// How NFS's choice (layers, layer 1's error) compares with SSD's, in words.
fn verdict(ssd: (usize, u64), nfs: (usize, u64)) -> String {
    use std::cmp::Ordering::{Equal, Greater, Less};
    match (nfs.0.cmp(&ssd.0), nfs.1.cmp(&ssd.1)) {
        (Less, _) => format!(
            "NFS picks {} layer(s) to SSD's {}, its layer 1 within {} (SSD's {}): shallower and wider",
            nfs.0,
            ssd.0,
            human_bytes(nfs.1),
            human_bytes(ssd.1)
        ),
        (Equal, Greater) => format!(
            "both pick {} layer(s); NFS's layer 1 is wider ({} to {})",
            nfs.0,
            human_bytes(nfs.1),
            human_bytes(ssd.1)
        ),
        (Equal, _) => format!(
            "both pick {} layer(s) with layer 1 within {}: on these keys one small layer wins under both",
            nfs.0,
            human_bytes(nfs.1)
        ),
        (Greater, _) => "NFS picks a deeper structure than SSD".to_string(),
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// The `q` quantile of `v` (nearest rank).
fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let i = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
    s[i]
}

/// The rows of one profile, key set, system and phase.
fn find<'r>(rows: &'r [Row], profile: &str, set: &str, system: &str, phase: &str) -> Vec<&'r Row> {
    rows.iter()
        .filter(|r| {
            r.profile == profile && r.key_set == set && r.system == system && r.phase == phase
        })
        .collect()
}

fn unique<'r>(rows: &'r [Row], f: impl Fn(&'r Row) -> &'r str) -> Vec<&'r str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rows {
        let v = f(r);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// Fig. 3 per profile and key set; Fig. 2 (cold and warm bars) per profile.
fn plots(dir: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let profiles = unique(rows, |r| &r.profile);
    let sets = unique(rows, |r| &r.key_set);
    let systems = unique(rows, |r| &r.system);
    for &profile in &profiles {
        for &set in &sets {
            let series: Vec<Series> = systems
                .iter()
                .map(|&s| Series {
                    name: s.to_string(),
                    points: find(rows, profile, set, s, "curve")
                        .iter()
                        .map(|r| (r.queries as f64, r.mean_us.0 / 1e3))
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            if series.is_empty() {
                continue;
            }
            chart(
                &dir.join(format!("fig3_{profile}_{set}.png")),
                &format!("Mean latency over the first n lookups ({set}, {profile})"),
                ("lookups n", Scale::Log),
                ("mean latency, ms", Scale::Log),
                &series,
                true,
            )?;
        }
        let mut groups = Vec::new();
        for &set in &sets {
            for phase in ["cold", "warm"] {
                groups.push(format!("{set} {phase}"));
            }
        }
        let series: Vec<Series> = systems
            .iter()
            .map(|&s| Series {
                name: s.to_string(),
                points: sets
                    .iter()
                    .enumerate()
                    .flat_map(|(i, &set)| {
                        ["cold", "warm"]
                            .into_iter()
                            .enumerate()
                            .filter_map(move |(j, phase)| {
                                find(rows, profile, set, s, phase)
                                    .first()
                                    .map(|r| ((2 * i + j) as f64, r.mean_us.0 / 1e3))
                            })
                    })
                    .collect(),
            })
            .collect();
        bars(
            &dir.join(format!("fig2_{profile}.png")),
            &format!("Cold and warm lookup latency ({profile})"),
            &groups,
            ("mean latency, ms", Scale::Log),
            &series,
        )?;
    }
    Ok(())
}

/// The summary: the tuner's choices, Fig. 2 as a table with AirIndex's speedups beside the
/// paper's, and Fig. 3's plateau.
fn summary(
    o: &Options,
    machine: &str,
    profiles: &[RunProfile],
    rows: &[Row],
    sketches: &[Sketch],
    took: Duration,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# AirIndex (paper 2): tuned layers against B+tree, SSTable, learned blocks, RMI over mmap{}\n",
        if o.rocksdb { " and RocksDB" } else { "" }
    );
    let _ = writeln!(
        s,
        "{} keys per synthetic set, records (key, position), pages of {}, cache {}, {} lookups then {} warm; {machine}; took {:.0} s.\n",
        o.keys,
        human_bytes(o.page_size),
        human_bytes(o.cache_bytes),
        o.queries,
        o.warm_queries,
        took.as_secs_f64()
    );
    for p in profiles {
        let _ = writeln!(
            s,
            "- {}: {:.0} us + bytes / {:.0} MB/s per read; {}",
            p.name,
            p.cost.latency_us,
            p.cost.bandwidth_mb_s,
            match p.model {
                None => format!("reads from {}, timed as they are", p.device),
                Some(_) => format!(
                    "{}; reads slept out for the cold starts and the first {} lookups of the sequence and of the warm ones, counted (wall + modelled) for the rest",
                    p.device, o.timed_queries
                ),
            }
        );
    }
    let _ = writeln!(s, "\n## The tuner's choice per profile\n");
    let _ = writeln!(
        s,
        "Paper 2: slow round trips call for a shallow, wide structure, a fast device for a deeper, finer one.\n"
    );
    let _ = writeln!(
        s,
        "| key set | keys | profile | chosen | predicted cold lookup | best with other L |"
    );
    let _ = writeln!(s, "|---|---:|---|---|---:|---|");
    let mut verdicts = Vec::new();
    for sk in sketches {
        for (name, t) in &sk.choices {
            let Some(chosen) = t.candidates.first() else {
                continue;
            };
            let others: Vec<String> = t.candidates[1..]
                .iter()
                .map(|c| format!("L = {}: {:.3} ms", c.deltas.len(), c.cost_us / 1e3))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {name} | {} | {:.3} ms | {} |",
                sk.set,
                sk.keys,
                structure_of(chosen),
                chosen.cost_us / 1e3,
                others.join(", ")
            );
        }
        let pick = |name: &str| {
            sk.choices
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, t)| t.candidates.first())
                .map(|c| (c.deltas.len(), c.deltas.first().copied().unwrap_or(0)))
        };
        if let (Some(ssd), Some(nfs)) = (pick("ssd"), pick("nfs")) {
            verdicts.push(format!(
                "{} at {} keys: {}",
                sk.set,
                sk.keys,
                verdict(ssd, nfs)
            ));
        }
    }
    if !verdicts.is_empty() {
        let _ = writeln!(s);
        for v in verdicts {
            let _ = writeln!(s, "- {v}");
        }
    }
    let _ = writeln!(
        s,
        "\n## Fig. 2: cold and warm latency (ms), and AirIndex's speedup\n"
    );
    let _ = writeln!(
        s,
        "Paper 2 (200M-key SOSD sets on Azure NFS, against PostgreSQL, RocksDB and RMI): AirIndex 1.21–23.09× faster cold, 1.37–11.50× warm.\n"
    );
    let sets = unique(rows, |r| &r.key_set);
    let systems = unique(rows, |r| &r.system);
    for p in profiles {
        let _ = writeln!(s, "### {}\n", p.name);
        let _ = writeln!(
            s,
            "| key set | system | cold | warm | airindex faster cold | warm |"
        );
        let _ = writeln!(s, "|---|---|---:|---:|---:|---:|");
        // Speedup ranges against the paper's baselines (B+tree for PostgreSQL, RMI over
        // mmap, RocksDB), then against lidx's two layouts of paper 4.
        let mut ranges = [[(f64::INFINITY, 0f64); 2]; 2];
        for &set in &sets {
            let get = |system: &str, phase: &str| {
                find(rows, &p.name, set, system, phase)
                    .first()
                    .map_or(f64::NAN, |r| r.mean_us.0)
            };
            let (air_cold, air_warm) = (get("airindex", "cold"), get("airindex", "warm"));
            for &system in &systems {
                let (c, w) = (get(system, "cold"), get(system, "warm"));
                let (sc, sw) = (c / air_cold, w / air_warm);
                if system != "airindex" {
                    let group = usize::from(matches!(system, "sstable" | "learned"));
                    for (range, x) in ranges[group].iter_mut().zip([sc, sw]) {
                        *range = (range.0.min(x), range.1.max(x));
                    }
                }
                let _ = writeln!(
                    s,
                    "| {set} | {system} | {:.3} | {:.3} | {} | {} |",
                    c / 1e3,
                    w / 1e3,
                    times(sc),
                    times(sw)
                );
            }
        }
        let _ = writeln!(s);
        for (group, [cold, warm]) in [
            "the paper's baselines (btree, rmi-mmap, rocksdb)",
            "lidx's layouts of paper 4 (sstable, learned)",
        ]
        .into_iter()
        .zip(ranges)
        {
            if cold.1 > 0.0 {
                let _ = writeln!(
                    s,
                    "- AirIndex against {group} under {}: {}–{} cold, {}–{} warm (below 1×: the baseline was faster).",
                    p.name,
                    times(cold.0),
                    times(cold.1),
                    times(warm.0),
                    times(warm.1)
                );
            }
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "## Fig. 3: mean latency over the first n lookups (ms)\n");
    let marks = [1u64, 16, 256, 4096, o.queries as u64];
    let _ = writeln!(
        s,
        "| profile | key set | system | {} |",
        marks.map(|n| format!("n = {n}")).join(" | ")
    );
    let _ = writeln!(s, "|---|---|---|{}", "---:|".repeat(marks.len()));
    for p in profiles {
        for &set in &sets {
            for &system in &systems {
                let curve = find(rows, &p.name, set, system, "curve");
                let cells: Vec<String> = marks
                    .iter()
                    .map(|&n| {
                        curve
                            .iter()
                            .rfind(|r| r.queries <= n)
                            .map_or("".into(), |r| format!("{:.3}", r.mean_us.0 / 1e3))
                    })
                    .collect();
                let _ = writeln!(
                    s,
                    "| {} | {set} | {system} | {} |",
                    p.name,
                    cells.join(" | ")
                );
            }
        }
    }
    s
}

#[cfg(feature = "rocksdb")]
mod rocks {
    use std::path::Path;

    use lidx::kv::Compression;
    use lidx::kv::write::Record;
    use lidx::storage::profile::LatencyModel;
    use lidx_lsm::{RocksKv, RocksKvOptions};

    use super::{Built, IoStats, Options, Probe, System, modelled, proc_overhead, process_delta};
    use crate::machine::{ProcessReads, process_reads};

    fn options(o: &Options) -> RocksKvOptions {
        RocksKvOptions {
            block_size: o.page_size as usize,
            compression: Compression::None,
            cache_bytes: o.cache_bytes,
            direct: !o.buffered,
        }
    }

    pub(super) fn build(
        records: &[Record<'_>],
        dir: &Path,
        name: &str,
        o: &Options,
    ) -> anyhow::Result<Built> {
        let path = dir.join(format!("{name}-rocksdb"));
        // Only with --keep-data can it exist (else `dir` is a new scratch directory): it
        // is not lidx's to remove, whoever made it.
        if path.symlink_metadata().is_ok() {
            anyhow::bail!(
                "{}: exists; lidx removes nothing it did not make in this run: remove it or choose another --dir",
                path.display()
            );
        }
        RocksKv::build(records, &path, &options(o))?;
        let kv = RocksKv::open(&path, &options(o))?;
        let figures = kv.table_figures();
        Ok(Built {
            system: System::RocksDb,
            tuned_for: String::new(),
            path,
            model_path: None,
            structure: format!(
                "two-level index of {} over {} data blocks",
                crate::text::human_bytes(figures.index_bytes),
                figures.data_blocks
            ),
            index_bytes: figures.index_bytes,
        })
    }

    /// Opens the database with a fresh block cache of the study's budget.
    pub(super) fn open(path: &Path, o: &Options) -> anyhow::Result<RocksKv> {
        Ok(RocksKv::open(path, &options(o))?)
    }

    /// RocksDB's gets; under a latency model, each followed by a sleep of the modelled
    /// cost of the read calls and bytes the process made during it.
    pub(super) struct RocksProbe<'a> {
        kv: &'a RocksKv,
        latency: Option<LatencyModel>,
        io: IoStats,
        value: Vec<u8>,
        overhead: ProcessReads,
        opened: ProcessReads,
    }

    impl<'a> RocksProbe<'a> {
        pub(super) fn new(kv: &'a RocksKv) -> RocksProbe<'a> {
            RocksProbe {
                kv,
                latency: None,
                io: IoStats::default(),
                value: Vec::new(),
                overhead: proc_overhead(),
                opened: process_reads(),
            }
        }
    }

    impl Probe for RocksProbe<'_> {
        fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>> {
            let key = lidx::kv::keys::u64_key(key);
            let found = match self.latency {
                None => self.kv.get_into(&key, &mut self.value)?,
                Some(model) => {
                    let before = process_reads();
                    let found = self.kv.get_into(&key, &mut self.value)?;
                    let (calls, bytes) = process_delta(before, process_reads(), self.overhead);
                    let charge = modelled(&model, calls, bytes);
                    if model.sleep {
                        std::thread::sleep(charge);
                    }
                    self.io.reads += calls;
                    self.io.bytes += bytes;
                    self.io.modelled_ns += charge.as_nanos() as u64;
                    found
                }
            };
            if !found {
                return Ok(None);
            }
            Ok(std::str::from_utf8(&self.value)
                .ok()
                .and_then(|s| s.parse().ok()))
        }

        fn set_latency(&mut self, model: Option<LatencyModel>) {
            if self.latency.is_none() && model.is_some() {
                // Reads so far, unmodelled, go into the totals before counting per get.
                let (calls, bytes) = process_delta(self.opened, process_reads(), self.overhead);
                self.io.reads = calls;
                self.io.bytes = bytes;
            }
            self.latency = model;
        }

        fn io(&mut self) -> IoStats {
            match self.latency {
                Some(_) => self.io,
                None => {
                    let (calls, bytes) = process_delta(self.opened, process_reads(), self.overhead);
                    IoStats {
                        reads: calls,
                        bytes,
                        modelled_ns: self.io.modelled_ns,
                        ..IoStats::default()
                    }
                }
            }
        }
    }
}

#[cfg(not(feature = "rocksdb"))]
mod rocks {
    use std::path::Path;

    use lidx::kv::write::Record;

    use super::{Built, Options};

    pub(super) fn build(_: &[Record<'_>], _: &Path, _: &str, _: &Options) -> anyhow::Result<Built> {
        anyhow::bail!("this lidx was built without RocksDB (the rocksdb feature)")
    }
}
