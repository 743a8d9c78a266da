//! What the ALEX-like index in memory ([`Alex`](super::Alex)) and on disk
//! ([`AlexFile`](super::file::AlexFile)) share: the data nodes' linear models and
//! model-based placement, the inner nodes' routing models, ALEX's cost model, and the bulk
//! load that decides, range by range, between a data node and an inner node of the fanout
//! the cost model prefers (paper 3, section 2.1; Ding et al., section 4.3).
//!
//! The bulk load builds nothing itself: it hands each node to a [`NodeSink`], which the
//! in-memory index fills with gapped arrays and the file writer with node descriptors.
//! It takes entries with duplicate keys (a file indexes a table, whose keys may repeat);
//! equal keys always route to the same slot, so they land in one data node.

use std::ops::Range;

use super::AlexParams;
use crate::pla::{CentredLine, distance_f64, running_means};

/// ALEX's cost weights: one exponential-search step, one shifted key, one node lookup.
pub(super) const SEARCH_WEIGHT: f64 = 20.0;
pub(super) const SHIFT_WEIGHT: f64 = 0.5;
pub(super) const LOOKUP_WEIGHT: f64 = 20.0;
/// ALEX's weight of a byte of models (slots and node headers), per key of the whole index
/// over the keys of the subtree: it keeps fanouts from growing for ever-smaller gains.
const MODEL_BYTE_WEIGHT: f64 = 5e-7;
/// Slots of the smallest data node.
pub(super) const MIN_SLOTS: usize = 16;
/// Bulk loads put ranges of at most this many keys into one data node outright, and give
/// a child at least this many keys where adjacent slots allow.
pub(super) const SMALL_RANGE: usize = 64;

/// An entry of a bulk load: anything with a key (a key alone, or a key and its payload).
pub(super) trait Keyed: Copy {
    /// The key.
    fn key(self) -> u64;
}

impl Keyed for u64 {
    #[inline]
    fn key(self) -> u64 {
        self
    }
}

impl Keyed for (u64, u64) {
    #[inline]
    fn key(self) -> u64 {
        self.0
    }
}

/// A data node's linear model: position ≈ `intercept + slope · (key − base)`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Model {
    pub base: u64,
    pub slope: f64,
    pub intercept: f64,
}

impl Model {
    /// The least-squares line from the keys of `entries` (sorted; equal keys allowed) to
    /// their ranks, scaled onto `slots` positions, fitted on a sample as ALEX fits by
    /// default (`approximate_model_computation`, its `build_model_sampling`): every
    /// `2^k`-th key for the largest `k` leaving about 10 keys, then twice as many at each
    /// round until the slope changes by less than 1% and the intercept (of ALEX's line on
    /// the absolute key) by less than 1% or half a rank; 20 keys or fewer are all fitted.
    pub fn fit<E: Keyed>(entries: &[E], slots: usize) -> Model {
        let n = entries.len();
        let Some(base) = entries.first().map(|e| e.key()) else {
            return Model::default();
        };
        if n == 1 {
            return Model {
                base,
                slope: 0.0,
                intercept: slots as f64 / 2.0,
            };
        }
        let mut step = 1;
        if n > SAMPLE_FLOOR * 2 {
            let mut size = n as f64;
            while size >= SAMPLE_FLOOR as f64 {
                size /= 2.0;
                step *= 2;
            }
            step /= 2;
        }
        let mut line = rank_line(entries, base, step);
        while step > 1 {
            step /= 2;
            let finer = rank_line(entries, base, step);
            let settled = finer.settles(&line);
            line = finer;
            if settled {
                break;
            }
        }
        let scale = slots as f64 / n as f64;
        Model {
            base,
            slope: line.line.slope * scale,
            intercept: line.line.intercept() * scale,
        }
    }

    /// The predicted position of `key` among `slots` positions (`slots` at least 1).
    #[inline]
    pub fn predict(&self, key: u64, slots: usize) -> usize {
        let at = self.intercept + self.slope * distance_f64(key, self.base);
        // `as` saturates: below 0 (and NaN) is 0; through `i64`, whose saturating
        // conversion takes fewer instructions than `usize`'s, to the same result.
        ((at as i64).max(0) as usize).min(slots.saturating_sub(1))
    }
}

