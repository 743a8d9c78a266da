//! One run of an updatable index on one of paper 3's workloads (GRE, section 3.3): the
//! bulk load timed, then every operation of the plan in order, the total time giving
//! throughput and mean latency after the bulk load, and 1% of the operations timed one by
//! one into a histogram for the tail (paper 3, Figs. 10 and 11). With `verify`, a
//! `BTreeMap` answers every operation too and the first difference is an error, and the
//! index's structure is walked and checked at the end.

pub mod baselines;
pub mod threads;

use std::hint::black_box;
use std::time::Instant;

use anyhow::bail;
use hdrhistogram::Histogram;
use lidx::updatable::{
    Alex, AlexParams, Art, BTree, Counters, DynamicPgm, Kind, Lipp, Op, OrderedMap, Phase,
    PhaseClock, Plan, Updatable, Workload, plan, plan_shift,
};
use serde::Serialize;

use crate::alloc_meter::live_bytes;

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// The index kind.
    pub kind: Kind,
    /// The workload.
    pub workload: Workload,
    /// At most this many operations (`None`: the workload's own count).
    pub ops: Option<usize>,
    /// Entries per scan.
    pub scan_len: usize,
    /// Seed of the plan.
    pub seed: u64,
    /// Check every answer against a `BTreeMap`.
    pub verify: bool,
    /// Time every this-many-th operation alone (100: 1%, as paper 3).
    pub sample_every: usize,
    /// The ALEX-like index's data nodes built this full (paper 3's ALEX-M, Fig. 9;
    /// [`AlexParams::with_density`]); `None`: ALEX's 0.7. Only `alex` takes it.
    pub alex_density: Option<f64>,
    /// Time every insert's phases (paper 3, Fig. 3; [`InsertPhases`]); the clock's reads
    /// slow the inserts, so such a run's throughput is not comparable with others'.
    pub time_phases: bool,
}

impl RunOptions {
    /// The kind's name as the run reports it: `alex-m` for ALEX at another density.
    pub fn kind_name(&self) -> &'static str {
        match (self.kind, self.alex_density) {
            (Kind::Alex, Some(_)) => "alex-m",
            (kind, _) => kind.name(),
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The index kind.
    pub kind: String,
    /// The workload.
    pub workload: String,
    /// Keys in the key set.
    pub keys: u64,
    /// Entries bulk-loaded.
    pub bulk_loaded: u64,
    /// Seconds the bulk load took.
    pub bulk_load_s: f64,
    /// Operations after it: lookups, inserts, removals, scans.
    pub mix: [usize; 4],
    /// Seconds the operations took (with `verify`, the checks included).
    pub seconds: f64,
    /// Operations per second.
    pub ops_per_s: f64,
    /// Mean latency, nanoseconds.
    pub mean_ns: f64,
    /// Operations timed alone.
    pub sampled: u64,
    /// Median of those, nanoseconds.
    pub p50_ns: u64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: u64,
    /// 99.9th percentile, nanoseconds.
    pub p999_ns: u64,
    /// Their variance, ns².
    pub variance_ns2: f64,
    /// The sampled lookups alone (paper 3, Fig. 10).
    pub lookup_tail: Tail,
    /// The sampled inserts alone (paper 3, Fig. 11).
    pub insert_tail: Tail,
    /// Bytes of the index at the end, the whole structure, as the index reports them.
    pub size_bytes: u64,
    /// Bytes the allocator holds for the index at the end (`None` without the counting
    /// allocator, [`crate::alloc_meter`]).
    pub measured_bytes: Option<u64>,
    /// Where the work went.
    pub counters: Counters,
    /// Where the inserts' time went, where the run timed their phases.
    pub phases: Option<InsertPhases>,
    /// Whether every answer was checked.
    pub verified: bool,
    /// Lookups that found their key.
    pub found: u64,
    /// The wrapping sum of the payloads lookups found and of the keys and payloads scans
    /// read: equal for two indexes given the same plan, so a replay outside lidx can be
    /// checked against it.
    pub checksum: u64,
}

/// Where the inserts' time went, phase by phase (paper 3, Fig. 3): mean nanoseconds per
/// insert in each [`Phase`], each lap less what reading the clock costs.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct InsertPhases {
    /// Inserts timed.
    pub inserts: u64,
    pub search_ns: f64,
    pub collision_ns: f64,
    pub statistics_ns: f64,
    pub smo_ns: f64,
    /// The whole insert, for a kind that does not divide it.
    pub undivided_ns: f64,
    /// What a lap of the clock costs by itself (the least of many), taken off each lap.
    pub lap_cost_ns: f64,
}

