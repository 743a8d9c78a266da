//! One index contract, many kinds (paper 1, sections 2.2, 4.2 and 5.2).
//!
//! Every index answers [`Index::search`] with a [`Window`] of positions guaranteed to hold
//! the key's lower bound; the last-mile search ([`lower_bound`]) finishes inside it. Joins
//! take any index through this trait; [`AnyIndex`] (tagged by [`IndexKind`]) serves the
//! command line and [`load`](file::load).
//!
//! # The window convention
//!
//! For sorted keys `keys[0..n]` and a query `key`, let `lb = lower_bound(key)`, the first
//! position `p` with `keys[p] >= key` (`n` when there is none; the first of a run of equal
//! keys). Every index returns `Window { lo, hi }` with `lo <= lb <= hi <= n`. Only positions
//! `lo..hi` (half-open) need to be read: if none of them holds a key `>= key`, the answer
//! is `hi`. The width is `hi - lo`; each kind states the most it returns
//! ([`Index::max_width`]), and how its parameters set it:
//!
//! | kind          | parameters        | width at most                          | 256-position setting |
//! |---------------|-------------------|----------------------------------------|----------------------|
//! | `btree`       | every k-th key    | `k`, block-aligned                     | k = 256 (one block)  |
//! | `pgm`         | ε                 | `2ε + 1 + 2s`                          | ε = 127              |
//! | `sampled-pgm` | every k-th key, ε′| `k (2ε′ + 2 + 2s) - 1`                 | k = 64, ε′ = 1       |
//! | `rs`          | ε, radix bits     | `2ε + 1 + 2s`                          | ε = 127              |
//! | `rmi`         | root, branching b, hybrid w | per leaf `2e + 1` (e measured), or `w` | w = 256 (hybrid) |
//! | `binary`      | none              | `n`                                    | none                 |
//!
//! `s` is the index's float slack: the whole positions by which rounding the model's lines
//! to `f64` can miss, measured on every key at build time (0 in practice; see
//! [`pgm`]). A ±ε model's windows are about 2ε wide, so ε = 256 is not the 256 setting.

pub mod binary;
pub mod btree;
pub mod file;
pub mod measure;
pub mod pgm;
pub mod radix_spline;
pub mod rmi;
pub mod sampled;
pub mod tune;

use std::fmt;

pub use crate::last_mile::{lower_bound, lower_bound_prefetching};
pub use binary::Binary;
pub use btree::{BTree, BTreeParams};
pub use pgm::{Pgm, PgmParams, SegmentForm};
pub use radix_spline::{RadixSpline, RadixSplineParams};
pub use rmi::{Rmi, RmiParams, RootKind};
pub use sampled::{Sampled, SampledParams};

use crate::{Error, FormatError, Result};

/// The positions `lo..hi` that hold a key's lower bound (`lo <= lower_bound <= hi <= n`);
/// see the module documentation for the full contract.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// First position that may hold the lower bound.
    pub lo: u64,
    /// One past the last position to read; also the answer when none of `lo..hi` holds a key
    /// at least the query.
    pub hi: u64,
}

impl Window {
    /// `hi - lo`.
    pub fn width(&self) -> u64 {
        self.hi - self.lo
    }
}

/// A learned or classic index over a sorted array of `u64` keys.
///
/// Built once from the keys (validated in `build`, so `search` never fails or allocates),
/// queried many times, saved and loaded through [`file`](mod@file).
pub trait Index: Sized {
    /// The kind's parameters.
    type Params: Clone + fmt::Debug;

    /// The kind tag stored in index files.
    const KIND: IndexKind;

    /// Builds the index over `keys`, which must be sorted (duplicates allowed).
    fn build(keys: &[u64], params: &Self::Params) -> Result<Self>;

    /// The window holding `key`'s lower bound.
    fn search(&self, key: u64) -> Window;

