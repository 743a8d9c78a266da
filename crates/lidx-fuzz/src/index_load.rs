//! Decodes arbitrary bytes as an index file, and each kind's payload without the file's
//! checksum in front. Outcome: `Err`, or an index whose searches and accessors return
//! without panicking.

use lidx::index::{AnyIndex, IndexKind, file};

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    if let Ok((index, fp)) = file::decode(data) {
        assert_eq!(index.len(), fp.n);
        for q in [0, 1, fp.min_key, fp.max_key, u64::MAX] {
            std::hint::black_box(index.search(q));
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
