//! External merge sort of a table's tuples under a memory budget: the sort-then-merge route
//! for unsorted tables of paper 1 (section 5.4), and the sorting the joins over LSM trees
//! (paper 5) will need.
//!
//! Two phases, each reading and writing in large sequential I/Os:
//! 1. **Runs**: the input is read in chunks into a run buffer as large as the budget allows;
//!    each full buffer is sorted in memory and written to an unnamed scratch file (Linux's
//!    `O_TMPFILE`, so nothing is left behind even when the process is killed).
//! 2. **Merge**: the runs are merged k at a time through a heap, each run behind a read buffer
//!    of at least [`MIN_MERGE_READ`]; when more runs exist than the budget can give buffers,
//!    groups of them are merged into longer runs first (one more pass over the data each).
//!
//! The sort is **stable**: equal keys keep their input order (runs are consecutive pieces of
//! the input, each sorted stably, and the merge breaks ties by run number), so sorting the
//! same tuples always writes the same table.
//!
//! Memory: everything that grows with the data is reserved from the [`MemoryBudget`] before
//! it is allocated: the input chunk, the run buffer together with the scratch space the
//! standard library's stable sort takes, the merge's read buffers and heap, and the output
//! writer's buffer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::memory::{MemoryBudget, Reservation};
use crate::storage::{BLOCK_SIZE, TUPLE_SIZE, Table, TableWriter, Tuple};
use crate::{Error, Result};

#[cfg(test)]
mod tests;

/// The smallest read buffer a run gets in a merge: below it, reads stop being large
/// sequential ones, and the merge takes another pass instead.
pub const MIN_MERGE_READ: usize = 64 << 10;

/// The input chunk read at a time while forming runs, at most.
const MAX_INPUT_CHUNK: usize = 4 << 20;

/// The output writer's buffer, at most.
const MAX_OUTPUT_BUFFER: usize = 1 << 20;

/// What an external sort did, in the units paper 1 argues in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SortReport {
    /// Tuples sorted.
    pub tuples: u64,
    /// Runs written by the first phase (1 when the input fit in the run buffer; then no
    /// scratch file is written).
    pub runs: u64,
    /// Passes over the data after the first phase: 1 for a single merge, more when runs
    /// had to be merged in groups first (0 when there was one run).
    pub merge_passes: u32,
    /// Largest number of runs merged at once.
    pub fan_in: u64,
    /// Tuples in a full run buffer.
    pub run_tuples: u64,
    /// Bytes read: the input once, and the scratch runs once per pass.
    pub bytes_read: u64,
    /// Read calls made for those bytes.
    pub read_calls: u64,
    /// Bytes written: the scratch runs, and the output table (its data, checksums and header).
    pub bytes_written: u64,
    /// The budget's peak after the sort: the most bytes the sort reserved at once, when the
    /// budget was its alone.
    pub peak_reserved: u64,
}

/// Where a sort may put its scratch runs, and how much memory it may use.
#[derive(Clone, Debug)]
pub struct SortOptions {
    /// Directory for the unnamed scratch files (the output's directory by default).
    pub scratch_dir: PathBuf,
    /// The budget everything is reserved from.
    pub budget: MemoryBudget,
}

/// Bytes a merge needs per run it reads: the smallest read buffer and a heap entry.
const MERGE_BYTES_PER_RUN: u64 = MIN_MERGE_READ as u64 + 64;

/// The write buffer of a merge into a scratch run (an intermediate pass).
const PASS_OUTPUT_BUFFER: u64 = MIN_MERGE_READ as u64;

/// The smallest run buffer: a block's worth of tuples.
const MIN_RUN_TUPLES: u64 = (BLOCK_SIZE / TUPLE_SIZE) as u64;

/// The smallest budget [`sort_table`] works with: enough for a block of input and a run
/// buffer of a block's tuples, and for a merge of two runs into a scratch run.
pub fn min_sort_memory() -> u64 {
    let runs = BLOCK_SIZE as u64 + run_bytes(MIN_RUN_TUPLES);
    let merge = PASS_OUTPUT_BUFFER + 2 * MERGE_BYTES_PER_RUN;
    runs.max(merge)
}

