//! The unclustered learned partition index of paper 1, section 4.4 (Fig. 4), for tables
//! that are not sorted.
//!
//! Built in two passes over the table:
//! 1. **Sample**: a uniform random sample of the tuples' keys (1% by default), sorted in
//!    memory, trains a [`Pgm`] from the index family.
//! 2. **Partition**: every tuple goes to partition `⌊rank̂(k) / s · P⌋`, where `rank̂(k)`
//!    is the model's predicted position of `k` among the `s` sampled keys and `P` is chosen
//!    so that an expected partition fills one 4 KiB page. The prediction never decreases
//!    as the key grows ([`Ranker`]), so partitions are disjoint key ranges in key order. Each partition's writer buffers a few tuples (8, as in the paper) and appends
//!    them to its page; a full page continues on an overflow page at the end of the file.
//!
//! Partitions stay unsorted: they are the leaves of an unclustered index. What a partition
//! holds for a tuple is its [`Entries`]: the key and the tuple's position in the table (the
//! paper's index, "keys and a pointer to its table entry", section 5.4), or the tuple itself
//! (a partly sorted copy of the table). A key's lookup reads exactly its partition's pages. The index (model and partition map) and the pages
//! live in one file, written atomically (format in [`file`] and docs/FORMAT.md).

pub mod btree;
mod file;
pub mod record;
pub mod sort;
#[cfg(test)]
mod tests;

use std::path::Path;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::files::AtomicFile;
use crate::index::{Index, Pgm, PgmParams};
use crate::memory::MemoryBudget;
use crate::storage::{BLOCK_SIZE, TUPLE_SIZE, Table, Tuple};
use crate::{Error, Result};

pub use file::{MAGIC, PartitionFile, VERSION};
pub use record::{Operation, UnsortedRecord};

/// Tuples in a page of the partitions file: one 4 KiB block.
pub const PAGE_TUPLES: u64 = (BLOCK_SIZE / TUPLE_SIZE) as u64;

/// The most tuples a partition's writer buffers: 16 pages.
pub const MAX_FLUSH_TUPLES: u64 = 16 * PAGE_TUPLES;

/// What an unclustered index (a partition index or a B+tree by inserts) holds for each
/// tuple besides its key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Entries {
    /// The tuple's position in the table: a pointer a join follows to fetch the value from
    /// the table (paper 1, section 5.4: "The index stores keys and a pointer to its table
    /// entry"). 16 bytes an entry.
    #[default]
    Pointers,
    /// The tuple's value, so that a join reads values from the index and never from the
    /// table: a clustered copy. A partition holds (key, value), 16 bytes; a B+tree's leaf
    /// (key, position, value), 24 bytes, the position ordering equal keys as a clustered
    /// B+tree on a non-unique key orders them by a row id.
    Tuples,
}

impl Entries {
    /// Both, pointers first.
    pub const ALL: [Entries; 2] = [Entries::Pointers, Entries::Tuples];

    /// The name the command line and the records give it: `pointers` or `tuples`.
    pub fn name(self) -> &'static str {
        match self {
            Entries::Pointers => "pointers",
            Entries::Tuples => "tuples",
        }
    }

    /// The word files store for it: 0 for pointers, 1 for tuples.
    pub(crate) fn code(self) -> u64 {
        match self {
            Entries::Pointers => 0,
            Entries::Tuples => 1,
        }
    }

    /// The entries a file's word names, if any.
    pub(crate) fn from_code(code: u64) -> Option<Entries> {
        match code {
            0 => Some(Entries::Pointers),
            1 => Some(Entries::Tuples),
            _ => None,
        }
    }
}

impl std::fmt::Display for Entries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Entries {
    type Err = Error;

    fn from_str(s: &str) -> Result<Entries> {
        Entries::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| Error::param("entries", format!("{s:?} is not pointers or tuples")))
    }
}

