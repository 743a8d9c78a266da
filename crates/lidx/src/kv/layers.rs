//! Paper 2's layered learned index (AirIndex, section 2 and Fig. 1), and its tuner.
//!
//! Layer 0 is the data: fixed-size pages of `P` bytes, each holding whole records in key
//! order. Layer 1 is a piecewise-linear model over the first key of each page (mapped to an
//! integer by the [`KeyMap`](super::KeyMap)) predicting the page's byte offset within Δ₁
//! bytes. It is stored as an array of fixed-size pieces ([`STORED_PIECE`] bytes each), and
//! layer 2 is a model of *that* array's byte offsets within Δ₂, and so on up to the root,
//! layer L, read whole.
//!
//! A lookup of key `x` reads the root, then in each layer below it reads a window of units
//! (pieces, or pages for the last mile) around the predicted offset, picks the last unit
//! whose first key is at most `x`, and descends. The window is always
//! [`Layer::window_units`] units (fewer only where the layer has fewer), from the first
//! unit starting at or after `f(x) − U − Δ`: with `f` never decreasing and within Δ at
//! every unit's first key, the unit holding `x` starts inside it (a unit of `U` bytes
//! starts at most `U + Δ` below the prediction and at most Δ above it), so a window of
//! `⌊(U + 2Δ) / U⌋ + 1` units holds it: 2 pages for any Δ below half a page. So every lookup in a layer reads the same
//! number of bytes, and the tuner's cost of a structure is exactly what its lookups read.
//!
//! **The tuner** (paper 2, "Storage-aware Auto-tuning"): for each number of layers L from
//! 1 to [`MAX_LAYERS`], it sketches the structure for every Δ on a grid (a power-of-two
//! multiple of the layer's unit, from a quarter of a page up) without writing it, costs a
//! cold lookup as the sum over its reads of the profile's latency + bytes / bandwidth
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
    /// Fits a layer over `firsts` (the mapped first key of each unit of the layer below,
    /// in order, ties allowed) within `epsilon` bytes, for units of `unit` bytes.
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
        let mut layer = Layer {
            pieces,
            delta: 0,
            unit,
            units_below: firsts.len() as u64,
        };
        layer.delta = points
            .iter()
            .map(|&(x, y)| (layer.predict(x) - y as f64).abs().ceil() as u64)
            .max()
            .unwrap_or(0);
        Ok(layer)
    }

    /// The prediction for `x` through the piece that covers it.
    pub fn predict(&self, x: u64) -> f64 {
        let j = self
            .pieces
            .partition_point(|p| p.first_x <= x)
            .saturating_sub(1);
        self.pieces.get(j).map_or(0.0, |p| p.predict(x))
    }

    /// Units every lookup reads from the layer below: the unit holding a key starts in
    /// `[f − U − Δ, f + Δ]` (widened by [`SLACK`] bytes against rounding), and an interval
    /// of `U + 2Δ + 2·SLACK` bytes holds at most `⌊(U + 2Δ + 2·SLACK) / U⌋ + 1` unit starts;
    /// never more units than there are.
    pub fn window_units(&self) -> u64 {
        ((self.unit + 2 * self.delta + 2 * SLACK) / self.unit + 1).min(self.units_below)
    }

    /// The first unit of the window for a prediction of `predicted` bytes: the first unit
    /// starting at or after `f − U − Δ − SLACK`, moved back so that the window stays within
    /// the layer below.
    pub fn window_start(&self, predicted: f64) -> u64 {
        let low = predicted - (self.unit + self.delta + SLACK) as f64;
        let lo = (low / self.unit as f64).ceil();
        let lo = if lo.is_finite() && lo > 0.0 {
            lo as u64
        } else {
            0
        };
        lo.min(self.units_below - self.window_units())
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

/// The reads of one cold lookup, root first, data pages last: bytes of each.
pub fn lookup_reads(index: &Layered) -> Vec<u64> {
    let mut reads = Vec::with_capacity(index.layers.len() + 1);
    if let Some(root) = index.layers.last() {
        reads.push(root.bytes());
    }
    for layer in index.layers.iter().rev() {
        reads.push(layer.window_units() * layer.unit);
    }
    reads
}

/// The modelled time of one cold lookup under `cost`, microseconds.
pub fn lookup_cost_us(index: &Layered, cost: &AffineCost) -> f64 {
    lookup_reads(index).iter().map(|&b| cost.read_us(b)).sum()
}

/// What the tuner considered for one number of layers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Candidate {
    /// The layers' errors, Δ₁ first.
    pub deltas: Vec<u64>,
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

/// Error bounds tried for a layer over units of `unit` bytes: a quarter of the unit times
/// powers of two, up to `max` bytes.
fn grid(unit: u64, max: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut d = (unit / 4).max(1);
    while d <= max.max(1) {
        out.push(d);
        d *= 2;
    }
    out
}

/// Tunes a layered index over data pages whose mapped first keys are `firsts`, for
/// `cost` (the profile's random reads).
pub fn tune(firsts: &[u64], page_size: u64, cost: &AffineCost) -> Result<Tuned> {
    let mut best: Vec<Option<(f64, Layered)>> = vec![None; MAX_LAYERS];
    let mut sketched = 0u64;
    let data_bytes = firsts.len() as u64 * page_size;
    for d1 in grid(page_size, data_bytes) {
        let first = Layer::fit(firsts, page_size, d1)?;
        let mut stack = vec![first];
        descend(&mut stack, page_size, cost, &mut best, &mut sketched)?;
    }
    let mut per_layers: Vec<(Candidate, Layered)> = best
        .into_iter()
        .flatten()
        .map(|(cost_us, index)| {
            let c = Candidate {
                deltas: index.layers.iter().map(|l| l.delta).collect(),
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
    for d in grid(STORED_PIECE, top.bytes()) {
        let layer = Layer::fit(&firsts, STORED_PIECE, d)?;
        if layer.pieces.len() >= firsts.len() {
            continue; // A layer no smaller than the one below saves nothing.
        }
        stack.push(layer);
        descend(stack, page_size, cost, best, sketched)?;
        stack.pop();
    }
    Ok(())
}

/// A lookup through `index` over in-memory copies of its layers and pages: returns the data
/// page that holds `x` (the last whose first key is at most `x`) and the bytes each read
/// took, root first. `page_firsts[p]` is page `p`'s mapped first key. For tests and for
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
        let start = layer.window_start(piece.predict(x));
        let n = layer.window_units();
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
                let expected_reads = lookup_reads(&tuned.index);
                let below: Vec<u64> = firsts.iter().map(|f| f.saturating_sub(1)).collect();
                for &x in firsts.iter().chain(&below).chain(&probes) {
                    let (page_no, reads) = lookup_in_memory(&tuned.index, &firsts, x);
                    let want = truth(&firsts, x);
                    // Ties in the keys: any page with the same first key as the truth holds
                    // keys mapped to `x`; the last of them is the answer.
                    prop_assert_eq!(page_no, want, "x {} firsts {:?}", x, firsts);
                    prop_assert_eq!(&reads, &expected_reads);
                }
            }
        }

        #[test]
        fn any_structure_finds_every_page(
            gaps in prop::collection::vec(prop_oneof![Just(0u64), 1u64..50, 1u64..100_000], 50..3000),
            probes in prop::collection::vec(any::<u64>(), 1..40),
            deltas in prop::collection::vec(1u64..20_000, 1..4),
        ) {
            let firsts: Vec<u64> = gaps.iter().scan(0u64, |x, g| { *x += g; Some(*x) }).collect();
            let page = 4096;
            let mut layers = vec![Layer::fit(&firsts, page, deltas[0]).expect("fits")];
            for &d in &deltas[1..] {
                let below: Vec<u64> = layers.last().expect("a layer").pieces.iter().map(|p| p.first_x).collect();
                layers.push(Layer::fit(&below, STORED_PIECE, d).expect("fits"));
            }
            let index = Layered { page_size: page, layers };
            let expected_reads = lookup_reads(&index);
            // Keys just below each page's first key are where a prediction runs highest.
            let below: Vec<u64> = firsts.iter().map(|f| f.saturating_sub(1)).collect();
            for &x in firsts.iter().chain(&below).chain(&probes) {
                let (page_no, reads) = lookup_in_memory(&index, &firsts, x);
                prop_assert_eq!(page_no, truth(&firsts, x));
                prop_assert_eq!(&reads, &expected_reads);
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
    fn slow_round_trips_get_a_shallower_structure_than_a_fast_device() {
        // 200,000 pages whose first keys are hard to fit: gaps of any size from 1 to 2^20
        // (pseudo-random), so a fine layer 1 takes many pieces and only a coarse one is small.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut x = 0u64;
        let firsts: Vec<u64> = (0..200_000u64)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                x += 1 + (state >> 40) % (1 << (state % 21));
                x
            })
            .collect();
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
