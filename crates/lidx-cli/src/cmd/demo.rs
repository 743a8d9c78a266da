//! `lidx demo`: a short tour on small generated data, one section per capability, each a
//! few library calls. Every capability adds itself here.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use lidx::data::{Distribution, GenParams, KeyFile, generate, write_keys};
use lidx::files::cache;
use lidx::index::measure::{Baseline, Queries, measure};
use lidx::index::{AnyIndex, AnyParams, Index, IndexKind, Pgm, PgmParams};
use lidx::join::{
    CountSink, HashTable, InljOptions, JoinMethod, JoinRequest, Method, parallel_join,
};
use lidx::kv::input::{RecordInput, generate_tsv};
use lidx::kv::{BlockCache, BuildOptions, KvFile, Layout};
use lidx::memory::MemoryBudget;
use lidx::partition::btree;
use lidx::partition::{self, PartitionParams};
use lidx::sort::{SortOptions, sort_table};
use lidx::storage::profile::DiskBenchOptions;
use lidx::storage::table::{build_from_keys, tuples_from_keys, write_shuffled};
use lidx::storage::{BlockReader, IoStats, ReadMode, Table, ValueSource, paper1};
use lidx::updatable::alex::{self, AlexFile, AlexParams};
use lidx_bench::{clients, disk, index_bench};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::progress::Context;
use crate::units::{human_bytes, parse_count};

/// Run the demo.
#[derive(clap::Args)]
pub struct Args {
    /// Keys per generated key set.
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    n: u64,
    /// Keep the files in this directory instead of a temporary one (a hidden
    /// `.lidx-tmp-…` directory in the system's temporary directory, removed at the end or
    /// when the demo is interrupted).
    #[arg(long)]
    dir: Option<PathBuf>,
}

const DISTS: [Distribution; 4] = [
    Distribution::Udense,
    Distribution::Lognormal,
    Distribution::Clustered,
    Distribution::Heavytail,
];

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    let tmp;
    let dir: &Path = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .with_context(|| format!("{}: cannot create the directory", d.display()))?;
            d
        }
        None => {
            // Named as lidx's temporary files: removed at the end, by the signal handler on
            // SIGINT or SIGTERM, and after a SIGKILL by the next lidx writing there.
            tmp = lidx::files::scratch_dir(&std::env::temp_dir())?;
            tmp.path()
        }
    };
    let n = usize::try_from(args.n).context("n does not fit in memory")?;
    say!(
        "lidx demo: learned indexes on data that lives on disk. Files in {}\n",
        dir.display()
    );
    let key_files = key_sets(dir, n)?;
    let tables = tables(ctx, dir, &key_files)?;
    cold_window_reads(&tables)?;
    paper1_round_trip(dir, &tables[0])?;
    let lognormal = Table::open(&tables[1])?;
    let keys = lognormal.read_keys()?;
    indexes(&lognormal, &keys)?;
    joins(dir, &lognormal, &keys)?;
    unsorted(dir, &tables[1])?;
    key_value(dir)?;
    tuned_layers(dir)?;
    updatable_indexes()?;
    #[cfg(feature = "rocksdb")]
    lsm_joins(dir)?;
    disk_profile(ctx, dir)?;
    say!(
        "\nNext: lidx gen --help, lidx table --help, lidx index --help, lidx kv --help, lidx experiment --help, lidx bench disk --help."
    );
    Ok(())
}

