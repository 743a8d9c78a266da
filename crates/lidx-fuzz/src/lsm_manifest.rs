//! Opens a join database whose manifest (`lidx-lsm.json`) is arbitrary bytes: `LsmDb::open`
//! must fail with an error or give a database whose accessors, cost model and joins (of
//! its empty tables, on one thread and on three) return without panicking.

use lidx::join::CountSink;
use lidx_lsm::joins::{LsmDb, Method, cost, join_with_threads};

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
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
