//! `lidx experiment airindex`: paper 2's Figs. 2 and 3. AirIndex (lidx's tuned layout)
//! against the baselines the paper measured, on the same records, cold and warm, on this
//! machine's disk and under a storage profile it lacks (paper 2's NFS).
//!
//! **Records.** Each key set (lidx's synthetic ones, or SOSD key files) becomes records
//! `(k_i, i)`, as the paper turns SOSD's keys into key-value pairs: the key as 8 big-endian
//! bytes, the value the position as a decimal string.
//!
//! **Systems**, all but LMDB reading through one bounded, counted cache of `--cache` bytes
//! that starts empty at each fresh start, and all through the same storage:
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
//! - `lmdb`: LMDB (a real B+tree store, through heed) read through its memory map, read-ahead
//!   off: paper 2's setting for its mmap baselines, whose memory is the OS page cache, not
//!   the `--cache` budget (so it is not at equal memory once warm: Fig. 3's second drop);
//! - `rocksdb`: RocksDB with the records in one SST file, a two-level index and a block
//!   cache of the same budget (with the `rocksdb` feature).
//!
//! **Storage.** Under the `measured` profile the files are read from the local disk with
//! `O_DIRECT` and every latency is a wall time. Under a named or saved profile, every
//! system reads its files through one [`ProfiledMount`]: a FUSE file system over the data
//! directory that makes each read reaching it take the profile's latency + bytes /
//! bandwidth, and counts it. Every system is charged the same way, for the reads of its
//! own files that reach storage (opening a store included), and for nothing else: not a
//! system call that reads sysfs or `/proc`, not a read the kernel answers at the end of a
//! file. Their reads per lookup are the mount's counts; on the local disk they are
//! lidx's own read calls, LMDB's the page faults that read its file (the thread's major
//! faults, a 4 KiB page each), and RocksDB's the process's read calls (`/proc/self/io`).
//!
//! **Cold and warm** (paper 2, section 3). Cold latency: over `--cold-starts` fresh starts
//! (the OS's cached pages of the files dropped, the cache empty), the time to open the
//! store and look up one key. Fig. 3: from one more fresh start, the mean latency over the
//! first `n` lookups of a sequence of `--queries` (the first including the open), for `n`
//! = 1, 2, 4, … Warm latency: `--warm-queries` more lookups after that sequence. Under a
//! latency profile, sleeping through 70,000 lookups at 50 ms a read would take hours: the
//! cold starts, the first `--timed-queries` lookups of the sequence and the first
//! `--timed-queries` warm ones sleep; for the others the mount answers at once and counts
//! the profile time (latency = wall time + the profile time of the reads). The CSV says how many of
//! each mean were timed, and a `warm-timed` row has the slept warm lookups alone, to set
//! beside the mean of all.

mod measure;
mod plots;
mod probe;
#[cfg(feature = "rocksdb")]
mod rocks;
mod rows;
mod summary;
mod systems;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;
use lidx::data::Distribution;

use crate::csv_rows::write_rows;
use crate::harness::{Places, measure};
pub use crate::key_source::KeySource;
use crate::profiled_fs::ProfiledMount;
use crate::progress::Progress;
use measure::{Measuring, run_profiles};
use plots::plots;
pub use rows::{FileRow, Row};
use summary::summary;
pub use systems::structure_of;

#[cfg(not(feature = "rocksdb"))]
mod rocks {
    use std::path::Path;

    use lidx::kv::write::Record;

    use super::Options;
    use super::systems::Built;

