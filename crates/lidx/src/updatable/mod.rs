//! Updatable learned indexes (paper 3, GRE: "Are Updatable Learned Indexes Ready?").
//!
//! One contract, [`Updatable`], for in-memory indexes of `u64` keys to `u64` payloads that
//! take inserts and removals after a bulk load, as paper 3's benchmark drives them
//! (section 3.3), with counters of where the work goes (nodes traversed, keys shifted,
//! nodes created, structure modifications: paper 3's Fig. 3 and Table 3) and a size that
//! counts the whole structure, leaves included (Fig. 8).
//!
//! The contract is a map: a key holds at most one payload. A bulk load takes entries
//! sorted by key; where a key comes more than once the last payload wins, as inserting
//! them in order would leave it. Inserts replace, and removals of absent keys do nothing;
//! neither reports what was there, since a log-structured index (a removal is a tombstone)
//! would have to look it up first. Every kind is checked against [`BTreeMap`] (the
//! reference, [`OrderedMap`]) by state-machine property tests.
//!
//! Kinds:
//! - [`OrderedMap`]: `std::collections::BTreeMap`, the oracle, also benchmarked.
//! - [`DynamicPgm`]: paper 3's PGM-Index (section 2.2, "tree-merge"): a log-structured
//!   set of sorted runs, each large one indexed by a static PGM of the index family
//!   (ε = 16, as paper 3's Table 1), merged like an LSM-tree; removals are tombstones.
//! - [`Alex`]: a gapped-array index in the manner of ALEX: inner nodes whose models compute
//!   the child to follow, data nodes of entries at their predicted positions with gaps
//!   between, split or expanded as a cost model decides.
//! - [`Lipp`]: a precise-position index in the manner of LIPP: every key at the slot its
//!   node's model computes, conflicts pushed into child nodes, subtrees rebuilt by the
//!   paper's ratios.
//! - [`BTree`]: an in-memory B+tree in the manner of STX (paper 3's B+tree baseline).
//! - [`Art`]: an adaptive radix tree (paper 3's ART): nodes of 4, 16, 48 and 256
//!   children over the key's bytes, leaves as high as they are unique.
//!
//! [`BTreeMap`]: std::collections::BTreeMap

pub mod alex;
pub mod any;
pub mod art;
pub mod btree;
pub mod concurrent;
pub mod dynamic_pgm;
pub mod lipp;
pub mod oracle;
pub mod workload;

#[cfg(test)]
mod tests;

pub use alex::{Alex, AlexParams};
pub use any::AnyUpdatable;
pub use art::Art;
pub use btree::{BTree, BTreeParams};
pub use dynamic_pgm::{DynamicPgm, DynamicPgmParams};
pub use lipp::{Lipp, LippModel, LippParams};
pub use oracle::OrderedMap;
pub use workload::{Op, Plan, Workload, plan, plan_shift};

use crate::{Error, Result};

/// The updatable kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// [`DynamicPgm`].
    DynamicPgm,
    /// [`Alex`].
    Alex,
    /// [`Lipp`].
    Lipp,
    /// [`BTree`].
    Btree,
    /// [`Art`].
    Art,
    /// [`OrderedMap`] (`std::collections::BTreeMap`).
    BTreeMap,
}

crate::names::name_table!(Kind, "updatable index kind", [
    DynamicPgm => "dynamic-pgm",
    Alex => "alex",
    Lipp => "lipp",
    Btree => "btree",
    Art => "art",
    BTreeMap => "btreemap",
]);

/// Where an index's work went, summed since it was built (paper 3, Fig. 3 and Table 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// Nodes (or sorted runs) visited by lookups, inserts and removals.
    pub nodes_traversed: u64,
    /// Entries moved to make room or to merge (shifts within arrays, copies in merges).
    pub keys_shifted: u64,
    /// Nodes (or runs and their models) created after the bulk load.
    pub nodes_created: u64,
    /// Structure modifications: splits, expansions, merges, rebuilds.
    pub structure_modifications: u64,
}

