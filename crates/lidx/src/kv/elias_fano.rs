//! A non-decreasing sequence of integers in about `2 + log2(u/n)` bits each (Elias–Fano),
//! with access to any element: paper 4's "compressible mapping table" for the learned
//! layout's block locations (section 4, "Model Structure"; FORMAT.md §8.3).
//!
//! Each value is split into its low `L = ⌊log2(u/n)⌋` bits, stored packed, and its high
//! part, stored in unary: value `i` sets bit `(v_i >> L) + i` of the high bit vector. The
//! `i`-th value is then `((select1(i) − i) << L) | low_i`; a position is sampled every
//! [`SAMPLE`] ones so that a select scans a few words.

#![deny(clippy::indexing_slicing)]

use crate::FormatError;
use crate::files::codec::{Decoder, Encoder, invalid};

/// Ones between two samples of the high bits' select index.
const SAMPLE: u64 = 256;

/// A non-decreasing sequence of `u64`s, compressed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EliasFano {
    len: u64,
    /// Bits of each value kept in `low`.
    low_bits: u32,
    low: Vec<u64>,
    high: Vec<u64>,
    /// The position in `high` of every [`SAMPLE`]-th one (rebuilt when decoded).
    samples: Vec<u64>,
}

impl EliasFano {
    /// The sequence `values`; `None` if they decrease somewhere.
    pub fn new(values: &[u64]) -> Option<EliasFano> {
        if values.windows(2).any(|w| matches!(w, [a, b] if a > b)) {
            return None;
        }
        let len = values.len() as u64;
        let max = values.last().copied().unwrap_or(0);
        let low_bits = match len {
            0 => 0,
            n => (max / n).checked_ilog2().unwrap_or(0),
        };
        let mut low = vec![0u64; words(len * u64::from(low_bits))];
        // Bits up to the last value's: the last word holds a set bit.
        let high_len = match len {
            0 => 0,
            n => n + (max >> low_bits),
        };
        let mut high = vec![0u64; words(high_len)];
        let mask = low_mask(low_bits);
        for (i, &v) in values.iter().enumerate() {
            let i = i as u64;
            set_bits(&mut low, i * u64::from(low_bits), low_bits, v & mask);
            set_bit(&mut high, (v >> low_bits) + i);
        }
        Some(EliasFano {
            len,
            low_bits,
            samples: sample(&high),
            low,
            high,
        })
    }

    /// Values in the sequence.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `i`-th value; `None` past the end.
    pub fn get(&self, i: usize) -> Option<u64> {
        let i = i as u64;
        if i >= self.len {
            return None;
        }
        let high = self.select1(i)? - i;
        let low = get_bits(&self.low, i * u64::from(self.low_bits), self.low_bits);
        Some((high << self.low_bits) | low)
    }

    /// All the values, in order.
    pub fn to_vec(&self) -> Vec<u64> {
        (0..self.len()).filter_map(|i| self.get(i)).collect()
    }

    /// Bytes it takes in memory.
    pub fn size_in_bytes(&self) -> u64 {
        8 * (self.low.len() + self.high.len() + self.samples.len()) as u64 + 16
    }

    /// The position in `high` of the `i`-th one (from 0).
    fn select1(&self, i: u64) -> Option<u64> {
        let start = *self.samples.get((i / SAMPLE) as usize)?;
        let mut left = i % SAMPLE;
        let mut word = (start / 64) as usize;
        // The ones of the first word from the sample on.
        let mut bits = self.high.get(word)? & (!0u64 << (start % 64));
        loop {
            let ones = u64::from(bits.count_ones());
            if left < ones {
                for _ in 0..left {
                    bits &= bits - 1;
                }
                return Some(word as u64 * 64 + u64::from(bits.trailing_zeros()));
            }
            left -= ones;
            word += 1;
            bits = *self.high.get(word)?;
        }
    }

    /// Appends the sequence: its length, low bits, then the low and high words.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u64(self.len);
        e.u8(self.low_bits as u8);
        e.u64(self.low.len() as u64);
        for &w in &self.low {
            e.u64(w);
        }
        e.u64(self.high.len() as u64);
        for &w in &self.high {
            e.u64(w);
        }
    }

    /// Reads a sequence [`encode`](Self::encode) wrote, checking that its parts agree: as
    /// many low words as `len` values of `low_bits` need, and exactly `len` ones in the
    /// high words, none past the last one's word.
    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<EliasFano, FormatError> {
        let len = d.u64()?;
        let low_bits = u32::from(d.u8()?);
        if low_bits > 63 {
            return Err(invalid(
                "Elias-Fano low bits",
                low_bits.into(),
                "at most 63",
            ));
        }
        let n = d.count(8)?;
        let need = len
            .checked_mul(u64::from(low_bits))
            .map(words)
            .ok_or_else(|| invalid("Elias-Fano length", len, "fewer values"))?;
        if n != need {
            return Err(invalid(
                "Elias-Fano low words",
                n as u64,
                "as many as its values' low bits fill",
            ));
        }
        let mut low = Vec::with_capacity(n);
        for _ in 0..n {
            low.push(d.u64()?);
        }
        let n = d.count(8)?;
        let mut high = Vec::with_capacity(n);
        for _ in 0..n {
            high.push(d.u64()?);
        }
        let ones: u64 = high.iter().map(|w| u64::from(w.count_ones())).sum();
        if ones != len || (len > 0 && high.last() == Some(&0)) || (len == 0 && n > 0) {
            return Err(invalid(
                "Elias-Fano high bits",
                ones,
                "one set bit per value, the last word holding the last",
            ));
        }
        Ok(EliasFano {
            len,
            low_bits,
            samples: sample(&high),
            low,
            high,
        })
    }
}

