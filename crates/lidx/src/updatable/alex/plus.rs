//! ALEX+ (paper 3, sections 2.3 and 4.2; GRE's `alexol`, which follows APEX's protocol):
//! the ALEX-like index of [`Alex`](super::Alex) made safe for many threads, with the same
//! nodes, bulk load, densities and cost model.
//!
//! - **One optimistic lock per data node** ([`OptLock`]). A lookup reads the node's
//!   version, searches its gapped array (relaxed atomics), and checks the version after; a
//!   writer *tries* the lock. Either one that fails starts again from the root.
//! - **Model nodes are descended without locks or checks.** Their router and their number
//!   of slots never change once published; a slot changes only by a single pointer store.
//!   Every structural change is out of place, so a stale path ends at a node that is either
//!   current (and still holds the key's range) or obsolete, whose lock fails every reader.
//! - **Structure modifications run out of place**, "new nodes born locked, old nodes die
//!   locked": the writer keeps the full node's lock, builds its replacement (an expanded
//!   node, two halves, or a new model node over two halves), finds the parent again by
//!   descending with the key, takes the parent's *shared* SMO lock and points the node's
//!   slots at the replacement, relinks the leaves, and only then unlocks the new nodes;
//!   the old node stays locked and is marked obsolete. Sideways splits under one parent run
//!   side by side (their slots are disjoint). A parent that must double its slots is
//!   copied under its *exclusive* SMO lock, and the copy is put in the grandparent's slots
//!   the same way (or made the root, under the root lock). Locks are taken from a leaf
//!   upwards only, and a shared holder waits for nothing, so no two writers wait on each
//!   other.
//! - **Leaves are linked** left to right for scans; an SMO rewires the links under a lock
//!   per leaf, taken left to right. A scan reads a leaf in chunks, each under the leaf's
//!   version; where a leaf turns out obsolete it descends again from the last key it
//!   returned.
//! - **Epoch-based reclamation** (`crossbeam-epoch`, as ALEX+ ports HOT's epochs): every
//!   operation runs pinned; a replaced node, no longer pointed at by any current node, is
//!   freed once every thread pinned before its replacement has let go.
//!
//! Departures from GRE's code, where that code is unsafe: the root grows past its last slot
//! out of place (ALEX+ rewrites the root's slot array under readers), and a scan that meets
//! an obsolete leaf descends again instead of spinning on it for ever. Lookups count their
//! search steps for the cost model with racy relaxed stores, as ALEX+'s plain increments
//! do.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned, Shared};
use parking_lot::{Mutex, MutexGuard};

use super::gapped::{self, CostStats};
use super::plan::{
    self, DownSplit, MIN_SLOTS, Model, NodeSink, Router, expected_cost, place, slots_for,
};
use super::{AlexParams, EDGE_REACH, MAX_SPLIT_FANOUT};
use crate::Result;
use crate::updatable::concurrent::{Concurrent, OptLock, back_off};
use crate::updatable::{check_sorted, last_of_each_key};

const RELAXED: Ordering = Ordering::Relaxed;
const ACQUIRE: Ordering = Ordering::Acquire;
const RELEASE: Ordering = Ordering::Release;

/// Entries a scan reads from a leaf under one version.
const SCAN_CHUNK: usize = 64;

/// The ALEX+ index.
pub struct AlexPlus {
    params: AlexParams,
    root: Atomic<Node>,
    /// Held to replace the root (ALEX+'s super-root lock).
    root_lock: Mutex<()>,
    /// Structure modifications so far: expansions, contractions, splits, slot doublings.
    modifications: AtomicU64,
}

enum Node {
    Model(ModelNode),
    Data(DataNode),
}

impl Node {
    fn data(&self) -> &DataNode {
        match self {
            Node::Data(d) => d,
            Node::Model(_) => unreachable!("a data node was expected"),
        }
    }

    fn model(&self) -> &ModelNode {
        match self {
            Node::Model(m) => m,
            Node::Data(_) => unreachable!("a model node was expected"),
        }
    }
}

/// The node behind `p`, loaded from the tree (its root, a slot, a link) or just made
/// under `'g`; `None` for null (a link at an end).
#[expect(
    unsafe_code,
    reason = "epoch-protected pointers, as ALEX+ reclaims nodes"
)]
fn node<'g>(p: Shared<'g, Node>) -> Option<&'g Node> {
    // SAFETY: a node is destroyed only by `retire`, after no current node points at it,
    // and then only once every thread pinned before that has unpinned; `p` was loaded (or
    // made) under the guard of lifetime `'g`, pinned since, so its node outlives `'g`.
    unsafe { p.as_ref() }
}

/// The node behind `p`, which is not null (a root or a slot).
fn at<'g>(p: Shared<'g, Node>) -> &'g Node {
    node(p).expect("the root and the slots are never null")
}

/// Frees node `p`, replaced (obsolete, and pointed at by no current node), once no pinned
/// thread can hold it.
#[expect(unsafe_code, reason = "epoch-based reclamation of a replaced node")]
fn retire(p: Shared<'_, Node>, guard: &Guard) {
    // SAFETY: the caller replaced `p` and unlinked it from every current node (parent
    // slots, the root, neighbours' links), and each node is retired once, by the writer
    // that replaced it; threads that still hold it are pinned, and the epoch outlives them.
    unsafe { guard.defer_destroy(p) }
}

/// A model node: a router and a child per slot (a child may take a run of slots).
struct ModelNode {
    router: Router,
    children: Box<[Atomic<Node>]>,
    /// Distinct children (runs of slots).
    distinct: AtomicUsize,
    smo: SmoLock,
}

