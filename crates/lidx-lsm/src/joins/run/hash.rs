//! HJ (paper 5, section 3.3): grace hash join. Both sides' whole entries are partitioned to
//! scratch files by the BKDR hash (seed 131) of the 10-byte join key, so that a partition of
//! R fits the join memory; each partition of R goes into a hash table and S's is probed.
//!
//! HHJ (paper 5, section 5.4, Fig. 13b): hybrid hash join, the same partitions, but those
//! of R that fit the join memory stay in it: R's partitions start resident and, whenever
//! the resident ones pass the memory, the highest-numbered is written out and the rest of
//! its rows follow it to disk. S's rows of a resident partition are probed as they are
//! read; only the spilled partitions of both sides are written and joined afterwards, as
//! grace's. A table that fits the memory writes nothing. (The paper's code writes every
//! partition, so its HHJ joined within about a second of its HJ; this one keeps what fits,
//! as hybrid hash joins do.)

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

/// The partition of a join key among `count`.
fn partition_of(key: u64, count: usize) -> usize {
    bkdr(&encode_key(key)) as usize % count
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
    // partitions for each to fit the budget. (A manifest is a file a user can edit: no
    // overflow on its counts.)
    let r_rows = db.batches().saturating_mul(db.workload().r_rows());
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
const SPILL_BUFFER: usize = 1 << 14;

/// R's rows of one partition while it is resident: its records, `width` bytes each.
type Resident = Vec<u8>;

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
    let r_rows = db.batches().saturating_mul(db.workload().r_rows());
    let count = partitions_for(r_rows, entry_size, memory);
    let mut resident: Vec<Resident> = vec![Vec::new(); count];
    let mut r_spilled: Vec<Option<SpillFile>> = (0..count).map(|_| None).collect();
    // Partitions `spilled_from..` are on disk; the highest resident one goes next.
    let mut spilled_from = count;
    let mut charged = 0u64;
    let mut buffer = Vec::with_capacity(entry_size);
    let all = 0..KEY_LIMIT;
    db.r.scan_entries(all.clone(), |_, attr, k, v| {
        let entry = whole_entry(&mut buffer, k, v, entry_size, &db.r)?;
        let p = partition_of(attr, count);
        if p >= spilled_from {
            return Ok(spill(&mut r_spilled[p], dir)?.push(&[&attr.to_le_bytes(), entry])?);
        }
        resident[p].extend_from_slice(&attr.to_le_bytes());
        resident[p].extend_from_slice(entry);
        charged += per_row;
        while charged > memory && spilled_from > 0 {
            spilled_from -= 1;
            let victim = std::mem::take(&mut resident[spilled_from]);
            let file = spill(&mut r_spilled[spilled_from], dir)?;
            for record in victim.chunks_exact(width) {
                file.push(&[record])?;
            }
            let rows = (victim.len() / width) as u64;
            charged = charged - rows * per_row + 2 * SPILL_BUFFER as u64;
        }
        Ok(())
    })?;
    let mut tables: Vec<HashMap<u64, Vec<usize>>> = (0..spilled_from)
        .map(|p| {
            let mut table = HashMap::new();
            index_records(&resident[p], width, &mut table);
            table
        })
        .collect();
    let by_key = method.joins_s_key();
    let mut s_spilled: Vec<Option<SpillFile>> = (0..count).map(|_| None).collect();
    let mut record = vec![0u8; width];
    db.s.scan_entries(all, |pk, attr, k, v| {
        let key = if by_key { pk } else { attr };
        let entry = whole_entry(&mut buffer, k, v, entry_size, &db.s)?;
        let p = partition_of(key, count);
        if p >= spilled_from {
            return Ok(spill(&mut s_spilled[p], dir)?.push(&[&key.to_le_bytes(), entry])?);
        }
        record[..8].copy_from_slice(&key.to_le_bytes());
        record[8..].copy_from_slice(entry);
        probe(&record, &resident[p], &tables[p], out)
    })?;
    tables.clear();
    resident.clear();
    // The spilled partitions, joined as grace joins them. A partition of R spilled while
    // its S was still to come always has S's file too, though it may hold nothing.
    let mut held = Vec::new();
    let mut table = HashMap::new();
    for (r, s) in r_spilled.into_iter().zip(s_spilled) {
        let (Some(r), s) = (r, s) else { continue };
        report.scratch_files += 1 + u64::from(s.is_some());
        report.scratch_bytes +=
            (r.records() + s.as_ref().map_or(0, SpillFile::records)) * width as u64;
        let s_files = match s {
            Some(s) => vec![s.into_reader(1 << 16)?],
            None => Vec::new(),
        };
        join_spilled(
            (vec![r.into_reader(1 << 16)?], s_files),
            width,
            &mut held,
            &mut table,
            out,
        )?;
    }
    Ok(())
}

/// The scratch file of a spilled partition, made at its first record.
fn spill<'f>(file: &'f mut Option<SpillFile>, dir: &Path) -> Result<&'f mut SpillFile> {
    if file.is_none() {
        *file = Some(SpillFile::new(dir, Spilled::HashPartition, SPILL_BUFFER)?);
    }
    file.as_mut().ok_or_else(|| {
        lidx::Error::Internal {
            problem: "a spilled partition without its file".into(),
        }
        .into()
    })
}
