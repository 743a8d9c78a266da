//! An adaptive radix tree (Leis, Kemper and Neumann, ICDE 2013; paper 3's ART baseline)
//! over the 8 big-endian bytes of each key, so that byte order is numeric order.
//!
//! Inner nodes branch on one byte and grow through four sizes as children arrive: up to 4
//! and up to 16 children in sorted arrays, up to 48 through a 256-entry byte index, and
//! then a direct array of 256. Two of the paper's techniques keep paths short:
//! - **lazy expansion**: a leaf hangs from the first node where no other key shares its
//!   path, holding its whole key;
//! - **path compression** (pessimistic): an inner node keeps the bytes every key below it
//!   shares (its prefix) and branches on the first byte where they differ, so no node has
//!   a single child when built. When a key arrives that leaves the prefix, a node is put
//!   in above at the byte where they part.
//!
//! A lookup follows the branching bytes alone and compares the whole key at the leaf.
//! Removals take the leaf out and leave its nodes, however empty.

use super::{Counters, Updatable, check_sorted};
use crate::Result;

/// Byte `depth` (0 the most significant) of `key`.
fn byte(key: u64, depth: usize) -> u8 {
    (key >> (56 - 8 * depth)) as u8
}

/// The bytes of `key` above byte `depth` (the rest zero).
fn prefix_of(key: u64, depth: usize) -> u64 {
    match depth {
        0 => 0,
        d => key & (u64::MAX << (64 - 8 * d)),
    }
}

/// The first byte where `a` and `b` differ (8 where they are equal).
fn first_difference(a: u64, b: u64) -> usize {
    (a ^ b).leading_zeros() as usize / 8
}

#[derive(Clone, Debug)]
enum Node {
    Leaf(u64, u64),
    Inner(Box<Inner>),
}

/// An inner node: every key below shares the bytes of `prefix` above `depth`, and the node
/// branches on byte `depth`.
#[derive(Clone, Debug)]
struct Inner {
    prefix: u64,
    depth: usize,
    children: Children,
}

#[derive(Clone, Debug)]
enum Children {
    /// Up to 4 or up to 16 children, by increasing byte (`cap` says which).
    Small {
        cap: usize,
        bytes: Vec<u8>,
        children: Vec<Node>,
    },
    /// Up to 48 children: `index[b]` is 1 + the slot of byte `b`'s child, or 0.
    Indexed {
        index: Box<[u8; 256]>,
        children: Vec<Node>,
    },
    /// A child per byte.
    Full(Box<[Option<Node>; 256]>),
}

impl Inner {
    /// An empty node branching on byte `depth` under the bytes of `key` above it.
    fn new(key: u64, depth: usize) -> Inner {
        Inner {
            prefix: prefix_of(key, depth),
            depth,
            children: Children::Small {
                cap: 4,
                bytes: Vec::with_capacity(4),
                children: Vec::with_capacity(4),
            },
        }
    }

    /// Whether `key` shares this node's prefix.
    fn holds(&self, key: u64) -> bool {
        prefix_of(key, self.depth) == self.prefix
    }

    /// The child under byte `b`.
    fn child(&self, b: u8) -> Option<&Node> {
        match &self.children {
            Children::Small {
                bytes, children, ..
            } => bytes.iter().position(|&x| x == b).map(|i| &children[i]),
            Children::Indexed { index, children } => match index[b as usize] {
                0 => None,
                i => Some(&children[i as usize - 1]),
            },
            Children::Full(children) => children[b as usize].as_ref(),
        }
    }

    fn child_mut(&mut self, b: u8) -> Option<&mut Node> {
        match &mut self.children {
            Children::Small {
                bytes, children, ..
            } => bytes.iter().position(|&x| x == b).map(|i| &mut children[i]),
            Children::Indexed { index, children } => match index[b as usize] {
                0 => None,
                i => Some(&mut children[i as usize - 1]),
            },
            Children::Full(children) => children[b as usize].as_mut(),
        }
    }

    /// Adds `child` under byte `b` (absent), growing the node when it is full.
    fn add(&mut self, b: u8, child: Node, counters: &mut Counters) {
        if self.full() {
            self.grow(counters);
        }
        match &mut self.children {
            Children::Small {
                bytes, children, ..
            } => {
                let at = bytes.partition_point(|&x| x < b);
                counters.keys_shifted += (bytes.len() - at) as u64;
                bytes.insert(at, b);
                children.insert(at, child);
            }
            Children::Indexed { index, children } => {
                children.push(child);
                index[b as usize] = children.len() as u8;
            }
            Children::Full(children) => children[b as usize] = Some(child),
        }
    }

    /// Takes out the child under byte `b`.
    fn remove(&mut self, b: u8) {
        match &mut self.children {
            Children::Small {
                bytes, children, ..
            } => {
                if let Some(i) = bytes.iter().position(|&x| x == b) {
                    bytes.remove(i);
                    children.remove(i);
                }
            }
            Children::Indexed { index, children } => {
                let slot = index[b as usize] as usize;
                if slot == 0 {
                    return;
                }
                index[b as usize] = 0;
                let last = children.len();
                children.swap_remove(slot - 1);
                // The child that was last now sits in the freed slot.
                if slot < last
                    && let Some(moved) = index.iter().position(|&i| i as usize == last)
                {
                    index[moved] = slot as u8;
                }
            }
            Children::Full(children) => children[b as usize] = None,
        }
    }

