//! HJ (paper 5, section 3.3): grace hash join. Both sides' whole entries are partitioned to
//! scratch files by the BKDR hash (seed 131) of the 10-byte join key, so that a partition of
//! R fits the join memory; each partition of R goes into a hash table and S's is probed.
//!
//! HHJ (paper 5, section 5.4, Fig. 13b): hybrid hash join. R's rows are dealt by the same
//! hash to a resident set and to as few spilled partitions as let each fit the memory when
//! joined after, the resident set getting what the memory holds once the partitions' file
//! buffers are charged ([`HybridLayout`]). S's rows of the resident set are probed as they
//! are read; only the spilled partitions of both sides are written and joined afterwards,
//! as grace's, and S's rows whose partition of R is empty are not written at all. Should
//! the resident set outgrow its share (skewed keys), it is written out whole and its
//! buckets join on disk too. A table that fits the memory writes nothing. (The paper's
//! code writes every partition, so its HHJ joined within about a second of its HJ; this
//! one keeps what fits, as hybrid hash joins do.)
use std::collections::HashMap;
use std::path::Path;

use lidx::files::spill::{SpillFile, SpillReader, Spilled};
use lidx::join::JoinSink;

use super::{
    Counting, Emit, LsmJoinReport, each_in_thread, in_parallel, key_ranges, pk_of, whole_entry,
};
use crate::Result;
use crate::joins::db::LsmDb;
use crate::joins::method::Method;
use crate::joins::rows::{KEY_BYTES, KEY_LIMIT, encode_key};

/// BKDR hash (seed 131) of a 10-byte key, as paper 5's hash join partitions.
fn bkdr(key: &[u8; KEY_BYTES]) -> u32 {
    key.iter()
        .fold(0u32, |h, &b| h.wrapping_mul(131).wrapping_add(u32::from(b)))
}

/// Records of (join key, whole entry), spilled to one scratch file per partition
/// (`lidx::files::spill`, as lidx's joins spill their output).
struct Partitions {
    files: Vec<SpillFile>,
}

impl Partitions {
    fn new(dir: &Path, count: usize) -> Result<Partitions> {
        let files = (0..count)
            .map(|_| SpillFile::new(dir, Spilled::HashPartition, 1 << 14).map_err(Into::into))
            .collect::<Result<Vec<_>>>()?;
        Ok(Partitions { files })
    }

    fn push(&mut self, key: u64, entry: &[u8]) -> Result<()> {
        let p = bkdr(&encode_key(key)) as usize % self.files.len();
        match self.files.get_mut(p) {
            Some(file) => Ok(file.push(&[&key.to_le_bytes(), entry])?),
            None => Err(lidx::Error::Internal {
                problem: format!("hash partition {p} of {}", self.files.len()),
            }
            .into()),
        }
    }

    /// Records written.
    fn records(&self) -> u64 {
        self.files.iter().map(SpillFile::records).sum()
    }

    /// The partitions, each read from its start.
    fn into_readers(self) -> Result<Vec<SpillReader>> {
        self.files
            .into_iter()
            .map(|f| f.into_reader(1 << 16).map_err(Into::into))
            .collect()
    }
}

/// One partition's files of R and of S, one of each per thread that partitioned.
type PartitionFiles = (Vec<SpillReader>, Vec<SpillReader>);

/// The most scratch files a hash join keeps open at once, as lidx's grace hash join: fewer
/// threads partition where more would pass it.
pub use lidx::join::grace::MAX_PARTITION_FILES;

/// The join key of a partition record.
fn key_of(record: &[u8]) -> u64 {
    let mut key = [0u8; 8];
    key.copy_from_slice(&record[..8]);
    u64::from_le_bytes(key)
}

/// Bytes a row of R held in a partition's hash table is charged: its record (join key and
/// whole entry) and about 48 bytes of the table's key and vector.
fn held_bytes(entry_size: usize) -> u64 {
    (8 + entry_size + 48) as u64
}

