//! Opens a join database whose manifest (`lidx-lsm.json`) is arbitrary bytes, beside the
//! trees of a real one (R, S and an index of each design): `LsmDb::open` must fail with
//! an error or give a database whose accessors, cost model and joins (on one thread and on
//! three) return without panicking. The manifest may name indexes the directory lacks,
//! settings the trees were not made with, or a change pending (which the open undoes).

use std::path::Path;
use std::sync::OnceLock;

use lidx::join::CountSink;
use lidx_lsm::joins::{LsmConfig, LsmDb, Method, Workload, cost, join_with_threads};

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    copy_dir(template(), dir.path());
    std::fs::write(dir.path().join("lidx-lsm.json"), data).expect("write the manifest");
    let Ok(mut db) = LsmDb::open(dir.path()) else {
        return;
    };
    let _ = (
        db.workload(),
        db.config(),
        db.batches(),
        db.key_files(),
        db.levels(),
        db.recovered(),
    );
    if let Ok(inputs) = cost::CostInputs::of(&db, 4, 1000) {
        let _ = cost::advise(&inputs, &lidx::storage::profile::assumed_ssd());
    }
    for name in ["INLJ-P", "HJ-N", "SJ-P", "SJ-NS/V-Lazy"] {
        let method: Method = name.parse().expect("a method");
        for threads in [1, 3] {
            let _ = join_with_threads(&mut db, method, threads, &mut CountSink::default());
        }
    }
}

/// The join database the seeds' manifests describe (see `seeds::lsm_manifests`), made
/// once per process: 100 rows, and the indexes of three methods.
fn template() -> &'static Path {
    static TEMPLATE: OnceLock<(tempfile::TempDir, std::path::PathBuf)> = OnceLock::new();
    &TEMPLATE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let config = LsmConfig {
                write_buffer: 64 << 10,
                ..LsmConfig::default()
            };
            let workload = Workload {
                rows: 100,
                ..Workload::default()
            };
            let path = dir.path().join("db");
            let (mut db, _) = LsmDb::create(&path, config, workload).expect("create");
            for method in ["INLJ-NS/S-Eager", "INLJ-NS/V-Lazy", "SJ-SS/S-Comp"] {
                let method: Method = method.parse().expect("a method");
                for spec in method.indexes() {
                    db.build_index(spec).expect("build an index");
                }
            }
            (dir, path)
        })
        .1
}

/// Copies the directory tree `from` into `to` (files and directories; the lock file too).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("make a directory");
    for entry in std::fs::read_dir(from).expect("list a directory") {
        let entry = entry.expect("a directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy a file");
        }
    }
}