    pub(super) fn build(_: &[Record<'_>], _: &Path, _: &str, _: &Options) -> anyhow::Result<Built> {
        anyhow::bail!("this lidx was built without RocksDB (the rocksdb feature)")
    }
}

/// The study's settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Keys per synthetic key set.
    pub keys: usize,
    /// The key sets.
    pub key_sets: Vec<KeySource>,
    /// Where reads come from: `measured` (this machine's disk) or a profile
    /// [`resolve_profile`] knows (`ssd`, `nfs`, `hdd`, a saved file).
    pub profiles: Vec<String>,
    /// The measured profile (from `lidx bench disk`) the tuner uses under `measured`;
    /// `None`: measured briefly at the start.
    pub measured_profile: Option<PathBuf>,
    /// Profiles whose tuner choice the summary shows beside those run.
    pub sketch_profiles: Vec<String>,
    /// Keys per generated set at which the tuner's choices are also sketched (laid out and
    /// tuned, not written nor measured), to see how they move with size. 0: none.
    pub sketch_keys: usize,
    /// The cache budget in bytes, the same for every system.
    pub cache_bytes: u64,
    /// Bytes of a page (the tuned and B+tree layouts; the block size of the others).
    pub page_size: u64,
    /// Lookups in the cold→warm sequence (the paper: 70K).
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
    /// Bits a key of RocksDB's Bloom filter (partitioned like its index); 0: none. 10, as
    /// RocksDB's documentation recommends for point reads; every key the study asks for
    /// exists, so a filter spares no read here: without a cache it costs a filter
    /// partition read per get, and with one it takes cache space.
    pub rocksdb_bloom_bits: u32,
    /// Read through the OS page cache instead of `O_DIRECT` (for file systems without
    /// it; each fresh start still drops the files' cached pages).
    pub buffered: bool,
    /// Where the data and the results go.
    pub places: Places,
    /// The `lidx` executable, whose `lidx bench mount` serves the files under a latency
    /// profile (none: only `measured` can run).
    pub lidx_exe: Option<PathBuf>,
    /// Seed of the keys and the lookups.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            keys: 2_000_000,
            key_sets: vec![
                KeySource::Hard {
                    local: 20_000,
                    global: 2000,
                },
                KeySource::Synthetic(Distribution::Lognormal),
            ],
            profiles: vec!["measured".into(), "ssd".into(), "nfs".into()],
            measured_profile: None,
            sketch_profiles: vec!["ssd".into(), "nfs".into(), "hdd".into()],
            sketch_keys: 0,
            cache_bytes: 8 << 20,
            page_size: 4096,
            queries: 20_000,
            warm_queries: 2000,
            timed_queries: 40,
            cold_starts: 10,
            rocksdb: cfg!(feature = "rocksdb"),
            rocksdb_bloom_bits: 10,
            buffered: false,
            places: Places::default(),
            lidx_exe: None,
            seed: 42,
        }
    }
}

/// Runs the study; returns the text report (the summary) to print.
pub fn run(options: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    check(options)?;
    // The data goes into a scratch directory inside --dir (or OUT/data) unless kept.
    let (mut results, data) = options.places.create(
        "airindex",
        ["airindex.csv", "reads_by_file.csv", "summary.md"],
    )?;
    let machine = crate::machine::describe();
    let started = Instant::now();
    let profiles = run_profiles(options, data.dir(), progress)?;
    // Under a latency profile every system reads its files through one mount (beside the
    // scratch data directory: never inside what it shows).
    let mount = match profiles.iter().find_map(|p| p.charged) {
        Some(cost) => {
            let Some(exe) = &options.lidx_exe else {
                bail!(
                    "a latency profile needs the lidx executable, whose `lidx bench mount` serves the profiled storage"
                );
            };
            Some(ProfiledMount::mount(exe, data.path(), data.dir(), cost)?)
        }
        None => None,
    };
    let mut measuring = Measuring::new(options, &profiles, (data.path(), mount.as_ref()), &machine);
    let (_, rows) = measure(&mut measuring, "paper 2's study", "systems", progress)?;
    let sketches = measuring.sketches;
    let by_file = match &mount {
        Some(m) => FileRow::all(m, &machine)?,
        None => Vec::new(),
    };
    drop(mount);
    drop(data);
    write_rows(results.file(0), &rows)?;
    write_rows(results.file(1), &by_file)?;
    plots(&results.dir, &rows)?;
    let summary = summary(
        options,
        &machine,
        &profiles,
        &rows,
        &sketches,
        started.elapsed(),
    );
    results.finish(&summary)
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
