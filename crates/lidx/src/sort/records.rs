//! The external merge sort itself, over fixed-width records: a `u64` key and a payload of
//! the same width for every record (8 bytes for a table's tuples; a whole row for the sort
//! joins of paper 5, which sort entries, not pairs).
//!
//! Records are pushed one at a time into a run buffer that grows, by doubling, within the
//! budget; a full buffer is sorted and spilled. The buffer holds `(key, tail)` entries: the
//! tail is the payload itself when it fits in 8 bytes (a tuple's value, so tuples sort as
//! they did before records) and the payload's place in a side buffer otherwise. A run file
//! holds records as `key ‖ payload`, keys little-endian.
#![deny(clippy::indexing_slicing)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::{SortOptions, SortReport};
use crate::memory::Reservation;
use crate::{Error, Result};

/// The smallest read buffer a run gets in a merge (or one record, where that is wider):
/// below it, reads stop being large sequential ones, and the merge takes another pass
/// instead.
pub const MIN_MERGE_READ: usize = 64 << 10;

/// Bytes of a record's key in a run file.
const KEY: usize = 8;

/// Bytes of the smallest run buffer's records (at least two records).
const MIN_RUN_BYTES: u64 = 4 << 10;

/// Bytes of the first run buffer when the number of records is not known.
const UNKNOWN_FIRST_RUN_BYTES: u64 = 4 << 20;

/// The write buffer of a run or of a merge into a scratch run.
pub(super) const RUN_WRITE_BUFFER: u64 = MIN_MERGE_READ as u64;

/// The smallest run buffer, in records of `payload` bytes: [`MIN_RUN_BYTES`] of them, or
/// two.
fn min_run_records(payload: usize) -> u64 {
    (MIN_RUN_BYTES / (KEY + payload) as u64).max(2)
}

/// Bytes a merge needs per run it reads: the smallest read buffer and a heap entry.
fn merge_bytes_per_run(payload: usize) -> u64 {
    MIN_MERGE_READ.max(KEY + payload) as u64 + 64
}

/// Bytes a run buffer of `records` records of `payload` bytes takes: its entries, the
/// payloads that do not fit in an entry, the scratch space of the standard library's stable
/// sort (driftsort: `max(len / 2, min(len, 8 MB / size))` entries) and the buffer the run
/// is written through.
pub(super) fn run_bytes(records: u64, payload: usize) -> u64 {
    let entry = std::mem::size_of::<(u64, u64)>() as u64;
    let side = if payload > KEY { payload as u64 } else { 0 };
    let scratch = (records / 2).max(records.min((8 << 20) / entry));
    records
        .saturating_mul(entry + side)
        .saturating_add(scratch.saturating_mul(entry))
        .saturating_add(RUN_WRITE_BUFFER)
}