    /// [`search`](Self::search) again, moving along the lowest level from where the last
    /// search with the same `hint` ended instead of starting from the root (paper 1,
    /// section 3.1, optimization 1: join keys ascend). Start a run with `hint = 0`. Any key,
    /// ascending or not, gets exactly [`search`](Self::search)'s window; ascending keys get it
    /// faster from kinds with a lowest level to move along (PGM, RadixSpline, B+tree).
    fn search_from(&self, key: u64, hint: &mut usize) -> Window {
        let _ = hint;
        self.search(key)
    }

    /// Number of keys indexed (`n`).
    fn len(&self) -> u64;

    /// True when no keys are indexed.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the index occupies in memory; equal to its encoded payload's length.
    fn size_in_bytes(&self) -> u64;

    /// The largest width [`search`](Self::search) returns.
    fn max_width(&self) -> u64;

    /// The parameters it was built with.
    fn params(&self) -> Self::Params;

    /// The kind's setting whose windows are at most `width` positions wide (its row of the
    /// table in the module documentation), so kinds can be compared at equal widths; `None`
    /// where the kind has no such setting (binary search) or `width` is too small for one.
    fn params_for_width(width: u64) -> Option<Self::Params> {
        let _ = width;
        None
    }

    /// Appends the index's payload (little-endian, see `docs/FORMAT.md`) to `out`.
    fn encode(&self, out: &mut Vec<u8>);

    /// Decodes a payload written by [`encode`](Self::encode), checking every length and
    /// invariant before trusting it.
    fn decode(bytes: &[u8]) -> Result<Self, FormatError>;
}

/// The kinds of index, with their tag byte in index files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// PGM-index, flat or recursive.
    Pgm = 1,
    /// PGM-index over every k-th key.
    SampledPgm = 2,
    /// RadixSpline.
    RadixSpline = 3,
    /// Two-layer recursive model index.
    Rmi = 4,
    /// Bulk-loaded B+tree over every k-th key.
    BTree = 5,
    /// No model: binary search over the whole table.
    Binary = 6,
}

crate::names::name_table!(IndexKind, "index kind", [
    Pgm => "pgm",
    SampledPgm => "sampled-pgm",
    RadixSpline => "rs",
    Rmi => "rmi",
    BTree => "btree",
    Binary => "binary",
]);

impl IndexKind {
    /// The kind with tag byte `tag`.
    pub fn from_tag(tag: u8) -> Option<IndexKind> {
        IndexKind::ALL.into_iter().find(|k| *k as u8 == tag)
    }
}

/// Any index, for the command line and for loading files of unknown kind. Hot loops should
/// be generic over [`Index`] instead of matching per key.
#[derive(Clone, Debug)]
pub enum AnyIndex {
    /// See [`Pgm`].
    Pgm(Pgm),
    /// See [`Sampled`].
    SampledPgm(Sampled<Pgm>),
    /// See [`RadixSpline`].
    RadixSpline(RadixSpline),
    /// See [`Rmi`].
    Rmi(Rmi),
    /// See [`BTree`].
    BTree(BTree),
    /// See [`Binary`].
    Binary(Binary),
}

/// Parameters of any kind, for building an [`AnyIndex`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AnyParams {
    /// See [`PgmParams`].
    Pgm(PgmParams),
    /// See [`SampledParams`].
    SampledPgm(SampledParams<PgmParams>),
    /// See [`RadixSplineParams`].
    RadixSpline(RadixSplineParams),
    /// See [`RmiParams`].
    Rmi(RmiParams),
    /// See [`BTreeParams`].
    BTree(BTreeParams),
    /// No parameters.
    Binary,
}

impl AnyParams {
    /// The default parameters of `kind`: the 256-position setting, except for RMI, which is
    /// plain by default as in paper 1 (`max_window = 256` makes it the hybrid 256 setting).
    pub fn default_for(kind: IndexKind) -> AnyParams {
        match kind {
            IndexKind::Pgm => AnyParams::Pgm(PgmParams::default()),
            IndexKind::SampledPgm => AnyParams::SampledPgm(SampledParams::default()),
            IndexKind::RadixSpline => AnyParams::RadixSpline(RadixSplineParams::default()),
            IndexKind::Rmi => AnyParams::Rmi(RmiParams::default()),
            IndexKind::BTree => AnyParams::BTree(BTreeParams::default()),
            IndexKind::Binary => AnyParams::Binary,
        }
    }

