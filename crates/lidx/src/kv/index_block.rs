//! The SSTable layout's level-1 index blocks from format version 3 (paper 4, section 3:
//! Bigtable's block index; FORMAT.md section 8.2a), built as LevelDB and RocksDB build
//! theirs, so that the baseline the learned layout is measured against has a real
//! SSTable's index:
//!
//! - each entry's key is a **separator** of its data block: a short byte string `s` with
//!   `last ≤ s < next` for the block's last key and the next block's first key
//!   ([`shortest_separator`]; after the last block, [`short_successor`] of its last key);
//! - keys are **prefix-compressed**: an entry stores the bytes it shares with the previous
//!   entry's key as a count, and only the rest; every [`RESTART_INTERVAL`]-th entry is a
//!   **restart point** that stores its whole key, and the block ends with the restarts'
//!   offsets, so a seek bisects the restarts and then walks at most one run;
//! - handles are **delta-encoded**: a restart stores the data block's offset and size as
//!   varints, the entries after it only the size (data blocks lie one after another, so an
//!   offset is the previous entry's offset plus its size).
//!
//! A block is checked whole when it is opened (CRC, every entry, keys strictly increasing,
//! handles within the data and one after another), so lookups in an open block cannot
//! fail. Files of versions 1 and 2 hold level-1 blocks of records (§8.2); they are read
//! into this form ([`IndexBlock::from_records`]), so every reader has one kind of index
//! block.
#![deny(clippy::indexing_slicing)]

use super::block::{
    Block, BlockProblem, Compression, Fences, TRAILER, put_varint, seal, unseal, varint_len,
};
use super::file::Handle;

/// Entries from one restart point to the next.
pub const RESTART_INTERVAL: usize = 16;

/// A data block handle is valid when its sealed size holds more than a trailer and a count.
const MIN_BLOCK: u64 = TRAILER as u64 + 4;

/// The shortest byte string `s` with `last ≤ s < next` that bytewise comparison finds
/// without looking past the first byte after the common prefix that can grow (RocksDB's
/// `BytewiseComparator::FindShortestSeparator`); `last` itself when none is shorter.
/// `last < next` is the caller's to keep.
pub fn shortest_separator(last: &[u8], next: &[u8]) -> Vec<u8> {
    let common = last.iter().zip(next).take_while(|(a, b)| a == b).count();
    let (Some(&a), Some(&b)) = (last.get(common), next.get(common)) else {
        // One is a prefix of the other: `last` (the shorter, as last < next) is the best.
        return last.to_vec();
    };
    if a < 0xff && a + 1 < b {
        // A byte strictly between the two at the first difference.
        let mut s = last.get(..=common).unwrap_or_default().to_vec();
        if let Some(end) = s.last_mut() {
            *end = a + 1;
        }
        return s;
    }
    // `a + 1 == b`: any string starting with `last[..=common]` is below `next`, so `last`
    // can be cut after its first byte past the difference that can be raised.
    let rest = last.get(common + 1..).unwrap_or_default();
    match rest.iter().position(|&c| c < 0xff) {
        Some(i) if common + 1 + i + 1 < last.len() => {
            let mut s = last.get(..=common + 1 + i).unwrap_or_default().to_vec();
            if let Some(end) = s.last_mut() {
                *end += 1;
            }
            s
        }
        _ => last.to_vec(),
    }
}

/// The shortest byte string at least `last` found by raising its first byte that can grow
/// and cutting after it (RocksDB's `FindShortSuccessor`); `last` itself when every byte is
/// `0xff`.
pub fn short_successor(last: &[u8]) -> Vec<u8> {
    match last.iter().position(|&c| c < 0xff) {
        Some(i) if i + 1 < last.len() => {
            let mut s = last.get(..=i).unwrap_or_default().to_vec();
            if let Some(end) = s.last_mut() {
                *end += 1;
            }
            s
        }
        _ => last.to_vec(),
    }
}

