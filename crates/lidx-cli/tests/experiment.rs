//! `lidx experiment join-sorted`, `indexes` and `unsorted` end to end at a small size,
//! and `lidx join --io-depth` against depth 1: every measurement's output checked against
//! what the inputs imply, every file the experiments promise present, no data left behind.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::collections::HashMap;
use std::path::Path;

mod common;

use common::{lidx, ok};

/// A storage profile in `dir`, so the experiments need not measure one. The figures do not
/// matter here, only that a profile exists; one measured beside the other tests would make
/// them depend on the disk's timing (a busy disk can read 1 MiB faster than 4 KiB, which
/// the profile's fit refuses), so it is lidx's assumed SSD.
fn profile(dir: &Path) {
    lidx::storage::profile::assumed_ssd()
        .save(&dir.join("p.json"))
        .unwrap();
}

/// Timing columns are reported, never judged (they depend on the machine and its load):
/// each of `columns` of `row` is a number, finite and not negative.
fn well_formed(row: &HashMap<String, String>, columns: &[&str]) {
    for &column in columns {
        let v: f64 = row[column]
            .parse()
            .unwrap_or_else(|e| panic!("{column}: {e}: {row:?}"));
        assert!(v.is_finite() && v >= 0.0, "{column}: {row:?}");
    }
}

fn read_csv(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// `lidx experiment EXPERIMENT --out-dir o ARGS` for each case: exit 1, an error starting
/// with `prefix` that names `want`, and no `o` left in `d`.
fn refused_before_any_output(d: &Path, experiment: &str, prefix: &str, cases: &[(&[&str], &str)]) {
    for &(args, want) in cases {
        let out = lidx()
            .current_dir(d)
            .args(["experiment", experiment, "--out-dir", "o"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with(prefix) && err.contains(want), "{err}");
        assert!(!d.join("o").exists(), "{args:?} left output");
    }
}

fn png(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.starts_with(b"\x89PNG"),
        "{} is no PNG",
        path.display()
    );
}

#[test]
fn join_sorted_runs_every_cell_and_every_join_matches_every_outer_key() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    profile(d);
    let out = ok(
        d,
        &[
            "experiment",
            "join-sorted",
            "--n",
            "20k",
            "--sets",
            "lognormal,udense",
            "--ratios",
            "1,100",
            "--windows",
            "256,1024",
            "--io-depths",
            "1,4",
            "--threads",
            "1,2",
            "--profile",
            "p.json",
            "--out-dir",
            "js",
        ],
    );
    assert!(out.contains("| lognormal | 100 |"), "{out}");
    assert!(out.contains("picked the measured fastest"), "{out}");
    let js = d.join("js");
    let rows = read_csv(&js.join("join_sorted.csv"));
    // 2 sets × 2 ratios × 2 thread counts × (merge and hash at 2 windows and large reads,
    // 2 indexes × 2 windows × 2 depths).
    assert_eq!(rows.len(), 2 * 2 * 2 * (2 * 3 + 2 * 2 * 2));
    for row in &rows {
        // The outer table is a sample of the distinct inner keys: each matches once.
        assert_eq!(row["output_tuples"], row["outer_tuples"], "{row:?}");
        let ratio: u64 = row["ratio"].parse().unwrap();
        let inner: u64 = row["inner_tuples"].parse().unwrap();
        let outer: u64 = row["outer_tuples"].parse().unwrap();
        assert_eq!(inner, 20_000);
        assert_eq!(outer, inner / ratio, "{row:?}");
        well_formed(row, &["join_s"]);
        // Modelled from the profile's costs, not timed.
        assert!(row["model_s"].parse::<f64>().unwrap() > 0.0, "{row:?}");
        assert!(!row["machine"].is_empty() && !row["device"].is_empty());
        if row["method"].starts_with("inlj:") {
            assert_eq!(row["lookups"], row["outer_tuples"], "{row:?}");
            let depth: u64 = row["io_depth"].parse().unwrap();
            assert_eq!(row["io_backend"] == "sync", depth == 1, "{row:?}");
            assert!(!row["index"].is_empty() && !row["window"].is_empty());
        } else {
            // Merge and hash scan both tables whole.
            assert!(row["inner_blocks"].parse::<u64>().unwrap() >= 20_000 / 256);
        }
    }
    let hdd = read_csv(&js.join("join_sorted_hdd_prediction.csv"));
    assert_eq!(hdd.len(), 2 * 2 * 3);
    assert!(hdd.iter().all(|r| r["profile"].contains("prediction")));
    for set in ["lognormal", "udense"] {
        for fig in ["fig6", "fig10", "fig11", "fig8_predicted_hdd"] {
            png(&js.join(format!("{fig}_{set}.png")));
        }
    }
    let summary = std::fs::read_to_string(js.join("summary.md")).unwrap();
    assert!(summary.contains("| udense | 1 |"), "{summary}");
    // The generated tables and indexes are gone, and so is the data directory.
    assert!(!js.join("data").exists(), "data left behind");
}

