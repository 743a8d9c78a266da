//! The classic unclustered index of paper 1, section 5.4: a B+tree built by inserting
//! (key, tuple position) entries one at a time, in the table's (random) order.
//!
//! Its leaves hold [`Entries`]: the key and position of each tuple (the paper's, 16 bytes
//! an entry, 255 a leaf), or the key, position and value (a clustered copy the join reads
//! values from, 24 bytes an entry, 170 a leaf).
//!
//! Leaves are 4 KiB pages on disk behind an LRU buffer pool whose size comes from the memory
//! budget; the levels above them stay in memory (an ordered map from each leaf's first
//! entry to the leaf: the separators 4 KiB inner nodes would hold). An insert finds its leaf,
//! reads it into the pool if it is not there (evicting the least recently used leaf, and
//! writing it back if it changed), and splits it in two when it overflows. Entries are
//! ordered by (key, position), so duplicates of a key are ordered by position and every
//! entry is distinct. The counts (leaf reads and writes, splits, bytes written) give the
//! write amplification the paper blames for the B+tree's slower build.
//!
//! The file: a header block, the leaf pages, then the separators and each leaf's CRC32C
//! (format in docs/FORMAT.md, section 7).
#![deny(clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::fs::File;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use lru::LruCache;

use super::Entries;
use super::file::PositionSet;
use crate::files::AtomicFile;
use crate::files::IoStats;
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::files::paged::{self, PageCrc, Pages, page_offset};
use crate::index::file::{FileKind, VerifyReport};
use crate::memory::MemoryBudget;
use crate::storage::{BLOCK_SIZE, Table};
use crate::{Error, FormatError, Result};

/// The first eight bytes of an inserted B+tree's file.
pub const MAGIC: [u8; 8] = FileKind::InsertedBTree.magic();
/// Format version written; versions 1 (pointers only) to this one are read.
pub const VERSION: u32 = 2;
/// Entries a leaf of pointers holds: a 16-byte header (count, next leaf), then 16-byte
/// entries.
pub const LEAF_ENTRIES: usize = leaf_capacity(Entries::Pointers);
const LEAF_HEADER: usize = 16;

/// Bytes of a leaf's entry: key and position, and the value where leaves hold tuples.
const fn entry_bytes(entries: Entries) -> usize {
    match entries {
        Entries::Pointers => 16,
        Entries::Tuples => 24,
    }
}

/// Entries a leaf holds: 255 pointers or 170 tuples.
pub const fn leaf_capacity(entries: Entries) -> usize {
    (BLOCK_SIZE - LEAF_HEADER) / entry_bytes(entries)
}
/// `next` of the last leaf.
const NO_LEAF: u64 = u64::MAX;
/// Bytes a pool frame of a leaf of pointers takes: the page and its bookkeeping.
pub const FRAME_BYTES: u64 = frame_bytes(Entries::Pointers);

/// Room a leaf in memory keeps for entries: its capacity and the one that overflows it,
/// rounded up to 256 so that its buffers are whole allocator size classes (4 KiB of
/// entries, and 2 KiB of values where leaves hold tuples).
const LEAF_ROOM: usize = 256;

/// Bytes a pool frame of a leaf holding `entries` takes: its buffers (keys and positions,
/// and values for tuples) and its bookkeeping.
pub const fn frame_bytes(entries: Entries) -> u64 {
    let values = match entries {
        Entries::Pointers => 0,
        Entries::Tuples => 8 * LEAF_ROOM as u64,
    };
    16 * LEAF_ROOM as u64 + values + 96
}
/// Bytes the in-memory levels take per leaf (a separator of key, position and leaf, and
/// the ordered map's share of nodes), an estimate reserved from the budget.
const INNER_BYTES_PER_LEAF: u64 = 48;
/// The fewest pool frames a build works with: a leaf and the one it splits into.
pub const MIN_FRAMES: u64 = 2;

/// One entry: a key and the position of its tuple in the table.
pub type Entry = (u64, u64);

/// A leaf in memory: its (key, position) entries, and their values where leaves hold
/// tuples (empty otherwise).
#[derive(Clone, Debug, Default, PartialEq)]
struct Leaf {
    entries: Vec<Entry>,
    values: Vec<u64>,
    next: u64,
}

impl Leaf {
    /// An empty leaf with room for one entry past its capacity (it splits then): the
    /// buffers [`frame_bytes`] counts.
    fn empty(entries: Entries, next: u64) -> Leaf {
        Leaf {
            entries: Vec::with_capacity(LEAF_ROOM),
            values: match entries {
                Entries::Pointers => Vec::new(),
                Entries::Tuples => Vec::with_capacity(LEAF_ROOM),
            },
            next,
        }
    }

    /// The word of entry `i` a lookup returns: its value where leaves hold tuples, its
    /// position otherwise.
    #[inline]
    fn word(&self, i: usize) -> Option<u64> {
        if self.values.is_empty() {
            self.entries.get(i).map(|e| e.1)
        } else {
            self.values.get(i).copied()
        }
    }

