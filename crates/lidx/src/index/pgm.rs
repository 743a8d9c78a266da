//! PGM-index (Ferragina and Vinciguerra, 2020; paper 1, sections 2.2 and 5.1): optimal PLA
//! segments over the keys at error ε, and, for the recursive variant, PLA levels over the
//! segments' first keys at ε_rec until one segment remains or the height limit is reached.
//! Height 1 is the flat PGM paper 1 uses: binary search over the segments' first keys.
//!
//! # Segments in 16 bytes
//!
//! As in the C++ PGM-index, a segment is its first key (`u64`), an `f32` slope and an `i32`
//! intercept: the line's value at the first key, a whole position. The slope is the `f32`
//! nearest the middle of the feasible range that lies inside it, and the line passes through
//! the point where the least and the steepest feasible lines cross, so it is feasible as it
//! is stored; its intercept is then rounded *up*, which moves the line by less than one
//! position, all of it upwards, and the prediction (rounded down) stays within ε of every
//! point. The build still checks every point with the search's own arithmetic, right after
//! the segment closes while its keys are in cache, and records any miss as the slack `s`
//! (0 in every test and benchmark so far). Where the compact form cannot be exact enough —
//! more than `i32::MAX` positions, or a measured slack above that of the wide form — the
//! index falls back, as a whole, to the wide form of format version 1: first key, first
//! position, `f64` slope and `f64` intercept, 32 bytes. Files of version 1 load in that form.
//!
//! # Why the windows hold on every input
//!
//! The model is fitted to the lower-bound function, not only to the keys: its points are
//! `(k, first position of k)` for each distinct key `k`, plus, after a run of equal keys
//! followed by a gap, `(k + 1, position after the run)`. For every integer strictly between
//! two consecutive points, the lower bound then equals the right point's position, which is
//! at most 1 above the left point's (a step of more than 1, after a duplicate run, is taken
//! between adjacent integers, where no query lies); and every line is non-decreasing, so a
//! query anywhere, present or absent, is predicted within `ε + 1` of its lower bound on the
//! high side and `ε` on the low side. Predictions past a segment's last point are capped by
//! the start of the next segment: its intercept (compact form; within `ε + s` of its first
//! position, since the check covers the first point, where the line equals the intercept)
//! or its first position (wide form). Windows are `2ε + 1 + 2s` wide at most. Keys below
//! the smallest or above the largest resolve without the model.
//!
//! # Building on several threads
//!
//! [`Pgm::build_on`] cuts the keys into one chunk per thread, at starts of runs of equal
//! keys, and fits each chunk alone, as the C++ library does with OpenMP. Each cut may cost
//! one segment more than the sequential build; the upper levels are built after, on one
//! thread (they are small).
#![deny(clippy::indexing_slicing)]

use std::fmt;

use super::partition_from;
use super::{
    Index, IndexKind, LowerBoundPoints, Window, check_build, edge_window, lower_bound_points, miss,
    model_window, run_start_from,
};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::pla::{MAX_EPSILON, MAX_Y, PlaBuilder, Segment};
use crate::{Error, FormatError, Result};

/// Parameters of a PGM-index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgmParams {
    /// Error of the bottom level, in positions (at least 1).
    pub epsilon: u64,
    /// Error of the levels above (at least 1).
    pub epsilon_rec: u64,
    /// Most levels (1 = flat). A level is added only above one of more than
    /// [`RECURSE_ABOVE`] segments: below that, a binary search over the segments' first
    /// keys is the faster (see there).
    pub max_height: u32,
}

/// Upper levels are built only over a level of more than this many segments (8 MiB of first
/// keys). Measured on this project's machine (AMD EPYC, 1 MiB L2 per core, keys in memory,
/// lookups of existing keys in random order, ε_rec = 4): each level of the descent costs a
/// dependent float prediction and a search of 11 first keys, where a binary search over
/// first keys that sit in L2 costs a few cycles a step. On 10M `usparse` keys a flat lookup
/// took 150 ns against 188 ns through 3 levels (2,844 segments, ε = 31), and 198 against 202
/// ns through 2 (178 segments, ε = 127); on 100M keys at ε = 31 (28K to 39K segments), 203
/// against 326 ns (`clustered`) and 254 against 301 ns (`usparse`). At about 1M segments
/// (ε = 1 on 10M keys) the two were even. Tiny in unit tests, so that the upper levels are
/// exercised on small key sets.
pub const RECURSE_ABOVE: usize = if cfg!(test) { 1 } else { 1 << 20 };

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

/// How an index stores its segments (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentForm {
    /// 16 bytes: first key, `f32` slope, `i32` intercept.
    Compact = 1,
    /// 32 bytes: first key, first position, `f64` slope, `f64` intercept (format version 1).
    Wide = 2,
}

impl fmt::Display for SegmentForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SegmentForm::Compact => "compact (16-byte segments)",
            SegmentForm::Wide => "wide (32-byte segments)",
        })
    }
}

