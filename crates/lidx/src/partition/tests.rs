use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::storage::TableWriter;

/// The value of the tuple at position `i` in the tables of these tests: not its position,
/// so that a value and a pointer differ, and the position follows from either.
fn value_at(i: u64) -> u64 {
    i ^ 0x5a5a_5a5a_0000_0000
}

/// The word an index with `entries` holds for the tuple at position `i`.
fn word_of(entries: Entries, i: u64) -> u64 {
    match entries {
        Entries::Pointers => i,
        Entries::Tuples => value_at(i),
    }
}

/// The position of the tuple an index with `entries` holds `word` for.
fn position_of(entries: Entries, word: u64) -> u64 {
    match entries {
        Entries::Pointers => word,
        Entries::Tuples => value_at(word),
    }
}

/// Writes `keys` as a table of (key, [`value_at`] its position) tuples at `dir/name`.
fn table_named(dir: &Path, name: &str, keys: &[u64]) -> Table {
    let path = dir.join(name);
    let mut w = TableWriter::create(&path).unwrap();
    for (i, &key) in keys.iter().enumerate() {
        w.push(Tuple {
            key,
            value: value_at(i as u64),
        })
        .unwrap();
    }
    w.finish().unwrap();
    Table::open(&path).unwrap()
}

/// [`table_named`] `u.tbl`.
fn table_of(dir: &Path, keys: &[u64]) -> Table {
    table_named(dir, "u.tbl", keys)
}

fn any_entries() -> impl Strategy<Value = Entries> {
    prop_oneof![Just(Entries::Pointers), Just(Entries::Tuples)]
}

/// Builds the index of `keys` with `params`, reopens the file, and checks it against a
/// `BTreeMap` of the same tuples: every tuple (or its pointer) in exactly one partition,
/// partitions in key order and disjoint, every lookup (present keys, neighbours, edges)
/// equal, and the file verified against the table.
fn check(keys: &[u64], params: &PartitionParams) -> Result<Skew, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let table = table_of(dir.path(), keys);
    let out = dir.path().join("u.idx");
    let budget = MemoryBudget::unlimited();
    let (built, report) = build(&table, &out, params, &budget, |_| {}).unwrap();
    prop_assert_eq!(budget.used(), 0);
    prop_assert_eq!(
        report.bytes_read,
        (keys.len() as u64 * 16, keys.len() as u64 * 16)
    );
    let file = PartitionFile::open(&out).unwrap();
    prop_assert_eq!(file.index(), &built);
    let index = file.index();
    let entries = params.entries;
    prop_assert_eq!(index.entries(), entries);
    prop_assert!(report.pages_written >= report.write_calls, "{:?}", report);
    prop_assert_eq!(
        report.file_bytes,
        std::fs::metadata(&out).unwrap().len(),
        "{:?}",
        report
    );
    PartitionFile::verify_file(&out, Some(&table)).unwrap();

    let mut reference: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (i, &k) in keys.iter().enumerate() {
        reference
            .entry(k)
            .or_default()
            .push(word_of(entries, i as u64));
    }
    let mut seen = vec![false; keys.len()];
    let mut last_max: Option<u64> = None;
    for p in 0..index.partitions() {
        let mut tuples = Vec::new();
        file.read_partition(p, &mut tuples).unwrap();
        prop_assert_eq!(tuples.len() as u64, index.count(p));
        for t in &tuples {
            let at = position_of(entries, t.value) as usize;
            prop_assert_eq!(keys[at], t.key);
            prop_assert!(!seen[at], "tuple {} twice", at);
            seen[at] = true;
            prop_assert_eq!(index.partition_of(t.key), p);
        }
        if let (Some(lo), Some(hi)) = (
            tuples.iter().map(|t| t.key).min(),
            tuples.iter().map(|t| t.key).max(),
        ) {
            prop_assert!(
                last_max.is_none_or(|m| m < lo),
                "partition {p} overlaps the one before"
            );
            last_max = Some(hi);
        }
    }
    prop_assert!(seen.iter().all(|&s| s), "a tuple is in no partition");

    let mut queries = vec![0, 1, u64::MAX - 1, u64::MAX];
    for &k in keys.iter().take(200) {
        queries.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]);
    }
    for q in queries {
        let want = reference.get(&q).cloned().unwrap_or_default();
        prop_assert_eq!(file.lookup(q).unwrap(), want, "key {}", q);
    }
    Ok(index.skew())
}