/// The most records of `payload` bytes whose run buffer fits in `bytes`.
fn run_records_within(bytes: u64, payload: usize) -> u64 {
    // run_bytes is increasing in `records`: a binary search over it.
    let (mut lo, mut hi) = (0u64, bytes / 16 + 1);
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if run_bytes(mid, payload) <= bytes {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The smallest budget a [`RecordSorter`] of `payload`-byte records works in: the smallest
/// run buffer, and a merge of two runs into a scratch run.
pub fn min_sort_memory_for(payload: usize) -> u64 {
    let runs = run_bytes(min_run_records(payload), payload);
    let merge = RUN_WRITE_BUFFER + 2 * merge_bytes_per_run(payload);
    runs.max(merge)
}

/// An external merge sort of fixed-width records by key, fed one record at a time.
///
/// The sort is **stable**: records with equal keys come out in the order they were pushed.
/// Everything that grows with the data is reserved from the options' budget before it is
/// allocated; [`finish`](Self::finish) gives back the run buffer before the merge takes its
/// read buffers.
pub struct RecordSorter {
    payload: usize,
    options: SortOptions,
    /// The most records the run buffer may hold, within the budget it started with.
    max_run: u64,
    /// The fewest records the run buffer holds, and the records it is first made for.
    min_run: u64,
    first_run: u64,
    entries: Vec<(u64, u64)>,
    payloads: Vec<u8>,
    runs: Vec<Run>,
    report: SortReport,
    held: Reservation,
}

impl RecordSorter {
    /// A sorter of records with `payload` bytes besides the key, within what
    /// `options.budget` has left now (at least [`min_sort_memory_for`]). `expected` is how
    /// many records will come, where the caller knows (else `u64::MAX`): the run buffer is
    /// made that large at once, where the budget allows, instead of growing to it.
    pub fn new(payload: usize, expected: u64, options: &SortOptions) -> Result<RecordSorter> {
        let budget = &options.budget;
        if budget.available() < min_sort_memory_for(payload) {
            return Err(super::too_small(budget, min_sort_memory_for(payload)));
        }
        let min_run = min_run_records(payload);
        // An unlimited budget still leaves a buffer that can be allocated.
        let addressable = (isize::MAX as u64) / (16 + payload as u64) / 2;
        let max_run = run_records_within(budget.available(), payload)
            .min(addressable)
            .max(min_run);
        let held = budget.reserve(run_bytes(min_run, payload), "the sort's run buffer")?;
        Ok(RecordSorter {
            payload,
            options: options.clone(),
            max_run,
            min_run,
            // Unknown, the first buffer is modest and grows by doubling as records come.
            first_run: match expected {
                u64::MAX => (UNKNOWN_FIRST_RUN_BYTES / (16 + payload as u64)).max(min_run),
                n => n,
            }
            .clamp(min_run, max_run),
            entries: Vec::new(),
            payloads: Vec::new(),
            runs: Vec::new(),
            report: SortReport {
                run_records: min_run,
                ..SortReport::default()
            },
            held,
        })
    }

    /// Adds a record; `payload` must be as wide as the sorter's.
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "a payload is checked to be the records' width before it is copied"
    )]
    pub fn push(&mut self, key: u64, payload: &[u8]) -> Result<()> {
        if payload.len() != self.payload {
            return Err(Error::misuse(
                "sort::RecordSorter::push",
                format!(
                    "a payload of {} bytes in a sort of {}-byte payloads",
                    payload.len(),
                    self.payload
                ),
            ));
        }
        if self.entries.len() == self.entries.capacity() {
            self.make_room()?;
        }
        let tail = if let Ok(bytes) = <[u8; KEY]>::try_from(payload) {
            u64::from_le_bytes(bytes)
        } else if self.payload < KEY {
            let mut bytes = [0u8; KEY];
            bytes[..self.payload].copy_from_slice(payload);
            u64::from_le_bytes(bytes)
        } else {
            self.payloads.extend_from_slice(payload);
            self.entries.len() as u64
        };
        self.entries.push((key, tail));
        self.report.records += 1;
        Ok(())
    }

    /// Grows the full run buffer by doubling where the budget allows, or spills it.
    fn make_room(&mut self) -> Result<()> {
        let len = self.entries.len() as u64;
        let want = if len == 0 { self.first_run } else { len * 2 };
        let want = want.clamp(self.min_run, self.max_run);
        let grown = want > len
            && (want <= self.report.run_records
                || self.held.resize(run_bytes(want, self.payload)).is_ok());
        // An empty buffer is never spilled: where the budget (shared, and drained since
        // `new`) refuses more, it takes the smallest run, which `held` has covered from
        // the start.
        let want = match (grown, len) {
            (true, _) => want,
            (false, 0) => self.min_run,
            (false, _) => return self.spill(),
        };
        self.report.run_records = self.report.run_records.max(want);
        self.entries.reserve_exact((want - len) as usize);
        if self.payload > KEY {
            self.payloads
                .reserve_exact((want - len) as usize * self.payload);
        }
        Ok(())
    }

    /// Sorts the run buffer, writes it to a new scratch run and empties it.
    fn spill(&mut self) -> Result<()> {
        self.entries.sort_by_key(|e| e.0);
        let dir = &self.options.scratch_dir;
        let file = scratch_file(dir)?;
        let mut out = BufWriter::with_capacity(RUN_WRITE_BUFFER as usize, file);
        for &(key, tail) in &self.entries {
            let inline = tail.to_le_bytes();
            let payload = payload_of(&inline, tail, &self.payloads, self.payload);
            write_record(&mut out, key, payload, dir)?;
        }
        let file = out
            .into_inner()
            .map_err(|e| Error::io(dir, "write a sort run in", e.into_error()))?;
        let len = self.entries.len() as u64;
        self.report.bytes_written += len * (KEY + self.payload) as u64;
        self.runs.push(Run { file, len });
        self.entries.clear();
        self.payloads.clear();
        Ok(())
    }

    /// Ends the input and returns the records in key order. When they all fit in the run
    /// buffer nothing is written; otherwise the runs are merged, in groups first (one more
    /// pass over the data each) until a single merge can read them all within what the
    /// budget has left beyond `keep` bytes (the caller's, for what it does with the
    /// output); a budget that leaves no room for one run's reads beside `keep` is refused.
    /// `progress` gets the records merged so far by those group passes.
    pub fn finish(mut self, keep: u64, mut progress: impl FnMut(u64)) -> Result<SortedRecords> {
        if self.runs.is_empty() {
            self.entries.sort_by_key(|e| e.0);
            self.report.runs = 1;
            return Ok(SortedRecords {
                source: Source::InMemory {
                    entries: self.entries,
                    payloads: self.payloads,
                    at: 0,
                },
                payload: self.payload,
                inline: [0; KEY],
                report: self.report,
                _held: self.held,
            });
        }
        if !self.entries.is_empty() {
            self.spill()?;
        }
        // The run buffer is empty: give its memory back before the merge takes its own.
        self.entries = Vec::new();
        self.payloads = Vec::new();
        self.held.resize(0)?;
        let budget = self.options.budget.clone();
        let mut runs = std::mem::take(&mut self.runs);
        self.report.runs = runs.len() as u64;
        if fan_in(&budget, keep, self.payload) == 0 {
            // Not even one run could be read beside the caller's `keep`.
            return Err(super::too_small(&budget, min_sort_memory_for(self.payload)));
        }
        while (runs.len() as u64) > fan_in(&budget, keep, self.payload) {
            let group = usize::try_from(fan_in(&budget, RUN_WRITE_BUFFER, self.payload))
                .unwrap_or(usize::MAX);
            if group < 2 {
                return Err(super::too_small(&budget, min_sort_memory_for(self.payload)));
            }
            runs = self.merge_pass(runs, group, &mut progress)?;
        }
        self.report.merge_passes += 1;
        self.report.fan_in = self.report.fan_in.max(runs.len() as u64);
        let (merge, held) = Merge::new(runs, self.payload, keep, &self.options, &mut self.report)?;
        Ok(SortedRecords {
            source: Source::Merge(merge),
            payload: self.payload,
            inline: [0; KEY],
            report: self.report,
            _held: held,
        })
    }

    /// Merges `runs` in groups of `fan_in` into longer scratch runs: one pass over the data.
    fn merge_pass(
        &mut self,
        runs: Vec<Run>,
        fan_in: usize,
        progress: &mut impl FnMut(u64),
    ) -> Result<Vec<Run>> {
        self.report.merge_passes += 1;
        self.report.fan_in = self.report.fan_in.max(fan_in as u64);
        let dir = self.options.scratch_dir.clone();
        let mut merged_runs = Vec::new();
        let mut merged = 0u64;
        let mut runs = runs.into_iter().peekable();
        while runs.peek().is_some() {
            let group: Vec<Run> = runs.by_ref().take(fan_in).collect();
            let _out_held = self
                .options
                .budget
                .reserve(RUN_WRITE_BUFFER, "a sort merge's write buffer")?;
            let (mut merge, _held) =
                Merge::new(group, self.payload, 0, &self.options, &mut self.report)?;
            let file = scratch_file(&dir)?;
            let mut out = BufWriter::with_capacity(RUN_WRITE_BUFFER as usize, file);
            let mut len = 0u64;
            while let Some((key, payload)) = merge.next(&mut self.report)? {
                write_record(&mut out, key, payload, &dir)?;
                len += 1;
                merged += 1;
                if merged.is_multiple_of(1 << 20) {
                    progress(merged);
                }
            }
            let file = out
                .into_inner()
                .map_err(|e| Error::io(&dir, "write a sort run in", e.into_error()))?;
            self.report.bytes_written += len * (KEY + self.payload) as u64;
            merged_runs.push(Run { file, len });
        }
        Ok(merged_runs)
    }
}

