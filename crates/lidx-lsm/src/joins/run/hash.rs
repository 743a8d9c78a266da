//! HJ (paper 5, section 3.3): grace hash join. Both sides' whole entries are partitioned to
//! scratch files by the BKDR hash (seed 131) of the 10-byte join key, so that a partition of
//! R fits the join memory; each partition of R goes into a hash table and S's is probed.

use std::collections::HashMap;
use std::path::Path;

use lidx::files::spill::{SpillFile, SpillReader, Spilled};
use lidx::join::JoinSink;

use super::{Counting, LsmJoinReport, each_in_thread, in_parallel, key_ranges, pk_of, whole_entry};
use crate::Result;
use crate::joins::db::LsmDb;
use crate::joins::method::Method;
use crate::joins::rows::{KEY_BYTES, encode_key};

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

pub(super) fn hash_join<S: JoinSink>(
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
        let mut partition: Vec<u8> = Vec::new();
        let mut table: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut record = vec![0u8; width];
        for (r_files, s_files) in partitions {
            partition.clear();
            for mut r in r_files {
                r.read_to_end(&mut partition)?;
            }
            table.clear();
            for (i, r_record) in partition.chunks_exact(width).enumerate() {
                table.entry(key_of(r_record)).or_default().push(i * width);
            }
            for mut s in s_files {
                while s.next_record(&mut record)? {
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
