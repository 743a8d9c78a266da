//! A B+tree bulk-loaded over every k-th key with 4 KiB nodes (paper 1, section 5.2: built
//! on the first key of each 256-tuple block, so each leaf entry names one block and the
//! window is exactly that block).
//!
//! Bulk loading a static tree makes child pointers implicit: level 0 holds the separators
//! `keys[b k]`, each level above holds the first key of each 4 KiB node (512 keys) of the
//! level below, up to a single root node. Search descends from the root choosing, in each
//! node, the last key `< key`; at the bottom that is separator `b`, and the lower bound lies
//! in `b k ..= min((b + 1) k, n)`: the window `b k .. min((b + 1) k, n)`, width `k`, aligned
//! to blocks when k = 256. Size counts whole 4 KiB nodes.
#![deny(clippy::indexing_slicing)]

use std::fmt;

use super::{Index, IndexKind, Window, partition_from, sorted_sample};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::{FormatError, Result};

/// Keys in one 4 KiB node.
pub const NODE_KEYS: usize = 512;

/// Parameters of the B+tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BTreeParams {
    /// Index every k-th key (at least 1); 256 makes each window one 4 KiB block of tuples.
    pub every: u64,
}

impl Default for BTreeParams {
    fn default() -> Self {
        Self { every: 256 }
    }
}

impl fmt::Display for BTreeParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "every={}", self.every)
    }
}

/// A static B+tree over every k-th key.
#[derive(Clone, Debug, PartialEq)]
pub struct BTree {
    every: u64,
    n: u64,
    /// `levels[0]` = separators; each level padded with `u64::MAX` to whole nodes.
    levels: Vec<Vec<u64>>,
    /// Unpadded length of each level.
    lens: Vec<usize>,
}

fn padded(mut keys: Vec<u64>) -> (Vec<u64>, usize) {
    let len = keys.len();
    keys.resize(len.div_ceil(NODE_KEYS) * NODE_KEYS, u64::MAX);
    (keys, len)
}

impl BTree {
    /// Number of levels, the separators included.
    pub fn height(&self) -> usize {
        self.levels.len()
    }

    /// The separator `b` for `key` (`key > keys[0]`): the last separator `< key`.
    #[expect(
        clippy::indexing_slicing,
        reason = "l runs over the levels built, each node within its level"
    )]
    fn separator(&self, key: u64) -> usize {
        let Some(top) = self.levels.last() else {
            return 0;
        };
        let top_len = self.lens.last().copied().unwrap_or(0);
        let mut c = top
            .get(..top_len)
            .unwrap_or_default()
            .partition_point(|&k| k < key)
            .saturating_sub(1);
        for l in (0..self.levels.len() - 1).rev() {
            let start = c * NODE_KEYS;
            let node = self.levels[l]
                .get(start..start + NODE_KEYS)
                .unwrap_or_default();
            c = start + node.partition_point(|&k| k < key).saturating_sub(1);
        }
        c
    }

    fn window_of(&self, b: usize) -> Window {
        let b = b as u64;
        Window {
            lo: b.saturating_mul(self.every).min(self.n),
            hi: (b + 1).saturating_mul(self.every).min(self.n),
        }
    }
}

impl Index for BTree {
    type Params = BTreeParams;
    const KIND: IndexKind = IndexKind::BTree;

