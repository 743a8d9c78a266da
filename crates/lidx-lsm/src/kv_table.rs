//! The records of a key-value file in RocksDB (paper 4's baseline through a real system):
//! written in key order into one SST file by RocksDB's own `SstFileWriter`, ingested into a
//! database of its own, and read with gets and iterator scans.
//!
//! The table is set up as Bigtable's SSTable, and as RocksDB's documentation recommends for
//! point reads: blocks of the same target size, a two-level index (`kTwoLevelIndexSearch`:
//! index partitions in the file, the top level pinned in memory), a full Bloom filter of
//! `filter_bits_per_key` bits a key partitioned like the index, index and filter blocks
//! read through the block cache (`cache_index_and_filter_blocks`, at high priority, RocksDB's
//! default), statistics only where asked (they cost every operation some CPU), `O_DIRECT`
//! reads where asked. A cache of 0 bytes means RocksDB's "no block cache": the table reader
//! then keeps its whole index and filter in memory and reads only data blocks.

use std::path::{Path, PathBuf};

use lidx::kv::Compression;
use lidx::kv::write::Record;
use rocksdb::perf::{PerfContext, PerfMetric, PerfStatsLevel, set_perf_stats};
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, DB, DBCompressionType,
    IngestExternalFileOptions, Options, ReadOptions, SstFileWriter,
};

use crate::{Result, rocks};

/// How the records are stored and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RocksKvOptions {
    /// Target data block size in bytes.
    pub block_size: usize,
    /// Block compression (none or LZ4).
    pub compression: Compression,
    /// Block cache budget in bytes; 0: no block cache.
    pub cache_bytes: u64,
    /// Read with `O_DIRECT`.
    pub direct: bool,
    /// Bits a key of the Bloom filter (RocksDB's recommended 10); 0: no filter.
    pub filter_bits_per_key: u32,
    /// Keep RocksDB's statistics (its tickers, for [`RocksKv::reads`]); off while timing.
    pub statistics: bool,
}

impl RocksKvOptions {
    /// The settings in a few words, for a study's rows.
    pub fn describe(&self) -> String {
        let filter = match self.filter_bits_per_key {
            b if b > 0 => format!("Bloom {b} bits/key, partitioned"),
            _ => "no filter".into(),
        };
        format!(
            "{} B blocks, two-level index, {filter}, {}, a cache of {} B{}, statistics {}",
            self.block_size,
            match self.compression {
                Compression::None => "uncompressed",
                Compression::Lz4 => "lz4",
            },
            self.cache_bytes,
            if self.direct { ", O_DIRECT" } else { "" },
            if self.statistics { "on" } else { "off" },
        )
    }
}

/// A RocksDB database holding one key-value file's records.
pub struct RocksKv {
    db: DB,
    options: Options,
    cache: Option<Cache>,
    path: PathBuf,
}

/// What RocksDB counted since the database was opened (its statistics tickers). Only the
/// index block counts are kept: RocksDB 7.8's data block tickers stay at 0 for gets that
/// demonstrably read and cache data blocks, so data blocks are counted per thread
/// ([`ThreadReads`]) as all blocks read less these.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RocksReads {
    /// Index block misses of the block cache (each an index block read from the file).
    pub index_block_reads: u64,
    /// Index block hits of the block cache.
    pub index_block_hits: u64,
}

fn db_options(o: &RocksKvOptions) -> (Options, Option<Cache>) {
    let mut table = BlockBasedOptions::default();
    table.set_block_size(o.block_size);
    table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
    table.set_metadata_block_size(o.block_size);
    if o.filter_bits_per_key > 0 {
        table.set_bloom_filter(f64::from(o.filter_bits_per_key), false);
        table.set_partition_filters(true);
    }
    let cache = match o.cache_bytes {
        0 => {
            table.disable_cache();
            None
        }
        bytes => {
            let cache = Cache::new_lru_cache(usize::try_from(bytes).unwrap_or(usize::MAX));
            table.set_block_cache(&cache);
            table.set_cache_index_and_filter_blocks(true);
            table.set_pin_top_level_index_and_filter(true);
            Some(cache)
        }
    };
    let mut options = Options::default();
    options.create_if_missing(true);
    options.set_block_based_table_factory(&table);
    options.set_compression_type(match o.compression {
        Compression::None => DBCompressionType::None,
        Compression::Lz4 => DBCompressionType::Lz4,
    });
    options.set_use_direct_reads(o.direct);
    if o.statistics {
        options.enable_statistics();
    }
    (options, cache)
}

