//! Optimal piecewise-linear approximation with a maximum error (PGM-index paper, section 2;
//! used by paper 1's PGM and sampled PGM, paper 3's hardness metric, and learned
//! partitioning), and, in [`fit`], the least-squares fits of the other models (RMI, ALEX,
//! the kv files' models, paper 3's linear hardness, the storage profile).
//!
//! Given points `(x, y)` with strictly increasing `x` and non-decreasing `y` (a CDF: keys
//! and their ranks), [`PlaBuilder`] cuts them into the
//! fewest segments such that, in each segment, one line passes within `epsilon` of every
//! point's `y`. It is the streaming convex-hull method of O'Rourke (1981) that the
//! PGM-index uses: each segment is extended while a feasible line exists, which, for
//! segments that need not connect, gives the minimum number of segments, in linear time.
//!
//! Everything that decides feasibility is exact: coordinates are integers (`x` relative to
//! the segment's first point, `y ± epsilon`) and slopes are compared by cross products in
//! `i128`, so keys anywhere in `u64` (`u64::MAX - 1` and `u64::MAX` included) are told
//! apart. Only the final line of a segment is rounded to `f64`; its users measure the
//! rounding and widen their windows by it.

use crate::{Error, Result};

pub mod fit;

pub use fit::{CentredLine, Line, LineFit, LineSums, polynomial_fit, running_means};

/// How far `x` lies past `base` (0 below it), as an `f64`: the same value as
/// `x.saturating_sub(base) as f64`, in fewer instructions. x86-64 converts only signed
/// integers before AVX-512, and the unsigned conversion takes five instructions and about
/// 12 cycles, on a lookup's path from a node's model to the next load; a distance below
/// 2^63 (every distance from a model's first key to a key it serves, but the widest) goes
/// through one signed conversion.
#[inline(always)]
pub fn distance_f64(x: u64, base: u64) -> f64 {
    let d = x.saturating_sub(base);
    // The wide case out of line: with both arms in view the compiler folds them back into
    // the unsigned conversion.
    if d >> 63 == 0 {
        d as i64 as f64
    } else {
        wide_distance_f64(d)
    }
}

/// `d as f64`, for [`distance_f64`]'s distances of 2^63 and more.
#[cold]
#[inline(never)]
fn wide_distance_f64(d: u64) -> f64 {
    d as f64
}

/// Largest `y` (position) accepted: keeps every cross product inside `i128`.
pub const MAX_Y: u64 = 1 << 60;
/// Largest `epsilon` accepted.
pub const MAX_EPSILON: u64 = 1 << 59;

/// One segment of the approximation: the line `y = intercept + slope * (x - first_x)`
/// passes within `epsilon` of each of its points (up to `f64` rounding of the line).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// `x` of the segment's first point.
    pub first_x: u64,
    /// `y` of the segment's first point.
    pub first_y: u64,
    /// `x` of the segment's last point.
    pub last_x: u64,
    /// Number of points in the segment (at least 1).
    pub points: u64,
    /// Slope of the line (non-negative for non-decreasing `y`).
    pub slope: f64,
    /// Value of the line at `first_x`.
    pub intercept: f64,
    /// The least and the greatest slope of a feasible line (rounded to `f64`): every line
    /// through [`pivot`](Self::pivot) with a slope between them passes within `epsilon` of
    /// every point, exactly. Both 0 for a one-point segment.
    pub slope_range: (f64, f64),
    /// Where the least and the steepest feasible line cross, as `(x - first_x, y)`.
    pub pivot: (f64, f64),
}

impl Segment {
    /// The line's value at `x` (`x >= first_x`). Monotone non-decreasing in `x` when the
    /// slope is non-negative, since every rounding step is.
    #[inline]
    pub fn predict(&self, x: u64) -> f64 {
        self.intercept + self.slope * (x.wrapping_sub(self.first_x)) as f64
    }

    /// The value at `first_x` of the line through the pivot with slope `slope` (a feasible
    /// line when `slope` lies in `slope_range`).
    pub fn intercept_for(&self, slope: f64) -> f64 {
        self.pivot.1 - slope * self.pivot.0
    }
}

