//! The demo's key-value files: paper 4's records in each layout under concurrent gets, and
//! paper 2's layers tuned to the storage.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use lidx::kv::input::{RecordInput, generate_tsv};
use lidx::kv::write::sketch_tuned;
use lidx::kv::{BlockCache, BuildOptions, KvFile, Layout, Reader};
use lidx::storage::ReadMode;
use lidx::storage::profile::{LatencyModel, named_profile};

use super::{Say, heading};
use crate::clients;
use crate::text::human_bytes;

/// Section 8: the paper's records in a key-value file of each layout, their indexes, and
/// a short closed-loop run of concurrent gets through a block cache smaller than the
/// SSTable's index.
pub(super) fn key_value(say: &mut Say<'_>, dir: &Path) -> anyhow::Result<()> {
    heading(
        say,
        "8. Key-value files (paper 4, Bigtable): 20000 records of 1 KiB, 32 KiB blocks, random 20-digit keys",
    )?;
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
        let m = clients::closed_loop(&store, &keys, &load, None)?;
        let b = &report.data_blocks;
        say!(
            say,
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
        say,
        "   (4 clients, a {} block cache; `lidx experiment bigtable` measures 15 x 100 clients at several cache and table sizes)",
        human_bytes(cache_bytes)
    );
    Ok(())
}

/// Section 8b: paper 2's layers tuned to the storage, and cold gets timed under the NFS
/// profile against the B+tree over the same pages.
pub(super) fn tuned_layers(say: &mut Say<'_>, dir: &Path) -> anyhow::Result<()> {
    heading(
        say,
        "8b. Layers tuned to the storage (paper 2, AirIndex): the same records in 4 KiB pages",
    )?;
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
                say,
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
            say,
            "   {name:<13} a cold get under nfs (50 ms + 12 MB/s a read): {} read(s), {:.1} ms{}",
            s.io.reads,
            started.elapsed().as_secs_f64() * 1e3,
            if found { "" } else { " (not found!)" }
        );
    }
    say!(
        say,
        "   (`lidx experiment airindex` measures cold and warm against five baselines)"
    );
    Ok(())
}
