//! Golden files: every format version as committed must read back to known contents, and
//! the current writers must reproduce the newest byte for byte. FORMAT.md, the version
//! numbers and these files change together; the files of older versions stay.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::path::PathBuf;

use std::path::Path;

use lidx::data::{KeyFile, write_keys};
use lidx::index::file::{self, KeysFingerprint};
use lidx::index::{
    AnyIndex, AnyParams, BTreeParams, IndexKind, PgmParams, RadixSplineParams, RmiParams, RootKind,
    SampledParams, SegmentForm,
};
use lidx::join::record::JoinRecord;
use lidx::kv::{self, BuildOptions, Compression, KeyEncoding, KvFile, Layout, ModelKind, Record};
use lidx::memory::MemoryBudget;
use lidx::partition::btree::{self, InsertedBTree};
use lidx::partition::{self, Entries, PartitionFile, PartitionParams};
use lidx::partition::{Operation, UnsortedRecord};
use lidx::storage::profile::{AffineCost, Measurement, Pattern, StorageProfile};
use lidx::storage::table::key_hash;
use lidx::storage::{OutputTuple, ReadMode, Table, TableWriter, Tuple, paper1};
use lidx::updatable::AlexParams;
use lidx::updatable::alex::{self, AlexFile, AlexReader};

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// The contents of `v1-small.tbl`: 300 sorted keys with a duplicate run, 0 and u64::MAX.
fn small_tuples() -> Vec<Tuple> {
    let mut keys: Vec<u64> = (0..296).map(|i| i * 3).collect();
    keys.extend([900, 900, u64::MAX - 1, u64::MAX]);
    keys.iter()
        .map(|&key| Tuple {
            key,
            value: key_hash(key),
        })
        .collect()
}

/// One index of each kind over the golden table's keys, with small explicit parameters.
fn golden_indexes() -> Vec<(&'static str, AnyParams)> {
    vec![
        (
            "pgm",
            AnyParams::Pgm(PgmParams {
                epsilon: 4,
                epsilon_rec: 2,
                max_height: 3,
            }),
        ),
        (
            "sampled-pgm",
            AnyParams::SampledPgm(SampledParams {
                every: 8,
                inner: PgmParams {
                    epsilon: 1,
                    epsilon_rec: 4,
                    max_height: 1,
                },
            }),
        ),
        (
            "rs",
            AnyParams::RadixSpline(RadixSplineParams {
                epsilon: 4,
                radix_bits: 4,
            }),
        ),
        (
            "rmi",
            AnyParams::Rmi(RmiParams {
                root: RootKind::Cubic,
                branching: 8,
                max_window: 16,
            }),
        ),
        ("btree", AnyParams::BTree(BTreeParams { every: 16 })),
        ("binary", AnyParams::Binary),
    ]
}

fn small_keys() -> Vec<u64> {
    vec![0, 1, 1, 2, 1 << 40, u64::MAX - 2, u64::MAX]
}

#[test]
fn version_1_table_reads_back_and_is_rewritten_byte_for_byte() {
    bless();
    let table = Table::open(&golden("v1-small.tbl")).unwrap();
    let h = table.header();
    assert_eq!(
        (h.count, h.sorted, h.distinct, h.min_key, h.max_key),
        (300, true, false, 0, u64::MAX)
    );
    assert_eq!(table.map().unwrap().tuples(), &small_tuples()[..]);
    table.verify(|_| {}).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("again.tbl");
    let mut w = TableWriter::create(&path).unwrap();
    for t in small_tuples() {
        w.push(t).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(golden("v1-small.tbl")).unwrap()
    );
}

#[test]
fn sosd_file_reads_back_and_is_rewritten_byte_for_byte() {
    bless();
    let file = KeyFile::open(&golden("small.keys")).unwrap();
    assert_eq!(file.keys(), &small_keys()[..]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("again.keys");
    write_keys(&path, &small_keys()).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(golden("small.keys")).unwrap()
    );
}