#[test]
fn indexes_measures_every_kind_and_table_2() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    profile(d);
    std::fs::create_dir(d.join("data")).unwrap();
    ok(
        d,
        &[
            "experiment",
            "indexes",
            "--n",
            "30k",
            "--sets",
            "normal",
            "--windows",
            "256,1024",
            "--profile",
            "p.json",
            "--dir",
            "data",
            "--out-dir",
            "ix",
        ],
    );
    let ix = d.join("ix");
    let rows = read_csv(&ix.join("indexes.csv"));
    let kinds: Vec<&str> = rows.iter().map(|r| r["index"].as_str()).collect();
    assert_eq!(kinds, ["pgm", "sampled-pgm", "rs", "rmi", "btree", "alex"]);
    let table_bytes = rows[0]["inner_file_bytes"].parse::<u64>().unwrap();
    for row in &rows {
        // A self-join of distinct keys: one output per key.
        assert_eq!(row["output_tuples"], "30000", "{row:?}");
        assert!(row["max_window"].parse::<u64>().unwrap() <= 384, "{row:?}");
        assert!(row["index_bytes"].parse::<u64>().unwrap() > 0);
        assert!(row["inner_reads"].parse::<u64>().unwrap() > 0, "{row:?}");
        // ALEX's self-join reads its own file, 0.7 full, larger than the table.
        let inner_file = row["inner_file_bytes"].parse::<u64>().unwrap();
        if row["index"] == "alex" {
            assert!(inner_file > table_bytes, "{row:?}");
        } else {
            assert_eq!(inner_file, table_bytes, "{row:?}");
        }
    }
    let sizes = read_csv(&ix.join("table2_sizes.csv"));
    assert_eq!(sizes.len(), 2 * 2);
    for fig in [
        "fig5_size_vs_self_join",
        "fig5_size_vs_build",
        "table2_size_vs_window",
    ] {
        png(&ix.join(format!("{fig}.png")));
    }
    // --dir was the user's: kept, but emptied of the generated files.
    assert_eq!(std::fs::read_dir(d.join("data")).unwrap().count(), 0);
}

#[test]
fn unsorted_runs_every_build_join_and_sort_and_each_join_matches_every_outer_key() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    profile(d);
    let out = ok(
        d,
        &[
            "experiment",
            "unsorted",
            "--n",
            "30k",
            "--ratios",
            "1,10",
            "--memory-limits",
            "1MiB,8MiB",
            "--profile",
            "p.json",
            "--out-dir",
            "un",
        ],
    );
    assert!(out.contains("## Index creation (Fig. 9b)"), "{out}");
    let un = d.join("un");
    let rows = read_csv(&un.join("unsorted.csv"));
    // Per limit: 4 indexes (2 kinds, of pointers and of tuples) of S and of each R, 6
    // joins per ratio, 3 sorts.
    assert_eq!(rows.len(), 2 * (4 * 3 + 6 * 2 + 3), "{rows:?}");
    let mut seen = std::collections::HashSet::new();
    // The study makes a cgroup per limit where this machine lets it (root on cgroup v1, as
    // CI's), and says why not where it does not; every run alike.
    let bounded = rows[0]["page_cache"] == "cgroup";
    let summary = std::fs::read_to_string(un.join("summary.md")).unwrap();
    assert_eq!(
        summary.contains("each run in a cgroup this study made"),
        bounded,
        "{summary}"
    );
    assert_eq!(
        summary.contains("this machine does not let the study make them"),
        !bounded,
        "{summary}"
    );
    for row in &rows {
        let tuples: u64 = row["tuples"].parse().unwrap();
        let ratio: u64 = row["ratio"].parse().unwrap();
        seen.insert((
            row["operation"].clone(),
            row["method"].clone(),
            row["entries"].clone(),
        ));
        assert!(["1048576", "8388608"].contains(&row["memory_limit"].as_str()));
        well_formed(row, &["seconds"]);
        assert!(!row["machine"].is_empty(), "{row:?}");
        assert_eq!(row["page_cache"] == "cgroup", bounded, "{row:?}");
        if bounded {
            // Its limit is the run's and the process's own memory; it is gone after.
            let limit: u64 = row["memory_limit"].parse().unwrap();
            let cgroup_limit: u64 = row["cgroup_limit"].parse().unwrap();
            assert!(cgroup_limit > limit, "{row:?}");
            assert!(row["cgroup_peak"].parse::<u64>().unwrap() > 0, "{row:?}");
            assert!(!std::path::Path::new(&row["cgroup"]).exists(), "{row:?}");
        }
        match row["operation"].as_str() {
            "join" => {
                // R is a sample of S's distinct keys: each matches once.
                assert_eq!(row["inner_tuples"], "30000", "{row:?}");
                assert_eq!(tuples, 30_000 / ratio, "{row:?}");
                assert_eq!(row["output_tuples"], row["tuples"], "{row:?}");
            }
            "index-build" => {
                let wa: f64 = row["write_amplification"].parse().unwrap();
                assert!(
                    wa >= 1.0,
                    "an index writes its entries at least once: {row:?}"
                );
                assert!(row["index_memory_bytes"].parse::<u64>().unwrap() > 0);
                if row["table"] == "inner" {
                    assert_eq!(tuples, 30_000);
                }
            }
            "sort" => assert_eq!(row["output_tuples"], "30000", "{row:?}"),
            other => panic!("operation {other}"),
        }
        // Every run's memory was measured, and stayed within the limit.
        assert_eq!(row["within_limit"], "true", "{row:?}");
    }
    // 4 builds, 6 joins (4 through indexes, grace and sort-merge), 3 sorts.
    assert_eq!(seen.len(), 4 + 6 + 3, "{seen:?}");
    for entries in ["pointers", "tuples"] {
        for method in ["partition", "btree-inserts"] {
            for operation in ["index-build", "join"] {
                let want = (
                    operation.to_string(),
                    method.to_string(),
                    entries.to_string(),
                );
                assert!(seen.contains(&want), "{want:?} in {seen:?}");
            }
        }
    }
    for fig in [
        "fig9a_lognormal_1.0MiB",
        "fig9a_lognormal_8.0MiB",
        "fig9b_lognormal",
        "sorts_lognormal",
    ] {
        png(&un.join(format!("{fig}.png")));
    }
    assert!(
        summary.contains("| lognormal | 1.0 MiB (2.2x of the table) | 10 |"),
        "{summary}"
    );
    assert!(
        summary.contains("## Paper 1's statements (lognormal)"),
        "{summary}"
    );
    assert!(!un.join("data").exists(), "data left behind");

    // A limit below what the builds need is refused up front, naming the smallest.
    let out = lidx()
        .current_dir(d)
        .args([
            "experiment",
            "unsorted",
            "--n",
            "30k",
            "--memory-limits",
            "64KiB",
        ])
        .args(["--profile", "p.json", "--out-dir", "small"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("the smallest that works is"), "{err}");
    assert!(!d.join("small").exists());
}

