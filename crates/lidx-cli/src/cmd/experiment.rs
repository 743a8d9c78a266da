//! `lidx experiment`: the papers' studies, one command each. Paper 1's run under its protocol
//! (section 5.1): indexes are built and saved first; every join is a fresh `lidx join`
//! process that loads its index, drops the inputs' pages and reads them with `O_DIRECT`.
//! Each experiment prints a summary table and writes CSV (one row per measurement, with
//! every parameter, the I/O counted, the cost model's estimate, the machine and the storage
//! profile), PNG plots in the shape of the paper's figures, and `summary.md`. The studies
//! themselves are lidx-bench's; this module turns the command line into their options.

use std::path::PathBuf;

use anyhow::Context as _;
use lidx::data::Distribution;
use lidx::index::IndexKind;
use lidx::updatable::{Kind, Workload};
use lidx_bench::key_source::KeySource;
use lidx_bench::updatable::baselines::ConcurrentKind;
use lidx_bench::{Setup, airindex, bigtable, gre, indexes, join_sorted, unsorted, warm};

use crate::progress::Context;
use crate::units::{parse_count, parse_list, parse_size};

/// The papers' experiments.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Paper 1's joins of sorted tables (sections 5.3, 5.5, 5.6): INLJ through sampled PGM
    /// and a B+tree, sort-merge and hash, at size ratios 1 to 1000, over threads, window
    /// sizes and I/O depths (Figs. 6, 10, 11; Fig. 8 predicted by the cost model).
    #[command(
        after_help = "Examples:\n  lidx experiment join-sorted\n  lidx experiment join-sorted --n 50M --dir /mnt/nvme/lidx --threads 1,2,4,8\n  lidx experiment join-sorted --keys fb_200M_uint64 --keys books_200M_uint64"
    )]
    JoinSorted(JoinSortedArgs),
    /// One join in SQL through DataFusion, the same tuples three ways (issue 38): its hash
    /// join over Parquet files, over lidx tables with the learned index join off, and with
    /// it where the cost model picks it; and the learned join forced, to judge the picks.
    #[cfg(feature = "sql")]
    #[command(
        after_help = "Examples:\n  lidx experiment sql-join\n  lidx experiment sql-join --n 50M --ratios 1,10,100,1000,10000 --dir /mnt/nvme/lidx"
    )]
    SqlJoin(SqlJoinArgs),
    /// Paper 1's index study (section 5.2): size, build time and a cold INLJ self-join for
    /// every index kind (Fig. 5), and sampled PGM's size against its window (Table 2).
    #[command(
        after_help = "Examples:\n  lidx experiment indexes\n  lidx experiment indexes --n 20M --sets lognormal,usparse"
    )]
    Indexes(IndexesArgs),
    /// Paper 1's joins of unsorted tables under a memory limit (sections 4.4, 5.4): the
    /// learned partition index against a B+tree built by inserts, each holding pointers
    /// (the paper's) or tuples (build time, write amplification, index sizes: Fig. 9b),
    /// their joins beside grace hash and sort-then-merge at ratios 1 to 1000 (Fig. 9a), and
    /// three sorts, every run in a cgroup for its limit where the machine allows.
    #[command(
        after_help = "Examples:\n  lidx experiment unsorted\n  lidx experiment unsorted --n 20M --entries pointers --ratios 10,100,1000 --dir /mnt/nvme/lidx\n  lidx experiment unsorted --memory-limits 8MiB,1GiB --cgroups /sys/fs/cgroup/lidx-small,/sys/fs/cgroup/lidx-large",
        mut_arg("n", |a| a.default_value("1M").help("Keys per synthetic key set (paper 1 uses 200M; under cgroups a pointer join at ratio 1 reads a block per tuple from storage, so 1M takes about 4 minutes here)"))
    )]
    Unsorted(UnsortedArgs),
    /// Paper 4's Fig. 1: the learned block layout against Bigtable's SSTable index, point
    /// lookups and scans under closed-loop concurrent clients, at several table and block
    /// cache sizes.
    #[command(
        after_help = "Examples:\n  lidx experiment bigtable\n  lidx experiment bigtable --rows 1M,4M --memory 0,1MiB,64MiB --dir /mnt/nvme/lidx\n  lidx experiment bigtable --clients 15 --outstanding 100 --seconds 10"
    )]
    Bigtable(BigtableArgs),
    /// Paper 2's Figs. 2 and 3: AirIndex's tuned layers against a disk B+tree, the SSTable
    /// index, paper 4's learned blocks, RMI over mmap and RocksDB, cold and warm, on this
    /// disk and under a latency profile (NFS by default).
    #[command(
        after_help = "Examples:\n  lidx experiment airindex\n  lidx experiment airindex --keys 20M --hard 200000:20000 --sets lognormal --dir /mnt/nvme/lidx\n  lidx experiment airindex --sosd books_200M_uint64 --profile measured,ssd,nfs --cache 64MiB"
    )]
    Airindex(AirindexArgs),
    /// The CPU of a warm get: every layout beside LMDB (a memory-mapped B+tree) and
    /// RocksDB, each holding the whole table in memory, on the same records.
    #[command(
        after_help = "Examples:\n  lidx experiment warm\n  lidx experiment warm --rows 5M --value-sizes 100,1KiB --repeat 5"
    )]
    Warm(WarmArgs),
    /// Paper 3's study of updatable indexes (GRE): every kind on every workload over the
    /// hardness plane (the heatmap of Fig. 2), where inserts go (Fig. 3, Table 3), size
    /// (Fig. 8), tail latency (Figs. 10-11), distribution shift (Fig. 12), range scans
    /// (Fig. 13) and bulk-load scaling.
    #[command(
        after_help = "Examples:\n  lidx experiment updatable\n  lidx experiment updatable --n 5M --local 32,320,3200 --global 1,8,64\n  lidx experiment updatable --sosd books_200M_uint64 --sosd osm_cellids_200M_uint64 --n 200M --repeat 3"
    )]
    Updatable(UpdatableArgs),
    /// Paper 3's multi-threaded half (GRE, section 4.2): concurrent updatable indexes
    /// (FINEdex and the concurrent traditional baselines) on its workloads as the threads
    /// grow, on an easy and a hard key set (Figs. 4-6), with per-thread tail latencies.
    /// The default runs 1, 2 and 4 threads (4 oversubscribes 2 cores); --threads takes
    /// the paper's range on a larger machine.
    #[command(
        name = "updatable-concurrent",
        after_help = "Examples:\n  lidx experiment updatable-concurrent\n  lidx experiment updatable-concurrent --threads 1,2,4,8,16,24 --n 20M\n  lidx experiment updatable-concurrent --sosd osm_cellids_200M_uint64 --n 200M --workloads read-only,balanced,write-only"
    )]
    UpdatableConcurrent(UpdatableConcurrentArgs),
    /// Paper 5's study of joins over LSM-trees (section 4): the 29 methods over RocksDB
    /// against entry size, join frequency and matching rate (Fig. 5), index designs against
    /// entry size, duplication, skew and join frequency (Figs. 6-9), cumulative updates
    /// (Fig. 10), size ratio and write buffer (Fig. 11), block cache and Bloom bits
    /// (Fig. 12), and the cost model's pick against the measured fastest in every cell.
    #[cfg(feature = "rocksdb")]
    #[command(
        after_help = "Examples:\n  lidx experiment lsm-joins\n  lidx experiment lsm-joins --figures 5a,5b,10 --rows 1M\n  lidx experiment lsm-joins --rows 10M --dir /mnt/nvme/lidx   (the paper's size)"
    )]
    LsmJoins(LsmJoinsArgs),
}