/// A segment's line in one of the two forms; the search is generic over it.
trait Line: Copy + fmt::Debug + PartialEq + Send {
    /// Bytes a segment, its first key included, takes in the file.
    const SEGMENT_BYTES: u64;

    /// The line's value `dx` past the segment's first key, rounded down (negative and NaN
    /// give 0, values past `u64::MAX` saturate). Non-decreasing in `dx`.
    fn at(&self, dx: u64) -> u64;

    /// The cap this segment puts on the predictions of the one before it (`bottom`: at the
    /// bottom level).
    fn cap(&self, bottom: bool) -> u64;

    /// The line after a level's last segment: it caps that segment at `len`, the positions
    /// (or segments below) the level maps to.
    fn sentinel(len: u64) -> Self;

    fn encode(&self, key: u64, e: &mut Encoder<'_>);
    fn decode(d: &mut Decoder<'_>) -> Result<(u64, Self), FormatError>;

    /// Whether a decoded line can be searched: finite non-negative slope, start in range,
    /// and in order after `previous`. `len` as in [`sentinel`](Self::sentinel), `reach` the
    /// level's ε plus slack.
    fn valid(&self, previous: Option<&Self>, len: u64, reach: u64) -> bool;
}

/// The compact form.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Compact {
    slope: f32,
    intercept: i32,
}

impl Line for Compact {
    const SEGMENT_BYTES: u64 = 16;

    /// Through `i64`, whose conversion from `f64` is one instruction where `u64`'s takes a
    /// dozen; the two differ only at `2^63` and above, far past any cap of a compact level
    /// (`i32::MAX`), so capped predictions and measured slack agree with the plain formula.
    #[inline]
    fn at(&self, dx: u64) -> u64 {
        let p = (f64::from(self.intercept) + f64::from(self.slope) * dx as f64) as i64;
        p.max(0) as u64
    }

    #[inline]
    fn cap(&self, _bottom: bool) -> u64 {
        u64::try_from(self.intercept).unwrap_or(0)
    }

    fn sentinel(len: u64) -> Self {
        Compact {
            slope: 0.0,
            intercept: i32::try_from(len).unwrap_or(i32::MAX),
        }
    }

    fn encode(&self, key: u64, e: &mut Encoder<'_>) {
        e.u64(key);
        e.f32(self.slope);
        e.i32(self.intercept);
    }

    fn decode(d: &mut Decoder<'_>) -> Result<(u64, Self), FormatError> {
        Ok((
            d.u64()?,
            Compact {
                slope: d.f32()?,
                intercept: d.i32()?,
            },
        ))
    }

    fn valid(&self, _previous: Option<&Self>, len: u64, reach: u64) -> bool {
        let intercept = i128::from(self.intercept);
        self.slope >= 0.0
            && self.slope.is_finite()
            && intercept >= -i128::from(reach) - 1
            && intercept <= i128::from(len) + i128::from(reach)
    }
}

/// The wide form (format version 1).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Wide {
    /// The exact position (or segment number, above the bottom) of the segment's first point.
    first_y: u64,
    slope: f64,
    intercept: f64,
}

impl Line for Wide {
    const SEGMENT_BYTES: u64 = 32;

    #[inline]
    fn at(&self, dx: u64) -> u64 {
        (self.intercept + self.slope * dx as f64) as u64
    }

    /// At the bottom the next segment's first position; above it, the last point of this
    /// segment (the next one's first, less one).
    #[inline]
    fn cap(&self, bottom: bool) -> u64 {
        if bottom {
            self.first_y
        } else {
            self.first_y.saturating_sub(1)
        }
    }

    fn sentinel(len: u64) -> Self {
        Wide {
            first_y: len,
            slope: 0.0,
            intercept: len as f64,
        }
    }

    fn encode(&self, key: u64, e: &mut Encoder<'_>) {
        e.u64(key);
        e.u64(self.first_y);
        e.f64(self.slope);
        e.f64(self.intercept);
    }

    fn decode(d: &mut Decoder<'_>) -> Result<(u64, Self), FormatError> {
        Ok((
            d.u64()?,
            Wide {
                first_y: d.u64()?,
                slope: d.f64()?,
                intercept: d.f64()?,
            },
        ))
    }

    fn valid(&self, previous: Option<&Self>, len: u64, _reach: u64) -> bool {
        previous.is_none_or(|p| p.first_y <= self.first_y)
            && self.first_y < len
            && self.slope >= 0.0
            && self.slope.is_finite()
            && self.intercept.is_finite()
    }
}

/// One level: the segments' first keys, and their lines followed by the sentinel
/// (`lines.len() == keys.len() + 1`), so every segment has a next line to cap it.
#[derive(Clone, Debug, PartialEq)]
struct Level<L> {
    keys: Vec<u64>,
    lines: Vec<L>,
}

