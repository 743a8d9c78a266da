//! Paper 2's layered learned index (AirIndex, section 2 and Fig. 1), and its tuner.
//!
//! Layer 0 is the data: fixed-size pages of `P` bytes, each holding whole records in key
//! order. Layer 1 is a piecewise-linear model over the first key of each page (mapped to an
//! integer by the [`KeyMap`](super::KeyMap)) predicting the page's byte offset within Δ₁
//! bytes. It is stored as an array of fixed-size pieces ([`STORED_PIECE`] bytes each), and
//! layer 2 is a model of *that* array's byte offsets within Δ₂, and so on up to the root,
//! layer L, read whole.
//!
//! A lookup of key `x` reads the root, then in each layer below it reads one window of
//! units (pieces, or pages for the last mile), picks the last unit whose first key is at
//! most `x`, and descends ([`Layer::window`]). Layers come in AirIndex's two model
//! families: a **PGM** layer predicts an offset within Δ, and its window holds the units
//! that can start within `[f − U − Δ, f + Δ]` of the prediction `f` (one unit for nearly
//! every key when the model is exact, `1 + 2Δ/U` on average); a **step** layer
//! (B+tree-like) names a run of units per piece, whatever the keys, and its window is
//! that run.
//!
//! **The tuner** (paper 2, "Storage-aware Auto-tuning"): for each number of layers L from
//! 1 to [`MAX_LAYERS`], it sketches the structure for every layer choice (a PGM layer for
//! each Δ on a grid, from 1 byte and then a power-of-two multiple of a quarter of the
//! layer's unit; a step layer for each power-of-two fanout) without writing it, costs a
//! cold lookup as the sum over its reads of the profile's latency + mean bytes / bandwidth
//! (the root whole, then one window per layer), and keeps the cheapest. A slow round trip
//! favours few layers with wide windows; a fast device, more layers with narrow ones.
#![deny(clippy::indexing_slicing)]

use super::model::{BlockModel, ModelKind, Piece};
use crate::Result;
use crate::storage::profile::AffineCost;

/// Bytes of a stored piece: first key, floor, ceiling (the next piece's floor, or
/// `u64::MAX`), slope and intercept, then the CRC32C of those 40 bytes, so that any window
/// of pieces a lookup reads is checked on its own.
pub const STORED_PIECE: u64 = 44;

/// Bytes by which a window reaches past `[f − U − Δ, f + Δ]` on each side, so that
/// rounding in `f`'s floating-point evaluation never leaves a unit out.
pub const SLACK: u64 = 1;

/// The most layers the tuner tries.
pub const MAX_LAYERS: usize = 4;

/// One layer: a model of byte offsets in the layer below, and the error it keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// Pieces, each predicting an offset in the layer below.
    pub pieces: Vec<StoredPiece>,
    /// The largest distance, in bytes, between a prediction at a first key of the layer
    /// below and that unit's true offset (ties in the key map included).
    pub delta: u64,
    /// Bytes of a unit of the layer below (a page, or a stored piece).
    pub unit: u64,
    /// Units in the layer below.
    pub units_below: u64,
    /// A step layer (B+tree-like): each piece names a run of whole units, from its floor
    /// to its ceiling, and a lookup reads exactly that run; else a PGM layer, whose
    /// pieces predict an offset within Δ.
    pub step: bool,
}

/// A piece as stored: it evaluates alone, without its neighbour.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StoredPiece {
    /// The first mapped key it covers.
    pub first_x: u64,
    /// The least offset it predicts.
    pub floor: u64,
    /// The most offset it predicts (`u64::MAX`: no bound).
    pub ceiling: u64,
    /// Bytes per unit of mapped key.
    pub slope: f64,
    /// Offset at `first_x`.
    pub intercept: f64,
}

impl StoredPiece {
    fn of(p: &Piece, next: Option<&Piece>) -> StoredPiece {
        StoredPiece {
            first_x: p.first_x,
            floor: p.floor,
            ceiling: next.map_or(u64::MAX, |n| n.floor),
            slope: p.slope,
            intercept: p.intercept,
        }
    }

