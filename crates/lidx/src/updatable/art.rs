//! An adaptive radix tree (Leis, Kemper and Neumann, ICDE 2013; paper 3's ART baseline)
//! over the 8 big-endian bytes of each key, so that byte order is numeric order.
//!
//! Inner nodes branch on one byte and grow through four sizes as children arrive: up to 4
//! and up to 16 children in sorted arrays, up to 48 through a 256-entry byte index, and
//! then a direct array of 256. Leaves are stored as high as they are unique (the paper's
//! lazy expansion): a leaf hangs from the first node where no other key shares its path,
//! and only when a second key arrives there are nodes added for the bytes they share (one
//! per byte: there is no path compression, which for 8-byte keys costs at most 7 nodes on
//! a path). Removals take the leaf out and leave its nodes, however empty.

use super::{Counters, Updatable, check_sorted};
use crate::Result;

/// Byte `depth` (0 the most significant) of `key`.
fn byte(key: u64, depth: usize) -> u8 {
    (key >> (56 - 8 * depth)) as u8
}

#[derive(Clone, Debug)]
enum Node {
    Leaf(u64, u64),
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

impl Node {
    fn small() -> Node {
        Node::Small {
            cap: 4,
            bytes: Vec::with_capacity(4),
            children: Vec::with_capacity(4),
        }
    }

    /// The child under byte `b`.
    fn child_mut(&mut self, b: u8) -> Option<&mut Node> {
        match self {
            Node::Leaf(..) => None,
            Node::Small {
                bytes, children, ..
            } => bytes.iter().position(|&x| x == b).map(|i| &mut children[i]),
            Node::Indexed { index, children } => match index[b as usize] {
                0 => None,
                i => Some(&mut children[i as usize - 1]),
            },
            Node::Full(children) => children[b as usize].as_mut(),
        }
    }

    fn child(&self, b: u8) -> Option<&Node> {
        match self {
            Node::Leaf(..) => None,
            Node::Small {
                bytes, children, ..
            } => bytes.iter().position(|&x| x == b).map(|i| &children[i]),
            Node::Indexed { index, children } => match index[b as usize] {
                0 => None,
                i => Some(&children[i as usize - 1]),
            },
            Node::Full(children) => children[b as usize].as_ref(),
        }
    }

    /// Adds `child` under byte `b` (absent), growing the node when it is full.
    fn add(&mut self, b: u8, child: Node, counters: &mut Counters) {
        if self.full() {
            self.grow(counters);
        }
        match self {
            Node::Leaf(..) => {}
            Node::Small {
                bytes, children, ..
            } => {
                let at = bytes.partition_point(|&x| x < b);
                counters.keys_shifted += (bytes.len() - at) as u64;
                bytes.insert(at, b);
                children.insert(at, child);
            }
            Node::Indexed { index, children } => {
                children.push(child);
                index[b as usize] = children.len() as u8;
            }
            Node::Full(children) => children[b as usize] = Some(child),
        }
    }

    fn full(&self) -> bool {
        match self {
            Node::Small { cap, bytes, .. } => bytes.len() == *cap,
            Node::Indexed { children, .. } => children.len() == 48,
            _ => false,
        }
    }

    /// The next size up, holding the same children.
    fn grow(&mut self, counters: &mut Counters) {
        counters.structure_modifications += 1;
        counters.nodes_created += 1;
        let old = std::mem::replace(self, Node::Leaf(0, 0));
        *self = match old {
            Node::Small {
                cap: 4,
                bytes,
                children,
            } => {
                let (mut b16, mut c16) = (Vec::with_capacity(16), Vec::with_capacity(16));
                b16.extend(bytes);
                c16.extend(children);
                Node::Small {
                    cap: 16,
                    bytes: b16,
                    children: c16,
                }
            }
            Node::Small {
                bytes, children, ..
            } => {
                let mut index = Box::new([0u8; 256]);
                for (i, &b) in bytes.iter().enumerate() {
                    index[b as usize] = i as u8 + 1;
                }
                let mut c48 = Vec::with_capacity(48);
                c48.extend(children);
                Node::Indexed {
                    index,
                    children: c48,
                }
            }
            Node::Indexed { index, children } => {
                let mut full: Box<[Option<Node>; 256]> = Box::new(std::array::from_fn(|_| None));
                let mut children: Vec<Option<Node>> = children.into_iter().map(Some).collect();
                for b in 0..256 {
                    if index[b] != 0 {
                        full[b] = children[index[b] as usize - 1].take();
                    }
                }
                Node::Full(full)
            }
            other => other,
        };
    }

    /// Children in increasing byte order, from byte `from` on.
    fn children_from(&self, from: u8) -> Vec<&Node> {
        match self {
            Node::Leaf(..) => Vec::new(),
            Node::Small {
                bytes, children, ..
            } => bytes
                .iter()
                .zip(children)
                .filter(|(b, _)| **b >= from)
                .map(|(_, c)| c)
                .collect(),
            Node::Indexed { index, children } => (from as usize..256)
                .filter(|&b| index[b] != 0)
                .map(|b| &children[index[b] as usize - 1])
                .collect(),
            Node::Full(children) => children[from as usize..].iter().flatten().collect(),
        }
    }