/// Section 1: generates the key sets into `dir`; returns their files.
fn key_sets(dir: &Path, n: usize) -> anyhow::Result<Vec<PathBuf>> {
    say!(
        "1. Key sets (seeded synthetic stand-ins for paper 1's data; SOSD files work as they are)"
    );
    say!(
        "   {:<10} {:>10} {:>22} {:>22} {:>9}",
        "set",
        "keys",
        "smallest",
        "largest",
        "ms"
    );
    let mut files = Vec::new();
    for dist in DISTS {
        let t = Instant::now();
        let keys = generate(&GenParams::new(dist, n, 42))?;
        let path = dir.join(format!("{dist}.keys"));
        write_keys(&path, &keys)?;
        say!(
            "   {:<10} {:>10} {:>22} {:>22} {:>9.0}",
            dist.name(),
            keys.len(),
            keys[0],
            keys[keys.len() - 1],
            t.elapsed().as_secs_f64() * 1e3
        );
        files.push(path);
    }
    Ok(files)
}

/// Section 2: builds and verifies a table of each key file; returns their paths.
fn tables(ctx: &Context, dir: &Path, key_files: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    say!("\n2. Tables: 4096-byte header, 256 tuples of 16 bytes per block, a CRC32C per block");
    let mut built = Vec::new();
    for (dist, keys_path) in DISTS.iter().zip(key_files) {
        let tbl = dir.join(format!("{dist}.tbl"));
        let t = Instant::now();
        let file = KeyFile::open(keys_path)?;
        let bar = ctx.bar(file.len() as u64, "building", "tuples");
        build_from_keys(file.keys(), ValueSource::RowId, &tbl, |d| {
            bar.set_position(d)
        })?;
        bar.finish_and_clear();
        let build_ms = t.elapsed().as_secs_f64() * 1e3;
        let table = Table::open(&tbl)?;
        let t = Instant::now();
        let report = table.verify(|_| {})?;
        say!(
            "   {:<10} {:>10} tuples, {:>6} blocks, {:>9}; built in {:.0} ms, verified in {:.0} ms ({} checksums)",
            dist.name(),
            table.len(),
            table.layout().data_blocks,
            human_bytes(table.layout().file_len()),
            build_ms,
            t.elapsed().as_secs_f64() * 1e3,
            report.data_blocks
        );
        built.push(tbl);
    }
    Ok(built)
}

