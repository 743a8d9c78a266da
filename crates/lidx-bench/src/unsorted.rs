//! `lidx experiment unsorted`: paper 1's joins of unsorted tables under a memory limit
//! (sections 4.4 and 5.4, Fig. 9), and the sorts beyond it.
//!
//! The inner table S holds a key set's keys in a seeded random order (the paper shuffles
//! FB); the outer table R of ratio r is a uniform 1/r sample of them, shuffled apart. At
//! every memory limit:
//! - **Fig. 9b**: both unclustered indexes of S (and of R) are built: the learned partition
//!   index and the B+tree by inserts, with their time, I/O, write amplification and index
//!   sizes.
//! - **Fig. 9a**: R joins S through those indexes (learned and B+tree routes, the join's
//!   time without the builds, as the paper plots it), beside the grace hash join and
//!   sort-then-merge (the sorting counted apart).
//! - **Sorts**: S sorted three ways (external merge sort, learned sort, B+tree in order).
//!
//! Every run is a fresh `lidx ... --json` process under `--memory-limit` (and the user's
//! cgroup for that limit, where given), started after the pages of its inputs are dropped
//! from the OS page cache. Each reports its peak RSS; the same command on a 256-tuple table
//! gives the process's own baseline, so every row says whether the run's growth stayed
//! within the limit.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use lidx::data::Distribution;
use lidx::files::cache::drop_file_pages;
use lidx::join::JoinRecord;
use lidx::partition::{Operation, PartitionParams, UnsortedRecord};
use lidx::storage::table::{tuples_from_keys, write_shuffled};
use lidx::storage::{TUPLE_SIZE, ValueSource};
use serde::Serialize;

use crate::csv_rows::{Fixed, write_rows};
use crate::harness::{KeySet, Scratch, Setup, Study};
use crate::plot::{Scale, Series, chart};
use crate::progress::Progress;
use crate::stats::medians;
use crate::text::{human_bytes, times};

/// The study's own settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Memory limits in bytes; `None`: a small one, where the B+tree's leaves do not fit
    /// (a sixteenth of the table), a medium one (half the table) and a large one, where
    /// everything does (four tables).
    pub limits: Option<Vec<u64>>,
    /// Cgroups the user made, one per limit in the same order (or none): every run at a
    /// limit joins its cgroup, which bounds the page cache as paper 1's cgroups did.
    pub cgroups: Vec<PathBuf>,
    /// Size ratios |S|/|R|.
    pub ratios: Vec<u64>,
    /// Measurements per cell; the summary takes the median.
    pub repeat: usize,
}

/// The unsorted join routes, as `lidx join --method` names them.
const JOINS: [&str; 4] = ["partition", "btree-inserts", "grace", "sort-merge"];
/// The unclustered indexes, as `lidx index build --kind` names them.
const INDEXES: [&str; 2] = ["partition", "btree-inserts"];
/// The sorts, as `lidx sort --method` names them.
const SORTS: [&str; 3] = ["external", "learned", "btree-inserts"];

/// Growth of the peak RSS beyond the limit that still counts as within it: allocator
/// rounding, stacks and the standard library's buffers (the CLI's RSS test uses the same).
pub const RSS_SLACK: u64 = 2 << 20;

impl Options {
    /// Checks every setting against a key set of `n` tuples and returns the limits.
    fn limits(&self, n: u64) -> anyhow::Result<Vec<u64>> {
        if self.ratios.is_empty() || self.ratios.contains(&0) {
            bail!("invalid ratios: each must be at least 1");
        }
        if self.repeat == 0 {
            bail!("invalid repeat: at least 1 measurement per cell");
        }
        let need = smallest_limit(n);
        let limits = match &self.limits {
            Some(limits) => limits.clone(),
            None => {
                let data = n * TUPLE_SIZE as u64;
                let mib = |b: u64| b.div_ceil(1 << 20) << 20;
                let small = mib((data / 16).max(2 * need));
                let large = mib(4 * data).max(2 * small);
                // Between them, where part of the B+tree's leaves fit.
                let medium = mib((data / 2).clamp(small, large));
                let mut limits = vec![small, medium, large];
                limits.dedup();
                limits
            }
        };
        if limits.is_empty() {
            bail!("invalid memory-limits: give at least one");
        }
        if let Some(&small) = limits.iter().find(|&&l| l < need) {
            bail!(
                "invalid memory-limits: {} is too small for {n} tuples; the smallest that works is {} ({need} bytes)",
                human_bytes(small),
                human_bytes(need)
            );
        }
        if !self.cgroups.is_empty() && self.cgroups.len() != limits.len() {
            bail!(
                "invalid cgroups: give one per memory limit ({} limits, {} cgroups)",
                limits.len(),
                self.cgroups.len()
            );
        }
        Ok(limits)
    }
}

