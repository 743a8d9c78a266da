//! The dynamic PGM-Index (paper 3, section 2.2 "tree-merge"; Ferragina and Vinciguerra,
//! 2020): the logarithmic method over static PGMs.
//!
//! Entries live in sorted runs, one per level. Level 0 is a small sorted buffer that
//! inserts go into directly (shifting the entries after them); level `i` holds at most
//! `2^(buffer_bits + i)` entries. When the buffer overflows, it and the levels above it
//! are merged into the first level `j` that can hold them all, as an LSM-tree compacts,
//! and the levels below `j` are emptied. Every run of at least `2^index_bits` entries gets
//! a static PGM of the index family (ε = 16, paper 3's Table 1) over its keys, so a lookup
//! searches each non-empty level, newest first, through its PGM's window or by bisection,
//! and the first level holding the key answers. A removal inserts a tombstone, which
//! shadows older entries until a merge into the oldest level drops both.

use super::{Counters, Updatable, check_sorted, last_of_each_key};
use crate::Result;
use crate::index::{Index, Pgm, PgmParams};

/// How the levels are sized and indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynamicPgmParams {
    /// The PGMs' error, in positions (paper 3: 16).
    pub epsilon: u64,
    /// Level 0, the insert buffer, holds `2^buffer_bits` entries.
    pub buffer_bits: u32,
    /// Runs of at least `2^index_bits` entries get a PGM; smaller ones are bisected.
    pub index_bits: u32,
}

impl Default for DynamicPgmParams {
    /// ε = 16 (paper 3), and PGM-index's `DynamicPGMIndex` defaults before May 2021: a
    /// buffer of 128 entries, levels that double, PGMs on runs of 2^18 entries and more
    /// (smaller runs are cheaper to bisect than to index again at every merge). Its defaults
    /// since, and in the version GRE pins, are levels of base 8 and PGMs only above 2^21
    /// entries.
    fn default() -> Self {
        DynamicPgmParams {
            epsilon: 16,
            buffer_bits: 7,
            index_bits: 18,
        }
    }
}

/// One level: keys in increasing order, each with a payload or a tombstone (`None`).
#[derive(Clone, Debug, Default)]
struct Run {
    keys: Vec<u64>,
    values: Vec<Option<u64>>,
    pgm: Option<Pgm>,
}

impl Run {
    fn len(&self) -> usize {
        self.keys.len()
    }

    /// The first position whose key is at least `key`.
    fn lower_bound(&self, key: u64) -> usize {
        match &self.pgm {
            Some(pgm) => {
                let w = pgm.search(key);
                let (lo, hi) = (w.lo as usize, (w.hi as usize).min(self.keys.len()));
                lo + self.keys[lo..hi].partition_point(|&k| k < key)
            }
            None => self.keys.partition_point(|&k| k < key),
        }
    }

    fn bytes(&self) -> u64 {
        (self.keys.capacity() * 8 + self.values.capacity() * 16) as u64
            + self.pgm.as_ref().map_or(0, |p| p.size_in_bytes())
    }
}

/// The next entry of a k-way merge of `runs` (newest first) from cursors `at`: the least
/// key under the cursors with the newest run's value for it (a payload or a tombstone);
/// every cursor on that key moves past it.
fn next_entry(runs: &[&Run], at: &mut [usize]) -> Option<(u64, Option<u64>)> {
    let mut best: Option<(u64, usize)> = None;
    for (l, run) in runs.iter().enumerate() {
        if let Some(&k) = run.keys.get(at[l])
            && best.is_none_or(|(b, _)| k < b)
        {
            best = Some((k, l));
        }
    }
    let (key, level) = best?;
    let value = runs[level].values[at[level]];
    for (l, run) in runs.iter().enumerate() {
        if run.keys.get(at[l]) == Some(&key) {
            at[l] += 1;
        }
    }
    Some((key, value))
}

/// The dynamic PGM-Index.
#[derive(Clone, Debug)]
pub struct DynamicPgm {
    params: DynamicPgmParams,
    /// `levels[0]` is the buffer; higher levels are older and larger.
    levels: Vec<Run>,
    counters: Counters,
}

impl DynamicPgm {
    /// An index over `entries` (sorted by key, the last payload of a key winning) with
    /// `params`.
    pub fn with_params(entries: &[(u64, u64)], params: DynamicPgmParams) -> Result<DynamicPgm> {
        check_sorted(entries, "DynamicPgm::bulk_load")?;
        let entries = last_of_each_key(entries);
        let mut index = DynamicPgm {
            params,
            levels: vec![Run::default()],
            counters: Counters::default(),
        };
        if !entries.is_empty() {
            let mut level = 1;
            while index.capacity(level) < entries.len() {
                level += 1;
            }
            let run = index.run(
                entries.iter().map(|e| e.0).collect(),
                entries.iter().map(|e| Some(e.1)).collect(),
            );
            index.levels.resize_with(level + 1, Run::default);
            index.levels[level] = run;
        }
        index.counters = Counters::default();
        Ok(index)
    }

