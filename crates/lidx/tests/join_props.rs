//! Every join method and setting against a nested-loop join: the same multiset of
//! `(key, outer value, inner value)` triples, on inputs with duplicates on both sides,
//! empty tables, 0 and u64::MAX, no matches and all matches.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

mod common;

use common::write_table;
use lidx::Error;
use lidx::index::{AnyIndex, AnyParams, IndexKind};
use lidx::join::{
    CountSink, HashTable, InljOptions, JoinMethod, JoinRequest, Method, SpillSink, grace_hash_join,
    hash_join, inlj_any, inlj_tuples, merge_join, parallel_join, parallel_join_with,
};
use lidx::memory::MemoryBudget;
use lidx::storage::{IoBackend, ReadMode, Table, TableWriter, Tuple};
use proptest::prelude::*;

fn nested_loop(outer: &[u64], inner: &[u64]) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    for (i, &a) in outer.iter().enumerate() {
        for (j, &b) in inner.iter().enumerate() {
            if a == b {
                out.push((a, 1_000_000 + i as u64, 2_000_000 + j as u64));
            }
        }
    }
    out.sort_unstable();
    out
}

/// Sorted keys from a small alphabet (many matches and duplicate runs) or anywhere in u64.
fn keys() -> impl Strategy<Value = Vec<u64>> {
    let small = prop_oneof![
        Just(0u64),
        Just(1),
        Just(2),
        Just(5),
        Just(u64::MAX - 1),
        Just(u64::MAX)
    ];
    prop_oneof![
        prop::collection::vec(small, 0..700),
        prop::collection::vec(0u64..40, 0..900),
        prop::collection::vec(any::<u64>(), 0..300),
        (0u64..5, 0usize..800).prop_map(|(k, n)| vec![k; n]),
    ]
    .prop_map(|mut v| {
        v.sort_unstable();
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_method_matches_the_nested_loop(outer in keys(), inner in keys(), read in prop_oneof![Just(1u64), Just(256), Just(300), Just(100_000)]) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let r = write_table(&dir.path().join("r.tbl"), &outer, 1_000_000);
        let s = write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
        let want = nested_loop(&outer, &inner);

        for mode in [ReadMode::Buffered, ReadMode::Direct] {
            let mut got = Vec::new();
            let stats = merge_join(&r, &s, mode, read, &MemoryBudget::unlimited(), &mut got).unwrap();
            got.sort_unstable();
            prop_assert_eq!(&got, &want, "merge");
            prop_assert_eq!(stats.output, want.len() as u64);

            let mut got = Vec::new();
            hash_join(&r, &s, mode, read, &MemoryBudget::unlimited(), &mut got).unwrap();
            got.sort_unstable();
            prop_assert_eq!(&got, &want, "hash");
        }

        for kind in IndexKind::ALL {
            let index = AnyIndex::build(&inner, &AnyParams::default_for(kind)).unwrap();
            for (cursor, monotone) in [(true, true), (false, true), (true, false), (false, false)] {
                let opts = InljOptions { mode: ReadMode::Buffered, outer_read_tuples: read, cursor, monotone, max_window_blocks: 2, ..InljOptions::default() };
                let mut got = Vec::new();
                let stats = inlj_any(&r, &s, &index, &opts, &mut got).unwrap();
                got.sort_unstable();
                prop_assert_eq!(&got, &want, "inlj {} monotone {}", kind, monotone);
                prop_assert_eq!(stats.lookups, outer.len() as u64);
                let mut count = CountSink::default();
                inlj_any(&r, &s, &index, &opts, &mut count).unwrap();
                prop_assert_eq!(count.0, want.len() as u64);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any I/O depth, on either backend, gives exactly the depth-1 output in the same order,
    /// for every index kind, with and without paper 1's optimizations.
    #[test]
    fn any_io_depth_gives_the_depth_one_output(outer in keys(), inner in keys(), depth in prop_oneof![Just(2usize), Just(3), Just(32)], wide in 1u64..4) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let r = write_table(&dir.path().join("r.tbl"), &outer, 1_000_000);
        let s = write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
        let want = nested_loop(&outer, &inner);
        for kind in IndexKind::ALL {
            let index = AnyIndex::build(&inner, &AnyParams::default_for(kind)).unwrap();
            for (cursor, monotone) in [(true, true), (false, false)] {
                let base = InljOptions { cursor, monotone, max_window_blocks: wide, outer_read_tuples: 300, ..InljOptions::default() };
                let mut one = Vec::new();
                let one_stats = inlj_any(&r, &s, &index, &base, &mut one).unwrap();
                for backend in backends() {
                    for mode in [ReadMode::Buffered, ReadMode::Direct] {
                        let opts = InljOptions { mode, io_depth: depth, io_backend: backend, ..base };
                        let mut deep = Vec::new();
                        let stats = inlj_any(&r, &s, &index, &opts, &mut deep).unwrap();
                        prop_assert_eq!(&deep, &one, "{} depth {} {:?}", kind, depth, backend);
                        prop_assert_eq!(stats.lookups, one_stats.lookups);
                        // The outer tuples from memory: the same output and inner reads.
                        let tuples: Vec<Tuple> = r.map().unwrap().tuples().to_vec();
                        let mut in_memory = Vec::new();
                        let from_memory = inlj_tuples(&tuples, &s, &index, &opts, &mut in_memory).unwrap();
                        prop_assert_eq!(&in_memory, &one, "{} from memory", kind);
                        prop_assert_eq!(from_memory.inner_io, stats.inner_io);
                        prop_assert_eq!(from_memory.outer_io.reads, 0);
                    }
                }
            }
        }
        let mut sorted = Vec::new();
        inlj_any(&r, &s, &AnyIndex::build(&inner, &AnyParams::default_for(IndexKind::Pgm)).unwrap(), &InljOptions { io_depth: depth, ..InljOptions::default() }, &mut sorted).unwrap();
        sorted.sort_unstable();
        prop_assert_eq!(sorted, want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// N threads give exactly the one-thread output, in the same order, for every method.
    #[test]
    fn threads_give_the_one_thread_output(outer in keys(), inner in keys(), threads in 2usize..8) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let r = write_table(&dir.path().join("r.tbl"), &outer, 1_000_000);
        let s = write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
        let index = AnyIndex::build(&inner, &AnyParams::default_for(IndexKind::SampledPgm)).unwrap();
        let hashed = HashTable::build(&r, ReadMode::Buffered, 256, &MemoryBudget::unlimited()).unwrap();
        let methods = [
            Method::Inlj { index: &index, options: InljOptions { mode: ReadMode::Buffered, ..InljOptions::default() } },
            Method::Merge { mode: ReadMode::Buffered, read_tuples: 256, budget: &MemoryBudget::unlimited() },
            Method::Hash { table: &hashed, mode: ReadMode::Buffered, read_tuples: 256 },
        ];
        for method in &methods {
            let (one, one_stats) = parallel_join::<Vec<(u64, u64, u64)>>(&r, &s, method, 1).unwrap();
            let (many, many_stats) = parallel_join::<Vec<(u64, u64, u64)>>(&r, &s, method, threads).unwrap();
            prop_assert_eq!(many.concat(), one.concat());
            prop_assert_eq!(many_stats.output, one_stats.output);
            let mut sorted = one.concat();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, nested_loop(&outer, &inner));
            let (counts, _) = parallel_join::<CountSink>(&r, &s, method, threads).unwrap();
            prop_assert_eq!(counts.iter().map(|c| c.0).sum::<u64>(), one_stats.output);
        }
    }
}

#[test]
fn the_monotone_window_reads_fewer_blocks_than_fresh_windows() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let inner: Vec<u64> = (0..100_000).map(|i| i * 2).collect();
    let outer: Vec<u64> = inner.iter().step_by(10).copied().collect();
    let r = write_table(&dir.path().join("r.tbl"), &outer, 0);
    let s = write_table(&dir.path().join("s.tbl"), &inner, 0);
    let index = AnyIndex::build(&inner, &AnyParams::default_for(IndexKind::Pgm)).unwrap();
    let run = |monotone| {
        let opts = InljOptions {
            mode: ReadMode::Direct,
            monotone,
            ..InljOptions::default()
        };
        inlj_any(&r, &s, &index, &opts, &mut CountSink::default()).unwrap()
    };
    let (fresh, monotone) = (run(false), run(true));
    assert_eq!(fresh.output, 10_000);
    assert_eq!(monotone.output, 10_000);
    // Ten outer keys fall in each 256-tuple block: the monotone window reads each block
    // about once, fresh windows read about two blocks per key.
    assert!(
        monotone.inner_io.blocks * 5 < fresh.inner_io.blocks,
        "{monotone:?} vs {fresh:?}"
    );
    assert!(
        monotone.inner_io.blocks >= 391,
        "every inner block holding a match is read"
    );
}

#[test]
fn inlj_refuses_an_index_of_another_size_and_unsorted_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let r = write_table(&dir.path().join("r.tbl"), &[3, 1, 2], 0);
    let s = write_table(&dir.path().join("s.tbl"), &[1, 2, 3], 0);
    let index = AnyIndex::build(&[1, 2, 3, 4], &AnyParams::default_for(IndexKind::Pgm)).unwrap();
    let opts = InljOptions {
        mode: ReadMode::Buffered,
        ..InljOptions::default()
    };
    let err = inlj_any(&s, &s, &index, &opts, &mut CountSink::default()).unwrap_err();
    assert!(err.to_string().contains("indexes 4 keys"), "{err}");
    let index = AnyIndex::build(&[1, 2, 3], &AnyParams::default_for(IndexKind::Pgm)).unwrap();
    let err = inlj_any(&r, &s, &index, &opts, &mut CountSink::default()).unwrap_err();
    assert!(err.to_string().contains("not sorted"), "{err}");
    // Without the monotone window, an unsorted outer table is fine.
    let plain = InljOptions {
        monotone: false,
        ..opts
    };
    let mut got = Vec::new();
    inlj_any(&r, &s, &index, &plain, &mut got).unwrap();
    assert_eq!(got.len(), 3);
    // The same from memory: unsorted outer tuples are refused with monotone windows only.
    let unsorted: Vec<Tuple> = [3, 1, 2]
        .into_iter()
        .zip(0..)
        .map(|(key, value)| Tuple { key, value })
        .collect();
    let err = inlj_tuples(&unsorted, &s, &index, &opts, &mut CountSink::default()).unwrap_err();
    assert!(err.to_string().contains("key order"), "{err}");
    let mut from_memory = Vec::new();
    inlj_tuples(&unsorted, &s, &index, &plain, &mut from_memory).unwrap();
    assert_eq!(from_memory, got);
    let four = AnyIndex::build(&[1, 2, 3, 4], &AnyParams::default_for(IndexKind::Pgm)).unwrap();
    let err = inlj_tuples(&unsorted, &s, &four, &plain, &mut CountSink::default()).unwrap_err();
    assert!(err.to_string().contains("indexes 4 keys"), "{err}");
    assert!(
        merge_join(
            &r,
            &s,
            ReadMode::Buffered,
            256,
            &MemoryBudget::unlimited(),
            &mut CountSink::default()
        )
        .is_err()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Over the memory budget, the grace hash join partitions both sides to disk and still
    /// returns the nested-loop multiset; under it, it is the in-memory hash join.
    #[test]
    fn grace_hash_join_matches_the_nested_loop(outer in prop::collection::vec(0u64..3000, 2500..3000), inner in prop::collection::vec(0u64..3000, 0..2000), budget in prop_oneof![Just(100_000u64), Just(1u64 << 30)]) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let r = write_table(&dir.path().join("r.tbl"), &outer, 1_000_000);
        let s = write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
        let mut got = Vec::new();
        let memory = MemoryBudget::new(budget);
        let stats = grace_hash_join(&r, &s, ReadMode::Buffered, 256, &memory, dir.path(), &mut got).unwrap();
        prop_assert!(memory.peak() <= budget && memory.peak() > 0, "peak {} over {budget}", memory.peak());
        prop_assert_eq!(memory.used(), 0, "everything reserved is given back");
        got.sort_unstable();
        prop_assert_eq!(got, nested_loop(&outer, &inner));
        prop_assert_eq!(stats.spilled_bytes > 0, budget == 100_000, "partitions exactly when over budget");
        // The partitions are gone.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        prop_assert_eq!(left.len(), 2, "{:?}", left);
    }
}

#[test]
fn a_budget_too_small_for_the_partitions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<u64> = (0..5000).collect();
    let r = write_table(&dir.path().join("r.tbl"), &keys, 0);
    let err = grace_hash_join(
        &r,
        &r,
        ReadMode::Buffered,
        256,
        &MemoryBudget::new(10_000),
        dir.path(),
        &mut CountSink::default(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::OverBudget { .. }), "{err}");
    assert!(err.to_string().contains("memory budget"), "{err}");
}

