//! A gapped-array index in the manner of ALEX (paper 3, section 2.1: "ML for subspace
//! lookup", "sparse nodes" and "performance-driven designs"; Ding et al., SIGMOD 2020).
//!
//! **Inner nodes** hold a linear model over their key range and an array of child
//! pointers; the model *computes* the slot to follow, so no key is searched on the way
//! down. A child may take a run of adjacent slots.
//!
//! **Data nodes** hold a gapped array: keys and payloads at the positions their least-
//! squares model predicts, gaps between them (a bitmap says which slots hold entries), each
//! gap holding the key of the next entry to its right (`u64::MAX` after the last), so the
//! key array is sorted and a lookup searches it exponentially outwards from the predicted
//! position. An insert goes into a gap at its predicted position where there is one, and
//! otherwise shifts entries towards the nearest gap (the "keys shifted" of paper 3's
//! Table 3).
//!
//! **Densities** (paper 3's Table 1: 0.6 / 0.7 / 0.8): a data node is built 0.7 full; an
//! insert that would fill it past 0.8 first makes room. **Cost model**: each data node
//! keeps the cost its build expected (20 per exponential-search step, 0.5 per shifted key,
//! ALEX's weights) and the cost its lookups and inserts have seen since. A full node whose
//! observed cost exceeds both one node lookup (20) and 1.5 times the expected cost, or
//! whose expansion would pass the maximum node size (16 MiB, paper 3), splits; any other
//! expands to 0.6 with a retrained model. A split is sideways where the node takes several
//! parent slots (each half takes half of them), by doubling the parent's slots where that
//! parts the node's keys and the parent may grow, and downwards otherwise: a new inner node
//! of two children whose router spans the node's domain (the keys its parents route to it,
//! bounded at the tree's edges to 64 times its keys' width past them), with enough slots to
//! give its keys about two. Inserts past the root's last slot double the root's slots (ALEX's
//! root expansion). So inserts that keep landing on one side of a node find fresh slots there
//! instead of adding a level every few hundred inserts. A removal empties its slot; a node fallen below half the minimum
//! density contracts to 0.7 (ALEX's contraction; paper 3 gives no bound).
//!
//! **Bulk load** chooses, for each key range, between one data node and an inner node
//! whose fanout (a power of two) minimises the same cost plus one node lookup, as ALEX's
//! fanout tree does; adjacent slots with few keys share a child.
//!
//! Data nodes are linked left to right for scans. Nodes live in one arena and refer to
//! each other by index; a split reuses the split node's index for its left half.

pub mod file;
mod gapped;
mod plan;
mod plus;

pub use file::{AlexFile, AlexReader, BuildReport};
pub use plus::AlexPlus;

use super::{Counters, NoClock, Phase, PhaseClock, Updatable, check_sorted, last_of_each_key};
use crate::Result;
use gapped::CostStats;
use plan::{DownSplit, MIN_SLOTS, Model, NodeSink, Router, expected_cost, place, slots_for};

/// Densities, sizes and the cost model's weights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlexParams {
    /// Density of a data node when built (paper 3: 0.7).
    pub init_density: f64,
    /// Density after an expansion (paper 3: 0.6).
    pub min_density: f64,
    /// A data node this full makes room before the next insert (paper 3: 0.8).
    pub max_density: f64,
    /// Slots of a data node at most (paper 3: 16 MiB of 16-byte entries, 2^20).
    pub max_data_slots: usize,
    /// Child slots of an inner node at most (paper 3: 16 MiB of 8-byte pointers, 2^21).
    pub max_fanout: usize,
}

impl Default for AlexParams {
    fn default() -> Self {
        AlexParams {
            init_density: 0.7,
            min_density: 0.6,
            max_density: 0.8,
            max_data_slots: 1 << 20,
            max_fanout: 1 << 21,
        }
    }
}

