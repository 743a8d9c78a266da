//! LIPP+ (paper 3, sections 2.3 and 4.2; GRE's `lippol`, the `per_items` branch of
//! lippolc): the LIPP-like index of [`Lipp`](super::Lipp) made safe for many threads, with
//! the same models (FMCD), conflict nodes and rebuild rule.
//!
//! - **One optimistic lock per item** (slot), no lock coupling: a lookup reads an item
//!   under its version and checks only that item before going on to the child it names; a
//!   writer upgrades the one item it changes (an empty slot takes the entry; a slot holding
//!   another key becomes a child of two). Any failure starts again from the root.
//! - **Statistics on every node of the path**: each new key adds one to the subtree size,
//!   the inserts and (for a conflict) the conflicts of every node it passed, root included,
//!   by atomic read-modify-writes. These shared counters, written by every insert, are what
//!   paper 3 blames for LIPP+ not scaling with writes (section 4.2); they are kept.
//! - **Rebuild**: the highest node on the path whose subtree has grown to twice the keys it
//!   was built with, holds at least [`MIN_REBUILD`] keys and took conflicts on at least a
//!   tenth of its inserts is rebuilt (paper 3's Table 1: 2 and 0.1), unless it was built
//!   with more than [`FIXED_ABOVE`] keys (LIPP+'s "fixed" nodes). The rebuilder locks the
//!   parent's item, then try-locks every item of the subtree (giving up, and unlocking, at
//!   the first it cannot take), collects the entries, builds the subtree anew with FMCD out
//!   of place, and publishes it by one pointer store under the parent's item lock (or as
//!   the root). The old items are left obsolete, so every thread still in the old subtree
//!   starts again. A flag on the subtree's node keeps the inserts that see the same
//!   statistics meanwhile from trying too (LIPP+ lets them, each freeze that fails
//!   unlocking and so restarting the readers there).
//! - **Epoch-based reclamation** (`crossbeam-epoch`; LIPP+ uses HOT's epochs): a replaced
//!   subtree is freed once every thread pinned before its replacement has let go.
//!
//! Departures from GRE's code, where that code is wrong: a lookup copies the entry before
//! it validates (LIPP+ reads it after); an insert of a present key updates it and a removal
//! of an absent key removes nothing (LIPP+ compares no keys there: it builds a node of two
//! equal keys and aborts, or removes whichever key shares the slot); the rebuild counts the
//! entries it collects (LIPP+ trusts the size counters, bumped after the items unlock, and
//! can overrun its buffer); a node emptied by removals stays (LIPP+ frees it); and scans
//! exist (LIPP+ has none): each item is read under its version, and a failed one resumes
//! from the root after the last key returned.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, Ordering};

use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned, Shared};

use super::{Fit, Line, LippParams};
use crate::Result;
use crate::updatable::concurrent::{Concurrent, OptLock, back_off};
use crate::updatable::{check_sorted, last_of_each_key};

const RELAXED: Ordering = Ordering::Relaxed;
const ACQUIRE: Ordering = Ordering::Acquire;
const RELEASE: Ordering = Ordering::Release;

/// Subtrees that hold fewer keys are never rebuilt (LIPP+).
pub const MIN_REBUILD: i64 = 64;
/// Nodes built with more keys than this are never rebuilt (LIPP+'s "fixed" nodes).
pub const FIXED_ABOVE: u64 = 1_000_000;

const EMPTY: u8 = 0;
const ENTRY: u8 = 1;
const CHILD: u8 = 2;

/// The LIPP+ index.
pub struct LippPlus {
    params: LippParams,
    root: Atomic<Node>,
    /// Subtrees rebuilt since the bulk load.
    rebuilds: AtomicU64,
}

/// A slot: empty, an entry, or a child node, under its own optimistic lock (32 bytes, as
/// LIPP+'s item).
struct Item {
    lock: OptLock,
    kind: AtomicU8,
    /// The entry's key, or the child's address.
    key: AtomicU64,
    payload: AtomicU64,
}

