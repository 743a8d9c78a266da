//! Measuring indexes (paper 1, section 5.2): build time, size, lookups in memory and cold
//! on disk, and the windows they return. Shared by the tuner, `lidx index bench`, the demo
//! and the experiments.
//!
//! A lookup is the whole in-memory path: the index's window, then the last-mile
//! search inside it. Each timing loop is generic over the index kind (the enum is matched
//! once, not per key), and folds every answer into a checksum so no work is optimized away;
//! every index's answers are checked against `partition_point`'s ([`Baseline`]).

use std::hint::black_box;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{AnyIndex, AnyParams, Index, IndexKind, lower_bound};
use crate::files::cache;
use crate::storage::{BlockRange, BlockReader, MAX_WINDOW_READ_BLOCKS, TUPLE_SIZE, Table};
use crate::{Error, Result};

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
/// nanoseconds of lidx's [`lower_bound`] and of `partition_point` over the very same
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
    let ours = run(&|w, q| lower_bound(w, q, |&k| k));
    let std = run(&|w, q| w.partition_point(|&k| k < q));
    (ours, std)
}

/// Lookups to time: existing keys drawn at random from the keys (`count`, seeded), and
/// values drawn uniformly from the key range (mostly absent).
#[derive(Clone, Debug, PartialEq)]
pub struct Queries {
    /// Keys of the set.
    pub existing: Vec<u64>,
    /// Uniform values between the smallest and largest key.
    pub random: Vec<u64>,
}

impl Queries {
    /// `count` queries of each sort over sorted `keys` (empty when `keys` is).
    pub fn draw(keys: &[u64], count: usize, seed: u64) -> Queries {
        let (Some(&min), Some(&max)) = (keys.first(), keys.last()) else {
            return Queries {
                existing: Vec::new(),
                random: Vec::new(),
            };
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let existing = (0..count)
            .map(|_| keys[rng.random_range(0..keys.len())])
            .collect();
        let random = (0..count).map(|_| rng.random_range(min..=max)).collect();
        Queries { existing, random }
    }
}

/// `partition_point` over the queries: its time and the sums of the positions it found,
/// which every index's lookups must reproduce.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Baseline {
    /// Nanoseconds per lookup of an existing key.
    pub existing_ns: f64,
    /// Nanoseconds per lookup of a random value.
    pub random_ns: f64,
    /// Sum of the positions found for the existing keys.
    pub existing_sum: u64,
    /// Sum of the positions found for the random values.
    pub random_sum: u64,
}

impl Baseline {
    /// Times `partition_point` over both query sets.
    pub fn measure(keys: &[u64], queries: &Queries) -> Baseline {
        let (existing_ns, existing_sum) = partition_point_ns(keys, &queries.existing);
        let (random_ns, random_sum) = partition_point_ns(keys, &queries.random);
        Baseline {
            existing_ns,
            random_ns,
            existing_sum,
            random_sum,
        }
    }
}

/// What [`measure`] found for one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexMeasurement {
    /// The kind.
    pub kind: IndexKind,
    /// Its parameters, as text.
    pub params: String,
    /// The window width the configuration aims at (a sweep's), or 0.
    pub target_width: u64,
    /// Build time, keys in memory, seconds.
    pub build_s: f64,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Size as a percentage of the table's data (16 bytes per key).
    pub size_pct: f64,
    /// Nanoseconds per lookup of an existing key (window and last mile).
    pub existing_ns: f64,
    /// Nanoseconds per lookup of a random value.
    pub absent_ns: f64,
    /// `partition_point`'s nanoseconds per existing key, for the ratio.
    pub partition_point_ns: f64,
    /// Mean window width over both query sets.
    pub mean_width: f64,
    /// Widest window seen.
    pub max_width: u64,
    /// Mean 4 KiB blocks a window covers.
    pub mean_blocks: f64,
    /// Microseconds per cold `O_DIRECT` lookup on disk (NaN when not measured).
    pub disk_us: f64,
    /// Blocks read per cold lookup (NaN when not measured).
    pub disk_blocks: f64,
    /// Reads per cold lookup (NaN when not measured).
    pub disk_reads: f64,
    /// Last-mile search alone: lidx's [`lower_bound`] and `partition_point`, ns.
    pub last_mile_ns: (f64, f64),
    /// Threads of the parallel build (1: none was timed).
    pub threads: usize,
    /// Build time on `threads` threads, seconds (NaN when `threads` is 1 or the kind builds
    /// on one thread only).
    pub build_threads_s: f64,
    /// Bottom-level segments of a PGM kind built on one thread, and on `threads` threads
    /// (each cut between threads may add one); 0 for the other kinds.
    pub segments: (u64, u64),
}

