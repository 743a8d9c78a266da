//! Blocks of a key-value file (FORMAT.md section 8): a body of records in key order with
//! an array of their offsets, so a block is searched by bisection; sealed on disk with a
//! compression byte and a CRC32C, like LevelDB's block trailer, so a block is checked
//! (and decompressed) on its own, whichever index found it.
//!
//! Body: for each record, `key length` and `value length` as LEB128 varints, then the key
//! and the value; then one `u32` offset per record (from the body's start); then the
//! record count as a `u32`. Sealed: the body as stored (compressed or not), one byte of
//! [`Compression`], and the CRC32C of both.
#![deny(clippy::indexing_slicing)]

use std::ops::Range;
use std::sync::Arc;

/// Bytes a sealed block adds to its stored body: the compression byte and the CRC32C.
pub const TRAILER: usize = 5;

/// The largest key a file holds: 64 KiB − 1 bytes, as LevelDB-style tables allow.
pub const MAX_KEY: usize = u16::MAX as usize;

/// How blocks are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// As they are.
    #[default]
    None,
    /// LZ4 block format, the uncompressed length in front (the `lz4_flex` crate).
    Lz4,
}

crate::names::name_table!(Compression, "compression", [
    None => "none",
    Lz4 => "lz4",
]);

impl Compression {
    /// The byte that stands for this compression in a block's trailer and the footer.
    pub fn tag(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
        }
    }

    /// The compression a tag stands for.
    pub fn from_tag(tag: u8) -> Option<Compression> {
        match tag {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            _ => None,
        }
    }
}

/// Bytes a record takes in a block body, its offset included: what the learned layout
/// counts in `S(k)`.
pub fn record_bytes(key: &[u8], value: &[u8]) -> u64 {
    (varint_len(key.len() as u64) + varint_len(value.len() as u64) + key.len() + value.len() + 4)
        as u64
}

pub(crate) fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint of at most 5 bytes (values below 2^32) at `*at`, advancing it.
fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u32> {
    let mut v = 0u64;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return u32::try_from(v).ok();
        }
    }
    None
}

/// The first 8 bytes of `key` (zero-padded) as an integer ordered as the bytes are: for
/// keys `a < b`, `prefix(a) <= prefix(b)`, so keys whose prefixes differ compare as them.
pub(crate) fn prefix(key: &[u8]) -> u64 {
    if let Some(b) = key.first_chunk::<8>() {
        // Big-endian: the first byte the most significant.
        return u64::from_le_bytes(*b).swap_bytes();
    }
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    if let (Some(to), Some(from)) = (b.get_mut(..n), key.get(..n)) {
        to.copy_from_slice(from);
    }
    // Big-endian: the first byte the most significant.
    u64::from_le_bytes(b).swap_bytes()
}

/// Sorted byte-string keys searched by integer fences: the bytes all the keys share, and
/// the [`prefix`] of each key after them, bisected before any key is compared whole (only
/// where two prefixes tie). What an index's in-memory keys keep beside them to be searched
/// without following a pointer per step.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fences {
    shared: Box<[u8]>,
    prefixes: Vec<u64>,
}

impl Fences {
    /// The fences of `keys`, in increasing order.
    pub(crate) fn new<'k>(keys: impl Iterator<Item = &'k [u8]> + Clone) -> Fences {
        let mut ends = keys.clone();
        let (first, last) = (ends.next().unwrap_or_default(), ends.last());
        let shared = match last {
            Some(last) => first.iter().zip(last).take_while(|(a, b)| a == b).count(),
            None => first.len(),
        };
        Fences {
            shared: first.get(..shared).unwrap_or_default().into(),
            prefixes: keys
                .map(|k| prefix(k.get(shared..).unwrap_or_default()))
                .collect(),
        }
    }

    /// How many of the keys are below `key`, given `below(i)`: whether key `i` is below
    /// `key` (asked only of keys whose fences tie with it).
    pub(crate) fn count_below(&self, key: &[u8], below: impl Fn(usize) -> bool) -> usize {
        let n = self.prefixes.len();
        let Some(rest) = key.strip_prefix(&*self.shared) else {
            // Every key begins with the shared bytes: all above `key` or all below it.
            return if *key < *self.shared { 0 } else { n };
        };
        let wanted = prefix(rest);
        let mut lo = self.prefixes.partition_point(|&f| f < wanted);
        let tied = self.prefixes.get(lo..).unwrap_or_default();
        let mut hi = lo + tied.partition_point(|&f| f <= wanted);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes they take in memory.
    pub(crate) fn bytes(&self) -> u64 {
        (self.shared.len() + 8 * self.prefixes.len()) as u64
    }

    /// The prefixes' bytes in memory (for a prefetch).
    pub(crate) fn prefix_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.prefixes)
    }
}

