//! The `.tbl` table format (paper 1, section 4.1, with a real header and checksums).
//!
//! `docs/FORMAT.md` is the specification; this file mirrors it. A table file is:
//!
//! ```text
//! block 0                 header (4096 bytes, layout below)
//! blocks 1 ..= D          data: tuples (key u64 LE, value u64 LE), 256 per block,
//!                         the last block zero-padded; D = ceil(n / 256)
//! blocks D+1 ..= D+C      CRC32C of each data block, u32 LE, zero-padded;
//!                         C = ceil(4 * D / 4096)
//! ```
//!
//! Tuple `i` lives at byte `4096 + 16 i`, so a window of positions maps to a run of whole
//! data blocks. Header fields, little-endian:
//!
//! | offset | size | field                                           |
//! |-------:|-----:|-------------------------------------------------|
//! | 0      | 8    | magic `LIDXTBL\0`                               |
//! | 8      | 4    | format version (1)                              |
//! | 12     | 1    | key width in bytes (8)                          |
//! | 13     | 1    | value width in bytes (8)                        |
//! | 14     | 1    | flags: bit 0 sorted, bit 1 distinct (sorted with no equal keys) |
//! | 15     | 1    | checksum kind (1 = CRC32C per data block)       |
//! | 16     | 4    | block size (4096)                               |
//! | 20     | 4    | reserved, zero                                  |
//! | 24     | 8    | tuple count n                                   |
//! | 32     | 8    | smallest key (0 when n = 0)                     |
//! | 40     | 8    | largest key (0 when n = 0)                      |
//! | 48     | 4044 | zero                                            |
//! | 4092   | 4    | CRC32C of bytes 0..4092                         |

#![deny(clippy::indexing_slicing)]

use bytemuck::{Pod, Zeroable};

use crate::FormatError;

/// Bytes in a block: the unit of every read and checksum.
pub const BLOCK_SIZE: usize = 4096;
/// Bytes of a key.
pub const KEY_WIDTH: u8 = 8;
/// Value width of a (key, value) table.
pub const PAIR_VALUE_WIDTH: u8 = 8;
/// Value width of a join output table: the outer value, then the inner value.
pub const OUTPUT_VALUE_WIDTH: u8 = 16;
/// Bytes in a tuple: an 8-byte key and an 8-byte value.
pub const TUPLE_SIZE: usize = (KEY_WIDTH + PAIR_VALUE_WIDTH) as usize;
/// Tuples in a data block.
pub const TUPLES_PER_BLOCK: u64 = (BLOCK_SIZE / TUPLE_SIZE) as u64;
/// The first eight bytes of every table file.
pub const MAGIC: [u8; 8] = *b"LIDXTBL\0";
/// Oldest format version this build reads.
pub const OLDEST_VERSION: u32 = 1;
/// Format version this build writes. History: 1 = first version.
pub const CURRENT_VERSION: u32 = 1;
/// Checksum kind 1: CRC32C (Castagnoli) of each 4096-byte data block.
pub const CHECKSUM_CRC32C: u8 = 1;

const FLAG_SORTED: u8 = 1;
const FLAG_DISTINCT: u8 = 2;
const KNOWN_FLAGS: u8 = FLAG_SORTED | FLAG_DISTINCT;

// Field offsets, each derived from the previous one.
const OFF_MAGIC: usize = 0;
const OFF_VERSION: usize = OFF_MAGIC + MAGIC.len();
const OFF_KEY_WIDTH: usize = OFF_VERSION + size_of::<u32>();
const OFF_VALUE_WIDTH: usize = OFF_KEY_WIDTH + 1;
const OFF_FLAGS: usize = OFF_VALUE_WIDTH + 1;
const OFF_CHECKSUM_KIND: usize = OFF_FLAGS + 1;
const OFF_BLOCK_SIZE: usize = OFF_CHECKSUM_KIND + 1;
const OFF_RESERVED: usize = OFF_BLOCK_SIZE + size_of::<u32>();
const OFF_COUNT: usize = OFF_RESERVED + size_of::<u32>();
const OFF_MIN_KEY: usize = OFF_COUNT + size_of::<u64>();
const OFF_MAX_KEY: usize = OFF_MIN_KEY + size_of::<u64>();
const OFF_END_OF_FIELDS: usize = OFF_MAX_KEY + size_of::<u64>();
const OFF_HEADER_CRC: usize = BLOCK_SIZE - size_of::<u32>();

/// One key-value pair as stored on disk (two little-endian `u64`s).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Pod, Zeroable)]
pub struct Tuple {
    /// The join and search key; every `u64`, 0 and `u64::MAX` included, is a valid key.
    pub key: u64,
    /// The payload carried with the key.
    pub value: u64,
}