/// Run paper 5's study of joins over LSM-trees.
#[cfg(feature = "rocksdb")]
#[derive(clap::Args)]
pub struct LsmJoinsArgs {
    /// Rows of S and of R a workload writes, before each figure's scaling (the paper: 10M;
    /// Figs. 5a, 6, 7 and 9 use a quarter to an eighth, where entries, duplicates or
    /// validations grow).
    #[arg(long, value_parser = parse_count, default_value = "50K")]
    rows: u64,
    /// Figures to run, comma-separated (5a,5b,5c,6,7,8,9,10,11,12,13b,13c) [default: all].
    #[arg(long, value_delimiter = ',')]
    figures: Vec<lidx_bench::lsm_joins::Figure>,
    /// Write buffer of the data trees [default: the paper's code's 64 MiB scaled by
    /// rows / 10M, at least 64 KiB].
    #[arg(long, value_parser = parse_size)]
    write_buffer: Option<u64>,
    /// Write buffer of every index tree [default: the paper's code's 8,382,464 bytes
    /// scaled by rows / 10M, at least 64 KiB].
    #[arg(long, value_parser = parse_size)]
    index_write_buffer: Option<u64>,
    /// Replace a stand-in by SOSD key files: NAME=FILE (face, wiki: the set joined with
    /// itself) or NAME=S_FILE:R_FILE (user, movie: two columns); repeatable.
    #[arg(long, value_name = "NAME=FILE[:R_FILE]", value_parser = parse_data_files)]
    data: Vec<(String, lidx_lsm::joins::AttrFiles)>,
    /// Memory of the sort and hash joins [default: the paper's 16 MB scaled by rows / 10M,
    /// at least 1 MiB].
    #[arg(long, value_parser = parse_size)]
    join_memory: Option<u64>,
    /// Directory for the databases while they run, in a scratch directory of their own
    /// inside it (nothing else in it is touched) [default: OUT_DIR/data].
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
    /// Directory for the CSV, plots and summary [default: results/lsm-joins].
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Seed of the workloads.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// Run paper 3's study of updatable indexes.
#[derive(clap::Args)]
pub struct UpdatableArgs {
    /// Keys per generated set (the paper: 200M).
    #[arg(long, value_parser = parse_count, default_value = "500K")]
    n: u64,
    /// Operations per run after the bulk load at most [default: --n].
    #[arg(long, value_parser = parse_count)]
    ops: Option<u64>,
    /// The hardness grid's local targets: segments at eps 32, easiest first.
    #[arg(long, value_delimiter = ',', default_value = "16,160,1600")]
    local: Vec<u64>,
    /// The hardness grid's global targets: segments at eps 4096, easiest first.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    global: Vec<u64>,
    /// lidx's synthetic sets to run beside the grid, comma-separated (none: "").
    #[arg(long, value_parser = parse_list::<Distribution>, default_value = "lognormal,clustered")]
    sets: std::vec::Vec<Distribution>,
    /// SOSD key files to run beside the grid (sorted; all their keys); repeatable.
    #[arg(long, value_name = "FILE")]
    sosd: Vec<PathBuf>,
    /// The kinds, comma-separated [default: all].
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<Kind>,
    /// The heatmap's workloads, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "read-only,read-intensive,balanced,write-heavy,write-only"
    )]
    workloads: Vec<Workload>,
    /// Fig. 7's deletion workloads, comma-separated (none: "").
    #[arg(
        long,
        value_parser = parse_list::<Workload>,
        default_value = "delete-intensive,delete-balanced,delete-heavy,delete-only"
    )]
    delete_workloads: std::vec::Vec<Workload>,
    /// Leave out Fig. 9 (ALEX-M against LIPP).
    #[arg(long)]
    no_alex_m: bool,
    /// Leave out Fig. 3's timed inserts (each insert's phases on write-only).
    #[arg(long)]
    no_phases: bool,
    /// Entries per scan in Fig. 13, comma-separated (none: "").
    #[arg(long, value_parser = parse_list::<usize>, default_value = "10,100,1000,10000")]
    scan_lens: std::vec::Vec<usize>,
    /// Leave out Fig. 12's distribution shift.
    #[arg(long)]
    no_shift: bool,
    /// Runs of each measurement, 1 to 100 (the median throughput's run is kept).
    #[arg(long, default_value_t = 3, value_parser = in_range::<1, 100>)]
    repeat: usize,
    /// Directory for the CSV, plots and summary [default: results/updatable].
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Seed of the keys and the workloads.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// Run paper 3's multi-threaded study.
#[derive(clap::Args)]
pub struct UpdatableConcurrentArgs {
    /// Keys per generated set (the paper: 200M).
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    n: u64,
    /// Operations per run after the bulk load at most [default: the workload's own].
    #[arg(long, value_parser = parse_count)]
    ops: Option<u64>,
    /// Thread counts, comma-separated, each 1 to 1024 (the paper: 1 to 96).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4", value_parser = in_range::<1, 1024>)]
    threads: Vec<usize>,
    /// The kinds, comma-separated [default: all].
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<ConcurrentKind>,
    /// The workloads, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "read-only,read-intensive,balanced,write-only"
    )]
    workloads: Vec<Workload>,
    /// lidx's synthetic sets, comma-separated (none: "").
    #[arg(long, value_parser = parse_list::<Distribution>, default_value = "lognormal")]
    sets: std::vec::Vec<Distribution>,
    /// Hard sets of the hardness generator, each LOCAL:GLOBAL (segments at eps 32 and
    /// 4096), comma-separated (none: "").
    #[arg(long, value_delimiter = ',', default_value = "1600:16")]
    hard: Vec<String>,
    /// SOSD key files to run too (sorted; all their keys); repeatable.
    #[arg(long, value_name = "FILE")]
    sosd: Vec<PathBuf>,
    /// Runs of each measurement, 1 to 100 (the median throughput's run is kept).
    #[arg(long, default_value_t = 3, value_parser = in_range::<1, 100>)]
    repeat: usize,
    /// Directory for the CSVs, plots and summary [default: results/updatable-concurrent].
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Seed of the keys and the workloads.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// `LOCAL:GLOBAL`, the hardness generator's targets.
fn hard_set(text: &str) -> anyhow::Result<KeySource> {
    let bad = || {
        anyhow::anyhow!(
            "--hard {text:?}: give LOCAL:GLOBAL, two counts of segments, LOCAL at least GLOBAL, e.g. 1600:16"
        )
    };
    let (l, g) = text.split_once(':').ok_or_else(bad)?;
    let (local, global): (u64, u64) = (
        l.trim().parse().map_err(|_| bad())?,
        g.trim().parse().map_err(|_| bad())?,
    );
    anyhow::ensure!(local >= global && global >= 1, bad());
    Ok(KeySource::Hard { local, global })
}

