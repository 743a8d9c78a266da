//! Every kind against `BTreeMap` on any sequence of bulk load, inserts, removals,
//! lookups and scans (state-machine property tests).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{
    Alex, AlexParams, Art, BTree, BTreeParams, DynamicPgm, DynamicPgmParams, Lipp, LippParams,
    OrderedMap, Updatable,
};

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, u64),
    Remove(u64),
    Get(u64),
    Scan(u64, usize),
}

/// Keys that collide often, both ends of the range, and anything.
fn key() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0..64u64,
        1 => Just(0u64),
        1 => Just(u64::MAX),
        1 => (u64::MAX - 64)..=u64::MAX,
        2 => any::<u64>(),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (key(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => key().prop_map(Op::Remove),
        3 => key().prop_map(Op::Get),
        1 => (key(), 0..40usize).prop_map(|(k, n)| Op::Scan(k, n)),
    ]
}

/// Sorted entries, duplicate keys allowed.
fn bulk() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((key(), any::<u64>()), 0..200).prop_map(|mut v| {
        v.sort_by_key(|e| e.0);
        v
    })
}

/// Runs `ops` on `index` (bulk-loaded with `bulk`) and on a `BTreeMap`, comparing every
/// answer, then a full scan.
fn agrees<I: Updatable>(
    mut index: I,
    bulk: &[(u64, u64)],
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut map: BTreeMap<u64, u64> = bulk.iter().copied().collect();
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Insert(k, v) => {
                index.insert(k, v);
                map.insert(k, v);
            }
            Op::Remove(k) => {
                index.remove(k);
                map.remove(&k);
            }
            Op::Get(k) => prop_assert_eq!(index.get(k), map.get(&k).copied(), "op {}: {:?}", i, op),
            Op::Scan(k, n) => {
                let mut got = Vec::new();
                let count = index.scan(k, n, &mut got);
                let want: Vec<(u64, u64)> = map.range(k..).take(n).map(|(&a, &b)| (a, b)).collect();
                prop_assert_eq!(count, want.len());
                prop_assert_eq!(got, want, "op {}: {:?}", i, op);
            }
        }
    }
    if let Err(broken) = index.check_structure() {
        prop_assert!(false, "the structure is broken: {}", broken);
    }
    let mut all = Vec::new();
    index.scan(0, usize::MAX, &mut all);
    let want: Vec<(u64, u64)> = map.into_iter().collect();
    prop_assert_eq!(all, want);
    prop_assert!(index.size_in_bytes() > 0 || bulk.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_art_agrees_with_a_btreemap(bulk in bulk(), ops in prop::collection::vec(op(), 0..600)) {
        agrees(Art::bulk_load(&bulk).unwrap(), &bulk, &ops)?;
    }

    #[test]
    fn the_ordered_map_is_a_btreemap(bulk in bulk(), ops in prop::collection::vec(op(), 0..400)) {
        agrees(OrderedMap::bulk_load(&bulk).unwrap(), &bulk, &ops)?;
    }

    #[test]
    fn the_dynamic_pgm_agrees_with_a_btreemap(
        bulk in bulk(),
        ops in prop::collection::vec(op(), 0..600),
        base_bits in 1u32..4,
        buffer_level in 0u32..3,
        index_level in 0u32..6,
    ) {
        let params = DynamicPgmParams {
            epsilon: 2,
            base: 1 << base_bits,
            buffer_level: Some(buffer_level),
            index_level: Some(index_level),
        };
        agrees(DynamicPgm::with_params(&bulk, params).unwrap(), &bulk, &ops)?;
        agrees(DynamicPgm::bulk_load(&bulk).unwrap(), &bulk, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_btree_agrees_with_a_btreemap(
        bulk in bulk(),
        ops in prop::collection::vec(op(), 0..600),
        leaf_slots in 2usize..6,
        inner_slots in 2usize..6,
    ) {
        let params = BTreeParams { leaf_slots, inner_slots };
        agrees(BTree::with_params(&bulk, params).unwrap(), &bulk, &ops)?;
        agrees(BTree::bulk_load(&bulk).unwrap(), &bulk, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_lipp_agrees_with_a_btreemap(
        bulk in bulk(),
        ops in prop::collection::vec(op(), 0..600),
        slots_per_key in 1usize..4,
        min_rebuild in 1usize..16,
    ) {
        let params = LippParams { slots_per_key, min_rebuild, ..LippParams::default() };
        agrees(Lipp::with_params(&bulk, params).unwrap(), &bulk, &ops)?;
        agrees(Lipp::bulk_load(&bulk).unwrap(), &bulk, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_alex_agrees_with_a_btreemap(
        bulk in bulk(),
        ops in prop::collection::vec(op(), 0..600),
        max_data_slots in 16usize..64,
        max_fanout in 2usize..16,
    ) {
        // Small nodes, so that expansions, every kind of split and parent doublings all
        // happen within a few hundred operations.
        let params = AlexParams { max_data_slots, max_fanout, ..AlexParams::default() };
        agrees(Alex::with_params(&bulk, params).unwrap(), &bulk, &ops)?;
        agrees(Alex::bulk_load(&bulk).unwrap(), &bulk, &ops)?;
    }
}

#[test]
fn bulk_loads_out_of_order_are_refused() {
    let entries = [(5, 0), (3, 0)];
    assert!(OrderedMap::bulk_load(&entries).is_err());
    assert!(DynamicPgm::bulk_load(&entries).is_err());
    assert!(BTree::bulk_load(&entries).is_err());
    assert!(Lipp::bulk_load(&entries).is_err());
    assert!(Art::bulk_load(&entries).is_err());
    assert!(Alex::bulk_load(&entries).is_err());
}

#[test]
fn a_key_inserted_removed_and_inserted_again_is_back_after_merges() {
    let params = DynamicPgmParams {
        epsilon: 4,
        base: 2,
        buffer_level: Some(1),
        index_level: Some(2),
    };
    let mut index = DynamicPgm::with_params(&[], params).unwrap();
    for round in 0..3u64 {
        for k in 0..1000u64 {
            index.insert(k * 7, k + round);
        }
        for k in (0..1000u64).step_by(3) {
            index.remove(k * 7);
        }
        for k in (0..1000u64).step_by(3) {
            index.insert(k * 7, k + 10 * round);
        }
    }
    for k in 0..1000u64 {
        let want = if k % 3 == 0 { k + 20 } else { k + 2 };
        assert_eq!(index.get(k * 7), Some(want), "key {}", k * 7);
        assert_eq!(index.get(k * 7 + 1), None);
    }
    let c = index.counters();
    assert!(
        c.structure_modifications > 0 && c.keys_shifted > 0 && c.nodes_created > 0,
        "{c:?}"
    );
}

/// A bulk-loaded B+tree's size is its nodes', not a growing arena's spare room.
#[test]
fn a_bulk_loaded_btree_counts_the_nodes_it_made() {
    let entries: Vec<(u64, u64)> = (0..100_000u64).map(|k| (k * 3, k)).collect();
    let full = BTree::bulk_load(&entries).unwrap();
    let half = BTree::with_params(
        &entries,
        BTreeParams {
            leaf_slots: 8,
            inner_slots: 8,
        },
    )
    .unwrap();
    // Leaves of 16 (6250) and the inner levels over them (17 children a node); leaves
    // of 8 and 9 children a node. A leaf takes 272 bytes of keys and payloads and a few
    // more, 320 on its cache lines, an inner node 256; arenas grown by doubling would hold
    // 1.2-1.3 times the nodes.
    for (tree, leaves, inners) in [
        (&full, 6250u64, &[368u64, 22, 2, 1][..]),
        (&half, 12_500, &[1389, 155, 18, 2, 1]),
    ] {
        let nodes = leaves * 320 + inners.iter().sum::<u64>() * 256;
        let size = tree.size_in_bytes();
        assert!(
            (nodes..nodes + 512).contains(&size),
            "{size} bytes for {nodes} of nodes"
        );
    }
}

#[test]
fn all_inserts_at_one_end_split_the_btree_and_stay_found() {
    let params = BTreeParams {
        leaf_slots: 4,
        inner_slots: 3,
    };
    for descending in [false, true] {
        let mut tree = BTree::with_params(&[], params).unwrap();
        let keys: Vec<u64> = if descending {
            (0..5000u64).rev().collect()
        } else {
            (0..5000u64).collect()
        };
        for &k in &keys {
            tree.insert(k, k * 2);
        }
        for k in 0..5000u64 {
            assert_eq!(tree.get(k), Some(k * 2));
        }
        assert_eq!(tree.get(5000), None);
        let mut all = Vec::new();
        tree.scan(0, usize::MAX, &mut all);
        assert_eq!(all.len(), 5000);
        assert!(tree.counters().structure_modifications > 1000);
    }
}

#[test]
fn lipp_rebuilds_a_subtree_that_conflicts_and_keeps_every_key() {
    // Bulk-load a few spread keys, then insert many between two of them: every insert
    // lands in one slot's subtree, conflicts pile up, and the subtree is rebuilt.
    let bulk: Vec<(u64, u64)> = (0..100u64).map(|i| (i << 40, i)).collect();
    let mut index = Lipp::bulk_load(&bulk).unwrap();
    for i in 0..20_000u64 {
        index.insert((5 << 40) + i * 3 + 1, i);
    }
    let c = index.counters();
    assert!(c.structure_modifications > 0 && c.keys_shifted > 0, "{c:?}");
    for i in 0..20_000u64 {
        assert_eq!(index.get((5 << 40) + i * 3 + 1), Some(i));
        assert_eq!(index.get((5 << 40) + i * 3 + 2), None);
    }
    for (k, v) in bulk {
        assert_eq!(index.get(k), Some(v));
    }
    let mut all = Vec::new();
    assert_eq!(index.scan(0, usize::MAX, &mut all), 20_100);
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn art_nodes_grow_through_every_size_and_removals_keep_the_order() {
    let mut art = Art::bulk_load(&[]).unwrap();
    // 256 keys that differ in the last byte only, then one at the other end.
    for b in (0..256u64).rev() {
        art.insert(0xAB00 + b, b);
    }
    art.insert(u64::MAX, 7);
    // A node of 4 grew to 16, 48 and 256 children.
    assert!(
        art.counters().structure_modifications >= 3,
        "{:?}",
        art.counters()
    );
    for b in 0..256u64 {
        assert_eq!(art.get(0xAB00 + b), Some(b));
    }
    // Path compression: the 256 keys share 7 bytes, so a lookup visits the root (byte 0,
    // where u64::MAX parts from them) and one node branching on byte 7.
    let before = art.counters().nodes_traversed;
    art.get(0xAB05);
    assert_eq!(art.counters().nodes_traversed - before, 2);
    art.check_structure().unwrap();
    for b in (0..256u64).step_by(2) {
        art.remove(0xAB00 + b);
    }
    let mut all = Vec::new();
    art.scan(0, usize::MAX, &mut all);
    assert_eq!(all.len(), 129);
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(all.last(), Some(&(u64::MAX, 7)));
    assert!(art.size_in_bytes() > 256 * 8);
}

#[test]
fn alex_grows_past_its_bulk_load_at_one_end_and_inside_and_keeps_every_key() {
    // Small nodes: inserts past the greatest key pile into the last data node (expanded,
    // then split: its parent slot doubles or a node goes in below), then inserts inside
    // the bulk-loaded range fill the gaps and shift.
    let params = AlexParams {
        max_data_slots: 256,
        max_fanout: 64,
        ..AlexParams::default()
    };
    let bulk: Vec<(u64, u64)> = (0..1000u64).map(|i| (i * 1000, i)).collect();
    let mut index = Alex::with_params(&bulk, params).unwrap();
    let built = index.counters();
    for i in 0..20_000u64 {
        index.insert(1_000_000 + i * 7, i);
    }
    for i in 0..20_000u64 {
        index.insert((i * 7919) % 1_000_000 + 1, i);
    }
    index.check_structure().unwrap();
    let c = index.counters();
    assert_eq!(built, super::Counters::default());
    assert!(
        c.structure_modifications > 100 && c.nodes_created > 100,
        "{c:?}"
    );
    assert!(c.keys_shifted > 0, "{c:?}");
    let mut want: BTreeMap<u64, u64> = bulk.into_iter().collect();
    for i in 0..20_000u64 {
        want.insert(1_000_000 + i * 7, i);
    }
    for i in 0..20_000u64 {
        want.insert((i * 7919) % 1_000_000 + 1, i);
    }
    for (&k, &v) in &want {
        assert_eq!(index.get(k), Some(v), "key {k}");
    }
    let mut all = Vec::new();
    index.scan(0, usize::MAX, &mut all);
    assert_eq!(all, want.into_iter().collect::<Vec<_>>());
    // Removing all but every tenth key contracts nodes and leaves the rest in order.
    let keys: Vec<u64> = all.iter().map(|e| e.0).collect();
    for (i, &k) in keys.iter().enumerate() {
        if i % 10 != 0 {
            index.remove(k);
        }
    }
    index.check_structure().unwrap();
    let mut left = Vec::new();
    index.scan(0, usize::MAX, &mut left);
    assert_eq!(left.len(), keys.len().div_ceil(10));
    assert!(index.size_in_bytes() < 16 * keys.len() as u64);
}

#[test]
fn alex_stays_shallow_under_inserts_on_one_side() {
    // Appends past the greatest key, inserts below the smallest, and an ascending run into
    // a gap spanning all of u64: each keeps landing at one end of a node, where splitting
    // by the keys alone would add a level every few hundred inserts.
    let base = 1u64 << 40;
    let bulk: Vec<(u64, u64)> = (0..100_000u64).map(|i| (base + 10 * i, i)).collect();
    type Run = (&'static str, Vec<(u64, u64)>, Vec<u64>);
    let runs: [Run; 3] = [
        (
            "ascending",
            bulk.clone(),
            (0..300_000).map(|i| base + 1_000_000 + i).collect(),
        ),
        (
            "descending",
            bulk,
            (0..300_000).map(|i| base - 1 - i).collect(),
        ),
        (
            "into a gap",
            vec![(0, 0), (u64::MAX, 1)],
            (1..50_000).collect(),
        ),
    ];
    for (name, bulk, inserts) in runs {
        let mut index = Alex::bulk_load(&bulk).unwrap();
        let mut want: BTreeMap<u64, u64> = bulk.into_iter().collect();
        for &k in &inserts {
            index.insert(k, k);
            want.insert(k, k);
        }
        index.check_structure().unwrap();
        let depth = index.depth();
        eprintln!("{name}: depth {depth}");
        assert!(depth <= 16, "{name}: depth {depth}");
        for &k in inserts.iter().step_by(97) {
            assert_eq!(index.get(k), want.get(&k).copied(), "{name}: key {k}");
        }
    }
}

/// A clock that records each insert's laps, to check where the kinds end their phases.
#[derive(Default)]
struct Laps(Vec<Vec<super::Phase>>);

impl super::PhaseClock for Laps {
    fn start(&mut self) {
        self.0.push(Vec::new());
    }
    fn lap(&mut self, phase: super::Phase) {
        if let Some(last) = self.0.last_mut() {
            last.push(phase);
        }
    }
}

/// Inserts `keys` (twice over, the second time updates) into `index` through
/// `insert_timed`; checks the answers against a `BTreeMap` and returns the laps.
fn timed_inserts<I: Updatable>(mut index: I, keys: &[u64]) -> (Laps, u64) {
    let mut laps = Laps::default();
    let mut want = BTreeMap::new();
    for round in 0..2u64 {
        for &k in keys {
            index.insert_timed(k, k ^ round, &mut laps);
            want.insert(k, k ^ round);
        }
    }
    for (&k, &v) in &want {
        assert_eq!(index.get(k), Some(v), "{k}");
    }
    (laps, index.counters().structure_modifications)
}

#[test]
fn timed_inserts_end_their_phases_in_order_and_change_nothing() {
    use super::Phase::{Collision, Search, Smo, Statistics, Undivided};
    // Inserts at one end and scattered ones, into a small bulk load: every kind modifies
    // its structure.
    let bulk: Vec<(u64, u64)> = (0..64u64).map(|k| (k * 1000, k)).collect();
    let mut keys: Vec<u64> = (0..3000u64).map(|i| 64_000 + i * 7).collect();
    keys.extend((0..3000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44));
    let small = BTreeParams {
        leaf_slots: 4,
        inner_slots: 4,
    };
    let runs: [(&str, (Laps, u64), bool); 6] = [
        (
            "alex",
            timed_inserts(Alex::bulk_load(&bulk).unwrap(), &keys),
            true,
        ),
        (
            "lipp",
            timed_inserts(Lipp::bulk_load(&bulk).unwrap(), &keys),
            true,
        ),
        (
            "btree",
            timed_inserts(BTree::with_params(&bulk, small).unwrap(), &keys),
            true,
        ),
        (
            "art",
            timed_inserts(Art::bulk_load(&bulk).unwrap(), &keys),
            true,
        ),
        (
            "dynamic-pgm",
            timed_inserts(DynamicPgm::bulk_load(&bulk).unwrap(), &keys),
            false,
        ),
        (
            "btreemap",
            timed_inserts(OrderedMap::bulk_load(&bulk).unwrap(), &keys),
            false,
        ),
    ];
    for (kind, (laps, smos), divided) in runs {
        assert_eq!(laps.0.len(), 2 * keys.len(), "{kind}: one start per insert");
        for l in &laps.0 {
            if !divided {
                assert_eq!(l, &[Undivided], "{kind}");
                continue;
            }
            // The search comes first (ALEX may grow its root before), the collision
            // exactly once after it, then the statistics and SMOs.
            let first = l.iter().position(|&p| p == Search);
            let collision: Vec<usize> = (0..l.len()).filter(|&i| l[i] == Collision).collect();
            assert!(first.is_some() && collision.len() == 1, "{kind}: {l:?}");
            assert!(first < collision.first().copied(), "{kind}: {l:?}");
            assert!(!l.contains(&Undivided), "{kind}: {l:?}");
            if kind != "alex" && kind != "lipp" {
                assert!(!l.contains(&Statistics), "{kind}: {l:?}");
            }
        }
        let timed_smos = laps.0.iter().filter(|l| l.contains(&Smo)).count();
        match kind {
            // The B+tree and ALEX time every structure modification (ALEX's root growth
            // aside, counted but cheap).
            "btree" | "alex" => {
                assert!(
                    timed_smos > 0 && timed_smos as u64 <= smos,
                    "{kind}: {timed_smos} of {smos}"
                )
            }
            // LIPP's SMOs are its rebuilds; its conflicts are chained as collisions.
            "lipp" => assert!(timed_smos > 0, "lipp rebuilt nothing"),
            _ => assert_eq!(timed_smos, 0, "{kind}"),
        }
        match kind {
            // LIPP counts every insert on its path, updates too.
            "lipp" => assert!(laps.0.iter().all(|l| l.contains(&Statistics))),
            // ALEX counts inserts of new keys; the second round only updates.
            "alex" => {
                assert!(laps.0[..keys.len()].iter().any(|l| l.contains(&Statistics)));
                assert!(
                    laps.0[keys.len()..]
                        .iter()
                        .all(|l| l == &[Search, Collision])
                );
            }
            _ => {}
        }
    }
}