fn shuffled(mut keys: Vec<u64>, seed: u64) -> Vec<u64> {
    use rand::seq::SliceRandom;
    keys.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
    keys
}

fn keys_strategy() -> impl Strategy<Value = Vec<u64>> {
    let key = prop_oneof![Just(0u64), Just(u64::MAX), 0u64..100, any::<u64>()];
    let clustered = (any::<u64>(), 1usize..4000).prop_map(|(base, len)| {
        (0..len as u64)
            .map(|i| base.wrapping_add(i * 3))
            .collect::<Vec<_>>()
    });
    prop_oneof![
        prop::collection::vec(key, 0..3000),
        prop::collection::vec(clustered, 1..4).prop_map(|c| c.concat()),
        (any::<u64>(), 1usize..2000).prop_map(|(k, n)| vec![k; n]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn partitions_hold_every_tuple_once_in_key_order(
        keys in keys_strategy(),
        seed in any::<u64>(),
        fraction in prop_oneof![Just(0.01), Just(0.1), Just(1.0)],
        partition_tuples in prop_oneof![Just(4u64), Just(256)],
        flush in prop_oneof![Just(1u64), Just(8), Just(256)],
        entries in any_entries(),
    ) {
        let params = PartitionParams {
            entries,
            sample_fraction: fraction,
            partition_tuples,
            flush_tuples: flush,
            seed,
            ..PartitionParams::default()
        };
        check(&shuffled(keys, seed), &params)?;
    }
}

#[test]
fn a_sample_that_misses_a_cluster_overflows_one_partition_over_many_pages() {
    // 20,000 keys spread out, then 5,000 in a narrow cluster the 1-key sample cannot see.
    let mut keys: Vec<u64> = (0..20_000u64).map(|i| i << 40).collect();
    keys.extend((0..5_000u64).map(|i| (7u64 << 40) + 1 + i));
    let params = PartitionParams {
        sample_fraction: 1.0 / 25_000.0,
        ..PartitionParams::default()
    };
    let skew = check(&shuffled(keys, 5), &params).unwrap();
    assert!(skew.largest > 10 * PAGE_TUPLES, "{skew:?}");
    assert!(
        skew.overflowed >= 1 && skew.pages > skew.partitions,
        "{skew:?}"
    );
}

#[test]
fn uniform_keys_spread_as_evenly_as_the_sample_allows() {
    let keys: Vec<u64> = (0..100_000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    // With every key sampled, the model knows each rank within ε: partitions are a page.
    let exact = PartitionParams {
        sample_fraction: 1.0,
        epsilon: 1,
        ..PartitionParams::default()
    };
    let skew = check(&keys, &exact).unwrap();
    assert_eq!(skew.partitions, 100_000u64.div_ceil(PAGE_TUPLES));
    assert!(skew.largest <= PAGE_TUPLES + 8, "{skew:?}");
    assert_eq!(skew.empty, 0, "{skew:?}");
    // A 1% sample places about 2.6 sampled keys per partition, and the gaps between sampled
    // keys vary (exponentially, around 100 tuples): partitions vary as much, but most fit
    // in their page.
    let skew = check(&keys, &PartitionParams::default()).unwrap();
    assert!(skew.pages < 2 * skew.partitions, "{skew:?}");
    assert!(skew.overflowed < skew.partitions / 2, "{skew:?}");
}

#[test]
fn damaged_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys = shuffled((0..5_000u64).collect(), 1);
    let table = table_of(dir.path(), &keys);
    let out = dir.path().join("u.idx");
    build(
        &table,
        &out,
        &PartitionParams::default(),
        &MemoryBudget::unlimited(),
        |_| {},
    )
    .unwrap();
    let good = std::fs::read(&out).unwrap();
    let damaged = dir.path().join("d.idx");
    let open = |bytes: &[u8]| {
        std::fs::write(&damaged, bytes).unwrap();
        PartitionFile::open(&damaged)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    assert!(open(&good[..good.len() - 1]).contains("d.idx"));
    assert!(open(&good[..100]).contains("truncated"));
    let mut flipped = good.clone();
    flipped[20] ^= 1;
    assert!(open(&flipped).contains("header checksum"));
    let mut flipped = good.clone();
    let last = flipped.len() - 3;
    flipped[last] ^= 1;
    assert!(open(&flipped).contains("checksum mismatch"));
    assert!(open(b"not a partitions file, just text: long enough? no").contains("truncated"));
    let mut foreign = vec![0u8; 8192];
    foreign[..8].copy_from_slice(b"LIDXIDX\0");
    assert!(open(&foreign).contains("wrong magic"));
    // A flipped byte in a page is found when the page is read.
    let mut flipped = good;
    flipped[4096 + 17] ^= 1;
    std::fs::write(&damaged, &flipped).unwrap();
    let file = PartitionFile::open(&damaged).unwrap();
    let err = file
        .read_partition(0, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("checksum"), "{err}");
}

#[test]
fn a_budget_too_small_is_refused_before_writing_with_the_smallest_that_works() {
    let dir = tempfile::tempdir().unwrap();
    let keys = shuffled((0..50_000u64).collect(), 2);
    let table = table_of(dir.path(), &keys);
    let out = dir.path().join("u.idx");
    let params = PartitionParams::default();
    let need = min_build_memory(50_000, &params);
    let err = build(&table, &out, &params, &MemoryBudget::new(need - 1), |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains(&need.to_string()), "{err}");
    assert!(!out.exists());
    // The smallest that works does.
    let (index, _) = build(
        &table,
        &out,
        &params,
        &MemoryBudget::new(need + 4096),
        |_| {},
    )
    .unwrap();
    assert_eq!(index.len(), 50_000);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Ranks never fall as keys grow, and stay within ε of the true rank, whatever the
    /// model: keys where floats run out, duplicates, models built on several threads.
    #[test]
    fn ranks_are_monotone_and_close(
        pieces in prop::collection::vec(
            (prop_oneof![Just(0u64), Just(1u64 << 53), Just(u64::MAX - 3000), any::<u64>()], 1u64..40, 1usize..500, 0usize..4),
            1..5,
        ),
        eps in prop_oneof![Just(1u64), Just(4), Just(127)],
        threads in 1usize..4,
        wide in any::<bool>(),
        extra in prop::collection::vec(any::<u64>(), 0..50),
    ) {
        let mut keys: Vec<u64> = pieces.iter().flat_map(|&(base, step, len, dups)| {
            (0..len as u64).flat_map(move |i| std::iter::repeat_n(base.saturating_add(i * step), 1 + dups * usize::from(i % 5 == 0)))
        }).collect();
        keys.sort_unstable();
        let params = PgmParams { epsilon: eps, ..PgmParams::default() };
        let model = match wide {
            // The wide form's segments may start below where the one before ends.
            true => Pgm::build_wide_form(&keys, &params).unwrap(),
            false => Pgm::build_on(&keys, &params, threads).unwrap(),
        };
        let slack = model.slack().0;
        let ranker = Ranker::new(model);
        let mut queries: Vec<u64> = keys.iter().flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)]).collect();
        queries.extend(extra);
        queries.extend([0, u64::MAX]);
        queries.sort_unstable();
        let mut last = 0u64;
        for q in queries {
            let r = ranker.rank(q);
            prop_assert!(r >= last, "rank({q}) = {r} after {last}");
            last = r;
            let lb = keys.partition_point(|&k| k < q) as u64;
            prop_assert!(r.abs_diff(lb) <= eps + slack + 1, "rank({q}) = {r}, lower bound {lb}");
        }
        prop_assert!(last <= keys.len() as u64);
    }
}