/// A [`PhaseClock`] on the time-stamp counter, summing each phase's ticks.
struct PhaseTimer {
    clock: quanta::Clock,
    last: u64,
    inserts: u64,
    ticks: [u64; Phase::ALL.len()],
    laps: [u64; Phase::ALL.len()],
}

impl PhaseTimer {
    fn new() -> PhaseTimer {
        PhaseTimer {
            clock: quanta::Clock::new(),
            last: 0,
            inserts: 0,
            ticks: [0; Phase::ALL.len()],
            laps: [0; Phase::ALL.len()],
        }
    }

    /// The ticks of a lap that times nothing: the least of many.
    fn lap_cost(&self) -> u64 {
        (0..10_000)
            .map(|_| {
                let a = self.clock.raw();
                let b = black_box(self.clock.raw());
                b.saturating_sub(a)
            })
            .min()
            .unwrap_or(0)
    }

    fn report(&self) -> InsertPhases {
        let cost = self.lap_cost();
        let per = |p: Phase| {
            let i = p as usize;
            let ticks = self.ticks[i].saturating_sub(cost * self.laps[i]);
            self.clock.delta_as_nanos(0, ticks) as f64 / self.inserts.max(1) as f64
        };
        InsertPhases {
            inserts: self.inserts,
            search_ns: per(Phase::Search),
            collision_ns: per(Phase::Collision),
            statistics_ns: per(Phase::Statistics),
            smo_ns: per(Phase::Smo),
            undivided_ns: per(Phase::Undivided),
            lap_cost_ns: self.clock.delta_as_nanos(0, cost) as f64,
        }
    }
}

impl PhaseClock for PhaseTimer {
    #[inline]
    fn start(&mut self) {
        self.inserts += 1;
        self.last = self.clock.raw();
    }

    #[inline]
    fn lap(&mut self, phase: Phase) {
        let now = self.clock.raw();
        self.ticks[phase as usize] += now.saturating_sub(self.last);
        self.laps[phase as usize] += 1;
        self.last = now;
    }
}

/// Latencies of sampled operations of one kind.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Tail {
    /// Operations timed.
    pub sampled: u64,
    /// Median, nanoseconds.
    pub p50_ns: u64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: u64,
    /// 99.9th percentile, nanoseconds.
    pub p999_ns: u64,
}

impl Tail {
    pub(crate) fn of(h: &Histogram<u64>) -> Tail {
        Tail {
            sampled: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
        }
    }
}

/// What a run does, independent of the index: the workload, at most `ops` operations
/// (`None`: the workload's own count), scans of `scan_len`, seeded by `seed`.
#[derive(Clone, Copy, Debug)]
pub struct PlanOptions {
    /// The workload.
    pub workload: Workload,
    /// At most this many operations.
    pub ops: Option<usize>,
    /// Entries per scan.
    pub scan_len: usize,
    /// Seed of the plan.
    pub seed: u64,
}

impl From<&RunOptions> for PlanOptions {
    fn from(o: &RunOptions) -> PlanOptions {
        PlanOptions {
            workload: o.workload,
            ops: o.ops,
            scan_len: o.scan_len,
            seed: o.seed,
        }
    }
}

/// The plan `o` makes over `keys` (sorted); the shift workload inserts `shift_to` (sorted).
pub fn make_plan(keys: &[u64], shift_to: Option<&[u64]>, o: &PlanOptions) -> anyhow::Result<Plan> {
    Ok(match (o.workload, shift_to) {
        (Workload::Shift, Some(to)) => plan_shift(keys, to, o.ops, o.seed)?,
        (Workload::Shift, None) => bail!("the shift workload needs a second key set to insert"),
        (w, _) => plan(w, keys, o.ops, o.scan_len, o.seed)?,
    })
}

/// Runs `o` over `keys` (sorted); the shift workload inserts `shift_to` (sorted).
pub fn run(keys: &[u64], shift_to: Option<&[u64]>, o: &RunOptions) -> anyhow::Result<RunReport> {
    let plan = make_plan(keys, shift_to, &o.into())?;
    run_plan(&plan, keys.len(), o)
}