/// How a partition index is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PartitionParams {
    /// What a partition holds for each tuple (pointers, as in paper 1, by default).
    pub entries: Entries,
    /// Fraction of the tuples whose keys train the model (paper 1: 1%), in (0, 1].
    pub sample_fraction: f64,
    /// The model's error bound, in positions of the sample.
    pub epsilon: u64,
    /// Tuples an expected partition holds: one page (256) by default, as in the paper.
    pub partition_tuples: u64,
    /// Tuples a partition's writer buffers before it writes them (paper 1: 8), at most
    /// [`MAX_FLUSH_TUPLES`].
    pub flush_tuples: u64,
    /// Seed of the sample.
    pub seed: u64,
}

impl Default for PartitionParams {
    fn default() -> Self {
        PartitionParams {
            entries: Entries::Pointers,
            sample_fraction: 0.01,
            epsilon: 4,
            partition_tuples: PAGE_TUPLES,
            flush_tuples: 8,
            seed: 42,
        }
    }
}

impl PartitionParams {
    fn check(&self) -> Result<()> {
        if !(self.sample_fraction > 0.0 && self.sample_fraction <= 1.0) {
            return Err(Error::param(
                "sample fraction",
                format!("{} is not in (0, 1]", self.sample_fraction),
            ));
        }
        if self.partition_tuples == 0 {
            return Err(Error::param("partition size", "must be at least one tuple"));
        }
        if self.flush_tuples == 0 || self.flush_tuples > MAX_FLUSH_TUPLES {
            return Err(Error::param(
                "tuples per flush",
                format!("must be in 1 ..= {MAX_FLUSH_TUPLES} (16 pages)"),
            ));
        }
        Ok(())
    }
}

/// A PGM's predictions made non-decreasing in the key, which disjoint partitions need: each
/// bottom segment's prediction is held between the running maximum of the segments' starts
/// at it and at the next one (capped at `n`). A held prediction stays within ε of the key's
/// rank: every segment starts at most ε (plus the float slack) above its first key's rank,
/// and ranks grow.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranker {
    model: Pgm,
    /// `floors[j]`: the largest start among segments `0..=j`, at most `n`; then `n`.
    floors: Vec<u64>,
}

impl Ranker {
    /// The ranker of `model`.
    pub fn new(model: Pgm) -> Ranker {
        let n = model.len();
        let mut floors = model.segment_starts();
        let mut highest = 0;
        for f in &mut floors {
            highest = highest.max(*f).min(n);
            *f = highest;
        }
        floors.push(n);
        Ranker { model, floors }
    }

    /// The approximate rank of `key` among the model's keys: 0 at or below the smallest,
    /// `n` above the largest, never decreasing as `key` grows.
    #[inline]
    pub fn rank(&self, key: u64) -> u64 {
        match self.model.locate(key) {
            Some((j, p)) => match (self.floors.get(j), self.floors.get(j + 1)) {
                (Some(&lo), Some(&hi)) => p.clamp(lo, hi),
                _ => p,
            },
            None => self.model.predict(key),
        }
    }

    /// The model.
    pub fn model(&self) -> &Pgm {
        &self.model
    }
}

/// The in-memory half of a partition index: the model and the partition map.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionIndex {
    ranker: Ranker,
    /// What the pages hold for each tuple besides its key.
    entries: Entries,
    /// Tuples in the table.
    n: u64,
    /// Tuples per partition.
    counts: Vec<u64>,
    /// Partition `p`'s pages are `pages[page_start[p]..page_start[p + 1]]`, in order.
    page_start: Vec<u64>,
    pages: Vec<u64>,
    /// CRC32C of each page's 4096 bytes, by page number.
    page_crcs: Vec<u32>,
}

impl PartitionIndex {
    /// The partition that holds `key`'s tuples, if the table has any: non-decreasing in
    /// `key`, below [`partitions`](Self::partitions).
    #[inline]
    pub fn partition_of(&self, key: u64) -> u64 {
        partition_of(&self.ranker, self.partitions(), key)
    }

