//! One whole join of two table files, as `lidx join` runs it (paper 1, sections 3, 4.3 and
//! 5), in two steps, [`plan`] and [`JoinPlan::run`]: the inputs opened and checked before
//! any output exists, the cost model's estimate
//! (and, where no method is asked for, its pick), the index loaded and checked against the
//! inner table or built, the join on its threads, the output copied into a table in
//! thread order, and a [`JoinRecord`] of every figure.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use super::cost::{self, Choice, Estimate, JoinShape};
use super::{
    CountSink, HashTable, InljOptions, JoinSink, JoinStats, Method, SpillSink, grace_hash_join,
    parallel_join, parallel_join_with,
};
use crate::files::{cache, parent_dir, refuse_same_file};
use crate::index::{AnyIndex, AnyParams, IndexKind, file};
use crate::memory::MemoryBudget;
use crate::storage::profile::StorageProfile;
use crate::storage::{IoBackend, ReadMode, TUPLE_SIZE, Table, TableWriter};
use crate::{Error, Result};

use super::record::JoinRecord;

/// A join method by name, as `lidx join --method` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JoinMethod {
    /// Index nested loop join through an index of this kind on the inner table.
    Inlj(IndexKind),
    /// Sort-merge join (both tables sorted).
    Merge,
    /// Hash join: the outer table in memory, the inner streamed past it.
    Hash,
    /// Grace hash join: both tables partitioned to disk when the outer's hash table and
    /// read buffers would exceed the memory budget (one thread).
    Grace,
}

impl fmt::Display for JoinMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinMethod::Inlj(kind) => write!(f, "inlj:{kind}"),
            JoinMethod::Merge => f.write_str("merge"),
            JoinMethod::Hash => f.write_str("hash"),
            JoinMethod::Grace => f.write_str("grace"),
        }
    }
}

impl FromStr for JoinMethod {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "merge" => Ok(JoinMethod::Merge),
            "hash" => Ok(JoinMethod::Hash),
            "grace" => Ok(JoinMethod::Grace),
            _ => match s.strip_prefix("inlj:") {
                Some(kind) => kind.parse().map(JoinMethod::Inlj),
                None => Err(Error::param(
                    "join method",
                    format!(
                        "'{s}' is not one of inlj:KIND ({}), merge, hash, grace",
                        IndexKind::ALL.map(IndexKind::name).join(", ")
                    ),
                )),
            },
        }
    }
}

impl From<Choice> for JoinMethod {
    /// The method the cost model's choice runs as (its INLJ through sampled PGM).
    fn from(choice: Choice) -> JoinMethod {
        match choice {
            Choice::Inlj => JoinMethod::Inlj(IndexKind::SampledPgm),
            Choice::Merge => JoinMethod::Merge,
            Choice::Hash => JoinMethod::Hash,
        }
    }
}

/// Everything one join is asked to do.
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
    /// A saved index of the inner table (INLJ only); without it one is built with the
    /// kind's defaults and its build time reported apart.
    pub index: Option<PathBuf>,
    /// The storage profile the cost model predicts with.
    pub profile: StorageProfile,
    /// Threads, each joining a contiguous share of the outer table (the inner one's for
    /// hash).
    pub threads: usize,
    /// How the inputs are read.
    pub mode: ReadMode,
    /// Bytes per sequential read of a scanned table.
    pub read_size: u64,
    /// Paper 1's first optimization (INLJ).
    pub cursor: bool,
    /// Paper 1's monotone-window optimization (INLJ).
    pub monotone: bool,
    /// Window reads each INLJ thread keeps in flight.
    pub io_depth: usize,
    /// What keeps them in flight.
    pub io_backend: IoBackend,
    /// Drop the inputs' cached pages first.
    pub cold: bool,
    /// The output table of (key, outer value, inner value) tuples; `None` counts them.
    pub output: Option<PathBuf>,
    /// The memory the join may hold: hash tables and read buffers of the hash, merge and
    /// grace joins (the grace join partitions to stay within it).
    pub memory: MemoryBudget,
}

