//! Paper 3's study (GRE, "Are Updatable Learned Indexes Ready?"): every updatable kind on
//! every workload over key sets placed on the hardness plane, and the paper's figures.
//!
//! - **Fig. 2**: for each workload, the throughput of the best learned kind over the best
//!   traditional one, on a grid of the hardness generator's key sets (local × global
//!   segments, section 7) and on named sets (lidx's synthetic ones and SOSD files).
//! - **Fig. 3 / Table 3**: where an insert's time goes, from the write-only runs: its mean
//!   latency beside a lookup's (read-only), and per insert the nodes traversed, keys
//!   shifted, nodes created and structure modifications; and from write-only runs of
//!   their own over the easiest and the hardest set, each insert's time by phase (search,
//!   collision, statistics, SMO).
//! - **Fig. 7**: Fig. 2's ratio on the deletion workloads (bulk-load every key, then
//!   lookups and removals until half are gone), over the same sets.
//! - **Fig. 8**: the size of each index after the write-only workload.
//! - **Fig. 9**: ALEX-M, the ALEX-like index built at the density at which it takes
//!   LIPP's memory, against LIPP on the heatmap's workloads over the easiest and the
//!   hardest set.
//! - **Figs. 10–11**: p99 and p99.9 of lookups (read-only) and inserts (write-only), on
//!   the easiest and the hardest grid set, from runs of their own that time every
//!   operation alone (a percentile is reported where at least 100 samples lie beyond it).
//! - **Fig. 12**: balanced throughput when the inserted keys come from another set
//!   (easiest → hardest and back, rescaled onto one domain), against the same workload
//!   inserting keys of the bulk-loaded set's own source (generated with another seed).
//! - **Fig. 13**: scans of 10 to 10,000 entries.
//! - Bulk loads of n, 2n and 4n keys, to show each is linear.
//!
//! Every run is one process-local [`updatable::run`](crate::updatable::run): bulk load, then the workload's
//! operations timed as a whole, 1% of them timed alone. Kinds run one after another on the
//! same keys and plan, so ratios compare like with like.

//!
//! The study in parts: `sets` (key sets and their hardness), `measure`
//! (the cells and running one), `rows` (the CSV rows), `study` (the rows read back),
//! `plots`, `summary` (the tables) and `findings` (paper 3's messages beside this
//! run's, one function each).

mod findings;
mod measure;
mod plots;
mod rows;
mod sets;
mod study;
mod summary;

use std::path::PathBuf;
use std::time::Instant;

use lidx::data::{Distribution, KeyFile};
use lidx::updatable::{Kind, Workload};

use self::measure::Measuring;
pub use self::rows::Row;
use self::sets::name_of;
use self::study::Study;
use crate::csv_rows::write_rows;
use crate::harness::{Results, measure};
use crate::key_source::KeySource;
use crate::progress::Progress;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Keys per generated set (paper 3: 200M).
    pub n: usize,
    /// Operations per run at most (`None`: as many as keys).
    pub ops: Option<usize>,
    /// The grid's local hardness targets (segments at ε = 32), easiest first.
    pub local: Vec<u64>,
    /// The grid's global hardness targets (segments at ε = 4096), easiest first.
    pub global: Vec<u64>,
    /// lidx's synthetic sets to run beside the grid.
    pub sets: Vec<Distribution>,
    /// SOSD key files to run beside the grid.
    pub sosd: Vec<PathBuf>,
    /// The kinds.
    pub kinds: Vec<Kind>,
    /// The workloads of the heatmap (Fig. 2).
    pub workloads: Vec<Workload>,
    /// The deletion workloads of Fig. 7's heatmap (beside read-only, where it ran).
    pub delete_workloads: Vec<Workload>,
    /// Run Fig. 3's timed inserts: every kind on write-only over the easiest and the
    /// hardest set, each insert's phases timed.
    pub phases: bool,
    /// Run Fig. 9: ALEX-M (ALEX at the density that takes LIPP's memory) and LIPP on the
    /// heatmap's workloads over the easiest and the hardest set.
    pub alex_m: bool,
    /// Scan lengths of Fig. 13 (empty: no scans).
    pub scan_lens: Vec<usize>,
    /// Run Fig. 12's shifts.
    pub shift: bool,
    /// Runs of each measurement; the one of median throughput is kept.
    pub repeat: usize,
    /// Where the CSV, plots and summary go; `None`: `results/updatable`.
    pub out_dir: Option<PathBuf>,
    /// Seed of the keys and the plans.
    pub seed: u64,
}