    fn full(&self) -> bool {
        match &self.children {
            Children::Small { cap, bytes, .. } => bytes.len() == *cap,
            Children::Indexed { children, .. } => children.len() == 48,
            Children::Full(_) => false,
        }
    }

    /// The next size up, holding the same children.
    fn grow(&mut self, counters: &mut Counters) {
        counters.structure_modifications += 1;
        let old = std::mem::replace(
            &mut self.children,
            Children::Full(Box::new([const { None }; 256])),
        );
        self.children = match old {
            Children::Small {
                cap: 4,
                bytes,
                children,
            } => {
                let (mut b16, mut c16) = (Vec::with_capacity(16), Vec::with_capacity(16));
                b16.extend(bytes);
                c16.extend(children);
                Children::Small {
                    cap: 16,
                    bytes: b16,
                    children: c16,
                }
            }
            Children::Small {
                bytes, children, ..
            } => {
                let mut index = Box::new([0u8; 256]);
                for (i, &b) in bytes.iter().enumerate() {
                    index[b as usize] = i as u8 + 1;
                }
                let mut c48 = Vec::with_capacity(48);
                c48.extend(children);
                Children::Indexed {
                    index,
                    children: c48,
                }
            }
            Children::Indexed { index, children } => {
                let mut full: Box<[Option<Node>; 256]> = Box::new([const { None }; 256]);
                let mut children: Vec<Option<Node>> = children.into_iter().map(Some).collect();
                for b in 0..256 {
                    if index[b] != 0 {
                        full[b] = children[index[b] as usize - 1].take();
                    }
                }
                Children::Full(full)
            }
            full => full,
        };
    }

    /// Children with their bytes, in increasing byte order, from byte `from` on.
    fn children_from(&self, from: u8) -> ChildrenFrom<'_> {
        let at = match &self.children {
            Children::Small { bytes, .. } => bytes.partition_point(|&b| b < from),
            Children::Indexed { .. } | Children::Full(_) => from as usize,
        };
        ChildrenFrom { node: self, at }
    }

    /// Bytes of this node and everything below it.
    fn bytes(&self) -> u64 {
        let node = std::mem::size_of::<Node>() as u64;
        let own = std::mem::size_of::<Inner>() as u64
            + match &self.children {
                Children::Small {
                    bytes, children, ..
                } => bytes.capacity() as u64 + children.capacity() as u64 * node,
                Children::Indexed { children, .. } => 256 + children.capacity() as u64 * node,
                Children::Full(_) => 256 * std::mem::size_of::<Option<Node>>() as u64,
            };
        let below: u64 = self
            .children_from(0)
            .map(|(_, c)| match c {
                Node::Leaf(..) => 0,
                Node::Inner(i) => i.bytes(),
            })
            .sum();
        own + below
    }
}

/// The children of a node from some byte on, in increasing byte order (no allocation:
/// scans walk many nodes).
struct ChildrenFrom<'a> {
    node: &'a Inner,
    /// The next position in a small node's arrays, or the next byte to try.
    at: usize,
}

impl<'a> Iterator for ChildrenFrom<'a> {
    type Item = (u8, &'a Node);

    fn next(&mut self) -> Option<(u8, &'a Node)> {
        match &self.node.children {
            Children::Small {
                bytes, children, ..
            } => {
                let i = self.at;
                self.at += 1;
                Some((*bytes.get(i)?, &children[i]))
            }
            Children::Indexed { index, children } => {
                while self.at < 256 {
                    let b = self.at;
                    self.at += 1;
                    if index[b] != 0 {
                        return Some((b as u8, &children[index[b] as usize - 1]));
                    }
                }
                None
            }
            Children::Full(children) => {
                while self.at < 256 {
                    let b = self.at;
                    self.at += 1;
                    if let Some(c) = &children[b] {
                        return Some((b as u8, c));
                    }
                }
                None
            }
        }
    }
}

/// The ART.
#[derive(Clone, Debug)]
pub struct Art {
    root: Inner,
    counters: Counters,
    /// Inner nodes after the bulk load (the tree holds these and `nodes_created`).
    built_nodes: u64,
}

/// Appends entries under `node` with keys at least `from` (when `bounded`: every key
/// above `node` shares `from`'s bytes so far) until `out` holds `until`; returns whether
/// it did.
fn scan_from(
    node: &Inner,
    from: u64,
    bounded: bool,
    until: usize,
    out: &mut Vec<(u64, u64)>,
) -> bool {
    let mut start = 0;
    let mut bounded = bounded;
    if bounded {
        let from_prefix = prefix_of(from, node.depth);
        if node.prefix < from_prefix {
            // Every key below is less than `from`.
            return false;
        }
        if node.prefix > from_prefix {
            bounded = false;
        } else {
            start = byte(from, node.depth);
        }
    }
    for (i, (b, child)) in node.children_from(start).enumerate() {
        if out.len() >= until {
            return true;
        }
        // Only the child under `from`'s own byte stays bounded; later ones hold greater keys.
        let child_bounded = bounded && i == 0 && b == start;
        let done = match child {
            Node::Leaf(k, v) => {
                if !child_bounded || *k >= from {
                    out.push((*k, *v));
                }
                out.len() >= until
            }
            Node::Inner(inner) => scan_from(inner, from, child_bounded, until, out),
        };
        if done {
            return true;
        }
    }
    out.len() >= until
}

impl Art {
    fn empty() -> Art {
        Art {
            root: Inner::new(0, 0),
            counters: Counters::default(),
            built_nodes: 1,
        }
    }
}

impl Updatable for Art {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        check_sorted(entries, "Art::bulk_load")?;
        let mut art = Art::empty();
        for &(k, v) in entries {
            art.insert(k, v);
        }
        art.built_nodes += art.counters.nodes_created;
        art.counters = Counters::default();
        Ok(art)
    }