/// Why an entry cannot be added to an index block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The body would pass 4 GiB, where its `u32` restart offsets end.
    TooLarge,
    /// The handle does not start where the previous entry's block ends (an entry between
    /// restarts stores only its size).
    NotContiguous,
}

impl std::fmt::Display for AddError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AddError::TooLarge => "an index block would grow past 4 GiB",
            AddError::NotContiguous => "data block handles not one after another",
        })
    }
}

/// Builds one index block body, entry by entry.
#[derive(Debug, Default)]
pub struct IndexBlockBuilder {
    body: Vec<u8>,
    restarts: Vec<u32>,
    entries: usize,
    last_key: Vec<u8>,
    next_offset: u64,
}

impl IndexBlockBuilder {
    /// Appends the entry of a data block: its separator `key` (greater than the previous
    /// entry's, the caller's to keep) and its handle, which must start where the previous
    /// entry's block ends.
    pub fn add(&mut self, key: &[u8], handle: Handle) -> Result<(), AddError> {
        let (restart, shared) = self.next_entry_shares(key);
        if self.entries > 0 && handle.offset != self.next_offset {
            return Err(AddError::NotContiguous);
        }
        if restart {
            let at = u32::try_from(self.body.len()).map_err(|_| AddError::TooLarge)?;
            self.restarts.push(at);
        }
        let rest = key.get(shared..).unwrap_or_default();
        put_varint(&mut self.body, shared as u64);
        put_varint(&mut self.body, rest.len() as u64);
        self.body.extend_from_slice(rest);
        if restart {
            put_varint(&mut self.body, handle.offset);
        }
        put_varint(&mut self.body, handle.size);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.next_offset = handle.end();
        self.entries += 1;
        Ok(())
    }

    /// Bytes the body would take with `key` and `handle` added (restarts included).
    pub fn body_bytes_with(&self, key: &[u8], handle: Handle) -> usize {
        let (restart, shared) = self.next_entry_shares(key);
        let rest = key.len() - shared;
        let handle_bytes = varint_len(handle.size)
            + if restart {
                varint_len(handle.offset)
            } else {
                0
            };
        self.body_bytes()
            + varint_len(shared as u64)
            + varint_len(rest as u64)
            + rest
            + handle_bytes
            + if restart { 4 } else { 0 }
    }

    /// Whether the next entry is a restart point, and the bytes of `key` it would share
    /// with the previous entry's key (0 at a restart).
    fn next_entry_shares(&self, key: &[u8]) -> (bool, usize) {
        if self.entries.is_multiple_of(RESTART_INTERVAL) {
            return (true, 0);
        }
        let shared = key
            .iter()
            .zip(&self.last_key)
            .take_while(|(a, b)| a == b)
            .count();
        (false, shared)
    }

    /// Bytes the body takes so far (restarts and their count included).
    pub fn body_bytes(&self) -> usize {
        self.body.len() + 4 * self.restarts.len() + 4
    }

    /// Whether no entry was added since the last [`finish`](Self::finish).
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The finished body, sealed with `compression` into `out` (cleared first); the
    /// builder is empty again.
    pub fn finish(&mut self, compression: Compression, out: &mut Vec<u8>) -> Result<(), String> {
        if self.body_bytes() > u32::MAX as usize {
            return Err(AddError::TooLarge.to_string());
        }
        for &r in &self.restarts {
            self.body.extend_from_slice(&r.to_le_bytes());
        }
        self.body
            .extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        seal(&self.body, compression, out);
        self.body.clear();
        self.restarts.clear();
        self.entries = 0;
        self.last_key.clear();
        Ok(())
    }
}

/// An index block, checked: its entries' keys strictly increase and its handles lie one
/// after another within the data.
#[derive(Clone, Debug)]
pub struct IndexBlock {
    body: Vec<u8>,
    /// Where the restart offsets start in `body` (the entries end there).
    restarts_at: usize,
    restarts: usize,
    entries: usize,
    /// The last entry's key.
    last_key: Box<[u8]>,
    /// The restarts' keys as fences, so a seek bisects the restarts without rebuilding
    /// their keys (whole keys only where two fences tie).
    fences: Fences,
}