/// What a join is doing, for progress displays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Building an index of this kind over the inner table's keys.
    BuildingIndex {
        /// The kind.
        kind: IndexKind,
        /// Keys indexed.
        keys: u64,
    },
    /// Joining.
    Joining,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::BuildingIndex { kind, keys } => write!(f, "building {kind} over {keys} keys"),
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
}

/// The inputs, opened and checked.
struct Inputs {
    outer: Table,
    inner: Table,
    read_tuples: u64,
}

/// Runs the join `request` asks for: [`plan`], then [`JoinPlan::run`].
pub fn run(request: &JoinRequest, stage: impl FnMut(Stage)) -> Result<JoinRun> {
    plan(request)?.run(stage)
}

/// A join whose inputs are open and checked, with the cost model's estimate and the
/// method it will run (the model's pick where none was asked for); nothing is read or
/// written yet.
pub struct JoinPlan<'r> {
    request: &'r JoinRequest,
    inputs: Inputs,
    saved: Option<SavedIndex<'r>>,
    window: f64,
    method: JoinMethod,
    estimate: Estimate,
}

/// Opens and checks what `request` names (the files, the output not an input, the index
/// file) and estimates the join, before any output exists.
pub fn plan(request: &JoinRequest) -> Result<JoinPlan<'_>> {
    if request.threads == 0 {
        return Err(Error::param("threads", "0 is not a number of threads"));
    }
    if request.io_depth == 0 {
        return Err(Error::param(
            "I/O depth",
            "0 reads in flight cannot make progress",
        ));
    }
    if request.index.is_some() && !matches!(request.method, Some(JoinMethod::Inlj(_))) {
        return Err(Error::param(
            "index",
            "a saved index applies to index nested loop joins (inlj methods) only",
        ));
    }
    if let Some(out) = &request.output {
        refuse_same_file(&request.outer, out)?;
        refuse_same_file(&request.inner, out)?;
    }
    let outer = Table::open(&request.outer)?;
    let inner = Table::open(&request.inner)?;
    outer.require_pairs("a join")?;
    inner.require_pairs("a join")?;
    if request.cold {
        cache::drop_file_pages(&request.outer)?;
        cache::drop_file_pages(&request.inner)?;
    }
    let saved = match &request.index {
        Some(path) => Some(SavedIndex::load(path)?),
        None => None,
    };
    let window = saved.as_ref().map_or(256.0, |s| s.index.max_width() as f64);
    let shape = JoinShape {
        outer: outer.len(),
        inner: inner.len(),
        window,
        read_bytes: request.read_size,
        tuple_bytes: TUPLE_SIZE as u64,
        threads: request.threads as u64,
        io_depth: request.io_depth as u64,
    };
    let estimate = cost::estimate(&shape, &request.profile, &cost::CpuCosts::default());
    let method = request.method.unwrap_or_else(|| {
        let both_sorted = outer.header().sorted && inner.header().sorted;
        cost::fastest(both_sorted, |c| estimate.seconds(c)).into()
    });
    Ok(JoinPlan {
        request,
        inputs: Inputs {
            read_tuples: (request.read_size / TUPLE_SIZE as u64).max(1),
            outer,
            inner,
        },
        saved,
        window,
        method,
        estimate,
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

    /// Runs the join; `stage` hears what it is doing. The method's own checks (sortedness,
    /// the index against the inner table) come first, and a failed join leaves no output.
    pub fn run(self, mut stage: impl FnMut(Stage)) -> Result<JoinRun> {
        let JoinPlan {
            request,
            inputs,
            saved,
            window,
            method,
            estimate,
        } = self;
        let (mut record, predicted) = match method {
            JoinMethod::Inlj(kind) => (
                run_inlj(request, &inputs, kind, saved, &mut stage)?,
                Choice::Inlj,
            ),
            JoinMethod::Merge => (run_merge(request, &inputs, &mut stage)?, Choice::Merge),
            JoinMethod::Hash => (run_hash(request, &inputs, &mut stage)?, Choice::Hash),
            // The model predicts the in-memory hash join for it.
            JoinMethod::Grace => (run_grace(request, &inputs, &mut stage)?, Choice::Hash),
        };
        if method != JoinMethod::Grace {
            record.index_window = window;
        }
        record.model_s = estimate.seconds(predicted);
        record.model_device = request.profile.device.clone();
        Ok(JoinRun {
            method,
            record,
            estimate,
        })
    }
}

/// An index file given with the join, loaded once.
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

/// The index nested loop join through a `kind` index of the inner table: the saved one,
/// checked against the table (its kind, its keys' count and range), or one built now with
/// the kind's defaults (its build time recorded apart).
fn run_inlj(
    request: &JoinRequest,
    inputs: &Inputs,
    kind: IndexKind,
    saved: Option<SavedIndex<'_>>,
    stage: &mut impl FnMut(Stage),
) -> Result<JoinRecord> {
    let (outer, inner) = (&inputs.outer, &inputs.inner);
    inner.require_sorted("an index nested loop join (its inner table)")?;
    if request.monotone {
        outer
            .require_sorted("an index nested loop join with monotone windows (its outer table)")?;
    }
    let (index, build_s) = match saved {
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
            // The header's facts are checked here; `lidx index info --table` checks the
            // keys' CRC too.
            file::check_table(saved.path, &saved.fingerprint, inner)?;
            (saved.index, None)
        }
        None => {
            stage(Stage::BuildingIndex {
                kind,
                keys: inner.len(),
            });
            let keys = inner.read_keys()?;
            let t = Instant::now();
            let index = AnyIndex::build(&keys, &AnyParams::default_for(kind))?;
            (index, Some(t.elapsed().as_secs_f64()))
        }
    };
    let options = InljOptions {
        mode: request.mode,
        outer_read_tuples: inputs.read_tuples,
        cursor: request.cursor,
        monotone: request.monotone,
        io_depth: request.io_depth,
        io_backend: request.io_backend,
        ..InljOptions::default()
    };
    let plan = Method::Inlj {
        index: &index,
        options,
    };
    let record = run_parallel(request, JoinMethod::Inlj(kind), inputs, &plan, stage)?;
    Ok(JoinRecord { build_s, ..record })
}

