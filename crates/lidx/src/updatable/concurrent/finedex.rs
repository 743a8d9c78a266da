//! FINEdex (Li et al., VLDB 2021), a learned index built for concurrency, as paper 3 ran it
//! (GRE's `finedex`, the "osm" variant of its authors' code; paper 3, sections 2.2–2.3 and
//! Table 1: error bound 32).
//!
//! - **A static top level**: the optimal PLA of the bulk-loaded keys at ε = 32; a key goes
//!   to the first segment whose last key is at least the key (the last segment past them
//!   all). It never changes after the bulk load.
//! - **Each segment** keeps its keys in a sorted array with a payload and a presence flag
//!   per key: lookups, updates and removals of those keys are single atomic loads and
//!   stores, with no lock (a removal clears the flag; an insert of that key sets it again).
//! - **A delta bin per gap** ("a delta per record", section 2.2): keys inserted between two
//!   array keys go to the bin of that gap, made on first use. Each bin has its own lock, held
//!   for every operation inside it, so threads that insert into different gaps never
//!   meet.
//! - **Fine-grained retraining**: a bin that outgrows [`BIN_CAPACITY`] entries is retrained
//!   alone, under its own lock, into a level of the same kind (PLA models over its keys,
//!   each with its own bins), which replaces it.
//!
//! Departures from the C++ code: a bin is a sorted vector of up to 144 entries where the
//! C++ bin is a two-level node of 8 × 16 (the same capacity); bins are installed by an
//! atomic once-cell where the C++ code checks then stores (two inserters could both
//! install one and lose a key); and scans visit each gap's bin before its array key, so
//! they return keys in order.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::Concurrent;
use crate::Result;
use crate::pla::{distance_f64, distinct_key_points, segments};
use crate::updatable::{check_sorted, last_of_each_key};

/// The PLA's error bound (paper 3, Table 1).
pub const EPSILON: u64 = 32;
/// Entries a bin holds before it is retrained (the C++ bin's 8 × 16 slots and the
/// borrowing between them: about 144).
pub const BIN_CAPACITY: usize = 144;
/// Levels of retrained bins at most below the top one. Past them a full bin becomes an
/// ordered map instead: ascending inserts into one gap would otherwise nest a level every
/// 144 keys, each operation walking them all (300K such inserts took a minute).
pub const MAX_DEPTH: u32 = 8;

/// A FINEdex.
pub struct Finedex {
    top: Level,
}

/// A run of models with a router: the top level, and a bin once it is retrained.
struct Level {
    /// 0 at the top, one more in each retrained bin.
    depth: u32,
    /// Each model's last key, to route by.
    last_keys: Vec<u64>,
    models: Vec<Model>,
}

/// One PLA segment's keys: a sorted array whose payloads change in place, and a bin per
/// gap (bin `i` holds keys between `keys[i - 1]` and `keys[i]`, bin `keys.len()` those
/// above the last).
struct Model {
    /// `position ≈ intercept + slope × (key − first_key)`, within [`EPSILON`].
    intercept: f64,
    slope: f64,
    first_key: u64,
    keys: Box<[u64]>,
    payloads: Box<[AtomicU64]>,
    present: Box<[AtomicBool]>,
    bins: Box<[OnceLock<Box<Mutex<Bin>>>]>,
}

/// A gap's delta: sorted entries, or, once retrained, a level of its own, or, at
/// [`MAX_DEPTH`], an ordered map.
enum Bin {
    Entries(Vec<(u64, u64)>),
    Retrained(Level),
    Deepest(std::collections::BTreeMap<u64, u64>),
}

impl Level {
    /// A level at `depth` over `entries` (sorted, each key once).
    fn build(entries: &[(u64, u64)], depth: u32) -> Result<Level> {
        let keys: Vec<u64> = entries.iter().map(|e| e.0).collect();
        let mut models = Vec::new();
        for s in segments(distinct_key_points(&keys), EPSILON)? {
            let first = s.first_y as usize;
            let end = first + s.points as usize;
            models.push(Model {
                intercept: s.intercept - s.first_y as f64,
                slope: s.slope,
                first_key: s.first_x,
                keys: keys[first..end].into(),
                payloads: entries[first..end]
                    .iter()
                    .map(|e| AtomicU64::new(e.1))
                    .collect(),
                present: (first..end).map(|_| AtomicBool::new(true)).collect(),
                bins: (first..=end).map(|_| OnceLock::new()).collect(),
            });
        }
        if models.is_empty() {
            models.push(Model {
                intercept: 0.0,
                slope: 0.0,
                first_key: 0,
                keys: Box::new([]),
                payloads: Box::new([]),
                present: Box::new([]),
                bins: Box::new([OnceLock::new()]),
            });
        }
        let last_keys = models
            .iter()
            .map(|m| m.keys.last().copied().unwrap_or(u64::MAX))
            .collect();
        Ok(Level {
            depth,
            last_keys,
            models,
        })
    }