    /// The predicted offset of `x` (`x` at least `first_x`, below the next piece's).
    pub fn predict(&self, x: u64) -> f64 {
        let piece = Piece {
            first_x: self.first_x,
            floor: self.floor,
            slope: self.slope,
            intercept: self.intercept,
        };
        piece.eval(x, (self.ceiling != u64::MAX).then_some(self.ceiling))
    }

    /// Appends the piece's [`STORED_PIECE`] bytes.
    #[expect(
        clippy::indexing_slicing,
        reason = "the CRC covers the 40 bytes just written"
    )]
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.first_x.to_le_bytes());
        out.extend_from_slice(&self.floor.to_le_bytes());
        out.extend_from_slice(&self.ceiling.to_le_bytes());
        out.extend_from_slice(&self.slope.to_bits().to_le_bytes());
        out.extend_from_slice(&self.intercept.to_bits().to_le_bytes());
        let crc = crc32c::crc32c(&out[out.len() - 40..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }

    /// Reads a piece written by [`encode`](Self::encode) (`None` for fewer bytes, a wrong
    /// CRC, a slope or intercept that is not a finite number, or a negative slope).
    pub fn decode(bytes: &[u8]) -> Option<StoredPiece> {
        let crc = u32::from_le_bytes(bytes.get(40..44)?.try_into().ok()?);
        if crc32c::crc32c(bytes.get(..40)?) != crc {
            return None;
        }
        let word = |i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(
                bytes.get(8 * i..8 * i + 8)?.try_into().ok()?,
            ))
        };
        let p = StoredPiece {
            first_x: word(0)?,
            floor: word(1)?,
            ceiling: word(2)?,
            slope: f64::from_bits(word(3)?),
            intercept: f64::from_bits(word(4)?),
        };
        (p.slope.is_finite() && p.slope >= 0.0 && p.intercept.is_finite()).then_some(p)
    }
}