/// Runs `plan` as `o` says (its workload and seed only name the run); `keys` is the size
/// of the key set it came from.
pub fn run_plan(plan: &Plan, keys: usize, o: &RunOptions) -> anyhow::Result<RunReport> {
    if o.sample_every == 0 {
        bail!("sample_every must be at least 1");
    }
    if o.alex_density.is_some() && o.kind != Kind::Alex {
        bail!("only alex takes a density ({} was given one)", o.kind);
    }
    let report = match o.kind {
        Kind::DynamicPgm => run_with(plan, o, DynamicPgm::bulk_load)?,
        Kind::Alex => match o.alex_density {
            Some(d) => run_with(plan, o, |e| {
                Alex::with_params(e, AlexParams::with_density(d))
            })?,
            None => run_with(plan, o, Alex::bulk_load)?,
        },
        Kind::Lipp => run_with(plan, o, Lipp::bulk_load)?,
        Kind::Btree => run_with(plan, o, BTree::bulk_load)?,
        Kind::Art => run_with(plan, o, Art::bulk_load)?,
        Kind::BTreeMap => run_with(plan, o, OrderedMap::bulk_load)?,
    };
    Ok(RunReport {
        keys: keys as u64,
        ..report
    })
}

/// Bytes allocated since `before` ([`live_bytes`] then), where the allocator counts.
pub(crate) fn held_since(before: Option<i64>) -> Option<u64> {
    Some((live_bytes()? - before?).max(0) as u64)
}

/// An operation's answer, to compare with the oracle's.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Value(Option<u64>),
    Scanned(Vec<(u64, u64)>),
    Done,
}

fn apply<I: Updatable>(
    index: &mut I,
    op: Op,
    scanned: &mut Vec<(u64, u64)>,
    timer: Option<&mut PhaseTimer>,
) -> Answer {
    match op {
        Op::Get(k) => Answer::Value(index.get(k)),
        Op::Insert(k, v) => {
            match timer {
                Some(timer) => index.insert_timed(k, v, timer),
                None => index.insert(k, v),
            }
            Answer::Done
        }
        Op::Remove(k) => {
            index.remove(k);
            Answer::Done
        }
        Op::Scan(k, n) => {
            scanned.clear();
            index.scan(k, n, scanned);
            Answer::Scanned(std::mem::take(scanned))
        }
    }
}

/// What the lookups and scans of a run returned, summed so that no answer goes unused.
#[derive(Default)]
struct Tally {
    found: u64,
    checksum: u64,
}

impl Tally {
    /// Counts `answer`, and hands a scan's entries back as `scanned` for reuse.
    #[inline]
    fn count(&mut self, answer: Answer, scanned: &mut Vec<(u64, u64)>) {
        match answer {
            Answer::Value(Some(v)) => {
                self.found += 1;
                self.checksum = self.checksum.wrapping_add(v);
            }
            Answer::Scanned(v) => {
                for &(k, p) in &v {
                    self.checksum = self.checksum.wrapping_add(k).wrapping_add(p);
                }
                *scanned = v;
            }
            Answer::Value(None) | Answer::Done => {}
        }
    }
}

/// Where the operations timed alone lie in `ops`: of each kind the first, then every
/// `every`-th after it (so that a mix that alternates kinds samples all of them), in
/// order.
fn sampled_positions(ops: &[Op], every: usize) -> Vec<usize> {
    let mut seen = [0usize; 4];
    let mut positions = Vec::with_capacity(ops.len() / every + 4);
    for (i, op) in ops.iter().enumerate() {
        let seen = &mut seen[op.mix_index()];
        if *seen % every == 0 {
            positions.push(i);
        }
        *seen += 1;
    }
    positions
}

/// Runs every one of `ops` on `index`, counting what they return in `tally`.
///
/// A loop of its own, with nothing else to keep in registers and nothing to decide
/// between two operations: in the loop that also times, checks and reports, 2M lookups
/// ran 15-20% slower (lognormal keys, the dynamic PGM), and with a countdown to the next
/// sample kept per kind the B+tree's ran 10% slower than this, as if the instructions
/// between two lookups kept the processor from starting the next one's first steps while
/// the last one waits on memory.
#[inline(never)]
fn run_unsampled<I: Updatable>(
    index: &mut I,
    ops: &[Op],
    scanned: &mut Vec<(u64, u64)>,
    tally: &mut Tally,
) {
    // Locals the loop keeps in registers, written back once at the end.
    let (mut found, mut checksum) = (tally.found, tally.checksum);
    for &op in ops {
        match op {
            Op::Get(k) => {
                if let Some(v) = index.get(k) {
                    found += 1;
                    checksum = checksum.wrapping_add(v);
                }
            }
            Op::Insert(k, v) => index.insert(k, v),
            Op::Remove(k) => index.remove(k),
            Op::Scan(k, n) => {
                scanned.clear();
                index.scan(k, n, scanned);
                for &(k, p) in scanned.iter() {
                    checksum = checksum.wrapping_add(k).wrapping_add(p);
                }
            }
        }
    }
    (tally.found, tally.checksum) = (found, checksum);
}