impl<L: Line> Level<L> {
    fn len(&self) -> usize {
        self.keys.len()
    }

    /// Segment `j`'s prediction for `key` (`key >= keys[j]`), capped by the next segment.
    #[inline]
    fn position(&self, j: usize, key: u64, bottom: bool) -> u64 {
        match (self.keys.get(j), self.lines.get(j..j + 2)) {
            (Some(&first), Some(&[line, next])) => {
                line.at(key.wrapping_sub(first)).min(next.cap(bottom))
            }
            _ => 0,
        }
    }

    /// The last segment whose first key is at most `key` (0 when none is).
    #[inline]
    fn segment_for(&self, key: u64) -> usize {
        // The standard library's binary search has no branches: the first keys of a level
        // are in cache, where that is the faster (a search with branches here cost 30 ns
        // more per lookup on 100M clustered keys).
        self.keys.partition_point(|&k| k <= key).saturating_sub(1)
    }

    /// The segment for `key` when it is known to be one of the `width` segments from `lo`
    /// (clipped to the level): a binary search over exactly `width` first keys (fewer only
    /// in a smaller level), so its steps are the same for every key and the processor
    /// predicts them all.
    #[inline]
    fn segment_near(&self, key: u64, lo: usize, width: usize) -> usize {
        let width = width.min(self.len());
        let start = lo.min(self.len() - width);
        let window = self.keys.get(start..start + width).unwrap_or_default();
        start + window.partition_point(|&k| k <= key).saturating_sub(1)
    }
}

/// The levels of an index, bottom first, all in one form.
#[derive(Clone, Debug, PartialEq)]
enum Levels {
    Compact(Vec<Level<Compact>>),
    Wide(Vec<Level<Wide>>),
}

/// Calls `$body` with `$levels` bound to the levels, whatever their form.
macro_rules! with_levels {
    ($self:expr, $levels:ident => $body:expr) => {
        match &$self.levels {
            Levels::Compact($levels) => $body,
            Levels::Wide($levels) => $body,
        }
    };
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
    levels: Levels,
}

/// A level in the making: segments fitted to one run of points, without the sentinel.
#[derive(Debug)]
struct Fitted<L> {
    keys: Vec<u64>,
    lines: Vec<L>,
    slack: u64,
}

impl<L: Line> Fitted<L> {
    fn new() -> Self {
        Fitted {
            keys: Vec::new(),
            lines: Vec::new(),
            slack: 0,
        }
    }

    /// The level, closed by the sentinel for `len` positions (or segments below).
    fn into_level(mut self, len: u64) -> Level<L> {
        self.lines.push(L::sentinel(len));
        Level {
            keys: self.keys,
            lines: self.lines,
        }
    }

    /// Appends the segments of the next chunk of the same level.
    fn append(&mut self, mut chunk: Fitted<L>) {
        self.keys.append(&mut chunk.keys);
        self.lines.append(&mut chunk.lines);
        self.slack = self.slack.max(chunk.slack);
    }
}

/// The compact line of `segment`: its slope rounded to the `f32` nearest the middle of the
/// feasible range that lies inside it, through the pivot, with the intercept rounded up.
/// `None` when the intercept does not fit in `i32`.
fn compact_line(segment: &Segment) -> Option<Compact> {
    let (least, most) = segment.slope_range;
    let mut slope = segment.slope as f32;
    if f64::from(slope) < least {
        slope = slope.next_up();
    }
    if f64::from(slope) > most {
        slope = slope.next_down();
    }
    let slope = slope.max(0.0);
    compact_with(slope, segment.intercept_for(f64::from(slope)))
}

/// The compact line of slope `slope` whose intercept is `intercept` rounded up, if it fits.
fn compact_with(slope: f32, intercept: f64) -> Option<Compact> {
    let intercept = intercept.ceil();
    let fits = intercept >= f64::from(i32::MIN) && intercept <= f64::from(i32::MAX);
    fits.then_some(Compact {
        slope,
        intercept: intercept as i32,
    })
}

/// The largest miss of `line` over `points` of the segment starting at `first_x`.
fn compact_miss(
    line: &Compact,
    first_x: u64,
    points: impl Iterator<Item = (u64, u64)>,
    epsilon: u64,
) -> u64 {
    points
        .map(|(x, y)| miss(line.at(x.wrapping_sub(first_x)), y, epsilon))
        .max()
        .unwrap_or(0)
}

