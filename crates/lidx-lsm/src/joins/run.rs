//! The three join algorithms over a join database (paper 5, section 3.3), each emitting one
//! `(attribute, R's key, S's key)` triple per pair of matching rows into a
//! [`JoinSink`](lidx::join::JoinSink), so every method that answers the same join emits the
//! same multiset.
//!
//! - **INLJ**: R's data table is scanned; each row's attribute is looked up in S: a get by
//!   primary key (`P`), or the S index (`NS`).
//! - **SJ**: each side arrives in join-key order: from a secondary index (`PS`: R's; `NS`,
//!   `SS`: S's), from S's own key order (`P`, `PS`), or from lidx's external merge sort
//!   ([`lidx::sort::RecordSorter`]) of a scan's entries within the join memory (16 MB by
//!   default, as the paper); then one merge.
//! - **HJ**: grace hash join: both sides' entries are partitioned to scratch files by the
//!   BKDR hash (seed 131, as the paper) of the 10-byte join key, so that a partition of R
//!   fits the join memory; each partition of R goes into a hash table and S's is probed
//!   against it.
//!
//! A validation index's hits are checked against the data table (Algorithm 2): each
//! distinct primary key of a lookup is read and kept only if its row still holds the
//! attribute. Synchronous indexes are trusted. The sort and hash joins carry whole
//! entries (primary key, attribute and the rest of the row) with their join key, as the
//! paper's code does, so their I/O grows with the entry size as its Table 4 prices it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::time::Instant;

use lidx::join::JoinSink;
use lidx::memory::MemoryBudget;
use lidx::sort::{RecordSorter, SortOptions, SortedRecords, min_sort_memory_for};
use rocksdb::DBRawIterator;
use serde::{Deserialize, Serialize};

use super::db::LsmDb;
use super::method::{Algorithm, Maintenance, Method, Shape, Side};
use super::rows::{KEY_BYTES, KEY_LIMIT, attr_of, decode_key, encode_key};
use super::tree::{SecondaryIndex, Tree, TreeStats};
use crate::Result;
use crate::rocks;

/// What a join did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LsmJoinReport {
    /// The method, as the paper names it.
    pub method: String,
    /// Output triples.
    pub output: u64,
    /// Seconds of the join (sorting and partitioning included).
    pub join_s: f64,
    /// Threads it ran on.
    pub threads: usize,
    /// Seconds spent building the indexes the join needed and the database lacked.
    pub index_build_s: f64,
    /// Lookups in S (INLJ).
    pub lookups: u64,
    /// Rows read from a data table to check a validation index's hits.
    pub validations: u64,
    /// Bytes the sort or hash join wrote to scratch files: sorted runs and merge passes,
    /// or hash partitions (0 when a sort fit in memory).
    pub scratch_bytes: u64,
    /// Scratch files written: the sorted runs of the sorts' first phase, or the hash
    /// partitions of both sides.
    pub scratch_files: u64,
    /// RocksDB's tickers over the join, all trees summed.
    pub stats: TreeStats,
}

/// Joins R and S of `db` by `method`, building the indexes it needs first where missing
/// (their time reported apart), and emits into `sink`.
pub fn join(db: &mut LsmDb, method: Method, sink: &mut impl JoinSink) -> Result<LsmJoinReport> {
    join_with_threads(db, method, 1, sink)
}

/// [`join`] with `threads` threads (paper 5's Fig. 13c), each taking an equal range of R's
/// and S's primary keys: INLJ's threads scan their range of R and look its rows up; the
/// hash join's partition their ranges (as many threads as keep its open scratch files
/// within [`MAX_PARTITION_FILES`]), then build and probe partitions in turn, each in an
/// equal share of the join memory; the sort joins' sort their ranges, each in an equal
/// share of the join memory, and one merge reads all the sorted ranges. Reading an index
/// in order stays one thread. The sink gets the triples in the main thread, in an order
/// that depends on the threads; every thread is joined before an error is returned.
pub fn join_with_threads(
    db: &mut LsmDb,
    method: Method,
    threads: usize,
    sink: &mut impl JoinSink,
) -> Result<LsmJoinReport> {
    db.ensure_whole()?;
    let threads = threads.clamp(1, MAX_THREADS);
    let mut report = LsmJoinReport {
        method: method.to_string(),
        threads,
        ..LsmJoinReport::default()
    };
    for spec in method.indexes() {
        report.index_build_s += db.build_index(spec)?;
    }
    let before = db.stats();
    let started = Instant::now();
    let mut counted = Counting { sink, output: 0 };
    match method.algorithm {
        Algorithm::Inlj => inlj(db, method, threads, &mut counted, &mut report)?,
        Algorithm::Hj => hash_join(db, method, threads, &mut counted, &mut report)?,
        Algorithm::Sj => sort_merge(db, method, threads, &mut counted, &mut report)?,
    }
    report.output = counted.output;
    report.join_s = started.elapsed().as_secs_f64();
    report.stats = db.stats().since(&before);
    Ok(report)
}