#[test]
fn bad_experiment_parameters_are_refused_before_any_output() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    refused_before_any_output(
        d,
        "join-sorted",
        "lidx: error: invalid",
        &[
            (&["--ratios", "0"], "ratios"),
            (&["--windows", "2"], "windows"),
            (&["--indexes", "binary"], "indexes"),
            (&["--n", "0"], "n"),
        ],
    );
    // Out-of-range list values are a bad command line: exit 2, naming the range.
    for args in [
        &["--io-depths", "0"][..],
        &["--io-depths", "1,100000"],
        &["--threads", "0"],
    ] {
        let out = lidx()
            .current_dir(d)
            .args(["experiment", "join-sorted", "--out-dir", "o"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("is not in 1..="), "{err}");
        assert!(!d.join("o").exists(), "{args:?} left output");
    }
    // AirIndex's hardness sets and cold starts: a bad command line, exit 2.
    for (args, want) in [
        (&["--hard", "5:10"][..], "LOCAL at least GLOBAL"),
        (&["--hard", "10:0"], "GLOBAL must be at least 1"),
        (&["--hard", "20000"], "LOCAL:GLOBAL"),
        (&["--hard", "x:1"], "LOCAL:GLOBAL"),
        (&["--cold-starts", "0"], "is not in 1..=1000"),
        (&["--cold-starts", "1001"], "is not in 1..=1000"),
    ] {
        let out = lidx()
            .current_dir(d)
            .args(["experiment", "airindex", "--out-dir", "o"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!d.join("o").exists(), "{args:?} left output");
    }
    let out = lidx()
        .current_dir(d)
        .args(["experiment", "indexes", "--keys", "missing.keys"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("missing.keys")
    );
}

#[test]
fn any_io_depth_gives_the_depth_one_output_table() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "gen",
            "--dist",
            "clustered",
            "--n",
            "50k",
            "--duplicates",
            "0.3",
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
            "20",
            "--out",
            "r.keys",
        ],
    );
    ok(d, &["table", "build", "--keys", "r.keys", "--out", "r.tbl"]);
    let join = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "join",
            "--outer",
            "r.tbl",
            "--inner",
            "s.tbl",
            "--method",
            "inlj:sampled-pgm",
            "--threads",
            "2",
            "--out",
            out,
        ];
        args.extend_from_slice(extra);
        ok(d, &args);
        std::fs::read(d.join(out)).unwrap()
    };
    let one = join("one.tbl", &[]);
    // io_uring where the kernel grants a ring; auto falls back to threads elsewhere.
    let uring = lidx::storage::IoBackend::Auto.resolve() == lidx::storage::IoBackend::Uring;
    let backends: &[&str] = if uring {
        &["uring", "threads", "auto"]
    } else {
        &["threads", "auto"]
    };
    for &backend in backends {
        let deep = join(
            "deep.tbl",
            &["--io-depth", "16", "--io-backend", backend, "--direct"],
        );
        assert_eq!(deep, one, "io-depth 16 on {backend} differs from depth 1");
    }
    let json = ok(
        d,
        &[
            "join",
            "--outer",
            "r.tbl",
            "--inner",
            "s.tbl",
            "--method",
            "inlj:btree",
            "--io-depth",
            "8",
            "--count-only",
            "--json",
        ],
    );
    assert_eq!(json.lines().count(), 1, "{json}");
    assert!(json.contains("\"io_depth\":8"), "{json}");
}

/// `lidx experiment bigtable` with no block cache at all: the figures over the cache size
/// have one point at 0, which a log axis cannot show; the run still writes every file.
#[test]
fn bigtable_without_a_cache_draws_its_figures() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "experiment",
            "bigtable",
            "--rows",
            "1000",
            "--value-size",
            "64",
            "--cache-sizes",
            "0",
            "--clients",
            "1",
            "--outstanding",
            "2",
            "--warmup",
            "0",
            "--seconds",
            "0.1",
            "--no-rocksdb",
            "--buffered",
            "--out-dir",
            "bt",
        ],
    );
    for f in [
        "bigtable.csv",
        "summary.md",
        "fig1_get_latency.png",
        "fig1_scan_throughput.png",
    ] {
        assert!(d.join("bt").join(f).is_file(), "{f} is missing");
    }
    assert_eq!(
        read_csv(&d.join("bt/bigtable.csv")).len(),
        2 * 2,
        "systems x ops"
    );
}