    /// What each partition holds for a tuple besides its key: its position in the table, or
    /// its value (the second word of each [`Tuple`] a partition is read as).
    pub fn entries(&self) -> Entries {
        self.entries
    }

    /// Number of partitions (at least 1).
    pub fn partitions(&self) -> u64 {
        self.counts.len() as u64
    }

    /// Tuples in the table.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True when the table held no tuples.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Tuples in partition `p`.
    pub fn count(&self, p: u64) -> u64 {
        self.counts.get(p as usize).copied().unwrap_or(0)
    }

    /// The page numbers of partition `p`, in the order its tuples fill them.
    pub fn pages_of(&self, p: u64) -> &[u64] {
        let p = p as usize;
        match (self.page_start.get(p), self.page_start.get(p + 1)) {
            (Some(&a), Some(&b)) => self.pages.get(a as usize..b as usize).unwrap_or_default(),
            _ => &[],
        }
    }

    /// Pages in the file.
    pub fn total_pages(&self) -> u64 {
        self.page_crcs.len() as u64
    }

    /// The model trained on the sample.
    pub fn model(&self) -> &Pgm {
        &self.ranker.model
    }

    /// Bytes the index holds in memory: the model with its floors, and the partition map
    /// (counts, page lists, page checksums).
    pub fn size_in_bytes(&self) -> u64 {
        self.ranker.model.size_in_bytes()
            + 8 * (self.ranker.floors.len()
                + self.counts.len()
                + self.page_start.len()
                + self.pages.len()) as u64
            + 4 * self.page_crcs.len() as u64
    }

    /// How evenly the tuples spread over the partitions.
    pub fn skew(&self) -> Skew {
        let largest = self.counts.iter().copied().max().unwrap_or(0);
        Skew {
            partitions: self.partitions(),
            largest,
            mean: self.n as f64 / self.partitions().max(1) as f64,
            empty: self.counts.iter().filter(|&&c| c == 0).count() as u64,
            overflowed: self.counts.iter().filter(|&&c| c > PAGE_TUPLES).count() as u64,
            pages: self.total_pages(),
        }
    }
}

/// `⌊rank(key) · P / s⌋`, capped at `P - 1`, with `s` the sample's size.
#[inline]
pub(crate) fn partition_of(ranker: &Ranker, partitions: u64, key: u64) -> u64 {
    let s = ranker.model.len().max(1);
    let p = u128::from(ranker.rank(key)) * u128::from(partitions) / u128::from(s);
    (p as u64).min(partitions.saturating_sub(1))
}

/// How the tuples spread over the partitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Skew {
    /// Partitions.
    pub partitions: u64,
    /// Tuples in the largest.
    pub largest: u64,
    /// Mean tuples per partition.
    pub mean: f64,
    /// Partitions with no tuples.
    pub empty: u64,
    /// Partitions that overflowed their first page.
    pub overflowed: u64,
    /// Pages in the file (one per partition, plus the overflow pages).
    pub pages: u64,
}

/// What a build did, pass by pass.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BuildReport {
    /// Keys sampled.
    pub sampled: u64,
    /// Bytes read by the sampling pass and by the partitioning pass.
    pub bytes_read: (u64, u64),
    /// Bytes written: pages, the index and the header.
    pub bytes_written: u64,
    /// Write calls: the flushes of buffered tuples, then the index and the header.
    pub write_calls: u64,
    /// 4 KiB pages the writes touched (a flush of a few tuples touches one or two; the
    /// index's pages and the header one each): the page writes of a device that writes
    /// whole pages, had every write reached it.
    pub pages_written: u64,
    /// Bytes of the file: the header, every page (the overflow pages too) and the index.
    pub file_bytes: u64,
    /// Seconds of the sampling pass (with the model's training) and of the partitioning
    /// pass (with writing the file).
    pub seconds: (f64, f64),
    /// The most bytes reserved from the budget at once.
    pub peak_reserved: u64,
}