/// When no `f32` slope is feasible (the feasible range can be one value, such as 1/5): the
/// line among the `f32` slopes next to the middle whose intercept, the lowest that keeps
/// every point's prediction at least `y - ε`, misses least.
fn compact_fallback(
    segment: &Segment,
    points: impl Iterator<Item = (u64, u64)> + Clone,
    epsilon: u64,
) -> Option<(Compact, u64)> {
    let middle = segment.slope as f32;
    let mut best: Option<(Compact, u64)> = None;
    for slope in [middle, middle.next_up(), middle.next_down()] {
        let slope = slope.max(0.0);
        let lowest = points
            .clone()
            .map(|(x, y)| {
                y as f64 - epsilon as f64 - f64::from(slope) * (x - segment.first_x) as f64
            })
            .fold(f64::NEG_INFINITY, f64::max);
        let Some(line) = compact_with(slope, lowest) else {
            continue;
        };
        let missed = compact_miss(&line, segment.first_x, points.clone(), epsilon);
        if best.is_none_or(|(_, m)| missed < m) {
            best = Some((line, missed));
        }
    }
    best
}

/// The compact level fitted to `points` at `epsilon`, with its slack, in one pass over the
/// keys: each segment's points are checked with the search's arithmetic when the segment
/// closes, while they are in cache (as a slice of the keys where the segment holds no
/// duplicates, otherwise through the iterator saved at its start). `None` when an
/// intercept does not fit in `i32`.
fn fit_compact(mut points: LowerBoundPoints<'_>, epsilon: u64) -> Result<Option<Fitted<Compact>>> {
    let mut pla = PlaBuilder::new(epsilon)?;
    let mut fitted = Fitted::new();
    let mut start = points.clone();
    let Some(first) = points.next() else {
        return Ok(Some(fitted));
    };
    pla.push(first.0, first.1);
    loop {
        let before = points.clone();
        let Some((x, y)) = points.next() else {
            break;
        };
        if let Some(segment) = pla.push(x, y) {
            let plain = before.irregular == start.irregular;
            if !close_compact(&mut fitted, &segment, start, plain, epsilon) {
                return Ok(None);
            }
            start = before;
        }
    }
    if let Some(segment) = pla.finish() {
        let plain = points.irregular == start.irregular;
        if !close_compact(&mut fitted, &segment, start, plain, epsilon) {
            return Ok(None);
        }
    }
    Ok(Some(fitted))
}

/// Stores `segment` in `fitted` and measures its slack over its points, which `start`
/// returns first; `plain`: they are `(keys[p], p)` for consecutive positions `p`. False
/// when its intercept does not fit in `i32`.
fn close_compact(
    fitted: &mut Fitted<Compact>,
    segment: &Segment,
    start: LowerBoundPoints<'_>,
    plain: bool,
    epsilon: u64,
) -> bool {
    let count = usize::try_from(segment.points).unwrap_or(usize::MAX);
    let Some(mut line) = compact_line(segment) else {
        return false;
    };
    let first = usize::try_from(segment.first_y).unwrap_or(usize::MAX);
    let slice = plain
        .then(|| start.keys().get(first..first.saturating_add(count)))
        .flatten();
    let within = |line: &Compact| match slice {
        Some(keys) => plain_within(line, keys, segment.first_y, epsilon),
        None => false,
    };
    if !within(&line) {
        let points = start.take(count);
        let mut missed = compact_miss(&line, segment.first_x, points.clone(), epsilon);
        if missed > 0 {
            match compact_fallback(segment, points, epsilon) {
                Some((better, m)) if m < missed => (line, missed) = (better, m),
                _ => {}
            }
        }
        fitted.slack = fitted.slack.max(missed);
    }
    fitted.keys.push(segment.first_x);
    fitted.lines.push(line);
    true
}

/// Whether `line` predicts every key of `keys`, at positions `first_y..`, within `epsilon`
/// (the fast check of a segment without duplicates: one multiply and compare per key).
fn plain_within(line: &Compact, keys: &[u64], first_y: u64, epsilon: u64) -> bool {
    let Some(&first_x) = keys.first() else {
        return true;
    };
    keys.iter().zip(first_y..).all(|(&k, y)| {
        let p = line.at(k.wrapping_sub(first_x));
        // p - y + ε in 0 ..= 2ε, with wrapping: y - ε <= p <= y + ε.
        p.wrapping_sub(y).wrapping_add(epsilon) <= 2 * epsilon
    })
}

/// The wide level fitted to `points` at `epsilon` (format version 1's build), with its
/// slack measured over every point with the capped search arithmetic.
fn fit_wide(
    points: impl Iterator<Item = (u64, u64)> + Clone,
    epsilon: u64,
    bottom: bool,
    len: u64,
) -> Result<(Level<Wide>, u64)> {
    let mut pla = PlaBuilder::new(epsilon)?;
    let mut fitted = Fitted::<Wide>::new();
    let mut add = |s: Segment| {
        fitted.keys.push(s.first_x);
        fitted.lines.push(Wide {
            first_y: s.first_y,
            slope: s.slope,
            intercept: s.intercept,
        });
    };
    for (x, y) in points.clone() {
        if let Some(s) = pla.push(x, y) {
            add(s);
        }
    }
    if let Some(s) = pla.finish() {
        add(s);
    }
    let level = fitted.into_level(len);
    let mut slack = 0u64;
    let mut j = 0usize;
    for (x, y) in points {
        while level.keys.get(j + 1).is_some_and(|&k| k <= x) {
            j += 1;
        }
        slack = slack.max(miss(level.position(j, x, bottom), y, epsilon));
    }
    Ok((level, slack))
}