impl Layer {
    /// Fits a PGM layer over `firsts` (the mapped first key of each unit of the layer
    /// below, in order, ties allowed) within `epsilon` bytes, for units of `unit` bytes.
    pub fn fit(firsts: &[u64], unit: u64, epsilon: u64) -> Result<Layer> {
        let points: Vec<(u64, u64)> = firsts
            .iter()
            .enumerate()
            .map(|(i, &x)| (x, i as u64 * unit))
            .collect();
        let model = BlockModel::fit(ModelKind::Pgm, &points, epsilon.max(1), 1)?;
        let parts = model.parts();
        let pieces: Vec<StoredPiece> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| StoredPiece::of(p, parts.get(i + 1)))
            .collect();
        Ok(Layer::measured(pieces, firsts, unit, false))
    }

    /// A step layer over `firsts` (as [`fit`](Self::fit)): the units in groups of
    /// `fanout` (a group runs on past a boundary where keys tie, so first keys stay
    /// distinct), each group one piece whose floor and ceiling are its first unit's
    /// offset and the next group's, like a B+tree node's entry: whatever the keys,
    /// `⌈units / fanout⌉` pieces at most, and a lookup reads its group, `fanout` units. A
    /// fanout of 1 names every unit exactly.
    pub fn fit_step(firsts: &[u64], unit: u64, fanout: u64) -> Layer {
        let fanout = fanout.max(1) as usize;
        let mut starts = Vec::with_capacity(firsts.len() / fanout + 1);
        let mut previous: Option<u64> = None;
        for (i, &x) in firsts.iter().enumerate() {
            let due = starts.last().is_none_or(|&s| i - s >= fanout);
            if due && previous.is_none_or(|p| p < x) {
                starts.push(i);
            }
            previous = Some(x);
        }
        let ends = starts.iter().skip(1).copied().chain([firsts.len()]);
        let pieces = starts
            .iter()
            .zip(ends)
            .map(|(&s, e)| StoredPiece {
                first_x: firsts.get(s).copied().unwrap_or(0),
                floor: s as u64 * unit,
                ceiling: e as u64 * unit,
                slope: 0.0,
                intercept: (s as u64 * unit) as f64,
            })
            .collect();
        Layer::measured(pieces, firsts, unit, true)
    }

    /// The layer of `pieces` over units whose first keys are `firsts`, with its error
    /// measured at every unit's first key.
    fn measured(pieces: Vec<StoredPiece>, firsts: &[u64], unit: u64, step: bool) -> Layer {
        let mut layer = Layer {
            pieces,
            delta: 0,
            unit,
            units_below: firsts.len() as u64,
            step,
        };
        layer.delta = firsts
            .iter()
            .enumerate()
            .map(|(i, &x)| (layer.predict(x) - (i as u64 * unit) as f64).abs().ceil() as u64)
            .max()
            .unwrap_or(0);
        layer
    }

    /// The prediction for `x` through the piece that covers it.
    pub fn predict(&self, x: u64) -> f64 {
        let j = self
            .pieces
            .partition_point(|p| p.first_x <= x)
            .saturating_sub(1);
        self.pieces.get(j).map_or(0.0, |p| p.predict(x))
    }

    /// The units a lookup of mapped key `x` reads from the layer below, as (first, count),
    /// given the piece of this layer that covers `x`.
    ///
    /// A step piece names its run of units, from its floor to its ceiling (a key that the
    /// key map sends to the run's first key but sorts below that unit's first key by its
    /// bytes is in the unit before: the last mile reads it then). For a PGM
    /// piece's prediction `f`, with `f` never decreasing and within Δ at every unit's first
    /// key, the unit `u` that holds a key has `f(first of u) ≤ f(key) ≤ f(first of u + 1)`,
    /// so `u·U − Δ ≤ f ≤ (u + 1)·U + Δ`: `u` is an integer in `[(f − Δ)/U − 1, (f + Δ)/U]`
    /// (widened by [`SLACK`] bytes against rounding). Either is clipped to the layer
    /// below. At most [`max_window_units`](Self::max_window_units) units, on average
    /// [`mean_window_units`](Self::mean_window_units): one where the model is exact.
    pub fn window(&self, piece: &StoredPiece, x: u64) -> (u64, u64) {
        let last = self.units_below.saturating_sub(1);
        if self.step {
            let lo = (piece.floor / self.unit.max(1)).min(last);
            let hi = (piece.ceiling / self.unit.max(1)).clamp(lo + 1, last + 1);
            return (lo, hi - lo);
        }
        let (u, reach, predicted) = (
            self.unit as f64,
            (self.delta + SLACK) as f64,
            piece.predict(x),
        );
        let clip = |v: f64| -> u64 {
            match v.is_finite() && v > 0.0 {
                true => (v as u64).min(last),
                false => 0,
            }
        };
        let hi = clip(((predicted + reach) / u).floor());
        let lo = clip(((predicted - reach) / u).ceil() - 1.0).min(hi);
        (lo, hi - lo + 1)
    }

    /// The unit the piece predicts for `x` (a PGM layer's; `None` for a step layer, whose
    /// run has no preferred unit): where a lookup looks first, within
    /// [`window`](Self::window).
    pub fn predicted_unit(&self, piece: &StoredPiece, x: u64) -> Option<u64> {
        let predicted = piece.predict(x) / self.unit.max(1) as f64;
        let last = self.units_below.saturating_sub(1);
        // `as` saturates: NaN goes to 0, huge values to u64::MAX.
        (!self.step).then(|| (predicted as u64).min(last))
    }

    /// Units in each step piece's run.
    fn runs(&self) -> impl Iterator<Item = u64> + '_ {
        self.pieces
            .iter()
            .map(|p| p.ceiling.saturating_sub(p.floor) / self.unit.max(1))
    }

    /// The most units [`window`](Self::window) gives: a step layer's longest run; for a PGM
    /// layer the integers an interval of `1 + 2(Δ + SLACK)/U` can hold; never more units
    /// than there are.
    pub fn max_window_units(&self) -> u64 {
        let most = match self.step {
            true => self.runs().max().unwrap_or(1),
            false => (self.unit + 2 * (self.delta + SLACK)) / self.unit + 1,
        };
        most.min(self.units_below)
    }

    /// The units [`window`](Self::window) gives on average over lookups spread evenly over
    /// the units below: for a step layer the runs weighed by their units (`Σ run² /
    /// units`), for a PGM layer the interval's length in units, `1 + 2(Δ + SLACK)/U`.
    pub fn mean_window_units(&self) -> f64 {
        let units = match self.step {
            true => {
                let squares: u64 = self.runs().map(|r| r * r).sum();
                squares as f64 / self.units_below.max(1) as f64
            }
            false => 1.0 + 2.0 * (self.delta + SLACK) as f64 / self.unit as f64,
        };
        units.min(self.units_below as f64)
    }

    /// Bytes of this layer as stored.
    pub fn bytes(&self) -> u64 {
        self.pieces.len() as u64 * STORED_PIECE
    }
}

