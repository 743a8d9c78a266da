//! Paper 1's sorted joins (section 5.3), the study's cells against a small run: every key
//! set at every ratio in order, each counting a step per join it runs. The joins run in a
//! stand-in for `lidx`, so the test needs no `lidx` executable and judges no time. The
//! stand-in and the step counter serve paper 1's other studies' tests too.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use lidx::data::Distribution;
use lidx::index::IndexKind;
use lidx::join::{JoinRecord, JoinStats};
use lidx::partition::UnsortedRecord;

use super::Options;
use super::measure::Measuring;
use crate::harness::{self, Experiment, Setup};
use crate::progress::Progress;

/// A stand-in for the `lidx` executable, written into `dir`: whatever it is asked, it
/// creates the file named after `--out` (where there is one) and prints one record that
/// reads both as a [`JoinRecord`] and as an [`UnsortedRecord`].
pub(crate) fn stand_in_lidx(dir: &Path) -> PathBuf {
    let mut record = serde_json::to_value(UnsortedRecord::default()).unwrap();
    let join = JoinRecord::measured(
        "merge".into(),
        false,
        4096,
        (1, 1),
        &JoinStats::default(),
        0.0,
    );
    let join = serde_json::to_value(join).unwrap();
    let fields = join.as_object().unwrap().clone();
    record.as_object_mut().unwrap().extend(fields);
    let json = dir.join("record.json");
    std::fs::write(&json, record.to_string()).unwrap();
    let exe = dir.join("lidx");
    let script = format!(
        "#!/bin/sh\nwhile [ \"$#\" -gt 0 ]; do\n  if [ \"$1\" = --out ]; then : > \"$2\"; fi\n  shift\ndone\ncat '{}'\n",
        json.display()
    );
    std::fs::write(&exe, script).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

/// A setup of the key sets `sets`, `n` keys each, writing into `dir`, its profile lidx's
/// assumed SSD and its processes [`stand_in_lidx`].
pub(crate) fn setup(dir: &Path, sets: &[Distribution], n: u64) -> Setup {
    let profile = dir.join("p.json");
    lidx::storage::profile::assumed_ssd()
        .save(&profile)
        .unwrap();
    Setup {
        n,
        sets: Some(sets.to_vec()),
        keys: Vec::new(),
        dir: Some(dir.join("data")),
        out_dir: Some(dir.join("out")),
        profile: Some(profile),
        buffered: false,
        keep_data: false,
        seed: 42,
        exe: stand_in_lidx(dir),
    }
}

/// Progress that counts: the totals started and the steps done.
#[derive(Default)]
pub(crate) struct Counted {
    pub(crate) totals: std::cell::RefCell<Vec<u64>>,
    pub(crate) steps: std::cell::Cell<u64>,
}

impl Progress for Counted {
    fn start(&self, total: u64, _: &str, _: &str) {
        self.totals.borrow_mut().push(total);
    }
    fn spin(&self, _: &str) {}
    fn message(&self, _: &str) {}
    fn step(&self) {
        self.steps.set(self.steps.get() + 1);
    }
    fn finish(&self) {}
    fn warn(&self, _: &str) {}
}

/// The files in `dir`, sorted.
pub(crate) fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_set_at_every_ratio_is_a_cell_with_a_step_per_join() {
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(
        dir.path(),
        &[Distribution::Udense, Distribution::Lognormal],
        2_000,
    );
    let mut o = Options {
        ratios: vec![1, 10],
        threads: Some(vec![1, 2]),
        windows: vec![256, 1024],
        io_depths: vec![1, 4],
        indexes: vec![IndexKind::SampledPgm, IndexKind::BTree],
        read_size: 1 << 20,
        repeat: 2,
    };
    o.validate().unwrap();
    let (study, _outputs) = setup
        .begin("join-sorted", ["x.csv"], &Counted::default())
        .unwrap();
    let data = &study.dirs.data;
    let mut measuring = Measuring::new(&setup, &o, &study.sets, data, &study.profile_path);

    let cells = measuring.cells().unwrap();
    let shown: Vec<(usize, usize, u64)> = cells.iter().map(|c| (c.set, c.at, c.ratio)).collect();
    assert_eq!(shown, [(0, 0, 1), (0, 1, 10), (1, 0, 1), (1, 1, 10)]);
    // 2 repeats × 2 thread counts × (merge and hash at 2 windows and with large reads,
    // 2 indexes × 2 windows × 2 depths).
    let per_cell = 2 * 2 * (2 * 3 + 2 * 2 * 2);
    for cell in &cells {
        assert_eq!(measuring.steps(cell), per_cell);
    }

    let counted = Counted::default();
    let (_, rows) = harness::measure(&mut measuring, "join-sorted", "joins", &counted).unwrap();
    assert_eq!(*counted.totals.borrow(), [4 * per_cell]);
    assert_eq!(counted.steps.get(), 4 * per_cell);
    assert_eq!(rows.len() as u64, 4 * per_cell);
    // The rows come cell by cell.
    let per_cell = per_cell as usize;
    for (cell, rows) in cells.iter().zip(rows.chunks(per_cell)) {
        let set = ["udense", "lognormal"][cell.set];
        assert!(
            rows.iter().all(|r| r.set == set && r.ratio == cell.ratio),
            "{cell:?}"
        );
    }
    // Each set's table and indexes went after its last cell.
    assert!(files(data).is_empty(), "{:?}", files(data));
}