/// The phases of an insert, as paper 3's Fig. 3 divides its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Finding where the key goes: the descent and the search in the node (the lookup
    /// that is an insert's first step).
    Search,
    /// Putting the entry there: shifting entries to open a gap (ALEX, a B+tree's leaf) or
    /// chaining a new node on a conflict (LIPP).
    Collision,
    /// Updating the statistics the index keeps to decide its SMOs (ALEX's per-node costs,
    /// LIPP's counters on every node of the path).
    Statistics,
    /// Structure modifications: expansions, splits, rebuilds.
    Smo,
    /// The whole insert, where a kind does not divide it.
    Undivided,
}

crate::names::name_table!(Phase, "insert phase", [
    Search => "search",
    Collision => "collision",
    Statistics => "statistics",
    Smo => "smo",
    Undivided => "undivided",
]);

/// Told where an insert's phases end (paper 3, Fig. 3): a kind calls [`start`] as an
/// insert begins and [`lap`] as each phase ends, the time since the last call going to
/// that phase. The plain [`Updatable::insert`] passes [`NoClock`], which compiles to
/// nothing.
///
/// [`start`]: PhaseClock::start
/// [`lap`]: PhaseClock::lap
pub trait PhaseClock {
    /// An insert begins.
    fn start(&mut self);
    /// `phase` ends now.
    fn lap(&mut self, phase: Phase);
}

/// The clock of an insert not timed.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoClock;

impl PhaseClock for NoClock {
    #[inline(always)]
    fn start(&mut self) {}
    #[inline(always)]
    fn lap(&mut self, _: Phase) {}
}

/// An index of `u64` keys to `u64` payloads that takes inserts and removals.
///
/// Invariant: after any sequence of calls it answers exactly as a `BTreeMap` that was
/// given the same bulk load and the same calls.
pub trait Updatable: Sized {
    /// Builds the index over `entries`, sorted by key (duplicates allowed: the last
    /// payload of a key wins). Fails on entries out of order.
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self>;

    /// The payload of `key`.
    fn get(&mut self, key: u64) -> Option<u64>;

    /// Sets `key`'s payload (replacing any it had).
    fn insert(&mut self, key: u64, payload: u64);

    /// [`insert`](Self::insert), telling `clock` where its phases end (paper 3, Fig. 3).
    /// A kind that does not divide its inserts times each as [`Phase::Undivided`].
    fn insert_timed(&mut self, key: u64, payload: u64, clock: &mut impl PhaseClock) {
        clock.start();
        self.insert(key, payload);
        clock.lap(Phase::Undivided);
    }

    /// Removes `key` (nothing happens where it is absent).
    fn remove(&mut self, key: u64);

    /// Appends to `out` the first `n` entries (in key order) whose keys are at least
    /// `from`; returns how many it appended.
    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize;

    /// Bytes of the whole structure in memory, payloads, keys and spare room included.
    fn size_in_bytes(&self) -> u64;

    /// Where the work went since it was built.
    fn counters(&self) -> Counters;

    /// Walks the whole structure and checks the invariants its lookups rely on (for tests
    /// and `--verify`); the first broken one, in words.
    fn check_structure(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// Fails unless `entries` are sorted by key (equal keys allowed).
pub(crate) fn check_sorted(entries: &[(u64, u64)], what: &'static str) -> Result<()> {
    match entries.windows(2).position(|w| w[0].0 > w[1].0) {
        None => Ok(()),
        Some(i) => Err(Error::misuse(
            what,
            format!(
                "a bulk load needs entries sorted by key, and key {} at position {} follows {}",
                entries[i + 1].0,
                i + 1,
                entries[i].0
            ),
        )),
    }
}

/// Fails unless `entries` are sorted by key (equal keys allowed), naming `what` (for the
/// kinds built outside the library).
pub fn check_sorted_entries(entries: &[(u64, u64)], what: &'static str) -> Result<()> {
    check_sorted(entries, what)
}

/// `entries` (sorted) with each key once, its last payload kept.
pub(crate) fn last_of_each_key(entries: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(entries.len());
    for &(k, v) in entries {
        match out.last_mut() {
            Some(last) if last.0 == k => last.1 = v,
            _ => out.push((k, v)),
        }
    }
    out
}
