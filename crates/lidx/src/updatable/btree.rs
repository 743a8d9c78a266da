//! An in-memory B+tree in the manner of the STX B+tree (paper 3's "B+tree" baseline):
//! leaves of up to `leaf_slots` sorted keys with their payloads, linked left to right;
//! inner nodes of up to `inner_slots` separators, separator `i` the least key under child
//! `i + 1`. As in STX, a node's keys, payloads and children lie inline in the node (256
//! bytes of keys and payloads in a leaf of 16), and a node of so few keys is searched by a
//! linear scan (STX scans below 256 bytes of keys). Inserts split full nodes in half from
//! the leaf up (a new root when the root splits); removals take the entry out of its leaf
//! and leave the node as it is, however empty (no merging, as many production B-trees do),
//! so lookups and scans stay exact and the tree never shrinks. Leaves and inner nodes live
//! in two arenas and refer to each other by index.

use super::{Counters, NoClock, Phase, PhaseClock, Updatable, check_sorted, last_of_each_key};
use crate::Result;

/// The most slots a node may have: STX's for 8-byte keys and payloads.
pub const MAX_SLOTS: usize = 16;

/// Node sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BTreeParams {
    /// Entries a leaf holds at most (2 to [`MAX_SLOTS`]).
    pub leaf_slots: usize,
    /// Separators an inner node holds at most (2 to [`MAX_SLOTS`]).
    pub inner_slots: usize,
}

impl Default for BTreeParams {
    /// STX's defaults for 8-byte keys and payloads: nodes of 256 bytes, 16 slots each.
    fn default() -> Self {
        BTreeParams {
            leaf_slots: MAX_SLOTS,
            inner_slots: MAX_SLOTS,
        }
    }
}

const NONE: u32 = u32::MAX;

/// A leaf: `len` sorted keys and their payloads, with room for one more (an insert into
/// a full leaf overflows it, then splits it). Its keys start on a cache line (the first 16
/// fill two lines), the payloads follow them, and the length and the link lie on the last
/// of its five lines (320 bytes).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Leaf {
    keys: [u64; MAX_SLOTS + 1],
    values: [u64; MAX_SLOTS + 1],
    len: usize,
    /// The next leaf to the right (`NONE` for the last).
    next: u32,
}

/// An inner node: `len` separators and `len + 1` children, with room for one more. Its
/// keys start on a cache line and its children follow them (256 bytes). The children of
/// the lowest inner level are leaves, the others inner nodes: the tree's height says
/// which, so a node carries no tag.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Inner {
    /// `keys[i]` is the least key under `children[i + 1]`.
    keys: [u64; MAX_SLOTS + 1],
    children: [u32; MAX_SLOTS + 2],
    len: usize,
}

/// How many of the first `len` of `keys` (sorted) are below `key` (`UPTO`: at most or
/// below): a linear scan that stops at the first key past them, as STX searches nodes this
/// small. It runs over the node's whole array, so its bound is a constant and it unrolls
/// into one compare and one branch a key, each exit knowing its slot. Every node keeps the
/// keys past its `len` at `u64::MAX` ([`PAST_LEN`], checked by `check_structure`), so the
/// scan stops at `len` at the latest; with `UPTO`, a `key` of `u64::MAX`, which no key exceeds, runs
/// off the end and gets `len`. (A loop bounded by `len` took five instructions a key and
/// ran 19-22% behind STX's on 2M keys; clamping the answer to `len` with a conditional move
/// measured 0.86x, likely because the next node's address then waits on the load of the
/// length where a branch lets the processor run ahead; a count without branches over every
/// key reads all three lines of a node's keys where the scan reads about half, and
/// measured 4-15% slower.)
#[inline(always)]
fn rank<const UPTO: bool>(keys: &[u64; MAX_SLOTS + 1], len: usize, key: u64) -> usize {
    let past = keys
        .iter()
        .position(|&k| if UPTO { k > key } else { k >= key });
    // Below `key`, the scan runs off the end only where all the slots hold keys (`len` is
    // `MAX_SLOTS + 1`), so it does not read the length, which may lie on a line of its own.
    past.unwrap_or(if UPTO { len } else { MAX_SLOTS + 1 })
}