/// Builds the inserted B+tree of `keys` with `frames` pool frames (the budget sized for
/// them), reopens it and checks it against a `BTreeMap`: every key's positions, a full scan
/// in (key, position) order, range scans from the edges.
fn check_btree(
    keys: &[u64],
    frames: u64,
    entries: Entries,
) -> Result<btree::BuildReport, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let table = table_of(dir.path(), keys);
    let out = dir.path().join("u.bti");
    let limit = btree::min_build_memory(keys.len() as u64, entries)
        + (frames - btree::MIN_FRAMES) * btree::frame_bytes(entries);
    let budget = MemoryBudget::new(limit);
    let report = btree::build(&table, &out, entries, &budget, |_| {}).unwrap();
    prop_assert_eq!(budget.used(), 0);
    prop_assert!(report.frames >= btree::MIN_FRAMES, "{report:?}");
    prop_assert!(
        report.pages_written > report.stats.leaf_writes,
        "{:?}",
        report
    );
    prop_assert_eq!(report.file_bytes, std::fs::metadata(&out).unwrap().len());
    btree::InsertedBTree::verify_file(&out, Some(&table)).unwrap();
    let mut tree = btree::InsertedBTree::open(&out, 3).unwrap();
    prop_assert_eq!(tree.len(), keys.len() as u64);
    prop_assert_eq!(tree.entries(), entries);

    let mut reference: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (i, &k) in keys.iter().enumerate() {
        reference
            .entry(k)
            .or_default()
            .push(word_of(entries, i as u64));
    }
    let mut all = Vec::new();
    tree.scan_from((0, 0), |k, p| {
        all.push((k, p));
        true
    })
    .unwrap();
    let mut sorted: Vec<(u64, u64)> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i as u64))
        .collect();
    sorted.sort_unstable();
    let sorted: Vec<(u64, u64)> = sorted
        .into_iter()
        .map(|(k, i)| (k, word_of(entries, i)))
        .collect();
    prop_assert_eq!(&all, &sorted);
    let mut queries = vec![0, 1, u64::MAX - 1, u64::MAX];
    queries.extend(
        keys.iter()
            .take(300)
            .flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)]),
    );
    for q in queries {
        let mut got = Vec::new();
        tree.lookup(q, &mut got).unwrap();
        prop_assert_eq!(
            got,
            reference.get(&q).cloned().unwrap_or_default(),
            "key {}",
            q
        );
    }
    Ok(report)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn inserted_btree_agrees_with_a_btreemap(
        keys in keys_strategy(),
        seed in any::<u64>(),
        frames in prop_oneof![Just(2u64), Just(5), Just(1000)],
        entries in any_entries(),
    ) {
        check_btree(&shuffled(keys, seed), frames, entries)?;
    }
}

