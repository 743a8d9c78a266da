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

/// Runs `f` over all queries `REPEATS` times; the fastest run's mean nanoseconds per query
/// (the least disturbed by the rest of the machine) and `f`'s result.
const REPEATS: usize = 3;

fn best_of(queries: &[u64], mut f: impl FnMut(&[u64]) -> u64) -> (f64, u64) {
    let mut best = f64::INFINITY;
    let mut sum = 0;
    for _ in 0..REPEATS {
        let start = Instant::now();
        // The barrier on the result keeps the (pure) work inside the timed region.
        sum = black_box(f(black_box(queries)));
        best = best.min(start.elapsed().as_nanos() as f64 / queries.len().max(1) as f64);
    }
    (best, black_box(sum))
}

/// Mean nanoseconds per full lookup (window and last-mile search) of `queries` over `keys`,
/// the keys the index was built on (best of three runs). Also returns the sum of the
/// positions found, which equals [`partition_point_ns`]'s when every answer is right.
pub fn lookup_ns(index: &AnyIndex, keys: &[u64], queries: &[u64]) -> (f64, u64) {
    match index {
        AnyIndex::Pgm(i) => best_of(queries, |q| lookups(i, keys, q)),
        AnyIndex::SampledPgm(i) => best_of(queries, |q| lookups(i, keys, q)),
        AnyIndex::RadixSpline(i) => best_of(queries, |q| lookups(i, keys, q)),
        AnyIndex::Rmi(i) => best_of(queries, |q| lookups(i, keys, q)),
        AnyIndex::BTree(i) => best_of(queries, |q| lookups(i, keys, q)),
        AnyIndex::Binary(i) => best_of(queries, |q| lookups(i, keys, q)),
    }
}

/// Mean nanoseconds per `keys.partition_point` lookup of `queries` (the no-index baseline,
/// best of three runs), and the sum of the positions found.
pub fn partition_point_ns(keys: &[u64], queries: &[u64]) -> (f64, u64) {
    best_of(queries, |qs| {
        qs.iter().fold(0u64, |sum, &q| {
            sum.wrapping_add(keys.partition_point(|&k| k < q) as u64)
        })
    })
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

/// The last-mile search alone, inside the windows `index` returns for `queries`: mean
/// nanoseconds of the branchless [`lower_bound`] and of `partition_point` over the very same
/// windows (best of three runs each).
pub fn last_mile_ns(index: &AnyIndex, keys: &[u64], queries: &[u64]) -> (f64, f64) {
    let windows: Vec<(u64, &[u64])> = queries
        .iter()
        .map(|&q| {
            let w = index.search(q);
            (
                q,
                keys.get(w.lo as usize..w.hi as usize).unwrap_or_default(),
            )
        })
        .collect();
    let run = |f: &dyn Fn(&[u64], u64) -> usize| {
        let mut best = f64::INFINITY;
        for _ in 0..REPEATS {
            let start = Instant::now();
            let sum = windows
                .iter()
                .fold(0usize, |s, &(q, w)| s.wrapping_add(f(black_box(w), q)));
            black_box(sum);
            best = best.min(start.elapsed().as_nanos() as f64 / windows.len().max(1) as f64);
        }
        best
    };
    let branchless = run(&|w, q| lower_bound(w, q, |&k| k));
    let std = run(&|w, q| w.partition_point(|&k| k < q));
    (branchless, std)
}