/// ALEX's sampled fit starts from about this many keys.
const SAMPLE_FLOOR: usize = 10;
/// A relative change below this leaves ALEX's sampled fit settled.
const SETTLED: f64 = 0.01;

/// A least-squares line from keys (less `base`) to ranks.
#[derive(Clone, Copy, Debug)]
struct RankLine {
    line: CentredLine,
    base: u64,
}

impl RankLine {
    /// ALEX's test that a finer sample's line has settled: its slope within 1% of the
    /// coarser one's, and its intercept on the absolute key within 1% or half a rank.
    fn settles(&self, coarser: &RankLine) -> bool {
        let absolute = |l: &RankLine| l.line.intercept() - l.line.slope * l.base as f64;
        let slope_change = ((self.line.slope - coarser.line.slope) / coarser.line.slope).abs();
        let intercept_change = (absolute(self) - absolute(coarser)).abs();
        slope_change < SETTLED
            && ((intercept_change / absolute(coarser)).abs() < SETTLED || intercept_change < 0.5)
    }
}

/// The least-squares line from every `step`-th key of `entries` (less `base`) to its rank
/// among all of them.
fn rank_line<E: Keyed>(entries: &[E], base: u64, step: usize) -> RankLine {
    let points = entries
        .iter()
        .enumerate()
        .step_by(step)
        .map(|(i, e)| ((e.key() - base) as f64, i as f64));
    let (_, mean_x, mean_y) = running_means(points.clone());
    RankLine {
        line: CentredLine::fit_about(points, mean_x, mean_y),
        base,
    }
}

/// Where model-based placement puts `entries` among `slots` positions (at least as many
/// as the entries): each at its prediction, or just right of the previous one, leaving
/// room for the rest; calls `at(i, predicted, position)` in order, positions increasing.
pub(super) fn place<E: Keyed>(
    entries: &[E],
    slots: usize,
    model: &Model,
    mut at: impl FnMut(usize, usize, usize),
) {
    let n = entries.len();
    let mut next_free = 0;
    for (i, e) in entries.iter().enumerate() {
        let predicted = model.predict(e.key(), slots);
        let pos = predicted.max(next_free).min(slots - (n - i));
        at(i, predicted, pos);
        next_free = pos + 1;
    }
}

/// Slots of a data node built `density` full over `n` keys: never fewer than two more
/// than the keys, so the insert that triggered a rebuild always finds a gap.
pub(super) fn slots_for(n: usize, density: f64) -> usize {
    ((n as f64 / density).ceil() as usize)
        .max(n + 2)
        .max(MIN_SLOTS)
}

/// The cost per key that a data node over `entries` with `slots` positions expects:
/// exponential-search steps from prediction to position, and the keys an insert would
/// shift (a run of `r` adjacent entries costs an insert landing in it about `r / 4`).
pub(super) fn expected_cost<E: Keyed>(entries: &[E], slots: usize) -> f64 {
    let n = entries.len();
    if n == 0 {
        return 0.0;
    }
    let model = Model::fit(entries, slots);
    let (mut steps, mut shift_mass, mut run, mut last) = (0.0, 0.0, 0usize, usize::MAX);
    place(entries, slots, &model, |_, predicted, pos| {
        // log2(1) = 0 for every key at its prediction, most of them on easy data.
        let miss = predicted.abs_diff(pos);
        if miss != 0 {
            steps += log2_1p(miss);
        }
        if last != usize::MAX && pos == last + 1 {
            run += 1;
        } else {
            shift_mass += run as f64 * run as f64;
            run = 1;
        }
        last = pos;
    });
    shift_mass += run as f64 * run as f64;
    SEARCH_WEIGHT * steps / n as f64 + SHIFT_WEIGHT * shift_mass / (4.0 * n as f64)
}

/// Misses below this take their `log2(1 + miss)` from a table (bulk loads weigh every
/// key's miss for every fanout they try; most misses are small).
const LOG2_TABLE_LEN: usize = 1024;

/// `log2(1 + miss)`, the same value as `f64::log2` gives, from a table for small misses.
#[inline]
fn log2_1p(miss: usize) -> f64 {
    static TABLE: std::sync::LazyLock<[f64; LOG2_TABLE_LEN]> =
        std::sync::LazyLock::new(|| std::array::from_fn(|m| (m as f64 + 1.0).log2()));
    match TABLE.get(miss) {
        Some(&bits) => bits,
        None => (miss as f64 + 1.0).log2(),
    }
}

