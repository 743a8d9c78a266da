//! The demo's files: key sets, tables, cold window reads, and the exchange with paper 1's
//! code.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use lidx::data::{Distribution, GenParams, KeyFile, generate, write_keys};
use lidx::files::cache;
use lidx::storage::table::build_from_keys;
use lidx::storage::{BlockReader, IoStats, ReadMode, Table, ValueSource, paper1};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{Say, heading};
use crate::progress::Progress;
use crate::text::human_bytes;

/// The key sets, in the order of their files.
const DISTS: [Distribution; 4] = [
    Distribution::Udense,
    Distribution::Lognormal,
    Distribution::Clustered,
    Distribution::Heavytail,
];

/// Section 1: generates the key sets into `dir`; returns their files.
pub(super) fn key_sets(say: &mut Say<'_>, dir: &Path, n: usize) -> anyhow::Result<Vec<PathBuf>> {
    heading(
        say,
        "1. Key sets (seeded synthetic stand-ins for paper 1's data; SOSD files work as they are)",
    )?;
    say!(
        say,
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
            say,
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
pub(super) fn tables(
    say: &mut Say<'_>,
    progress: &dyn Progress,
    dir: &Path,
    key_files: &[PathBuf],
) -> anyhow::Result<Vec<PathBuf>> {
    heading(
        say,
        "2. Tables: 4096-byte header, 256 tuples of 16 bytes per block, a CRC32C per block",
    )?;
    let mut built = Vec::new();
    for (dist, keys_path) in DISTS.iter().zip(key_files) {
        let tbl = dir.join(format!("{dist}.tbl"));
        let t = Instant::now();
        let file = KeyFile::open(keys_path)?;
        progress.start(file.len() as u64, "building", "tuples");
        build_from_keys(file.keys(), ValueSource::RowId, &tbl, |d| {
            progress.position(d)
        })?;
        progress.finish();
        let build_ms = t.elapsed().as_secs_f64() * 1e3;
        let table = Table::open(&tbl)?;
        let t = Instant::now();
        let report = table.verify(|_| {})?;
        say!(
            say,
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
pub(super) fn cold_window_reads(say: &mut Say<'_>, tables: &[PathBuf]) -> anyhow::Result<()> {
    heading(
        say,
        "3. Cold window reads: the blocks under a window of positions, one O_DIRECT read each",
    )?;
    say!(
        say,
        "   (an index returns such windows; paper 1 compares indexes at 256 positions = 1 block)"
    );
    say!(
        say,
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
                say,
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
pub(super) fn paper1_round_trip(say: &mut Say<'_>, dir: &Path, first: &Path) -> anyhow::Result<()> {
    heading(
        say,
        "4. Exchange with paper 1's code: export to its layout and import back",
    )?;
    let p1 = dir.join("udense.paper1");
    let back = dir.join("udense.roundtrip.tbl");
    paper1::export(&Table::open(first)?, &p1, |_| {})?;
    paper1::import(&p1, &back, |_| {})?;
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("{}: cannot read", p.display()));
    let same = read(first)? == read(&back)?;
    say!(
        say,
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
