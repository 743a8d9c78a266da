//! The demo's updatable indexes: paper 3's balanced workload on every kind, on one thread
//! and on two.

use lidx::data::{Distribution, GenParams, generate};
use lidx::updatable::{Kind, Workload};

use super::{Say, heading};
use crate::text::human_bytes;
use crate::updatable::baselines::ConcurrentKind;
use crate::updatable::threads::{ThreadOptions, run_threads};
use crate::updatable::{PlanOptions, RunOptions, make_plan, run};

/// Section 8c: paper 3's updatable indexes on its balanced workload, each checked against
/// a `BTreeMap` as it runs.
pub(super) fn updatable_indexes(say: &mut Say<'_>) -> anyhow::Result<()> {
    heading(
        say,
        "8c. Updatable indexes (paper 3): 200K lognormal keys, half bulk-loaded, then 50% lookups / 50% inserts (the first 20K also checked against a BTreeMap)",
    )?;
    let keys = generate(&GenParams::new(Distribution::Lognormal, 200_000, 42))?;
    for kind in Kind::ALL {
        let options = RunOptions {
            kind,
            workload: Workload::Balanced,
            ops: None,
            scan_len: 100,
            seed: 42,
            verify: true,
            sample_every: 100,
            alex_density: None,
            time_phases: false,
        };
        // A checked run (every answer against a BTreeMap, the structure walked) that also
        // times each insert's phases (paper 3, Fig. 3), then a timed one.
        let checked = run(
            &keys,
            None,
            &RunOptions {
                ops: Some(20_000),
                time_phases: true,
                ..options
            },
        )?;
        let r = run(
            &keys,
            None,
            &RunOptions {
                verify: false,
                ..options
            },
        )?;
        say!(
            say,
            "   {:<12} {:>5.2} M ops/s, p99 {:>5} ns, {} in memory{}",
            kind.name(),
            r.ops_per_s / 1e6,
            r.p99_ns,
            human_bytes(r.size_bytes),
            checked
                .phases
                .filter(|p| p.undivided_ns == 0.0)
                .map_or(String::new(), |p| format!(
                    "; an insert: search {:.0} ns, the rest {:.0}",
                    p.search_ns,
                    p.collision_ns + p.statistics_ns + p.smo_ns
                ))
        );
    }
    say!(
        say,
        "   (`lidx updatable run` runs any kind on any of paper 3's workloads)"
    );
    concurrent_indexes(&keys, say)
}

/// Section 8d: the concurrent kinds (paper 3, section 4.2) on the same workload from two
/// threads, every answer checked against what the plan allows.
fn concurrent_indexes(keys: &[u64], say: &mut Say<'_>) -> anyhow::Result<()> {
    heading(
        say,
        "8d. Concurrent updatable indexes (paper 3, Figs. 4-6): the same workload from 2 threads, every answer checked against what the plan allows",
    )?;
    let plan = make_plan(
        keys,
        None,
        &PlanOptions {
            workload: Workload::Balanced,
            ops: None,
            scan_len: 100,
            seed: 42,
        },
    )?;
    for kind in ConcurrentKind::ALL {
        let options = ThreadOptions {
            kind,
            threads: 2,
            verify: true,
            sample_every: 100,
        };
        let r = run_threads(&plan, &options)?;
        anyhow::ensure!(r.verified, "{kind}: the checked run was not verified");
        say!(
            say,
            "   {:<16} {:>5.2} M ops/s with the checks",
            kind.name(),
            r.ops_per_s / 1e6,
        );
    }
    say!(
        say,
        "   (`lidx updatable run --threads N`; `lidx experiment updatable-concurrent` sets them against threads)"
    );
    Ok(())
}
