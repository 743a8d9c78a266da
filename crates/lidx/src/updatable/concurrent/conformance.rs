//! The conformance checks every concurrent kind passes (they panic at the first
//! violation, so they are for tests): every kind against what a sequential map allows: alone, answer for answer
//! against a `BTreeMap`; under many threads, with each key's writes traceable to the thread
//! and the operation that made them (a payload names its key), so that no lookup may
//! return a payload never written for its key, no key present throughout may ever be
//! missed, each thread reads its own writes exactly, and the end state is one a sequential
//! order of the writes leaves.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::*;

/// Keys: strictly increasing in `i`, skewed (a quadratic with a jump every 4096), so that
/// linear models conflict and nodes split.
fn key_of(i: u64) -> u64 {
    i * i * 3 + (i >> 12) * 1_000_000_007 + 17
}

/// A payload names its key, and the write (`version` < 1024) that made it.
fn payload(key: u64, version: u64) -> u64 {
    key * 1024 + version
}

fn key_of_payload(p: u64) -> u64 {
    p / 1024
}

/// One thread alone, `ops` random lookups, inserts, removals and scans seeded by `seed`,
/// answer for answer against a `BTreeMap`; panics at the first difference.
pub fn matches_a_btreemap_alone<C: Concurrent>(seed: u64, ops: usize) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let universe = 4000u64;
    let bulk: Vec<(u64, u64)> = (0..universe)
        .filter(|_| rng.random_bool(0.5))
        .map(|i| (key_of(i), payload(key_of(i), 0)))
        .collect();
    let index = C::bulk_load(&bulk).expect("a bulk load of sorted keys");
    let mut model: BTreeMap<u64, u64> = bulk.iter().copied().collect();
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for step in 0..ops {
        let key = match rng.random_range(0..10) {
            0 => rng.random(),
            _ => key_of(rng.random_range(0..universe + 100)),
        };
        match rng.random_range(0..10) {
            0..=3 => {
                let p = payload(key, (step % 1000) as u64);
                index.insert(key, p);
                model.insert(key, p);
            }
            4..=5 => {
                index.remove(key);
                model.remove(&key);
            }
            6 => {
                let n = rng.random_range(0..40);
                got.clear();
                want.clear();
                let count = index.scan(key, n, &mut got);
                want.extend(model.range(key..).take(n).map(|(&k, &v)| (k, v)));
                assert_eq!(count, got.len());
                assert_eq!(
                    got, want,
                    "seed {seed}, step {step}: scan of {n} from {key}"
                );
            }
            _ => assert_eq!(
                index.get(key),
                model.get(&key).copied(),
                "seed {seed}, step {step}: get {key}"
            ),
        }
    }
    if let Err(broken) = index.check_structure() {
        panic!("seed {seed}: the structure is broken: {broken}");
    }
    got.clear();
    index.scan(0, usize::MAX, &mut got);
    assert!(
        got.iter().copied().eq(model.into_iter()),
        "seed {seed}: final state"
    );
}

/// What one thread leaves: its own keys' final state, and its last write to each shared
/// key.
type Outcome = (BTreeMap<u64, Option<u64>>, BTreeMap<u64, u64>);