    fn encode(&self, page: &mut [u8; BLOCK_SIZE]) {
        page.fill(0);
        page[..4].copy_from_slice(&(self.entries.len() as u32).to_le_bytes());
        page[8..16].copy_from_slice(&self.next.to_le_bytes());
        // Each entry's key, position and (where leaves hold tuples) value, in order.
        let words = self.entries.iter().enumerate().flat_map(|(i, &(k, p))| {
            [Some(k), Some(p), self.values.get(i).copied()]
                .into_iter()
                .flatten()
        });
        for (slot, word) in page[LEAF_HEADER..].chunks_exact_mut(8).zip(words) {
            slot.copy_from_slice(&word.to_le_bytes());
        }
    }

    fn decode(page: &[u8], kind: Entries) -> std::result::Result<Leaf, FormatError> {
        let mut d = Decoder::new(page, "a B+tree leaf");
        let count = d.u32()? as usize;
        let _reserved = d.u32()?;
        let next = d.u64()?;
        let capacity = leaf_capacity(kind);
        if count > capacity {
            return Err(invalid(
                "leaf entries",
                count as u64,
                if kind == Entries::Pointers {
                    "at most 255"
                } else {
                    "at most 170"
                },
            ));
        }
        let mut leaf = Leaf::empty(kind, next);
        for _ in 0..count {
            leaf.entries.push((d.u64()?, d.u64()?));
            if kind == Entries::Tuples {
                leaf.values.push(d.u64()?);
            }
        }
        let entries = &leaf.entries;
        if !entries.is_sorted_by(|a, b| a < b) {
            return Err(invalid(
                "leaf entries",
                count as u64,
                "increasing (key, position) entries",
            ));
        }
        Ok(leaf)
    }
}

/// What building or searching a B+tree cost, in leaf I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BTreeStats {
    /// Leaves read from disk (pool misses on leaves that exist there).
    pub leaf_reads: u64,
    /// Leaves written (evictions of changed leaves, and the final flush).
    pub leaf_writes: u64,
    /// Leaf splits.
    pub splits: u64,
    /// Leaf visits found in the pool.
    pub pool_hits: u64,
    /// Leaves evicted from the pool.
    pub evictions: u64,
    /// Bytes written to the file: leaves (each write a page), separators, header.
    pub bytes_written: u64,
}

/// An LRU pool of leaves over a file of leaf pages.
struct Pool {
    /// What its leaves hold.
    kind: Entries,
    frames: LruCache<u64, (Leaf, bool)>,
    crcs: Vec<u32>,
    stats: BTreeStats,
}

impl Pool {
    /// The leaf `id`, read into the pool if it is not there (evicting and writing back the
    /// least recently used leaf to make room).
    fn get<'a>(&'a mut self, id: u64, file: &mut dyn PageFile) -> Result<&'a mut (Leaf, bool)> {
        if self.frames.contains(&id) {
            self.stats.pool_hits += 1;
        } else {
            let mut page = [0u8; BLOCK_SIZE];
            file.read_page(id, &mut page)?;
            self.stats.leaf_reads += 1;
            let leaf = Leaf::decode(&page, self.kind).map_err(|e| file.format_error(e))?;
            self.put(id, leaf, false, file)?;
        }
        self.frames
            .get_mut(&id)
            .ok_or_else(|| Error::misuse("btree::Pool::get", "a leaf just read is gone"))
    }

    /// Adds leaf `id` to the pool, evicting (and writing back) the least recently used one
    /// if the pool is full.
    fn put(&mut self, id: u64, leaf: Leaf, dirty: bool, file: &mut dyn PageFile) -> Result<()> {
        if self.frames.len() == self.frames.cap().get()
            && let Some((old, (old_leaf, old_dirty))) = self.frames.pop_lru()
        {
            self.stats.evictions += 1;
            if old_dirty {
                self.write(old, &old_leaf, file)?;
            }
        }
        self.frames.put(id, (leaf, dirty));
        Ok(())
    }

    fn write(&mut self, id: u64, leaf: &Leaf, file: &mut dyn PageFile) -> Result<()> {
        let mut page = [0u8; BLOCK_SIZE];
        leaf.encode(&mut page);
        self.write_page(id, &page, file)
    }

    fn write_page(
        &mut self,
        id: u64,
        page: &[u8; BLOCK_SIZE],
        file: &mut dyn PageFile,
    ) -> Result<()> {
        file.write_page(id, page)?;
        if self.crcs.len() <= id as usize {
            self.crcs.resize(id as usize + 1, 0);
        }
        if let Some(crc) = self.crcs.get_mut(id as usize) {
            *crc = crc32c::crc32c(page);
        }
        self.stats.leaf_writes += 1;
        self.stats.bytes_written += BLOCK_SIZE as u64;
        Ok(())
    }

    /// Writes back every changed leaf (one page buffer at a time: no copy of the pool).
    fn flush(&mut self, file: &mut dyn PageFile) -> Result<()> {
        let dirty: Vec<u64> = self
            .frames
            .iter()
            .filter(|(_, frame)| frame.1)
            .map(|(&id, _)| id)
            .collect();
        let mut page = [0u8; BLOCK_SIZE];
        for id in dirty {
            if let Some(frame) = self.frames.peek_mut(&id) {
                frame.1 = false;
                frame.0.encode(&mut page);
                self.write_page(id, &page, file)?;
            }
        }
        Ok(())
    }
}

