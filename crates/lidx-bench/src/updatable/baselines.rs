//! Paper 3's concurrent traditional indexes (GRE, section 3.1: B+-TreeOLC, ART-OLC), from
//! maintained crates behind lidx's [`Concurrent`] contract, and the kinds a threaded run
//! can name.
//!
//! - [`ArtOlc`]: `congee`, a port of Leis et al.'s ART with optimistic lock coupling and
//!   epoch-based reclamation (GRE's ART-OLC, with HOT's reclamation ported to it).
//! - [`BTreeOlc`]: `ferntree`, an OLC B+tree in the manner of LeanStore, leaves linked for
//!   scans (GRE's B+-TreeOLC, to which GRE added side links).
//! - [`SccTree`]: `scc::TreeIndex`, a B+tree with lock-free reads of immutable entries:
//!   a second, mature B+tree that is not OLC.
//!
//! No skip list: `crossbeam-skiplist` 0.1.3, the common lock-free ordered map in Rust,
//! fails the conformance checks. A lookup of a key present throughout returned nothing
//! while another thread updated that key (crossbeam issue #1023, fixed in its repository
//! but not released).
//!
//! HOT-ROWEX, Masstree and Wormhole are not here: GRE found them behind ART-OLC on integer
//! keys, no maintained Rust crate exists for the first and last, and none takes deletes.

use std::ops::Bound;

use lidx::updatable::concurrent::Concurrent;

/// The concurrent kinds: paper 3's learned ones (lidx's own) and the traditional
/// baselines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConcurrentKind {
    /// [`AlexPlus`](lidx::updatable::concurrent::AlexPlus).
    AlexPlus,
    /// [`LippPlus`](lidx::updatable::concurrent::LippPlus).
    LippPlus,
    /// [`Finedex`](lidx::updatable::concurrent::Finedex).
    Finedex,
    /// [`ArtOlc`].
    ArtOlc,
    /// [`BTreeOlc`].
    BTreeOlc,
    /// [`SccTree`].
    SccTree,
    /// [`LockedMap`](lidx::updatable::concurrent::LockedMap): a `BTreeMap` behind one
    /// reader-writer lock.
    LockedMap,
}

lidx::name_table!(ConcurrentKind, "concurrent index kind", [
    AlexPlus => "alex+",
    LippPlus => "lipp+",
    Finedex => "finedex",
    ArtOlc => "art-olc",
    BTreeOlc => "btree-olc",
    SccTree => "scc-tree",
    LockedMap => "locked-btreemap",
]);

impl ConcurrentKind {
    /// Whether the kind is a learned index designed for concurrency from the start
    /// (paper 3's XIndex and FINEdex), not a single-thread one made thread-safe (ALEX+).
    pub fn is_native_learned(self) -> bool {
        self == ConcurrentKind::Finedex
    }

    /// Whether paper 3 counts the kind as a learned index.
    pub fn is_learned(self) -> bool {
        match self {
            ConcurrentKind::AlexPlus | ConcurrentKind::LippPlus | ConcurrentKind::Finedex => true,
            ConcurrentKind::ArtOlc
            | ConcurrentKind::BTreeOlc
            | ConcurrentKind::SccTree
            | ConcurrentKind::LockedMap => false,
        }
    }
}

/// Inserts a bulk load's entries one by one, on the calling thread (none of the crates
/// has a bulk load); the last payload of a key wins, as the contract says.
fn load_by_inserts<C: Concurrent>(index: C, entries: &[(u64, u64)]) -> lidx::Result<C> {
    lidx::updatable::check_sorted_entries(entries, "bulk_load")?;
    for &(k, v) in entries {
        index.insert(k, v);
    }
    Ok(index)
}

/// `congee::Congee`, an ART with optimistic lock coupling.
pub struct ArtOlc(congee::Congee<usize, usize>);

/// Entries a scan of [`ArtOlc`] copies out at a time.
const ART_SCAN_BATCH: usize = 128;

impl Concurrent for ArtOlc {
    fn bulk_load(entries: &[(u64, u64)]) -> lidx::Result<Self> {
        load_by_inserts(ArtOlc(congee::Congee::default()), entries)
    }

