//! Index nested loop join through ALEX on disk (paper 1, section 5.2: Fig. 5's ALEX row,
//! "the data nodes are stored as a contiguous file on disk, while the inner nodes are stored
//! in main memory"). The outer table is scanned with large sequential reads; each outer key
//! is looked up in the inner side's [`AlexFile`], which holds the inner table's tuples in
//! its data nodes, so the inner table itself is not read. Every page read is counted as the
//! inner side's I/O, and the reader keeps the last pages it read, as the other INLJs keep
//! their last window's blocks.
//!
//! It emits, in outer order, the multiset every join of lidx emits: a `(key, outer value,
//! inner value)` triple per pair of tuples with equal keys, the inner matches of a key in
//! the inner table's order.

use std::path::Path;
use std::time::Instant;

use super::AlexParams;
use super::file::{self, AlexFile, AlexReader};
use crate::Result;
use crate::files::cache::drop_file_pages;
use crate::files::{refuse_same_file, scratch_path};
use crate::index::file::check_table;
use crate::join::scan::Scan;
use crate::join::{CountSink, JoinRecord, JoinSink, JoinStats};
use crate::memory::MemoryBudget;
use crate::storage::{ReadMode, TUPLE_SIZE, Table, TableWriter};

/// Joins `outer` (any order) with the table whose ALEX file is `inner`, reading both with
/// `mode`, the outer `outer_read_tuples` tuples at a time; emits into `sink`.
pub fn inlj(
    outer: &Table,
    inner: &AlexFile,
    mode: ReadMode,
    outer_read_tuples: u64,
    sink: &mut impl JoinSink,
) -> Result<JoinStats> {
    // The scan's buffers are fixed and small, as the other INLJs' are.
    let unlimited = MemoryBudget::unlimited();
    let mut scan = Scan::new(outer, mode, outer_read_tuples, 0..outer.len(), &unlimited)?;
    let mut reader = AlexReader::new(inner, mode)?;
    let mut matches = Vec::new();
    let mut output = 0u64;
    while let Some(t) = scan.peek()? {
        scan.advance();
        matches.clear();
        reader.matches(t.key, |v| matches.push(v))?;
        for &v in &matches {
            sink.emit(t.key, t.value, v)?;
        }
        output += matches.len() as u64;
    }
    Ok(JoinStats {
        outer_io: scan.stats(),
        inner_io: reader.stats(),
        lookups: reader.lookups(),
        output,
        spilled_bytes: 0,
    })
}

/// One whole join through ALEX on disk, as `lidx join --method inlj:alex` runs it.
#[derive(Clone, Copy, Debug)]
pub struct AlexJoin<'a> {
    /// The outer table (any order).
    pub outer: &'a Path,
    /// The inner table (sorted).
    pub inner: &'a Path,
    /// A saved ALEX file of the inner table; without it one is built in `scratch_dir`,
    /// removed after, and its build time reported apart.
    pub index: Option<&'a Path>,
    /// Where an ALEX file built for the join goes.
    pub scratch_dir: &'a Path,
    /// How both sides are read.
    pub mode: ReadMode,
    /// Bytes per sequential read of the outer table.
    pub read_size: u64,
    /// Drop the inputs' cached pages (the tables' and the ALEX file's) first.
    pub cold: bool,
    /// The output table of (key, outer value, inner value) tuples; `None` counts them.
    pub output: Option<&'a Path>,
}

/// Runs `join`: checks the inputs before any output exists, loads the ALEX file (checked
/// against the inner table's count and key range) or builds one, joins, and returns every
/// figure; the inner side's I/O is the ALEX file's page reads. `stage` hears what it is
/// doing. The output is written as the join emits it, so `join_s` includes writing it and
/// `fsync_s` its fsync and rename.
pub fn run(join: &AlexJoin<'_>, mut stage: impl FnMut(Stage)) -> Result<JoinRecord> {
    if let Some(out) = join.output {
        refuse_same_file(join.outer, out)?;
        refuse_same_file(join.inner, out)?;
        if let Some(index) = join.index {
            refuse_same_file(index, out)?;
        }
    }
    let outer = Table::open(join.outer)?;
    let inner = Table::open(join.inner)?;
    outer.require_pairs("a join")?;
    inner.require_pairs("a join")?;
    inner.require_sorted("an index nested loop join through ALEX (its inner table)")?;
    let (alex, build_s, _scratch) = match join.index {
        Some(path) => {
            let alex = AlexFile::open(path)?;
            check_table(path, &alex.fingerprint(), &inner)?;
            (alex, None, None)
        }
        None => {
            stage(Stage::BuildingAlex { keys: inner.len() });
            let (path, pending) = scratch_path(join.scratch_dir)?;
            let keys = inner.read_keys()?;
            let report = file::build(&inner, &keys, &path, &AlexParams::default(), |_| {})?;
            let alex = AlexFile::open(&path)?;
            (
                alex,
                Some(report.plan_s + report.write_s),
                Some((path, pending)),
            )
        }
    };
    if join.cold {
        drop_file_pages(join.outer)?;
        drop_file_pages(alex.path())?;
    }
    stage(Stage::Joining);
    let read_tuples = (join.read_size / TUPLE_SIZE as u64).max(1);
    let started = Instant::now();
    let (stats, join_s, fsync_s) = match join.output {
        None => {
            let stats = inlj(
                &outer,
                &alex,
                join.mode,
                read_tuples,
                &mut CountSink::default(),
            )?;
            (stats, started.elapsed().as_secs_f64(), None)
        }
        Some(out) => {
            let mut writer = TableWriter::create_output(out)?;
            let stats = inlj(&outer, &alex, join.mode, read_tuples, &mut writer)?;
            let join_s = started.elapsed().as_secs_f64();
            let started = Instant::now();
            writer.finish()?;
            (stats, join_s, Some(started.elapsed().as_secs_f64()))
        }
    };
    let tuples = (outer.len(), inner.len());
    let direct = join.mode == ReadMode::Direct;
    Ok(JoinRecord {
        build_s,
        fsync_s,
        ..JoinRecord::measured(
            METHOD.to_string(),
            direct,
            join.read_size,
            tuples,
            &stats,
            join_s,
        )
    })
}

/// The method's name on the command line and in records.
pub const METHOD: &str = "inlj:alex";

/// What [`run`] is doing, for progress displays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Building an ALEX file over the inner table's tuples.
    BuildingAlex {
        /// Tuples of the inner table.
        keys: u64,
    },
    /// Joining.
    Joining,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stage::BuildingAlex { keys } => write!(f, "building ALEX over {keys} tuples"),
            Stage::Joining => f.write_str("joining"),
        }
    }
}
