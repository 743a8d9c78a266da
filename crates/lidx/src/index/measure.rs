//! Timing and window statistics of lookups, shared by `lidx index bench` and the tuner.
//!
//! A lookup is the whole in-memory path: the index's window, then the branchless last-mile
//! search inside it. Each timing loop is generic over the index kind (the enum is matched
//! once, not per key), and folds every answer into a checksum so no work is optimized away.

use std::hint::black_box;
use std::time::Instant;

use super::{AnyIndex, Index, lower_bound};
use crate::storage::BlockRange;

fn lookups<I: Index>(index: &I, keys: &[u64], queries: &[u64]) -> u64 {
    let mut sum = 0u64;
    for &q in queries {
        let w = index.search(q);
        let inside = keys.get(w.lo as usize..w.hi as usize).unwrap_or_default();
        sum = sum.wrapping_add(w.lo + lower_bound(inside, q, |&k| k) as u64);
    }
    sum
}

/// Mean nanoseconds per full lookup (window and last-mile search) of `queries` over `keys`,
/// the keys the index was built on. Also returns the sum of the positions found, which
/// equals [`partition_point_ns`]'s when every answer is right.
pub fn lookup_ns(index: &AnyIndex, keys: &[u64], queries: &[u64]) -> (f64, u64) {
    let start = Instant::now();
    let sum = match index {
        AnyIndex::Pgm(i) => lookups(i, keys, black_box(queries)),
        AnyIndex::SampledPgm(i) => lookups(i, keys, black_box(queries)),
        AnyIndex::RadixSpline(i) => lookups(i, keys, black_box(queries)),
        AnyIndex::Rmi(i) => lookups(i, keys, black_box(queries)),
        AnyIndex::BTree(i) => lookups(i, keys, black_box(queries)),
        AnyIndex::Binary(i) => lookups(i, keys, black_box(queries)),
    };
    let ns = start.elapsed().as_nanos() as f64 / queries.len().max(1) as f64;
    (ns, black_box(sum))
}

/// Mean nanoseconds per `keys.partition_point` lookup of `queries` (the no-index baseline),
/// and the sum of the positions found.
pub fn partition_point_ns(keys: &[u64], queries: &[u64]) -> (f64, u64) {
    let start = Instant::now();
    let mut sum = 0u64;
    for &q in black_box(queries) {
        sum = sum.wrapping_add(keys.partition_point(|&k| k < q) as u64);
    }
    let ns = start.elapsed().as_nanos() as f64 / queries.len().max(1) as f64;
    (ns, black_box(sum))
}

/// Windows an index returns for a set of queries.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindowStats {
    /// Mean width in positions.
    pub mean_width: f64,
    /// Largest width seen.
    pub max_width: u64,
    /// Mean number of 4 KiB blocks a window covers (what reading it costs).
    pub mean_blocks: f64,
}

/// Width and block statistics of `index`'s windows for `queries`.
pub fn window_stats(index: &AnyIndex, queries: &[u64]) -> WindowStats {
    let (mut width, mut blocks, mut max) = (0u64, 0u64, 0u64);
    for &q in queries {
        let w = index.search(q);
        width += w.width();
        max = max.max(w.width());
        blocks += BlockRange::for_window(w.lo, w.hi).count;
    }
    let count = queries.len().max(1) as f64;
    WindowStats {
        mean_width: width as f64 / count,
        max_width: max,
        mean_blocks: blocks as f64 / count,
    }
}