/// What a node's keys past its `len` hold, so that [`rank`] stops at `len`.
const PAST_LEN: u64 = u64::MAX;

/// The keys of an empty node.
const NO_KEYS: [u64; MAX_SLOTS + 1] = [PAST_LEN; MAX_SLOTS + 1];

impl Leaf {
    fn new(entries: &[(u64, u64)], next: u32) -> Leaf {
        let mut leaf = Leaf {
            keys: NO_KEYS,
            values: [0; MAX_SLOTS + 1],
            len: entries.len(),
            next,
        };
        for (i, &(k, v)) in entries.iter().enumerate() {
            leaf.keys[i] = k;
            leaf.values[i] = v;
        }
        leaf
    }

    #[inline]
    fn keys(&self) -> &[u64] {
        &self.keys[..self.len]
    }

    /// The slot of `key`, or where it would go.
    ///
    /// The keys past `len` are `u64::MAX`, so a key found is one of the first `len` unless
    /// it is `u64::MAX`: only then is the length read. (The length lies on the leaf's
    /// last cache line, which a lookup that reads it touches for nothing else.)
    #[inline]
    fn find(&self, key: u64) -> std::result::Result<usize, usize> {
        let i = rank::<false>(&self.keys, self.len, key);
        let holds = self.keys.get(i) == Some(&key);
        match holds && (key != PAST_LEN || i < self.len) {
            true => Ok(i),
            false => Err(i),
        }
    }
}

impl Inner {
    /// An inner node with no separators and no children.
    fn empty() -> Inner {
        Inner {
            keys: NO_KEYS,
            children: [NONE; MAX_SLOTS + 2],
            len: 0,
        }
    }
}

/// The B+tree.
///
/// Leaves and inner nodes live in two arenas and refer to each other by index. (In one
/// arena of tagged nodes, every node took a leaf's 320 bytes, its keys began after the
/// tag and the length, and each level's descent tested the tag: on 2M lognormal keys,
/// lookups ran 5.5 Mops/s where they run 5.8 in two arenas, and the balanced workload 3.1
/// where it runs 3.9, medians of interleaved runs.)
#[derive(Clone, Debug)]
pub struct BTree {
    params: BTreeParams,
    leaves: Vec<Leaf>,
    inners: Vec<Inner>,
    /// The root: a leaf where `height` is 0, else an inner node.
    root: u32,
    /// Inner levels above the leaves.
    height: usize,
    counters: Counters,
    /// The inner nodes an insert went through, reused.
    path: Vec<(u32, usize)>,
    /// Nodes the bulk load made (the arenas hold these and `counters.nodes_created`).
    built: usize,
}

impl BTree {
    /// A tree over `entries` (sorted; the last payload of a key wins) with `params`:
    /// leaves filled full, left to right, and inner levels over them.
    pub fn with_params(entries: &[(u64, u64)], params: BTreeParams) -> Result<BTree> {
        check_sorted(entries, "BTree::bulk_load")?;
        let slots = 2..=MAX_SLOTS;
        if !slots.contains(&params.leaf_slots) || !slots.contains(&params.inner_slots) {
            return Err(crate::Error::param(
                "node slots",
                format!("2 to {MAX_SLOTS} per node"),
            ));
        }
        let entries = last_of_each_key(entries);
        // The arenas hold what the bulk load makes and no more (they grow as inserts
        // split nodes): the leaves, then each inner level over the one below.
        let leaf_count = entries.len().div_ceil(params.leaf_slots).max(1);
        let (mut made, mut inner_count) = (leaf_count, 0);
        while made > 1 {
            made = made.div_ceil(params.inner_slots + 1);
            inner_count += made;
        }
        let mut tree = BTree {
            params,
            leaves: Vec::with_capacity(leaf_count),
            inners: Vec::with_capacity(inner_count),
            root: 0,
            height: 0,
            counters: Counters::default(),
            path: Vec::new(),
            built: 0,
        };
        // Level 0: the leaves, each with its least key.
        let mut level: Vec<(u64, u32)> = Vec::with_capacity(leaf_count);
        for chunk in entries.chunks(params.leaf_slots) {
            let id = tree.leaves.len() as u32;
            if let Some(last) = tree.leaves.last_mut() {
                last.next = id;
            }
            tree.leaves.push(Leaf::new(chunk, NONE));
            level.push((chunk[0].0, id));
        }
        if level.is_empty() {
            tree.leaves.push(Leaf::new(&[], NONE));
            level.push((0, 0));
        }
        while level.len() > 1 {
            let mut up = Vec::with_capacity(level.len().div_ceil(params.inner_slots + 1));
            for chunk in level.chunks(params.inner_slots + 1) {
                let id = tree.inners.len() as u32;
                let mut inner = Inner::empty();
                inner.len = chunk.len() - 1;
                for (i, c) in chunk.iter().enumerate() {
                    inner.children[i] = c.1;
                    if i > 0 {
                        inner.keys[i - 1] = c.0;
                    }
                }
                tree.inners.push(inner);
                up.push((chunk[0].0, id));
            }
            level = up;
            tree.height += 1;
        }
        tree.root = level[0].1;
        tree.built = tree.leaves.len() + tree.inners.len();
        Ok(tree)
    }