/// Builds one block body, record by record.
#[derive(Debug, Default)]
pub struct BlockBuilder {
    body: Vec<u8>,
    offsets: Vec<u32>,
}

impl BlockBuilder {
    /// Appends a record (the caller keeps keys in increasing order). Fails when the body
    /// would pass 4 GiB, where its `u32` offsets end.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        let at = u32::try_from(self.body.len())
            .map_err(|_| "a block would grow past 4 GiB".to_string())?;
        self.offsets.push(at);
        put_varint(&mut self.body, key.len() as u64);
        put_varint(&mut self.body, value.len() as u64);
        self.body.extend_from_slice(key);
        self.body.extend_from_slice(value);
        Ok(())
    }

    /// Records added since the last [`finish`](Self::finish).
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether no record was added since the last [`finish`](Self::finish).
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Bytes the body takes so far, offsets and count included.
    pub fn body_bytes(&self) -> usize {
        self.body.len() + 4 * self.offsets.len() + 4
    }

    /// The finished body, sealed with `compression` into `out` (cleared first); the
    /// builder is empty again.
    pub fn finish(&mut self, compression: Compression, out: &mut Vec<u8>) -> Result<(), String> {
        if self.body_bytes() > u32::MAX as usize {
            return Err("a block would grow past 4 GiB".into());
        }
        for &o in &self.offsets {
            self.body.extend_from_slice(&o.to_le_bytes());
        }
        self.body
            .extend_from_slice(&(self.offsets.len() as u32).to_le_bytes());
        seal(&self.body, compression, out);
        self.body.clear();
        self.offsets.clear();
        Ok(())
    }
}

