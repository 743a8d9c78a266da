//! Loads arbitrary bytes as a storage profile (the JSON `lidx bench disk` saves, which users
//! may edit). Outcome: `Err`, or a profile whose every number `check` accepts, from which
//! every derived time (a read's predicted cost, a latency model's read time, the speedup of
//! queued reads, the join cost model's estimates) is finite and not negative, computed
//! without panicking; and which saves and loads back unchanged.

use std::time::{Duration, Instant};

use lidx::join::cost::{CpuCosts, JoinShape, estimate};
use lidx::storage::profile::{LatencyModel, MAX_READ_TIME, StorageProfile};

/// Read sizes the derived times are computed for: none, one byte, a block, a large read and
/// the largest count of bytes.
const SIZES: [u64; 5] = [0, 1, 4096, 4 << 20, u64::MAX];

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("profile.json");
    std::fs::write(&path, data).expect("write the profile");
    let Ok(profile) = StorageProfile::load(&path) else {
        return;
    };
    assert!(profile.check().is_ok(), "load accepted what check refuses");
    let finite = |what: &str, v: f64| {
        assert!(v.is_finite() && v >= 0.0, "{what} is {v} for {profile:?}");
    };
    for cost in [profile.sequential, profile.random] {
        for bytes in SIZES {
            finite("read_us", cost.read_us(bytes));
            for model in [LatencyModel::counted(cost), LatencyModel::timed(cost)] {
                let t = model.read_time(bytes);
                assert!(t <= MAX_READ_TIME, "read_time {t:?} for {cost:?}");
            }
            // A counting model never sleeps, whatever the time.
            let counted = LatencyModel::counted(cost);
            assert_eq!(
                counted.finish(Instant::now(), bytes),
                counted.read_time(bytes)
            );
        }
        // A timed read of nothing on a device of no latency returns at once.
        if cost.latency_us == 0.0 {
            let t = LatencyModel::timed(cost).finish(Instant::now(), 0);
            assert_eq!(t, Duration::ZERO);
        }
    }
    for depth in [0, 1, 2, 32, 1024, u64::MAX] {
        let s = profile.random_speedup(depth);
        assert!(s.is_finite() && s >= 1.0, "speedup {s} at depth {depth}");
    }
    let shape = JoinShape {
        outer: 1_000,
        inner: 1_000_000,
        window: 256.0,
        read_bytes: 1 << 20,
        tuple_bytes: 16,
        threads: 2,
        io_depth: 8,
    };
    let e = estimate(&shape, &profile, &CpuCosts::default());
    for (what, v) in [
        ("inlj_s", e.inlj_s),
        ("merge_s", e.merge_s),
        ("hash_s", e.hash_s),
        ("crossover_outer", e.crossover_outer),
        ("break_even_outer", e.break_even_outer),
    ] {
        finite(what, v);
    }
    profile.save(&path).expect("save the profile");
    let again = StorageProfile::load(&path).expect("load the profile saved");
    assert_eq!(again, profile, "a saved profile loads back unchanged");
}