/// Fewest keys per thread for a parallel build to be worth its threads (tiny in unit
/// tests, so that small key sets are cut too).
const MIN_KEYS_PER_THREAD: usize = if cfg!(test) { 4 } else { 1 << 16 };

/// The compact bottom level over `keys` on up to `threads` threads (see the module
/// documentation); `None` when it cannot be compact.
fn fit_bottom(keys: &[u64], epsilon: u64, threads: usize) -> Result<Option<Fitted<Compact>>> {
    let threads = threads.clamp(1, (keys.len() / MIN_KEYS_PER_THREAD).max(1));
    if threads == 1 {
        return fit_compact(lower_bound_points(keys), epsilon);
    }
    let mut cuts: Vec<usize> = (0..=threads)
        .map(|t| run_start_from(keys, keys.len() * t / threads))
        .collect();
    cuts.dedup();
    let chunks = std::thread::scope(|scope| {
        let workers: Vec<_> = cuts
            .windows(2)
            .filter_map(|w| match *w {
                [lo, hi] => Some((lo, hi)),
                _ => None,
            })
            .map(|(lo, hi)| {
                let points = LowerBoundPoints::range(keys, lo, hi);
                scope.spawn(move || fit_compact(points, epsilon))
            })
            .collect();
        workers.into_iter().map(|w| w.join()).collect::<Vec<_>>()
    });
    let mut bottom = Fitted::new();
    for chunk in chunks {
        let chunk = chunk.map_err(|_| Error::ThreadPanicked {
            what: "fitting a chunk of a PGM-index",
        })??;
        match chunk {
            Some(chunk) => bottom.append(chunk),
            None => return Ok(None),
        }
    }
    Ok(Some(bottom))
}

impl Pgm {
    /// [`Index::build`] on up to `threads` threads for the bottom level (see the module
    /// documentation: each extra thread may add a segment).
    pub fn build_on(keys: &[u64], params: &PgmParams, threads: usize) -> Result<Pgm> {
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
        let empty = Pgm {
            params: *params,
            n: keys.len() as u64,
            min_key,
            max_key,
            slack: 0,
            slack_rec: 0,
            levels: Levels::Compact(Vec::new()),
        };
        if keys.is_empty() {
            return Ok(empty);
        }
        let compact = match i32::try_from(keys.len()) {
            Ok(_) => Self::build_compact(keys, params, threads, empty.clone())?,
            Err(_) => None,
        };
        match compact {
            Some(pgm) if pgm.slack == 0 && pgm.slack_rec == 0 => Ok(pgm),
            compact => {
                let wide = Self::build_wide(keys, params, empty)?;
                Ok(match compact {
                    Some(c) if c.slack + c.slack_rec <= wide.slack + wide.slack_rec => c,
                    _ => wide,
                })
            }
        }
    }

    fn build_compact(
        keys: &[u64],
        params: &PgmParams,
        threads: usize,
        mut pgm: Pgm,
    ) -> Result<Option<Pgm>> {
        let Some(bottom) = fit_bottom(keys, params.epsilon, threads)? else {
            return Ok(None);
        };
        pgm.slack = bottom.slack;
        let mut levels = vec![bottom.into_level(pgm.n)];
        while let Some(below) = levels
            .last()
            .filter(|l| l.len() > RECURSE_ABOVE && levels.len() < params.max_height as usize)
        {
            // Distinct keys: their points are `(key, position)`.
            let points = lower_bound_points(&below.keys);
            let Some(level) = fit_compact(points, params.epsilon_rec)? else {
                return Ok(None);
            };
            pgm.slack_rec = pgm.slack_rec.max(level.slack);
            let len = below.len() as u64;
            levels.push(level.into_level(len));
        }
        pgm.levels = Levels::Compact(levels);
        Ok(Some(pgm))
    }

    /// The wide form of `keys`' index, always (for tests of code that must work on both).
    #[cfg(test)]
    pub(crate) fn build_wide_form(keys: &[u64], params: &PgmParams) -> Result<Pgm> {
        let compact = Pgm::build(keys, params)?;
        let template = Pgm {
            levels: Levels::Compact(Vec::new()),
            slack: 0,
            slack_rec: 0,
            ..compact
        };
        if keys.is_empty() {
            return Ok(template);
        }
        Pgm::build_wide(keys, params, template)
    }