fn run_with<I: Updatable>(
    plan: &Plan,
    o: &RunOptions,
    bulk_load: impl FnOnce(&[(u64, u64)]) -> lidx::Result<I>,
) -> anyhow::Result<RunReport> {
    let mut histogram = Histogram::<u64>::new(3)?;
    let mut lookups = Histogram::<u64>::new(3)?;
    let mut inserts = Histogram::<u64>::new(3)?;
    let mut scanned = Vec::with_capacity(plan.max_scan());
    let mut expected = Vec::new();
    let before = live_bytes();
    let started = Instant::now();
    let mut index = bulk_load(&plan.bulk)?;
    let bulk_load_s = started.elapsed().as_secs_f64();
    let mut oracle = match o.verify {
        true => Some(OrderedMap::bulk_load(&plan.bulk)?),
        false => None,
    };
    // The operations timed alone ([`sampled_positions`]), found before the clock starts.
    // Unless every operation is checked or timed, the ones between two samples run in a
    // loop of their own.
    let n = plan.ops.len();
    let mut samples = sampled_positions(&plan.ops, o.sample_every).into_iter();
    let mut next_sample = samples.next().unwrap_or(n);
    let mut tally = Tally::default();
    let mut timer = o.time_phases.then(PhaseTimer::new);
    let unsampled_alone = oracle.is_none() && timer.is_none();
    let started = Instant::now();
    let mut next = 0;
    while next < n {
        if unsampled_alone && next < next_sample {
            run_unsampled(
                &mut index,
                &plan.ops[next..next_sample],
                &mut scanned,
                &mut tally,
            );
            next = next_sample;
            continue;
        }
        let (i, op) = (next, plan.ops[next]);
        next += 1;
        let sampled = i == next_sample;
        if sampled {
            next_sample = samples.next().unwrap_or(n);
        }
        let answer = if sampled {
            let t = Instant::now();
            let a = black_box(apply(&mut index, op, &mut scanned, timer.as_mut()));
            let ns = t.elapsed().as_nanos() as u64;
            histogram.record(ns)?;
            match op {
                Op::Get(_) => lookups.record(ns)?,
                Op::Insert(..) => inserts.record(ns)?,
                Op::Remove(_) | Op::Scan(..) => {}
            }
            a
        } else {
            black_box(apply(&mut index, op, &mut scanned, timer.as_mut()))
        };
        if let Some(oracle) = &mut oracle {
            let want = apply(oracle, op, &mut expected, None);
            if answer != want {
                bail!(
                    "{} answered operation {i} ({op:?}) with {answer:?}, a BTreeMap with {want:?}",
                    o.kind_name()
                );
            }
        }
        tally.count(answer, &mut scanned);
    }
    let seconds = started.elapsed().as_secs_f64();
    drop(oracle);
    let measured_bytes = held_since(before);
    if o.verify
        && let Err(broken) = index.check_structure()
    {
        bail!(
            "{}'s structure is broken after the workload: {broken}",
            o.kind_name()
        );
    }
    Ok(RunReport {
        kind: o.kind_name().into(),
        workload: o.workload.name().into(),
        keys: 0,
        bulk_loaded: plan.bulk.len() as u64,
        bulk_load_s,
        mix: plan.mix(),
        seconds,
        ops_per_s: n as f64 / seconds.max(1e-9),
        mean_ns: seconds * 1e9 / n.max(1) as f64,
        sampled: histogram.len(),
        p50_ns: histogram.value_at_quantile(0.5),
        p99_ns: histogram.value_at_quantile(0.99),
        p999_ns: histogram.value_at_quantile(0.999),
        variance_ns2: histogram.stdev().powi(2),
        lookup_tail: Tail::of(&lookups),
        insert_tail: Tail::of(&inserts),
        size_bytes: index.size_in_bytes(),
        measured_bytes,
        counters: index.counters(),
        phases: timer.map(|t| t.report()),
        verified: o.verify,
        found: tally.found,
        checksum: tally.checksum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_runs_every_workload_and_agrees_with_the_oracle() {
        let keys: Vec<u64> = (0..5000u64)
            .map(|i| i * i % 100_003 * 7)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        for kind in Kind::ALL {
            for workload in Workload::ALL {
                let o = RunOptions {
                    kind,
                    workload,
                    ops: Some(3000),
                    scan_len: 20,
                    seed: 1,
                    verify: true,
                    sample_every: 10,
                    alex_density: None,
                    time_phases: workload == Workload::WriteOnly,
                };
                let to: Vec<u64> = (0..3000u64).map(|i| i * i).collect();
                let r = run(&keys, Some(&to), &o).unwrap();
                let total: usize = r.mix.iter().sum();
                assert!(total > 0, "{r:?}");
                // The times are reported, not judged: they depend on the machine's load.
                for t in [r.bulk_load_s, r.seconds, r.ops_per_s, r.mean_ns] {
                    assert!(t.is_finite() && t >= 0.0, "{r:?}");
                }
                let sampled: usize = r.mix.iter().map(|m| m.div_ceil(10)).sum();
                assert_eq!(r.sampled as usize, sampled, "{r:?}");
                assert_eq!(r.lookup_tail.sampled as usize, r.mix[0].div_ceil(10));
                assert_eq!(r.insert_tail.sampled as usize, r.mix[1].div_ceil(10));
                assert!(r.size_bytes > 0);
                // Timed phases: one count per insert, in the phases the kind divides.
                match r.phases {
                    Some(p) => {
                        assert_eq!(p.inserts as usize, r.mix[1], "{r:?}");
                        let divided = [p.search_ns, p.collision_ns, p.statistics_ns, p.smo_ns];
                        let all = divided.iter().sum::<f64>() + p.undivided_ns;
                        assert!(all.is_finite() && all >= 0.0, "{p:?}");
                        let splits = !matches!(kind, Kind::DynamicPgm | Kind::BTreeMap);
                        assert_eq!(p.undivided_ns == 0.0, splits || all == 0.0, "{p:?}");
                    }
                    None => assert!(workload != Workload::WriteOnly),
                }
            }
        }
    }

    /// Each kind's first operation is sampled, then every `every`-th of that kind.
    #[test]
    fn samples_are_every_nth_operation_of_each_kind() {
        let ops: Vec<Op> = (0..50u64)
            .map(|i| match i % 5 {
                0 | 3 => Op::Get(i),
                1 => Op::Insert(i, i),
                2 => Op::Remove(i),
                _ => Op::Scan(i, 2),
            })
            .collect();
        for every in [1, 2, 3, 7, 100] {
            let mut seen = [0; 4];
            let want: Vec<usize> = (0..ops.len())
                .filter(|&i| {
                    let seen = &mut seen[ops[i].mix_index()];
                    *seen += 1;
                    (*seen - 1) % every == 0
                })
                .collect();
            assert_eq!(sampled_positions(&ops, every), want, "every {every}");
        }
        assert_eq!(sampled_positions(&ops, 100), [0, 1, 2, 4]);
        assert!(sampled_positions(&[], 3).is_empty());
    }

    /// The loop that runs the operations between samples answers as the checked loop does
    /// and leaves the same operations to be sampled.
    #[test]
    fn unchecked_runs_count_and_sample_as_checked_runs() {
        let keys: Vec<u64> = (1..=4000u64).map(|i| i * 13).collect();
        for kind in [Kind::DynamicPgm, Kind::Btree, Kind::BTreeMap] {
            for workload in [Workload::ReadOnly, Workload::Balanced, Workload::Scan] {
                for sample_every in [1, 7, 100_000] {
                    let o = RunOptions {
                        kind,
                        workload,
                        ops: Some(2500),
                        scan_len: 9,
                        seed: 3,
                        verify: false,
                        sample_every,
                        alex_density: None,
                        time_phases: false,
                    };
                    let fast = run(&keys, None, &o).unwrap();
                    let checked = run(&keys, None, &RunOptions { verify: true, ..o }).unwrap();
                    assert_eq!(fast.mix, checked.mix);
                    assert!(fast.found > 0 || workload == Workload::Scan, "{fast:?}");
                    assert!(fast.checksum > 0, "{fast:?}");
                    assert_eq!(
                        (fast.found, fast.checksum),
                        (checked.found, checked.checksum)
                    );
                    assert_eq!(fast.sampled, checked.sampled);
                    let sampled: usize = fast.mix.iter().map(|m| m.div_ceil(sample_every)).sum();
                    assert_eq!(fast.sampled as usize, sampled, "{fast:?}");
                }
            }
        }
    }
}