/// A layered index over data pages, root last.
#[derive(Clone, Debug, PartialEq)]
pub struct Layered {
    /// Bytes of a data page.
    pub page_size: u64,
    /// Layers 1 to L; `layers[0]` predicts data pages, the last is the root.
    pub layers: Vec<Layer>,
}

/// The reads of one cold lookup on average, root first, data pages last: bytes of each
/// (the root whole, then each layer's mean window).
pub fn lookup_reads(index: &Layered) -> Vec<f64> {
    let mut reads = Vec::with_capacity(index.layers.len() + 1);
    if let Some(root) = index.layers.last() {
        reads.push(root.bytes() as f64);
    }
    for layer in index.layers.iter().rev() {
        reads.push(layer.mean_window_units() * layer.unit as f64);
    }
    reads
}

/// The most bytes each read of a cold lookup takes, root first.
pub fn lookup_max_reads(index: &Layered) -> Vec<u64> {
    let mut reads = Vec::with_capacity(index.layers.len() + 1);
    if let Some(root) = index.layers.last() {
        reads.push(root.bytes());
    }
    for layer in index.layers.iter().rev() {
        reads.push(layer.max_window_units() * layer.unit);
    }
    reads
}

/// The modelled time of one cold lookup under `cost` on average, microseconds (a read's
/// cost is affine in its bytes, so the mean bytes give the mean time).
pub fn lookup_cost_us(index: &Layered, cost: &AffineCost) -> f64 {
    lookup_reads(index)
        .iter()
        .map(|&b| cost.latency_us + b / cost.bandwidth_mb_s.max(1e-9))
        .sum()
}

/// What the tuner considered for one number of layers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Candidate {
    /// The layers' errors, Δ₁ first.
    pub deltas: Vec<u64>,
    /// Whether each layer is a step layer (else a PGM layer), layer 1 first.
    pub steps: Vec<bool>,
    /// The layers' stored bytes, layer 1 first.
    pub bytes: Vec<u64>,
    /// The modelled cold lookup, microseconds.
    pub cost_us: f64,
}

/// The tuner's choice and, for each number of layers, the best structure it found.
#[derive(Clone, Debug)]
pub struct Tuned {
    /// The cheapest structure.
    pub index: Layered,
    /// The best candidate for each L (1 to [`MAX_LAYERS`]), cheapest first.
    pub per_layers: Vec<Candidate>,
    /// Structures sketched.
    pub sketched: u64,
}

/// Error bounds tried for a PGM layer over units of `unit` bytes: with `exact`, 1 byte
/// (a model as exact as the PGM makes it, so a lookup reads one unit); then a quarter of
/// the unit times powers of two, up to `max` bytes.
fn grid(unit: u64, max: u64, exact: bool) -> Vec<u64> {
    let mut out = if exact { vec![1] } else { Vec::new() };
    let mut d = (unit / 4).max(2);
    while d <= max.max(1) {
        out.push(d);
        d *= 2;
    }
    out
}

/// Fanouts tried for a step layer over `units` units: powers of two from `least` while a
/// group is smaller than all the units.
fn fanouts(least: u64, units: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut g = least.max(1);
    while g < units.max(2) {
        out.push(g);
        g *= 2;
    }
    out
}