    /// The model `key` belongs to.
    fn route(&self, key: u64) -> usize {
        self.last_keys
            .partition_point(|&last| last < key)
            .min(self.models.len() - 1)
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.models[self.route(key)].get(key)
    }

    fn insert(&self, key: u64, payload: u64) {
        self.models[self.route(key)].insert(key, payload, self.depth);
    }

    fn remove(&self, key: u64) {
        self.models[self.route(key)].remove(key);
    }

    /// Appends up to `n` entries from `from` on; returns how many.
    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let mut got = 0;
        for model in &self.models[self.route(from)..] {
            if got == n {
                break;
            }
            got += model.scan(from, n - got, out);
        }
        got
    }

    fn bytes(&self) -> u64 {
        let models: u64 = self.models.iter().map(Model::bytes).sum();
        models + (self.last_keys.capacity() * 8) as u64
    }

    fn check(&self, lo: u64, hi: u64) -> std::result::Result<(), String> {
        if self.depth > MAX_DEPTH + 1 {
            return Err(format!("a level nests {} deep", self.depth));
        }
        for (i, m) in self.models.iter().enumerate() {
            let below = if i == 0 { lo } else { self.last_keys[i - 1] };
            m.check(
                below,
                if i + 1 == self.models.len() {
                    hi
                } else {
                    self.last_keys[i]
                },
            )?;
        }
        Ok(())
    }
}

impl Model {
    /// The first position whose key is at least `key` (`keys.len()` past them all): a
    /// search of the model's window, checked, and of the whole array where rounding put
    /// the window off.
    fn lower_bound(&self, key: u64) -> usize {
        let n = self.keys.len();
        let predicted = self.intercept + self.slope * distance_f64(key, self.first_key);
        let p = predicted.clamp(0.0, n as f64) as usize;
        let lo = p.saturating_sub(EPSILON as usize + 2);
        let hi = (p + EPSILON as usize + 3).min(n);
        let at = lo + self.keys[lo..hi].partition_point(|&k| k < key);
        let above_lo = at > lo || lo == 0 || self.keys[lo - 1] < key;
        let below_hi = at < hi || hi == n || self.keys[hi] >= key;
        if above_lo && below_hi {
            at
        } else {
            self.keys.partition_point(|&k| k < key)
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        let at = self.lower_bound(key);
        if self.keys.get(at) == Some(&key) {
            // The flag first: an insert writes the payload, then sets the flag.
            return match self.present[at].load(Ordering::Acquire) {
                true => Some(self.payloads[at].load(Ordering::Relaxed)),
                false => None,
            };
        }
        let bin = self.bins[at].get()?;
        bin.lock().get(key)
    }

    /// Inserts into this model of a level at `depth`.
    fn insert(&self, key: u64, payload: u64, depth: u32) {
        let at = self.lower_bound(key);
        if self.keys.get(at) == Some(&key) {
            self.payloads[at].store(payload, Ordering::Relaxed);
            self.present[at].store(true, Ordering::Release);
            return;
        }
        let bin = self.bins[at].get_or_init(|| Box::new(Mutex::new(Bin::Entries(Vec::new()))));
        bin.lock().insert(key, payload, depth + 1);
    }

    fn remove(&self, key: u64) {
        let at = self.lower_bound(key);
        if self.keys.get(at) == Some(&key) {
            self.present[at].store(false, Ordering::Release);
        } else if let Some(bin) = self.bins[at].get() {
            bin.lock().remove(key);
        }
    }

    /// Appends up to `n` entries from `from` on, gap by gap: each gap's bin, then the key
    /// after it.
    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let mut got = 0;
        let mut at = self.lower_bound(from);
        while got < n && at <= self.keys.len() {
            if let Some(bin) = self.bins[at].get() {
                got += bin.lock().scan(from, n - got, out);
            }
            if got < n && at < self.keys.len() && self.present[at].load(Ordering::Acquire) {
                out.push((self.keys[at], self.payloads[at].load(Ordering::Relaxed)));
                got += 1;
            }
            at += 1;
        }
        got
    }

