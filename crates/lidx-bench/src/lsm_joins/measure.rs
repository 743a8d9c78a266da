//! Running one cell (paper 5, section 4): each method in a fresh database, the rows
//! arriving in F batches with a join after each, and the check that methods answering the
//! same join count the same output.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use lidx::join::CountSink;
use lidx_lsm::joins::{self, ApplyTimes, Batch, LsmDb, LsmJoinReport, Method};

use super::Options;
use super::cells::{Cell, cells};
use super::rows::Row;
use crate::harness::Experiment;
use crate::progress::Progress;

/// Paper 5's study as the harness runs it: every cell's methods, each in a fresh database
/// in `dir` (the study's scratch directory), the runs kept for the advisor, plots and
/// findings.
pub(super) struct Measuring<'a> {
    pub(super) o: &'a Options,
    pub(super) dir: &'a Path,
    pub(super) machine: &'a str,
    /// Every method's run so far, cell by cell.
    pub(super) runs: Vec<Run>,
    /// Cells run so far.
    cells_run: usize,
}

impl<'a> Measuring<'a> {
    /// Nothing measured yet.
    pub(super) fn new(o: &'a Options, dir: &'a Path, machine: &'a str) -> Measuring<'a> {
        Measuring {
            o,
            dir,
            machine,
            runs: Vec::new(),
            cells_run: 0,
        }
    }
}

impl Experiment for Measuring<'_> {
    type Cell = Cell;
    type Row = Row;

    fn cells(&self) -> anyhow::Result<Vec<Cell>> {
        Ok(cells(self.o))
    }

    fn steps(&self, cell: &Cell) -> u64 {
        cell.methods.len() as u64
    }

    /// Each method of the cell on the same data set, arriving in F equal parts; fails
    /// where two methods answering the same join counted different output.
    fn run_cell(&mut self, cell: &Cell, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        let i = self.cells_run;
        self.cells_run += 1;
        let first = self.runs.len();
        let mut rows = Vec::new();
        let batches = cell.batch()?.split(cell.joins as usize);
        for (j, &method) in cell.methods.iter().enumerate() {
            progress.message(&format!(
                "Fig. {} {} {}={} {method}",
                cell.figure, cell.dataset, cell.param, cell.x
            ));
            let dir = self.dir.join(format!("cell{i}-method{j}"));
            let measured = run_method(cell, method, &batches, &dir)
                .with_context(|| format!("Fig. {} {}: {method}", cell.figure, cell.dataset))?;
            rows.extend(
                measured
                    .iter()
                    .map(|m| Row::new(cell, method, m, self.machine)),
            );
            self.runs.push(Run {
                cell: i,
                method,
                batches: measured,
            });
            progress.step();
        }
        check_outputs(cell, &self.runs[first..])?;
        Ok(rows)
    }
}

/// What one join after one batch measured.
#[derive(Clone, Debug)]
pub(super) struct Measured {
    pub(super) batch: u64,
    pub(super) apply: ApplyTimes,
    pub(super) join: LsmJoinReport,
    pub(super) s_levels: u64,
    pub(super) index_levels: u64,
}

/// One method's run through one cell.
#[derive(Clone, Debug)]
pub(super) struct Run {
    pub(super) cell: usize,
    pub(super) method: Method,
    pub(super) batches: Vec<Measured>,
}

impl Run {
    pub(super) fn join_s(&self) -> f64 {
        self.batches.iter().map(|b| b.join.join_s).sum()
    }

    pub(super) fn index_s(&self) -> f64 {
        self.batches.iter().map(|b| b.apply.index_s).sum()
    }

    pub(super) fn total_s(&self) -> f64 {
        self.join_s() + self.index_s()
    }
}

/// Runs `method` through `cell` in a fresh database at `dir`, a new path in the study's
/// scratch directory (the database is removed after), the cell's rows arriving in
/// `batches`.
pub(super) fn run_method(
    cell: &Cell,
    method: Method,
    batches: &[Batch],
    dir: &Path,
) -> anyhow::Result<Vec<Measured>> {
    let mut db = LsmDb::create_empty(dir, cell.config, cell.workload, &method.indexes())?;
    let mut out = Vec::with_capacity(batches.len());
    for (batch, rows) in (1..).zip(batches) {
        let apply = db.apply(rows)?;
        // Flushes and compactions the batch started end before the join, so it runs
        // alone; the index trees' were already waited for, inside their latency.
        db.settle()?;
        let join =
            joins::join_with_threads(&mut db, method, cell.threads, &mut CountSink::default())?;
        let levels = db.levels()?;
        let level_of = |name: &str| levels.iter().find(|l| l.0 == name).map_or(0, |l| l.1);
        let index_levels = levels
            .iter()
            .filter(|l| l.0 != "r" && l.0 != "s")
            .map(|l| l.1)
            .max()
            .unwrap_or(0);
        out.push(Measured {
            batch,
            apply,
            join,
            s_levels: level_of("s"),
            index_levels,
        });
    }
    drop(db);
    std::fs::remove_dir_all(dir)
        .with_context(|| format!("{}: cannot remove the database", dir.display()))?;
    Ok(out)
}

/// Fails where two methods of `cell` that answer the same join counted different output
/// after the same batch.
pub(super) fn check_outputs(cell: &Cell, runs: &[Run]) -> anyhow::Result<()> {
    let mut seen: BTreeMap<(bool, u64), (Method, u64)> = BTreeMap::new();
    for run in runs {
        for m in &run.batches {
            let key = (run.method.joins_s_key(), m.batch);
            match seen.get(&key) {
                Some(&(other, output)) if output != m.join.output => bail!(
                    "Fig. {} {} {}={}: after batch {}, {} counted {} triples and {other} {output}; they answer the same join",
                    cell.figure,
                    cell.dataset,
                    cell.param,
                    cell.x,
                    m.batch,
                    run.method,
                    m.join.output
                ),
                Some(_) => {}
                None => {
                    seen.insert(key, (run.method, m.join.output));
                }
            }
        }
    }
    Ok(())
}