/// Builds `params` over `keys` and measures it: build time on one thread (and, with
/// `threads` above 1, on that many, for the kinds that build in parallel), size, lookups of
/// `queries` on one thread (checked against `baseline`'s answers), windows, the last mile
/// alone, and with `disk` (the table of `keys`, a number of lookups) that many cold lookups
/// on disk, `O_DIRECT` where the file system allows it. Fails if any lookup finds a wrong
/// position. The index measured is the one built on one thread.
pub fn measure(
    keys: &[u64],
    params: &AnyParams,
    target_width: u64,
    queries: &Queries,
    baseline: &Baseline,
    disk: Option<(&Table, u64)>,
    threads: usize,
) -> Result<(IndexMeasurement, AnyIndex)> {
    let t = Instant::now();
    let index = AnyIndex::build(keys, params)?;
    let build_s = t.elapsed().as_secs_f64();
    let segments = index.pgm_segments().unwrap_or(0) as u64;
    let (mut build_threads_s, mut segments_threads) = (f64::NAN, segments);
    if threads > 1 && index.pgm_segments().is_some() {
        let t = Instant::now();
        let parallel = AnyIndex::build_on(keys, params, threads)?;
        build_threads_s = t.elapsed().as_secs_f64();
        segments_threads = parallel.pgm_segments().unwrap_or(0) as u64;
    }
    let (existing_ns, sum) = lookup_ns(&index, keys, &queries.existing);
    let (absent_ns, absent_sum) = lookup_ns(&index, keys, &queries.random);
    let wrong = || Error::Internal {
        problem: format!(
            "{} {} returned wrong positions",
            index.kind(),
            index.describe()
        ),
    };
    if (sum, absent_sum) != (baseline.existing_sum, baseline.random_sum) {
        return Err(wrong());
    }
    let all: Vec<u64> = queries
        .existing
        .iter()
        .chain(&queries.random)
        .copied()
        .collect();
    let stats = window_stats(&index, &all);
    let last_mile_ns = last_mile_ns(&index, keys, &queries.existing);
    let (mut disk_us, mut disk_blocks, mut disk_reads) = (f64::NAN, f64::NAN, f64::NAN);
    if let Some((table, count)) = disk.filter(|(_, c)| *c > 0) {
        cache::drop_file_pages(table.path())?;
        let mut reader = BlockReader::direct_or_buffered(table)?;
        let probes = &queries.existing[..(count as usize).min(queries.existing.len())];
        let t = Instant::now();
        for &q in probes {
            let w = index.search(q);
            reader.clear_buffer();
            let found = reader.lower_bound(w.lo, w.hi, q, MAX_WINDOW_READ_BLOCKS)?;
            if keys.get(found as usize) != Some(&q) {
                return Err(Error::Internal {
                    problem: format!(
                        "the on-disk lookup of {q} through {} {} went wrong",
                        index.kind(),
                        index.describe()
                    ),
                });
            }
        }
        let per = probes.len().max(1) as f64;
        disk_us = t.elapsed().as_secs_f64() * 1e6 / per;
        let io = reader.stats();
        disk_blocks = io.blocks as f64 / per;
        disk_reads = io.reads as f64 / per;
    }
    let size = index.size_in_bytes();
    let row = IndexMeasurement {
        kind: index.kind(),
        params: index.describe(),
        target_width,
        build_s,
        size_bytes: size,
        size_pct: 100.0 * size as f64 / (keys.len() as f64 * TUPLE_SIZE as f64),
        existing_ns,
        absent_ns,
        partition_point_ns: baseline.existing_ns,
        mean_width: stats.mean_width,
        max_width: stats.max_width,
        mean_blocks: stats.mean_blocks,
        disk_us,
        disk_blocks,
        disk_reads,
        last_mile_ns,
        threads,
        build_threads_s,
        segments: (segments, segments_threads),
    };
    Ok((row, index))
}