impl ModelNode {
    fn new(
        router: Router,
        children: &[Shared<'_, Node>],
        distinct: usize,
        smo: SmoLock,
    ) -> ModelNode {
        ModelNode {
            router,
            children: children.iter().map(|&c| Atomic::from(c)).collect(),
            distinct: AtomicUsize::new(distinct),
            smo,
        }
    }

    fn slot(&self, key: u64) -> usize {
        self.router.slot(key, self.children.len())
    }

    fn child<'g>(&self, slot: usize, guard: &'g Guard) -> Shared<'g, Node> {
        self.children[slot].load(ACQUIRE, guard)
    }

    /// The run of slots `[first, end)` around `at` that point at `child`.
    fn span(&self, at: usize, child: Shared<'_, Node>, guard: &Guard) -> (usize, usize) {
        let mut first = at;
        while first > 0 && self.child(first - 1, guard) == child {
            first -= 1;
        }
        let mut end = at + 1;
        while end < self.children.len() && self.child(end, guard) == child {
            end += 1;
        }
        (first, end)
    }

    fn store(&self, slots: std::ops::Range<usize>, child: Shared<'_, Node>) {
        for s in slots {
            self.children[s].store(child, RELEASE);
        }
    }
}

/// A model node's lock for structure modifications (ALEX+'s shared/exclusive model-node
/// lock): shared by a writer that repoints its own child's slots, exclusive to replace the
/// node, which then stays obsolete. Lookups never take it.
struct SmoLock(AtomicU32);

const SMO_WRITER: u32 = 1 << 31;
const SMO_OBSOLETE: u32 = 1 << 30;
const SMO_READERS: u32 = SMO_OBSOLETE - 1;

impl SmoLock {
    fn new() -> SmoLock {
        SmoLock(AtomicU32::new(0))
    }

    /// Held exclusively by its creator (a copy published before its creator is done).
    fn exclusive() -> SmoLock {
        SmoLock(AtomicU32::new(SMO_WRITER))
    }

    /// Takes the lock shared, waiting out a writer; `false` once the node is obsolete.
    fn lock_shared(&self) -> bool {
        let mut spins = 0;
        loop {
            let v = self.0.load(Ordering::Acquire);
            if v & SMO_OBSOLETE != 0 {
                return false;
            }
            if v & SMO_WRITER == 0
                && self
                    .0
                    .compare_exchange_weak(v, v + 1, Ordering::Acquire, RELAXED)
                    .is_ok()
            {
                return true;
            }
            back_off(&mut spins);
        }
    }

    fn unlock_shared(&self) {
        self.0.fetch_sub(1, Ordering::Release);
    }

    /// Takes the lock exclusive once the shared holders have left; `false` once the node
    /// is obsolete.
    fn lock_exclusive(&self) -> bool {
        let mut spins = 0;
        loop {
            let v = self.0.load(Ordering::Acquire);
            if v & SMO_OBSOLETE != 0 {
                return false;
            }
            if v & SMO_WRITER == 0
                && self
                    .0
                    .compare_exchange_weak(v, v | SMO_WRITER, Ordering::Acquire, RELAXED)
                    .is_ok()
            {
                break;
            }
            back_off(&mut spins);
        }
        while self.0.load(Ordering::Acquire) & SMO_READERS != 0 {
            back_off(&mut spins);
        }
        true
    }

    fn unlock_exclusive(&self) {
        self.0.fetch_and(!SMO_WRITER, Ordering::Release);
    }

    /// Releases an exclusive hold on a node now replaced: every later attempt fails.
    fn unlock_obsolete(&self) {
        self.0.store(SMO_OBSOLETE, Ordering::Release);
    }
}

/// A data node: the gapped array of [`Alex`](super::Alex)'s data nodes in relaxed atomics,
/// under an optimistic lock.
struct DataNode {
    lock: OptLock,
    model: Model,
    /// Sorted: an entry's key, or in a gap the key of the next entry (`u64::MAX` if none).
    keys: Box<[AtomicU64]>,
    payloads: Box<[AtomicU64]>,
    /// Bit `i` is set where slot `i` holds an entry.
    occupied: Box<[AtomicU64]>,
    len: AtomicUsize,
    expected_cost: f64,
    ops: AtomicU64,
    search_steps: AtomicU64,
    inserts: AtomicU64,
    shifts: AtomicU64,
    /// Held while an SMO rewires `prev` and `next` (scans read `next` without it).
    links: Mutex<()>,
    /// The neighbouring leaves (null at the ends, and once this leaf is replaced).
    prev: Atomic<Node>,
    next: Atomic<Node>,
}

impl DataNode {
    /// A data node over `entries` (sorted, distinct keys) with `slots` positions, locked
    /// by its creator.
    fn build(entries: &[(u64, u64)], slots: usize) -> DataNode {
        DataNode::build_expecting(
            entries,
            slots,
            expected_cost(entries, slots),
            CostStats::default(),
        )
    }

    /// [`DataNode::build`], the expected cost and the costs seen so far given (ALEX's plain
    /// expansion keeps both).
    fn build_expecting(
        entries: &[(u64, u64)],
        slots: usize,
        expected: f64,
        seen: CostStats,
    ) -> DataNode {
        let model = Model::fit(entries, slots);
        let mut keys = vec![u64::MAX; slots];
        let mut payloads = vec![0; slots];
        let mut occupied = vec![0u64; slots.div_ceil(64)];
        let mut last = 0;
        place(entries, slots, &model, |i, _, pos| {
            keys[last..pos].fill(entries[i].0);
            keys[pos] = entries[i].0;
            payloads[pos] = entries[i].1;
            occupied[pos / 64] |= 1 << (pos % 64);
            last = pos + 1;
        });
        let atomics = |v: Vec<u64>| v.into_iter().map(AtomicU64::new).collect();
        DataNode {
            lock: OptLock::new_locked(),
            model,
            keys: atomics(keys),
            payloads: atomics(payloads),
            occupied: atomics(occupied),
            len: AtomicUsize::new(entries.len()),
            expected_cost: expected,
            ops: AtomicU64::new(seen.ops),
            search_steps: AtomicU64::new(seen.search_steps),
            inserts: AtomicU64::new(seen.inserts),
            shifts: AtomicU64::new(seen.shifts),
            links: Mutex::new(()),
            prev: Atomic::null(),
            next: Atomic::null(),
        }
    }

    fn slots(&self) -> usize {
        self.keys.len()
    }

    fn len(&self) -> usize {
        self.len.load(RELAXED)
    }

