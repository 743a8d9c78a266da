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
use lidx::partition::{Entries, Operation, UnsortedRecord};
use lidx::storage::ValueSource;
use lidx::storage::table::{tuples_from_keys, write_shuffled};

use super::rows::{Role, Row};
use super::{INDEXES, OTHER_JOINS, Options, RunsIn, SORTS};
use crate::cgroups::MadeCgroup;
use crate::harness::{Experiment, KeySet, Scratch, Setup};
use crate::progress::Progress;
use crate::text::human_bytes;

/// One run of a command, as the experiment starts it.
#[derive(Clone, Copy)]
enum Run<'a> {
    /// `lidx index build --kind KIND --entries E --table T --out O`.
    Build {
        kind: &'static str,
        entries: Entries,
        table: &'a Path,
        out: &'a Path,
    },
    /// `lidx sort --method METHOD --table T --out O`.
    Sort {
        method: &'static str,
        table: &'a Path,
        out: &'a Path,
    },
    /// `lidx join --method METHOD --outer R --inner S [--entries E --outer-index
    /// --inner-index]`: the indexes, and what they hold, for the index routes.
    Join {
        method: &'static str,
        outer: &'a Path,
        inner: &'a Path,
        indexes: Option<(Entries, &'a Path, &'a Path)>,
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
                if let Some((_, a, b)) = indexes {
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
            Run::Build {
                kind,
                entries,
                table,
                out,
            } => {
                args.extend(["--kind".into(), kind.into(), "--table".into(), table.into()]);
                args.extend(["--entries".into(), entries.name().into()]);
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
                if let Some((entries, a, b)) = indexes {
                    args.extend(["--entries".into(), entries.name().into()]);
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

    /// What the run is, for the baseline's cache: the operation, the method, and what its
    /// indexes hold.
    fn what(&self) -> (Operation, &'static str, Option<Entries>) {
        match *self {
            Run::Build { kind, entries, .. } => (Operation::IndexBuild, kind, Some(entries)),
            Run::Sort { method, .. } => (Operation::Sort, method, None),
            Run::Join {
                method, indexes, ..
            } => (Operation::Join, method, indexes.map(|i| i.0)),
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

/// What a baseline is kept for: the operation, the method, what its indexes hold, and the
/// limit.
type BaselineOf = (Operation, &'static str, Option<Entries>, u64);

/// The same commands on a 256-tuple table (and its indexes): the peak RSS a process has
/// before its data grows it, per operation, method, entries and limit.
pub(super) struct Baselines {
    table: PathBuf,
    /// The table's index of each of [`INDEXES`].
    indexes: Vec<PathBuf>,
    sorted: PathBuf,
    rss: HashMap<BaselineOf, u64>,
    /// The largest peak RSS of the index builds that made `indexes`, outside any cgroup.
    own_rss: u64,
    _scratch: Scratch,
}

impl Baselines {
    /// Writes the 256-tuple table into `dir` and builds every index of it.
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
        let sorted = scratch.add(dir.join("baseline.sorted.tbl"));
        let big = 64 << 20;
        let mut indexes = Vec::new();
        let mut own_rss = 0;
        for (kind, entries) in INDEXES {
            let out = scratch.add(dir.join(format!("baseline.{kind}.{entries}.idx")));
            let run = Run::Build {
                kind,
                entries,
                table: &table,
                out: &out,
            };
            let rec = run_cold(setup, &run, big, None)?;
            own_rss = own_rss.max(rec.peak_rss.unwrap_or(0));
            indexes.push(out);
        }
        Ok(Baselines {
            table,
            indexes,
            sorted,
            rss: HashMap::new(),
            own_rss,
            _scratch: scratch,
        })
    }

    /// The largest peak RSS a tiny index build had, outside any cgroup: the process's own
    /// memory before its data grows it.
    pub(super) fn own_rss(&self) -> u64 {
        self.own_rss
    }

    /// The baseline peak RSS of runs like `run` at `limit`.
    fn of(
        &mut self,
        setup: &Setup,
        run: &Run<'_>,
        limit: u64,
        cgroup: Option<&Path>,
    ) -> anyhow::Result<u64> {
        let (operation, method, entries) = run.what();
        if let Some(&rss) = self.rss.get(&(operation, method, entries, limit)) {
            return Ok(rss);
        }
        let index = INDEXES
            .iter()
            .position(|&(kind, e)| kind == method && Some(e) == entries)
            .and_then(|i| self.indexes.get(i))
            .unwrap_or(&self.table);
        let scratch_out = self.table.with_extension("out.idx");
        let tiny = match *run {
            Run::Build { kind, entries, .. } => Run::Build {
                kind,
                entries,
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
                indexes: indexes.map(|(e, _, _)| (e, index.as_path(), index.as_path())),
            },
        };
        let rec = run_cold(setup, &tiny, limit, cgroup);
        let _ = std::fs::remove_file(&scratch_out);
        let rss = rec?.peak_rss.unwrap_or(0);
        self.rss.insert((operation, method, entries, limit), rss);
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
    /// S's indexes, one per index the study builds (`Options::indexes`).
    inner_indexes: Vec<PathBuf>,
    /// Each R's indexes, likewise.
    outer_indexes: Vec<Vec<PathBuf>>,
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
    /// The cgroup each limit's runs go in (none where empty).
    cgroups: &'a [PathBuf],
    /// The cgroups the study made, whose peak usage each run reports.
    made: Option<&'a [MadeCgroup]>,
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
            cgroups: &[],
            made: None,
        }
    }

    /// Runs every limit's runs in the cgroup `runs_in` names for it.
    pub(super) fn runs_in(&mut self, runs_in: &'a RunsIn) {
        self.cgroups = &runs_in.dirs;
        self.made = runs_in.made.as_ref().map(|m| m.cgroups.as_slice());
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
        let indexes = options.indexes();
        let mut index_paths = |table: &str| -> Vec<PathBuf> {
            indexes
                .iter()
                .map(|(kind, entries)| {
                    scratch.add(data.join(format!("{name}.{table}.{kind}.{entries}.idx")))
                })
                .collect()
        };
        let inner_indexes = index_paths("inner");
        let outer_indexes: Vec<Vec<PathBuf>> = options
            .ratios
            .iter()
            .map(|r| index_paths(&format!("r{r}")))
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
        let indexes = self.o.indexes().len();
        (indexes * (1 + ratios) + SORTS.len() + (indexes + OTHER_JOINS.len()) * ratios) as u64
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
        let cgroup = self.cgroups.get(cell.limit).map(PathBuf::as_path);
        let made = self.made.and_then(|m| m.get(cell.limit));
        let baselines = &mut self.baselines;
        let t = self
            .tables
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the key set's tables were just written"))?;
        let name = &t.name;
        let mut rows = Vec::new();
        let mut run = |run: Run<'_>, role: Role, ratio: u64| -> anyhow::Result<()> {
            let baseline_rss = baselines.of(setup, &run, limit, cgroup)?;
            if let Some(made) = made {
                made.reset_peak();
            }
            let mut rec = run_cold(setup, &run, limit, cgroup)?;
            // The grace join's record has no cgroup figures: the made cgroup's limit is known.
            rec.cgroup_limit = rec.cgroup_limit.or(made.map(MadeCgroup::limit));
            progress.step();
            rows.push(Row {
                set: name.clone(),
                role,
                ratio,
                cgroup: cgroup.map(Path::to_path_buf),
                cgroup_peak: made.and_then(MadeCgroup::peak),
                cgroup_limit_hits: made.and_then(MadeCgroup::limit_hits),
                repeat,
                baseline_rss,
                rec,
            });
            Ok(())
        };
        let at = human_bytes(limit);
        // Fig. 9b: both indexes of S, then of each R (the joins use them).
        progress.message(&format!("{name} {at}: index builds"));
        let indexes = options.indexes();
        for (&(kind, entries), out) in indexes.iter().zip(&t.inner_indexes) {
            let build = Run::Build {
                kind,
                entries,
                table: &t.inner,
                out,
            };
            run(build, Role::Inner, 1)?;
        }
        for ((ratio, table), outs) in t.outers.iter().zip(&t.outer_indexes) {
            for (&(kind, entries), out) in indexes.iter().zip(outs) {
                let build = Run::Build {
                    kind,
                    entries,
                    table,
                    out,
                };
                run(build, Role::Outer, *ratio)?;
            }
        }
        // Fig. 9a: every route at every ratio.
        for ((ratio, outer), outs) in t.outers.iter().zip(&t.outer_indexes) {
            progress.message(&format!("{name} {at}: joins 1:{ratio}"));
            for ((&(method, entries), outer_index), inner_index) in
                indexes.iter().zip(outs).zip(&t.inner_indexes)
            {
                let join = Run::Join {
                    method,
                    outer,
                    inner: &t.inner,
                    indexes: Some((entries, outer_index, inner_index)),
                };
                run(join, Role::Join, *ratio)?;
            }
            for method in OTHER_JOINS {
                let join = Run::Join {
                    method,
                    outer,
                    inner: &t.inner,
                    indexes: None,
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
