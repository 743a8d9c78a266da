//! Golden files: every format version as committed must read back to known contents, and
//! the current writers must reproduce the newest byte for byte. FORMAT.md, the version
//! numbers and these files change together; the files of older versions stay.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::path::PathBuf;

use lidx::data::{KeyFile, write_keys};
use lidx::index::file::{self, KeysFingerprint};
use lidx::index::{
    AnyIndex, AnyParams, BTreeParams, IndexKind, PgmParams, RadixSplineParams, RmiParams, RootKind,
    SampledParams, SegmentForm,
};
use lidx::storage::table::key_hash;
use lidx::storage::{Table, TableWriter, Tuple, paper1};

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