#[test]
fn spilled_thread_outputs_fill_the_output_table_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let outer: Vec<u64> = (0..3000).map(|i| i / 3).collect();
    let inner: Vec<u64> = (0..5000).map(|i| i / 2).collect();
    let r = write_table(&dir.path().join("r.tbl"), &outer, 1_000_000);
    let s = write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
    let method = Method::Merge {
        mode: ReadMode::Buffered,
        read_tuples: 300,
        budget: &MemoryBudget::unlimited(),
    };
    let (want, _) = parallel_join::<Vec<(u64, u64, u64)>>(&r, &s, &method, 1).unwrap();
    let (parts, stats) =
        parallel_join_with(&r, &s, &method, 4, || SpillSink::new(dir.path())).unwrap();
    assert_eq!(
        parts.iter().map(SpillSink::count).sum::<u64>(),
        stats.output
    );
    let out = dir.path().join("out.tbl");
    let mut writer = TableWriter::create_output(&out).unwrap();
    for part in parts {
        part.drain_into(&mut writer).unwrap();
    }
    writer.finish().unwrap();
    let mut got = Vec::new();
    Table::open(&out)
        .unwrap()
        .scan_output(|t| {
            got.extend(t.iter().map(|t| (t.key, t.outer, t.inner)));
            Ok(())
        })
        .unwrap();
    assert_eq!(got, want.concat());
    assert_eq!(got.len(), 3000 * 2);
}

