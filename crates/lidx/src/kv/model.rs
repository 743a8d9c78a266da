//! The monotone models that lay records out in blocks (paper 4, section 4): each predicts
//! `S(k)`, the bytes before key `k`, from the key mapped to an integer, and record
//! `⟨k, v⟩` goes to block `⌊f(k) / τ⌋`. The paper fits one least-squares line and allows
//! any monotone model in its place; lidx offers three, all stored as one shape, a
//! piecewise-linear function:
//!
//! - [`ModelKind::Linear`]: one least-squares line over all records (the paper's).
//! - [`ModelKind::Pgm`]: the optimal piecewise-linear approximation within `ε` bytes
//!   (the PGM-index's, from [`pla`](crate::pla)).
//! - [`ModelKind::Rmi`]: a two-stage RMI: a root least-squares line routes records to
//!   leaves, each a least-squares line over its records.
//!
//! Every line here is a [`LineFit`] from [`pla::fit`], whose sums and slope the index
//! RMI's leaves also use. The kv RMI is not
//! [`index::Rmi`](crate::index::Rmi): that one models a key's rank (`y` the lower-bound
//! position, one point per distinct key) with a root fitted to a sample and an error bound
//! per leaf; this one models bytes (`y = S(k)`, tied keys weighing once per record), needs
//! no error bound (records are placed where the model says), and stores pieces of the one
//! shape all kv models share (FORMAT.md section 8). Building it from `index::Rmi` would
//! change every kv file's model, so the two share the fitting, not the structure.
//!
//! **Monotone by construction.** Each piece predicts from its first key on, clamped
//! between the true `S` of its own first record and that of the next piece's first
//! record; those bounds never decrease from piece to piece, so neither does `f`, whatever
//! the pieces' fits (a PGM's neighbouring segments may overlap by up to `2ε`).
#![deny(clippy::indexing_slicing)]

use crate::files::codec::{Decoder, Encoder, invalid};
use crate::pla::{self, LineFit};
use crate::{FormatError, Result};

/// Which model lays records out in blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// One least-squares line (paper 4).
    #[default]
    Linear,
    /// Optimal piecewise-linear segments within `ε` bytes.
    Pgm,
    /// A root line routing to least-squares leaves.
    Rmi,
    /// For building only: the line where it keeps every block within the cap, else PGM.
    Auto,
}

crate::names::name_table!(ModelKind, "model", [
    Linear => "linear",
    Pgm => "pgm",
    Rmi => "rmi",
    Auto => "auto",
]);

impl ModelKind {
    /// The kinds a model can be (all but [`Auto`](ModelKind::Auto), a choice among them).
    pub const FITTED: [ModelKind; 3] = [ModelKind::Linear, ModelKind::Pgm, ModelKind::Rmi];

    fn tag(self) -> u8 {
        match self {
            ModelKind::Linear => 0,
            ModelKind::Pgm => 1,
            ModelKind::Rmi => 2,
            // Never stored: `fit` resolves no model of it.
            ModelKind::Auto => u8::MAX,
        }
    }
}

/// One piece: `f(x) = intercept + slope · (x − first_x)` for `x` from `first_x` on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Piece {
    pub(crate) first_x: u64,
    /// `S` of the piece's first record: the least the piece predicts.
    pub(crate) floor: u64,
    pub(crate) slope: f64,
    pub(crate) intercept: f64,
}

impl Piece {
    /// The piece's prediction at `x`, held between its floor and `ceiling` (the next
    /// piece's floor, if any).
    pub(crate) fn eval(&self, x: u64, ceiling: Option<u64>) -> f64 {
        let raw = self.intercept + self.slope * x.saturating_sub(self.first_x) as f64;
        let lo = self.floor as f64;
        match ceiling {
            Some(hi) => raw.clamp(lo, (hi as f64).max(lo)),
            None => raw.max(lo),
        }
    }
}