/// With `LIDX_BLESS=1` in the environment, (re)writes the golden files before the tests
/// compare against them: `LIDX_BLESS=1 cargo test -p lidx --test golden`, once per format
/// version (the same convention as trybuild's `TRYBUILD=overwrite`).
fn bless() {
    if std::env::var_os("LIDX_BLESS").is_none() {
        return;
    }
    let mut w = TableWriter::create(&golden("v1-small.tbl")).unwrap();
    for t in small_tuples() {
        w.push(t).unwrap();
    }
    w.finish().unwrap();
    write_keys(&golden("small.keys"), &small_keys()).unwrap();
    write_output_table(&golden("v1-output.tbl"));
    let table = Table::open(&golden("v1-small.tbl")).unwrap();
    paper1::export(&table, &golden("small.paper1"), |_| {}).unwrap();
    let keys: Vec<u64> = small_tuples().iter().map(|t| t.key).collect();
    for (name, params) in golden_indexes() {
        let index = AnyIndex::build(&keys, &params).unwrap();
        file::save(
            &golden(&format!("v{}-{name}.idx", file::VERSION)),
            &index,
            &KeysFingerprint::of(&keys),
        )
        .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let unsorted = unsorted_table(dir.path());
    for entries in Entries::ALL {
        write_partitions(&unsorted, entries, &golden(&latest_pidx(entries)));
        write_inserted_btree(&unsorted, entries, &golden(&latest_bti(entries)));
    }
    write_alex(
        &table,
        &golden(&format!("v{}-small.alex", alex::file::VERSION)),
    );
    golden_profile()
        .save(&golden(&format!("v{}-profile.json", PROFILE_VERSION)))
        .unwrap();
    std::fs::write(
        golden("join-record.json"),
        serde_json::to_string(&golden_join_record()).unwrap(),
    )
    .unwrap();
    std::fs::write(
        golden("unsorted-record.json"),
        serde_json::to_string(&golden_unsorted_record()).unwrap(),
    )
    .unwrap();
    let records = kv_records();
    for (name, options) in kv_layouts() {
        kv::build(
            &borrowed(&records),
            &options,
            &golden(&format!("v{}-{name}.kv", kv::file::VERSION)),
        )
        .unwrap();
    }
}

#[test]
fn paper1_file_imports_to_the_golden_table_and_exports_byte_for_byte() {
    bless();
    let bytes = std::fs::read(golden("small.paper1")).unwrap();
    assert_eq!(bytes.len(), 16 + 16 * 300);
    assert_eq!(
        &bytes[..16],
        &[44, 1, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0]
    );
    let dir = tempfile::tempdir().unwrap();
    let imported = dir.path().join("imported.tbl");
    paper1::import(&golden("small.paper1"), &imported, |_| {}).unwrap();
    assert_eq!(
        std::fs::read(&imported).unwrap(),
        std::fs::read(golden("v1-small.tbl")).unwrap()
    );
    let exported = dir.path().join("exported.paper1");
    paper1::export(&Table::open(&imported).unwrap(), &exported, |_| {}).unwrap();
    assert_eq!(std::fs::read(&exported).unwrap(), bytes);
}

/// Loads the index file `v{version}-{name}.idx`, checks its header and that it answers the
/// golden keys' queries, and returns it.
fn load_golden_index(version: u32, name: &str, keys: &[u64]) -> AnyIndex {
    let path = golden(&format!("v{version}-{name}.idx"));
    let (index, fp) = file::load(&path).unwrap();
    assert_eq!(index.kind(), name.parse::<IndexKind>().unwrap());
    assert_eq!(fp, KeysFingerprint::of(keys));
    for q in [
        0,
        1,
        2,
        3,
        4,
        899,
        900,
        901,
        902,
        1 << 40,
        u64::MAX - 1,
        u64::MAX,
    ] {
        let lb = keys.partition_point(|&k| k < q) as u64;
        let w = index.search(q);
        assert!(
            w.lo <= lb && lb <= w.hi,
            "v{version} {name}: key {q}: {w:?} misses {lb}"
        );
    }
    index
}

#[test]
fn version_2_index_files_load_answer_and_are_rewritten_byte_for_byte() {
    bless();
    let keys: Vec<u64> = small_tuples().iter().map(|t| t.key).collect();
    for (name, params) in golden_indexes() {
        let index = load_golden_index(2, name, &keys);
        if let AnyIndex::Pgm(pgm) = &index {
            assert_eq!(pgm.form(), SegmentForm::Compact);
        }
        let rebuilt = AnyIndex::build(&keys, &params).unwrap();
        assert_eq!(
            file::encode(&rebuilt, &KeysFingerprint::of(&keys)),
            std::fs::read(golden(&format!("v2-{name}.idx"))).unwrap(),
            "{name}: the encoding changed"
        );
    }
}

#[test]
fn version_1_index_files_still_load_and_answer() {
    let keys: Vec<u64> = small_tuples().iter().map(|t| t.key).collect();
    for (name, params) in golden_indexes() {
        let old = load_golden_index(1, name, &keys);
        assert_eq!(old.params(), params, "{name}");
        match &old {
            // Version 1 stored PGM segments in 32 bytes: they load in the wide form.
            AnyIndex::Pgm(pgm) => assert_eq!(pgm.form(), SegmentForm::Wide),
            AnyIndex::SampledPgm(s) => assert_eq!(s.inner().form(), SegmentForm::Wide),
            // The other kinds' payloads did not change.
            other => {
                let mut payload = Vec::new();
                other.encode(&mut payload);
                let mut rebuilt = Vec::new();
                AnyIndex::build(&keys, &params)
                    .unwrap()
                    .encode(&mut rebuilt);
                assert_eq!(payload, rebuilt, "{name}");
            }
        }
    }
}

/// The unsorted table the partitions and inserted B+tree golden files are built from: 300
/// tuples in a scrambled order, the value of each its position. 20 small keys, a run of 260
/// equal keys (more than a page: its partition overflows) and 20 keys up to `u64::MAX`.
fn unsorted_tuples() -> Vec<Tuple> {
    let mut keys: Vec<u64> = (0..20).map(|i| i * 3).collect();
    keys.extend([1000; 260]);
    keys.extend((0..20).map(|i| u64::MAX - 19 + i));
    (0..300u64)
        .map(|i| Tuple {
            key: keys[(i * 7 % 300) as usize],
            value: i,
        })
        .collect()
}

/// [`unsorted_tuples`] as a table in `dir`.
fn unsorted_table(dir: &Path) -> Table {
    let path = dir.join("unsorted.tbl");
    let mut w = TableWriter::create(&path).unwrap();
    for t in unsorted_tuples() {
        w.push(t).unwrap();
    }
    w.finish().unwrap();
    Table::open(&path).unwrap()
}

/// The values of `tuples` whose key is `key`, in their order.
fn values_of(tuples: &[Tuple], key: u64) -> Vec<u64> {
    tuples
        .iter()
        .filter(|t| t.key == key)
        .map(|t| t.value)
        .collect()
}

/// The keys a golden file's lookups try: every key of the tuples, and some absent ones.
fn probe_keys(tuples: &[Tuple]) -> Vec<u64> {
    let mut keys: Vec<u64> = tuples.iter().map(|t| t.key).collect();
    keys.extend([1, 2, 999, 1001, 1 << 40, u64::MAX - 20]);
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Every sampled key (a fraction of 1, so the sample is the table whatever the random
/// generator), two partitions of 150 expected tuples.
fn partition_params(entries: Entries) -> PartitionParams {
    PartitionParams {
        entries,
        sample_fraction: 1.0,
        epsilon: 4,
        partition_tuples: 150,
        flush_tuples: 8,
        seed: 42,
    }
}

/// The newest partitions file of `entries`: `v2-small.pidx` (pointers), `v2-small-tuples.pidx`.
fn latest_pidx(entries: Entries) -> String {
    match entries {
        Entries::Pointers => format!("v{}-small.pidx", partition::VERSION),
        Entries::Tuples => format!("v{}-small-tuples.pidx", partition::VERSION),
    }
}

/// The newest B+tree file of `entries`: `v2-small.bti` (pointers), `v2-small-tuples.bti`.
fn latest_bti(entries: Entries) -> String {
    match entries {
        Entries::Pointers => format!("v{}-small.bti", btree::VERSION),
        Entries::Tuples => format!("v{}-small-tuples.bti", btree::VERSION),
    }
}

fn write_partitions(table: &Table, entries: Entries, out: &Path) {
    partition::build(
        table,
        out,
        &partition_params(entries),
        &MemoryBudget::unlimited(),
        |_| {},
    )
    .unwrap();
}

/// Opens the partitions file `name`, which holds `entries`, and checks its layout, every
/// lookup (a tuple's value is its position, so both hold the same words) and its
/// verification against the table.
fn check_partitions_file(name: &str, entries: Entries) -> PathBuf {
    let path = golden(name);
    let tuples = unsorted_tuples();
    let file = PartitionFile::open(&path).unwrap();
    let index = file.index();
    assert_eq!(index.entries(), entries);
    // Two partitions; the run of 260 equal keys overflows its first page.
    assert_eq!((index.len(), index.partitions()), (300, 2));
    assert_eq!((index.count(0), index.count(1)), (280, 20));
    assert_eq!(index.total_pages(), 3);
    assert_eq!(index.pages_of(0), &[0, 2]);
    assert_eq!(index.pages_of(1), &[1]);
    for key in probe_keys(&tuples) {
        assert_eq!(
            file.lookup(key).unwrap(),
            values_of(&tuples, key),
            "key {key}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let table = unsorted_table(dir.path());
    PartitionFile::verify_file(&path, Some(&table)).unwrap();
    path
}

#[test]
fn version_1_partitions_file_reads_back_as_tuples() {
    bless();
    check_partitions_file("v1-small.pidx", Entries::Tuples);
}

#[test]
fn version_2_partitions_files_read_back_and_are_rewritten_byte_for_byte() {
    bless();
    for entries in Entries::ALL {
        let path = check_partitions_file(&latest_pidx(entries), entries);
        let dir = tempfile::tempdir().unwrap();
        let table = unsorted_table(dir.path());
        let again = dir.path().join("again.pidx");
        write_partitions(&table, entries, &again);
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&path).unwrap(),
            "{entries}"
        );
    }
}

fn write_inserted_btree(table: &Table, entries: Entries, out: &Path) {
    btree::build(table, out, entries, &MemoryBudget::unlimited(), |_| {}).unwrap();
}

/// Opens the B+tree file `name`, whose leaves hold `entries` in `leaves` leaves, and checks
/// every lookup and a full scan (a tuple's value is its position, so both hold the same
/// words) and its verification against the table.
fn check_btree_file(name: &str, entries: Entries, leaves: u64) -> PathBuf {
    let path = golden(name);
    let tuples = unsorted_tuples();
    let mut tree = InsertedBTree::open(&path, 4).unwrap();
    assert_eq!(tree.entries(), entries);
    assert_eq!((tree.len(), tree.leaves()), (300, leaves));
    for key in probe_keys(&tuples) {
        let mut words = Vec::new();
        tree.lookup(key, &mut words).unwrap();
        assert_eq!(words, values_of(&tuples, key), "key {key}");
    }
    let mut scanned = Vec::new();
    tree.scan_from((0, 0), |k, w| {
        scanned.push((k, w));
        true
    })
    .unwrap();
    let mut sorted: Vec<(u64, u64)> = tuples.iter().map(|t| (t.key, t.value)).collect();
    sorted.sort_unstable();
    assert_eq!(scanned, sorted);
    let dir = tempfile::tempdir().unwrap();
    let table = unsorted_table(dir.path());
    InsertedBTree::verify_file(&path, Some(&table)).unwrap();
    path
}

#[test]
fn version_1_inserted_btree_file_reads_back_as_pointers() {
    bless();
    check_btree_file("v1-small.bti", Entries::Pointers, 2);
}

#[test]
fn version_2_inserted_btree_files_read_back_and_are_rewritten_byte_for_byte() {
    bless();
    // 255 pointers or 170 tuples fit a leaf: 300 entries split into 2 or 3 leaves.
    for (entries, leaves) in [(Entries::Pointers, 2), (Entries::Tuples, 3)] {
        let path = check_btree_file(&latest_bti(entries), entries, leaves);
        let dir = tempfile::tempdir().unwrap();
        let table = unsorted_table(dir.path());
        let again = dir.path().join("again.bti");
        write_inserted_btree(&table, entries, &again);
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&path).unwrap(),
            "{entries}"
        );
    }
}

/// Small nodes, so the file has several data nodes under inner nodes.
fn alex_params() -> AlexParams {
    AlexParams {
        max_data_slots: 64,
        max_fanout: 8,
        ..AlexParams::default()
    }
}

fn write_alex(table: &Table, out: &Path) {
    let keys: Vec<u64> = small_tuples().iter().map(|t| t.key).collect();
    alex::file::build(table, &keys, out, &alex_params(), |_| {}).unwrap();
}

#[test]
fn version_1_alex_file_reads_back_and_is_rewritten_byte_for_byte() {
    bless();
    let path = golden("v1-small.alex");
    let tuples = small_tuples();
    let file = AlexFile::open(&path).unwrap();
    assert_eq!(file.len(), 300);
    assert_eq!(file.params(), alex_params());
    assert!(file.data_nodes() > 1 && file.inner_nodes() >= 1, "{file:?}");
    let keys: Vec<u64> = tuples.iter().map(|t| t.key).collect();
    assert_eq!(file.fingerprint(), KeysFingerprint::of(&keys));
    let mut reader = AlexReader::new(&file, ReadMode::Buffered).unwrap();
    for key in probe_keys(&tuples).into_iter().chain([899, 900, 901]) {
        assert_eq!(
            reader.get_all(key).unwrap(),
            values_of(&tuples, key),
            "key {key}"
        );
    }
    let table = Table::open(&golden("v1-small.tbl")).unwrap();
    AlexFile::verify_file(&path, Some(&table)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let again = dir.path().join("again.alex");
    write_alex(&table, &again);
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&path).unwrap()
    );
}

