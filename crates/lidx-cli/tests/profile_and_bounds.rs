//! Issue 33: storage profiles whose numbers no device has are refused with one line naming the
//! file and the field (F1); numeric options out of their range are usage errors naming the
//! range, never a panic (F13); keys that are not UTF-8 can be asked for, as bytes or as hex
//! (F19); negative and oversized numbers are parsed as numbers.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

mod common;

use common::{lidx, ok};

/// Runs `lidx args` in `dir`; expects exit code `code`, nothing on stdout, and one
/// `lidx: error:` line on stderr containing every piece of `wants`; checks that no file
/// appeared. Returns the line.
fn refused(dir: &Path, args: &[&OsStr], code: i32, wants: &[&str]) -> String {
    let before = listing(dir);
    let out = lidx().current_dir(dir).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "lidx {args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "lidx {args:?} printed to stdout");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "lidx {args:?}: want one line, got {stderr:?}"
    );
    assert!(lines[0].starts_with("lidx: error: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for want in wants {
        assert!(lines[0].contains(want), "{:?} lacks {want:?}", lines[0]);
    }
    assert_eq!(listing(dir), before, "lidx {args:?} left files behind");
    lines[0].to_string()
}

/// [`refused`] with arguments that are all UTF-8.
fn refused_str(dir: &Path, args: &[&str], code: i32, wants: &[&str]) -> String {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    refused(dir, &args, code, wants)
}

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// A storage profile as the audit wrote them, with both costs set.
fn profile(latency_us: &str, bandwidth_mb_s: &str) -> String {
    format!(
        r#"{{"version":1,"dir":".","device":"x","measured_at_unix":0,"file_size":4194304,
 "sequential":{{"latency_us":{latency_us},"bandwidth_mb_s":{bandwidth_mb_s}}},
 "random":{{"latency_us":{latency_us},"bandwidth_mb_s":{bandwidth_mb_s}}},"measurements":[]}}"#
    )
}

/// A directory with `recs.tsv` (200 records) and `recs.kv` built from it, and the sorted
/// tables `s.tbl` (2000 keys) and `r.tbl` (a tenth of them).
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(
        d,
        &[
            "kv",
            "gen",
            "--rows",
            "200",
            "--value-size",
            "20",
            "--out",
            "recs.tsv",
        ],
    );
    ok(
        d,
        &["kv", "build", "--input", "recs.tsv", "--out", "recs.kv"],
    );
    ok(
        d,
        &[
            "gen",
            "--dist",
            "lognormal",
            "--n",
            "2000",
            "--seed",
            "1",
            "--out",
            "s.keys",
        ],
    );
    ok(
        d,
        &[
            "gen",
            "--sample-of",
            "s.keys",
            "--ratio",
            "10",
            "--out",
            "r.keys",
        ],
    );
    ok(d, &["table", "build", "--keys", "s.keys", "--out", "s.tbl"]);
    ok(d, &["table", "build", "--keys", "r.keys", "--out", "r.tbl"]);
    dir
}

#[test]
fn profiles_no_device_has_are_refused_naming_file_and_field() {
    let dir = setup();
    let d = dir.path();
    let tsv = std::fs::read_to_string(d.join("recs.tsv")).unwrap();
    let key = tsv.lines().next().unwrap().split('\t').next().unwrap();
    let cases = [
        ("60.0", "0.0", "bandwidth_mb_s is 0,"),
        ("60.0", "1e-300", "bandwidth_mb_s is 1e-300,"),
        ("60.0", "-1", "bandwidth_mb_s is -1,"),
        ("1e308", "300.0", "latency_us is 1e308,"),
        ("1e12", "300.0", "latency_us is 1e12,"),
        ("-5", "300.0", "latency_us is -5,"),
    ];
    for (latency, bandwidth, field) in cases {
        std::fs::write(d.join("bad.json"), profile(latency, bandwidth)).unwrap();
        let range = if field.starts_with("latency") {
            "0 to 10000000 us"
        } else {
            "0.01 to 1000000 MB/s"
        };
        let wants = ["bad.json", field, range];
        refused_str(
            d,
            &["kv", "get", "recs.kv", key, "--profile", "bad.json"],
            1,
            &wants,
        );
        refused_str(
            d,
            &["kv", "scan", "recs.kv", key, "--profile", "bad.json"],
            1,
            &wants,
        );
        refused_str(
            d,
            &[
                "kv",
                "build",
                "--input",
                "recs.tsv",
                "--layout",
                "tuned",
                "--profile",
                "bad.json",
                "--out",
                "t.kv",
            ],
            1,
            &wants,
        );
        refused_str(
            d,
            &[
                "join",
                "--outer",
                "r.tbl",
                "--inner",
                "s.tbl",
                "--method",
                "auto",
                "--profile",
                "bad.json",
                "--count-only",
            ],
            1,
            &wants,
        );
    }
    // JSON numbers beyond a float, and no number at all.
    for (latency, bandwidth) in [("1e999", "300.0"), ("60.0", "null")] {
        std::fs::write(d.join("bad.json"), profile(latency, bandwidth)).unwrap();
        refused_str(
            d,
            &["kv", "get", "recs.kv", key, "--profile", "bad.json"],
            1,
            &["bad.json"],
        );
    }
    // The same key under a profile in range: found.
    std::fs::write(d.join("good.json"), profile("0", "1000000")).unwrap();
    let value = ok(d, &["kv", "get", "recs.kv", key, "--profile", "good.json"]);
    assert_eq!(value.len(), 21, "{value:?}");
}