/// Sorts the (key, value) tuples of `input` by key, stably, into a new table at `out`
/// (written atomically, sorted flag set), within `options.budget`. A budget with less than
/// [`min_sort_memory`] bytes left is refused before anything is read. `progress` gets the
/// phase and the number of tuples read or merged so far in it.
pub fn sort_table(
    input: &Table,
    out: &Path,
    options: &SortOptions,
    mut progress: impl FnMut(SortPhase, u64),
) -> Result<SortReport> {
    input.require_pairs("sorting")?;
    crate::files::refuse_same_file(input.path(), out)?;
    let budget = &options.budget;
    if budget.available() < min_sort_memory() {
        return Err(too_small(budget));
    }
    let mut report = SortReport {
        tuples: input.len(),
        ..SortReport::default()
    };
    let runs = form_runs(input, options, &mut report, |n| {
        progress(SortPhase::Runs, n)
    })?;
    let header = match runs {
        Runs::InMemory(tuples, _held) => {
            let (mut writer, _out_held) = output_writer(out, budget, 0)?;
            for (i, &t) in tuples.iter().enumerate() {
                writer.push(t)?;
                if i % (1 << 20) == 0 {
                    progress(SortPhase::Merge, i as u64);
                }
            }
            writer.finish()?
        }
        Runs::OnDisk(mut runs) => {
            // Merge in groups until one merge can take every run beside the output buffer.
            while (runs.len() as u64) > fan_in(budget, BLOCK_SIZE as u64) {
                let group =
                    usize::try_from(fan_in(budget, PASS_OUTPUT_BUFFER)).unwrap_or(usize::MAX);
                if group < 2 {
                    return Err(too_small(budget));
                }
                runs = merge_pass(runs, group, options, &mut report, &mut progress)?;
            }
            report.merge_passes += 1;
            report.fan_in = report.fan_in.max(runs.len() as u64);
            let readers = runs.len() as u64 * MERGE_BYTES_PER_RUN;
            let (mut writer, _out_held) = output_writer(out, budget, readers)?;
            let mut merged = 0u64;
            merge_runs(runs, options, &mut report, |t| {
                writer.push(t)?;
                merged += 1;
                if merged.is_multiple_of(1 << 20) {
                    progress(SortPhase::Merge, merged);
                }
                Ok(())
            })?;
            writer.finish()?
        }
    };
    progress(SortPhase::Merge, report.tuples);
    report.bytes_written += header.layout().map_or(0, |l| l.file_len());
    report.peak_reserved = budget.peak();
    Ok(report)
}

/// The output table's writer, with a buffer of up to [`MAX_OUTPUT_BUFFER`] bytes (at least
/// a block) reserved from what `budget` has left beyond `keep` bytes.
fn output_writer(
    out: &Path,
    budget: &MemoryBudget,
    keep: u64,
) -> Result<(TableWriter, Reservation)> {
    let bytes = budget
        .available()
        .saturating_sub(keep)
        .clamp(BLOCK_SIZE as u64, MAX_OUTPUT_BUFFER as u64);
    let held = budget.reserve(bytes, "the sorted table's write buffer")?;
    Ok((TableWriter::create_with_buffer(out, bytes as usize)?, held))
}

/// How many runs one merge can read within what `budget` has left beyond `output` bytes.
fn fan_in(budget: &MemoryBudget, output: u64) -> u64 {
    budget.available().saturating_sub(output) / MERGE_BYTES_PER_RUN
}

/// The phase a sort's progress count belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortPhase {
    /// Reading the input and writing sorted runs.
    Runs,
    /// Merging runs into longer ones, or into the output.
    Merge,
}

/// The output of the first phase: the whole input sorted in memory, or runs on disk.
enum Runs {
    InMemory(Vec<Tuple>, Reservation),
    OnDisk(Vec<Run>),
}

/// A sorted run in an unnamed scratch file: `len` tuples from offset 0.
struct Run {
    file: File,
    len: u64,
}

/// Bytes the run buffer of `tuples` tuples takes with the scratch space of the standard
/// library's stable sort (driftsort: `max(len / 2, min(len, 8 MB / size))` elements).
fn run_bytes(tuples: u64) -> u64 {
    let scratch = (tuples / 2).max(tuples.min((8 << 20) / TUPLE_SIZE as u64));
    tuples
        .saturating_add(scratch)
        .saturating_mul(TUPLE_SIZE as u64)
}