    fn bytes(&self) -> u64 {
        let n = self.keys.len() as u64;
        let arrays = n * (8 + 8 + 1)
            + self.bins.len() as u64 * size_of::<OnceLock<Box<Mutex<Bin>>>>() as u64;
        let bins: u64 = self
            .bins
            .iter()
            .filter_map(|b| b.get())
            .map(|b| size_of::<Mutex<Bin>>() as u64 + b.lock().bytes())
            .sum();
        size_of::<Model>() as u64 + arrays + bins
    }

    /// Keys sorted within `(lo, hi]` (`lo` itself allowed for the first model), each bin's
    /// keys inside its gap.
    fn check(&self, lo: u64, hi: u64) -> std::result::Result<(), String> {
        if self.keys.windows(2).any(|w| w[0] >= w[1]) {
            return Err("a model's keys are out of order".into());
        }
        if self.keys.first().is_some_and(|&k| k < lo) || self.keys.last().is_some_and(|&k| k > hi) {
            return Err(format!("a model's keys leave its range {lo}..={hi}"));
        }
        for (i, bin) in self.bins.iter().enumerate() {
            let Some(bin) = bin.get() else { continue };
            let below = if i == 0 { lo } else { self.keys[i - 1] };
            let above = self.keys.get(i).copied();
            let bin = bin.lock();
            let mut keys = Vec::new();
            bin.scan(0, usize::MAX, &mut keys);
            for &(k, _) in &keys {
                if (i > 0 && k <= below) || above.is_some_and(|a| k >= a) {
                    return Err(format!("key {k} is in the bin of gap {i}, outside it"));
                }
            }
            if let Bin::Retrained(level) = &*bin {
                level.check(below, above.unwrap_or(hi))?;
            }
        }
        Ok(())
    }
}

impl Bin {
    fn get(&self, key: u64) -> Option<u64> {
        match self {
            Bin::Entries(v) => v.binary_search_by_key(&key, |e| e.0).ok().map(|i| v[i].1),
            Bin::Retrained(level) => level.get(key),
            Bin::Deepest(map) => map.get(&key).copied(),
        }
    }

    /// Inserts into this bin, which would be retrained into a level at `depth`.
    fn insert(&mut self, key: u64, payload: u64, depth: u32) {
        match self {
            Bin::Entries(v) => match v.binary_search_by_key(&key, |e| e.0) {
                Ok(i) => v[i].1 = payload,
                Err(i) => {
                    v.insert(i, (key, payload));
                    if v.len() > BIN_CAPACITY {
                        *self = match depth > MAX_DEPTH {
                            true => Bin::Deepest(v.drain(..).collect()),
                            // The PLA refuses nothing here (sorted distinct keys, ranks
                            // below 2^60), so the bin is always retrained.
                            false => match Level::build(v, depth) {
                                Ok(level) => Bin::Retrained(level),
                                Err(_) => return,
                            },
                        };
                    }
                }
            },
            Bin::Retrained(level) => level.insert(key, payload),
            Bin::Deepest(map) => {
                map.insert(key, payload);
            }
        }
    }

    fn remove(&mut self, key: u64) {
        match self {
            Bin::Entries(v) => {
                if let Ok(i) = v.binary_search_by_key(&key, |e| e.0) {
                    v.remove(i);
                }
            }
            Bin::Retrained(level) => level.remove(key),
            Bin::Deepest(map) => {
                map.remove(&key);
            }
        }
    }

    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        match self {
            Bin::Entries(v) => {
                let start = v.partition_point(|e| e.0 < from);
                let take = n.min(v.len() - start);
                out.extend_from_slice(&v[start..start + take]);
                take
            }
            Bin::Retrained(level) => level.scan(from, n, out),
            Bin::Deepest(map) => {
                let before = out.len();
                out.extend(map.range(from..).take(n).map(|(&k, &v)| (k, v)));
                out.len() - before
            }
        }
    }

    fn bytes(&self) -> u64 {
        match self {
            Bin::Entries(v) => (v.capacity() * 16) as u64,
            Bin::Retrained(level) => level.bytes(),
            Bin::Deepest(map) => crate::updatable::OrderedMap::estimate(map.len() as u64),
        }
    }
}

