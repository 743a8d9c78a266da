//! Writing, opening, mapping and verifying `.tbl` table files (paper 1, section 4.1).
//!
//! [`TableWriter`] streams tuples into a new table, computing each block's checksum and the
//! header's facts (count, sortedness, smallest and largest key) as it goes; the file appears
//! only when [`TableWriter::finish`] succeeds. [`Table::open`] checks the header and the
//! file's length and loads the checksum array; the data is then reached either through
//! [`Table::map`] (a memory map, checked once in full) or through a
//! [`BlockReader`](super::BlockReader) (window reads, checked block by block).
#![deny(clippy::indexing_slicing)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::format::{
    BLOCK_SIZE, OUTPUT_TUPLE_SIZE, OUTPUT_VALUE_WIDTH, OutputTuple, PAIR_VALUE_WIDTH, TUPLE_SIZE,
    TableHeader, TableLayout, Tuple, block_checksum, decode_checksums,
};
use crate::data::KeyFile;
use crate::files::{AtomicFile, map_readonly, open_regular, refuse_same_file};
use crate::{Error, FormatError, Result};

/// Bytes read per call by [`Table::verify`].
const VERIFY_CHUNK: usize = 4 << 20;

/// Where a table built from a key file gets its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueSource {
    /// The key's position in the key file (0-based).
    RowId,
    /// [`key_hash`] of the key: a value that depends on the key alone.
    KeyHash,
}

impl ValueSource {
    /// The value of `key`, found at `row` of its key file.
    pub fn value(self, row: u64, key: u64) -> u64 {
        match self {
            ValueSource::RowId => row,
            ValueSource::KeyHash => key_hash(key),
        }
    }
}