impl BuildReport {
    /// Bytes written per byte of the table (16 per tuple): the write amplification.
    pub fn write_amplification(&self) -> f64 {
        self.bytes_written as f64 / self.bytes_read.1.max(1) as f64
    }
}

/// Bytes of input read at a time, at most.
const READ_CHUNK: usize = 1 << 20;

/// The read chunk `spare` bytes allow: at most [`READ_CHUNK`], at least a block, in blocks.
pub(crate) fn read_chunk(spare: u64) -> usize {
    let bytes = spare.clamp(BLOCK_SIZE as u64, READ_CHUNK as u64) as usize;
    bytes - bytes % BLOCK_SIZE
}

/// Keys a build samples from `n` tuples.
pub(crate) fn sample_size(n: u64, params: &PartitionParams) -> u64 {
    if n == 0 {
        0
    } else {
        ((n as f64 * params.sample_fraction).round() as u64).clamp(1, n)
    }
}

/// Bytes a partitioning's sample takes per key (the key, its position, and the drawing's
/// bookkeeping).
const SAMPLE_BYTES_PER_KEY: u64 = 24;

/// The smallest budget [`build`] works with on `n` tuples: a block of input, and the larger
/// of the sample and the partitions' write buffers (the model, held with the buffers, is
/// reserved when it is known).
pub fn min_build_memory(n: u64, params: &PartitionParams) -> u64 {
    let partitions = n.div_ceil(params.partition_tuples.max(1)).max(1);
    let writers = partitions
        .saturating_mul(params.flush_tuples * TUPLE_SIZE as u64 + WRITER_BYTES_PER_PARTITION);
    let sample = sample_size(n, params) * SAMPLE_BYTES_PER_KEY;
    BLOCK_SIZE as u64 + sample.max(writers)
}

/// Builds the partition index of the unsorted (key, value) `table` into a new file at
/// `out` (written atomically), within `budget`: the sample and the model, the partition
/// map, and one write buffer of `flush_tuples` tuples per partition are reserved from it.
pub fn build(
    table: &Table,
    out: &Path,
    params: &PartitionParams,
    budget: &MemoryBudget,
    progress: impl FnMut(u64),
) -> Result<(PartitionIndex, BuildReport)> {
    build_sampled(table, out, params, budget, Sampling::Uniform, progress)
}

/// How a partitioning draws the keys its model learns from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sampling {
    /// Tuples drawn uniformly at random, in a pass over the table (paper 1).
    Uniform,
    /// Every tuple of whole blocks spread evenly over the table (a random first one), read
    /// one block each: no pass, for a learned sort, where a sample that misjudges a range
    /// costs time, never correctness.
    Blocks,
}

