//! An adaptive radix tree (Leis, Kemper and Neumann, ICDE 2013; paper 3's ART baseline)
//! over the 8 big-endian bytes of each key, so that byte order is numeric order.
//!
//! Inner nodes branch on one byte and grow through the paper's four sizes as children
//! arrive: up to 4 and up to 16 children in sorted arrays, up to 48 through a 256-entry
//! byte index, and then a direct array of 256. Each size is one allocation holding its
//! header and arrays, so a level costs one pointer to follow. Two of the paper's techniques
//! keep paths short:
//! - **lazy expansion**: a leaf hangs from the first node where no other key shares its
//!   path, holding its whole key;
//! - **path compression** (pessimistic): an inner node keeps the bytes every key below it
//!   shares (its prefix) and branches on the first byte where they differ, so no node has
//!   a single child when built. When a key arrives that leaves the prefix, a node is put
//!   in above at the byte where they part.
//!
//! A lookup follows the branching bytes alone and compares the whole key at the leaf.
//! Removals take the leaf out and leave its nodes, however empty.
//!
//! Counters: a node put in where a key leaves a prefix is a node created and a structure
//! modification; a node grown to the next size is a structure modification.

use super::{Counters, NoClock, Phase, PhaseClock, Updatable, check_sorted};
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
    /// No child (a free slot of an inner node).
    Empty,
    Leaf(u64, u64),
    N4(Box<Sorted<4>>),
    N16(Box<Sorted<16>>),
    N48(Box<Indexed>),
    N256(Box<Direct>),
}

/// What every inner node holds: every key below it shares the bytes of `prefix` above
/// `depth`, it branches on byte `depth`, and it has `len` children.
#[derive(Clone, Copy, Debug)]
struct Head {
    prefix: u64,
    depth: usize,
    len: usize,
}

/// Up to `N` children by increasing byte.
#[derive(Clone, Debug)]
struct Sorted<const N: usize> {
    head: Head,
    bytes: [u8; N],
    children: [Node; N],
}

/// Up to 48 children: `index[b]` is 1 + the slot of byte `b`'s child, or 0.
#[derive(Clone, Debug)]
struct Indexed {
    head: Head,
    index: [u8; 256],
    children: [Node; 48],
}

/// A child per byte.
#[derive(Clone, Debug)]
struct Direct {
    head: Head,
    children: [Node; 256],
}

fn empties<const N: usize>() -> [Node; N] {
    std::array::from_fn(|_| Node::Empty)
}

impl<const N: usize> Sorted<N> {
    fn new(head: Head) -> Sorted<N> {
        Sorted {
            head,
            bytes: [0; N],
            children: empties(),
        }
    }

    fn find(&self, b: u8) -> Option<usize> {
        self.bytes[..self.head.len].iter().position(|&x| x == b)
    }

    /// Puts `child` under byte `b` (absent) in a node with room; returns the children moved.
    fn insert(&mut self, b: u8, child: Node) -> u64 {
        let len = self.head.len;
        let at = self.bytes[..len].partition_point(|&x| x < b);
        self.bytes.copy_within(at..len, at + 1);
        self.children[at..=len].rotate_right(1);
        self.bytes[at] = b;
        self.children[at] = child;
        self.head.len += 1;
        (len - at) as u64
    }

    fn remove(&mut self, b: u8) {
        if let Some(i) = self.find(b) {
            let len = self.head.len;
            self.bytes.copy_within(i + 1..len, i);
            self.children[i] = Node::Empty;
            self.children[i..len].rotate_left(1);
            self.head.len -= 1;
        }
    }

    /// Its children, emptied out, with their bytes.
    fn take(&mut self) -> impl Iterator<Item = (u8, Node)> + '_ {
        let len = self.head.len;
        self.bytes[..len]
            .iter()
            .zip(self.children[..len].iter_mut())
            .map(|(&b, c)| (b, std::mem::replace(c, Node::Empty)))
    }
}

impl Node {
    /// An empty inner node branching on byte `depth` under the bytes of `key` above it.
    fn inner(key: u64, depth: usize) -> Node {
        Node::N4(Box::new(Sorted::new(Head {
            prefix: prefix_of(key, depth),
            depth,
            len: 0,
        })))
    }

