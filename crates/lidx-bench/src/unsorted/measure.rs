//! Running paper 1's study of unsorted tables (section 5.4) cell by cell: a cell is every
//! run at one memory limit in one repeat over one key set (both indexes of S and of each R
//! built, every join route at every ratio, the three sorts), each a fresh `lidx` process
//! under `--memory-limit`, its inputs' pages dropped first. A key set's shuffled tables are
//! written when its first cell runs and go after its last. `Baselines` measure the
//! process's own peak RSS before any cell.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use lidx::files::cache::drop_file_pages;
use lidx::join::JoinRecord;
use lidx::partition::{Operation, UnsortedRecord};
use lidx::storage::ValueSource;
use lidx::storage::table::{tuples_from_keys, write_shuffled};

use super::rows::{Role, Row};
use super::{INDEXES, JOINS, Options, SORTS};
use crate::harness::{Experiment, KeySet, Scratch, Setup};
use crate::progress::Progress;
use crate::text::human_bytes;

/// One run of a command, as the experiment starts it.
#[derive(Clone, Copy)]
enum Run<'a> {
    /// `lidx index build --kind KIND --table T --out O`.
    Build {
        kind: &'static str,
        table: &'a Path,
        out: &'a Path,
    },
    /// `lidx sort --method METHOD --table T --out O`.
    Sort {
        method: &'static str,
        table: &'a Path,
        out: &'a Path,
    },
    /// `lidx join --method METHOD --outer R --inner S [--outer-index --inner-index]`.
    Join {
        method: &'static str,
        outer: &'a Path,
        inner: &'a Path,
        indexes: Option<(&'a Path, &'a Path)>,
    },
}

impl Run<'_> {
    /// The files the run reads, whose cached pages are dropped before it starts.
    fn inputs(&self) -> Vec<&Path> {
        match *self {
            Run::Build { table, .. } | Run::Sort { table, .. } => vec![table],
            Run::Join {
                outer,
                inner,
                indexes,
                ..
            } => {
                let mut all = vec![outer, inner];
                if let Some((a, b)) = indexes {
                    all.extend([a, b]);
                }
                all
            }
        }
    }

    /// The subcommand and its arguments at `limit`, in `cgroup` if given.
    fn command_line(&self, limit: u64, cgroup: Option<&Path>) -> (&'static str, Vec<OsString>) {
        let mut args: Vec<OsString> = Vec::new();
        let sub = match *self {
            Run::Build { kind, table, out } => {
                args.extend(["--kind".into(), kind.into(), "--table".into(), table.into()]);
                args.extend(["--out".into(), out.into()]);
                "index"
            }
            Run::Sort { method, table, out } => {
                args.extend(["--method".into(), method.into(), "--table".into()]);
                args.extend([table.into(), "--out".into(), out.into()]);
                "sort"
            }
            Run::Join {
                method,
                outer,
                inner,
                indexes,
            } => {
                args.extend(["--method".into(), method.into(), "--outer".into()]);
                args.extend([outer.into(), "--inner".into(), inner.into()]);
                if let Some((a, b)) = indexes {
                    args.extend(["--outer-index".into(), a.into()]);
                    args.extend(["--inner-index".into(), b.into()]);
                }
                args.push("--count-only".into());
                "join"
            }
        };
        if sub == "index" {
            args.insert(0, "build".into());
        }
        args.extend([
            "--memory-limit".into(),
            limit.to_string().into(),
            "--json".into(),
        ]);
        if let Some(dir) = cgroup {
            args.extend(["--cgroup".into(), dir.into()]);
        }
        (sub, args)
    }

    /// What the run is, for the baseline's cache.
    fn what(&self) -> (Operation, &'static str) {
        match *self {
            Run::Build { kind, .. } => (Operation::IndexBuild, kind),
            Run::Sort { method, .. } => (Operation::Sort, method),
            Run::Join { method, .. } => (Operation::Join, method),
        }
    }
}

