//! SQL over lidx tables against simple references: every join, through DataFusion's hash
//! join or the learned INLJ, gives a nested-loop join's rows; scans with key bounds give the
//! rows a filter over every tuple gives; the cost model's choice shows in the plan.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use datafusion::prelude::SessionContext;
use lidx::index::{AnyIndex, AnyParams, IndexKind, file as index_file};
use lidx::storage::{ReadMode, TableWriter, Tuple};
use lidx_datafusion::message;
use lidx_datafusion::rule::IndexJoin;
use lidx_datafusion::session::{SqlOptions, TableFile, context, register};
use lidx_datafusion::table::IndexSource;
use proptest::prelude::*;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Writes `keys` as a table, tuple `i` holding value `salt + i`.
fn write_table(path: &Path, keys: &[u64], salt: u64) {
    let mut w = TableWriter::create(path).unwrap();
    for (i, &key) in keys.iter().enumerate() {
        w.push(Tuple {
            key,
            value: salt + i as u64,
        })
        .unwrap();
    }
    w.finish().unwrap();
}

/// Writes `keys` (values `salt + i`) as a Parquet file of columns `key`, `value`.
fn write_parquet(path: &Path, keys: &[u64], salt: u64) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::UInt64, false),
        Field::new("value", DataType::UInt64, false),
    ]));
    let values: Vec<u64> = (0..keys.len() as u64).map(|i| salt + i).collect();
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(UInt64Array::from(keys.to_vec())),
            Arc::new(UInt64Array::from(values)),
        ],
    )
    .unwrap();
    let mut w = ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// Every (key, outer value, inner value) of equal keys, sorted.
fn nested_loop(outer: &[u64], inner: &[u64]) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for (i, &a) in outer.iter().enumerate() {
        for (j, &b) in inner.iter().enumerate() {
            if a == b {
                out.push(vec![a, 1_000_000 + i as u64, 2_000_000 + j as u64]);
            }
        }
    }
    out.sort_unstable();
    out
}

/// The rows of `batches`, every column `UInt64` (or `Int64`, for counts), sorted.
fn rows(batches: &[RecordBatch]) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            out.push(
                b.columns()
                    .iter()
                    .map(|c| {
                        if let Some(a) = c.as_any().downcast_ref::<UInt64Array>() {
                            a.value(r)
                        } else {
                            let a = c
                                .as_any()
                                .downcast_ref::<datafusion::arrow::array::Int64Array>()
                                .unwrap();
                            a.value(r) as u64
                        }
                    })
                    .collect(),
            );
        }
    }
    out.sort_unstable();
    out
}

/// The physical plan of `sql` and the rows it gives.
async fn run(ctx: &SessionContext, sql: &str) -> (String, Vec<Vec<u64>>) {
    let df = ctx.sql(sql).await.unwrap();
    let plan: Arc<dyn ExecutionPlan> = df.create_physical_plan().await.unwrap();
    let text = displayable(plan.as_ref()).indent(true).to_string();
    let batches = collect(plan, ctx.task_ctx()).await.unwrap();
    (text, rows(&batches))
}

/// A session of `mode` with `r` (outer keys) and `s` (inner keys, indexed) registered.
async fn session(dir: &Path, mode: IndexJoin, threads: usize) -> SessionContext {
    let ctx = context(&SqlOptions {
        index_join: mode,
        threads,
        io_depth: 4,
        ..SqlOptions::default()
    });
    let none = IndexSource::None;
    register(&ctx, "r", &dir.join("r.tbl"), &none, ReadMode::Buffered)
        .await
        .unwrap();
    let indexed = IndexSource::Build(AnyParams::default_for(IndexKind::Pgm));
    let kind = register(&ctx, "s", &dir.join("s.tbl"), &indexed, ReadMode::Buffered)
        .await
        .unwrap();
    assert_eq!(kind, TableFile::Lidx { indexed: true });
    ctx
}