impl AlexParams {
    /// ALEX's densities scaled to build data nodes `density` full, the others in the
    /// default proportions (expanded to 6/7 of it, full at 8/7): paper 3's ALEX-M
    /// (section 5, Fig. 9) lowers ALEX's fill factor from 0.7 to 0.2–0.25 so that it
    /// takes LIPP's memory. Checked by [`check`](Self::check) (so `density` below 7/8).
    pub fn with_density(density: f64) -> AlexParams {
        let d = AlexParams::default();
        let scale = density / d.init_density;
        AlexParams {
            init_density: density,
            min_density: d.min_density * scale,
            max_density: d.max_density * scale,
            ..d
        }
    }

    /// Fails unless `0 < min_density <= init_density < max_density < 1`, data nodes have
    /// at least 16 slots and inner nodes at least 2.
    pub fn check(&self) -> Result<()> {
        let (init, min, max) = (self.init_density, self.min_density, self.max_density);
        if !(0.0 < min && min <= init && init < max && max < 1.0) {
            return Err(crate::Error::param(
                "densities",
                "0 < minimum <= initial < maximum < 1",
            ));
        }
        if self.max_data_slots < MIN_SLOTS || self.max_fanout < 2 {
            return Err(crate::Error::param(
                "node sizes",
                format!("at least {MIN_SLOTS} data slots and 2 child slots"),
            ));
        }
        Ok(())
    }
}

/// How far past its keys, in multiples of their width, a node split downwards at the
/// tree's edge aims its router.
const EDGE_REACH: u64 = 64;
/// The most slots a node split downwards gets.
const MAX_SPLIT_FANOUT: usize = 1024;

/// Observed cost this many times the expected one, and above one node lookup, splits.
const DEVIATION: f64 = 1.5;
/// Shifts per insert at which a node splits before it is full (ALEX's catastrophic cost).
const CATASTROPHIC_SHIFTS: u64 = 100;
/// Inserts a node takes before its observed cost is trusted.
const MIN_OBSERVED_INSERTS: u64 = 32;

const NONE: u32 = u32::MAX;

/// An inner node: its router and a child per slot (a child may take a run of slots).
#[derive(Clone, Debug)]
struct Inner {
    router: Router,
    children: Vec<u32>,
    /// Distinct children (runs of slots).
    distinct: usize,
}

impl Inner {
    /// An inner node of `fanout` slots, none pointing anywhere yet.
    fn new(router: Router, fanout: usize) -> Inner {
        Inner {
            router,
            children: vec![NONE; fanout],
            distinct: 0,
        }
    }

    #[inline]
    fn slot(&self, key: u64) -> usize {
        self.router.slot(key, self.children.len())
    }

    /// The run of slots `[first, end)` that point where slot `at` does.
    fn span(&self, at: usize) -> (usize, usize) {
        let child = self.children[at];
        let first = self.children[..at]
            .iter()
            .rposition(|&c| c != child)
            .map_or(0, |p| p + 1);
        let end = self.children[at..]
            .iter()
            .position(|&c| c != child)
            .map_or(self.children.len(), |p| at + p);
        (first, end)
    }
}

#[derive(Clone, Debug)]
struct Data {
    model: Model,
    /// Sorted by key: an entry (its key and payload side by side, so a lookup reads one
    /// line; ALEX's default keeps them in two arrays, `ALEX_DATA_NODE_SEP_ARRAYS`, which
    /// measured no faster here), or in a gap the key of the next entry (`u64::MAX` if
    /// none).
    cells: Vec<(u64, u64)>,
    /// Bit `i` is set where slot `i` holds an entry.
    occupied: Vec<u64>,
    len: usize,
    /// The next data node to the right (`NONE` for the last).
    next: u32,
    /// The cost per operation the build expected, and what was seen since.
    expected_cost: f64,
    stats: CostStats,
}

impl Data {
    /// A data node over `entries` (sorted, distinct keys) with `slots` positions, placed
    /// by a least-squares model.
    fn build(entries: &[(u64, u64)], slots: usize, next: u32) -> Data {
        Data::build_expecting(entries, slots, next, expected_cost(entries, slots))
    }

