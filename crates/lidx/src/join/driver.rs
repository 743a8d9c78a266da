//! One whole join of two table files, as `lidx join` runs it, whatever the method (paper 1,
//! sections 3, 4.3, 4.4, 5 and 5.4). Every method goes through the same steps:
//!
//! 1. [`plan`]: the request's settings checked against the method (a setting the method
//!    does not take is refused, not ignored), the inputs opened and checked, the output
//!    refused where it is an input, all before any output exists; the cost model's
//!    estimate and, where no method is asked for, its pick.
//! 2. *Prepare* ([`JoinPlan::run`]): what the method joins through, made ready and timed
//!    apart as `build_s`: the inner table's index loaded and checked against the table or
//!    built ([`JoinMethod::Inlj`]), its ALEX file ([`JoinMethod::InljAlex`]), the outer
//!    table's hash table ([`JoinMethod::Hash`]), both tables' unclustered indexes
//!    ([`JoinMethod::Partition`], [`JoinMethod::BTreeInserts`]) or sorted copies
//!    ([`JoinMethod::SortMerge`]). Files built for the join are scratch files beside the
//!    output (beside the inner table when only counting), removed when it ends.
//! 3. *Join*: with `cold`, the pages of every file it reads dropped first; the join timed;
//!    its output written — the methods on threads spill a part per thread and copy the
//!    parts into the output table in order after (`write_s`), the one-thread methods write
//!    it as they emit — then fsynced and renamed into place (`fsync_s`).
//! 4. One [`JoinRecord`] of every figure, with the unclustered joins' extras in its
//!    [`UnclusteredFigures`] section.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::cost::{self, Estimate, JoinShape};
use super::method::JoinMethod;
use super::output::InPlace;
use super::record::{JoinRecord, UnclusteredFigures};
use super::unclustered::{btree_join, partition_join};
use super::{
    CountSink, HashTable, InljOptions, JoinSink, JoinStats, Method, SpillSink, grace_hash_join,
    merge_join, parallel_join, parallel_join_with,
};
use crate::files::{PendingGuard, cache, parent_dir, refuse_same_file, scratch_path};
use crate::index::{AnyIndex, AnyParams, file};
use crate::memory::{MemoryBudget, Reservation};
use crate::partition::btree::{self, InsertedBTree, MIN_FRAMES};
use crate::partition::{self, Entries, PartitionFile, PartitionParams};
use crate::sort::{SortOptions, sort_table};
use crate::storage::profile::StorageProfile;
use crate::storage::{IoBackend, ReadMode, TUPLE_SIZE, Table, TableWriter};
use crate::updatable::alex::AlexParams;
use crate::updatable::alex::file::{self as alex_file, AlexFile};
use crate::{Error, Result};

/// Everything one join is asked to do. A setting that the method does not take must be
/// left at its default ([`JoinRequest::new`]'s): [`plan`] refuses it rather than ignore it.
#[derive(Clone, Debug)]
pub struct JoinRequest {
    /// The outer (smaller) table.
    pub outer: PathBuf,
    /// The inner table.
    pub inner: PathBuf,
    /// The method; `None` runs whichever of `inlj:sampled-pgm`, merge and hash the cost
    /// model predicts fastest (`lidx join --method auto`; hash alone where a table is not
    /// sorted).
    pub method: Option<JoinMethod>,
    /// A saved index of the inner table: an index file of the method's kind (INLJ), an
    /// ALEX file (`inlj:alex`), or the inner table's partition index or B+tree file
    /// (`partition`, `btree-inserts`). Without it one is built for the join, its time
    /// reported apart as `build_s`.
    pub index: Option<PathBuf>,
    /// A saved partition index or B+tree file of the outer table (`partition`,
    /// `btree-inserts`); without it one is built for the join.
    pub outer_index: Option<PathBuf>,
    /// The storage profile the cost model predicts with; `None` assumes an SSD
    /// ([`cost::assumed_ssd`]). Only methods the model covers take one.
    pub profile: Option<StorageProfile>,
    /// Threads, each joining a contiguous share of the outer table (the inner one's for
    /// hash); 1 for the one-thread methods.
    pub threads: usize,
    /// How the inputs are read.
    pub mode: ReadMode,
    /// Bytes per sequential read of a scanned table.
    pub read_size: u64,
    /// Paper 1's first optimization (INLJ through an index kind); on by default.
    pub cursor: bool,
    /// Paper 1's monotone-window optimization (INLJ through an index kind); on by default.
    pub monotone: bool,
    /// Window reads each INLJ thread keeps in flight (INLJ through an index kind).
    pub io_depth: usize,
    /// What keeps them in flight.
    pub io_backend: IoBackend,
    /// Drop the cached pages of every file the join reads, before preparing and again
    /// before joining (paper 1 starts cold).
    pub cold: bool,
    /// The output table of (key, outer value, inner value) tuples; `None` counts them.
    pub output: Option<PathBuf>,
    /// The memory the join may hold: hash tables, read buffers, partitions and B+tree
    /// pools (the grace join partitions to stay within it); `None` is the method's
    /// [`default_budget`](JoinMethod::default_budget).
    pub memory: Option<MemoryBudget>,
    /// What the unclustered indexes hold (`partition`, `btree-inserts`): an index the join
    /// builds holds these, a saved one must; `None` builds pointers, as paper 1 measured,
    /// and takes saved indexes as they are.
    pub entries: Option<Entries>,
}

