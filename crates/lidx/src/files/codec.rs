//! Little-endian encoding of index payloads, and a decoder that checks every length before
//! it reads or allocates.

#![deny(clippy::indexing_slicing)]

use crate::FormatError;

/// Appends fixed-width little-endian values to a byte vector.
pub(crate) struct Encoder<'a>(pub(crate) &'a mut Vec<u8>);

impl Encoder<'_> {
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    pub(crate) fn f32(&mut self, v: f32) {
        self.0.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    pub(crate) fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
}

/// Reads fixed-width little-endian values, failing with [`FormatError::Truncated`] at the end.
pub(crate) struct Decoder<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self { bytes, what }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        match self.bytes.split_first_chunk::<N>() {
            Some((head, rest)) => {
                self.bytes = rest;
                Ok(*head)
            }
            None => Err(FormatError::Truncated {
                what: self.what,
                expected: N as u64,
                actual: self.bytes.len() as u64,
            }),
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take::<1>()?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    pub(crate) fn f64(&mut self) -> Result<f64, FormatError> {
        Ok(f64::from_bits(u64::from_le_bytes(self.take()?)))
    }
    pub(crate) fn f32(&mut self) -> Result<f32, FormatError> {
        Ok(f32::from_bits(u32::from_le_bytes(self.take()?)))
    }
    pub(crate) fn i32(&mut self) -> Result<i32, FormatError> {
        Ok(i32::from_le_bytes(self.take()?))
    }

    /// A count of items of `item_bytes` each, checked against the bytes left before anyone
    /// allocates for it.
    pub(crate) fn count(&mut self, item_bytes: u64) -> Result<usize, FormatError> {
        let count = self.u64()?;
        let need = count.checked_mul(item_bytes);
        match need {
            Some(need) if need <= self.bytes.len() as u64 => Ok(count as usize),
            _ => Err(FormatError::CountMismatch {
                count,
                unit: "entries",
                expected: need.unwrap_or(u64::MAX),
                actual: self.bytes.len() as u64,
            }),
        }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    /// The next `len` bytes, as they are.
    pub(crate) fn bytes(&mut self, len: usize) -> Result<&'a [u8], FormatError> {
        match self.bytes.split_at_checked(len) {
            Some((head, rest)) => {
                self.bytes = rest;
                Ok(head)
            }
            None => Err(FormatError::Truncated {
                what: self.what,
                expected: len as u64,
                actual: self.bytes.len() as u64,
            }),
        }
    }

    /// Fails unless every byte was read.
    pub(crate) fn finish(self) -> Result<(), FormatError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(FormatError::BadField {
                field: "payload length",
                value: self.bytes.len() as u64,
                expected: "no bytes after the index payload",
            })
        }
    }
}

/// A `BadField` error for a decoded value that breaks an invariant.
pub(crate) fn invalid(field: &'static str, value: u64, expected: &'static str) -> FormatError {
    FormatError::BadField {
        field,
        value,
        expected,
    }
}