/// Words of 64 bits that hold `bits` bits.
fn words(bits: u64) -> usize {
    bits.div_ceil(64) as usize
}

fn low_mask(bits: u32) -> u64 {
    1u64.checked_shl(bits).map_or(u64::MAX, |b| b - 1)
}

fn set_bit(words: &mut [u64], at: u64) {
    if let Some(w) = words.get_mut((at / 64) as usize) {
        *w |= 1 << (at % 64);
    }
}

/// Stores the `bits` low bits of `value` at bit `at`.
fn set_bits(words: &mut [u64], at: u64, bits: u32, value: u64) {
    if bits == 0 {
        return;
    }
    let (w, shift) = ((at / 64) as usize, (at % 64) as u32);
    if let Some(x) = words.get_mut(w) {
        *x |= value << shift;
    }
    if shift + bits > 64
        && let Some(x) = words.get_mut(w + 1)
    {
        *x |= value >> (64 - shift);
    }
}

/// The `bits` bits at bit `at`.
fn get_bits(words: &[u64], at: u64, bits: u32) -> u64 {
    if bits == 0 {
        return 0;
    }
    let (w, shift) = ((at / 64) as usize, (at % 64) as u32);
    let mut v = words.get(w).copied().unwrap_or(0) >> shift;
    if shift + bits > 64 {
        v |= words.get(w + 1).copied().unwrap_or(0) << (64 - shift);
    }
    v & low_mask(bits)
}

/// The position of every [`SAMPLE`]-th one of `high`.
fn sample(high: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut seen = 0u64;
    for (w, &word) in high.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            if seen.is_multiple_of(SAMPLE) {
                out.push(w as u64 * 64 + u64::from(bits.trailing_zeros()));
            }
            bits &= bits - 1;
            seen += 1;
        }
    }
    out
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn round_trip(values: &[u64]) {
        let ef = EliasFano::new(values).expect("non-decreasing");
        assert_eq!(ef.len(), values.len());
        assert_eq!(ef.to_vec(), values);
        assert_eq!(ef.get(values.len()), None);
        let mut bytes = Vec::new();
        ef.encode(&mut bytes);
        let mut d = Decoder::new(&bytes, "test");
        let back = EliasFano::decode(&mut d).expect("decodes");
        assert_eq!(d.remaining(), 0);
        assert_eq!(back, ef);
    }

    #[test]
    fn edge_sequences_round_trip() {
        round_trip(&[]);
        round_trip(&[0]);
        round_trip(&[u64::MAX]);
        round_trip(&[0, 0, 0, 0]);
        round_trip(&[u64::MAX, u64::MAX]);
        round_trip(&[0, u64::MAX]);
        round_trip(&(0..2000).collect::<Vec<_>>());
        round_trip(&(0..2000).map(|i| i * 32_768 + i % 7).collect::<Vec<_>>());
        assert_eq!(EliasFano::new(&[2, 1]), None);
    }

    #[test]
    fn block_offsets_take_a_few_bits_each() {
        // 10,000 blocks of about 32 KiB: about 2 + 15 bits a block, not 64.
        let offsets: Vec<u64> = (0..10_000u64)
            .map(|b| b * 32_768 + (b * 7919) % 4096)
            .collect();
        let ef = EliasFano::new(&offsets).expect("increasing");
        assert!(
            ef.size_in_bytes() * 8 < 20 * 10_000,
            "{}",
            ef.size_in_bytes()
        );
    }

    #[test]
    fn corrupt_encodings_are_refused_not_trusted() {
        let ef = EliasFano::new(&[1, 5, 9, 200]).expect("increasing");
        let mut bytes = Vec::new();
        ef.encode(&mut bytes);
        // Every truncation, and every single flipped bit, either fails or decodes to a
        // sequence whose every value can be read (never a panic, never a hang).
        for cut in 0..bytes.len() {
            assert!(EliasFano::decode(&mut Decoder::new(&bytes[..cut], "t")).is_err());
        }
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            if let Ok(ef) = EliasFano::decode(&mut Decoder::new(&b, "t")) {
                assert_eq!(ef.to_vec().len(), ef.len());
            }
        }
    }

    proptest! {
        #[test]
        fn any_non_decreasing_sequence_round_trips(
            mut values in prop::collection::vec(any::<u64>(), 0..600),
            spread in 0u32..64,
        ) {
            for v in &mut values {
                *v >>= spread;
            }
            values.sort_unstable();
            round_trip(&values);
        }
    }
}
