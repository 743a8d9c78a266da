//! Paper 1's cost model (section 3.2): I/O in the affine model — a read of k bytes costs
//! `latency + k / bandwidth`, from the storage profile `lidx bench disk` saves — plus the CPU
//! terms of section 3.3: sort-merge compares about |R| + |S| keys, an index nested loop join
//! searches |R| windows of W positions (log2 W comparisons each), a hash join hashes |R| and
//! probes |S|. It predicts each method's time; the INLJ reads `min(|R|, |S| / W)` windows,
//! at random below |R| = |S| / W (the crossover it reports) and in order, at the sequential
//! cost, beyond it, where it reads all of S anyway; and it reports the |R| at which its time
//! reaches the sort-merge join's.
//!
//! A sort-merge join (and an INLJ whose windows tile the inner table) reads its two tables
//! in turn: on a disk that seeks, each switch between them costs a random read (the
//! difference between the profile's random and sequential costs; about nothing on an SSD).
//! The hash join reads its outer table whole before the inner one.
//!
//! Threads divide the CPU terms. Random reads in flight at once (threads × I/O depth)
//! divide the INLJ's read time by the speedup the profile measured at that queue depth
//! ([`StorageProfile::random_speedup`]); sequential scans are taken as bandwidth-bound.

use crate::storage::profile::{AffineCost, StorageProfile};
use crate::storage::{BLOCK_SIZE, TUPLE_SIZE};

/// CPU costs per elementary step, in nanoseconds. Assumptions of this model, not
/// measurements; order-of-magnitude figures for a current x86 core.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuCosts {
    /// One key comparison in a merge or a search.
    pub compare_ns: f64,
    /// One hash-table insert or probe.
    pub hash_ns: f64,
    /// One index search (the model, before the last mile).
    pub search_ns: f64,
}

impl Default for CpuCosts {
    fn default() -> Self {
        Self {
            compare_ns: 2.0,
            hash_ns: 30.0,
            search_ns: 50.0,
        }
    }
}

/// A join to estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JoinShape {
    /// Tuples of the outer table |R|.
    pub outer: u64,
    /// Tuples of the inner table |S|.
    pub inner: u64,
    /// Mean window of the inner table's index, in positions (INLJ).
    pub window: f64,
    /// Bytes per sequential read of a scanned table.
    pub read_bytes: u64,
    /// Bytes per tuple.
    pub tuple_bytes: u64,
    /// Threads sharing the work (CPU divides among them; their random reads overlap).
    pub threads: u64,
    /// Window reads each INLJ thread keeps in flight.
    pub io_depth: u64,
}

/// Predicted seconds of each method, and the crossover.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Index nested loop join.
    pub inlj_s: f64,
    /// Sort-merge join (inputs sorted).
    pub merge_s: f64,
    /// Hash join, build included.
    pub hash_s: f64,
    /// |S| / W: beyond this |R|, INLJ reads every window of the inner table anyway.
    pub crossover_outer: f64,
    /// The |R| at which INLJ's predicted time reaches the sort-merge join's (its random
    /// window reads against scanning |S|; the scan of R, common to both, left out).
    pub break_even_outer: f64,
}

/// The methods the model weighs against each other: what `lidx join --method auto`
/// chooses among, and what the join experiment judges its picks by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Choice {
    /// Index nested loop join (both tables sorted).
    Inlj,
    /// Sort-merge join (both tables sorted).
    Merge,
    /// Hash join (any order).
    Hash,
}

impl Estimate {
    /// The predicted seconds of `choice`.
    pub fn seconds(&self, choice: Choice) -> f64 {
        match choice {
            Choice::Inlj => self.inlj_s,
            Choice::Merge => self.merge_s,
            Choice::Hash => self.hash_s,
        }
    }
}