impl Item {
    fn empty() -> Item {
        Item {
            lock: OptLock::new(),
            kind: AtomicU8::new(EMPTY),
            key: AtomicU64::new(0),
            payload: AtomicU64::new(0),
        }
    }

    /// The child an item of kind [`CHILD`] names (the caller holds its lock).
    fn child<'g>(&self, guard: &'g Guard) -> Shared<'g, Node> {
        child_at(self.key.load(RELAXED), guard)
    }

    /// Makes the item (locked by the caller) a child.
    fn set_child(&self, child: Shared<'_, Node>) {
        self.key
            .store(child.as_raw().expose_provenance() as u64, RELAXED);
        self.kind.store(CHILD, RELAXED);
    }

    fn set_entry(&self, key: u64, payload: u64) {
        self.key.store(key, RELAXED);
        self.payload.store(payload, RELAXED);
        self.kind.store(ENTRY, RELAXED);
    }
}

/// A node: its line and items, and its subtree's statistics.
struct Node {
    line: Line,
    items: Box<[Item]>,
    /// Keys the subtree was built with.
    build_size: u64,
    /// Keys in the subtree now, inserts into it since the build, and the conflicts those
    /// caused.
    size: AtomicI64,
    inserts: AtomicU64,
    conflicts: AtomicU64,
    /// Set while a thread tries to rebuild the subtree, so that the inserts behind it,
    /// seeing the same statistics, do not queue to try too.
    rebuilding: AtomicBool,
}

impl Node {
    /// A node over `entries` (sorted, distinct; none makes an empty node of two slots),
    /// its shared slots built into children the same way.
    fn build<'g>(entries: &[(u64, u64)], fit: Fit, guard: &'g Guard) -> Shared<'g, Node> {
        let line = match entries {
            [] => Line::EMPTY,
            _ => Line::fit(entries, fit),
        };
        let node = Node {
            line,
            items: (0..line.slots).map(|_| Item::empty()).collect(),
            build_size: entries.len() as u64,
            size: AtomicI64::new(entries.len() as i64),
            inserts: AtomicU64::new(0),
            conflicts: AtomicU64::new(0),
            rebuilding: AtomicBool::new(false),
        };
        line.runs(entries, |s, run| {
            if run.len() == 1 {
                node.items[s].set_entry(entries[run.start].0, entries[run.start].1);
            } else {
                node.items[s].set_child(Node::build(&entries[run], fit, guard));
            }
        });
        Owned::new(node).into_shared(guard)
    }

    fn item(&self, key: u64) -> &Item {
        &self.items[self.line.slot(key)]
    }

    /// Whether the subtree's statistics call for a rebuild (LIPP+'s rule).
    fn due(&self, params: &LippParams) -> bool {
        let size = self.size.load(RELAXED);
        let inserts = self.inserts.load(RELAXED) as f64;
        self.build_size <= FIXED_ABOVE
            && size >= MIN_REBUILD
            && size as f64 >= params.insert_ratio * self.build_size as f64
            && self.conflicts.load(RELAXED) as f64 >= params.conflict_ratio * inserts
    }
}

/// The node behind `p`, loaded from the tree or just made under `'g`.
#[expect(
    unsafe_code,
    reason = "epoch-protected pointers, as LIPP+ reclaims nodes"
)]
fn at<'g>(p: Shared<'g, Node>) -> &'g Node {
    // SAFETY: the root and every child item name a node, and a node is destroyed only by
    // `LippPlus::rebuild` (after it is unlinked, through the epoch) or by `drop`; `p` was
    // read (and its item validated) under the guard of lifetime `'g`, pinned since, so its
    // node outlives `'g`.
    unsafe { p.deref() }
}

/// What a read of one item under its version found.
enum Read<'g> {
    Empty,
    Entry(u64, u64),
    Child(Shared<'g, Node>),
}

