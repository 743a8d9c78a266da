//! The study's cells: per key set, each index of Fig. 5 built, saved and self-joined cold,
//! then Table 2's sizes.

use std::path::Path;
use std::time::Instant;

use lidx::index::file;
use lidx::index::measure::Queries;
use lidx::index::{AnyIndex, AnyParams, IndexKind, tune};
use lidx::join::JoinMethod;
use lidx::storage::{TUPLE_SIZE, Table};
use lidx::updatable::alex::{self, AlexParams};

use super::rows::{Row, SizeRow};
use super::{FIG5_WINDOW, Fig5Index, Options};
use crate::csv_rows::Fixed;
use crate::harness::{ColdJoin, Experiment, KeySet, SetTable, Setup};
use crate::progress::Progress;

/// The index of `kind` over `keys` at its Fig. 5 setting (or tuned), and its build time
/// (of the configuration chosen, not of the whole tuning search).
pub(super) fn fig5_index(
    kind: IndexKind,
    keys: &[u64],
    tuned: bool,
) -> anyhow::Result<(AnyIndex, f64)> {
    // Every kind at its 256-position setting, as paper 1 compares them (its RMI and
    // RadixSpline are tuned per data set; a plain RMI's window is unbounded).
    let params =
        AnyParams::for_width(kind, FIG5_WINDOW).unwrap_or_else(|| AnyParams::default_for(kind));
    let t = Instant::now();
    if !tuned {
        let index = AnyIndex::build(keys, &params)?;
        return Ok((index, t.elapsed().as_secs_f64()));
    }
    let queries = Queries::draw(keys, 100_000, 7);
    let epsilon = match params {
        AnyParams::RadixSpline(p) => p.epsilon,
        _ => 0,
    };
    let budget = keys.len() as u64 * TUPLE_SIZE as u64 / 100;
    let (index, trials) = tune::tune(kind, keys, &queries.existing, epsilon, budget, |_| {})?;
    let chosen = index.describe();
    let build_s = trials
        .iter()
        .find(|t| t.params == chosen)
        .map_or(t.elapsed().as_secs_f64(), |t| t.build_seconds);
    Ok((index, build_s))
}

/// The cold self-join of `table` through the saved index at `index` (paper 1: one thread,
/// 1 MiB reads of the outer side, one window read at a time).
pub(super) fn self_join<'a>(
    table: &'a Path,
    method: JoinMethod,
    index: &'a Path,
    profile: &'a Path,
) -> ColdJoin<'a> {
    ColdJoin {
        outer: table,
        inner: table,
        method,
        index: Some(index),
        threads: 1,
        read_size: 1 << 20,
        io_depth: 1,
        profile,
    }
}

/// One cell of the study.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cell {
    /// Fig. 5: `index` built over the `set`-th key set, and its cold self-join.
    Fig5 { set: usize, index: Fig5Index },
    /// Table 2: PGM and sampled PGM over the `set`-th key set at every window.
    Table2 { set: usize },
}

/// What one step measured: an index of Fig. 5 with its self-join, or a size of Table 2.
pub(super) enum Measured {
    Fig5(Box<Row>),
    Table2(SizeRow),
}

/// A key set's table, kept for the set's cells; its files (the table and the saved
/// indexes) are removed when this drops (unless the data is kept).
pub(super) struct Loaded {
    /// The key set's table; the indexes' files go in its scratch.
    pub(super) set: SetTable,
    pub(super) table_bytes: u64,
}

impl Loaded {
    /// `index` built over the set's keys and saved in `data` (`tune`: RadixSpline and RMI
    /// tuned), and its cold self-join, whose cost model reads `profile`.
    fn fig5(
        &mut self,
        setup: &Setup,
        tune: bool,
        (data, profile): (&Path, &Path),
        index: Fig5Index,
        progress: &dyn Progress,
    ) -> anyhow::Result<Row> {
        let name = &self.set.name.clone();
        progress.message(&format!("{name}: {index}"));
        Ok(match index {
            Fig5Index::Family(kind) => {
                let tuned = tune && matches!(kind, IndexKind::RadixSpline | IndexKind::Rmi);
                let (built, build_s) = fig5_index(kind, &self.set.keys, tuned)?;
                let path = self
                    .set
                    .scratch
                    .add(data.join(format!("{name}.{kind}.idx")));
                file::save(&path, &built, &self.set.fingerprint)?;
                // The self-join, cold, in a fresh process through the saved index (paper 1).
                let join = setup.cold_join(&self_join(
                    &self.set.table,
                    JoinMethod::Inlj(kind),
                    &path,
                    profile,
                ))?;
                Row {
                    set: name.clone(),
                    kind: index,
                    params: built.describe(),
                    bytes: built.size_in_bytes(),
                    max_window: built.max_width(),
                    build_s,
                    inner_file_bytes: self.table_bytes,
                    join,
                }
            }
            Fig5Index::Alex => {
                let path = self.set.scratch.add(data.join(format!("{name}.alex")));
                let params = AlexParams::default();
                let report = alex::file::build(
                    &Table::open(&self.set.table)?,
                    &self.set.keys,
                    &path,
                    &params,
                    |_| {},
                )?;
                let join = setup.cold_join(&self_join(
                    &self.set.table,
                    JoinMethod::InljAlex,
                    &path,
                    profile,
                ))?;
                Row {
                    set: name.clone(),
                    kind: index,
                    params: format!(
                        "density={} nodes={}+{}",
                        params.init_density, report.inner_nodes, report.data_nodes
                    ),
                    bytes: report.memory_bytes,
                    max_window: 0,
                    // The nodes are chosen in memory, then the tuples written: both build it.
                    build_s: report.plan_s + report.write_s,
                    inner_file_bytes: report.file_bytes,
                    join,
                }
            }
        })
    }
}

