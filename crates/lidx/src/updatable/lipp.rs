//! A precise-position index in the manner of LIPP (paper 3, section 2.1 "collision-driven
//! designs"; Wu et al., 2021): every key sits exactly at the slot its node's model
//! predicts, so there is no last-mile search.
//!
//! A node is a monotone linear model over an array of slots; a slot is empty, holds one
//! entry, or holds a child node. A lookup computes the slot and either finds the key
//! there, finds it absent, or descends. An insert that lands on another key's slot (a
//! conflict) replaces that entry with a child node holding both. Building a node over
//! sorted keys gives it `slots_per_key` slots per key (paper 3's node density 0.5: 2) and
//! a model from its least to its greatest key; keys that share a slot go into a child built
//! the same way, which always separates its least and greatest key, so building ends.
//!
//! Each node counts, for its subtree, the keys it was built with, the inserts since, and
//! the conflicts those caused; when the inserts reach `insert_ratio` times the keys built
//! with (paper 3: 2) and the conflicts `conflict_ratio` of the inserts (paper 3: 0.1), the
//! subtree is rebuilt from its entries. Removals empty the slot (LIPP has none; paper 3
//! added them), leaving the structure as it is.

use super::{Counters, Updatable, check_sorted, last_of_each_key};
use crate::Result;

/// How nodes are sized and rebuilt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LippParams {
    /// Slots per key when a node is built (paper 3's density 0.5: 2).
    pub slots_per_key: usize,
    /// Slots of a node made by a conflict between two keys.
    pub conflict_slots: usize,
    /// Rebuild a subtree once its inserts reach this many times the keys it was built
    /// with (paper 3: 2)...
    pub insert_ratio: f64,
    /// ...and its conflicts this share of those inserts (paper 3: 0.1).
    pub conflict_ratio: f64,
    /// Subtrees built with fewer keys are never rebuilt.
    pub min_rebuild: usize,
}

impl Default for LippParams {
    fn default() -> Self {
        LippParams {
            slots_per_key: 2,
            conflict_slots: 8,
            insert_ratio: 2.0,
            conflict_ratio: 0.1,
            min_rebuild: 2,
        }
    }
}

#[derive(Clone, Debug)]
enum Slot {
    Empty,
    Entry(u64, u64),
    Child(Box<Node>),
}

#[derive(Clone, Debug)]
struct Node {
    /// The model: slot = ⌊(key − base) · slope⌋, clamped to the slots.
    base: u64,
    slope: f64,
    slots: Vec<Slot>,
    /// Keys in the subtree when it was built.
    built_with: u64,
    /// Inserts into the subtree since.
    inserts: u64,
    /// Conflicts among those.
    conflicts: u64,
}

impl Node {
    fn slot(&self, key: u64) -> usize {
        let at = (key.saturating_sub(self.base) as f64 * self.slope) as usize;
        at.min(self.slots.len() - 1)
    }

    /// A node over `entries` (sorted, distinct keys; at least one).
    fn build(entries: &[(u64, u64)], slots_per_key: usize, counters: &mut Counters) -> Node {
        counters.nodes_created += 1;
        let n = entries.len();
        let capacity = (n * slots_per_key).max(2);
        let (lo, hi) = (entries[0].0, entries[n - 1].0);
        let slope = if hi > lo {
            (capacity - 1) as f64 / (hi - lo) as f64
        } else {
            0.0
        };
        let mut node = Node {
            base: lo,
            slope,
            slots: Vec::with_capacity(capacity),
            built_with: n as u64,
            inserts: 0,
            conflicts: 0,
        };
        node.slots.resize_with(capacity, || Slot::Empty);
        // Rounding can leave the greatest key short of the last slot, and then, with two
        // slots, in the least key's: nudge the slope up until it lands there, so the least
        // and greatest keys always part and building ends.
        while hi > lo && node.slot(hi) < capacity - 1 {
            node.slope = node.slope.next_up();
        }
        let mut i = 0;
        while i < n {
            let s = node.slot(entries[i].0);
            let mut j = i + 1;
            while j < n && node.slot(entries[j].0) == s {
                j += 1;
            }
            node.slots[s] = if j - i == 1 {
                Slot::Entry(entries[i].0, entries[i].1)
            } else {
                Slot::Child(Box::new(Node::build(
                    &entries[i..j],
                    slots_per_key,
                    counters,
                )))
            };
            i = j;
        }
        node
    }