impl JoinRequest {
    /// A request to join `outer` with `inner` by `method`, counting the output, with every
    /// other setting at its default: one thread, buffered reads of 1 MiB, both of paper 1's
    /// optimizations, one read in flight, warm, no saved index, the assumed SSD and the
    /// method's default budget.
    pub fn new(outer: &Path, inner: &Path, method: Option<JoinMethod>) -> JoinRequest {
        JoinRequest {
            outer: outer.to_path_buf(),
            inner: inner.to_path_buf(),
            method,
            index: None,
            outer_index: None,
            profile: None,
            threads: 1,
            mode: ReadMode::Buffered,
            read_size: 1 << 20,
            cursor: true,
            monotone: true,
            io_depth: 1,
            io_backend: IoBackend::Auto,
            cold: false,
            output: None,
            memory: None,
            entries: None,
        }
    }

    /// The index files it names.
    fn index_files(&self) -> impl Iterator<Item = &Path> {
        self.index
            .iter()
            .chain(&self.outer_index)
            .map(PathBuf::as_path)
    }

    /// Refuses every setting `method` does not take (`None`: the cost model's pick, which
    /// takes what all of its candidates take).
    fn check(&self, method: Option<JoinMethod>) -> Result<()> {
        if self.threads == 0 {
            return Err(Error::param("threads", "0 is not a number of threads"));
        }
        if self.io_depth == 0 {
            return Err(Error::param(
                "I/O depth",
                "0 reads in flight cannot make progress",
            ));
        }
        let name = method.map_or("auto (the cost model's pick)".to_string(), |m| {
            m.to_string()
        });
        let refuse = |setting: &'static str, why: &str| {
            Err(Error::param(setting, format!("--method {name} {why}")))
        };
        let takes = |test: fn(JoinMethod) -> bool| method.is_some_and(test);
        if self.index.is_some() && !takes(JoinMethod::takes_index) {
            return refuse(
                "index",
                "joins through no saved index of the inner table (inlj, inlj:alex, partition and btree-inserts do)",
            );
        }
        if self.outer_index.is_some() && !takes(JoinMethod::takes_outer_index) {
            return refuse(
                "outer index",
                "joins through no index of the outer table (partition and btree-inserts do)",
            );
        }
        let Some(method) = method else {
            return Ok(());
        };
        let inlj = matches!(method, JoinMethod::Inlj(_));
        if self.threads != 1 && !method.on_threads() {
            return refuse("threads", "runs on one thread");
        }
        if self.io_depth != 1 && !inlj {
            return refuse("I/O depth", "keeps one read in flight");
        }
        if !self.cursor && !inlj {
            return refuse("cursor", "has no index cursor to turn off");
        }
        if !self.monotone && !inlj {
            return refuse("monotone windows", "has no index windows to turn off");
        }
        if self.profile.is_some() && method.modelled_as().is_none() {
            return refuse("storage profile", "is not in the cost model");
        }
        if self.entries.is_some() && !method.takes_outer_index() {
            return refuse(
                "entries",
                "joins through no unclustered index (partition and btree-inserts do)",
            );
        }
        if self.memory.is_some() && !method.takes_budget() {
            return refuse(
                "memory budget",
                "holds fixed buffers only (one page read at a time)",
            );
        }
        Ok(())
    }
}

/// What a join is doing, for progress displays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Making ready what the method joins through (an index, an ALEX file, a hash table,
    /// sorted copies), as a phrase: "building sampled-pgm over 1000 keys".
    Preparing(String),
    /// Joining.
    Joining,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Preparing(what) => f.write_str(what),
            Stage::Joining => f.write_str("joining"),
        }
    }
}

