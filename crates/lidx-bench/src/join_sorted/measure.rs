//! Running paper 1's joins of sorted tables (section 5.3) cell by cell: a cell is every
//! join at one ratio over one key set, each a cold `lidx join` process (`Setup::cold_join`).
//! A key set's inner table and saved indexes are built when its first cell runs (paper 1
//! builds and saves the indexes first; every join loads one) and go after its last.

use std::path::{Path, PathBuf};
use std::time::Instant;

use lidx::index::file;
use lidx::index::{AnyIndex, IndexKind};
use lidx::join::JoinMethod;
use lidx::storage::TUPLE_SIZE;

use super::Options;
use super::rows::Row;
use crate::harness::{ColdJoin, Experiment, KeySet, Scratch, SetTable, Setup, write_table};
use crate::progress::Progress;

/// One cell: every join at one ratio over one key set (every repeat, thread count,
/// window, method and depth).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Cell {
    /// The key set's place among the study's sets.
    pub(super) set: usize,
    /// The ratio's place among the options' ratios (it seeds the outer table's sample).
    pub(super) at: usize,
    /// The size ratio |S|/|R|.
    pub(super) ratio: u64,
}

/// A built, saved index of the inner table.
struct SavedIndex {
    kind: IndexKind,
    window: u64,
    path: PathBuf,
    bytes: u64,
    max_window: u64,
    build_s: f64,
}

/// A key set's inner table and its saved indexes, kept for the set's cells; the files are
/// removed when this drops (unless the data is kept).
struct Inner {
    /// The key set's table (its keys are sampled for each ratio's outer table); the
    /// indexes' files are in its scratch.
    set: SetTable,
    indexes: Vec<SavedIndex>,
}

/// Paper 1's joins of sorted tables as the harness runs them.
pub(super) struct Measuring<'a> {
    setup: &'a Setup,
    o: &'a Options,
    sets: &'a [KeySet],
    /// Where the tables and indexes go.
    data: &'a Path,
    /// The storage profile every join's cost model reads.
    profile: &'a Path,
    /// The key set whose cells are running, built by its first.
    inner: Option<Inner>,
}