    fn key(&self, i: usize) -> u64 {
        self.keys[i].load(RELAXED)
    }

    fn payload(&self, i: usize) -> u64 {
        self.payloads[i].load(RELAXED)
    }

    fn next_entry(&self, from: usize) -> usize {
        gapped::next_bit(&self.occupied[..], self.slots(), from, 0)
    }

    /// The slot holding `key` (if any), the lower bound it was searched from, and the
    /// search's steps; a reader's answer holds only if its version checks.
    fn find(&self, key: u64) -> (Option<usize>, usize, u64) {
        let (lb, steps) = gapped::lower_bound(&self.keys[..], &self.model, key);
        let at = self.next_entry(lb);
        let found = (at < self.slots() && self.key(at) == key).then_some(at);
        (found, lb, steps)
    }

    /// The payload of `key` (if any) and the search's steps, found without the bitmap as
    /// [`Alex`](super::Alex)'s lookups are; a reader's answer holds only if its version
    /// checks.
    fn lookup(&self, key: u64) -> (Option<u64>, u64) {
        if key == u64::MAX {
            let (found, _, steps) = self.find(key);
            return (found.map(|i| self.payload(i)), steps);
        }
        let (past, steps) = gapped::lower_bound(&self.keys[..], &self.model, key + 1);
        let found = past
            .checked_sub(1)
            .filter(|&i| self.key(i) == key)
            .map(|i| self.payload(i));
        (found, steps)
    }

    /// Counts a search for the cost model: racy (a concurrent count may be lost), as
    /// ALEX+'s are.
    fn count_search(&self, steps: u64) {
        self.ops.store(self.ops.load(RELAXED) + 1, RELAXED);
        self.search_steps
            .store(self.search_steps.load(RELAXED) + steps, RELAXED);
    }

    fn stats(&self) -> CostStats {
        CostStats {
            ops: self.ops.load(RELAXED),
            search_steps: self.search_steps.load(RELAXED),
            inserts: self.inserts.load(RELAXED),
            shifts: self.shifts.load(RELAXED),
        }
    }

    // The writer's side: the caller holds the lock.

    fn store_key(&self, i: usize, key: u64) {
        self.keys[i].store(key, RELAXED);
    }

    fn set(&self, i: usize, on: bool) {
        let word = &self.occupied[i / 64];
        let bit = 1 << (i % 64);
        let w = word.load(RELAXED);
        word.store(if on { w | bit } else { w & !bit }, RELAXED);
    }

    fn is_set(&self, i: usize) -> bool {
        self.occupied[i / 64].load(RELAXED) & (1 << (i % 64)) != 0
    }

    fn is_full(&self, max_density: f64) -> bool {
        let len = self.len();
        len + 1 > (max_density * self.slots() as f64) as usize || len + 1 >= self.slots()
    }

    /// Inserts absent `key`, whose lower bound is `lb`, into a node with a gap, as
    /// [`Alex`](super::Alex) does.
    fn insert_absent(&self, key: u64, payload: u64, lb: usize) {
        let entry = self.next_entry(lb);
        let (pos, shifted) = if lb < entry {
            let pos = self.model.predict(key, self.slots()).clamp(lb, entry - 1);
            (lb..pos).for_each(|i| self.store_key(i, key));
            (pos, 0)
        } else {
            let next_gap = Some(gapped::next_bit(
                &self.occupied[..],
                self.slots(),
                lb,
                u64::MAX,
            ))
            .filter(|&g| g < self.slots());
            match (gapped::prev_gap(&self.occupied[..], lb), next_gap) {
                (Some(l), Some(r)) if lb - l < r - lb => self.shift_left(l, lb),
                (_, Some(r)) => self.shift_right(lb, r),
                (Some(l), None) => self.shift_left(l, lb),
                (None, None) => unreachable!("insert_absent needs a gap"),
            }
        };
        self.store_key(pos, key);
        self.payloads[pos].store(payload, RELAXED);
        self.set(pos, true);
        self.len.store(self.len() + 1, RELAXED);
        self.inserts.store(self.inserts.load(RELAXED) + 1, RELAXED);
        self.shifts
            .store(self.shifts.load(RELAXED) + shifted, RELAXED);
    }

    fn move_entry(&self, from: usize, to: usize) {
        self.store_key(to, self.key(from));
        self.payloads[to].store(self.payload(from), RELAXED);
    }

    fn shift_right(&self, at: usize, gap: usize) -> (usize, u64) {
        (at..gap).rev().for_each(|i| self.move_entry(i, i + 1));
        self.set(gap, true);
        (at, (gap - at) as u64)
    }

    fn shift_left(&self, gap: usize, at: usize) -> (usize, u64) {
        (gap + 1..at).for_each(|i| self.move_entry(i, i - 1));
        self.set(gap, true);
        (at - 1, (at - 1 - gap) as u64)
    }

    /// Empties slot `at` (which holds an entry).
    fn remove_at(&self, at: usize) {
        self.set(at, false);
        self.len.store(self.len() - 1, RELAXED);
        let next = if at + 1 < self.slots() {
            self.key(at + 1)
        } else {
            u64::MAX
        };
        let mut i = at + 1;
        while i > 0 && !self.is_set(i - 1) {
            self.store_key(i - 1, next);
            i -= 1;
        }
    }

    /// The entries, in order (consistent while the lock is held or no one writes).
    fn entries(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.len());
        let mut i = self.next_entry(0);
        while i < self.slots() {
            out.push((self.key(i), self.payload(i)));
            i = self.next_entry(i + 1);
        }
        out
    }

    fn bytes(&self) -> u64 {
        (size_of::<Node>() + 2 * size_of::<usize>() + self.slots() * 16 + self.occupied.len() * 8)
            as u64
    }

    /// The gapped array's invariants.
    fn check(&self) -> std::result::Result<(), String> {
        if self.lock.is_locked() || self.lock.is_obsolete() {
            return Err("a data node in the tree is locked or obsolete".into());
        }
        let entries = self.entries();
        if entries.len() != self.len() || self.len() >= self.slots() {
            return Err(format!(
                "a data node of {} slots counts {} entries and holds {}",
                self.slots(),
                self.len(),
                entries.len()
            ));
        }
        if let Some(w) = entries.windows(2).find(|w| w[0].0 >= w[1].0) {
            return Err(format!("a data node holds {} before {}", w[0].0, w[1].0));
        }
        let mut next = u64::MAX;
        for i in (0..self.slots()).rev() {
            if self.is_set(i) {
                next = self.key(i);
            } else if self.key(i) != next {
                return Err(format!(
                    "gap {i} holds {} where the next key is {next}",
                    self.key(i)
                ));
            }
        }
        Ok(())
    }
}