/// An inner node's routing model over its child slots: slot = ⌊(key − base) · slope⌋,
/// clamped to the slots. Doubling `slope` (exact in floating point) doubles every slot, so
/// a key's slot `s` becomes `2s` or `2s + 1` when the slots double.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Router {
    pub base: u64,
    pub slope: f64,
}

impl Router {
    /// The router of `fanout` slots whose span is `lo..=hi` (`lo` in the first slot, `hi`
    /// in the last).
    pub fn spanning(lo: u64, hi: u64, fanout: usize) -> Router {
        let slope = if hi > lo {
            fanout as f64 / (hi - lo) as f64
        } else {
            0.0
        };
        Router { base: lo, slope }
    }

    /// The slot of `key` among `slots` (at least 1) under `slope`.
    #[inline]
    pub fn slot_in(&self, key: u64, slots: usize, slope: f64) -> usize {
        // Through `i64`, whose saturating conversion takes fewer instructions than
        // `usize`'s, with the same result here (at least 0; huge values clamp either way).
        let at = (distance_f64(key, self.base) * slope) as i64;
        (at.max(0) as usize).min(slots.saturating_sub(1))
    }

    /// The slot of `key` among `slots` (at least 1).
    #[inline]
    pub fn slot(&self, key: u64, slots: usize) -> usize {
        self.slot_in(key, slots, self.slope)
    }

    /// About the smallest key of slot `slot` (exact up to float rounding, which only
    /// matters to callers aiming a new router): `u64::MAX` when no key reaches it.
    pub fn key_at(&self, slot: usize) -> u64 {
        if slot == 0 {
            return self.base;
        }
        if self.slope <= 0.0 {
            return u64::MAX;
        }
        // `as` saturates at u64::MAX.
        self.base.saturating_add((slot as f64 / self.slope) as u64)
    }

    /// Where `key` falls before the slots are clamped: at or past `slots` for keys beyond
    /// the router's span.
    #[inline]
    pub fn raw_slot(&self, key: u64) -> f64 {
        distance_f64(key, self.base) * self.slope
    }
}

/// How a data node over `entries` splits downwards into a new inner node of two
/// children: the node's router and fanout, aimed at `domain` (the keys its parents route
/// to it, and whether each side is open, the tree's edge: then it reaches `reach` times
/// the keys' width past them), a power of two up to `max_fanout` giving the keys' range
/// about two slots; and where the entries part: the right child's first slot (past the
/// first entry's, at the median entry's) and the entries left of it.
pub(super) struct DownSplit {
    pub router: Router,
    pub fanout: usize,
    pub cut_slot: usize,
    pub cut: usize,
}

impl DownSplit {
    /// The split of `entries` (sorted, at least one).
    pub fn of(
        entries: &[(u64, u64)],
        ((dlo, lo_open), (dhi, hi_open)): ((u64, bool), (u64, bool)),
        reach: u64,
        max_fanout: usize,
    ) -> DownSplit {
        let (lo, hi) = (entries[0].0, entries[entries.len() - 1].0);
        let width = (hi - lo).max(1);
        let reach = width.saturating_mul(reach);
        let span_lo = if lo_open {
            lo.saturating_sub(reach)
        } else {
            dlo.min(lo)
        };
        let span_hi = if hi_open {
            hi.saturating_add(reach)
        } else {
            dhi.max(hi)
        };
        let wanted = (2.0 * (span_hi - span_lo) as f64 / width as f64).ceil();
        let fanout = (wanted.min(max_fanout as f64) as usize)
            .next_power_of_two()
            .clamp(2, max_fanout.max(2));
        let router = Router::spanning(span_lo, span_hi, fanout);
        let first = router.slot(lo, fanout);
        let mut cut_slot = router.slot(entries[entries.len() / 2].0, fanout);
        if cut_slot == first {
            cut_slot += 1;
        }
        let cut_slot = cut_slot.clamp(1, fanout - 1);
        let cut = entries.partition_point(|e| router.slot(e.0, fanout) < cut_slot);
        DownSplit {
            router,
            fanout,
            cut_slot,
            cut,
        }
    }
}

