//! Golden files of a join database's manifest (`lidx-lsm.json`, docs/FORMAT.md section 11):
//! every committed version must open to the settings it was written with, and the current
//! writer must reproduce the newest byte for byte. The files of older versions stay.
//!
//! With `LIDX_BLESS=1` in the environment, the newest (`v2-manifest.json`) is written anew
//! from the current writer before it is compared: `LIDX_BLESS=1 cargo test -p lidx-lsm
//! --test golden`, once per format version.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::path::{Path, PathBuf};

use lidx_lsm::joins::db::MANIFEST;
use lidx_lsm::joins::{Design, IndexSpec, LsmConfig, LsmDb, Maintenance, Side, Workload};

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// The golden database's settings: the paper's, with the smallest write buffer.
fn config() -> LsmConfig {
    LsmConfig {
        write_buffer: 64 << 10,
        ..LsmConfig::default()
    }
}

/// The golden database's workload: 100 rows a batch.
fn workload() -> Workload {
    Workload {
        rows: 100,
        ..Workload::default()
    }
}

/// The golden database's index: S's synchronous Eager index (covering).
fn spec() -> IndexSpec {
    IndexSpec::of_method(Side::S, Design::Eager, Maintenance::Sync)
}

/// Makes an empty database with the golden settings and index at `dir/db`; returns its
/// path.
fn created(dir: &Path) -> PathBuf {
    let db = dir.join("db");
    drop(LsmDb::create_empty(&db, config(), workload(), &[spec()]).unwrap());
    db
}

/// Checks that `db` holds what the golden manifests say.
fn assert_golden_settings(db: &LsmDb) {
    assert_eq!(db.config(), config());
    assert_eq!(db.workload(), workload());
    assert_eq!(db.batches(), 0);
    assert_eq!(db.index_specs(), vec![spec()]);
    assert_eq!(db.key_files(), None);
    assert_eq!(db.recovered(), None);
}

#[test]
fn version_2_manifest_opens_and_is_rewritten_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let db = created(dir.path());
    let written = std::fs::read(db.join(MANIFEST)).unwrap();
    if std::env::var_os("LIDX_BLESS").is_some() {
        std::fs::write(golden("v2-manifest.json"), &written).unwrap();
    }
    assert_eq!(
        String::from_utf8(written).unwrap(),
        std::fs::read_to_string(golden("v2-manifest.json")).unwrap(),
        "the manifest's encoding changed"
    );
    std::fs::copy(golden("v2-manifest.json"), db.join(MANIFEST)).unwrap();
    assert_golden_settings(&LsmDb::open(&db).unwrap());
}

#[test]
fn version_1_manifest_still_opens_and_is_written_back_as_version_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = created(dir.path());
    std::fs::copy(golden("v1-manifest.json"), db.join(MANIFEST)).unwrap();
    let mut opened = LsmDb::open(&db).unwrap();
    assert_golden_settings(&opened);
    // Opening rewrites nothing; the next change writes version 2.
    assert_eq!(
        std::fs::read(db.join(MANIFEST)).unwrap(),
        std::fs::read(golden("v1-manifest.json")).unwrap()
    );
    let other = IndexSpec::of_method(Side::R, Design::Lazy, Maintenance::Validation);
    opened.build_index(other).unwrap();
    drop(opened);
    let text = std::fs::read_to_string(db.join(MANIFEST)).unwrap();
    assert!(text.contains("\"version\": 2,"), "{text}");
    assert_eq!(LsmDb::open(&db).unwrap().index_specs(), vec![spec(), other]);
}

#[test]
fn a_later_version_is_refused_naming_the_versions_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = created(dir.path());
    let text = std::fs::read_to_string(golden("v2-manifest.json"))
        .unwrap()
        .replace("\"version\": 2,", "\"version\": 3,");
    std::fs::write(db.join(MANIFEST), text).unwrap();
    let err = LsmDb::open(&db).err().unwrap().to_string();
    assert!(
        err.contains("version 3") && err.contains("versions 1 to 2"),
        "{err}"
    );
}
