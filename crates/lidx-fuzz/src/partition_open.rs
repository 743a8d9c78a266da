//! Opens arbitrary bytes as a partitions file (learned partition index) and as an inserted
//! B+tree file. Outcome: `Err`, or a file whose partitions, lookups and scans return
//! without panicking (errors allowed: pages are checked when read).

use std::io::Write;

use lidx::partition::PartitionFile;
use lidx::partition::btree::InsertedBTree;

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    let mut file = tempfile::NamedTempFile::new().expect("create a temporary file");
    file.write_all(data).expect("write the input");
    if let Ok(parts) = PartitionFile::open(file.path()) {
        let index = parts.index();
        for p in 0..index.partitions().min(64) {
            let mut tuples = Vec::new();
            if parts.read_partition(p, &mut tuples).is_ok() {
                assert_eq!(tuples.len() as u64, index.count(p));
                let mut scanned = 0u64;
                let io = parts.scan_partition(p, 2, |run| {
                    scanned += run.len() as u64;
                    Ok(())
                });
                assert!(
                    io.is_ok(),
                    "a partition read whole cannot fail a few pages at a time"
                );
                assert_eq!(scanned, index.count(p));
            }
            parts.prefetch_partition(p);
        }
        for key in [0, 1, 1 << 32, u64::MAX - 1, u64::MAX] {
            assert!(index.partition_of(key) < index.partitions());
            let _ = parts.lookup(key);
        }
    }
    if let Ok(mut tree) = InsertedBTree::open(file.path(), 4) {
        let mut seen = 0u64;
        let _ = tree.scan_from((0, 0), |_, _| {
            seen += 1;
            seen < 100_000
        });
        for key in [0, 1, 1 << 32, u64::MAX] {
            let _ = tree.lookup(key, &mut Vec::new());
        }
    }
}
