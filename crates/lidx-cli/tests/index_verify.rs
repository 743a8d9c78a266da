//! `lidx index verify` on every kind of index file: valid files pass and print what was
//! checked; damage the readers cannot see (a flipped byte in a header's unused bytes, in a
//! page a command never reads, a checksum recomputed after a change) ends in one
//! `lidx: error:` line naming the file and the problem, exit code 1.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::path::Path;

mod common;

use common::{lidx, ok};
use lidx::storage::format::block_checksum as crc32c;

/// Runs `lidx args` in `dir`, expects exit code 1 and one error line containing every
/// piece of `wants`; returns the line.
fn fails(dir: &Path, args: &[&str], wants: &[&str]) -> String {
    let out = lidx().current_dir(dir).args(args).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "lidx {args:?}: stderr {stderr}");
    assert!(out.stdout.is_empty(), "lidx {args:?} printed to stdout");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "want one error line, got {stderr:?}");
    assert!(lines[0].starts_with("lidx: error: "), "{stderr}");
    for want in wants {
        assert!(
            lines[0].contains(want),
            "error {:?} lacks {want:?}",
            lines[0]
        );
    }
    lines[0].to_string()
}

/// A scratch directory with a sorted table `s.tbl` (2,000 lognormal keys, a sample of them
/// in `sr.tbl`), an unsorted one `u.tbl` (500 keys), and an index of every kind: `KIND.idx`
/// over `s.tbl`, `s.alex`, and `u.pidx` and `u.bti` over `u.tbl`.
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let gen_keys = ["gen", "--dist", "lognormal", "--n", "2000", "--seed", "1"];
    ok(d, &[&gen_keys[..], &["--out", "s.keys"]].concat());
    ok(d, &["table", "build", "--keys", "s.keys", "--out", "s.tbl"]);
    ok(
        d,
        &[
            "gen",
            "--dist",
            "usparse",
            "--n",
            "500",
            "--shuffle",
            "--out",
            "u.keys",
        ],
    );
    ok(d, &["table", "build", "--keys", "u.keys", "--out", "u.tbl"]);
    for kind in ["pgm", "sampled-pgm", "rs", "rmi", "btree", "binary"] {
        let out = format!("{kind}.idx");
        ok(
            d,
            &[
                "index", "build", "--table", "s.tbl", "--kind", kind, "--out", &out,
            ],
        );
    }
    let unclustered = [
        ("alex", "s.tbl", "s.alex"),
        ("partition", "u.tbl", "u.pidx"),
    ];
    for (kind, table, out) in unclustered
        .into_iter()
        .chain([("btree-inserts", "u.tbl", "u.bti")])
    {
        ok(
            d,
            &[
                "index", "build", "--table", table, "--kind", kind, "--out", out,
            ],
        );
    }
    dir
}

/// Writes `bytes` to `dir/name`.
fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[test]
fn valid_files_of_every_kind_verify_and_say_what_was_checked() {
    let dir = setup();
    let d = dir.path();
    let files = [
        ("pgm.idx", "s.tbl"),
        ("sampled-pgm.idx", "s.tbl"),
        ("rs.idx", "s.tbl"),
        ("rmi.idx", "s.tbl"),
        ("btree.idx", "s.tbl"),
        ("binary.idx", "s.tbl"),
        ("s.alex", "s.tbl"),
        ("u.pidx", "u.tbl"),
        ("u.bti", "u.tbl"),
    ];
    for (file, table) in files {
        let alone = ok(d, &["index", "verify", file]);
        assert!(alone.starts_with(&format!("{file}: ok: ")), "{alone}");
        assert!(alone.contains("every invariant holds"), "{alone}");
        assert_eq!(alone.lines().count(), 1, "{alone}");
        let bytes = std::fs::metadata(d.join(file)).unwrap().len();
        assert!(
            alone.contains(&format!(" file of {bytes} bytes")),
            "{alone}"
        );
        let with = ok(d, &["index", "verify", file, "--table", table]);
        let n = if table == "s.tbl" { 2000 } else { 500 };
        assert!(
            with.contains(&format!(
                "; {n} tuples of {table} found where the index says"
            )),
            "{with}"
        );
    }
    let idx = ok(d, &["index", "verify", "pgm.idx"]);
    assert!(
        idx.contains("index file of") && idx.contains("2000 keys; 1 checksum matches"),
        "{idx}"
    );
    let pidx = ok(d, &["index", "verify", "u.pidx"]);
    assert!(
        pidx.contains("partition file of") && pidx.contains("500 tuples in"),
        "{pidx}"
    );
    let bti = ok(d, &["index", "verify", "u.bti"]);
    assert!(
        bti.contains("btree-inserts file of") && bti.contains("500 entries in"),
        "{bti}"
    );
}

