//! Paper 5's study ("Are Joins over LSM-trees Ready?", section 4): the 29 join methods over
//! R and S in RocksDB, swept over the factors of Figs. 5–12, with the cost model's pick
//! (Tables 2–4, [`cost::advise`](lidx_lsm::joins::cost::advise)) checked against the
//! measured fastest method in every cell.
//!
//! - **Fig. 5a**: join latency against entry size (32 B to 4 KiB), INLJ-P, SJ-P, HJ-P and
//!   SJ-PS.
//! - **Fig. 5b**: system latency (joins and index upkeep) against join frequency: a fixed
//!   number of updates in F batches, a join after each.
//! - **Fig. 5c**: join and index latency against the matching rate ε.
//! - **Fig. 6**: the six INLJ index designs (Eager, Lazy, Comp; synchronous, validation)
//!   against entry size, on skewed and on uniform data.
//! - **Fig. 7**: the same six over a grid of primary-key (c) and attribute (d) duplication.
//! - **Fig. 8**: the same six against Zipf skew θ.
//! - **Fig. 9**: the same six against join frequency.
//! - **Fig. 10**: cumulative join and index latency as updates arrive in ten batches.
//! - **Fig. 11**: size ratio T and write buffer M.
//! - **Fig. 12**: block cache and Bloom filter bits per key.
//! - **Fig. 13b**: the hybrid hash join against grace's, on every data set and with more
//!   join memory.
//! - **Fig. 13c**: threads.
//!
//! Every (cell, method) pair is one run in a fresh database: the method's indexes exist
//! from the start and every row is written through them (the paper's ingestion; their
//! time, flushes and compactions included, is the index latency), the workload's rows
//! arrive in F batches, and after each batch the trees are settled and the method joins R
//! and S, counting its output. Methods answering the same join must count the same
//! output after every batch, or the study stops.
//!
//! Data sets are synthetic with the features of the paper's Table 5 (duplication d,
//! matching rate ε, skew θ): `unif` and `zipf` as the paper's, and `face-like`,
//! `wiki-like`, `user-like`, `movie-like` standing in for the real sets, labelled so.
//! [`Options::data`] replaces a stand-in by SOSD key files (`face`, `wiki`: the SOSD sets,
//! joined with themselves; `user`, `movie`: two columns), read as
//! [`lidx_lsm::joins::keys`] says; their ε and d are then measured from the rows.
//! The databases are small enough to stay in the page cache, as the paper's 0.5 GB did
//! on its 256 GB server: runs are warm. The write buffer is scaled with the data (the
//! paper's 16 MB for 10M rows), so the trees have the paper's number of levels.
//!
//! The cost model prices I/O; to compare its pick with warm runs it is priced by a
//! profile calibrated once on this machine (seconds per sequential block from a hash
//! join, per random block read from INLJ-P, on `unif`), and also by the assumed cold SSD
//! that `lidx lsm advise` uses without a profile.
//!
//! The study in parts: `cells` (data sets and every figure's cells),
//! `measure` (running one cell), `rows` (the CSV rows), `calibrate` and
//! `advice` (the cost model priced on this machine, and its picks), `study` (the runs
//! read back), `plots`, `summary` and `findings` (the paper's finding beside ours, one
//! function per figure), `verdicts` (the paper's statements judged, agree or not).

mod advice;
mod calibrate;
mod cells;
mod findings;
mod measure;
mod plots;
mod rows;
mod study;
mod summary;
mod verdicts;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use anyhow::Context as _;
use lidx_lsm::joins::AttrFiles;

use self::advice::advise_cells;
use self::calibrate::calibrate;
use self::cells::DATA_SETS;
use self::measure::Measuring;
pub use self::rows::{AdviceRow, Row};
use self::study::Study;
use crate::csv_rows::write_rows;
use crate::harness::{Results, data_dir, measure};
use crate::progress::Progress;

/// One of the paper's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Figure {
    /// Entry size against join algorithms.
    F5a,
    /// Join frequency against join algorithms.
    F5b,
    /// Matching rate against join algorithms.
    F5c,
    /// Entry size against index designs.
    F6,
    /// Duplication of keys and attributes against index designs.
    F7,
    /// Skew against index designs.
    F8,
    /// Join frequency against index designs.
    F9,
    /// Cumulative latency as updates arrive.
    F10,
    /// Size ratio and write buffer.
    F11,
    /// Block cache and Bloom filter bits.
    F12,
    /// The hybrid hash join against grace's (section 5.4).
    F13b,
    /// Threads (section 4.9's case study).
    F13c,
}