/// The golden key-value records: 200 keys of 20 decimal digits (as `lidx kv gen` writes
/// them) with values of 1 to 24 bytes, one of them empty.
fn kv_records() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..200u64)
        .map(|i| {
            let key = format!("{:020}", i * i * 7919 + i);
            let value = vec![b'a' + (i % 26) as u8; (i % 25) as usize];
            (key.into_bytes(), value)
        })
        .collect()
}

fn borrowed(records: &[(Vec<u8>, Vec<u8>)]) -> Vec<Record<'_>> {
    records
        .iter()
        .map(|(key, value)| Record { key, value })
        .collect()
}

/// One file of each layout, with small blocks; the learned layout with each model.
fn kv_layouts() -> Vec<(&'static str, BuildOptions)> {
    let small = BuildOptions {
        block_size: 512,
        compression: Compression::None,
        key_encoding: KeyEncoding::Decimal,
        ..BuildOptions::default()
    };
    vec![
        (
            "learned",
            BuildOptions {
                layout: Layout::Learned,
                model: ModelKind::Linear,
                ..small
            },
        ),
        (
            "learned-pgm",
            BuildOptions {
                layout: Layout::Learned,
                model: ModelKind::Pgm,
                epsilon: Some(64),
                ..small
            },
        ),
        (
            "learned-capped",
            BuildOptions {
                layout: Layout::Learned,
                model: ModelKind::Linear,
                max_block: Some(512),
                ..small
            },
        ),
        (
            "learned-chunked",
            BuildOptions {
                layout: Layout::Learned,
                model: ModelKind::Pgm,
                location_chunk_blocks: Some(2),
                ..small
            },
        ),
        (
            "learned-rmi",
            BuildOptions {
                layout: Layout::Learned,
                model: ModelKind::Rmi,
                leaves: Some(4),
                ..small
            },
        ),
        (
            "sstable",
            BuildOptions {
                layout: Layout::Sstable,
                ..small
            },
        ),
        (
            "tuned",
            BuildOptions {
                layout: Layout::Tuned,
                profile: Some(AffineCost {
                    latency_us: 100.0,
                    bandwidth_mb_s: 500.0,
                }),
                ..small
            },
        ),
        (
            "tuned-steps",
            BuildOptions {
                layout: Layout::Tuned,
                profile: Some(AffineCost {
                    latency_us: 100.0,
                    bandwidth_mb_s: 500.0,
                }),
                families: lidx::kv::layers::Families {
                    pgm: false,
                    step: true,
                },
                ..small
            },
        ),
        (
            "btree",
            BuildOptions {
                layout: Layout::Btree,
                ..small
            },
        ),
    ]
}