    /// The setting of `kind` whose windows are at most `width` positions wide
    /// ([`Index::params_for_width`]), where the kind has one.
    pub fn for_width(kind: IndexKind, width: u64) -> Option<AnyParams> {
        match kind {
            IndexKind::Pgm => Pgm::params_for_width(width).map(AnyParams::Pgm),
            IndexKind::SampledPgm => {
                Sampled::<Pgm>::params_for_width(width).map(AnyParams::SampledPgm)
            }
            IndexKind::RadixSpline => {
                RadixSpline::params_for_width(width).map(AnyParams::RadixSpline)
            }
            IndexKind::Rmi => Rmi::params_for_width(width).map(AnyParams::Rmi),
            IndexKind::BTree => BTree::params_for_width(width).map(AnyParams::BTree),
            IndexKind::Binary => None,
        }
    }
}

impl AnyParams {
    /// Every parameter some kind takes, by the name [`set`](Self::set) knows it by.
    pub const NAMES: [&'static str; 8] = [
        "epsilon",
        "epsilon_rec",
        "max_height",
        "every",
        "radix_bits",
        "root",
        "branching",
        "max_window",
    ];

    /// The parameters `kind` takes, of [`NAMES`](Self::NAMES).
    pub fn names(kind: IndexKind) -> &'static [&'static str] {
        match kind {
            IndexKind::Pgm => &["epsilon", "epsilon_rec", "max_height"],
            IndexKind::SampledPgm => &["every", "epsilon", "epsilon_rec", "max_height"],
            IndexKind::RadixSpline => &["epsilon", "radix_bits"],
            IndexKind::Rmi => &["root", "branching", "max_window"],
            IndexKind::BTree => &["every"],
            IndexKind::Binary => &[],
        }
    }

    /// Sets the parameter `name` to `value`, given as text (a number, or for `root` a model
    /// name). Fails with [`Error::InvalidParam`] where the kind does not take `name` or the
    /// text does not parse; whether the value makes sense is checked at build.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        fn parse<T: std::str::FromStr>(name: &'static str, value: &str) -> Result<T>
        where
            T::Err: fmt::Display,
        {
            value.trim().parse().map_err(|e| Error::InvalidParam {
                name,
                reason: format!("{value:?}: {e}"),
            })
        }
        let kind = self.kind();
        let Some(&name) = Self::names(kind).iter().find(|n| **n == name) else {
            let known = Self::NAMES.iter().find(|n| **n == name);
            return Err(Error::InvalidParam {
                name: known.copied().unwrap_or("parameter"),
                reason: format!(
                    "{kind} takes no {name}; it takes {}",
                    match Self::names(kind) {
                        [] => "none".to_string(),
                        names => names.join(", "),
                    }
                ),
            });
        };
        match (self, name) {
            (
                AnyParams::Pgm(p) | AnyParams::SampledPgm(SampledParams { inner: p, .. }),
                "epsilon",
            ) => p.epsilon = parse(name, value)?,
            (
                AnyParams::Pgm(p) | AnyParams::SampledPgm(SampledParams { inner: p, .. }),
                "epsilon_rec",
            ) => p.epsilon_rec = parse(name, value)?,
            (
                AnyParams::Pgm(p) | AnyParams::SampledPgm(SampledParams { inner: p, .. }),
                "max_height",
            ) => p.max_height = parse(name, value)?,
            (AnyParams::SampledPgm(p), "every") => p.every = parse(name, value)?,
            (AnyParams::BTree(p), "every") => p.every = parse(name, value)?,
            (AnyParams::RadixSpline(p), "epsilon") => p.epsilon = parse(name, value)?,
            (AnyParams::RadixSpline(p), "radix_bits") => p.radix_bits = parse(name, value)?,
            (AnyParams::Rmi(p), "root") => p.root = parse(name, value)?,
            (AnyParams::Rmi(p), "branching") => p.branching = parse(name, value)?,
            (AnyParams::Rmi(p), "max_window") => p.max_window = parse(name, value)?,
            (params, _) => {
                return Err(Error::Internal {
                    problem: format!("{name} is listed for {} but not set", params.kind()),
                });
            }
        }
        Ok(())
    }

    /// The kind these parameters build.
    pub fn kind(&self) -> IndexKind {
        match self {
            AnyParams::Pgm(_) => IndexKind::Pgm,
            AnyParams::SampledPgm(_) => IndexKind::SampledPgm,
            AnyParams::RadixSpline(_) => IndexKind::RadixSpline,
            AnyParams::Rmi(_) => IndexKind::Rmi,
            AnyParams::BTree(_) => IndexKind::BTree,
            AnyParams::Binary => IndexKind::Binary,
        }
    }
}