/// `lidx experiment bigtable` at a small size: every cell of the two layouts and RocksDB
/// measured, every get found, the learned layout reading no index block and the SSTable one
/// per uncached get, and every promised file.
#[test]
fn bigtable_measures_every_cell_and_the_learned_layout_reads_no_index_block() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    let out = ok(
        d,
        &[
            "experiment",
            "bigtable",
            "--rows",
            "2000,4000",
            "--value-size",
            "200",
            "--block-size",
            "4KiB",
            "--memory",
            "0,64KiB",
            "--clients",
            "2",
            "--outstanding",
            "3",
            "--warmup",
            "0.05",
            "--seconds",
            "0.3",
            "--buffered",
            "--out-dir",
            "bt",
        ],
    );
    assert!(out.contains("Fig. 1"), "{out}");
    let rows = read_csv(&d.join("bt/bigtable.csv"));
    assert_eq!(rows.len(), 2 * 3 * 2 * 2, "rows x systems x caches x ops");
    for r in &rows {
        let f = |k: &str| r[k].parse::<f64>().unwrap();
        // How many operations fit the measured seconds depends on the machine and its load:
        // the rates and latencies are checked for form only, the counts per operation
        // exactly (all 0 where no operation ended within the measured time).
        well_formed(
            r,
            &[
                "seconds",
                "ops_per_s",
                "rows_per_s",
                "mean_us",
                "p50_us",
                "p99_us",
                "p999_us",
                "max_us",
                "mean_us_per_kib_row",
            ],
        );
        // Counts per operation come from the operations counted: the measured ones, or
        // RocksDB's separate counting run (its timed run has statistics off).
        let counted: u64 = r["counted_ops"].parse().unwrap();
        let per_op = |v: f64| if counted == 0 { 0.0 } else { v };
        if r["layout"] != "rocksdb" {
            assert_eq!(r["counted_ops"], r["ops"], "{r:?}");
        }
        // Equal memory: each system's cache is the budget less its resident index.
        let (budget, cache, resident) = (
            f("memory_budget"),
            f("cache_bytes"),
            f("resident_index_bytes"),
        );
        assert!(
            budget == 0.0 && cache == 0.0 || cache + resident == budget,
            "{r:?}"
        );
        match (
            r["layout"].as_str(),
            r["op"].as_str(),
            r["cache_bytes"].as_str(),
        ) {
            ("learned", _, _) => assert_eq!(f("index_blocks_per_op"), 0.0, "{r:?}"),
            ("sstable", "get", "0") => assert_eq!(f("index_blocks_per_op"), per_op(1.0), "{r:?}"),
            // RocksDB without a cache: a filter partition (10 bits a key, by default), an
            // index partition and a data block per get.
            ("rocksdb", "get", "0") => assert_eq!(f("blocks_per_op"), per_op(3.0), "{r:?}"),
            _ => {}
        }
        if r["op"] == "get" {
            assert_eq!(r["rows_per_op"], "1", "{r:?}");
            // Every key asked for exists, in every system: as many rows as gets, over the
            // same seconds.
            assert_eq!(r["rows_per_s"], r["ops_per_s"], "{r:?}");
            if r["cache_bytes"] == "0" && r["layout"] != "rocksdb" {
                assert_eq!(f("data_blocks_per_op"), per_op(1.0), "{r:?}");
            }
        }
        if r["op"] == "scan" {
            // A scan returns its first key and at most 100 rows (fewer from the last 99
            // keys): rows and scans are counted over the same seconds, their rates
            // printed to 0.1 per second.
            assert_eq!(r["rows_per_op"], "100", "{r:?}");
            let (rows_s, ops_s) = (f("rows_per_s"), f("ops_per_s"));
            let slack = 1e-6 * (1.0 + rows_s);
            assert!(
                rows_s >= ops_s - 0.1 - slack && rows_s <= 100.0 * (ops_s + 0.05) + 0.05 + slack,
                "{r:?}"
            );
        }
    }
    for png_name in [
        "fig1_get_latency",
        "fig1_get_throughput",
        "fig1_scan_latency",
        "fig1_scan_throughput",
        "table_sizes",
    ] {
        png(&d.join(format!("bt/{png_name}.png")));
    }
    assert!(d.join("bt/summary.md").exists());
    assert!(!d.join("bt/data").exists(), "generated data left behind");
}

/// `lidx experiment bigtable --profile ssd`: every system's files read through the mount,
/// and their reads are the mount's: the learned layout's uncached get one read of one data
/// block, the SSTable's two (its level-1 block, then the data block), exactly.
#[test]
fn bigtable_under_a_profile_charges_every_system_through_the_mount() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "experiment",
            "bigtable",
            "--rows",
            "3000",
            "--value-size",
            "200",
            "--block-size",
            "4KiB",
            "--cache-sizes",
            "0",
            "--clients",
            "2",
            "--outstanding",
            "2",
            "--warmup",
            "0.05",
            "--seconds",
            "0.5",
            "--profile",
            "ssd",
            "--out-dir",
            "bt",
        ],
    );
    let rows = read_csv(&d.join("bt/bigtable.csv"));
    let systems = if cfg!(feature = "rocksdb") { 3 } else { 2 };
    assert_eq!(rows.len(), systems * 2, "systems x ops");
    for r in &rows {
        assert_eq!(r["storage"], "ssd", "{r:?}");
        let f = |k: &str| r[k].parse::<f64>().unwrap();
        if r["op"] == "get" {
            let expect = match r["layout"].as_str() {
                "learned" => 1.0,
                "sstable" => 2.0,
                _ => continue,
            };
            // The mount's reads over the measured time: `expect` per get, to the CSV's
            // three decimals (the clients pause while the counters are read, and the
            // measured time ends with its last get).
            assert!((f("reads_per_op") - expect).abs() <= 0.0005 + 1e-9, "{r:?}");
        }
    }
    let summary = std::fs::read_to_string(d.join("bt/summary.md")).unwrap();
    assert!(summary.contains("storage of the ssd profile"), "{summary}");
}

