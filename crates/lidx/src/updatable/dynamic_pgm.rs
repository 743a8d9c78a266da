//! The dynamic PGM-Index (paper 3, section 2.2 "tree-merge"; Ferragina and Vinciguerra,
//! 2020): the logarithmic method over static PGMs, laid out as PGM-index's
//! `DynamicPGMIndex` is today and in the version paper 3's benchmark (GRE) pins.
//!
//! Entries live in sorted runs, one per level. Level `i` holds at most `base^i` entries
//! (`base` = 8). The lowest levels are one insert buffer, level `b`, holding the sum of
//! `base^j` for `j ≤ b` entries (585 by default: `b` = 3); inserts go into it directly,
//! shifting the entries after them. When the buffer is full, the next insert finds the
//! first level above it with room for the buffer, the levels in between and itself, and
//! merges them all into that level, pairwise and newest first, as an LSM-tree compacts; the
//! levels below it are emptied. A level is rewritten each time a merge lands on it, so it
//! fills by about `base` merges before the next one passes it by.
//!
//! Levels from `index_level` up (8 by default: runs of more than 2^21 entries) get a static
//! PGM of the index family (ε = 16, paper 3's Table 1) over their keys; smaller ones are
//! bisected, which is cheaper than indexing them again at every merge. A lookup searches the
//! levels newest first and the first one holding the key answers. A removal inserts a
//! tombstone, which shadows older entries until a merge into the oldest level drops both.
//!
//! An entry is a key and its payload side by side (16 bytes, as the original's items);
//! where the original marks a tombstone by a reserved payload, a run here keeps a bitmap
//! beside its entries (none at all while it holds no tombstone), so every `u64` is a
//! payload; and a tombstone merged into the oldest level goes whether or not it meets its
//! key there (the original keeps one that does not). Levels, their PGMs' windows and the
//! buffer are searched as the original searches them: by halving without branches,
//! fetching both places the next step may probe.

use super::{Counters, Updatable, check_sorted, last_of_each_key};
use crate::index::{Index, Pgm, PgmParams};
use crate::last_mile::lower_bound_prefetching as lower_bound;
use crate::{Error, Result};

/// How the levels are sized and indexed: `DynamicPGMIndex`'s constructor arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynamicPgmParams {
    /// The PGMs' error, in positions (paper 3: 16).
    pub epsilon: u64,
    /// Level `i` holds at most `base^i` entries: a power of two from 2 to 256 (8).
    pub base: u32,
    /// Levels up to this one are the insert buffer; `None` takes the original's rule, the
    /// least level of `base^level` ≥ 128 entries (one less for base 2): 3 for base 8.
    pub buffer_level: Option<u32>,
    /// Levels from this one up get a PGM (and always levels above the buffer); `None`
    /// takes the original's rule, the least level of `base^level` ≥ 2^24 entries: 8 for
    /// base 8, so runs of more than 2^21 entries.
    pub index_level: Option<u32>,
}

impl Default for DynamicPgmParams {
    /// ε = 16 (paper 3) and PGM-index's `DynamicPGMIndex` defaults since July 2021, which
    /// GRE pins: base 8, a buffer of 585 entries (levels 0 to 3), PGMs from level 8.
    fn default() -> Self {
        DynamicPgmParams {
            epsilon: 16,
            base: 8,
            buffer_level: None,
            index_level: None,
        }
    }
}

/// The levels' geometry, derived once from [`DynamicPgmParams`].
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// log2 of the base.
    base_bits: u32,
    /// The buffer's level.
    buffer_level: u32,
    /// The first level with a PGM.
    index_level: u32,
    /// Entries the buffer holds at most.
    buffer_capacity: usize,
}