/// A monotone piecewise-linear model of the bytes before a mapped key.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockModel {
    kind: ModelKind,
    /// In increasing `first_x`, floors never decreasing; at least one.
    pieces: Vec<Piece>,
    /// The first key of every [`STRIDE`]-th piece, bisected before the pieces: a small
    /// array that stays in the processor's caches, so that a search of many pieces reads
    /// one run of [`STRIDE`] pieces (four cache lines) from memory, not one line per step.
    top: Vec<u64>,
}

/// Bytes a piece takes in memory and on disk.
const PIECE_BYTES: u64 = 32;

/// Pieces per entry of a model's top array (1 byte of memory a piece).
const STRIDE: usize = 8;

impl BlockModel {
    /// Fits a model of `kind` to `points`: `(x, y)` with `x` the mapped key and `y` its
    /// `S`, both never decreasing. Points with the `x` of the one before (keys whose
    /// mapping ties) add nothing but their weight in the least-squares fits. `epsilon`
    /// (bytes) is the PGM's error; `leaves` the RMI's leaf count.
    pub fn fit(
        kind: ModelKind,
        points: &[(u64, u64)],
        epsilon: u64,
        leaves: usize,
    ) -> Result<BlockModel> {
        let pieces = match kind {
            ModelKind::Linear => vec![least_squares(points)],
            ModelKind::Pgm => {
                let mut distinct = points.to_vec();
                distinct.dedup_by_key(|p| p.0);
                pla::segments(distinct, epsilon)?
                    .into_iter()
                    .map(|s| Piece {
                        first_x: s.first_x,
                        floor: s.first_y,
                        slope: s.slope,
                        intercept: s.intercept,
                    })
                    .collect()
            }
            ModelKind::Rmi => rmi_leaves(points, leaves.max(1)),
            ModelKind::Auto => {
                return Err(crate::Error::Internal {
                    problem: "`auto` names a choice among models, not a model to fit".into(),
                });
            }
        };
        let mut pieces = pieces;
        if pieces.is_empty() {
            pieces.push(least_squares(&[]));
        }
        // Floors: running maximum (they rise already; this makes it a stated invariant).
        let mut highest = 0;
        for p in &mut pieces {
            highest = highest.max(p.floor);
            p.floor = highest;
        }
        Ok(BlockModel::new(kind, pieces))
    }

    /// The model of `pieces`, with its top array.
    fn new(kind: ModelKind, pieces: Vec<Piece>) -> BlockModel {
        let top = pieces.iter().step_by(STRIDE).map(|p| p.first_x).collect();
        BlockModel { kind, pieces, top }
    }

    /// The model's kind.
    pub fn kind(&self) -> ModelKind {
        self.kind
    }

    /// Its pieces: 1 for a line, segments for a PGM, non-empty leaves for an RMI.
    pub fn pieces(&self) -> usize {
        self.pieces.len()
    }

    /// Bytes it takes in memory: its pieces (what the file stores) and its top array.
    pub fn size_in_bytes(&self) -> u64 {
        self.pieces.len() as u64 * PIECE_BYTES + 8 * self.top.len() as u64
    }