/// [`build`], with the model learned from a sample drawn as `sampling` says.
pub(crate) fn build_sampled(
    table: &Table,
    out: &Path,
    params: &PartitionParams,
    budget: &MemoryBudget,
    sampling: Sampling,
    mut progress: impl FnMut(u64),
) -> Result<(PartitionIndex, BuildReport)> {
    params.check()?;
    table.require_pairs("building a partition index")?;
    crate::files::refuse_same_file(table.path(), out)?;
    let mut report = BuildReport::default();
    let n = table.len();
    let need = min_build_memory(n, params);
    if budget.available() < need {
        return Err(Error::param(
            "memory limit",
            format!(
                "{} bytes left of {} cannot partition {n} tuples: it needs at least {need} bytes (a block of input, the sample, and the partitions' write buffers)",
                budget.available(),
                budget.limit()
            ),
        ));
    }
    let started = std::time::Instant::now();

    // Pass 1: a sample of the keys, sorted, and the model trained on it.
    let amount = sample_size(n, params);
    // Half of what the minimum leaves for the read chunk, the rest for the model.
    let chunk = read_chunk((budget.available() - need) / 2 + BLOCK_SIZE as u64);
    let _chunk_held = budget.reserve(chunk as u64, "a partitioning's read buffer")?;
    let sample_held = budget.reserve(amount * SAMPLE_BYTES_PER_KEY, "a partitioning's sample")?;
    let sample = match sampling {
        Sampling::Uniform => {
            let mut picked = pick_positions(n, amount, params.seed)?
                .into_iter()
                .peekable();
            let mut sample: Vec<u64> = Vec::with_capacity(amount as usize);
            let mut position = 0u64;
            table.scan_in_chunks(chunk, |tuples| {
                report.bytes_read.0 += (tuples.len() * TUPLE_SIZE) as u64;
                let end = position + tuples.len() as u64;
                while let Some(&at) = picked.peek().filter(|&&at| at < end) {
                    sample.push(tuples[(at - position) as usize].key);
                    picked.next();
                }
                position = end;
                progress(position);
                Ok(())
            })?;
            sample
        }
        Sampling::Blocks => {
            let (sample, read) = block_sample(table, amount, params.seed)?;
            report.bytes_read.0 += read;
            progress(n);
            sample
        }
    };
    report.sampled = sample.len() as u64;
    let ranker = train(sample, params)?;
    drop(sample_held);
    let model_bytes = ranker.model.size_in_bytes() + 8 * ranker.floors.len() as u64;
    let _model_held = budget.reserve(model_bytes, "a partitioning's model")?;
    report.seconds.0 = started.elapsed().as_secs_f64();

    // Pass 2: every tuple to its partition's buffer; full buffers to the partition's page.
    let started = std::time::Instant::now();
    let partitions = n.div_ceil(params.partition_tuples).max(1);
    let per_partition = params.flush_tuples * TUPLE_SIZE as u64 + WRITER_BYTES_PER_PARTITION;
    let _writers_held = budget.reserve(
        partitions.saturating_mul(per_partition),
        format!("{partitions} partitions' write buffers ({per_partition} bytes each)"),
    )?;
    let mut writer = PageWriter::new(out, partitions, params.flush_tuples)?;
    table.scan_in_chunks(chunk, |tuples| {
        report.bytes_read.1 += (tuples.len() * TUPLE_SIZE) as u64;
        match params.entries {
            Entries::Tuples => {
                for &t in tuples {
                    writer.push(partition_of(&ranker, partitions, t.key), t)?;
                }
            }
            Entries::Pointers => {
                for &t in tuples {
                    let pointer = Tuple {
                        key: t.key,
                        value: writer.tuples,
                    };
                    writer.push(partition_of(&ranker, partitions, t.key), pointer)?;
                }
            }
        }
        progress(n + writer.tuples);
        Ok(())
    })?;
    let index = writer.finish(ranker, params.entries, n, &mut report)?;
    report.seconds.1 = started.elapsed().as_secs_f64();
    report.peak_reserved = budget.peak();
    Ok((index, report))
}

/// The keys of whole blocks spread evenly over `table` (a random first one, from `seed`),
/// as many blocks as `amount` keys fill (at most `amount` keys, since the sample's memory
/// is reserved for that many), and the bytes read.
fn block_sample(table: &Table, amount: u64, seed: u64) -> Result<(Vec<u64>, u64)> {
    let n = table.len();
    if n == 0 || amount == 0 {
        return Ok((Vec::new(), 0));
    }
    let wanted = (amount / PAGE_TUPLES).max(1);
    // Keys taken from each block: a whole one, or all of `amount` when it is smaller.
    let per_block = amount.min(PAGE_TUPLES);
    let blocks = n.div_ceil(PAGE_TUPLES);
    let step = (blocks / wanted).max(1);
    let mut reader = crate::storage::BlockReader::new(table, crate::storage::ReadMode::Buffered)?;
    let mut keys = Vec::with_capacity(amount as usize);
    for b in (seed % step..blocks)
        .step_by(step as usize)
        .take(wanted as usize)
    {
        let lo = b * PAGE_TUPLES;
        let hi = (lo + per_block).min(n);
        let run = reader.read_window(lo, hi)?;
        let at = run.first_position;
        keys.extend(
            run.tuples[(lo - at) as usize..(hi - at) as usize]
                .iter()
                .map(|t| t.key),
        );
    }
    Ok((keys, reader.stats().bytes))
}