    fn bytes(&self) -> u64 {
        let own = std::mem::size_of::<Node>() as u64;
        own + match self {
            Node::Leaf(..) => 0,
            Node::Small {
                bytes, children, ..
            } => {
                bytes.capacity() as u64
                    + children.capacity() as u64 * own
                    + children.iter().map(|c| c.bytes() - own).sum::<u64>()
            }
            Node::Indexed { children, .. } => {
                256 + children.capacity() as u64 * own
                    + children.iter().map(|c| c.bytes() - own).sum::<u64>()
            }
            Node::Full(children) => {
                256 * std::mem::size_of::<Option<Node>>() as u64
                    + children
                        .iter()
                        .flatten()
                        .map(|c| c.bytes() - own)
                        .sum::<u64>()
            }
        }
    }
}

/// The ART.
#[derive(Clone, Debug)]
pub struct Art {
    root: Node,
    counters: Counters,
}

/// Appends entries of `node` (at `depth`) with keys at least `from` (when `bounded`:
/// the path so far equals `from`'s) until `out` holds `until`; returns whether it did.
fn scan_from(
    node: &Node,
    depth: usize,
    from: u64,
    bounded: bool,
    until: usize,
    out: &mut Vec<(u64, u64)>,
) -> bool {
    if out.len() >= until {
        return true;
    }
    if let Node::Leaf(k, v) = node {
        if *k >= from {
            out.push((*k, *v));
        }
        return out.len() >= until;
    }
    let start = if bounded { byte(from, depth) } else { 0 };
    // Only the child under `from`'s own byte stays bounded; later ones hold greater keys.
    let first_bounded = bounded && node.child(start).is_some();
    for (i, child) in node.children_from(start).into_iter().enumerate() {
        if scan_from(child, depth + 1, from, first_bounded && i == 0, until, out) {
            return true;
        }
    }
    false
}

/// Lazy expansion undone for two keys that met: a node at `depth` for each byte they
/// share, then one holding both leaves.
fn split_leaf(depth: usize, a: (u64, u64), b: (u64, u64), counters: &mut Counters) -> Node {
    counters.nodes_created += 1;
    let mut node = Node::small();
    let (ba, bb) = (byte(a.0, depth), byte(b.0, depth));
    if ba == bb {
        let below = split_leaf(depth + 1, a, b, counters);
        node.add(ba, below, counters);
    } else {
        node.add(ba, Node::Leaf(a.0, a.1), counters);
        node.add(bb, Node::Leaf(b.0, b.1), counters);
    }
    node
}

impl Art {
    fn empty() -> Art {
        Art {
            root: Node::small(),
            counters: Counters::default(),
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
        art.counters = Counters::default();
        Ok(art)
    }

    fn get(&mut self, key: u64) -> Option<u64> {
        let mut node = &self.root;
        for depth in 0..8 {
            self.counters.nodes_traversed += 1;
            match node.child(byte(key, depth))? {
                Node::Leaf(k, v) => return (*k == key).then_some(*v),
                inner => node = inner,
            }
        }
        None
    }

    fn insert(&mut self, key: u64, payload: u64) {
        let counters = &mut self.counters;
        let mut node = &mut self.root;
        let mut depth = 0;
        loop {
            counters.nodes_traversed += 1;
            let b = byte(key, depth);
            match node.child(b) {
                None => {
                    node.add(b, Node::Leaf(key, payload), counters);
                    return;
                }
                Some(&Node::Leaf(k, v)) => {
                    let replacement = if k == key {
                        Node::Leaf(key, payload)
                    } else {
                        counters.structure_modifications += 1;
                        split_leaf(depth + 1, (k, v), (key, payload), counters)
                    };
                    if let Some(child) = node.child_mut(b) {
                        *child = replacement;
                    }
                    return;
                }
                Some(_) => {}
            }
            node = match node.child_mut(b) {
                Some(n) => n,
                None => return,
            };
            depth += 1;
        }
    }

    fn remove(&mut self, key: u64) {
        let mut node = &mut self.root;
        for depth in 0..8 {
            self.counters.nodes_traversed += 1;
            let b = byte(key, depth);
            let is_leaf = matches!(node.child(b), Some(Node::Leaf(k, _)) if *k == key);
            if is_leaf {
                match node {
                    Node::Small {
                        bytes, children, ..
                    } => {
                        if let Some(i) = bytes.iter().position(|&x| x == b) {
                            bytes.remove(i);
                            children.remove(i);
                        }
                    }
                    Node::Indexed { index, children } => {
                        let slot = index[b as usize] as usize - 1;
                        index[b as usize] = 0;
                        children.swap_remove(slot);
                        // The child moved into `slot` (the last one) gets its new place.
                        let last = children.len() + 1;
                        if slot < children.len()
                            && let Some(moved) = index.iter().position(|&i| i as usize == last)
                        {
                            index[moved] = slot as u8 + 1;
                        }
                    }
                    Node::Full(children) => children[b as usize] = None,
                    Node::Leaf(..) => {}
                }
                return;
            }
            node = match node.child_mut(b) {
                Some(n) if !matches!(n, Node::Leaf(..)) => n,
                _ => return,
            };
        }
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let before = out.len();
        scan_from(&self.root, 0, from, true, before.saturating_add(n), out);
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        self.root.bytes()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        fn walk(node: &Node, path: &mut Vec<u8>) -> std::result::Result<(), String> {
            if let Node::Leaf(k, _) = node {
                return match path.iter().enumerate().all(|(d, &b)| byte(*k, d) == b) {
                    true => Ok(()),
                    false => Err(format!("key {k} hangs under path {path:?}")),
                };
            }
            if path.len() >= 8 {
                return Err(format!("an inner node below 8 bytes of path {path:?}"));
            }
            for b in 0..=255u8 {
                if let Some(c) = node.child(b) {
                    path.push(b);
                    walk(c, path)?;
                    path.pop();
                }
            }
            Ok(())
        }
        walk(&self.root, &mut Vec::new())
    }
}