/// Where a study writes, as every study that generates data takes it.
#[derive(clap::Args)]
struct PlaceArgs {
    /// Directory for the generated data: put it on the device to study; it goes in a
    /// scratch directory inside it, removed at the end (nothing else in it is touched)
    /// [default: OUT_DIR/data].
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
    /// Directory for the CSV, plots and summary [default: results/EXPERIMENT].
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Keep the generated data: written in --dir itself, not in a scratch directory.
    #[arg(long)]
    keep_data: bool,
}

impl From<PlaceArgs> for lidx_bench::harness::Places {
    fn from(a: PlaceArgs) -> Self {
        lidx_bench::harness::Places {
            dir: a.dir,
            out_dir: a.out_dir,
            keep_data: a.keep_data,
        }
    }
}

/// What every experiment takes: the key sets, where the data and the results go, the device.
#[derive(clap::Args)]
pub struct Common {
    /// Keys per synthetic key set (paper 1 uses 200M).
    #[arg(long, value_parser = parse_count, default_value = "4M")]
    n: u64,
    /// Synthetic key sets, comma-separated (udense, usparse, normal, lognormal, clustered,
    /// heavytail) [default: lognormal,usparse,normal, unless --keys is given].
    #[arg(long, value_delimiter = ',')]
    sets: Option<Vec<Distribution>>,
    /// SOSD key files to study (the paper's FB, Wiki, OSM, Books); repeat for several.
    #[arg(long = "keys", value_name = "FILE.keys")]
    keys: Vec<PathBuf>,
    #[command(flatten)]
    places: PlaceArgs,
    /// Storage profile from `lidx bench disk`; without it a short one is measured on --dir.
    #[arg(long, value_name = "PROFILE.json")]
    profile: Option<PathBuf>,
    /// Read the inputs through the page cache (dropped first) instead of O_DIRECT, for file
    /// systems without O_DIRECT.
    #[arg(long)]
    buffered: bool,
    /// Seed of the generators and samples.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

impl Common {
    /// The study's setup; every cold join runs this executable.
    fn setup(self) -> anyhow::Result<Setup> {
        Ok(Setup {
            n: self.n,
            sets: self.sets,
            keys: self.keys,
            dir: self.places.dir,
            out_dir: self.places.out_dir,
            profile: self.profile,
            buffered: self.buffered,
            keep_data: self.places.keep_data,
            seed: self.seed,
            exe: crate::executable().context("cannot find the lidx executable")?,
        })
    }
}

/// Run paper 1's study of joins over sorted tables.
#[derive(clap::Args)]
pub struct JoinSortedArgs {
    #[command(flatten)]
    common: Common,
    /// Size ratios |S|/|R|: the outer table is a uniform 1/ratio sample of the inner.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000")]
    ratios: Vec<u64>,
    /// Thread counts, each 1 to 1024 [default: those of 1,2,4,6,8 up to the machine's
    /// cores].
    #[arg(long, value_delimiter = ',', value_parser = in_range::<1, 1024>)]
    threads: Option<Vec<usize>>,
    /// Index windows in tuples for the INLJ methods; each window is read with one call.
    #[arg(long, value_delimiter = ',', default_value = "256,1024,4096")]
    windows: Vec<u64>,
    /// Window reads in flight per INLJ thread, each 1 to 4096 (1 is paper 1's synchronous
    /// reading).
    #[arg(long, value_delimiter = ',', default_value = "1,32", value_parser = in_range::<1, 4096>)]
    io_depths: Vec<usize>,
    /// Indexes of the INLJ methods: the learned one first, then the baseline.
    #[arg(long, value_delimiter = ',', default_value = "sampled-pgm,btree")]
    indexes: Vec<IndexKind>,
    /// Bytes per sequential read of a scanned table (merge, hash, the INLJ's outer table).
    #[arg(long, value_parser = parse_size, default_value = "1MiB")]
    read_size: u64,
    /// Measurements per cell, 1 to 100; the summary takes the median.
    #[arg(long, default_value_t = 1, value_parser = in_range::<1, 100>)]
    repeat: usize,
}

/// Run the SQL join study.
#[cfg(feature = "sql")]
#[derive(clap::Args)]
pub struct SqlJoinArgs {
    #[command(flatten)]
    common: Common,
    /// Size ratios |S|/|R|: the outer table is a uniform 1/ratio sample of the inner.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000")]
    ratios: Vec<u64>,
    /// DataFusion's partitions for every query, 1 to 1024 [default: the machine's cores].
    #[arg(long, value_parser = in_range::<1, 1024>)]
    threads: Option<usize>,
    /// Window reads each learned join keeps in flight, 1 to 4096.
    #[arg(long, default_value_t = 32, value_parser = in_range::<1, 4096>)]
    io_depth: usize,
    /// How the Parquet files' pages are compressed: none, snappy or zstd.
    #[arg(long, default_value = "none", value_parser = parquet_compression)]
    parquet_compression: lidx_datafusion::parquet::ParquetCompression,
    /// Measurements per way and cell, 1 to 100; the summary takes the median.
    #[arg(long, default_value_t = 3, value_parser = in_range::<1, 100>)]
    repeat: usize,
}

/// `--parquet-compression`.
#[cfg(feature = "sql")]
fn parquet_compression(text: &str) -> Result<lidx_datafusion::parquet::ParquetCompression, String> {
    use lidx_datafusion::parquet::ParquetCompression as C;
    match text {
        "none" => Ok(C::None),
        "snappy" => Ok(C::Snappy),
        "zstd" => Ok(C::Zstd),
        _ => Err(format!("'{text}' is not none, snappy or zstd")),
    }
}

/// Run paper 1's index study.
#[derive(clap::Args)]
pub struct IndexesArgs {
    #[command(flatten)]
    common: Common,
    /// Indexes for Fig. 5: kinds of the family, each built for windows of at most 256
    /// positions (the paper's B+tree indexes every 256th key; RMI is the hybrid that bounds
    /// its leaves' windows), and alex (ALEX on disk: its data nodes hold the tuples in a
    /// file, its inner nodes stay in memory).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pgm,sampled-pgm,rs,rmi,btree,alex"
    )]
    indexes: Vec<indexes::Fig5Index>,
    /// Windows for Table 2 (PGM and sampled PGM sizes).
    #[arg(long, value_delimiter = ',', default_value = "256,1024,2048,4096")]
    windows: Vec<u64>,
    /// Tune RadixSpline and RMI on each key set, as the paper takes SOSD's Pareto-optimal
    /// settings (`lidx index build --tune`: the fastest lookups within 1% of the data's size;
    /// RMI windows are then unbounded) instead of their 256-position settings.
    #[arg(long)]
    tune: bool,
}