/// A finished join.
#[derive(Clone, Debug)]
pub struct JoinRun {
    /// The method that ran (the cost model's pick where none was asked for).
    pub method: JoinMethod,
    /// Every figure.
    pub record: JoinRecord,
    /// The cost model's estimate of the methods it weighs.
    pub estimate: Estimate,
    /// The budget the join held its memory in (its limit and peak are the record's
    /// unclustered figures' too).
    pub memory: MemoryBudget,
    /// The storage profile the cost model predicted with.
    pub profile: StorageProfile,
}

/// Runs the join `request` asks for: [`plan`], then [`JoinPlan::run`].
pub fn run(request: &JoinRequest, stage: impl FnMut(Stage)) -> Result<JoinRun> {
    plan(request)?.run(stage)
}

/// A join whose settings are checked and whose inputs are open, with the cost model's
/// estimate and the method it will run (the model's pick where none was asked for);
/// nothing is built, read or written yet.
pub struct JoinPlan<'r> {
    request: &'r JoinRequest,
    outer: Table,
    inner: Table,
    saved: Option<SavedIndex<'r>>,
    window: f64,
    method: JoinMethod,
    estimate: Estimate,
    profile: StorageProfile,
    memory: MemoryBudget,
}

/// Checks `request` (its settings against the method, the output not an input), opens
/// and checks its tables and its saved INLJ index, and estimates the join, before any
/// output exists.
pub fn plan(request: &JoinRequest) -> Result<JoinPlan<'_>> {
    request.check(request.method)?;
    if let Some(out) = &request.output {
        for input in [&request.outer, &request.inner]
            .into_iter()
            .map(PathBuf::as_path)
            .chain(request.index_files())
        {
            refuse_same_file(input, out)?;
        }
    }
    let outer = Table::open(&request.outer)?;
    let inner = Table::open(&request.inner)?;
    outer.require_pairs("a join")?;
    inner.require_pairs("a join")?;
    if request.cold {
        for path in [outer.path(), inner.path()]
            .into_iter()
            .chain(request.index_files())
        {
            cache::drop_file_pages(path)?;
        }
    }
    let saved = match (&request.index, request.method) {
        (Some(path), Some(JoinMethod::Inlj(_))) => Some(SavedIndex::load(path)?),
        _ => None,
    };
    let window = saved.as_ref().map_or(256.0, |s| s.index.max_width() as f64);
    let profile = request.profile.clone().unwrap_or_else(cost::assumed_ssd);
    let shape = JoinShape {
        outer: outer.len(),
        inner: inner.len(),
        window,
        read_bytes: request.read_size,
        tuple_bytes: TUPLE_SIZE as u64,
        threads: request.threads as u64,
        io_depth: request.io_depth as u64,
    };
    let estimate = cost::estimate(&shape, &profile, &cost::CpuCosts::default());
    let method = match request.method {
        Some(method) => method,
        None => {
            let both_sorted = outer.header().sorted && inner.header().sorted;
            let pick = cost::fastest(both_sorted, |c| estimate.seconds(c)).into();
            request.check(Some(pick))?;
            pick
        }
    };
    let memory = request
        .memory
        .clone()
        .unwrap_or_else(|| method.default_budget());
    Ok(JoinPlan {
        request,
        outer,
        inner,
        saved,
        window,
        method,
        estimate,
        profile,
        memory,
    })
}

impl JoinPlan<'_> {
    /// The method it will run.
    pub fn method(&self) -> JoinMethod {
        self.method
    }

    /// The cost model's estimate of the methods it weighs.
    pub fn estimate(&self) -> &Estimate {
        &self.estimate
    }

    /// The storage profile the cost model predicts with.
    pub fn profile(&self) -> &StorageProfile {
        &self.profile
    }

    /// Runs the join; `stage` hears what it is doing. The method's own checks (sortedness,
    /// a saved index against its table) come first, and a failed join leaves no output.
    pub fn run(self, mut stage: impl FnMut(Stage)) -> Result<JoinRun> {
        let mut prepared = prepare(&self, &mut stage)?;
        let request = self.request;
        if request.cold {
            for path in prepared.reads(&self) {
                cache::drop_file_pages(path)?;
            }
        }
        stage(Stage::Joining);
        let joined = join(&self, &mut prepared.sides)?;
        let mut record = record(&self, &joined);
        record.build_s = prepared.build_s;
        if let Some(choice) = self.method.modelled_as() {
            if self.method != JoinMethod::Grace {
                record.index_window = self.window;
            }
            record.model_s = self.estimate.seconds(choice);
            record.model_device = self.profile.device.clone();
        }
        if let Some(figures) = joined.unclustered {
            record.unclustered = Some(UnclusteredFigures {
                memory_limit: self.memory.limit(),
                peak_reserved: self.memory.peak(),
                ..figures
            });
        }
        drop(prepared);
        Ok(JoinRun {
            method: self.method,
            record,
            estimate: self.estimate,
            memory: self.memory,
            profile: self.profile,
        })
    }
}