    /// `f` summed over the child nodes.
    fn over_children(&self, f: impl Fn(&Node) -> u64) -> u64 {
        self.slots
            .iter()
            .map(|s| match s {
                Slot::Child(c) => f(c),
                _ => 0,
            })
            .sum()
    }

    /// Nodes in the subtree.
    fn count(&self) -> u64 {
        1 + self.over_children(Node::count)
    }

    /// Appends the subtree's entries in key order.
    fn collect(&self, out: &mut Vec<(u64, u64)>) {
        for slot in &self.slots {
            match slot {
                Slot::Empty => {}
                Slot::Entry(k, v) => out.push((*k, *v)),
                Slot::Child(c) => c.collect(out),
            }
        }
    }

    /// Appends entries with keys at least `from` until `out` holds `until` entries;
    /// returns whether it got there.
    fn scan(&self, from: u64, until: usize, out: &mut Vec<(u64, u64)>, nodes: &mut u64) -> bool {
        *nodes += 1;
        let start = self.slot(from);
        for slot in &self.slots[start..] {
            if out.len() >= until {
                return true;
            }
            match slot {
                Slot::Empty => {}
                Slot::Entry(k, v) => {
                    if *k >= from {
                        out.push((*k, *v));
                    }
                }
                Slot::Child(c) => {
                    if c.scan(from, until, out, nodes) {
                        return true;
                    }
                }
            }
        }
        out.len() >= until
    }

    /// Every entry at the slot this node computes for it, and every key under a child
    /// one its parent's model sends to that child's slot (`parents`: the models above).
    fn check<'a>(
        &'a self,
        parents: &mut Vec<(&'a Node, usize)>,
    ) -> std::result::Result<(), String> {
        if self.slots.is_empty() {
            return Err("a node without slots".into());
        }
        for (s, slot) in self.slots.iter().enumerate() {
            match slot {
                Slot::Empty => {}
                Slot::Entry(k, _) => {
                    if self.slot(*k) != s {
                        return Err(format!(
                            "key {k} sits in slot {s}, its model says {}",
                            self.slot(*k)
                        ));
                    }
                    if let Some((p, ps)) = parents.iter().find(|(p, ps)| p.slot(*k) != *ps) {
                        return Err(format!(
                            "key {k} lies under slot {ps} of a node that sends it to {}",
                            p.slot(*k)
                        ));
                    }
                }
                Slot::Child(c) => {
                    parents.push((self, s));
                    c.check(parents)?;
                    parents.pop();
                }
            }
        }
        Ok(())
    }

    fn bytes(&self) -> u64 {
        (std::mem::size_of::<Node>() + self.slots.capacity() * std::mem::size_of::<Slot>()) as u64
            + self.over_children(Node::bytes)
    }
}

/// The LIPP-like index.
#[derive(Clone, Debug)]
pub struct Lipp {
    params: LippParams,
    root: Box<Node>,
    counters: Counters,
    /// Nodes the bulk load made, and nodes rebuilds have dropped since: the tree holds
    /// `built + counters.nodes_created - dropped`.
    built: u64,
    dropped: u64,
}

impl Lipp {
    /// An index over `entries` (sorted; the last payload of a key wins) with `params`.
    pub fn with_params(entries: &[(u64, u64)], params: LippParams) -> Result<Lipp> {
        check_sorted(entries, "Lipp::bulk_load")?;
        if params.slots_per_key < 1 || params.conflict_slots < 2 {
            return Err(crate::Error::param(
                "slots",
                "at least 1 slot per key and 2 per conflict node",
            ));
        }
        let entries = last_of_each_key(entries);
        let mut counters = Counters::default();
        let root = if entries.is_empty() {
            Node {
                base: 0,
                slope: 0.0,
                slots: vec![Slot::Empty, Slot::Empty],
                built_with: 0,
                inserts: 0,
                conflicts: 0,
            }
        } else {
            Node::build(&entries, params.slots_per_key, &mut counters)
        };
        Ok(Lipp {
            params,
            root: Box::new(root),
            counters: Counters::default(),
            built: counters.nodes_created.max(1),
            dropped: 0,
        })
    }
}

