//! The partitions file: the pages of a learned partition index, then its model and partition
//! map, all checksummed.
//!
//! | offset | size | field                                                      |
//! |-------:|-----:|------------------------------------------------------------|
//! | 0      | 8    | magic `LIDXPRT\0`                                          |
//! | 8      | 4    | format version (2; 1 is read too)                          |
//! | 12     | 4    | reserved, zero                                             |
//! | 16     | 8    | tuples, n                                                  |
//! | 24     | 8    | partitions, P (at least 1)                                 |
//! | 32     | 8    | pages, G (at least P)                                      |
//! | 40     | 8    | index length L                                             |
//! | 48     | 4    | CRC32C of the index                                        |
//! | 52     | 4    | CRC32C of bytes 0 .. 52                                    |
//! | 56     | 4040 | zero                                                       |
//! | 4096·(1+g) | 4096 | page g: up to 256 (key, word) entries, then zeros      |
//! | 4096·(1+G) | L | the index                                                |
//!
//! An entry's word is the tuple's value or its position in the table, as the index's first
//! `u64` says (version 2: 0 for positions, 1 for values; version 1 has no such word and
//! holds values).
//!
//! The index: the entries word (version 2), the model's length and payload (the PGM payload of `.idx` files, version 2),
//! each partition's tuple count (`P` × `u64`), the pages of every partition in partition
//! order (`G` × `u64`; partition `p` has `max(1, ⌈count / 256⌉)` pages, the first being
//! page `p`), and each page's CRC32C over its 4096 bytes (`G` × `u32`). Integers are
//! little-endian.
#![deny(clippy::indexing_slicing)]

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{Entries, PAGE_TUPLES, PartitionIndex};
use crate::files::AtomicFile;
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::files::paged::{self, PageCrc, PageReader, Pages};
use crate::index::file::{FileKind, VerifyReport};
use crate::index::{Index, Pgm};
use crate::storage::{BLOCK_SIZE, IoStats, TUPLE_SIZE, Table, Tuple};
use crate::{Error, FormatError, Result};

/// The first eight bytes of a partitions file.
pub const MAGIC: [u8; 8] = FileKind::Partition.magic();
/// Format version written; versions 1 (tuples only) to this one are read.
pub const VERSION: u32 = 2;

use crate::files::paged::page_offset;

/// Writes the index after the last page and the header in front; returns the bytes written.
pub(super) fn write_index(out: &mut AtomicFile, index: &PartitionIndex) -> Result<u64> {
    let mut payload = Vec::new();
    let mut model = Vec::new();
    index.ranker.model.encode(&mut model);
    let mut e = Encoder(&mut payload);
    e.u64(index.entries.code());
    e.u64(model.len() as u64);
    e.0.extend_from_slice(&model);
    for &c in &index.counts {
        e.u64(c);
    }
    for &g in &index.pages {
        e.u64(g);
    }
    for &crc in &index.page_crcs {
        e.u32(crc);
    }
    let fields = [index.n, index.partitions(), index.total_pages()];
    paged::write_tail_and_header(out, MAGIC, VERSION, fields, index.total_pages(), &payload)
}

/// An open partitions file: its checked index, and the file for reading pages.
#[derive(Debug)]
pub struct PartitionFile {
    path: PathBuf,
    file: File,
    index: PartitionIndex,
}

impl PartitionFile {
    /// Opens and checks the file at `path`: magic, version, header and index checksums,
    /// the file's length, and the partition map's invariants (counts add up to n, every
    /// page belongs to one partition, each partition has the pages its count needs).
    /// Pages are checked when read.
    pub fn open(path: &Path) -> Result<PartitionFile> {
        let opened = paged::open(path, MAGIC, 1..=VERSION, "lidx partitions file", 2)?;
        let fail = |problem| Error::format(path, problem);
        let [n, partitions, pages] = opened.fields;
        if partitions == 0 || pages < partitions {
            return Err(fail(invalid(
                "partitions",
                partitions,
                "at least 1, and at most the pages",
            )));
        }
        let index =
            decode_index(&opened.tail, opened.version, n, partitions, pages).map_err(fail)?;
        Ok(PartitionFile {
            path: path.to_path_buf(),
            file: opened.file,
            index,
        })
    }