impl fmt::Display for AnyParams {
    /// The parameters as `name=value` pairs (`every=256`), or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyParams::Pgm(p) => p.fmt(f),
            AnyParams::SampledPgm(p) => p.fmt(f),
            AnyParams::RadixSpline(p) => p.fmt(f),
            AnyParams::Rmi(p) => p.fmt(f),
            AnyParams::BTree(p) => p.fmt(f),
            AnyParams::Binary => f.write_str("none"),
        }
    }
}

/// Calls `$body` with `$i` bound to the inner index, whatever its kind.
macro_rules! with_index {
    ($any:expr, $i:ident => $body:expr) => {
        match $any {
            AnyIndex::Pgm($i) => $body,
            AnyIndex::SampledPgm($i) => $body,
            AnyIndex::RadixSpline($i) => $body,
            AnyIndex::Rmi($i) => $body,
            AnyIndex::BTree($i) => $body,
            AnyIndex::Binary($i) => $body,
        }
    };
}
pub(crate) use with_index;

impl AnyIndex {
    /// The kind.
    pub fn kind(&self) -> IndexKind {
        match self {
            AnyIndex::Pgm(_) => IndexKind::Pgm,
            AnyIndex::SampledPgm(_) => IndexKind::SampledPgm,
            AnyIndex::RadixSpline(_) => IndexKind::RadixSpline,
            AnyIndex::Rmi(_) => IndexKind::Rmi,
            AnyIndex::BTree(_) => IndexKind::BTree,
            AnyIndex::Binary(_) => IndexKind::Binary,
        }
    }

    /// See [`Index::search`].
    pub fn search(&self, key: u64) -> Window {
        with_index!(self, i => i.search(key))
    }

    /// See [`Index::len`].
    pub fn len(&self) -> u64 {
        with_index!(self, i => i.len())
    }

    /// See [`Index::is_empty`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// See [`Index::size_in_bytes`].
    pub fn size_in_bytes(&self) -> u64 {
        with_index!(self, i => i.size_in_bytes())
    }

    /// See [`Index::search_from`].
    pub fn search_from(&self, key: u64, hint: &mut usize) -> Window {
        with_index!(self, i => i.search_from(key, hint))
    }

    /// See [`Index::max_width`].
    pub fn max_width(&self) -> u64 {
        with_index!(self, i => i.max_width())
    }

    /// The parameters it was built with.
    pub fn params(&self) -> AnyParams {
        match self {
            AnyIndex::Pgm(i) => AnyParams::Pgm(i.params()),
            AnyIndex::SampledPgm(i) => AnyParams::SampledPgm(i.params()),
            AnyIndex::RadixSpline(i) => AnyParams::RadixSpline(i.params()),
            AnyIndex::Rmi(i) => AnyParams::Rmi(i.params()),
            AnyIndex::BTree(i) => AnyParams::BTree(i.params()),
            AnyIndex::Binary(_) => AnyParams::Binary,
        }
    }

