//! The cost model as an advisor (paper 5, Tables 2–4 and Fig. 4): every cell's methods
//! ranked as measured and as predicted, and the summary of its picks.

use lidx::storage::profile::{StorageProfile, assumed_ssd};
use lidx_lsm::joins::cost::{self, CostInputs};

use super::cells::Cell;
use super::measure::Run;
use super::rows::AdviceRow;
use super::study::{Study, a_num, show};
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

/// Every method of every cell, measured and predicted.
pub(super) fn advise_cells(
    cells: &[Cell],
    runs: &[Run],
    profile: &StorageProfile,
    machine: &str,
) -> Vec<AdviceRow> {
    let ssd = assumed_ssd();
    let mut out = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        let here: Vec<&Run> = runs.iter().filter(|r| r.cell == i).collect();
        let inputs = cost_inputs(cell);
        let predict = |profile: &StorageProfile| -> Vec<cost::Prediction> {
            let all = cost::advise(&inputs, profile);
            here.iter()
                .filter_map(|r| {
                    let name = r.method.to_string();
                    all.iter().find(|p| p.method == name).cloned()
                })
                .collect()
        };
        let (warm, cold) = (predict(profile), predict(&ssd));
        if warm.len() != here.len() || cold.len() != here.len() {
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
    out
}

impl Study<'_> {
    /// The advisor's picks against the measured fastest, cell by cell.
    pub(super) fn advice_summary(&self, calibration: &str) -> String {
        let mut s = String::from("## The cost model as an advisor (Tables 2-4, Fig. 4)\n\n");
        s.push_str(&format!(
            "In each cell the model ranks the cell's methods by predicted join + index latency for its workload (F joins over the rows arriving in F batches). Priced by {calibration}; and by the assumed cold SSD of `lidx lsm advise` (100 us a random read, 500 MB/s).\n\n"
        ));
        s.push_str("| figure | data | cell | measured fastest | model's pick (calibrated) | its measured rank | model's pick (cold SSD) | its measured rank |\n|---|---|---|---|---|---|---|---|\n");
        let (mut cells, mut hits, mut hits_cold, mut top2) = (0, 0, 0, 0);
        // Per figure: cells, calibrated hits, cold hits.
        let mut by_figure: Vec<(String, usize, usize, usize)> = Vec::new();
        let mut keys: Vec<(String, String, String, String, String)> = Vec::new();
        for a in self.advice {
            let k = (
                a.figure.clone(),
                a.dataset.clone(),
                a.param.clone(),
                format!("{:?}", a.x.0),
                format!("{:?}", a.x2.0),
            );
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for k in keys {
            let here: Vec<&AdviceRow> = self
                .advice
                .iter()
                .filter(|a| {
                    a.figure == k.0
                        && a.dataset == k.1
                        && a.param == k.2
                        && format!("{:?}", a.x.0) == k.3
                        && format!("{:?}", a.x2.0) == k.4
                })
                .collect();
            let pick = |f: fn(&AdviceRow) -> usize| here.iter().find(|a| f(a) == 1).copied();
            let (Some(best), Some(warm), Some(cold)) = (
                pick(|a| a.rank),
                pick(|a| a.predicted_rank),
                pick(|a| a.ssd_predicted_rank),
            ) else {
                continue;
            };
            cells += 1;
            hits += usize::from(warm.rank == 1);
            top2 += usize::from(warm.rank <= 2);
            hits_cold += usize::from(cold.rank == 1);
            if by_figure.last().is_none_or(|f| f.0 != k.0) {
                by_figure.push((k.0.clone(), 0, 0, 0));
            }
            if let Some(f) = by_figure.last_mut() {
                f.1 += 1;
                f.2 += usize::from(warm.rank == 1);
                f.3 += usize::from(cold.rank == 1);
            }
            let cell = if k.0 == "7" {
                format!("c={} d={}", a_num(&k.4), a_num(&k.3))
            } else {
                format!("{}={}", k.2, show(&k.2, best.x.0))
            };
            s.push_str(&format!(
                "| {} | {} | {cell} | {} ({:.3} s) | {} ({:.3} s) | {} | {} | {} |\n",
                k.0,
                k.1,
                best.method,
                best.total_s.0,
                warm.method,
                warm.total_s.0,
                warm.rank,
                cold.method,
                cold.rank
            ));
        }
        s.push_str(&format!(
            "\nThe calibrated model picked the measured fastest method in {hits} of {cells} cells (one of the two fastest in {top2}); priced as a cold SSD, in {hits_cold}. By figure (calibrated / cold SSD / cells): {}. Cells where one method wins every setting (HJ-P in Figs. 11 and 12) are easy; the index designs of Figs. 6-9 are where the model is tested.\n",
            by_figure
                .iter()
                .map(|(f, n, w, c)| format!("{f} {w}/{c}/{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        s
    }
}
