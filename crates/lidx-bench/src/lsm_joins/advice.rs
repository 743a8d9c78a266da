//! The cost model as an advisor (paper 5, Tables 2–4 and Fig. 4): every cell's methods
//! ranked as measured and as predicted, and the summary of its picks.

use lidx::storage::profile::{StorageProfile, assumed_ssd};
use lidx_lsm::joins::JoinOn;
use lidx_lsm::joins::cost::{self, CostInputs};

use super::Options;
use super::calibrate::Calibration;
use super::cells::{Cell, refined_on};
use super::measure::Run;
use super::rows::AdviceRow;
use super::study::{Study, show};
use crate::csv_rows::{Fixed, LIDX_VERSION};

/// The cost model's inputs for `cell`: empty tables that the workload's rows fill in F
/// batches, a join after each.
pub(super) fn cost_inputs(cell: &Cell) -> CostInputs {
    let w = cell.workload;
    let f = cell.joins as f64;
    CostInputs {
        rows: (0.0, 0.0),
        entry_size: w.entry_size as f64,
        block_size: cell.config.block_size as f64,
        bloom_bits: cell.config.bloom_bits,
        data_bloom_bits: cell.config.data_bloom_bits,
        size_ratio: cell.config.size_ratio,
        data_level_base: cell.config.data_level_base as f64,
        index_write_buffer: cell.config.index_write_buffer as f64,
        join_memory: cell.config.join_memory as f64,
        match_rate: w.match_rate,
        dup_attr: f64::from(w.dup_attr),
        dup_pk: f64::from(w.dup_pk),
        joins: f,
        updates: (w.rows + w.r_rows()) as f64,
        s_share: w.ratio / (1.0 + w.ratio),
    }
}

/// Ranks of `values` (1 for the smallest).
pub(super) fn ranks(values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut rank = vec![0; values.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r + 1;
    }
    rank
}

/// Every method of every cell, measured and predicted, ranked among the cell's methods
/// that answer the same join.
pub(super) fn advise_cells(
    o: &Options,
    cells: &[Cell],
    runs: &[Run],
    profile: &StorageProfile,
    machine: &str,
) -> Vec<AdviceRow> {
    let ssd = assumed_ssd();
    let mut out = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        let inputs = cost_inputs(cell);
        let (all_warm, all_cold) = (cost::advise(&inputs, profile), cost::advise(&inputs, &ssd));
        for on in [JoinOn::Key, JoinOn::Attribute] {
            let here: Vec<&Run> = runs
                .iter()
                .filter(|r| r.cell == i && r.method.joins_on() == on)
                .collect();
            let of = |all: &[cost::Prediction]| -> Vec<cost::Prediction> {
                here.iter()
                    .filter_map(|r| {
                        let name = r.method.to_string();
                        all.iter().find(|p| p.method == name).cloned()
                    })
                    .collect()
            };
            let (warm, cold) = (of(&all_warm), of(&all_cold));
            if here.is_empty() || warm.len() != here.len() || cold.len() != here.len() {
                continue;
            }
            let measured: Vec<f64> = here.iter().map(|r| r.total_s()).collect();
            let warm_total: Vec<f64> = warm.iter().map(|p| p.total_s()).collect();
            let cold_total: Vec<f64> = cold.iter().map(|p| p.total_s()).collect();
            let (rank, warm_rank, cold_rank) =
                (ranks(&measured), ranks(&warm_total), ranks(&cold_total));
            for (k, run) in here.iter().enumerate() {
                out.push(AdviceRow {
                    figure: cell.figure.name().into(),
                    dataset: cell.dataset.into(),
                    param: cell.param.into(),
                    x: Fixed(cell.x),
                    x2: Fixed(cell.x2),
                    method: run.method.to_string(),
                    joins_on: on.name().into(),
                    refined_on: refined_on(o, cell),
                    join_s: Fixed(run.join_s()),
                    index_s: Fixed(run.index_s()),
                    total_s: Fixed(run.total_s()),
                    rank: rank[k],
                    predicted_join_s: Fixed(warm[k].join_s),
                    predicted_index_s: Fixed(warm[k].index_s),
                    predicted_total_s: Fixed(warm_total[k]),
                    predicted_rank: warm_rank[k],
                    ssd_predicted_total_s: Fixed(cold_total[k]),
                    ssd_predicted_rank: cold_rank[k],
                    machine: machine.into(),
                    lidx_version: LIDX_VERSION.into(),
                });
            }
        }
    }
    out
}