    #[expect(
        clippy::indexing_slicing,
        reason = "levels is never empty: the keys' level is its first"
    )]
    fn build(keys: &[u64], params: &BTreeParams) -> Result<BTree> {
        let separators = sorted_sample(keys, params.every)?;
        let mut levels = Vec::new();
        let mut lens = Vec::new();
        if !separators.is_empty() {
            let (level, len) = padded(separators);
            levels.push(level);
            lens.push(len);
            while lens.last().is_some_and(|&l| l > NODE_KEYS) {
                let below = &levels[levels.len() - 1];
                let firsts: Vec<u64> = below.iter().step_by(NODE_KEYS).copied().collect();
                let (level, len) = padded(firsts);
                levels.push(level);
                lens.push(len);
            }
        }
        Ok(BTree {
            every: params.every,
            n: keys.len() as u64,
            levels,
            lens,
        })
    }

    #[inline]
    fn search(&self, key: u64) -> Window {
        let first = self.levels.first().and_then(|l| l.first()).copied();
        match first {
            Some(min) if key > min => self.window_of(self.separator(key)),
            _ => Window { lo: 0, hi: 0 },
        }
    }

    /// Moves along the separators: `hint` is the partition point of "separator < key" found
    /// last time.
    #[expect(
        clippy::indexing_slicing,
        reason = "lens holds a length per level, at least one"
    )]
    fn search_from(&self, key: u64, hint: &mut usize) -> Window {
        let separators = self
            .levels
            .first()
            .map_or(&[][..], |l| l.get(..self.lens[0]).unwrap_or_default());
        match separators.first() {
            Some(&min) if key > min => {
                *hint = partition_from(separators, *hint, |s| s < key);
                self.window_of(hint.saturating_sub(1))
            }
            _ => Window { lo: 0, hi: 0 },
        }
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn size_in_bytes(&self) -> u64 {
        24 + self
            .levels
            .iter()
            .map(|l| 8 + 8 * l.len() as u64)
            .sum::<u64>()
    }

    fn max_width(&self) -> u64 {
        self.every.min(self.n)
    }

    /// Every `width`-th key: windows of exactly `width` positions.
    fn params_for_width(width: u64) -> Option<BTreeParams> {
        (width >= 1).then_some(BTreeParams { every: width })
    }

    fn params(&self) -> BTreeParams {
        BTreeParams { every: self.every }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u64(self.every);
        e.u64(self.n);
        e.u64(self.levels.len() as u64);
        for (level, &len) in self.levels.iter().zip(&self.lens) {
            e.u64(len as u64);
            for &k in level {
                e.u64(k);
            }
        }
    }

    fn decode(bytes: &[u8]) -> Result<BTree, FormatError> {
        let mut d = Decoder::new(bytes, "a B+tree");
        let (every, n, height) = (d.u64()?, d.u64()?, d.u64()?);
        if every == 0 {
            return Err(invalid("sampling step", every, "at least 1"));
        }
        let mut levels: Vec<Vec<u64>> = Vec::new();
        let mut lens = Vec::new();
        for _ in 0..height.min(64) {
            let len = d.count(8)?;
            let padded_len = len.div_ceil(NODE_KEYS) * NODE_KEYS;
            let mut level = Vec::with_capacity(padded_len);
            for _ in 0..padded_len {
                level.push(d.u64()?);
            }
            // Level 0 holds every k-th of n keys; each level above, the first of each node.
            let want = match levels.last() {
                None => n.div_ceil(every) as usize,
                Some(_) => lens.last().map_or(0, |&l: &usize| l.div_ceil(NODE_KEYS)),
            };
            let live = level.get(..len).unwrap_or_default();
            // A search reads the whole last node of a level, its padding too.
            if let Some(&pad) = level
                .get(len..)
                .unwrap_or_default()
                .iter()
                .find(|&&k| k != u64::MAX)
            {
                return Err(invalid(
                    "B+tree node padding",
                    pad,
                    "u64::MAX after a level's keys, to the end of its last node",
                ));
            }
            let sorted = live.is_sorted();
            let firsts_match = levels
                .last()
                .is_none_or(|below: &Vec<u64>| below.iter().step_by(NODE_KEYS).eq(live.iter()));
            if len != want || len == 0 || !sorted || !firsts_match {
                return Err(invalid(
                    "B+tree level",
                    len as u64,
                    "sorted keys, one per node of the level below",
                ));
            }
            levels.push(level);
            lens.push(len);
        }
        let complete = match lens.last() {
            None => n == 0 && height == 0,
            Some(&top) => top <= NODE_KEYS && height == levels.len() as u64,
        };
        if !complete {
            return Err(invalid(
                "B+tree height",
                height,
                "levels up to a single root node",
            ));
        }
        d.finish()?;
        Ok(BTree {
            every,
            n,
            levels,
            lens,
        })
    }
}