/// Inserts into the subtree at `node`; returns whether the key was new and whether it
/// caused a conflict.
fn insert_at(
    node: &mut Node,
    key: u64,
    payload: u64,
    params: &LippParams,
    counters: &mut Counters,
) -> (bool, bool) {
    counters.nodes_traversed += 1;
    let s = node.slot(key);
    let (new, conflict) = match &mut node.slots[s] {
        Slot::Child(c) => insert_at(c, key, payload, params, counters),
        Slot::Entry(k, v) if *k == key => {
            *v = payload;
            (false, false)
        }
        Slot::Empty => {
            node.slots[s] = Slot::Entry(key, payload);
            (true, false)
        }
        Slot::Entry(k, v) => {
            // A conflict: the two keys go into a child of their own.
            let mut pair = [(*k, *v), (key, payload)];
            pair.sort_unstable_by_key(|e| e.0);
            let per_key = (params.conflict_slots / 2).max(1);
            counters.structure_modifications += 1;
            node.slots[s] = Slot::Child(Box::new(Node::build(&pair, per_key, counters)));
            (true, true)
        }
    };
    if new {
        node.inserts += 1;
        node.conflicts += u64::from(conflict);
    }
    (new, conflict)
}

/// Whether a subtree's statistics call for a rebuild.
fn due(params: &LippParams, node: &Node) -> bool {
    node.built_with as usize >= params.min_rebuild
        && node.inserts as f64 >= params.insert_ratio * node.built_with as f64
        && node.conflicts as f64 >= params.conflict_ratio * node.inserts as f64
}

/// Rebuilds the highest subtree on `key`'s path whose statistics call for it.
fn rebuild_on_path(index: &mut Lipp, key: u64) {
    let params = index.params;
    let mut node: &mut Node = &mut index.root;
    loop {
        if due(&params, node) {
            let mut entries = Vec::new();
            node.collect(&mut entries);
            index.counters.keys_shifted += entries.len() as u64;
            index.counters.structure_modifications += 1;
            if !entries.is_empty() {
                index.dropped += node.count();
                *node = Node::build(&entries, params.slots_per_key, &mut index.counters);
            }
            return;
        }
        let s = node.slot(key);
        match &mut node.slots[s] {
            Slot::Child(c) => node = c,
            _ => return,
        }
    }
}

impl Updatable for Lipp {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        Lipp::with_params(entries, LippParams::default())
    }

    fn get(&mut self, key: u64) -> Option<u64> {
        let mut node: &Node = &self.root;
        loop {
            self.counters.nodes_traversed += 1;
            match &node.slots[node.slot(key)] {
                Slot::Empty => return None,
                Slot::Entry(k, v) => return (*k == key).then_some(*v),
                Slot::Child(c) => node = c,
            }
        }
    }

    fn insert(&mut self, key: u64, payload: u64) {
        let params = self.params;
        let (_, conflict) = insert_at(&mut self.root, key, payload, &params, &mut self.counters);
        if conflict {
            rebuild_on_path(self, key);
        }
    }

    fn remove(&mut self, key: u64) {
        let mut node: &mut Node = &mut self.root;
        loop {
            self.counters.nodes_traversed += 1;
            let s = node.slot(key);
            if matches!(node.slots[s], Slot::Entry(k, _) if k == key) {
                node.slots[s] = Slot::Empty;
                return;
            }
            match &mut node.slots[s] {
                Slot::Child(c) => node = c,
                _ => return,
            }
        }
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let before = out.len();
        let until = before.saturating_add(n);
        let mut nodes = 0;
        self.root.scan(from, until, out, &mut nodes);
        self.counters.nodes_traversed += nodes;
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        self.root.bytes()
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        self.root.check(&mut Vec::new())?;
        let nodes = self.root.count();
        if nodes + self.dropped != self.built + self.counters.nodes_created {
            return Err(format!(
                "{nodes} nodes, but {} built, {} counted as created and {} dropped by rebuilds",
                self.built, self.counters.nodes_created, self.dropped
            ));
        }
        Ok(())
    }

    fn counters(&self) -> Counters {
        self.counters
    }
}