    fn build_wide(keys: &[u64], params: &PgmParams, mut pgm: Pgm) -> Result<Pgm> {
        let (bottom, slack) = fit_wide(lower_bound_points(keys), params.epsilon, true, pgm.n)?;
        pgm.slack = slack;
        let mut levels = vec![bottom];
        while let Some(below) = levels
            .last()
            .filter(|l| l.len() > RECURSE_ABOVE && levels.len() < params.max_height as usize)
        {
            let points = below.keys.iter().enumerate().map(|(j, &k)| (k, j as u64));
            let len = below.len() as u64;
            let (level, s) = fit_wide(points, params.epsilon_rec, false, len)?;
            pgm.slack_rec = pgm.slack_rec.max(s);
            levels.push(level);
        }
        pgm.levels = Levels::Wide(levels);
        Ok(pgm)
    }

    /// Number of levels (1 = flat).
    pub fn height(&self) -> usize {
        with_levels!(self, levels => levels.len())
    }

    /// The float slack of the bottom level and of the levels above, in whole positions
    /// (0 in practice; windows widen by it).
    pub fn slack(&self) -> (u64, u64) {
        (self.slack, self.slack_rec)
    }

    /// Segments per level, bottom first.
    pub fn segments_per_level(&self) -> Vec<usize> {
        with_levels!(self, levels => levels.iter().map(Level::len).collect())
    }

    /// How the segments are stored.
    pub fn form(&self) -> SegmentForm {
        match self.levels {
            Levels::Compact(_) => SegmentForm::Compact,
            Levels::Wide(_) => SegmentForm::Wide,
        }
    }

    /// Decodes a payload of index-file version `version` (1: always the wide form, with no
    /// form field; 2: either form).
    pub(crate) fn decode_version(bytes: &[u8], version: u32) -> Result<Pgm, FormatError> {
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
        let form = if version >= 2 { d.u32()? } else { 2 };
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
        let mut pgm = Pgm {
            params,
            n,
            min_key,
            max_key,
            slack,
            slack_rec,
            levels: Levels::Compact(Vec::new()),
        };
        pgm.levels = match form {
            1 if i32::try_from(n).is_ok() => {
                Levels::Compact(decode_levels(&mut d, &pgm, level_count)?)
            }
            2 => Levels::Wide(decode_levels(&mut d, &pgm, level_count)?),
            _ => {
                return Err(invalid(
                    "segment form",
                    form.into(),
                    "1 (compact, at most 2^31 - 1 keys) or 2 (wide)",
                ));
            }
        };
        d.finish()?;
        Ok(pgm)
    }
}

/// Decodes `count` levels of form `L` for `pgm` (whose header fields are set).
fn decode_levels<L: Line>(
    d: &mut Decoder<'_>,
    pgm: &Pgm,
    count: u64,
) -> Result<Vec<Level<L>>, FormatError> {
    let mut levels: Vec<Level<L>> = Vec::new();
    for _ in 0..count {
        let count = d.count(L::SEGMENT_BYTES)?;
        // Every level has segments, and fewer or as many as the level below.
        let len = levels.last().map_or(pgm.n, |l| l.len() as u64);
        if count == 0 || count as u64 > len {
            return Err(invalid(
                "segments in a level",
                count as u64,
                "1 ..= the count of the level below",
            ));
        }
        let reach = match levels.is_empty() {
            true => pgm.params.epsilon + pgm.slack,
            false => pgm.params.epsilon_rec + pgm.slack_rec,
        };
        let mut level = Level {
            keys: Vec::with_capacity(count),
            lines: Vec::with_capacity(count + 1),
        };
        for _ in 0..count {
            let (key, line) = L::decode(d)?;
            let ordered = level.keys.last().is_none_or(|&k| k < key);
            if !(ordered && line.valid(level.lines.last(), len, reach)) {
                return Err(invalid(
                    "segment",
                    key,
                    "increasing keys, starts in range, finite non-negative slopes",
                ));
            }
            level.keys.push(key);
            level.lines.push(line);
        }
        if level.keys.first() != Some(&pgm.min_key)
            || level.keys.last().is_some_and(|&k| k > pgm.max_key)
        {
            return Err(invalid(
                "first key of a level",
                level.keys.first().copied().unwrap_or(0),
                "the smallest key",
            ));
        }
        level.lines.push(L::sentinel(len));
        levels.push(level);
    }
    Ok(levels)
}

impl Pgm {
    /// The position the search's window is centred on: within ε plus the float slack of the
    /// key's lower bound; 0 at or below the smallest key, `n` above the largest. Not always
    /// non-decreasing in `key`: a segment may start up to ε above where the next one does.
    #[inline]
    pub fn predict(&self, key: u64) -> u64 {
        match self.locate(key) {
            Some((_, p)) => p,
            None if key > self.max_key && self.n > 0 => self.n,
            None => 0,
        }
    }

    /// For `min_key < key <= max_key`, the bottom segment that holds `key` and its
    /// prediction; `None` for other keys.
    #[inline]
    pub(crate) fn locate(&self, key: u64) -> Option<(usize, u64)> {
        if self.n == 0 || key <= self.min_key || key > self.max_key {
            return None;
        }
        Some(self.locate_inside(key))
    }