impl Default for Options {
    /// Finishes in about 5 minutes on 2 cores: 500K keys, a 3 × 3 grid, two named sets,
    /// each measurement the median of 3 runs.
    fn default() -> Self {
        Options {
            n: 500_000,
            ops: None,
            local: vec![16, 160, 1600],
            global: vec![1, 4, 16],
            sets: vec![Distribution::Lognormal, Distribution::Clustered],
            sosd: Vec::new(),
            kinds: Kind::ALL.to_vec(),
            workloads: vec![
                Workload::ReadOnly,
                Workload::ReadIntensive,
                Workload::Balanced,
                Workload::WriteHeavy,
                Workload::WriteOnly,
            ],
            delete_workloads: vec![
                Workload::DeleteIntensive,
                Workload::DeleteBalanced,
                Workload::DeleteHeavy,
                Workload::DeleteOnly,
            ],
            alex_m: true,
            phases: true,
            scan_lens: vec![10, 100, 1000, 10_000],
            shift: true,
            repeat: 3,
            out_dir: None,
            seed: 42,
        }
    }
}

/// Whether a kind is learned (paper 3's learned indexes) or traditional.
pub fn is_learned(kind: Kind) -> bool {
    matches!(kind, Kind::DynamicPgm | Kind::Alex | Kind::Lipp)
}

/// Whether `w` is one of Fig. 7's deletion workloads.
pub fn is_deletion(w: Workload) -> bool {
    matches!(
        w,
        Workload::DeleteIntensive
            | Workload::DeleteBalanced
            | Workload::DeleteHeavy
            | Workload::DeleteOnly
    )
}