/// The method predicted fastest: the least of `predicted` over the methods the inputs
/// allow (the index nested loop and sort-merge joins need both tables sorted; the hash join
/// takes any order); ties go to hash, then merge. `predicted` gives a method's seconds: one
/// estimate's ([`Estimate::seconds`]), or each method's own estimate where they ran with
/// different settings (the join experiment's cells).
pub fn fastest(both_sorted: bool, predicted: impl Fn(Choice) -> f64) -> Choice {
    let allowed: &[Choice] = if both_sorted {
        &[Choice::Hash, Choice::Merge, Choice::Inlj]
    } else {
        &[Choice::Hash]
    };
    allowed
        .iter()
        .copied()
        .min_by(|&a, &b| predicted(a).total_cmp(&predicted(b)))
        .unwrap_or(Choice::Hash)
}

/// Paper 1's Fig. 8 (joins on a hard disk) predicted for a machine without one: the three
/// methods on the assumed hard disk ([`assumed_hdd`]), one thread, one read in flight, for
/// `outer` and `inner` tuples with every read a window of `window` tuples (paper 1 streams
/// pages) and the INLJ's windows that wide.
pub fn predict_hdd(outer: u64, inner: u64, window: u64) -> Estimate {
    let tuple = TUPLE_SIZE as u64;
    let shape = JoinShape {
        outer,
        inner,
        window: window as f64,
        read_bytes: window * tuple,
        tuple_bytes: tuple,
        threads: 1,
        io_depth: 1,
    };
    estimate(&shape, &assumed_hdd(), &CpuCosts::default())
}

/// Reads of a scan of `tuples` tuples.
fn scan_reads(tuples: u64, shape: &JoinShape) -> f64 {
    (tuples * shape.tuple_bytes).div_ceil(shape.read_bytes.max(1)) as f64
}

fn scan_s(tuples: u64, shape: &JoinShape, seq: &AffineCost) -> f64 {
    let bytes = tuples * shape.tuple_bytes;
    let reads = bytes.div_ceil(shape.read_bytes.max(1));
    reads as f64 * seq.read_us(shape.read_bytes.min(bytes.max(1))) / 1e6
}

/// Predicts the three methods on `profile`'s device.
pub fn estimate(shape: &JoinShape, profile: &StorageProfile, cpu: &CpuCosts) -> Estimate {
    let (r, s) = (shape.outer as f64, shape.inner as f64);
    let window = shape.window.max(1.0);
    let window_bytes = ((window * shape.tuple_bytes as f64) / BLOCK_SIZE as f64)
        .ceil()
        .max(1.0) as u64
        * BLOCK_SIZE as u64;
    let windows_read = r.min(s / window);
    let threads = shape.threads.max(1) as f64;
    let in_flight = shape.threads.max(1).saturating_mul(shape.io_depth.max(1));
    // Below the crossover the windows lie apart: random reads. Beyond it they tile S in
    // order, so the reads are sequential ("essentially the same as linearly scanning both
    // tables", section 3.2), which matters on a disk that seeks.
    let per_window_s = profile.random.read_us(window_bytes) / 1e6;
    let window_read_s = if r >= s / window {
        profile.sequential.read_us(window_bytes) / 1e6
    } else {
        per_window_s
    };
    let per_key_cpu_s = (cpu.search_ns + window.log2().max(1.0) * cpu.compare_ns) / 1e9;
    // Two tables read in turn make a disk that seeks move between them: each switch costs a
    // random read where a sequential one was counted (nothing on a device without seeks).
    let seek_s = |bytes: u64| {
        (profile.random.read_us(bytes) - profile.sequential.read_us(bytes)).max(0.0) / 1e6
    };
    let switches = |a: f64, b: f64| 2.0 * a.min(b);
    let outer_reads = scan_reads(shape.outer, shape);
    let inlj_seeks = if r >= s / window {
        switches(outer_reads, windows_read) * seek_s(window_bytes)
    } else {
        0.0 // the windows are random reads already
    };
    let inlj_s = scan_s(shape.outer, shape, &profile.sequential)
        + windows_read * window_read_s / profile.random_speedup(in_flight)
        + inlj_seeks
        + r * per_key_cpu_s / threads;
    let merge_s = scan_s(shape.outer, shape, &profile.sequential)
        + scan_s(shape.inner, shape, &profile.sequential)
        + switches(outer_reads, scan_reads(shape.inner, shape)) * seek_s(shape.read_bytes)
        + (r + s) * cpu.compare_ns / 1e9 / threads;
    let hash_s = scan_s(shape.outer, shape, &profile.sequential)
        + scan_s(shape.inner, shape, &profile.sequential)
        + (r + s) * cpu.hash_ns / 1e9 / threads;
    let inner_scan_s = scan_s(shape.inner, shape, &profile.sequential) + s * cpu.compare_ns / 1e9;
    Estimate {
        inlj_s,
        merge_s,
        hash_s,
        crossover_outer: s / window,
        break_even_outer: inner_scan_s / (per_window_s + per_key_cpu_s),
    }
}