/// A child of an inner node: the run of slots it takes and the entries it holds.
pub(super) type Group = (Range<usize>, Range<usize>);

/// The children an inner node's router makes of `entries` over `fanout` slots: runs of
/// adjacent slots and the entries they take. A run packs slots while it holds at most
/// `SMALL_RANGE` keys; a slot with more stands alone; empty slots join the run on their
/// left (or the first). Entries over more than one slot, more than `SMALL_RANGE` of them,
/// make two runs or more.
pub(super) fn groups<E: Keyed>(entries: &[E], router: &Router, fanout: usize) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    let (mut slot_start, mut entry_start) = (0, 0);
    let mut i = 0;
    while i < entries.len() {
        let s = router.slot(entries[i].key(), fanout);
        let end = i + entries[i..].partition_point(|e| router.slot(e.key(), fanout) == s);
        if i > entry_start && end - entry_start > SMALL_RANGE {
            out.push((slot_start..s, entry_start..i));
            (slot_start, entry_start) = (s, i);
        }
        i = end;
    }
    out.push((slot_start..fanout, entry_start..entries.len()));
    out
}

/// What a bulk load hands its nodes to, parents before children, data nodes left to
/// right.
pub(super) trait NodeSink<E> {
    /// A data node over `entries`, which start at entry `at` of the bulk load, with
    /// `slots` positions; returns its id.
    fn data(&mut self, at: usize, entries: &[E], slots: usize) -> u32;
    /// An inner node of `fanout` slots routed by `router`, its children to come; returns
    /// its id.
    fn inner(&mut self, router: Router, fanout: usize) -> u32;
    /// Points slots `slots` of inner node `id` at `child`.
    fn child(&mut self, id: u32, slots: Range<usize>, child: u32);
}

/// Bulk-loads `entries` (sorted; equal keys allowed) into `sink`, whose data nodes take
/// `data_node_bytes` each besides their slots (what the fanout search weighs a child's
/// model at); returns the root's id.
pub(super) fn bulk_load<E: Keyed>(
    entries: &[E],
    params: &AlexParams,
    data_node_bytes: usize,
    sink: &mut impl NodeSink<E>,
) -> u32 {
    let planner = Planner {
        params,
        total: entries.len(),
        data_node_bytes,
    };
    planner.build(0, entries, sink)
}

/// The bulk load's settings.
struct Planner<'a> {
    params: &'a AlexParams,
    /// Keys of the whole bulk load.
    total: usize,
    /// Bytes of a data node besides its slots.
    data_node_bytes: usize,
}