    /// The model and partition map.
    pub fn index(&self) -> &PartitionIndex {
        &self.index
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Asks the kernel to start reading partition `p`'s pages into the page cache
    /// (`posix_fadvise(WILLNEED)`, one call per run of consecutive pages) and returns at
    /// once, so that they arrive while the caller works on the partition before; a later
    /// [`read_partition`](Self::read_partition) finds them there. A hint: where the kernel
    /// declines it, nothing changes.
    pub fn prefetch_partition(&self, p: u64) {
        let pages = self.index.pages_of(p);
        for run in pages.chunk_by(|a, b| b.checked_sub(*a) == Some(1)) {
            let len = std::num::NonZeroU64::new(run.len() as u64 * BLOCK_SIZE as u64);
            let Some(&first) = run.first() else {
                continue;
            };
            let _ = rustix::fs::fadvise(
                &self.file,
                page_offset(first),
                len,
                rustix::fs::Advice::WillNeed,
            );
        }
    }

    /// Appends partition `p`'s entries (unsorted, in the order they were written) to
    /// `tuples`, each a key and its word (a value or a position, as
    /// [`entries`](PartitionIndex::entries) says), reading its pages (consecutive pages in one read) and checking each
    /// page's checksum. Returns the I/O.
    pub fn read_partition(&self, p: u64, tuples: &mut Vec<Tuple>) -> Result<IoStats> {
        self.scan_pages(p, usize::MAX, |_, page, live| {
            tuples.extend(live_tuples(page, live));
            Ok(())
        })
    }

    /// Hands partition `p`'s tuples to `visit` in the order they were written, a read of
    /// at most `max_pages` pages at a time (consecutive pages in one read), checking each
    /// page's checksum: for partitions too large to hold. Returns the I/O.
    pub fn scan_partition(
        &self,
        p: u64,
        max_pages: usize,
        mut visit: impl FnMut(&[Tuple]) -> Result<()>,
    ) -> Result<IoStats> {
        let mut tuples: Vec<Tuple> = Vec::new();
        let mut pages_held = 0;
        self.scan_pages(p, max_pages, |_, page, live| {
            tuples.extend(live_tuples(page, live));
            pages_held += 1;
            if pages_held == max_pages.max(1) {
                visit(&tuples)?;
                tuples.clear();
                pages_held = 0;
            }
            Ok(())
        })
        .and_then(|io| {
            if !tuples.is_empty() {
                visit(&tuples)?;
            }
            Ok(io)
        })
    }

    /// Calls `visit` with the number, the 4096 bytes and the count of tuples of each of
    /// partition `p`'s pages in order, reading runs of consecutive pages (at most
    /// `max_pages`) in one call each through the paged-file reader, which checks every
    /// page's checksum and counts the I/O.
    fn scan_pages(
        &self,
        p: u64,
        max_pages: usize,
        mut visit: impl FnMut(u64, &[u8], usize) -> Result<()>,
    ) -> Result<IoStats> {
        let pages = self.index.pages_of(p);
        let mut left = self.index.count(p);
        let file = self.pages();
        let mut reader = PageReader::new(0);
        // A run of consecutive page numbers, at most `max_pages` of them, is one read.
        for consecutive in pages.chunk_by(|a, b| b.checked_sub(*a) == Some(1)) {
            for numbers in consecutive.chunks(max_pages.max(1)) {
                let Some(&first) = numbers.first() else {
                    continue;
                };
                let run = reader.read_run(&file, first, numbers.len() as u64)?;
                for (page, &number) in run.chunks_exact(BLOCK_SIZE).zip(numbers) {
                    let here = left.min(PAGE_TUPLES) as usize;
                    visit(number, page, here)?;
                    left -= here as u64;
                }
            }
        }
        Ok(reader.stats())
    }

    /// The file's pages as the paged-file reader reads them, their CRCs in the index.
    fn pages(&self) -> Pages<'_> {
        Pages::paged(
            &self.file,
            &self.path,
            self.index.total_pages(),
            PageCrc::Apart(&self.index.page_crcs),
            false,
        )
    }

