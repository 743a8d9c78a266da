//! PGM-index (Ferragina and Vinciguerra, 2020; paper 1, sections 2.2 and 5.1): optimal PLA
//! segments over the keys at error ε, and, for the recursive variant, PLA levels over the
//! segments' first keys at ε_rec until one segment remains or the height limit is reached.
//! Height 1 is the flat PGM paper 1 uses: binary search over the segments' first keys.
//!
//! # Why the windows hold on every input
//!
//! The model is fitted to the lower-bound function, not only to the keys: its points are
//! `(k, first position of k)` for each distinct key `k`, plus, after a run of equal keys
//! followed by a gap, `(k + 1, position after the run)`. For every integer strictly between
//! two consecutive points, the lower bound then equals the right point's position, which is
//! at most 1 above the left point's (a step of more than 1, after a duplicate run, is taken
//! between adjacent integers, where no query lies); and
//! every line is non-decreasing, so a query anywhere, present or absent, is predicted
//! within `ε + 1` of its lower bound on the high side and `ε` on the low side. Predictions
//! past a segment's last point are clamped to the next segment's first position. Lines are
//! rounded to `f64` once; the build measures, on every point, how far the rounded lines
//! miss and widens all windows by that slack `s` (whole positions, 0 in practice), so
//! windows are `2ε + 1 + 2s` wide at most. Keys below the smallest or above the largest
//! resolve without the model.

use std::fmt;

use super::codec::{Decoder, Encoder, invalid};
use super::partition_from;
use super::{
    Index, IndexKind, Window, check_build, edge_window, lower_bound_points, miss, model_window,
};
use crate::pla::{MAX_EPSILON, MAX_Y, PlaBuilder, Segment};
use crate::{Error, FormatError, Result};

/// Parameters of a PGM-index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgmParams {
    /// Error of the bottom level, in positions (at least 1).
    pub epsilon: u64,
    /// Error of the levels above (at least 1).
    pub epsilon_rec: u64,
    /// Most levels (1 = flat).
    pub max_height: u32,
}

impl Default for PgmParams {
    /// ε = 127 (windows of at most 255 positions: the 256-position setting), flat as paper
    /// 1 builds it (height 1: binary search over the segments' first keys); ε_rec = 4 for
    /// a recursive index (`max_height` above 1). Flat is also the faster on this project's
    /// machine: on 100M clustered keys, where the bottom level has 20,592 segments, a flat
    /// search took 55 ns and a recursive one (ε_rec 4, 4 levels) 98 ns.
    fn default() -> Self {
        Self {
            epsilon: 127,
            epsilon_rec: 4,
            max_height: 1,
        }
    }
}

impl fmt::Display for PgmParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "eps={} eps_rec={} max_height={}",
            self.epsilon, self.epsilon_rec, self.max_height
        )
    }
}

/// One segment's line, without its first key (kept apart for the binary searches).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Line {
    /// The exact position (or segment number, above the bottom) of the segment's first point.
    first_y: u64,
    slope: f64,
    intercept: f64,
}

/// One level: the segments' first keys and their lines.
#[derive(Clone, Debug, PartialEq)]
struct Level {
    keys: Vec<u64>,
    lines: Vec<Line>,
}

const LINE_BYTES: u64 = 32;
const HEADER_BYTES: u64 = 8 * 8 + 4;

impl Level {
    fn from_segments(segments: &[Segment]) -> Level {
        Level {
            keys: segments.iter().map(|s| s.first_x).collect(),
            lines: segments
                .iter()
                .map(|s| Line {
                    first_y: s.first_y,
                    slope: s.slope,
                    intercept: s.intercept,
                })
                .collect(),
        }
    }

    /// Segment `j`'s prediction for `key`, rounded down to a whole position and capped:
    /// at the bottom (`bottom`, `n` keys) by the next segment's first position (or `n`),
    /// above it by the last point's (the next segment's first, less one; or the last).
    #[inline]
    fn position(&self, j: usize, key: u64, bottom: bool, n: u64) -> u64 {
        let (Some(&first), Some(line)) = (self.keys.get(j), self.lines.get(j)) else {
            return 0;
        };
        let cap = match (self.lines.get(j + 1), bottom) {
            (Some(next), true) => next.first_y,
            (Some(next), false) => next.first_y.saturating_sub(1),
            (None, true) => n,
            (None, false) => n.saturating_sub(1),
        };
        let p = line.intercept + line.slope * key.wrapping_sub(first) as f64;
        // `as u64` is the floor of a non-negative value (negative and NaN give 0, too large
        // saturates); the cap is applied after, in integers, where it is exact.
        (p as u64).min(cap)
    }
}