    /// Where the bottom segments' predictions start, each capping the one before (its first
    /// key's prediction in the compact form, its first position in the wide one), followed
    /// by `n`.
    pub(crate) fn segment_starts(&self) -> Vec<u64> {
        with_levels!(self, levels => levels.first().map_or_else(Vec::new, |bottom| {
            bottom.lines.iter().map(|l| l.cap(true)).collect()
        }))
    }

    /// [`locate`](Self::locate) for `min_key < key <= max_key`.
    #[inline]
    fn locate_inside(&self, key: u64) -> (usize, u64) {
        with_levels!(self, levels => match levels.as_slice() {
            // The flat index, kept small so that callers inline it.
            [bottom] => {
                let j = bottom.segment_for(key);
                (j, bottom.position(j, key, true))
            }
            _ => self.locate_through(levels, key),
        })
    }

    /// [`locate`](Self::locate) through the levels above the bottom one.
    #[inline(never)]
    fn locate_through<L: Line>(&self, levels: &[Level<L>], key: u64) -> (usize, u64) {
        let reach = self.params.epsilon_rec + self.slack_rec + 1;
        let j = bottom_segment(levels, key, reach);
        let p = levels
            .first()
            .map_or(0, |bottom| bottom.position(j, key, true));
        (j, p)
    }
}

/// The bottom-level segment for `key` (`min_key < key <= max_key`): binary search over the
/// top level, then down through each level within `reach` of its prediction.
#[inline]
fn bottom_segment<L: Line>(levels: &[Level<L>], key: u64, reach: u64) -> usize {
    let Some((top, lower)) = levels.split_last() else {
        return 0;
    };
    // The segment is within `reach` of the prediction: one of 2·reach + 1.
    let width = usize::try_from(2 * reach + 1).unwrap_or(usize::MAX);
    let mut j = top.segment_for(key);
    let mut above = top;
    for below in lower.iter().rev() {
        let p = above.position(j, key, false);
        let lo = usize::try_from(p.saturating_sub(reach)).unwrap_or(usize::MAX);
        j = below.segment_near(key, lo, width);
        above = below;
    }
    j
}

impl Index for Pgm {
    type Params = PgmParams;
    const KIND: IndexKind = IndexKind::Pgm;

    /// Builds on one thread; see [`Pgm::build_on`] for more.
    fn build(keys: &[u64], params: &PgmParams) -> Result<Pgm> {
        Pgm::build_on(keys, params, 1)
    }

    #[inline]
    fn search(&self, key: u64) -> Window {
        let n = self.n;
        if let Some(w) = edge_window(key, self.min_key, self.max_key, n) {
            return w;
        }
        model_window(
            self.locate_inside(key).1,
            self.params.epsilon + self.slack,
            n,
        )
    }

    /// Moves along the bottom level: `hint` is the partition point of "first key ≤ key"
    /// found last time.
    fn search_from(&self, key: u64, hint: &mut usize) -> Window {
        let n = self.n;
        if let Some(w) = edge_window(key, self.min_key, self.max_key, n) {
            return w;
        }
        let p = with_levels!(self, levels => {
            let Some(bottom) = levels.first() else {
                return Window { lo: 0, hi: n };
            };
            *hint = partition_from(&bottom.keys, *hint, |k| k <= key);
            bottom.position(hint.saturating_sub(1), key, true)
        });
        model_window(p, self.params.epsilon + self.slack, n)
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn size_in_bytes(&self) -> u64 {
        HEADER_BYTES + with_levels!(self, levels => levels_bytes(levels))
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
        e.u32(self.form() as u32);
        e.u64(self.n);
        e.u64(self.min_key);
        e.u64(self.max_key);
        e.u64(self.slack);
        e.u64(self.slack_rec);
        e.u64(self.height() as u64);
        with_levels!(self, levels => {
            for level in levels {
                e.u64(level.len() as u64);
                for (&key, line) in level.keys.iter().zip(&level.lines) {
                    line.encode(key, &mut e);
                }
            }
        });
    }

    fn decode(bytes: &[u8]) -> Result<Pgm, FormatError> {
        Pgm::decode_version(bytes, super::file::VERSION)
    }
}

/// Bytes the levels take in the payload: a count and the segments, per level.
fn levels_bytes<L: Line>(levels: &[Level<L>]) -> u64 {
    levels
        .iter()
        .map(|l| 8 + L::SEGMENT_BYTES * l.len() as u64)
        .sum()
}

/// Bytes of the payload's fixed fields.
const HEADER_BYTES: u64 = 8 * 8 + 4 + 4;

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::index::lower_bound;