    /// Predicted bytes before mapped key `x`; never decreasing in `x`.
    #[expect(
        clippy::indexing_slicing,
        reason = "j is a partition point less one over at least one piece"
    )]
    pub fn predict(&self, x: u64) -> f64 {
        // The run of pieces whose first entry is the last at or below `x` holds the last
        // piece at or below it (or, when there is none, the first piece).
        let start = STRIDE * self.top.partition_point(|&f| f <= x).saturating_sub(1);
        let run = self.pieces.get(start..).unwrap_or_default();
        let run = run.get(..STRIDE).unwrap_or(run);
        // Load the run's cache lines at once (the loads are independent), where its
        // bisection would otherwise fetch them one after another.
        for p in run.iter().step_by(2).chain(run.last()) {
            std::hint::black_box(p.first_x);
        }
        let j = start + run.partition_point(|p| p.first_x <= x).saturating_sub(1);
        self.pieces[j].eval(x, self.pieces.get(j + 1).map(|n| n.floor))
    }

    /// The pieces, in increasing first key.
    pub(crate) fn parts(&self) -> &[Piece] {
        &self.pieces
    }

    /// The block of mapped key `x` among `blocks` blocks of `tau` bytes: `⌊f(x) / τ⌋`
    /// held within `0..blocks`. Never decreasing in `x`.
    pub fn block(&self, x: u64, tau: u64, blocks: u64) -> u64 {
        let predicted = self.predict(x) / tau.max(1) as f64;
        // `as` saturates: NaN goes to 0, huge values to u64::MAX.
        (predicted as u64).min(blocks.saturating_sub(1))
    }

    /// Appends the model to `out` (FORMAT.md section 8).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u8(self.kind.tag());
        e.u64(self.pieces.len() as u64);
        for p in &self.pieces {
            e.u64(p.first_x);
            e.u64(p.floor);
            e.f64(p.slope);
            e.f64(p.intercept);
        }
    }

    /// Reads a model written by [`encode`](Self::encode), checking its invariants.
    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<BlockModel, FormatError> {
        let kind = match d.u8()? {
            0 => ModelKind::Linear,
            1 => ModelKind::Pgm,
            2 => ModelKind::Rmi,
            t => return Err(invalid("model kind", t.into(), "0, 1 or 2")),
        };
        let n = d.count(PIECE_BYTES)?;
        if n == 0 {
            return Err(invalid("model pieces", 0, "at least one"));
        }
        let mut pieces: Vec<Piece> = Vec::with_capacity(n);
        for _ in 0..n {
            let p = Piece {
                first_x: d.u64()?,
                floor: d.u64()?,
                slope: d.f64()?,
                intercept: d.f64()?,
            };
            if let Some(prev) = pieces.last()
                && (p.first_x <= prev.first_x || p.floor < prev.floor)
            {
                return Err(invalid(
                    "model piece",
                    p.first_x,
                    "pieces in increasing keys with non-decreasing floors",
                ));
            }
            if !(p.slope.is_finite() && p.slope >= 0.0 && p.intercept.is_finite()) {
                return Err(invalid(
                    "model piece slope",
                    p.slope.to_bits(),
                    "a finite, non-negative slope and a finite intercept",
                ));
            }
            pieces.push(p);
        }
        Ok(BlockModel::new(kind, pieces))
    }
}

/// The least-squares line over `points` as one piece starting at the first point.
fn least_squares(points: &[(u64, u64)]) -> Piece {
    let mut fit = LineFit::default();
    for &(x, y) in points {
        fit.add(x, y);
    }
    let line = fit.line();
    let (first_x, floor) = points.first().copied().unwrap_or((0, 0));
    Piece {
        first_x,
        floor,
        slope: line.slope,
        intercept: line.slope * first_x as f64 + line.intercept,
    }
}