/// A point in segment-relative integer coordinates: `x` past the segment's first point,
/// and `y ± epsilon` (within `-2^59 ..= 2^60 + 2^59`, so differences fit in `i64`).
#[derive(Clone, Copy, Debug)]
struct P {
    x: u64,
    y: i64,
}

/// The direction from `a` to `b` (`b.x >= a.x`), compared as slopes without division.
/// Products of a `u64` and an `i64` need one widening multiplication each (under `2^125`).
#[derive(Clone, Copy, Debug)]
struct Slope {
    dx: u64,
    dy: i64,
}

impl Slope {
    #[inline]
    fn between(a: P, b: P) -> Slope {
        debug_assert!(b.x >= a.x);
        Slope {
            dx: b.x - a.x,
            dy: b.y - a.y,
        }
    }
    #[inline]
    fn lt(self, o: Slope) -> bool {
        i128::from(self.dy) * i128::from(o.dx) < i128::from(o.dy) * i128::from(self.dx)
    }
    #[inline]
    fn gt(self, o: Slope) -> bool {
        o.lt(self)
    }
    fn as_f64(self) -> f64 {
        self.dy as f64 / self.dx as f64
    }
}

/// Cross product of `o→a` and `o→b` (`o.x <= a.x <= b.x`): positive for a left
/// (counter-clockwise) turn.
#[inline]
fn cross(o: P, a: P, b: P) -> i128 {
    let (oa, ob) = (Slope::between(o, a), Slope::between(o, b));
    i128::from(oa.dx) * i128::from(ob.dy) - i128::from(oa.dy) * i128::from(ob.dx)
}

/// Streams points into segments. Call [`push`](Self::push) for each point in increasing
/// `x`; it returns the finished segment whenever a point starts a new one. Then
/// [`finish`](Self::finish) returns the last segment.
#[derive(Debug)]
pub struct PlaBuilder {
    epsilon: i64,
    first_x: u64,
    first_y: u64,
    last_x: u64,
    points: u64,
    /// Upper and lower hulls of `(x, y + ε)` and `(x, y - ε)`.
    upper: Vec<P>,
    lower: Vec<P>,
    upper_start: usize,
    lower_start: usize,
    /// Corners of the feasible-lines region: the least steep feasible line passes through
    /// `rect[0]` (upper) and `rect[2]` (lower), the steepest through `rect[1]` (lower) and
    /// `rect[3]` (upper).
    rect: [P; 4],
}

impl PlaBuilder {
    /// A builder for lines within `epsilon` of every point (`epsilon <= MAX_EPSILON`).
    pub fn new(epsilon: u64) -> Result<Self> {
        if epsilon > MAX_EPSILON {
            return Err(Error::param(
                "epsilon",
                format!("{epsilon} is above the largest supported error 2^59"),
            ));
        }
        Ok(Self {
            // At most 2^59: fits.
            epsilon: epsilon as i64,
            first_x: 0,
            first_y: 0,
            last_x: 0,
            points: 0,
            upper: Vec::new(),
            lower: Vec::new(),
            upper_start: 0,
            lower_start: 0,
            rect: [P { x: 0, y: 0 }; 4],
        })
    }

    /// Adds the point `(x, y)`; `x` must exceed the previous point's, `y` must be at least
    /// the previous point's, and `y <= MAX_Y`.
    /// Returns the finished segment when this point does not fit the current one (the
    /// point then starts the next segment).
    #[inline]
    pub fn push(&mut self, x: u64, y: u64) -> Option<Segment> {
        debug_assert!(self.points == 0 || x > self.last_x, "x must increase");
        debug_assert!(y <= MAX_Y);
        if self.points > 0 && !self.try_add(x, y) {
            let done = self.segment();
            self.start(x, y);
            return Some(done);
        }
        if self.points == 0 {
            self.start(x, y);
        }
        None
    }

    /// The last segment, if any point was pushed since the last one finished.
    pub fn finish(self) -> Option<Segment> {
        (self.points > 0).then(|| self.segment())
    }

