//! Opens arbitrary bytes as a partitions file (learned partition index) and as an inserted
//! B+tree file. Outcome: `Err`, or a file whose partitions, lookups and scans return
//! without panicking (errors allowed: pages are checked when read). Each is also checked
//! whole (`verify_file`, what `lidx index verify` runs), which must return, not panic; a
//! file it passes reads without error, and passes again against a table made of its own
//! entries (tuples partition by partition; or each entry's key and value at its position,
//! where it holds pointers or is a B+tree).

use std::io::Write;
use std::path::Path;

use lidx::partition::btree::InsertedBTree;
use lidx::partition::{Entries, PartitionFile};
use lidx::storage::{Table, TableWriter, Tuple};

/// The most tuples a verified file is rechecked against a table of.
const MAX_TABLE_TUPLES: u64 = 1 << 16;

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
        if PartitionFile::verify_file(file.path(), None).is_ok() && index.len() <= MAX_TABLE_TUPLES
        {
            let mut all = Vec::new();
            for p in 0..index.partitions() {
                parts
                    .read_partition(p, &mut all)
                    .expect("a verified file reads");
            }
            if index.entries() == Entries::Pointers {
                // Each key at the position it names (verified: each position once).
                let mut at = vec![Tuple::default(); all.len()];
                for t in &all {
                    at[t.value as usize] = Tuple {
                        key: t.key,
                        value: 0,
                    };
                }
                all = at;
            }
            let (_dir, table) = table_of(&all);
            let again = PartitionFile::verify_file(file.path(), Some(&table));
            assert!(
                again.is_ok(),
                "a verified file against its own tuples: {again:?}"
            );
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
        if InsertedBTree::verify_file(file.path(), None).is_ok() && tree.len() <= MAX_TABLE_TUPLES {
            // Each entry's key at its position: the table the tree was built from, up to
            // its values.
            let mut at = vec![Tuple::default(); tree.len() as usize];
            let pointers = tree.entries() == Entries::Pointers;
            tree.scan_entries((0, 0), |(key, position), word| {
                at[position as usize] = Tuple {
                    key,
                    value: if pointers { position } else { word },
                };
                true
            })
            .expect("a verified tree scans");
            let (_dir, table) = table_of(&at);
            let again = InsertedBTree::verify_file(file.path(), Some(&table));
            assert!(
                again.is_ok(),
                "a verified tree against its own entries: {again:?}"
            );
        }
    }
}

/// A table of `tuples` in a scratch directory (kept alive by the returned guard).
fn table_of(tuples: &[Tuple]) -> (tempfile::TempDir, Table) {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let path = dir.path().join("t.tbl");
    write_table(&path, tuples).expect("write a table");
    let table = Table::open(&path).expect("open the table just written");
    (dir, table)
}

fn write_table(path: &Path, tuples: &[Tuple]) -> lidx::Result<()> {
    let mut w = TableWriter::create(path)?;
    for &t in tuples {
        w.push(t)?;
    }
    w.finish().map(drop)
}
