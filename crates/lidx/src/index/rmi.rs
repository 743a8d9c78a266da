//! Two-layer recursive model index (Kraska et al., 2018; SOSD's RMI; paper 1, section
//! 2.2): a root model sends a key to one of `b` leaves, each leaf a line predicting the
//! position, each with its own error bound measured at build time.
//!
//! Correct on every input because:
//! - every root is non-decreasing in the key, rounding included (linear: non-negative
//!   slope; cubic: non-negative coefficients of `t`, `t²`, `t³` on `t ∈ [0, 1]`; radix:
//!   the top bits of `key - min`), so the keys sent to leaf `L` are a contiguous run and a
//!   query sent to `L` has its lower bound in `[lo_L, hi_L]`, the positions of that run;
//! - each leaf's prediction is clamped to `[lo_L, hi_L]` and its error is measured on its
//!   share of the lower-bound points (as in [`pgm`](super::pgm)) plus the point just past
//!   its last one, with the search's own arithmetic.
//!
//! A leaf's window is `[p - e_L, p + e_L + 1]` within `[lo_L, hi_L]`; a plain RMI's widths
//! depend on the data (paper 1: "not configurable"). The hybrid RMI of the learned-index
//! paper bounds them: with `max_window = w`, each leaf whose window could exceed `w` keeps the
//! keys at every `w`-th position of its run instead, like a B-tree leaf, and answers with the
//! block of at most `w` positions they bracket; `max_window = 256` is the 256-position
//! setting.
#![deny(clippy::indexing_slicing)]

use std::fmt;

use super::{Index, IndexKind, Window, check_build, edge_window, lower_bound_points};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::pla::{LineSums, MAX_Y, polynomial_fit};
use crate::{Error, FormatError, Result};

/// The root model's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootKind {
    /// A non-decreasing line, least-squares fitted.
    Linear = 0,
    /// A cubic in `t = (key - min) / (max - min)` with non-negative coefficients.
    Cubic = 1,
    /// The top bits of `key - min` (branching factor rounded up to a power of 2).
    Radix = 2,
}

crate::names::name_table!(RootKind, "root model", [
    Linear => "linear",
    Cubic => "cubic",
    Radix => "radix",
]);

/// Parameters of an RMI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmiParams {
    /// The root model.
    pub root: RootKind,
    /// Number of leaves, 1 to 2^26 (a power of 2 for a radix root).
    pub branching: u64,
    /// 0 for a plain RMI; otherwise a hybrid RMI (Kraska et al., 2018, section 3.3: leaves
    /// that model badly are replaced by B-trees): every leaf whose window would exceed this
    /// many positions keeps every `max_window`-th key of its run instead of its line, and
    /// answers with a block of at most `max_window` positions.
    pub max_window: u64,
}

impl Default for RmiParams {
    fn default() -> Self {
        Self {
            root: RootKind::Linear,
            branching: 1 << 16,
            max_window: 0,
        }
    }
}

impl fmt::Display for RmiParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "root={} branching={}", self.root.name(), self.branching)?;
        if self.max_window > 0 {
            write!(f, " max_window={}", self.max_window)?;
        }
        Ok(())
    }
}

/// Root coefficients: `c[0] + c[1] t + c[2] t² + c[3] t³` leaves, `t` = key offset scaled
/// (linear and cubic); for radix, `c` is unused and `shift` selects the bits.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Root {
    kind: RootKind,
    c: [f64; 4],
    scale: f64,
    shift: u32,
}

impl Root {
    #[inline]
    fn leaf(&self, key: u64, min: u64, leaves: usize) -> usize {
        let off = key.saturating_sub(min);
        let last = leaves.saturating_sub(1);
        match self.kind {
            RootKind::Radix => (off.checked_shr(self.shift).unwrap_or(0) as usize).min(last),
            RootKind::Linear | RootKind::Cubic => {
                let t = off as f64 * self.scale;
                let v = self.c[0] + t * (self.c[1] + t * (self.c[2] + t * self.c[3]));
                (v.max(0.0) as usize).min(last)
            }
        }
    }
}