    fn start(&mut self, x: u64, y: u64) {
        let (hi, lo) = self.bounds(0, y);
        self.first_x = x;
        self.first_y = y;
        self.last_x = x;
        self.points = 1;
        self.upper.clear();
        self.lower.clear();
        self.upper.push(hi);
        self.lower.push(lo);
        self.upper_start = 0;
        self.lower_start = 0;
        self.rect = [hi, lo, lo, hi];
    }

    #[inline]
    fn bounds(&self, dx: u64, y: u64) -> (P, P) {
        // y <= MAX_Y = 2^60: fits.
        let y = y as i64;
        (
            P {
                x: dx,
                y: y + self.epsilon,
            },
            P {
                x: dx,
                y: y - self.epsilon,
            },
        )
    }

    /// Adds `(x, y)` to the current segment if a line still fits every point.
    #[inline]
    fn try_add(&mut self, x: u64, y: u64) -> bool {
        let (hi, lo) = self.bounds(x - self.first_x, y);
        if self.points == 1 {
            self.rect[2] = lo;
            self.rect[3] = hi;
            self.upper.push(hi);
            self.lower.push(lo);
            self.points = 2;
            self.last_x = x;
            return true;
        }
        let [r0, r1, r2, r3] = self.rect;
        let least = Slope::between(r0, r2);
        let most = Slope::between(r1, r3);
        // The new point's band must meet the region between the least and the steepest line.
        if Slope::between(r2, hi).lt(least) || Slope::between(r3, lo).gt(most) {
            return false;
        }
        if Slope::between(r1, hi).lt(most) {
            // The band's top cuts below the steepest line: the new steepest line runs from the
            // lower-hull point that gives the least slope to `hi`.
            let mut best = self.lower_start;
            let mut best_slope = Slope::between(self.lower[best], hi);
            for i in self.lower_start + 1..self.lower.len() {
                let s = Slope::between(self.lower[i], hi);
                if s.gt(best_slope) {
                    break;
                }
                best = i;
                best_slope = s;
            }
            self.rect[1] = self.lower[best];
            self.rect[3] = hi;
            self.lower_start = best;
            let mut end = self.upper.len();
            while end >= self.upper_start + 2
                && cross(self.upper[end - 2], self.upper[end - 1], hi) <= 0
            {
                end -= 1;
            }
            self.upper.truncate(end);
            self.upper.push(hi);
        }
        if Slope::between(r0, lo).gt(least) {
            // The band's bottom rises above the least steep line: the new least steep line
            // runs from the upper-hull point that gives the greatest slope to `lo`.
            let mut best = self.upper_start;
            let mut best_slope = Slope::between(self.upper[best], lo);
            for i in self.upper_start + 1..self.upper.len() {
                let s = Slope::between(self.upper[i], lo);
                if s.lt(best_slope) {
                    break;
                }
                best = i;
                best_slope = s;
            }
            self.rect[0] = self.upper[best];
            self.rect[2] = lo;
            self.upper_start = best;
            let mut end = self.lower.len();
            while end >= self.lower_start + 2
                && cross(self.lower[end - 2], self.lower[end - 1], lo) >= 0
            {
                end -= 1;
            }
            self.lower.truncate(end);
            self.lower.push(lo);
        }
        self.points += 1;
        self.last_x = x;
        true
    }

    /// The line in the middle of the feasible region: through the crossing of the least
    /// steep and the steepest feasible line, with the mean of their slopes.
    fn segment(&self) -> Segment {
        let base = Segment {
            first_x: self.first_x,
            first_y: self.first_y,
            last_x: self.last_x,
            points: self.points,
            slope: 0.0,
            intercept: self.first_y as f64,
            slope_range: (0.0, 0.0),
            pivot: (0.0, self.first_y as f64),
        };
        if self.points == 1 {
            return base;
        }
        let [r0, r1, r2, r3] = self.rect;
        let least = Slope::between(r0, r2);
        let most = Slope::between(r1, r3);
        let slope = (least.as_f64() + most.as_f64()) / 2.0;
        // Crossing of r0 + t (r2 - r0) and r1 + u (r3 - r1), in f64 (only the line is rounded).
        let (ax, ay) = (r0.x as f64, r0.y as f64);
        let (bx, by) = (r1.x as f64, r1.y as f64);
        let (dax, day) = ((r2.x - r0.x) as f64, (r2.y - r0.y) as f64);
        let (dbx, dby) = ((r3.x - r1.x) as f64, (r3.y - r1.y) as f64);
        let det = dax * dby - day * dbx;
        let (cx, cy) = if det == 0.0 {
            // Parallel: every line between them fits; take the middle one through x = 0.
            let ya = ay - least.as_f64() * ax;
            let yb = by - most.as_f64() * bx;
            (0.0, (ya + yb) / 2.0)
        } else {
            let t = ((bx - ax) * dby - (by - ay) * dbx) / det;
            (ax + t * dax, ay + t * day)
        };
        Segment {
            slope: slope.max(0.0),
            intercept: cy - slope.max(0.0) * cx,
            slope_range: (least.as_f64().max(0.0), most.as_f64().max(0.0)),
            pivot: (cx, cy),
            ..base
        }
    }
}