/// Where leaf pages live: the file being built, or an opened one.
trait PageFile {
    fn read_page(&mut self, id: u64, page: &mut [u8; BLOCK_SIZE]) -> Result<()>;
    fn write_page(&mut self, id: u64, page: &[u8; BLOCK_SIZE]) -> Result<()>;
    fn format_error(&self, problem: FormatError) -> Error;
}

impl PageFile for AtomicFile {
    fn read_page(&mut self, id: u64, page: &mut [u8; BLOCK_SIZE]) -> Result<()> {
        self.read_exact_at(page_offset(id), page)
    }
    fn write_page(&mut self, id: u64, page: &[u8; BLOCK_SIZE]) -> Result<()> {
        self.write_all_at(page_offset(id), page)
    }
    fn format_error(&self, problem: FormatError) -> Error {
        Error::format(self.path(), problem)
    }
}

/// An opened tree's file: pages are read and checked against their checksums (apart from
/// them, in the tail) by the one paged-file reader, never written.
struct OpenedFile<'a> {
    pages: Pages<'a>,
    /// What the reads did.
    io: IoStats,
}

impl<'a> OpenedFile<'a> {
    /// The leaves of `file` at `path`, `crcs[i]` the CRC32C of leaf `i`.
    fn new(path: &'a Path, file: &'a File, crcs: &'a [u32]) -> Self {
        OpenedFile {
            pages: Pages::paged(file, path, crcs.len() as u64, PageCrc::Apart(crcs), false),
            io: IoStats::default(),
        }
    }
}

impl PageFile for OpenedFile<'_> {
    fn read_page(&mut self, id: u64, page: &mut [u8; BLOCK_SIZE]) -> Result<()> {
        if id >= self.pages.count {
            // Only a next-leaf link read from a (resealed) page can name one.
            return Err(self.format_error(invalid("leaf", id, "a leaf below the leaf count")));
        }
        self.pages.read_into(id, page, &mut self.io, true)
    }
    fn write_page(&mut self, _id: u64, _page: &[u8; BLOCK_SIZE]) -> Result<()> {
        Err(Error::misuse("btree", "an opened B+tree is read-only"))
    }
    fn format_error(&self, problem: FormatError) -> Error {
        Error::format(self.pages.path, problem)
    }
}

/// The levels above the leaves: each leaf but the first, by its first entry.
#[derive(Clone, Debug, Default, PartialEq)]
struct Inner {
    first_leaf: u64,
    separators: BTreeMap<Entry, u64>,
}

impl Inner {
    /// The leaf whose entries would hold `e`.
    fn leaf_for(&self, e: Entry) -> u64 {
        self.separators
            .range(..=e)
            .next_back()
            .map_or(self.first_leaf, |(_, &leaf)| leaf)
    }

    fn leaves(&self) -> u64 {
        self.separators.len() as u64 + 1
    }
}

/// Leaves a tree of `n` entries has at most, its leaves half full.
fn leaves_at_most(n: u64, entries: Entries) -> u64 {
    (2 * n).div_ceil(leaf_capacity(entries) as u64).max(1)
}

/// The smallest budget a build of `n` entries works with.
pub fn min_build_memory(n: u64, entries: Entries) -> u64 {
    leaves_at_most(n, entries) * INNER_BYTES_PER_LEAF
        + MIN_FRAMES * frame_bytes(entries)
        + BLOCK_SIZE as u64
}

/// Bytes of the levels above `leaves` leaves: a separator (key, position, leaf) per leaf
/// but the first, as 4 KiB inner nodes would hold them.
pub fn inner_bytes_of(leaves: u64) -> u64 {
    24 * leaves.saturating_sub(1)
}

/// What a build reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BuildReport {
    /// Entries inserted.
    pub entries: u64,
    /// Leaves at the end.
    pub leaves: u64,
    /// Frames the pool had.
    pub frames: u64,
    /// Leaf I/O and splits.
    pub stats: BTreeStats,
    /// Bytes of the table read.
    pub bytes_read: u64,
    /// 4 KiB pages the writes touched: each leaf write, and the tail's pages and the
    /// header.
    pub pages_written: u64,
    /// Bytes of the file: the header, the leaves and the tail.
    pub file_bytes: u64,
    /// Seconds.
    pub seconds: f64,
}

impl BuildReport {
    /// Bytes written per byte of the table (16 per tuple): the write amplification.
    pub fn write_amplification(&self) -> f64 {
        self.stats.bytes_written as f64 / (16 * self.entries).max(1) as f64
    }
}