/// The monotone ranker of a model trained on the sampled keys `sample` (any order).
pub(crate) fn train(mut sample: Vec<u64>, params: &PartitionParams) -> Result<Ranker> {
    sample.sort_unstable();
    let model = Pgm::build(
        &sample,
        &PgmParams {
            epsilon: params.epsilon,
            ..PgmParams::default()
        },
    )?;
    Ok(Ranker::new(model))
}

/// `amount` distinct positions below `n`, drawn uniformly, in increasing order.
pub(crate) fn pick_positions(n: u64, amount: u64, seed: u64) -> Result<Vec<u64>> {
    let n_usize = usize::try_from(n)
        .map_err(|_| Error::param("table size", "too many tuples to sample on this machine"))?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut picked: Vec<u64> = rand::seq::index::sample(&mut rng, n_usize, amount as usize)
        .into_iter()
        .map(|i| i as u64)
        .collect();
    picked.sort_unstable();
    Ok(picked)
}

/// Pass 2's writer. Per partition: a buffer of `flush_tuples` tuples (one flat array), the
/// tuples written so far and the page being filled; per page: the next page of its
/// partition and its checksum so far. A partition's first page is page `p`; overflow pages
/// are appended after the first `P`.
struct PageWriter {
    out: AtomicFile,
    flush_tuples: usize,
    buffers: Vec<Tuple>,
    buffered: Vec<u16>,
    counts: Vec<u64>,
    last_page: Vec<u64>,
    next_page: Vec<u64>,
    page_crcs: Vec<u32>,
    tuples: u64,
    bytes_written: u64,
    write_calls: u64,
    pages_written: u64,
}

/// `next_page` of a partition's last page.
const NO_PAGE: u64 = u64::MAX;

/// Bytes [`PageWriter`] holds per partition besides its buffer (count, page being filled,
/// buffered count; the first page's link and checksum; the index's page list entry).
const WRITER_BYTES_PER_PARTITION: u64 = 8 + 8 + 2 + 8 + 4 + 16;

impl PageWriter {
    fn new(out: &Path, partitions: u64, flush_tuples: u64) -> Result<PageWriter> {
        let p = usize::try_from(partitions)
            .map_err(|_| Error::param("partitions", "too many for this machine"))?;
        Ok(PageWriter {
            out: AtomicFile::create(out)?,
            flush_tuples: flush_tuples as usize,
            buffers: vec![Tuple { key: 0, value: 0 }; p * flush_tuples as usize],
            buffered: vec![0; p],
            counts: vec![0; p],
            last_page: (0..partitions).collect(),
            next_page: vec![NO_PAGE; p],
            page_crcs: vec![0; p],
            tuples: 0,
            bytes_written: 0,
            write_calls: 0,
            pages_written: 0,
        })
    }

    #[inline]
    fn push(&mut self, partition: u64, tuple: Tuple) -> Result<()> {
        let p = partition as usize;
        let filled = usize::from(self.buffered[p]);
        self.buffers[p * self.flush_tuples + filled] = tuple;
        self.buffered[p] += 1;
        self.tuples += 1;
        if filled + 1 == self.flush_tuples {
            self.flush(p)?;
        }
        Ok(())
    }