/// What a structure modification puts in place of a full (or emptied) node.
#[derive(Clone, Copy, PartialEq)]
enum Change {
    /// An insert found the node full or catastrophic.
    Grow,
    /// A removal left it below half the minimum density.
    Shrink,
}

/// A node's parent while a writer repoints its slots: the root's lock, or a model node
/// held shared (released on drop).
enum Parent<'a> {
    Root(#[expect(dead_code, reason = "held, not read")] MutexGuard<'a, ()>),
    Model(Held<'a>),
}

/// A model node held shared.
struct Held<'g>(&'g ModelNode);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.smo.unlock_shared();
    }
}

impl AlexPlus {
    /// An index over `entries` (sorted; the last payload of a key wins) with `params`.
    pub fn with_params(entries: &[(u64, u64)], params: AlexParams) -> Result<AlexPlus> {
        check_sorted(entries, "AlexPlus::bulk_load")?;
        params.check()?;
        let entries = last_of_each_key(entries);
        let guard = &epoch::pin();
        let mut loader = Loader {
            built: Vec::new(),
            leaves: Vec::new(),
            guard,
        };
        let root = plan::bulk_load(&entries, &params, size_of::<DataNode>(), &mut loader);
        let root = loader.assemble(root);
        for pair in loader.leaves.windows(2) {
            at(pair[0]).data().next.store(pair[1], RELEASE);
            at(pair[1]).data().prev.store(pair[0], RELEASE);
        }
        for &leaf in &loader.leaves {
            at(leaf).data().lock.unlock();
        }
        Ok(AlexPlus {
            params,
            root: Atomic::from(root),
            root_lock: Mutex::new(()),
            modifications: AtomicU64::new(0),
        })
    }

    /// Structure modifications since the bulk load (expansions, contractions, splits and
    /// slot doublings).
    pub fn structure_modifications(&self) -> u64 {
        self.modifications.load(RELAXED)
    }

    /// Levels of nodes from the root to the deepest data node (1 when the root is one).
    pub fn depth(&self) -> u64 {
        fn depth(p: Shared<'_, Node>, guard: &Guard) -> u64 {
            let Node::Model(m) = at(p) else {
                return 1;
            };
            let (mut deepest, mut s) = (0, 0);
            while s < m.children.len() {
                let child = m.child(s, guard);
                deepest = deepest.max(depth(child, guard));
                s = m.span(s, child, guard).1;
            }
            1 + deepest
        }
        let guard = &epoch::pin();
        depth(self.root.load(ACQUIRE, guard), guard)
    }