/// Bytes of a join output tuple: key, outer value, inner value (value width 16).
pub const OUTPUT_TUPLE_SIZE: usize = (KEY_WIDTH + OUTPUT_VALUE_WIDTH) as usize;

/// One output tuple of a join, as stored in a table of value width 16.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Pod, Zeroable)]
pub struct OutputTuple {
    /// The key both inputs share.
    pub key: u64,
    /// The outer tuple's value.
    pub outer: u64,
    /// The inner tuple's value.
    pub inner: u64,
}

/// What a table's header says about its contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableHeader {
    /// Format version of the file this header was read from; headers are always written
    /// with [`CURRENT_VERSION`].
    pub version: u32,
    /// Bytes of the value: 8 for (key, value) tables, 16 for join outputs (key, outer
    /// value, inner value).
    pub value_width: u8,
    /// Number of tuples.
    pub count: u64,
    /// Keys are in non-decreasing order.
    pub sorted: bool,
    /// Keys are sorted and no two are equal.
    pub distinct: bool,
    /// Smallest key (0 when the table is empty).
    pub min_key: u64,
    /// Largest key (0 when the table is empty).
    pub max_key: u64,
}

impl TableHeader {
    /// The header of an empty table.
    pub const EMPTY: TableHeader = TableHeader {
        version: CURRENT_VERSION,
        value_width: PAIR_VALUE_WIDTH,
        count: 0,
        sorted: true,
        distinct: true,
        min_key: 0,
        max_key: 0,
    };

    /// Where everything lives in a file with this header.
    pub fn layout(&self) -> Result<TableLayout, FormatError> {
        TableLayout::new(self.count, usize::from(KEY_WIDTH + self.value_width))
    }

    /// True for a join output table (value width 16).
    pub fn is_output(&self) -> bool {
        self.value_width == OUTPUT_VALUE_WIDTH
    }

