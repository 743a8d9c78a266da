//! One run of a concurrent updatable index on one of paper 3's workloads under several
//! threads, as paper 3's harness runs it (GRE, section 4.2): the bulk load on one thread,
//! then every thread takes the next chunk of the plan's operations from a shared cursor
//! until none are left (OpenMP's `schedule(dynamic, 10000)` in GRE), the clock running from
//! the moment all threads are released until the last one finishes. Each thread times 1%
//! of its operations alone into its own histograms (Figs. 10b and 11b).
//!
//! With `verify`, every answer is checked against what the plan makes possible (see
//! [`Allowed`]) and the end state is checked too: a concurrent run has no single right
//! answer, but it has wrong ones.

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use lidx::updatable::Op;
use lidx::updatable::Plan;
use lidx::updatable::concurrent::{AlexPlus, Concurrent, Finedex, LippPlus, LockedMap};
use serde::Serialize;

use super::baselines::{ArtOlc, BTreeOlc, ConcurrentKind, SccTree};
use super::{Tail, held_since};
use crate::alloc_meter::live_bytes;

/// The most operations a thread takes at once (GRE's chunk).
const CHUNK: usize = 10_000;
/// The most threads a run may have.
pub const MAX_THREADS: usize = 1024;

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct ThreadOptions {
    /// The index kind.
    pub kind: ConcurrentKind,
    /// Threads running operations.
    pub threads: usize,
    /// Check every answer against what the plan allows.
    pub verify: bool,
    /// Time every this-many-th operation of each thread alone (100: 1%, as paper 3).
    pub sample_every: usize,
}

/// What one thread did.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadReport {
    /// Operations it ran.
    pub ops: u64,
    /// Seconds from the start until it ran out of operations.
    pub seconds: f64,
    /// Its sampled lookups.
    pub lookup_tail: Tail,
    /// Its sampled inserts.
    pub insert_tail: Tail,
}

/// What a threaded run measured.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadedReport {
    /// The index kind.
    pub kind: String,
    /// Threads.
    pub threads: usize,
    /// Entries bulk-loaded.
    pub bulk_loaded: u64,
    /// Seconds the bulk load took (one thread).
    pub bulk_load_s: f64,
    /// Operations: lookups, inserts, removals, scans.
    pub mix: [usize; 4],
    /// Seconds from the first thread's start, once all were released, until the last
    /// finished.
    pub seconds: f64,
    /// Operations per second, all threads together.
    pub ops_per_s: f64,
    /// Sampled lookups of every thread.
    pub lookup_tail: Tail,
    /// Sampled inserts of every thread.
    pub insert_tail: Tail,
    /// Each thread's share.
    pub per_thread: Vec<ThreadReport>,
    /// Bytes of the index at the end, as the index reports them (0: it reports none).
    pub size_bytes: u64,
    /// Bytes the allocator holds for the index at the end, retired nodes not yet freed
    /// included (`None` without the counting allocator, [`crate::alloc_meter`]).
    pub measured_bytes: Option<u64>,
    /// Lookups that found their key.
    pub found: u64,
    /// Whether every answer was checked.
    pub verified: bool,
}

/// Runs `plan` on `o.kind` under `o.threads` threads.
pub fn run_threads(plan: &Plan, o: &ThreadOptions) -> anyhow::Result<ThreadedReport> {
    if o.threads == 0 || o.threads > MAX_THREADS {
        bail!("threads must be 1 to {MAX_THREADS}, not {}", o.threads);
    }
    if o.sample_every == 0 {
        bail!("sample_every must be at least 1");
    }
    match o.kind {
        ConcurrentKind::AlexPlus => run_with::<AlexPlus>(plan, o),
        ConcurrentKind::LippPlus => run_with::<LippPlus>(plan, o),
        ConcurrentKind::Finedex => run_with::<Finedex>(plan, o),
        ConcurrentKind::ArtOlc => run_with::<ArtOlc>(plan, o),
        ConcurrentKind::BTreeOlc => run_with::<BTreeOlc>(plan, o),
        ConcurrentKind::SccTree => run_with::<SccTree>(plan, o),
        ConcurrentKind::LockedMap => run_with::<LockedMap>(plan, o),
    }
}

/// What a lookup may answer in a run of the plan: the payloads the plan ever gives a key,
/// and whether the key may be absent at some point.
pub struct Allowed {
    payloads: HashMap<u64, Vec<u64>>,
    /// Keys that may be missing at some instant: not bulk-loaded, or removed by the plan.
    may_miss: HashSet<u64>,
}