/// One question the advisor is asked: a cell's methods that answer one join (at least
/// two of them), as the advice rows hold them.
struct Question<'a> {
    rows: Vec<&'a AdviceRow>,
}

impl Question<'_> {
    /// The row of the method `pick` chooses (the one ranked first by it).
    fn by(&self, pick: fn(&AdviceRow) -> usize) -> Option<&AdviceRow> {
        self.rows.iter().find(|a| pick(a) == 1).copied()
    }

    /// The first of `order` among the question's methods.
    fn first_of<'o>(&self, mut order: impl Iterator<Item = &'o str>) -> Option<&AdviceRow> {
        order.find_map(|m| self.rows.iter().find(|a| a.method == m).copied())
    }

    fn cell(&self) -> String {
        let a = self.rows[0];
        if a.figure == "7" {
            format!("c={} d={}", a.x2.0, a.x.0)
        } else {
            format!("{}={}", a.param, show(&a.param, a.x.0))
        }
    }
}

/// Hits of one advisor: questions where its pick was the measured fastest, all, on the
/// cells the model was refined on, and on the others.
#[derive(Default, Clone, Copy)]
struct Score {
    hits: usize,
    asked: usize,
    refined_hits: usize,
    refined: usize,
}

impl Score {
    fn add(&mut self, hit: bool, refined: bool) {
        self.asked += 1;
        self.hits += usize::from(hit);
        if refined {
            self.refined += 1;
            self.refined_hits += usize::from(hit);
        }
    }

    fn cells(&self) -> [String; 3] {
        [
            format!("{} of {}", self.hits, self.asked),
            format!("{} of {}", self.refined_hits, self.refined),
            format!(
                "{} of {}",
                self.hits - self.refined_hits,
                self.asked - self.refined
            ),
        ]
    }
}

