//! RadixSpline (Kipf et al., 2020; paper 1, section 2.2): spline points chosen in one pass
//! so that interpolating between neighbours stays within ε of every key's position, and a
//! radix table over the top r bits of `key - min` that narrows the search for the spline
//! segment to a few points.
//!
//! As in [`pgm`](super::pgm), the spline is fitted to the lower-bound function (each
//! distinct key with its first position, plus the key after a duplicate run that is
//! followed by a gap), the corridor test is exact (`i128` cross products), and the float
//! interpolation's rounding is measured on every point with the search's own arithmetic:
//! windows are `2ε + 1 + 2s` wide at most, `s` being that slack (0 or 1).
#![deny(clippy::indexing_slicing)]

use std::fmt;

use super::partition_from;
use super::{
    Index, IndexKind, Window, check_build, edge_window, lower_bound_points, miss, model_window,
};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::pla::{MAX_EPSILON, MAX_Y};
use crate::{Error, FormatError, Result};

/// Parameters of a RadixSpline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RadixSplineParams {
    /// Error bound of the spline, in positions (at least 1).
    pub epsilon: u64,
    /// Bits of the radix table (table of `2^r + 1` entries), 0 to 30.
    pub radix_bits: u32,
}

impl Default for RadixSplineParams {
    /// ε = 127 (windows of at most 255 positions), 18 radix bits.
    fn default() -> Self {
        Self {
            epsilon: 127,
            radix_bits: 18,
        }
    }
}

impl fmt::Display for RadixSplineParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "eps={} radix_bits={}", self.epsilon, self.radix_bits)
    }
}

/// A RadixSpline over a sorted key array.
#[derive(Clone, Debug, PartialEq)]
pub struct RadixSpline {
    params: RadixSplineParams,
    n: u64,
    min_key: u64,
    max_key: u64,
    shift: u32,
    slack: u64,
    /// Spline points: keys and positions.
    xs: Vec<u64>,
    ys: Vec<u64>,
    /// `table[p]` = index of the first spline point whose prefix is `>= p`; `2^r + 1` entries.
    table: Vec<u32>,
}

/// True when the slope from `a` to `b` is below the slope from `a` to `c` (`b.x, c.x > a.x`).
fn slope_lt(a: (u64, i128), b: (u64, i128), c: (u64, i128)) -> bool {
    let (dbx, dby) = (i128::from(b.0 - a.0), b.1 - a.1);
    let (dcx, dcy) = (i128::from(c.0 - a.0), c.1 - a.1);
    dby * dcx < dcy * dbx
}

/// Spline points of `points` within `epsilon`: the greedy spline corridor. Keeps the first
/// and the last point; a point becomes a spline point when the next one leaves the corridor
/// of slopes from the last spline point that passes within `epsilon` of every point since.
fn spline(points: impl Iterator<Item = (u64, u64)>, epsilon: u64) -> Vec<(u64, u64)> {
    let e = i128::from(epsilon);
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut prev: Option<(u64, u64)> = None;
    // Corridor from the last spline point: slopes to (upper.x, upper.y) and (lower.x, lower.y).
    let mut upper = (0u64, 0i128);
    let mut lower = (0u64, 0i128);
    for (x, y) in points {
        let yi = i128::from(y);
        let Some(&(sx, sy)) = out.last() else {
            out.push((x, y));
            prev = Some((x, y));
            continue;
        };
        let s = (sx, i128::from(sy));
        if prev == Some((sx, sy)) {
            // First point after a spline point: the corridor is its band.
            upper = (x, yi + e);
            lower = (x, yi - e);
            prev = Some((x, y));
            continue;
        }
        let p = (x, yi);
        if slope_lt(s, upper, p) || slope_lt(s, p, lower) {
            // Leaves the corridor: the previous point becomes a spline point.
            let (px, py) = prev.unwrap_or((x, y));
            out.push((px, py));
            upper = (x, yi + e);
            lower = (x, yi - e);
        } else {
            if slope_lt(s, (x, yi + e), upper) {
                upper = (x, yi + e);
            }
            if slope_lt(s, lower, (x, yi - e)) {
                lower = (x, yi - e);
            }
        }
        prev = Some((x, y));
    }
    if let Some(last) = prev
        && out.last() != Some(&last)
    {
        out.push(last);
    }
    out
}