/// The smallest limit every run on `n` tuples works with: the larger index build (the
/// B+tree's or the partitioning's), or a sort, whichever needs more.
pub fn smallest_limit(n: u64) -> u64 {
    let partition = lidx::partition::min_build_memory(n, &PartitionParams::default());
    let btree = lidx::partition::btree::min_build_memory(n);
    partition.max(btree).max(lidx::sort::min_sort_memory())
}

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
fn measure(
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
struct Baselines {
    table: PathBuf,
    partition: PathBuf,
    btree: PathBuf,
    sorted: PathBuf,
    rss: HashMap<(Operation, &'static str, u64), u64>,
    _scratch: Scratch,
}

impl Baselines {
    fn new(setup: &Setup, dir: &Path) -> anyhow::Result<Baselines> {
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
            measure(setup, &run, big, None)?;
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
        let rec = measure(setup, &tiny, limit, cgroup);
        let _ = std::fs::remove_file(&scratch_out);
        let rss = rec?.peak_rss.unwrap_or(0);
        self.rss.insert((operation, method, limit), rss);
        Ok(rss)
    }
}

/// What a row measured the run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Role {
    /// A build or sort of the inner table S.
    Inner,
    /// A build of the outer table R.
    Outer,
    /// A join of R with S.
    Join,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Inner => "inner",
            Role::Outer => "outer",
            Role::Join => "join",
        }
    }
}

/// One measurement.
struct Row {
    set: String,
    role: Role,
    /// |S|/|R| (1 for runs on S alone).
    ratio: u64,
    cgroup: Option<PathBuf>,
    repeat: usize,
    baseline_rss: u64,
    rec: UnsortedRecord,
}

impl Row {
    fn operation(&self) -> Operation {
        self.rec.operation.unwrap_or(Operation::Join)
    }

    /// The peak RSS's growth beyond the process's baseline.
    fn rss_growth(&self) -> Option<u64> {
        self.rec
            .peak_rss
            .map(|rss| rss.saturating_sub(self.baseline_rss))
    }

    fn within_limit(&self) -> Option<bool> {
        self.rss_growth()
            .map(|g| g <= self.rec.memory_limit + RSS_SLACK)
    }

    fn cell(&self) -> Cell {
        Cell {
            set: self.set.clone(),
            role: self.role,
            method: self.rec.method.clone(),
            operation: self.operation(),
            ratio: self.ratio,
            limit: self.rec.memory_limit,
        }
    }
}

/// The cell a measurement belongs to (its repeats share it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Cell {
    set: String,
    role: Role,
    operation: Operation,
    method: String,
    ratio: u64,
    limit: u64,
}