/// The backends this machine offers: threads everywhere, `io_uring` where the kernel grants
/// a ring (where it does not, `IoBackend::Auto` falls back to threads, tested here too).
fn backends() -> Vec<IoBackend> {
    match IoBackend::Auto.resolve() {
        IoBackend::Uring => vec![IoBackend::Uring, IoBackend::Threads],
        _ => vec![IoBackend::Threads, IoBackend::Auto],
    }
}

/// Hash and merge joins under a memory budget: within it they give the nested-loop output
/// and never reserve past it, giving back everything; beyond it they fail naming what did
/// not fit.
#[test]
fn hash_and_merge_joins_stay_within_their_budget_or_say_what_did_not_fit() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outer: Vec<u64> = (0..3000).map(|i| i / 2).collect();
    // A run of 2000 equal inner keys: the merge join holds all their values at once.
    let inner: Vec<u64> = (0..4000).map(|i| if i < 2000 { 7 } else { i }).collect();
    let r = write_table(&dir.path().join("r.tbl"), &outer, 1_000_000);
    let s = write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
    let mut want = nested_loop(&outer, &inner);
    want.sort_unstable();
    let mut fitted = Vec::new();
    for limit in [1_000u64, 20_000, 40_000, 60_000, 200_000, 1 << 30] {
        let budget = MemoryBudget::new(limit);
        for name in ["merge", "hash"] {
            let mut got = Vec::new();
            let joined = match name {
                "merge" => merge_join(&r, &s, ReadMode::Buffered, 256, &budget, &mut got),
                _ => hash_join(&r, &s, ReadMode::Buffered, 256, &budget, &mut got),
            };
            match joined {
                Ok(_) => {
                    got.sort_unstable();
                    assert_eq!(got, want, "{name} at {limit}");
                    fitted.push((name, limit));
                }
                Err(e) => assert!(
                    matches!(e, Error::OverBudget { .. }),
                    "{name} at {limit}: {e}"
                ),
            }
            assert!(
                budget.peak() <= limit,
                "{name} at {limit}: peak {}",
                budget.peak()
            );
            assert_eq!(budget.used(), 0, "{name} at {limit}: all given back");
        }
    }
    for name in ["merge", "hash"] {
        let fits: Vec<u64> = fitted.iter().filter(|f| f.0 == name).map(|f| f.1).collect();
        assert!(
            fits.contains(&(1 << 30)) && !fits.contains(&1_000),
            "{name} fits {fits:?}: the budget decides"
        );
    }
    let tiny = MemoryBudget::new(1_000);
    let err = hash_join(
        &r,
        &s,
        ReadMode::Buffered,
        256,
        &tiny,
        &mut CountSink::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("the hash table of 3000 outer tuples"),
        "{err}"
    );
}

