//! The demo's joins: a sample of a sorted table with the table by every route, cold, and
//! the same over the table shuffled, under a memory limit.

use std::path::Path;
use std::time::Instant;

use lidx::files::cache;
use lidx::index::{AnyIndex, AnyParams, IndexKind};
use lidx::join::{
    CountSink, HashTable, InljOptions, JoinMethod, JoinRequest, Method, parallel_join,
};
use lidx::memory::MemoryBudget;
use lidx::partition::btree;
use lidx::partition::{self, Entries, PartitionParams};
use lidx::sort::{SortOptions, sort_table};
use lidx::storage::table::{build_from_keys, tuples_from_keys, write_shuffled};
use lidx::storage::{BlockReader, ReadMode, Table, ValueSource};
use lidx::updatable::alex::{self, AlexFile, AlexParams};

use super::{Say, heading};

/// Section 6: joins a 1/100 sample of `table` with it by INLJ through three indexes (and with 32
/// reads in flight), sort-merge and hash, cold, counting blocks and reads.
pub(super) fn joins(
    say: &mut Say<'_>,
    dir: &Path,
    table: &Table,
    keys: &[u64],
) -> anyhow::Result<()> {
    heading(
        say,
        "6. Joins: a 1/100 sample of the lognormal table (every outer key matches) with the table, cold, O_DIRECT",
    )?;
    let sample = lidx::data::sample::random_fraction(keys, 0.01, 7)?;
    let outer_path = dir.join("lognormal.sample.tbl");
    build_from_keys(&sample, ValueSource::RowId, &outer_path, |_| {})?;
    let outer = Table::open(&outer_path)?;
    say!(
        say,
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
            say,
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
        say,
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
pub(super) fn unsorted(say: &mut Say<'_>, dir: &Path, sorted: &Path) -> anyhow::Result<()> {
    heading(
        say,
        "7. Unsorted tables (paper 1, section 4.4): the lognormal table shuffled, under a 4 MiB limit",
    )?;
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
        say,
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
        Entries::Pointers,
        &MemoryBudget::new(limit),
        |_| {},
    )?;
    say!(
        say,
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
        say,
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
            say,
            "   join {:<14} {:>8} output tuples in {:>6.1} ms (indexes built or tables sorted in {:.0} ms)",
            method.to_string(),
            r.output_tuples,
            r.join_s * 1e3,
            r.build_s.unwrap_or(0.0) * 1e3
        );
    }
    Ok(())
}
