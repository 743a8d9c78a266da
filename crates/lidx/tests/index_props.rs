//! Every index kind and setting against `partition_point` on adversarial key sets: the
//! window holds the lower bound, never exceeds its stated width, and survives saving and
//! loading.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use lidx::index::file::{self, KeysFingerprint};
use lidx::index::{
    AnyIndex, BTree, BTreeParams, Binary, Index, Pgm, PgmParams, RadixSpline, RadixSplineParams,
    Rmi, RmiParams, RootKind, Sampled, SampledParams, lower_bound, lower_bound_prefetching,
};
use proptest::prelude::*;

/// Every kind in several settings, the 256-position settings among them.
fn all_indexes(keys: &[u64]) -> Vec<AnyIndex> {
    let mut out = Vec::new();
    for (epsilon, epsilon_rec, max_height) in
        [(1, 1, 16), (4, 2, 2), (127, 4, 16), (127, 4, 1), (16, 1, 3)]
    {
        let p = PgmParams {
            epsilon,
            epsilon_rec,
            max_height,
        };
        out.push(AnyIndex::Pgm(Pgm::build(keys, &p).unwrap()));
    }
    for (every, epsilon) in [(1, 1), (3, 2), (64, 1), (128, 2)] {
        let p = SampledParams {
            every,
            inner: PgmParams {
                epsilon,
                epsilon_rec: 2,
                max_height: 4,
            },
        };
        out.push(AnyIndex::SampledPgm(Sampled::build(keys, &p).unwrap()));
    }
    for (epsilon, radix_bits) in [(1, 0), (4, 4), (127, 18), (16, 10)] {
        let p = RadixSplineParams {
            epsilon,
            radix_bits,
        };
        out.push(AnyIndex::RadixSpline(RadixSpline::build(keys, &p).unwrap()));
    }
    for root in [RootKind::Linear, RootKind::Cubic, RootKind::Radix] {
        for branching in [1, 2, 16, 1000] {
            let p = RmiParams {
                root,
                branching,
                max_window: 0,
            };
            out.push(AnyIndex::Rmi(Rmi::build(keys, &p).unwrap()));
        }
        for max_window in [1, 7, 256] {
            let p = RmiParams {
                root,
                branching: 4,
                max_window,
            };
            out.push(AnyIndex::Rmi(Rmi::build(keys, &p).unwrap()));
        }
    }
    for every in [1, 7, 256] {
        out.push(AnyIndex::BTree(
            BTree::build(keys, &BTreeParams { every }).unwrap(),
        ));
    }
    out.push(AnyIndex::Binary(Binary::build(keys, &()).unwrap()));
    out
}

/// Queries: every key and its neighbours, the edges of u64, and random values.
fn queries(keys: &[u64], random: &[u64]) -> Vec<u64> {
    let mut q: Vec<u64> = vec![0, 1, 2, u64::MAX - 1, u64::MAX];
    for &k in keys {
        q.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]);
    }
    q.extend_from_slice(random);
    q
}

fn check(index: &AnyIndex, keys: &[u64], qs: &[u64]) -> Result<(), TestCaseError> {
    let n = keys.len() as u64;
    prop_assert_eq!(index.len(), n);
    for &q in qs {
        let lb = keys.partition_point(|&k| k < q) as u64;
        let w = index.search(q);
        prop_assert!(
            w.lo <= lb && lb <= w.hi && w.hi <= n,
            "{:?} {}: key {q}: window {w:?}, lower bound {lb}, n {n}",
            index.kind(),
            index.describe()
        );
        prop_assert!(
            w.width() <= index.max_width(),
            "{:?} {}: width {} > stated {}",
            index.kind(),
            index.describe(),
            w.width(),
            index.max_width()
        );
        // The last-mile search inside the window finds it.
        let inside = &keys[w.lo as usize..w.hi as usize];
        prop_assert_eq!(w.lo + lower_bound(inside, q, |&k| k) as u64, lb);
    }
    Ok(())
}