/// The node at address `addr` (an item's `key` when it names a child).
fn child_at(addr: u64, _guard: &Guard) -> Shared<'_, Node> {
    Shared::from(std::ptr::with_exposed_provenance::<Node>(addr as usize))
}

/// Reads `item` under its version: `None` where it is locked, obsolete or changed. The
/// words are checked before a child's address is made a pointer (a torn read may pair a
/// child's kind with an entry's key).
fn read<'g>(item: &Item, guard: &'g Guard) -> Option<(Read<'g>, u64)> {
    let version = item.lock.read()?;
    let kind = item.kind.load(RELAXED);
    let (key, payload) = (item.key.load(RELAXED), item.payload.load(RELAXED));
    if !item.lock.check(version) {
        return None;
    }
    let found = match kind {
        EMPTY => Read::Empty,
        ENTRY => Read::Entry(key, payload),
        _ => Read::Child(child_at(key, guard)),
    };
    Some((found, version))
}

impl LippPlus {
    /// An index over `entries` (sorted; the last payload of a key wins) with `params`.
    pub fn with_params(entries: &[(u64, u64)], params: LippParams) -> Result<LippPlus> {
        check_sorted(entries, "LippPlus::bulk_load")?;
        params.check()?;
        let entries = last_of_each_key(entries);
        let guard = &epoch::pin();
        let root = Node::build(&entries, Fit::of(&params), guard);
        Ok(LippPlus {
            params,
            root: Atomic::from(root),
            rebuilds: AtomicU64::new(0),
        })
    }

    /// Subtrees rebuilt since the bulk load.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds.load(RELAXED)
    }

    /// Rebuilds `path[i]`'s subtree (`key` led through it), unless another thread holds
    /// one of its items: then the rebuild is left to a later insert.
    fn rebuild(&self, path: &[Shared<'_, Node>], i: usize, key: u64, guard: &Guard) {
        let sub = path[i];
        if at(sub).rebuilding.swap(true, ACQUIRE) {
            return;
        }
        if !self.try_rebuild(path, i, key, guard) {
            at(sub).rebuilding.store(false, RELEASE);
        }
    }

    /// [`LippPlus::rebuild`] once the subtree is claimed: whether it was rebuilt.
    fn try_rebuild(&self, path: &[Shared<'_, Node>], i: usize, key: u64, guard: &Guard) -> bool {
        let sub = path[i];
        let parent_item = match i {
            0 => None,
            _ => {
                let item = at(path[i - 1]).item(key);
                if !item.lock.lock() {
                    return false;
                }
                if item.kind.load(RELAXED) != CHILD || item.child(guard) != sub {
                    item.lock.unlock();
                    return false;
                }
                Some(item)
            }
        };
        // Freeze: every item of the subtree, breadth first.
        let mut nodes = vec![sub];
        let mut frozen: Vec<&Item> = Vec::new();
        let mut k = 0;
        while k < nodes.len() {
            for item in at(nodes[k]).items.iter() {
                if !item.lock.try_lock() {
                    frozen.iter().for_each(|i| i.lock.unlock());
                    if let Some(p) = parent_item {
                        p.lock.unlock();
                    }
                    return false;
                }
                frozen.push(item);
                if item.kind.load(RELAXED) == CHILD {
                    nodes.push(item.child(guard));
                }
            }
            k += 1;
        }
        if parent_item.is_none() && self.root.load(ACQUIRE, guard) != sub {
            // Another rebuild replaced the root (its items would have failed the freeze,
            // so this does not happen; checked all the same).
            frozen.iter().for_each(|i| i.lock.unlock());
            return false;
        }
        let mut entries = Vec::new();
        collect(at(sub), &mut entries, guard);
        let new = Node::build(&entries, Fit::of(&self.params), guard);
        match parent_item {
            Some(item) => {
                item.set_child(new);
                item.lock.unlock();
            }
            None => self.root.store(new, RELEASE),
        }
        // Every thread still in the old subtree starts again; a rebuilder waiting on one of
        // its items gives up.
        frozen.iter().for_each(|i| i.lock.unlock_obsolete());
        for node in nodes {
            retire(node, guard);
        }
        self.rebuilds.fetch_add(1, RELAXED);
        true
    }

    /// Every node of the tree, parents before children, each child read under its item's
    /// version (a subtree being rebuilt meanwhile is left out).
    fn nodes<'g>(&self, guard: &'g Guard) -> Vec<Shared<'g, Node>> {
        let mut nodes = vec![self.root.load(ACQUIRE, guard)];
        let mut k = 0;
        while k < nodes.len() {
            for item in at(nodes[k]).items.iter() {
                if let Some((Read::Child(c), _)) = read(item, guard) {
                    nodes.push(c);
                }
            }
            k += 1;
        }
        nodes
    }
}

