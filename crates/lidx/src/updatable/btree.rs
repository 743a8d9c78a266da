//! An in-memory B+tree in the manner of the STX B+tree (paper 3's "B+tree" baseline):
//! leaves of up to `leaf_slots` sorted keys with their payloads, linked left to right;
//! inner nodes of up to `inner_slots` separators, separator `i` the least key under child
//! `i + 1`. Inserts split full nodes in half from the leaf up (a new root when the root
//! splits); removals take the entry out of its leaf and leave the node as it is, however
//! empty (no merging, as many production B-trees do), so lookups and scans stay exact and
//! the tree never shrinks. The nodes live in one arena and refer to each other by index.

use super::{Counters, Updatable, check_sorted, last_of_each_key};
use crate::Result;

/// Node sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BTreeParams {
    /// Entries a leaf holds at most (at least 2).
    pub leaf_slots: usize,
    /// Separators an inner node holds at most (at least 2).
    pub inner_slots: usize,
}

impl Default for BTreeParams {
    /// STX's defaults for 8-byte keys and payloads: nodes of 256 bytes, 16 slots each.
    fn default() -> Self {
        BTreeParams {
            leaf_slots: 16,
            inner_slots: 16,
        }
    }
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
enum Node {
    Leaf {
        keys: Vec<u64>,
        values: Vec<u64>,
        /// The next leaf to the right (`NONE` for the last).
        next: u32,
    },
    Inner {
        /// `keys[i]` is the least key under `children[i + 1]`.
        keys: Vec<u64>,
        children: Vec<u32>,
    },
}

/// The B+tree.
#[derive(Clone, Debug)]
pub struct BTree {
    params: BTreeParams,
    nodes: Vec<Node>,
    root: u32,
    counters: Counters,
    /// The inner nodes an insert went through, reused.
    path: Vec<(u32, usize)>,
    /// Nodes the bulk load made (the arena holds these and `counters.nodes_created`).
    built: usize,
}

impl BTree {
    /// A tree over `entries` (sorted; the last payload of a key wins) with `params`:
    /// leaves filled full, left to right, and inner levels over them.
    pub fn with_params(entries: &[(u64, u64)], params: BTreeParams) -> Result<BTree> {
        check_sorted(entries, "BTree::bulk_load")?;
        if params.leaf_slots < 2 || params.inner_slots < 2 {
            return Err(crate::Error::param("node slots", "at least 2 per node"));
        }
        let entries = last_of_each_key(entries);
        let mut tree = BTree {
            params,
            nodes: Vec::new(),
            root: 0,
            counters: Counters::default(),
            path: Vec::new(),
            built: 0,
        };
        // Level 0: the leaves, each with its least key.
        let mut level: Vec<(u64, u32)> = Vec::new();
        for chunk in entries.chunks(params.leaf_slots) {
            let id = tree.nodes.len() as u32;
            if let Some(Node::Leaf { next, .. }) = tree.nodes.last_mut() {
                *next = id;
            }
            let (mut keys, mut values) = (tree.slots(true), tree.slots(true));
            keys.extend(chunk.iter().map(|e| e.0));
            values.extend(chunk.iter().map(|e| e.1));
            tree.nodes.push(Node::Leaf {
                keys,
                values,
                next: NONE,
            });
            level.push((chunk[0].0, id));
        }
        if level.is_empty() {
            tree.nodes.push(Node::Leaf {
                keys: Vec::new(),
                values: Vec::new(),
                next: NONE,
            });
            level.push((0, 0));
        }
        while level.len() > 1 {
            let mut up = Vec::new();
            for chunk in level.chunks(params.inner_slots + 1) {
                let id = tree.nodes.len() as u32;
                let (mut keys, mut children) = (tree.slots(false), tree.slots(false));
                keys.extend(chunk[1..].iter().map(|c| c.0));
                children.extend(chunk.iter().map(|c| c.1));
                tree.nodes.push(Node::Inner { keys, children });
                up.push((chunk[0].0, id));
            }
            level = up;
        }
        tree.root = level[0].1;
        tree.built = tree.nodes.len();
        Ok(tree)
    }

    /// The leaf that holds or would hold `key`; with `record`, the inner nodes above it
    /// (and the child taken in each) go into `self.path`, root first.
    fn descend(&mut self, key: u64, record: bool) -> u32 {
        self.path.clear();
        let mut id = self.root;
        loop {
            self.counters.nodes_traversed += 1;
            match &self.nodes[id as usize] {
                Node::Leaf { .. } => return id,
                Node::Inner { keys, children } => {
                    let i = keys.partition_point(|&s| s <= key);
                    if record {
                        self.path.push((id, i));
                    }
                    id = children[i];
                }
            }
        }
    }

    /// An empty array with room for a node's slots and the one that overflows it, so a
    /// node never reallocates.
    fn slots<T>(&self, leaf: bool) -> Vec<T> {
        let slots = if leaf {
            self.params.leaf_slots
        } else {
            self.params.inner_slots + 1
        };
        Vec::with_capacity(slots + 1)
    }