/// Runs `run` cold as a fresh process at `limit` and returns its record.
fn run_cold(
    setup: &Setup,
    run: &Run<'_>,
    limit: u64,
    cgroup: Option<&Path>,
) -> anyhow::Result<UnsortedRecord> {
    for input in run.inputs() {
        drop_file_pages(input)?;
    }
    let (sub, args) = run.command_line(limit, cgroup);
    if let Run::Join {
        method: "grace", ..
    } = run
    {
        let rec: JoinRecord = setup.run_json(sub, &args)?;
        return Ok(grace_record(&rec, limit));
    }
    setup.run_json(sub, &args)
}

/// The grace hash join's figures in the unsorted runs' record.
fn grace_record(rec: &JoinRecord, limit: u64) -> UnsortedRecord {
    UnsortedRecord {
        operation: Some(Operation::Join),
        method: "grace".into(),
        tuples: rec.outer_tuples,
        inner_tuples: rec.inner_tuples,
        memory_limit: limit,
        peak_rss: rec.peak_rss,
        seconds: rec.join_s,
        bytes_read: rec.outer_bytes + rec.inner_bytes,
        read_calls: rec.outer_reads + rec.inner_reads,
        bytes_written: rec.spilled_bytes,
        output_tuples: rec.output_tuples,
        ..UnsortedRecord::default()
    }
}

/// The same commands on a 256-tuple table (and its indexes): the peak RSS a process has
/// before its data grows it, per operation, method and limit.
pub(super) struct Baselines {
    table: PathBuf,
    partition: PathBuf,
    btree: PathBuf,
    sorted: PathBuf,
    rss: HashMap<(Operation, &'static str, u64), u64>,
    _scratch: Scratch,
}

impl Baselines {
    /// Writes the 256-tuple table into `dir` and builds both its indexes.
    pub(super) fn new(setup: &Setup, dir: &Path) -> anyhow::Result<Baselines> {
        let mut scratch = Scratch::new(false);
        let table = scratch.add(dir.join("baseline.tbl"));
        let keys: Vec<u64> = (0..256u64).map(|k| k * 7919).collect();
        write_shuffled(
            tuples_from_keys(&keys, ValueSource::RowId),
            setup.seed,
            &table,
            |_| {},
        )?;
        let partition = scratch.add(dir.join("baseline.partition.idx"));
        let btree = scratch.add(dir.join("baseline.btree-inserts.idx"));
        let sorted = scratch.add(dir.join("baseline.sorted.tbl"));
        let big = 64 << 20;
        for (kind, out) in [("partition", &partition), ("btree-inserts", &btree)] {
            let run = Run::Build {
                kind,
                table: &table,
                out,
            };
            run_cold(setup, &run, big, None)?;
        }
        Ok(Baselines {
            table,
            partition,
            btree,
            sorted,
            rss: HashMap::new(),
            _scratch: scratch,
        })
    }

    /// The baseline peak RSS of runs like `run` at `limit`.
    fn of(
        &mut self,
        setup: &Setup,
        run: &Run<'_>,
        limit: u64,
        cgroup: Option<&Path>,
    ) -> anyhow::Result<u64> {
        let (operation, method) = run.what();
        if let Some(&rss) = self.rss.get(&(operation, method, limit)) {
            return Ok(rss);
        }
        let index = if method == "partition" {
            &self.partition
        } else {
            &self.btree
        };
        let scratch_out = self.table.with_extension("out.idx");
        let tiny = match *run {
            Run::Build { kind, .. } => Run::Build {
                kind,
                table: &self.table,
                out: &scratch_out,
            },
            Run::Sort { method, .. } => Run::Sort {
                method,
                table: &self.table,
                out: &self.sorted,
            },
            Run::Join {
                method, indexes, ..
            } => Run::Join {
                method,
                outer: &self.table,
                inner: &self.table,
                indexes: indexes.map(|_| (index.as_path(), index.as_path())),
            },
        };
        let rec = run_cold(setup, &tiny, limit, cgroup);
        let _ = std::fs::remove_file(&scratch_out);
        let rss = rec?.peak_rss.unwrap_or(0);
        self.rss.insert((operation, method, limit), rss);
        Ok(rss)
    }
}

/// One cell: every run at one memory limit in one repeat over one key set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Cell {
    /// The key set's place among the study's sets.
    pub(super) set: usize,
    /// Which measurement of the limit's runs this is, from 0.
    pub(super) repeat: usize,
    /// The limit's place among the study's limits (and its cgroup's).
    pub(super) limit: usize,
}

