//! `std::collections::BTreeMap` behind the [`Updatable`] contract: the reference every kind
//! is checked against, and a traditional index in the benchmark.

use std::collections::BTreeMap;

use super::{Counters, Updatable, check_sorted};
use crate::Result;

/// A `BTreeMap<u64, u64>`.
#[derive(Clone, Debug, Default)]
pub struct OrderedMap {
    map: BTreeMap<u64, u64>,
}

/// Keys per node of the standard library's B-tree (`2B − 1`, `B = 6`).
const NODE_KEYS: u64 = 11;

impl OrderedMap {
    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl Updatable for OrderedMap {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        check_sorted(entries, "OrderedMap::bulk_load")?;
        Ok(OrderedMap {
            map: entries.iter().copied().collect(),
        })
    }

    fn get(&mut self, key: u64) -> Option<u64> {
        self.map.get(&key).copied()
    }

    fn insert(&mut self, key: u64, payload: u64) {
        self.map.insert(key, payload);
    }

    fn remove(&mut self, key: u64) {
        self.map.remove(&key);
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let before = out.len();
        out.extend(self.map.range(from..).take(n).map(|(&k, &v)| (k, v)));
        out.len() - before
    }

    /// An estimate: leaves of 11 entries at least half full hold keys and payloads (16
    /// bytes each) and a small header; inner nodes add a pointer per child. The standard
    /// library does not report its allocation, so this assumes nodes two-thirds full.
    fn size_in_bytes(&self) -> u64 {
        OrderedMap::estimate(self.map.len() as u64)
    }

    /// The standard library counts nothing.
    fn counters(&self) -> Counters {
        Counters::default()
    }
}

impl OrderedMap {
    /// The estimated bytes of a `BTreeMap<u64, u64>` of `n` entries (see `size_in_bytes`).
    pub(crate) fn estimate(n: u64) -> u64 {
        let leaves = (n * 3).div_ceil(NODE_KEYS * 2);
        let leaf_bytes = NODE_KEYS * 16 + 16;
        let inner = leaves.div_ceil(8);
        leaves * leaf_bytes + inner * (leaf_bytes + 12 * 8)
    }
}
