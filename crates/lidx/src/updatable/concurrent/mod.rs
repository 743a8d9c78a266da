//! Concurrent updatable indexes (paper 3, GRE, sections 2.3, 3.1 and 4.2–4.3): the
//! thread-safe forms of the learned kinds as paper 3 builds them, and the concurrent
//! traditional indexes it measures them against.
//!
//! One contract, [`Concurrent`]: the map of [`Updatable`](super::Updatable), taken by `&self`
//! from any number of threads at once. Each operation is linearizable: it takes effect at
//! one instant between its call and its return, so a lookup returns the payload of the last
//! insert of its key that took effect before it (or the bulk load's), or nothing if a
//! removal came last. A scan reads each entry consistently and in key order, but is not a
//! snapshot of the whole range (as in every index paper 3 measures). Every kind is checked
//! by [`conformance`]: many threads of random operations against what a sequential
//! map allows.
//!
//! Kinds:
//! - [`AlexPlus`]: ALEX+, the ALEX-like index with an optimistic lock per data node and
//!   structure modifications out of place (paper 3's ALEX+, after APEX).
//! - [`LippPlus`]: LIPP+, the LIPP-like index with an optimistic lock per item, statistics
//!   on every node of an insert's path, and subtrees rebuilt out of place after freezing
//!   their items (paper 3's LIPP+).
//! - [`Finedex`]: FINEdex, a learned index designed for concurrency (paper 3's native
//!   concurrent learned indexes are XIndex and FINEdex): a static PLA top level, sorted
//!   arrays updated in place by atomics, a delta bin with its own lock per gap, retrained
//!   alone when full.
//! - [`LockedMap`]: a `BTreeMap` behind one reader-writer lock, the simplest correct
//!   design and the tests' reference.
//!
//! [`OptLock`] is the optimistic version lock the kinds share (paper 3, section 2.3).

pub mod conformance;
mod finedex;
mod lock;
mod locked_map;

pub use super::alex::AlexPlus;
pub use super::lipp::LippPlus;
pub use finedex::Finedex;
pub use lock::{OptLock, back_off};
pub use locked_map::LockedMap;

use crate::Result;

/// An index of `u64` keys to `u64` payloads that many threads read and write at once.
///
/// Invariant: every operation is linearizable with respect to a `BTreeMap` given the same
/// bulk load (see the module doc); with one thread it answers exactly as that map does.
pub trait Concurrent: Send + Sync + Sized {
    /// Builds the index over `entries`, sorted by key (duplicates allowed: the last
    /// payload of a key wins), on the calling thread. Fails on entries out of order.
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self>;

    /// The payload of `key`.
    fn get(&self, key: u64) -> Option<u64>;

    /// Sets `key`'s payload (replacing any it had).
    fn insert(&self, key: u64, payload: u64);

    /// Removes `key` (nothing happens where it is absent).
    fn remove(&self, key: u64);

    /// Appends to `out` up to `n` entries, in key order, whose keys are at least `from`;
    /// returns how many it appended.
    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize;

    /// Bytes of the whole structure in memory, payloads, keys, locks and spare room
    /// included (nodes retired but not yet freed are not counted); 0 for a kind from
    /// another crate that cannot say (a study measures every kind's bytes with its
    /// allocator instead).
    fn size_in_bytes(&self) -> u64;

    /// Walks the structure, with no other thread using it, and checks the invariants its
    /// operations rely on; the first broken one, in words.
    fn check_structure(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}