/// A key set's shuffled tables and where their indexes and sorted copy go, kept for the
/// set's cells; the files are removed when this drops (unless the data is kept).
struct Tables {
    /// The key set's place among the study's sets.
    set: usize,
    name: String,
    /// S, shuffled.
    inner: PathBuf,
    /// Each ratio's R, shuffled apart, in the options' order.
    outers: Vec<(u64, PathBuf)>,
    /// S's indexes, one per kind of `INDEXES`.
    inner_indexes: [PathBuf; 2],
    /// Each R's indexes, likewise.
    outer_indexes: Vec<[PathBuf; 2]>,
    /// Where a sort writes S sorted (removed after each).
    sorted: PathBuf,
    _scratch: Scratch,
}

/// Paper 1's study of unsorted tables as the harness runs it.
pub(super) struct Measuring<'a> {
    setup: &'a Setup,
    o: &'a Options,
    limits: &'a [u64],
    sets: &'a [KeySet],
    /// Where the tables and indexes go.
    data: &'a Path,
    /// The process's own peak RSS per command and limit.
    baselines: Baselines,
    /// The key set whose cells are running, written by its first.
    tables: Option<Tables>,
}

impl<'a> Measuring<'a> {
    /// Nothing written or measured yet but `baselines`.
    pub(super) fn new(
        setup: &'a Setup,
        o: &'a Options,
        limits: &'a [u64],
        sets: &'a [KeySet],
        data: &'a Path,
        baselines: Baselines,
    ) -> Measuring<'a> {
        Measuring {
            setup,
            o,
            limits,
            sets,
            data,
            baselines,
            tables: None,
        }
    }

    /// Makes the `i`-th key set's tables the ones written: kept where they are already,
    /// else the previous set's removed and these written now.
    fn write_tables(&mut self, i: usize, progress: &dyn Progress) -> anyhow::Result<()> {
        if self.tables.as_ref().is_some_and(|t| t.set == i) {
            return Ok(());
        }
        // The previous set's files go first: a set of the same name writes the same paths.
        self.tables = None;
        let (setup, options, data) = (self.setup, self.o, self.data);
        let set = self
            .sets
            .get(i)
            .ok_or_else(|| anyhow::anyhow!("no key set {i}"))?;
        let name = set.name();
        progress.message(&format!("{name}: tables"));
        let keys = set.load()?;
        let mut scratch = Scratch::new(setup.keep_data);
        let inner = scratch.add(data.join(format!("{name}.unsorted.tbl")));
        write_shuffled(
            tuples_from_keys(&keys, ValueSource::RowId),
            setup.seed,
            &inner,
            |_| {},
        )?;
        let mut outers = Vec::new();
        for (i, &ratio) in options.ratios.iter().enumerate() {
            let seed = setup.seed + 1 + i as u64;
            let sample = if ratio == 1 {
                keys.clone()
            } else {
                lidx::data::sample::random_fraction(&keys, 1.0 / ratio as f64, seed)?
            };
            let path = scratch.add(data.join(format!("{name}.r{ratio}.unsorted.tbl")));
            write_shuffled(
                tuples_from_keys(&sample, ValueSource::RowId),
                seed,
                &path,
                |_| {},
            )?;
            outers.push((ratio, path));
        }
        drop(keys);
        let index_path = |table: &str, kind: &str| data.join(format!("{name}.{table}.{kind}.idx"));
        let inner_indexes = INDEXES.map(|kind| scratch.add(index_path("inner", kind)));
        let outer_indexes: Vec<[PathBuf; 2]> = options
            .ratios
            .iter()
            .map(|r| INDEXES.map(|kind| scratch.add(index_path(&format!("r{r}"), kind))))
            .collect();
        let sorted = scratch.add(data.join(format!("{name}.sorted.tbl")));
        self.tables = Some(Tables {
            set: i,
            name,
            inner,
            outers,
            inner_indexes,
            outer_indexes,
            sorted,
            _scratch: scratch,
        });
        Ok(())
    }
}