/// Builds the B+tree of `table` by inserting each tuple's (key, position), with its value
/// where `entries` are tuples, in table order, into a new file at `out` (written
/// atomically), within `budget` (the read buffer, the in-memory levels and the pool's
/// frames). `progress` gets the entries inserted so far.
pub fn build(
    table: &Table,
    out: &Path,
    entries: Entries,
    budget: &MemoryBudget,
    mut progress: impl FnMut(u64),
) -> Result<BuildReport> {
    table.require_pairs("building a B+tree by inserts")?;
    crate::files::refuse_same_file(table.path(), out)?;
    let n = table.len();
    let need = min_build_memory(n, entries);
    if budget.available() < need {
        return Err(Error::param(
            "memory limit",
            format!(
                "{} bytes left of {} cannot hold a B+tree of {n} entries: it needs at least {need} bytes (its in-memory levels and {MIN_FRAMES} leaves)",
                budget.available(),
                budget.limit()
            ),
        ));
    }
    let started = std::time::Instant::now();
    // An eighth of what the minimum leaves for the read chunk, the rest for the pool.
    let chunk = super::read_chunk((budget.available() - need) / 8 + BLOCK_SIZE as u64);
    let _chunk = budget.reserve(chunk as u64, "a B+tree build's read buffer")?;
    let leaves_estimate = leaves_at_most(n, entries);
    let _inner = budget.reserve(
        leaves_estimate * INNER_BYTES_PER_LEAF,
        "a B+tree's in-memory levels",
    )?;
    // No more frames than the tree can have leaves (the pool's map is allocated up front).
    let frame = frame_bytes(entries);
    let frames = (budget.available() / frame).clamp(MIN_FRAMES, leaves_estimate + 1);
    let _frames = budget.reserve(frames * frame, "a B+tree's buffer pool")?;
    let mut file = AtomicFile::create(out)?;
    let mut pool = Pool {
        kind: entries,
        frames: LruCache::new(NonZeroUsize::new(frames as usize).unwrap_or(NonZeroUsize::MIN)),
        crcs: Vec::new(),
        stats: BTreeStats::default(),
    };
    let mut inner = Inner::default();
    pool.put(0, Leaf::empty(entries, NO_LEAF), true, &mut file)?;
    let mut report = BuildReport {
        frames,
        ..BuildReport::default()
    };
    let mut position = 0u64;
    table.scan_in_chunks(chunk, |tuples| {
        report.bytes_read += (tuples.len() * 16) as u64;
        for t in tuples {
            insert(&mut inner, &mut pool, &mut file, (t.key, position), t.value)?;
            position += 1;
        }
        progress(position);
        Ok(())
    })?;
    pool.flush(&mut file)?;
    report.entries = n;
    report.leaves = inner.leaves();
    let tail = write_tail(&mut file, &inner, entries, &pool.crcs, n)?;
    pool.stats.bytes_written += tail;
    file.finish()?;
    report.pages_written = pool.stats.leaf_writes + paged::pages_of_tail_and_header(tail);
    report.file_bytes = report.leaves * BLOCK_SIZE as u64 + tail;
    report.stats = pool.stats;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Inserts `e` (and its `value` where leaves hold tuples) into the leaf that should hold
/// it, splitting that leaf when it overflows.
fn insert(
    inner: &mut Inner,
    pool: &mut Pool,
    file: &mut AtomicFile,
    e: Entry,
    value: u64,
) -> Result<()> {
    let id = inner.leaf_for(e);
    let capacity = leaf_capacity(pool.kind);
    let kind = pool.kind;
    let tuples = kind == Entries::Tuples;
    let (leaf, dirty) = pool.get(id, file)?;
    let at = leaf.entries.partition_point(|x| *x < e);
    leaf.entries.insert(at, e);
    if tuples {
        leaf.values.insert(at, value);
    }
    *dirty = true;
    if leaf.entries.len() <= capacity {
        return Ok(());
    }
    let new_id = inner.leaves();
    let half = leaf.entries.len() / 2;
    // The right half in buffers of a leaf's full room, as a frame is counted.
    let mut right = Leaf::empty(kind, leaf.next);
    right.entries.extend(leaf.entries.drain(half..));
    right
        .values
        .extend(leaf.values.drain(half.min(leaf.values.len())..));
    leaf.next = new_id;
    let Some(&separator) = right.entries.first() else {
        return Err(Error::misuse(
            "btree::insert",
            "a split leaf's right half is empty",
        ));
    };
    inner.separators.insert(separator, new_id);
    pool.stats.splits += 1;
    pool.put(new_id, right, true, file)
}

/// Writes the separators and leaf checksums after the leaves, and the header; returns
/// the bytes written.
fn write_tail(
    file: &mut AtomicFile,
    inner: &Inner,
    entries: Entries,
    crcs: &[u32],
    n: u64,
) -> Result<u64> {
    let leaves = inner.leaves();
    let mut tail = Vec::new();
    let mut e = Encoder(&mut tail);
    e.u64(entries.code());
    for (&(k, p), &leaf) in &inner.separators {
        e.u64(k);
        e.u64(p);
        e.u64(leaf);
    }
    for id in 0..leaves {
        e.u32(crcs.get(id as usize).copied().unwrap_or(0));
    }
    let fields = [n, leaves, inner.first_leaf];
    paged::write_tail_and_header(file, MAGIC, VERSION, fields, leaves, &tail)
}

/// An opened B+tree file: its in-memory levels, and a pool of leaves for lookups and scans.
pub struct InsertedBTree {
    path: PathBuf,
    file: File,
    n: u64,
    inner: Inner,
    crcs: Vec<u32>,
    pool: Pool,
}

impl InsertedBTree {
    /// Opens and checks the file at `path` (magic, version, header and tail checksums,
    /// length, separators in order with every leaf listed once), with a pool of `frames`
    /// leaves (at least one, at most the tree's leaves). Leaves are checked when read.
    pub fn open(path: &Path, frames: u64) -> Result<InsertedBTree> {
        let opened = paged::open(path, MAGIC, 1..=VERSION, "lidx B+tree file", 1)?;
        let fail = |problem| Error::format(path, problem);
        let [n, leaves, first_leaf] = opened.fields;
        if leaves == 0 {
            return Err(fail(invalid("leaves", 0, "at least 1")));
        }
        let (kind, inner, crcs) =
            decode_tail(&opened.tail, opened.version, leaves, first_leaf).map_err(fail)?;
        Ok(InsertedBTree {
            path: path.to_path_buf(),
            file: opened.file,
            n,
            inner,
            crcs,
            pool: Pool {
                kind,
                frames: LruCache::new(
                    NonZeroUsize::new(usize::try_from(frames.min(leaves)).unwrap_or(usize::MAX))
                        .unwrap_or(NonZeroUsize::MIN),
                ),
                crcs: Vec::new(),
                stats: BTreeStats::default(),
            },
        })
    }

    /// Entries in the tree.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// What its leaves hold besides the keys and positions.
    pub fn entries(&self) -> Entries {
        self.pool.kind
    }

    /// True when the tree holds no entries.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Leaves in the tree.
    pub fn leaves(&self) -> u64 {
        self.inner.leaves()
    }

    /// Bytes of the in-memory levels ([`inner_bytes_of`] its leaves).
    pub fn inner_bytes(&self) -> u64 {
        inner_bytes_of(self.leaves())
    }

    /// Bytes the opened tree holds besides its pool, as a memory budget counts them: the
    /// separators in their map and a checksum per leaf (the estimate builds reserve too).
    pub fn memory_bytes(&self) -> u64 {
        self.leaves() * INNER_BYTES_PER_LEAF
    }

    /// Gives the pool room for `frames` leaves (at least one, at most the tree's leaves),
    /// evicting the least recently used ones if it shrinks.
    pub fn resize_pool(&mut self, frames: u64) {
        let frames = usize::try_from(frames.min(self.leaves())).unwrap_or(usize::MAX);
        self.pool
            .frames
            .resize(NonZeroUsize::new(frames).unwrap_or(NonZeroUsize::MIN));
    }

    /// Leaf I/O so far.
    pub fn stats(&self) -> BTreeStats {
        self.pool.stats
    }

    /// Appends the words of every entry with key `key`, in position order: their table
    /// positions, or their values where leaves hold tuples.
    pub fn lookup(&mut self, key: u64, words: &mut Vec<u64>) -> Result<()> {
        self.scan_from((key, 0), |k, w| {
            if k == key {
                words.push(w);
                true
            } else {
                false
            }
        })
    }

    /// Visits entries in (key, position) order from the first at or after `from`, while
    /// `visit` returns true: their keys and words (positions, or values where leaves hold
    /// tuples).
    pub fn scan_from(
        &mut self,
        from: Entry,
        mut visit: impl FnMut(u64, u64) -> bool,
    ) -> Result<()> {
        self.scan_entries(from, |(key, _), word| visit(key, word))
    }

    /// [`scan_from`](Self::scan_from), each entry's (key, position) given whole beside its
    /// word.
    pub fn scan_entries(
        &mut self,
        from: Entry,
        mut visit: impl FnMut(Entry, u64) -> bool,
    ) -> Result<()> {
        let mut id = self.inner.leaf_for(from);
        let mut file = OpenedFile::new(&self.path, &self.file, &self.crcs);
        let mut first = true;
        let mut visited = 0u64;
        while id != NO_LEAF {
            // A damaged chain of next leaves could loop; a sound one visits each leaf once.
            visited += 1;
            if visited > self.inner.leaves() {
                return Err(Error::format(
                    &self.path,
                    invalid("next leaf", id, "a chain that visits each leaf once"),
                ));
            }
            let (leaf, _) = self.pool.get(id, &mut file)?;
            let start = if first {
                leaf.entries.partition_point(|x| *x < from)
            } else {
                0
            };
            first = false;
            for (i, &entry) in leaf.entries.iter().enumerate().skip(start) {
                if !visit(entry, leaf.word(i).unwrap_or(0)) {
                    return Ok(());
                }
            }
            id = leaf.next;
        }
        Ok(())
    }
}

impl InsertedBTree {
    /// Opens the B+tree file at `path` and checks everything its format has: what
    /// [`open`](Self::open) checks, then every leaf, in key order (the first leaf, then
    /// the separators' leaves in order): its checksum, count and entry order, zero reserved
    /// bytes and padding, its next leaf the one after it, its first entry its separator and
    /// its last below the next separator, every position below the entry count and named
    /// once, and the entries adding up to the count. With `table` (the (key, value) table
    /// it was built from, in its order), also that each entry's key (and value, where
    /// leaves hold tuples) is the table's tuple's at its position: so the tree holds
    /// exactly the table's entries, where a lookup finds them.
    pub fn verify_file(path: &Path, table: Option<&Table>) -> Result<VerifyReport> {
        let tree = InsertedBTree::open(path, 1)?;
        let corrupt = |problem: String| Error::format(path, FormatError::Inconsistent(problem));
        let n = tree.n;
        let leaves = tree.leaves();
        let kind = tree.pool.kind;
        let room = leaves.saturating_mul(leaf_capacity(kind) as u64);
        if n > room {
            return Err(Error::format(
                path,
                FormatError::HeaderDisagrees {
                    field: "entries",
                    header: n,
                    data: room,
                },
            ));
        }
        let tuples = match table {
            Some(table) => Some(tree.table_tuples(table)?),
            None => None,
        };
        // The leaves in key order, and the separator each starts with (none for the first).
        let order: Vec<(u64, Option<Entry>)> = std::iter::once((tree.inner.first_leaf, None))
            .chain(
                tree.inner
                    .separators
                    .iter()
                    .map(|(&e, &leaf)| (leaf, Some(e))),
            )
            .collect();
        let mut file = OpenedFile::new(&tree.path, &tree.file, &tree.crcs);
        let mut positions = PositionSet::new(n);
        let mut page = [0u8; BLOCK_SIZE];
        let mut entries = 0u64;
        for (i, &(id, separator)) in order.iter().enumerate() {
            file.read_page(id, &mut page)?;
            let leaf = Leaf::decode(&page, kind).map_err(|e| file.format_error(e))?;
            let used = LEAF_HEADER + entry_bytes(kind) * leaf.entries.len();
            if let Some(problem) = paged::nonzero_at(&page[4..8], 4, "byte")
                .or_else(|| paged::nonzero_at(page.get(used..).unwrap_or_default(), used, "byte"))
            {
                return Err(corrupt(format!("in leaf {id}, {problem}")));
            }
            let (next_leaf, next_separator) = order.get(i + 1).copied().unwrap_or((NO_LEAF, None));
            if leaf.next != next_leaf {
                return Err(corrupt(format!(
                    "leaf {id} names {} as the next leaf, where the separators put {}",
                    leaf.next, next_leaf
                )));
            }
            if separator.is_some() && leaf.entries.first() != separator.as_ref() {
                return Err(corrupt(format!(
                    "leaf {id} does not start with its separator"
                )));
            }
            if let (Some(last), Some(next)) = (leaf.entries.last(), next_separator)
                && *last >= next
            {
                return Err(corrupt(format!(
                    "leaf {id} holds an entry at or past the next leaf's separator"
                )));
            }
            for (j, &(key, position)) in leaf.entries.iter().enumerate() {
                if !positions.insert(position) {
                    return Err(corrupt(format!(
                        "leaf {id} names position {position}, which is past the {n} entries or named twice"
                    )));
                }
                let Some((tuples, table)) = tuples.as_ref().zip(table) else {
                    continue;
                };
                let Some(t) = tuples.get(position as usize) else {
                    continue;
                };
                let value = leaf.values.get(j).copied();
                if t.key != key || value.is_some_and(|v| v != t.value) {
                    return Err(Error::IndexMismatch {
                        path: path.to_path_buf(),
                        problem: format!(
                            "the entry ({key}, {position}{}) is not {}'s tuple {position}; rebuild it",
                            value.map(|v| format!(", {v}")).unwrap_or_default(),
                            table.path().display()
                        ),
                    });
                }
            }
            entries += leaf.entries.len() as u64;
        }
        if entries != n {
            return Err(Error::format(
                path,
                FormatError::HeaderDisagrees {
                    field: "entries",
                    header: n,
                    data: entries,
                },
            ));
        }
        let bytes = tree
            .file
            .metadata()
            .map_err(|e| Error::io(path, "read the metadata of", e))?
            .len();
        Ok(VerifyReport {
            kind: FileKind::InsertedBTree,
            bytes,
            checksums: 2 + leaves,
            pages: leaves,
            entries: n,
            table_tuples: tuples.map(|t| t.len() as u64),
        })
    }

    /// The tuples of `table`, in its order, after checking it holds as many as the tree
    /// has entries ([`Error::IndexMismatch`] otherwise).
    fn table_tuples(&self, table: &Table) -> Result<Vec<crate::storage::Tuple>> {
        table.require_pairs("verifying a B+tree against a table")?;
        if table.len() != self.n {
            return Err(Error::IndexMismatch {
                path: self.path.clone(),
                problem: format!(
                    "the index holds {} entries, {} holds {} tuples; rebuild it",
                    self.n,
                    table.path().display(),
                    table.len()
                ),
            });
        }
        let mut tuples = Vec::with_capacity(usize::try_from(table.len()).unwrap_or(0));
        table.scan(|chunk| {
            tuples.extend_from_slice(chunk);
            Ok(())
        })?;
        Ok(tuples)
    }
}

/// Decodes what the leaves hold, the separators and leaf checksums of a tree of `leaves`
/// leaves in a file of format `version`.
fn decode_tail(
    bytes: &[u8],
    version: u32,
    leaves: u64,
    first_leaf: u64,
) -> std::result::Result<(Entries, Inner, Vec<u32>), FormatError> {
    let mut d = Decoder::new(bytes, "a B+tree file's separators");
    let kind = if version >= 2 {
        let code = d.u64()?;
        Entries::from_code(code)
            .ok_or_else(|| invalid("entries", code, "0 (positions) or 1 (tuples)"))?
    } else {
        Entries::Pointers
    };
    let mut seen = vec![
        false;
        usize::try_from(leaves)
            .unwrap_or(usize::MAX)
            .min(bytes.len() / 4 + 1)
    ];
    let mut mark = |leaf: u64| match seen.get_mut(usize::try_from(leaf).unwrap_or(usize::MAX)) {
        Some(s) if !*s => {
            *s = true;
            Ok(())
        }
        _ => Err(invalid(
            "leaf",
            leaf,
            "a leaf below the leaf count, listed once",
        )),
    };
    mark(first_leaf)?;
    let mut separators = BTreeMap::new();
    let mut last: Option<Entry> = None;
    for _ in 1..leaves {
        let (k, p, leaf) = (d.u64()?, d.u64()?, d.u64()?);
        if last.is_some_and(|l| l >= (k, p)) {
            return Err(invalid("separator", k, "increasing separators"));
        }
        last = Some((k, p));
        mark(leaf)?;
        separators.insert((k, p), leaf);
    }
    let mut crcs = Vec::with_capacity(seen.len());
    for _ in 0..leaves {
        crcs.push(d.u32()?);
    }
    d.finish()?;
    Ok((
        kind,
        Inner {
            first_leaf,
            separators,
        },
        crcs,
    ))
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::files::paged::testing::{flipped, reseal, u64_at};
    use crate::index::file::tests::key_set;
    use crate::storage::{TableWriter, Tuple};

    /// Writes `keys` in their order as a table whose values are the keys' positions.
    fn table_of(dir: &Path, name: &str, keys: &[u64]) -> Table {
        let path = dir.join(name);
        let mut w = TableWriter::create(&path).unwrap();
        for (i, &key) in keys.iter().enumerate() {
            w.push(Tuple {
                key,
                value: i as u64,
            })
            .unwrap();
        }
        w.finish().unwrap();
        Table::open(&path).unwrap()
    }

    /// The tree of pointers of `table` at `dir/u.bti`, built with a pool of `frames` leaves.
    fn built(dir: &Path, table: &Table, frames: u64) -> PathBuf {
        let out = dir.join("u.bti");
        let budget = MemoryBudget::new(
            min_build_memory(table.len(), Entries::Pointers) + (frames - MIN_FRAMES) * FRAME_BYTES,
        );
        build(table, &out, Entries::Pointers, &budget, |_| {}).unwrap();
        out
    }

    /// 1,000 shuffled keys with duplicates, in leaves written out of key order.
    fn thousand(dir: &Path) -> (Table, PathBuf, Vec<u8>) {
        let keys: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 700)
            .collect();
        let table = table_of(dir, "u.tbl", &keys);
        let out = built(dir, &table, MIN_FRAMES);
        let bytes = std::fs::read(&out).unwrap();
        (table, out, bytes)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn valid_files_verify_against_their_table(keys in key_set(), frames in 2u64..6) {
            let dir = tempfile::tempdir().unwrap();
            let table = table_of(dir.path(), "u.tbl", &keys);
            let out = built(dir.path(), &table, frames);
            let leaves = InsertedBTree::open(&out, 1).unwrap().leaves();
            let report = InsertedBTree::verify_file(&out, Some(&table)).unwrap();
            prop_assert_eq!(
                report,
                VerifyReport {
                    kind: FileKind::InsertedBTree,
                    bytes: std::fs::metadata(&out).unwrap().len(),
                    checksums: 2 + leaves,
                    pages: leaves,
                    entries: keys.len() as u64,
                    table_tuples: Some(keys.len() as u64),
                }
            );
            prop_assert_eq!(InsertedBTree::verify_file(&out, None).unwrap().table_tuples, None);
        }
    }

    #[test]
    fn a_flipped_byte_in_the_unused_header_is_refused_by_open_and_verify() {
        let dir = tempfile::tempdir().unwrap();
        let (_, _, good) = thousand(dir.path());
        let damaged = dir.path().join("d.bti");
        let mut reserved = flipped(&good, 15);
        reseal(&mut reserved, u64_at(&good, 24));
        for (at, bytes) in [
            (100, flipped(&good, 100)),
            (4095, flipped(&good, 4095)),
            (15, reserved),
        ] {
            std::fs::write(&damaged, bytes).unwrap();
            let want = format!("d.bti: header byte {at} is 0x40 where the format has zero");
            let err = InsertedBTree::open(&damaged, 2).err().unwrap().to_string();
            assert!(err.contains(&want), "{err}");
            let err = InsertedBTree::verify_file(&damaged, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains(&want), "{err}");
        }
    }

    /// `bytes` with leaf `leaf` changed by `change` and every checksum made to fit.
    fn forged(bytes: &[u8], leaf: u64, change: impl FnOnce(&mut [u8])) -> Vec<u8> {
        let mut bytes = bytes.to_vec();
        let leaves = u64_at(&bytes, 24);
        let at = page_offset(leaf) as usize;
        change(&mut bytes[at..at + BLOCK_SIZE]);
        let crc = crc32c::crc32c(&bytes[at..at + BLOCK_SIZE]);
        let crc_at = bytes.len() - 4 * (leaves - leaf) as usize;
        bytes[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        reseal(&mut bytes, leaves);
        bytes
    }

    #[test]
    fn forged_leaves_pass_open_and_fail_verify() {
        let dir = tempfile::tempdir().unwrap();
        let (table, out, good) = thousand(dir.path());
        let leaves = InsertedBTree::open(&out, 1).unwrap().leaves();
        assert!(leaves >= 4, "{leaves} leaves");
        let damaged = dir.path().join("d.bti");
        let check = |bytes: &[u8], want: &str| {
            std::fs::write(&damaged, bytes).unwrap();
            InsertedBTree::open(&damaged, 2).unwrap();
            let err = InsertedBTree::verify_file(&damaged, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{err}");
        };
        let count = |leaf: u64| {
            let at = page_offset(leaf) as usize;
            u32::from_le_bytes(good[at..at + 4].try_into().unwrap()) as usize
        };
        let used = LEAF_HEADER + 16 * count(0);
        check(
            &forged(&good, 0, |page| page[used + 3] = 1),
            &format!(
                "in leaf 0, byte {} is 0x01 where the format has zero",
                used + 3
            ),
        );
        check(
            &forged(&good, 0, |page| page[5] = 1),
            "in leaf 0, byte 5 is 0x01",
        );
        check(
            &forged(&good, 1, |page| {
                page[8..16].copy_from_slice(&NO_LEAF.to_le_bytes())
            }),
            "leaf 1 names 18446744073709551615 as the next leaf",
        );
        // Two entries of one leaf naming one position: an entry whose key lies strictly
        // between its neighbours' takes its left neighbour's position.
        check(
            &forged(&good, 2, |page| {
                let key = |i: usize| {
                    let at = LEAF_HEADER + 16 * i;
                    u64::from_le_bytes(page[at..at + 8].try_into().unwrap())
                };
                let i = (1..count(2) - 1)
                    .find(|&i| key(i - 1) < key(i) && key(i) < key(i + 1))
                    .unwrap();
                let at = LEAF_HEADER + 16 * i;
                let left: [u8; 8] = page[at - 8..at].try_into().unwrap();
                page[at + 8..at + 16].copy_from_slice(&left);
            }),
            "named twice",
        );
        // An entry's key changed within its leaf's range: only the table knows.
        let bytes = forged(&good, 2, |page| {
            let second = u64::from_le_bytes(page[32..40].try_into().unwrap());
            let third = u64::from_le_bytes(page[48..56].try_into().unwrap());
            assert!(second < third, "the leaf's second and third keys differ");
            page[32..40].copy_from_slice(&(second + 1).to_le_bytes());
        });
        std::fs::write(&damaged, &bytes).unwrap();
        InsertedBTree::verify_file(&damaged, None).unwrap();
        let err = InsertedBTree::verify_file(&damaged, Some(&table))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("is not") && err.contains("u.tbl's tuple"),
            "{err}"
        );
    }

    #[test]
    fn a_forged_value_in_a_leaf_of_tuples_fails_verify_against_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 1000).collect();
        let table = table_of(dir.path(), "u.tbl", &keys);
        let out = dir.path().join("t.bti");
        build(
            &table,
            &out,
            Entries::Tuples,
            &MemoryBudget::unlimited(),
            |_| {},
        )
        .unwrap();
        let tree = InsertedBTree::open(&out, 1).unwrap();
        assert_eq!(tree.entries(), Entries::Tuples);
        // 170 tuples a leaf, at least half full.
        assert!((6..=12).contains(&tree.leaves()), "{}", tree.leaves());
        InsertedBTree::verify_file(&out, Some(&table)).unwrap();
        let good = std::fs::read(&out).unwrap();
        // The first entry's value, after its key and position.
        let bytes = forged(&good, 0, |page| page[LEAF_HEADER + 16] ^= 1);
        let damaged = dir.path().join("d.bti");
        std::fs::write(&damaged, &bytes).unwrap();
        InsertedBTree::verify_file(&damaged, None).unwrap();
        let err = InsertedBTree::verify_file(&damaged, Some(&table))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("is not") && err.contains("u.tbl's tuple"),
            "{err}"
        );
        // A count past a leaf of tuples' 170 is refused when read.
        let bytes = forged(&good, 0, |page| {
            page[..4].copy_from_slice(&171u32.to_le_bytes())
        });
        std::fs::write(&damaged, &bytes).unwrap();
        let err = InsertedBTree::verify_file(&damaged, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("at most 170"), "{err}");
    }

    #[test]
    fn verify_refuses_another_table() {
        let dir = tempfile::tempdir().unwrap();
        let (table, out, _) = thousand(dir.path());
        let keys: Vec<u64> = (0..1000).collect();
        let other = table_of(dir.path(), "o.tbl", &keys);
        let err = InsertedBTree::verify_file(&out, Some(&other))
            .unwrap_err()
            .to_string();
        assert!(err.contains("o.tbl's tuple"), "{err}");
        let fewer = table_of(dir.path(), "f.tbl", &keys[..999]);
        let err = InsertedBTree::verify_file(&out, Some(&fewer))
            .unwrap_err()
            .to_string();
        assert!(err.contains("the index holds 1000 entries"), "{err}");
        InsertedBTree::verify_file(&out, Some(&table)).unwrap();
    }
}