impl Shape {
    /// Checks `params` and derives the levels' geometry as the original's constructor does.
    fn new(params: &DynamicPgmParams) -> Result<Shape> {
        if !(2..=256).contains(&params.base) || !params.base.is_power_of_two() {
            return Err(Error::param(
                "base",
                format!("a power of two from 2 to 256, not {}", params.base),
            ));
        }
        if params.epsilon == 0 {
            return Err(Error::param("epsilon", "at least 1"));
        }
        let base_bits = params.base.trailing_zeros();
        let buffer_level = params
            .buffer_level
            .unwrap_or_else(|| ceil_log(128, base_bits) - u32::from(params.base == 2));
        if buffer_level.saturating_mul(base_bits) > 24 {
            return Err(Error::param(
                "buffer level",
                format!(
                    "a buffer up to level {buffer_level} of base {} would hold more than 2^24 entries",
                    params.base
                ),
            ));
        }
        let index_level = params
            .index_level
            .unwrap_or_else(|| ceil_log(1 << 24, base_bits))
            .max(buffer_level + 1);
        let buffer_capacity = (0..=buffer_level).map(|j| 1usize << (j * base_bits)).sum();
        Ok(Shape {
            base_bits,
            buffer_level,
            index_level,
            buffer_capacity,
        })
    }

    /// Entries level `level` (above the buffer) holds at most.
    fn capacity(&self, level: u32) -> usize {
        1usize
            .checked_shl(level.saturating_mul(self.base_bits))
            .unwrap_or(usize::MAX)
    }
}

/// The least `l` with `2^(l × base_bits)` ≥ `n` (0 for `n` ≤ 1): the original's
/// `ceil_log_base`.
fn ceil_log(n: usize, base_bits: u32) -> u32 {
    let log2 = match n {
        0 | 1 => 0,
        n => usize::BITS - (n - 1).leading_zeros(),
    };
    log2.div_ceil(base_bits)
}

/// The buffer or a level above it: entries in increasing key order, which of them are
/// tombstones, and the PGM over their keys where the level has one.
#[derive(Clone, Debug, Default)]
struct Run {
    /// (key, payload); a tombstone's payload is 0 and means nothing.
    entries: Vec<(u64, u64)>,
    /// Bit `i` set: entry `i` is a tombstone. Empty until the run holds one (a merge makes
    /// it anew; the buffer keeps it once it has one).
    tombstones: Vec<u64>,
    /// Boxed, so that a run's header is 56 bytes and a lookup that passes over the levels
    /// reads one line for every few of them, as the original's vectors of 24.
    pgm: Option<Box<Pgm>>,
}

impl Run {
    #[inline]
    fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    fn is_tombstone(&self, i: usize) -> bool {
        self.tombstones
            .get(i / 64)
            .is_some_and(|w| (w >> (i % 64)) & 1 == 1)
    }

    /// Entry `i`: its key, and its payload or `None` for a tombstone.
    #[inline]
    fn entry(&self, i: usize) -> (u64, Option<u64>) {
        let (key, payload) = self.entries[i];
        (key, (!self.is_tombstone(i)).then_some(payload))
    }

    /// Appends an entry (keys must come in increasing order).
    fn push(&mut self, key: u64, value: Option<u64>) {
        let i = self.entries.len();
        self.entries.push((key, value.unwrap_or(0)));
        if value.is_none() {
            self.mark(i, true);
        }
    }

    /// Marks entry `i` a tombstone (`dead`) or not, making the bitmap where it has none.
    fn mark(&mut self, i: usize, dead: bool) {
        self.tombstones.resize(self.len().div_ceil(64), 0);
        let bit = 1 << (i % 64);
        match dead {
            true => self.tombstones[i / 64] |= bit,
            false => self.tombstones[i / 64] &= !bit,
        }
    }

    /// Where the run holds `key`: `Some` of its payload or, for a tombstone, `None`.
    #[inline(always)]
    fn find(&self, key: u64) -> Option<Option<u64>> {
        let i = self.lower_bound(key);
        let held = self.entries.get(i).is_some_and(|e| e.0 == key);
        held.then(|| self.entry(i).1)
    }

    /// Puts `value` under `key`, whose lower bound is `i`: over the entry there if it
    /// holds `key`, else inserted before it. Returns the entries moved up to make room.
    #[inline]
    fn put_at(&mut self, i: usize, key: u64, value: Option<u64>) -> usize {
        let dead = value.is_none();
        let payload = value.unwrap_or(0);
        if self.entries.get(i).is_some_and(|e| e.0 == key) {
            self.entries[i].1 = payload;
            if dead || !self.tombstones.is_empty() {
                self.mark(i, dead);
            }
            return 0;
        }
        self.entries.insert(i, (key, payload));
        if dead || !self.tombstones.is_empty() {
            insert_bit(&mut self.tombstones, self.entries.len(), i, dead);
        }
        self.len() - 1 - i
    }

