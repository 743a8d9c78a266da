//! `lidx kv verify` and `lidx kv info` (FORMAT.md section 8.6; paper 4's checksums). Verify
//! reads every block of a key-value file past the cache and checks what the format
//! promises: each block's checksum and structure, keys in strictly increasing order across
//! the whole file, the footer's counts, and that the index finds every key where it is.
//! Each layout checks its own index (in [`layout`](super::layout)); the check of a
//! sequence of data blocks, which the learned and SSTable layouts share, is here.

use super::block::Block;
use super::file::{Footer, Handle, KvFile};
use super::keys::display_key;
use super::model::ModelKind;
use super::read::Reader;
use super::write::BlockSizes;
use crate::storage::cache::BlockCache;
use crate::{Error, FormatError, Result};

/// What [`verify`] checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct VerifyReport {
    /// Records read.
    pub records: u64,
    /// Data blocks read (empty ones of the learned layout included).
    pub data_blocks: u64,
    /// Of which empty.
    pub empty_blocks: u64,
    /// Index blocks read: level-1 blocks (SSTable), layer pieces (tuned) or nodes (B+tree).
    pub index_blocks: u64,
}

/// Checks all of `file`; the first problem is the error.
pub fn verify(file: &KvFile) -> Result<VerifyReport> {
    let cache = BlockCache::new(0);
    let mut reader = Reader::new(file, &cache);
    file.meta.verify(&mut reader)
}

/// The check of a layout of data blocks (learned, SSTable): `handles` hold each data
/// block's place and, for an SSTable, its level-1 key: at least the block's last key and
/// below the next block's first (from version 3 a separator, before it the last key). The blocks
/// must lie one after another from 0 to the footer's data bytes, as many as it counts,
/// each with a record unless it is empty, keys strictly increasing across the file, and
/// each key in the block `place` gives (when it gives one).
pub(crate) fn check_blocks(
    reader: &mut Reader<'_>,
    handles: Vec<(Handle, Option<Vec<u8>>)>,
    place: &dyn Fn(&[u8]) -> Option<usize>,
) -> Result<VerifyReport> {
    let file = reader.file();
    let mut report = VerifyReport {
        data_blocks: handles.len() as u64,
        index_blocks: file.index_blocks(),
        ..VerifyReport::default()
    };
    let footer = file.footer();
    if report.data_blocks != footer.data_blocks {
        return Err(Error::format(
            file.path(),
            FormatError::HeaderDisagrees {
                field: "data blocks",
                header: footer.data_blocks,
                data: report.data_blocks,
            },
        ));
    }
    let mut expected_offset = 0;
    let mut previous: Option<Vec<u8>> = None;
    // The level-1 key of the last block read, which must be below the next block's keys.
    let mut pending_separator: Option<(Handle, Vec<u8>)> = None;
    for (b, (h, named_last)) in handles.iter().enumerate() {
        let h = *h;
        if h.offset != expected_offset {
            return Err(file.bad_block(
                h,
                format!("is not where data block {b} should start (byte {expected_offset})"),
            ));
        }
        expected_offset = h.end();
        if h.size == 0 {
            report.empty_blocks += 1;
            continue;
        }
        let block: Block = reader.read_data_block(h)?;
        if block.is_empty() {
            return Err(file.bad_block(h, "holds no record, yet has a size".into()));
        }
        if let Some((ph, separator)) = pending_separator.take()
            && separator.as_slice() >= block.key(0)
        {
            return Err(file.bad_block(
                ph,
                format!(
                    "has level-1 key {}, not below the next block's first key {}",
                    display_key(&separator),
                    display_key(block.key(0))
                ),
            ));
        }
        for i in 0..block.len() {
            let key = block.key(i);
            if let Some(p) = &previous
                && p.as_slice() >= key
            {
                return Err(file.bad_block(
                    h,
                    format!(
                        "holds key {} after {}: keys out of order",
                        display_key(key),
                        display_key(p)
                    ),
                ));
            }
            if let Some(predicted) = place(key)
                && predicted != b
            {
                return Err(file.bad_block(
                    h,
                    format!(
                        "holds key {} that the model places in block {predicted}, not {b}",
                        display_key(key)
                    ),
                ));
            }
            previous = Some(key.to_vec());
            report.records += 1;
        }
        if let Some(named) = named_last {
            if named.as_slice() < block.key(block.len() - 1) {
                return Err(file.bad_block(
                    h,
                    format!(
                        "ends with key {}, above its level-1 key {}",
                        display_key(block.key(block.len() - 1)),
                        display_key(named)
                    ),
                ));
            }
            pending_separator = Some((h, named.clone()));
        }
    }
    if expected_offset != footer.data_bytes {
        return Err(Error::format(
            file.path(),
            FormatError::HeaderDisagrees {
                field: "data bytes",
                header: footer.data_bytes,
                data: expected_offset,
            },
        ));
    }
    records_as_counted(file, report)
}