    /// The header of an inner node (`None` for a leaf or an empty slot).
    fn head(&self) -> Option<&Head> {
        match self {
            Node::Empty | Node::Leaf(..) => None,
            Node::N4(n) => Some(&n.head),
            Node::N16(n) => Some(&n.head),
            Node::N48(n) => Some(&n.head),
            Node::N256(n) => Some(&n.head),
        }
    }

    /// The child under byte `b`.
    fn child(&self, b: u8) -> Option<&Node> {
        match self {
            Node::Empty | Node::Leaf(..) => None,
            Node::N4(n) => n.find(b).map(|i| &n.children[i]),
            Node::N16(n) => n.find(b).map(|i| &n.children[i]),
            Node::N48(n) => match n.index[b as usize] {
                0 => None,
                i => Some(&n.children[i as usize - 1]),
            },
            Node::N256(n) => match &n.children[b as usize] {
                Node::Empty => None,
                c => Some(c),
            },
        }
    }

    fn child_mut(&mut self, b: u8) -> Option<&mut Node> {
        match self {
            Node::Empty | Node::Leaf(..) => None,
            Node::N4(n) => n.find(b).map(|i| &mut n.children[i]),
            Node::N16(n) => n.find(b).map(|i| &mut n.children[i]),
            Node::N48(n) => match n.index[b as usize] {
                0 => None,
                i => Some(&mut n.children[i as usize - 1]),
            },
            Node::N256(n) => match &mut n.children[b as usize] {
                Node::Empty => None,
                c => Some(c),
            },
        }
    }

    /// Adds `child` under byte `b` (absent) to this inner node, growing it when full.
    fn add(&mut self, b: u8, child: Node, counters: &mut Counters) {
        let full = match self {
            Node::N4(n) => n.head.len == 4,
            Node::N16(n) => n.head.len == 16,
            Node::N48(n) => n.head.len == 48,
            _ => false,
        };
        if full {
            self.grow(counters);
        }
        match self {
            Node::Empty | Node::Leaf(..) => {}
            Node::N4(n) => counters.keys_shifted += n.insert(b, child),
            Node::N16(n) => counters.keys_shifted += n.insert(b, child),
            Node::N48(n) => {
                n.children[n.head.len] = child;
                n.head.len += 1;
                n.index[b as usize] = n.head.len as u8;
            }
            Node::N256(n) => {
                n.children[b as usize] = child;
                n.head.len += 1;
            }
        }
    }

    /// Takes out the child under byte `b`.
    fn remove(&mut self, b: u8) {
        match self {
            Node::Empty | Node::Leaf(..) => {}
            Node::N4(n) => n.remove(b),
            Node::N16(n) => n.remove(b),
            Node::N48(n) => {
                let slot = n.index[b as usize] as usize;
                if slot == 0 {
                    return;
                }
                let last = n.head.len;
                n.index[b as usize] = 0;
                n.children.swap(slot - 1, last - 1);
                n.children[last - 1] = Node::Empty;
                n.head.len -= 1;
                // The child that was last now sits in the freed slot.
                if slot < last
                    && let Some(moved) = n.index.iter().position(|&i| i as usize == last)
                {
                    n.index[moved] = slot as u8;
                }
            }
            Node::N256(n) => {
                if !matches!(n.children[b as usize], Node::Empty) {
                    n.children[b as usize] = Node::Empty;
                    n.head.len -= 1;
                }
            }
        }
    }

    /// The next size up, holding the same children.
    fn grow(&mut self, counters: &mut Counters) {
        counters.structure_modifications += 1;
        *self = match std::mem::replace(self, Node::Empty) {
            Node::N4(mut n) => {
                let mut up = Sorted::<16>::new(n.head);
                let len = n.head.len;
                up.bytes[..len].copy_from_slice(&n.bytes[..len]);
                for (to, (_, c)) in up.children.iter_mut().zip(n.take()) {
                    *to = c;
                }
                Node::N16(Box::new(up))
            }
            Node::N16(mut n) => {
                let mut up = Indexed {
                    head: n.head,
                    index: [0; 256],
                    children: empties(),
                };
                for (i, (b, c)) in n.take().enumerate() {
                    up.index[b as usize] = i as u8 + 1;
                    up.children[i] = c;
                }
                Node::N48(Box::new(up))
            }
            Node::N48(mut n) => {
                let mut up = Direct {
                    head: n.head,
                    children: empties(),
                };
                for b in 0..256 {
                    let slot = n.index[b] as usize;
                    if slot != 0 {
                        up.children[b] = std::mem::replace(&mut n.children[slot - 1], Node::Empty);
                    }
                }
                Node::N256(Box::new(up))
            }
            other => other,
        };
    }

