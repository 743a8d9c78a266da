//! `lidx sql`: a join through DataFusion gives `lidx join`'s count whichever join runs, the
//! cost model's pick shows in the plan, rows go out as CSV written whole, and bad input ends
//! in one error line naming the file or option.

#![cfg(feature = "sql")]
#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::path::Path;

mod common;

use common::{lidx, ok};

/// `s.tbl` of 200,000 keys, `r.tbl` a sample of every 10,000th, `all.tbl` all of them again,
/// and `s.idx` an index of `s.tbl`.
fn setup(d: &Path) {
    ok(
        d,
        &[
            "gen",
            "--dist",
            "lognormal",
            "--n",
            "200000",
            "--seed",
            "5",
            "--out",
            "s.keys",
        ],
    );
    ok(d, &["table", "build", "--keys", "s.keys", "--out", "s.tbl"]);
    ok(
        d,
        &[
            "gen",
            "--sample-of",
            "s.keys",
            "--ratio",
            "10000",
            "--out",
            "r.keys",
        ],
    );
    ok(d, &["table", "build", "--keys", "r.keys", "--out", "r.tbl"]);
    ok(
        d,
        &["table", "build", "--keys", "s.keys", "--out", "all.tbl"],
    );
    ok(
        d,
        &[
            "index", "build", "--table", "s.tbl", "--kind", "pgm", "--out", "s.idx",
        ],
    );
}

/// The count `lidx join` gives for `outer` with `s.tbl`.
fn join_count(d: &Path, outer: &str) -> String {
    let report = ok(
        d,
        &[
            "join",
            "--outer",
            outer,
            "--inner",
            "s.tbl",
            "--method",
            "hash",
            "--count-only",
            "--json",
        ],
    );
    let record: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
    record["output_tuples"].to_string()
}

