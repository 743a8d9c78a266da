//! Valid inputs for each target, made by lidx's own writers from a few small key sets, so a
//! fuzzer starts past the magic numbers, versions and checksums. `lidx-fuzz-seeds` writes
//! them as cargo-fuzz's corpus; the stable test corrupts them.

use std::path::Path;

use lidx::data::sosd::write_keys;
use lidx::index::file::KeysFingerprint;
use lidx::index::{AnyIndex, AnyParams, IndexKind};
use lidx::kv::{BuildOptions, Layout, Record};
use lidx::memory::MemoryBudget;
use lidx::partition::{Entries, PartitionParams};
use lidx::storage::profile::{
    AffineCost, BANDWIDTH_MB_S, LATENCY_US, Measurement, Pattern, StorageProfile, assumed_hdd,
    assumed_ssd, named_profile,
};
use lidx::storage::table::build_from_keys;
use lidx::storage::{BLOCK_SIZE, Table, ValueSource, paper1};
use lidx::updatable::alex::AlexParams;
use lidx_lsm::joins::{LsmConfig, LsmDb, Method, Workload};

/// Key sets of every shape the formats treat apart: empty, one key, duplicates, unsorted,
/// both extremes, exactly one block of tuples, one more, and three blocks' worth.
pub fn key_sets() -> Vec<Vec<u64>> {
    vec![
        vec![],
        vec![42],
        vec![1, 2, 3],
        vec![5, 5, 7],
        vec![9, 3, 7, 1],
        vec![0, u64::MAX],
        (0..256).map(|i| i * 3).collect(),
        (0..257).map(|i| i * 3).collect(),
        spread(600),
    ]
}

/// `n` distinct keys spread over the whole `u64` range, in a scrambled order.
fn spread(n: u64) -> Vec<u64> {
    (1..=n)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect()
}

/// `n` distinct keys spread over the whole `u64` range, sorted.
fn sorted_spread(n: u64) -> Vec<u64> {
    let mut keys = spread(n);
    keys.sort_unstable();
    keys
}

/// Writes a file with `write` in a scratch directory and returns its bytes (`None` when
/// lidx refuses to write it, as for an empty table).
fn bytes_of(write: impl FnOnce(&Path) -> lidx::Result<()>) -> Option<Vec<u8>> {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let path = dir.path().join("seed");
    write(&path).ok()?;
    Some(std::fs::read(&path).expect("read the seed back"))
}

/// `.tbl` files of every key set (values: row numbers).
pub fn tables() -> Vec<Vec<u8>> {
    key_sets()
        .iter()
        .filter_map(|keys| {
            bytes_of(|p| build_from_keys(keys, ValueSource::RowId, p, |_| {}).map(drop))
        })
        .collect()
}

/// The header blocks of [`tables`].
pub fn table_headers() -> Vec<Vec<u8>> {
    tables()
        .into_iter()
        .map(|mut t| {
            t.truncate(BLOCK_SIZE);
            t
        })
        .collect()
}

/// SOSD key files of every key set.
pub fn key_files() -> Vec<Vec<u8>> {
    key_sets()
        .iter()
        .filter_map(|keys| bytes_of(|p| write_keys(p, keys)))
        .collect()
}

/// Paper 1's files (16-byte header, then key and value) of every key set.
pub fn paper1_files() -> Vec<Vec<u8>> {
    key_sets()
        .iter()
        .map(|keys| {
            let mut out = paper1::encode_header(keys.len() as u64).to_vec();
            for (row, key) in keys.iter().enumerate() {
                out.extend_from_slice(&key.to_le_bytes());
                out.extend_from_slice(&(row as u64).to_le_bytes());
            }
            out
        })
        .collect()
}

/// Index files of every kind over 600 sorted keys, and each kind's payload behind its tag
/// byte (the target's second form).
pub fn index_files() -> Vec<Vec<u8>> {
    let keys = sorted_spread(600);
    let mut seeds = Vec::new();
    for kind in IndexKind::ALL {
        let Ok(index) = AnyIndex::build(&keys, &AnyParams::default_for(kind)) else {
            continue;
        };
        seeds.push(lidx::index::file::encode(
            &index,
            &KeysFingerprint::of(&keys),
        ));
        let mut tagged = vec![kind as u8];
        index.encode(&mut tagged);
        seeds.push(tagged);
    }
    seeds
}

/// Key-value files of each layout: 300 records of 20 to 60 bytes in 512-byte blocks.
pub fn kv_files() -> Vec<Vec<u8>> {
    let keys: Vec<String> = (0..300).map(|i| format!("key{i:04}")).collect();
    let values: Vec<Vec<u8>> = (0..300u32)
        .map(|i| vec![i as u8; 20 + i as usize % 40])
        .collect();
    let records: Vec<Record<'_>> = keys
        .iter()
        .zip(&values)
        .map(|(k, v)| Record {
            key: k.as_bytes(),
            value: v,
        })
        .collect();
    [
        Layout::Learned,
        Layout::Sstable,
        Layout::Tuned,
        Layout::Btree,
    ]
    .into_iter()
    .filter_map(|layout| {
        let options = BuildOptions {
            layout,
            block_size: 512,
            ..BuildOptions::default()
        };
        bytes_of(|p| lidx::kv::build(&records, &options, p).map(drop))
    })
    .collect()
}