/// `threads` (at most 8) threads of `ops` random operations each, seeded by `seed`, every
/// answer checked against what some sequential order allows (see the module doc); panics
/// at the first violation.
pub fn linearizable_under_threads<C: Concurrent>(seed: u64, threads: u64, ops: usize) {
    assert!(threads <= 8);
    // Index i: i % 4 == 0 bulk-loaded and never removed (shared, updated by every
    // thread); i % 4 == 1 owned by thread (i / 4) % threads (inserted, updated, removed);
    // i % 4 >= 2 never written (absent throughout).
    let universe = 40_000u64;
    let bulk: Vec<(u64, u64)> = (0..universe)
        .step_by(4)
        .map(|i| (key_of(i), payload(key_of(i), 0)))
        .collect();
    let index = C::bulk_load(&bulk).expect("a bulk load of sorted keys");
    let index = &index;
    let bulk = &bulk;
    // Per thread: its own keys' final state, and its last write to each shared key.
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (t << 32));
                    let mut own: BTreeMap<u64, Option<u64>> = BTreeMap::new();
                    let mut shared: BTreeMap<u64, u64> = BTreeMap::new();
                    let mut out = Vec::new();
                    for step in 0..ops {
                        let version = 1 + t * 127 + (step as u64 % 127);
                        let i = rng.random_range(0..universe / 4) * 4;
                        let owned = i + 1;
                        let owned = if (owned / 4) % threads == t {
                            owned
                        } else {
                            owned + 4 * ((t + threads - (owned / 4) % threads) % threads)
                        };
                        match rng.random_range(0..20) {
                            0..=5 if owned < universe => {
                                let k = key_of(owned);
                                index.insert(k, payload(k, version));
                                own.insert(k, Some(payload(k, version)));
                            }
                            6..=7 if owned < universe => {
                                let k = key_of(owned);
                                index.remove(k);
                                own.insert(k, None);
                            }
                            8..=9 => {
                                let k = key_of(i);
                                index.insert(k, payload(k, version));
                                shared.insert(k, payload(k, version));
                            }
                            10..=12 => {
                                // A shared key is present throughout.
                                let k = key_of(i);
                                let p = index.get(k);
                                assert!(
                                    p.is_some_and(|p| key_of_payload(p) == k),
                                    "seed {seed}: shared key {k} read as {p:?}"
                                );
                            }
                            13..=14 if owned < universe => {
                                // A thread reads its own writes.
                                let k = key_of(owned);
                                let want = own.get(&k).copied().flatten();
                                assert_eq!(index.get(k), want, "seed {seed}: own key {k}");
                            }
                            15 => {
                                let k = key_of(i + 2);
                                assert_eq!(index.get(k), None, "seed {seed}: absent key {k}");
                            }
                            16 => {
                                let k = key_of(i) - rng.random_range(0..3);
                                out.clear();
                                let n = rng.random_range(1..64);
                                let count = index.scan(k, n, &mut out);
                                assert_eq!(count, out.len());
                                assert!(count <= n);
                                assert!(out.first().is_none_or(|e| e.0 >= k));
                                assert!(
                                    out.windows(2).all(|w| w[0].0 < w[1].0),
                                    "seed {seed}: scan out of order {out:?}"
                                );
                                for &(key, p) in &out {
                                    assert_eq!(key_of_payload(p), key, "seed {seed}: scan");
                                }
                                // The shared keys in the scanned range are all there.
                                if let Some(&(last, _)) = out.last().filter(|_| count == n) {
                                    let bulk_between =
                                        bulk.iter().filter(|b| b.0 >= k && b.0 <= last).count();
                                    let seen = out.iter().filter(|e| {
                                        bulk.binary_search_by_key(&e.0, |b| b.0).is_ok()
                                    });
                                    assert_eq!(
                                        seen.count(),
                                        bulk_between,
                                        "seed {seed}: scan from {k} missed a shared key"
                                    );
                                }
                            }
                            _ => {
                                let k = key_of(rng.random_range(0..universe));
                                if let Some(p) = index.get(k) {
                                    assert_eq!(key_of_payload(p), k, "seed {seed}: key {k}");
                                }
                            }
                        }
                    }
                    (own, shared)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a checking thread found a violation"))
            .collect()
    });
    if let Err(broken) = index.check_structure() {
        panic!("seed {seed}: the structure is broken: {broken}");
    }
    // The end state: own keys exactly; a shared key holds one thread's last write to it
    // (or its bulk payload where none wrote it).
    let mut want_own: BTreeMap<u64, Option<u64>> = BTreeMap::new();
    for (own, _) in &outcomes {
        want_own.extend(own.iter().map(|(&k, &v)| (k, v)));
    }
    for (&k, &v) in &want_own {
        assert_eq!(index.get(k), v, "seed {seed}: own key {k} at the end");
    }
    for &(k, p0) in bulk {
        let lasts: Vec<u64> = outcomes
            .iter()
            .filter_map(|o| o.1.get(&k).copied())
            .collect();
        let got = index.get(k);
        match lasts.is_empty() {
            true => assert_eq!(got, Some(p0), "seed {seed}: untouched shared key {k}"),
            false => assert!(
                got.is_some_and(|g| lasts.contains(&g)),
                "seed {seed}: shared key {k} ended as {got:?}, not a last write of {lasts:?}"
            ),
        }
    }
    // A scan of everything is the end state, in order.
    let mut all = Vec::new();
    index.scan(0, usize::MAX, &mut all);
    let mut want: BTreeMap<u64, u64> = bulk
        .iter()
        .map(|&(k, _)| (k, index.get(k).expect("a shared key at the end")))
        .collect();
    want.extend(want_own.iter().filter_map(|(&k, &v)| Some((k, v?))));
    assert!(
        all.iter().copied().eq(want.into_iter()),
        "seed {seed}: the final scan"
    );
}

/// Both checks, over 6 seeds alone and 4 (seed, threads) pairs of 2 to 8 threads.
pub fn check_kind<C: Concurrent>() {
    for seed in 0..6 {
        matches_a_btreemap_alone::<C>(seed, 20_000);
    }
    for (seed, threads) in [(1, 2), (2, 4), (3, 8), (4, 3)] {
        linearizable_under_threads::<C>(seed, threads, 30_000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_map_is_linearizable() {
        check_kind::<LockedMap>();
    }

    #[test]
    fn a_broken_map_is_caught() {
        /// A map that forgets every write to one key in 61, to show the checks can fail.
        /// Which writes it forgets depends on the keys alone, not on how the threads
        /// interleave (a count shared by the threads let a run forget only writes that
        /// later writes covered), so both checks fail on every run.
        #[derive(Default)]
        struct Forgetful(LockedMap);
        impl Concurrent for Forgetful {
            fn bulk_load(e: &[(u64, u64)]) -> crate::Result<Self> {
                Ok(Forgetful(LockedMap::bulk_load(e)?))
            }
            fn get(&self, k: u64) -> Option<u64> {
                self.0.get(k)
            }
            fn insert(&self, k: u64, p: u64) {
                if !k.is_multiple_of(61) {
                    self.0.insert(k, p)
                }
            }
            fn remove(&self, k: u64) {
                self.0.remove(k)
            }
            fn scan(&self, f: u64, n: usize, o: &mut Vec<(u64, u64)>) -> usize {
                self.0.scan(f, n, o)
            }
            fn size_in_bytes(&self) -> u64 {
                1
            }
        }
        let alone = std::panic::catch_unwind(|| matches_a_btreemap_alone::<Forgetful>(0, 20_000));
        assert!(alone.is_err());
        let threaded =
            std::panic::catch_unwind(|| linearizable_under_threads::<Forgetful>(1, 4, 30_000));
        assert!(threaded.is_err());
    }
}