    /// [`Data::build`], the cost per operation expected given.
    fn build_expecting(entries: &[(u64, u64)], slots: usize, next: u32, expected: f64) -> Data {
        let model = Model::fit(entries, slots);
        let mut data = Data {
            model,
            cells: vec![(u64::MAX, 0); slots],
            occupied: vec![0; slots.div_ceil(64)],
            len: entries.len(),
            next,
            expected_cost: expected,
            stats: CostStats::default(),
        };
        let mut last = 0;
        place(entries, slots, &model, |i, _, pos| {
            // The gaps before this entry take its key.
            data.fill_keys(last..pos, entries[i].0);
            data.cells[pos] = entries[i];
            data.occupied[pos / 64] |= 1 << (pos % 64);
            last = pos + 1;
        });
        data
    }

    fn slots(&self) -> usize {
        self.cells.len()
    }

    /// Gives the gaps in `range` the key `key`.
    fn fill_keys(&mut self, range: std::ops::Range<usize>, key: u64) {
        self.cells[range].iter_mut().for_each(|c| c.0 = key);
    }

    fn is_set(&self, i: usize) -> bool {
        self.occupied[i / 64] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, i: usize, on: bool) {
        if on {
            self.occupied[i / 64] |= 1 << (i % 64);
        } else {
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
    }

    /// The first slot at or after `from` holding an entry (`slots()` if none).
    fn next_entry(&self, from: usize) -> usize {
        self.next_bit(from, 0)
    }

    /// The first gap at or after `from`.
    fn next_gap(&self, from: usize) -> Option<usize> {
        Some(self.next_bit(from, u64::MAX)).filter(|&g| g < self.slots())
    }

    /// The first slot at or after `from` whose bit differs from `flip`'s (all zeros: an
    /// entry; all ones: a gap); `slots()` if none.
    fn next_bit(&self, from: usize, flip: u64) -> usize {
        gapped::next_bit(&self.occupied[..], self.slots(), from, flip)
    }

    /// The last gap before `before`.
    fn prev_gap(&self, before: usize) -> Option<usize> {
        gapped::prev_gap(&self.occupied[..], before)
    }

    /// The first slot whose key is at least `key`, searched exponentially outwards from
    /// the model's prediction; and the steps that took.
    #[inline]
    fn lower_bound(&self, key: u64) -> (usize, u64) {
        gapped::lower_bound(&self.cells[..], &self.model, key)
    }

    /// The slot holding `key`, and the lower bound it was searched from.
    fn find(&mut self, key: u64) -> (Option<usize>, usize) {
        let (lb, steps) = self.lower_bound(key);
        self.stats.ops += 1;
        self.stats.search_steps += steps;
        let at = self.next_entry(lb);
        let found = (at < self.slots() && self.cells[at].0 == key).then_some(at);
        (found, lb)
    }

    /// The payload of `key`, found as ALEX's lookup finds it, without the bitmap: gaps
    /// hold the next entry's key, so the last slot whose key is at most `key` holds its
    /// entry if there is one. (`u64::MAX`, which the gaps after the last entry hold too,
    /// goes through the bitmap.)
    #[inline(always)]
    fn lookup(&mut self, key: u64) -> Option<u64> {
        if key == u64::MAX {
            let (found, _) = self.find(key);
            return found.map(|i| self.cells[i].1);
        }
        let (past, steps) = self.lower_bound(key + 1);
        self.stats.ops += 1;
        self.stats.search_steps += steps;
        let (k, payload) = self.cells[past.checked_sub(1)?];
        (k == key).then_some(payload)
    }

    /// Whether an insert must first make room.
    fn is_full(&self, max_density: f64) -> bool {
        self.len + 1 > (max_density * self.slots() as f64) as usize || self.len + 1 >= self.slots()
    }

    /// Inserts absent `key`, whose lower bound is `lb`, into a node with a gap; returns
    /// the entries it shifted (for [`count_insert`](Self::count_insert)).
    fn insert_absent(&mut self, key: u64, payload: u64, lb: usize) -> u64 {
        let entry = self.next_entry(lb);
        let (pos, shifted) = if lb < entry {
            // Slots lb..entry are gaps: take the predicted one among them.
            let pos = self.model.predict(key, self.slots()).clamp(lb, entry - 1);
            self.fill_keys(lb..pos, key);
            (pos, 0)
        } else {
            // Slot lb holds a greater key (or lb is past the end), and slot lb - 1 an
            // entry: shift towards the nearest gap.
            match (self.prev_gap(lb), self.next_gap(lb)) {
                (Some(l), Some(r)) if lb - l < r - lb => self.shift_left(l, lb),
                (_, Some(r)) => self.shift_right(lb, r),
                (Some(l), None) => self.shift_left(l, lb),
                (None, None) => unreachable!("insert_absent needs a gap"),
            }
        };
        self.cells[pos] = (key, payload);
        self.set(pos, true);
        self.len += 1;
        shifted
    }

    /// Counts an insert that shifted `shifted` entries; returns whether inserts have
    /// become catastrophic (so the node splits now).
    fn count_insert(&mut self, shifted: u64) -> bool {
        self.stats.inserts += 1;
        self.stats.shifts += shifted;
        self.stats.is_catastrophic(self.len)
    }

    /// Moves the entries in `at..gap` one slot right; returns the freed slot and the count.
    fn shift_right(&mut self, at: usize, gap: usize) -> (usize, u64) {
        self.cells.copy_within(at..gap, at + 1);
        self.set(gap, true);
        (at, (gap - at) as u64)
    }

    /// Moves the entries in `gap + 1..at` one slot left; returns the freed slot and the count.
    fn shift_left(&mut self, gap: usize, at: usize) -> (usize, u64) {
        self.cells.copy_within(gap + 1..at, gap);
        self.set(gap, true);
        (at - 1, (at - 1 - gap) as u64)
    }

    /// Empties slot `at` (which holds an entry).
    fn remove_at(&mut self, at: usize) {
        self.set(at, false);
        self.len -= 1;
        // The slot and the gaps before it take the next entry's key.
        let next = self.cells.get(at + 1).map_or(u64::MAX, |c| c.0);
        let mut i = at + 1;
        while i > 0 && !self.is_set(i - 1) {
            self.cells[i - 1].0 = next;
            i -= 1;
        }
    }

    fn entries(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.len);
        let mut i = self.next_entry(0);
        while i < self.slots() {
            out.push(self.cells[i]);
            i = self.next_entry(i + 1);
        }
        out
    }