impl Planner<'_> {
    fn max_data_keys(&self) -> usize {
        (self.params.max_data_slots as f64 * self.params.init_density) as usize
    }

    /// Builds the subtree over `entries`, which start at entry `at`.
    fn build<E: Keyed>(&self, at: usize, entries: &[E], sink: &mut impl NodeSink<E>) -> u32 {
        let n = entries.len();
        let init = self.params.init_density;
        let as_data =
            (n <= self.max_data_keys()).then(|| expected_cost(entries, slots_for(n, init)));
        let inner = if n <= SMALL_RANGE {
            None
        } else {
            self.best_fanout(entries)
        };
        match (as_data, inner) {
            (Some(data_cost), Some((inner_cost, _))) if data_cost <= inner_cost => {
                sink.data(at, entries, slots_for(n, init))
            }
            (_, Some((_, fanout))) => {
                let (lo, hi) = (entries[0].key(), entries[n - 1].key());
                let router = Router::spanning(lo, hi, fanout);
                let id = sink.inner(router, fanout);
                for (slots, range) in groups(entries, &router, fanout) {
                    let child = self.build(at + range.start, &entries[range], sink);
                    sink.child(id, slots, child);
                }
                id
            }
            _ => sink.data(at, entries, slots_for(n, init)),
        }
    }

    /// The power-of-two fanout whose children, each a data node, cost least, with that
    /// cost plus one node lookup and the models' bytes (weighted by how few of all the
    /// keys the subtree takes); fanouts are tried upwards until two in a row do no better
    /// (`None` where the keys cannot be parted: they are all equal).
    fn best_fanout<E: Keyed>(&self, entries: &[E]) -> Option<(f64, usize)> {
        let n = entries.len();
        let (lo, hi) = (entries[0].key(), entries[n - 1].key());
        if lo == hi {
            return None;
        }
        let init = self.params.init_density;
        let mut best: Option<(f64, usize)> = None;
        let mut worse = 0;
        let mut fanout = 2;
        while fanout <= self.params.max_fanout && fanout <= n.next_power_of_two() && worse < 2 {
            let router = Router::spanning(lo, hi, fanout);
            let children = groups(entries, &router, fanout);
            let model_bytes = fanout * 4 + children.len() * self.data_node_bytes;
            let models = MODEL_BYTE_WEIGHT * model_bytes as f64 * self.total as f64 / n as f64;
            let cost = LOOKUP_WEIGHT
                + models
                + children
                    .into_iter()
                    .map(|(_, r)| {
                        let share = r.len() as f64 / n as f64;
                        share * expected_cost(&entries[r.clone()], slots_for(r.len(), init))
                    })
                    .sum::<f64>();
            if best.is_none_or(|(c, _)| cost < c) {
                best = Some((cost, fanout));
                worse = 0;
            } else {
                worse += 1;
            }
            fanout *= 2;
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Distribution, GenParams, generate};

    /// Predictions and slots come out as a saturating conversion to `usize` would give
    /// them, at every extreme of the line and the key.
    #[test]
    fn predictions_clamp_like_a_saturating_conversion() {
        let extremes = [0.0, -1.0, 0.5, 1e-300, 3.7, 1e9, 9.3e18, 2e19, -2e19, 1e300];
        let floats = extremes.into_iter().chain([f64::NAN, f64::INFINITY]);
        let keys = [0, 1, 1000, 1 << 40, u64::MAX / 2, u64::MAX - 1, u64::MAX];
        for slope in floats.clone() {
            for intercept in floats.clone() {
                for base in [0, 77, u64::MAX / 3] {
                    let model = Model {
                        base,
                        slope,
                        intercept,
                    };
                    let router = Router { base, slope };
                    for key in keys {
                        // No node has more slots than a slice can: at most `isize::MAX`.
                        for slots in [1, 2, 1000, isize::MAX as usize] {
                            let d = key.saturating_sub(base) as f64;
                            let want = ((intercept + slope * d) as usize).min(slots - 1);
                            assert_eq!(model.predict(key, slots), want, "{model:?} {key}");
                            let want = ((d * slope) as usize).min(slots - 1);
                            assert_eq!(router.slot(key, slots), want, "{router:?} {key}");
                        }
                    }
                }
            }
        }
    }

    /// The mean distance from each key's rank to `model`'s prediction over `n` slots.
    fn mean_miss(keys: &[u64], model: &Model) -> f64 {
        let n = keys.len();
        let total: usize = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| model.predict(k, n).abs_diff(i))
            .sum();
        total as f64 / n as f64
    }

    /// The exact least-squares line, every key fitted.
    fn exact(keys: &[u64]) -> Model {
        let line = rank_line(keys, keys[0], 1).line;
        Model {
            base: keys[0],
            slope: line.slope,
            intercept: line.intercept(),
        }
    }

    #[test]
    fn sampled_fits_predict_about_as_well_as_exact_ones() {
        // Evenly spaced keys: the first sample already has the line.
        let even: Vec<u64> = (0..100_000u64).map(|i| 1_000 + 7 * i).collect();
        assert!(mean_miss(&even, &Model::fit(&even, even.len())) < 1.0);
        for dist in [
            Distribution::Lognormal,
            Distribution::Clustered,
            Distribution::Usparse,
        ] {
            let keys = generate(&GenParams::new(dist, 200_000, 5)).unwrap();
            let (sampled, exact) = (
                mean_miss(&keys, &Model::fit(&keys, keys.len())),
                mean_miss(&keys, &exact(&keys)),
            );
            assert!(
                sampled <= 1.5 * exact + 1.0,
                "{dist}: sampled fit misses {sampled:.1} ranks a key, exact {exact:.1}"
            );
        }
        // A handful of keys is fitted whole.
        let few = [3u64, 4, 9, 100, 101, 150];
        assert_eq!(Model::fit(&few, 6), exact(&few));
    }
}