/// The sort-merge join (both tables sorted), its buffers within the request's budget.
fn run_merge(
    request: &JoinRequest,
    inputs: &Inputs,
    stage: &mut impl FnMut(Stage),
) -> Result<JoinRecord> {
    inputs.outer.require_sorted("a sort-merge join")?;
    inputs.inner.require_sorted("a sort-merge join")?;
    let plan = Method::Merge {
        mode: request.mode,
        read_tuples: inputs.read_tuples,
        budget: &request.memory,
    };
    run_parallel(request, JoinMethod::Merge, inputs, &plan, stage)
}

/// The in-memory hash join: the outer table hashed within the request's budget (its build
/// time recorded apart), the inner one probed on the request's threads.
fn run_hash(
    request: &JoinRequest,
    inputs: &Inputs,
    stage: &mut impl FnMut(Stage),
) -> Result<JoinRecord> {
    let t = Instant::now();
    let hashed = HashTable::build(
        &inputs.outer,
        request.mode,
        inputs.read_tuples,
        &request.memory,
    )?;
    let build_s = Some(t.elapsed().as_secs_f64());
    let plan = Method::Hash {
        table: &hashed,
        mode: request.mode,
        read_tuples: inputs.read_tuples,
    };
    let record = run_parallel(request, JoinMethod::Hash, inputs, &plan, stage)?;
    Ok(JoinRecord { build_s, ..record })
}