/// The most threads a join takes.
pub const MAX_THREADS: usize = 256;

/// `threads` equal ranges of the primary keys, in order, covering them all.
fn key_ranges(threads: usize) -> Vec<Range<u64>> {
    let t = threads.max(1) as u64;
    (0..t)
        .map(|i| {
            KEY_LIMIT / t * i..if i + 1 == t {
                KEY_LIMIT
            } else {
                KEY_LIMIT / t * (i + 1)
            }
        })
        .collect()
}

/// Triples a worker thread emits, sent to the main thread in batches.
struct Emitter {
    batch: Vec<(u64, u64, u64)>,
    to: SyncSender<Vec<(u64, u64, u64)>>,
}

/// Triples a worker sends at once.
const EMIT_BATCH: usize = 4096;

impl Emitter {
    fn emit(&mut self, key: u64, r: u64, s: u64) -> Result<()> {
        self.batch.push((key, r, s));
        if self.batch.len() == EMIT_BATCH {
            self.flush();
        }
        Ok(())
    }

    fn flush(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(EMIT_BATCH));
        // The receiver only hangs up after an error of its own, which it reports.
        let _ = self.to.send(batch);
    }
}

/// Runs `work` on each job in a thread of its own, handing the triples each emits to
/// `out` in this thread as they arrive, and adds each job's counts to `report`.
fn in_parallel<J: Send, S: JoinSink>(
    jobs: Vec<J>,
    out: &mut Counting<'_, S>,
    report: &mut LsmJoinReport,
    work: impl Fn(J, &mut Emitter, &mut LsmJoinReport) -> Result<()> + Sync,
) -> Result<()> {
    let (to, from) = sync_channel::<Vec<(u64, u64, u64)>>(4 * jobs.len().max(1));
    std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|job| {
                let to = to.clone();
                scope.spawn(move || -> Result<LsmJoinReport> {
                    let mut counts = LsmJoinReport::default();
                    let mut emitter = Emitter {
                        batch: Vec::with_capacity(EMIT_BATCH),
                        to,
                    };
                    work(job, &mut emitter, &mut counts)?;
                    emitter.flush();
                    Ok(counts)
                })
            })
            .collect();
        drop(to);
        let mut emitted = Ok(());
        for batch in from {
            for (key, r, s) in batch {
                if emitted.is_ok() {
                    emitted = out.emit(key, r, s);
                }
            }
        }
        // Every thread is joined before any error is returned.
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        for counts in joined {
            let counts = counts.map_err(|_| {
                lidx::Error::misuse("joins::run", "a join thread panicked".to_string())
            })??;
            report.lookups += counts.lookups;
            report.validations += counts.validations;
            report.scratch_bytes += counts.scratch_bytes;
            report.scratch_files += counts.scratch_files;
        }
        emitted
    })
}

/// Runs `work` on each job in a thread of its own and returns what each gave, in order.
fn each_in_thread<J: Send, T: Send>(
    jobs: Vec<J>,
    work: impl Fn(J) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|job| scope.spawn(move || work(job)))
            .collect();
        // Every thread is joined before any error is returned.
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        joined
            .into_iter()
            .map(|done| {
                done.map_err(|_| {
                    lidx::Error::misuse("joins::run", "a join thread panicked".to_string())
                })?
            })
            .collect()
    })
}

/// A sink that counts what passes.
struct Counting<'s, S> {
    sink: &'s mut S,
    output: u64,
}