impl Figure {
    /// Every figure, in the paper's order.
    pub const ALL: [Figure; 12] = [
        Figure::F5a,
        Figure::F5b,
        Figure::F5c,
        Figure::F6,
        Figure::F7,
        Figure::F8,
        Figure::F9,
        Figure::F10,
        Figure::F11,
        Figure::F12,
        Figure::F13b,
        Figure::F13c,
    ];

    /// `5a`, `10`, as the paper numbers it.
    pub fn name(self) -> &'static str {
        match self {
            Figure::F5a => "5a",
            Figure::F5b => "5b",
            Figure::F5c => "5c",
            Figure::F6 => "6",
            Figure::F7 => "7",
            Figure::F8 => "8",
            Figure::F9 => "9",
            Figure::F10 => "10",
            Figure::F11 => "11",
            Figure::F12 => "12",
            Figure::F13b => "13b",
            Figure::F13c => "13c",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Figure::F5a => "entry size and join algorithms",
            Figure::F5b => "join frequency and join algorithms",
            Figure::F5c => "matching rate and join algorithms",
            Figure::F6 => "entry size and index designs",
            Figure::F7 => "key and attribute duplication and index designs",
            Figure::F8 => "skew and index designs",
            Figure::F9 => "join frequency and index designs",
            Figure::F10 => "cumulative latency under updates",
            Figure::F11 => "size ratio and write buffer",
            Figure::F12 => "block cache and Bloom filter",
            Figure::F13b => "hybrid and grace hash joins",
            Figure::F13c => "threads and join algorithms",
        }
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Figure {
    type Err = String;

    /// `5a`, `fig5a` or `Fig. 5a` (case-insensitive).
    fn from_str(s: &str) -> Result<Figure, String> {
        let lower = s.trim().to_ascii_lowercase();
        let bare = lower
            .trim_start_matches("fig")
            .trim_start_matches('.')
            .trim();
        Figure::ALL
            .into_iter()
            .find(|f| f.name() == bare)
            .ok_or_else(|| {
                format!(
                    "no figure '{s}' in paper 5's study (figures: {})",
                    Figure::ALL.map(Figure::name).join(", ")
                )
            })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Rows of S (and of R) a workload writes in all, before each figure's scaling
    /// (paper 5: 10M).
    pub rows: u64,
    /// The figures to run.
    pub figures: Vec<Figure>,
    /// The data trees' write buffer; `None`: the paper's code's 64 MiB scaled by
    /// rows / 10M (at least 64 KiB).
    pub write_buffer: Option<usize>,
    /// Every index tree's write buffer; `None`: the paper's code's 8,382,464 bytes scaled by
    /// rows / 10M (at least 64 KiB).
    pub index_write_buffer: Option<usize>,
    /// The memory of the sort and hash joins; `None`: the paper's 16 MB scaled by
    /// rows / 10M (at least 1 MiB).
    pub join_memory: Option<u64>,
    /// Key files that replace the stand-ins for the paper's real data sets, by name
    /// (`face`, `wiki`, `user`, `movie`).
    pub data: Vec<(String, AttrFiles)>,
    /// Where the databases go while they run; `None`: `OUT_DIR/data`.
    pub dir: Option<PathBuf>,
    /// Where the CSV, plots and summary go; `None`: `results/lsm-joins`.
    pub out_dir: Option<PathBuf>,
    /// Seed of the workloads.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rows: 50_000,
            figures: Figure::ALL.to_vec(),
            write_buffer: None,
            index_write_buffer: None,
            join_memory: None,
            data: Vec::new(),
            dir: None,
            out_dir: None,
            seed: 42,
        }
    }
}

