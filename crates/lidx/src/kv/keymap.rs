//! Byte-string keys as integers, for a model to learn (paper 4, section 4, "Model
//! Structure"): the leading characters are the leading digits, and each character position
//! has a base of its own, the range of bytes the trained keys hold there, so that a
//! position all keys agree on costs nothing and a position with ten digits in use costs a
//! factor of ten rather than 256.
//!
//! How lidx defines what the paper leaves open:
//! - **Common prefix.** The bytes every trained key starts with are dropped; a key that
//!   departs from them maps below or above every trained key.
//! - **Keys of different lengths.** A position at which some trained key has already ended
//!   gets one digit more than its range: 0 for "the key has ended", so `"ab"` maps below
//!   `"ab\0"`, as byte order has it. Positions every trained key reaches have none: keys of
//!   one length (fixed-width integers as strings) then map onto their numeric value, with no
//!   digit left unused, as the paper's base of largest − smallest character has it.
//! - **Bytes outside a position's range** (keys that were not trained on): below the range,
//!   the key maps as if it ended there (at a position without an "ended" digit, as the
//!   smallest byte followed by the smallest digits, a tie); above it, as if every byte from there on were the
//!   largest seen. Both keep the mapping monotone.
//! - **How many positions.** Positions are taken while the product of their bases stays at
//!   most 2^53, so every mapped key is an exact `f64` and the least-squares fit sees no
//!   rounding; bytes past the last position are ignored, so keys that differ only there
//!   map to the same integer (a tie: they share a block).
//!
//! The contract: for any byte strings `a <= b` (trained or not), `map(a) <= map(b) <
//! span()`; trained keys whose first difference lies within the positions taken map apart.
#![deny(clippy::indexing_slicing)]

use crate::FormatError;
use crate::files::codec::{Decoder, Encoder, invalid};

/// The most distinct integers a map produces: 2^53, the integers an `f64` holds exactly.
pub const MAX_SPAN: u64 = 1 << 53;

/// The mixed-radix mapping of byte-string keys to integers, trained on a key set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyMap {
    /// The bytes every trained key starts with.
    prefix: Vec<u8>,
    /// Per position after the prefix: the smallest byte trained keys hold there.
    mins: Vec<u8>,
    /// Per position: its base, the digits in use (one per byte value from the smallest to
    /// the largest seen, and one more, 0, for "ended" where `ends` says).
    bases: Vec<u64>,
    /// Per position: whether some trained key ended before it (its digit 0 is "ended").
    ends: Vec<bool>,
    /// Per position: the product of the bases after it.
    weights: Vec<u64>,
    /// The four above, per position in one record (what [`map`](Self::map) reads on
    /// every lookup, side by side).
    digits: Vec<Digit>,
}

/// One position of the mapping, as [`KeyMap::map`] uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Digit {
    /// The smallest byte trained keys hold here.
    lo: u64,
    /// 1 where digit 0 is "ended", else 0.
    ended: u64,
    /// The smallest byte above every digit here: `lo + base - ended`.
    top: u64,
    /// The product of the bases after this position.
    weight: u64,
    /// What a byte at or above `top` adds: the largest digit here and at every later one.
    above: u64,
}