#[test]
fn a_small_pool_writes_leaves_many_times_over() {
    let keys = shuffled((0..60_000u64).map(|i| i * 7).collect(), 3);
    let small = check_btree(&keys, 4, Entries::Pointers).unwrap();
    let large = check_btree(&keys, 10_000, Entries::Pointers).unwrap();
    assert_eq!(
        small.leaves, large.leaves,
        "the same inserts make the same tree"
    );
    assert_eq!(small.stats.splits, small.leaves - 1);
    // With every leaf in memory each is written once; with 4 frames, over and over.
    assert_eq!(large.stats.leaf_writes, large.leaves);
    assert_eq!(large.stats.leaf_reads, 0);
    assert!(small.stats.leaf_writes > 10 * small.leaves, "{small:?}");
    assert!(
        small.write_amplification() > 10.0 * large.write_amplification(),
        "{small:?} {large:?}"
    );
    // Leaves of tuples hold 170 entries to pointers' 255: more leaves for the same inserts.
    let clustered = check_btree(&keys, 10_000, Entries::Tuples).unwrap();
    assert!(
        clustered.leaves * 170 >= 60_000 && clustered.leaves > large.leaves,
        "{clustered:?} {large:?}"
    );
}

/// Write amplification is counted alike for both indexes: bytes written per byte of the
/// table, and the pages those writes touched.
#[test]
fn write_amplification_counts_bytes_and_pages_alike() {
    let keys = shuffled((0..100_000u64).map(|i| i * 13).collect(), 9);
    let dir = tempfile::tempdir().unwrap();
    let table = table_of(dir.path(), &keys);
    let budget = MemoryBudget::unlimited();
    let params = PartitionParams::default();
    let (index, report) =
        build(&table, &dir.path().join("u.idx"), &params, &budget, |_| {}).unwrap();
    let record = UnsortedRecord::partition_build(&index, &report, 0);
    // Every tuple is written once, 8 at a time: a page (or two) each flush.
    assert!(record.write_amplification() >= 1.0, "{record:?}");
    assert!(record.write_amplification() < 1.1, "{record:?}");
    let flushes = report.write_calls - 2;
    assert!(flushes >= 100_000 / 8, "{report:?}");
    assert!(report.pages_written >= flushes, "{report:?}");
    assert!(
        report.pages_written <= 2 * flushes + record.file_bytes / 4096,
        "{report:?}"
    );
    assert!(
        record.page_write_amplification() > 16.0 * record.write_amplification(),
        "{record:?}"
    );
    // The file holds the overflow pages too.
    assert_eq!(
        record.file_bytes,
        std::fs::metadata(dir.path().join("u.idx")).unwrap().len()
    );
    assert!(record.file_bytes > 4096 * (1 + record.pages), "{record:?}");
    assert!(
        record.pages > record.partitions && record.overflowed_partitions > 0,
        "{record:?}"
    );
    let tree = dir.path().join("u.bti");
    let built = btree::build(&table, &tree, Entries::Pointers, &budget, |_| {}).unwrap();
    let record = UnsortedRecord::btree_build(&built, Entries::Pointers, 0, 0);
    assert_eq!(
        record.write_amplification(),
        built.stats.bytes_written as f64 / 1_600_000.0
    );
    assert_eq!(
        record.pages_written,
        built.stats.leaf_writes + record.file_bytes.div_ceil(4096) - built.leaves
    );
}

