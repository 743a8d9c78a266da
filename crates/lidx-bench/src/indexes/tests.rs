//! Paper 1's index study (section 5.2), the study's cells against a small run.

use lidx::data::Distribution;

use super::measure::{Cell, Measured, Measuring};
use super::*;
use crate::harness::Experiment as _;
use crate::join_sorted::tests::{Counted, files, setup};

/// The study's cells against a small run: per key set every index of Fig. 5, then
/// Table 2, a step per index and per size. The self-joins run in a stand-in for `lidx`
/// (see the sorted joins' tests), so the test needs no `lidx` executable and judges no
/// time.
#[test]
fn every_index_of_every_set_is_a_cell_and_table_2_one_more() {
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(
        dir.path(),
        &[Distribution::Udense, Distribution::Lognormal],
        2_000,
    );
    let indexes: Vec<Fig5Index> = ["pgm", "btree", "alex"]
        .iter()
        .map(|k| k.parse().unwrap())
        .collect();
    let o = Options {
        indexes: indexes.clone(),
        windows: vec![256, 1024, 4096],
        tune: false,
    };
    let (study, _outputs) = setup
        .begin("indexes", ["x.csv"], &Counted::default())
        .unwrap();
    let mut measuring = Measuring {
        setup: &setup,
        o: &o,
        sets: &study.sets,
        data: &study.dirs.data,
        machine: &study.machine,
        profile: &study.profile_path,
        set: None,
    };

    let cells = measuring.cells().unwrap();
    let mut want = Vec::new();
    for set in 0..2 {
        want.extend(indexes.iter().map(|&index| Cell::Fig5 { set, index }));
        want.push(Cell::Table2 { set });
    }
    assert_eq!(cells, want);
    let steps: Vec<u64> = cells.iter().map(|c| measuring.steps(c)).collect();
    // PGM and sampled PGM at 3 windows.
    assert_eq!(steps, [1, 1, 1, 2 * 3, 1, 1, 1, 2 * 3]);

    let counted = Counted::default();
    let (_, measured) = harness::measure(&mut measuring, "indexes", "steps", &counted).unwrap();
    let total: u64 = steps.iter().sum();
    assert_eq!(*counted.totals.borrow(), [total]);
    assert_eq!(counted.steps.get(), total);
    assert_eq!(measured.len() as u64, total);
    let shown: Vec<String> = measured
        .iter()
        .map(|m| match m {
            Measured::Fig5(r) => format!("{} {}", r.set, r.kind),
            Measured::Table2(s) => format!("{} {} w{}", s.key_set, s.index, s.window),
        })
        .collect();
    let mut want = Vec::new();
    for set in ["udense", "lognormal"] {
        want.extend(["pgm", "btree", "alex"].map(|k| format!("{set} {k}")));
        for kind in ["pgm", "sampled-pgm"] {
            want.extend([256, 1024, 4096].map(|w| format!("{set} {kind} w{w}")));
        }
    }
    assert_eq!(shown, want);
    // Each set's table and indexes went after its last cell.
    let data = &study.dirs.data;
    assert!(files(data).is_empty(), "{:?}", files(data));
}