    /// The PGM-index of a `pgm` or `sampled-pgm` index (the one over the samples);
    /// `None` for other kinds.
    pub fn as_pgm(&self) -> Option<&Pgm> {
        match self {
            AnyIndex::Pgm(p) => Some(p),
            AnyIndex::SampledPgm(s) => Some(s.inner()),
            _ => None,
        }
    }

    /// Segments in the bottom level of a PGM-index (sampled or not); `None` for other kinds.
    pub fn pgm_segments(&self) -> Option<usize> {
        self.as_pgm()
            .map(|p| p.segments_per_level().first().copied().unwrap_or(0))
    }

    /// The parameters, as text (`eps=127 eps_rec=4 max_height=8`).
    pub fn describe(&self) -> String {
        self.params().to_string()
    }

    /// See [`Index::encode`].
    pub fn encode(&self, out: &mut Vec<u8>) {
        with_index!(self, i => i.encode(out))
    }

    /// Builds an index of the kind `params` names over sorted `keys`.
    pub fn build(keys: &[u64], params: &AnyParams) -> Result<AnyIndex> {
        Self::build_on(keys, params, 1)
    }

    /// [`build`](Self::build) on up to `threads` threads where the kind builds in parallel
    /// (PGM and sampled PGM: [`Pgm::build_on`]); the other kinds build on one.
    pub fn build_on(keys: &[u64], params: &AnyParams, threads: usize) -> Result<AnyIndex> {
        Ok(match params {
            AnyParams::Pgm(p) => AnyIndex::Pgm(Pgm::build_on(keys, p, threads)?),
            AnyParams::SampledPgm(p) => AnyIndex::SampledPgm(Sampled::build_on(keys, p, threads)?),
            AnyParams::RadixSpline(p) => AnyIndex::RadixSpline(RadixSpline::build(keys, p)?),
            AnyParams::Rmi(p) => AnyIndex::Rmi(Rmi::build(keys, p)?),
            AnyParams::BTree(p) => AnyIndex::BTree(BTree::build(keys, p)?),
            AnyParams::Binary => AnyIndex::Binary(Binary::build(keys, &())?),
        })
    }

    /// Decodes a payload of `kind` written by this version of lidx.
    pub fn decode(kind: IndexKind, bytes: &[u8]) -> Result<AnyIndex, FormatError> {
        Self::decode_version(kind, bytes, file::VERSION)
    }

    /// Decodes a payload of `kind` from an index file of format version `version` (PGM
    /// payloads changed in version 2; the other kinds' did not).
    pub(crate) fn decode_version(
        kind: IndexKind,
        bytes: &[u8],
        version: u32,
    ) -> Result<AnyIndex, FormatError> {
        Ok(match kind {
            IndexKind::Pgm => AnyIndex::Pgm(Pgm::decode_version(bytes, version)?),
            IndexKind::SampledPgm => AnyIndex::SampledPgm(Sampled::decode_version(bytes, version)?),
            IndexKind::RadixSpline => AnyIndex::RadixSpline(RadixSpline::decode(bytes)?),
            IndexKind::Rmi => AnyIndex::Rmi(Rmi::decode(bytes)?),
            IndexKind::BTree => AnyIndex::BTree(BTree::decode(bytes)?),
            IndexKind::Binary => AnyIndex::Binary(Binary::decode(bytes)?),
        })
    }
}

/// The lower-bound points of sorted `keys`: each distinct key with its first position, and
/// after a run of duplicates followed by a gap, the key after the run's with the position
/// after the run.
pub(crate) fn lower_bound_points(keys: &[u64]) -> LowerBoundPoints<'_> {
    LowerBoundPoints::range(keys, 0, keys.len())
}

/// The iterator of [`lower_bound_points`], over the runs of equal keys that start in a range
/// of positions. Copying it saves where it stands (a few words), so a build can come back to
/// a segment's first point.
#[derive(Clone, Debug)]
pub(crate) struct LowerBoundPoints<'a> {
    keys: &'a [u64],
    next: usize,
    end: usize,
    pending: Option<(u64, u64)>,
    /// Points returned so far that are not `(keys[p], p)` for a key `keys[p]` that occurs
    /// once: first keys of duplicate runs and the points after them. Where it does not
    /// change over a run of points, those points are exactly a slice of the keys with their
    /// positions.
    pub(crate) irregular: u64,
}

