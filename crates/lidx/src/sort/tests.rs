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
        prop_assert_eq!(report.tuples, keys.len() as u64);
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
