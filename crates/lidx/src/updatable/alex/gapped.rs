//! What the gapped arrays of the ALEX-like index ([`Alex`](super::Alex)) and of ALEX+
//! ([`AlexPlus`](super::AlexPlus)) share (paper 3, section 2.1): the exponential search
//! outwards from a model's prediction, the walk of the occupancy bitmap, and the cost
//! model's statistics. One thread's index reads plain cells; ALEX+ reads relaxed atomics
//! optimistically, under a version it checks afterwards, so every search here ends and
//! stays in bounds whatever the cells hold.

use std::sync::atomic::{AtomicU64, Ordering};

use super::plan::{LOOKUP_WEIGHT, Model, SEARCH_WEIGHT, SHIFT_WEIGHT, SMALL_RANGE};
use super::{CATASTROPHIC_SHIFTS, DEVIATION, MIN_OBSERVED_INSERTS};

/// An array of 64-bit cells as the searches read it.
pub(super) trait Cells {
    /// Cell `i` (below [`Cells::count`]).
    fn cell(&self, i: usize) -> u64;
    /// How many cells there are.
    fn count(&self) -> usize;
}

impl Cells for [u64] {
    #[inline]
    fn cell(&self, i: usize) -> u64 {
        self[i]
    }
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
}

impl Cells for [(u64, u64)] {
    #[inline]
    fn cell(&self, i: usize) -> u64 {
        self[i].0
    }
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
}

impl Cells for [AtomicU64] {
    #[inline]
    fn cell(&self, i: usize) -> u64 {
        self[i].load(Ordering::Relaxed)
    }
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
}

/// The first slot of `keys` (at least one; sorted, gaps holding the next entry's key)
/// whose key is at least `key`, searched exponentially outwards from `model`'s
/// prediction; and the steps that took, counted as ALEX counts its exponential search's
/// iterations: the doublings past the first probe, so a search whose answer is next to
/// the prediction takes none, as the expected cost's log2(1 + miss) has it.
#[inline(always)]
pub(super) fn lower_bound<C: Cells + ?Sized>(keys: &C, model: &Model, key: u64) -> (usize, u64) {
    let len = keys.count();
    let from = model.predict(key, len);
    let mut steps = 0;
    let mut step = 1;
    let (mut lo, mut hi) = if keys.cell(from) >= key {
        // The answer is at most `from`: probe leftwards.
        let mut first_ge = from;
        loop {
            if step > from {
                break (0, first_ge);
            }
            let probe = from - step;
            if keys.cell(probe) < key {
                break (probe + 1, first_ge);
            }
            first_ge = probe;
            step *= 2;
            steps += 1;
        }
    } else {
        let mut last_lt = from;
        loop {
            let probe = from + step;
            if probe >= len {
                break (last_lt + 1, len);
            }
            if keys.cell(probe) >= key {
                break (last_lt + 1, probe);
            }
            last_lt = probe;
            step *= 2;
            steps += 1;
        }
    };
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if keys.cell(mid) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    (lo, steps)
}

/// The first of `slots` slots at or after `from` whose bit in `occupied` differs from
/// `flip`'s (all zeros: an entry; all ones: a gap); `slots` if none.
#[inline]
pub(super) fn next_bit<C: Cells + ?Sized>(
    occupied: &C,
    slots: usize,
    from: usize,
    flip: u64,
) -> usize {
    let words = occupied.count();
    let mut w = from / 64;
    if w >= words {
        return slots;
    }
    let mut bits = (occupied.cell(w) ^ flip) & (u64::MAX << (from % 64));
    loop {
        if bits != 0 {
            return (w * 64 + bits.trailing_zeros() as usize).min(slots);
        }
        w += 1;
        if w == words {
            return slots;
        }
        bits = occupied.cell(w) ^ flip;
    }
}

/// The last gap before `before` in `occupied`.
pub(super) fn prev_gap<C: Cells + ?Sized>(occupied: &C, before: usize) -> Option<usize> {
    if before == 0 {
        return None;
    }
    let last = before - 1;
    let mut w = last / 64;
    let mut bits = !occupied.cell(w) & (u64::MAX >> (63 - last % 64));
    loop {
        if bits != 0 {
            return Some(w * 64 + 63 - bits.leading_zeros() as usize);
        }
        if w == 0 {
            return None;
        }
        w -= 1;
        bits = !occupied.cell(w);
    }
}

/// What a data node's operations have cost since its build: ALEX's cost model compares it
/// with what the build expected.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CostStats {
    /// Searches, and their exponential-search steps.
    pub ops: u64,
    pub search_steps: u64,
    /// Inserts, and the entries they shifted.
    pub inserts: u64,
    pub shifts: u64,
}

impl CostStats {
    /// The cost per operation seen.
    pub fn observed_cost(&self) -> f64 {
        let steps = self.search_steps as f64 / self.ops.max(1) as f64;
        let shifts = self.shifts as f64 / self.inserts.max(1) as f64;
        SEARCH_WEIGHT * steps + SHIFT_WEIGHT * shifts
    }

    /// Whether inserts into a node of `len` entries have shifted so many (over 100 each,
    /// ALEX's catastrophic cost) that it must split before it is full.
    pub fn is_catastrophic(&self, len: usize) -> bool {
        len >= SMALL_RANGE
            && self.inserts >= MIN_OBSERVED_INSERTS
            && self.shifts > CATASTROPHIC_SHIFTS * self.inserts
    }

    /// Whether a full node of `len` entries, built expecting `expected` per operation,
    /// splits rather than expands: it is catastrophic, or its observed cost exceeds both
    /// one node lookup and [`DEVIATION`] times the expected one.
    pub fn has_strayed(&self, len: usize, expected: f64) -> bool {
        self.is_catastrophic(len)
            || self.inserts >= MIN_OBSERVED_INSERTS
                && len >= SMALL_RANGE
                && self.observed_cost() > LOOKUP_WEIGHT
                && self.observed_cost() > DEVIATION * expected
    }
}