    /// The data node `key` leads to, descending without locks.
    fn leaf<'g>(&self, key: u64, guard: &'g Guard) -> Shared<'g, Node> {
        let mut p = self.root.load(ACQUIRE, guard);
        while let Node::Model(m) = at(p) {
            p = m.child(m.slot(key), guard);
        }
        p
    }

    /// The data node `key` leads to, its lock taken: a writer only tries the lock, and
    /// after a failure descends again from the root (as ALEX+'s writers do).
    fn locked_leaf<'g>(&self, key: u64, guard: &'g Guard) -> Shared<'g, Node> {
        let mut spins = 0;
        loop {
            let leaf = self.leaf(key, guard);
            if at(leaf).data().lock.try_lock() {
                return leaf;
            }
            back_off(&mut spins);
        }
    }

    /// Locks the parent of `target` (current, and held by the caller so no one else
    /// replaces it), found by descending with `key`, which leads to it.
    fn lock_parent<'g>(
        &'g self,
        key: u64,
        target: Shared<'g, Node>,
        guard: &'g Guard,
    ) -> Parent<'g> {
        let mut spins = 0;
        loop {
            let mut p = self.root.load(ACQUIRE, guard);
            if p == target {
                let held = self.root_lock.lock();
                if self.root.load(ACQUIRE, guard) == target {
                    return Parent::Root(held);
                }
            } else {
                while let Node::Model(m) = at(p) {
                    let s = m.slot(key);
                    let child = m.child(s, guard);
                    if child == target {
                        if m.smo.lock_shared() {
                            let held = Held(m);
                            if m.child(s, guard) == target {
                                return Parent::Model(held);
                            }
                        }
                        break;
                    }
                    p = child;
                }
            }
            back_off(&mut spins);
        }
    }

    /// Points the slots of `old` (which `key` leads to) in `parent` at `new`.
    fn repoint(
        &self,
        parent: &Parent<'_>,
        key: u64,
        old: Shared<'_, Node>,
        new: Shared<'_, Node>,
        guard: &Guard,
    ) {
        match parent {
            Parent::Root(_) => self.root.store(new, RELEASE),
            Parent::Model(Held(m)) => {
                let (first, end) = m.span(m.slot(key), old, guard);
                m.store(first..end, new);
            }
        }
    }

    /// Replaces leaf `old` (locked by the caller; `key` leads to it) after an insert found
    /// it full or catastrophic, or a removal left it sparse: expands or contracts it, or
    /// splits it where its cost strayed or it would grow too large. `old` dies locked.
    fn restructure<'g>(
        &'g self,
        key: u64,
        old: Shared<'g, Node>,
        change: Change,
        guard: &'g Guard,
    ) {
        let d = at(old).data();
        let entries = d.entries();
        let p = self.params;
        self.modifications.fetch_add(1, RELAXED);
        let grown = slots_for(entries.len() + 1, p.min_density);
        let split = change == Change::Grow
            && (d.stats().has_strayed(entries.len(), d.expected_cost) || grown > p.max_data_slots);
        let new = if split {
            self.split(key, old, &entries, guard)
        } else {
            let new = match change {
                // ALEX's plain expansion keeps the expected cost and the costs seen.
                Change::Grow => {
                    DataNode::build_expecting(&entries, grown, d.expected_cost, d.stats())
                }
                Change::Shrink => {
                    DataNode::build(&entries, slots_for(entries.len(), p.init_density))
                }
            };
            let new = Owned::new(Node::Data(new)).into_shared(guard);
            let parent = self.lock_parent(key, old, guard);
            self.repoint(&parent, key, old, new, guard);
            vec![new]
        };
        self.relink(old, &new, guard);
        d.lock.unlock_obsolete();
        for &n in &new {
            at(n).data().lock.unlock();
        }
        retire(old, guard);
    }

    /// Splits leaf `old` in two and puts the halves in its place: sideways where it takes
    /// several of its parent's slots, by doubling the parent's slots where that parts its
    /// keys, downwards (a new model node) otherwise. Returns the halves, still locked.
    fn split<'g>(
        &'g self,
        key: u64,
        old: Shared<'g, Node>,
        entries: &[(u64, u64)],
        guard: &'g Guard,
    ) -> Vec<Shared<'g, Node>> {
        let init = self.params.init_density;
        loop {
            let parent = self.lock_parent(key, old, guard);
            let Parent::Model(Held(m)) = &parent else {
                let (node, halves) = self.split_down(key, entries, guard);
                self.root.store(node, RELEASE);
                return halves;
            };
            let m: &'g ModelNode = m;
            let (first, end) = m.span(m.slot(key), old, guard);
            if end - first >= 2 {
                return split_sideways(m, first, end, entries, init, guard);
            }
            if !self.doubling_parts(m, entries) {
                let (node, halves) = self.split_down(key, entries, guard);
                m.store(first..end, node);
                return halves;
            }
            // The parent doubles: copied under its exclusive lock, the copy put in the
            // grandparent's slots, the halves then put in the copy's.
            drop(parent);
            if !m.smo.lock_exclusive() {
                continue;
            }
            let this = self.parent_of(key, old, guard);
            let children: Vec<Shared<'g, Node>> = (0..m.children.len())
                .flat_map(|s| {
                    let c = m.child(s, guard);
                    [c, c]
                })
                .collect();
            let router = Router {
                slope: m.router.slope * 2.0,
                ..m.router
            };
            let distinct = m.distinct.load(RELAXED);
            let copy = ModelNode::new(router, &children, distinct, SmoLock::exclusive());
            let copy = Owned::new(Node::Model(copy)).into_shared(guard);
            let grandparent = self.lock_parent(key, this, guard);
            self.repoint(&grandparent, key, this, copy, guard);
            drop(grandparent);
            m.smo.unlock_obsolete();
            retire(this, guard);
            self.modifications.fetch_add(1, RELAXED);
            let c = at(copy).model();
            let (first, end) = c.span(c.slot(key), old, guard);
            let halves = split_sideways(c, first, end, entries, init, guard);
            c.smo.unlock_exclusive();
            return halves;
        }
    }

    /// The model node whose slot for `key` points at `child` (the caller holds it
    /// exclusively, so it is current and stays so).
    fn parent_of<'g>(
        &self,
        key: u64,
        child: Shared<'g, Node>,
        guard: &'g Guard,
    ) -> Shared<'g, Node> {
        let mut p = self.root.load(ACQUIRE, guard);
        loop {
            let m = at(p).model();
            let next = m.child(m.slot(key), guard);
            if next == child {
                return p;
            }
            p = next;
        }
    }

    /// Whether model node `m` may double its slots and doing so parts `entries` (as
    /// [`Alex`](super::Alex) decides).
    fn doubling_parts(&self, m: &ModelNode, entries: &[(u64, u64)]) -> bool {
        let slots = m.children.len() * 2;
        if slots > self.params.max_fanout || slots > 4 * m.distinct.load(RELAXED) {
            return false;
        }
        let slope = m.router.slope * 2.0;
        let first = m.router.slot_in(entries[0].0, slots, slope);
        let last = m.router.slot_in(entries[entries.len() - 1].0, slots, slope);
        first != last
    }

    /// The keys routed to where `key` goes, as [`Alex`](super::Alex) computes them to aim a
    /// new model node, and whether each side is open (the tree's edge).
    fn domain(&self, key: u64, guard: &Guard) -> ((u64, bool), (u64, bool)) {
        let (mut lo, mut hi) = ((0u64, true), (u64::MAX, true));
        let mut p = self.root.load(ACQUIRE, guard);
        while let Node::Model(m) = at(p) {
            let s = m.slot(key);
            let child = m.child(s, guard);
            let (first, end) = m.span(s, child, guard);
            if first > 0 {
                lo = (lo.0.max(m.router.key_at(first)), false);
            }
            if end < m.children.len() {
                hi = (hi.0.min(m.router.key_at(end).saturating_sub(1)), false);
            }
            p = child;
        }
        (lo, hi)
    }

    /// A new model node over `entries` parted between two locked data nodes, aimed at the
    /// keys routed to the split node, as [`Alex`](super::Alex)'s downward split is.
    fn split_down<'g>(
        &self,
        key: u64,
        entries: &[(u64, u64)],
        guard: &'g Guard,
    ) -> (Shared<'g, Node>, Vec<Shared<'g, Node>>) {
        let max_fanout = MAX_SPLIT_FANOUT.min(self.params.max_fanout);
        let split = DownSplit::of(entries, self.domain(key, guard), EDGE_REACH, max_fanout);
        let (router, fanout, cut, cut_slot) =
            (split.router, split.fanout, split.cut, split.cut_slot);
        let [left, right] = halves(entries, cut, self.params.init_density, guard);
        let mut children = vec![left; cut_slot];
        children.resize(fanout, right);
        let node = ModelNode::new(router, &children, 2, SmoLock::new());
        (
            Owned::new(Node::Model(node)).into_shared(guard),
            vec![left, right],
        )
    }

    /// Where `key` lies just past the root's last slot, replaces the root by a copy with
    /// twice the slots, the new ones pointing where the last one does (as
    /// [`Alex`](super::Alex) expands its root), out of place.
    fn expand_root_for(&self, key: u64, guard: &Guard) {
        let root = self.root.load(ACQUIRE, guard);
        let Node::Model(m) = at(root) else {
            return;
        };
        let slots = m.children.len();
        let raw = m.router.raw_slot(key);
        if raw < slots as f64 || raw >= 2.0 * slots as f64 || 2 * slots > self.params.max_fanout {
            return;
        }
        if !m.smo.lock_exclusive() {
            return;
        }
        let held = self.root_lock.lock();
        if self.root.load(ACQUIRE, guard) != root {
            m.smo.unlock_exclusive();
            return;
        }
        let mut children: Vec<Shared<'_, Node>> = (0..slots).map(|s| m.child(s, guard)).collect();
        children.resize(2 * slots, children[slots - 1]);
        let distinct = m.distinct.load(RELAXED);
        let copy = ModelNode::new(m.router, &children, distinct, SmoLock::new());
        self.root.store(Owned::new(Node::Model(copy)), RELEASE);
        drop(held);
        m.smo.unlock_obsolete();
        retire(root, guard);
        self.modifications.fetch_add(1, RELAXED);
    }

    /// Puts `new` (a run of leaves, locked by the caller) in the place of leaf `old`
    /// (locked by the caller) in the chain, taking the link locks left to right, and
    /// clears `old`'s links.
    fn relink(&self, old: Shared<'_, Node>, new: &[Shared<'_, Node>], guard: &Guard) {
        let od = at(old).data();
        let mut spins = 0;
        loop {
            let prev = {
                let _links = od.links.lock();
                od.prev.load(ACQUIRE, guard)
            };
            let prev_links = node(prev).map(|p| p.data().links.lock());
            let old_links = od.links.lock();
            let prev_points_here =
                node(prev).is_none_or(|p| p.data().next.load(ACQUIRE, guard) == old);
            if od.prev.load(ACQUIRE, guard) != prev || !prev_points_here {
                drop(old_links);
                drop(prev_links);
                back_off(&mut spins);
                continue;
            }
            let next = od.next.load(ACQUIRE, guard);
            let _next_links = node(next).map(|n| n.data().links.lock());
            for (i, &n) in new.iter().enumerate() {
                let nd = at(n).data();
                let _links = nd.links.lock();
                nd.prev
                    .store(if i == 0 { prev } else { new[i - 1] }, RELEASE);
                nd.next
                    .store(new.get(i + 1).copied().unwrap_or(next), RELEASE);
            }
            if let Some(p) = node(prev) {
                p.data().next.store(new[0], RELEASE);
            }
            if let (Some(n), Some(&last)) = (node(next), new.last()) {
                n.data().prev.store(last, RELEASE);
            }
            // Every reader of these links checks `old`'s version after, and it is locked
            // for good.
            od.prev.store(Shared::null(), RELEASE);
            od.next.store(Shared::null(), RELEASE);
            return;
        }
    }

    /// Every node reachable from the root, each once, parents before children.
    fn nodes<'g>(&self, guard: &'g Guard) -> Vec<Shared<'g, Node>> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut stack = vec![self.root.load(ACQUIRE, guard)];
        while let Some(p) = stack.pop() {
            if !seen.insert(p.as_raw()) {
                continue;
            }
            out.push(p);
            if let Node::Model(m) = at(p) {
                stack.extend((0..m.children.len()).map(|s| m.child(s, guard)));
            }
        }
        out
    }
}