#[test]
fn damaged_btree_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys = shuffled((0..3_000u64).collect(), 4);
    let table = table_of(dir.path(), &keys);
    let out = dir.path().join("u.bti");
    btree::build(
        &table,
        &out,
        Entries::Pointers,
        &MemoryBudget::unlimited(),
        |_| {},
    )
    .unwrap();
    let good = std::fs::read(&out).unwrap();
    let damaged = dir.path().join("d.bti");
    let open = |bytes: &[u8]| {
        std::fs::write(&damaged, bytes).unwrap();
        btree::InsertedBTree::open(&damaged, 2)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    assert!(open(&good[..good.len() - 1]).contains("d.bti"));
    let mut flipped = good.clone();
    flipped[17] ^= 1;
    assert!(open(&flipped).contains("header checksum"));
    let mut flipped = good.clone();
    let last = flipped.len() - 2;
    flipped[last] ^= 1;
    assert!(open(&flipped).contains("checksum mismatch"));
    let mut foreign = good.clone();
    foreign[..8].copy_from_slice(b"LIDXPRT\0");
    assert!(open(&foreign).contains("wrong magic"));
    // A flipped byte in a leaf is found when the leaf is read.
    let mut flipped = good;
    flipped[4096 + 40] ^= 1;
    std::fs::write(&damaged, &flipped).unwrap();
    let mut tree = btree::InsertedBTree::open(&damaged, 2).unwrap();
    let err = tree.scan_from((0, 0), |_, _| true).unwrap_err().to_string();
    assert!(err.contains("checksum"), "{err}");
    // A budget too small is refused before anything is written, naming the smallest.
    let err = btree::build(
        &table,
        &dir.path().join("x.bti"),
        Entries::Pointers,
        &MemoryBudget::new(10_000),
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(&btree::min_build_memory(3_000, Entries::Pointers).to_string()),
        "{err}"
    );
    assert!(!dir.path().join("x.bti").exists());
}