impl Experiment for Measuring<'_> {
    type Cell = Cell;
    type Row = Row;

    /// Every key set in order; in each, every repeat, and in each repeat every limit.
    fn cells(&self) -> anyhow::Result<Vec<Cell>> {
        let mut cells = Vec::new();
        for set in 0..self.sets.len() {
            for repeat in 0..self.o.repeat {
                for limit in 0..self.limits.len() {
                    cells.push(Cell { set, repeat, limit });
                }
            }
        }
        Ok(cells)
    }

    /// One per run: both index builds of S and of each R, every join route at every
    /// ratio, and the sorts.
    fn steps(&self, _: &Cell) -> u64 {
        let ratios = self.o.ratios.len();
        (INDEXES.len() * (1 + ratios) + SORTS.len() + JOINS.len() * ratios) as u64
    }

    /// The cell's builds, joins and sorts; the key set's tables are written by its first
    /// cell and removed after its last (or when the study ends, on an error too).
    fn run_cell(&mut self, cell: &Cell, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        self.write_tables(cell.set, progress)?;
        let (setup, options) = (self.setup, self.o);
        let repeat = cell.repeat;
        let limit = *self
            .limits
            .get(cell.limit)
            .ok_or_else(|| anyhow::anyhow!("no limit {}", cell.limit))?;
        let cgroup = options.cgroups.get(cell.limit).map(PathBuf::as_path);
        let baselines = &mut self.baselines;
        let t = self
            .tables
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the key set's tables were just written"))?;
        let name = &t.name;
        let mut rows = Vec::new();
        let mut run = |run: Run<'_>, role: Role, ratio: u64| -> anyhow::Result<()> {
            let baseline_rss = baselines.of(setup, &run, limit, cgroup)?;
            let rec = run_cold(setup, &run, limit, cgroup)?;
            progress.step();
            rows.push(Row {
                set: name.clone(),
                role,
                ratio,
                cgroup: cgroup.map(Path::to_path_buf),
                repeat,
                baseline_rss,
                rec,
            });
            Ok(())
        };
        let at = human_bytes(limit);
        // Fig. 9b: both indexes of S, then of each R (the joins use them).
        progress.message(&format!("{name} {at}: index builds"));
        for (kind, out) in INDEXES.iter().zip(&t.inner_indexes) {
            let build = Run::Build {
                kind,
                table: &t.inner,
                out,
            };
            run(build, Role::Inner, 1)?;
        }
        for ((ratio, table), outs) in t.outers.iter().zip(&t.outer_indexes) {
            for (kind, out) in INDEXES.iter().zip(outs) {
                run(Run::Build { kind, table, out }, Role::Outer, *ratio)?;
            }
        }
        // Fig. 9a: every route at every ratio.
        for ((ratio, outer), outs) in t.outers.iter().zip(&t.outer_indexes) {
            progress.message(&format!("{name} {at}: joins 1:{ratio}"));
            for method in JOINS {
                let indexes = INDEXES
                    .iter()
                    .position(|&k| k == method)
                    .map(|i| (outs[i].as_path(), t.inner_indexes[i].as_path()));
                let join = Run::Join {
                    method,
                    outer,
                    inner: &t.inner,
                    indexes,
                };
                run(join, Role::Join, *ratio)?;
            }
        }
        progress.message(&format!("{name} {at}: sorts"));
        for method in SORTS {
            let sort = Run::Sort {
                method,
                table: &t.inner,
                out: &t.sorted,
            };
            run(sort, Role::Inner, 1)?;
            std::fs::remove_file(&t.sorted)
                .with_context(|| format!("{}: cannot remove", t.sorted.display()))?;
        }
        if cell.repeat + 1 == options.repeat && cell.limit + 1 == self.limits.len() {
            self.tables = None;
        }
        Ok(rows)
    }
}