/// Paper 1's index study as the harness runs it: per key set, each index of Fig. 5 a
/// cell, then Table 2's sizes.
pub(super) struct Measuring<'a> {
    pub(super) setup: &'a Setup,
    pub(super) o: &'a Options,
    pub(super) sets: &'a [KeySet],
    /// Where the table and indexes go.
    pub(super) data: &'a Path,
    pub(super) machine: &'a str,
    /// The storage profile every self-join's cost model reads.
    pub(super) profile: &'a Path,
    /// The key set whose cells are running, written by its first.
    pub(super) set: Option<Loaded>,
}

impl Measuring<'_> {
    /// Makes the `i`-th key set the one loaded: kept where it is already, else the previous
    /// set's files removed and its table written now.
    fn load(&mut self, i: usize, progress: &dyn Progress) -> anyhow::Result<()> {
        if self.set.as_ref().is_some_and(|s| s.set.set == i) {
            return Ok(());
        }
        // The previous set's files go first: a set of the same name writes the same paths.
        self.set = None;
        let set = SetTable::write(self.sets, i, (self.data, self.setup.keep_data), progress)?;
        let table_bytes = std::fs::metadata(&set.table)?.len();
        self.set = Some(Loaded { set, table_bytes });
        Ok(())
    }
}

/// Table 2's indexes: PGM and sampled PGM at each of `windows` they have a setting for.
pub(super) fn table2_params(
    windows: &[u64],
) -> impl Iterator<Item = (IndexKind, u64, AnyParams)> + '_ {
    [IndexKind::Pgm, IndexKind::SampledPgm]
        .into_iter()
        .flat_map(move |kind| {
            windows.iter().filter_map(move |&window| {
                Some((kind, window, AnyParams::for_width(kind, window)?))
            })
        })
}

impl Experiment for Measuring<'_> {
    type Cell = Cell;
    type Row = Measured;

    /// Every key set in order; in each, every index of Fig. 5, then Table 2.
    fn cells(&self) -> anyhow::Result<Vec<Cell>> {
        let mut cells = Vec::new();
        for set in 0..self.sets.len() {
            cells.extend(
                self.o
                    .indexes
                    .iter()
                    .map(|&index| Cell::Fig5 { set, index }),
            );
            cells.push(Cell::Table2 { set });
        }
        Ok(cells)
    }

    /// One per index of Fig. 5 (built and self-joined) and per size of Table 2.
    fn steps(&self, cell: &Cell) -> u64 {
        match cell {
            Cell::Fig5 { .. } => 1,
            Cell::Table2 { .. } => table2_params(&self.o.windows).count() as u64,
        }
    }

    /// The cell's index (or sizes); the key set's table is written by its first cell and
    /// removed, with its indexes, after its last (or when the study ends, on an error too).
    fn run_cell(&mut self, cell: &Cell, progress: &dyn Progress) -> anyhow::Result<Vec<Measured>> {
        let (Cell::Fig5 { set, .. } | Cell::Table2 { set }) = *cell;
        self.load(set, progress)?;
        let (setup, o, data, profile) = (self.setup, self.o, self.data, self.profile);
        let s = self
            .set
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("the key set was just loaded"))?;
        match *cell {
            Cell::Fig5 { index, .. } => {
                let row = s.fig5(setup, o.tune, (data, profile), index, progress)?;
                progress.step();
                Ok(vec![Measured::Fig5(Box::new(row))])
            }
            Cell::Table2 { .. } => {
                let mut sizes = Vec::new();
                for (kind, window, params) in table2_params(&o.windows) {
                    let t = Instant::now();
                    let index = AnyIndex::build(&s.set.keys, &params)?;
                    sizes.push(Measured::Table2(SizeRow {
                        key_set: s.set.name.clone(),
                        index: kind.name(),
                        window,
                        index_bytes: index.size_in_bytes(),
                        build_s: Fixed(t.elapsed().as_secs_f64()),
                        machine: self.machine.to_string(),
                    }));
                    progress.step();
                }
                // The set's last cell: its table and indexes go.
                self.set = None;
                Ok(sizes)
            }
        }
    }
}