/// Two locked leaves over `entries[..cut]` and `entries[cut..]`, built at density `init`.
fn halves<'g>(
    entries: &[(u64, u64)],
    cut: usize,
    init: f64,
    guard: &'g Guard,
) -> [Shared<'g, Node>; 2] {
    [&entries[..cut], &entries[cut..]].map(|part| {
        let leaf = DataNode::build(part, slots_for(part.len(), init));
        Owned::new(Node::Data(leaf)).into_shared(guard)
    })
}

/// Splits the leaf over slots `first..end` of `m` (held shared or exclusive) into two
/// locked halves at the middle slot, and points the slots at them.
fn split_sideways<'g>(
    m: &ModelNode,
    first: usize,
    end: usize,
    entries: &[(u64, u64)],
    init: f64,
    guard: &'g Guard,
) -> Vec<Shared<'g, Node>> {
    let mid = first + (end - first) / 2;
    let cut = entries.partition_point(|e| m.slot(e.0) < mid);
    let [left, right] = halves(entries, cut, init, guard);
    m.store(first..mid, left);
    m.store(mid..end, right);
    m.distinct.fetch_add(1, RELAXED);
    vec![left, right]
}

/// The bulk load's sink: data nodes made at once, model nodes assembled at the end.
struct Loader<'g> {
    built: Vec<Built<'g>>,
    /// Data nodes, left to right.
    leaves: Vec<Shared<'g, Node>>,
    guard: &'g Guard,
}

enum Built<'g> {
    Data(Shared<'g, Node>),
    Model(Router, Vec<u32>),
}

impl NodeSink<(u64, u64)> for Loader<'_> {
    fn data(&mut self, _at: usize, entries: &[(u64, u64)], slots: usize) -> u32 {
        let leaf = Owned::new(Node::Data(DataNode::build(entries, slots))).into_shared(self.guard);
        self.leaves.push(leaf);
        self.built.push(Built::Data(leaf));
        (self.built.len() - 1) as u32
    }

    fn inner(&mut self, router: Router, fanout: usize) -> u32 {
        self.built
            .push(Built::Model(router, vec![u32::MAX; fanout]));
        (self.built.len() - 1) as u32
    }

    fn child(&mut self, id: u32, slots: std::ops::Range<usize>, child: u32) {
        if let Built::Model(_, children) = &mut self.built[id as usize] {
            children[slots].fill(child);
        }
    }
}