/// The triples of a join output table, sorted.
fn triples_of(path: &std::path::Path) -> Vec<(u64, u64, u64)> {
    let table = Table::open(path).unwrap();
    let mut out = Vec::new();
    table
        .scan_output(|chunk| {
            out.extend(chunk.iter().map(|t| (t.key, t.outer, t.inner)));
            Ok(())
        })
        .unwrap();
    out.sort_unstable();
    out
}

/// Every method the driver runs, on the tables it takes.
fn driver_methods(sorted: bool) -> Vec<Option<JoinMethod>> {
    let mut methods = vec![
        Some(JoinMethod::Hash),
        Some(JoinMethod::Grace),
        Some(JoinMethod::Partition),
        Some(JoinMethod::BTreeInserts),
        Some(JoinMethod::SortMerge),
        None,
    ];
    if sorted {
        methods.extend(IndexKind::ALL.map(|k| Some(JoinMethod::Inlj(k))));
        methods.extend([Some(JoinMethod::InljAlex), Some(JoinMethod::Merge)]);
    }
    methods
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// `lidx join`'s one pipeline, every method through it: the output table holds the
    /// nested loop's triples, the record counts them, and the scratch files (indexes,
    /// sorted copies, partitions, spilled parts) are gone afterwards; a count-only run
    /// counts the same.
    #[test]
    fn the_driver_gives_the_nested_loop_for_every_method(outer in keys(), inner in keys(), shuffled in any::<bool>(), seed in any::<u64>()) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let d = dir.path();
        let want = nested_loop(&outer, &inner);
        let (mut outer_keys, mut inner_keys) = (outer.clone(), inner.clone());
        if shuffled {
            use rand::seq::SliceRandom;
            let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
            outer_keys.shuffle(&mut rng);
            inner_keys.shuffle(&mut rng);
        }
        // Values follow each table's order of writing; the reference follows it too.
        let want = if shuffled { nested_loop(&outer_keys, &inner_keys) } else { want };
        write_table(&d.join("r.tbl"), &outer_keys, 1_000_000);
        write_table(&d.join("s.tbl"), &inner_keys, 2_000_000);
        let sorted = !shuffled || (outer_keys.is_sorted() && inner_keys.is_sorted());
        for method in driver_methods(sorted) {
            let name = method.map_or("auto".to_string(), |m| m.to_string());
            let out = d.join("out.tbl");
            let request = JoinRequest {
                output: Some(out.clone()),
                memory: method.filter(|m| m.takes_budget()).map(|_| MemoryBudget::new(64 << 20)),
                ..JoinRequest::new(&d.join("r.tbl"), &d.join("s.tbl"), method)
            };
            let run = lidx::join::driver::run(&request, |_| {}).unwrap();
            prop_assert_eq!(triples_of(&out), want.clone(), "{}", name);
            prop_assert_eq!(run.record.output_tuples, want.len() as u64, "{}", name);
            let counted = lidx::join::driver::run(&JoinRequest { output: None, ..request.clone() }, |_| {}).unwrap();
            prop_assert_eq!(counted.record.output_tuples, want.len() as u64, "{}", name);
            prop_assert_eq!(run.memory.used(), 0, "{} still holds memory", name);
            let mut left: Vec<String> = std::fs::read_dir(d).unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            left.sort();
            prop_assert_eq!(left, vec!["out.tbl", "r.tbl", "s.tbl"], "{}", name);
        }
    }
}