/// Every version's files read back to the golden records (version 1's learned files in
/// their block-location array of raw offsets, version 2's in Elias–Fano), and the current
/// writer reproduces the newest byte for byte.
#[test]
fn kv_files_of_every_version_read_back_and_the_newest_are_rewritten_byte_for_byte() {
    bless();
    let records = kv_records();
    let cache = kv::BlockCache::new(0);
    let dir = tempfile::tempdir().unwrap();
    for version in kv::file::OLDEST_VERSION..=kv::file::VERSION {
        for (name, options) in kv_layouts() {
            // The cap, and with it overflow blocks, came with version 2.
            if name == "learned-capped" && version < 2 {
                continue;
            }
            // Step layers came with version 3, location chunks with version 4.
            if name == "tuned-steps" && version < 3 || name == "learned-chunked" && version < 4 {
                continue;
            }
            let path = golden(&format!("v{version}-{name}.kv"));
            let file = KvFile::open(&path, ReadMode::Buffered).unwrap();
            let footer = file.footer();
            assert_eq!(
                (
                    footer.version,
                    footer.layout,
                    footer.key_encoding,
                    footer.records
                ),
                (version, options.layout, KeyEncoding::Decimal, 200),
                "{name}"
            );
            let report = kv::verify(&file).unwrap();
            assert_eq!(report.records, 200, "{name}");
            if name == "learned-capped" {
                let info = kv::info(&file).unwrap();
                assert!(info.learned.unwrap().overflow_blocks > 0, "{name}");
            }
            if name == "learned-chunked" {
                assert!(footer.meta_offset > footer.data_bytes, "{name}: no chunks");
            }
            if name == "tuned-steps" {
                let (layers, _) = file.tuned().unwrap();
                assert!(layers.iter().all(|l| l.step), "{name}");
            }
            let mut reader = kv::Reader::new(&file, &cache);
            let mut scanned = Vec::new();
            reader
                .scan(b"", usize::MAX, |k, v| {
                    scanned.push((k.to_vec(), v.to_vec()))
                })
                .unwrap();
            assert_eq!(scanned, records, "{name}");
            for (key, value) in &records {
                assert_eq!(reader.get(key).unwrap().as_ref(), Some(value), "{name}");
            }
            for absent in [
                &b""[..],
                b"0",
                b"00000000000000000002",
                b"99999999999999999999",
            ] {
                assert_eq!(reader.get(absent).unwrap(), None, "{name}");
            }
            if version == kv::file::VERSION {
                let again = dir.path().join(format!("{name}.kv"));
                kv::build(&borrowed(&records), &options, &again).unwrap();
                assert_eq!(
                    std::fs::read(&again).unwrap(),
                    std::fs::read(&path).unwrap(),
                    "{name}: the encoding changed"
                );
            }
        }
    }
}