    /// The first position whose key is at least `key`.
    #[inline(always)]
    fn lower_bound(&self, key: u64) -> usize {
        let Some(pgm) = &self.pgm else {
            return lower_bound(&self.entries, key, |e| e.0);
        };
        let w = pgm.search(key);
        let hi = (w.hi as usize).min(self.len());
        let lo = (w.lo as usize).min(hi);
        lo + lower_bound(&self.entries[lo..hi], key, |e| e.0)
    }

    fn bytes(&self) -> u64 {
        (self.entries.capacity() * 16 + self.tombstones.capacity() * 8) as u64
            + self.pgm.as_ref().map_or(0, |p| p.size_in_bytes())
    }
}

/// Merges `newer` and `older` into `out` (empty), `newer`'s entry winning a key both
/// hold; with `drop_tombstones` (nothing older is left to shadow), tombstones are left
/// out.
fn merge(newer: &Run, older: &Run, drop_tombstones: bool, out: &mut Run) {
    let (mut i, mut j) = (0, 0);
    let mut put = |(key, value): (u64, Option<u64>)| {
        if value.is_some() || !drop_tombstones {
            out.push(key, value);
        }
    };
    while i < newer.len() && j < older.len() {
        let (a, b) = (newer.entry(i), older.entry(j));
        if a.0 <= b.0 {
            put(a);
            i += 1;
            j += usize::from(a.0 == b.0);
        } else {
            put(b);
            j += 1;
        }
    }
    (i..newer.len()).for_each(|i| put(newer.entry(i)));
    (j..older.len()).for_each(|j| put(older.entry(j)));
}

/// Inserts bit `on` at position `i` of the bitmap `bits` of `len - 1` bits, moving the
/// bits from `i` up by one, so that it holds `len`.
fn insert_bit(bits: &mut Vec<u64>, len: usize, i: usize, on: bool) {
    bits.resize(len.div_ceil(64), 0);
    let (word, at) = (i / 64, i % 64);
    for w in (word + 1..bits.len()).rev() {
        bits[w] = (bits[w] << 1) | (bits[w - 1] >> 63);
    }
    let below = (1u64 << at) - 1;
    let old = bits[word];
    bits[word] = (old & below) | ((old & !below) << 1) | (u64::from(on) << at);
}

/// Merges `newer` and `older`, sorted runs without tombstones, onto `out`, `newer`'s
/// entry winning a key both hold: each step takes an entry and advances one side or both
/// without a branch on the keys, which random inserts make unpredictable.
fn merge_live(newer: &[(u64, u64)], older: &[(u64, u64)], out: &mut Vec<(u64, u64)>) {
    let (mut a, mut b) = (newer, older);
    while let (Some(&x), Some(&y)) = (a.first(), b.first()) {
        out.push(std::hint::select_unpredictable(x.0 <= y.0, x, y));
        a = &a[usize::from(x.0 <= y.0)..];
        b = &b[usize::from(x.0 >= y.0)..];
    }
    out.extend_from_slice(a);
    out.extend_from_slice(b);
}

/// The dynamic PGM-Index.
#[derive(Clone, Debug)]
pub struct DynamicPgm {
    params: DynamicPgmParams,
    shape: Shape,
    /// The insert buffer: entries by key, some of them tombstones; never a PGM.
    buffer: Run,
    /// `levels[j]` is level `buffer_level + 1 + j`: higher levels are older and larger.
    levels: Vec<Run>,
    counters: Counters,
}

