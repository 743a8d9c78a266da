use proptest::prelude::*;

use super::*;

/// Writes `keys` as a table in `dir` whose values are a hash of the keys' input positions:
/// among equal keys only a stable sort restores their input order, and ordering by value
/// would not.
fn table_of(dir: &Path, keys: &[u64]) -> Table {
    let path = dir.join("in.tbl");
    let mut w = TableWriter::create(&path).unwrap();
    for (i, &key) in keys.iter().enumerate() {
        w.push(Tuple {
            key,
            value: crate::storage::table::key_hash(i as u64),
        })
        .unwrap();
    }
    w.finish().unwrap();
    Table::open(&path).unwrap()
}

fn tuples_of(path: &Path) -> Vec<Tuple> {
    let mut out = Vec::new();
    Table::open(path)
        .unwrap()
        .scan(|c| {
            out.extend_from_slice(c);
            Ok(())
        })
        .unwrap();
    out
}

fn sort_with(keys: &[u64], limit: u64) -> (Vec<Tuple>, SortReport) {
    let dir = tempfile::tempdir().unwrap();
    let input = table_of(dir.path(), keys);
    let out = dir.path().join("out.tbl");
    let options = SortOptions {
        scratch_dir: dir.path().to_path_buf(),
        budget: MemoryBudget::new(limit),
    };
    let report = sort_table(&input, &out, &options, |_, _| {}).unwrap();
    assert!(Table::open(&out).unwrap().header().sorted);
    assert_eq!(options.budget.used(), 0, "every reservation given back");
    assert!(report.peak_reserved <= limit);
    // Only the two tables are left: the runs were unnamed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    (tuples_of(&out), report)
}

fn reference(keys: &[u64]) -> Vec<Tuple> {
    let mut v: Vec<Tuple> = keys
        .iter()
        .enumerate()
        .map(|(i, &key)| Tuple {
            key,
            value: crate::storage::table::key_hash(i as u64),
        })
        .collect();
    v.sort_by_key(|t| t.key);
    v
}