/// Partitions for `rows` rows of R so that one fits `memory`, as grace sizes them.
fn partitions_for(rows: u64, entry_size: usize, memory: u64) -> usize {
    rows.saturating_mul(held_bytes(entry_size))
        .div_ceil(memory.max(1))
        .clamp(1, 4096) as usize
}

/// Records of R (`width` bytes each, in `held`) indexed by join key: where each starts.
fn index_records(held: &[u8], width: usize, table: &mut HashMap<u64, Vec<usize>>) {
    table.clear();
    for (i, record) in held.chunks_exact(width).enumerate() {
        table.entry(key_of(record)).or_default().push(i * width);
    }
}

/// Emits the pairs of S's `record` with R's records in `held` that `table` indexes.
fn probe(
    record: &[u8],
    held: &[u8],
    table: &HashMap<u64, Vec<usize>>,
    out: &mut impl Emit,
) -> Result<()> {
    let key = key_of(record);
    if let Some(rs) = table.get(&key) {
        let pk_s = pk_of(&record[8..]);
        for &at in rs {
            out.emit(key, pk_of(&held[at + 8..]), pk_s)?;
        }
    }
    Ok(())
}

/// Joins one spilled partition: R's files read whole into `held` and indexed, S's probed.
fn join_spilled(
    (r_files, s_files): PartitionFiles,
    width: usize,
    held: &mut Vec<u8>,
    table: &mut HashMap<u64, Vec<usize>>,
    out: &mut impl Emit,
) -> Result<()> {
    held.clear();
    for mut r in r_files {
        r.read_to_end(held)?;
    }
    index_records(held, width, table);
    let mut record = vec![0u8; width];
    for mut s in s_files {
        while s.next_record(&mut record)? {
            probe(&record, held, table, out)?;
        }
    }
    Ok(())
}

pub(super) fn hash_join<S: JoinSink>(
    db: &LsmDb,
    method: Method,
    threads: usize,
    out: &mut Counting<'_, S>,
    report: &mut LsmJoinReport,
) -> Result<()> {
    let dir = db.dir();
    let entry_size = db.workload().entry_size;
    // A partition of R is held whole, its records indexed by a hash table: enough
    // partitions for each to fit the budget, for the rows R holds (RocksDB's estimate).
    let r_rows = db.r.estimated_rows()?;
    // Threads join partitions at the same time: each gets its share of the memory.
    let memory = (db.config().join_memory / threads as u64).max(1);
    let count = partitions_for(r_rows, entry_size, memory);
    let by_key = method.joins_s_key();
    // Each thread partitions its range of both tables into files of its own, as many
    // threads as keep the files open at once within bounds.
    let partitioners = threads.min((MAX_PARTITION_FILES / (2 * count)).max(1));
    let parted = each_in_thread(key_ranges(partitioners), |keys| {
        let mut buffer = Vec::with_capacity(entry_size);
        let mut r_parts = Partitions::new(dir, count)?;
        db.r.scan_entries(keys.clone(), |_, attr, k, v| {
            let entry = whole_entry(&mut buffer, k, v, entry_size, &db.r)?;
            r_parts.push(attr, entry)
        })?;
        let mut s_parts = Partitions::new(dir, count)?;
        db.s.scan_entries(keys, |pk, attr, k, v| {
            let key = if by_key { pk } else { attr };
            s_parts.push(key, whole_entry(&mut buffer, k, v, entry_size, &db.s)?)
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
        report.scratch_bytes += (r_parts.records() + s_parts.records()) * width as u64;
        for (p, (r, s)) in r_parts
            .into_readers()?
            .into_iter()
            .zip(s_parts.into_readers()?)
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
        let mut held: Vec<u8> = Vec::new();
        let mut table: HashMap<u64, Vec<usize>> = HashMap::new();
        for files in partitions {
            join_spilled(files, width, &mut held, &mut table, out)?;
        }
        Ok(())
    })
}

/// The buffer of a spilled partition's scratch file, charged against the join memory.
const SPILL_BUFFER: u64 = 1 << 14;

/// Hash buckets a hybrid hash join deals to its resident set and its spilled partitions
/// (a prime, so the BKDR hash's low bits do not decide alone).
const BUCKETS: u64 = 4093;

/// How a hybrid hash join lays out R's `held` bytes (as the hash joins charge a row) in
/// `memory`: `spilled` partitions, each to fit the memory when joined after, and a resident
/// share of what is left once their file buffers (one for R, one for S) are charged:
/// `spilled · memory + (memory − 2 · spilled · buffer) ≥ held`, the fewest that do. The
/// resident set is planned at that room over 1.2 (the classic fudge factor), so the hash's
/// unevenness seldom overflows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct HybridLayout {
    /// Partitions of R written to disk.
    pub(crate) spilled: u64,
    /// Bytes of R planned to stay in memory.
    pub(crate) resident: u64,
    /// Bytes the resident set may take before it is written out too.
    pub(crate) room: u64,
}

/// The share of the room a resident set is planned to fill.
const FUDGE: f64 = 1.2;

impl HybridLayout {
    pub(crate) fn of(held: u64, memory: u64) -> HybridLayout {
        if held <= memory {
            return HybridLayout {
                spilled: 0,
                resident: held,
                room: memory,
            };
        }
        let share = memory.saturating_sub(2 * SPILL_BUFFER).max(1);
        let mut spilled = (held - memory).div_ceil(share).clamp(1, BUCKETS - 1);
        while spilled < BUCKETS - 1
            && spilled * memory + memory.saturating_sub(2 * spilled * SPILL_BUFFER) < held
        {
            spilled += 1;
        }
        let room = memory.saturating_sub(2 * spilled * SPILL_BUFFER);
        HybridLayout {
            spilled,
            resident: ((room as f64 / FUDGE) as u64).min(held),
            room,
        }
    }

    /// The share of R kept in memory.
    pub(crate) fn resident_share(&self, held: u64) -> f64 {
        if held == 0 {
            1.0
        } else {
            self.resident as f64 / held as f64
        }
    }
}

/// Where a hybrid hash join sends a join key: the resident set, or a spilled partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Destination {
    Resident,
    Spilled(usize),
}