/// The layers tried over units whose first keys are `firsts` and of `unit` bytes: a PGM
/// layer for each error bound of the grid and a step layer for each fanout from `least`,
/// those on the [`pareto`] front.
fn candidate_layers(
    firsts: &[u64],
    unit: u64,
    least_fanout: u64,
    families: Families,
) -> Result<Vec<Layer>> {
    let mut out = Vec::new();
    if families.pgm {
        // An exact layer pays where its unit is a page, not a 44-byte piece.
        for d in grid(unit, firsts.len() as u64 * unit, least_fanout == 1) {
            out.push(Layer::fit(firsts, unit, d)?);
        }
    }
    if families.step {
        for g in fanouts(least_fanout, firsts.len() as u64) {
            out.push(Layer::fit_step(firsts, unit, g));
        }
    }
    Ok(pareto(out))
}

/// The layers no other layer beats on both counts: the bytes a lookup reads from the
/// layer below (on average) and the pieces the layers above must index. A layer that
/// reads more and leaves more pieces is skipped (the search stays the size it had with
/// one family).
fn pareto(mut layers: Vec<Layer>) -> Vec<Layer> {
    let window = |l: &Layer| l.mean_window_units() * l.unit as f64;
    layers.sort_by(|a, b| {
        window(a)
            .total_cmp(&window(b))
            .then(a.pieces.len().cmp(&b.pieces.len()))
    });
    let mut fewest = usize::MAX;
    layers.retain(|l| {
        let keep = l.pieces.len() < fewest;
        fewest = fewest.min(l.pieces.len());
        keep
    });
    layers
}

/// The model families a search may use for a layer (AirIndex's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Families {
    /// PGM layers.
    pub pgm: bool,
    /// Step layers.
    pub step: bool,
}

impl Families {
    /// Both families: what [`tune`] searches.
    pub const ALL: Families = Families {
        pgm: true,
        step: true,
    };
}

/// Tunes a layered index over data pages whose mapped first keys are `firsts`, for
/// `cost` (the profile's random reads), over both model families.
pub fn tune(firsts: &[u64], page_size: u64, cost: &AffineCost) -> Result<Tuned> {
    tune_families(firsts, page_size, cost, Families::ALL)
}

/// [`tune`] with each layer drawn from `families` only (at least one of them).
pub fn tune_families(
    firsts: &[u64],
    page_size: u64,
    cost: &AffineCost,
    families: Families,
) -> Result<Tuned> {
    let mut best: Vec<Option<(f64, Layered)>> = vec![None; MAX_LAYERS];
    let mut sketched = 0u64;
    // Layer 1 may name every page exactly (a step layer of fanout 1, as a B+tree's
    // lowest level does).
    for first in candidate_layers(firsts, page_size, 1, families)? {
        let mut stack = vec![first];
        descend(
            &mut stack,
            page_size,
            cost,
            families,
            &mut best,
            &mut sketched,
        )?;
    }
    let mut per_layers: Vec<(Candidate, Layered)> = best
        .into_iter()
        .flatten()
        .map(|(cost_us, index)| {
            let c = Candidate {
                deltas: index.layers.iter().map(|l| l.delta).collect(),
                steps: index.layers.iter().map(|l| l.step).collect(),
                bytes: index.layers.iter().map(Layer::bytes).collect(),
                cost_us,
            };
            (c, index)
        })
        .collect();
    per_layers.sort_by(|a, b| a.0.cost_us.total_cmp(&b.0.cost_us));
    let index = per_layers
        .first()
        .map(|(_, i)| i.clone())
        .ok_or_else(|| crate::Error::param("keys", "a layered index needs at least one page"))?;
    Ok(Tuned {
        index,
        per_layers: per_layers.into_iter().map(|(c, _)| c).collect(),
        sketched,
    })
}