/// Sorted keys with duplicate runs, 0 and u64::MAX, or spread over all of u64.
fn sorted_keys() -> impl Strategy<Value = Vec<u64>> {
    let small = prop_oneof![
        Just(0u64),
        Just(1),
        Just(2),
        Just(u64::MAX - 1),
        Just(u64::MAX)
    ];
    prop_oneof![
        prop::collection::vec(small, 0..600),
        prop::collection::vec(0u64..50, 0..900),
        prop::collection::vec(any::<u64>(), 0..400),
        prop::collection::vec(0u64..100_000, 0..3000),
    ]
    .prop_map(|mut v| {
        v.sort_unstable();
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Hash join and learned INLJ, either side first, sorted or shuffled outer tables, on
    /// one and two threads: the nested loop's rows, and the plan holds the operator asked for.
    #[test]
    fn every_join_gives_the_nested_loop(outer in sorted_keys(), inner in sorted_keys(), shuffle in any::<bool>(), seed in any::<u64>(), threads in 1usize..3) {
        let dir = tempfile::tempdir().unwrap();
        let mut outer = outer;
        if shuffle {
            use rand::{SeedableRng, seq::SliceRandom};
            outer.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
        }
        write_table(&dir.path().join("r.tbl"), &outer, 1_000_000);
        write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
        let want = nested_loop(&outer, &inner);
        runtime().block_on(async {
            for mode in [IndexJoin::Off, IndexJoin::Always] {
                let ctx = session(dir.path(), mode, threads).await;
                for sql in [
                    "SELECT r.key, r.value, s.value FROM r JOIN s ON r.key = s.key",
                    "SELECT s.key, r.value, s.value FROM s JOIN r ON s.key = r.key",
                    "SELECT r.key, r.value, s.value FROM s, r WHERE r.key = s.key",
                ] {
                    let (plan, got) = run(&ctx, sql).await;
                    assert_eq!(got, want, "{sql} {mode:?}\n{plan}");
                    assert_eq!(plan.contains("LearnedInlj"), mode == IndexJoin::Always, "{plan}");
                }
                // Projections that keep one side's columns only, and aggregates.
                let (_, got) = run(&ctx, "SELECT s.value FROM r JOIN s ON r.key = s.key").await;
                let mut values: Vec<Vec<u64>> = want.iter().map(|w| vec![w[2]]).collect();
                values.sort_unstable();
                assert_eq!(got, values);
                let (_, got) = run(&ctx, "SELECT count(*) FROM r JOIN s ON r.key = s.key").await;
                assert_eq!(got, vec![vec![want.len() as u64]]);
            }
        });
    }

    /// A sorted table's scan with bounds on the key reads the rows a filter over every tuple
    /// keeps, through the index or without one.
    #[test]
    fn key_bounds_give_the_filtered_rows(keys in sorted_keys(), a in any::<u64>(), b in any::<u64>(), pick in 0usize..4) {
        let dir = tempfile::tempdir().unwrap();
        write_table(&dir.path().join("r.tbl"), &keys, 1_000_000);
        write_table(&dir.path().join("s.tbl"), &keys, 2_000_000);
        // Near the keys as often as anywhere.
        let near = |x: u64| if keys.is_empty() || x.is_multiple_of(2) { x } else { keys[(x as usize / 2) % keys.len()] };
        let (lo, hi) = (near(a).min(near(b)), near(a).max(near(b)));
        let (sql, keep): (String, Box<dyn Fn(u64) -> bool>) = match pick {
            0 => (format!("key BETWEEN {lo} AND {hi}"), Box::new(move |k| lo <= k && k <= hi)),
            1 => (format!("key > {lo} AND key <= {hi}"), Box::new(move |k| lo < k && k <= hi)),
            2 => (format!("key = {lo}"), Box::new(move |k| k == lo)),
            _ => (format!("key < {hi}"), Box::new(move |k| k < hi)),
        };
        runtime().block_on(async {
            let ctx = session(dir.path(), IndexJoin::Off, 2).await;
            for (table, salt) in [("r", 1_000_000u64), ("s", 2_000_000)] {
                let (plan, got) = run(&ctx, &format!("SELECT key, value FROM {table} WHERE {sql}")).await;
                let mut want: Vec<Vec<u64>> = keys.iter().enumerate().filter(|(_, k)| keep(**k)).map(|(i, &k)| vec![k, salt + i as u64]).collect();
                want.sort_unstable();
                assert_eq!(got, want, "{table} WHERE {sql}\n{plan}");
            }
        });
    }
}

#[test]
fn the_cost_model_looks_up_few_keys_and_hashes_many() {
    let dir = tempfile::tempdir().unwrap();
    let inner: Vec<u64> = (0..200_000u64).map(|i| i * 7).collect();
    write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
    runtime().block_on(async {
        // 20 outer keys against 200,000: a few window reads beat reading the inner table.
        let few: Vec<u64> = inner.iter().step_by(10_000).copied().collect();
        write_table(&dir.path().join("r.tbl"), &few, 1_000_000);
        let ctx = session(dir.path(), IndexJoin::Auto, 2).await;
        let sql = "SELECT r.key, r.value, s.value FROM r JOIN s ON r.key = s.key";
        let (plan, got) = run(&ctx, sql).await;
        assert!(plan.contains("LearnedInlj"), "{plan}");
        assert!(plan.contains("chosen for 20 outer rows"), "{plan}");
        assert_eq!(got, nested_loop(&few, &inner));
        // As many outer keys as inner ones: scanning and hashing wins.
        write_table(&dir.path().join("r.tbl"), &inner, 1_000_000);
        let ctx = session(dir.path(), IndexJoin::Auto, 2).await;
        let (plan, got) = run(&ctx, "SELECT count(*) FROM r JOIN s ON r.key = s.key").await;
        assert!(
            !plan.contains("LearnedInlj") && plan.contains("HashJoinExec"),
            "{plan}"
        );
        assert_eq!(got, vec![vec![inner.len() as u64]]);
        // A filter DataFusion cannot estimate leaves the hash join where it stands.
        let (plan, _) = run(
            &ctx,
            "SELECT count(*) FROM r JOIN s ON r.key = s.key WHERE r.value % 1000 = 7",
        )
        .await;
        assert!(!plan.contains("LearnedInlj"), "{plan}");
    });
}

#[test]
fn the_learned_join_reads_only_the_windows_of_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let inner: Vec<u64> = (0..256 * 400u64).collect();
    write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
    // Ten keys, each in a block of its own.
    let outer: Vec<u64> = (0..10u64).map(|i| i * 256 * 40 + 3).collect();
    write_table(&dir.path().join("r.tbl"), &outer, 1_000_000);
    runtime().block_on(async {
        let ctx = session(dir.path(), IndexJoin::Always, 1).await;
        let df = ctx
            .sql("SELECT count(*) FROM r JOIN s ON r.key = s.key")
            .await
            .unwrap();
        let plan = df.create_physical_plan().await.unwrap();
        let batches = collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
        assert_eq!(rows(&batches), vec![vec![10]]);
        let mut found = None;
        datafusion::physical_plan::accept(
            plan.as_ref(),
            &mut Finder(&mut found, "LearnedInljExec"),
        )
        .unwrap();
        let metrics = found.unwrap();
        let value = |name: &str| {
            metrics
                .iter()
                .filter(|m| m.value().name() == name)
                .map(|m| m.value().as_usize())
                .sum::<usize>()
        };
        assert_eq!(value("lookups"), 10);
        // PGM's windows of 2 * 64 + 1 positions span one or two blocks each.
        let blocks = value("blocks_read");
        assert!((10..=20).contains(&blocks), "{blocks} blocks");
    });
}

/// Finds the metrics of the first operator named `.1`.
struct Finder<'a>(
    &'a mut Option<datafusion::physical_plan::metrics::MetricsSet>,
    &'static str,
);