impl<'g> Loader<'g> {
    /// The tree below node `id`.
    fn assemble(&self, id: u32) -> Shared<'g, Node> {
        match &self.built[id as usize] {
            Built::Data(leaf) => *leaf,
            Built::Model(router, ids) => {
                let mut children: Vec<Shared<'g, Node>> = Vec::with_capacity(ids.len());
                let mut distinct = 0;
                for (s, &child) in ids.iter().enumerate() {
                    if s > 0 && ids[s - 1] == child {
                        children.push(children[s - 1]);
                    } else {
                        children.push(self.assemble(child));
                        distinct += 1;
                    }
                }
                let node = ModelNode::new(*router, &children, distinct, SmoLock::new());
                Owned::new(Node::Model(node)).into_shared(self.guard)
            }
        }
    }
}

impl Drop for AlexPlus {
    /// Frees the tree's nodes (the replaced ones are the epochs' to free).
    #[expect(unsafe_code, reason = "freeing the tree's nodes, each once")]
    fn drop(&mut self) {
        let guard = &epoch::pin();
        for p in self.nodes(guard) {
            // SAFETY: `&mut self`: no other thread uses the tree; `nodes` lists each node
            // reachable from the root once, and none of them was retired (a retired node
            // is pointed at by no current one).
            drop(unsafe { p.into_owned() });
        }
    }
}