/// An index file given with an INLJ, loaded once (the cost model takes its window).
struct SavedIndex<'a> {
    path: &'a Path,
    index: AnyIndex,
    fingerprint: file::KeysFingerprint,
}

impl<'a> SavedIndex<'a> {
    fn load(path: &'a Path) -> Result<Self> {
        let (index, fingerprint) = file::load(path)?;
        Ok(SavedIndex {
            path,
            index,
            fingerprint,
        })
    }
}

/// What a method joins through, made ready.
enum Sides {
    /// Merge and grace join the two tables as they are.
    Tables,
    /// INLJ: an index of the inner table.
    Indexed(AnyIndex),
    /// Hash: the outer table in memory.
    Hashed(HashTable),
    /// `inlj:alex`: the inner table's ALEX file.
    Alex(AlexFile),
    /// `partition`: both tables' partition files.
    Partitions(Box<[PartitionFile; 2]>),
    /// `btree-inserts`: both tables' B+trees, with their files.
    BTrees(Box<[(InsertedBTree, PathBuf); 2]>),
    /// `sort-merge`: sorted copies of both tables.
    Sorted(Box<[Table; 2]>),
}

/// A method's sides, the seconds spent making them ready (none where nothing was built),
/// the memory they hold reserved, and the scratch files built for the join: the
/// reservations end and the files are removed when it is dropped.
struct Prepared {
    sides: Sides,
    build_s: Option<f64>,
    _held: Vec<Reservation>,
    _scratch: Vec<Scratch>,
}

/// A scratch file built for one join.
type Scratch = (tempfile::TempPath, PendingGuard);

impl Prepared {
    /// The files the join reads.
    fn reads<'a>(&'a self, plan: &'a JoinPlan<'_>) -> Vec<&'a Path> {
        let tables = [plan.outer.path(), plan.inner.path()];
        match &self.sides {
            Sides::Tables | Sides::Indexed(_) | Sides::Hashed(_) => tables.to_vec(),
            Sides::Alex(alex) => vec![plan.outer.path(), alex.path()],
            Sides::Partitions(files) => {
                let [outer, inner] = files.as_ref();
                vec![tables[0], tables[1], outer.path(), inner.path()]
            }
            Sides::BTrees(trees) => {
                let [(_, outer), (_, inner)] = trees.as_ref();
                vec![tables[0], tables[1], outer, inner]
            }
            Sides::Sorted(tables) => tables.iter().map(Table::path).collect(),
        }
    }
}

/// The directory a join's scratch goes in: the output's, or the inner table's when it
/// only counts (the places a command writes to or reads from).
fn scratch_dir(request: &JoinRequest) -> &Path {
    match &request.output {
        Some(out) => parent_dir(out),
        None => parent_dir(&request.inner),
    }
}