/// Frees `node`, unlinked from the tree, once no pinned thread can hold it.
#[expect(unsafe_code, reason = "epoch-based reclamation of a replaced node")]
fn retire(node: Shared<'_, Node>, guard: &Guard) {
    // SAFETY: the rebuild unlinked `node`'s subtree (its parent item names the new one) and
    // retires each of its nodes once; threads still in it are pinned.
    unsafe { guard.defer_destroy(node) }
}

/// Appends the entries below `node` (its items locked by the caller) in key order.
fn collect(node: &Node, out: &mut Vec<(u64, u64)>, guard: &Guard) {
    for item in node.items.iter() {
        match item.kind.load(RELAXED) {
            ENTRY => out.push((item.key.load(RELAXED), item.payload.load(RELAXED))),
            CHILD => collect(at(item.child(guard)), out, guard),
            _ => {}
        }
    }
}

impl Drop for LippPlus {
    #[expect(unsafe_code, reason = "freeing the tree's nodes, each once")]
    fn drop(&mut self) {
        let guard = &epoch::pin();
        for node in self.nodes(guard) {
            // SAFETY: `&mut self`: no other thread uses the tree; each node of the tree is
            // listed once (it is a tree), and none of them was retired.
            drop(unsafe { node.into_owned() });
        }
    }
}

/// What a scan of a subtree ended with.
enum Scanned {
    /// It holds no more entries at or above the scan's start.
    Done,
    /// The output is full.
    Full,
    /// An item changed under it: resume from the root.
    Restart,
}

/// Appends the entries of `node`'s subtree with keys at least `from` until `out` holds
/// `until`, each read under its item's version.
fn scan_node(
    node: &Node,
    from: u64,
    until: usize,
    out: &mut Vec<(u64, u64)>,
    guard: &Guard,
) -> Scanned {
    for item in &node.items[node.line.slot(from)..] {
        if out.len() >= until {
            return Scanned::Full;
        }
        match read(item, guard) {
            None => return Scanned::Restart,
            Some((Read::Empty, _)) => {}
            Some((Read::Entry(k, p), _)) => {
                if k >= from {
                    out.push((k, p));
                }
            }
            Some((Read::Child(c), _)) => match scan_node(at(c), from, until, out, guard) {
                Scanned::Done => {}
                other => return other,
            },
        }
    }
    if out.len() >= until {
        Scanned::Full
    } else {
        Scanned::Done
    }
}