impl crate::storage::cache::Decoded for IndexBlock {
    /// The fences: a seek bisects them first.
    fn first_read(&self) -> &[u8] {
        self.fences.prefix_bytes()
    }
}

impl IndexBlock {
    /// Checks and decodes a sealed index block of a file whose data blocks end at
    /// `data_bytes`.
    pub fn open(sealed: &[u8], data_bytes: u64) -> Result<IndexBlock, BlockProblem> {
        let malformed = BlockProblem::Malformed;
        let body = unseal(sealed)?;
        let n = body.len();
        let restarts = body
            .last_chunk::<4>()
            .map(|b| u32::from_le_bytes(*b) as usize)
            .ok_or(malformed("index block without a restart count"))?;
        let restarts_at = restarts
            .checked_mul(4)
            .and_then(|o| n.checked_sub(4 + o))
            .ok_or(malformed("restart count larger than the block"))?;
        let mut block = IndexBlock {
            body,
            restarts_at,
            restarts,
            entries: 0,
            last_key: Box::default(),
            fences: Fences::default(),
        };
        if block.restart_offset(0).unwrap_or(0) != 0 || (restarts == 0 && restarts_at != 0) {
            return Err(malformed("the first entry is not a restart point"));
        }
        // Walk every entry: restarts where the array says, keys increasing, handles in a row.
        let mut cursor = Cursor::at_restart(&block, 0);
        let mut previous: Option<(Vec<u8>, Handle)> = None;
        let mut entries = 0;
        let mut restart_keys = Vec::with_capacity(restarts);
        while cursor.at < block.restarts_at {
            let restart = cursor.next_restart;
            cursor.step().ok_or(malformed("an entry does not decode"))?;
            if cursor.next_restart > restart {
                restart_keys.push(cursor.key.clone());
            }
            let h = cursor.handle;
            if h.size <= MIN_BLOCK || h.end() > data_bytes {
                return Err(malformed("a data block handle outside the data"));
            }
            if let Some((key, ph)) = &previous {
                if *key >= cursor.key {
                    return Err(malformed("index keys not in increasing order"));
                }
                if ph.end() != h.offset {
                    return Err(malformed("data block handles not one after another"));
                }
            }
            previous = Some((cursor.key.clone(), h));
            entries += 1;
        }
        if cursor.next_restart != restarts {
            return Err(malformed("restart offsets that are not entries"));
        }
        block.entries = entries;
        block.last_key = previous.map(|(k, _)| k.into()).unwrap_or_default();
        block.fences = Fences::new(restart_keys.iter().map(|k| &k[..]));
        Ok(block)
    }

    /// The index block holding the entries of a level-1 block of records (versions 1 and
    /// 2: each record a data block's last key and its 16-byte handle).
    pub fn from_records(records: &Block, data_bytes: u64) -> Result<IndexBlock, BlockProblem> {
        let mut builder = IndexBlockBuilder::default();
        for i in 0..records.len() {
            let (key, value) = records.record(i);
            let handle = Handle::decode(value).ok_or(BlockProblem::Malformed(
                "a data block handle of the wrong size",
            ))?;
            builder.add(key, handle).map_err(|e| {
                BlockProblem::Malformed(match e {
                    AddError::TooLarge => "an index block past 4 GiB",
                    AddError::NotContiguous => "data block handles not one after another",
                })
            })?;
        }
        let mut sealed = Vec::new();
        builder
            .finish(Compression::None, &mut sealed)
            .map_err(|_| BlockProblem::Malformed("an index block past 4 GiB"))?;
        IndexBlock::open(&sealed, data_bytes)
    }

    /// Entries in the block.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether the block holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Bytes of the decoded body, its last key and its fences (what the block takes in a
    /// cache).
    pub fn body_bytes(&self) -> usize {
        self.body.len() + self.last_key.len() + self.fences.bytes() as usize
    }