impl LowerBoundPoints<'_> {
    /// The keys the points come from.
    pub(crate) fn keys(&self) -> &[u64] {
        self.keys
    }
}

impl<'a> LowerBoundPoints<'a> {
    /// The points of the runs that start in `start..end`; `start` and `end` must each be 0,
    /// `keys.len()` or the start of a run (no run crosses them).
    pub(crate) fn range(keys: &'a [u64], start: usize, end: usize) -> Self {
        Self {
            keys,
            next: start,
            end: end.min(keys.len()),
            pending: None,
            irregular: 0,
        }
    }
}

impl Iterator for LowerBoundPoints<'_> {
    type Item = (u64, u64);

    #[inline]
    fn next(&mut self) -> Option<(u64, u64)> {
        if let Some(p) = self.pending.take() {
            self.irregular += 1;
            return Some(p);
        }
        if self.next >= self.end {
            return None;
        }
        let start = self.next;
        let k = *self.keys.get(start)?;
        let mut i = start + 1;
        // Distinct keys, the common case, cost one comparison.
        while self.keys.get(i) == Some(&k) {
            i += 1;
        }
        self.next = i;
        if i - start > 1 {
            self.irregular += 1;
            if let Some(&after) = self.keys.get(i)
                && k + 1 < after
            {
                self.pending = Some((k + 1, i as u64));
            }
        }
        Some((k, start as u64))
    }
}

/// The first position at or after `at` that starts a run of equal keys (`keys.len()` when
/// none does): where a chunk of a parallel build may begin.
pub(crate) fn run_start_from(keys: &[u64], at: usize) -> usize {
    let mut i = at.min(keys.len());
    while i > 0 && i < keys.len() && keys[i - 1] == keys[i] {
        i += 1;
    }
    i
}

/// The window of a model that predicted position `p` within `reach` positions below and
/// `reach + 1` above (the `+ 1` covers absent keys just past a key): `p - reach ..= p +
/// reach + 1`, clipped to `0..=n`. Shared by PGM and RadixSpline.
#[inline]
pub(crate) fn model_window(p: u64, reach: u64, n: u64) -> Window {
    Window {
        lo: p.saturating_sub(reach),
        hi: p.saturating_add(reach + 1).min(n),
    }
}

/// The window of keys no model needs: at or below the smallest key the lower bound is 0,
/// above the largest it is `n` (and an empty index answers 0).
#[inline]
pub(crate) fn edge_window(key: u64, min_key: u64, max_key: u64, n: u64) -> Option<Window> {
    if n == 0 || key <= min_key {
        Some(Window { lo: 0, hi: 0 })
    } else if key > max_key {
        Some(Window { lo: n, hi: n })
    } else {
        None
    }
}

/// How many whole positions beyond `epsilon` the prediction `p` misses `y` by (0 when
/// within): the float slack a build measures on every point.
pub(crate) fn miss(p: u64, y: u64, epsilon: u64) -> u64 {
    p.saturating_sub(epsilon)
        .saturating_sub(y)
        .max(y.saturating_sub(p).saturating_sub(epsilon))
}

