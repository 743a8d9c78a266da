//! HJ (paper 5, section 3.3): grace hash join. Both sides' whole entries are partitioned to
//! scratch files by the BKDR hash (seed 131) of the 10-byte join key, so that a partition of
//! R fits the join memory; each partition of R goes into a hash table and S's is probed.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

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

/// The most scratch files a hash join keeps open at once, as lidx's grace hash join: fewer
/// threads partition where more would pass it.
pub use lidx::join::grace::MAX_PARTITION_FILES;

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