impl Allowed {
    /// What `plan` allows.
    pub fn of(plan: &Plan) -> Allowed {
        let mut payloads: HashMap<u64, Vec<u64>> = HashMap::new();
        for &(k, v) in &plan.bulk {
            payloads.entry(k).or_default().push(v);
        }
        let mut may_miss = HashSet::new();
        for &op in &plan.ops {
            match op {
                Op::Insert(k, v) => {
                    let e = payloads.entry(k).or_default();
                    if e.is_empty() {
                        may_miss.insert(k);
                    }
                    e.push(v);
                }
                Op::Remove(k) => {
                    may_miss.insert(k);
                }
                Op::Get(k) | Op::Scan(k, _) => {
                    if !payloads.contains_key(&k) {
                        may_miss.insert(k);
                    }
                }
            }
        }
        // Bulk-loaded keys come once in the map with the last payload: the earlier ones
        // were never readable, but allowing them costs little.
        Allowed { payloads, may_miss }
    }

    /// Why `answer` to a lookup of `key` is impossible, if it is.
    pub fn refuse(&self, key: u64, answer: Option<u64>) -> Option<String> {
        match answer {
            None if !self.may_miss.contains(&key) => Some(format!(
                "key {key} is present throughout, and a lookup missed it"
            )),
            Some(p) if !self.payloads.get(&key).is_some_and(|v| v.contains(&p)) => Some(format!(
                "a lookup of key {key} returned {p}, which the plan never writes for it"
            )),
            _ => None,
        }
    }
}

fn run_with<C: Concurrent>(plan: &Plan, o: &ThreadOptions) -> anyhow::Result<ThreadedReport> {
    let allowed = o.verify.then(|| Allowed::of(plan));
    let before = live_bytes();
    let started = Instant::now();
    let index = C::bulk_load(&plan.bulk)?;
    let bulk_load_s = started.elapsed().as_secs_f64();
    let ops = &plan.ops;
    let chunk = (ops.len() / (o.threads * 16)).clamp(1, CHUNK);
    let cursor = AtomicUsize::new(0);
    let barrier = Barrier::new(o.threads);
    let (index, allowed, cursor, barrier) = (&index, allowed.as_ref(), &cursor, &barrier);
    // The workers read the clock themselves: a main thread that waited with them could be
    // scheduled late on a machine with as many cores as workers, and start the clock after
    // they had finished.
    let outcomes: Vec<anyhow::Result<Worker>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..o.threads)
            .map(|_| {
                s.spawn(move || worker(index, ops, chunk, cursor, barrier, allowed, o.sample_every))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .map_err(|_| anyhow::anyhow!("a worker thread panicked"))?
            })
            .collect()
    });
    let mut workers: Vec<Worker> = outcomes.into_iter().collect::<anyhow::Result<_>>()?;
    let (Some(start), Some(end)) = (
        workers.iter().map(|w| w.began).min(),
        workers.iter().map(|w| w.end).max(),
    ) else {
        bail!("no worker ran");
    };
    let seconds = end.duration_since(start).as_secs_f64();
    for w in &mut workers {
        w.seconds = w.end.duration_since(start).as_secs_f64();
    }
    if let Some(allowed) = allowed {
        check_end_state(index, allowed).with_context(|| format!("{}", o.kind))?;
    }
    let mut lookups = Histogram::<u64>::new(3)?;
    let mut inserts = Histogram::<u64>::new(3)?;
    for w in &workers {
        lookups.add(&w.lookups)?;
        inserts.add(&w.inserts)?;
    }
    let per_thread: Vec<ThreadReport> = workers
        .iter()
        .map(|w| ThreadReport {
            ops: w.ops,
            seconds: w.seconds,
            lookup_tail: Tail::of(&w.lookups),
            insert_tail: Tail::of(&w.inserts),
        })
        .collect();
    let (lookup_tail, insert_tail) = (Tail::of(&lookups), Tail::of(&inserts));
    let found = workers.iter().map(|w| w.found).sum();
    drop((workers, lookups, inserts));
    let measured_bytes = held_since(before);
    Ok(ThreadedReport {
        kind: o.kind.name().into(),
        threads: o.threads,
        bulk_loaded: plan.bulk.len() as u64,
        bulk_load_s,
        mix: plan.mix(),
        seconds,
        ops_per_s: ops.len() as f64 / seconds.max(1e-9),
        lookup_tail,
        insert_tail,
        per_thread,
        size_bytes: index.size_in_bytes(),
        measured_bytes,
        found,
        verified: o.verify,
    })
}