/// Run paper 1's study of unsorted tables under a memory limit.
#[derive(clap::Args)]
pub struct UnsortedArgs {
    #[command(flatten)]
    common: Common,
    /// Memory limits, comma-separated [default: a small one, a sixteenth of the table's
    /// bytes, where the B+tree's leaves do not fit; and a large one, four times the table].
    #[arg(long, value_delimiter = ',', value_parser = parse_size, value_name = "SIZE,...")]
    memory_limits: Option<Vec<u64>>,
    /// The cgroups the runs go in, which bound each process's memory and its page cache, as
    /// paper 1's cgroups did: auto (the study makes one per limit, the limit plus the
    /// process's own memory, where the machine allows it: root on cgroup v1, or a delegated
    /// v2; else none, and the summary says why), none, or the user's, one directory per
    /// memory limit in the same order.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "auto|none|DIR,...",
        default_value = "auto"
    )]
    cgroups: Vec<String>,
    /// Size ratios |S|/|R|: the outer table is a uniform 1/ratio sample of the inner.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000")]
    ratios: Vec<u64>,
    /// What the unclustered indexes hold, comma-separated: pointers (key and position, the
    /// paper's), tuples (a clustered copy), or both.
    #[arg(long, value_delimiter = ',', default_value = "pointers,tuples")]
    entries: Vec<lidx::partition::Entries>,
    /// Measurements per cell, 1 to 100; the summary takes the median.
    #[arg(long, default_value_t = 1, value_parser = in_range::<1, 100>)]
    repeat: usize,
}