/// Makes ready what `plan`'s method joins through (see the module documentation).
fn prepare(plan: &JoinPlan<'_>, stage: &mut impl FnMut(Stage)) -> Result<Prepared> {
    let request = plan.request;
    let (outer, inner) = (&plan.outer, &plan.inner);
    let mut scratch = Vec::new();
    let mut held = Vec::new();
    let (sides, build_s) = match plan.method {
        JoinMethod::Inlj(kind) => {
            inner.require_sorted("an index nested loop join (its inner table)")?;
            if request.monotone {
                outer.require_sorted(
                    "an index nested loop join with monotone windows (its outer table)",
                )?;
            }
            match &plan.saved {
                Some(saved) => {
                    if saved.index.kind() != kind {
                        return Err(Error::IndexMismatch {
                            path: saved.path.to_path_buf(),
                            problem: format!(
                                "the index is {}, but the method asks for inlj:{kind}",
                                saved.index.kind()
                            ),
                        });
                    }
                    // The header's facts are checked here; `lidx index verify --table`
                    // checks every key.
                    file::check_table(saved.path, &saved.fingerprint, inner)?;
                    (Sides::Indexed(saved.index.clone()), None)
                }
                None => {
                    stage(Stage::Preparing(format!(
                        "building {kind} over {} keys",
                        inner.len()
                    )));
                    let keys = inner.read_keys()?;
                    // The build alone, not the reading of the keys.
                    let started = Instant::now();
                    let index = AnyIndex::build(&keys, &AnyParams::default_for(kind))?;
                    (Sides::Indexed(index), Some(seconds_since(started)))
                }
            }
        }
        JoinMethod::InljAlex => {
            inner.require_sorted("an index nested loop join through ALEX (its inner table)")?;
            match &request.index {
                Some(path) => {
                    let alex = AlexFile::open(path)?;
                    file::check_table(path, &alex.fingerprint(), inner)?;
                    (Sides::Alex(alex), None)
                }
                None => {
                    stage(Stage::Preparing(format!(
                        "building ALEX over {} tuples",
                        inner.len()
                    )));
                    let (path, pending) = scratch_path(scratch_dir(request))?;
                    let keys = inner.read_keys()?;
                    let report =
                        alex_file::build(inner, &keys, &path, &AlexParams::default(), |_| {})?;
                    let alex = AlexFile::open(&path)?;
                    scratch.push((path, pending));
                    // Planning and writing the file, not reading the keys or opening it.
                    (Sides::Alex(alex), Some(report.plan_s + report.write_s))
                }
            }
        }
        JoinMethod::Merge => {
            outer.require_sorted("a sort-merge join")?;
            inner.require_sorted("a sort-merge join")?;
            (Sides::Tables, None)
        }
        JoinMethod::Grace => (Sides::Tables, None),
        JoinMethod::Hash => {
            stage(Stage::Preparing(format!(
                "hashing the outer table's {} tuples",
                outer.len()
            )));
            let started = Instant::now();
            let table = HashTable::build(outer, request.mode, read_tuples(request), &plan.memory)?;
            (Sides::Hashed(table), Some(seconds_since(started)))
        }
        JoinMethod::Partition | JoinMethod::BTreeInserts => {
            unclustered(plan, &mut scratch, &mut held, stage)?
        }
        JoinMethod::SortMerge => {
            stage(Stage::Preparing("sorting both tables".to_string()));
            let started = Instant::now();
            let options = SortOptions {
                scratch_dir: scratch_dir(request).to_path_buf(),
                budget: plan.memory.clone(),
            };
            for table in [outer, inner] {
                let (path, pending) = scratch_path(scratch_dir(request))?;
                sort_table(table, &path, &options, |_, _| {})?;
                scratch.push((path, pending));
            }
            let build_s = seconds_since(started);
            let sorted = Sides::Sorted(Box::new([
                Table::open(&scratch[0].0)?,
                Table::open(&scratch[1].0)?,
            ]));
            (sorted, Some(build_s))
        }
    };
    Ok(Prepared {
        sides,
        build_s,
        _held: held,
        _scratch: scratch,
    })
}

/// The unclustered indexes of both tables (`partition` or `btree-inserts`): each one the
/// request does not give built into a scratch file (the seconds of those builds returned),
/// then both opened, checked against their tables, and their memory reserved.
fn unclustered(
    plan: &JoinPlan<'_>,
    scratch: &mut Vec<Scratch>,
    held: &mut Vec<Reservation>,
    stage: &mut impl FnMut(Stage),
) -> Result<(Sides, Option<f64>)> {
    let request = plan.request;
    let learned = plan.method == JoinMethod::Partition;
    let entries = request.entries.unwrap_or_default();
    let started = Instant::now();
    let mut index_of = |table: &Table, given: &Option<PathBuf>| -> Result<PathBuf> {
        if let Some(path) = given {
            return Ok(path.clone());
        }
        stage(Stage::Preparing(format!(
            "building a {} index of {}",
            plan.method,
            table.path().display()
        )));
        let (path, pending) = scratch_path(scratch_dir(request))?;
        if learned {
            let params = PartitionParams {
                entries,
                ..PartitionParams::default()
            };
            partition::build(table, &path, &params, &plan.memory, |_| {})?;
        } else {
            btree::build(table, &path, entries, &plan.memory, |_| {})?;
        }
        let kept = path.to_path_buf();
        scratch.push((path, pending));
        Ok(kept)
    };
    let outer_path = index_of(&plan.outer, &request.outer_index)?;
    let inner_path = index_of(&plan.inner, &request.index)?;
    let build_s =
        (request.outer_index.is_none() || request.index.is_none()).then(|| seconds_since(started));
    let memory = &plan.memory;
    let sides = if learned {
        let outer = PartitionFile::open(&outer_path)?;
        let inner = PartitionFile::open(&inner_path)?;
        check_count(&outer_path, outer.index().len(), &plan.outer)?;
        check_count(&inner_path, inner.index().len(), &plan.inner)?;
        check_entries(&outer_path, outer.index().entries(), request)?;
        check_entries(&inner_path, inner.index().entries(), request)?;
        held.push(memory.reserve(
            outer.index().size_in_bytes() + inner.index().size_in_bytes(),
            "the two partition indexes (models and partition maps)",
        )?);
        let largest = outer.index().skew().largest + inner.index().skew().largest;
        held.push(memory.reserve(32 * largest, "the two partitions held at once")?);
        Sides::Partitions(Box::new([outer, inner]))
    } else {
        let mut outer = InsertedBTree::open(&outer_path, MIN_FRAMES)?;
        let mut inner = InsertedBTree::open(&inner_path, MIN_FRAMES)?;
        check_count(&outer_path, outer.len(), &plan.outer)?;
        check_count(&inner_path, inner.len(), &plan.inner)?;
        check_entries(&outer_path, outer.entries(), request)?;
        check_entries(&inner_path, inner.entries(), request)?;
        held.push(memory.reserve(
            outer.memory_bytes() + inner.memory_bytes(),
            "the two B+trees' levels above their leaves",
        )?);
        // The rest of the budget for the two pools, half each.
        let frame = btree::frame_bytes(outer.entries()).max(btree::frame_bytes(inner.entries()));
        let frames = (memory.available() / 2 / frame).max(MIN_FRAMES);
        held.push(memory.reserve(2 * frames * frame, "the two B+trees' pools")?);
        outer.resize_pool(frames);
        inner.resize_pool(frames);
        Sides::BTrees(Box::new([(outer, outer_path), (inner, inner_path)]))
    };
    Ok((sides, build_s))
}