/// The nested-loop join of two key lists whose values are [`value_at`] their positions,
/// sorted.
fn nested_loop(outer: &[u64], inner: &[u64]) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    for (i, &o) in outer.iter().enumerate() {
        for (j, &k) in inner.iter().enumerate() {
            if o == k {
                out.push((o, value_at(i as u64), value_at(j as u64)));
            }
        }
    }
    out.sort_unstable();
    out
}

fn small_keys() -> impl Strategy<Value = Vec<u64>> {
    let key = prop_oneof![Just(0u64), Just(u64::MAX), 0u64..60, any::<u64>()];
    prop_oneof![
        prop::collection::vec(key, 0..700),
        (0u64..3, 1usize..300).prop_map(|(k, n)| vec![k; n]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Both unsorted joins give the nested loop's multiset, in key order, whatever each
    /// side's index holds; a side fetches from its table exactly when it holds pointers.
    #[test]
    fn unsorted_joins_equal_the_nested_loop(
        outer in small_keys(),
        inner in small_keys(),
        fraction in prop_oneof![Just(0.01), Just(0.5)],
        seed in any::<u64>(),
        entries in (any_entries(), any_entries()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let want = nested_loop(&outer, &inner);
        let (r, s) = (table_named(dir.path(), "r.tbl", &outer), table_named(dir.path(), "s.tbl", &inner));
        let params = |entries| PartitionParams { entries, sample_fraction: fraction, seed, partition_tuples: 16, ..PartitionParams::default() };
        let budget = MemoryBudget::unlimited();
        build(&r, &dir.path().join("r.idx"), &params(entries.0), &budget, |_| {}).unwrap();
        build(&s, &dir.path().join("s.idx"), &params(entries.1), &budget, |_| {}).unwrap();
        let (rf, sf) = (
            PartitionFile::open(&dir.path().join("r.idx")).unwrap(),
            PartitionFile::open(&dir.path().join("s.idx")).unwrap(),
        );
        let mut got: Vec<(u64, u64, u64)> = Vec::new();
        let stats = crate::join::unclustered::partition_join((&rf, &sf), (&r, &s), crate::storage::ReadMode::Buffered, &mut got).unwrap();
        prop_assert!(got.is_sorted_by_key(|t| t.0), "not in key order");
        prop_assert_eq!(stats.join.output, got.len() as u64);
        prop_assert!(stats.partitions_read.1 <= sf.index().partitions(), "an inner partition read twice");
        let fetched = (stats.fetch_io.0.reads > 0, stats.fetch_io.1.reads > 0);
        let matched = !want.is_empty();
        prop_assert_eq!(fetched, (matched && entries.0 == Entries::Pointers, matched && entries.1 == Entries::Pointers));
        got.sort_unstable();
        prop_assert_eq!(&got, &want);

        btree::build(&r, &dir.path().join("r.bti"), entries.0, &budget, |_| {}).unwrap();
        btree::build(&s, &dir.path().join("s.bti"), entries.1, &budget, |_| {}).unwrap();
        let mut rt = btree::InsertedBTree::open(&dir.path().join("r.bti"), 2).unwrap();
        let mut st = btree::InsertedBTree::open(&dir.path().join("s.bti"), 2).unwrap();
        let mut got: Vec<(u64, u64, u64)> = Vec::new();
        let stats = crate::join::unclustered::btree_join(&mut rt, &r, &mut st, &s, crate::storage::ReadMode::Buffered, &mut got).unwrap();
        prop_assert!(got.is_sorted_by_key(|t| t.0), "not in key order");
        prop_assert_eq!(stats.output, got.len() as u64);
        let fetched = (stats.outer_io.reads > 0, stats.inner_io.reads > 0);
        prop_assert_eq!(fetched, (matched && entries.0 == Entries::Pointers, matched && entries.1 == Entries::Pointers));
        got.sort_unstable();
        prop_assert_eq!(&got, &want);

        // The two tables and four indexes.
        prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 6);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// The learned sort, the B+tree sort and the external merge sort write the same bytes:
    /// all three are stable.
    #[test]
    fn three_sorts_write_the_same_table(keys in keys_strategy(), seed in any::<u64>()) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Values that do not follow the keys' order, so that only stability fixes the output.
        let path = d.join("u.tbl");
        let mut w = TableWriter::create(&path).unwrap();
        for (i, &key) in shuffled(keys, seed).iter().enumerate() {
            w.push(Tuple { key, value: crate::storage::table::key_hash(i as u64) }).unwrap();
        }
        w.finish().unwrap();
        let input = Table::open(&path).unwrap();
        let options = crate::sort::SortOptions {
            scratch_dir: d.to_path_buf(),
            budget: MemoryBudget::new(crate::sort::min_sort_memory()),
        };
        crate::sort::sort_table(&input, &d.join("external.tbl"), &options, |_, _| {}).unwrap();
        let budget = MemoryBudget::new(64 << 20);
        let params = PartitionParams { seed, ..PartitionParams::default() };
        // In memory (the table fits the budget twice over), and through a partitions file.
        sort::learned_sort(&input, &d.join("learned.tbl"), &params, d, &budget, |_| {}).unwrap();
        let small = MemoryBudget::new(1 << 20);
        sort::learned_sort(&input, &d.join("learned_file.tbl"), &params, d, &small, |_| {}).unwrap();
        prop_assert_eq!(small.used(), 0);
        sort::btree_sort(&input, &d.join("btree.tbl"), d, &budget, crate::storage::ReadMode::Buffered, |_| {}).unwrap();
        prop_assert_eq!(budget.used(), 0);
        let external = std::fs::read(d.join("external.tbl")).unwrap();
        prop_assert!(external == std::fs::read(d.join("learned.tbl")).unwrap(), "learned sort differs");
        prop_assert!(external == std::fs::read(d.join("learned_file.tbl")).unwrap(), "learned sort through a file differs");
        prop_assert!(external == std::fs::read(d.join("btree.tbl")).unwrap(), "B+tree sort differs");
        // Only the five tables are left: scratch files are gone.
        prop_assert_eq!(std::fs::read_dir(d).unwrap().count(), 5);
    }
}

/// A key repeated past the budget fills one partition larger than memory: the learned sort
/// sorts it on disk and still writes the external sort's bytes, within its budget.
#[test]
fn a_partition_larger_than_memory_is_sorted_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 200_000u64;
    // 90% one key (values in input order), the rest spread.
    let keys: Vec<u64> = (0..n)
        .map(|i| {
            if i % 10 == 0 {
                crate::storage::table::key_hash(i)
            } else {
                1 << 40
            }
        })
        .collect();
    let path = d.join("u.tbl");
    let mut w = TableWriter::create(&path).unwrap();
    for (i, &key) in shuffled(keys, 7).iter().enumerate() {
        w.push(Tuple {
            key,
            value: i as u64,
        })
        .unwrap();
    }
    w.finish().unwrap();
    let input = Table::open(&path).unwrap();
    let budget = MemoryBudget::new(1 << 20);
    let report = sort::learned_sort(
        &input,
        &d.join("learned.tbl"),
        &PartitionParams::default(),
        d,
        &budget,
        |_| {},
    )
    .unwrap();
    assert!(report.spilled_partitions >= 1, "{report:?}");
    assert_eq!(budget.used(), 0);
    assert!(budget.peak() <= 1 << 20);
    let options = crate::sort::SortOptions {
        scratch_dir: d.to_path_buf(),
        budget: MemoryBudget::new(1 << 20),
    };
    crate::sort::sort_table(&input, &d.join("external.tbl"), &options, |_, _| {}).unwrap();
    assert!(
        std::fs::read(d.join("external.tbl")).unwrap()
            == std::fs::read(d.join("learned.tbl")).unwrap(),
        "the learned sort's bytes differ from the external sort's"
    );
    // The input and the two outputs: every scratch file is gone.
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 3);
}