/// Runs the study; returns the summary.
pub fn run(o: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    anyhow::ensure!(
        o.rows >= 1_000,
        "--rows {}: the study needs at least 1000 rows a table",
        o.rows
    );
    anyhow::ensure!(!o.figures.is_empty(), "no figures to run");
    for (name, files) in &o.data {
        anyhow::ensure!(
            DATA_SETS.iter().any(|d| d.real == Some(name.as_str())),
            "--data {name}: key files replace face, wiki, user or movie"
        );
        files
            .clone()
            .take(1, 1)
            .with_context(|| format!("--data {name}"))?;
    }
    let mut results = Results::create(
        o.out_dir.as_deref(),
        "lsm-joins",
        ["lsm-joins.csv", "lsm-advice.csv", "summary.md"],
    )?;
    // The databases are made in a scratch directory inside --dir (or OUT/data).
    let data = data_dir(o.dir.as_deref(), &results.dir, false)?;
    let data_dir = data.path();
    let machine = crate::machine::describe();
    let started = Instant::now();

    progress.spin("calibrating the cost model on this machine");
    let calibration = calibrate(&data_dir.join("calibration"), o)?;
    progress.finish();
    let mut measuring = Measuring::new(o, data_dir, &machine);
    let (cells, rows) = measure(&mut measuring, "paper 5's study", "runs", progress)?;
    let runs = measuring.runs;
    drop(data);

    let advice = advise_cells(o, &cells, &runs, &calibration.profile, &machine);
    write_rows(results.file(0), &rows)?;
    write_rows(results.file(1), &advice)?;
    let study = Study {
        cells: &cells,
        runs: &runs,
        advice: &advice,
    };
    study.plots(&results.dir)?;
    let text = study.summary(o, &machine, &calibration, started.elapsed().as_secs_f64());
    results.file(2).write_all(text.as_bytes())?;
    let (dir, [csv, advice, summary]) = results.publish()?;
    Ok(format!(
        "{text}\nwrote {}, {}, {} and the plots in {}",
        csv.display(),
        advice.display(),
        summary.display(),
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::advice::ranks;
    use super::cells::cells;
    use super::*;

    #[test]
    fn figures_parse_and_every_cell_names_real_methods() {
        assert_eq!("fig5a".parse::<Figure>(), Ok(Figure::F5a));
        assert_eq!("Fig. 10".parse::<Figure>(), Ok(Figure::F10));
        assert!("13".parse::<Figure>().is_err());
        let o = Options::default();
        let cells = cells(&o);
        assert!(
            Figure::ALL
                .iter()
                .all(|f| cells.iter().any(|c| c.figure == *f))
        );
        for c in &cells {
            let least = if c.figure == Figure::F13b { 2 } else { 4 };
            assert!(c.methods.len() >= least, "Fig. {} {}", c.figure, c.dataset);
            c.workload.check().expect("a valid workload");
            c.config.check().expect("valid settings");
        }
        assert_eq!(ranks(&[3.0, 1.0, 2.0]), vec![3, 1, 2]);
    }

    #[test]
    fn a_small_study_runs_checks_outputs_and_writes_its_files() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let o = Options {
            rows: 2_000,
            figures: vec![
                Figure::F5b,
                Figure::F7,
                Figure::F10,
                Figure::F13b,
                Figure::F13c,
            ],
            out_dir: Some(dir.path().to_path_buf()),
            ..Options::default()
        };
        let summary = run(&o, &crate::Quiet).expect("the study runs");
        assert!(summary.contains("Fig. 5b"), "{summary}");
        assert!(summary.contains("picked the measured fastest"), "{summary}");
        let csv = std::fs::read_to_string(dir.path().join("lsm-joins.csv")).expect("csv");
        let header = csv.lines().next().expect("a header");
        assert!(header.starts_with("figure,dataset,param,x"), "{header}");
        // Fig. 5b: 4 methods × (1 + 2 + 4 + 8 + 16 + 32) joins × 2 data sets; Fig. 7: 6 × 25
        // cells; Fig. 10: 5 methods × 10 joins × 2 data sets; Fig. 13b: 2 methods on 6 data
        // sets and 3 more memories; Fig. 13c: 4 methods × 5 thread counts.
        assert_eq!(
            csv.lines().count() - 1,
            4 * 63 * 2 + 6 * 25 + 5 * 10 * 2 + 2 * 9 + 4 * 5
        );
        assert!(
            summary.contains("The paper's statements against this run"),
            "{summary}"
        );
        assert!(summary.contains("| Fig. 7: "), "{summary}");
        assert!(summary.contains("out of sample"), "{summary}");
        let advice = std::fs::read_to_string(dir.path().join("lsm-advice.csv")).expect("csv");
        // Fig. 10's cells hold both joins: their methods are ranked apart, each from 1.
        let fig10: Vec<&str> = advice
            .lines()
            .filter(|l| l.starts_with("10,unif"))
            .collect();
        assert_eq!(fig10.len(), 5, "{advice}");
        let firsts = fig10
            .iter()
            .filter(|l| l.contains(",key,") && l.split(',').nth(11) == Some("1"))
            .count()
            + fig10
                .iter()
                .filter(|l| l.contains(",attribute,") && l.split(',').nth(11) == Some("1"))
                .count();
        assert_eq!(firsts, 2, "{fig10:?}");
        assert!(summary.contains("## Fig. 13c"), "{summary}");
        for png in [
            "fig5b-user-like-joins-total.png",
            "fig7-unif-join.png",
            "fig10-zipf-index.png",
            "fig13c-face-like-threads-join.png",
            "fig13b-datasets-join.png",
            "fig13b-unif-join_memory-join.png",
        ] {
            assert!(dir.path().join(png).exists(), "{png}");
        }
        assert!(!dir.path().join("data").exists());
    }
}