/// Seconds since `started`.
fn seconds_since(started: Instant) -> f64 {
    started.elapsed().as_secs_f64()
}

/// Tuples per sequential read of a scanned table.
fn read_tuples(request: &JoinRequest) -> u64 {
    (request.read_size / TUPLE_SIZE as u64).max(1)
}

/// Fails unless the index at `path`, which holds `entries`, holds what the request asks
/// for (if it asks).
fn check_entries(path: &Path, entries: Entries, request: &JoinRequest) -> Result<()> {
    match request.entries {
        Some(asked) if asked != entries => Err(Error::IndexMismatch {
            path: path.to_path_buf(),
            problem: format!(
                "the index holds {entries}, and the join asks for {asked}; rebuild it with --entries {asked}"
            ),
        }),
        _ => Ok(()),
    }
}

/// Fails unless an index at `path` holds as many tuples as `table`.
fn check_count(path: &Path, n: u64, table: &Table) -> Result<()> {
    if n == table.len() {
        return Ok(());
    }
    Err(Error::IndexMismatch {
        path: path.to_path_buf(),
        problem: format!(
            "the index holds {n} tuples, {} holds {}; rebuild it",
            table.path().display(),
            table.len()
        ),
    })
}

/// What the join itself did.
struct Joined {
    stats: JoinStats,
    join_s: f64,
    /// Seconds copying spilled parts into the output table (the methods on threads and
    /// grace); `None` where the join wrote the output as it emitted it.
    write_s: Option<f64>,
    /// Seconds of the output table's fsync and rename.
    fsync_s: Option<f64>,
    /// The unclustered joins' extras (partitions read, B+tree leaf I/O).
    unclustered: Option<UnclusteredFigures>,
}