/// Writes one record of a run: its key, then its payload.
fn write_record(out: &mut impl Write, key: u64, payload: &[u8], dir: &Path) -> Result<()> {
    out.write_all(&key.to_le_bytes())
        .and_then(|()| out.write_all(payload))
        .map_err(|e| Error::io(dir, "write a sort run in", e))
}

/// The payload of an entry: inline (`tail`'s bytes, in `inline`) when it fits, else in
/// `payloads`.
#[expect(
    clippy::indexing_slicing,
    reason = "width is at most KEY when inline, and tails point within the payloads written"
)]
fn payload_of<'a>(inline: &'a [u8; KEY], tail: u64, payloads: &'a [u8], width: usize) -> &'a [u8] {
    if width <= KEY {
        &inline[..width]
    } else {
        let at = tail as usize * width;
        &payloads[at..at + width]
    }
}

/// How many runs one merge can read within what `budget` has left beyond `keep` bytes.
fn fan_in(budget: &crate::memory::MemoryBudget, keep: u64, payload: usize) -> u64 {
    budget.available().saturating_sub(keep) / merge_bytes_per_run(payload)
}

/// An unnamed file in `dir` (`O_TMPFILE` where the file system has it): it disappears when
/// closed, or when the process dies.
fn scratch_file(dir: &Path) -> Result<File> {
    tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, "create a scratch file in", e))
}

