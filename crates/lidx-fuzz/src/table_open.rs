//! Opens arbitrary bytes as a `.tbl` table file. Whatever the bytes, `Table::open`,
//! `verify`, `map` and window reads must return `Ok` or `Err`, never panic; and what they
//! return when `Ok` must agree with the bytes and with each other.

use std::io::Write;

use lidx::storage::{
    BLOCK_SIZE, BlockReader, ReadMode, TUPLE_SIZE, TUPLES_PER_BLOCK, Table, Tuple,
};

/// Windows read per opened table, taken from the first data bytes of the input.
const DERIVED_WINDOWS: usize = 8;

/// Tuple `i` as the input's bytes hold it (byte `4096 + 16 i`).
fn tuple_at(data: &[u8], i: u64) -> Tuple {
    let at = BLOCK_SIZE + i as usize * TUPLE_SIZE;
    let word = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().expect("8 bytes"));
    Tuple {
        key: word(at),
        value: word(at + 8),
    }
}

/// Windows `lo..hi` with `lo <= hi <= n`: the whole table, a few fixed ones, and pairs of
/// `u16`s read from the first data bytes, reduced modulo `n + 1`.
fn windows(data: &[u8], n: u64) -> Vec<(u64, u64)> {
    let mut w = vec![
        (0, n),
        (0, 0),
        (n, n),
        (n / 2, n.div_ceil(2)),
        (n.saturating_sub(1), n),
    ];
    let derived = data
        .get(BLOCK_SIZE..)
        .unwrap_or(&[])
        .chunks_exact(4)
        .take(DERIVED_WINDOWS);
    for c in derived {
        let a = u64::from(u16::from_le_bytes([c[0], c[1]])) % (n + 1);
        let b = u64::from(u16::from_le_bytes([c[2], c[3]])) % (n + 1);
        w.push((a.min(b), a.max(b)));
    }
    w
}

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    let mut file = tempfile::NamedTempFile::new().expect("create a temporary file");
    file.write_all(data).expect("write the fuzz input");
    let Ok(table) = Table::open(file.path()) else {
        return;
    };
    let n = table.len();
    // Open checked the length: header, data blocks, checksum blocks, nothing more.
    assert_eq!(table.layout().file_len(), data.len() as u64);
    assert!(n <= table.layout().data_blocks * TUPLES_PER_BLOCK);

    let verified = table.verify(|_| {});
    let mapped = table.map();
    if let Ok(report) = &verified {
        assert_eq!(report.header, *table.header());
        assert!(
            mapped.is_ok(),
            "verify passed, map failed: {:?}",
            mapped.as_ref().err()
        );
    }
    if let Ok(m) = &mapped {
        assert_eq!(m.tuples().len() as u64, n);
        for (i, t) in m.tuples().iter().enumerate() {
            assert_eq!(*t, tuple_at(data, i as u64));
        }
    }

    let Ok(mut checked) = BlockReader::new(&table, ReadMode::Buffered) else {
        return;
    };
    let Ok(mut unchecked) = BlockReader::new(&table, ReadMode::Buffered) else {
        return;
    };
    unchecked.set_verify_checksums(false);
    for (lo, hi) in windows(data, n) {
        for (verifying, reader) in [(true, &mut checked), (false, &mut unchecked)] {
            match reader.read_window(lo, hi) {
                Ok(run) => {
                    let got = run.positions();
                    if lo < hi {
                        assert!(
                            got.start <= lo && hi <= got.end,
                            "{got:?} misses {lo}..{hi}"
                        );
                        assert_eq!(got.start, lo / TUPLES_PER_BLOCK * TUPLES_PER_BLOCK);
                        assert!(got.end <= n);
                    } else {
                        assert!(run.tuples.is_empty());
                    }
                    for (t, pos) in run.tuples.iter().zip(got) {
                        assert_eq!(*t, tuple_at(data, pos));
                    }
                }
                // A window of a verified table, or read without checksums, cannot fail.
                Err(e) => assert!(
                    verifying && verified.is_err(),
                    "window {lo}..{hi} of a {n}-tuple table failed: {e}"
                ),
            }
        }
    }
    // Windows outside the table are refused.
    assert!(checked.read_window(0, n + 1).is_err());
    if n > 0 {
        assert!(checked.read_window(n, n - 1).is_err());
    }
}