/// A PGM-index over a sorted key array.
#[derive(Clone, Debug, PartialEq)]
pub struct Pgm {
    params: PgmParams,
    n: u64,
    min_key: u64,
    max_key: u64,
    /// Float slack of the bottom level and of the levels above, in whole positions.
    slack: u64,
    slack_rec: u64,
    /// `levels[0]` models the keys; `levels[l + 1]` models `levels[l].keys`.
    levels: Vec<Level>,
}

/// The level fitted to `points` at `epsilon`, and its slack: the whole positions by which
/// the search's own rounded predictions ([`Level::position`]) miss `epsilon` on some point.
/// Measured with the very arithmetic the search uses, so the windows' guarantee is exact.
fn fit(
    points: impl Iterator<Item = (u64, u64)> + Clone,
    epsilon: u64,
    bottom: bool,
    n: u64,
) -> Result<(Level, u64)> {
    let mut pla = PlaBuilder::new(epsilon)?;
    let mut segments = Vec::new();
    for (x, y) in points.clone() {
        segments.extend(pla.push(x, y));
    }
    segments.extend(pla.finish());
    let level = Level::from_segments(&segments);
    let mut slack = 0u64;
    let mut j = 0usize;
    for (x, y) in points {
        while level.keys.get(j + 1).is_some_and(|&k| k <= x) {
            j += 1;
        }
        slack = slack.max(miss(level.position(j, x, bottom, n), y, epsilon));
    }
    Ok((level, slack))
}

impl Pgm {
    /// Number of levels (1 = flat).
    pub fn height(&self) -> usize {
        self.levels.len()
    }

    /// The float slack of the bottom level and of the levels above, in whole positions
    /// (0 or 1 in practice; windows widen by it).
    pub fn slack(&self) -> (u64, u64) {
        (self.slack, self.slack_rec)
    }

    /// Segments per level, bottom first.
    pub fn segments_per_level(&self) -> Vec<usize> {
        self.levels.iter().map(|l| l.keys.len()).collect()
    }

    /// The bottom-level segment for `key` (`min_key < key <= max_key`).
    fn bottom_segment(&self, key: u64) -> usize {
        let Some(top) = self.levels.last() else {
            return 0;
        };
        let mut j = top.keys.partition_point(|&k| k <= key).saturating_sub(1);
        let reach = self.params.epsilon_rec + self.slack_rec + 1;
        for l in (0..self.levels.len() - 1).rev() {
            let (below, above) = (&self.levels[l], &self.levels[l + 1]);
            let last = below.keys.len().saturating_sub(1) as u64;
            let p = above.position(j, key, false, below.keys.len() as u64);
            let lo = p.saturating_sub(reach) as usize;
            let hi = (p.saturating_add(reach).min(last) as usize).max(lo);
            let slice = below.keys.get(lo..=hi).unwrap_or_default();
            j = lo + slice.partition_point(|&k| k <= key).saturating_sub(1);
        }
        j
    }
}

impl Index for Pgm {
    type Params = PgmParams;
    const KIND: IndexKind = IndexKind::Pgm;

    fn build(keys: &[u64], params: &PgmParams) -> Result<Pgm> {
        let (min_key, max_key) = check_build(
            keys,
            &[
                ("epsilon", params.epsilon),
                ("epsilon_rec", params.epsilon_rec),
            ],
        )?;
        if params.max_height == 0 {
            return Err(Error::param("max_height", "must be at least 1 (1 = flat)"));
        }
        let n = keys.len() as u64;
        if n == 0 {
            return Ok(Pgm {
                params: *params,
                n,
                min_key,
                max_key,
                slack: 0,
                slack_rec: 0,
                levels: Vec::new(),
            });
        }
        let (bottom, slack) = fit(lower_bound_points(keys), params.epsilon, true, n)?;
        let mut levels = vec![bottom];
        let mut slack_rec = 0;
        while levels.len() < params.max_height as usize
            && levels.last().is_some_and(|l| l.keys.len() > 1)
        {
            let below = &levels[levels.len() - 1].keys;
            let points = below.iter().enumerate().map(|(j, &k)| (k, j as u64));
            let (level, s) = fit(points, params.epsilon_rec, false, below.len() as u64)?;
            slack_rec = slack_rec.max(s);
            levels.push(level);
        }
        Ok(Pgm {
            params: *params,
            n,
            min_key,
            max_key,
            slack,
            slack_rec,
            levels,
        })
    }

    #[inline]
    fn search(&self, key: u64) -> Window {
        let n = self.n;
        if let Some(w) = edge_window(key, self.min_key, self.max_key, n) {
            return w;
        }
        let j = self.bottom_segment(key);
        let p = self.levels[0].position(j, key, true, n);
        model_window(p, self.params.epsilon + self.slack, n)
    }

