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
//! - **HHJ**: hybrid hash join (section 5.4): the hash join's partitions, those of R that
//!   fit the join memory kept there and probed as S is read; only the rest are written.
//!   It runs on one thread.
//!
//! One module per algorithm (`inlj`, `sort_merge`, `hash`); this one runs a method, splits
//! a join over threads, and holds what they share (validation, whole entries).
//!
//! A validation index's hits are checked against the data table (Algorithm 2): each
//! distinct primary key of a lookup is read and kept only if its row still holds the
//! attribute. Synchronous indexes are trusted. The sort and hash joins carry whole
//! entries (primary key, attribute and the rest of the row) with their join key, as the
//! paper's code does, so their I/O grows with the entry size as its Table 4 prices it.

use std::ops::Range;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::time::Instant;

use lidx::join::JoinSink;
use serde::{Deserialize, Serialize};

mod hash;
mod inlj;
mod sort_merge;

pub(crate) use hash::HybridLayout;
pub use hash::MAX_PARTITION_FILES;

use super::db::LsmDb;
use super::method::{Algorithm, Method, Side};
use super::rows::{KEY_BYTES, KEY_LIMIT, attr_of, decode_key, encode_key};
use super::tree::{SecondaryIndex, Tree, TreeStats};
use crate::Result;

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
        Algorithm::Inlj => inlj::inlj(db, method, threads, &mut counted, &mut report)?,
        Algorithm::Hj => hash::hash_join(db, method, threads, &mut counted, &mut report)?,
        Algorithm::Hhj => {
            report.threads = 1;
            hash::hybrid_hash_join(db, method, &mut counted, &mut report)?;
        }
        Algorithm::Sj => sort_merge::sort_merge(db, method, threads, &mut counted, &mut report)?,
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

/// Where a join's triples go: the sink itself, or a worker's channel to it.
trait Emit {
    /// Takes one `(attribute, R's key, S's key)` triple.
    fn emit(&mut self, key: u64, r: u64, s: u64) -> Result<()>;
}

impl Emit for Emitter {
    fn emit(&mut self, key: u64, r: u64, s: u64) -> Result<()> {
        self.batch.push((key, r, s));
        if self.batch.len() == EMIT_BATCH {
            self.flush();
        }
        Ok(())
    }
}

impl Emitter {
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

impl<S: JoinSink> Emit for Counting<'_, S> {
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

/// Keeps in `pks` the distinct keys whose row in `table` still holds `attr` (Algorithm 2),
/// and returns the rows read to check them (one per distinct key).
fn validate(table: &Tree, attr: u64, pks: &mut Vec<u64>) -> Result<u64> {
    pks.sort_unstable();
    pks.dedup();
    let mut kept = 0;
    for i in 0..pks.len() {
        let row = table.get(&encode_key(pks[i]))?;
        if row.as_deref().and_then(attr_of) == Some(attr) {
            pks[kept] = pks[i];
            kept += 1;
        }
    }
    let read = pks.len() as u64;
    pks.truncate(kept);
    Ok(read)
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