/// The most tuples whose run buffer (with sort scratch) fits in `bytes`.
fn run_tuples_within(bytes: u64) -> u64 {
    // run_bytes is increasing in `tuples`: a binary search over it.
    let (mut lo, mut hi) = (0u64, bytes / TUPLE_SIZE as u64 + 1);
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if run_bytes(mid) <= bytes {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Reads `input` in chunks into run buffers, sorts each and writes it to a scratch file;
/// keeps the data in memory when it all fits in one run.
fn form_runs(
    input: &Table,
    options: &SortOptions,
    report: &mut SortReport,
    mut progress: impl FnMut(u64),
) -> Result<Runs> {
    let budget = &options.budget;
    let available = budget.available();
    let chunk = (available / 8).clamp(BLOCK_SIZE as u64, MAX_INPUT_CHUNK as u64);
    let chunk = chunk - chunk % BLOCK_SIZE as u64;
    let run_tuples = run_tuples_within(available.saturating_sub(chunk))
        .min(input.len())
        .max(MIN_RUN_TUPLES.min(input.len()).max(1));
    report.run_tuples = run_tuples;
    let _chunk_held = budget.reserve(chunk, "the sort's input chunk")?;
    let held = budget.reserve(run_bytes(run_tuples), "the sort's run buffer")?;
    let mut buffer: Vec<Tuple> = Vec::with_capacity(run_tuples as usize);
    let mut runs: Vec<Run> = Vec::new();
    let mut read = 0u64;
    input.scan_in_chunks(chunk as usize, |tuples| {
        report.bytes_read += (tuples.len() * TUPLE_SIZE) as u64;
        report.read_calls += 1;
        let mut rest = tuples;
        while !rest.is_empty() {
            let take = rest.len().min(run_tuples as usize - buffer.len());
            buffer.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if buffer.len() == run_tuples as usize && read + (take as u64) < input.len() {
                runs.push(write_run(&mut buffer, &options.scratch_dir, report)?);
            }
            read += take as u64;
        }
        progress(read);
        Ok(())
    })?;
    if runs.is_empty() {
        buffer.sort_by_key(|t| t.key);
        report.runs = 1;
        return Ok(Runs::InMemory(buffer, held));
    }
    if !buffer.is_empty() {
        runs.push(write_run(&mut buffer, &options.scratch_dir, report)?);
    }
    report.runs = runs.len() as u64;
    Ok(Runs::OnDisk(runs))
}

/// Sorts `buffer` stably by key, writes it to a new scratch file in `dir` and empties it.
fn write_run(buffer: &mut Vec<Tuple>, dir: &Path, report: &mut SortReport) -> Result<Run> {
    buffer.sort_by_key(|t| t.key);
    let mut file = scratch_file(dir)?;
    let bytes: &[u8] = bytemuck::cast_slice(buffer);
    file.write_all(bytes)
        .map_err(|e| Error::io(dir, "write a sort run in", e))?;
    report.bytes_written += bytes.len() as u64;
    let run = Run {
        file,
        len: buffer.len() as u64,
    };
    buffer.clear();
    Ok(run)
}

/// An unnamed file in `dir` (`O_TMPFILE` where the file system has it): it disappears when
/// closed, or when the process dies.
fn scratch_file(dir: &Path) -> Result<File> {
    tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, "create a scratch file in", e))
}