impl DynamicPgm {
    /// An index over `entries` (sorted by key, the last payload of a key winning) with
    /// `params`; an error names a parameter out of range.
    pub fn with_params(entries: &[(u64, u64)], params: DynamicPgmParams) -> Result<DynamicPgm> {
        check_sorted(entries, "DynamicPgm::bulk_load")?;
        let shape = Shape::new(&params)?;
        let entries = last_of_each_key(entries);
        let mut index = DynamicPgm {
            params,
            shape,
            buffer: Run {
                entries: Vec::with_capacity(shape.buffer_capacity + 1),
                ..Run::default()
            },
            levels: Vec::new(),
            counters: Counters::default(),
        };
        // As the original: the entries go to the level of the least base^level ≥ n, or to
        // the buffer where that is the buffer's level.
        let level = ceil_log(entries.len(), shape.base_bits).max(shape.buffer_level);
        if level == shape.buffer_level {
            index.buffer.entries.extend_from_slice(&entries);
        } else {
            let mut run = Run {
                entries,
                ..Run::default()
            };
            index.index_run(&mut run, level);
            let j = (level - shape.buffer_level - 1) as usize;
            index.levels.resize_with(j + 1, Run::default);
            index.levels[j] = run;
        }
        index.counters = Counters::default();
        Ok(index)
    }

    /// Builds `run`'s PGM if `level` has one.
    fn index_run(&mut self, run: &mut Run, level: u32) {
        run.pgm = None;
        self.counters.nodes_created += 1;
        if level < self.shape.index_level || run.len() == 0 {
            return;
        }
        let keys: Vec<u64> = run.entries.iter().map(|e| e.0).collect();
        let params = PgmParams {
            epsilon: self.params.epsilon,
            ..PgmParams::default()
        };
        run.pgm = Pgm::build(&keys, &params).ok().map(Box::new);
        self.counters.nodes_created += u64::from(run.pgm.is_some());
    }

    /// Puts `value` (a payload or a tombstone) under `key` in the buffer; a full buffer
    /// is merged down with it instead.
    #[inline]
    fn put(&mut self, key: u64, value: Option<u64>) {
        self.counters.nodes_traversed += 1;
        let i = self.buffer.lower_bound(key);
        let shifted = self.buffer.put_at(i, key, value);
        self.counters.keys_shifted += shifted as u64;
        if self.buffer.len() > self.shape.buffer_capacity {
            self.merge_down();
        }
    }

    /// Merges the buffer (one entry over full) and the levels up to the first with room
    /// for all of them into that level, pairwise and newest first, as the original's
    /// `pairwise_merge`.
    fn merge_down(&mut self) {
        let shape = self.shape;
        let mut required = self.buffer.len();
        let mut target = 0;
        while let Some(run) = self.levels.get(target) {
            let level = shape.buffer_level + 1 + target as u32;
            if required <= shape.capacity(level) - run.len() {
                break;
            }
            required += run.len();
            target += 1;
        }
        if target == self.levels.len() {
            self.levels.push(Run::default());
        }
        // Every entry the merge may write, the target's own included.
        let total = required + self.levels[target].len();
        // Tombstones merged into the oldest level have nothing left to shadow.
        let oldest = self.levels[target + 1..].iter().all(|r| r.len() == 0);
        // `None` while the buffer is still the newest data: empty levels are passed by.
        let mut merged: Option<Run> = None;
        // Two outputs of `total` entries at most, taking turns as the original's
        // `tmp_a` and `tmp_b` do: no step grows its output, and no more is allocated.
        let mut spare = Vec::new();
        for j in 0..=target {
            let older = std::mem::take(&mut self.levels[j]);
            let drop_tombstones = oldest && j == target;
            if older.len() == 0 && !drop_tombstones {
                continue;
            }
            if spare.capacity() < total {
                spare = Vec::with_capacity(total);
            }
            let mut out = Run {
                entries: std::mem::take(&mut spare),
                ..Run::default()
            };
            let newer = merged.as_ref().unwrap_or(&self.buffer);
            match newer.tombstones.is_empty() && older.tombstones.is_empty() {
                true => merge_live(&newer.entries, &older.entries, &mut out.entries),
                false => merge(newer, &older, drop_tombstones, &mut out),
            }
            if let Some(done) = merged.replace(out) {
                spare = done.entries;
                spare.clear();
            }
        }
        let mut merged = match merged {
            Some(run) => {
                self.buffer.entries.clear();
                self.buffer.tombstones.clear();
                run
            }
            // Every level was empty and the target keeps tombstones: the buffer moves up,
            // and a new one takes its place.
            None => std::mem::replace(
                &mut self.buffer,
                Run {
                    entries: Vec::with_capacity(shape.buffer_capacity + 1),
                    ..Run::default()
                },
            ),
        };
        self.counters.keys_shifted += merged.len() as u64;
        self.counters.structure_modifications += 1;
        self.index_run(&mut merged, shape.buffer_level + 1 + target as u32);
        self.levels[target] = merged;
    }
}