impl RocksKv {
    /// Writes `records` (keys strictly increasing) into a new database at `dir` (which must
    /// not exist): one SST file by `SstFileWriter`, ingested. Returns the SST file's bytes.
    pub fn build(records: &[Record<'_>], dir: &Path, o: &RocksKvOptions) -> Result<u64> {
        if dir.exists() {
            return Err(lidx::Error::param(
                "directory",
                format!(
                    "{} exists; RocksDB is built into a new directory",
                    dir.display()
                ),
            )
            .into());
        }
        let (options, _cache) = db_options(o);
        let sst = dir.with_extension("sst");
        let mut writer = SstFileWriter::create(&options);
        writer
            .open(&sst)
            .map_err(rocks(&sst, "create the SST file"))?;
        for r in records {
            writer
                .put(r.key, r.value)
                .map_err(rocks(&sst, "write a record to"))?;
        }
        let bytes = writer.file_size();
        if !records.is_empty() {
            writer.finish().map_err(rocks(&sst, "finish"))?;
        }
        drop(writer);
        let db = DB::open(&options, dir).map_err(rocks(dir, "create the database"))?;
        if !records.is_empty() {
            let mut ingest = IngestExternalFileOptions::default();
            ingest.set_move_files(true);
            db.ingest_external_file_opts(&ingest, vec![&sst])
                .map_err(rocks(dir, "ingest the SST file"))?;
        }
        db.flush().map_err(rocks(dir, "flush"))?;
        Ok(bytes)
    }

    /// Opens the database at `dir` (made by [`build`](Self::build)) with `o`'s cache and
    /// reads.
    pub fn open(dir: &Path, o: &RocksKvOptions) -> Result<RocksKv> {
        let (options, cache) = db_options(o);
        let db = DB::open_for_read_only(&options, dir, false)
            .map_err(rocks(dir, "open the database"))?;
        Ok(RocksKv {
            db,
            options,
            cache,
            path: dir.to_path_buf(),
        })
    }

    /// The value of `key` into `value` (cleared first); `false` when absent.
    pub fn get_into(&self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        value.clear();
        Ok(self
            .get_with(key, |v| value.extend_from_slice(v))?
            .is_some())
    }

    /// `visit` applied to the value of `key`, borrowed from RocksDB's pinned block with no
    /// copy (`get_pinned`); `None` when absent.
    pub fn get_with<R>(&self, key: &[u8], visit: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        Ok(self
            .db
            .get_pinned(key)
            .map_err(rocks(&self.path, "get a key"))?
            .map(|v| visit(&v)))
    }

    /// Visits up to `rows` records in key order from the first key at least `from` (with
    /// RocksDB's own iterator readahead, as configured by default); returns how many.
    pub fn scan(
        &self,
        from: &[u8],
        rows: usize,
        mut visit: impl FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut it = self.db.raw_iterator_opt(ReadOptions::default());
        it.seek(from);
        let mut n = 0;
        while n < rows && it.valid() {
            if let (Some(k), Some(v)) = (it.key(), it.value()) {
                visit(k, v);
            }
            n += 1;
            it.next();
        }
        it.status().map_err(rocks(&self.path, "scan"))?;
        Ok(n)
    }

    /// The bytes of the index RocksDB holds in memory outside the block cache (table
    /// readers), and the bytes the block cache holds pinned (the top level of the index).
    pub fn index_memory_bytes(&self) -> u64 {
        self.table_reader_bytes()
            + self
                .cache
                .as_ref()
                .map_or(0, |c| c.get_pinned_usage() as u64)
    }

    /// The bytes RocksDB's table readers hold outside the block cache (with a cache and
    /// `cache_index_and_filter_blocks`, their properties and bookkeeping, not the index;
    /// without one, the whole index and filter).
    pub fn table_reader_bytes(&self) -> u64 {
        self.db
            .property_int_value("rocksdb.estimate-table-readers-mem")
            .ok()
            .flatten()
            .unwrap_or(0)
    }

    /// The SST files' data blocks, data bytes and index bytes, from RocksDB's aggregated
    /// table properties (zeros where it reports none).
    pub fn table_figures(&self) -> TableFigures {
        let text = self
            .db
            .property_value("rocksdb.aggregated-table-properties")
            .ok()
            .flatten()
            .unwrap_or_default();
        // "# data blocks=32259; ...; data block size=...; index block size (user-key? 0,
        // delta-value? 0)=...; ..."
        let field = |name: &str| -> u64 {
            text.split(';')
                .map(str::trim)
                .find(|f| f.starts_with(name))
                .and_then(|f| f.rsplit('=').next())
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        TableFigures {
            data_blocks: field("# data blocks"),
            data_bytes: field("data block size"),
            index_bytes: field("index block size"),
            filter_bytes: field("filter block size"),
        }
    }

    /// RocksDB's counters since the database was opened (its statistics tickers); `None`
    /// when opened without statistics.
    pub fn reads(&self) -> Option<RocksReads> {
        let text = self.options.get_statistics()?;
        let ticker = |name: &str| -> u64 {
            text.lines()
                .find_map(|l| {
                    let rest = l.strip_prefix(name)?.strip_prefix(" COUNT : ")?;
                    rest.trim().parse().ok()
                })
                .unwrap_or(0)
        };
        Some(RocksReads {
            index_block_reads: ticker("rocksdb.block.cache.index.miss"),
            index_block_hits: ticker("rocksdb.block.cache.index.hit"),
        })
    }
}

/// An SST file's figures as RocksDB reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableFigures {
    /// Data blocks.
    pub data_blocks: u64,
    /// Bytes of the data blocks.
    pub data_bytes: u64,
    /// Bytes of the index (all partitions and the top level).
    pub index_bytes: u64,
    /// Bytes of the Bloom filter (all partitions).
    pub filter_bytes: u64,
}

/// Per-thread block counts of RocksDB's perf context: blocks read from the file (index and
/// data together) and their bytes, for the operations between two calls.
pub struct ThreadReads {
    context: PerfContext,
}

impl ThreadReads {
    /// Turns counting on for this thread.
    pub fn start() -> ThreadReads {
        set_perf_stats(PerfStatsLevel::EnableCount);
        let mut context = PerfContext::default();
        context.reset();
        ThreadReads { context }
    }