    fn get(&self, key: u64) -> Option<u64> {
        let guard = self.0.pin();
        self.0.get(&(key as usize), &guard).map(|v| v as u64)
    }

    fn insert(&self, key: u64, payload: u64) {
        let guard = self.0.pin();
        if let Err(e) = self.0.insert(key as usize, payload as usize, &guard) {
            panic!("the ART could not allocate a node: {e:?}");
        }
    }

    fn remove(&self, key: u64) {
        let guard = self.0.pin();
        self.0.remove(&(key as usize), &guard);
    }

    /// In batches of 128 through congee's range, whose end is exclusive: the key
    /// `u64::MAX` is looked up on its own.
    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let guard = self.0.pin();
        let before = out.len();
        let mut buf = [(0usize, 0usize); ART_SCAN_BATCH];
        let mut start = from as usize;
        let mut left = n;
        while left > 0 {
            let want = left.min(ART_SCAN_BATCH);
            let got = self.0.range(&start, &usize::MAX, &mut buf[..want], &guard);
            out.extend(buf[..got].iter().map(|&(k, v)| (k as u64, v as u64)));
            left -= got;
            match buf[..got].last() {
                Some(&(last, _)) if got == want && last < usize::MAX - 1 => start = last + 1,
                _ => break,
            }
        }
        if left > 0
            && let Some(v) = self.0.get(&usize::MAX, &guard)
        {
            out.push((u64::MAX, v as u64));
        }
        out.len() - before
    }

    /// congee tells no size (its statistics print megabytes): the allocator measures it.
    fn size_in_bytes(&self) -> u64 {
        0
    }
}

/// `ferntree::Tree`, an OLC B+tree.
pub struct BTreeOlc(ferntree::Tree<u64, u64>);

impl Concurrent for BTreeOlc {
    fn bulk_load(entries: &[(u64, u64)]) -> lidx::Result<Self> {
        load_by_inserts(BTreeOlc(ferntree::Tree::new()), entries)
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.0.get_optimistic(&key)
    }

    fn insert(&self, key: u64, payload: u64) {
        self.0.insert(key, payload);
    }

    fn remove(&self, key: u64) {
        self.0.remove(&key);
    }

    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let before = out.len();
        let mut it = self.0.range(Bound::Included(&from), Bound::Unbounded);
        while out.len() - before < n {
            match it.next() {
                Some((&k, &v)) => out.push((k, v)),
                None => break,
            }
        }
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        0
    }
}

/// `scc::TreeIndex`.
pub struct SccTree(scc::TreeIndex<u64, u64>);

impl Concurrent for SccTree {
    fn bulk_load(entries: &[(u64, u64)]) -> lidx::Result<Self> {
        load_by_inserts(SccTree(scc::TreeIndex::new()), entries)
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.0.peek_with(&key, |_, &v| v)
    }

    fn insert(&self, key: u64, payload: u64) {
        self.0.upsert_sync(key, payload);
    }

    fn remove(&self, key: u64) {
        self.0.remove_sync(&key);
    }

    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let before = out.len();
        let guard = scc::Guard::new();
        // scc 3.8's `range` from below the first key spent its time searching from the
        // root again and again (perf: `Range::start_forward`; a scan of all 200K keys took
        // seconds): from there, the plain iterator.
        match self.0.iter(&guard).next() {
            Some((&first, _)) if from <= first => {
                out.extend(self.0.iter(&guard).take(n).map(|(&k, &v)| (k, v)))
            }
            _ => out.extend(self.0.range(from.., &guard).take(n).map(|(&k, &v)| (k, v))),
        }
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lidx::updatable::concurrent::LockedMap;
    use lidx::updatable::concurrent::conformance::check_kind;

    #[test]
    fn the_art_is_linearizable() {
        check_kind::<ArtOlc>();
    }

    #[test]
    fn the_olc_btree_is_linearizable() {
        check_kind::<BTreeOlc>();
    }

    #[test]
    fn the_scc_tree_is_linearizable() {
        check_kind::<SccTree>();
    }

    #[test]
    fn the_locked_map_is_linearizable() {
        check_kind::<LockedMap>();
    }
}