    /// The leaf that holds or would hold `key`; with `record`, the inner nodes above it
    /// (and the child taken in each) go into `self.path`, root first.
    #[inline(always)]
    fn descend(&mut self, key: u64, record: bool) -> u32 {
        if record {
            self.path.clear();
        }
        let (inners, path) = (&self.inners, &mut self.path);
        let mut id = self.root;
        for _ in 0..self.height {
            let n = &inners[id as usize];
            let i = rank::<true>(&n.keys, n.len, key);
            if record {
                path.push((id, i));
            }
            id = n.children[i];
        }
        self.counters.nodes_traversed += self.height as u64 + 1;
        id
    }

    /// Splits the overflowing leaf `id` in half; returns the new right leaf's least key
    /// and id.
    fn split_leaf(&mut self, id: u32) -> (u64, u32) {
        let right_id = self.leaves.len() as u32;
        self.counters.structure_modifications += 1;
        self.counters.nodes_created += 1;
        let l = &mut self.leaves[id as usize];
        let half = l.len / 2;
        let moved = l.len - half;
        self.counters.keys_shifted += moved as u64;
        let mut right = Leaf::new(&[], l.next);
        right.keys[..moved].copy_from_slice(&l.keys[half..l.len]);
        right.values[..moved].copy_from_slice(&l.values[half..l.len]);
        right.len = moved;
        l.keys[half..l.len].fill(PAST_LEN);
        l.len = half;
        l.next = right_id;
        let up = right.keys[0];
        self.leaves.push(right);
        (up, right_id)
    }

    /// Splits the overflowing inner node `id` in half; returns the key that moves up and
    /// the new right node's id.
    fn split_inner(&mut self, id: u32) -> (u64, u32) {
        let right_id = self.inners.len() as u32;
        self.counters.structure_modifications += 1;
        self.counters.nodes_created += 1;
        let n = &mut self.inners[id as usize];
        let half = n.len / 2;
        self.counters.keys_shifted += (n.len - half) as u64;
        // keys[half] moves up; the keys after it and the children from half + 1 go right.
        let moved = n.len - half - 1;
        let mut right = Inner::empty();
        right.len = moved;
        right.keys[..moved].copy_from_slice(&n.keys[half + 1..n.len]);
        right.children[..=moved].copy_from_slice(&n.children[half + 1..=n.len]);
        let up = n.keys[half];
        n.keys[half..n.len].fill(PAST_LEN);
        n.children[half + 1..].fill(NONE);
        n.len = half;
        self.inners.push(right);
        (up, right_id)
    }