impl Study<'_> {
    /// The questions of the run: each cell's methods of one join, at least two.
    fn questions(&self) -> Vec<Question<'_>> {
        let mut out: Vec<Question<'_>> = Vec::new();
        for a in self.advice {
            let same = |b: &AdviceRow| {
                b.figure == a.figure
                    && b.dataset == a.dataset
                    && b.param == a.param
                    && b.x.0 == a.x.0
                    && b.x2.0 == a.x2.0
                    && b.joins_on == a.joins_on
            };
            match out.iter_mut().find(|q| same(q.rows[0])) {
                Some(q) => q.rows.push(a),
                None => out.push(Question { rows: vec![a] }),
            }
        }
        out.retain(|q| q.rows.len() >= 2);
        out
    }

    /// The advisor's picks against the measured fastest, beside two trivial advisors.
    pub(super) fn advice_summary(&self, calibration: &Calibration) -> String {
        let questions = self.questions();
        // The constant advisor, with hindsight: the methods by questions won in this run.
        let mut wins: Vec<(String, usize)> = Vec::new();
        for q in &questions {
            if let Some(best) = q.by(|a| a.rank) {
                match wins.iter_mut().find(|w| w.0 == best.method) {
                    Some(w) => w.1 += 1,
                    None => wins.push((best.method.clone(), 1)),
                }
            }
        }
        wins.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let calibration_order: Vec<String> = calibration
            .ranking
            .iter()
            .map(|(m, _)| m.to_string())
            .collect();
        let [mut model, mut cold, mut constant, mut calibrated] = [Score::default(); 4];
        let mut by_figure: Vec<(String, Score)> = Vec::new();
        let mut misses = Vec::new();
        for q in &questions {
            let (Some(best), Some(warm), Some(ssd)) = (
                q.by(|a| a.rank),
                q.by(|a| a.predicted_rank),
                q.by(|a| a.ssd_predicted_rank),
            ) else {
                continue;
            };
            let refined = best.refined_on;
            let constant_pick = q.first_of(wins.iter().map(|w| w.0.as_str()));
            let calibration_pick = q.first_of(calibration_order.iter().map(String::as_str));
            model.add(warm.rank == 1, refined);
            cold.add(ssd.rank == 1, refined);
            constant.add(constant_pick.is_some_and(|a| a.rank == 1), refined);
            calibrated.add(calibration_pick.is_some_and(|a| a.rank == 1), refined);
            if by_figure.last().is_none_or(|f| f.0 != best.figure) {
                by_figure.push((best.figure.clone(), Score::default()));
            }
            if let Some(f) = by_figure.last_mut() {
                f.1.add(warm.rank == 1, refined);
            }
            if warm.rank != 1 {
                misses.push(vec![
                    best.figure.clone(),
                    best.dataset.clone(),
                    q.cell(),
                    best.joins_on.clone(),
                    format!("{} ({:.3} s)", best.method, best.total_s.0),
                    format!(
                        "{} ({:.3} s, rank {})",
                        warm.method, warm.total_s.0, warm.rank
                    ),
                ]);
            }
        }
        let mut s = String::from("## The cost model as an advisor (Tables 2-4, Fig. 4)\n\n");
        s.push_str(&format!(
            "A question is a cell's methods that answer one join (R's attribute against S's key, or against S's attribute: the two are different questions, never ranked together), at least two of them; {} questions in this run. The model ranks a question's methods by predicted join + index latency for its workload (F joins over the rows arriving in F batches), priced by {}; and by the assumed cold SSD of `lidx lsm advise` (100 us a random read, 500 MB/s). The model counts blocks; priced by a profile calibrated on warm runs, a block costs what a warm run spends on it, CPU included, but the model has no term for CPU that does not scale with blocks (merging posting lists, hashing, validation's comparisons), which is where it misses.\n\n",
            questions.len(),
            calibration.description
        ));
        s.push_str("Two trivial advisors beside it: a constant one, which picks the first of the question's methods in the order of how many questions each won in this run (fit on this run with hindsight, so no column is out of sample for it); and one that picks the fastest of the question's methods on the calibration's data (unif drawn with another seed, every method once at one join).\n\n");
        s.push_str(&format!(
            "The cells the model's two refinements were made on (the grid of the study before it took the paper's full ranges, at 100K rows and otherwise the default options; {} questions here) are in sample; the rest, and every question of a run at another size, seed or data, are out of sample.\n\n",
            model.refined
        ));
        let row = |name: &str, score: &Score| {
            let [all, refined, new] = score.cells();
            vec![name.to_string(), all, refined, new]
        };
        s.push_str(&crate::text::table(
            &[
                "advisor".to_string(),
                "picked the measured fastest".to_string(),
                "in sample".to_string(),
                "out of sample".to_string(),
            ],
            &[
                row("the cost model, calibrated", &model),
                row("the cost model, cold SSD", &cold),
                row(
                    &format!(
                        "constant ({} first)",
                        wins.iter()
                            .take(3)
                            .map(|w| w.0.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    &constant,
                ),
                row(
                    &format!(
                        "the calibration's fastest ({} first)",
                        calibration_order
                            .iter()
                            .take(3)
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    &calibrated,
                ),
            ],
        ));
        s.push_str(&format!(
            "\nThe calibrated model by figure (picked the fastest / questions): {}.\n\n",
            by_figure
                .iter()
                .map(|(f, score)| format!("{f} {}/{}", score.hits, score.asked))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if !misses.is_empty() {
            s.push_str("Where the calibrated model missed (every method's measured and predicted latency is in `lsm-advice.csv`):\n\n");
            s.push_str(&crate::text::table(
                &[
                    "figure".to_string(),
                    "data".to_string(),
                    "cell".to_string(),
                    "join on".to_string(),
                    "measured fastest".to_string(),
                    "model's pick".to_string(),
                ],
                &misses,
            ));
        }
        s
    }
}