/// Runs the study; returns the report to print.
pub fn run(setup: &Setup, options: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    let limits = options.limits(setup.n)?;
    let mut setup = setup.clone();
    if setup.sets.is_none() && setup.keys.is_empty() {
        // Paper 1 joins one key set unsorted (FB); lognormal is the synthetic set nearest it.
        setup.sets = Some(vec![Distribution::Lognormal]);
    }
    let setup = &setup;
    let (study, [mut csv_out, mut summary_out]) =
        setup.begin("unsorted", ["unsorted.csv", "summary.md"], progress)?;
    let Study {
        sets,
        dirs,
        machine,
        profile,
        started,
        ..
    } = &study;

    let per_limit = INDEXES.len() * (1 + options.ratios.len())
        + SORTS.len()
        + JOINS.len() * options.ratios.len();
    let total = (sets.len() * options.repeat * limits.len() * per_limit) as u64;
    progress.start(total, "unsorted", "runs");
    progress.message("baselines");
    let mut baselines = Baselines::new(setup, &dirs.data)?;
    let mut rows = Vec::new();
    for set in sets {
        rows.extend(measure_set(
            setup,
            options,
            &limits,
            set,
            &dirs.data,
            &mut baselines,
            progress,
        )?);
    }
    progress.finish();
    drop(baselines);

    let csv_rows: Vec<CsvRow<'_>> = rows
        .iter()
        .map(|r| CsvRow::new(r, machine, &profile.device))
        .collect();
    write_rows(&mut csv_out.file, &csv_rows)?;
    let summary = summarize(options, &limits, sets, &rows);
    let mut md = format!(
        "# lidx experiment unsorted\n\nMachine: {machine}. Device: {}. {} key set(s) of {} keys, shuffled; every run a fresh process under `--memory-limit`, its inputs' pages dropped first; reads buffered{}.\n\n",
        profile.device,
        sets.len(),
        setup.n,
        if options.cgroups.is_empty() {
            " (the page cache is not bounded: no cgroup given)"
        } else {
            ", each run in the cgroup given for its limit"
        }
    );
    md.push_str(&summary);
    summary_out.file.write_all(md.as_bytes())?;
    let paths = [&csv_out, &summary_out].map(|o| o.path.display().to_string());
    csv_out.finish()?;
    summary_out.finish()?;
    let plots = plot_all(&limits, sets, &rows, &options.ratios, &dirs.out)?;
    dirs.finish();
    Ok(format!(
        "{summary}\n{} runs in {:.0} s. Wrote {}, {} and {plots} plots in {}\n",
        rows.len(),
        started.elapsed().as_secs_f64(),
        paths[0],
        paths[1],
        dirs.out.display()
    ))
}

/// The tables of one key set, then every limit's builds, joins and sorts.
fn measure_set(
    setup: &Setup,
    options: &Options,
    limits: &[u64],
    set: &KeySet,
    data: &Path,
    baselines: &mut Baselines,
    progress: &dyn Progress,
) -> anyhow::Result<Vec<Row>> {
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

    let mut rows = Vec::new();
    for repeat in 0..options.repeat {
        for (l, &limit) in limits.iter().enumerate() {
            let cgroup = options.cgroups.get(l).map(PathBuf::as_path);
            let mut run = |run: Run<'_>, role: Role, ratio: u64| -> anyhow::Result<()> {
                let baseline_rss = baselines.of(setup, &run, limit, cgroup)?;
                let rec = measure(setup, &run, limit, cgroup)?;
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
            for (kind, out) in INDEXES.iter().zip(&inner_indexes) {
                let build = Run::Build {
                    kind,
                    table: &inner,
                    out,
                };
                run(build, Role::Inner, 1)?;
            }
            for ((ratio, table), outs) in outers.iter().zip(&outer_indexes) {
                for (kind, out) in INDEXES.iter().zip(outs) {
                    run(Run::Build { kind, table, out }, Role::Outer, *ratio)?;
                }
            }
            // Fig. 9a: every route at every ratio.
            for ((ratio, outer), outs) in outers.iter().zip(&outer_indexes) {
                progress.message(&format!("{name} {at}: joins 1:{ratio}"));
                for method in JOINS {
                    let indexes = INDEXES
                        .iter()
                        .position(|&k| k == method)
                        .map(|i| (outs[i].as_path(), inner_indexes[i].as_path()));
                    let join = Run::Join {
                        method,
                        outer,
                        inner: &inner,
                        indexes,
                    };
                    run(join, Role::Join, *ratio)?;
                }
            }
            progress.message(&format!("{name} {at}: sorts"));
            for method in SORTS {
                let sort = Run::Sort {
                    method,
                    table: &inner,
                    out: &sorted,
                };
                run(sort, Role::Inner, 1)?;
                std::fs::remove_file(&sorted)
                    .with_context(|| format!("{}: cannot remove", sorted.display()))?;
            }
        }
    }
    Ok(rows)
}