/// One worker's outcome.
struct Worker {
    ops: u64,
    found: u64,
    /// When it was released, and when it ran out of operations.
    began: Instant,
    end: Instant,
    seconds: f64,
    lookups: Histogram<u64>,
    inserts: Histogram<u64>,
}

fn worker<C: Concurrent>(
    index: &C,
    ops: &[Op],
    chunk: usize,
    cursor: &AtomicUsize,
    barrier: &Barrier,
    allowed: Option<&Allowed>,
    sample_every: usize,
) -> anyhow::Result<Worker> {
    let mut lookups = Histogram::<u64>::new(3)?;
    let mut inserts = Histogram::<u64>::new(3)?;
    let mut scanned = Vec::new();
    let (mut done, mut found, mut seen) = (0u64, 0u64, [0usize; 4]);
    barrier.wait();
    let began = Instant::now();
    loop {
        let from = cursor.fetch_add(chunk, Ordering::Relaxed);
        if from >= ops.len() {
            break;
        }
        for &op in &ops[from..(from + chunk).min(ops.len())] {
            let nth = &mut seen[op.mix_index()];
            *nth += 1;
            let timed = (*nth % sample_every == 1 % sample_every).then(Instant::now);
            let answer = match op {
                Op::Get(k) => {
                    let a = black_box(index.get(k));
                    found += u64::from(a.is_some());
                    if let Some(why) = allowed.and_then(|al| al.refuse(k, a)) {
                        bail!("{why}");
                    }
                    a
                }
                Op::Insert(k, v) => {
                    index.insert(k, v);
                    None
                }
                Op::Remove(k) => {
                    index.remove(k);
                    None
                }
                Op::Scan(k, n) => {
                    scanned.clear();
                    black_box(index.scan(k, n, &mut scanned));
                    if allowed.is_some() {
                        check_scan(&scanned, k, n, allowed)?;
                    }
                    None
                }
            };
            black_box(answer);
            if let Some(t) = timed {
                let ns = t.elapsed().as_nanos() as u64;
                match op {
                    Op::Get(_) => lookups.record(ns)?,
                    Op::Insert(..) => inserts.record(ns)?,
                    Op::Remove(_) | Op::Scan(..) => {}
                }
            }
        }
        done += (ops.len().min(from + chunk) - from) as u64;
    }
    Ok(Worker {
        ops: done,
        found,
        began,
        end: Instant::now(),
        seconds: 0.0,
        lookups,
        inserts,
    })
}

/// A scan's entries: at most `n`, from `from` on, in order, each one a lookup could return.
fn check_scan(
    out: &[(u64, u64)],
    from: u64,
    n: usize,
    allowed: Option<&Allowed>,
) -> anyhow::Result<()> {
    if out.len() > n || out.first().is_some_and(|e| e.0 < from) {
        bail!(
            "a scan of {n} from {from} returned {} entries from {:?}",
            out.len(),
            out.first()
        );
    }
    if out.windows(2).any(|w| w[0].0 >= w[1].0) {
        bail!("a scan from {from} returned keys out of order");
    }
    for &(k, p) in out {
        if let Some(why) = allowed.and_then(|a| a.refuse(k, Some(p))) {
            bail!("in a scan: {why}");
        }
    }
    Ok(())
}

/// After the run: every key the plan leaves present is there with a payload the plan gave
/// it, no key the plan never wrote is, and the structure holds.
fn check_end_state<C: Concurrent>(index: &C, allowed: &Allowed) -> anyhow::Result<()> {
    if let Err(broken) = index.check_structure() {
        bail!("the structure is broken after the run: {broken}");
    }
    let mut all = Vec::new();
    index.scan(0, usize::MAX, &mut all);
    check_scan(&all, 0, usize::MAX, Some(allowed))?;
    let held: HashSet<u64> = all.iter().map(|e| e.0).collect();
    for &k in allowed.payloads.keys() {
        if !allowed.may_miss.contains(&k) && !held.contains(&k) {
            bail!("key {k}, present throughout, is missing at the end");
        }
    }
    for &(k, _) in &all {
        if index.get(k).is_none() {
            bail!("key {k} is scanned at the end but not found by a lookup");
        }
    }
    Ok(())
}