impl Concurrent for LippPlus {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        LippPlus::with_params(entries, LippParams::default())
    }

    fn get(&self, key: u64) -> Option<u64> {
        let guard = &epoch::pin();
        let mut spins = 0;
        'restart: loop {
            let mut node = at(self.root.load(ACQUIRE, guard));
            loop {
                match read(node.item(key), guard) {
                    None => {
                        back_off(&mut spins);
                        continue 'restart;
                    }
                    Some((Read::Empty, _)) => return None,
                    Some((Read::Entry(k, p), _)) => return (k == key).then_some(p),
                    Some((Read::Child(c), _)) => node = at(c),
                }
            }
        }
    }

    fn insert(&self, key: u64, payload: u64) {
        let guard = &epoch::pin();
        let mut path: Vec<Shared<'_, Node>> = Vec::with_capacity(16);
        let mut spins = 0;
        'restart: loop {
            path.clear();
            let mut p = self.root.load(ACQUIRE, guard);
            let conflict = loop {
                let item = at(p).item(key);
                let Some((found, version)) = read(item, guard) else {
                    back_off(&mut spins);
                    continue 'restart;
                };
                if let Read::Child(c) = found {
                    path.push(p);
                    p = c;
                    continue;
                }
                if !item.lock.try_upgrade(version) {
                    back_off(&mut spins);
                    continue 'restart;
                }
                path.push(p);
                match found {
                    Read::Entry(k, _) if k == key => {
                        item.payload.store(payload, RELAXED);
                        item.lock.unlock();
                        return;
                    }
                    Read::Entry(k, old) => {
                        // A conflict: the two keys go into a node of their own.
                        let mut pair = [(k, old), (key, payload)];
                        pair.sort_unstable_by_key(|e| e.0);
                        let per_key = (self.params.conflict_slots / 2).max(1);
                        item.set_child(Node::build(&pair, Fit::MinMax(per_key), guard));
                        item.lock.unlock();
                        break true;
                    }
                    _ => {
                        item.set_entry(key, payload);
                        item.lock.unlock();
                        break false;
                    }
                }
            };
            for &n in &path {
                let n = at(n);
                n.size.fetch_add(1, RELAXED);
                n.inserts.fetch_add(1, RELAXED);
                n.conflicts.fetch_add(u64::from(conflict), RELAXED);
            }
            if let Some(i) = path.iter().position(|&n| at(n).due(&self.params)) {
                self.rebuild(&path, i, key, guard);
            }
            return;
        }
    }

    fn remove(&self, key: u64) {
        let guard = &epoch::pin();
        let mut path: Vec<Shared<'_, Node>> = Vec::with_capacity(16);
        let mut spins = 0;
        'restart: loop {
            path.clear();
            let mut p = self.root.load(ACQUIRE, guard);
            loop {
                let item = at(p).item(key);
                let Some((found, version)) = read(item, guard) else {
                    back_off(&mut spins);
                    continue 'restart;
                };
                path.push(p);
                match found {
                    Read::Child(c) => p = c,
                    Read::Entry(k, _) if k == key => {
                        if !item.lock.try_upgrade(version) {
                            back_off(&mut spins);
                            continue 'restart;
                        }
                        item.kind.store(EMPTY, RELAXED);
                        item.lock.unlock();
                        for &n in &path {
                            at(n).size.fetch_sub(1, RELAXED);
                        }
                        return;
                    }
                    _ => return,
                }
            }
        }
    }

    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let guard = &epoch::pin();
        let before = out.len();
        let until = before.saturating_add(n);
        let mut from = from;
        let mut spins = 0;
        loop {
            let at_start = out.len();
            match scan_node(at(self.root.load(ACQUIRE, guard)), from, until, out, guard) {
                Scanned::Done | Scanned::Full => return out.len() - before,
                Scanned::Restart => {
                    if out.len() > at_start {
                        match out[out.len() - 1].0.checked_add(1) {
                            Some(next) => from = next,
                            None => return out.len() - before,
                        }
                    }
                    back_off(&mut spins);
                }
            }
        }
    }

    fn size_in_bytes(&self) -> u64 {
        let guard = &epoch::pin();
        let nodes = self
            .nodes(guard)
            .into_iter()
            .map(|n| (size_of::<Node>() + at(n).items.len() * size_of::<Item>()) as u64);
        size_of::<Self>() as u64 + nodes.sum::<u64>()
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        /// Checks `node`'s subtree (`parents`: the lines above and the slot taken in each);
        /// returns its entries.
        fn check(
            node: &Node,
            parents: &mut Vec<(Line, usize)>,
            guard: &Guard,
        ) -> std::result::Result<i64, String> {
            let mut entries = 0;
            for (s, item) in node.items.iter().enumerate() {
                if item.lock.is_locked() || item.lock.is_obsolete() {
                    return Err(format!(
                        "item {s} of a node in the tree is locked or obsolete"
                    ));
                }
                match item.kind.load(RELAXED) {
                    ENTRY => {
                        let k = item.key.load(RELAXED);
                        if node.line.slot(k) != s {
                            return Err(format!(
                                "key {k} sits in slot {s}, its line says {}",
                                node.line.slot(k)
                            ));
                        }
                        if let Some((line, ps)) = parents.iter().find(|(l, ps)| l.slot(k) != *ps) {
                            return Err(format!(
                                "key {k} lies under slot {ps} of a node that sends it to {}",
                                line.slot(k)
                            ));
                        }
                        entries += 1;
                    }
                    CHILD => {
                        parents.push((node.line, s));
                        entries += check(at(item.child(guard)), parents, guard)?;
                        parents.pop();
                    }
                    _ => {}
                }
            }
            if node.size.load(RELAXED) != entries {
                return Err(format!(
                    "a node counts {} keys in its subtree and holds {entries}",
                    node.size.load(RELAXED)
                ));
            }
            Ok(entries)
        }
        let guard = &epoch::pin();
        check(at(self.root.load(ACQUIRE, guard)), &mut Vec::new(), guard).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updatable::concurrent::conformance::check_kind;

    #[test]
    fn lipp_plus_is_linearizable() {
        check_kind::<LippPlus>();
    }

    #[test]
    fn threads_inserting_into_one_region_rebuild_it_and_lose_nothing() {
        // Keys close together under a root line built over keys far apart: conflicts
        // chain, and the subtree is rebuilt again and again while four threads insert.
        let bulk: Vec<(u64, u64)> = (0..1_000u64).map(|i| (i << 30, i)).collect();
        let l = LippPlus::bulk_load(&bulk).unwrap();
        let l = &l;
        std::thread::scope(|s| {
            for t in 0..4u64 {
                s.spawn(move || {
                    for i in 0..10_000u64 {
                        let key = (7 << 30) + 1 + i * 4 + t;
                        l.insert(key, key ^ 3);
                        assert_eq!(l.get(key), Some(key ^ 3), "key {key}");
                        if i % 5 == 0 {
                            l.remove(key);
                            assert_eq!(l.get(key), None, "removed key {key}");
                            l.insert(key, key ^ 3);
                        }
                    }
                });
            }
        });
        l.check_structure().unwrap();
        assert!(l.rebuilds() > 0, "no rebuild happened");
        for key in (7 << 30) + 1..(7 << 30) + 1 + 40_000 {
            assert_eq!(l.get(key), Some(key ^ 3), "key {key}");
        }
        let mut all = Vec::new();
        l.scan(0, usize::MAX, &mut all);
        assert_eq!(all.len(), 41_000);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn an_empty_index_takes_keys_anywhere() {
        let l = LippPlus::bulk_load(&[]).unwrap();
        for k in [u64::MAX, 0, 7, u64::MAX - 1] {
            l.insert(k, k ^ 1);
        }
        let mut all = Vec::new();
        l.scan(0, 10, &mut all);
        let keys: Vec<u64> = all.iter().map(|e| e.0).collect();
        assert_eq!(keys, [0, 7, u64::MAX - 1, u64::MAX]);
        l.remove(7);
        l.remove(8);
        assert_eq!(l.get(7), None);
        l.check_structure().unwrap();
    }

    #[test]
    fn an_item_is_as_large_as_lipp_plus_makes_it() {
        assert_eq!(size_of::<Item>(), 32);
    }
}