    /// Encodes the 4096-byte header block, its checksum included.
    pub fn encode(&self) -> [u8; BLOCK_SIZE] {
        let mut b = [0u8; BLOCK_SIZE];
        b[OFF_MAGIC..OFF_VERSION].copy_from_slice(&MAGIC);
        b[OFF_VERSION..OFF_KEY_WIDTH].copy_from_slice(&CURRENT_VERSION.to_le_bytes());
        b[OFF_KEY_WIDTH] = KEY_WIDTH;
        b[OFF_VALUE_WIDTH] = self.value_width;
        b[OFF_FLAGS] = (if self.sorted { FLAG_SORTED } else { 0 })
            | (if self.distinct { FLAG_DISTINCT } else { 0 });
        b[OFF_CHECKSUM_KIND] = CHECKSUM_CRC32C;
        b[OFF_BLOCK_SIZE..OFF_RESERVED].copy_from_slice(&(BLOCK_SIZE as u32).to_le_bytes());
        b[OFF_COUNT..OFF_MIN_KEY].copy_from_slice(&self.count.to_le_bytes());
        b[OFF_MIN_KEY..OFF_MAX_KEY].copy_from_slice(&self.min_key.to_le_bytes());
        b[OFF_MAX_KEY..OFF_END_OF_FIELDS].copy_from_slice(&self.max_key.to_le_bytes());
        let crc = crc32c::crc32c(&b[..OFF_HEADER_CRC]);
        b[OFF_HEADER_CRC..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a header block: magic, version, checksum, widths and flags.
    /// `bytes` may be longer than a block; only the first 4096 bytes are read.
    pub fn decode(bytes: &[u8]) -> Result<TableHeader, FormatError> {
        // The magic first, so a short file of another kind is named as such, not as truncated.
        let head = bytes.get(..MAGIC.len()).unwrap_or(bytes);
        if MAGIC.get(..head.len()) != Some(head) {
            return Err(FormatError::BadMagic {
                expected: "lidx table file",
                found: head.to_vec(),
            });
        }
        let Some(b) = bytes.first_chunk::<BLOCK_SIZE>() else {
            return Err(FormatError::Truncated {
                what: "a table header",
                expected: BLOCK_SIZE as u64,
                actual: bytes.len() as u64,
            });
        };
        let version = read_u32(b, OFF_VERSION);
        if !(OLDEST_VERSION..=CURRENT_VERSION).contains(&version) {
            return Err(FormatError::UnsupportedVersion {
                found: version,
                oldest: OLDEST_VERSION,
                newest: CURRENT_VERSION,
            });
        }
        let stored = read_u32(b, OFF_HEADER_CRC);
        let computed = crc32c::crc32c(&b[..OFF_HEADER_CRC]);
        if stored != computed {
            return Err(FormatError::HeaderChecksum {
                expected: stored,
                got: computed,
            });
        }
        check_field("key width", b[OFF_KEY_WIDTH].into(), KEY_WIDTH.into(), "8")?;
        let value_width = b[OFF_VALUE_WIDTH];
        if value_width != PAIR_VALUE_WIDTH && value_width != OUTPUT_VALUE_WIDTH {
            return Err(FormatError::BadField {
                field: "value width",
                value: value_width.into(),
                expected: "8 (key, value) or 16 (join output: key, outer value, inner value)",
            });
        }
        check_field(
            "checksum kind",
            b[OFF_CHECKSUM_KIND].into(),
            CHECKSUM_CRC32C.into(),
            "1 (CRC32C)",
        )?;
        check_field(
            "block size",
            read_u32(b, OFF_BLOCK_SIZE).into(),
            BLOCK_SIZE as u64,
            "4096",
        )?;
        check_field("reserved", read_u32(b, OFF_RESERVED).into(), 0, "0")?;
        if b[OFF_END_OF_FIELDS..OFF_HEADER_CRC].iter().any(|&x| x != 0) {
            return Err(FormatError::NonZeroPadding { what: "the header" });
        }
        let flags = b[OFF_FLAGS];
        if flags & !KNOWN_FLAGS != 0 || (flags & FLAG_DISTINCT != 0 && flags & FLAG_SORTED == 0) {
            return Err(FormatError::BadField {
                field: "flags",
                value: flags.into(),
                expected: "bit 0 (sorted) and bit 1 (distinct, only with sorted)",
            });
        }
        let header = TableHeader {
            version,
            value_width,
            count: read_u64(b, OFF_COUNT),
            sorted: flags & FLAG_SORTED != 0,
            distinct: flags & FLAG_DISTINCT != 0,
            min_key: read_u64(b, OFF_MIN_KEY),
            max_key: read_u64(b, OFF_MAX_KEY),
        };
        if header.count == 0 && (header.min_key, header.max_key) != (0, 0) {
            return Err(FormatError::BadField {
                field: "smallest or largest key",
                value: header.min_key.max(header.max_key),
                expected: "0 in a table of no tuples",
            });
        }
        if header.count > 0 && header.min_key > header.max_key {
            return Err(FormatError::BadField {
                field: "smallest key",
                value: header.min_key,
                expected: "at most the largest key",
            });
        }
        header.layout()?;
        Ok(header)
    }
}

/// Where the parts of a table file with `count` tuples live, in blocks and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableLayout {
    /// Number of tuples.
    pub count: u64,
    /// Bytes per tuple: 16, or 24 for join outputs.
    pub tuple_size: usize,
    /// Tuples per data block: `floor(4096 / tuple_size)` (256, or 170 for join outputs,
    /// whose blocks end in 16 bytes of zero padding).
    pub tuples_per_block: u64,
    /// Data blocks: `ceil(count / tuples_per_block)`.
    pub data_blocks: u64,
    /// Blocks holding the checksum array: `ceil(4 * data_blocks / 4096)`.
    pub checksum_blocks: u64,
}

impl TableLayout {
    /// The layout for `count` (key, value) tuples; fails when the file would exceed `u64`
    /// bytes.
    pub fn for_count(count: u64) -> Result<TableLayout, FormatError> {
        Self::new(count, TUPLE_SIZE)
    }

    /// The layout for `count` tuples of `tuple_size` bytes (16 or 24).
    pub fn new(count: u64, tuple_size: usize) -> Result<TableLayout, FormatError> {
        let tuples_per_block = (BLOCK_SIZE / tuple_size.max(1)) as u64;
        let data_blocks = count.div_ceil(tuples_per_block);
        let checksum_blocks = data_blocks
            .checked_mul(4)
            .map(|b| b.div_ceil(BLOCK_SIZE as u64));
        let layout = checksum_blocks.map(|checksum_blocks| TableLayout {
            count,
            tuple_size,
            tuples_per_block,
            data_blocks,
            checksum_blocks,
        });
        match layout {
            Some(l)
                if l.total_blocks()
                    .is_some_and(|b| b.checked_mul(BLOCK_SIZE as u64).is_some()) =>
            {
                Ok(l)
            }
            _ => Err(FormatError::BadField {
                field: "tuple count",
                value: count,
                expected: "a count whose file fits in 2^64 bytes",
            }),
        }
    }

    fn total_blocks(&self) -> Option<u64> {
        1u64.checked_add(self.data_blocks)?
            .checked_add(self.checksum_blocks)
    }