#[test]
fn a_join_gives_lidx_joins_count_with_the_join_the_cost_model_picks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let count = "SELECT count(*) AS n FROM r JOIN s ON r.key = s.key";
    let tables = [
        "--table", "r=r.tbl", "--table", "s=s.tbl", "--index", "s=s.idx",
    ];
    let want = join_count(d, "r.tbl");
    for mode in ["auto", "on", "off"] {
        let mut args = vec!["sql", count, "--format", "csv", "--index-join", mode];
        args.extend(tables);
        assert_eq!(ok(d, &args), format!("n\n{want}\n"), "{mode}");
    }
    // 20 outer keys against 200,000: the model looks them up.
    let mut explain = vec!["sql", count, "--explain"];
    explain.extend(tables);
    let plan = ok(d, &explain);
    assert!(
        plan.contains("LearnedInlj") && plan.contains("chosen for 20 outer rows"),
        "{plan}"
    );
    // As many outer keys as inner: it hashes.
    let plan = ok(
        d,
        &[
            "sql",
            count,
            "--explain",
            "--table",
            "r=all.tbl",
            "--table",
            "s=s.tbl",
        ],
    );
    assert!(
        !plan.contains("LearnedInlj") && plan.contains("HashJoinExec"),
        "{plan}"
    );
    // --analyze shows the learned join's lookups.
    let mut analyze = vec!["sql", count, "--analyze", "--index-join", "on"];
    analyze.extend(tables);
    let plan = ok(d, &analyze);
    assert!(plan.contains("lookups=20"), "{plan}");
    // --json: the counts of the plan's operators.
    let record = |mode: &str| -> serde_json::Value {
        let mut args = vec!["sql", count, "--json", "--index-join", mode];
        args.extend(tables);
        serde_json::from_str(ok(d, &args).trim()).unwrap()
    };
    let on = record("on");
    assert_eq!(
        (on["rows"].as_u64(), on["learned_joins"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        (on["lookups"].as_u64(), on["hash_joins"].as_u64()),
        (Some(20), Some(0))
    );
    // The inner table is looked up, not scanned: only the outer table's one block is.
    let blocks = on["lookup_blocks"].as_u64().unwrap();
    assert!((20..=40).contains(&blocks), "{on}");
    assert_eq!(on["scan_blocks"].as_u64(), Some(1), "{on}");
    let off = record("off");
    assert_eq!(
        (off["learned_joins"].as_u64(), off["hash_joins"].as_u64()),
        (Some(0), Some(1))
    );
    // 200,000 inner tuples in 782 blocks, and the outer one.
    assert_eq!(off["scan_blocks"].as_u64(), Some(783), "{off}");
    assert_eq!(off["index_join"].as_str(), Some("off"));
}

#[test]
fn rows_are_written_whole_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    ok(
        d,
        &[
            "sql",
            "SELECT key, value FROM r ORDER BY key",
            "--table",
            "r=r.tbl",
            "--format",
            "csv",
            "--out",
            "rows.csv",
        ],
    );
    let text = std::fs::read_to_string(d.join("rows.csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first(), Some(&"key,value"));
    assert_eq!(lines.len(), 21, "{text}");
    let keys: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(keys.is_sorted());
}

/// Runs `lidx args` in `dir`, expects exit code 1 and one error line containing `want`,
/// and no file `left` behind.
fn fails(d: &Path, args: &[&str], want: &str) {
    let out = lidx().current_dir(d).args(args).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr:?}");
    assert!(
        lines[0].starts_with("lidx: error: ") && lines[0].contains(want),
        "{stderr}"
    );
    assert!(!d.join("out.csv").exists());
}

#[test]
fn bad_input_ends_in_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let q = "SELECT count(*) FROM r";
    fails(d, &["sql", q, "--table", "r=missing.tbl"], "missing.tbl");
    fails(d, &["sql", q, "--table", "r=s.keys"], "s.keys");
    fails(d, &["sql", q, "--table", "r"], "expected NAME=PATH");
    fails(
        d,
        &["sql", q, "--table", "r=r.tbl", "--table", "r=s.tbl"],
        "named twice",
    );
    fails(
        d,
        &["sql", q, "--table", "r=r.tbl", "--index", "x=s.idx"],
        "no --table x",
    );
    // An index of another table.
    fails(
        d,
        &["sql", q, "--table", "r=r.tbl", "--index", "r=s.idx"],
        "r.tbl",
    );
    fails(
        d,
        &[
            "sql",
            "SELECT nope FROM r",
            "--table",
            "r=r.tbl",
            "--out",
            "out.csv",
        ],
        "nope",
    );
    fails(
        d,
        &["sql", q, "--table", "r=r.tbl", "--out", "r.tbl"],
        "r.tbl",
    );
    let out = lidx()
        .current_dir(d)
        .args(["sql", q, "--table", "r=r.tbl", "--threads", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_table_exported_to_parquet_gives_the_same_rows_and_joins() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let said = ok(
        d,
        &[
            "table",
            "export",
            "--format",
            "parquet",
            "s.tbl",
            "--out",
            "s.parquet",
        ],
    );
    assert!(said.contains("exported 200000 tuples"), "{said}");
    let sums = "SELECT count(*) AS n, sum(key % 1000) AS k, sum(value) AS v FROM t";
    let of = |table: &str| ok(d, &["sql", sums, "--table", table, "--format", "csv"]);
    assert_eq!(of("t=s.tbl"), of("t=s.parquet"));
    // The Parquet file declares its order: DataFusion needs no sort to merge by key.
    let plan = ok(
        d,
        &[
            "sql",
            "SELECT key FROM t ORDER BY key",
            "--table",
            "t=s.parquet",
            "--explain",
        ],
    );
    assert!(!plan.contains("SortExec"), "{plan}");
    let join = "SELECT count(*) AS n FROM r JOIN p ON r.key = p.key";
    let counted = ok(
        d,
        &[
            "sql",
            join,
            "--table",
            "r=r.tbl",
            "--table",
            "p=s.parquet",
            "--format",
            "csv",
        ],
    );
    assert_eq!(counted, format!("n\n{}\n", join_count(d, "r.tbl")));
    // Statements that write are refused: rows go out through --out.
    fails(
        d,
        &[
            "sql",
            "COPY (SELECT * FROM t) TO 'out.csv'",
            "--table",
            "t=s.tbl",
        ],
        "not supported",
    );
    fails(
        d,
        &[
            "table", "export", "--format", "parquet", "s.tbl", "--out", "s.tbl",
        ],
        "s.tbl",
    );
}

#[test]
fn the_sql_join_study_runs_every_way_and_counts_what_each_read() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    lidx::storage::profile::assumed_ssd()
        .save(&d.join("p.json"))
        .unwrap();
    let out = ok(
        d,
        &[
            "experiment",
            "sql-join",
            "--n",
            "50k",
            "--sets",
            "lognormal,udense",
            "--ratios",
            "1,1000",
            "--repeat",
            "2",
            "--threads",
            "2",
            "--profile",
            "p.json",
            "--out-dir",
            "sj",
        ],
    );
    assert!(out.contains("| lognormal | 1000 |"), "{out}");
    let sj = d.join("sj");
    let mut reader = csv::Reader::from_path(sj.join("sql_join.csv")).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let rows: Vec<std::collections::HashMap<String, String>> = reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect();
    // 2 sets × 2 ratios × 2 repeats × 4 ways.
    assert_eq!(rows.len(), 2 * 2 * 2 * 4);
    let num = |row: &std::collections::HashMap<String, String>, c: &str| -> u64 {
        row[c]
            .parse()
            .unwrap_or_else(|e| panic!("{c}: {e}: {row:?}"))
    };
    for row in &rows {
        let (ratio, outer, inner) = (
            num(row, "ratio"),
            num(row, "outer_tuples"),
            num(row, "inner_tuples"),
        );
        assert_eq!((inner, outer), (50_000, 50_000 / ratio), "{row:?}");
        let seconds: f64 = row["query_s"].parse().unwrap();
        assert!(seconds.is_finite() && seconds >= 0.0);
        match row["way"].as_str() {
            "parquet" => {
                assert_eq!(row["learned_join"], "false");
                assert!(num(row, "parquet_bytes_read") > 0, "{row:?}");
                assert_eq!(num(row, "scan_blocks"), 0);
            }
            "lidx-off" => {
                assert_eq!(row["learned_join"], "false");
                // Both tables scanned whole.
                let blocks = 50_000u64.div_ceil(256) + outer.div_ceil(256);
                assert_eq!(num(row, "scan_blocks"), blocks, "{row:?}");
            }
            "lidx-on" => {
                assert_eq!(row["learned_join"], "true");
                assert_eq!(num(row, "lookups"), outer, "{row:?}");
                // The cost model's prediction, from the profile, not timed.
                let predicted: f64 = row["predicted_learned_s"].parse().unwrap();
                assert!(predicted > 0.0, "{row:?}");
                // Only the outer table is scanned.
                assert_eq!(num(row, "scan_blocks"), outer.div_ceil(256), "{row:?}");
            }
            "lidx-auto" => {}
            other => panic!("way {other}"),
        }
    }
    for set in ["lognormal", "udense"] {
        let png = std::fs::read(sj.join(format!("sql_join_{set}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
    }
    let summary = std::fs::read_to_string(sj.join("summary.md")).unwrap();
    assert!(
        summary.contains("| udense | 1 |") && summary.contains("verdict"),
        "{summary}"
    );
    assert!(!sj.join("data").exists(), "data left behind");
}