impl RadixSpline {
    /// Number of spline points.
    pub fn spline_points(&self) -> usize {
        self.xs.len()
    }

    /// Index `b` of the spline point ending `key`'s segment (`min < key <= max`): the first
    /// spline point whose key is `>= key`.
    #[inline]
    fn segment_end(&self, key: u64) -> usize {
        let prefix = (key
            .saturating_sub(self.min_key)
            .checked_shr(self.shift)
            .unwrap_or(0) as usize)
            .min(self.table.len().saturating_sub(2));
        let begin = self.table.get(prefix).copied().unwrap_or(0) as usize;
        let end = self
            .table
            .get(prefix + 1)
            .map_or(self.xs.len(), |&e| e as usize);
        let slice = self.xs.get(begin..end).unwrap_or_default();
        begin + slice.partition_point(|&x| x < key)
    }

    /// The interpolated position for `key` between spline points `b - 1` and `b`, rounded down.
    #[inline]
    fn position(&self, b: usize, key: u64) -> u64 {
        let (Some(&x0), Some(&y0), Some(&x1), Some(&y1)) = (
            self.xs.get(b.wrapping_sub(1)),
            self.ys.get(b.wrapping_sub(1)),
            self.xs.get(b),
            self.ys.get(b),
        ) else {
            return self.ys.get(b).copied().unwrap_or(0);
        };
        let slope = (y1 - y0) as f64 / (x1 - x0) as f64;
        let p = y0 as f64 + slope * key.saturating_sub(x0) as f64;
        (p as u64).min(y1)
    }
}

impl Index for RadixSpline {
    type Params = RadixSplineParams;
    const KIND: IndexKind = IndexKind::RadixSpline;

    fn build(keys: &[u64], params: &RadixSplineParams) -> Result<RadixSpline> {
        let (min_key, max_key) = check_build(keys, &[("epsilon", params.epsilon)])?;
        if params.radix_bits > 30 {
            return Err(Error::param(
                "radix bits",
                format!("{} is above 30", params.radix_bits),
            ));
        }
        let n = keys.len() as u64;
        let points = spline(lower_bound_points(keys), params.epsilon);
        if points.len() as u64 >= u64::from(u32::MAX) {
            return Err(Error::param(
                "epsilon",
                "the spline needs 2^32 points or more; raise epsilon",
            ));
        }
        let bits = 64 - (max_key - min_key).leading_zeros();
        let shift = bits.saturating_sub(params.radix_bits);
        let slots = (1usize << params.radix_bits) + 1;
        let mut table = Vec::new();
        table.try_reserve_exact(slots).map_err(|_| {
            Error::param(
                "radix bits",
                format!("a table of {slots} entries cannot be allocated"),
            )
        })?;
        let mut next = 0usize;
        for (i, &(x, _)) in points.iter().enumerate() {
            let prefix = (x - min_key).checked_shr(shift).unwrap_or(0) as usize;
            while next <= prefix {
                table.push(i as u32);
                next += 1;
            }
        }
        table.resize(slots, points.len() as u32);
        let mut rs = RadixSpline {
            params: *params,
            n,
            min_key,
            max_key,
            shift,
            slack: 0,
            xs: points.iter().map(|p| p.0).collect(),
            ys: points.iter().map(|p| p.1).collect(),
            table,
        };
        // Measure the rounding slack on every point with the search's arithmetic.
        let mut slack = 0u64;
        let mut b = 0usize;
        for (x, y) in lower_bound_points(keys) {
            if x <= min_key {
                continue;
            }
            while rs.xs.get(b).is_some_and(|&sx| sx < x) {
                b += 1;
            }
            slack = slack.max(miss(rs.position(b, x), y, params.epsilon));
        }
        rs.slack = slack;
        Ok(rs)
    }

    #[inline]
    fn search(&self, key: u64) -> Window {
        if let Some(w) = edge_window(key, self.min_key, self.max_key, self.n) {
            return w;
        }
        let p = self.position(self.segment_end(key), key);
        model_window(p, self.params.epsilon + self.slack, self.n)
    }