    /// Total file length in bytes.
    pub fn file_len(&self) -> u64 {
        (1 + self.data_blocks + self.checksum_blocks) * BLOCK_SIZE as u64
    }

    /// Byte offset of data block `block` (0-based among data blocks).
    pub fn data_block_offset(block: u64) -> u64 {
        (1 + block) * BLOCK_SIZE as u64
    }

    /// Byte offset of the checksum array.
    pub fn checksum_offset(&self) -> u64 {
        Self::data_block_offset(self.data_blocks)
    }

    /// Bytes of the data region, padding included.
    pub fn data_len(&self) -> u64 {
        self.data_blocks * BLOCK_SIZE as u64
    }
}

fn check_field(
    field: &'static str,
    value: u64,
    want: u64,
    expected: &'static str,
) -> Result<(), FormatError> {
    if value == want {
        Ok(())
    } else {
        Err(FormatError::BadField {
            field,
            value,
            expected,
        })
    }
}

/// The little-endian `u32` at `off` (a field offset, inside the block by construction).
fn read_u32(b: &[u8; BLOCK_SIZE], off: usize) -> u32 {
    b.get(off..)
        .and_then(|s| s.first_chunk::<4>())
        .map_or(0, |a| u32::from_le_bytes(*a))
}

/// The little-endian `u64` at `off` (a field offset, inside the block by construction).
fn read_u64(b: &[u8; BLOCK_SIZE], off: usize) -> u64 {
    b.get(off..)
        .and_then(|s| s.first_chunk::<8>())
        .map_or(0, |a| u64::from_le_bytes(*a))
}

/// CRC32C of one data block.
pub fn block_checksum(block: &[u8]) -> u32 {
    crc32c::crc32c(block)
}

/// Decodes the little-endian checksum array stored after the data blocks.
pub fn decode_checksums(bytes: &[u8], data_blocks: u64) -> Result<Vec<u32>, FormatError> {
    let need = data_blocks.saturating_mul(4);
    let Some(b) = usize::try_from(need).ok().and_then(|n| bytes.get(..n)) else {
        return Err(FormatError::Truncated {
            what: "the checksum array",
            expected: need,
            actual: bytes.len() as u64,
        });
    };
    Ok(b.chunks_exact(4)
        .filter_map(|c| c.first_chunk::<4>())
        .map(|c| u32::from_le_bytes(*c))
        .collect())
}

#[cfg(test)]
#[expect(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let h = TableHeader {
            version: CURRENT_VERSION,
            value_width: 16,
            count: 12345,
            sorted: true,
            distinct: false,
            min_key: 0,
            max_key: u64::MAX,
        };
        assert_eq!(TableHeader::decode(&h.encode()), Ok(h));
    }

    #[test]
    fn every_flipped_header_byte_is_caught() {
        let h = TableHeader {
            version: CURRENT_VERSION,
            value_width: 8,
            count: 7,
            sorted: false,
            distinct: false,
            min_key: 3,
            max_key: 9,
        };
        let good = h.encode();
        for i in 0..BLOCK_SIZE {
            let mut bad = good;
            bad[i] ^= 0x20;
            assert!(
                TableHeader::decode(&bad).is_err(),
                "flip at byte {i} went unnoticed"
            );
        }
    }

    #[test]
    fn non_zero_header_padding_is_refused_even_with_a_good_checksum() {
        let mut b = TableHeader::EMPTY.encode();
        b[OFF_END_OF_FIELDS] = 1;
        let crc = crc32c::crc32c(&b[..OFF_HEADER_CRC]);
        b[OFF_HEADER_CRC..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(
            TableHeader::decode(&b),
            Err(FormatError::NonZeroPadding { what: "the header" })
        );
    }

    #[test]
    fn layout_counts_blocks() {
        let l = TableLayout::for_count(0).unwrap();
        assert_eq!(
            (l.data_blocks, l.checksum_blocks, l.file_len()),
            (0, 0, 4096)
        );
        let l = TableLayout::for_count(256).unwrap();
        assert_eq!((l.data_blocks, l.checksum_blocks), (1, 1));
        let l = TableLayout::for_count(257).unwrap();
        assert_eq!((l.data_blocks, l.checksum_blocks), (2, 1));
        let l = TableLayout::new(171, OUTPUT_TUPLE_SIZE).unwrap();
        assert_eq!((l.tuples_per_block, l.data_blocks), (170, 2));
        let l = TableLayout::for_count(256 * 1025).unwrap();
        assert_eq!((l.data_blocks, l.checksum_blocks), (1025, 2));
        assert!(TableLayout::for_count(u64::MAX).is_err());
    }
}