/// Runs the study; returns the summary.
pub fn run(o: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    anyhow::ensure!(
        o.n >= 16,
        "invalid n: the study needs at least 16 keys per set"
    );
    anyhow::ensure!(!o.kinds.is_empty(), "no kinds to run");
    anyhow::ensure!(
        o.kinds.iter().any(|&k| is_learned(k)) && o.kinds.iter().any(|&k| !is_learned(k)),
        "the study compares learned and traditional kinds: give at least one of each"
    );
    anyhow::ensure!(
        o.scan_lens.iter().all(|&l| l > 0),
        "scan lengths must be at least 1"
    );
    if let Some(w) = o.delete_workloads.iter().find(|w| !is_deletion(**w)) {
        anyhow::bail!(
            "{w} is not a deletion workload (Fig. 7 takes delete-intensive, delete-balanced, delete-heavy and delete-only)"
        );
    }
    for path in &o.sosd {
        KeyFile::open(path)?;
    }
    let mut grid = Vec::new();
    for &local in &o.local {
        for &global in &o.global {
            if local >= global {
                grid.push(KeySource::Hard { local, global });
            }
        }
    }
    let named: Vec<KeySource> = o
        .sets
        .iter()
        .map(|&d| KeySource::Synthetic(d))
        .chain(o.sosd.iter().cloned().map(KeySource::Sosd))
        .collect();
    let easy = grid.first().cloned().or_else(|| named.first().cloned());
    let hard = grid.last().cloned().or_else(|| named.last().cloned());
    let (Some(easy), Some(hard)) = (easy, hard) else {
        anyhow::bail!("no key sets: give a grid (--local, --global), --sets or --sosd");
    };
    let mut results = Results::create(
        o.out_dir.as_deref(),
        "updatable",
        ["updatable.csv", "summary.md"],
    )?;
    let machine = crate::machine::describe();
    let started = Instant::now();

    let scan_set = named.first().cloned().unwrap_or_else(|| easy.clone());
    let sources: Vec<KeySource> = grid.iter().chain(&named).cloned().collect();
    let mut measuring =
        Measuring::new(o, &machine, sources, (easy.clone(), hard.clone(), scan_set));
    let (_, rows) = measure(&mut measuring, "paper 3's study", "runs", progress)?;
    let sets_seen = measuring.sets_seen;

    write_rows(results.file(0), &rows)?;
    let study = Study {
        o,
        rows: &rows,
        grid: &grid,
        sets: &sets_seen,
        easy: name_of(&easy, &sets_seen),
        hard: name_of(&hard, &sets_seen),
    };
    study.plots(&results.dir)?;
    let text = study.summary(&machine, started.elapsed().as_secs_f64());
    results.file(1).write_all(text.as_bytes())?;
    let (dir, [csv, summary]) = results.publish()?;
    Ok(format!(
        "{text}\nwrote {}, {} and the plots in {}",
        csv.display(),
        summary.display(),
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Quiet;

    #[test]
    fn a_small_study_writes_every_row_plot_and_message() {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            n: 20_000,
            ops: Some(2_000),
            local: vec![4, 16],
            global: vec![1, 2],
            sets: vec![Distribution::Lognormal],
            scan_lens: vec![10, 100],
            repeat: 1,
            out_dir: Some(dir.path().to_path_buf()),
            ..Options::default()
        };
        let summary = run(&o, &Quiet).unwrap();
        let kinds = Kind::ALL.len();
        // 4 grid sets and 1 named, 5 workloads and 4 deletion ones; 4 tail runs; 2 runs
        // with every insert's phases timed; alex-m and lipp on 5 workloads over 2 sets; 2 scan lengths; 4 shift runs; 3 bulk sizes.
        let grid = 4;
        let want = (grid + 1) * 9 * kinds
            + 4 * kinds
            + 2 * kinds
            + 2 * 5 * 2
            + 2 * kinds
            + 4 * kinds
            + 3 * kinds;
        let csv = std::fs::read_to_string(dir.path().join("updatable.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + want, "{csv}");
        let header = csv.lines().next().unwrap();
        for column in [
            "part",
            "set",
            "kind",
            "workload",
            "ops_per_s",
            "insert_p999_ns",
            "size_bytes",
            "keys_shifted",
            "machine",
        ] {
            assert!(
                header.split(',').any(|c| c == column),
                "{column} missing: {header}"
            );
        }
        for png in [
            "fig2_heatmap.png",
            "fig2_sets.png",
            "fig2_heatmap_with_pgm.png",
            "fig2_sets_with_pgm.png",
            "fig3_insert_vs_lookup.png",
            "fig3_phases.png",
            "fig7_heatmap.png",
            "fig7_sets.png",
            "fig8_size.png",
            "fig9_alex_m.png",
            "fig12_shift.png",
            "fig13_scans.png",
        ] {
            let bytes = std::fs::read(dir.path().join(png)).unwrap();
            assert!(bytes.starts_with(b"\x89PNG"), "{png}");
        }
        let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
        assert!(summary.starts_with(&md[..200]));
        for needle in [
            "hard-l4-g1",
            "hard-l16-g2",
            "Fig. 2",
            "Table 3",
            "Fig. 3 by phase",
            "first step (its search)",
            "Fig. 7",
            "Fig. 8",
            "Fig. 9",
            "Deletions in learned indexes are light",
            "ALEX tuned to LIPP's memory",
            "Fig. 12",
            "Fig. 13",
            "Bulk loading is linear",
            "LIPP is the fastest",
            "dynamic-pgm is the fastest learned kind",
        ] {
            assert!(md.contains(needle), "{needle} missing:\n{md}");
        }
        // Every cell of the heatmap's table has a ratio and a winner.
        let fig2 = md
            .split("## Fig. 2")
            .nth(1)
            .unwrap()
            .split("## Fig. 3")
            .next()
            .unwrap();
        let rows: Vec<&str> = fig2
            .lines()
            .filter(|l| l.starts_with("| hard-") || l.starts_with("| lognormal"))
            .collect();
        assert_eq!(rows.len(), grid + 1, "{fig2}");
        for row in rows {
            let cells: Vec<&str> = row
                .split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            assert_eq!(cells.len(), 6, "{row}");
            for cell in &cells[1..] {
                let (ratio, kind) = cell.split_once("x ").unwrap_or_else(|| panic!("{row}"));
                assert!(ratio.parse::<f64>().is_ok_and(|r| r >= 0.0), "{row}");
                assert!(kind.parse::<Kind>().is_ok(), "{row}");
            }
        }
        // Fig. 7's table: read-only and the 4 deletion workloads, every cell judged.
        let fig7 = md.split("## Fig. 7").nth(1).unwrap();
        let fig7 = fig7.split("## Fig. 3").next().unwrap();
        let rows: Vec<&str> = fig7.lines().filter(|l| l.starts_with("| hard-")).collect();
        assert_eq!(rows.len(), grid, "{fig7}");
        for row in rows {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            // The set and 5 workloads, between empty ends.
            assert_eq!(cells.len(), 8, "{row}");
            assert!(cells[2..7].iter().all(|c| c.contains("x ")), "{row}");
        }
        // Fig. 9: alex-m's rows carry the density it was built at, below alex's 0.7.
        let alex_m: Vec<&str> = csv.lines().filter(|l| l.starts_with("alex-m,")).collect();
        assert_eq!(alex_m.len(), 2 * 5 * 2, "{csv}");
        let density_at = header.split(',').position(|c| c == "alex_density").unwrap();
        for line in alex_m.iter().filter(|l| l.contains(",alex-m,")) {
            let d: f64 = line.split(',').nth(density_at).unwrap().parse().unwrap();
            assert!((0.05..0.7).contains(&d), "{line}");
        }
        // Fig. 3 by phase: the kinds that divide an insert time its search, the others
        // time it whole.
        let at = |c: &str| header.split(',').position(|h| h == c).unwrap();
        let phases: Vec<Vec<&str>> = csv
            .lines()
            .filter(|l| l.starts_with("phases,"))
            .map(|l| l.split(',').collect())
            .collect();
        assert_eq!(phases.len(), 2 * kinds, "{csv}");
        for row in &phases {
            let ns = |c: &str| row[at(c)].parse::<f64>().unwrap();
            let whole = matches!(row[at("kind")], "dynamic-pgm" | "btreemap");
            assert_eq!(ns("search_ns") > 0.0, !whole, "{row:?}");
            assert_eq!(ns("undivided_ns") > 0.0, whole, "{row:?}");
        }
        // Nothing but the results is left behind.
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        // Figs. 10-11 are drawn only from tails of enough samples: none at this size.
        assert_eq!(names.len(), 14, "{names:?}");
        let tails = md.split("## Figs. 10–11").nth(1).unwrap();
        assert!(tails.contains("| alex | - / - (2000) |"), "{tails}");
    }

    #[test]
    fn messages_come_only_from_cells_that_ran() {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            n: 5_000,
            ops: Some(500),
            local: vec![4],
            global: vec![1],
            sets: vec![Distribution::Lognormal],
            workloads: vec![Workload::WriteHeavy, Workload::WriteOnly],
            scan_lens: Vec::new(),
            shift: false,
            repeat: 1,
            out_dir: Some(dir.path().to_path_buf()),
            ..Options::default()
        };
        let summary = run(&o, &Quiet).unwrap();
        // No read-only run: no claim about read-only lookups, and the heatmap's cells
        // name only the workloads that ran.
        assert!(!summary.contains("fastest read-only lookups"), "{summary}");
        assert!(!summary.contains("read-only 0/"), "{summary}");
        assert!(
            summary.contains("largest after write-only on 2/2 sets")
                || summary.contains("largest after write-only on 1/2 sets")
                || summary.contains("largest after write-only on 0/2 sets"),
            "{summary}"
        );
        assert!(
            summary.contains("write-only 0/1") || summary.contains("write-only 1/1"),
            "{summary}"
        );
    }

    #[test]
    fn the_heatmap_leaves_the_dynamic_pgm_out_as_paper_3_does() {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            n: 5_000,
            ops: Some(500),
            local: Vec::new(),
            sets: vec![Distribution::Lognormal],
            kinds: vec![Kind::DynamicPgm, Kind::BTreeMap],
            workloads: vec![Workload::WriteOnly],
            scan_lens: Vec::new(),
            shift: false,
            repeat: 1,
            out_dir: Some(dir.path().to_path_buf()),
            ..Options::default()
        };
        let summary = run(&o, &Quiet).unwrap();
        let fig2 = summary.split_once("## Fig. 2: ").unwrap().1;
        let fig2 = fig2.split_once("## Fig. 3").unwrap().0;
        let (as_paper, with_pgm) = fig2.split_once("### Fig. 2 with the dynamic PGM").unwrap();
        // With PGM the only learned kind, the paper's heatmap has no learned contender.
        let row = |t: &str| {
            t.lines()
                .find(|l| l.starts_with("| lognormal"))
                .unwrap()
                .to_string()
        };
        assert!(row(as_paper).contains("| - |"), "{as_paper}");
        assert!(row(with_pgm).contains("x "), "{with_pgm}");
    }

    #[test]
    fn a_study_without_both_families_or_sets_is_refused() {
        let o = Options {
            kinds: vec![Kind::Alex, Kind::Lipp],
            ..Options::default()
        };
        assert!(run(&o, &Quiet).is_err());
        let o = Options {
            local: Vec::new(),
            sets: Vec::new(),
            ..Options::default()
        };
        let err = run(&o, &Quiet).unwrap_err().to_string();
        assert!(err.contains("no key sets"), "{err}");
    }
}