/// The profile's format version, as `StorageProfile::load` reads it.
const PROFILE_VERSION: u32 = 1;

/// One measurement of the golden profile.
fn measurement(pattern: Pattern, read_size: u64, depth: u64, mean_us: f64) -> Measurement {
    Measurement {
        pattern,
        read_size,
        reads: 1000,
        bytes: 1000 * read_size,
        seconds: mean_us / 1000.0,
        mean_us,
        p50_us: mean_us - 0.5,
        p99_us: mean_us * 4.0,
        depth,
    }
}

/// The golden storage profile: two read sizes of each pattern, then random 4 KiB reads at
/// queue depths 1 and 8.
fn golden_profile() -> StorageProfile {
    StorageProfile {
        version: PROFILE_VERSION,
        dir: "/mnt/data".into(),
        device: "/dev/nvme0n1p2 (ext4) on /mnt/data".into(),
        measured_at_unix: 1_700_000_000,
        file_size: 1 << 30,
        sequential: AffineCost {
            latency_us: 20.0,
            bandwidth_mb_s: 2048.0,
        },
        random: AffineCost {
            latency_us: 80.0,
            bandwidth_mb_s: 1024.0,
        },
        measurements: vec![
            measurement(Pattern::Sequential, 4096, 1, 22.0),
            measurement(Pattern::Sequential, 1 << 20, 1, 532.0),
            measurement(Pattern::Random, 4096, 1, 84.0),
            measurement(Pattern::Random, 1 << 20, 1, 1104.0),
            measurement(Pattern::Random, 4096, 1, 84.0),
            measurement(Pattern::Random, 4096, 8, 96.0),
        ],
    }
}