impl<S: JoinSink> Counting<'_, S> {
    fn emit(&mut self, key: u64, r: u64, s: u64) -> Result<()> {
        self.output += 1;
        Ok(self.sink.emit(key, r, s)?)
    }
}

/// The index of `side` that `method` reads.
fn index_of(db: &LsmDb, method: Method, side: Side) -> Result<&SecondaryIndex> {
    let spec = method
        .indexes()
        .into_iter()
        .find(|s| s.side == side)
        .ok_or_else(|| {
            lidx::Error::misuse("joins::run", format!("{method} reads no index of {side}"))
        })?;
    db.index(spec).ok_or_else(|| {
        lidx::Error::misuse(
            "joins::run",
            format!("the index {} is missing", spec.dir_name()),
        )
        .into()
    })
}

/// Keeps in `pks` the distinct keys whose row in `table` still holds `attr` (Algorithm 2).
fn validate(table: &Tree, attr: u64, pks: &mut Vec<u64>, report: &mut LsmJoinReport) -> Result<()> {
    pks.sort_unstable();
    pks.dedup();
    let mut kept = 0;
    for i in 0..pks.len() {
        report.validations += 1;
        let row = table.get(&encode_key(pks[i]))?;
        if row.as_deref().and_then(attr_of) == Some(attr) {
            pks[kept] = pks[i];
            kept += 1;
        }
    }
    pks.truncate(kept);
    Ok(())
}

fn inlj<S: JoinSink>(
    db: &LsmDb,
    method: Method,
    threads: usize,
    out: &mut Counting<'_, S>,
    report: &mut LsmJoinReport,
) -> Result<()> {
    let index = match method.shape {
        Shape::P => None,
        _ => Some(index_of(db, method, Side::S)?),
    };
    in_parallel(key_ranges(threads), out, report, |keys, out, report| {
        let mut matches = Vec::new();
        db.r.scan_entries(keys, |pk_r, attr, _, _| {
            report.lookups += 1;
            let Some(index) = index else {
                if db.s.get(&encode_key(attr))?.is_some() {
                    out.emit(attr, pk_r, attr)?;
                }
                return Ok(());
            };
            matches.clear();
            index.lookup(attr, &mut matches)?;
            if index.spec.maintenance == Maintenance::Validation {
                validate(&db.s, attr, &mut matches, report)?;
            }
            for &pk_s in &matches {
                out.emit(attr, pk_r, pk_s)?;
            }
            Ok(())
        })
    })
}

/// BKDR hash (seed 131) of a 10-byte key, as paper 5's hash join partitions.
fn bkdr(key: &[u8; KEY_BYTES]) -> u32 {
    key.iter()
        .fold(0u32, |h, &b| h.wrapping_mul(131).wrapping_add(u32::from(b)))
}

/// A row as the sort and hash joins carry it: its whole entry (key ‖ value), which must be
/// `width` bytes (the workload's entry size), copied into `buffer`.
fn whole_entry<'b>(
    buffer: &'b mut Vec<u8>,
    key: &[u8],
    value: &[u8],
    width: usize,
    table: &Tree,
) -> Result<&'b [u8]> {
    if key.len() + value.len() != width {
        return Err(lidx::Error::param(
            "database",
            format!(
                "{}: a row of {} bytes in a table of {width}-byte entries",
                table.path.display(),
                key.len() + value.len()
            ),
        )
        .into());
    }
    buffer.clear();
    buffer.extend_from_slice(key);
    buffer.extend_from_slice(value);
    Ok(buffer)
}

/// The primary key of a whole entry (its first [`KEY_BYTES`]).
fn pk_of(entry: &[u8]) -> u64 {
    entry.get(..KEY_BYTES).and_then(decode_key).unwrap_or(0)
}

/// Records of (join key, whole entry), written to one scratch file per partition.
struct Partitions {
    files: Vec<BufWriter<File>>,
    /// Records written.
    records: u64,
}