    /// Splits node `id` (over full) in half; returns the new right node's least key and id.
    fn split(&mut self, id: u32) -> (u64, u32) {
        let right_id = self.nodes.len() as u32;
        self.counters.structure_modifications += 1;
        self.counters.nodes_created += 1;
        let (mut right_keys, mut right_values) = (self.slots(true), self.slots(true));
        let mut right_children = self.slots(false);
        let right = match &mut self.nodes[id as usize] {
            Node::Leaf { keys, values, next } => {
                let half = keys.len() / 2;
                self.counters.keys_shifted += (keys.len() - half) as u64;
                right_keys.extend(keys.drain(half..));
                right_values.extend(values.drain(half..));
                let right = Node::Leaf {
                    keys: right_keys,
                    values: right_values,
                    next: *next,
                };
                *next = right_id;
                right
            }
            Node::Inner { keys, children } => {
                let half = keys.len() / 2;
                self.counters.keys_shifted += (keys.len() - half) as u64;
                // keys[half] moves up; children from half + 1 go right.
                right_keys.extend(keys.drain(half + 1..));
                right_children.extend(children.drain(half + 1..));
                let up = keys.pop().unwrap_or(0);
                let right = Node::Inner {
                    keys: right_keys,
                    children: right_children,
                };
                self.nodes.push(right);
                return (up, right_id);
            }
        };
        let least = match &right {
            Node::Leaf { keys, .. } => keys[0],
            Node::Inner { .. } => 0,
        };
        self.nodes.push(right);
        (least, right_id)
    }
}

impl Updatable for BTree {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        BTree::with_params(entries, BTreeParams::default())
    }

    fn get(&mut self, key: u64) -> Option<u64> {
        let leaf = self.descend(key, false);
        match &self.nodes[leaf as usize] {
            Node::Leaf { keys, values, .. } => keys.binary_search(&key).ok().map(|i| values[i]),
            Node::Inner { .. } => None,
        }
    }

    fn insert(&mut self, key: u64, payload: u64) {
        let leaf = self.descend(key, true);
        let Node::Leaf { keys, values, .. } = &mut self.nodes[leaf as usize] else {
            return;
        };
        match keys.binary_search(&key) {
            Ok(i) => {
                values[i] = payload;
                return;
            }
            Err(i) => {
                self.counters.keys_shifted += (keys.len() - i) as u64;
                keys.insert(i, key);
                values.insert(i, payload);
                if keys.len() <= self.params.leaf_slots {
                    return;
                }
            }
        }
        // Split upward while nodes overflow.
        let (mut sep, mut right) = self.split(leaf);
        while let Some((parent, at)) = self.path.pop() {
            let Node::Inner { keys, children } = &mut self.nodes[parent as usize] else {
                return;
            };
            self.counters.keys_shifted += (keys.len() - at) as u64;
            keys.insert(at, sep);
            children.insert(at + 1, right);
            if keys.len() <= self.params.inner_slots {
                return;
            }
            (sep, right) = self.split(parent);
        }
        // The root split: a new root over the two halves.
        let old = self.root;
        self.root = self.nodes.len() as u32;
        self.nodes.push(Node::Inner {
            keys: vec![sep],
            children: vec![old, right],
        });
        self.counters.nodes_created += 1;
    }

    fn remove(&mut self, key: u64) {
        let leaf = self.descend(key, false);
        if let Node::Leaf { keys, values, .. } = &mut self.nodes[leaf as usize]
            && let Ok(i) = keys.binary_search(&key)
        {
            self.counters.keys_shifted += (keys.len() - i - 1) as u64;
            keys.remove(i);
            values.remove(i);
        }
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let mut id = self.descend(from, false);
        let before = out.len();
        while id != NONE && out.len() - before < n {
            let Node::Leaf { keys, values, next } = &self.nodes[id as usize] else {
                break;
            };
            let start = keys.partition_point(|&k| k < from);
            let take = (n - (out.len() - before)).min(keys.len() - start);
            out.extend(
                keys[start..start + take]
                    .iter()
                    .copied()
                    .zip(values[start..start + take].iter().copied()),
            );
            id = *next;
        }
        out.len() - before
    }

    /// Every node's spare room counted, as allocated.
    fn size_in_bytes(&self) -> u64 {
        let node = std::mem::size_of::<Node>() as u64;
        self.nodes
            .iter()
            .map(|n| {
                node + match n {
                    Node::Leaf { keys, values, .. } => {
                        (keys.capacity() + values.capacity()) as u64 * 8
                    }
                    Node::Inner { keys, children } => {
                        keys.capacity() as u64 * 8 + children.capacity() as u64 * 4
                    }
                }
            })
            .sum()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        // Every key under child i of an inner node lies in [keys[i-1], keys[i]).
        let mut leaves = Vec::new();
        let mut stack = vec![(self.root, 0u64, None::<u64>)];
        let mut reached = 0;
        while let Some((id, lo, hi)) = stack.pop() {
            reached += 1;
            match &self.nodes[id as usize] {
                Node::Leaf { keys, values, .. } => {
                    if keys.len() != values.len() || keys.len() > self.params.leaf_slots {
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
                }
                Node::Inner { keys, children } => {
                    if children.len() != keys.len() + 1 || keys.len() > self.params.inner_slots {
                        return Err(format!(
                            "inner node {id} has {} keys and {} children",
                            keys.len(),
                            children.len()
                        ));
                    }
                    for (i, &c) in children.iter().enumerate().rev() {
                        let c_lo = if i == 0 { lo } else { keys[i - 1] };
                        let c_hi = keys.get(i).copied().or(hi);
                        stack.push((c, c_lo, c_hi));
                    }
                }
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
            id = match &self.nodes[id as usize] {
                Node::Leaf { next, .. } => *next,
                Node::Inner { .. } => NONE,
            };
        }
        if id != NONE {
            return Err("the leaf chain goes on past the last leaf".into());
        }
        // Every node is in the tree, and each one made since the bulk load was counted.
        if reached != self.nodes.len()
            || self.nodes.len() as u64 != self.built as u64 + self.counters.nodes_created
        {
            return Err(format!(
                "{} nodes in the arena, {reached} in the tree, {} built and {} counted as created",
                self.nodes.len(),
                self.built,
                self.counters.nodes_created
            ));
        }
        Ok(())
    }
}