impl datafusion::physical_plan::ExecutionPlanVisitor for Finder<'_> {
    type Error = datafusion::error::DataFusionError;
    fn pre_visit(&mut self, plan: &dyn ExecutionPlan) -> Result<bool, Self::Error> {
        if plan.name() == self.1 && self.0.is_none() {
            *self.0 = plan.metrics();
        }
        Ok(true)
    }
}

#[test]
fn parquet_outer_tables_join_lidx_tables_either_way() {
    let dir = tempfile::tempdir().unwrap();
    let inner: Vec<u64> = (0..5000u64).map(|i| i * 3).collect();
    let outer: Vec<u64> = (0..700u64).map(|i| (i * 37) % 16_000).collect();
    write_table(&dir.path().join("s.tbl"), &inner, 2_000_000);
    write_table(&dir.path().join("r.tbl"), &[], 0);
    write_parquet(&dir.path().join("p.parquet"), &outer, 1_000_000);
    let want = nested_loop(&outer, &inner);
    runtime().block_on(async {
        for mode in [IndexJoin::Off, IndexJoin::Always] {
            let ctx = session(dir.path(), mode, 2).await;
            let kind = register(
                &ctx,
                "p",
                &dir.path().join("p.parquet"),
                &IndexSource::None,
                ReadMode::Buffered,
            )
            .await
            .unwrap();
            assert_eq!(kind, TableFile::Parquet);
            let (plan, got) = run(
                &ctx,
                "SELECT p.key, p.value, s.value FROM p JOIN s ON p.key = s.key",
            )
            .await;
            assert_eq!(got, want, "{plan}");
            assert_eq!(plan.contains("LearnedInlj"), mode == IndexJoin::Always);
        }
    });
}