impl Partitions {
    fn new(dir: &Path, count: usize) -> Result<Partitions> {
        let files = (0..count)
            .map(|_| {
                tempfile::tempfile_in(dir)
                    .map(|f| BufWriter::with_capacity(1 << 14, f))
                    .map_err(|e| lidx::Error::io(dir, "create a hash partition in", e).into())
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Partitions { files, records: 0 })
    }

    fn push(&mut self, key: u64, entry: &[u8], dir: &Path) -> Result<()> {
        let p = bkdr(&encode_key(key)) as usize % self.files.len();
        let file = &mut self.files[p];
        self.records += 1;
        file.write_all(&key.to_le_bytes())
            .and_then(|()| file.write_all(entry))
            .map_err(|e| lidx::Error::io(dir, "write a hash partition in", e).into())
    }

    /// The partition files, each rewound to its start.
    fn into_files(self, dir: &Path) -> Result<Vec<File>> {
        use std::io::Seek;
        self.files
            .into_iter()
            .map(|w| {
                let mut f = w.into_inner().map_err(|e| {
                    lidx::Error::io(dir, "write a hash partition in", e.into_error())
                })?;
                f.rewind()
                    .map_err(|e| lidx::Error::io(dir, "read a hash partition in", e))?;
                Ok(f)
            })
            .collect()
    }
}

/// One partition's files of R and of S, one of each per thread that partitioned.
type PartitionFiles = (Vec<File>, Vec<File>);

/// The most scratch files a hash join keeps open at once: fewer threads partition where
/// more would pass it.
pub const MAX_PARTITION_FILES: usize = 1024;

/// The join key of a partition record.
fn key_of(record: &[u8]) -> u64 {
    let mut key = [0u8; 8];
    key.copy_from_slice(&record[..8]);
    u64::from_le_bytes(key)
}

/// Reads the next record of a partition into `record`; false at the end.
fn next_record(reader: &mut BufReader<File>, record: &mut [u8], dir: &Path) -> Result<bool> {
    match reader.read_exact(record) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(lidx::Error::io(dir, "read a hash partition in", e).into()),
    }
}

fn hash_join<S: JoinSink>(
    db: &LsmDb,
    method: Method,
    threads: usize,
    out: &mut Counting<'_, S>,
    report: &mut LsmJoinReport,
) -> Result<()> {
    let dir = db.dir();
    let entry_size = db.workload().entry_size;
    // A partition of R is held whole, its records indexed by a hash table (about 48 bytes
    // an entry with its key and vector): enough partitions for each to fit the budget.
    // (A manifest is a file a user can edit: no overflow on its counts.)
    let r_rows = db.batches().saturating_mul(db.workload().r_rows());
    let per_row = (8 + entry_size + 48) as u64;
    // Threads join partitions at the same time: each gets its share of the memory.
    let memory = (db.config().join_memory / threads as u64).max(1);
    let count = r_rows
        .saturating_mul(per_row)
        .div_ceil(memory)
        .clamp(1, 4096) as usize;
    let by_key = method.joins_s_key();
    // Each thread partitions its range of both tables into files of its own, as many
    // threads as keep the files open at once within bounds.
    let partitioners = threads.min((MAX_PARTITION_FILES / (2 * count)).max(1));
    let parted = each_in_thread(key_ranges(partitioners), |keys| {
        let mut buffer = Vec::with_capacity(entry_size);
        let mut r_parts = Partitions::new(dir, count)?;
        db.r.scan_entries(keys.clone(), |_, attr, k, v| {
            let entry = whole_entry(&mut buffer, k, v, entry_size, &db.r)?;
            r_parts.push(attr, entry, dir)
        })?;
        let mut s_parts = Partitions::new(dir, count)?;
        db.s.scan_entries(keys, |pk, attr, k, v| {
            let key = if by_key { pk } else { attr };
            s_parts.push(key, whole_entry(&mut buffer, k, v, entry_size, &db.s)?, dir)
        })?;
        Ok((r_parts, s_parts))
    })?;
    let width = 8 + entry_size;
    // Partition p of R and of S: every thread's file p. Thread t then joins the
    // partitions p with p % threads == t.
    let mut jobs: Vec<Vec<PartitionFiles>> = (0..threads).map(|_| Vec::new()).collect();
    let mut by_partition: Vec<PartitionFiles> =
        (0..count).map(|_| (Vec::new(), Vec::new())).collect();
    for (r_parts, s_parts) in parted {
        report.scratch_files += 2 * count as u64;
        report.scratch_bytes += (r_parts.records + s_parts.records) * width as u64;
        for (p, (r, s)) in r_parts
            .into_files(dir)?
            .into_iter()
            .zip(s_parts.into_files(dir)?)
            .enumerate()
        {
            by_partition[p].0.push(r);
            by_partition[p].1.push(s);
        }
    }
    for (p, files) in by_partition.into_iter().enumerate() {
        jobs[p % threads].push(files);
    }
    in_parallel(jobs, out, report, |partitions, out, _| {
        let mut partition: Vec<u8> = Vec::new();
        let mut table: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut record = vec![0u8; width];
        for (r_files, s_files) in partitions {
            partition.clear();
            for mut r in r_files {
                // One large read a file: read_to_end grows the buffer as it goes.
                r.read_to_end(&mut partition)
                    .map_err(|e| lidx::Error::io(dir, "read a hash partition in", e))?;
            }
            table.clear();
            for (i, r_record) in partition.chunks_exact(width).enumerate() {
                table.entry(key_of(r_record)).or_default().push(i * width);
            }
            for s in s_files {
                let mut s = BufReader::with_capacity(1 << 16, s);
                while next_record(&mut s, &mut record, dir)? {
                    let key = key_of(&record);
                    if let Some(rs) = table.get(&key) {
                        let pk_s = pk_of(&record[8..]);
                        for &at in rs {
                            out.emit(key, pk_of(&partition[at + 8..]), pk_s)?;
                        }
                    }
                }
            }
        }
        Ok(())
    })
}