#[test]
fn version_1_storage_profile_loads_and_is_rewritten_byte_for_byte() {
    bless();
    let path = golden("v1-profile.json");
    assert_eq!(StorageProfile::load(&path).unwrap(), golden_profile());
    assert_eq!(golden_profile().to_json(), std::fs::read(&path).unwrap());
    // A profile written before measurements had a depth: they load at depth 1.
    let mut before_depth = golden_profile();
    before_depth.measurements.truncate(4);
    assert_eq!(
        StorageProfile::load(&golden("v1-profile-before-depth.json")).unwrap(),
        before_depth
    );
}

/// A join record with every field set to a value of its own.
fn golden_join_record() -> JoinRecord {
    JoinRecord {
        method: "inlj:pgm".into(),
        threads: 2,
        direct: true,
        io_depth: 4,
        io_backend: "uring".into(),
        cursor: true,
        monotone: false,
        max_window_blocks: 8,
        read_size: 1 << 20,
        outer_tuples: 1000,
        inner_tuples: 300,
        output_tuples: 299,
        join_s: 0.25,
        build_s: Some(0.5),
        write_s: None,
        fsync_s: Some(0.125),
        lookups: 1000,
        outer_blocks: 4,
        outer_bytes: 16384,
        outer_reads: 1,
        inner_blocks: 9,
        inner_bytes: 36864,
        inner_reads: 7,
        spilled_bytes: 0,
        index_window: 9.5,
        model_s: 0.375,
        model_device: "ssd".into(),
        peak_rss: Some(12 << 20),
        unclustered: None,
    }
}