    /// Writes partition `p`'s buffered tuples after its earlier ones, starting an overflow
    /// page when its page is full; pages that follow each other in the file are written
    /// in one call.
    fn flush(&mut self, p: usize) -> Result<()> {
        let start = p * self.flush_tuples;
        let end = start + usize::from(self.buffered[p]);
        let mut from = start;
        // The tuples not yet written, from `pending.1`, and where they go.
        let mut pending: Option<(u64, usize)> = None;
        while from < end {
            let filled = self.counts[p] % PAGE_TUPLES;
            if filled == 0 && self.counts[p] > 0 {
                let page = self.page_crcs.len() as u64;
                self.next_page[self.last_page[p] as usize] = page;
                self.next_page.push(NO_PAGE);
                self.page_crcs.push(0);
                self.last_page[p] = page;
            }
            let page = self.last_page[p];
            let take = (end - from).min((PAGE_TUPLES - filled) as usize);
            let bytes: &[u8] = bytemuck::cast_slice(&self.buffers[from..from + take]);
            let offset = crate::files::paged::page_offset(page) + filled * TUPLE_SIZE as u64;
            let crc = &mut self.page_crcs[page as usize];
            *crc = crc32c::crc32c_append(*crc, bytes);
            match pending {
                Some((at, first)) if at + ((from - first) * TUPLE_SIZE) as u64 == offset => {}
                _ => {
                    self.write_pending(pending, from)?;
                    pending = Some((offset, from));
                }
            }
            self.counts[p] += take as u64;
            from += take;
        }
        self.write_pending(pending, end)?;
        self.buffered[p] = 0;
        Ok(())
    }

    /// Writes buffered tuples `pending.1..to` at file offset `pending.0`.
    fn write_pending(&mut self, pending: Option<(u64, usize)>, to: usize) -> Result<()> {
        let Some((offset, from)) = pending else {
            return Ok(());
        };
        let bytes: &[u8] = bytemuck::cast_slice(&self.buffers[from..to]);
        self.out.write_all_at(offset, bytes)?;
        self.bytes_written += bytes.len() as u64;
        self.write_calls += 1;
        self.pages_written += crate::files::paged::pages_touched(offset, bytes.len() as u64);
        Ok(())
    }

    /// Flushes every buffer, completes the last pages' checksums over their zero tails, and
    /// writes the index and the header.
    fn finish(
        mut self,
        ranker: Ranker,
        entries: Entries,
        n: u64,
        report: &mut BuildReport,
    ) -> Result<PartitionIndex> {
        for p in 0..self.counts.len() {
            if self.buffered[p] > 0 {
                self.flush(p)?;
            }
        }
        let zeros = [0u8; BLOCK_SIZE];
        let mut page_start = Vec::with_capacity(self.counts.len() + 1);
        let mut pages = Vec::with_capacity(self.page_crcs.len());
        page_start.push(0);
        for (p, &count) in self.counts.iter().enumerate() {
            let mut page = p as u64;
            while page != NO_PAGE {
                pages.push(page);
                page = self.next_page[page as usize];
            }
            page_start.push(pages.len() as u64);
            let filled = match count % PAGE_TUPLES {
                0 if count > 0 => PAGE_TUPLES,
                f => f,
            };
            let tail = (BLOCK_SIZE as u64 - filled * TUPLE_SIZE as u64) as usize;
            let crc = &mut self.page_crcs[self.last_page[p] as usize];
            *crc = crc32c::crc32c_append(*crc, &zeros[..tail]);
        }
        let index = PartitionIndex {
            ranker,
            entries,
            n,
            counts: self.counts,
            page_start,
            pages,
            page_crcs: self.page_crcs,
        };
        let tail = file::write_index(&mut self.out, &index)?;
        report.bytes_written = self.bytes_written + tail;
        report.write_calls = self.write_calls + 2;
        report.pages_written =
            self.pages_written + crate::files::paged::pages_of_tail_and_header(tail);
        report.file_bytes = index.total_pages() * BLOCK_SIZE as u64 + tail;
        self.out.finish()?;
        Ok(index)
    }
}