/// One run, as a row of `unsorted.csv`.
#[derive(Serialize, Default)]
struct CsvRow<'a> {
    experiment: &'static str,
    key_set: &'a str,
    operation: &'static str,
    method: &'a str,
    table: &'static str,
    ratio: u64,
    tuples: u64,
    inner_tuples: u64,
    memory_limit: u64,
    cgroup: String,
    cgroup_limit: Option<u64>,
    repeat: usize,
    seconds: Fixed<6>,
    prepare_s: Fixed<6>,
    bytes_read: u64,
    read_calls: u64,
    bytes_written: u64,
    write_calls: u64,
    write_amplification: Fixed<3>,
    index_memory_bytes: u64,
    model_bytes: u64,
    output_tuples: u64,
    lookups: u64,
    leaves: u64,
    leaf_reads: u64,
    leaf_writes: u64,
    splits: u64,
    pool_hits: u64,
    evictions: u64,
    partitions: u64,
    largest_partition: u64,
    empty_partitions: u64,
    overflowed_partitions: u64,
    pages: u64,
    partitions_read: u64,
    peak_reserved: u64,
    peak_rss: Option<u64>,
    baseline_rss: u64,
    rss_growth: Option<u64>,
    within_limit: Option<bool>,
    page_cache: &'static str,
    machine: &'a str,
    device: &'a str,
}

impl<'a> CsvRow<'a> {
    fn new(r: &'a Row, machine: &'a str, device: &'a str) -> Self {
        let rec = &r.rec;
        CsvRow {
            experiment: "unsorted",
            key_set: &r.set,
            operation: r.operation().name(),
            method: &rec.method,
            table: r.role.name(),
            ratio: r.ratio,
            tuples: rec.tuples,
            inner_tuples: rec.inner_tuples,
            memory_limit: rec.memory_limit,
            cgroup: r
                .cgroup
                .as_ref()
                .map_or_else(String::new, |c| c.display().to_string()),
            cgroup_limit: rec.cgroup_limit,
            repeat: r.repeat,
            seconds: Fixed(rec.seconds),
            prepare_s: Fixed(rec.prepare_s),
            bytes_read: rec.bytes_read,
            read_calls: rec.read_calls,
            bytes_written: rec.bytes_written,
            write_calls: rec.write_calls,
            write_amplification: Fixed(rec.write_amplification()),
            index_memory_bytes: rec.index_memory_bytes,
            model_bytes: rec.model_bytes,
            output_tuples: rec.output_tuples,
            lookups: rec.lookups,
            leaves: rec.leaves,
            leaf_reads: rec.leaf_reads,
            leaf_writes: rec.leaf_writes,
            splits: rec.splits,
            pool_hits: rec.pool_hits,
            evictions: rec.evictions,
            partitions: rec.partitions,
            largest_partition: rec.largest_partition,
            empty_partitions: rec.empty_partitions,
            overflowed_partitions: rec.overflowed_partitions,
            pages: rec.pages,
            partitions_read: rec.partitions_read,
            peak_reserved: rec.peak_reserved,
            peak_rss: rec.peak_rss,
            baseline_rss: r.baseline_rss,
            rss_growth: r.rss_growth(),
            within_limit: r.within_limit(),
            page_cache: if r.cgroup.is_some() {
                "cgroup"
            } else {
                "unbounded"
            },
            machine,
            device,
        }
    }
}

/// The median figures of a cell.
#[derive(Clone, Copy, Debug, Default)]
struct Figures {
    seconds: f64,
    prepare: f64,
    write_amplification: f64,
    index_bytes: f64,
    model_bytes: f64,
    leaf_reads: f64,
    evictions: f64,
    read_calls: f64,
    bytes_read: f64,
}

fn cell_medians(rows: &[Row]) -> HashMap<Cell, Figures> {
    medians(rows, Row::cell, |r| {
        let rec = &r.rec;
        [
            rec.seconds,
            rec.prepare_s,
            rec.write_amplification(),
            rec.index_memory_bytes as f64,
            rec.model_bytes as f64,
            rec.leaf_reads as f64,
            rec.evictions as f64,
            rec.read_calls as f64,
            rec.bytes_read as f64,
        ]
    })
    .into_iter()
    .map(|(c, f)| {
        let figures = Figures {
            seconds: f[0],
            prepare: f[1],
            write_amplification: f[2],
            index_bytes: f[3],
            model_bytes: f[4],
            leaf_reads: f[5],
            evictions: f[6],
            read_calls: f[7],
            bytes_read: f[8],
        };
        (c, figures)
    })
    .collect()
}