/// Records in key order, read one at a time; what a sort did is in [`report`](Self::report)
/// once they are all read.
pub struct SortedRecords {
    source: Source,
    payload: usize,
    /// The bytes of the last inline payload returned.
    inline: [u8; KEY],
    report: SortReport,
    _held: Reservation,
}

enum Source {
    InMemory {
        entries: Vec<(u64, u64)>,
        payloads: Vec<u8>,
        at: usize,
    },
    Merge(Merge),
}

impl SortedRecords {
    /// The next record's key and payload, or `None` after the last.
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<(u64, &[u8])>> {
        match &mut self.source {
            Source::InMemory {
                entries,
                payloads,
                at,
            } => {
                let Some((key, tail)) = entries.get(*at) else {
                    return Ok(None);
                };
                *at += 1;
                self.inline = tail.to_le_bytes();
                Ok(Some((
                    *key,
                    payload_of(&self.inline, *tail, payloads, self.payload),
                )))
            }
            Source::Merge(merge) => merge.next(&mut self.report),
        }
    }

    /// What the sort did so far: reads of the final merge count as they happen.
    pub fn report(&self) -> &SortReport {
        &self.report
    }
}

/// A sorted run in an unnamed scratch file: `len` records from offset 0.
struct Run {
    file: File,
    len: u64,
}

/// A k-way merge of runs through a heap: smallest key first and, among equal keys, the
/// earlier run first, so a merge of consecutive runs is stable.
struct Merge {
    readers: Vec<RunReader>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The run whose record was returned last, advanced on the next call.
    pending: Option<usize>,
}