impl Updatable for DynamicPgm {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        DynamicPgm::with_params(entries, DynamicPgmParams::default())
    }

    #[inline(always)]
    fn get(&mut self, key: u64) -> Option<u64> {
        let mut searched = 0;
        let mut found = None;
        if self.buffer.len() > 0 {
            searched += 1;
            found = self.buffer.find(key);
        }
        if found.is_none() {
            for run in self.levels.iter().filter(|r| r.len() > 0) {
                searched += 1;
                found = run.find(key);
                if found.is_some() {
                    break;
                }
            }
        }
        self.counters.nodes_traversed += searched;
        found.flatten()
    }

    #[inline]
    fn insert(&mut self, key: u64, payload: u64) {
        self.put(key, Some(payload));
    }

    #[inline]
    fn remove(&mut self, key: u64) {
        self.put(key, None);
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        // A k-way merge of the buffer and the levels, newest first, from `from`.
        let mut sources: Vec<&Run> = vec![&self.buffer];
        let mut at = vec![self.buffer.lower_bound(from)];
        for run in self.levels.iter().filter(|r| r.len() > 0) {
            sources.push(run);
            at.push(run.lower_bound(from));
        }
        self.counters.nodes_traversed += sources.len() as u64;
        let before = out.len();
        while out.len() - before < n {
            let mut best: Option<(u64, Option<u64>)> = None;
            for (s, &i) in sources.iter().zip(&at) {
                if i < s.len() {
                    let e = s.entry(i);
                    if best.is_none_or(|b| e.0 < b.0) {
                        best = Some(e);
                    }
                }
            }
            let Some((key, value)) = best else {
                break;
            };
            for (s, i) in sources.iter().zip(at.iter_mut()) {
                if *i < s.len() && s.entry(*i).0 == key {
                    *i += 1;
                }
            }
            if let Some(v) = value {
                out.push((key, v));
            }
        }
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        self.levels.iter().map(Run::bytes).sum::<u64>()
            + self.buffer.bytes()
            + (self.levels.capacity() * std::mem::size_of::<Run>()) as u64
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        if self.buffer.len() > self.shape.buffer_capacity {
            return Err(format!(
                "the buffer holds {} entries, more than {}",
                self.buffer.len(),
                self.shape.buffer_capacity
            ));
        }
        if let Some(w) = self
            .buffer
            .entries
            .windows(2)
            .position(|w| w[0].0 >= w[1].0)
        {
            return Err(format!("the buffer is out of order at position {w}"));
        }
        if self.buffer.tombstones.len() > self.buffer.len().div_ceil(64) {
            return Err("the buffer's tombstones reach past its entries".into());
        }
        for (j, run) in self.levels.iter().enumerate() {
            let level = self.shape.buffer_level + 1 + j as u32;
            if let Some(w) = run.entries.windows(2).position(|w| w[0].0 >= w[1].0) {
                return Err(format!("level {level} is out of order at position {w}"));
            }
            if run.len() > self.shape.capacity(level) {
                return Err(format!(
                    "level {level} holds {} entries, more than {}",
                    run.len(),
                    self.shape.capacity(level)
                ));
            }
            if run.tombstones.len() > run.len().div_ceil(64) {
                return Err(format!("level {level}'s tombstones reach past its entries"));
            }
            let indexed = level >= self.shape.index_level && run.len() > 0;
            if run.pgm.is_some() != indexed {
                return Err(format!(
                    "level {level} (of {} entries) should {}have a PGM",
                    run.len(),
                    if indexed { "" } else { "not " }
                ));
            }
            if let Some(pgm) = &run.pgm
                && let Some((i, &(k, _))) = run.entries.iter().enumerate().find(|&(i, e)| {
                    let w = pgm.search(e.0);
                    !(w.lo as usize <= i && i <= w.hi as usize)
                })
            {
                return Err(format!("level {level}'s PGM misses key {k} at {i}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bit_inserted_moves_the_bits_above_it_up() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut bits = Vec::new();
        let mut want: Vec<bool> = Vec::new();
        for _ in 0..700 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let i = (rng % (want.len() as u64 + 1)) as usize;
            let on = rng >> 63 == 1;
            want.insert(i, on);
            insert_bit(&mut bits, want.len(), i, on);
            assert_eq!(bits.len(), want.len().div_ceil(64));
            let got: Vec<bool> = (0..want.len())
                .map(|j| bits[j / 64] >> (j % 64) & 1 == 1)
                .collect();
            assert_eq!(got, want, "after inserting {on} at {i}");
            let used = want.len() % 64;
            if used > 0 {
                assert_eq!(
                    bits[bits.len() - 1] >> used,
                    0,
                    "no bit past the last entry"
                );
            }
        }
    }

    #[test]
    fn the_buffer_keeps_tombstones_beside_its_entries() {
        let mut index = DynamicPgm::bulk_load(&[(10, 1), (20, 2), (30, 3)]).unwrap();
        index.insert(25, 4);
        assert!(
            index.buffer.tombstones.is_empty(),
            "no tombstone, no bitmap"
        );
        index.remove(20);
        index.remove(27);
        index.insert(5, 6); // moves every tombstone up a position
        index.insert(20, 7); // a payload over a tombstone
        index.remove(10);
        let got: Vec<Option<u64>> = [5, 10, 20, 25, 27, 30].map(|k| index.get(k)).into();
        assert_eq!(got, [Some(6), None, Some(7), Some(4), None, Some(3)]);
        let dead: Vec<u64> = (0..index.buffer.len())
            .filter(|&i| index.buffer.is_tombstone(i))
            .map(|i| index.buffer.entries[i].0)
            .collect();
        assert_eq!(dead, [10, 27]);
        let mut all = Vec::new();
        index.scan(0, 10, &mut all);
        assert_eq!(all, [(5, 6), (20, 7), (25, 4), (30, 3)]);
        index.check_structure().unwrap();
    }

    #[test]
    fn the_default_shape_is_the_originals() {
        let s = Shape::new(&DynamicPgmParams::default()).unwrap();
        assert_eq!((s.base_bits, s.buffer_level, s.index_level), (3, 3, 8));
        assert_eq!(s.buffer_capacity, 1 + 8 + 64 + 512);
        assert_eq!(s.capacity(7), 1 << 21);
        let two = DynamicPgmParams {
            base: 2,
            ..DynamicPgmParams::default()
        };
        let s = Shape::new(&two).unwrap();
        assert_eq!(
            (s.buffer_level, s.index_level, s.buffer_capacity),
            (6, 24, 127)
        );
        assert_eq!(ceil_log(0, 3), 0);
        assert_eq!(ceil_log(2_000_000, 3), 7);
        assert_eq!(ceil_log(1 << 21, 3), 7);
        assert_eq!(ceil_log((1 << 21) + 1, 3), 8);
    }

    #[test]
    fn out_of_range_params_are_refused() {
        for params in [
            DynamicPgmParams {
                base: 6,
                ..Default::default()
            },
            DynamicPgmParams {
                base: 512,
                ..Default::default()
            },
            DynamicPgmParams {
                epsilon: 0,
                ..Default::default()
            },
            DynamicPgmParams {
                buffer_level: Some(9),
                ..Default::default()
            },
        ] {
            assert!(DynamicPgm::with_params(&[], params).is_err(), "{params:?}");
        }
    }

    #[test]
    fn a_bulk_load_lands_on_the_level_the_original_picks_and_merges_fill_levels_by_base() {
        let entries: Vec<(u64, u64)> = (0..2_000_000u64).map(|k| (k * 3, k)).collect();
        let index = DynamicPgm::bulk_load(&entries).unwrap();
        // 2M entries: level 7 (up to 2^21), below the first indexed level.
        assert_eq!(index.levels.len(), 4);
        assert_eq!(index.levels[3].len(), 2_000_000);
        assert!(index.levels[3].pgm.is_none());
        assert_eq!(index.size_in_bytes() / 2_000_000, 16);

        let mut index = DynamicPgm::bulk_load(&[]).unwrap();
        // A full buffer and the next insert (586 entries) merge into level 4 (4096 entries)
        // six times; the seventh does not fit its 580 left and goes to level 5 with it.
        for k in 0..586 * 6 {
            index.insert(k, k);
        }
        assert_eq!(index.counters().structure_modifications, 6);
        assert_eq!(index.levels[0].len(), 586 * 6);
        assert!(index.buffer.len() == 0);
        for k in 586 * 6..586 * 7 {
            index.insert(k, k);
        }
        assert_eq!(index.counters().structure_modifications, 7);
        assert_eq!((index.levels[0].len(), index.levels[1].len()), (0, 586 * 7));
        index.check_structure().unwrap();
    }

    /// A level's header, which every lookup passes over, takes 56 bytes: its PGM is boxed.
    #[test]
    fn a_level_header_is_small() {
        assert_eq!(std::mem::size_of::<Run>(), 56);
    }

    /// A merge writes into outputs sized once for all it may hold, as the original's do:
    /// no level keeps room for more entries than the level holds at most. (Outputs sized
    /// for the levels emptied but not for the target grew by doubling: the sixth merge into
    /// level 4 left it room for 4,688 entries of its 4,096.)
    #[test]
    fn merges_size_their_outputs_once() {
        let mut index = DynamicPgm::bulk_load(&[]).unwrap();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut merges = 0;
        for i in 0..300_000u64 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            index.insert(x >> 8, i);
            if i % 5 == 4 {
                index.remove(x >> 9);
            }
            // After every merge.
            if index.counters().structure_modifications > merges {
                merges = index.counters().structure_modifications;
                let shape = index.shape;
                let buffer = index.buffer.entries.capacity();
                assert!(
                    buffer <= shape.buffer_capacity + 1,
                    "the buffer: room for {buffer}"
                );
                for (j, run) in index.levels.iter().enumerate() {
                    let level = shape.buffer_level + 1 + j as u32;
                    let (room, most) = (run.entries.capacity(), shape.capacity(level));
                    assert!(
                        room <= most,
                        "level {level}: room for {room} entries of {most}"
                    );
                }
            }
        }
        assert!(merges > 500, "{merges} merges");
        index.check_structure().unwrap();
    }

    #[test]
    fn tombstones_shadow_older_entries_and_vanish_in_the_oldest_level() {
        let entries: Vec<(u64, u64)> = (0..5000u64).map(|k| (k, k)).collect();
        let mut index = DynamicPgm::bulk_load(&entries).unwrap();
        for k in (0..5000).step_by(2) {
            index.remove(k);
        }
        index.remove(u64::MAX);
        index.insert(7, u64::MAX);
        for k in 0..5000 {
            let want = match k {
                7 => Some(u64::MAX),
                k if k % 2 == 0 => None,
                k => Some(k),
            };
            assert_eq!(index.get(k), want, "key {k}");
        }
        index.check_structure().unwrap();
        // 4102 writes in all: six merges into level 4, the seventh takes level 4 into
        // the bulk-loaded level 5, the oldest, where every tombstone meets its key or
        // nothing and goes.
        for k in 10_000..11_600 {
            index.insert(k, k);
        }
        assert_eq!(index.counters().structure_modifications, 7);
        assert!(index.buffer.len() == 0 && index.levels[0].len() == 0);
        assert_eq!(index.levels[1].len(), 2500 + 1600);
        assert!(index.levels[1].tombstones.iter().all(|&w| w == 0));
        index.check_structure().unwrap();
        let mut all = Vec::new();
        index.scan(0, usize::MAX, &mut all);
        assert_eq!(all.len(), 4100);
        assert!(all.iter().all(|&(k, v)| {
            k == 7 && v == u64::MAX || k != 7 && v == k && (k % 2 == 1 || k >= 10_000)
        }));
    }
}