impl Concurrent for AlexPlus {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        AlexPlus::with_params(entries, AlexParams::default())
    }

    fn get(&self, key: u64) -> Option<u64> {
        let guard = &epoch::pin();
        let mut spins = 0;
        loop {
            let d = at(self.leaf(key, guard)).data();
            if let Some(version) = d.lock.read() {
                let (payload, steps) = d.lookup(key);
                if d.lock.check(version) {
                    d.count_search(steps);
                    return payload;
                }
            }
            back_off(&mut spins);
        }
    }

    fn insert(&self, key: u64, payload: u64) {
        let guard = &epoch::pin();
        self.expand_root_for(key, guard);
        let max_density = self.params.max_density;
        loop {
            let leaf = self.locked_leaf(key, guard);
            let d = at(leaf).data();
            let (found, lb, steps) = d.find(key);
            d.count_search(steps);
            if let Some(i) = found {
                d.payloads[i].store(payload, RELAXED);
                d.lock.unlock();
                return;
            }
            if d.is_full(max_density) {
                // Replaced by a node with room; the insert then starts again.
                self.restructure(key, leaf, Change::Grow, guard);
                continue;
            }
            d.insert_absent(key, payload, lb);
            if d.stats().is_catastrophic(d.len()) {
                // Inserts crowd one part of a large node: split it now, not when full.
                self.restructure(key, leaf, Change::Grow, guard);
            } else {
                d.lock.unlock();
            }
            return;
        }
    }

    fn remove(&self, key: u64) {
        let guard = &epoch::pin();
        let min_density = self.params.min_density;
        let leaf = self.locked_leaf(key, guard);
        let d = at(leaf).data();
        let (found, _, steps) = d.find(key);
        d.count_search(steps);
        let Some(i) = found else {
            d.lock.unlock();
            return;
        };
        d.remove_at(i);
        if d.slots() > MIN_SLOTS && (d.len() as f64) < d.slots() as f64 * min_density / 2.0 {
            self.restructure(key, leaf, Change::Shrink, guard);
        } else {
            d.lock.unlock();
        }
    }

    /// Reads each leaf in chunks of [`SCAN_CHUNK`] entries, each under the leaf's version
    /// (so writers to a large leaf cannot starve it); where a chunk's version fails, goes
    /// on from the key after the last one it returned, from the root.
    fn scan(&self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let guard = &epoch::pin();
        let before = out.len();
        let until = before.saturating_add(n);
        let mut from = from;
        let mut chunk = Vec::with_capacity(SCAN_CHUNK);
        let mut spins = 0;
        'descend: while out.len() < until {
            let mut d = at(self.leaf(from, guard)).data();
            loop {
                let Some(version) = d.lock.read() else {
                    back_off(&mut spins);
                    continue 'descend;
                };
                let want = (until - out.len()).min(SCAN_CHUNK);
                chunk.clear();
                let mut i = d.next_entry(gapped::lower_bound(&d.keys[..], &d.model, from).0);
                while i < d.slots() && chunk.len() < want {
                    chunk.push((d.key(i), d.payload(i)));
                    i = d.next_entry(i + 1);
                }
                let exhausted = i >= d.slots();
                let next = d.next.load(ACQUIRE, guard);
                if !d.lock.check(version) {
                    back_off(&mut spins);
                    continue 'descend;
                }
                out.extend_from_slice(&chunk);
                if let Some(&(last, _)) = chunk.last() {
                    if last == u64::MAX {
                        break 'descend;
                    }
                    from = last + 1;
                }
                if out.len() >= until {
                    break 'descend;
                }
                if exhausted {
                    match node(next) {
                        Some(n) => d = n.data(),
                        None => break 'descend,
                    }
                }
            }
        }
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        let guard = &epoch::pin();
        let nodes = self.nodes(guard).into_iter().map(|p| match at(p) {
            Node::Data(d) => d.bytes(),
            Node::Model(m) => {
                (size_of::<Node>() + m.children.len() * size_of::<Atomic<Node>>()) as u64
            }
        });
        size_of::<Self>() as u64 + nodes.sum::<u64>()
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        fn walk<'g>(
            p: Shared<'g, Node>,
            leaves: &mut Vec<Shared<'g, Node>>,
            guard: &'g Guard,
        ) -> std::result::Result<(), String> {
            match at(p) {
                Node::Data(d) => {
                    d.check()?;
                    leaves.push(p);
                }
                Node::Model(m) => {
                    if m.smo.0.load(RELAXED) != 0 {
                        return Err("a model node in the tree is held or obsolete".into());
                    }
                    let (mut s, mut runs) = (0, 0);
                    while s < m.children.len() {
                        let child = m.child(s, guard);
                        let (_, end) = m.span(s, child, guard);
                        walk(child, leaves, guard)?;
                        s = end;
                        runs += 1;
                    }
                    if runs != m.distinct.load(RELAXED) {
                        return Err(format!(
                            "a model node counts {} children and has {runs}",
                            m.distinct.load(RELAXED)
                        ));
                    }
                }
            }
            Ok(())
        }
        let guard = &epoch::pin();
        let mut leaves = Vec::new();
        walk(self.root.load(ACQUIRE, guard), &mut leaves, guard)?;
        let mut last: Option<u64> = None;
        for (i, &leaf) in leaves.iter().enumerate() {
            let d = at(leaf).data();
            let next = leaves.get(i + 1).copied().unwrap_or(Shared::null());
            let prev = i.checked_sub(1).map_or(Shared::null(), |p| leaves[p]);
            if d.next.load(ACQUIRE, guard) != next || d.prev.load(ACQUIRE, guard) != prev {
                return Err(format!("leaf {i} is not linked to its neighbours"));
            }
            for (k, _) in d.entries() {
                if last.is_some_and(|l| l >= k) {
                    return Err(format!("key {k} follows {}", last.unwrap_or(0)));
                }
                last = Some(k);
                if self.leaf(k, guard) != leaf {
                    return Err(format!("key {k} is in leaf {i} but leads elsewhere"));
                }
            }
        }
        Ok(())
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::updatable::concurrent::conformance::check_kind;

    #[test]
    fn alex_plus_is_linearizable() {
        check_kind::<AlexPlus>();
    }

    /// Small nodes, so that the threads' inserts keep splitting, doubling and expanding.
    fn small() -> AlexParams {
        AlexParams {
            max_data_slots: 64,
            max_fanout: 1 << 12,
            ..AlexParams::default()
        }
    }

    #[test]
    fn threads_appending_and_filling_lose_nothing_through_splits() {
        let bulk: Vec<(u64, u64)> = (0..2_000u64).map(|i| (i * 1_000, i)).collect();
        let a = AlexPlus::with_params(&bulk, small()).unwrap();
        let a = &a;
        std::thread::scope(|s| {
            for t in 0..4u64 {
                s.spawn(move || {
                    for i in 0..8_000u64 {
                        // Thread 0 appends past the end (root expansions); the others fill
                        // gaps inside (splits, doublings).
                        let key = match t {
                            0 => 2_000_000 + i * 7,
                            _ => i * 250 + t,
                        };
                        a.insert(key, key ^ 5);
                        assert_eq!(a.get(key), Some(key ^ 5), "key {key}");
                        if i % 3 == 0 {
                            a.remove(key);
                            assert_eq!(a.get(key), None, "removed key {key}");
                            a.insert(key, key ^ 5);
                        }
                    }
                });
            }
        });
        a.check_structure().unwrap();
        assert!(
            a.structure_modifications() > 100,
            "{}",
            a.structure_modifications()
        );
        for i in 0..8_000u64 {
            for key in [2_000_000 + i * 7, i * 250 + 1, i * 250 + 2, i * 250 + 3] {
                assert_eq!(a.get(key), Some(key ^ 5), "key {key}");
            }
        }
        let mut all = Vec::new();
        a.scan(0, usize::MAX, &mut all);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(all.len(), 2_000 + 4 * 8_000);
    }

    #[test]
    fn small_nodes_pass_the_conformance_checks_too() {
        // The conformance checks at the default sizes split little; at these they split,
        // double and contract all the time.
        struct Small(AlexPlus);
        impl Concurrent for Small {
            fn bulk_load(e: &[(u64, u64)]) -> Result<Self> {
                AlexPlus::with_params(e, small()).map(Small)
            }
            fn get(&self, k: u64) -> Option<u64> {
                self.0.get(k)
            }
            fn insert(&self, k: u64, p: u64) {
                self.0.insert(k, p)
            }
            fn remove(&self, k: u64) {
                self.0.remove(k)
            }
            fn scan(&self, f: u64, n: usize, o: &mut Vec<(u64, u64)>) -> usize {
                self.0.scan(f, n, o)
            }
            fn size_in_bytes(&self) -> u64 {
                self.0.size_in_bytes()
            }
            fn check_structure(&self) -> std::result::Result<(), String> {
                self.0.check_structure()
            }
        }
        check_kind::<Small>();
    }

    #[test]
    fn an_empty_index_takes_keys_anywhere() {
        let a = AlexPlus::bulk_load(&[]).unwrap();
        for k in [u64::MAX, 0, 7, u64::MAX - 1] {
            a.insert(k, k ^ 1);
        }
        let mut all = Vec::new();
        a.scan(0, 10, &mut all);
        let keys: Vec<u64> = all.iter().map(|e| e.0).collect();
        assert_eq!(keys, [0, 7, u64::MAX - 1, u64::MAX]);
        a.remove(7);
        assert_eq!(a.get(7), None);
        a.check_structure().unwrap();
    }

    #[test]
    fn a_replaced_leaf_lets_go_of_its_neighbours() {
        let bulk: Vec<(u64, u64)> = (0..1_000u64).map(|i| (i * 10, i)).collect();
        let a = AlexPlus::with_params(&bulk, small()).unwrap();
        // A reader stalled on the first leaf while inserts replace it and those after it.
        let guard = &epoch::pin();
        let held = a.leaf(0, guard);
        for k in 0..20_000u64 {
            a.insert(k, k);
        }
        let d = at(held).data();
        assert!(d.lock.is_obsolete());
        assert!(d.next.load(ACQUIRE, guard).is_null() && d.prev.load(ACQUIRE, guard).is_null());
        a.check_structure().unwrap();
    }

    #[test]
    fn a_tree_of_many_leaves_is_freed() {
        let bulk: Vec<(u64, u64)> = (0..400_000u64).map(|i| (i * i, i)).collect();
        let a = AlexPlus::with_params(
            &bulk,
            AlexParams {
                max_data_slots: 16,
                ..AlexParams::default()
            },
        )
        .unwrap();
        assert!(a.depth() >= 2);
        drop(a);
    }
}
