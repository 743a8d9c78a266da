#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

//! The demo's shape on small data: every section in order, as many lines in each as it
//! prints, and the files it leaves in its directory. No time or throughput is judged.

use std::path::Path;

use lidx::index::IndexKind;
use lidx::join::JoinMethod;
use lidx::updatable::Kind;
use lidx_bench::Quiet;
use lidx_bench::demo::{Options, run};
use lidx_bench::updatable::baselines::ConcurrentKind;

/// What the demo leaves in its directory, beside `lsm/` (feature `rocksdb`).
const FILES: [&str; 22] = [
    "clustered.keys",
    "clustered.tbl",
    "heavytail.keys",
    "heavytail.tbl",
    "lognormal.alex",
    "lognormal.bti",
    "lognormal.keys",
    "lognormal.pidx",
    "lognormal.sample.shuffled.tbl",
    "lognormal.sample.tbl",
    "lognormal.shuffled.tbl",
    "lognormal.sorted-back.tbl",
    "lognormal.tbl",
    "records-btree.kv",
    "records-learned.kv",
    "records-sstable.kv",
    "records-tuned.kv",
    "records.tsv",
    "udense.keys",
    "udense.paper1",
    "udense.roundtrip.tbl",
    "udense.tbl",
];

#[test]
fn the_demo_says_every_section_in_order_and_leaves_its_files() {
    // On the disk the build is on (it has O_DIRECT, unlike some /tmp file systems).
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = root.path().join("demo");
    let lines = demo_lines(&dir, 20_000);
    let all = lines.join("\n");
    assert!(lines.iter().all(|l| !l.contains('\n')), "{all}");

    // The title, then sections: each an empty line, its heading, and its lines.
    let mut groups = lines.split(|l| l.is_empty());
    let title = groups.next().unwrap();
    assert_eq!(
        title,
        [format!(
            "lidx demo: learned indexes on data that lives on disk. Files in {}",
            dir.display()
        )]
    );
    let sections: Vec<&[String]> = groups.collect();
    let mut expected: Vec<(&str, usize)> = vec![
        ("1. Key sets", 1 + 4),
        ("2. Tables", 4),
        ("3. Cold window reads", 2 + 4 * 3),
        ("4. Exchange with paper 1's code", 1),
        // A note, the table's two header lines and a row per kind, PGM's segments and
        // the hardness.
        ("5. Indexes", 1 + 2 + IndexKind::ALL.len() + 2),
        // The header, three indexes, 32 in flight, merge, hash, ALEX.
        ("6. Joins", 1 + 3 + 1 + 2 + 1),
        ("7. Unsorted tables", 3 + JoinMethod::UNSORTED.len()),
        ("8. Key-value files", 2 + 1),
        ("8b. Layers tuned to the storage", 2 + 2 + 1),
        ("8c. Updatable indexes", Kind::ALL.len() + 1),
        (
            "8d. Concurrent updatable indexes",
            ConcurrentKind::ALL.len() + 1,
        ),
    ];
    if cfg!(feature = "rocksdb") {
        // Seven joins, the model's pick for each of the two joins, the pointer.
        expected.push(("8e. Joins over LSM-trees", 7 + 2 + 1));
    }
    expected.push(("9. The disk under these files", usize::MAX));
    expected.push(("Next: lidx gen --help", 0));
    let headings: Vec<&str> = sections.iter().map(|s| s[0].as_str()).collect();
    assert_eq!(sections.len(), expected.len(), "{headings:#?}");
    for (section, (heading, count)) in sections.iter().zip(&expected) {
        assert!(section[0].starts_with(heading), "{headings:#?}");
        let body = &section[1..];
        if *count != usize::MAX {
            assert_eq!(body.len(), *count, "{heading}:\n{}", body.join("\n"));
        }
    }

    // What the lines hold, beyond their count.
    let body = |i: usize| &sections[i][1..];
    let sets = ["udense", "lognormal", "clustered", "heavytail"];
    for (row, set) in body(0)[1..].iter().zip(sets) {
        assert!(row.trim_start().starts_with(set), "{row}");
    }
    for row in body(1) {
        assert!(row.contains(" 20000 tuples, "), "{row}");
    }
    assert!(body(3)[0].ends_with(": byte-identical"), "{all}");
    assert!(
        body(6)[2].ends_with("the very table it came from: yes"),
        "{all}"
    );
    for (row, kind) in body(9).iter().zip(Kind::ALL) {
        assert!(row.trim_start().starts_with(kind.name()), "{row}");
    }
    // The disk: skipped where O_DIRECT is refused, else its profile: the device, the
    // header, a row per point (4 read sizes by 2 patterns at depth 1, and random 4 KiB
    // reads at depths 1 and 8), and the two fitted lines.
    let disk = &sections[sections.len() - 2][1..];
    if !(disk.len() == 1 && disk[0].starts_with("   skipped: ")) {
        assert_eq!(disk.len(), 2 + 4 * 2 + 2 + 2, "{}", disk.join("\n"));
        assert!(disk[0].starts_with("device: "), "{}", disk.join("\n"));
        assert!(disk[1].starts_with("pattern "), "{}", disk.join("\n"));
        let points = &disk[2..disk.len() - 2];
        assert!(
            points
                .iter()
                .all(|p| p.starts_with("sequential ") || p.starts_with("random ")),
            "{}",
            disk.join("\n")
        );
        assert!(disk[disk.len() - 2].starts_with("model, sequential"));
        assert!(disk[disk.len() - 1].starts_with("model, random"));
    }

    // Its files stay; nothing else does (the disk measurement's scratch directory is gone).
    let mut want = FILES.to_vec();
    if cfg!(feature = "rocksdb") {
        want.push("lsm");
    }
    want.sort_unstable();
    assert_eq!(listing(&dir), want);
}

/// The lines of the demo on `n` keys in `dir`, in the order they were said.
fn demo_lines(dir: &Path, n: usize) -> Vec<String> {
    let options = Options {
        n,
        dir: Some(dir.to_path_buf()),
    };
    let mut lines = Vec::new();
    run(
        &options,
        &mut |line: &str| {
            lines.push(line.to_string());
            Ok(())
        },
        &Quiet,
    )
    .unwrap();
    lines
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}