/// Runs `plan` on the request's threads, counting the output or spilling each thread's
/// part beside the output table and copying the parts into it in thread order.
fn run_parallel(
    request: &JoinRequest,
    method: JoinMethod,
    inputs: &Inputs,
    plan: &Method<'_>,
    stage: &mut impl FnMut(Stage),
) -> Result<JoinRecord> {
    let (outer, inner) = (&inputs.outer, &inputs.inner);
    stage(Stage::Joining);
    let t = Instant::now();
    let (parts, stats) = match &request.output {
        None => {
            let (_, stats) = parallel_join::<CountSink>(outer, inner, plan, request.threads)?;
            (None, stats)
        }
        Some(out) => {
            // Each thread spills its output next to the output file; nothing waits in memory.
            let dir = parent_dir(out);
            let (parts, stats) =
                parallel_join_with(outer, inner, plan, request.threads, || SpillSink::new(dir))?;
            (Some(parts), stats)
        }
    };
    let join_s = t.elapsed().as_secs_f64();
    let write = match (parts, &request.output) {
        (Some(parts), Some(out)) => Some(write_parts(out, parts)?),
        _ => None,
    };
    Ok(record(request, method, inputs, &stats, join_s, write))
}

/// The grace hash join, on one thread, within the request's memory budget; its partitions
/// and its spilled output go beside the output table (the place a command writes to), or,
/// when it only counts, beside the inner table.
fn run_grace(
    request: &JoinRequest,
    inputs: &Inputs,
    stage: &mut impl FnMut(Stage),
) -> Result<JoinRecord> {
    let temp_dir = match &request.output {
        Some(out) => parent_dir(out),
        None => parent_dir(inputs.inner.path()),
    };
    stage(Stage::Joining);
    let t = Instant::now();
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
        &inputs.outer,
        &inputs.inner,
        request.mode,
        inputs.read_tuples,
        &request.memory,
        temp_dir,
        &mut sink,
    )?;
    let join_s = t.elapsed().as_secs_f64();
    let write = match (&request.output, spill) {
        (Some(out), Some(spill)) => Some(write_parts(out, vec![spill])?),
        _ => None,
    };
    Ok(record(
        request,
        JoinMethod::Grace,
        inputs,
        &stats,
        join_s,
        write,
    ))
}

/// Copies the spilled parts, in order, into a join output table at `out`; returns the
/// seconds spent writing and the seconds of the fsync and rename.
fn write_parts(out: &Path, parts: Vec<SpillSink>) -> Result<(f64, f64)> {
    let t = Instant::now();
    let mut writer = TableWriter::create_output(out)?;
    for part in parts {
        part.drain_into(&mut writer)?;
    }
    let written = t.elapsed().as_secs_f64();
    let t = Instant::now();
    writer.finish()?;
    Ok((written, t.elapsed().as_secs_f64()))
}

/// The figures of a finished join (the model's fields, the build time and the window left
/// for the caller).
fn record(
    request: &JoinRequest,
    method: JoinMethod,
    inputs: &Inputs,
    stats: &JoinStats,
    join_s: f64,
    write: Option<(f64, f64)>,
) -> JoinRecord {
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
        (inputs.outer.len(), inputs.inner.len()),
        stats,
        join_s,
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
        write_s: write.map(|w| w.0),
        fsync_s: write.map(|w| w.1),
        ..measured
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_parse_and_print_back() {
        assert_eq!("merge".parse::<JoinMethod>().ok(), Some(JoinMethod::Merge));
        assert_eq!(
            "inlj:sampled-pgm".parse::<JoinMethod>().ok(),
            Some(JoinMethod::Inlj(IndexKind::SampledPgm))
        );
        assert!("inlj:alex".parse::<JoinMethod>().is_err());
        assert!("nested".parse::<JoinMethod>().is_err());
        for m in ["inlj:rs", "merge", "hash", "grace"] {
            assert_eq!(
                m.parse::<JoinMethod>()
                    .map(|m| m.to_string())
                    .ok()
                    .as_deref(),
                Some(m)
            );
        }
    }
}