/// Records the structure `stack` (layer 1 first) and, while layers may be added and the
/// top one has more than one piece, tries every Δ for the next.
#[expect(
    clippy::indexing_slicing,
    reason = "the stack holds at least one layer while it descends"
)]
fn descend(
    stack: &mut Vec<Layer>,
    page_size: u64,
    cost: &AffineCost,
    families: Families,
    best: &mut [Option<(f64, Layered)>],
    sketched: &mut u64,
) -> Result<()> {
    *sketched += 1;
    let index = Layered {
        page_size,
        layers: stack.clone(),
    };
    let c = lookup_cost_us(&index, cost);
    let slot = &mut best[stack.len() - 1];
    if slot.as_ref().is_none_or(|(b, _)| c < *b) {
        *slot = Some((c, index));
    }
    let Some(top) = stack.last() else {
        return Ok(());
    };
    if stack.len() == MAX_LAYERS || top.pieces.len() <= 1 {
        return Ok(());
    }
    let firsts: Vec<u64> = top.pieces.iter().map(|p| p.first_x).collect();
    for layer in candidate_layers(&firsts, STORED_PIECE, 2, families)? {
        if layer.pieces.len() >= firsts.len() {
            continue; // A layer no smaller than the one below saves nothing.
        }
        stack.push(layer);
        descend(stack, page_size, cost, families, best, sketched)?;
        stack.pop();
    }
    Ok(())
}