    fn get(&mut self, key: u64) -> Option<u64> {
        let mut node = &self.root;
        loop {
            self.counters.nodes_traversed += 1;
            match node.child(byte(key, node.depth))? {
                Node::Leaf(k, v) => return (*k == key).then_some(*v),
                Node::Inner(inner) => node = inner,
            }
        }
    }

    fn insert(&mut self, key: u64, payload: u64) {
        let counters = &mut self.counters;
        let mut node = &mut self.root;
        loop {
            counters.nodes_traversed += 1;
            let b = byte(key, node.depth);
            let Some(child) = node.child_mut(b) else {
                node.add(b, Node::Leaf(key, payload), counters);
                return;
            };
            // Where `key` leaves the child's path, a new node branching there takes both.
            let parting = match child {
                Node::Leaf(k, v) if *k == key => {
                    *v = payload;
                    return;
                }
                Node::Leaf(k, _) => Some(first_difference(*k, key)),
                Node::Inner(inner) if !inner.holds(key) => {
                    Some(first_difference(inner.prefix, key))
                }
                Node::Inner(_) => None,
            };
            if let Some(depth) = parting {
                counters.structure_modifications += 1;
                counters.nodes_created += 1;
                let old = std::mem::replace(child, Node::Leaf(0, 0));
                let old_byte = match &old {
                    Node::Leaf(k, _) => byte(*k, depth),
                    Node::Inner(inner) => byte(inner.prefix, depth),
                };
                let mut parted = Inner::new(key, depth);
                parted.add(old_byte, old, counters);
                parted.add(byte(key, depth), Node::Leaf(key, payload), counters);
                *child = Node::Inner(Box::new(parted));
                return;
            }
            let Some(Node::Inner(inner)) = node.child_mut(b) else {
                return;
            };
            node = inner;
        }
    }

    fn remove(&mut self, key: u64) {
        let mut node = &mut self.root;
        loop {
            self.counters.nodes_traversed += 1;
            let b = byte(key, node.depth);
            match node.child(b) {
                Some(Node::Leaf(k, _)) if *k == key => {
                    node.remove(b);
                    return;
                }
                Some(Node::Inner(_)) => {}
                _ => return,
            }
            let Some(Node::Inner(inner)) = node.child_mut(b) else {
                return;
            };
            node = inner;
        }
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let before = out.len();
        scan_from(&self.root, from, true, before.saturating_add(n), out);
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        std::mem::size_of::<Art>() as u64 - std::mem::size_of::<Inner>() as u64 + self.root.bytes()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        fn walk(node: &Inner, nodes: &mut u64) -> std::result::Result<(), String> {
            *nodes += 1;
            if node.prefix != prefix_of(node.prefix, node.depth) || node.depth > 7 {
                return Err(format!(
                    "a node at byte {} with prefix {:#x}",
                    node.depth, node.prefix
                ));
            }
            let mut last = None;
            for (b, child) in node.children_from(0) {
                if last.is_some_and(|l| l >= b) {
                    return Err(format!(
                        "bytes out of order under prefix {:#x}",
                        node.prefix
                    ));
                }
                last = Some(b);
                let (key, deeper) = match child {
                    Node::Leaf(k, _) => (*k, true),
                    Node::Inner(inner) => (inner.prefix, inner.depth > node.depth),
                };
                if !node.holds(key) || byte(key, node.depth) != b || !deeper {
                    return Err(format!(
                        "{key:#x} hangs under byte {b} of the node at byte {} with prefix {:#x}",
                        node.depth, node.prefix
                    ));
                }
                if let Node::Inner(inner) = child {
                    walk(inner, nodes)?;
                }
            }
            Ok(())
        }
        let mut nodes = 0;
        walk(&self.root, &mut nodes)?;
        // Every inner node made since the bulk load was counted (a node grown to the next
        // size replaces itself: a structure modification, not a new node).
        if nodes != self.built_nodes + self.counters.nodes_created {
            return Err(format!(
                "{nodes} inner nodes, but {} built and {} counted as created",
                self.built_nodes, self.counters.nodes_created
            ));
        }
        Ok(())
    }
}