/// Seals `body`: stored with `compression`, then the compression byte and the CRC32C of
/// both, into `out` (cleared first).
pub(crate) fn seal(body: &[u8], compression: Compression, out: &mut Vec<u8>) {
    out.clear();
    match compression {
        Compression::None => out.extend_from_slice(body),
        Compression::Lz4 => out.extend_from_slice(&lz4_flex::compress_prepend_size(body)),
    }
    out.push(compression.tag());
    let crc = crc32c::crc32c(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// The body of a sealed block: its CRC checked, decompressed.
pub(crate) fn unseal(sealed: &[u8]) -> Result<Vec<u8>, BlockProblem> {
    let Some(split) = sealed.len().checked_sub(4) else {
        return Err(BlockProblem::Malformed("shorter than its trailer"));
    };
    let (data, crc) = sealed.split_at(split);
    let expected = u32::from_le_bytes(crc.try_into().unwrap_or_default());
    let got = crc32c::crc32c(data);
    if expected != got {
        return Err(BlockProblem::Checksum { expected, got });
    }
    let Some((&tag, stored)) = data.split_last() else {
        return Err(BlockProblem::Malformed("shorter than its trailer"));
    };
    Ok(match Compression::from_tag(tag) {
        Some(Compression::None) => stored.to_vec(),
        Some(Compression::Lz4) => {
            // Refuse a length LZ4 could not reach from these bytes before allocating.
            let claimed = stored
                .first_chunk::<4>()
                .map(|b| u32::from_le_bytes(*b) as usize)
                .ok_or(BlockProblem::Malformed(
                    "compressed block without its length",
                ))?;
            if claimed > stored.len().saturating_mul(255).saturating_add(64) {
                return Err(BlockProblem::Malformed("compressed length out of reach"));
            }
            lz4_flex::decompress_size_prepended(stored)
                .map_err(|_| BlockProblem::Malformed("LZ4 data does not decompress"))?
        }
        None => return Err(BlockProblem::Malformed("unknown compression byte")),
    })
}

/// What is wrong with a sealed block, before a file's path and block number are added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockProblem {
    /// The stored CRC32C disagrees with the bytes.
    Checksum {
        /// Stored.
        expected: u32,
        /// Computed.
        got: u32,
    },
    /// The bytes pass the checksum but do not form a block.
    Malformed(&'static str),
}

/// A decoded block: its body, checked so that every record can be read without a bounds
/// failure.
#[derive(Clone, Debug)]
pub struct Block {
    /// The [`prefix`] of the key after the shared bytes of records `j · count / fences`
    /// (the first `count.min(FENCES)` are set), so a lookup bisects them before it reads a
    /// record. Kept in the block itself, beside the reference count a cache hit touches,
    /// not in the body: bisecting them costs no memory access of its own.
    fences: [u64; FENCES],
    /// Where in the body the records the fences name begin, so that a search finds them,
    /// and the records between two of them, without the offsets array: in a block of at
    /// most [`FENCES`] records (a page of large values) every record is named here.
    fence_at: [u32; FENCES],
    body: Vec<u8>,
    count: usize,
    /// Where the offsets array starts in `body`.
    offsets_at: usize,
    /// Bytes every key of the block begins with (those its first and last keys share).
    shared: usize,
    /// The first [`COMMON`] of those bytes, so that a search checks them without reading
    /// the first record (when there are more, it reads them there).
    common: [u8; COMMON],
    /// The [`prefix`] of the last key after the shared bytes.
    last_fence: u64,
}

/// What a search of a block found: the first record whose key is at least the key sought
/// (`index`, the count when none is), and where in the body it and the record before it
/// begin when the search met them (`None`: not met, or no such record).
struct Found {
    index: usize,
    at: Option<usize>,
    before: Option<usize>,
}

/// The most records between two fences a search walks in order; past them (fences that
/// tie) it bisects through the offsets.
const WALK: usize = 16;

/// The most bytes of records a search walks (and loads at once): 16 cache lines.
const WALK_BYTES: usize = 1024;

/// Shared key bytes a decoded block keeps beside its fences.
const COMMON: usize = 16;

/// The most fences a decoded block keeps: 128 bytes, about 3% of a 4 KiB block, charged
/// with it wherever it is kept.
pub const FENCES: usize = 16;

impl Block {
    /// Checks and decodes a sealed block.
    pub fn open(sealed: &[u8]) -> Result<Block, BlockProblem> {
        Block::from_body(unseal(sealed)?)
    }

    /// Checks a body's structure: the count, the offsets in increasing order and in range,
    /// and each record's lengths within the next record's start.
    fn from_body(body: Vec<u8>) -> Result<Block, BlockProblem> {
        let malformed = BlockProblem::Malformed;
        let n = body.len();
        let count = body
            .last_chunk::<4>()
            .map(|b| u32::from_le_bytes(*b) as usize)
            .ok_or(malformed("body without a record count"))?;
        let offsets_at = count
            .checked_mul(4)
            .and_then(|o| n.checked_sub(4 + o))
            .ok_or(malformed("record count larger than the block"))?;
        let mut block = Block {
            fences: [0; FENCES],
            fence_at: [0; FENCES],
            body,
            count,
            offsets_at,
            shared: 0,
            common: [0; COMMON],
            last_fence: 0,
        };
        let mut expected_start = 0usize;
        for i in 0..count {
            if block.stored_offset(i) != expected_start {
                return Err(malformed("record offsets do not follow the records"));
            }
            let mut at = expected_start;
            let k = get_varint(&block.body, &mut at).ok_or(malformed("bad key length"))?;
            let v = get_varint(&block.body, &mut at).ok_or(malformed("bad value length"))?;
            let end = at
                .checked_add(k as usize)
                .and_then(|e| e.checked_add(v as usize))
                .filter(|&e| e <= offsets_at)
                .ok_or(malformed("a record runs past the records"))?;
            if k as usize > MAX_KEY {
                return Err(malformed("a key longer than 65535 bytes"));
            }
            expected_start = end;
        }
        if expected_start != offsets_at {
            return Err(malformed("bytes after the last record"));
        }
        for j in 0..block.fence_count() {
            let at = block.stored_offset(block.fenced(j));
            if let Some(to) = block.fence_at.get_mut(j) {
                // Below 4 GiB: the body's size was checked against its `u32` offsets.
                *to = at as u32;
            }
        }
        if let Some(last) = count.checked_sub(1) {
            let (first, last) = (block.key(0), block.key(last));
            let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
            let mut common = [0; COMMON];
            for (c, &b) in common.iter_mut().zip(first) {
                *c = b;
            }
            (block.shared, block.common) = (shared, common);
        }
        let mut fences = [0; FENCES];
        for (j, f) in fences.iter_mut().enumerate().take(block.fence_count()) {
            let key = block.key(block.fenced(j));
            *f = prefix(key.get(block.shared..).unwrap_or_default());
        }
        block.fences = fences;
        if let Some(last) = count.checked_sub(1) {
            block.last_fence = prefix(block.key(last).get(block.shared..).unwrap_or_default());
        }
        Ok(block)
    }

    /// How many fences the block keeps.
    fn fence_count(&self) -> usize {
        self.count.min(FENCES)
    }

    /// The record fence `j` names.
    fn fenced(&self, j: usize) -> usize {
        j * self.count / self.fence_count().max(1)
    }

    /// Where record `i` begins in the body: from the fences' own offsets in a block they
    /// name whole, else from the offsets array.
    fn offset(&self, i: usize) -> usize {
        match i {
            0 => 0,
            i if self.count <= FENCES => self.fence_start(i),
            i => self.stored_offset(i),
        }
    }

    /// Record `i`'s offset as the offsets array holds it.
    fn stored_offset(&self, i: usize) -> usize {
        let at = self.offsets_at + 4 * i;
        let b: [u8; 4] = self
            .body
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .unwrap_or_default();
        u32::from_le_bytes(b) as usize
    }

    /// Records in the block.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the block holds no record.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of the decoded body, its fences and its copy of shared bytes (what the block
    /// takes in a cache).
    pub fn body_bytes(&self) -> usize {
        self.body.len() + 8 * (FENCES + 1) + COMMON
    }

    /// Record `i` (`i < len()`) as (key, value).
    pub fn record(&self, i: usize) -> (&[u8], &[u8]) {
        self.record_starting(self.offset(i))
    }

    /// The record that begins at `at` in the body, as (key, value).
    fn record_starting(&self, at: usize) -> (&[u8], &[u8]) {
        let (k, v) = self.spans_at(at);
        (
            self.body.get(k).unwrap_or_default(),
            self.body.get(v).unwrap_or_default(),
        )
    }

    /// Where the key and value of the record that begins at `at` lie in the body.
    fn spans_at(&self, at: usize) -> (Range<usize>, Range<usize>) {
        let (k, next) = self.record_at(at);
        let value = k.end..next;
        (k, value)
    }

    /// Key of record `i` (`i < len()`).
    pub fn key(&self, i: usize) -> &[u8] {
        let mut at = self.offset(i);
        // Checked by `from_body`, as in `record`; the value's length is skipped.
        let k = get_varint(&self.body, &mut at).unwrap_or(0) as usize;
        while self.body.get(at).is_some_and(|&b| b >= 0x80) {
            at += 1;
        }
        self.body.get(at + 1..at + 1 + k).unwrap_or_default()
    }

    /// The first record whose key is at least `key` (`len()` when there is none), by
    /// bisection over the fences, then the offsets; keys are in increasing order in every
    /// block lidx writes. The bytes all the block's keys share are compared once; then
    /// each probe compares the next 8 bytes of the two keys as one integer, and whole keys
    /// only when those are equal.
    pub fn lower_bound(&self, key: &[u8]) -> usize {
        if self.count == 0 {
            return 0;
        }
        match self.after_shared(key) {
            Ok(rest) => self.lower_bound_after_shared(rest),
            // Departs from the shared bytes or ends inside them: below every key or above
            // all of them, as it compares with those bytes (a key they start is below).
            Err(common) if key < common => 0,
            Err(_) => self.count,
        }
    }

    /// The bytes of `key` after the block's shared bytes, when it begins with them; the
    /// shared bytes are compared from the block's copy (from the first record past
    /// [`COMMON`] bytes).
    fn after_shared<'k>(&self, key: &'k [u8]) -> Result<&'k [u8], &[u8]> {
        let common = match self.common.get(..self.shared) {
            Some(common) => common,
            None => self.key(0).get(..self.shared).unwrap_or_default(),
        };
        match key.get(self.shared..) {
            Some(rest) if key.starts_with(common) => Ok(rest),
            _ => Err(common),
        }
    }

    /// Where `key` lies against the block's keys: `Less` below the first, `Greater` above
    /// the last, `Equal` from the first to the last (the block holds it if anything does).
    /// Decided by the fences where they can (no record read), by the two keys where not.
    /// An empty block has every key above it.
    pub fn span_order(&self, key: &[u8]) -> std::cmp::Ordering {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let Some(last) = self.count.checked_sub(1) else {
            return Greater;
        };
        let rest = match self.after_shared(key) {
            Ok(rest) => rest,
            Err(common) if key < common => return Less,
            Err(_) => return Greater,
        };
        let wanted = prefix(rest);
        let first = self.fences.first().copied().unwrap_or(0);
        if wanted < first || (wanted == first && key < self.key(0)) {
            Less
        } else if wanted > self.last_fence || (wanted == self.last_fence && key > self.key(last)) {
            Greater
        } else {
            Equal
        }
    }

    /// [`lower_bound`](Self::lower_bound) of a key that begins with the block's shared
    /// bytes, given the bytes after them. For a key that does not, some position: a get
    /// compares the key found there, so it need not check the shared bytes first.
    fn lower_bound_after_shared(&self, rest: &[u8]) -> usize {
        self.search(rest).index
    }

    /// The record whose key is `key`, else the last below it, else the first: in an index
    /// node (a B+tree's), the entry whose child holds `key` if any does. `None` for an
    /// empty block.
    pub fn floor_or_first(&self, key: &[u8]) -> Option<(&[u8], &[u8])> {
        let found = match self.after_shared(key) {
            Ok(rest) => self.search(rest),
            Err(common) => Found {
                index: if key < common { 0 } else { self.count },
                at: None,
                before: None,
            },
        };
        let at = |i: usize, at: Option<usize>| at.unwrap_or_else(|| self.offset(i));
        if found.index < self.count {
            let held = self.record_starting(at(found.index, found.at));
            if held.0 == key || found.index == 0 {
                return Some(held);
            }
        }
        let before = found.index.checked_sub(1)?;
        Some(self.record_starting(at(before, found.before)))
    }

    /// [`lower_bound_after_shared`](Self::lower_bound_after_shared) as a [`Found`]: with
    /// where the record found and the one before it begin when the search met them.
    fn search(&self, rest: &[u8]) -> Found {
        let wanted = prefix(rest);
        // The fences narrow the records: those whose prefix is below `wanted` are below
        // the key, those above it above.
        let fences = self.fences.get(..self.fence_count()).unwrap_or_default();
        let below = fences.partition_point(|&f| f < wanted);
        let not_above = below
            + fences
                .get(below..)
                .unwrap_or_default()
                .partition_point(|&f| f <= wanted);
        // Records `lo..hi` are left; `lo - 1` and `hi` are fenced (or past the ends).
        let (lo, before_lo) = match below {
            0 => (0, None),
            j => (self.fenced(j - 1) + 1, Some(self.fence_start(j - 1))),
        };
        let (hi, at_hi) = match not_above {
            j if j == fences.len() => (self.count, None),
            j => (self.fenced(j), Some(self.fence_start(j))),
        };
        if lo == hi {
            return Found {
                index: lo,
                at: at_hi,
                before: before_lo,
            };
        }
        let is_below = |probe: &[u8]| {
            let probe_rest = probe.get(self.shared..).unwrap_or_default();
            match prefix(probe_rest).cmp(&wanted) {
                std::cmp::Ordering::Equal => probe_rest < rest,
                order => order.is_lt(),
            }
        };
        // A few small records between two fenced ones (an index node's, small values'):
        // they lie side by side from the fenced record before them, whose offset the block
        // keeps, so they are walked in order with no offset read, their cache lines loaded
        // at once. Others are bisected: through the fences' offsets in a block the fences
        // name whole, else through the offsets array.
        let (mut at, first) = match before_lo {
            Some(at) => (at, lo - 1),
            None => (0, 0),
        };
        let end = at_hi.unwrap_or(self.offsets_at);
        if self.count <= FENCES || hi - lo > WALK || end - at > WALK_BYTES {
            let index = self.bisect(lo, hi, is_below);
            return Found {
                index,
                at: None,
                before: None,
            };
        }
        for line in (at..end).step_by(64).chain([end.saturating_sub(1)]) {
            std::hint::black_box(self.body.get(line).copied());
        }
        let mut before = None;
        for index in first..hi {
            let (key, next) = self.record_at(at);
            if index >= lo && !is_below(self.body.get(key).unwrap_or_default()) {
                return Found {
                    index,
                    at: Some(at),
                    before,
                };
            }
            (before, at) = (Some(at), next);
        }
        Found {
            index: hi,
            at: at_hi,
            before,
        }
    }

    /// The first of records `lo..hi` that `is_below` is false for (`hi` if none), by
    /// bisection through the offsets.
    fn bisect(&self, mut lo: usize, mut hi: usize, is_below: impl Fn(&[u8]) -> bool) -> usize {
        if hi - lo > 2 {
            // Several records left to bisect (keys that tie in their fences): load their
            // offsets' and keys' cache lines at once, where the bisection would fetch them
            // one after another.
            for i in lo..hi {
                std::hint::black_box(self.body.get(self.offset(i) + 2).copied());
            }
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if is_below(self.key(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Where fenced record `j` begins in the body.
    fn fence_start(&self, j: usize) -> usize {
        self.fence_at.get(j).map_or(0, |&at| at as usize)
    }

    /// The key of the record that begins at `at` (where `from_body` found a record), and
    /// where the next begins.
    fn record_at(&self, mut at: usize) -> (Range<usize>, usize) {
        // Checked by `from_body`: both varints parse and the record lies within the body.
        let k = get_varint(&self.body, &mut at).unwrap_or(0) as usize;
        let v = get_varint(&self.body, &mut at).unwrap_or(0) as usize;
        (at..at + k, at + k + v)
    }

    /// The value stored under `key`, if the block holds it.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.value_range(key).and_then(|r| self.body.get(r))
    }

    /// Where the value stored under `key` lies in the body, if the block holds it. A key
    /// the block holds begins with its shared bytes, so the search skips checking them;
    /// the key found is compared whole.
    fn value_range(&self, key: &[u8]) -> Option<Range<usize>> {
        let found = self.search(key.get(self.shared..)?);
        let (k, v) = (found.index < self.count)
            .then(|| self.spans_at(found.at.unwrap_or_else(|| self.offset(found.index))))?;
        (self.body.get(k) == Some(key)).then_some(v)
    }
}

impl crate::storage::cache::Decoded for Block {
    /// The body's last line (its record count): a get mostly reads only the fences and
    /// the record they lead to, but fetching one line of the body while the slot's lock is
    /// taken measured as fast as fetching the whole offsets array (up to 8 lines), and
    /// without it warm 1 KiB gets took 10–15% more CPU (`lidx experiment warm`).
    fn first_read(&self) -> &[u8] {
        let end = self.body.len();
        self.body.get(end.saturating_sub(1)..).unwrap_or_default()
    }
}

/// A value borrowed from the decoded block that holds it, with no copy: the block stays
/// in memory while the value lives, as RocksDB's `PinnableSlice` pins its block.
#[derive(Clone, Debug)]
pub struct PinnedValue {
    block: Arc<Block>,
    range: Range<usize>,
}

impl PinnedValue {
    /// The value of `key` in `block`, if it holds it.
    pub fn find(block: Arc<Block>, key: &[u8]) -> Option<PinnedValue> {
        let range = block.value_range(key)?;
        Some(PinnedValue { block, range })
    }
}

impl std::ops::Deref for PinnedValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.block.body.get(self.range.clone()).unwrap_or_default()
    }
}

impl AsRef<[u8]> for PinnedValue {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn seal(records: &[(Vec<u8>, Vec<u8>)], compression: Compression) -> Vec<u8> {
        let mut b = BlockBuilder::default();
        for (k, v) in records {
            b.add(k, v).expect("small block");
        }
        let mut out = Vec::new();
        b.finish(compression, &mut out).expect("small block");
        out
    }

    /// Byte strings over 0, 1 and 255 shorter than `max`: keys that share bytes, tie in
    /// their 8-byte prefixes and end in zero bytes (which pad a prefix).
    fn tying(max: usize) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 255]), 0..max)
    }

    proptest! {
        #[test]
        fn blocks_give_back_their_records(
            mut records in prop::collection::btree_map(
                prop::collection::vec(any::<u8>(), 0..40),
                prop::collection::vec(any::<u8>(), 0..300),
                0..60,
            ),
            lz4 in any::<bool>(),
            probe in prop::collection::vec(any::<u8>(), 0..40),
        ) {
            let list: Vec<_> = std::mem::take(&mut records).into_iter().collect();
            let compression = if lz4 { Compression::Lz4 } else { Compression::None };
            let sealed = seal(&list, compression);
            let block = Block::open(&sealed).expect("a block just written");
            prop_assert_eq!(block.len(), list.len());
            for (i, (k, v)) in list.iter().enumerate() {
                prop_assert_eq!(block.record(i), (k.as_slice(), v.as_slice()));
                prop_assert_eq!(block.get(k), Some(v.as_slice()));
            }
            let expected = list.partition_point(|(k, _)| k.as_slice() < probe.as_slice());
            prop_assert_eq!(block.lower_bound(&probe), expected);
            for i in 0..block.len() {
                prop_assert_eq!(block.key(i), block.record(i).0);
            }
            prop_assert_eq!(block.floor_or_first(&probe), floor_or_first(&list, &probe));
            let size: u64 = list.iter().map(|(k, v)| record_bytes(k, v)).sum();
            if !lz4 {
                prop_assert_eq!(sealed.len() as u64, size + 4 + TRAILER as u64);
            }
        }

        /// Bisection with integer prefixes agrees with `partition_point` where keys share
        /// their first 8 bytes, differ only past them, or end in zero bytes (which pad the
        /// prefix): keys over a three-letter alphabet of 0, 1 and 255.
        #[test]
        fn lower_bound_agrees_where_prefixes_tie(
            keys in prop::collection::btree_set(
                tying(12),
                0..80,
            ),
            probes in prop::collection::vec(
                tying(12),
                1..20,
            ),
            // Past 16 bytes the block keeps no copy of them: both ways are tried.
            common in tying(24),
        ) {
            // Every key begins with `common` (the bytes a block's keys share), and so do
            // half the probes; the others and the prefixes of `common` fall outside.
            let with_common = |k: &Vec<u8>| [common.as_slice(), k].concat();
            let list: Vec<(Vec<u8>, Vec<u8>)> =
                keys.iter().map(|k| (with_common(k), b"v".to_vec())).collect();
            let mut probes: Vec<Vec<u8>> = probes
                .iter()
                .enumerate()
                .map(|(i, p)| if i % 2 == 0 { with_common(p) } else { p.clone() })
                .collect();
            probes.extend((0..=common.len()).map(|n| common[..n].to_vec()));
            let block = Block::open(&seal(&list, Compression::None)).expect("a block just written");
            for probe in probes.iter().chain(list.iter().map(|(k, _)| k)) {
                let expected = list.partition_point(|(k, _)| k.as_slice() < probe.as_slice());
                prop_assert_eq!(block.lower_bound(probe), expected, "{:?}", probe);
                let held = list.get(expected).filter(|(k, _)| k == probe).map(|(_, v)| v.as_slice());
                prop_assert_eq!(block.get(probe), held, "{:?}", probe);
                let order = match (list.first(), list.last()) {
                    (Some((first, _)), _) if probe < first => std::cmp::Ordering::Less,
                    (_, Some((last, _))) if probe <= last => std::cmp::Ordering::Equal,
                    _ => std::cmp::Ordering::Greater,
                };
                prop_assert_eq!(block.span_order(probe), order, "{:?}", probe);
                prop_assert_eq!(
                    block.floor_or_first(probe),
                    floor_or_first(&list, probe),
                    "{:?}",
                    probe
                );
            }
            for w in list.windows(2) {
                prop_assert!(prefix(&w[0].0) <= prefix(&w[1].0));
            }
        }

        /// Fences count the keys below a probe as `partition_point` does, on keys that
        /// share bytes, tie in their prefixes or end in zero bytes.
        #[test]
        fn fences_count_as_partition_point_does(
            keys in prop::collection::btree_set(
                tying(12),
                0..60,
            ),
            probes in prop::collection::vec(
                tying(14),
                1..20,
            ),
            common in tying(6),
        ) {
            let keys: Vec<Vec<u8>> = keys.iter().map(|k| [common.as_slice(), k].concat()).collect();
            let fences = Fences::new(keys.iter().map(|k| &k[..]));
            let mut probes = probes;
            probes.extend(keys.iter().cloned());
            probes.extend((0..=common.len()).map(|n| common[..n].to_vec()));
            for probe in &probes {
                let expected = keys.partition_point(|k| k < probe);
                prop_assert_eq!(fences.count_below(probe, |i| keys[i] < *probe), expected, "{:?}", probe);
            }
        }

        #[test]
        fn any_flipped_byte_is_caught(at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let list: Vec<_> = (0..20u8).map(|i| (vec![i; 3], vec![i; 50])).collect();
            let mut sealed = seal(&list, Compression::Lz4);
            let at = at.index(sealed.len());
            sealed[at] ^= 1 << bit;
            prop_assert!(Block::open(&sealed).is_err());
        }

        #[test]
        fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let mut sealed = bytes;
            let crc = crc32c::crc32c(&sealed);
            sealed.extend_from_slice(&crc.to_le_bytes());
            let _ = Block::open(&sealed);
        }
    }

    /// The record [`Block::floor_or_first`] should find, by a linear search.
    fn floor_or_first<'a>(
        list: &'a [(Vec<u8>, Vec<u8>)],
        key: &[u8],
    ) -> Option<(&'a [u8], &'a [u8])> {
        let at_most = list
            .iter()
            .rposition(|(k, _)| k.as_slice() <= key)
            .unwrap_or(0);
        list.get(at_most).map(|(k, v)| (k.as_slice(), v.as_slice()))
    }

    /// A get finds its record through the fences and the records' own lengths, reading no
    /// offset from the array: in a page of a few large values (every record fenced) and in
    /// an index node of many small entries (the records between two fences walked). Shown
    /// by zeroing the array after the block is opened.
    #[test]
    fn gets_read_no_offset_from_the_array() {
        let page: Vec<_> = (0..3u64)
            .map(|i| {
                (
                    format!("{:020}", 7 + i * 1_000_003).into_bytes(),
                    vec![i as u8; 1000],
                )
            })
            .collect();
        let node: Vec<_> = (0..130u64)
            .map(|i| {
                (
                    format!("{:020}", 11 + i * 977_777).into_bytes(),
                    (i * 3).to_le_bytes().to_vec(),
                )
            })
            .collect();
        for list in [page, node] {
            let mut block =
                Block::open(&seal(&list, Compression::None)).expect("a block just written");
            let offsets = block.offsets_at..block.offsets_at + 4 * block.count;
            block.body[offsets].fill(0);
            for (i, (k, v)) in list.iter().enumerate() {
                assert_eq!(block.get(k), Some(v.as_slice()), "record {i}");
                assert_eq!(block.floor_or_first(k), Some((k.as_slice(), v.as_slice())));
                let mut above = k.clone();
                above.push(b'0');
                assert_eq!(
                    block.floor_or_first(&above),
                    Some((k.as_slice(), v.as_slice()))
                );
            }
        }
    }

    #[test]
    fn an_empty_block_and_a_short_one() {
        let sealed = seal(&[], Compression::None);
        assert!(Block::open(&sealed).expect("empty block").is_empty());
        assert!(Block::open(&[1, 2]).is_err());
    }
}