    /// Blocks read and their bytes since the last call, then resets.
    pub fn take(&mut self) -> (u64, u64) {
        let blocks = self.context.metric(PerfMetric::BlockReadCount);
        let bytes = self.context.metric(PerfMetric::BlockReadByte);
        self.context.reset();
        (blocks, bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn gets_and_scans_equal_the_records_with_and_without_a_cache() {
        let dir = tempfile::tempdir().expect("temp dir");
        let map: BTreeMap<Vec<u8>, Vec<u8>> = (0..3000u32)
            .map(|i| {
                // Values that do not compress, so that blocks hold few records.
                let value = (0..100u32)
                    .map(|j| (i.wrapping_mul(2_654_435_761).wrapping_add(j * 40_503) >> 13) as u8)
                    .collect();
                (format!("{:08}", i * 7).into_bytes(), value)
            })
            .collect();
        let records: Vec<Record<'_>> = map
            .iter()
            .map(|(k, v)| Record { key: k, value: v })
            .collect();
        let db = dir.path().join("db");
        let mut reads_by_cache = Vec::new();
        for (i, cache_bytes) in [0u64, 1 << 20].into_iter().enumerate() {
            let o = RocksKvOptions {
                block_size: 4096,
                compression: Compression::None,
                cache_bytes,
                direct: false,
                filter_bits_per_key: 10,
                statistics: true,
            };
            if i == 0 {
                assert!(RocksKv::build(&records, &db, &o).expect("build") > 0);
            }
            let kv = RocksKv::open(&db, &o).expect("open");
            let mut value = Vec::new();
            let mut thread = ThreadReads::start();
            for (k, v) in map.iter().step_by(13) {
                assert!(kv.get_into(k, &mut value).expect("get"));
                assert_eq!(&value, v);
            }
            let (blocks, bytes) = thread.take();
            assert!(blocks > 0 && bytes > 0);
            reads_by_cache.push(blocks);
            assert!(!kv.get_into(b"00000001", &mut value).expect("get"));
            let mut got = Vec::new();
            let n = kv
                .scan(b"00000100", 50, |k, v| got.push((k.to_vec(), v.to_vec())))
                .expect("scan");
            let expected: Vec<_> = map
                .range(b"00000100".to_vec()..)
                .take(50)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(n, 50);
            assert_eq!(got, expected);
            assert!(kv.index_memory_bytes() > 0);
            let t = kv.table_figures();
            assert!(
                t.data_blocks > 10 && t.data_bytes > 300_000 && t.index_bytes > 0,
                "{t:?}"
            );
            if cache_bytes > 0 {
                let reads = kv.reads().expect("statistics are on");
                assert!(reads.index_block_reads > 0, "{reads:?}");
            }
        }
        // 231 gets over 3000 records: the cache saves most block reads.
        assert!(
            reads_by_cache[1] * 2 < reads_by_cache[0],
            "{reads_by_cache:?}"
        );
    }
}

#[cfg(test)]
mod filter_tests {
    use super::*;

    /// Without a block cache a get reads an index partition and its data block, and with a
    /// Bloom filter a filter partition too (every key asked for exists: the filter passes).
    #[test]
    fn a_bloom_filter_is_built_and_read_by_gets_of_present_keys() {
        let dir = tempfile::tempdir().expect("temp dir");
        let keys: Vec<String> = (0..5000).map(|i| format!("key{i:06}")).collect();
        let value = [7u8; 200];
        let records: Vec<Record<'_>> = keys
            .iter()
            .map(|k| Record {
                key: k.as_bytes(),
                value: &value,
            })
            .collect();
        for bits in [0, 10] {
            let o = RocksKvOptions {
                block_size: 4096,
                compression: Compression::None,
                cache_bytes: 0,
                direct: false,
                filter_bits_per_key: bits,
                statistics: false,
            };
            let db = dir.path().join(format!("db{bits}"));
            RocksKv::build(&records, &db, &o).expect("build");
            let kv = RocksKv::open(&db, &o).expect("open");
            assert_eq!(kv.table_figures().filter_bytes > 0, bits > 0);
            assert!(kv.reads().is_none(), "statistics off");
            let mut got = Vec::new();
            let mut thread = ThreadReads::start();
            for k in keys.iter().step_by(50) {
                assert!(kv.get_into(k.as_bytes(), &mut got).expect("get"));
            }
            let (blocks, _) = thread.take();
            let per_get = if bits > 0 { 3 } else { 2 };
            assert_eq!(blocks, per_get * 100, "{bits} bits a key");
        }
    }
}

#[cfg(test)]
mod lz4_tests {
    use super::*;

    #[test]
    fn lz4_blocks_round_trip() {
        let dir = tempfile::tempdir().expect("temp dir");
        let keys: Vec<String> = (0..500).map(|i| format!("k{i:05}")).collect();
        let records: Vec<Record<'_>> = keys
            .iter()
            .map(|k| Record {
                key: k.as_bytes(),
                value: b"a value that compresses, a value that compresses",
            })
            .collect();
        let o = RocksKvOptions {
            block_size: 4096,
            compression: Compression::Lz4,
            cache_bytes: 1 << 20,
            direct: false,
            filter_bits_per_key: 0,
            statistics: false,
        };
        assert!(o.describe().contains("no filter, lz4"), "{}", o.describe());
        let db = dir.path().join("db");
        RocksKv::build(&records, &db, &o).expect("build");
        let kv = RocksKv::open(&db, &o).expect("open");
        let t = kv.table_figures();
        assert!(t.data_bytes < 500 * 50, "LZ4 compressed nothing: {t:?}");
        let mut value = Vec::new();
        assert!(kv.get_into(b"k00321", &mut value).expect("get"));
        assert_eq!(value, records[321].value);
    }
}

#[cfg(test)]
mod index_size_tests {
    use lidx::kv::{BuildOptions, KvFile, Layout};
    use lidx::storage::ReadMode;

    use super::*;

    /// On the same records, lidx's SSTable index (separators, prefix compression, delta
    /// handles) takes at most 1.2× the bytes of RocksDB's two-level index.
    #[test]
    fn the_sstable_index_is_within_a_fifth_of_rocksdb_s() {
        let dir = tempfile::tempdir().expect("temp dir");
        // Paper 4's keys: random integers written as 20 digits (a splitmix sequence).
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut keys: Vec<String> = (0..40_000)
            .map(|_| {
                x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                format!("{:020}", z ^ (z >> 31))
            })
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let value = [b'v'; 100];
        let records: Vec<Record<'_>> = keys
            .iter()
            .map(|k| Record {
                key: k.as_bytes(),
                value: &value,
            })
            .collect();
        for block_size in [4096usize, 32 * 1024] {
            let o = RocksKvOptions {
                block_size,
                compression: Compression::None,
                cache_bytes: 0,
                direct: false,
                filter_bits_per_key: 0,
                statistics: false,
            };
            let db = dir.path().join(format!("db{block_size}"));
            RocksKv::build(&records, &db, &o).expect("build");
            let rocks = RocksKv::open(&db, &o).expect("open").table_figures();
            let path = dir.path().join(format!("sst{block_size}.kv"));
            let build = BuildOptions {
                layout: Layout::Sstable,
                block_size: block_size as u64,
                ..BuildOptions::default()
            };
            lidx::kv::build(&records, &build, &path).expect("build");
            let file = KvFile::open(&path, ReadMode::Buffered).expect("open");
            let info = lidx::kv::info(&file).expect("info");
            let ratio = info.index_disk_bytes as f64 / rocks.index_bytes as f64;
            assert!(
                ratio <= 1.2,
                "{block_size} B blocks: lidx {} B over {} blocks, RocksDB {} B over {} blocks",
                info.index_disk_bytes,
                info.data_blocks.blocks,
                rocks.index_bytes,
                rocks.data_blocks
            );
            eprintln!(
                "{block_size} B blocks: lidx {} B, RocksDB {} B ({ratio:.2}×)",
                info.index_disk_bytes, rocks.index_bytes
            );
        }
    }
}