/// Looks cells up by what they are.
struct Lookup<'a> {
    m: &'a HashMap<Cell, Figures>,
}

impl Lookup<'_> {
    fn get(
        &self,
        set: &str,
        role: Role,
        operation: Operation,
        method: &str,
        ratio: u64,
        limit: u64,
    ) -> Option<Figures> {
        let cell = Cell {
            set: set.to_string(),
            role,
            operation,
            method: method.to_string(),
            ratio,
            limit,
        };
        self.m.get(&cell).copied()
    }

    fn build(&self, set: &str, role: Role, kind: &str, ratio: u64, limit: u64) -> Option<Figures> {
        self.get(set, role, Operation::IndexBuild, kind, ratio, limit)
    }

    fn join(&self, set: &str, method: &str, ratio: u64, limit: u64) -> Option<Figures> {
        self.get(set, Role::Join, Operation::Join, method, ratio, limit)
    }

    fn sort(&self, set: &str, method: &str, limit: u64) -> Option<Figures> {
        self.get(set, Role::Inner, Operation::Sort, method, 1, limit)
    }

    /// A join's time with the work before it: both indexes built at the same limit
    /// (index routes), both tables sorted (sort-merge), nothing (grace).
    fn join_with_builds(&self, set: &str, method: &str, ratio: u64, limit: u64) -> Option<f64> {
        let join = self.join(set, method, ratio, limit)?;
        if !INDEXES.contains(&method) {
            return Some(join.seconds + join.prepare);
        }
        let inner = self.build(set, Role::Inner, method, 1, limit)?;
        let outer = self.build(set, Role::Outer, method, ratio, limit)?;
        Some(join.seconds + inner.seconds + outer.seconds)
    }
}

/// A limit's name in tables and plots.
fn limit_name(limits: &[u64], limit: u64, defaults: bool) -> String {
    let size = human_bytes(limit);
    let last = limits.len().saturating_sub(1);
    match (defaults, limits.iter().position(|&l| l == limit)) {
        (true, Some(0)) => format!("small ({size})"),
        (true, Some(i)) if i == last => format!("large ({size})"),
        (true, Some(_)) => format!("medium ({size})"),
        _ => size,
    }
}