/// `lidx experiment airindex` at a small size, on the disk and under the ssd profile:
/// every system and phase measured, every lookup found its position (the study checks
/// each), cold lookups reading what each structure implies and a warm cache sparing
/// reads, under the profile every system's reads (its opening's too) charged through the
/// mount, every latency reported (not judged: it depends on the machine and its load),
/// and every promised file.
#[test]
fn airindex_measures_every_system_cold_and_warm_under_each_profile() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    profile(d);
    let out = ok(
        d,
        &[
            "experiment",
            "airindex",
            "--keys",
            "20K",
            "--sets",
            "lognormal",
            "--profile",
            "measured,ssd",
            "--measured-profile",
            "p.json",
            "--sketch-keys",
            "40K",
            "--cache",
            "64KiB",
            "--queries",
            "300",
            "--warm-queries",
            "50",
            "--timed-queries",
            "20",
            "--cold-starts",
            "2",
            "--buffered",
            "--out-dir",
            "air",
        ],
    );
    assert!(out.contains("The tuner's choice"), "{out}");
    assert!(out.contains("Fig. 2") && out.contains("Fig. 3"), "{out}");
    // Paper 2's statements beside this run's, each with a verdict.
    for statement in ["faster cold than the paper's baselines", "faster warm"] {
        let line = out
            .lines()
            .find(|l| l.contains(statement))
            .unwrap_or_else(|| panic!("no {statement:?} in {out}"));
        assert!(
            ["| agree |", "| partly |", "| disagree |"]
                .iter()
                .any(|v| line.contains(v)),
            "{line}"
        );
    }
    let rows = read_csv(&d.join("air/airindex.csv"));
    let systems: &[&str] = if cfg!(feature = "rocksdb") {
        &[
            "airindex", "btree", "sstable", "learned", "rmi-mmap", "lmdb", "rocksdb",
        ]
    } else {
        &[
            "airindex", "btree", "sstable", "learned", "rmi-mmap", "lmdb",
        ]
    };
    // Curve points n = 1, 2, 4, ..., 256 and 300; one cold and one warm row, and under
    // ssd a row of the warm lookups that slept; AirIndex once per profile's file.
    assert_eq!(rows.len(), (systems.len() + 1) * (12 + 13));
    for r in &rows {
        well_formed(r, &["mean_us", "p50_us", "p99_us", "open_us"]);
    }
    for profile in ["measured", "ssd"] {
        for &system in systems {
            let of = |phase: &str| -> Vec<&HashMap<String, String>> {
                rows.iter()
                    .filter(|r| {
                        r["profile"] == profile
                            && r["system"] == system
                            && r["phase"] == phase
                            && (r["tuned_for"].is_empty() || r["tuned_for"] == profile)
                    })
                    .collect()
            };
            let (cold, curve, warm) = (of("cold"), of("curve"), of("warm"));
            assert_eq!(
                (cold.len(), curve.len(), warm.len()),
                (1, 10, 1),
                "{profile} {system}"
            );
            let f = |r: &HashMap<String, String>, k: &str| r[k].parse::<f64>().unwrap();
            let last = curve.last().unwrap();
            assert_eq!(f(last, "queries"), 300.0);
            if system == "airindex" {
                assert_eq!(cold[0]["tuned_for"], profile);
                // One cold lookup: the root, then one window per layer.
                let layers: f64 = cold[0]["structure"]
                    .strip_prefix("L = ")
                    .and_then(|s| s.split(':').next())
                    .unwrap()
                    .parse()
                    .unwrap();
                cold_reads(profile, cold[0], layers + 1.0);
            }
            if system == "btree" {
                let levels: f64 = cold[0]["structure"]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                cold_reads(profile, cold[0], levels + 1.0);
                // Every lookup walks a path of as many nodes: a warm cache can only spare
                // some of their reads.
                assert!(
                    f(warm[0], "reads_per_query") <= f(cold[0], "reads_per_query"),
                    "{cold:?} {warm:?}"
                );
            }
            if system == "lmdb" {
                // A cold get faults in the path from the root to a leaf, a page a level
                // (read-ahead off for the map). On the disk they are the thread's major
                // faults: the path less the root, which the read-ahead of the open's
                // buffered `pread` of the meta pages may have brought in.
                let levels: f64 = cold[0]["structure"]
                    .strip_prefix("B+tree of ")
                    .and_then(|s| s.split_whitespace().next())
                    .unwrap()
                    .parse()
                    .unwrap();
                let (reads, bytes) = (f(cold[0], "reads_per_query"), f(cold[0], "bytes_per_query"));
                if profile == "measured" {
                    assert!((levels - 1.0..=levels).contains(&reads), "{:?}", cold[0]);
                    assert_eq!(bytes, 4096.0 * reads, "{:?}", cold[0]);
                } else {
                    // Through the mount, every read is charged, a page at least; that
                    // read-ahead may still be arriving when the lookup starts (on a busy
                    // machine), so the lookup's count can hold more than its path.
                    assert!(reads >= 1.0 && bytes >= 4096.0 * reads, "{:?}", cold[0]);
                }
            }
            if profile == "ssd" {
                // Every system's files are read through the mount, which counts what
                // opening the store read: something (a footer, a root, a manifest) for each.
                assert!(f(cold[0], "open_reads") >= 1.0, "{:?}", cold[0]);
                assert!(f(cold[0], "open_bytes") >= 1.0, "{:?}", cold[0]);
                // Every read sleeps out 250 us + bytes / 175 MB/s, and is charged at least
                // the 250 us.
                let warm_timed = of("warm-timed");
                assert_eq!(warm_timed.len(), 1);
                assert_eq!(f(warm[0], "timed_queries"), 20.0);
                for r in cold.iter().chain(&warm_timed).chain(curve.iter().take(5)) {
                    assert_eq!(r["timed_queries"], r["queries"], "{r:?}");
                    assert!(
                        f(r, "modelled_us_per_query") >= 250.0 * f(r, "reads_per_query") - 1e-6,
                        "{r:?}"
                    );
                }
                assert_eq!(f(last, "timed_queries"), 20.0);
            } else {
                assert_eq!(f(last, "timed_queries"), 300.0);
                assert_eq!(f(last, "modelled_us_per_query"), 0.0);
                assert_eq!(cold[0]["open_reads"], "", "not counted on the local disk");
            }
        }
    }
    for png_name in [
        "fig2_measured",
        "fig2_ssd",
        "fig3_measured_lognormal",
        "fig3_ssd_lognormal",
    ] {
        png(&d.join(format!("air/{png_name}.png")));
    }
    let summary = std::fs::read_to_string(d.join("air/summary.md")).unwrap();
    // The tuner's choices at the study's size and at the sketch size, per profile.
    assert!(summary.contains("| lognormal | 20000 | ssd |"), "{summary}");
    assert!(summary.contains("| lognormal | 40000 | nfs |"), "{summary}");
    // Each profile's file under every profile, and a verdict for each.
    assert!(
        summary.contains("Each profile's structure under every profile"),
        "{summary}"
    );
    for under in ["measured", "ssd"] {
        assert!(
            summary.contains(&format!("- lognormal under {under}: ")),
            "{summary}"
        );
        for tuned in ["measured", "ssd"] {
            let cold = rows.iter().filter(|r| {
                r["system"] == "airindex"
                    && r["profile"] == under
                    && r["tuned_for"] == tuned
                    && r["phase"] == "cold"
            });
            assert_eq!(cold.count(), 1, "{tuned} under {under}");
        }
    }
    assert!(!d.join("air/data").exists(), "generated data left behind");
}