    /// Entries level `level` holds at most.
    fn capacity(&self, level: usize) -> usize {
        1usize
            .checked_shl(self.params.buffer_bits + level as u32)
            .unwrap_or(usize::MAX)
    }

    /// A run of `keys` (increasing) and `values`, with a PGM when it is large enough.
    fn run(&mut self, keys: Vec<u64>, values: Vec<Option<u64>>) -> Run {
        let pgm = (keys.len() >= 1 << self.params.index_bits)
            .then(|| {
                let params = PgmParams {
                    epsilon: self.params.epsilon,
                    ..PgmParams::default()
                };
                Pgm::build(&keys, &params).ok()
            })
            .flatten();
        self.counters.nodes_created += 1 + u64::from(pgm.is_some());
        Run { keys, values, pgm }
    }

    /// Puts `value` (a payload or a tombstone) under `key` in the buffer, and merges the
    /// buffer down when it overflows.
    fn put(&mut self, key: u64, value: Option<u64>) {
        let capacity = self.capacity(0);
        let buffer = &mut self.levels[0];
        self.counters.nodes_traversed += 1;
        let i = buffer.keys.partition_point(|&k| k < key);
        if buffer.keys.get(i) == Some(&key) {
            buffer.values[i] = value;
            return;
        }
        self.counters.keys_shifted += (buffer.len() - i) as u64;
        buffer.keys.insert(i, key);
        buffer.values.insert(i, value);
        if buffer.len() > capacity {
            self.merge_down();
        }
    }

    /// Merges the buffer and the levels above it into the first level that holds them all.
    fn merge_down(&mut self) {
        let mut total = self.levels[0].len();
        let mut target = 1;
        loop {
            total += self.levels.get(target).map_or(0, Run::len);
            if total <= self.capacity(target) {
                break;
            }
            target += 1;
        }
        if self.levels.len() <= target {
            self.levels.resize_with(target + 1, Run::default);
        }
        // Nothing older than the target: tombstones have nothing left to shadow.
        let oldest = self.levels[target + 1..].iter().all(|r| r.len() == 0);
        let (mut keys, mut values) = (Vec::with_capacity(total), Vec::with_capacity(total));
        let runs: Vec<Run> = self.levels[..=target]
            .iter_mut()
            .map(std::mem::take)
            .collect();
        // A k-way merge, the newest (lowest) level winning ties.
        let refs: Vec<&Run> = runs.iter().collect();
        let mut at = vec![0usize; runs.len()];
        while let Some((key, value)) = next_entry(&refs, &mut at) {
            if value.is_some() || !oldest {
                keys.push(key);
                values.push(value);
            }
        }
        self.counters.keys_shifted += keys.len() as u64;
        self.counters.structure_modifications += 1;
        self.levels[target] = self.run(keys, values);
        let room = self.capacity(0) + 1;
        self.levels[0].keys.reserve(room);
        self.levels[0].values.reserve(room);
    }
}

impl Updatable for DynamicPgm {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        DynamicPgm::with_params(entries, DynamicPgmParams::default())
    }

    fn get(&mut self, key: u64) -> Option<u64> {
        for run in self.levels.iter().filter(|r| r.len() > 0) {
            self.counters.nodes_traversed += 1;
            let i = run.lower_bound(key);
            if run.keys.get(i) == Some(&key) {
                return run.values[i];
            }
        }
        None
    }

    fn insert(&mut self, key: u64, payload: u64) {
        self.put(key, Some(payload));
    }

    fn remove(&mut self, key: u64) {
        self.put(key, None);
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let runs: Vec<&Run> = self.levels.iter().filter(|r| r.len() > 0).collect();
        self.counters.nodes_traversed += runs.len() as u64;
        let mut at: Vec<usize> = runs.iter().map(|r| r.lower_bound(from)).collect();
        let before = out.len();
        while out.len() - before < n {
            let Some((key, value)) = next_entry(&runs, &mut at) else {
                break;
            };
            if let Some(v) = value {
                out.push((key, v));
            }
        }
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        self.levels.iter().map(Run::bytes).sum::<u64>()
            + (self.levels.capacity() * std::mem::size_of::<Run>()) as u64
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        for (i, run) in self.levels.iter().enumerate() {
            if run.keys.len() != run.values.len() {
                return Err(format!(
                    "level {i} has {} keys and {} values",
                    run.keys.len(),
                    run.values.len()
                ));
            }
            if let Some(w) = run.keys.windows(2).position(|w| w[0] >= w[1]) {
                return Err(format!("level {i} is out of order at position {w}"));
            }
            if run.len() > self.capacity(i) {
                return Err(format!(
                    "level {i} holds {} entries, more than {}",
                    run.len(),
                    self.capacity(i)
                ));
            }
            if let Some(pgm) = &run.pgm
                && let Some(&k) = run.keys.iter().find(|&&k| {
                    let w = pgm.search(k);
                    !(w.lo as usize <= run.keys.partition_point(|&x| x < k)
                        && run.keys.partition_point(|&x| x < k) <= w.hi as usize)
                })
            {
                return Err(format!("level {i}'s PGM misses key {k}"));
            }
        }
        Ok(())
    }
}