    /// The words of every entry with key `key` (values or positions, as
    /// [`entries`](PartitionIndex::entries) says), in the order they were written: reads
    /// exactly the key's partition.
    pub fn lookup(&self, key: u64) -> Result<Vec<u64>> {
        let mut tuples = Vec::new();
        self.read_partition(self.index.partition_of(key), &mut tuples)?;
        Ok(tuples
            .into_iter()
            .filter(|t| t.key == key)
            .map(|t| t.value)
            .collect())
    }

    /// Opens the partitions file at `path` and checks everything its format has: what
    /// [`open`](Self::open) checks, then every page, partition by partition: its checksum,
    /// each tuple's key ranked by the model to the partition that holds it, and zeros
    /// after the partition's last tuple; where entries are positions, each one below the
    /// tuples and named once. With `table` (the (key, value) table it was built from), also
    /// that each partition holds exactly the table's tuples (or their keys and positions)
    /// whose keys rank to it, in the table's order (their count and CRC32C), so a lookup of
    /// any of the table's keys finds all its tuples in the partition it reads.
    pub fn verify_file(path: &Path, table: Option<&Table>) -> Result<VerifyReport> {
        let file = PartitionFile::open(path)?;
        let index = &file.index;
        let corrupt = |problem: String| Error::format(path, FormatError::Inconsistent(problem));
        // Each partition's tuples as written: their CRC32C, for the table to match.
        let mut crcs = Vec::with_capacity(index.counts.len());
        let pointers = index.entries == Entries::Pointers;
        let mut named = PositionSet::new(if pointers { index.len() } else { 0 });
        for p in 0..index.partitions() {
            let mut crc = 0u32;
            file.scan_pages(p, 64, |page_no, page, live| {
                let (tuples, padding) = page.split_at(live * TUPLE_SIZE);
                if let Some(problem) = paged::nonzero_at(padding, tuples.len(), "byte") {
                    return Err(corrupt(format!(
                        "in page {page_no}, after partition {p}'s last tuple, {problem}"
                    )));
                }
                for t in live_tuples(page, live) {
                    if pointers && !named.insert(t.value) {
                        return Err(corrupt(format!(
                            "partition {p} names position {}, which is past the {} tuples or named twice",
                            t.value,
                            index.len()
                        )));
                    }
                    let q = index.partition_of(t.key);
                    if q != p {
                        return Err(corrupt(format!(
                            "partition {p} holds key {}, which the model ranks to partition {q}",
                            t.key
                        )));
                    }
                }
                crc = crc32c::crc32c_append(crc, tuples);
                Ok(())
            })?;
            crcs.push(crc);
        }
        let pages = index.total_pages();
        let table_tuples = match table {
            Some(table) => Some(file.check_table(table, &crcs)?),
            None => None,
        };
        let bytes = file
            .file
            .metadata()
            .map_err(|e| Error::io(path, "read the metadata of", e))?
            .len();
        Ok(VerifyReport {
            kind: FileKind::Partition,
            bytes,
            checksums: 2 + pages,
            pages,
            entries: index.len(),
            table_tuples,
        })
    }

    /// Fails with [`Error::IndexMismatch`] unless each partition `p` holds exactly the
    /// tuples of `table` whose keys rank to it, in table order: as many as the table's, with
    /// the CRC32C `crcs[p]` of theirs. Returns the table's tuples.
    fn check_table(&self, table: &Table, crcs: &[u32]) -> Result<u64> {
        table.require_pairs("verifying a partition index against a table")?;
        let index = &self.index;
        let mismatch = |problem: String| Error::IndexMismatch {
            path: self.path.clone(),
            problem: format!("{problem}; rebuild it"),
        };
        if table.len() != index.len() {
            return Err(mismatch(format!(
                "the index holds {} tuples, {} holds {}",
                index.len(),
                table.path().display(),
                table.len()
            )));
        }
        let mut counts = vec![0u64; index.counts.len()];
        let mut table_crcs = vec![0u32; index.counts.len()];
        let mut position = 0u64;
        table.scan(|tuples| {
            for &t in tuples {
                let p = index.partition_of(t.key) as usize;
                let entry = match index.entries {
                    Entries::Tuples => t,
                    Entries::Pointers => Tuple {
                        key: t.key,
                        value: position,
                    },
                };
                position += 1;
                if let (Some(c), Some(crc)) = (counts.get_mut(p), table_crcs.get_mut(p)) {
                    *c += 1;
                    *crc = crc32c::crc32c_append(*crc, bytemuck::bytes_of(&entry));
                }
            }
            Ok(())
        })?;
        for p in 0..index.partitions() {
            let at = p as usize;
            let (file_count, table_count) = (index.count(p), counts.get(at).copied().unwrap_or(0));
            if file_count != table_count || crcs.get(at) != table_crcs.get(at) {
                return Err(mismatch(format!(
                    "partition {p} holds {file_count} tuples, and not the {table_count} of {} whose keys rank to it",
                    table.path().display()
                )));
            }
        }
        Ok(table.len())
    }
}