/// A cold lookup whose structure reads `path` pages (a root, then one per level or layer)
/// made that many reads; through the mount, where reads are buffered, what reached
/// storage: the page that opening the store read may hold the root, so the lookup may
/// find it in the page cache.
fn cold_reads(profile: &str, cold: &HashMap<String, String>, path: f64) {
    let reads: f64 = cold["reads_per_query"].parse().unwrap();
    if profile == "measured" {
        assert_eq!(reads, path, "{cold:?}");
    } else {
        assert!((path - 1.0..=path).contains(&reads), "{cold:?}");
    }
}

#[test]
fn updatable_runs_every_kind_and_workload_and_refuses_bad_parameters() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "experiment",
            "updatable",
            "--n",
            "20K",
            "--ops",
            "2K",
            "--local",
            "4,16",
            "--global",
            "1",
            "--sets",
            "lognormal",
            "--scan-lens",
            "10,1000",
            "--kinds",
            "alex,lipp,btree",
            "--repeat",
            "1",
            "--out-dir",
            "o",
            "-q",
        ],
    );
    let rows = read_csv(&d.join("o/updatable.csv"));
    // 3 sets × (5 workloads + 4 deletion ones), 4 tail runs, 2 runs timing every
    // insert's phases, 2 scan lengths, 4 shift runs, 3 bulk loads; each × 3 kinds; and Fig. 9: lipp and alex-m, 5 workloads on 2
    // sets.
    assert_eq!(rows.len(), (3 * 9 + 4 + 2 + 2 + 4 + 3) * 3 + 2 * 5 * 2);
    let fig9 = rows.iter().filter(|r| r["part"] == "alex-m").count();
    assert_eq!(fig9, 20);
    for r in &rows {
        well_formed(r, &["ops_per_s", "mean_ns", "bulk_load_s"]);
        // Every run but a bulk load's does operations after it.
        let ops: u64 = ["lookups", "inserts", "removals", "scans"]
            .iter()
            .map(|c| r[*c].parse::<u64>().unwrap())
            .sum();
        assert!(ops > 0 || r["part"] == "bulk", "{r:?}");
        assert!(r["size_bytes"].parse::<u64>().unwrap() > 0, "{r:?}");
        assert!(!r["machine"].is_empty());
    }
    let write_only = rows
        .iter()
        .filter(|r| r["workload"] == "write-only" && r["part"] == "heatmap");
    for r in write_only {
        // Write-only inserts the half of the keys not bulk-loaded (ops capped at 2K).
        assert_eq!(r["lookups"], "0");
        assert_eq!(r["inserts"], "2000");
        assert_eq!(r["bulk_loaded"], "10000");
    }
    for name in [
        "fig2_heatmap",
        "fig2_sets",
        "fig3_phases",
        "fig7_heatmap",
        "fig8_size",
        "fig9_alex_m",
        "fig12_shift",
        "fig13_scans",
    ] {
        png(&d.join(format!("o/{name}.png")));
    }
    let summary = std::fs::read_to_string(d.join("o/summary.md")).unwrap();
    assert!(summary.contains("| hard-l16-g1 |"), "{summary}");

    let fresh = d.join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    refused_before_any_output(
        &fresh,
        "updatable",
        "lidx: error:",
        &[
            (&["--kinds", "alex,lipp"], "learned and traditional"),
            (&["--n", "0"], "invalid n"),
            (&["--sosd", "missing.keys"], "missing.keys"),
            (&["--scan-lens", "0"], "scan lengths"),
            (
                &["--delete-workloads", "balanced"],
                "not a deletion workload",
            ),
        ],
    );
}