/// The leaves of a two-stage RMI: the root line's prediction, scaled to `leaves`, routes
/// each point; a leaf starts where the root first routes a point to it (so ties stay in
/// one leaf), and fits its points by least squares.
#[expect(
    clippy::indexing_slicing,
    reason = "start and end stay within the points"
)]
fn rmi_leaves(points: &[(u64, u64)], leaves: usize) -> Vec<Piece> {
    let root = least_squares(points);
    let total = points.last().map_or(1.0, |p| p.1.max(1) as f64);
    let route = |x: u64| {
        let y = root.intercept + root.slope * x.saturating_sub(root.first_x) as f64;
        ((y / total * leaves as f64).max(0.0) as usize).min(leaves - 1)
    };
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < points.len() {
        let leaf = route(points[start].0);
        let mut end = start + 1;
        while end < points.len()
            && (points[end].0 == points[end - 1].0 || route(points[end].0) == leaf)
        {
            end += 1;
        }
        pieces.push(least_squares(&points[start..end]));
        start = end;
    }
    pieces
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Points of records of the given sizes at the given (sorted) mapped keys.
    fn points(xs: &[u64], sizes: &[u64]) -> Vec<(u64, u64)> {
        let mut s = 0;
        xs.iter()
            .zip(sizes.iter().cycle())
            .map(|(&x, &size)| {
                let p = (x, s);
                s += size;
                p
            })
            .collect()
    }

    proptest! {
        #[test]
        fn every_kind_is_monotone_and_round_trips(
            mut xs in prop::collection::vec(prop_oneof![0u64..1000, 0u64..(1 << 53)], 0..300),
            sizes in prop::collection::vec(1u64..5000, 1..20),
            probes in prop::collection::vec(any::<u64>(), 1..50),
            epsilon in 1u64..20_000,
            leaves in 1usize..40,
        ) {
            xs.sort_unstable();
            let pts = points(&xs, &sizes);
            for kind in ModelKind::FITTED {
                let model = BlockModel::fit(kind, &pts, epsilon, leaves).expect("fits");
                let mut all: Vec<u64> = probes.iter().copied().chain(xs.iter().copied()).collect();
                all.sort_unstable();
                for w in all.windows(2) {
                    prop_assert!(model.predict(w[0]) <= model.predict(w[1]), "{kind}: {w:?}");
                    prop_assert!(model.block(w[0], 4096, 50) <= model.block(w[1], 4096, 50));
                }
                let mut bytes = Vec::new();
                model.encode(&mut bytes);
                prop_assert_eq!(bytes.len() as u64, 9 + PIECE_BYTES * model.pieces() as u64);
                let mut d = Decoder::new(&bytes, "model");
                prop_assert_eq!(BlockModel::decode(&mut d).expect("decodes"), model);
            }
        }

        #[test]
        fn the_top_array_finds_the_piece_a_search_of_all_pieces_finds(
            firsts in prop::collection::btree_set(any::<u64>(), 1..200),
            probes in prop::collection::vec(any::<u64>(), 1..50),
        ) {
            let pieces: Vec<Piece> = firsts
                .iter()
                .enumerate()
                .map(|(i, &first_x)| Piece { first_x, floor: 10 * i as u64, slope: 0.5, intercept: 10.0 * i as f64 })
                .collect();
            let model = BlockModel::new(ModelKind::Pgm, pieces.clone());
            let edges = firsts.iter().flat_map(|&f| [f.saturating_sub(1), f, f.saturating_add(1)]);
            for x in probes.into_iter().chain(edges).chain([0, u64::MAX]) {
                let j = pieces.partition_point(|p| p.first_x <= x).saturating_sub(1);
                let flat = pieces[j].eval(x, pieces.get(j + 1).map(|n| n.floor));
                prop_assert_eq!(model.predict(x).to_bits(), flat.to_bits(), "x = {}", x);
            }
        }

        #[test]
        fn pgm_predicts_within_epsilon_of_distinct_keys(
            xs in prop::collection::btree_set(0u64..(1 << 40), 1..300),
            sizes in prop::collection::vec(1u64..5000, 1..20),
            epsilon in 1u64..5000,
        ) {
            let xs: Vec<u64> = xs.into_iter().collect();
            let pts = points(&xs, &sizes);
            let model = BlockModel::fit(ModelKind::Pgm, &pts, epsilon, 1).expect("fits");
            for &(x, y) in &pts {
                // The clamp only pulls a prediction towards the truth; rounding adds a little.
                prop_assert!((model.predict(x) - y as f64).abs() <= epsilon as f64 + 1.0);
            }
        }
    }

    #[test]
    fn a_line_through_evenly_spaced_records_is_exact() {
        let xs: Vec<u64> = (0..1000).map(|i| i * 7).collect();
        let pts = points(&xs, &[100]);
        for kind in ModelKind::FITTED {
            let model = BlockModel::fit(kind, &pts, 8, 4).expect("fits");
            for &(x, y) in &pts {
                assert!((model.predict(x) - y as f64).abs() < 1e-6, "{kind}");
            }
            assert_eq!(model.block(7 * 999, 1000, 100), 99);
        }
    }
}