/// Partitions files and B+trees built by inserts, of pointers and of tuples, all over
/// 2,000 shuffled tuples.
pub fn partition_files() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let table_path = dir.path().join("unsorted.tbl");
    build_from_keys(&spread(2_000), ValueSource::RowId, &table_path, |_| {})
        .expect("write the unsorted table");
    let table = Table::open(&table_path).expect("open the unsorted table");
    let budget = MemoryBudget::unlimited();
    Entries::ALL
        .into_iter()
        .flat_map(|entries| {
            let params = PartitionParams {
                entries,
                ..PartitionParams::default()
            };
            [
                bytes_of(|p| lidx::partition::build(&table, p, &params, &budget, |_| {}).map(drop)),
                bytes_of(|p| {
                    lidx::partition::btree::build(&table, p, entries, &budget, |_| {}).map(drop)
                }),
            ]
        })
        .flatten()
        .collect()
}

/// ALEX files over 1,000 and over 3 sorted tuples.
pub fn alex_files() -> Vec<Vec<u8>> {
    [sorted_spread(1_000), vec![1, 2, 3]]
        .iter()
        .filter_map(|keys| {
            let dir = tempfile::tempdir().expect("a scratch directory");
            let table_path = dir.path().join("sorted.tbl");
            build_from_keys(keys, ValueSource::RowId, &table_path, |_| {}).ok()?;
            let table = Table::open(&table_path).ok()?;
            bytes_of(|p| {
                lidx::updatable::alex::file::build(&table, keys, p, &AlexParams::default(), |_| {})
                    .map(drop)
            })
        })
        .collect()
}

/// The manifest of a join database loaded with 100 rows, before and after an index of each
/// design was built.
pub fn lsm_manifests() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let db_dir = dir.path().join("db");
    let config = LsmConfig {
        write_buffer: 64 << 10,
        ..LsmConfig::default()
    };
    let workload = Workload {
        rows: 100,
        ..Workload::default()
    };
    let (mut db, _) = LsmDb::create(&db_dir, config, workload).expect("create a join database");
    let manifest = || std::fs::read(db_dir.join("lidx-lsm.json")).expect("read the manifest");
    let mut seeds = vec![manifest()];
    for method in ["INLJ-NS/S-Eager", "INLJ-NS/V-Lazy", "SJ-SS/S-Comp"] {
        let method: Method = method.parse().expect("a method");
        for spec in method.indexes() {
            db.build_index(spec).expect("build an index");
        }
    }
    seeds.push(manifest());
    seeds
}

/// Storage profiles as `lidx bench disk` saves them: lidx's assumed SSD and HDD, paper 2's
/// NFS, a measured-looking one with sequential, random and queue-depth points, and the
/// extremes [`StorageProfile::check`] accepts (no latency and the slowest transfer; the
/// longest latency and the fastest transfer).
pub fn profiles() -> Vec<Vec<u8>> {
    let point = |pattern, read_size: u64, mean_us: f64, depth: u64| Measurement {
        pattern,
        read_size,
        reads: 100 * depth,
        bytes: 100 * depth * read_size,
        seconds: 100.0 * mean_us / 1e6,
        mean_us,
        p50_us: mean_us,
        p99_us: 2.0 * mean_us,
        depth,
    };
    let measured = StorageProfile {
        dir: "/mnt/nvme".to_string(),
        device: "/dev/nvme0n1 (ext4) on /mnt/nvme".to_string(),
        measured_at_unix: 1_764_000_000,
        file_size: 1 << 30,
        measurements: vec![
            point(Pattern::Sequential, 4096, 14.1, 1),
            point(Pattern::Sequential, 1 << 20, 1058.6, 1),
            point(Pattern::Random, 4096, 104.1, 1),
            point(Pattern::Random, 1 << 20, 1148.6, 1),
            point(Pattern::Random, 4096, 110.0, 8),
            point(Pattern::Random, 4096, 130.0, 32),
        ],
        ..assumed_ssd()
    };
    let edge = |latency_us, bandwidth_mb_s| {
        let cost = AffineCost {
            latency_us,
            bandwidth_mb_s,
        };
        StorageProfile {
            sequential: cost,
            random: cost,
            ..assumed_ssd()
        }
    };
    let nfs = named_profile("nfs").expect("paper 2's NFS profile");
    [
        assumed_ssd(),
        assumed_hdd(),
        nfs,
        measured,
        edge(*LATENCY_US.start(), *BANDWIDTH_MB_S.start()),
        edge(*LATENCY_US.end(), *BANDWIDTH_MB_S.end()),
    ]
    .iter()
    .filter_map(|profile| bytes_of(|p| profile.save(p)))
    .collect()
}
