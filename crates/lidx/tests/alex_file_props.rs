//! ALEX on disk against the table it was built from: every lookup returns the values of
//! exactly the tuples with that key, in table order (`partition_point` gives the
//! reference); the INLJ through it emits what a nested loop emits; a file with any byte
//! changed or cut short is refused, when opened or when the page is read.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

mod common;

use std::path::Path;

use common::write_table;
use lidx::join::alex as join;
use lidx::storage::ReadMode;
use lidx::updatable::alex::{AlexFile, AlexParams, AlexReader, file};
use proptest::prelude::*;

/// Sorted key sets from pieces: dense runs, long runs of one key (longer than a page),
/// small keys three apart, keys near u64::MAX, keys anywhere, the edges of u64, and a
/// lognormal-like spread that no single line fits.
fn key_set() -> impl Strategy<Value = Vec<u64>> {
    let piece = prop_oneof![
        (any::<u64>(), 1usize..2000).prop_map(|(base, len)| (0..len as u64)
            .map(|i| base.saturating_add(i))
            .collect::<Vec<_>>()),
        (any::<u64>(), 1usize..600).prop_map(|(k, len)| vec![k; len]),
        (0u64..50, 1usize..400)
            .prop_map(|(base, len)| (0..len as u64).map(|i| base + i * 3).collect()),
        (1usize..50).prop_map(|len| (0..len as u64).map(|i| u64::MAX - i * 2).collect()),
        prop::collection::vec(any::<u64>(), 0..300),
        prop::collection::vec(
            prop_oneof![Just(0u64), Just(u64::MAX), Just(u64::MAX - 1), Just(1)],
            0..20
        ),
        (1usize..3000, 1u32..40).prop_map(|(len, spread)| (0..len as u64)
            .map(|i| ((i as f64 / 97.0).exp() * f64::from(spread)) as u64)
            .collect()),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|pieces| {
        let mut keys: Vec<u64> = pieces.concat();
        keys.sort_unstable();
        keys
    })
}

/// The default parameters, and small nodes that make deep trees of many nodes.
fn params() -> impl Strategy<Value = AlexParams> {
    prop_oneof![
        Just(AlexParams::default()),
        (16usize..600, 2usize..64).prop_map(|(max_data_slots, max_fanout)| AlexParams {
            max_data_slots,
            max_fanout,
            ..AlexParams::default()
        }),
    ]
}

/// The values of the tuples with key `q`, in table order.
fn reference(keys: &[u64], salt: u64, q: u64) -> Vec<u64> {
    let from = keys.partition_point(|&k| k < q);
    (from..keys.partition_point(|&k| k <= q))
        .map(|i| salt + i as u64)
        .collect()
}

fn build(dir: &Path, keys: &[u64], params: &AlexParams) -> AlexFile {
    let table = write_table(&dir.join("s.tbl"), keys, 2_000_000);
    let out = dir.join("s.alex");
    let report = file::build(&table, keys, &out, params, |_| {}).unwrap();
    let alex = AlexFile::open(&out).unwrap();
    assert_eq!(report.pages, alex.pages());
    alex
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn lookups_return_exactly_the_tuples_of_the_key(keys in key_set(), params in params(), random in prop::collection::vec(any::<u64>(), 0..40)) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let alex = build(dir.path(), &keys, &params);
        prop_assert_eq!(alex.verify().unwrap(), keys.len() as u64);
        prop_assert_eq!(alex.len(), keys.len() as u64);
        let mut reader = AlexReader::new(&alex, ReadMode::Buffered).unwrap();
        let mut queries: Vec<u64> = vec![0, 1, 2, u64::MAX - 1, u64::MAX];
        for &k in &keys {
            queries.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]);
        }
        queries.extend(random);
        for &q in &queries {
            prop_assert_eq!(reader.get_all(q).unwrap(), reference(&keys, 2_000_000, q), "key {}", q);
        }
    }

    #[test]
    fn the_join_through_it_is_the_nested_loop(outer in key_set(), inner in key_set(), params in params(), shuffle in any::<u64>(), read in prop_oneof![Just(1u64), Just(300), Just(100_000)]) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        // Outer keys in any order: the join does not need them sorted.
        let mut outer = outer;
        if shuffle % 2 == 1 && !outer.is_empty() {
            let k = (shuffle as usize / 2) % outer.len();
            outer.rotate_left(k);
            outer.reverse();
        }
        let r = write_table(&dir.path().join("r.tbl"), &outer, 1_000_000);
        let alex = build(dir.path(), &inner, &params);
        let mut want = Vec::new();
        for (i, &a) in outer.iter().enumerate() {
            for v in reference(&inner, 2_000_000, a) {
                want.push((a, 1_000_000 + i as u64, v));
            }
        }
        for mode in [ReadMode::Buffered, ReadMode::Direct] {
            let mut got: Vec<(u64, u64, u64)> = Vec::new();
            let stats = join::inlj(&r, &alex, mode, read, &mut got).unwrap();
            prop_assert_eq!(&got, &want, "{:?}", mode);
            prop_assert_eq!(stats.output, want.len() as u64);
            prop_assert_eq!(stats.lookups, outer.len() as u64);
            prop_assert!(stats.inner_io.reads <= stats.lookups * 64 + 1, "{:?}", stats);
        }
    }

    #[test]
    fn changed_or_cut_files_are_refused(keys in key_set(), at in any::<prop::sample::Index>(), mask in 1..=255u8, cut in any::<prop::sample::Index>()) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        build(dir.path(), &keys, &AlexParams::default());
        let path = dir.path().join("s.alex");
        let bytes = std::fs::read(&path).unwrap();
        // Every byte but the header block's zero padding (56..4096) is checked.
        let checked: Vec<usize> = (0..bytes.len()).filter(|&i| !(56..4096).contains(&i)).collect();
        let i = checked[at.index(checked.len())];
        let mut flipped = bytes.clone();
        flipped[i] ^= mask;
        std::fs::write(&path, &flipped).unwrap();
        let refused = AlexFile::open(&path).and_then(|f| f.verify()).is_err();
        prop_assert!(refused, "a flip at byte {} of {} went unnoticed", i, bytes.len());
        std::fs::write(&path, &bytes[..cut.index(bytes.len())]).unwrap();
        prop_assert!(AlexFile::open(&path).is_err(), "a cut file was opened");
    }
}