/// One leaf: a line from its base key, the run of positions its keys hold, and its error.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Leaf {
    base: u64,
    slope: f64,
    intercept: f64,
    lo: u64,
    err: u64,
}

/// A two-layer RMI over a sorted key array.
#[derive(Clone, Debug, PartialEq)]
pub struct Rmi {
    params: RmiParams,
    n: u64,
    min_key: u64,
    max_key: u64,
    root: Root,
    leaves: Vec<Leaf>,
    /// Hybrid leaves: leaf `l`'s separators are `fallback[offsets[l]..offsets[l + 1]]`, the
    /// keys at positions `lo_l, lo_l + w, lo_l + 2w, ...` of its run (`w = max_window`).
    /// Both empty for a plain RMI.
    offsets: Vec<u64>,
    fallback: Vec<u64>,
}

impl Rmi {
    /// Number of leaves.
    pub fn leaves(&self) -> usize {
        self.leaves.len()
    }

    fn fit_root(params: &RmiParams, keys: &[u64], min: u64, max: u64) -> Root {
        let leaves = params.branching as f64;
        let range = (max - min) as f64;
        let mut root = Root {
            kind: params.root,
            c: [0.0; 4],
            scale: 0.0,
            shift: 0,
        };
        match params.root {
            RootKind::Radix => {
                let bits = 64 - (max - min).leading_zeros();
                let want = 64 - (params.branching.next_power_of_two() - 1).leading_zeros();
                root.shift = bits.saturating_sub(want);
            }
            RootKind::Linear | RootKind::Cubic => {
                root.scale = if range > 0.0 { 1.0 / range } else { 0.0 };
                // Fit on a sample of at most 100k keys: t in [0, 1] -> leaf position.
                let step = (keys.len() / 100_000).max(1);
                let n = keys.len() as f64;
                let (ts, ys): (Vec<f64>, Vec<f64>) = keys
                    .iter()
                    .enumerate()
                    .step_by(step)
                    .map(|(i, &k)| ((k - min) as f64 * root.scale, i as f64 / n * leaves))
                    .unzip();
                let sets: &[&[usize]] = match params.root {
                    RootKind::Linear => &[&[0, 1]],
                    _ => &[
                        &[0, 1, 2, 3],
                        &[0, 1, 2],
                        &[0, 1, 3],
                        &[0, 2, 3],
                        &[0, 1],
                        &[0, 2],
                        &[0, 3],
                    ],
                };
                // The best fit whose non-constant coefficients are all non-negative (monotone).
                let mut best: Option<([f64; 4], f64)> = None;
                for terms in sets {
                    let Some(c) = polynomial_fit(&ts, &ys, terms) else {
                        continue;
                    };
                    if c[1..].iter().any(|&v| v < 0.0 || !v.is_finite()) || !c[0].is_finite() {
                        continue;
                    }
                    let sse: f64 = ts
                        .iter()
                        .zip(&ys)
                        .map(|(&t, &y)| {
                            let v = c[0] + t * (c[1] + t * (c[2] + t * c[3]));
                            (v - y) * (v - y)
                        })
                        .sum();
                    if best.is_none_or(|(_, b)| sse < b) {
                        best = Some((c, sse));
                    }
                }
                root.c = best.map_or([0.0, leaves, 0.0, 0.0], |(c, _)| c);
            }
        }
        root
    }

    #[inline]
    fn position(leaf: &Leaf, hi: u64, key: u64) -> u64 {
        let p = leaf.intercept + leaf.slope * key.saturating_sub(leaf.base) as f64;
        (p as u64).clamp(leaf.lo, hi.max(leaf.lo))
    }

    /// Leaf `l`'s separators (empty unless it is a hybrid leaf).
    fn separators(&self, l: usize) -> &[u64] {
        match (self.offsets.get(l), self.offsets.get(l + 1)) {
            (Some(&a), Some(&b)) => self
                .fallback
                .get(a as usize..b as usize)
                .unwrap_or_default(),
            _ => &[],
        }
    }