fn summarize(options: &Options, limits: &[u64], sets: &[KeySet], rows: &[Row]) -> String {
    let m = cell_medians(rows);
    let q = Lookup { m: &m };
    let defaults = options.limits.is_none();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## Index creation (Fig. 9b)\n\nBuilding both unclustered indexes of the shuffled inner table, in seconds; medians of {} run(s). Write amplification is bytes written per byte of tuples. Index in memory: the PGM and partition map, or the B+tree's levels above its leaves. Paper 1 (FB, 200M keys): 2 GB limit 10,777 s B-tree against 2,993 s PGM (3.6x); 32 GB 1,406 s against 411 s (3.4x); PGM 3 MB against B-tree 12 MB.\n",
        options.repeat
    );
    let _ = writeln!(
        s,
        "| key set | limit | btree-inserts (s) | partition (s) | speedup | paper | WA btree / partition | leaf reads | evictions | in memory: btree levels / partition model and map (model alone) |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---|---:|---:|---:|---:|");
    for set in sets {
        let name = set.name();
        for &limit in limits {
            let b = q.build(&name, Role::Inner, "btree-inserts", 1, limit);
            let p = q.build(&name, Role::Inner, "partition", 1, limit);
            let (Some(b), Some(p)) = (b, p) else {
                continue;
            };
            let paper = match limits.iter().position(|&l| l == limit) {
                Some(0) => "3.6x (2 GB)",
                Some(i) if i + 1 == limits.len() => "3.4x (32 GB)",
                _ => "-",
            };
            let _ = writeln!(
                s,
                "| {name} | {} | {:.2} | {:.2} | {} | {paper} | {:.1} / {:.2} | {:.0} | {:.0} | {} / {} ({}) |",
                limit_name(limits, limit, defaults),
                b.seconds,
                p.seconds,
                times(b.seconds / p.seconds),
                b.write_amplification,
                p.write_amplification,
                b.leaf_reads,
                b.evictions,
                human_bytes(b.index_bytes as u64),
                human_bytes(p.index_bytes as u64),
                human_bytes(p.model_bytes as u64),
            );
        }
    }

    let _ = writeln!(
        s,
        "\n## Joins of unsorted tables (Fig. 9a)\n\nJoin time in seconds after the indexes are built (as the paper plots it); sort-merge after both tables are sorted. In brackets: with that work (both indexes built at the same limit, or both tables sorted). Paper 1: the learned and B-tree joins perform about the same.\n"
    );
    let _ = writeln!(
        s,
        "| key set | limit | ratio | partition | btree-inserts | btree / partition | grace | sort-merge |"
    );
    let _ = writeln!(s, "|---|---|---:|---|---|---:|---|---|");
    for set in sets {
        let name = set.name();
        for &limit in limits {
            for &ratio in &options.ratios {
                let cell = |method: &str| -> String {
                    match (
                        q.join(&name, method, ratio, limit),
                        q.join_with_builds(&name, method, ratio, limit),
                    ) {
                        (Some(j), Some(w)) if method != "grace" => {
                            format!("{:.3} ({w:.2})", j.seconds)
                        }
                        (Some(j), _) => format!("{:.3}", j.seconds),
                        _ => "-".to_string(),
                    }
                };
                let ratio_of = match (
                    q.join(&name, "btree-inserts", ratio, limit),
                    q.join(&name, "partition", ratio, limit),
                ) {
                    (Some(b), Some(p)) => times(b.seconds / p.seconds),
                    _ => "-".to_string(),
                };
                let _ = writeln!(
                    s,
                    "| {name} | {} | {ratio} | {} | {} | {ratio_of} | {} | {} |",
                    limit_name(limits, limit, defaults),
                    cell("partition"),
                    cell("btree-inserts"),
                    cell("grace"),
                    cell("sort-merge"),
                );
            }
        }
    }

    for set in sets {
        let name = set.name();
        let (limit, ratio) = (limits[0], options.ratios[0]);
        let (Some(p), Some(b)) = (
            q.join(&name, "partition", ratio, limit),
            q.join(&name, "btree-inserts", ratio, limit),
        ) else {
            continue;
        };
        let _ = writeln!(
            s,
            "\nWhy the two index routes differ ({name}, ratio {ratio}, {}): the learned partitions hold the tuples themselves, so its join read {} in {:.0} calls, each partition once; the B+tree holds (key, position) pairs and fetches every tuple through its position, a block read per tuple on each side unless it is the block read last: {} in {:.0} calls, besides {:.0} leaf reads. With 8-byte values a position is as large as the value, so the partitions take no more space than the leaves. {}",
            human_bytes(limit),
            human_bytes(p.bytes_read as u64),
            p.read_calls,
            human_bytes(b.bytes_read as u64),
            b.read_calls,
            b.leaf_reads,
            if options.cgroups.is_empty() {
                "Paper 1 ran its joins under a cgroup that bounded the page cache too; without one (`--cgroups`) the reads here after the first are served from the page cache."
            } else {
                "Each run here was in the cgroup given for its limit, which bounds the page cache too, as paper 1's cgroups did."
            },
        );
    }

    let _ = writeln!(
        s,
        "\n## Sorts (beyond the paper)\n\nThe inner table sorted into a new table, in seconds; all three write the same bytes.\n"
    );
    let _ = writeln!(
        s,
        "| key set | limit | external | learned | btree-inserts | learned / external |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|");
    for set in sets {
        let name = set.name();
        for &limit in limits {
            let t = |method| q.sort(&name, method, limit).map(|f| f.seconds);
            let (Some(e), Some(l), Some(b)) = (t("external"), t("learned"), t("btree-inserts"))
            else {
                continue;
            };
            let _ = writeln!(
                s,
                "| {name} | {} | {e:.3} | {l:.3} | {b:.3} | {} |",
                limit_name(limits, limit, defaults),
                times(l / e)
            );
        }
    }

    let measured: Vec<&Row> = rows.iter().filter(|r| r.rec.peak_rss.is_some()).collect();
    let within = measured
        .iter()
        .filter(|r| r.within_limit() == Some(true))
        .count();
    let worst = measured
        .iter()
        .filter_map(|r| Some((r.rss_growth()? as f64 - r.rec.memory_limit as f64, *r)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let _ = writeln!(
        s,
        "\n## Memory\n\nPeak RSS grew by at most the limit plus {} beyond the process's own baseline (the same command on a 256-tuple table) in {within} of {} runs.",
        human_bytes(RSS_SLACK),
        measured.len()
    );
    if let Some((over, r)) = worst {
        let _ = writeln!(
            s,
            "Largest growth against its limit: {} {} ({}, {} tuples) grew {} under a limit of {} ({} {}).",
            r.operation().name(),
            r.rec.method,
            r.set,
            r.rec.tuples,
            human_bytes(r.rss_growth().unwrap_or(0)),
            human_bytes(r.rec.memory_limit),
            human_bytes(over.abs() as u64),
            if over > 0.0 { "above" } else { "below" }
        );
    }
    s
}

/// Fig. 9a per limit, Fig. 9b and the sorts per key set; returns how many PNGs were
/// written.
fn plot_all(
    limits: &[u64],
    sets: &[KeySet],
    rows: &[Row],
    ratios: &[u64],
    out: &Path,
) -> anyhow::Result<usize> {
    let m = cell_medians(rows);
    let q = Lookup { m: &m };
    let mut written = 0;
    for set in sets {
        let name = set.name();
        for &limit in limits {
            let size = human_bytes(limit).replace(' ', "");
            let mut series: Vec<Series> = JOINS
                .iter()
                .map(|&method| Series {
                    name: method.to_string(),
                    points: ratios
                        .iter()
                        .filter_map(|&r| Some((r as f64, q.join(&name, method, r, limit)?.seconds)))
                        .collect(),
                })
                .collect();
            for method in ["partition", "btree-inserts", "sort-merge"] {
                let work = if method == "sort-merge" {
                    "sorts"
                } else {
                    "index builds"
                };
                series.push(Series {
                    name: format!("{method} + {work}"),
                    points: ratios
                        .iter()
                        .filter_map(|&r| {
                            Some((r as f64, q.join_with_builds(&name, method, r, limit)?))
                        })
                        .collect(),
                });
            }
            chart(
                &out.join(format!("fig9a_{name}_{size}.png")),
                &format!(
                    "{name}: joins of unsorted tables, memory limit {}",
                    human_bytes(limit)
                ),
                ("size ratio |S|/|R|", Scale::Log),
                ("time (s)", Scale::Log),
                &series,
                true,
            )?;
            written += 1;
        }
        let at_limits = |f: &dyn Fn(u64) -> Option<f64>| -> Vec<(f64, f64)> {
            limits
                .iter()
                .filter_map(|&l| Some((l as f64, f(l)?)))
                .collect()
        };
        let series: Vec<Series> = INDEXES
            .iter()
            .map(|&kind| Series {
                name: kind.to_string(),
                points: at_limits(&|l| Some(q.build(&name, Role::Inner, kind, 1, l)?.seconds)),
            })
            .collect();
        chart(
            &out.join(format!("fig9b_{name}.png")),
            &format!("{name}: time to build an unclustered index against the memory limit"),
            ("memory limit (bytes)", Scale::Log),
            ("index creation (s)", Scale::Log),
            &series,
            true,
        )?;
        let series: Vec<Series> = SORTS
            .iter()
            .map(|&method| Series {
                name: method.to_string(),
                points: at_limits(&|l| Some(q.sort(&name, method, l)?.seconds)),
            })
            .collect();
        chart(
            &out.join(format!("sorts_{name}.png")),
            &format!("{name}: sorting the unsorted table against the memory limit"),
            ("memory limit (bytes)", Scale::Log),
            ("sort time (s)", Scale::Log),
            &series,
            true,
        )?;
        written += 2;
    }
    Ok(written)
}
