//! No model at all: the window is the whole table, and the last-mile search is a binary
//! search over all of it (the baseline every index is measured against).
#![deny(clippy::indexing_slicing)]

use super::{Index, IndexKind, Window, check_sorted};
use crate::files::codec::{Decoder, Encoder};
use crate::{FormatError, Result};

/// The "index" whose window is always `0..n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binary {
    n: u64,
}

impl Index for Binary {
    type Params = ();
    const KIND: IndexKind = IndexKind::Binary;

    fn build(keys: &[u64], _: &()) -> Result<Binary> {
        check_sorted(keys)?;
        Ok(Binary {
            n: keys.len() as u64,
        })
    }

    #[inline]
    fn search(&self, _key: u64) -> Window {
        Window { lo: 0, hi: self.n }
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn size_in_bytes(&self) -> u64 {
        8
    }

    fn max_width(&self) -> u64 {
        self.n
    }

    fn params(&self) {}

    fn encode(&self, out: &mut Vec<u8>) {
        Encoder(out).u64(self.n);
    }

    fn decode(bytes: &[u8]) -> Result<Binary, FormatError> {
        let mut d = Decoder::new(bytes, "a binary-search index");
        let n = d.u64()?;
        d.finish()?;
        Ok(Binary { n })
    }
}