/// `lidx experiment updatable-concurrent` at a small size: a row per (set, workload,
/// threads, kind), a row per thread of each, the plots and the messages; bad parameters
/// refused before any output.
#[test]
fn updatable_concurrent_runs_every_thread_count_and_refuses_bad_parameters() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "experiment",
            "updatable-concurrent",
            "--n",
            "20K",
            "--ops",
            "3K",
            "--threads",
            "1,2,3",
            "--kinds",
            "finedex,art-olc",
            "--workloads",
            "read-only,balanced",
            "--sets",
            "lognormal",
            "--hard",
            "16:2",
            "--repeat",
            "1",
            "--out-dir",
            "o",
            "-q",
        ],
    );
    let rows = read_csv(&d.join("o/threads.csv"));
    assert_eq!(rows.len(), 2 * 2 * 3 * 2);
    for r in &rows {
        well_formed(r, &["ops_per_s", "seconds", "bulk_load_s"]);
        assert_eq!(
            r["cores"].parse::<usize>().unwrap() < r["threads"].parse().unwrap(),
            r["oversubscribed"] == "true",
            "{r:?}"
        );
        assert!(r["measured_bytes"].parse::<u64>().unwrap() > 0, "{r:?}");
        assert!(!r["machine"].is_empty());
    }
    let per = read_csv(&d.join("o/per_thread.csv"));
    assert_eq!(per.len(), 2 * 2 * (1 + 2 + 3) * 2);
    for set in ["lognormal", "hard-l16-g2"] {
        png(&d.join(format!("o/fig5_{set}_balanced.png")));
    }
    let summary = std::fs::read_to_string(d.join("o/summary.md")).unwrap();
    assert!(
        summary.contains("| hard-l16-g2 | balanced | finedex |"),
        "{summary}"
    );

    let fresh = d.join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    refused_before_any_output(
        &fresh,
        "updatable-concurrent",
        "lidx: error:",
        &[
            (&["--hard", "4:16"], "LOCAL at least GLOBAL"),
            (&["--hard", "x"], "LOCAL:GLOBAL"),
        ],
    );
    // Refused by the argument parser, naming what it accepts.
    for (args, want) in [
        (["--threads", "0"], "0 is not in 1..=1024"),
        (["--kinds", "alex"], "finedex"),
        (["--repeat", "0"], "0 is not in 1..=100"),
    ] {
        let out = lidx()
            .current_dir(&fresh)
            .args(["experiment", "updatable-concurrent", "--out-dir", "o"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            !out.status.success() && err.contains(want),
            "{args:?}: {err}"
        );
        assert!(!fresh.join("o").exists());
    }
}

/// `lidx experiment lsm-joins` at a small size: every method of every cell of two figures
/// joined after every batch, the files it promises, no database left behind, and bad
/// parameters refused before any output.
#[cfg(feature = "rocksdb")]
#[test]
fn lsm_joins_runs_its_figures_and_refuses_bad_parameters() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "experiment",
            "lsm-joins",
            "--rows",
            "3K",
            "--figures",
            "5c,12",
            "--out-dir",
            "o",
            "-q",
        ],
    );
    let rows = read_csv(&d.join("o/lsm-joins.csv"));
    // Fig. 5c: 5 matching rates × 5 methods; Fig. 12: 8 settings × 7 methods; one join each.
    assert_eq!(rows.len(), 5 * 5 + 8 * 7);
    for r in &rows {
        assert!(!r["machine"].is_empty() && r["batch"] == "1", "{r:?}");
        well_formed(r, &["join_s", "index_s", "data_s"]);
        if r["maintenance"] == "none" {
            // No index to keep: no index tree in the method's database.
            assert_eq!(r["index_design"], "none", "{r:?}");
            assert_eq!(r["index_levels"], "0", "{r:?}");
        }
    }
    // Methods answering the same join count the same output in a cell.
    let hj = |x: &str| {
        rows.iter()
            .find(|r| r["figure"] == "5c" && r["x"] == x && r["method"] == "HJ-N")
            .map(|r| r["output"].clone())
    };
    for r in rows.iter().filter(|r| r["figure"] == "5c") {
        assert_eq!(Some(r["output"].clone()), hj(&r["x"]), "{r:?}");
    }
    let advice = read_csv(&d.join("o/lsm-advice.csv"));
    assert_eq!(advice.len(), rows.len());
    for name in [
        "fig5c-unif-match_rate-join",
        "fig12-unif-bloom_bits-join",
        "fig12-unif-block_cache-join",
    ] {
        png(&d.join(format!("o/{name}.png")));
    }
    let summary = std::fs::read_to_string(d.join("o/summary.md")).unwrap();
    assert!(summary.contains("## Fig. 12"), "{summary}");
    assert!(
        summary.contains("| the cost model, calibrated |"),
        "{summary}"
    );
    assert!(summary.contains("| Fig. 12: "), "{summary}");
    // Every panel's finding names methods its cells ran: no value is missing.
    for line in summary.lines().filter(|l| l.starts_with("- Ours")) {
        assert!(!line.contains('–'), "{line}");
    }
    assert!(!d.join("o/data").exists(), "databases left behind");

    let fresh = d.join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    refused_before_any_output(
        &fresh,
        "lsm-joins",
        "lidx: error:",
        &[(&["--rows", "10"], "at least 1000 rows")],
    );
    let out = lidx()
        .current_dir(&fresh)
        .args(["experiment", "lsm-joins", "--figures", "13"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no figure '13'"), "{err}");
}

#[test]
fn lsm_joins_reads_a_real_data_set_from_key_files() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "gen",
            "--dist",
            "usparse",
            "--n",
            "4000",
            "--duplicates",
            "0.2",
            "--out",
            "face.keys",
        ],
    );
    ok(
        d,
        &[
            "experiment",
            "lsm-joins",
            "--rows",
            "3K",
            "--figures",
            "5a",
            "--data",
            "face=face.keys",
            "--out-dir",
            "o",
            "-q",
        ],
    );
    let rows = read_csv(&d.join("o/lsm-joins.csv"));
    // Two data sets × 5 entry sizes × 4 methods.
    assert_eq!(rows.len(), 2 * 5 * 4);
    assert!(rows.iter().any(|r| r["dataset"] == "face"));
    assert!(rows.iter().all(|r| r["dataset"] != "face-like"));
    for r in rows.iter().filter(|r| r["dataset"] == "face") {
        // One file for both sides: every row of R finds its attribute in S.
        assert_eq!(r["match_rate"], "1.000", "{r:?}");
        if r["entry_size"] == "2048" && r["method"] == "HJ-P" {
            // 750 rows of 2 KiB a side, past the 1 MiB of join memory: spilled whole.
            assert!(
                r["scratch_bytes"].parse::<u64>().unwrap() >= 2 * 750 * 2048,
                "{r:?}"
            );
        }
    }
    let summary = std::fs::read_to_string(d.join("o/summary.md")).unwrap();
    assert!(
        summary.contains("`face` is read from key files"),
        "{summary}"
    );

    let fresh = d.join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let other = format!("other={}", d.join("face.keys").display());
    refused_before_any_output(
        &fresh,
        "lsm-joins",
        "lidx: error:",
        &[
            (&["--data", &other], "face, wiki, user or movie"),
            (&["--data", "face=missing.keys"], "missing.keys"),
        ],
    );
}