/// Checks the common build inputs: sorted keys, at most 2^60 of them, and (where given) an
/// error bound in 1 ..= 2^59. Returns the smallest and largest key (0, 0 when empty).
pub(crate) fn check_build(keys: &[u64], epsilons: &[(&'static str, u64)]) -> Result<(u64, u64)> {
    check_sorted(keys)?;
    for &(name, eps) in epsilons {
        if eps == 0 || eps > crate::pla::MAX_EPSILON {
            return Err(Error::param(name, format!("{eps} is not in 1 ..= 2^59")));
        }
    }
    if keys.len() as u64 > crate::pla::MAX_Y {
        return Err(Error::param("keys", "more than 2^60 keys"));
    }
    Ok((
        keys.first().copied().unwrap_or(0),
        keys.last().copied().unwrap_or(0),
    ))
}

/// Every `every`-th key of `keys`, the first included, after checking that the keys are
/// sorted and the step is at least 1: the start of every build over a sample of the keys
/// (the B+tree's separators, a sampled index's samples).
pub(crate) fn sorted_sample(keys: &[u64], every: u64) -> Result<Vec<u64>> {
    check_sorted(keys)?;
    if every == 0 {
        return Err(Error::param("sampling step", "must be at least 1"));
    }
    crate::data::sample::every_kth(keys, usize::try_from(every).unwrap_or(usize::MAX))
}

/// Fails unless `keys` is sorted; every `build` calls it first.
pub(crate) fn check_sorted(keys: &[u64]) -> Result<()> {
    match crate::data::first_unsorted(keys) {
        None => Ok(()),
        Some(i) => Err(Error::param(
            "keys",
            format!(
                "an index needs sorted keys, but position {i} holds {} after {}",
                keys[i],
                keys[i - 1]
            ),
        )),
    }
}

/// The partition point of `pred` over `items` (the first index where it fails), given that
/// it holds on `items[..from]`: an exponential search forward from `from`, so an answer `d`
/// places away costs about `2 log2 d` comparisons. Falls back to a full binary search when
/// `pred` fails just before `from` (the hint is stale).
#[inline]
pub(crate) fn partition_from(items: &[u64], from: usize, pred: impl Fn(u64) -> bool) -> usize {
    let from = from.min(items.len());
    if from > 0 && !items.get(from - 1).is_some_and(|&x| pred(x)) {
        return items.partition_point(|&x| pred(x));
    }
    let mut lo = from;
    let mut step = 1usize;
    while items.get(lo + step - 1).is_some_and(|&x| pred(x)) {
        lo += step;
        step *= 2;
    }
    let end = (lo + step - 1).min(items.len());
    lo + items
        .get(lo..end)
        .unwrap_or_default()
        .partition_point(|&x| pred(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name a kind lists can be set, and changes what is built; a name the kind does
    /// not take, an unknown name and text that does not parse are refused, naming the name.
    #[test]
    fn params_set_by_name() {
        for kind in IndexKind::ALL {
            for &name in AnyParams::names(kind) {
                assert!(AnyParams::NAMES.contains(&name));
                let mut p = AnyParams::default_for(kind);
                let value = if name == "root" { "cubic" } else { "3" };
                p.set(name, value).expect("a listed parameter");
                assert_ne!(p, AnyParams::default_for(kind), "{kind} {name}");
                assert_eq!(p.kind(), kind);
                let err = p.set(name, "many").expect_err("not a value").to_string();
                assert!(err.starts_with(&format!("invalid {name}: ")), "{err}");
            }
            for &name in AnyParams::NAMES
                .iter()
                .filter(|n| !AnyParams::names(kind).contains(n))
            {
                let err = AnyParams::default_for(kind)
                    .set(name, "3")
                    .expect_err("a parameter the kind does not take")
                    .to_string();
                assert!(err.contains(&format!("{kind} takes no {name}")), "{err}");
            }
        }
        let mut p = AnyParams::default_for(IndexKind::SampledPgm);
        p.set("every", "16").expect("every");
        p.set("epsilon", " 4 ").expect("epsilon");
        assert_eq!(
            p,
            AnyParams::SampledPgm(SampledParams {
                every: 16,
                inner: PgmParams {
                    epsilon: 4,
                    ..PgmParams::default()
                }
            })
        );
        let err = p
            .set("colour", "3")
            .expect_err("no such parameter")
            .to_string();
        assert!(
            err.contains("sampled-pgm takes no colour; it takes every, epsilon"),
            "{err}"
        );
        let err = AnyParams::Binary
            .set("every", "3")
            .expect_err("binary")
            .to_string();
        assert!(
            err.contains("binary takes no every; it takes none"),
            "{err}"
        );
    }
}
