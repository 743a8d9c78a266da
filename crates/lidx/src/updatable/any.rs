//! Any updatable kind behind one type, for front ends that choose the kind at run time (the
//! Python package); benchmarks stay generic over [`Updatable`], so a lookup there is not a
//! match per call.

use super::{Alex, Art, BTree, Counters, DynamicPgm, Kind, Lipp, OrderedMap, Updatable};
use crate::Result;

/// An index of any [`Kind`], answering as the [`Updatable`] contract says.
#[derive(Debug)]
pub enum AnyUpdatable {
    /// See [`DynamicPgm`].
    DynamicPgm(DynamicPgm),
    /// See [`Alex`].
    Alex(Alex),
    /// See [`Lipp`].
    Lipp(Lipp),
    /// See [`BTree`].
    Btree(BTree),
    /// See [`Art`].
    Art(Art),
    /// See [`OrderedMap`].
    BTreeMap(OrderedMap),
}

/// Calls `$body` with `$i` bound to the inner index, whatever its kind.
macro_rules! with_updatable {
    ($any:expr, $i:ident => $body:expr) => {
        match $any {
            AnyUpdatable::DynamicPgm($i) => $body,
            AnyUpdatable::Alex($i) => $body,
            AnyUpdatable::Lipp($i) => $body,
            AnyUpdatable::Btree($i) => $body,
            AnyUpdatable::Art($i) => $body,
            AnyUpdatable::BTreeMap($i) => $body,
        }
    };
}

impl AnyUpdatable {
    /// Builds an index of `kind` over `entries`, sorted by key (the last payload of a
    /// repeated key wins), with the kind's default parameters.
    pub fn bulk_load(kind: Kind, entries: &[(u64, u64)]) -> Result<AnyUpdatable> {
        Ok(match kind {
            Kind::DynamicPgm => AnyUpdatable::DynamicPgm(DynamicPgm::bulk_load(entries)?),
            Kind::Alex => AnyUpdatable::Alex(Alex::bulk_load(entries)?),
            Kind::Lipp => AnyUpdatable::Lipp(Lipp::bulk_load(entries)?),
            Kind::Btree => AnyUpdatable::Btree(BTree::bulk_load(entries)?),
            Kind::Art => AnyUpdatable::Art(Art::bulk_load(entries)?),
            Kind::BTreeMap => AnyUpdatable::BTreeMap(OrderedMap::bulk_load(entries)?),
        })
    }

    /// The kind.
    pub fn kind(&self) -> Kind {
        match self {
            AnyUpdatable::DynamicPgm(_) => Kind::DynamicPgm,
            AnyUpdatable::Alex(_) => Kind::Alex,
            AnyUpdatable::Lipp(_) => Kind::Lipp,
            AnyUpdatable::Btree(_) => Kind::Btree,
            AnyUpdatable::Art(_) => Kind::Art,
            AnyUpdatable::BTreeMap(_) => Kind::BTreeMap,
        }
    }

    /// See [`Updatable::get`].
    pub fn get(&mut self, key: u64) -> Option<u64> {
        with_updatable!(self, i => i.get(key))
    }

    /// See [`Updatable::insert`].
    pub fn insert(&mut self, key: u64, payload: u64) {
        with_updatable!(self, i => i.insert(key, payload))
    }

    /// See [`Updatable::remove`].
    pub fn remove(&mut self, key: u64) {
        with_updatable!(self, i => i.remove(key))
    }

    /// See [`Updatable::scan`].
    pub fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        with_updatable!(self, i => i.scan(from, n, out))
    }

    /// See [`Updatable::size_in_bytes`].
    pub fn size_in_bytes(&self) -> u64 {
        with_updatable!(self, i => i.size_in_bytes())
    }

    /// See [`Updatable::counters`].
    pub fn counters(&self) -> Counters {
        with_updatable!(self, i => i.counters())
    }

    /// See [`Updatable::check_structure`].
    pub fn check_structure(&self) -> std::result::Result<(), String> {
        with_updatable!(self, i => i.check_structure())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind behind the one type answers as the map after the same calls, and says
    /// which kind it is.
    #[test]
    fn every_kind_answers_as_the_map() {
        let entries: Vec<(u64, u64)> = (0..5000u64).map(|k| (k * 7, k)).collect();
        for kind in Kind::ALL {
            let mut index = AnyUpdatable::bulk_load(kind, &entries).expect("a bulk load");
            assert_eq!(index.kind(), kind);
            let mut map: std::collections::BTreeMap<u64, u64> = entries.iter().copied().collect();
            for k in 0..3000u64 {
                let key = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 40_000;
                match k % 3 {
                    0 => {
                        index.insert(key, k);
                        map.insert(key, k);
                    }
                    1 => {
                        index.remove(key);
                        map.remove(&key);
                    }
                    _ => assert_eq!(index.get(key), map.get(&key).copied(), "{kind} key {key}"),
                }
            }
            let mut all = Vec::new();
            index.scan(0, usize::MAX, &mut all);
            assert_eq!(all, map.into_iter().collect::<Vec<_>>(), "{kind}");
            assert!(index.size_in_bytes() > 0);
            assert_eq!(index.check_structure(), Ok(()), "{kind}");
        }
    }
}