/// A setting the method does not take is refused before any output exists, and saved
/// indexes of the wrong kind or table are refused.
#[test]
fn the_driver_refuses_what_a_method_does_not_take() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    let keys: Vec<u64> = (0..3000).map(|i| i * 2).collect();
    let s = write_table(&d.join("s.tbl"), &keys, 0);
    write_table(&d.join("r.tbl"), &keys[..100], 0);
    let out = d.join("out.tbl");
    let base = JoinRequest {
        output: Some(out.clone()),
        ..JoinRequest::new(&d.join("r.tbl"), &d.join("s.tbl"), None)
    };
    let fails = |request: JoinRequest, words: &[&str]| {
        let err = lidx::join::driver::run(&request, |_| {})
            .unwrap_err()
            .to_string();
        for w in words {
            assert!(err.contains(w), "{err} lacks {w}");
        }
        assert!(!out.exists(), "{err}: an output was left");
    };
    fails(
        JoinRequest {
            method: Some(JoinMethod::Grace),
            threads: 2,
            ..base.clone()
        },
        &["threads", "grace", "one thread"],
    );
    fails(
        JoinRequest {
            method: Some(JoinMethod::Merge),
            io_depth: 8,
            ..base.clone()
        },
        &["I/O depth", "merge"],
    );
    fails(
        JoinRequest {
            index: Some(d.join("s.idx")),
            ..base.clone()
        },
        &["index", "auto"],
    );
    // An index of another kind than the method's.
    let index = AnyIndex::build(&keys, &AnyParams::default_for(IndexKind::Pgm)).unwrap();
    lidx::index::file::save(
        &d.join("s.idx"),
        &index,
        &lidx::index::file::KeysFingerprint::of(&keys),
    )
    .unwrap();
    fails(
        JoinRequest {
            method: Some(JoinMethod::Inlj(IndexKind::BTree)),
            index: Some(d.join("s.idx")),
            ..base.clone()
        },
        &["s.idx", "pgm", "inlj:btree"],
    );
    // An unclustered index of another table.
    let bti = d.join("r.bti");
    lidx::partition::btree::build(
        &Table::open(&d.join("r.tbl")).unwrap(),
        &bti,
        lidx::partition::Entries::Pointers,
        &MemoryBudget::unlimited(),
        |_| {},
    )
    .unwrap();
    fails(
        JoinRequest {
            method: Some(JoinMethod::BTreeInserts),
            index: Some(bti.clone()),
            ..base.clone()
        },
        &["r.bti", "holds 100 tuples"],
    );
    drop(s);
}