    fn bytes(&self) -> u64 {
        (std::mem::size_of::<Data>() + self.slots() * 16 + self.occupied.len() * 8) as u64
    }

    /// The gapped array's invariants.
    fn check(&self) -> std::result::Result<(), String> {
        let entries = self.entries();
        if entries.len() != self.len {
            return Err(format!(
                "a data node counts {} entries and holds {}",
                self.len,
                entries.len()
            ));
        }
        if self.len >= self.slots() {
            return Err(format!(
                "a data node of {} slots holds {} entries, no gap",
                self.slots(),
                self.len
            ));
        }
        if let Some(w) = entries.windows(2).find(|w| w[0].0 >= w[1].0) {
            return Err(format!("a data node holds {} before {}", w[0].0, w[1].0));
        }
        let mut next = u64::MAX;
        for i in (0..self.slots()).rev() {
            if self.is_set(i) {
                next = self.cells[i].0;
            } else if self.cells[i].0 != next {
                return Err(format!(
                    "gap {i} holds {} where the next key is {next}",
                    self.cells[i].0
                ));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
enum Node {
    Inner(Inner),
    Data(Data),
}

/// The ALEX-like index.
#[derive(Clone, Debug)]
pub struct Alex {
    params: AlexParams,
    nodes: Vec<Node>,
    root: u32,
    /// Nodes the bulk load made (the arena holds these and `counters.nodes_created`).
    built_nodes: usize,
    counters: Counters,
}

/// What an insert found at the bottom of its descent.
struct Descent {
    data: u32,
    /// The inner node above and the slot followed there (`None` when the root is data).
    parent: Option<(u32, usize)>,
}

impl Alex {
    /// An index over `entries` (sorted; the last payload of a key wins) with `params`.
    pub fn with_params(entries: &[(u64, u64)], params: AlexParams) -> Result<Alex> {
        check_sorted(entries, "Alex::bulk_load")?;
        params.check()?;
        let entries = last_of_each_key(entries);
        let mut index = Alex {
            params,
            nodes: Vec::new(),
            root: 0,
            built_nodes: 0,
            counters: Counters::default(),
        };
        let mut loader = Loader {
            index: &mut index,
            last_data: NONE,
        };
        let root = plan::bulk_load(&entries, &params, std::mem::size_of::<Data>(), &mut loader);
        index.root = root;
        index.built_nodes = index.nodes.len();
        Ok(index)
    }

    /// Levels of nodes from the root to the deepest data node (1 when the root is one).
    pub fn depth(&self) -> u64 {
        let mut deepest = 0;
        let mut stack = vec![(self.root, 1u64)];
        while let Some((id, level)) = stack.pop() {
            deepest = deepest.max(level);
            if let Node::Inner(n) = &self.nodes[id as usize] {
                let mut s = 0;
                while s < n.children.len() {
                    stack.push((n.children[s], level + 1));
                    s = n.span(s).1;
                }
            }
        }
        deepest
    }

    fn push(&mut self, node: Node) -> u32 {
        self.nodes.push(node);
        (self.nodes.len() - 1) as u32
    }

    #[inline]
    fn data(&mut self, id: u32) -> &mut Data {
        match &mut self.nodes[id as usize] {
            Node::Data(d) => d,
            Node::Inner(_) => unreachable!("node {id} is a data node"),
        }
    }

    fn inner(&mut self, id: u32) -> &mut Inner {
        match &mut self.nodes[id as usize] {
            Node::Inner(n) => n,
            Node::Data(_) => unreachable!("node {id} is an inner node"),
        }
    }

    /// Descends to the data node for `key`, counting the nodes.
    #[inline(always)]
    fn descend(&mut self, key: u64) -> Descent {
        let mut id = self.root;
        let mut parent = None;
        loop {
            self.counters.nodes_traversed += 1;
            match &self.nodes[id as usize] {
                Node::Inner(n) => {
                    let s = n.slot(key);
                    parent = Some((id, s));
                    id = n.children[s];
                }
                Node::Data(_) => return Descent { data: id, parent },
            }
        }
    }

    /// Makes room in the data node of `at`, full or catastrophic: expands it, or splits it
    /// where it is catastrophic, its observed cost has strayed from the expected one, or it
    /// would grow too large.
    fn make_room(&mut self, at: &Descent) {
        let params = self.params;
        let d = self.data(at.data);
        let grown = slots_for(d.len + 1, params.min_density);
        let strayed = d.stats.has_strayed(d.len, d.expected_cost);
        let (entries, next) = (d.entries(), d.next);
        let (d_expected, d_stats) = (d.expected_cost, d.stats);
        self.counters.structure_modifications += 1;
        self.counters.keys_shifted += entries.len() as u64;
        if !strayed && grown <= params.max_data_slots {
            // ALEX's plain expansion: the node keeps the cost its build expected and
            // what it has seen since (only a split or a retrain computes them anew).
            let mut expanded = Data::build_expecting(&entries, grown, next, d_expected);
            expanded.stats = d_stats;
            self.nodes[at.data as usize] = Node::Data(expanded);
            return;
        }
        match at.parent {
            None => self.split_down(at.data, &entries, None),
            Some((p, s)) => {
                let (first, end) = self.inner(p).span(s);
                if end - first >= 2 {
                    self.split_sideways(p, first, end, at.data, &entries);
                } else if self.doubling_parts(p, &entries) {
                    self.double(p);
                    self.split_sideways(p, 2 * first, 2 * end, at.data, &entries);
                } else {
                    self.split_down(at.data, &entries, Some((p, s)));
                }
            }
        }
    }

    /// Whether inner node `p` may double its slots and doing so parts `entries`.
    fn doubling_parts(&mut self, p: u32, entries: &[(u64, u64)]) -> bool {
        let max = self.params.max_fanout;
        let node = self.inner(p);
        let slots = node.children.len() * 2;
        // Doubling copies every slot to part one child's keys: allowed while the slots
        // stay within four per child, so a child that keeps splitting in one place goes
        // down a level instead of doubling its parent again and again.
        if slots > max || slots > 4 * node.distinct {
            return false;
        }
        let slope = node.router.slope * 2.0;
        let first = node.router.slot_in(entries[0].0, slots, slope);
        let last = node
            .router
            .slot_in(entries[entries.len() - 1].0, slots, slope);
        first != last
    }

    fn double(&mut self, p: u32) {
        let node = self.inner(p);
        node.children = node.children.iter().flat_map(|&c| [c, c]).collect();
        node.router.slope *= 2.0;
    }

    /// Replaces data node `id` with one over `entries` of `slots` positions.
    fn rebuild_data(&mut self, id: u32, entries: &[(u64, u64)], slots: usize, next: u32) {
        self.nodes[id as usize] = Node::Data(Data::build(entries, slots, next));
    }

    /// A new data node over `entries`, built at the initial density.
    fn new_data(&mut self, entries: &[(u64, u64)], next: u32) -> u32 {
        self.counters.nodes_created += 1;
        let slots = slots_for(entries.len(), self.params.init_density);
        self.push(Node::Data(Data::build(entries, slots, next)))
    }

    /// Splits data node `d`, which takes slots `first..end` of inner node `p`, in two:
    /// the left half of the slots keeps `d`, the right half gets a new node.
    fn split_sideways(&mut self, p: u32, first: usize, end: usize, d: u32, entries: &[(u64, u64)]) {
        let mid = first + (end - first) / 2;
        let parent = self.inner(p);
        let cut = entries.partition_point(|e| parent.slot(e.0) < mid);
        let next = self.data(d).next;
        let right = self.new_data(&entries[cut..], next);
        let init = self.params.init_density;
        self.rebuild_data(d, &entries[..cut], slots_for(cut, init), right);
        let parent = self.inner(p);
        parent.children[mid..end].fill(right);
        parent.distinct += 1;
    }

    /// The keys routed to where `key` goes, as bounds from the runs of slots taken on the
    /// way down (about: they only aim a new router), and whether each bound is open (no
    /// inner node bounds that side: 0 or `u64::MAX`).
    fn domain(&self, key: u64) -> ((u64, bool), (u64, bool)) {
        let (mut lo, mut hi) = ((0u64, true), (u64::MAX, true));
        let mut id = self.root;
        while let Node::Inner(n) = &self.nodes[id as usize] {
            let s = n.slot(key);
            let (first, end) = n.span(s);
            if first > 0 {
                lo = (lo.0.max(n.router.key_at(first)), false);
            }
            if end < n.children.len() {
                hi = (hi.0.min(n.router.key_at(end).saturating_sub(1)), false);
            }
            id = n.children[s];
        }
        (lo, hi)
    }

    /// Puts a new inner node in data node `d`'s place (under slot `s` of `parent`, or as
    /// the root), with `d`'s entries parted between two data nodes. Its router spans `d`'s
    /// domain, the keys its parents route to it (as ALEX aims a new node at its slots'
    /// keys, not at the keys it holds), so that inserts arriving on one side find fresh
    /// slots there instead of piling into the last one and splitting again a level lower;
    /// an open side (the tree's edge) reaches [`EDGE_REACH`] times the keys' width past
    /// them. Its fanout, a power of two up to [`MAX_SPLIT_FANOUT`], gives the keys' range
    /// about two slots.
    fn split_down(&mut self, d: u32, entries: &[(u64, u64)], parent: Option<(u32, usize)>) {
        let max_fanout = MAX_SPLIT_FANOUT.min(self.params.max_fanout);
        let split = DownSplit::of(entries, self.domain(entries[0].0), EDGE_REACH, max_fanout);
        let (cut, cut_slot) = (split.cut, split.cut_slot);
        let mut node = Inner::new(split.router, split.fanout);
        let next = self.data(d).next;
        let right = self.new_data(&entries[cut..], next);
        let init = self.params.init_density;
        self.rebuild_data(d, &entries[..cut], slots_for(cut, init), right);
        node.children[..cut_slot].fill(d);
        node.children[cut_slot..].fill(right);
        node.distinct = 2;
        self.counters.nodes_created += 1;
        let id = self.push(Node::Inner(node));
        match parent {
            Some((p, s)) => self.inner(p).children[s] = id,
            None => self.root = id,
        }
    }

    /// Where `key` lies just past the root's last slot, doubles the root's slots (as ALEX
    /// expands its root for keys beyond it), the new ones pointing where the last one does:
    /// every key keeps its child, and the inserts that follow, appends above all keys, find
    /// slots of their own once that child splits sideways. A key further out changes
    /// nothing (one outlier must not grow the root to its largest).
    fn expand_root_for(&mut self, key: u64) {
        let max = self.params.max_fanout;
        let root = self.root;
        let Node::Inner(n) = &mut self.nodes[root as usize] else {
            return;
        };
        let slots = n.children.len();
        let raw = n.router.raw_slot(key);
        if raw < slots as f64 || raw >= 2.0 * slots as f64 || 2 * slots > max {
            return;
        }
        let last = n.children[slots - 1];
        n.children.resize(2 * slots, last);
        self.counters.structure_modifications += 1;
    }

    /// Every node reachable from `id`, data nodes in key order into `data`; fails where a
    /// child's slots are not one run or a node is reached twice.
    fn walk(
        &self,
        id: u32,
        seen: &mut [bool],
        data: &mut Vec<u32>,
    ) -> std::result::Result<(), String> {
        let Some(node) = self.nodes.get(id as usize) else {
            return Err(format!("a pointer to node {id}, past the arena"));
        };
        if std::mem::replace(&mut seen[id as usize], true) {
            return Err(format!("node {id} is reached twice"));
        }
        match node {
            Node::Data(d) => {
                d.check()?;
                data.push(id);
            }
            Node::Inner(n) => {
                if n.children.is_empty() {
                    return Err(format!("inner node {id} has no slots"));
                }
                let (mut s, mut runs) = (0, 0);
                while s < n.children.len() {
                    let (_, end) = n.span(s);
                    self.walk(n.children[s], seen, data)?;
                    s = end;
                    runs += 1;
                }
                if runs != n.distinct {
                    return Err(format!(
                        "inner node {id} counts {} children and has {runs}",
                        n.distinct
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The in-memory index as the bulk load's sink: gapped data nodes linked left to right.
struct Loader<'a> {
    index: &'a mut Alex,
    last_data: u32,
}

impl NodeSink<(u64, u64)> for Loader<'_> {
    fn data(&mut self, _at: usize, entries: &[(u64, u64)], slots: usize) -> u32 {
        let id = self
            .index
            .push(Node::Data(Data::build(entries, slots, NONE)));
        if self.last_data != NONE {
            self.index.data(self.last_data).next = id;
        }
        self.last_data = id;
        id
    }

    fn inner(&mut self, router: Router, fanout: usize) -> u32 {
        self.index.push(Node::Inner(Inner::new(router, fanout)))
    }

    fn child(&mut self, id: u32, slots: std::ops::Range<usize>, child: u32) {
        let node = self.index.inner(id);
        node.children[slots].fill(child);
        node.distinct += 1;
    }
}

impl Updatable for Alex {
    fn bulk_load(entries: &[(u64, u64)]) -> Result<Self> {
        Alex::with_params(entries, AlexParams::default())
    }

    #[inline(always)]
    fn get(&mut self, key: u64) -> Option<u64> {
        let at = self.descend(key);
        self.data(at.data).lookup(key)
    }

    #[inline]
    fn insert(&mut self, key: u64, payload: u64) {
        self.insert_timed(key, payload, &mut NoClock);
    }

    fn insert_timed(&mut self, key: u64, payload: u64, clock: &mut impl PhaseClock) {
        clock.start();
        let max_density = self.params.max_density;
        let mut made_room = false;
        self.expand_root_for(key);
        loop {
            let at = self.descend(key);
            let d = self.data(at.data);
            let (found, lb) = d.find(key);
            clock.lap(Phase::Search);
            if let Some(i) = found {
                d.cells[i].1 = payload;
                clock.lap(Phase::Collision);
                return;
            }
            // A node just rebuilt or split always has a gap, so room is made once.
            if made_room || !d.is_full(max_density) {
                let shifted = d.insert_absent(key, payload, lb);
                clock.lap(Phase::Collision);
                let catastrophic = d.count_insert(shifted);
                self.counters.keys_shifted += shifted;
                clock.lap(Phase::Statistics);
                if catastrophic {
                    // Inserts crowd one part of a large node: split it now, not when full.
                    self.make_room(&at);
                    clock.lap(Phase::Smo);
                }
                return;
            }
            self.make_room(&at);
            made_room = true;
            clock.lap(Phase::Smo);
        }
    }

    fn remove(&mut self, key: u64) {
        let at = self.descend(key);
        let min_density = self.params.min_density;
        let init = self.params.init_density;
        let d = self.data(at.data);
        let (Some(i), _) = d.find(key) else {
            return;
        };
        d.remove_at(i);
        if d.slots() > MIN_SLOTS && (d.len as f64) < d.slots() as f64 * min_density / 2.0 {
            let (entries, next) = (d.entries(), d.next);
            self.counters.structure_modifications += 1;
            self.counters.keys_shifted += entries.len() as u64;
            self.rebuild_data(at.data, &entries, slots_for(entries.len(), init), next);
        }
    }

    fn scan(&mut self, from: u64, n: usize, out: &mut Vec<(u64, u64)>) -> usize {
        let before = out.len();
        let until = before.saturating_add(n);
        let mut id = self.descend(from).data;
        let mut i = self.data(id).lower_bound(from).0;
        while out.len() < until {
            let d = self.data(id);
            i = d.next_entry(i);
            if i < d.slots() {
                out.push(d.cells[i]);
                i += 1;
            } else if d.next == NONE {
                break;
            } else {
                id = d.next;
                i = 0;
                self.counters.nodes_traversed += 1;
            }
        }
        out.len() - before
    }

    fn size_in_bytes(&self) -> u64 {
        let nodes = self.nodes.iter().map(|n| match n {
            Node::Inner(n) => (std::mem::size_of::<Inner>() + n.children.len() * 4) as u64,
            Node::Data(d) => d.bytes(),
        });
        (std::mem::size_of::<Alex>() + self.nodes.capacity() * std::mem::size_of::<Node>()) as u64
            + nodes.sum::<u64>()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn check_structure(&self) -> std::result::Result<(), String> {
        let mut seen = vec![false; self.nodes.len()];
        let mut data = Vec::new();
        self.walk(self.root, &mut seen, &mut data)?;
        if let Some(orphan) = seen.iter().position(|&s| !s) {
            return Err(format!("node {orphan} is in the arena but not in the tree"));
        }
        if self.nodes.len() as u64 != self.built_nodes as u64 + self.counters.nodes_created {
            return Err(format!(
                "{} nodes, but {} built and {} counted as created since",
                self.nodes.len(),
                self.built_nodes,
                self.counters.nodes_created
            ));
        }
        let mut last: Option<u64> = None;
        for (i, &id) in data.iter().enumerate() {
            let Node::Data(d) = &self.nodes[id as usize] else {
                unreachable!("walk lists data nodes")
            };
            let want = data.get(i + 1).copied().unwrap_or(NONE);
            if d.next != want {
                return Err(format!(
                    "data node {id} links to {} instead of {want}",
                    d.next
                ));
            }
            for (k, _) in d.entries() {
                if last.is_some_and(|l| l >= k) {
                    return Err(format!("key {k} follows {}", last.unwrap_or(0)));
                }
                last = Some(k);
                // The key's descent leads to the node holding it.
                let mut at = self.root;
                while let Node::Inner(n) = &self.nodes[at as usize] {
                    at = n.children[n.slot(k)];
                }
                if at != id {
                    return Err(format!("key {k} is in data node {id} but leads to {at}"));
                }
            }
        }
        Ok(())
    }
}