    /// Splits the overflowing leaf `id` and, upwards along the descent's path, every
    /// inner node the split overflows; a new root where the root splits.
    fn split_up(&mut self, id: u32) {
        let (mut sep, mut right) = self.split_leaf(id);
        while let Some((parent, at)) = self.path.pop() {
            let n = &mut self.inners[parent as usize];
            let len = n.len;
            n.keys.copy_within(at..len, at + 1);
            n.children.copy_within(at + 1..=len, at + 2);
            n.keys[at] = sep;
            n.children[at + 1] = right;
            n.len += 1;
            self.counters.keys_shifted += (len - at) as u64;
            if n.len <= self.params.inner_slots {
                return;
            }
            (sep, right) = self.split_inner(parent);
        }
        // The root split: a new root over the two halves.
        let mut root = Inner::empty();
        root.len = 1;
        root.keys[0] = sep;
        root.children[..2].copy_from_slice(&[self.root, right]);
        self.root = self.inners.len() as u32;
        self.inners.push(root);
        self.height += 1;
        self.counters.nodes_created += 1;
    }
}

impl Updatable for BTree {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        BTree::with_params(entries, BTreeParams::default())
    }

    #[inline(always)]
    fn get(&mut self, key: u64) -> Option<u64> {
        let id = self.descend(key, false);
        let leaf = &self.leaves[id as usize];
        leaf.find(key).ok().map(|i| leaf.values[i])
    }

    #[inline]
    fn insert(&mut self, key: u64, payload: u64) {
        self.insert_timed(key, payload, &mut NoClock);
    }

    /// The search ends at the leaf's slot; the collision, once the leaf's entries have
    /// moved up to take the key; the SMO, once the splits it caused are done.
    #[inline]
    fn insert_timed(&mut self, key: u64, payload: u64, clock: &mut impl PhaseClock) {
        clock.start();
        let id = self.descend(key, true);
        let leaf_slots = self.params.leaf_slots;
        let leaf = &mut self.leaves[id as usize];
        let found = leaf.find(key);
        clock.lap(Phase::Search);
        match found {
            Ok(i) => {
                leaf.values[i] = payload;
                clock.lap(Phase::Collision);
                return;
            }
            Err(i) => {
                let len = leaf.len;
                leaf.keys.copy_within(i..len, i + 1);
                leaf.values.copy_within(i..len, i + 1);
                leaf.keys[i] = key;
                leaf.values[i] = payload;
                leaf.len += 1;
                self.counters.keys_shifted += (len - i) as u64;
                clock.lap(Phase::Collision);
                if len < leaf_slots {
                    return;
                }
            }
        }
        self.split_up(id);
        clock.lap(Phase::Smo);
    }

    fn remove(&mut self, key: u64) {
        let id = self.descend(key, false);
        let leaf = &mut self.leaves[id as usize];
        if let Ok(i) = leaf.find(key) {
            let len = leaf.len;
            leaf.keys.copy_within(i + 1..len, i);
            leaf.values.copy_within(i + 1..len, i);
            leaf.keys[len - 1] = PAST_LEN;
            leaf.len -= 1;
            self.counters.keys_shifted += (len - i - 1) as u64;
        }
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let mut id = self.descend(from, false);
        let before = out.len();
        while id != NONE && out.len() - before < n {
            let leaf = &self.leaves[id as usize];
            let start = rank::<false>(&leaf.keys, leaf.len, from);
            let take = (n - (out.len() - before)).min(leaf.len - start);
            out.extend(
                leaf.keys[start..start + take]
                    .iter()
                    .copied()
                    .zip(leaf.values[start..start + take].iter().copied()),
            );
            id = leaf.next;
        }
        out.len() - before
    }

    /// Every node's spare room counted, and the arenas', as allocated.
    fn size_in_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>()
            + self.leaves.capacity() * std::mem::size_of::<Leaf>()
            + self.inners.capacity() * std::mem::size_of::<Inner>()
            + self.path.capacity() * std::mem::size_of::<(u32, usize)>()) as u64
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        // Every key under child i of an inner node lies in [keys[i-1], keys[i]); inner
        // nodes down to `height`, leaves there.
        let mut leaves = Vec::new();
        let mut stack = vec![(self.root, 0, 0u64, None::<u64>)];
        let mut inners_reached = 0;
        while let Some((id, depth, lo, hi)) = stack.pop() {
            let at = |arena_len: usize, what: &str| match (id as usize) < arena_len {
                true => Ok(()),
                false => Err(format!("{what} {id} is past its arena ({arena_len})")),
            };
            if depth == self.height {
                at(self.leaves.len(), "leaf")?;
                let leaf = &self.leaves[id as usize];
                if leaf.keys[leaf.len..].iter().any(|&k| k != PAST_LEN) {
                    return Err(format!("leaf {id} holds a key past its length"));
                }
                let keys = leaf.keys();
                if keys.len() > self.params.leaf_slots {
                    return Err(format!("leaf {id} holds {} keys", keys.len()));
                }
                if keys.windows(2).any(|w| w[0] >= w[1])
                    || keys.iter().any(|&k| k < lo || hi.is_some_and(|h| k >= h))
                {
                    return Err(format!(
                        "leaf {id} holds a key out of order or out of its range"
                    ));
                }
                leaves.push(id);
                continue;
            }
            at(self.inners.len(), "inner node")?;
            inners_reached += 1;
            let n = &self.inners[id as usize];
            if n.keys[n.len..].iter().any(|&k| k != PAST_LEN) {
                return Err(format!("inner node {id} holds a key past its length"));
            }
            let (keys, children) = (&n.keys[..n.len], &n.children[..=n.len]);
            if keys.len() > self.params.inner_slots || keys.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!(
                    "inner node {id} has {} keys, or out of order",
                    keys.len()
                ));
            }
            for (i, &c) in children.iter().enumerate().rev() {
                let c_lo = if i == 0 { lo } else { keys[i - 1] };
                let c_hi = keys.get(i).copied().or(hi);
                stack.push((c, depth + 1, c_lo, c_hi));
            }
        }
        // The leaves, left to right, are the chain from the leftmost.
        let mut id = leaves.first().copied().unwrap_or(NONE);
        for &want in &leaves {
            if id != want {
                return Err(format!(
                    "the leaf chain reaches {id} where leaf {want} comes next"
                ));
            }
            id = self.leaves[id as usize].next;
        }
        if id != NONE {
            return Err("the leaf chain goes on past the last leaf".into());
        }
        // Every node is in the tree, once, and each one made since the bulk load was
        // counted.
        let arenas = self.leaves.len() + self.inners.len();
        if leaves.len() != self.leaves.len()
            || inners_reached != self.inners.len()
            || arenas as u64 != self.built as u64 + self.counters.nodes_created
        {
            return Err(format!(
                "{} leaves and {} inner nodes in the arenas, {} and {inners_reached} in the tree, {} built and {} counted as created",
                self.leaves.len(),
                self.inners.len(),
                leaves.len(),
                self.built,
                self.counters.nodes_created
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unrolled scan over a node's keys, padded past `len` as every node keeps them,
    /// answers as a bisection of the node's keys does: at every length and for keys
    /// below, between, equal to and above them, `u64::MAX` among them.
    #[test]
    fn a_node_scan_ranks_as_a_bisection() {
        let stored = [0, 1, 5, 9, 9_999, 1 << 40, u64::MAX - 1];
        for len in 0..=MAX_SLOTS + 1 {
            for top in [u64::MAX - 1, u64::MAX] {
                // `len` distinct sorted keys ending at `top` where there is room.
                let mut keys = NO_KEYS;
                for (i, k) in keys.iter_mut().take(len).enumerate() {
                    *k = top - (len - 1 - i) as u64 * 3;
                }
                let real = &keys[..len];
                let probes = stored.iter().copied().chain(
                    real.iter()
                        .flat_map(|&k| [k.saturating_sub(1), k, k.saturating_add(1)]),
                );
                for key in probes.chain([u64::MAX]) {
                    assert_eq!(
                        rank::<false>(&keys, len, key),
                        real.partition_point(|&k| k < key),
                        "below {key} among {real:?}"
                    );
                    assert_eq!(
                        rank::<true>(&keys, len, key),
                        real.partition_point(|&k| k <= key),
                        "at most {key} among {real:?}"
                    );
                }
            }
        }
    }
}