/// Joins `plan`'s tables through `sides`, writing or counting the output.
fn join(plan: &JoinPlan<'_>, sides: &mut Sides) -> Result<Joined> {
    let request = plan.request;
    let (outer, inner) = (&plan.outer, &plan.inner);
    let parallel = |method: Method<'_>| on_threads(plan, &method);
    match (plan.method, sides) {
        (JoinMethod::Inlj(_), Sides::Indexed(index)) => parallel(Method::Inlj {
            index,
            options: InljOptions {
                mode: request.mode,
                outer_read_tuples: read_tuples(request),
                cursor: request.cursor,
                monotone: request.monotone,
                io_depth: request.io_depth,
                io_backend: request.io_backend,
                ..InljOptions::default()
            },
        }),
        (JoinMethod::Merge, Sides::Tables) => parallel(Method::Merge {
            mode: request.mode,
            read_tuples: read_tuples(request),
            budget: &plan.memory,
        }),
        (JoinMethod::Hash, Sides::Hashed(table)) => parallel(Method::Hash {
            table,
            mode: request.mode,
            read_tuples: read_tuples(request),
        }),
        (JoinMethod::Grace, Sides::Tables) => grace(plan),
        (JoinMethod::InljAlex, Sides::Alex(alex)) => in_place(request, |sink| {
            super::alex::inlj(outer, alex, request.mode, read_tuples(request), sink)
        }),
        (JoinMethod::Partition, Sides::Partitions(files)) => {
            let [outer_file, inner_file] = files.as_ref();
            let mut partitions = (0, 0);
            let mut joined = in_place(request, |sink| {
                let stats =
                    partition_join((outer_file, inner_file), (outer, inner), request.mode, sink)?;
                partitions = stats.partitions_read;
                Ok(stats.join)
            })?;
            joined.unclustered = Some(UnclusteredFigures {
                partitions_read: partitions,
                entries: Some((outer_file.index().entries(), inner_file.index().entries())),
                ..UnclusteredFigures::default()
            });
            Ok(joined)
        }
        (JoinMethod::BTreeInserts, Sides::BTrees(trees)) => {
            let [(outer_tree, _), (inner_tree, _)] = trees.as_mut();
            let mut joined = in_place(request, |sink| {
                btree_join(outer_tree, outer, inner_tree, inner, request.mode, sink)
            })?;
            joined.unclustered = Some(UnclusteredFigures {
                tree_io: (outer_tree.stats(), inner_tree.stats()),
                entries: Some((outer_tree.entries(), inner_tree.entries())),
                ..UnclusteredFigures::default()
            });
            Ok(joined)
        }
        (JoinMethod::SortMerge, Sides::Sorted(tables)) => {
            let [outer, inner] = tables.as_ref();
            // Scans of both tables read this many tuples at a time: an eighth of the
            // budget between their buffers, the rest for runs of equal keys.
            let read_tuples = (plan.memory.available() / 8 / 16 / 4).clamp(256, 1 << 16);
            let mut joined = in_place(request, |sink| {
                merge_join(outer, inner, request.mode, read_tuples, &plan.memory, sink)
            })?;
            joined.unclustered = Some(UnclusteredFigures::default());
            Ok(joined)
        }
        (method, _) => Err(Error::Internal {
            problem: format!("{method} was prepared for another method"),
        }),
    }
}

/// Runs `method` on the request's threads, counting the output or spilling each thread's
/// part beside the output table and copying the parts into it in thread order.
fn on_threads(plan: &JoinPlan<'_>, method: &Method<'_>) -> Result<Joined> {
    let request = plan.request;
    let (outer, inner) = (&plan.outer, &plan.inner);
    let started = Instant::now();
    let (parts, stats) = match &request.output {
        None => {
            let (_, stats) = parallel_join::<CountSink>(outer, inner, method, request.threads)?;
            (None, stats)
        }
        Some(out) => {
            // Each thread spills its output next to the output file; nothing waits in memory.
            let dir = parent_dir(out);
            let (parts, stats) = parallel_join_with(outer, inner, method, request.threads, || {
                SpillSink::new(dir)
            })?;
            (Some(parts), stats)
        }
    };
    let join_s = started.elapsed().as_secs_f64();
    copied(request, parts, stats, join_s)
}

/// The grace hash join, on one thread, within the budget; its partitions and its spilled
/// output go in the scratch directory.
fn grace(plan: &JoinPlan<'_>) -> Result<Joined> {
    let request = plan.request;
    let temp_dir = scratch_dir(request);
    let started = Instant::now();
    let mut count = CountSink::default();
    let mut spill = match &request.output {
        Some(_) => Some(SpillSink::new(temp_dir)?),
        None => None,
    };
    let mut sink: &mut dyn JoinSink = match spill.as_mut() {
        Some(spill) => spill,
        None => &mut count,
    };
    let stats = grace_hash_join(
        &plan.outer,
        &plan.inner,
        request.mode,
        read_tuples(request),
        &plan.memory,
        temp_dir,
        &mut sink,
    )?;
    let join_s = started.elapsed().as_secs_f64();
    copied(request, spill.map(|spill| vec![spill]), stats, join_s)
}

/// A join whose output was spilled in `parts`: copies them, in order, into the output
/// table, and times the copy and the fsync and rename.
fn copied(
    request: &JoinRequest,
    parts: Option<Vec<SpillSink>>,
    stats: JoinStats,
    join_s: f64,
) -> Result<Joined> {
    let (mut write_s, mut fsync_s) = (None, None);
    if let (Some(parts), Some(out)) = (parts, &request.output) {
        let started = Instant::now();
        let mut writer = TableWriter::create_output(out)?;
        for part in parts {
            part.drain_into(&mut writer)?;
        }
        write_s = Some(started.elapsed().as_secs_f64());
        let started = Instant::now();
        writer.finish()?;
        fsync_s = Some(started.elapsed().as_secs_f64());
    }
    Ok(Joined {
        stats,
        join_s,
        write_s,
        fsync_s,
        unclustered: None,
    })
}