/// A set of positions below a bound, a bit each.
pub(crate) struct PositionSet {
    words: Vec<u64>,
    bound: u64,
}

impl PositionSet {
    /// The empty set of positions below `bound`.
    pub(crate) fn new(bound: u64) -> PositionSet {
        PositionSet {
            words: vec![0; usize::try_from(bound.div_ceil(64)).unwrap_or(usize::MAX)],
            bound,
        }
    }

    /// Adds `position`; false if it is at or past the bound or already in the set.
    pub(crate) fn insert(&mut self, position: u64) -> bool {
        let bit = 1u64 << (position % 64);
        match self
            .words
            .get_mut(usize::try_from(position / 64).unwrap_or(usize::MAX))
        {
            Some(w) if position < self.bound && *w & bit == 0 => {
                *w |= bit;
                true
            }
            _ => false,
        }
    }
}

/// The first `live` tuples of a page.
fn live_tuples(page: &[u8], live: usize) -> impl Iterator<Item = Tuple> + '_ {
    page.chunks_exact(TUPLE_SIZE)
        .take(live)
        .map(|b| *bytemuck::from_bytes::<Tuple>(b))
}

/// Decodes and checks the index of a file of format `version` with `n` tuples,
/// `partitions` and `pages`.
fn decode_index(
    bytes: &[u8],
    version: u32,
    n: u64,
    partitions: u64,
    pages: u64,
) -> std::result::Result<PartitionIndex, FormatError> {
    let mut d = Decoder::new(bytes, "a partitions file's index");
    let entries = if version >= 2 {
        let code = d.u64()?;
        Entries::from_code(code)
            .ok_or_else(|| invalid("entries", code, "0 (positions) or 1 (values)"))?
    } else {
        Entries::Tuples
    };
    let model_len = d.count(1)?;
    let model = Pgm::decode(d.bytes(model_len)?)?;
    if (n == 0) != (model.len() == 0) {
        return Err(invalid(
            "model keys",
            model.len(),
            "at least one sampled key when n > 0",
        ));
    }
    let p = usize::try_from(partitions).unwrap_or(usize::MAX);
    let g = usize::try_from(pages).unwrap_or(usize::MAX);
    let mut counts = Vec::with_capacity(p.min(bytes.len() / 8));
    let mut page_start = Vec::with_capacity(counts.capacity() + 1);
    page_start.push(0u64);
    let mut total = 0u64;
    for _ in 0..partitions {
        let c = d.u64()?;
        total = total.saturating_add(c);
        counts.push(c);
        let needs = c.div_ceil(PAGE_TUPLES).max(1);
        let end = page_start
            .last()
            .copied()
            .unwrap_or(0)
            .saturating_add(needs);
        page_start.push(end);
    }
    if total != n {
        return Err(FormatError::HeaderDisagrees {
            field: "tuples",
            header: n,
            data: total,
        });
    }
    if page_start.last().copied() != Some(pages) {
        return Err(FormatError::HeaderDisagrees {
            field: "pages",
            header: pages,
            data: page_start.last().copied().unwrap_or(0),
        });
    }
    let mut seen = vec![false; g.min(bytes.len() / 8 + 1)];
    let mut list = Vec::with_capacity(seen.len());
    for _ in 0..pages {
        let page = d.u64()?;
        match seen.get_mut(usize::try_from(page).unwrap_or(usize::MAX)) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(invalid(
                    "page",
                    page,
                    "a page below the page count, listed once",
                ));
            }
        }
        list.push(page);
    }
    let mut page_crcs = Vec::with_capacity(seen.len());
    for _ in 0..pages {
        page_crcs.push(d.u32()?);
    }
    d.finish()?;
    Ok(PartitionIndex {
        ranker: super::Ranker::new(model),
        entries,
        n,
        counts,
        page_start,
        pages: list,
        page_crcs,
    })
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
    use crate::memory::MemoryBudget;
    use crate::partition::{PartitionParams, build};
    use crate::storage::TableWriter;

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

    /// Small partitions that overflow their page, or the default ones.
    fn params(small: bool) -> PartitionParams {
        if small {
            PartitionParams {
                partition_tuples: 4,
                flush_tuples: 1,
                sample_fraction: 0.5,
                ..PartitionParams::default()
            }
        } else {
            PartitionParams::default()
        }
    }

    /// The partitions file of `table` at `dir/u.pidx`.
    fn built(dir: &Path, table: &Table, small: bool) -> PathBuf {
        let out = dir.join("u.pidx");
        build(
            table,
            &out,
            &params(small),
            &MemoryBudget::unlimited(),
            |_| {},
        )
        .unwrap();
        out
    }

    /// 1,000 shuffled keys in small partitions, some past their first page.
    fn thousand(dir: &Path) -> (Table, PathBuf, Vec<u8>) {
        let keys: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 5000)
            .collect();
        let table = table_of(dir, "u.tbl", &keys);
        let out = built(dir, &table, true);
        let bytes = std::fs::read(&out).unwrap();
        (table, out, bytes)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn valid_files_verify_against_their_table(keys in key_set(), small in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let table = table_of(dir.path(), "u.tbl", &keys);
            let out = built(dir.path(), &table, small);
            let pages = PartitionFile::open(&out).unwrap().index().total_pages();
            let report = PartitionFile::verify_file(&out, Some(&table)).unwrap();
            prop_assert_eq!(
                report,
                VerifyReport {
                    kind: FileKind::Partition,
                    bytes: std::fs::metadata(&out).unwrap().len(),
                    checksums: 2 + pages,
                    pages,
                    entries: keys.len() as u64,
                    table_tuples: Some(keys.len() as u64),
                }
            );
            prop_assert_eq!(PartitionFile::verify_file(&out, None).unwrap().table_tuples, None);
        }
    }

    #[test]
    fn a_flipped_byte_in_the_unused_header_is_refused_by_open_and_verify() {
        let dir = tempfile::tempdir().unwrap();
        let (_, _, good) = thousand(dir.path());
        let damaged = dir.path().join("d.pidx");
        // The reserved word is under the header's CRC: a forger's change, CRC fixed.
        let mut reserved = flipped(&good, 12);
        reseal(&mut reserved, u64_at(&good, 32));
        for (at, bytes) in [
            (100, flipped(&good, 100)),
            (4095, flipped(&good, 4095)),
            (12, reserved),
        ] {
            std::fs::write(&damaged, bytes).unwrap();
            let want = format!("d.pidx: header byte {at} is 0x40 where the format has zero");
            let err = PartitionFile::open(&damaged).unwrap_err().to_string();
            assert!(err.contains(&want), "{err}");
            let err = PartitionFile::verify_file(&damaged, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains(&want), "{err}");
        }
    }

    #[test]
    fn four_flipped_bytes_in_the_middle_pass_open_and_fail_verify() {
        let dir = tempfile::tempdir().unwrap();
        let (table, _, good) = thousand(dir.path());
        let mut bytes = good.clone();
        let mid = bytes.len() / 2;
        assert!(
            mid < u64_at(&bytes, 32) as usize * BLOCK_SIZE,
            "the middle is a page"
        );
        for b in &mut bytes[mid..mid + 4] {
            *b ^= 0x55;
        }
        let damaged = dir.path().join("d.pidx");
        std::fs::write(&damaged, &bytes).unwrap();
        PartitionFile::open(&damaged).unwrap();
        for t in [None, Some(&table)] {
            let err = PartitionFile::verify_file(&damaged, t)
                .unwrap_err()
                .to_string();
            assert!(err.contains("checksum mismatch in data block"), "{err}");
        }
    }

    /// `bytes` with page `page` changed by `change` and every checksum made to fit.
    fn forged(bytes: &[u8], page: u64, change: impl FnOnce(&mut [u8])) -> Vec<u8> {
        let mut bytes = bytes.to_vec();
        let pages = u64_at(&bytes, 32);
        let at = page_offset(page) as usize;
        change(&mut bytes[at..at + BLOCK_SIZE]);
        let crc = crc32c::crc32c(&bytes[at..at + BLOCK_SIZE]);
        let crc_at = bytes.len() - 4 * (pages - page) as usize;
        bytes[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        reseal(&mut bytes, pages);
        bytes
    }

    #[test]
    fn forged_pages_pass_open_and_reads_but_fail_verify() {
        let dir = tempfile::tempdir().unwrap();
        let (table, out, good) = thousand(dir.path());
        let file = PartitionFile::open(&out).unwrap();
        let index = file.index();
        let damaged = dir.path().join("d.pidx");
        let check = |bytes: &[u8], want: &str| {
            std::fs::write(&damaged, bytes).unwrap();
            let opened = PartitionFile::open(&damaged).unwrap();
            for p in 0..index.partitions() {
                opened.read_partition(p, &mut Vec::new()).unwrap();
            }
            let err = PartitionFile::verify_file(&damaged, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{err}");
        };
        // A byte after a partition's last tuple.
        let p = (0..index.partitions())
            .find(|&p| !index.count(p).is_multiple_of(PAGE_TUPLES))
            .unwrap();
        let last = *index.pages_of(p).last().unwrap();
        let live = (index.count(p) % PAGE_TUPLES) as usize * TUPLE_SIZE;
        check(
            &forged(&good, last, |page| page[live + 5] = 1),
            &format!(
                "in page {last}, after partition {p}'s last tuple, byte {} is 0x01",
                live + 5
            ),
        );
        // A key moved to the first partition from the last one.
        let first = index.pages_of(0)[0];
        check(
            &forged(&good, first, |page| {
                page[..8].copy_from_slice(&4999u64.to_le_bytes())
            }),
            "partition 0 holds key 4999, which the model ranks to partition",
        );
        // A pointer changed to another entry's position.
        check(
            &forged(&good, first, |page| page[8] ^= 1),
            "which is past the 1000 tuples or named twice",
        );
        // A pointer past the table.
        check(
            &forged(&good, first, |page| {
                page[8..16].copy_from_slice(&1000u64.to_le_bytes())
            }),
            "partition 0 names position 1000, which is past the 1000 tuples",
        );
        // A value changed in a file of tuples: only the table knows.
        let tuples = dir.path().join("t.pidx");
        let params = PartitionParams {
            entries: Entries::Tuples,
            ..params(true)
        };
        build(&table, &tuples, &params, &MemoryBudget::unlimited(), |_| {}).unwrap();
        let good = std::fs::read(&tuples).unwrap();
        let first = PartitionFile::open(&tuples).unwrap().index().pages_of(0)[0];
        let bytes = forged(&good, first, |page| page[8] ^= 1);
        std::fs::write(&damaged, &bytes).unwrap();
        PartitionFile::verify_file(&damaged, None).unwrap();
        let err = PartitionFile::verify_file(&damaged, Some(&table))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("partition 0 holds") && err.contains("whose keys rank to it"),
            "{err}"
        );
    }

    #[test]
    fn verify_refuses_another_table() {
        let dir = tempfile::tempdir().unwrap();
        let (table, out, _) = thousand(dir.path());
        let keys: Vec<u64> = (0..1000).collect();
        let other = table_of(dir.path(), "o.tbl", &keys);
        let err = PartitionFile::verify_file(&out, Some(&other))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("o.tbl whose keys rank to it; rebuild it"),
            "{err}"
        );
        let fewer = table_of(dir.path(), "f.tbl", &keys[..999]);
        let err = PartitionFile::verify_file(&out, Some(&fewer))
            .unwrap_err()
            .to_string();
        assert!(err.contains("the index holds 1000 tuples"), "{err}");
        PartitionFile::verify_file(&out, Some(&table)).unwrap();
    }
}