fn keys_strategy() -> impl Strategy<Value = Vec<u64>> {
    let key = prop_oneof![Just(0u64), Just(u64::MAX), 0u64..50, any::<u64>(),];
    prop_oneof![
        prop::collection::vec(key.clone(), 0..300),
        prop::collection::vec(key, 5_000..25_000),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Under budgets from the smallest that works (several merge passes) to unlimited (one
    /// run in memory), the output is the stable sort of the input.
    #[test]
    fn external_sort_is_the_stable_sort(
        keys in keys_strategy(),
        limit in prop_oneof![
            Just(min_sort_memory()),
            Just(min_sort_memory() * 2),
            Just(1u64 << 20),
            Just(u64::MAX),
        ],
    ) {
        let (sorted, report) = sort_with(&keys, limit);
        prop_assert_eq!(sorted, reference(&keys));
        prop_assert_eq!(report.records, keys.len() as u64);
        prop_assert!(report.bytes_read >= (keys.len() * TUPLE_SIZE) as u64);
    }
}

#[test]
fn a_small_budget_takes_several_runs_and_passes() {
    let keys: Vec<u64> = (0..40_000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 1000)
        .collect();
    let (sorted, report) = sort_with(&keys, min_sort_memory());
    assert_eq!(sorted, reference(&keys));
    assert!(report.runs >= 4, "{report:?}");
    assert!(report.merge_passes >= 2, "{report:?}");
    assert_eq!(report.fan_in, 2, "{report:?}");
    // The input once, every run once per pass.
    let data = (keys.len() * TUPLE_SIZE) as u64;
    assert_eq!(
        report.bytes_read,
        data * (1 + u64::from(report.merge_passes))
    );

    let (_, roomy) = sort_with(&keys, u64::MAX);
    assert_eq!((roomy.runs, roomy.merge_passes), (1, 0), "{roomy:?}");
}

#[test]
fn a_budget_too_small_is_refused_with_the_smallest_that_works() {
    let dir = tempfile::tempdir().unwrap();
    let input = table_of(dir.path(), &[3, 1, 2]);
    let out = dir.path().join("out.tbl");
    let options = SortOptions {
        scratch_dir: dir.path().to_path_buf(),
        budget: MemoryBudget::new(min_sort_memory() - 1),
    };
    let err = sort_table(&input, &out, &options, |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains(&min_sort_memory().to_string()), "{err}");
    assert!(!out.exists());
}

/// Sorts `keys` as records whose payloads (`width` bytes) spell each record's input
/// position, through a [`RecordSorter`] within `limit` bytes.
fn sort_records(keys: &[u64], width: usize, limit: u64) -> (Vec<(u64, Vec<u8>)>, SortReport) {
    let dir = tempfile::tempdir().unwrap();
    let options = SortOptions {
        scratch_dir: dir.path().to_path_buf(),
        budget: MemoryBudget::new(limit),
    };
    let mut sorter = RecordSorter::new(width, u64::MAX, &options).unwrap();
    for (i, &key) in keys.iter().enumerate() {
        sorter.push(key, &payload(i, width)).unwrap();
    }
    let mut sorted = sorter.finish(0, |_| {}).unwrap();
    let mut out = Vec::new();
    while let Some((key, bytes)) = sorted.next_record().unwrap() {
        out.push((key, bytes.to_vec()));
    }
    assert_eq!(
        sorted.next_record().unwrap(),
        None,
        "a drained sort stays drained"
    );
    let report = *sorted.report();
    drop(sorted);
    assert_eq!(options.budget.used(), 0, "every reservation given back");
    assert!(options.budget.peak() <= limit);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no scratch file left"
    );
    (out, report)
}

/// `width` bytes that differ for every position (cycling where `width` < 8).
fn payload(position: usize, width: usize) -> Vec<u8> {
    let seed = crate::storage::table::key_hash(position as u64).to_le_bytes();
    (0..width).map(|i| seed[i % 8] ^ (i / 8) as u8).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Records of any width, narrower or wider than a tuple's value, come out as the
    /// stable sort of their input, from one run in memory to several merge passes.
    #[test]
    fn a_record_sort_is_the_stable_sort(
        keys in keys_strategy(),
        width in prop_oneof![Just(0usize), Just(3), Just(8), Just(9), Just(120), Just(4096), Just(70_000)],
        tight in any::<bool>(),
    ) {
        let limit = if tight { min_sort_memory_for(width) } else { 64 << 20 };
        // Entries of pages (4 KiB) need fewer of them to take several runs.
        let keys = &keys[..keys.len().min(if width > 1000 { 1_000 } else { 25_000 })];
        let (sorted, report) = sort_records(keys, width, limit);
        let mut reference: Vec<(u64, Vec<u8>)> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, payload(i, width)))
            .collect();
        reference.sort_by_key(|r| r.0);
        prop_assert_eq!(sorted, reference);
        prop_assert_eq!(report.records, keys.len() as u64);
        if report.runs > 1 {
            // Every run is written once and read once per pass.
            let data = keys.len() as u64 * (8 + width as u64);
            prop_assert_eq!(report.bytes_read, data * u64::from(report.merge_passes));
        }
    }
}

#[test]
fn wide_records_under_a_small_budget_take_several_passes() {
    let keys: Vec<u64> = (0..20_000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9) % 500)
        .collect();
    let (sorted, report) = sort_records(&keys, 256, min_sort_memory_for(256));
    assert!(sorted.windows(2).all(|w| w[0].0 <= w[1].0));
    assert!(report.runs >= 4, "{report:?}");
    assert!(report.merge_passes >= 2, "{report:?}");
}