/// `lidx experiment warm` at a small size: every system timed in every round on both
/// tables, each with the whole table in memory (no block read and no major fault while
/// timed: the study itself refuses a wrong answer), and every promised file; a bad option
/// is one line naming it.
#[test]
fn warm_times_every_system_with_nothing_read_while_timed() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "experiment",
            "warm",
            "--rows",
            "3000",
            "--value-sizes",
            "16,3000",
            // Three turns a round (100,000 gets each, the last shorter): the study checks
            // that every system's values, over its turns, fold into the records' digest.
            "--gets",
            "250K",
            "--repeat",
            "2",
            "--out-dir",
            "w",
        ],
    );
    for f in ["warm.csv", "summary.md", "warm_cpu_per_get.png"] {
        assert!(d.join("w").join(f).is_file(), "{f} is missing");
    }
    let rows = read_csv(&d.join("w/warm.csv"));
    let systems = if cfg!(feature = "rocksdb") { 6 } else { 5 };
    assert_eq!(rows.len(), systems * 2 * 2, "systems x tables x rounds");
    for r in &rows {
        assert_eq!(r["gets"], "250000", "{r:?}");
        assert_eq!(r["block_reads"], "0", "warm: {r:?}");
        well_formed(r, &["cpu_ns_per_get", "wall_ns_per_get"]);
    }
    for system in ["learned", "sstable", "btree", "tuned", "lmdb"] {
        assert_eq!(
            rows.iter().filter(|r| r["system"] == system).count(),
            4,
            "{system}"
        );
    }
    let summary = std::fs::read_to_string(d.join("w/summary.md")).unwrap();
    assert!(summary.contains("CPU ≤ LMDB's"), "{summary}");
    // LMDB's ratio to itself, round by round.
    let lmdb_lines: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("| lmdb |"))
        .collect();
    assert_eq!(lmdb_lines.len(), 2, "{summary}");
    assert!(
        lmdb_lines.iter().all(|l| l.contains("| 1.00 |")),
        "{summary}"
    );
    assert!(
        std::fs::read_dir(d.join("w/data")).map_or(true, |mut e| e.next().is_none()),
        "data left behind"
    );

    let out = lidx()
        .current_dir(d)
        .args(["experiment", "warm", "--repeat", "0", "--out-dir", "bad"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("0 is not in 1..=100"), "{err}");
    assert!(!d.join("bad/warm.csv").exists());

    // A subset of the systems, and a name that is none of them.
    ok(
        d,
        &[
            "experiment",
            "warm",
            "--rows",
            "500",
            "--value-sizes",
            "8",
            "--gets",
            "100",
            "--repeat",
            "1",
            "--systems",
            "tuned,lmdb",
            "--out-dir",
            "two",
        ],
    );
    let systems: Vec<String> = read_csv(&d.join("two/warm.csv"))
        .into_iter()
        .map(|r| r["system"].clone())
        .collect();
    assert_eq!(systems, ["tuned", "lmdb"]);
    let out = lidx()
        .current_dir(d)
        .args([
            "experiment",
            "warm",
            "--systems",
            "lmdb,nope",
            "--out-dir",
            "bad2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid systems: nope is not one of"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!d.join("bad2/warm.csv").exists());
}