impl Merge {
    /// A merge of `runs`, their read buffers sharing what `options.budget` has left
    /// beyond `keep` bytes (held by the returned reservation), each run's first record
    /// read.
    fn new(
        runs: Vec<Run>,
        payload: usize,
        keep: u64,
        options: &SortOptions,
        report: &mut SortReport,
    ) -> Result<(Merge, Reservation)> {
        let budget = &options.budget;
        let k = runs.len().max(1) as u64;
        let per_run = (budget.available().saturating_sub(keep) / k).saturating_sub(64);
        if per_run + 64 < merge_bytes_per_run(payload) {
            return Err(super::too_small(budget, min_sort_memory_for(payload)));
        }
        let width = KEY + payload;
        let buffer_records = (per_run / width as u64) as usize;
        let held = budget.reserve(
            k * ((buffer_records * width) as u64 + 64),
            "a sort merge's read buffers",
        )?;
        let mut readers = Vec::with_capacity(runs.len());
        let mut heap = BinaryHeap::with_capacity(runs.len());
        for (i, run) in runs.into_iter().enumerate() {
            let mut reader = RunReader::new(run, width, buffer_records, &options.scratch_dir)?;
            if let Some(key) = reader.advance(report)? {
                heap.push(Reverse((key, i)));
            }
            readers.push(reader);
        }
        Ok((
            Merge {
                readers,
                heap,
                pending: None,
            },
            held,
        ))
    }

    #[expect(
        clippy::indexing_slicing,
        reason = "i is a reader's number, taken from the merge heap"
    )]
    fn next(&mut self, report: &mut SortReport) -> Result<Option<(u64, &[u8])>> {
        if let Some(i) = self.pending.take()
            && let Some(key) = self.readers[i].advance(report)?
        {
            self.heap.push(Reverse((key, i)));
        }
        let Some(Reverse((key, i))) = self.heap.pop() else {
            return Ok(None);
        };
        self.pending = Some(i);
        Ok(Some((key, self.readers[i].payload())))
    }
}

/// A run being merged: its file, a buffer of its next records, and how many are left on
/// disk.
struct RunReader {
    file: File,
    /// The scratch directory, for errors.
    dir: std::path::PathBuf,
    width: usize,
    buffer: Vec<u8>,
    /// Bytes of `buffer` read from the file.
    filled: usize,
    /// Offset of the current record in `buffer`, and of the next.
    current: usize,
    next: usize,
    left: u64,
}

impl RunReader {
    fn new(mut run: Run, width: usize, records: usize, dir: &Path) -> Result<RunReader> {
        run.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(dir, "rewind a sort run in", e))?;
        Ok(RunReader {
            file: run.file,
            dir: dir.to_path_buf(),
            width,
            buffer: vec![0; records * width],
            filled: 0,
            current: 0,
            next: 0,
            left: run.len,
        })
    }

    /// Moves to the next record and returns its key, refilling the buffer with one large
    /// read when it runs dry.
    #[expect(
        clippy::indexing_slicing,
        reason = "the buffer holds whole records of the run's width, current at one of them"
    )]
    fn advance(&mut self, report: &mut SortReport) -> Result<Option<u64>> {
        if self.next == self.filled {
            if self.left == 0 {
                return Ok(None);
            }
            let take = self.left.min((self.buffer.len() / self.width) as u64) as usize;
            self.filled = take * self.width;
            self.file
                .read_exact(&mut self.buffer[..self.filled])
                .map_err(|e| Error::io(&self.dir, "read a sort run in", e))?;
            report.bytes_read += self.filled as u64;
            report.read_calls += 1;
            self.left -= take as u64;
            self.next = 0;
        }
        self.current = self.next;
        self.next += self.width;
        let mut key = [0u8; KEY];
        key.copy_from_slice(&self.buffer[self.current..self.current + KEY]);
        Ok(Some(u64::from_le_bytes(key)))
    }

    #[expect(
        clippy::indexing_slicing,
        reason = "current is at a whole record in the buffer"
    )]
    fn payload(&self) -> &[u8] {
        &self.buffer[self.current + KEY..self.current + self.width]
    }
}