/// The value [`ValueSource::KeyHash`] stores: the 64-bit finalizer of MurmurHash3
/// (`fmix64`), a bijection on `u64`, so equal keys get equal values and distinct keys
/// distinct ones.
pub fn key_hash(key: u64) -> u64 {
    let mut h = key;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// Streams tuples into a new table file.
///
/// Invariant: the file at the destination path is either absent (or the old file) or a
/// complete, checksummed table; an unfinished writer removes its temporary file on drop.
pub struct TableWriter {
    out: AtomicFile,
    block: Vec<u8>,
    checksums: Vec<u32>,
    header: TableHeader,
    last_key: Option<u64>,
}

impl TableWriter {
    /// Starts a table of (key, value) tuples at `path`.
    pub fn create(path: &Path) -> Result<Self> {
        Self::with_value_width(path, PAIR_VALUE_WIDTH)
    }

    /// Starts a join output table of (key, outer value, inner value) tuples at `path`.
    pub fn create_output(path: &Path) -> Result<Self> {
        Self::with_value_width(path, OUTPUT_VALUE_WIDTH)
    }

    /// A (key, value) table whose writer buffers only `buffer` bytes (for many tables
    /// written at once, such as a partitioning join's partitions).
    pub fn create_with_buffer(path: &Path, buffer: usize) -> Result<Self> {
        Self::new_writer(AtomicFile::with_buffer(path, buffer)?, PAIR_VALUE_WIDTH)
    }

    fn with_value_width(path: &Path, value_width: u8) -> Result<Self> {
        Self::new_writer(AtomicFile::create(path)?, value_width)
    }

    fn new_writer(mut out: AtomicFile, value_width: u8) -> Result<Self> {
        out.write_all(&[0u8; BLOCK_SIZE])?; // the header, filled in by `finish`
        Ok(Self {
            out,
            block: Vec::with_capacity(BLOCK_SIZE),
            checksums: Vec::new(),
            header: TableHeader {
                value_width,
                ..TableHeader::EMPTY
            },
            last_key: None,
        })
    }

    /// Appends one (key, value) tuple; fails on a join output table.
    pub fn push(&mut self, tuple: Tuple) -> Result<()> {
        self.check_width(PAIR_VALUE_WIDTH)?;
        self.append(tuple.key, bytemuck::bytes_of(&tuple))
    }

    /// Appends one join output tuple; fails on a (key, value) table.
    pub fn push_output(&mut self, tuple: OutputTuple) -> Result<()> {
        self.check_width(OUTPUT_VALUE_WIDTH)?;
        self.append(tuple.key, bytemuck::bytes_of(&tuple))
    }

    fn check_width(&self, value_width: u8) -> Result<()> {
        if self.header.value_width == value_width {
            Ok(())
        } else {
            Err(Error::misuse(
                "TableWriter",
                format!(
                    "{}: a table of {}-byte values takes no {value_width}-byte values",
                    self.out.path().display(),
                    self.header.value_width
                ),
            ))
        }
    }

    fn append(&mut self, key: u64, bytes: &[u8]) -> Result<()> {
        let tuple = Tuple { key, value: 0 };
        let h = &mut self.header;
        match self.last_key {
            None => {
                h.min_key = tuple.key;
                h.max_key = tuple.key;
            }
            Some(last) => {
                h.sorted &= last <= tuple.key;
                h.distinct &= last < tuple.key;
                h.min_key = h.min_key.min(tuple.key);
                h.max_key = h.max_key.max(tuple.key);
            }
        }
        h.count += 1;
        self.last_key = Some(tuple.key);
        self.block.extend_from_slice(bytes);
        // A block holds whole tuples; the rest of it (16 bytes for join outputs) is zero.
        if self.block.len() + bytes.len() > BLOCK_SIZE {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Number of tuples pushed so far.
    pub fn len(&self) -> u64 {
        self.header.count
    }

    /// True when nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.header.count == 0
    }

    fn flush_block(&mut self) -> Result<()> {
        self.block.resize(BLOCK_SIZE, 0);
        self.checksums.push(block_checksum(&self.block));
        self.out.write_all(&self.block)?;
        self.block.clear();
        Ok(())
    }

    /// Pads the last block, writes the checksum array and the header, and publishes the
    /// file atomically. Returns the header written.
    pub fn finish(mut self) -> Result<TableHeader> {
        if !self.block.is_empty() {
            self.flush_block()?;
        }
        let mut sums: Vec<u8> = self
            .checksums
            .iter()
            .flat_map(|c| c.to_le_bytes())
            .collect();
        sums.resize(sums.len().next_multiple_of(BLOCK_SIZE), 0);
        self.out.write_all(&sums)?;
        let header = self.header;
        self.out.write_at(0, &header.encode())?;
        self.out.finish()?;
        Ok(header)
    }
}

/// Writes `keys` as a table at `path`, with values from `values`; `progress` is called with
/// the number of tuples written so far every 2^20 tuples.
pub fn build_from_keys(
    keys: &[u64],
    values: ValueSource,
    path: &Path,
    progress: impl FnMut(u64),
) -> Result<TableHeader> {
    build_from_rows(keys.iter().copied().enumerate(), values, path, progress)
}

/// Writes the keys of the key file `keys` as a table at `path`, as [`build_from_keys`]
/// (or, with `distinct`, [`build_distinct_from_keys`]) does: the pipeline behind
/// `lidx table build`. Refuses, before writing anything, a `path` that is the key file
/// ([`Error::OutputIsInput`]) and unsorted keys with `distinct` (whose runs of equal keys
/// must be adjacent).
pub fn build_from_key_file(
    keys: &KeyFile,
    values: ValueSource,
    distinct: bool,
    path: &Path,
    progress: impl FnMut(u64),
) -> Result<TableHeader> {
    refuse_same_file(keys.path(), path)?;
    if distinct {
        keys.require_sorted(
            "keeping the first of each run of equal keys (--dedup) needs them sorted",
        )?;
        build_distinct_from_keys(keys.keys(), values, path, progress)
    } else {
        build_from_keys(keys.keys(), values, path, progress)
    }
}

/// Like [`build_from_keys`], keeping only the first of each run of equal keys (for real
/// data sets that carry duplicates, where paper 1's tables have distinct keys). The row id
/// stored is the kept key's position in `keys`.
pub fn build_distinct_from_keys(
    keys: &[u64],
    values: ValueSource,
    path: &Path,
    progress: impl FnMut(u64),
) -> Result<TableHeader> {
    let firsts = keys
        .iter()
        .copied()
        .enumerate()
        .filter(|&(i, k)| i == 0 || keys.get(i - 1) != Some(&k));
    build_from_rows(firsts, values, path, progress)
}

/// The tuples of `keys` with values from `values`, in the keys' order.
pub fn tuples_from_keys(keys: &[u64], values: ValueSource) -> Vec<Tuple> {
    keys.iter()
        .enumerate()
        .map(|(row, &key)| Tuple {
            key,
            value: values.value(row as u64, key),
        })
        .collect()
}

/// Writes `tuples` as a table at `path` in an order drawn from `seed`: a Fisher-Yates
/// shuffle driven by Xoshiro256++, so the same tuples and seed give the same file. Paper 1
/// (section 5.4) shuffles its keys to make the unsorted tables it joins. Holds the tuples
/// in memory (16 bytes each); `progress` as in [`build_from_keys`].
pub fn write_shuffled(
    mut tuples: Vec<Tuple>,
    seed: u64,
    path: &Path,
    mut progress: impl FnMut(u64),
) -> Result<TableHeader> {
    crate::data::shuffle(&mut tuples, seed);
    let mut writer = TableWriter::create(path)?;
    for (i, &tuple) in tuples.iter().enumerate() {
        writer.push(tuple)?;
        if i % (1 << 20) == 0 {
            progress(i as u64);
        }
    }
    progress(writer.len());
    writer.finish()
}

fn build_from_rows(
    rows: impl Iterator<Item = (usize, u64)>,
    values: ValueSource,
    path: &Path,
    mut progress: impl FnMut(u64),
) -> Result<TableHeader> {
    let mut writer = TableWriter::create(path)?;
    for (row, key) in rows {
        writer.push(Tuple {
            key,
            value: values.value(row as u64, key),
        })?;
        if row % (1 << 20) == 0 {
            progress(row as u64);
        }
    }
    progress(writer.len());
    writer.finish()
}

/// An open table: its checked header, layout and block checksums.
///
/// Opening checks magic, version, header checksum, fields and that the file's length is
/// exactly what the tuple count implies; data blocks are checked when read.
#[derive(Debug)]
pub struct Table {
    path: PathBuf,
    file: File,
    header: TableHeader,
    layout: TableLayout,
    checksums: Vec<u32>,
}

impl Table {
    /// Opens and checks the table at `path`.
    pub fn open(path: &Path) -> Result<Table> {
        let (file, len) = open_regular(path)?;
        let head_len = len.min(BLOCK_SIZE as u64) as usize;
        let mut head = vec![0u8; head_len];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| Error::io(path, "read the header of", e))?;
        let header = TableHeader::decode(&head).map_err(|p| Error::format(path, p))?;
        let layout = header.layout().map_err(|p| Error::format(path, p))?;
        if len != layout.file_len() {
            return Err(Error::format(
                path,
                FormatError::CountMismatch {
                    count: header.count,
                    unit: "tuples",
                    expected: layout.file_len(),
                    actual: len,
                },
            ));
        }
        // The length was checked, so this is at most 1/1024 of the file; a sparse file can
        // still make that large, hence the fallible allocation.
        let sums_len = (layout.checksum_blocks as usize) * BLOCK_SIZE;
        let mut sums = Vec::new();
        sums.try_reserve_exact(sums_len).map_err(|_| {
            Error::io(
                path,
                "load the checksums of",
                std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!("{sums_len} bytes cannot be allocated"),
                ),
            )
        })?;
        sums.resize(sums_len, 0);
        file.read_exact_at(&mut sums, layout.checksum_offset())
            .map_err(|e| Error::io(path, "read the checksums of", e))?;
        let checksums =
            decode_checksums(&sums, layout.data_blocks).map_err(|p| Error::format(path, p))?;
        if sums
            .get(checksums.len() * 4..)
            .unwrap_or_default()
            .iter()
            .any(|&b| b != 0)
        {
            return Err(Error::format(
                path,
                FormatError::NonZeroPadding {
                    what: "the checksum array",
                },
            ));
        }
        Ok(Table {
            path: path.to_path_buf(),
            file,
            header,
            layout,
            checksums,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A second handle to the same open file (its descriptor duplicated, so a rename of the
    /// path since does not matter), with the same checked header and checksums; for a
    /// reader on another thread.
    pub fn try_clone(&self) -> Result<Table> {
        Ok(Table {
            path: self.path.clone(),
            file: self
                .file
                .try_clone()
                .map_err(|e| Error::io(&self.path, "duplicate the handle of", e))?,
            header: self.header,
            layout: self.layout,
            checksums: self.checksums.clone(),
        })
    }

    /// The checked header.
    pub fn header(&self) -> &TableHeader {
        &self.header
    }

    /// Where the parts of the file live.
    pub fn layout(&self) -> &TableLayout {
        &self.layout
    }

    /// Number of tuples.
    pub fn len(&self) -> u64 {
        self.header.count
    }

    /// True for a table of no tuples.
    pub fn is_empty(&self) -> bool {
        self.header.count == 0
    }

    /// The stored CRC32C of each data block.
    pub fn checksums(&self) -> &[u32] {
        &self.checksums
    }

    /// The open file handle (buffered I/O).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Fails with [`Error::NotSorted`] unless the header says the keys are sorted;
    /// `what` names the command or operation that needs it.
    pub fn require_sorted(&self, what: &'static str) -> Result<()> {
        if self.header.sorted {
            Ok(())
        } else {
            Err(Error::NotSorted {
                path: self.path.clone(),
                what,
            })
        }
    }

    /// Checks a data block's bytes against its stored checksum.
    pub fn check_block(&self, block: u64, bytes: &[u8]) -> Result<()> {
        let expected = usize::try_from(block)
            .ok()
            .and_then(|b| self.checksums.get(b).copied())
            .ok_or_else(|| {
                Error::misuse(
                    "Table::check_block",
                    format!("block {block} is past the table's last data block"),
                )
            })?;
        let got = block_checksum(bytes);
        if got == expected {
            Ok(())
        } else {
            Err(Error::ChecksumMismatch {
                path: self.path.clone(),
                block,
                expected,
                got,
            })
        }
    }

    /// Checks consecutive data blocks, the first of them block `first`, against their stored
    /// checksums; `bytes` holds whole blocks.
    pub fn check_blocks(&self, first: u64, bytes: &[u8]) -> Result<()> {
        for (i, block) in bytes.chunks_exact(BLOCK_SIZE).enumerate() {
            self.check_block(first + i as u64, block)?;
        }
        Ok(())
    }

    /// Maps the data into memory after checking every block's checksum once.
    pub fn map(&self) -> Result<MappedTable> {
        let mapped = self.map_unchecked()?;
        self.check_blocks(0, mapped.data_bytes())?;
        Ok(mapped)
    }

    /// Maps the data into memory without checking checksums (for callers that verified
    /// the file already).
    pub fn map_unchecked(&self) -> Result<MappedTable> {
        self.require_pairs("mapping (key, value) tuples")?;
        if self.layout.data_blocks == 0 {
            return Ok(MappedTable {
                map: None,
                count: 0,
            });
        }
        let map = map_readonly(
            &self.file,
            &self.path,
            BLOCK_SIZE as u64,
            self.layout.data_len() as usize,
        )?;
        Ok(MappedTable {
            map: Some(map),
            count: self.header.count,
        })
    }

    /// Fails unless the table holds (key, value) tuples; `what` names the operation that
    /// needs them (join outputs hold (key, outer value, inner value) tuples).
    pub fn require_pairs(&self, what: &'static str) -> Result<()> {
        if self.header.is_output() {
            Err(Error::WrongTuples {
                path: self.path.clone(),
                holds: "join output tuples (key, outer value, inner value)",
                needs: "(key, value) tuples",
                what,
            })
        } else {
            Ok(())
        }
    }

    /// Reads the data sequentially in large reads, checking each block's checksum and that
    /// every byte after a block's tuples is zero, and hands `visit` each chunk of whole
    /// blocks (8-byte aligned) with the number of tuples it holds.
    #[expect(
        clippy::indexing_slicing,
        reason = "a chunk is at most the buffer's bytes; a block's live tuples at most its 4096 bytes (tuples per block and tuple size are checked at open)"
    )]
    fn scan_blocks(
        &self,
        chunk_bytes: usize,
        mut visit: impl FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<()> {
        let (ts, tpb) = (self.layout.tuple_size, self.layout.tuples_per_block);
        let chunk_bytes = (chunk_bytes - chunk_bytes % BLOCK_SIZE).max(BLOCK_SIZE);
        let mut buf = vec![0u64; chunk_bytes / 8];
        let data_len = self.layout.data_len();
        let (mut done, mut before) = (0u64, 0u64);
        while done < data_len {
            let len = (data_len - done).min(chunk_bytes as u64) as usize;
            let chunk: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut buf)[..len];
            self.file
                .read_exact_at(chunk, BLOCK_SIZE as u64 + done)
                .map_err(|e| Error::io(&self.path, "read", e))?;
            let first_block = done / BLOCK_SIZE as u64;
            for (i, bytes) in chunk.chunks_exact(BLOCK_SIZE).enumerate() {
                self.check_block(first_block + i as u64, bytes)?;
                let live = (self.header.count - before)
                    .saturating_sub(i as u64 * tpb)
                    .min(tpb) as usize;
                if bytes[live * ts..].iter().any(|&b| b != 0) {
                    return Err(Error::format(
                        &self.path,
                        FormatError::NonZeroPadding {
                            what: "a data block",
                        },
                    ));
                }
            }
            let live = (self.header.count - before).min((len / BLOCK_SIZE) as u64 * tpb);
            visit(chunk, live)?;
            before += live;
            done += len as u64;
        }
        Ok(())
    }

    /// Reads the data sequentially in large reads (every block's checksum and padding
    /// checked) and hands `visit` the (key, value) tuples in file order, up to 4 MiB at a
    /// time. Stops at the first error, from the file or from `visit`.
    pub fn scan(&self, visit: impl FnMut(&[Tuple]) -> Result<()>) -> Result<()> {
        self.scan_in_chunks(VERIFY_CHUNK, visit)
    }

    /// Like [`scan`](Self::scan), reading `chunk_bytes` at a time (rounded down to whole
    /// blocks, at least one): the buffer it allocates, for callers under a memory budget.
    #[expect(
        clippy::indexing_slicing,
        reason = "a chunk's live tuples lie within it (scan_blocks counts them from the header's count)"
    )]
    pub fn scan_in_chunks(
        &self,
        chunk_bytes: usize,
        mut visit: impl FnMut(&[Tuple]) -> Result<()>,
    ) -> Result<()> {
        self.require_pairs("reading (key, value) tuples")?;
        self.scan_blocks(chunk_bytes, |bytes, live| {
            visit(bytemuck::cast_slice(&bytes[..live as usize * TUPLE_SIZE]))
        })
    }

    /// Like [`scan`](Self::scan), for a join output table: hands `visit` its tuples a block
    /// at a time.
    #[expect(
        clippy::indexing_slicing,
        reason = "a block's live tuples lie within its 4096 bytes"
    )]
    pub fn scan_output(&self, mut visit: impl FnMut(&[OutputTuple]) -> Result<()>) -> Result<()> {
        if !self.header.is_output() {
            return Err(Error::WrongTuples {
                path: self.path.clone(),
                holds: "(key, value) tuples",
                needs: "join output tuples",
                what: "reading join output",
            });
        }
        let tpb = self.layout.tuples_per_block;
        self.scan_blocks(VERIFY_CHUNK, |bytes, live| {
            let mut left = live;
            for block in bytes.chunks_exact(BLOCK_SIZE) {
                let here = left.min(tpb) as usize;
                visit(bytemuck::cast_slice(&block[..here * OUTPUT_TUPLE_SIZE]))?;
                left -= here as u64;
            }
            Ok(())
        })
    }

    /// All keys, in file order, read sequentially with every block's checksum checked.
    pub fn read_keys(&self) -> Result<Vec<u64>> {
        let n = usize::try_from(self.header.count).unwrap_or(usize::MAX);
        let mut keys = Vec::new();
        keys.try_reserve_exact(n).map_err(|_| {
            Error::io(
                &self.path,
                "load the keys of",
                std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!("{n} keys do not fit in memory"),
                ),
            )
        })?;
        self.scan(|tuples| {
            keys.extend(tuples.iter().map(|t| t.key));
            Ok(())
        })?;
        Ok(keys)
    }

    /// Reads the whole file and checks everything: each block's checksum, zero padding,
    /// and that count, sortedness, distinctness and the smallest and largest key agree with
    /// the header. `progress` gets the number of tuples checked so far.
    pub fn verify(&self, mut progress: impl FnMut(u64)) -> Result<VerifyReport> {
        let mut facts = TableHeader::EMPTY;
        let mut last: Option<u64> = None;
        let (ts, tpb) = (
            self.layout.tuple_size,
            self.layout.tuples_per_block as usize,
        );
        self.scan_blocks(VERIFY_CHUNK, |bytes, live| {
            for j in 0..live as usize {
                let at = (j / tpb) * BLOCK_SIZE + (j % tpb) * ts;
                let key = bytes
                    .get(at..at + 8)
                    .and_then(|b| b.first_chunk::<8>())
                    .map_or(0, |b| u64::from_le_bytes(*b));
                match last {
                    None => {
                        facts.min_key = key;
                        facts.max_key = key;
                    }
                    Some(prev) => {
                        if prev > key && self.header.sorted {
                            return Err(Error::Unsorted {
                                path: self.path.clone(),
                                position: facts.count,
                                previous: prev,
                                key,
                                hint: "the header says sorted, so the file is corrupt",
                            });
                        }
                        facts.sorted &= prev <= key;
                        facts.distinct &= prev < key;
                        facts.min_key = facts.min_key.min(key);
                        facts.max_key = facts.max_key.max(key);
                    }
                }
                last = Some(key);
                facts.count += 1;
            }
            progress(facts.count);
            Ok(())
        })?;
        facts.value_width = self.header.value_width;
        let h = &self.header;
        let checks = [
            ("tuple count", h.count, facts.count),
            ("sorted flag", h.sorted.into(), facts.sorted.into()),
            ("distinct flag", h.distinct.into(), facts.distinct.into()),
            ("smallest key", h.min_key, facts.min_key),
            ("largest key", h.max_key, facts.max_key),
        ];
        for (field, header, data) in checks {
            if header != data {
                return Err(Error::format(
                    &self.path,
                    FormatError::HeaderDisagrees {
                        field,
                        header,
                        data,
                    },
                ));
            }
        }
        Ok(VerifyReport {
            header: facts,
            data_blocks: self.layout.data_blocks,
            bytes_read: self.layout.data_len(),
        })
    }
}

/// What [`Table::verify`] found: the facts recomputed from the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyReport {
    /// Count, sortedness and key range as computed from the data (equal to the header's).
    pub header: TableHeader,
    /// Data blocks whose checksum was checked.
    pub data_blocks: u64,
    /// Data bytes read.
    pub bytes_read: u64,
}

/// A table's tuples mapped into memory.
pub struct MappedTable {
    map: Option<Mmap>,
    count: u64,
}

impl MappedTable {
    /// All tuples, in file order.
    #[expect(
        clippy::indexing_slicing,
        reason = "the map's length was checked against the header's count when the table was opened"
    )]
    pub fn tuples(&self) -> &[Tuple] {
        if self.count == 0 {
            return &[];
        }
        let bytes = self.data_bytes();
        // The map starts on a page boundary, so the cast's alignment check always holds;
        // the length was checked against the header when the table was opened.
        bytemuck::cast_slice(&bytes[..self.count as usize * TUPLE_SIZE])
    }

    /// The keys, in file order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.tuples().iter().map(|t| t.key)
    }

    fn data_bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}