    /// Children with their bytes, in increasing byte order, from byte `from` on.
    fn children_from(&self, from: u8) -> ChildrenFrom<'_> {
        let at = match self {
            Node::N4(n) => n.bytes[..n.head.len].partition_point(|&b| b < from),
            Node::N16(n) => n.bytes[..n.head.len].partition_point(|&b| b < from),
            _ => from as usize,
        };
        ChildrenFrom { node: self, at }
    }

    /// Bytes of this node and everything below it (a leaf or an empty slot: none beyond
    /// the slot that holds it).
    fn bytes(&self) -> u64 {
        let own = match self {
            Node::Empty | Node::Leaf(..) => return 0,
            Node::N4(_) => std::mem::size_of::<Sorted<4>>(),
            Node::N16(_) => std::mem::size_of::<Sorted<16>>(),
            Node::N48(_) => std::mem::size_of::<Indexed>(),
            Node::N256(_) => std::mem::size_of::<Direct>(),
        } as u64;
        own + self.children_from(0).map(|(_, c)| c.bytes()).sum::<u64>()
    }
}

/// The children of an inner node from some byte on, in increasing byte order (no
/// allocation: scans walk many nodes).
struct ChildrenFrom<'a> {
    node: &'a Node,
    /// The next position in a sorted node's arrays, or the next byte to try.
    at: usize,
}

