//! Any index built over every k-th key (paper 1, section 4.2, "constructing learned
//! indexes using sampling"): the inner index sees `n / k` keys, so it builds about k times
//! faster and smaller, and its windows, found among the samples, map back to the full table.
//! Paper 1 uses a PGM over every 128th key at ε′ = 2.
//!
//! If the inner window over the samples `s_j = keys[j k]` holds their lower bound `j`, then
//! `keys[(j - 1) k] < key <= keys[j k]`, so the table's lower bound lies in
//! `(j - 1) k + 1 ..= min(j k, n)`. A sample window `lo_s..hi_s` therefore maps to
//! `(lo_s - 1) k + 1 ..= min(hi_s k, n)` (`0` when `lo_s = 0`): at most
//! `k (width_s + 1) - 1` positions.
#![deny(clippy::indexing_slicing)]

use std::fmt;

use super::{Index, IndexKind, Pgm, PgmParams, Window, sorted_sample};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::{FormatError, Result};

/// Parameters of a sampled index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampledParams<P> {
    /// Keep every k-th key (at least 1).
    pub every: u64,
    /// Parameters of the index over the samples.
    pub inner: P,
}

impl Default for SampledParams<PgmParams> {
    /// k = 64, ε′ = 1, flat: windows of at most 255 positions, the 256-position setting.
    fn default() -> Self {
        Self {
            every: 64,
            inner: PgmParams {
                epsilon: 1,
                epsilon_rec: 4,
                max_height: 1,
            },
        }
    }
}

impl<P: fmt::Display> fmt::Display for SampledParams<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "every={} {}", self.every, self.inner)
    }
}

/// An index over every k-th key of a sorted array.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampled<I> {
    every: u64,
    n: u64,
    inner: I,
}

impl<I> Sampled<I> {
    /// The index over the samples.
    pub fn inner(&self) -> &I {
        &self.inner
    }

    /// Maps a window over the samples to the table (see the module doc).
    fn full_window(&self, w: Window) -> Window {
        let k = self.every;
        Window {
            lo: match w.lo {
                0 => 0,
                lo => (lo - 1).saturating_mul(k).saturating_add(1).min(self.n),
            },
            hi: w.hi.saturating_mul(k).min(self.n),
        }
    }
}

impl Index for Sampled<Pgm> {
    type Params = SampledParams<PgmParams>;
    const KIND: IndexKind = IndexKind::SampledPgm;

    fn build(keys: &[u64], params: &Self::Params) -> Result<Self> {
        Self::build_on(keys, params, 1)
    }

    #[inline]
    fn search(&self, key: u64) -> Window {
        self.full_window(self.inner.search(key))
    }

    /// Moves along the inner index's lowest level (its cursor over the samples).
    fn search_from(&self, key: u64, hint: &mut usize) -> Window {
        self.full_window(self.inner.search_from(key, hint))
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn size_in_bytes(&self) -> u64 {
        16 + self.inner.size_in_bytes()
    }

    fn max_width(&self) -> u64 {
        (self.inner.max_width() + 1)
            .saturating_mul(self.every)
            .saturating_sub(1)
            .min(self.n)
    }

    /// Every (width / 4)-th key at the default ε′ = 1: windows of at most
    /// `4 k - 1 < width` positions. Needs `width >= 4`.
    fn params_for_width(width: u64) -> Option<Self::Params> {
        (width >= 4).then(|| SampledParams {
            every: width / 4,
            ..SampledParams::default()
        })
    }

    fn params(&self) -> Self::Params {
        SampledParams {
            every: self.every,
            inner: self.inner.params(),
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u64(self.every);
        e.u64(self.n);
        self.inner.encode(out);
    }

    fn decode(bytes: &[u8]) -> Result<Self, FormatError> {
        Self::decode_version(bytes, super::file::VERSION)
    }
}

impl Sampled<Pgm> {
    /// [`Index::build`] with the PGM over the samples built on up to `threads` threads
    /// ([`Pgm::build_on`]).
    pub fn build_on(
        keys: &[u64],
        params: &SampledParams<PgmParams>,
        threads: usize,
    ) -> Result<Self> {
        let samples = sorted_sample(keys, params.every)?;
        Ok(Sampled {
            every: params.every,
            n: keys.len() as u64,
            inner: Pgm::build_on(&samples, &params.inner, threads)?,
        })
    }

    /// Decodes a payload of index-file version `version` (see [`Pgm`]'s).
    pub(crate) fn decode_version(bytes: &[u8], version: u32) -> Result<Self, FormatError> {
        let (head, rest) = bytes.split_at_checked(16).ok_or(FormatError::Truncated {
            what: "a sampled index",
            expected: 16,
            actual: bytes.len() as u64,
        })?;
        let mut d = Decoder::new(head, "a sampled index");
        let (every, n) = (d.u64()?, d.u64()?);
        let inner = Pgm::decode_version(rest, version)?;
        if every == 0 || n.div_ceil(every) != inner.len() {
            return Err(invalid(
                "sampling step",
                every,
                "at least 1, with n / every samples indexed",
            ));
        }
        Ok(Sampled { every, n, inner })
    }
}
