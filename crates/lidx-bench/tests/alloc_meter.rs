//! The counting allocator measures what a structure holds, and each updatable kind's own
//! size report agrees with it (this test binary installs the counting allocator, as the
//! `lidx` binary does).

use lidx::updatable::{Kind, Workload};
use lidx_bench::alloc_meter::{Counting, live_bytes};
use lidx_bench::updatable::{RunOptions, run};

#[global_allocator]
static ALLOCATOR: Counting<std::alloc::System> = Counting(std::alloc::System);

/// One test: the meter counts the whole process, and `cargo test` runs a binary's tests on
/// threads side by side, so two tests would count each other's allocations.
#[test]
fn the_meter_counts_what_is_held() {
    a_vector_is_counted_at_its_capacity_and_freed();
    every_kind_reports_about_the_bytes_it_holds();
}

fn a_vector_is_counted_at_its_capacity_and_freed() {
    let before = live_bytes().expect("the counting allocator is installed");
    let v: Vec<u64> = Vec::with_capacity(1 << 20);
    let held = live_bytes().expect("the counting allocator is installed") - before;
    assert!((8 << 20..(8 << 20) + 4096).contains(&held), "{held}");
    drop(v);
    let after = live_bytes().expect("the counting allocator is installed") - before;
    assert!(after.abs() < 4096, "{after}");
}

fn every_kind_reports_about_the_bytes_it_holds() {
    let keys: Vec<u64> = (0..200_000u64).map(|i| i * i / 3 + i * 7).collect();
    for kind in Kind::ALL {
        let o = RunOptions {
            kind,
            workload: Workload::WriteOnly,
            ops: None,
            scan_len: 10,
            seed: 3,
            verify: false,
            sample_every: 100,
            alex_density: None,
            time_phases: false,
        };
        let r = run(&keys, None, &o).expect("a run");
        let measured = r.measured_bytes.expect("a measured size") as f64;
        let reported = r.size_bytes as f64;
        // 200K entries of 16 bytes: no index holds less.
        assert!(measured >= 200_000.0 * 16.0, "{kind}: {measured}");
        let ratio = reported / measured;
        eprintln!("{kind}: reported {reported}, measured {measured}, ratio {ratio:.3}");
        assert!(
            (0.8..=1.25).contains(&ratio),
            "{kind}: reported {reported}, measured {measured}"
        );
    }
}