    /// Every key, its neighbours, the edges of `u64` and `extra` give windows that hold the
    /// lower bound, no wider than stated.
    fn check_windows(pgm: &Pgm, keys: &[u64], extra: &[u64]) -> Result<(), TestCaseError> {
        let mut queries = vec![0, 1, u64::MAX - 1, u64::MAX];
        for &k in keys {
            queries.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]);
        }
        queries.extend_from_slice(extra);
        for &q in &queries {
            let lb = keys.partition_point(|&k| k < q) as u64;
            let w = pgm.search(q);
            prop_assert!(
                w.lo <= lb && lb <= w.hi && w.width() <= pgm.max_width(),
                "{:?} key {q}: {w:?}, lower bound {lb}",
                pgm.form()
            );
            let inside = &keys[w.lo as usize..w.hi as usize];
            prop_assert_eq!(w.lo + lower_bound(inside, q, |&k| k) as u64, lb);
            // The prediction the window is centred on, for learned partitioning.
            let p = pgm.predict(q);
            let reach = pgm.params.epsilon + pgm.slack;
            prop_assert!(
                p.saturating_sub(reach) <= lb && lb <= p + reach + 1,
                "predict({q}) = {p}, lower bound {lb}"
            );
        }
        Ok(())
    }

    /// Sorted keys where floats run out: dense runs and sparse steps near 2^53 and 2^64,
    /// duplicate runs, huge gaps, 0 and `u64::MAX`.
    fn hard_keys() -> impl Strategy<Value = Vec<u64>> {
        let base = prop_oneof![
            Just(0u64),
            Just(1u64 << 53),
            Just((1u64 << 53) - 100),
            Just(u64::MAX - 5000),
            Just(1u64 << 63),
            any::<u64>(),
        ];
        let piece = (base, 1u64..40, 1usize..600, 0usize..4).prop_map(|(base, step, len, dups)| {
            (0..len as u64)
                .flat_map(|i| {
                    std::iter::repeat_n(
                        base.saturating_add(i * step),
                        1 + dups * (i % 7 == 0) as usize,
                    )
                })
                .collect::<Vec<_>>()
        });
        let pieces = prop::collection::vec(
            prop_oneof![piece, prop::collection::vec(any::<u64>(), 0..300)],
            1..6,
        );
        (pieces, any::<bool>()).prop_map(|(pieces, extremes)| {
            let mut keys = pieces.concat();
            if extremes {
                keys.extend([0, u64::MAX]);
            }
            keys.sort_unstable();
            keys
        })
    }

    fn params(epsilon: u64, epsilon_rec: u64, max_height: u32) -> PgmParams {
        PgmParams {
            epsilon,
            epsilon_rec,
            max_height,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The compact form is exact where floats run out: it is chosen, its slack is 0, and
        /// its windows hold; on any number of threads.
        #[test]
        fn compact_segments_keep_the_guarantee(
            keys in hard_keys(),
            eps in prop_oneof![Just(1u64), Just(2), Just(16), Just(127)],
            threads in 1usize..5,
            extra in prop::collection::vec(any::<u64>(), 0..40),
        ) {
            let p = params(eps, 2, 4);
            let pgm = Pgm::build_on(&keys, &p, threads).unwrap();
            prop_assert_eq!(pgm.form(), SegmentForm::Compact);
            prop_assert_eq!(pgm.slack(), (0, 0));
            check_windows(&pgm, &keys, &extra)?;
            // Each cut costs at most one segment.
            let one = Pgm::build_on(&keys, &p, 1).unwrap();
            let bottom = |p: &Pgm| p.segments_per_level().first().copied().unwrap_or(0);
            let (many, single) = (bottom(&pgm), bottom(&one));
            prop_assert!(many < single + threads, "{many} segments on {threads} threads, {single} on one");
        }

        /// The wide form (format version 1's) keeps the guarantee too, and both forms survive
        /// encoding.
        #[test]
        fn both_forms_round_trip(keys in hard_keys(), extra in prop::collection::vec(any::<u64>(), 0..40)) {
            prop_assume!(!keys.is_empty());
            let p = params(4, 2, 3);
            let compact = Pgm::build(&keys, &p).unwrap();
            let wide = Pgm::build_wide_form(&keys, &p).unwrap();
            prop_assert_eq!(wide.form(), SegmentForm::Wide);
            check_windows(&wide, &keys, &extra)?;
            for pgm in [compact, wide] {
                let mut bytes = Vec::new();
                pgm.encode(&mut bytes);
                prop_assert_eq!(bytes.len() as u64, pgm.size_in_bytes());
                prop_assert_eq!(Pgm::decode(&bytes).unwrap(), pgm);
            }
        }
    }

    #[test]
    fn compact_segments_take_16_bytes() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut keys: Vec<u64> = (0..100_000).map(|_| rng.random()).collect();
        keys.sort_unstable();
        let pgm = Pgm::build(&keys, &params(8, 4, 1)).unwrap();
        let segments = pgm.segments_per_level()[0] as u64;
        assert!(segments > 10, "{segments} segments");
        assert_eq!(pgm.size_in_bytes(), HEADER_BYTES + 8 + 16 * segments);
    }
}