#[test]
fn a_join_output_table_reads_as_three_columns() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tbl");
    let mut w = TableWriter::create_output(&out).unwrap();
    let triples: Vec<(u64, u64, u64)> = (0..1000u64).map(|i| (i / 3, i, 5000 - i)).collect();
    for &(key, outer, inner) in &triples {
        w.push_output(lidx::storage::format::OutputTuple { key, outer, inner })
            .unwrap();
    }
    w.finish().unwrap();
    runtime().block_on(async {
        let ctx = context(&SqlOptions::default());
        register(&ctx, "o", &out, &IndexSource::None, ReadMode::Buffered)
            .await
            .unwrap();
        let (_, got) = run(&ctx, "SELECT key, outer_value, inner_value FROM o").await;
        let want: Vec<Vec<u64>> = triples.iter().map(|&(a, b, c)| vec![a, b, c]).collect();
        assert_eq!(got, want);
        // An index is built where a table can have one: not over a join's output.
        let kind = register(
            &ctx,
            "x",
            &out,
            &IndexSource::default_build(),
            ReadMode::Buffered,
        )
        .await
        .unwrap();
        assert_eq!(kind, TableFile::Lidx { indexed: false });
        let saved = IndexSource::Saved(dir.path().join("any.idx"));
        let err = register(&ctx, "y", &out, &saved, ReadMode::Buffered)
            .await
            .unwrap_err();
        assert!(message(&err).contains("holds a join's output"), "{err}");
    });
}

#[test]
fn files_that_are_not_tables_and_indexes_of_other_tables_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.txt");
    std::fs::write(&keys, "1\n2\n").unwrap();
    write_table(&dir.path().join("s.tbl"), &[1, 2, 3], 0);
    write_table(&dir.path().join("t.tbl"), &[1, 2, 3, 4], 0);
    write_table(&dir.path().join("u.tbl"), &[3, 1, 2], 0);
    let idx = dir.path().join("t.idx");
    let t_keys = [1u64, 2, 3, 4];
    let index = AnyIndex::build(&t_keys, &AnyParams::default_for(IndexKind::Pgm)).unwrap();
    index_file::save(&idx, &index, &index_file::KeysFingerprint::of(&t_keys)).unwrap();
    runtime().block_on(async {
        let ctx = context(&SqlOptions::default());
        let none = IndexSource::None;
        let err = register(&ctx, "k", &keys, &none, ReadMode::Buffered)
            .await
            .unwrap_err();
        assert!(
            message(&err).contains("keys.txt") && message(&err).contains("not a table"),
            "{err}"
        );
        let missing = dir.path().join("missing.tbl");
        let err = register(&ctx, "m", &missing, &none, ReadMode::Buffered)
            .await
            .unwrap_err();
        assert!(message(&err).contains("missing.tbl"), "{err}");
        let saved = IndexSource::Saved(idx.clone());
        let err = register(
            &ctx,
            "s",
            &dir.path().join("s.tbl"),
            &saved,
            ReadMode::Buffered,
        )
        .await
        .unwrap_err();
        assert!(message(&err).contains("s.tbl"), "{}", message(&err));
        register(
            &ctx,
            "t",
            &dir.path().join("t.tbl"),
            &saved,
            ReadMode::Buffered,
        )
        .await
        .unwrap();
        let err = register(
            &ctx,
            "u",
            &dir.path().join("u.tbl"),
            &saved,
            ReadMode::Buffered,
        )
        .await
        .unwrap_err();
        assert!(message(&err).contains("not sorted"), "{}", message(&err));
        let kind = register(
            &ctx,
            "v",
            &dir.path().join("u.tbl"),
            &IndexSource::default_build(),
            ReadMode::Buffered,
        )
        .await
        .unwrap();
        assert_eq!(kind, TableFile::Lidx { indexed: false });
    });
}
