//! Golden files of a join database's manifest (`lidx-lsm.json`, docs/FORMAT.md section 11):
//! every committed version must open to the settings it was written with, and the current
//! writer must reproduce the newest byte for byte. The files of older versions stay.
//!
//! With `LIDX_BLESS=1` in the environment, the newest (`v3-manifest.json`) is written anew
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

/// The golden settings as a manifest of version 1 or 2 holds them: every tree with the one
/// write buffer, the first level that times the size ratio, RocksDB's level-0 trigger and
/// file size, as such a database ran.
fn config_before_version_3() -> LsmConfig {
    LsmConfig {
        index_write_buffer: 64 << 10,
        data_level_base: 5 * (64 << 10),
        l0_trigger: 4,
        target_file_size: 64 << 20,
        ..config()
    }
}

/// Checks that `db` holds what the golden manifests say, its settings `config`.
fn assert_golden_settings(db: &LsmDb, config: LsmConfig) {
    assert_eq!(db.config(), config);
    assert_eq!(db.workload(), workload());
    assert_eq!(db.batches(), 0);
    assert_eq!(db.index_specs(), vec![spec()]);
    assert_eq!(db.key_files(), None);
    assert_eq!(db.recovered(), None);
}

#[test]
fn version_3_manifest_opens_and_is_rewritten_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let db = created(dir.path());
    let written = std::fs::read(db.join(MANIFEST)).unwrap();
    if std::env::var_os("LIDX_BLESS").is_some() {
        std::fs::write(golden("v3-manifest.json"), &written).unwrap();
    }
    assert_eq!(
        String::from_utf8(written).unwrap(),
        std::fs::read_to_string(golden("v3-manifest.json")).unwrap(),
        "the manifest's encoding changed"
    );
    std::fs::copy(golden("v3-manifest.json"), db.join(MANIFEST)).unwrap();
    assert_golden_settings(&LsmDb::open(&db).unwrap(), config());
}

/// A manifest of an older version opens with the settings it ran with, rewrites nothing
/// at the open, and is written back as version 3 at the next change, keeping them.
fn older_manifest_opens_as_written(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = created(dir.path());
    std::fs::copy(golden(name), db.join(MANIFEST)).unwrap();
    let mut opened = LsmDb::open(&db).unwrap();
    assert_golden_settings(&opened, config_before_version_3());
    assert_eq!(
        std::fs::read(db.join(MANIFEST)).unwrap(),
        std::fs::read(golden(name)).unwrap()
    );
    let other = IndexSpec::of_method(Side::R, Design::Lazy, Maintenance::Validation);
    opened.build_index(other).unwrap();
    drop(opened);
    let text = std::fs::read_to_string(db.join(MANIFEST)).unwrap();
    assert!(text.contains("\"version\": 3,"), "{text}");
    let reopened = LsmDb::open(&db).unwrap();
    assert_eq!(reopened.index_specs(), vec![spec(), other]);
    assert_eq!(reopened.config(), config_before_version_3());
}

#[test]
fn version_2_manifest_still_opens_as_written_and_is_written_back_as_version_3() {
    older_manifest_opens_as_written("v2-manifest.json");
}

#[test]
fn version_1_manifest_still_opens_as_written_and_is_written_back_as_version_3() {
    older_manifest_opens_as_written("v1-manifest.json");
}

#[test]
fn a_later_version_is_refused_naming_the_versions_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = created(dir.path());
    let text = std::fs::read_to_string(golden("v3-manifest.json"))
        .unwrap()
        .replace("\"version\": 3,", "\"version\": 4,");
    std::fs::write(db.join(MANIFEST), text).unwrap();
    let err = LsmDb::open(&db).err().unwrap().to_string();
    assert!(
        err.contains("version 4") && err.contains("versions 1 to 3"),
        "{err}"
    );
}