/// Key sets built from pieces: dense runs, long duplicate runs (longer than any window),
/// clusters near 0 and near u64::MAX, and huge gaps.
fn key_set() -> impl Strategy<Value = Vec<u64>> {
    let piece = prop_oneof![
        (any::<u64>(), 1usize..400).prop_map(|(base, len)| (0..len as u64)
            .map(|i| base.saturating_add(i))
            .collect::<Vec<_>>()),
        (any::<u64>(), 1usize..700).prop_map(|(k, len)| vec![k; len]),
        (0u64..50, 1usize..50)
            .prop_map(|(base, len)| (0..len as u64).map(|i| base + i * 3).collect()),
        (1usize..50).prop_map(|len| (0..len as u64).map(|i| u64::MAX - i * 2).collect()),
        prop::collection::vec(any::<u64>(), 0..200),
        prop::collection::vec(
            prop_oneof![Just(0u64), Just(u64::MAX), Just(u64::MAX - 1), Just(1)],
            0..20
        ),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|pieces| {
        let mut keys: Vec<u64> = pieces.concat();
        keys.sort_unstable();
        keys
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_index_window_holds_the_lower_bound(keys in key_set(), random in prop::collection::vec(any::<u64>(), 0..50)) {
        let qs = queries(&keys, &random);
        for index in all_indexes(&keys) {
            check(&index, &keys, &qs)?;
        }
    }

    #[test]
    fn saved_indexes_load_to_the_same_answers(keys in key_set(), random in prop::collection::vec(any::<u64>(), 0..50)) {
        let qs = queries(&keys, &random);
        let fp = KeysFingerprint::of(&keys);
        for index in all_indexes(&keys) {
            let bytes = file::encode(&index, &fp);
            let mut payload = Vec::new();
            index.encode(&mut payload);
            prop_assert_eq!(index.size_in_bytes(), payload.len() as u64, "{:?}", index.kind());
            let (back, back_fp) = file::decode(&bytes).unwrap();
            prop_assert_eq!(back_fp, fp);
            prop_assert_eq!(back.kind(), index.kind());
            for &q in &qs {
                prop_assert_eq!(back.search(q), index.search(q));
            }
        }
    }

    #[test]
    fn corrupted_index_files_are_refused(keys in key_set(), at in any::<prop::sample::Index>(), mask in 1..=255u8, cut in any::<prop::sample::Index>()) {
        let fp = KeysFingerprint::of(&keys);
        for index in all_indexes(&keys) {
            let bytes = file::encode(&index, &fp);
            let mut flipped = bytes.clone();
            let i = at.index(flipped.len());
            flipped[i] ^= mask;
            prop_assert!(file::decode(&flipped).is_err(), "{:?}: flip at {i} accepted", index.kind());
            let short = &bytes[..cut.index(bytes.len())];
            prop_assert!(file::decode(short).is_err(), "{:?}: truncation accepted", index.kind());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Payload decoders see mutated bytes without the file checksum in front: every outcome
    /// is an error or an index whose searches return without panicking.
    #[test]
    fn mutated_payloads_never_panic(keys in key_set(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6), queries in prop::collection::vec(any::<u64>(), 1..30)) {
        for index in all_indexes(&keys) {
            let mut payload = Vec::new();
            index.encode(&mut payload);
            for (at, byte) in &flips {
                if !payload.is_empty() {
                    let i = at.index(payload.len());
                    payload[i] = *byte;
                }
            }
            if let Ok(decoded) = AnyIndex::decode(index.kind(), &payload) {
                let edges = [0, 1, u64::MAX - 1, u64::MAX, keys.first().copied().unwrap_or(0), keys.last().copied().unwrap_or(0)];
                for &q in queries.iter().chain(&edges) {
                    std::hint::black_box(decoded.search(q));
                }
                let _ = (decoded.max_width(), decoded.size_in_bytes());
            }
            // Random bytes of the same length, too.
            let _ = AnyIndex::decode(index.kind(), &payload.iter().rev().copied().collect::<Vec<_>>());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Searching from the last position along the lowest level gives exactly the windows of
    /// a search from the root, for ascending runs of keys and for keys that go backwards.
    #[test]
    fn search_from_a_hint_matches_search(keys in key_set(), mut qs in prop::collection::vec(any::<u64>(), 1..200), back in prop::collection::vec(any::<u64>(), 0..5)) {
        qs.extend(keys.iter().step_by(5).copied());
        qs.sort_unstable();
        qs.extend(back);
        for index in all_indexes(&keys) {
            let mut hint = 0usize;
            for &q in &qs {
                prop_assert_eq!(index.search_from(q, &mut hint), index.search(q), "{:?} {} key {}", index.kind(), index.describe(), q);
            }
        }
    }
}

#[test]
fn tiny_and_degenerate_key_sets() {
    let sets: Vec<Vec<u64>> = vec![
        vec![],
        vec![0],
        vec![u64::MAX],
        vec![0, u64::MAX],
        vec![5; 1000],
        vec![u64::MAX; 300],
        (0..1000).collect(),
        [vec![0; 600], vec![u64::MAX; 600]].concat(),
    ];
    for keys in sets {
        let qs = queries(&keys, &[3, 1 << 63]);
        for index in all_indexes(&keys) {
            check(&index, &keys, &qs).unwrap();
        }
    }
}

#[test]
fn the_256_position_settings_return_at_most_256_positions() {
    let keys = lidx::data::generate(&lidx::data::GenParams::new(
        lidx::data::Distribution::Lognormal,
        200_000,
        1,
    ))
    .unwrap();
    let pgm = Pgm::build(&keys, &PgmParams::default()).unwrap();
    let sampled = Sampled::build(&keys, &SampledParams::default()).unwrap();
    let btree = BTree::build(&keys, &BTreeParams::default()).unwrap();
    let rs = RadixSpline::build(&keys, &RadixSplineParams::default()).unwrap();
    let rmi = Rmi::build(
        &keys,
        &RmiParams {
            max_window: 256,
            ..RmiParams::default()
        },
    )
    .unwrap();
    assert!(rmi.max_width() <= 256, "hybrid rmi {}", rmi.max_width());
    let plain = Rmi::build(
        &keys,
        &RmiParams {
            branching: 64,
            ..RmiParams::default()
        },
    )
    .unwrap();
    assert!(
        plain.max_width() > 256,
        "this set is hard enough to need the hybrid leaves"
    );
    let hybrid = Rmi::build(
        &keys,
        &RmiParams {
            branching: 64,
            max_window: 256,
            ..RmiParams::default()
        },
    )
    .unwrap();
    assert!(hybrid.hybrid_leaves() > 0 && hybrid.max_width() <= 256);
    assert!(rs.max_width() <= 256, "rs {}", rs.max_width());
    assert!(pgm.max_width() <= 256, "pgm {}", pgm.max_width());
    assert!(
        sampled.max_width() <= 256,
        "sampled {}",
        sampled.max_width()
    );
    assert_eq!(btree.max_width(), 256);
    for q in keys.iter().step_by(97) {
        assert!(pgm.search(*q).width() <= 256);
        assert!(sampled.search(*q).width() <= 256);
        let w = btree.search(*q);
        assert!(
            w.width() <= 256 && w.lo % 256 == 0,
            "the B+tree window is one block"
        );
    }
    // Learned indexes are far smaller than the B+tree over every 256th key.
    assert!(
        pgm.size_in_bytes() * 4 < btree.size_in_bytes(),
        "pgm {} btree {}",
        pgm.size_in_bytes(),
        btree.size_in_bytes()
    );
}

#[test]
fn unsorted_keys_and_bad_parameters_are_refused() {
    assert!(Pgm::build(&[3, 1], &PgmParams::default()).is_err());
    assert!(BTree::build(&[3, 1], &BTreeParams::default()).is_err());
    assert!(
        Pgm::build(
            &[1, 2],
            &PgmParams {
                epsilon: 0,
                ..PgmParams::default()
            }
        )
        .is_err()
    );
    assert!(
        Pgm::build(
            &[1, 2],
            &PgmParams {
                max_height: 0,
                ..PgmParams::default()
            }
        )
        .is_err()
    );
    assert!(BTree::build(&[1, 2], &BTreeParams { every: 0 }).is_err());
    assert!(
        Sampled::build(
            &[1, 2],
            &SampledParams {
                every: 0,
                ..SampledParams::default()
            }
        )
        .is_err()
    );
}

proptest! {
    /// Both phases of the last mile (branches above 16 keys, none below) on sorted keys
    /// with long runs of duplicates and the edges of `u64`.
    #[test]
    fn last_mile_lower_bound_matches_partition_point(
        mut keys in prop::collection::vec(prop_oneof![Just(0u64), Just(u64::MAX), 0u64..40, any::<u64>()], 0..300),
        queries in prop::collection::vec(prop_oneof![Just(0u64), Just(u64::MAX), 0u64..41, any::<u64>()], 1..20),
    ) {
        keys.sort_unstable();
        for q in queries {
            let want = keys.partition_point(|&k| k < q);
            prop_assert_eq!(lower_bound(&keys, q, |&k| k), want);
            prop_assert_eq!(lower_bound_prefetching(&keys, q, |&k| k), want);
        }
    }
}

#[test]
fn branchless_lower_bound_matches_partition_point() {
    let keys: Vec<u64> = vec![0, 0, 1, 5, 5, 5, 9, u64::MAX, u64::MAX];
    for len in 0..=keys.len() {
        let s = &keys[..len];
        for q in [0, 1, 2, 5, 6, 9, 10, u64::MAX - 1, u64::MAX] {
            let want = s.partition_point(|&k| k < q);
            assert_eq!(lower_bound(s, q, |&k| k), want, "len {len} q {q}");
            assert_eq!(
                lower_bound_prefetching(s, q, |&k| k),
                want,
                "len {len} q {q}"
            );
        }
    }
}