    /// The last entry's key (empty when there is none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// A cursor on the first entry whose key is at least `key` (invalid when there is
    /// none): the restarts bisected (by their fences, and by their keys where fences tie),
    /// then one run walked.
    pub fn seek(&self, key: &[u8]) -> Cursor<'_> {
        let below = self.fences.count_below(key, |r| {
            let mut c = Cursor::at_restart(self, r);
            c.step().is_some() && *c.key < *key
        });
        // The last restart whose key is below `key` (the first restart when none is).
        let mut c = Cursor::at_restart(self, below.saturating_sub(1));
        while c.advance() && *c.key < *key {}
        c
    }

    /// A cursor on the first entry.
    pub fn first(&self) -> Cursor<'_> {
        let mut c = Cursor::at_restart(self, 0);
        c.advance();
        c
    }

    /// Every entry's key and handle, in order.
    pub fn entries(&self) -> Vec<(Vec<u8>, Handle)> {
        let mut out = Vec::with_capacity(self.entries);
        let mut c = self.first();
        while c.valid() {
            out.push((c.key.clone(), c.handle));
            c.advance();
        }
        out
    }

    /// Where restart `r` starts (`None` past the last).
    fn restart_offset(&self, r: usize) -> Option<usize> {
        if r >= self.restarts {
            return None;
        }
        let at = self.restarts_at.checked_add(r.checked_mul(4)?)?;
        let b = self.body.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes(b.try_into().ok()?) as usize)
    }
}

/// A position in an [`IndexBlock`]: an entry's key and handle, rebuilt from the restart
/// before it.
#[derive(Debug)]
pub struct Cursor<'b> {
    block: &'b IndexBlock,
    /// Where the next entry starts.
    at: usize,
    /// The restart the next restart entry is.
    next_restart: usize,
    key: Vec<u8>,
    handle: Handle,
    valid: bool,
}