impl Concurrent for Finedex {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        check_sorted(entries, "Finedex::bulk_load")?;
        Ok(Finedex {
            top: Level::build(&last_of_each_key(entries), 0)?,
        })
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.top.get(key)
    }

    fn insert(&self, key: u64, payload: u64) {
        self.top.insert(key, payload);
    }

    fn remove(&self, key: u64) {
        self.top.remove(key);
    }

    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        self.top.scan(from, n, out)
    }

    fn size_in_bytes(&self) -> u64 {
        size_of::<Self>() as u64 + self.top.bytes()
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        self.top.check(0, u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updatable::concurrent::conformance::check_kind;

    #[test]
    fn finedex_is_linearizable() {
        check_kind::<Finedex>();
    }

    #[test]
    fn a_full_bin_is_retrained_alone_and_keeps_every_key() {
        // Two bulk-loaded keys far apart, then 10,000 keys into the one gap between them.
        let f = Finedex::bulk_load(&[(0, 0), (1 << 40, 1)]).unwrap();
        for k in 1..=10_000u64 {
            f.insert(k * 1000, k);
        }
        let model = &f.top.models[0];
        let bin = model.bins[1].get().unwrap().lock();
        assert!(
            matches!(&*bin, Bin::Retrained(_)),
            "the gap's bin was retrained"
        );
        drop(bin);
        assert!(model.bins[0].get().is_none() && model.bins[2].get().is_none());
        for k in 1..=10_000u64 {
            assert_eq!(f.get(k * 1000), Some(k));
        }
        let mut all = Vec::new();
        f.scan(0, usize::MAX, &mut all);
        assert_eq!(all.len(), 10_002);
        f.check_structure().unwrap();
    }

    #[test]
    fn threads_inserting_into_one_gap_lose_nothing_while_it_is_retrained() {
        let f = Finedex::bulk_load(&[(0, 0), (1 << 40, 1)]).unwrap();
        let f = &f;
        std::thread::scope(|s| {
            for t in 0..4u64 {
                s.spawn(move || {
                    for k in 1..6_000u64 {
                        let key = k * 4 + t;
                        f.insert(key, key * 3);
                        // Its own earlier keys are all still there, whatever the others do.
                        let back = key - (k % 7).min(k - 1) * 4;
                        assert_eq!(f.get(back), Some(back * 3), "key {back}");
                        if k % 500 == 0 {
                            let mut out = Vec::new();
                            f.scan(key / 2, 300, &mut out);
                            assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
                            assert!(out.iter().all(|e| e.1 == e.0 * 3 || e.0 == 1 << 40));
                        }
                    }
                });
            }
        });
        for key in 4..24_000u64 {
            assert_eq!(f.get(key), Some(key * 3), "key {key}");
        }
        f.check_structure().unwrap();
    }

    #[test]
    fn ascending_inserts_into_one_gap_stay_shallow() {
        // Without a bound on the nesting, each of these inserts walked every level above.
        let f = Finedex::bulk_load(&[(0, 0), (u64::MAX, 1)]).unwrap();
        for k in 1..=300_000u64 {
            f.insert(k, k);
        }
        for k in (1..=300_000u64).step_by(997) {
            assert_eq!(f.get(k), Some(k));
        }
        f.check_structure().unwrap();
    }

    #[test]
    fn an_empty_index_takes_keys_anywhere() {
        let f = Finedex::bulk_load(&[]).unwrap();
        for k in [u64::MAX, 0, 7, u64::MAX - 1] {
            f.insert(k, k ^ 1);
        }
        let mut all = Vec::new();
        f.scan(0, 10, &mut all);
        let keys: Vec<u64> = all.iter().map(|e| e.0).collect();
        assert_eq!(keys, [0, 7, u64::MAX - 1, u64::MAX]);
        f.remove(7);
        assert_eq!(f.get(7), None);
        assert_eq!(f.get(u64::MAX), Some(u64::MAX ^ 1));
    }
}
