//! Decodes arbitrary bytes as an index file, and each kind's payload without the file's
//! checksum in front. Outcome: `Err`, or an index whose searches and accessors return
//! without panicking; a file that also passes `verify_bytes` is checked against keys its
//! header allows (`check_keys`, which searches from hints too), which must return, not
//! panic.

use lidx::index::file::{self, KeysFingerprint};
use lidx::index::{AnyIndex, IndexKind};

/// The most keys a verified file is checked against.
const MAX_CHECKED_KEYS: u64 = 1 << 16;

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    if let Ok((index, fp)) = file::decode(data) {
        assert_eq!(index.len(), fp.n);
        for q in [0, 1, fp.min_key, fp.max_key, u64::MAX] {
            std::hint::black_box(index.search(q));
        }
    }
    if let Ok((index, fp)) = file::verify_bytes(data) {
        assert!(
            file::decode(data).is_ok(),
            "verified bytes that do not decode"
        );
        if fp.n <= MAX_CHECKED_KEYS {
            let _ = std::hint::black_box(file::check_keys(&index, &spread(&fp)));
        }
    }
    // The first byte picks a kind; the rest is its payload.
    if let Some((&tag, payload)) = data.split_first() {
        let kind = IndexKind::ALL[tag as usize % IndexKind::ALL.len()];
        if let Ok(index) = AnyIndex::decode(kind, payload) {
            for q in [0, 1, 1 << 32, u64::MAX - 1, u64::MAX] {
                std::hint::black_box(index.search(q));
            }
            std::hint::black_box((index.max_width(), index.size_in_bytes(), index.describe()));
        }
    }
}

/// `fp.n` sorted keys from its smallest key to its largest, evenly spread.
fn spread(fp: &KeysFingerprint) -> Vec<u64> {
    let range = u128::from(fp.max_key.saturating_sub(fp.min_key));
    let steps = u128::from(fp.n.saturating_sub(1).max(1));
    (0..fp.n)
        .map(|i| fp.min_key + (range * u128::from(i) / steps) as u64)
        .collect()
}