pub use crate::storage::profile::{assumed_hdd, assumed_ssd};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pick_is_the_least_prediction_among_the_methods_allowed() {
        let e = Estimate {
            inlj_s: 1.0,
            merge_s: 2.0,
            hash_s: 3.0,
            crossover_outer: 0.0,
            break_even_outer: 0.0,
        };
        assert_eq!(fastest(true, |c| e.seconds(c)), Choice::Inlj);
        assert_eq!(
            fastest(false, |c| e.seconds(c)),
            Choice::Hash,
            "unsorted: hash only"
        );
        assert_eq!(fastest(true, |_| 1.0), Choice::Hash, "ties go to hash");
    }

    #[test]
    fn windows_that_tile_the_inner_table_cost_sequential_reads() {
        let hdd = assumed_hdd();
        let cpu = CpuCosts::default();
        let shape = |outer| JoinShape {
            outer,
            inner: 4_000_000,
            window: 256.0,
            read_bytes: 4096,
            tuple_bytes: TUPLE_SIZE as u64,
            threads: 1,
            io_depth: 1,
        };
        // Ratio 1: 15,625 windows in order, each a sequential 4 KiB read, as merge's are.
        let equal = estimate(&shape(4_000_000), &hdd, &cpu);
        assert!(equal.inlj_s < 2.0 * equal.merge_s, "{equal:?}");
        // Both read the two tables in turn, 4 KiB at a time: a seek per switch.
        assert!(equal.merge_s > 2.0 * 15_625.0 * 0.009, "{equal:?}");
        // On a device without seeks (random costs what sequential does) switching is free.
        let ssd = estimate(&shape(4_000_000), &assumed_ssd(), &cpu);
        assert!(ssd.merge_s < 2.0 * 15_625.0 * 0.0002, "{ssd:?}");
        // Ratio 1000: 4,000 windows far apart, each a seek.
        let small = estimate(&shape(4_000), &hdd, &cpu);
        assert!(small.inlj_s > 4_000.0 * 0.009, "{small:?}");
    }

    #[test]
    fn inlj_wins_small_outer_tables_and_loses_near_equal_sizes() {
        let profile = assumed_ssd();
        let cpu = CpuCosts::default();
        let shape = |outer| JoinShape {
            outer,
            inner: 100_000_000,
            window: 256.0,
            read_bytes: 1 << 20,
            tuple_bytes: TUPLE_SIZE as u64,
            threads: 1,
            io_depth: 1,
        };
        // Ratio 10,000: a few random reads beat scanning 1.6 GB; ratio 1: scanning wins.
        let small = estimate(&shape(10_000), &profile, &cpu);
        assert!(
            small.inlj_s < small.merge_s && small.inlj_s < small.hash_s,
            "{small:?}"
        );
        let equal = estimate(&shape(100_000_000), &profile, &cpu);
        assert!(equal.merge_s < equal.inlj_s, "{equal:?}");
        assert_eq!(small.crossover_outer, 100_000_000.0 / 256.0);
        let r = small.break_even_outer as u64;
        let below = estimate(&shape(r / 2), &profile, &cpu);
        let above = estimate(&shape(r * 2), &profile, &cpu);
        assert!(
            below.inlj_s < below.merge_s && above.inlj_s > above.merge_s,
            "{r}: {below:?} {above:?}"
        );
    }
}