    /// Moves along the spline points: `hint` is the segment end found last time.
    fn search_from(&self, key: u64, hint: &mut usize) -> Window {
        if let Some(w) = edge_window(key, self.min_key, self.max_key, self.n) {
            return w;
        }
        *hint = partition_from(&self.xs, *hint, |x| x < key);
        let p = self.position(*hint, key);
        model_window(p, self.params.epsilon + self.slack, self.n)
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn size_in_bytes(&self) -> u64 {
        8 * 8 + 4 + 8 + 16 * self.xs.len() as u64 + 8 + 4 * self.table.len() as u64
    }

    fn max_width(&self) -> u64 {
        (2 * (self.params.epsilon + self.slack) + 1).min(self.n)
    }

    /// ε = (width - 1) / 2 at the default radix bits. Needs `width >= 3`.
    fn params_for_width(width: u64) -> Option<RadixSplineParams> {
        (width >= 3).then(|| RadixSplineParams {
            epsilon: (width - 1) / 2,
            ..RadixSplineParams::default()
        })
    }

    fn params(&self) -> RadixSplineParams {
        self.params
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u64(self.params.epsilon);
        e.u32(self.params.radix_bits);
        e.u64(self.n);
        e.u64(self.min_key);
        e.u64(self.max_key);
        e.u64(u64::from(self.shift));
        e.u64(self.slack);
        e.u64(0); // reserved
        e.u64(0); // reserved
        e.u64(self.xs.len() as u64);
        for (&x, &y) in self.xs.iter().zip(&self.ys) {
            e.u64(x);
            e.u64(y);
        }
        e.u64(self.table.len() as u64);
        for &t in &self.table {
            e.u32(t);
        }
    }

    fn decode(bytes: &[u8]) -> Result<RadixSpline, FormatError> {
        let mut d = Decoder::new(bytes, "a RadixSpline");
        let params = RadixSplineParams {
            epsilon: d.u64()?,
            radix_bits: d.u32()?,
        };
        let (n, min_key, max_key, shift, slack) =
            (d.u64()?, d.u64()?, d.u64()?, d.u64()?, d.u64()?);
        // Two reserved words, which every writer has written as zero: a reader that let
        // other values pass could not tell a later format's use of them from damage.
        if (d.u64()?, d.u64()?) != (0, 0) {
            return Err(FormatError::NonZeroPadding {
                what: "a RadixSpline's reserved words",
            });
        }
        if params.epsilon == 0
            || params.epsilon > MAX_EPSILON
            || params.radix_bits > 30
            || n > MAX_Y
            || min_key > max_key
            || shift > 64
            || slack > n
        {
            return Err(invalid(
                "RadixSpline header",
                n,
                "valid epsilon, radix bits, count, key range and shift",
            ));
        }
        let count = d.count(16)?;
        let mut xs = Vec::with_capacity(count);
        let mut ys = Vec::with_capacity(count);
        for _ in 0..count {
            let (x, y) = (d.u64()?, d.u64()?);
            let ordered = xs.last().is_none_or(|&px| px < x) && ys.last().is_none_or(|&py| py <= y);
            if !ordered || y > n {
                return Err(invalid(
                    "spline point",
                    x,
                    "increasing keys, non-decreasing positions up to n",
                ));
            }
            xs.push(x);
            ys.push(y);
        }
        let slots = d.count(4)?;
        if slots != (1usize << params.radix_bits) + 1 || (n > 0) != (count > 0) {
            return Err(invalid(
                "radix table length",
                slots as u64,
                "2^radix_bits + 1 entries",
            ));
        }
        let mut table = Vec::with_capacity(slots);
        for _ in 0..slots {
            let t = d.u32()?;
            if t as usize > count || table.last().is_some_and(|&p| p > t) {
                return Err(invalid(
                    "radix table entry",
                    t.into(),
                    "non-decreasing spline indices",
                ));
            }
            table.push(t);
        }
        // The shift and the end points are what build derives from the keys.
        let expected_shift =
            (64 - (max_key - min_key).leading_zeros()).saturating_sub(params.radix_bits);
        let ends = count == 0
            || (xs.first() == Some(&min_key)
                && xs.last() == Some(&max_key)
                && ys.first() == Some(&0));
        if u64::from(expected_shift) != shift || !ends {
            return Err(invalid(
                "radix shift or spline end points",
                shift,
                "the shift of the key range and spline points from the smallest to the largest key",
            ));
        }
        d.finish()?;
        Ok(RadixSpline {
            params,
            n,
            min_key,
            max_key,
            shift: shift as u32,
            slack,
            xs,
            ys,
            table,
        })
    }
}
