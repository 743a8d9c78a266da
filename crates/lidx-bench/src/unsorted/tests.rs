//! Paper 1's unsorted tables (section 5.4), the study's cells against a small run: every
//! key set, repeat and limit in order, each counting a step per build, join and sort it
//! runs. The runs are a stand-in for `lidx` (see the sorted joins' tests), so the test
//! needs no `lidx` executable and judges no time.

use lidx::data::Distribution;
use lidx::partition::Entries;

use super::measure::{Baselines, Cell, Measuring};
use super::{Cgroups, INDEXES, OTHER_JOINS, Options, SORTS};
use crate::harness::{self, Experiment};
use crate::join_sorted::tests::{Counted, files, setup};

#[test]
fn every_set_repeat_and_limit_is_a_cell_with_a_step_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(
        dir.path(),
        &[Distribution::Udense, Distribution::Lognormal],
        2_000,
    );
    let o = Options {
        limits: Some(vec![1 << 20, 8 << 20]),
        cgroups: Cgroups::None,
        entries: Entries::ALL.to_vec(),
        ratios: vec![1, 10],
        repeat: 2,
    };
    let limits = o.limits(setup.n).unwrap();
    let (study, _outputs) = setup
        .begin("unsorted", ["x.csv"], &Counted::default())
        .unwrap();
    let data = &study.dirs.data;
    let baselines = Baselines::new(&setup, data).unwrap();
    let mut measuring = Measuring::new(&setup, &o, &limits, &study.sets, data, baselines);

    let cells = measuring.cells().unwrap();
    let mut want = Vec::new();
    for set in 0..2 {
        for repeat in 0..2 {
            for limit in 0..2 {
                want.push(Cell { set, repeat, limit });
            }
        }
    }
    assert_eq!(cells, want);
    // Every index (two kinds, of pointers and of tuples) of S and of each R, every route at
    // each ratio, every sort.
    let per_cell =
        (INDEXES.len() * 3 + (INDEXES.len() + OTHER_JOINS.len()) * 2 + SORTS.len()) as u64;
    assert_eq!(per_cell, 4 * 3 + 6 * 2 + 3);
    for cell in &cells {
        assert_eq!(measuring.steps(cell), per_cell);
    }

    let counted = Counted::default();
    let (_, rows) = harness::measure(&mut measuring, "unsorted", "runs", &counted).unwrap();
    let total = cells.len() as u64 * per_cell;
    assert_eq!(*counted.totals.borrow(), [total]);
    assert_eq!(counted.steps.get(), total);
    assert_eq!(rows.len() as u64, total);
    // The rows come cell by cell.
    for (cell, rows) in cells.iter().zip(rows.chunks(per_cell as usize)) {
        let set = ["udense", "lognormal"][cell.set];
        assert!(
            rows.iter().all(|r| r.set == set && r.repeat == cell.repeat),
            "{cell:?}"
        );
    }
    // Each set's tables went after its last cell; the baselines' files go with the study.
    let left = files(data);
    assert!(left.iter().all(|f| f.starts_with("baseline.")), "{left:?}");
    drop(measuring);
    assert!(files(data).is_empty(), "{:?}", files(data));
}