impl<'b> Cursor<'b> {
    /// Before the entry at restart `r` (past the end when there is none).
    fn at_restart(block: &'b IndexBlock, r: usize) -> Cursor<'b> {
        Cursor {
            block,
            at: block.restart_offset(r).unwrap_or(block.restarts_at),
            next_restart: r,
            key: Vec::new(),
            handle: Handle { offset: 0, size: 0 },
            valid: false,
        }
    }

    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The entry's key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The entry's data block handle.
    pub fn handle(&self) -> Handle {
        self.handle
    }

    /// Moves to the next entry; whether there is one.
    pub fn advance(&mut self) -> bool {
        self.valid = self.at < self.block.restarts_at && self.step().is_some();
        self.valid
    }

    /// Decodes the entry at `at` (which must be before the restarts), checking what an
    /// unchecked block could get wrong.
    fn step(&mut self) -> Option<()> {
        let body = self.block.body.get(..self.block.restarts_at)?;
        let next_restart = self.block.restart_offset(self.next_restart);
        if next_restart.is_some_and(|r| r < self.at) {
            // A restart offset inside an entry.
            return None;
        }
        let restart = next_restart == Some(self.at);
        let mut at = self.at;
        let shared = get_varint64(body, &mut at)? as usize;
        let rest = get_varint64(body, &mut at)? as usize;
        if shared > self.key.len() || (restart && shared != 0) {
            return None;
        }
        let suffix = body.get(at..at.checked_add(rest)?)?;
        at += rest;
        self.key.truncate(shared);
        self.key.extend_from_slice(suffix);
        let offset = match restart {
            true => get_varint64(body, &mut at)?,
            false => self.handle.end(),
        };
        let size = get_varint64(body, &mut at)?;
        self.handle = Handle { offset, size };
        if restart {
            self.next_restart += 1;
        }
        self.at = at;
        Some(())
    }
}

/// Reads a varint of at most 10 bytes (a `u64`) at `*at`, advancing it.
fn get_varint64(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::kv::block::BlockBuilder;

    /// Entries over `keys` (sorted, distinct) for blocks of `size` bytes from offset 0.
    fn entries(keys: &[Vec<u8>], size: u64) -> Vec<(Vec<u8>, Handle)> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| {
                let h = Handle {
                    offset: i as u64 * size,
                    size,
                };
                (k.clone(), h)
            })
            .collect()
    }

    fn seal_entries(entries: &[(Vec<u8>, Handle)], compression: Compression) -> Vec<u8> {
        let mut b = IndexBlockBuilder::default();
        for (k, h) in entries {
            let predicted = b.body_bytes_with(k, *h);
            b.add(k, *h).expect("a small block");
            assert_eq!(b.body_bytes(), predicted);
        }
        let mut out = Vec::new();
        b.finish(compression, &mut out).expect("a small block");
        out
    }

    fn key_set() -> impl Strategy<Value = Vec<Vec<u8>>> {
        // Few byte values, so that keys share prefixes and sit next to 0xff.
        let byte = prop_oneof![
            Just(0u8),
            Just(1),
            Just(b'5'),
            Just(b'6'),
            Just(0xfe),
            Just(0xff)
        ];
        prop::collection::btree_set(prop::collection::vec(byte, 0..8), 0..80)
            .prop_map(|s| s.into_iter().collect())
    }

    proptest! {
        #[test]
        fn separators_lie_between_and_are_no_longer(
            a in prop::collection::vec(prop_oneof![Just(0u8), Just(b'5'), Just(b'6'), Just(0xff), any::<u8>()], 0..10),
            b in prop::collection::vec(prop_oneof![Just(0u8), Just(b'5'), Just(b'6'), Just(0xff), any::<u8>()], 0..10),
        ) {
            let (last, next) = match a.cmp(&b) {
                std::cmp::Ordering::Less => (a, b),
                std::cmp::Ordering::Greater => (b, a),
                std::cmp::Ordering::Equal => return Ok(()),
            };
            let s = shortest_separator(&last, &next);
            prop_assert!(last <= s && s < next, "{:?} {:?} {:?}", last, s, next);
            prop_assert!(s.len() <= last.len());
            let t = short_successor(&last);
            prop_assert!(t >= last && t.len() <= last.len());
        }

        #[test]
        fn seeks_agree_with_partition_point(
            keys in key_set(),
            probes in prop::collection::vec(prop::collection::vec(prop_oneof![Just(0u8), Just(b'5'), Just(b'6'), Just(0xff)], 0..8), 1..20),
            lz4 in any::<bool>(),
        ) {
            let list = entries(&keys, 100);
            let compression = if lz4 { Compression::Lz4 } else { Compression::None };
            let block = IndexBlock::open(&seal_entries(&list, compression), 100 * keys.len() as u64)
                .expect("a block just written");
            prop_assert_eq!(block.len(), list.len());
            prop_assert_eq!(block.entries(), list.clone());
            prop_assert_eq!(block.last_key(), list.last().map_or(&[][..], |e| &e.0[..]));
            for probe in probes.iter().chain(&keys) {
                let want = list.partition_point(|(k, _)| k < probe);
                let mut c = block.seek(probe);
                for (k, h) in &list[want..] {
                    prop_assert!(c.valid());
                    prop_assert_eq!((c.key(), c.handle()), (k.as_slice(), *h));
                    c.advance();
                }
                prop_assert!(!c.valid());
            }
        }

        #[test]
        fn any_flipped_byte_is_caught(at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let keys: Vec<Vec<u8>> = (0..40u8).map(|i| vec![b'a', i, i]).collect();
            let mut sealed = seal_entries(&entries(&keys, 50), Compression::None);
            let at = at.index(sealed.len());
            sealed[at] ^= 1 << bit;
            prop_assert!(IndexBlock::open(&sealed, 50 * 40).is_err());
        }

        #[test]
        fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let mut sealed = bytes;
            let crc = crc32c::crc32c(&sealed);
            sealed.extend_from_slice(&crc.to_le_bytes());
            if let Ok(block) = IndexBlock::open(&sealed, u64::MAX) {
                let _ = block.seek(b"probe").valid();
                let _ = block.entries();
            }
        }
    }

    #[test]
    fn handles_must_follow_each_other_and_stay_in_the_data() {
        let keys: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i]).collect();
        let list = entries(&keys, 100);
        let sealed = seal_entries(&list, Compression::None);
        assert!(IndexBlock::open(&sealed, 2000).is_ok());
        // The data ends before the last block does.
        assert!(IndexBlock::open(&sealed, 1999).is_err());
        // A gap before a restart (which stores its whole offset): written past the
        // builder's own check, caught when the block is opened.
        let mut b = IndexBlockBuilder::default();
        for (i, (k, h)) in list.iter().enumerate() {
            let h = match i >= 16 {
                true => Handle {
                    offset: h.offset + 1,
                    ..*h
                },
                false => *h,
            };
            if i == 16 {
                b.next_offset = h.offset;
            }
            b.add(k, h).expect("a small block");
        }
        let mut sealed = Vec::new();
        b.finish(Compression::None, &mut sealed)
            .expect("a small block");
        assert!(IndexBlock::open(&sealed, 4000).is_err());
    }

    #[test]
    fn the_builder_refuses_a_handle_that_does_not_follow() {
        let mut b = IndexBlockBuilder::default();
        b.add(
            b"a",
            Handle {
                offset: 0,
                size: 50,
            },
        )
        .expect("first");
        assert_eq!(
            b.add(
                b"b",
                Handle {
                    offset: 51,
                    size: 50
                }
            ),
            Err(AddError::NotContiguous)
        );
        b.add(
            b"b",
            Handle {
                offset: 50,
                size: 50,
            },
        )
        .expect("follows");
    }

    #[test]
    fn old_level1_blocks_read_into_the_same_form() {
        let keys: Vec<Vec<u8>> = (0..50u16)
            .map(|i| format!("key{i:05}").into_bytes())
            .collect();
        let list = entries(&keys, 64);
        let mut b = BlockBuilder::default();
        let mut handle = Vec::new();
        for (k, h) in &list {
            handle.clear();
            h.encode(&mut handle);
            b.add(k, &handle).expect("small");
        }
        let mut sealed = Vec::new();
        b.finish(Compression::None, &mut sealed).expect("small");
        let block = Block::open(&sealed).expect("a block");
        let index = IndexBlock::from_records(&block, 64 * 50).expect("an index block");
        assert_eq!(index.entries(), list);
    }

    #[test]
    fn prefix_compression_and_separators_shrink_decimal_keys() {
        // 20-digit keys, 1000 apart: blocks of 30 keys.
        let keys: Vec<Vec<u8>> = (0..3000u64)
            .map(|i| format!("{:020}", 7_000_000_000 + i * 1000).into_bytes())
            .collect();
        let mut full = IndexBlockBuilder::default();
        let mut short = IndexBlockBuilder::default();
        let mut offset = 0;
        for block in keys.chunks(30) {
            let last = block.last().expect("a key");
            let next = keys.get(keys.iter().position(|k| k == last).expect("in") + 1);
            let sep = next.map_or_else(|| short_successor(last), |n| shortest_separator(last, n));
            assert!(sep.len() < last.len());
            let h = Handle {
                offset,
                size: 32_000,
            };
            offset += 32_000;
            full.add(last, h).expect("small");
            short.add(&sep, h).expect("small");
        }
        // 100 entries of 20-digit keys with 16-byte handles took 2,600 bytes in a block of
        // records (§8.2); prefix compression and delta handles alone take under half.
        assert!(full.body_bytes() < 1300, "{}", full.body_bytes());
        assert!(
            short.body_bytes() < full.body_bytes(),
            "{}",
            short.body_bytes()
        );
    }
}
