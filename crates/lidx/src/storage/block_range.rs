//! [`BlockRange`]: a run of consecutive data blocks, and which blocks hold a window of tuple
//! positions (paper 1, section 4.1: tuple `i` lives at a computable offset, so a window of
//! positions maps to a run of whole blocks). Block reads and the read queue both speak in
//! these runs.

use std::ops::Range;

use super::format::TUPLES_PER_BLOCK;

/// A run of consecutive data blocks: `first .. first + count` (0-based data block numbers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockRange {
    /// First data block.
    pub first: u64,
    /// Number of blocks; 0 for an empty run.
    pub count: u64,
}

impl BlockRange {
    /// The blocks holding tuple positions `lo..hi` (half-open). An empty window (`lo >= hi`)
    /// covers no blocks.
    pub fn for_window(lo: u64, hi: u64) -> BlockRange {
        if lo >= hi {
            return BlockRange {
                first: lo / TUPLES_PER_BLOCK,
                count: 0,
            };
        }
        let first = lo / TUPLES_PER_BLOCK;
        let last = (hi - 1) / TUPLES_PER_BLOCK;
        BlockRange {
            first,
            count: last - first + 1,
        }
    }

    /// One past the last block (saturating, so an absurd range cannot overflow).
    pub fn end(&self) -> u64 {
        self.first.saturating_add(self.count)
    }

    /// True when every block of `other` is in `self` (an empty `other` is always contained).
    pub fn contains(&self, other: &BlockRange) -> bool {
        other.count == 0 || (self.first <= other.first && other.end() <= self.end())
    }

    /// The tuple positions these blocks hold in a table of `n` tuples.
    pub fn positions(&self, n: u64) -> Range<u64> {
        let lo = self.first.saturating_mul(TUPLES_PER_BLOCK).min(n);
        let hi = self.end().saturating_mul(TUPLES_PER_BLOCK).min(n);
        lo..hi
    }
}