/// A lookup through `index` over in-memory copies of its layers and pages: returns the data
/// page that holds `x` (the last whose first key is at most `x`) and the bytes each read
/// took, root first (each at most [`lookup_max_reads`]'s). `page_firsts[p]` is page `p`'s mapped first key. For tests and for
/// checking the tuner's costs against real reads.
#[expect(
    clippy::indexing_slicing,
    reason = "windows lie within the layers and pages the index was fitted to"
)]
pub fn lookup_in_memory(index: &Layered, page_firsts: &[u64], x: u64) -> (u64, Vec<u64>) {
    let mut reads = Vec::new();
    let Some(root) = index.layers.last() else {
        return (0, reads);
    };
    reads.push(root.bytes());
    // The piece (of the layer above) that covers `x`: in the root, by its first keys.
    let mut piece = root.pieces[root
        .pieces
        .partition_point(|p| p.first_x <= x)
        .saturating_sub(1)];
    let mut target = 0;
    for (depth, layer) in index.layers.iter().enumerate().rev() {
        let (start, n) = layer.window(&piece, x);
        reads.push(n * layer.unit);
        let firsts_below: Vec<u64> = match depth {
            0 => page_firsts[start as usize..(start + n) as usize].to_vec(),
            _ => index.layers[depth - 1].pieces[start as usize..(start + n) as usize]
                .iter()
                .map(|p| p.first_x)
                .collect(),
        };
        let within = firsts_below.partition_point(|&f| f <= x).saturating_sub(1) as u64;
        target = start + within;
        if depth > 0 {
            piece = index.layers[depth - 1].pieces[target as usize];
        }
    }
    (target, reads)
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ssd() -> AffineCost {
        AffineCost {
            latency_us: 250.0,
            bandwidth_mb_s: 175.0,
        }
    }

    fn nfs() -> AffineCost {
        AffineCost {
            latency_us: 50_000.0,
            bandwidth_mb_s: 12.0,
        }
    }

    /// The page holding `x`: the last whose first key is at most `x` (page 0 below all).
    fn truth(firsts: &[u64], x: u64) -> u64 {
        firsts.partition_point(|&f| f <= x).saturating_sub(1) as u64
    }

    proptest! {
        #[test]
        fn every_tuned_structure_finds_every_page_reading_what_it_costs(
            mut firsts in prop::collection::vec(prop_oneof![0u64..1000, 0u64..(1 << 53)], 1..400),
            probes in prop::collection::vec(any::<u64>(), 1..40),
            page_kib in 1u64..16,
        ) {
            firsts.sort_unstable();
            let page = page_kib * 1024;
            for cost in [ssd(), nfs()] {
                let tuned = tune(&firsts, page, &cost).expect("tunes");
                prop_assert!(tuned.per_layers.iter().all(|c| c.cost_us >= tuned.per_layers[0].cost_us));
                let most = lookup_max_reads(&tuned.index);
                let below: Vec<u64> = firsts.iter().map(|f| f.saturating_sub(1)).collect();
                for &x in firsts.iter().chain(&below).chain(&probes) {
                    let (page_no, reads) = lookup_in_memory(&tuned.index, &firsts, x);
                    let want = truth(&firsts, x);
                    // Ties in the keys: any page with the same first key as the truth holds
                    // keys mapped to `x`; the last of them is the answer.
                    prop_assert_eq!(page_no, want, "x {} firsts {:?}", x, firsts);
                    prop_assert_eq!(reads.len(), most.len());
                    prop_assert!(reads.iter().zip(&most).all(|(r, m)| r <= m), "{:?} {:?}", reads, most);
                }
            }
        }

        #[test]
        fn any_structure_finds_every_page(
            gaps in prop::collection::vec(prop_oneof![Just(0u64), 1u64..50, 1u64..100_000], 50..3000),
            probes in prop::collection::vec(any::<u64>(), 1..40),
            shapes in prop::collection::vec((any::<bool>(), 1u64..20_000), 1..4),
        ) {
            let firsts: Vec<u64> = gaps.iter().scan(0u64, |x, g| { *x += g; Some(*x) }).collect();
            let page = 4096;
            // Each layer a PGM of error bound `d` or a step layer of fanout `d % 300 + 1`.
            let layer = |firsts: &[u64], unit: u64, (step, d): (bool, u64)| match step {
                true => Layer::fit_step(firsts, unit, d % 300 + 1),
                false => Layer::fit(firsts, unit, d).expect("fits"),
            };
            let mut layers = vec![layer(&firsts, page, shapes[0])];
            for &shape in &shapes[1..] {
                let below: Vec<u64> = layers.last().expect("a layer").pieces.iter().map(|p| p.first_x).collect();
                layers.push(layer(&below, STORED_PIECE, shape));
            }
            for (l, &(step, d)) in layers.iter().zip(&shapes) {
                if step {
                    // A group is at least its fanout (more where keys tie).
                    prop_assert!(l.pieces.len() as u64 <= l.units_below.div_ceil(d % 300 + 1));
                }
            }
            let index = Layered { page_size: page, layers };
            let most = lookup_max_reads(&index);
            // Keys just below each page's first key are where a prediction runs highest.
            let below: Vec<u64> = firsts.iter().map(|f| f.saturating_sub(1)).collect();
            for &x in firsts.iter().chain(&below).chain(&probes) {
                let (page_no, reads) = lookup_in_memory(&index, &firsts, x);
                prop_assert_eq!(page_no, truth(&firsts, x));
                prop_assert!(reads.iter().zip(&most).all(|(r, m)| r <= m), "{:?} {:?}", reads, most);
            }
        }

        #[test]
        fn stored_pieces_round_trip(first_x in any::<u64>(), floor in any::<u64>(), slope in 0.0f64..1e6, intercept in -1e12f64..1e12) {
            let p = StoredPiece { first_x, floor, ceiling: floor.saturating_add(7), slope, intercept };
            let mut bytes = Vec::new();
            p.encode(&mut bytes);
            prop_assert_eq!(bytes.len() as u64, STORED_PIECE);
            prop_assert_eq!(StoredPiece::decode(&bytes), Some(p));
        }
    }

    #[test]
    fn an_exact_layer_reads_one_page_and_windows_average_what_the_tuner_costs() {
        // Pages whose first keys lie on a line: layer 1 within a byte of the truth.
        let firsts: Vec<u64> = (0..10_000u64).map(|p| p * 1000).collect();
        let exact = Layer::fit(&firsts, 4096, 1).expect("fits");
        assert!(exact.delta <= 1, "{}", exact.delta);
        let covering = |l: &Layer, x: u64| {
            l.pieces[l
                .pieces
                .partition_point(|p| p.first_x <= x)
                .saturating_sub(1)]
        };
        let mut pages_read = 0u64;
        let keys = 0..10_000_000u64;
        let probes = keys.clone().step_by(997).count() as u64;
        for x in keys.step_by(997) {
            let (start, n) = exact.window(&covering(&exact, x), x);
            assert!(
                start <= x / 1000 && x / 1000 < start + n,
                "{x}: {start} + {n}"
            );
            pages_read += n;
        }
        // One page for nearly every key (two where the prediction lands within a byte or
        // two of a page's start).
        assert!(
            pages_read <= probes + probes / 100,
            "{pages_read} pages for {probes} keys"
        );
        // A step layer of fanout 1 names each page: one page for every key, as a B+tree's
        // lowest level does.
        let named = Layer::fit_step(&firsts, 4096, 1);
        for x in (0..10_000_000u64).step_by(997) {
            assert_eq!(named.window(&covering(&named, x), x), (x / 1000, 1));
        }
        // Coarser layers: their windows average what the tuner charges for them.
        for layer in [
            Layer::fit_step(&firsts, 4096, 16),
            Layer::fit(&firsts[..], 4096, 3000).expect("fits"),
        ] {
            let mut units = 0u64;
            for x in (0..10_000_000u64).step_by(101) {
                let (start, n) = layer.window(&covering(&layer, x), x);
                assert!(start <= x / 1000 && x / 1000 < start + n);
                assert!(n <= layer.max_window_units());
                units += n;
            }
            let mean = units as f64 / (0..10_000_000u64).step_by(101).count() as f64;
            assert!(
                (mean - layer.mean_window_units()).abs() <= 0.02 * layer.mean_window_units(),
                "{mean} against {}",
                layer.mean_window_units()
            );
        }
        assert_eq!(Layer::fit_step(&firsts, 4096, 16).pieces.len(), 625);
    }

    #[test]
    fn step_layers_alone_make_a_b_tree_and_the_search_over_both_families_is_no_costlier() {
        let firsts = hard_firsts(50_000);
        for cost in [ssd(), nfs()] {
            let steps = Families {
                pgm: false,
                step: true,
            };
            let pgm = Families {
                pgm: true,
                step: false,
            };
            let b_tree = tune_families(&firsts, 4096, &cost, steps).expect("steps");
            assert!(b_tree.index.layers.iter().all(|l| l.step));
            // Whatever the keys, each layer above the first has fewer pieces than the
            // layer below it has units: a tree.
            for l in &b_tree.index.layers[1..] {
                assert!((l.pieces.len() as u64) < l.units_below, "{l:?}");
            }
            let lines = tune_families(&firsts, 4096, &cost, pgm).expect("pgm");
            assert!(lines.index.layers.iter().all(|l| !l.step));
            let both = tune(&firsts, 4096, &cost).expect("both");
            let cheapest = |t: &Tuned| t.per_layers[0].cost_us;
            assert!(
                cheapest(&both) <= cheapest(&b_tree).min(cheapest(&lines)) + 1e-9,
                "{:?} against {:?} and {:?}",
                both.per_layers[0],
                b_tree.per_layers[0],
                lines.per_layers[0]
            );
            // Through every structure, every page is found.
            for t in [&b_tree, &lines, &both] {
                for (p, &x) in firsts.iter().enumerate().step_by(97) {
                    assert_eq!(lookup_in_memory(&t.index, &firsts, x).0, p as u64);
                }
            }
        }
    }

    /// `n` page first keys that are hard to fit: gaps of any size from 1 to 2^20
    /// (pseudo-random), so a fine PGM layer takes many pieces and only a coarse one is small.
    fn hard_firsts(n: u64) -> Vec<u64> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut x = 0u64;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                x += 1 + (state >> 40) % (1 << (state % 21));
                x
            })
            .collect()
    }

    #[test]
    fn slow_round_trips_get_a_shallower_structure_than_a_fast_device() {
        let firsts = hard_firsts(200_000);
        let on_ssd = tune(&firsts, 4096, &ssd()).expect("ssd");
        let on_nfs = tune(&firsts, 4096, &nfs()).expect("nfs");
        let (l_ssd, l_nfs) = (on_ssd.index.layers.len(), on_nfs.index.layers.len());
        assert!(l_nfs < l_ssd, "nfs {l_nfs} layers, ssd {l_ssd}");
        // (Whether each choice is also the cheapest under its profile in the reads real
        // files make is `kv::tests::each_profile_s_own_structure_reads_cheapest_under_it`.)
        let wide = |t: &Tuned| t.index.layers[0].delta;
        assert!(
            wide(&on_nfs) >= wide(&on_ssd),
            "{:?} {:?}",
            on_nfs.per_layers,
            on_ssd.per_layers
        );
    }
}