/// `report` when the footer counts the records it read, else the error saying so.
pub(crate) fn records_as_counted(file: &KvFile, report: VerifyReport) -> Result<VerifyReport> {
    let counted = file.footer().records;
    if report.records != counted {
        return Err(Error::format(
            file.path(),
            FormatError::HeaderDisagrees {
                field: "records",
                header: counted,
                data: report.records,
            },
        ));
    }
    Ok(report)
}

/// What `lidx kv info` reports: the footer, the index's size in memory and on disk, and
/// the stored block-size distribution (uneven blocks are the learned layout's cost).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct KvInfo {
    /// The footer's fields.
    pub footer: Footer,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// Bytes of the index an open file keeps in memory, outside any cache.
    pub index_memory_bytes: u64,
    /// Every byte that must be in memory for a get to read no index block
    /// ([`KvFile::full_index_bytes`]).
    pub full_index_bytes: u64,
    /// Bytes of the index on disk (level-1 blocks and the meta).
    pub index_disk_bytes: u64,
    /// Index blocks on disk: level-1 blocks (SSTable), layer pieces (tuned), nodes
    /// (B+tree); 0 for the learned layout.
    pub index_blocks: u64,
    /// Stored data block sizes.
    pub data_blocks: BlockSizes,
    /// The learned model's kind and pieces, and the key map's prefix bytes and positions.
    pub learned: Option<LearnedInfo>,
}

/// The learned layout's model and key map, in numbers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LearnedInfo {
    /// The model's kind.
    pub model: ModelKind,
    /// Its pieces.
    pub pieces: u64,
    /// Bytes every key starts with, dropped by the key map.
    pub prefix_bytes: u64,
    /// Character positions the key map reads.
    pub positions: u64,
    /// Blocks the model names (its logical blocks, empty ones included).
    pub logical_blocks: u64,
    /// Data blocks past the first of their logical block, which the cap made.
    pub overflow_blocks: u64,
    /// Bytes in memory of the block-location table (Elias–Fano offsets, and with overflow
    /// blocks the logical blocks' first data blocks and the fences).
    pub locations_bytes: u64,
}

/// The figures of `file` (reads the level-1 blocks of an SSTable, no data block).
pub fn info(file: &KvFile) -> Result<KvInfo> {
    let cache = BlockCache::new(0);
    let sizes: Vec<u64> = Reader::new(file, &cache)
        .data_handles()?
        .iter()
        .map(|h| h.size)
        .collect();
    let footer = *file.footer();
    Ok(KvInfo {
        footer,
        file_bytes: footer.meta_offset + footer.meta_len + super::file::FOOTER as u64,
        index_memory_bytes: file.index_memory_bytes(),
        full_index_bytes: file.full_index_bytes(),
        index_disk_bytes: file.index_disk_bytes(),
        index_blocks: file.index_blocks(),
        data_blocks: BlockSizes::of(&sizes),
        learned: file.meta.learned().map(|m| LearnedInfo {
            model: m.model.kind(),
            pieces: m.model.pieces() as u64,
            prefix_bytes: m.keymap.prefix().len() as u64,
            positions: m.keymap.positions() as u64,
            logical_blocks: m.blocks() as u64,
            overflow_blocks: m.overflow_blocks() as u64,
            locations_bytes: m.locations_bytes(),
        }),
    })
}