/// An unsorted record with every field set to a value of its own.
fn golden_unsorted_record() -> UnsortedRecord {
    UnsortedRecord {
        operation: Some(Operation::IndexBuild),
        method: "partition".into(),
        entries: "pointers".into(),
        tuples: 1000,
        inner_tuples: 0,
        memory_limit: 8 << 20,
        peak_reserved: 3 << 20,
        peak_rss: Some(9 << 20),
        cgroup_limit: None,
        storage_read_bytes: Some(65536),
        seconds: 1.5,
        prepare_s: 0.25,
        bytes_read: 32000,
        read_calls: 3,
        bytes_written: 40960,
        write_calls: 11,
        pages_written: 13,
        file_bytes: 45056,
        index_memory_bytes: 512,
        model_bytes: 128,
        output_tuples: 0,
        lookups: 0,
        leaves: 0,
        leaf_reads: 0,
        leaf_writes: 0,
        splits: 0,
        pool_hits: 0,
        evictions: 0,
        partitions: 4,
        largest_partition: 300,
        empty_partitions: 1,
        overflowed_partitions: 1,
        pages: 6,
        partitions_read: 0,
    }
}

#[test]
fn json_records_read_back_and_are_rewritten_byte_for_byte() {
    bless();
    let text = std::fs::read_to_string(golden("join-record.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<JoinRecord>(&text).unwrap(),
        golden_join_record()
    );
    assert_eq!(serde_json::to_string(&golden_join_record()).unwrap(), text);
    // `peak_rss` may be missing (records from before it).
    let without: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut without = without.as_object().unwrap().clone();
    without.remove("peak_rss");
    let record: JoinRecord = serde_json::from_value(serde_json::Value::Object(without)).unwrap();
    assert_eq!(record.peak_rss, None);

    let text = std::fs::read_to_string(golden("unsorted-record.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<UnsortedRecord>(&text).unwrap(),
        golden_unsorted_record()
    );
    assert_eq!(
        serde_json::to_string(&golden_unsorted_record()).unwrap(),
        text
    );
}

/// The contents of `v1-output.tbl`, a join output (value width 16): 200 tuples, more than
/// the 170 a block holds, sorted with a duplicate run, 0 and `u64::MAX`.
fn output_tuples() -> Vec<OutputTuple> {
    (0..200u64)
        .map(|i| OutputTuple {
            key: match i {
                0 => 0,
                199 => u64::MAX,
                _ => (i / 2) * 5,
            },
            outer: i,
            inner: key_hash(i),
        })
        .collect()
}

fn write_output_table(path: &Path) {
    let mut w = TableWriter::create_output(path).unwrap();
    for t in output_tuples() {
        w.push_output(t).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn version_1_output_table_reads_back_and_is_rewritten_byte_for_byte() {
    bless();
    let path = golden("v1-output.tbl");
    let table = Table::open(&path).unwrap();
    let h = table.header();
    assert!(h.is_output());
    assert_eq!(
        (h.count, h.sorted, h.distinct, h.min_key, h.max_key),
        (200, true, false, 0, u64::MAX)
    );
    let mut tuples = Vec::new();
    table
        .scan_output(|chunk| {
            tuples.extend_from_slice(chunk);
            Ok(())
        })
        .unwrap();
    assert_eq!(tuples, output_tuples());
    table.verify(|_| {}).unwrap();
    // 4096-byte header, two data blocks of 170 tuples and 16 zero bytes, a checksum block.
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 4 * 4096);
    assert_eq!(&bytes[13], &16, "value width");

    let dir = tempfile::tempdir().unwrap();
    let again = dir.path().join("again.tbl");
    write_output_table(&again);
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
}