/// The segments of `points` (strictly increasing `x`, non-decreasing `y <= MAX_Y`) at
/// `epsilon`.
pub fn segments(
    points: impl IntoIterator<Item = (u64, u64)>,
    epsilon: u64,
) -> Result<Vec<Segment>> {
    let mut pla = PlaBuilder::new(epsilon)?;
    let mut out = Vec::new();
    let mut last: Option<(u64, u64)> = None;
    for (x, y) in points {
        if let Some((lx, ly)) = last
            && (x <= lx || y < ly)
        {
            return Err(Error::param(
                "points",
                format!("({x}, {y}) follows ({lx}, {ly}): x must increase and y must not decrease"),
            ));
        }
        if y > MAX_Y {
            return Err(Error::param("points", format!("y = {y} is above 2^60")));
        }
        last = Some((x, y));
        out.extend(pla.push(x, y));
    }
    out.extend(pla.finish());
    Ok(out)
}

/// The points a sorted key array contributes: `(key, rank)` for each distinct key, where
/// rank is the position of its first occurrence.
pub fn distinct_key_points(keys: &[u64]) -> impl Iterator<Item = (u64, u64)> + '_ {
    keys.iter()
        .enumerate()
        .filter(|&(i, k)| i == 0 || keys[i - 1] != *k)
        .map(|(i, &k)| (k, i as u64))
}

/// Paper 3's hardness metric: the number of PLA segments of a sorted key set at `epsilon`
/// (points `(key, rank)` of the distinct keys). More segments: harder to learn.
pub fn segment_count(keys: &[u64], epsilon: u64) -> Result<u64> {
    if keys.windows(2).any(|w| w[0] > w[1]) {
        return Err(Error::param(
            "keys",
            "the hardness metric needs sorted keys",
        ));
    }
    if keys.len() as u64 > MAX_Y {
        return Err(Error::param("keys", "more than 2^60 keys"));
    }
    let mut pla = PlaBuilder::new(epsilon)?;
    let mut count = 0u64;
    for (x, y) in distinct_key_points(keys) {
        count += u64::from(pla.push(x, y).is_some());
    }
    Ok(count + u64::from(pla.finish().is_some()))
}

/// Paper 3's other hardness measure (App. D): the mean squared error, in ranks², of one
/// least-squares line of rank on key over the distinct keys (the PLA's points). Paper 3
/// finds it too sensitive to outliers to rank data sets, and keeps the PLA counts; it is
/// reported beside them. Keys are taken as `f64` (exact below 2^53). 0 for fewer than two
/// distinct keys.
pub fn linear_mse(keys: &[u64]) -> Result<f64> {
    if keys.windows(2).any(|w| w[0] > w[1]) {
        return Err(Error::param(
            "keys",
            "the hardness metric needs sorted keys",
        ));
    }
    let points = || distinct_key_points(keys).map(|(x, y)| (x as f64, y as f64));
    let (n, mean_x, mean_y) = running_means(points());
    if n < 2.0 {
        return Ok(0.0);
    }
    let line = CentredLine::fit_about(points(), mean_x, mean_y);
    let sse: f64 = points()
        .map(|(x, y)| {
            let e = y - line.predict(x);
            e * e
        })
        .sum();
    Ok(sse / n)
}

#[cfg(test)]
mod tests;