/// Runs a one-thread join that writes its output as it emits it (the join's time
/// includes the writing), then fsyncs and renames the output into place.
fn in_place(
    request: &JoinRequest,
    join: impl FnOnce(&mut InPlace) -> Result<JoinStats>,
) -> Result<Joined> {
    let mut sink = match &request.output {
        Some(out) => InPlace::Table(TableWriter::create_output(out)?),
        None => InPlace::Count(CountSink::default()),
    };
    let started = Instant::now();
    let stats = join(&mut sink)?;
    let join_s = started.elapsed().as_secs_f64();
    let fsync_s = match sink {
        InPlace::Table(writer) => {
            let started = Instant::now();
            writer.finish()?;
            Some(started.elapsed().as_secs_f64())
        }
        InPlace::Count(_) => None,
    };
    Ok(Joined {
        stats,
        join_s,
        write_s: None,
        fsync_s,
        unclustered: None,
    })
}

/// The figures of a finished join (the build time, the cost model's fields and the
/// unclustered section left for the caller).
fn record(plan: &JoinPlan<'_>, joined: &Joined) -> JoinRecord {
    let (request, method) = (plan.request, plan.method);
    let inlj = matches!(method, JoinMethod::Inlj(_));
    let mut name = method.to_string();
    if inlj && !request.cursor {
        name.push_str(" no-cursor");
    }
    if inlj && !request.monotone {
        name.push_str(" no-monotone");
    }
    let deep = inlj && request.io_depth > 1;
    let measured = JoinRecord::measured(
        name,
        request.mode == ReadMode::Direct,
        request.read_size,
        (plan.outer.len(), plan.inner.len()),
        &joined.stats,
        joined.join_s,
    );
    JoinRecord {
        threads: request.threads,
        io_depth: if inlj { request.io_depth } else { 1 },
        cursor: inlj && request.cursor,
        monotone: inlj && request.monotone,
        max_window_blocks: if inlj {
            InljOptions::default().max_window_blocks
        } else {
            0
        },
        io_backend: if deep {
            request.io_backend.resolve().name().to_string()
        } else {
            "sync".to_string()
        },
        write_s: joined.write_s,
        fsync_s: joined.fsync_s,
        ..measured
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexKind;

    /// Each setting a method does not take is refused, naming the setting and the method.
    #[test]
    fn settings_a_method_does_not_take_are_refused() {
        let base = JoinRequest::new(Path::new("r.tbl"), Path::new("s.tbl"), None);
        type Case = (JoinMethod, fn(&mut JoinRequest), &'static str);
        let cases: [Case; 8] = [
            (JoinMethod::InljAlex, |r| r.threads = 2, "threads"),
            (JoinMethod::Grace, |r| r.threads = 2, "threads"),
            (JoinMethod::Merge, |r| r.io_depth = 4, "I/O depth"),
            (JoinMethod::Hash, |r| r.cursor = false, "cursor"),
            (JoinMethod::Partition, |r| r.monotone = false, "monotone"),
            (
                JoinMethod::SortMerge,
                |r| r.profile = Some(cost::assumed_ssd()),
                "storage profile",
            ),
            (
                JoinMethod::InljAlex,
                |r| r.memory = Some(MemoryBudget::new(1 << 20)),
                "memory budget",
            ),
            (
                JoinMethod::Merge,
                |r| r.outer_index = Some("r.idx".into()),
                "outer index",
            ),
        ];
        for (method, set, setting) in cases {
            let mut request = JoinRequest {
                method: Some(method),
                ..base.clone()
            };
            assert!(request.check(Some(method)).is_ok(), "{method}");
            set(&mut request);
            let err = request.check(Some(method)).err().map(|e| e.to_string());
            let err = err.unwrap_or_default();
            assert!(
                err.contains(setting) && err.contains(&method.to_string()),
                "{method}: {err}"
            );
        }
        // A saved index goes with a method that joins through one, never with auto.
        let with_index = JoinRequest {
            index: Some("s.idx".into()),
            ..base.clone()
        };
        assert!(with_index.check(None).is_err());
        assert!(with_index.check(Some(JoinMethod::Hash)).is_err());
        assert!(with_index.check(Some(JoinMethod::InljAlex)).is_ok());
        assert!(
            with_index
                .check(Some(JoinMethod::Inlj(IndexKind::Pgm)))
                .is_ok()
        );
    }
}