/// Merges `runs` in groups of `fan_in` into longer scratch runs: one pass over the data.
fn merge_pass(
    runs: Vec<Run>,
    fan_in: usize,
    options: &SortOptions,
    report: &mut SortReport,
    progress: &mut impl FnMut(SortPhase, u64),
) -> Result<Vec<Run>> {
    report.merge_passes += 1;
    report.fan_in = report.fan_in.max(fan_in as u64);
    let mut merged_runs = Vec::new();
    let mut merged = 0u64;
    let mut runs = runs.into_iter().peekable();
    while runs.peek().is_some() {
        let group: Vec<Run> = runs.by_ref().take(fan_in).collect();
        let _out_held = options
            .budget
            .reserve(PASS_OUTPUT_BUFFER, "a sort merge's write buffer")?;
        let file = scratch_file(&options.scratch_dir)?;
        let mut out = std::io::BufWriter::with_capacity(PASS_OUTPUT_BUFFER as usize, file);
        let mut len = 0u64;
        merge_runs(group, options, report, |t| {
            out.write_all(bytemuck::bytes_of(&t))
                .map_err(|e| Error::io(&options.scratch_dir, "write a sort run in", e))?;
            len += 1;
            merged += 1;
            if merged.is_multiple_of(1 << 20) {
                progress(SortPhase::Merge, merged);
            }
            Ok(())
        })?;
        let file = out
            .into_inner()
            .map_err(|e| Error::io(&options.scratch_dir, "write a sort run in", e.into_error()))?;
        report.bytes_written += len * TUPLE_SIZE as u64;
        merged_runs.push(Run { file, len });
    }
    Ok(merged_runs)
}

/// A run being merged: its file, a buffer of its next tuples, and how many are left on disk.
struct RunReader<'d> {
    /// The scratch directory, for errors.
    dir: &'d Path,
    file: File,
    buffer: Vec<Tuple>,
    next: usize,
    left: u64,
}

impl<'d> RunReader<'d> {
    fn new(mut run: Run, buffer_tuples: usize, dir: &'d Path) -> Result<RunReader<'d>> {
        run.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(dir, "rewind a sort run in", e))?;
        Ok(RunReader {
            dir,
            file: run.file,
            buffer: Vec::with_capacity(buffer_tuples),
            next: 0,
            left: run.len,
        })
    }

    /// The next tuple, refilling the buffer with one large read when it runs dry.
    fn next(&mut self, report: &mut SortReport) -> Result<Option<Tuple>> {
        if self.next == self.buffer.len() {
            if self.left == 0 {
                return Ok(None);
            }
            let take = self.left.min(self.buffer.capacity() as u64) as usize;
            self.buffer.resize(take, Tuple { key: 0, value: 0 });
            self.file
                .read_exact(bytemuck::cast_slice_mut(&mut self.buffer))
                .map_err(|e| Error::io(self.dir, "read a sort run in", e))?;
            report.bytes_read += (take * TUPLE_SIZE) as u64;
            report.read_calls += 1;
            self.left -= take as u64;
            self.next = 0;
        }
        let t = self.buffer[self.next];
        self.next += 1;
        Ok(Some(t))
    }
}

/// Merges `runs` (in input order) into `emit`, smallest key first and, among equal keys,
/// the earlier run first. The runs share what is left of the budget as read buffers.
fn merge_runs(
    runs: Vec<Run>,
    options: &SortOptions,
    report: &mut SortReport,
    mut emit: impl FnMut(Tuple) -> Result<()>,
) -> Result<()> {
    let budget = &options.budget;
    let k = runs.len() as u64;
    let per_run = (budget.available() / k.max(1)).saturating_sub(64);
    let buffer_tuples = (per_run / TUPLE_SIZE as u64).max(1);
    if per_run < MIN_MERGE_READ as u64 {
        return Err(too_small(budget));
    }
    let _held = budget.reserve(
        k * (buffer_tuples * TUPLE_SIZE as u64 + 64),
        "a sort merge's read buffers",
    )?;
    let mut readers: Vec<RunReader> = runs
        .into_iter()
        .map(|r| RunReader::new(r, buffer_tuples as usize, &options.scratch_dir))
        .collect::<Result<_>>()?;
    let mut heap = BinaryHeap::with_capacity(readers.len());
    for (i, r) in readers.iter_mut().enumerate() {
        if let Some(t) = r.next(report)? {
            heap.push(Reverse((t.key, i, t.value)));
        }
    }
    while let Some(Reverse((key, i, value))) = heap.pop() {
        emit(Tuple { key, value })?;
        if let Some(t) = readers[i].next(report)? {
            heap.push(Reverse((t.key, i, t.value)));
        }
    }
    Ok(())
}

/// The error for a budget too small to sort in, naming the smallest that works.
fn too_small(budget: &MemoryBudget) -> Error {
    Error::param(
        "memory limit",
        format!(
            "{} bytes left of {} cannot sort: an external sort needs at least {} bytes",
            budget.available(),
            budget.limit(),
            min_sort_memory()
        ),
    )
}