    /// Number of leaves replaced by separators (hybrid RMI).
    pub fn hybrid_leaves(&self) -> usize {
        (0..self.leaves.len())
            .filter(|&l| !self.separators(l).is_empty())
            .count()
    }

    fn leaf_hi(&self, l: usize) -> u64 {
        self.leaves.get(l + 1).map_or(self.n, |next| next.lo)
    }
}

impl Index for Rmi {
    type Params = RmiParams;
    const KIND: IndexKind = IndexKind::Rmi;

    #[expect(
        clippy::indexing_slicing,
        reason = "leaf numbers come from the root model, clamped below the leaves; positions below the keys"
    )]
    fn build(keys: &[u64], params: &RmiParams) -> Result<Rmi> {
        let (min_key, max_key) = check_build(keys, &[])?;
        if !(1..=1 << 26).contains(&params.branching) {
            return Err(Error::param(
                "branching factor",
                format!("{} is not in 1 ..= 2^26", params.branching),
            ));
        }
        let n = keys.len() as u64;
        let root = Self::fit_root(params, keys, min_key, max_key);
        let count = match params.root {
            RootKind::Radix => params.branching.next_power_of_two() as usize,
            _ => params.branching as usize,
        };
        // Each leaf's run of positions: lo_L = number of keys sent to leaves before L.
        let mut los = vec![n; count];
        let mut filled = 0usize;
        for (x, y) in lower_bound_points(keys).filter(|&(x, y)| keys.get(y as usize) == Some(&x)) {
            let l = root.leaf(x, min_key, count);
            while filled <= l {
                los[filled] = y;
                filled += 1;
            }
        }
        // Fit each leaf's line by least squares on its points (x relative to its base).
        let mut leaves: Vec<Leaf> = los
            .iter()
            .map(|&lo| Leaf {
                base: 0,
                slope: 0.0,
                intercept: lo as f64,
                lo,
                err: 0,
            })
            .collect();
        // Each leaf's base (its first point's key) and sums over `(x - base, y)`.
        let mut sums = vec![(0u64, LineSums::default()); count];
        for (x, y) in lower_bound_points(keys) {
            let (base, s) = &mut sums[root.leaf(x, min_key, count)];
            if s.weight() == 0.0 {
                *base = x;
            }
            s.add((x - *base) as f64, y as f64);
        }
        for (leaf, &(base, s)) in leaves.iter_mut().zip(&sums) {
            if s.weight() == 0.0 {
                continue;
            }
            let slope = s.monotone_slope();
            leaf.base = base;
            leaf.slope = if slope.is_finite() { slope } else { 0.0 };
            leaf.intercept = s.intercept(leaf.slope);
        }
        let mut rmi = Rmi {
            params: *params,
            n,
            min_key,
            max_key,
            root,
            leaves,
            offsets: Vec::new(),
            fallback: Vec::new(),
        };
        // Errors, with the search's arithmetic, on each leaf's points and the point just past
        // its last one (when that point is sent to the same leaf).
        let mut errs = vec![0u64; count];
        let mut last_in_leaf: Vec<Option<u64>> = vec![None; count];
        for (x, y) in lower_bound_points(keys) {
            let l = root.leaf(x, min_key, count);
            let p = Self::position(&rmi.leaves[l], rmi.leaf_hi(l), x);
            errs[l] = errs[l].max(p.abs_diff(y));
            last_in_leaf[l] = Some(x);
        }
        for l in 0..count {
            if let Some(next) = last_in_leaf[l].and_then(|x| x.checked_add(1))
                && root.leaf(next, min_key, count) == l
            {
                let hi = rmi.leaf_hi(l);
                let p = Self::position(&rmi.leaves[l], hi, next);
                errs[l] = errs[l].max(p.abs_diff(hi));
            }
        }
        for (leaf, err) in rmi.leaves.iter_mut().zip(errs) {
            leaf.err = err;
        }
        if params.max_window > 0 {
            // Hybrid: leaves whose windows could exceed the bound keep separators instead.
            let w = params.max_window;
            rmi.offsets.push(0);
            for l in 0..count {
                let (lo, hi) = (rmi.leaves[l].lo, rmi.leaf_hi(l));
                if (2 * rmi.leaves[l].err + 1).min(hi - lo) > w {
                    rmi.fallback
                        .extend((lo..hi).step_by(w as usize).map(|p| keys[p as usize]));
                }
                rmi.offsets.push(rmi.fallback.len() as u64);
            }
        }
        Ok(rmi)
    }

    #[inline]
    fn search(&self, key: u64) -> Window {
        let n = self.n;
        if let Some(w) = edge_window(key, self.min_key, self.max_key, n) {
            return w;
        }
        let l = self.root.leaf(key, self.min_key, self.leaves.len());
        let Some(leaf) = self.leaves.get(l) else {
            return Window { lo: 0, hi: n };
        };
        let hi = self.leaf_hi(l);
        let separators = self.separators(l);
        if !separators.is_empty() {
            // Hybrid leaf: the last separator below the key starts its block.
            let i = separators.partition_point(|&s| s < key);
            if i == 0 {
                return Window {
                    lo: leaf.lo,
                    hi: leaf.lo,
                };
            }
            let w = self.params.max_window;
            let lo = leaf
                .lo
                .saturating_add((i as u64 - 1).saturating_mul(w))
                .min(hi);
            return Window {
                lo,
                hi: lo.saturating_add(w).min(hi),
            };
        }
        let p = Self::position(leaf, hi, key);
        Window {
            lo: p.saturating_sub(leaf.err).max(leaf.lo),
            hi: p.saturating_add(leaf.err + 1).min(hi),
        }
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn size_in_bytes(&self) -> u64 {
        // Header 96 bytes, 40 per leaf, then max_window and the two counted arrays.
        96 + 40 * self.leaves.len() as u64
            + 8
            + 8
            + 8 * self.offsets.len() as u64
            + 8
            + 8 * self.fallback.len() as u64
    }

    #[expect(clippy::indexing_slicing, reason = "l runs over the leaves")]
    fn max_width(&self) -> u64 {
        (0..self.leaves.len())
            .map(|l| {
                let leaf = &self.leaves[l];
                let run = self.leaf_hi(l).saturating_sub(leaf.lo);
                if self.separators(l).is_empty() {
                    (2 * leaf.err + 1).min(run)
                } else {
                    self.params.max_window.min(run)
                }
            })
            .max()
            .unwrap_or(0)
    }

    /// The hybrid RMI with `max_window = width` at the default root and leaves.
    fn params_for_width(width: u64) -> Option<RmiParams> {
        (width >= 1).then(|| RmiParams {
            max_window: width,
            ..RmiParams::default()
        })
    }

    fn params(&self) -> RmiParams {
        self.params
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u64(self.params.root as u64);
        e.u64(self.params.branching);
        e.u64(self.n);
        e.u64(self.min_key);
        e.u64(self.max_key);
        for c in self.root.c {
            e.f64(c);
        }
        e.f64(self.root.scale);
        e.u64(u64::from(self.root.shift));
        e.u64(self.leaves.len() as u64);
        for leaf in &self.leaves {
            e.u64(leaf.base);
            e.f64(leaf.slope);
            e.f64(leaf.intercept);
            e.u64(leaf.lo);
            e.u64(leaf.err);
        }
        e.u64(self.params.max_window);
        e.u64(self.offsets.len() as u64);
        for &o in &self.offsets {
            e.u64(o);
        }
        e.u64(self.fallback.len() as u64);
        for &k in &self.fallback {
            e.u64(k);
        }
    }

    fn decode(bytes: &[u8]) -> Result<Rmi, FormatError> {
        let mut d = Decoder::new(bytes, "an RMI");
        let root_tag = d.u64()?;
        let kind = match root_tag {
            0 => RootKind::Linear,
            1 => RootKind::Cubic,
            2 => RootKind::Radix,
            _ => {
                return Err(invalid(
                    "root model",
                    root_tag,
                    "0 (linear), 1 (cubic) or 2 (radix)",
                ));
            }
        };
        let mut params = RmiParams {
            root: kind,
            branching: d.u64()?,
            max_window: 0,
        };
        let (n, min_key, max_key) = (d.u64()?, d.u64()?, d.u64()?);
        let c = [d.f64()?, d.f64()?, d.f64()?, d.f64()?];
        let (scale, shift) = (d.f64()?, d.u64()?);
        let monotone = c.iter().all(|v| v.is_finite())
            && c[1..].iter().all(|&v| v >= 0.0)
            && scale.is_finite()
            && scale >= 0.0;
        if !(1..=1 << 26).contains(&params.branching)
            || n > MAX_Y
            || min_key > max_key
            || shift > 64
            || !monotone
        {
            return Err(invalid(
                "RMI header",
                n,
                "valid branching, count, key range and a non-decreasing root",
            ));
        }
        let count = d.count(40)?;
        let want = match kind {
            RootKind::Radix => params.branching.next_power_of_two(),
            _ => params.branching,
        };
        if count as u64 != want {
            return Err(invalid("leaf count", count as u64, "the branching factor"));
        }
        let mut leaves: Vec<Leaf> = Vec::with_capacity(count);
        for _ in 0..count {
            let leaf = Leaf {
                base: d.u64()?,
                slope: d.f64()?,
                intercept: d.f64()?,
                lo: d.u64()?,
                err: d.u64()?,
            };
            let ok = leaf.slope.is_finite()
                && leaf.slope >= 0.0
                && leaf.intercept.is_finite()
                && leaf.lo <= n
                && leaf.err <= n
                && leaves.last().is_none_or(|p| p.lo <= leaf.lo);
            if !ok {
                return Err(invalid(
                    "leaf",
                    leaf.lo,
                    "finite non-negative slope, runs in order within n",
                ));
            }
            leaves.push(leaf);
        }
        params.max_window = d.u64()?;
        let offsets_len = d.count(8)?;
        let mut offsets = Vec::with_capacity(offsets_len);
        for _ in 0..offsets_len {
            offsets.push(d.u64()?);
        }
        let fallback_len = d.count(8)?;
        let mut fallback = Vec::with_capacity(fallback_len);
        for _ in 0..fallback_len {
            fallback.push(d.u64()?);
        }
        // A radix root's shift is what build derives; the first leaf's run starts at 0.
        let radix_shift = (64 - (max_key - min_key).leading_zeros())
            .saturating_sub(64 - (params.branching.next_power_of_two() - 1).leading_zeros());
        let consistent = leaves.first().is_none_or(|l| l.lo == 0)
            && (kind != RootKind::Radix || u64::from(radix_shift) == shift);
        if !consistent {
            return Err(invalid(
                "radix shift or first leaf",
                shift,
                "what the key range and branching give",
            ));
        }
        let hybrid_ok = if params.max_window == 0 {
            offsets.is_empty() && fallback.is_empty()
        } else {
            offsets.len() == count + 1
                && offsets.first() == Some(&0)
                && offsets.is_sorted()
                && offsets.last() == Some(&(fallback.len() as u64))
        };
        if !hybrid_ok {
            return Err(invalid(
                "hybrid leaves",
                offsets.len() as u64,
                "one offset per leaf and one more, non-decreasing, ending at the separator count",
            ));
        }
        d.finish()?;
        Ok(Rmi {
            params,
            n,
            min_key,
            max_key,
            root: Root {
                kind,
                c,
                scale,
                shift: shift as u32,
            },
            leaves,
            offsets,
            fallback,
        })
    }
}