/// Section 3: reads windows of 256, 1024 and 4096 positions cold and counts the blocks.
fn cold_window_reads(tables: &[PathBuf]) -> anyhow::Result<()> {
    say!("\n3. Cold window reads: the blocks under a window of positions, one O_DIRECT read each");
    say!("   (an index returns such windows; paper 1 compares indexes at 256 positions = 1 block)");
    say!(
        "   {:<10} {:>8} {:>9} {:>12} {:>12} {:>12}",
        "set",
        "window",
        "lookups",
        "blocks/read",
        "KiB/read",
        "us/read"
    );
    for tbl in tables {
        let table = Table::open(tbl)?;
        for width in [256u64, 1024, 4096] {
            let (stats, lookups, elapsed, mode) = cold_windows(&table, width, 2000)?;
            say!(
                "   {:<10} {:>8} {:>9} {:>12.2} {:>12.1} {:>12.1}{}",
                tbl.file_stem().and_then(|s| s.to_str()).unwrap_or("?"),
                width,
                lookups,
                stats.blocks as f64 / stats.reads.max(1) as f64,
                stats.bytes as f64 / 1024.0 / stats.reads.max(1) as f64,
                elapsed.as_secs_f64() * 1e6 / lookups as f64,
                if mode == ReadMode::Buffered {
                    " (buffered: no O_DIRECT here)"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}

/// Reads `lookups` windows of `width` positions at random places after dropping the
/// table's cached pages; `O_DIRECT` where the file system allows it.
fn cold_windows(
    table: &Table,
    width: u64,
    lookups: u64,
) -> anyhow::Result<(IoStats, u64, Duration, ReadMode)> {
    cache::drop_file_pages(table.path())?;
    let mut reader = BlockReader::direct_or_buffered(table)?;
    let n = table.len();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(width);
    let t = Instant::now();
    for _ in 0..lookups {
        let lo = rng.random_range(0..n);
        reader.read_window(lo, (lo + width).min(n))?;
        reader.clear_buffer();
    }
    Ok((reader.stats(), lookups, t.elapsed(), reader.mode()))
}

/// Section 4: exports a table to paper 1's layout and imports it back, byte for byte.
fn paper1_round_trip(dir: &Path, first: &Path) -> anyhow::Result<()> {
    say!("\n4. Exchange with paper 1's code: export to its layout and import back");
    let p1 = dir.join("udense.paper1");
    let back = dir.join("udense.roundtrip.tbl");
    paper1::export(&Table::open(first)?, &p1, |_| {})?;
    paper1::import(&p1, &back, |_| {})?;
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("{}: cannot read", p.display()));
    let same = read(first)? == read(&back)?;
    say!(
        "   {} -> {} ({}) -> {}: {}",
        first.display(),
        p1.display(),
        human_bytes(read(&p1)?.len() as u64),
        back.display(),
        if same { "byte-identical" } else { "DIFFERENT" }
    );
    anyhow::ensure!(same, "the paper 1 round trip changed the table");
    Ok(())
}

/// Section 5: every index kind over one table: size, windows, lookups in memory and cold on disk,
/// and the key set's hardness.
fn indexes(table: &Table, keys: &[u64]) -> anyhow::Result<()> {
    say!("\n5. Indexes over the lognormal table: each kind's window holds the key's lower bound");
    say!("   (defaults: windows of at most 256 positions, except RMI's, which depend on the data)");
    let queries = Queries::draw(keys, 20_000, 7);
    let baseline = Baseline::measure(keys, &queries);
    let mut rows = Vec::new();
    for kind in IndexKind::ALL {
        let params = AnyParams::default_for(kind);
        let disk = Some((table, 300));
        rows.push(measure(keys, &params, 0, &queries, &baseline, disk, 1)?.0);
    }
    say_text!(index_bench::measurements_table(
        &rows,
        &baseline,
        table,
        keys.len()
    ));
    let pgm = Pgm::build(keys, &PgmParams::default())?;
    let on_two = Pgm::build_on(keys, &PgmParams::default(), 2)?;
    say!(
        "   pgm: {:?} segments of {}, float slack {:?}; built on 2 threads: {:?} segments",
        pgm.segments_per_level(),
        pgm.form(),
        pgm.slack(),
        on_two.segments_per_level()
    );
    let hard = |eps| lidx::pla::segment_count(keys, eps);
    say!(
        "   hardness (paper 3): {} PLA segments at epsilon 32, {} at epsilon 4096",
        hard(32)?,
        hard(4096)?
    );
    Ok(())
}

/// Section 6: joins a 1/100 sample of `table` with it by INLJ through three indexes (and with 32
/// reads in flight), sort-merge and hash, cold, counting blocks and reads.
fn joins(dir: &Path, table: &Table, keys: &[u64]) -> anyhow::Result<()> {
    say!(
        "\n6. Joins: a 1/100 sample of the lognormal table (every outer key matches) with the table, cold, O_DIRECT"
    );
    let sample = lidx::data::sample::random_fraction(keys, 0.01, 7)?;
    let outer_path = dir.join("lognormal.sample.tbl");
    build_from_keys(&sample, ValueSource::RowId, &outer_path, |_| {})?;
    let outer = Table::open(&outer_path)?;
    say!(
        "   {:<32} {:>8} {:>10} {:>14} {:>12}",
        "method",
        "output",
        "ms",
        "inner blocks",
        "inner reads"
    );
    let mode = BlockReader::direct_or_buffered(table)?.mode();
    let budget = MemoryBudget::unlimited();
    let indexes: Vec<(IndexKind, AnyIndex)> =
        [IndexKind::SampledPgm, IndexKind::Pgm, IndexKind::BTree]
            .into_iter()
            .map(|k| Ok((k, AnyIndex::build(keys, &AnyParams::default_for(k))?)))
            .collect::<anyhow::Result<_>>()?;
    let hashed = HashTable::build(&outer, ReadMode::Buffered, 1 << 16, &budget)?;
    let inlj = |index, io_depth| Method::Inlj {
        index,
        options: InljOptions {
            mode,
            io_depth,
            ..InljOptions::default()
        },
    };
    let mut runs: Vec<(String, Method<'_>)> = indexes
        .iter()
        .map(|(kind, index)| (format!("inlj:{kind}"), inlj(index, 1)))
        .collect();
    // Beyond paper 1: 32 window reads in flight at once.
    runs.push((
        "inlj:sampled-pgm, 32 in flight".to_string(),
        inlj(&indexes[0].1, 32),
    ));
    runs.push((
        "merge".to_string(),
        Method::Merge {
            mode,
            read_tuples: 1 << 16,
            budget: &budget,
        },
    ));
    runs.push((
        "hash (built)".to_string(),
        Method::Hash {
            table: &hashed,
            mode,
            read_tuples: 1 << 16,
        },
    ));
    for (name, method) in &runs {
        cache::drop_file_pages(table.path())?;
        cache::drop_file_pages(outer.path())?;
        let t = Instant::now();
        let (_, stats) = parallel_join::<CountSink>(&outer, table, method, 1)?;
        say!(
            "   {:<32} {:>8} {:>10.1} {:>14} {:>12}",
            name,
            stats.output,
            t.elapsed().as_secs_f64() * 1e3,
            stats.inner_io.blocks,
            stats.inner_io.reads
        );
    }
    // ALEX on disk (paper 1, Fig. 5): its data nodes hold the tuples, so its file is the
    // inner side; choosing the nodes and writing the file are not timed.
    let alex_path = dir.join("lognormal.alex");
    alex::file::build(table, keys, &alex_path, &AlexParams::default(), |_| {})?;
    let alex_file = AlexFile::open(&alex_path)?;
    cache::drop_file_pages(&alex_path)?;
    cache::drop_file_pages(outer.path())?;
    let t = Instant::now();
    let stats =
        lidx::join::alex::inlj(&outer, &alex_file, mode, 1 << 16, &mut CountSink::default())?;
    say!(
        "   {:<32} {:>8} {:>10.1} {:>14} {:>12}",
        "inlj:alex (its own file)",
        stats.output,
        t.elapsed().as_secs_f64() * 1e3,
        stats.inner_io.blocks,
        stats.inner_io.reads
    );
    Ok(())
}

/// Section 7: the lognormal table shuffled, indexed by learned partitioning and by a B+tree
/// built by inserts under a memory limit, sorted back, and joined unsorted.
fn unsorted(dir: &Path, sorted: &Path) -> anyhow::Result<()> {
    say!(
        "\n7. Unsorted tables (paper 1, section 4.4): the lognormal table shuffled, under a 4 MiB limit"
    );
    let table = Table::open(sorted)?;
    let mut tuples = Vec::with_capacity(usize::try_from(table.len()).unwrap_or(0));
    table.scan(|chunk| {
        tuples.extend_from_slice(chunk);
        Ok(())
    })?;
    let shuffled_path = dir.join("lognormal.shuffled.tbl");
    write_shuffled(tuples, 42, &shuffled_path, |_| {})?;
    let shuffled = Table::open(&shuffled_path)?;
    let limit = 4u64 << 20;
    let t = Instant::now();
    let (index, report) = partition::build(
        &shuffled,
        &dir.join("lognormal.pidx"),
        &PartitionParams::default(),
        &MemoryBudget::new(limit),
        |_| {},
    )?;
    let partition_s = t.elapsed().as_secs_f64();
    let skew = index.skew();
    say!(
        "   partition index: {} partitions (largest {} tuples, {} empty) from a PGM on {} sampled keys; {:.0} ms, write amplification {:.2}",
        skew.partitions,
        skew.largest,
        skew.empty,
        report.sampled,
        partition_s * 1e3,
        report.write_amplification()
    );
    let t = Instant::now();
    let tree = btree::build(
        &shuffled,
        &dir.join("lognormal.bti"),
        &MemoryBudget::new(limit),
        |_| {},
    )?;
    say!(
        "   B+tree by inserts: {} leaves, {} leaf writes through a pool of {}; {:.0} ms, write amplification {:.1}",
        tree.leaves,
        tree.stats.leaf_writes,
        tree.frames,
        t.elapsed().as_secs_f64() * 1e3,
        tree.write_amplification()
    );
    let options = SortOptions {
        scratch_dir: dir.to_path_buf(),
        budget: MemoryBudget::new(limit),
    };
    let t = Instant::now();
    let sorted_back = dir.join("lognormal.sorted-back.tbl");
    let s = sort_table(&shuffled, &sorted_back, &options, |_, _| {})?;
    let same = std::fs::read(&sorted_back)? == std::fs::read(sorted)?;
    say!(
        "   external merge sort: {} runs, {} merge pass(es), {:.0} ms; the very table it came from: {}",
        s.runs,
        s.merge_passes,
        t.elapsed().as_secs_f64() * 1e3,
        if same { "yes" } else { "NO" }
    );
    // A 1/100 sample, shuffled, joined with the shuffled table through both routes.
    let keys = table.read_keys()?;
    let outer_path = dir.join("lognormal.sample.shuffled.tbl");
    let sample = lidx::data::sample::random_fraction(&keys, 0.01, 7)?;
    write_shuffled(
        tuples_from_keys(&sample, ValueSource::RowId),
        7,
        &outer_path,
        |_| {},
    )?;
    for method in JoinMethod::UNSORTED {
        let request = JoinRequest {
            memory: Some(MemoryBudget::new(limit)),
            ..JoinRequest::new(&outer_path, shuffled.path(), Some(method))
        };
        let r = lidx::join::driver::run(&request, |_| {})?.record;
        say!(
            "   join {:<14} {:>8} output tuples in {:>6.1} ms (indexes built or tables sorted in {:.0} ms)",
            method.to_string(),
            r.output_tuples,
            r.join_s * 1e3,
            r.build_s.unwrap_or(0.0) * 1e3
        );
    }
    Ok(())
}

/// Section 8: the paper's records in a key-value file of each layout, their indexes, and
/// a short closed-loop run of concurrent gets through a block cache smaller than the
/// SSTable's index.
fn key_value(dir: &Path) -> anyhow::Result<()> {
    say!(
        "\n8. Key-value files (paper 4, Bigtable): 20000 records of 1 KiB, 32 KiB blocks, random 20-digit keys"
    );
    let tsv = dir.join("records.tsv");
    generate_tsv(20_000, 1024, 42, &tsv, |_| {})?;
    let input = RecordInput::tsv(&tsv)?;
    let records = input.records();
    let keys: Vec<&[u8]> = records.iter().map(|r| r.key).collect();
    let cache_bytes = 16 << 10;
    for layout in [Layout::Learned, Layout::Sstable] {
        let path = dir.join(format!("records-{layout}.kv"));
        let options = BuildOptions {
            layout,
            ..BuildOptions::default()
        };
        let report = lidx::kv::build(&records, &options, &path)?;
        let file = KvFile::open(&path, ReadMode::Buffered)?;
        let store = clients::KvStore {
            file: &file,
            cache: BlockCache::new(cache_bytes),
        };
        let load = clients::Load {
            op: clients::Op::Get,
            threads: 4,
            warmup: Duration::from_millis(50),
            measure: Duration::from_millis(250),
            seed: 42,
        };
        let m = clients::closed_loop(&store, &keys, &load)?;
        let b = &report.data_blocks;
        say!(
            "   {:<8} {} blocks (p99 {}, {} empty); index {} on disk, {} in memory; gets read {:.2} index + {:.2} data blocks, p99 {} µs",
            layout.name(),
            b.blocks,
            human_bytes(b.p99),
            b.empty,
            human_bytes(report.index_disk_bytes),
            human_bytes(file.index_memory_bytes()),
            m.io.index_block_reads as f64 / m.ops.max(1) as f64,
            m.io.data_block_reads as f64 / m.ops.max(1) as f64,
            m.latency.value_at_quantile(0.99)
        );
    }
    say!(
        "   (4 clients, a {} block cache; `lidx experiment bigtable` measures 15 x 100 clients at several cache and table sizes)",
        human_bytes(cache_bytes)
    );
    Ok(())
}

/// Section 8b: paper 2's layers tuned to the storage, and cold gets timed under the NFS
/// profile against the B+tree over the same pages.
fn tuned_layers(dir: &Path) -> anyhow::Result<()> {
    use lidx::kv::Reader;
    use lidx::kv::write::sketch_tuned;
    use lidx::storage::profile::{LatencyModel, named_profile};
    say!("\n8b. Layers tuned to the storage (paper 2, AirIndex): the same records in 4 KiB pages");
    let input = RecordInput::tsv(&dir.join("records.tsv"))?;
    let records = input.records();
    let nfs = named_profile("nfs").context("the nfs profile")?.random;
    let mut files = Vec::new();
    for (name, layout) in [("tuned for nfs", Layout::Tuned), ("btree", Layout::Btree)] {
        let path = dir.join(format!("records-{}.kv", layout.name()));
        let options = BuildOptions {
            layout,
            block_size: 4096,
            profile: Some(nfs),
            ..BuildOptions::default()
        };
        lidx::kv::build(&records, &options, &path)?;
        files.push((name, path));
    }
    for profile in ["ssd", "nfs"] {
        let options = BuildOptions {
            layout: Layout::Tuned,
            block_size: 4096,
            profile: named_profile(profile).map(|p| p.random),
            ..BuildOptions::default()
        };
        let t = sketch_tuned(&records, &options)?;
        if let Some(c) = t.candidates.first() {
            say!(
                "   tuned for {profile:<4} {} layer(s), layer 1 within {} ({}); predicted cold get {:.2} ms",
                c.deltas.len(),
                human_bytes(c.deltas[0]),
                human_bytes(c.bytes[0]),
                c.cost_us / 1e3
            );
        }
    }
    let key = records[records.len() / 3].key;
    for (name, path) in &files {
        let file = KvFile::open(path, ReadMode::Buffered)?;
        let cache = BlockCache::new(0);
        let mut reader = Reader::new(&file, &cache);
        reader.set_latency(Some(LatencyModel::timed(nfs)));
        let started = Instant::now();
        let found = reader.get(key)?.is_some();
        let s = reader.stats();
        say!(
            "   {name:<13} a cold get under nfs (50 ms + 12 MB/s a read): {} read(s), {:.1} ms{}",
            s.io.reads,
            started.elapsed().as_secs_f64() * 1e3,
            if found { "" } else { " (not found!)" }
        );
    }
    say!("   (`lidx experiment airindex` measures cold and warm against five baselines)");
    Ok(())
}

/// Section 8c: paper 3's updatable indexes on its balanced workload, each checked against
/// a `BTreeMap` as it runs.
fn updatable_indexes() -> anyhow::Result<()> {
    use lidx::updatable::{Kind, Workload};
    use lidx_bench::updatable::{RunOptions, run};
    say!(
        "\n8c. Updatable indexes (paper 3): 200K lognormal keys, half bulk-loaded, then 50% lookups / 50% inserts (the first 20K also checked against a BTreeMap)"
    );
    let keys = generate(&GenParams::new(Distribution::Lognormal, 200_000, 42))?;
    for kind in Kind::ALL {
        let options = RunOptions {
            kind,
            workload: Workload::Balanced,
            ops: None,
            scan_len: 100,
            seed: 42,
            verify: true,
            sample_every: 100,
        };
        // A checked run (every answer against a BTreeMap, the structure walked), then a
        // timed one.
        run(
            &keys,
            None,
            &RunOptions {
                ops: Some(20_000),
                ..options
            },
        )?;
        let r = run(
            &keys,
            None,
            &RunOptions {
                verify: false,
                ..options
            },
        )?;
        say!(
            "   {:<12} {:>5.2} M ops/s, p99 {:>5} ns, {} in memory",
            kind.name(),
            r.ops_per_s / 1e6,
            r.p99_ns,
            human_bytes(r.size_bytes)
        );
    }
    say!("   (`lidx updatable run` runs any kind on any of paper 3's workloads)");
    Ok(())
}

/// Section 8d: R and S in RocksDB joined by a few of paper 5's 29 methods, each building
/// the secondary index it needs, and the cost model's pick.
#[cfg(feature = "rocksdb")]
fn lsm_joins(dir: &Path) -> anyhow::Result<()> {
    use lidx_lsm::joins::{self, LsmConfig, LsmDb, Workload, cost};
    say!(
        "\n8d. Joins over LSM-trees (paper 5): R and S of 50K rows in RocksDB, ε 0.8, d 4, 1 MiB for the sort and hash joins"
    );
    let workload = Workload {
        rows: 50_000,
        match_rate: 0.8,
        dup_attr: 4,
        ..Workload::default()
    };
    // The paper's 16 MB write buffer and join memory, scaled down with the table.
    let config = LsmConfig {
        write_buffer: 256 << 10,
        join_memory: 1 << 20,
        ..LsmConfig::default()
    };
    let (mut db, _) = LsmDb::create(&dir.join("lsm"), config, workload)?;
    db.settle()?;
    for name in [
        "INLJ-P",
        "SJ-P",
        "HJ-P",
        "HJ-N",
        "INLJ-NS/S-Eager",
        "INLJ-NS/V-Lazy",
        "SJ-SS/S-Comp",
    ] {
        let method: joins::Method = name.parse().map_err(anyhow::Error::msg)?;
        let r = joins::join(&mut db, method, &mut CountSink::default())?;
        let built = match r.index_build_s {
            0.0 => String::new(),
            s => format!(", its indexes built first in {s:.3} s"),
        };
        let spilled = match r.scratch_bytes {
            0 => String::new(),
            b => format!(", {} spilled", human_bytes(b)),
        };
        say!(
            "   {name:<16} {:>7} pairs in {:.3} s{built}{spilled}",
            r.output,
            r.join_s
        );
    }
    let inputs = cost::CostInputs::of(&db, 1, 0)?;
    if let Some(pick) = cost::advise(&inputs, &lidx::storage::profile::assumed_ssd()).first() {
        say!(
            "   the cost model (Tables 2-4, cold SSD assumed) picks {} for one join",
            pick.method
        );
    }
    say!("   (`lidx lsm --help`; `lidx experiment lsm-joins` runs Figs. 5-12 and 13c)");
    Ok(())
}

/// Section 9: a short measurement of the disk under the demo's files.
fn disk_profile(ctx: &Context, dir: &Path) -> anyhow::Result<()> {
    say!(
        "\n9. The disk under these files (short run; `lidx bench disk --dir D` for the full profile)"
    );
    let options = DiskBenchOptions {
        dir: dir.to_path_buf(),
        file_size: 64 << 20,
        read_sizes: vec![4096, 64 << 10, 1 << 20, 4 << 20],
        time_per_point: Duration::from_millis(100),
        seed: 42,
        queue_depths: vec![1, 8],
    };
    match disk::measure(&options, &ctx.progress()) {
        Ok(profile) => say_text!(disk::profile_table(&profile)),
        Err(e) => say!("   skipped: {e:#}"),
    }
    Ok(())
}