impl<'a> Measuring<'a> {
    /// Nothing built or measured yet.
    pub(super) fn new(
        setup: &'a Setup,
        o: &'a Options,
        sets: &'a [KeySet],
        data: &'a Path,
        profile: &'a Path,
    ) -> Measuring<'a> {
        Measuring {
            setup,
            o,
            sets,
            data,
            profile,
            inner: None,
        }
    }

    /// Makes the `i`-th key set's inner table and indexes the ones built: kept where they
    /// are already, else the previous set's removed and these written now.
    fn build_inner(&mut self, i: usize, progress: &dyn Progress) -> anyhow::Result<()> {
        if self.inner.as_ref().is_some_and(|inner| inner.set.set == i) {
            return Ok(());
        }
        // The previous set's files go first: a set of the same name writes the same paths.
        self.inner = None;
        let mut set = SetTable::write(self.sets, i, (self.data, self.setup.keep_data), progress)?;
        // Paper 1: the indexes are built and saved first, and loaded by each join.
        let mut indexes = Vec::new();
        for (kind, window, params) in self.o.saved_indexes() {
            let t = Instant::now();
            let index = AnyIndex::build(&set.keys, &params)?;
            let build_s = t.elapsed().as_secs_f64();
            let name = &set.name;
            let path = (set.scratch).add(self.data.join(format!("{name}.{kind}.w{window}.idx")));
            file::save(&path, &index, &set.fingerprint)?;
            indexes.push(SavedIndex {
                kind,
                window,
                path,
                bytes: index.size_in_bytes(),
                max_window: index.max_width(),
                build_s,
            });
        }
        self.inner = Some(Inner { set, indexes });
        Ok(())
    }

    /// Every join of `cell` over `inner`: its outer table written (and removed after),
    /// then each repeat on each thread count.
    fn joins(
        &self,
        inner: &Inner,
        cell: &Cell,
        progress: &dyn Progress,
    ) -> anyhow::Result<Vec<Row>> {
        let (setup, options, profile) = (self.setup, self.o, self.profile);
        let (name, ratio) = (&inner.set.name, cell.ratio);
        let outer_keys = if ratio == 1 {
            inner.set.keys.clone()
        } else {
            lidx::data::sample::random_fraction(
                &inner.set.keys,
                1.0 / ratio as f64,
                setup.seed + cell.at as u64,
            )?
        };
        let mut outer_scratch = Scratch::new(setup.keep_data);
        let outer = outer_scratch.add(self.data.join(format!("{name}.r{ratio}.tbl")));
        write_table(&outer_keys, &outer)?;
        drop(outer_keys);
        let mut rows = Vec::new();
        for repeat in 0..options.repeat {
            for &threads in options.threads() {
                progress.message(&format!("{name} 1:{ratio} t{threads}"));
                let join = |method: JoinMethod, read_size| ColdJoin {
                    outer: &outer,
                    inner: &inner.set.table,
                    method,
                    index: None,
                    threads,
                    read_size,
                    io_depth: 1,
                    profile,
                };
                let row = |index: Option<&SavedIndex>, window, rec| Row {
                    set: name.clone(),
                    ratio,
                    index: index.map(|i| i.kind),
                    window,
                    index_bytes: index.map_or(0, |i| i.bytes),
                    index_max_window: index.map_or(0, |i| i.max_window),
                    index_build_s: index.map_or(0.0, |i| i.build_s),
                    repeat,
                    rec,
                };
                // Paper 1 streams tables in pages and reads each window with one call: a
                // cell of window W reads W tuples per call everywhere. Window 0 is the
                // tuned baseline: merge and hash with large reads.
                for window in options.windows.iter().copied().chain([0]) {
                    let read_size = match window {
                        0 => options.read_size,
                        w => w * TUPLE_SIZE as u64,
                    };
                    for method in [JoinMethod::Merge, JoinMethod::Hash] {
                        let rec = setup.cold_join(&join(method, read_size))?;
                        progress.step();
                        rows.push(row(None, window, rec));
                    }
                }
                for index in &inner.indexes {
                    for &io_depth in &options.io_depths {
                        let rec = setup.cold_join(&ColdJoin {
                            index: Some(&index.path),
                            io_depth,
                            ..join(
                                JoinMethod::Inlj(index.kind),
                                index.window * TUPLE_SIZE as u64,
                            )
                        })?;
                        progress.step();
                        rows.push(row(Some(index), index.window, rec));
                    }
                }
            }
        }
        Ok(rows)
    }
}

impl Experiment for Measuring<'_> {
    type Cell = Cell;
    type Row = Row;

    /// Every key set at every ratio, the sets in order and each set's ratios in order.
    fn cells(&self) -> anyhow::Result<Vec<Cell>> {
        let mut cells = Vec::new();
        for set in 0..self.sets.len() {
            for (at, &ratio) in self.o.ratios.iter().enumerate() {
                cells.push(Cell { set, at, ratio });
            }
        }
        Ok(cells)
    }

    /// One per join: `runs_per_ratio` joins per repeat.
    fn steps(&self, _: &Cell) -> u64 {
        self.o.repeat as u64 * self.o.runs_per_ratio()
    }

    /// The cell's joins; the key set's inner table and indexes are built by its first cell
    /// and removed after its last (or when the study ends, on an error too).
    fn run_cell(&mut self, cell: &Cell, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        self.build_inner(cell.set, progress)?;
        let inner = self
            .inner
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the key set was just built"))?;
        let rows = self.joins(inner, cell, progress)?;
        if cell.at + 1 == self.o.ratios.len() {
            self.inner = None;
        }
        Ok(rows)
    }
}