/// Run paper 4's Bigtable study.
#[derive(clap::Args)]
pub struct BigtableArgs {
    /// Table sizes in rows, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_count, default_value = "250K,1M")]
    rows: Vec<u64>,
    /// Bytes of each value (the paper: 1 KB rows).
    #[arg(long, value_parser = parse_size, default_value = "1KiB")]
    value_size: u64,
    /// Target block size (the paper: 32 KB).
    #[arg(long, value_parser = parse_size, default_value = "32KiB")]
    block_size: u64,
    /// Block compression: none or lz4.
    #[arg(long, default_value = "none")]
    compress: lidx::kv::Compression,
    /// The learned layout's model: linear (the paper's), pgm or rmi.
    #[arg(long, default_value = "linear")]
    model: lidx::kv::ModelKind,
    /// Memory budgets, comma-separated, each at most 1TiB: every system gets a block cache
    /// of the budget less the index it keeps in memory outside the cache, so all hold the
    /// same bytes (0: no cache for anyone, not at equal memory).
    #[arg(long, visible_alias = "cache-sizes", value_delimiter = ',', value_parser = parse_size, default_value = "128KiB,256KiB,1MiB,8MiB,64MiB")]
    memory: Vec<u64>,
    /// Read every system's files through storage that behaves like this profile (a FUSE
    /// mount: each read takes its latency + bytes / bandwidth): ssd, nfs, hdd, or a profile
    /// saved by lidx bench disk [default: the local disk]. Paper 4 ran on a distributed
    /// file system.
    #[arg(long, value_name = "ssd|nfs|hdd|FILE.json")]
    profile: Option<String>,
    /// Clients (the paper: 15).
    #[arg(long, default_value_t = 15)]
    clients: usize,
    /// Requests each client keeps in flight, one thread each (the paper: 100).
    #[arg(long, default_value_t = 100)]
    outstanding: usize,
    /// Rows per scan (the paper: 100).
    #[arg(long, default_value_t = 100)]
    scan_rows: usize,
    /// Seconds each run warms the cache before measuring (0 to 86400).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    warmup: f64,
    /// Seconds each run measures (0 to 86400).
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    seconds: f64,
    /// Runs per cell, 1 to 100; the summary and plots take the median.
    #[arg(long, default_value_t = 1, value_parser = in_range::<1, 100>)]
    repeat: usize,
    /// Read blocks through the page cache instead of O_DIRECT (which keeps the OS from
    /// caching the table behind the block cache's back).
    #[arg(long)]
    buffered: bool,
    /// Leave RocksDB out (it is measured beside the two layouts where lidx was built with
    /// the rocksdb feature, the default).
    #[arg(long)]
    no_rocksdb: bool,
    /// Bits a key of RocksDB's Bloom filter, partitioned like its index, at most 32 (0:
    /// none). 10 is what RocksDB's documentation recommends for point reads; every key
    /// asked for here exists, so a filter spares no read and costs reads or cache space.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=32))]
    rocksdb_bloom_bits: u32,
    #[command(flatten)]
    places: PlaceArgs,
    /// Seed of the records and the clients' keys.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// Time warm gets of every system with the whole table in memory.
#[derive(clap::Args)]
pub struct WarmArgs {
    /// Records in the table (at most 4G), with random 20-digit keys.
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    rows: u64,
    /// Bytes of each value, comma-separated (1 B to 1 MiB each), a table each.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "100,1KiB")]
    value_sizes: Vec<u64>,
    /// Block size of lidx's layouts and RocksDB (512 B to 1 MiB; LMDB's pages are the OS
    /// page).
    #[arg(long, value_parser = parse_size, default_value = "4KiB")]
    block_size: u64,
    /// Timed gets per system and round (at most 1G).
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    gets: u64,
    /// Rounds (1 to 100); in each the systems take turns of 100,000 gets, a different one
    /// going first; the summary takes the median.
    #[arg(long, default_value_t = 3, value_parser = in_range::<1, 100>)]
    repeat: usize,
    /// Leave RocksDB out.
    #[arg(long)]
    no_rocksdb: bool,
    /// The systems to measure, comma-separated (learned, sstable, btree, tuned, lmdb,
    /// rocksdb) [default: all].
    #[arg(long, value_delimiter = ',')]
    systems: Vec<String>,
    #[command(flatten)]
    places: PlaceArgs,
    /// Seed of the records and the keys asked for.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// Run paper 2's AirIndex study.
#[derive(clap::Args)]
pub struct AirindexArgs {
    /// Keys per synthetic key set (the paper: 200M-key SOSD sets).
    #[arg(long, value_parser = parse_count, default_value = "2M")]
    keys: u64,
    /// Synthetic key sets, comma-separated (udense, usparse, normal, lognormal, clustered,
    /// heavytail) [default: lognormal and the --hard set 20000:2000, unless --sets, --hard or
    /// --sosd is given].
    #[arg(long, value_delimiter = ',')]
    sets: Vec<Distribution>,
    /// A key set of paper 3's hardness generator: about LOCAL optimal PLA segments at
    /// epsilon 32 and GLOBAL at epsilon 4096 (GLOBAL at least 1, LOCAL at least GLOBAL, both
    /// at most --keys); repeatable. The default 20000:2000 makes the profiles part ways at
    /// 2M keys: an exact layer 1 over 4 KiB pages costs about 200 KiB, too large to read
    /// whole but worth a second round trip where round trips are cheap (ssd).
    #[arg(long, value_name = "LOCAL:GLOBAL", value_parser = parse_hardness)]
    hard: Vec<(u64, u64)>,
    /// SOSD key files to run on too (all their keys, duplicates dropped); repeatable.
    #[arg(long, value_name = "FILE")]
    sosd: Vec<PathBuf>,
    /// Where reads come from, comma-separated: measured (this disk, O_DIRECT, timed as it
    /// is), ssd, nfs, hdd (lidx's assumptions) or a profile saved by lidx bench disk.
    #[arg(long, value_delimiter = ',', default_value = "measured,ssd,nfs")]
    profile: Vec<String>,
    /// The measured profile the tuner uses under `measured` (from lidx bench disk); without
    /// it a short one is measured on --dir.
    #[arg(long, value_name = "FILE")]
    measured_profile: Option<PathBuf>,
    /// Keys per generated set at which the tuner's choices under every profile are also
    /// sketched (laid out and tuned, not written nor measured), to see how they move with
    /// size (0: none).
    #[arg(long, value_parser = parse_count, default_value = "0")]
    sketch_keys: u64,
    /// The cache every system reads through, the same budget for each.
    #[arg(long, value_parser = parse_size, default_value = "8MiB")]
    cache: u64,
    /// Bytes of a page (and of a block for the SSTable and learned layouts).
    #[arg(long, value_parser = parse_size, default_value = "4KiB")]
    page_size: u64,
    /// Lookups in the cold-to-warm sequence (the paper: 70K; 20K pass the point where the
    /// default cache stops warming, and keep the default run under 10 minutes).
    #[arg(long, value_parser = parse_count, default_value = "20K")]
    queries: u64,
    /// Lookups after the sequence whose mean is the warm latency.
    #[arg(long, value_parser = parse_count, default_value = "2000")]
    warm_queries: u64,
    /// Under a latency profile: the lookups at the start of the sequence and of the warm
    /// ones that sleep out their reads (the rest are charged without sleeping).
    #[arg(long, value_parser = parse_count, default_value = "40")]
    timed_queries: u64,
    /// Fresh starts the cold latency is the mean of (1 to 1000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=1000))]
    cold_starts: u16,
    /// Leave RocksDB out.
    #[arg(long)]
    no_rocksdb: bool,
    /// Bits a key of RocksDB's Bloom filter, partitioned like its index, at most 32 (0:
    /// none). 10 is what RocksDB's documentation recommends for point reads; every key
    /// asked for here exists, so a filter spares no read and costs reads or cache space.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=32))]
    rocksdb_bloom_bits: u32,
    /// Read through the OS page cache instead of O_DIRECT (for file systems without it;
    /// each fresh start still drops the files' cached pages).
    #[arg(long)]
    buffered: bool,
    #[command(flatten)]
    places: PlaceArgs,
    /// Seed of the keys and the lookups.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

fn seconds(name: &str, s: f64) -> anyhow::Result<std::time::Duration> {
    if !(0.0..=86_400.0).contains(&s) {
        let shown = match s.abs() < 1e6 {
            true => format!("{s}"),
            false => format!("{s:e}"),
        };
        anyhow::bail!("invalid {name}: {shown} seconds is not in 0 ..= 86400 (a day)");
    }
    Ok(std::time::Duration::from_secs_f64(s))
}

/// A whole number in `LO ..= HI`, for an option that is a list of them.
fn in_range<const LO: usize, const HI: usize>(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number"))?;
    if !(LO..=HI).contains(&n) {
        return Err(format!("{n} is not in {LO}..={HI}"));
    }
    Ok(n)
}

pub fn run(ctx: &Context, command: Command) -> anyhow::Result<()> {
    let progress = ctx.progress();
    let report = match command {
        Command::JoinSorted(a) => {
            let options = join_sorted::Options {
                ratios: a.ratios,
                threads: a.threads,
                windows: a.windows,
                io_depths: a.io_depths,
                indexes: a.indexes,
                read_size: a.read_size,
                repeat: a.repeat,
            };
            join_sorted::run(&a.common.setup()?, options, &progress)?
        }
        #[cfg(feature = "sql")]
        Command::SqlJoin(a) => {
            let options = lidx_bench::sql_join::Options {
                ratios: a.ratios,
                threads: a.threads.unwrap_or_else(|| {
                    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
                }),
                io_depth: a.io_depth,
                repeat: a.repeat,
                compression: a.parquet_compression,
            };
            lidx_bench::sql_join::run(&a.common.setup()?, options, &progress)?
        }
        Command::Indexes(a) => {
            let options = indexes::Options {
                indexes: a.indexes,
                windows: a.windows,
                tune: a.tune,
            };
            indexes::run(&a.common.setup()?, &options, &progress)?
        }
        Command::Unsorted(a) => {
            let options = unsorted::Options {
                limits: a.memory_limits,
                cgroups: match a.cgroups.as_slice() {
                    [one] if one == "auto" => unsorted::Cgroups::Auto,
                    [one] if one == "none" => unsorted::Cgroups::None,
                    dirs => unsorted::Cgroups::Given(dirs.iter().map(PathBuf::from).collect()),
                },
                ratios: a.ratios,
                entries: a.entries,
                repeat: a.repeat,
            };
            unsorted::run(&a.common.setup()?, &options, &progress)?
        }
        Command::Bigtable(a) => {
            let options = bigtable::Options {
                rows: a.rows,
                value_size: a.value_size,
                block_size: a.block_size,
                compression: a.compress,
                model: a.model,
                memory_budgets: a.memory,
                clients: a.clients,
                outstanding: a.outstanding,
                scan_rows: a.scan_rows,
                warmup: seconds("warmup", a.warmup)?,
                measure: seconds("seconds", a.seconds)?,
                repeat: a.repeat,
                buffered: a.buffered,
                rocksdb: cfg!(feature = "rocksdb") && !a.no_rocksdb,
                rocksdb_bloom_bits: a.rocksdb_bloom_bits,
                places: a.places.into(),
                profile: a.profile,
                lidx_exe: Some(crate::executable().context("cannot find the lidx executable")?),
                seed: a.seed,
            };
            bigtable::run(&options, &progress)?
        }
        Command::Warm(a) => {
            // The study's gets run on one thread: its heap goes on huge pages, which a
            // process of many threads cannot afford (see allocator.rs).
            crate::allocator::huge_pages(true);
            let options = warm::Options {
                rows: a.rows,
                value_sizes: a.value_sizes,
                block_size: a.block_size,
                gets: usize::try_from(a.gets).context("--gets is too large")?,
                repeat: a.repeat,
                rocksdb: cfg!(feature = "rocksdb") && !a.no_rocksdb,
                systems: a.systems,
                places: a.places.into(),
                seed: a.seed,
            };
            warm::run(&options, &progress)?
        }
        Command::Airindex(a) => {
            let mut key_sets: Vec<KeySource> = a
                .hard
                .into_iter()
                .map(|(local, global)| KeySource::Hard { local, global })
                .chain(a.sets.into_iter().map(KeySource::Synthetic))
                .collect();
            if key_sets.is_empty() && a.sosd.is_empty() {
                key_sets = airindex::Options::default().key_sets;
            }
            key_sets.extend(a.sosd.into_iter().map(KeySource::Sosd));
            let count = |name: &str, v: u64| {
                usize::try_from(v).with_context(|| format!("--{name} {v} is too large"))
            };
            let options = airindex::Options {
                keys: count("keys", a.keys)?,
                key_sets,
                profiles: a.profile,
                measured_profile: a.measured_profile,
                sketch_keys: count("sketch-keys", a.sketch_keys)?,
                cache_bytes: a.cache,
                page_size: a.page_size,
                queries: count("queries", a.queries)?,
                warm_queries: count("warm-queries", a.warm_queries)?,
                timed_queries: count("timed-queries", a.timed_queries)?,
                cold_starts: a.cold_starts.into(),
                rocksdb: cfg!(feature = "rocksdb") && !a.no_rocksdb,
                rocksdb_bloom_bits: a.rocksdb_bloom_bits,
                buffered: a.buffered,
                places: a.places.into(),
                lidx_exe: Some(crate::executable().context("cannot find the lidx executable")?),
                seed: a.seed,
                ..airindex::Options::default()
            };
            airindex::run(&options, &progress)?
        }
        Command::Updatable(a) => {
            let count = |name: &str, v: u64| {
                usize::try_from(v).with_context(|| format!("--{name} {v} is too large"))
            };
            let options = gre::Options {
                n: count("n", a.n)?,
                ops: a.ops.map(|v| count("ops", v)).transpose()?,
                local: a.local,
                global: a.global,
                sets: a.sets,
                sosd: a.sosd,
                kinds: if a.kinds.is_empty() {
                    Kind::ALL.to_vec()
                } else {
                    a.kinds
                },
                workloads: a.workloads,
                delete_workloads: a.delete_workloads,
                alex_m: !a.no_alex_m,
                phases: !a.no_phases,
                scan_lens: a.scan_lens,
                shift: !a.no_shift,
                repeat: a.repeat,
                out_dir: a.out_dir,
                seed: a.seed,
            };
            gre::run(&options, &progress)?
        }
        Command::UpdatableConcurrent(a) => {
            let count = |name: &str, v: u64| {
                usize::try_from(v).with_context(|| format!("--{name} {v} is too large"))
            };
            let mut sets: Vec<KeySource> = a.sets.into_iter().map(KeySource::Synthetic).collect();
            for h in a.hard.iter().filter(|h| !h.trim().is_empty()) {
                sets.push(hard_set(h)?);
            }
            sets.extend(a.sosd.into_iter().map(KeySource::Sosd));
            let options = lidx_bench::gre_threads::Options {
                n: count("n", a.n)?,
                ops: a.ops.map(|v| count("ops", v)).transpose()?,
                threads: a.threads,
                kinds: if a.kinds.is_empty() {
                    ConcurrentKind::ALL.to_vec()
                } else {
                    a.kinds
                },
                workloads: a.workloads,
                sets,
                repeat: a.repeat,
                out_dir: a.out_dir,
                seed: a.seed,
            };
            lidx_bench::gre_threads::run(&options, &progress)?
        }
        #[cfg(feature = "rocksdb")]
        Command::LsmJoins(a) => {
            use lidx_bench::lsm_joins::{self, Figure};
            let options = lsm_joins::Options {
                rows: a.rows,
                figures: if a.figures.is_empty() {
                    Figure::ALL.to_vec()
                } else {
                    a.figures
                },
                write_buffer: a
                    .write_buffer
                    .map(|b| usize::try_from(b).context("--write-buffer is too large"))
                    .transpose()?,
                index_write_buffer: a
                    .index_write_buffer
                    .map(|b| usize::try_from(b).context("--index-write-buffer is too large"))
                    .transpose()?,
                join_memory: a.join_memory,
                data: a.data,
                dir: a.dir,
                out_dir: a.out_dir,
                seed: a.seed,
            };
            lsm_joins::run(&options, &progress)?
        }
    };
    say_text!(report);
    Ok(())
}

/// `NAME=FILE` or `NAME=S_FILE:R_FILE` of `--data`.
#[cfg(feature = "rocksdb")]
fn parse_data_files(text: &str) -> Result<(String, lidx_lsm::joins::AttrFiles), String> {
    let (name, files) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=FILE[:R_FILE]"))?;
    let (s, r) = match files.split_once(':') {
        Some((s, r)) => (s, Some(std::path::Path::new(r))),
        None => (files, None),
    };
    if name.is_empty() || s.is_empty() {
        return Err(format!("{text:?} is not NAME=FILE[:R_FILE]"));
    }
    Ok((
        name.to_string(),
        lidx_lsm::joins::AttrFiles::new(std::path::Path::new(s), r),
    ))
}

/// `LOCAL:GLOBAL`, paper 3's hardness targets: GLOBAL at least 1 and LOCAL at least GLOBAL
/// (the generator checks them against the number of keys).
fn parse_hardness(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("invalid hardness {text:?}: LOCAL:GLOBAL, e.g. 20000:2000");
    let (local, global) = text.split_once(':').ok_or_else(bad)?;
    let local: u64 = parse_count(local.trim()).map_err(|e| format!("{}: {e}", bad()))?;
    let global: u64 = parse_count(global.trim()).map_err(|e| format!("{}: {e}", bad()))?;
    if global == 0 || local < global {
        return Err(format!(
            "invalid hardness {text:?}: GLOBAL must be at least 1 and LOCAL at least GLOBAL"
        ));
    }
    Ok((local, global))
}