#[test]
fn a_flipped_unused_header_byte_is_refused_by_info_and_verify() {
    let dir = setup();
    let d = dir.path();
    for file in ["s.alex", "u.pidx", "u.bti"] {
        let good = std::fs::read(d.join(file)).unwrap();
        for at in [100, 4095] {
            let mut bad = good.clone();
            bad[at] ^= 0x40;
            let name = format!("bad-{at}-{file}");
            write(d, &name, &bad);
            let want = format!("{name}: header byte {at} is 0x40 where the format has zero");
            fails(d, &["index", "info", &name], &[&want]);
            fails(d, &["index", "verify", &name], &[&want]);
        }
    }
}

#[test]
fn four_flipped_bytes_in_the_middle_of_a_partitions_file_pass_info_and_fail_verify() {
    let dir = setup();
    let d = dir.path();
    let mut bytes = std::fs::read(d.join("u.pidx")).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 4] {
        *b ^= 0xff;
    }
    write(d, "mid.pidx", &bytes);
    ok(d, &["index", "info", "mid.pidx"]);
    fails(
        d,
        &["index", "verify", "mid.pidx"],
        &["mid.pidx: checksum mismatch in data block"],
    );
}

#[test]
fn an_index_forged_with_its_checksum_passes_info_and_fails_verify_against_the_table() {
    let dir = setup();
    let d = dir.path();
    let mut bytes = std::fs::read(d.join("pgm.idx")).unwrap();
    // The pgm payload starts with ε at byte 56: 127 becomes 1; the CRC follows the payload.
    assert_eq!(bytes[56..64], 127u64.to_le_bytes());
    bytes[56..64].copy_from_slice(&1u64.to_le_bytes());
    let body = bytes.len() - 4;
    let crc = crc32c(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
    write(d, "forged.idx", &bytes);
    ok(d, &["index", "info", "forged.idx", "--table", "s.tbl"]);
    ok(d, &["index", "verify", "forged.idx"]);
    fails(
        d,
        &["index", "verify", "forged.idx", "--table", "s.tbl"],
        &["forged.idx: the window of key", "does not hold"],
    );
}

#[test]
fn other_files_and_other_tables_are_refused() {
    let dir = setup();
    let d = dir.path();
    fails(
        d,
        &["index", "verify", "s.tbl"],
        &["s.tbl: not a lidx index file"],
    );
    fails(
        d,
        &["index", "verify", "nothere.idx"],
        &["nothere.idx: cannot open"],
    );
    fails(
        d,
        &["index", "verify", "pgm.idx", "--table", "u.tbl"],
        &["u.tbl", "not sorted"],
    );
    let other_keys = ["gen", "--dist", "lognormal", "--n", "2000", "--seed", "2"];
    ok(d, &[&other_keys[..], &["--out", "o.keys"]].concat());
    ok(d, &["table", "build", "--keys", "o.keys", "--out", "o.tbl"]);
    for file in ["pgm.idx", "s.alex"] {
        fails(
            d,
            &["index", "verify", file, "--table", "o.tbl"],
            &[
                file,
                "the index was built for other keys than those of o.tbl",
            ],
        );
    }
    fails(
        d,
        &["index", "verify", "u.pidx", "--table", "s.tbl"],
        &["u.pidx: the index holds 500 tuples", "rebuild it"],
    );
    fails(
        d,
        &["index", "verify", "u.bti", "--table", "s.tbl"],
        &["u.bti: the index holds 500 entries", "rebuild it"],
    );
}