impl<'a> Iterator for ChildrenFrom<'a> {
    type Item = (u8, &'a Node);

    fn next(&mut self) -> Option<(u8, &'a Node)> {
        fn sorted<'a, const N: usize>(n: &'a Sorted<N>, at: &mut usize) -> Option<(u8, &'a Node)> {
            let i = *at;
            *at += 1;
            (i < n.head.len).then(|| (n.bytes[i], &n.children[i]))
        }
        match self.node {
            Node::Empty | Node::Leaf(..) => None,
            Node::N4(n) => sorted(n, &mut self.at),
            Node::N16(n) => sorted(n, &mut self.at),
            Node::N48(n) => {
                while self.at < 256 {
                    let b = self.at;
                    self.at += 1;
                    if n.index[b] != 0 {
                        return Some((b as u8, &n.children[n.index[b] as usize - 1]));
                    }
                }
                None
            }
            Node::N256(n) => {
                while self.at < 256 {
                    let b = self.at;
                    self.at += 1;
                    if !matches!(n.children[b], Node::Empty) {
                        return Some((b as u8, &n.children[b]));
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
    /// An inner node at byte 0.
    root: Node,
    counters: Counters,
    /// Inner nodes after the bulk load (the tree holds these and `nodes_created`).
    built_nodes: u64,
}

/// Appends entries under inner node `node` with keys at least `from` (when `bounded`:
/// every key above `node` shares `from`'s bytes so far) until `out` holds `until`; returns
/// whether it did.
fn scan_from(
    node: &Node,
    from: u64,
    bounded: bool,
    until: usize,
    out: &mut Vec<(u64, u64)>,
) -> bool {
    let Some(head) = node.head() else {
        return out.len() >= until;
    };
    let mut start = 0;
    let mut bounded = bounded;
    if bounded {
        let from_prefix = prefix_of(from, head.depth);
        if head.prefix < from_prefix {
            // Every key below is less than `from`.
            return false;
        }
        if head.prefix > from_prefix {
            bounded = false;
        } else {
            start = byte(from, head.depth);
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
            inner => scan_from(inner, from, child_bounded, until, out),
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
            root: Node::inner(0, 0),
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
            let depth = node.head()?.depth;
            match node.child(byte(key, depth))? {
                Node::Leaf(k, v) => return (*k == key).then_some(*v),
                inner => node = inner,
            }
        }
    }

    fn insert(&mut self, key: u64, payload: u64) {
        self.insert_timed(key, payload, &mut NoClock);
    }

    /// The search ends where the key's path leaves the tree; the rest (a leaf added, a
    /// node grown or a path parted) is the collision.
    fn insert_timed(&mut self, key: u64, payload: u64, clock: &mut impl PhaseClock) {
        clock.start();
        let counters = &mut self.counters;
        let mut node = &mut self.root;
        loop {
            counters.nodes_traversed += 1;
            let Some(&head) = node.head() else {
                return;
            };
            let b = byte(key, head.depth);
            let Some(child) = node.child_mut(b) else {
                clock.lap(Phase::Search);
                node.add(b, Node::Leaf(key, payload), counters);
                clock.lap(Phase::Collision);
                return;
            };
            // Where `key` leaves the child's path, a new node branching there takes both.
            let parting = match &mut *child {
                Node::Leaf(k, v) if *k == key => {
                    clock.lap(Phase::Search);
                    *v = payload;
                    clock.lap(Phase::Collision);
                    return;
                }
                Node::Leaf(k, _) => Some(first_difference(*k, key)),
                inner => inner
                    .head()
                    .filter(|h| prefix_of(key, h.depth) != h.prefix)
                    .map(|h| first_difference(h.prefix, key)),
            };
            if let Some(depth) = parting {
                clock.lap(Phase::Search);
                counters.structure_modifications += 1;
                counters.nodes_created += 1;
                let old = std::mem::replace(child, Node::Empty);
                let old_key = match &old {
                    Node::Leaf(k, _) => *k,
                    inner => inner.head().map_or(0, |h| h.prefix),
                };
                let mut parted = Node::inner(key, depth);
                parted.add(byte(old_key, depth), old, counters);
                parted.add(byte(key, depth), Node::Leaf(key, payload), counters);
                *child = parted;
                clock.lap(Phase::Collision);
                return;
            }
            let Some(next) = node.child_mut(b) else {
                return;
            };
            node = next;
        }
    }

    fn remove(&mut self, key: u64) {
        let mut node = &mut self.root;
        loop {
            self.counters.nodes_traversed += 1;
            let Some(&head) = node.head() else {
                return;
            };
            let b = byte(key, head.depth);
            match node.child(b) {
                Some(Node::Leaf(k, _)) if *k == key => {
                    node.remove(b);
                    return;
                }
                Some(Node::Leaf(..)) | None => return,
                Some(_) => {}
            }
            let Some(next) = node.child_mut(b) else {
                return;
            };
            node = next;
        }
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let before = out.len();
        scan_from(&self.root, from, true, before.saturating_add(n), out);
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        std::mem::size_of::<Art>() as u64 + self.root.bytes()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        fn walk(node: &Node, nodes: &mut u64) -> std::result::Result<(), String> {
            let Some(head) = node.head() else {
                return Err("a leaf or an empty slot where an inner node belongs".into());
            };
            *nodes += 1;
            if head.prefix != prefix_of(head.prefix, head.depth) || head.depth > 7 {
                return Err(format!(
                    "a node at byte {} with prefix {:#x}",
                    head.depth, head.prefix
                ));
            }
            let (mut last, mut count) = (None, 0);
            for (b, child) in node.children_from(0) {
                count += 1;
                if last.is_some_and(|l| l >= b) {
                    return Err(format!(
                        "bytes out of order under prefix {:#x}",
                        head.prefix
                    ));
                }
                last = Some(b);
                let (key, deeper) = match child {
                    Node::Empty => return Err(format!("an empty child under byte {b}")),
                    Node::Leaf(k, _) => (*k, true),
                    inner => inner
                        .head()
                        .map_or((0, false), |h| (h.prefix, h.depth > head.depth)),
                };
                if prefix_of(key, head.depth) != head.prefix
                    || byte(key, head.depth) != b
                    || !deeper
                {
                    return Err(format!(
                        "{key:#x} hangs under byte {b} of the node at byte {} with prefix {:#x}",
                        head.depth, head.prefix
                    ));
                }
                if !matches!(child, Node::Leaf(..)) {
                    walk(child, nodes)?;
                }
            }
            if count != head.len {
                return Err(format!(
                    "a node counts {} children and holds {count}",
                    head.len
                ));
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