    /// Moves along the bottom level: `hint` is the partition point of "first key ≤ key"
    /// found last time.
    fn search_from(&self, key: u64, hint: &mut usize) -> Window {
        let n = self.n;
        if let Some(w) = edge_window(key, self.min_key, self.max_key, n) {
            return w;
        }
        let Some(bottom) = self.levels.first() else {
            return Window { lo: 0, hi: n };
        };
        *hint = partition_from(&bottom.keys, *hint, |k| k <= key);
        let j = hint.saturating_sub(1);
        let p = bottom.position(j, key, true, n);
        model_window(p, self.params.epsilon + self.slack, n)
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn size_in_bytes(&self) -> u64 {
        HEADER_BYTES
            + self
                .levels
                .iter()
                .map(|l| 8 + LINE_BYTES * l.keys.len() as u64)
                .sum::<u64>()
    }

    fn max_width(&self) -> u64 {
        (2 * (self.params.epsilon + self.slack) + 1).min(self.n)
    }

    /// ε = (width - 1) / 2, the rest default: windows of `2ε + 1` positions (plus the float
    /// slack, 0 in practice). Needs `width >= 3`.
    fn params_for_width(width: u64) -> Option<PgmParams> {
        (width >= 3).then(|| PgmParams {
            epsilon: (width - 1) / 2,
            ..PgmParams::default()
        })
    }

    fn params(&self) -> PgmParams {
        self.params
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u64(self.params.epsilon);
        e.u64(self.params.epsilon_rec);
        e.u32(self.params.max_height);
        e.u64(self.n);
        e.u64(self.min_key);
        e.u64(self.max_key);
        e.u64(self.slack);
        e.u64(self.slack_rec);
        e.u64(self.levels.len() as u64);
        for level in &self.levels {
            e.u64(level.keys.len() as u64);
            for (k, l) in level.keys.iter().zip(&level.lines) {
                e.u64(*k);
                e.u64(l.first_y);
                e.f64(l.slope);
                e.f64(l.intercept);
            }
        }
    }

    fn decode(bytes: &[u8]) -> Result<Pgm, FormatError> {
        let mut d = Decoder::new(bytes, "a PGM-index");
        let params = PgmParams {
            epsilon: d.u64()?,
            epsilon_rec: d.u64()?,
            max_height: d.u32()?,
        };
        if params.epsilon == 0
            || params.epsilon > MAX_EPSILON
            || params.epsilon_rec == 0
            || params.epsilon_rec > MAX_EPSILON
        {
            return Err(invalid(
                "epsilon",
                params.epsilon.min(params.epsilon_rec),
                "1 ..= 2^59",
            ));
        }
        let (n, min_key, max_key, slack, slack_rec) =
            (d.u64()?, d.u64()?, d.u64()?, d.u64()?, d.u64()?);
        if n > MAX_Y || slack > n || slack_rec > n || min_key > max_key {
            return Err(invalid(
                "count, slack or key range",
                n,
                "n <= 2^60, slack <= n, min <= max",
            ));
        }
        let level_count = d.u64()?;
        if level_count > u64::from(params.max_height) || (n == 0) != (level_count == 0) {
            return Err(invalid(
                "level count",
                level_count,
                "1 ..= max_height levels (0 for no keys)",
            ));
        }
        let mut levels: Vec<Level> = Vec::new();
        for _ in 0..level_count {
            let count = d.count(LINE_BYTES)?;
            // Every level has segments, and fewer or as many as the level below.
            let limit = levels.last().map_or(n, |l| l.keys.len() as u64);
            if count == 0 || count as u64 > limit {
                return Err(invalid(
                    "segments in a level",
                    count as u64,
                    "1 ..= the count of the level below",
                ));
            }
            let mut level = Level {
                keys: Vec::with_capacity(count),
                lines: Vec::with_capacity(count),
            };
            for _ in 0..count {
                let key = d.u64()?;
                let line = Line {
                    first_y: d.u64()?,
                    slope: d.f64()?,
                    intercept: d.f64()?,
                };
                let y_limit = levels.last().map_or(n, |l| l.keys.len() as u64);
                let ordered = level.keys.last().is_none_or(|&k| k < key)
                    && level.lines.last().is_none_or(|l| l.first_y <= line.first_y);
                let sane = line.first_y < y_limit
                    && line.slope >= 0.0
                    && line.slope.is_finite()
                    && line.intercept.is_finite();
                if !(ordered && sane) {
                    return Err(invalid(
                        "segment",
                        key,
                        "increasing keys, positions in range, finite non-negative slopes",
                    ));
                }
                level.keys.push(key);
                level.lines.push(line);
            }
            if level.keys.first() != Some(&min_key)
                || level.keys.last().is_some_and(|&k| k > max_key)
            {
                return Err(invalid(
                    "first key of a level",
                    level.keys.first().copied().unwrap_or(0),
                    "the smallest key",
                ));
            }
            levels.push(level);
        }
        d.finish()?;
        Ok(Pgm {
            params,
            n,
            min_key,
            max_key,
            slack,
            slack_rec,
            levels,
        })
    }
}