impl KeyMap {
    /// Trains the mapping on `keys` (any order, duplicates allowed) in one pass, with
    /// integers below [`MAX_SPAN`] (exact in an `f64`, as a least-squares fit needs).
    pub fn train<'k>(keys: impl IntoIterator<Item = &'k [u8]>) -> KeyMap {
        KeyMap::train_within(keys, MAX_SPAN)
    }

    /// [`train`](Self::train) with integers below `max_span` instead: up to `u64::MAX`
    /// for models that work on exact integers (the PGM's PLA), so that fewer keys tie.
    #[expect(
        clippy::indexing_slicing,
        reason = "positions below the longest key's length index the vectors sized to it"
    )]
    pub fn train_within<'k>(keys: impl IntoIterator<Item = &'k [u8]>, max_span: u64) -> KeyMap {
        let mut prefix: Option<Vec<u8>> = None;
        let mut mins: Vec<u8> = Vec::new();
        let mut maxs: Vec<u8> = Vec::new();
        let mut shortest = usize::MAX;
        for key in keys {
            shortest = shortest.min(key.len());
            let common = match &prefix {
                None => key.len(),
                Some(p) => p.iter().zip(key).take_while(|(a, b)| a == b).count(),
            };
            match &mut prefix {
                None => prefix = Some(key.to_vec()),
                Some(p) => p.truncate(common),
            }
            for (i, &b) in key.iter().enumerate() {
                if i == mins.len() {
                    mins.push(b);
                    maxs.push(b);
                } else {
                    mins[i] = mins[i].min(b);
                    maxs[i] = maxs[i].max(b);
                }
            }
        }
        let prefix = prefix.unwrap_or_default();
        let skip = prefix.len();
        let mut bases = Vec::new();
        let mut ends = Vec::new();
        let mut span = 1u64;
        for (i, (&lo, &hi)) in mins.iter().zip(&maxs).enumerate().skip(skip) {
            let ended = shortest <= i;
            let base = u64::from(hi - lo) + 1 + u64::from(ended);
            match span.checked_mul(base) {
                Some(s) if s <= max_span => {
                    span = s;
                    bases.push(base);
                    ends.push(ended);
                }
                _ => break,
            }
        }
        let mins: Vec<u8> = mins[skip..skip + bases.len()].to_vec();
        KeyMap::from_parts(prefix, mins, bases, ends)
    }

    /// The map of these parts; `bases` multiply to at most [`MAX_SPAN`].
    #[expect(
        clippy::indexing_slicing,
        reason = "mins, bases, ends and weights have one entry per position"
    )]
    fn from_parts(prefix: Vec<u8>, mins: Vec<u8>, bases: Vec<u64>, ends: Vec<bool>) -> KeyMap {
        let mut weights = vec![1u64; bases.len()];
        for i in (0..bases.len().saturating_sub(1)).rev() {
            weights[i] = weights[i + 1] * bases[i + 1];
        }
        let digits = (0..bases.len())
            .map(|i| {
                let (lo, ended, base) = (u64::from(mins[i]), u64::from(ends[i]), bases[i]);
                Digit {
                    lo,
                    ended,
                    top: lo + base - ended,
                    weight: weights[i],
                    above: (base - 1) * weights[i] + (weights[i] - 1),
                }
            })
            .collect();
        KeyMap {
            prefix,
            mins,
            bases,
            ends,
            weights,
            digits,
        }
    }

    /// The integer of `key`, below [`span`](Self::span); never decreasing in byte order.
    #[expect(
        clippy::indexing_slicing,
        reason = "common is below the prefix's length and the key's; i below the positions, which training and decode size alike"
    )]
    pub fn map(&self, key: &[u8]) -> u64 {
        let common = self
            .prefix
            .iter()
            .zip(key)
            .take_while(|(a, b)| a == b)
            .count();
        if common < self.prefix.len() {
            // The key departs from the prefix, or ends inside it.
            return match key.get(common) {
                Some(&b) if b > self.prefix[common] => self.span() - 1,
                _ => 0,
            };
        }
        let rest = &key[common..];
        let mut x = 0u64;
        // Ended: this digit and every later one 0 (`zip` stops at the key's end).
        for (d, &b) in self.digits.iter().zip(rest) {
            let b = u64::from(b);
            if b < d.lo {
                break; // Below every trained byte here: as if the key ended.
            }
            if b >= d.top {
                // Above: the largest digit here and at every later position.
                return x + d.above;
            }
            x += (b - d.lo + d.ended) * d.weight;
        }
        x
    }

    /// How many integers the map can produce: the product of the bases (at most
    /// [`MAX_SPAN`]).
    pub fn span(&self) -> u64 {
        match (self.bases.first(), self.weights.first()) {
            (Some(&b), Some(&w)) => b * w,
            _ => 1,
        }
    }

    /// The bytes every trained key starts with.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// Character positions after the prefix that the map reads.
    pub fn positions(&self) -> usize {
        self.bases.len()
    }

    /// Bytes it takes in memory (prefix and per-position tables).
    pub fn size_in_bytes(&self) -> u64 {
        (self.prefix.len() + 18 * self.bases.len()) as u64
    }

    /// Appends the map to `out` (FORMAT.md section 8): the prefix's length and bytes, then
    /// the positions' count and, per position, its smallest byte, whether it has an
    /// "ended" digit (0 or 1) and its base.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u64(self.prefix.len() as u64);
        out.extend_from_slice(&self.prefix);
        let mut e = Encoder(out);
        e.u64(self.bases.len() as u64);
        for ((&lo, &base), &ended) in self.mins.iter().zip(&self.bases).zip(&self.ends) {
            e.u8(lo);
            e.u8(u8::from(ended));
            e.u64(base);
        }
    }

    /// Reads a map written by [`encode`](Self::encode), checking that every base fits its
    /// byte range and that their product stays within `max_span`.
    pub(crate) fn decode(d: &mut Decoder<'_>, max_span: u64) -> Result<KeyMap, FormatError> {
        let len = d.count(1)?;
        let prefix = d.bytes(len)?.to_vec();
        let n = d.count(10)?;
        let (mut mins, mut bases, mut ends) = (Vec::new(), Vec::new(), Vec::new());
        let mut span = 1u64;
        for _ in 0..n {
            let (lo, ended, base) = (d.u8()?, d.u8()?, d.u64()?);
            if ended > 1 {
                return Err(invalid("key map end flag", ended.into(), "0 or 1"));
            }
            let digits = base.saturating_sub(u64::from(ended));
            if digits < 1 || u64::from(lo) + digits - 1 > 255 {
                return Err(invalid(
                    "key map base",
                    base,
                    "1 to 257, within the byte range",
                ));
            }
            span = span
                .checked_mul(base)
                .filter(|&s| s <= max_span)
                .ok_or_else(|| invalid("key map span", span, "within the layout's span"))?;
            mins.push(lo);
            bases.push(base);
            ends.push(ended == 1);
        }
        Ok(KeyMap::from_parts(prefix, mins, bases, ends))
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn map_of(keys: &[&[u8]]) -> KeyMap {
        KeyMap::train(keys.iter().copied())
    }

    #[test]
    fn the_papers_example_keeps_its_order_and_its_bases() {
        let m = map_of(&[b"aab", b"bdd", b"bcb"]);
        // Bases: 2, 4 and 3 byte values, as the paper (no key ends early: no "ended" digit).
        assert_eq!(m.bases, [2, 4, 3]);
        assert_eq!(m.span(), 24);
        // "bcb": the paper's digits 1, 2, 0 (offsets from the smallest byte).
        assert_eq!(m.map(b"bcb"), 12 + 2 * 3);
        assert!(m.map(b"aab") < m.map(b"bcb") && m.map(b"bcb") < m.map(b"bdd"));
    }

    #[test]
    fn fixed_width_decimal_keys_map_onto_their_numbers() {
        let keys: Vec<String> = (0..10_000u64)
            .step_by(7)
            .map(|k| format!("{k:04}"))
            .collect();
        let m = KeyMap::train(keys.iter().map(|k| k.as_bytes()));
        assert_eq!(m.bases, [10, 10, 10, 10]);
        for k in &keys {
            assert_eq!(m.map(k.as_bytes()), k.parse::<u64>().expect("digits"));
        }
    }

    #[test]
    fn a_common_prefix_costs_nothing_and_keys_off_it_go_to_the_ends() {
        let m = map_of(&[b"user:17", b"user:42", b"user:99"]);
        assert_eq!(m.prefix(), b"user:");
        assert_eq!(m.positions(), 2);
        assert_eq!(m.map(b"user"), 0);
        assert_eq!(m.map(b"a"), 0);
        assert_eq!(m.map(b"zzz"), m.span() - 1);
        assert_eq!(m.map(b"user;"), m.span() - 1);
        assert!(m.map(b"user:17") < m.map(b"user:42"));
    }

    #[test]
    fn shorter_keys_map_below_their_extensions() {
        let m = map_of(&[b"ab", b"ab\0", b"abc", b""]);
        assert!(m.map(b"") < m.map(b"ab"));
        assert!(m.map(b"ab") < m.map(b"ab\0"));
        assert!(m.map(b"ab\0") < m.map(b"abc"));
    }

    #[test]
    fn positions_stop_before_2_to_the_53() {
        // Random bytes: every position a base of up to 257, so at most 6 positions fit.
        let keys: Vec<Vec<u8>> = (0..200u64)
            .map(|i| {
                (0..20)
                    .map(|j| ((i * 7919 + j * 104_729) % 256) as u8)
                    .collect()
            })
            .collect();
        let m = KeyMap::train(keys.iter().map(Vec::as_slice));
        assert!(m.span() <= MAX_SPAN);
        assert!(m.positions() < 20);
        let next = m.mins.len();
        assert!(next < 20, "the position after the last taken exists");
        for key in &keys {
            assert!(m.map(key) < m.span());
        }
        // Ties: keys equal up to the positions taken map alike.
        let mut a = keys[0].clone();
        let mut b = keys[0].clone();
        a[19] = 0;
        b[19] = 255;
        assert_eq!(m.map(&a), m.map(&b));
    }

    #[test]
    fn the_widest_span_tells_u64_keys_apart_down_to_their_last_byte() {
        let keys: Vec<[u8; 8]> = (0..2000u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1).to_le_bytes())
            .collect();
        let narrow = KeyMap::train(keys.iter().map(|k| k.as_slice()));
        let wide = KeyMap::train_within(keys.iter().map(|k| k.as_slice()), u64::MAX);
        assert!(narrow.span() <= MAX_SPAN && wide.span() > MAX_SPAN);
        assert_eq!(wide.positions(), 8);
        let mut sorted = keys.clone();
        sorted.sort();
        for pair in sorted.windows(2) {
            assert!(wide.map(&pair[0]) < wide.map(&pair[1]));
        }
        let mut bytes = Vec::new();
        wide.encode(&mut bytes);
        let mut d = Decoder::new(&bytes, "key map");
        assert!(KeyMap::decode(&mut d, MAX_SPAN).is_err());
        let mut d = Decoder::new(&bytes, "key map");
        assert_eq!(KeyMap::decode(&mut d, u64::MAX).expect("decodes"), wide);
    }

    #[test]
    fn no_keys_and_one_key() {
        let empty = KeyMap::train(std::iter::empty());
        assert_eq!(empty.span(), 1);
        assert_eq!(empty.map(b"anything"), 0);
        let one = map_of(&[b"only"]);
        assert_eq!(one.prefix(), b"only");
        assert_eq!(one.map(b"only"), 0);
        assert_eq!(one.map(b"onlz"), one.span() - 1);
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..12),
            prop::collection::vec(b'0'..=b'9', 0..12),
            prop::collection::vec(prop::sample::select(b"ab\0\xff".to_vec()), 0..8),
            // Long shared prefixes.
            prop::collection::vec(b'0'..=b'3', 0..4)
                .prop_map(|t| [b"key:0000".as_slice(), &t].concat()),
        ]
    }

    proptest! {
        /// Byte order in, integer order out, for trained keys and for keys never seen;
        /// trained keys that differ within the positions taken map apart.
        #[test]
        fn the_map_is_monotone_and_separates_what_it_reads(
            trained in prop::collection::vec(key(), 0..40),
            probes in prop::collection::vec(key(), 0..40),
        ) {
            let m = KeyMap::train(trained.iter().map(Vec::as_slice));
            let mut all: Vec<&[u8]> = trained.iter().chain(&probes).map(Vec::as_slice).collect();
            all.sort();
            for pair in all.windows(2) {
                let (a, b) = (m.map(pair[0]), m.map(pair[1]));
                prop_assert!(a <= b, "{:?} -> {a} above {:?} -> {b}", pair[0], pair[1]);
                prop_assert!(b < m.span());
            }
            let mut sorted: Vec<&[u8]> = trained.iter().map(Vec::as_slice).collect();
            sorted.sort();
            sorted.dedup();
            let read = m.prefix().len() + m.positions();
            for pair in sorted.windows(2) {
                let first_difference = pair[0].iter().zip(pair[1]).take_while(|(x, y)| x == y).count();
                if first_difference < read {
                    prop_assert!(m.map(pair[0]) < m.map(pair[1]), "{:?} and {:?} tie", pair[0], pair[1]);
                }
            }
        }
    }
}