#[test]
fn numeric_options_out_of_range_are_usage_errors_naming_the_range() {
    let dir = setup();
    let d = dir.path();
    let join = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut args = vec![
            "join",
            "--outer",
            "r.tbl",
            "--inner",
            "s.tbl",
            "--method",
            "inlj:pgm",
            "--count-only",
        ];
        args.extend_from_slice(extra);
        args
    };
    refused_str(
        d,
        &join(&["--io-depth", "100000"]),
        2,
        &["--io-depth", "1..=4096"],
    );
    refused_str(
        d,
        &join(&["--io-depth", "0"]),
        2,
        &["--io-depth", "1..=4096"],
    );
    refused_str(
        d,
        &join(&["--threads", "1025"]),
        2,
        &["--threads", "1..=1024"],
    );
    // The largest depth still joins, on either backend, with the same output.
    let one = ok(d, &join(&["--io-depth", "1"]));
    let count = |report: &str| report.split(" output tuples").next().unwrap().to_string();
    for backend in ["auto", "threads"] {
        let deep = ok(d, &join(&["--io-depth", "4096", "--io-backend", backend]));
        assert_eq!(count(&deep), count(&one), "{deep}");
    }
    refused_str(
        d,
        &["bench", "disk", "--dir", ".", "--queue-depths", "1,100000"],
        2,
        &["--queue-depths", "1..=1024"],
    );
    refused_str(
        d,
        &["bench", "disk", "--dir", ".", "--ms-per-point", "1e30"],
        2,
        &["--ms-per-point"],
    );
    refused_str(
        d,
        &[
            "updatable",
            "run",
            "--kind",
            "btree",
            "--workload",
            "scan",
            "--dist",
            "udense",
            "--scan-len",
            "0",
        ],
        2,
        &["--scan-len", "1..=1000000"],
    );
    refused_str(
        d,
        &["kv", "gen", "--rows", "1e11", "--out", "x.tsv"],
        2,
        &["--rows", "10G"],
    );
    refused_str(
        d,
        &[
            "kv",
            "gen",
            "--rows",
            "1",
            "--value-size",
            "1TiB",
            "--out",
            "x.tsv",
        ],
        2,
        &["--value-size", "1GiB"],
    );
}

#[test]
fn negative_and_oversized_numbers_are_numbers() {
    let dir = setup();
    let d = dir.path();
    refused_str(
        d,
        &[
            "gen",
            "--dist",
            "udense",
            "--n",
            "100",
            "--duplicates",
            "-0.5",
            "--out",
            "x.keys",
        ],
        1,
        &["-0.5 is not in [0, 1)"],
    );
    refused_str(
        d,
        &[
            "gen",
            "--sample-of",
            "s.keys",
            "--fraction",
            "-1",
            "--out",
            "x.keys",
        ],
        1,
        &["-1 is not in (0, 1]"],
    );
    refused_str(
        d,
        &[
            "gen",
            "--sample-of",
            "s.keys",
            "--ratio",
            "-10",
            "--out",
            "x.keys",
        ],
        1,
        &["-10 is not a number of at least 1"],
    );
    refused_str(
        d,
        &[
            "sort",
            "--table",
            "s.tbl",
            "--memory-limit",
            "16EiB",
            "--out",
            "x.tbl",
        ],
        2,
        &["'16EiB' is too large"],
    );
}

#[test]
fn keys_that_are_not_utf8_are_found_as_bytes_and_as_hex() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("k.tsv"),
        b"\xff\xfe\tff-fe\n\x00a\tnul-a\nb\tbee\n\xff\x00\tff-nul\n",
    )
    .unwrap();
    ok(d, &["kv", "build", "--input", "k.tsv", "--out", "k.kv"]);
    let run = |args: &[&OsStr]| {
        let out = lidx().current_dir(d).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "lidx {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let raw = OsStr::from_bytes(b"\xff\xfe");
    let s = OsStr::new;
    assert_eq!(run(&[s("kv"), s("get"), s("k.kv"), raw]), b"ff-fe\n");
    assert_eq!(
        run(&[s("kv"), s("get"), s("--hex"), s("k.kv"), s("fffe")]),
        b"ff-fe\n"
    );
    assert_eq!(
        run(&[s("kv"), s("get"), s("k.kv"), s("FFFE"), s("--hex")]),
        b"ff-fe\n"
    );
    // NUL bytes, which no argument can hold, through --hex.
    assert_eq!(
        run(&[s("kv"), s("get"), s("--hex"), s("k.kv"), s("0061")]),
        b"nul-a\n"
    );
    assert_eq!(
        run(&[s("kv"), s("get"), s("--hex"), s("k.kv"), s("ff00")]),
        b"ff-nul\n"
    );
    // Scans from the raw key and from its hex, in byte order.
    assert_eq!(
        run(&[s("kv"), s("scan"), s("k.kv"), raw]),
        b"\xff\xfe\tff-fe\n"
    );
    assert_eq!(
        run(&[s("kv"), s("scan"), s("--hex"), s("k.kv"), s("ff")]),
        b"\xff\x00\tff-nul\n\xff\xfe\tff-fe\n"
    );
    assert_eq!(
        run(&[
            s("kv"),
            s("scan"),
            s("--hex"),
            s("k.kv"),
            s(""),
            s("--rows"),
            s("2")
        ]),
        b"\x00a\tnul-a\nb\tbee\n"
    );
    refused(
        d,
        &[s("kv"), s("get"), s("--hex"), s("k.kv"), s("fff")],
        1,
        &["'fff' is not hex digits"],
    );
    refused(
        d,
        &[s("kv"), s("get"), s("--hex"), s("k.kv"), s("zz")],
        1,
        &["'zz' is not hex digits"],
    );
}