#[test]
fn a_record_sorter_refuses_a_wrong_payload_and_a_budget_too_small() {
    let dir = tempfile::tempdir().unwrap();
    let options = SortOptions {
        scratch_dir: dir.path().to_path_buf(),
        budget: MemoryBudget::new(1 << 20),
    };
    let mut sorter = RecordSorter::new(16, 10, &options).unwrap();
    let err = sorter.push(1, &[0; 15]).unwrap_err().to_string();
    assert!(err.contains("15 bytes"), "{err}");
    let err = RecordSorter::new(1 << 20, 10, &options)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cannot sort"), "{err}");
    let small = SortOptions {
        budget: MemoryBudget::new(min_sort_memory_for(16) - 1),
        ..options
    };
    let err = RecordSorter::new(16, 10, &small).err().unwrap().to_string();
    assert!(err.contains(&min_sort_memory_for(16).to_string()), "{err}");
}

#[test]
fn a_finish_keeping_the_whole_budget_is_refused_not_looped() {
    let dir = tempfile::tempdir().unwrap();
    let limit = min_sort_memory_for(8);
    let options = SortOptions {
        scratch_dir: dir.path().to_path_buf(),
        budget: MemoryBudget::new(limit),
    };
    let mut sorter = RecordSorter::new(8, u64::MAX, &options).unwrap();
    for i in 0..10_000u64 {
        sorter
            .push(i.wrapping_mul(0x9e37_79b9) % 977, &i.to_le_bytes())
            .unwrap();
    }
    let err = sorter.finish(limit, |_| {}).err().unwrap().to_string();
    assert!(err.contains("cannot sort"), "{err}");
    assert_eq!(options.budget.used(), 0);
}

#[test]
fn a_budget_drained_by_another_user_still_sorts_in_the_smallest_runs() {
    let dir = tempfile::tempdir().unwrap();
    let options = SortOptions {
        scratch_dir: dir.path().to_path_buf(),
        budget: MemoryBudget::new(400_000),
    };
    let mut sorter = RecordSorter::new(8, u64::MAX, &options).unwrap();
    // Another user of the budget takes all that is left before the first record.
    let other = options
        .budget
        .reserve(options.budget.available(), "another user")
        .unwrap();
    let keys: Vec<u64> = (0..1_000u64).map(|i| (i * 7919) % 1000).collect();
    for (i, &k) in keys.iter().enumerate() {
        sorter.push(k, &(i as u64).to_le_bytes()).unwrap();
    }
    drop(other);
    let mut sorted = sorter.finish(0, |_| {}).unwrap();
    let mut n = 0;
    while sorted.next_record().unwrap().is_some() {
        n += 1;
    }
    let report = *sorted.report();
    let smallest = min_run_records_for_test(8);
    assert_eq!((n, report.run_records), (1_000, smallest), "{report:?}");
    // Full runs of the smallest size and no empty one.
    assert_eq!(report.runs, 1_000u64.div_ceil(smallest), "{report:?}");
    assert!(options.budget.peak() <= 400_000);
}

/// The smallest run buffer of 8-byte payloads: 4 KiB of 16-byte records.
fn min_run_records_for_test(payload: usize) -> u64 {
    (4096 / (8 + payload as u64)).max(2)
}

#[test]
fn an_unlimited_budget_and_an_unknown_count_start_small_and_grow() {
    let dir = tempfile::tempdir().unwrap();
    let options = SortOptions {
        scratch_dir: dir.path().to_path_buf(),
        budget: MemoryBudget::unlimited(),
    };
    let mut sorter = RecordSorter::new(8, u64::MAX, &options).unwrap();
    for i in (0..100_000u64).rev() {
        sorter.push(i, &i.to_le_bytes()).unwrap();
    }
    let mut sorted = sorter.finish(0, |_| {}).unwrap();
    let mut last = None;
    let mut n = 0;
    while let Some((key, _)) = sorted.next_record().unwrap() {
        assert!(last <= Some(key));
        last = Some(key);
        n += 1;
    }
    assert_eq!(n, 100_000);
    assert_eq!(sorted.report().runs, 1, "all in memory");
    assert!(
        options.budget.peak() < 64 << 20,
        "{}",
        options.budget.peak()
    );
}