/// (join key, primary key) pairs in key order.
trait Sorted {
    fn next(&mut self) -> Result<Option<(u64, u64)>>;
}

/// A table's entries sorted by join key with lidx's external sort: one sorted stream per
/// thread's range of the table, merged.
struct SortedEntries {
    ranges: Vec<SortedRecords>,
    /// The next record of each range, smallest first.
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
}

impl SortedEntries {
    fn refill(&mut self, range: usize) -> Result<()> {
        if let Some((key, entry)) = self.ranges[range].next_record()? {
            self.heap.push(Reverse((key, pk_of(entry), range)));
        }
        Ok(())
    }
}

impl Sorted for SortedEntries {
    fn next(&mut self) -> Result<Option<(u64, u64)>> {
        let Some(Reverse((key, pk, range))) = self.heap.pop() else {
            return Ok(None);
        };
        self.refill(range)?;
        Ok(Some((key, pk)))
    }
}

/// Sorts a table's whole entries by join key (the primary key where `by_key`, else the
/// attribute) with lidx's external sort: each of `threads` threads sorts its range of the
/// table in an equal share of the database's join memory (at least the least a sort
/// works in).
fn sorted_rows(
    db: &LsmDb,
    table: &Tree,
    by_key: bool,
    threads: usize,
    report: &mut LsmJoinReport,
) -> Result<SortedEntries> {
    let entry_size = db.workload().entry_size;
    let share = (db.config().join_memory / threads as u64).max(min_sort_memory_for(entry_size));
    let ranges = each_in_thread(key_ranges(threads), |keys| {
        let options = SortOptions {
            scratch_dir: db.dir().to_path_buf(),
            budget: MemoryBudget::new(share),
        };
        let mut sorter = RecordSorter::new(entry_size, u64::MAX, &options)?;
        let mut buffer = Vec::with_capacity(entry_size);
        table.scan_entries(keys, |pk, attr, k, v| {
            let entry = whole_entry(&mut buffer, k, v, entry_size, table)?;
            Ok(sorter.push(if by_key { pk } else { attr }, entry)?)
        })?;
        Ok(sorter.finish(0, |_| {})?)
    })?;
    for records in &ranges {
        let sort = records.report();
        if sort.runs > 1 {
            report.scratch_bytes += sort.bytes_written;
            report.scratch_files += sort.runs;
        }
    }
    let mut sorted = SortedEntries {
        heap: BinaryHeap::with_capacity(ranges.len()),
        ranges,
    };
    for range in 0..sorted.ranges.len() {
        sorted.refill(range)?;
    }
    Ok(sorted)
}

/// A data table in its own (primary key) order, as (key, key) pairs.
struct ByPrimaryKey<'t> {
    it: DBRawIterator<'t>,
    path: &'t Path,
}

