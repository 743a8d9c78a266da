//! What the library's test files share.

use std::path::Path;

use lidx::storage::{Table, TableWriter, Tuple};

/// Writes `keys` as a table at `path`, tuple `i` holding value `salt + i`, and opens it.
pub fn write_table(path: &Path, keys: &[u64], salt: u64) -> Table {
    let mut w = TableWriter::create(path).expect("create the table");
    for (i, &key) in keys.iter().enumerate() {
        w.push(Tuple {
            key,
            value: salt + i as u64,
        })
        .expect("write a tuple");
    }
    w.finish().expect("finish the table");
    Table::open(path).expect("open the table")
}