/// The hybrid hash join's deal of hash buckets: the first `resident` buckets stay in
/// memory, the others go round the spilled partitions.
struct Deal {
    resident: u64,
    spilled: u64,
}

impl Deal {
    fn of(layout: HybridLayout, held: u64) -> Deal {
        let resident = if layout.spilled == 0 {
            BUCKETS
        } else {
            ((BUCKETS as f64 * layout.resident_share(held)) as u64).min(BUCKETS - 1)
        };
        Deal {
            resident,
            spilled: layout.spilled,
        }
    }

    fn of_key(&self, key: u64) -> Destination {
        let bucket = u64::from(bkdr(&encode_key(key))) % BUCKETS;
        if bucket < self.resident {
            Destination::Resident
        } else {
            Destination::Spilled(((bucket - self.resident) % self.spilled.max(1)) as usize)
        }
    }
}

/// R's rows kept in memory, or the partition they went to when they outgrew it.
enum ResidentSet {
    /// The records (join key and whole entry), `width` bytes each, and their bytes as
    /// charged.
    Held(Vec<u8>, u64),
    /// Written out to the spilled partition of this number (the last), with every later
    /// row of a resident bucket, of R and of S.
    Spilled(usize),
}

pub(super) fn hybrid_hash_join<S: JoinSink>(
    db: &LsmDb,
    method: Method,
    out: &mut Counting<'_, S>,
    report: &mut LsmJoinReport,
) -> Result<()> {
    let dir = db.dir();
    let entry_size = db.workload().entry_size;
    let width = 8 + entry_size;
    let per_row = held_bytes(entry_size);
    let memory = db.config().join_memory;
    // The bytes R's rows take held (RocksDB's estimate of the rows, never below them).
    let held = db.r.estimated_rows()?.saturating_mul(per_row);
    let layout = HybridLayout::of(held, memory);
    let deal = Deal::of(layout, held);
    // The spilled partitions, and one more for the resident set should it outgrow its
    // share (skewed keys, or more rows than the estimate).
    let files = layout.spilled as usize + 1;
    let mut r_spilled: Vec<Option<SpillFile>> = (0..files).map(|_| None).collect();
    // Room for the rows the resident share holds, so that it does not grow by doubling.
    let resident_rows = (layout.room.min(held) / per_row.max(1)) as usize;
    let mut resident = ResidentSet::Held(Vec::with_capacity(resident_rows * width), 0);
    let mut buffer = Vec::with_capacity(entry_size);
    let all = 0..KEY_LIMIT;
    db.r.scan_entries(all.clone(), |_, attr, k, v| {
        let entry = whole_entry(&mut buffer, k, v, entry_size, &db.r)?;
        let p = match (deal.of_key(attr), &mut resident) {
            (Destination::Spilled(p), _)
            | (Destination::Resident, &mut ResidentSet::Spilled(p)) => p,
            (Destination::Resident, ResidentSet::Held(records, charged)) => {
                records.extend_from_slice(&attr.to_le_bytes());
                records.extend_from_slice(entry);
                *charged += per_row;
                if *charged > layout.room.max(per_row) {
                    // Over its share: the resident set goes to the last partition.
                    let last = files - 1;
                    let file = spill(&mut r_spilled[last], dir)?;
                    for record in records.chunks_exact(width) {
                        file.push(&[record])?;
                    }
                    resident = ResidentSet::Spilled(last);
                }
                return Ok(());
            }
        };
        Ok(spill(&mut r_spilled[p], dir)?.push(&[&attr.to_le_bytes(), entry])?)
    })?;
    let mut table = HashMap::new();
    if let ResidentSet::Held(records, _) = &resident {
        index_records(records, width, &mut table);
    }
    let by_key = method.joins_s_key();
    let mut s_spilled: Vec<Option<SpillFile>> = (0..files).map(|_| None).collect();
    let mut record = vec![0u8; width];
    db.s.scan_entries(all, |pk, attr, k, v| {
        let key = if by_key { pk } else { attr };
        let entry = whole_entry(&mut buffer, k, v, entry_size, &db.s)?;
        let p = match (deal.of_key(key), &resident) {
            (Destination::Spilled(p), _) | (Destination::Resident, &ResidentSet::Spilled(p)) => p,
            (Destination::Resident, ResidentSet::Held(records, _)) => {
                record[..8].copy_from_slice(&key.to_le_bytes());
                record[8..].copy_from_slice(entry);
                return probe(&record, records, &table, out);
            }
        };
        // S's rows whose partition of R is empty meet nothing: they are not written.
        if r_spilled[p].is_none() {
            return Ok(());
        }
        Ok(spill(&mut s_spilled[p], dir)?.push(&[&key.to_le_bytes(), entry])?)
    })?;
    drop(table);
    drop(resident);
    // The spilled partitions, joined as grace joins them; one whose S file was never made
    // meets nothing.
    let mut held_records = Vec::new();
    let mut table = HashMap::new();
    for (r, s) in r_spilled.into_iter().zip(s_spilled) {
        let Some(r) = r else { continue };
        report.scratch_files += 1 + u64::from(s.is_some());
        report.scratch_bytes +=
            (r.records() + s.as_ref().map_or(0, SpillFile::records)) * width as u64;
        let Some(s) = s else { continue };
        join_spilled(
            (vec![r.into_reader(1 << 16)?], vec![s.into_reader(1 << 16)?]),
            width,
            &mut held_records,
            &mut table,
            out,
        )?;
    }
    Ok(())
}

/// The scratch file of a spilled partition, made at its first record.
fn spill<'f>(file: &'f mut Option<SpillFile>, dir: &Path) -> Result<&'f mut SpillFile> {
    if file.is_none() {
        *file = Some(SpillFile::new(
            dir,
            Spilled::HashPartition,
            SPILL_BUFFER as usize,
        )?);
    }
    file.as_mut().ok_or_else(|| {
        lidx::Error::Internal {
            problem: "a spilled partition without its file".into(),
        }
        .into()
    })
}