impl Sorted for ByPrimaryKey<'_> {
    fn next(&mut self) -> Result<Option<(u64, u64)>> {
        while let Some(k) = self.it.key() {
            let pk = decode_key(k);
            self.it.next();
            if let Some(pk) = pk {
                return Ok(Some((pk, pk)));
            }
        }
        self.it.status().map_err(rocks(self.path, "read"))?;
        Ok(None)
    }
}

/// A secondary index in attribute order, each posting checked against the data table
/// where the index is a validation one.
struct ByIndex<'d> {
    index: &'d SecondaryIndex,
    table: &'d Tree,
    /// The entries of the attribute being read.
    pairs: std::vec::IntoIter<(u64, u64)>,
    it: DBRawIterator<'d>,
    pending: Vec<u64>,
}

impl<'d> ByIndex<'d> {
    fn new(index: &'d SecondaryIndex, table: &'d Tree) -> Self {
        let mut it = index.tree.iter(false);
        it.seek_to_first();
        ByIndex {
            index,
            table,
            pairs: Vec::new().into_iter(),
            it,
            pending: Vec::new(),
        }
    }

    /// Reads the entries of the next attribute into `pairs`.
    fn refill(&mut self) -> Result<bool> {
        let Some(first) = self.it.key().map(|k| k[..KEY_BYTES.min(k.len())].to_vec()) else {
            self.it
                .status()
                .map_err(rocks(&self.index.tree.path, "read"))?;
            return Ok(false);
        };
        let attr = decode_key(&first).unwrap_or(0);
        self.pending.clear();
        while let Some(k) = self.it.key() {
            if k.get(..KEY_BYTES) != Some(&first[..]) {
                break;
            }
            self.index
                .postings_of(k, self.it.value().unwrap_or_default(), &mut self.pending)?;
            self.it.next();
        }
        if self.index.spec.maintenance == Maintenance::Validation {
            validate(
                self.table,
                attr,
                &mut self.pending,
                &mut LsmJoinReport::default(),
            )?;
        }
        let pairs: Vec<(u64, u64)> = self.pending.iter().map(|&pk| (attr, pk)).collect();
        self.pairs = pairs.into_iter();
        Ok(true)
    }
}

impl Sorted for ByIndex<'_> {
    fn next(&mut self) -> Result<Option<(u64, u64)>> {
        loop {
            if let Some(p) = self.pairs.next() {
                return Ok(Some(p));
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }
}

fn sort_merge<S: JoinSink>(
    db: &LsmDb,
    method: Method,
    threads: usize,
    out: &mut Counting<'_, S>,
    report: &mut LsmJoinReport,
) -> Result<()> {
    let by_key = method.joins_s_key();
    let mut r: Box<dyn Sorted + '_> = match method.shape {
        Shape::Ps | Shape::Ss => Box::new(ByIndex::new(index_of(db, method, Side::R)?, &db.r)),
        _ => Box::new(sorted_rows(db, &db.r, false, threads, report)?),
    };
    let mut s: Box<dyn Sorted + '_> = match method.shape {
        Shape::P | Shape::Ps => {
            let mut it = db.s.iter(false);
            it.seek_to_first();
            Box::new(ByPrimaryKey {
                it,
                path: &db.s.path,
            })
        }
        Shape::Ns | Shape::Ss => Box::new(ByIndex::new(index_of(db, method, Side::S)?, &db.s)),
        Shape::N => Box::new(sorted_rows(db, &db.s, by_key, threads, report)?),
    };
    let (mut a, mut b) = (r.next()?, s.next()?);
    let (mut rs, mut ss) = (Vec::new(), Vec::new());
    while let (Some((ka, _)), Some((kb, _))) = (a, b) {
        if ka < kb {
            a = r.next()?;
        } else if kb < ka {
            b = s.next()?;
        } else {
            rs.clear();
            ss.clear();
            while let Some((_, pk)) = a.filter(|p| p.0 == ka) {
                rs.push(pk);
                a = r.next()?;
            }
            while let Some((_, pk)) = b.filter(|p| p.0 == ka) {
                ss.push(pk);
                b = s.next()?;
            }
            for &pk_r in &rs {
                for &pk_s in &ss {
                    out.emit(ka, pk_r, pk_s)?;
                }
            }
        }
    }
    Ok(())
}
