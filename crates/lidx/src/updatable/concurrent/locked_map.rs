//! A `BTreeMap` behind one reader-writer lock: the simplest correct concurrent map, the
//! reference of the concurrency tests and the floor every concurrent design must clear.

use std::collections::BTreeMap;

use parking_lot::RwLock;

use super::Concurrent;
use crate::Result;
use crate::updatable::OrderedMap;

/// A `BTreeMap<u64, u64>` behind a `parking_lot::RwLock`.
#[derive(Debug, Default)]
pub struct LockedMap {
    map: RwLock<BTreeMap<u64, u64>>,
}

impl Concurrent for LockedMap {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        crate::updatable::check_sorted(entries, "LockedMap::bulk_load")?;
        Ok(LockedMap {
            map: RwLock::new(entries.iter().copied().collect()),
        })
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.map.read().get(&key).copied()
    }

    fn insert(&self, key: u64, payload: u64) {
        self.map.write().insert(key, payload);
    }

    fn remove(&self, key: u64) {
        self.map.write().remove(&key);
    }

    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let before = out.len();
        out.extend(self.map.read().range(from..).take(n).map(|(&k, &v)| (k, v)));
        out.len() - before
    }

    /// [`OrderedMap`]'s estimate and the lock.
    fn size_in_bytes(&self) -> u64 {
        OrderedMap::estimate(self.map.read().len() as u64) + std::mem::size_of::<Self>() as u64
    }
}
