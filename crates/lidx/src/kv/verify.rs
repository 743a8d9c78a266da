//! `lidx kv verify` and `lidx kv info`. Verify reads every block of a key-value file past the cache and checks what
//! the format promises: each block's checksum and structure, keys in strictly increasing
//! order across the whole file, the footer's counts, and that the index finds every key
//! where it is (the learned model's block for each key; the SSTable's level-1 entries and
//! level-0 keys equal to the last keys of the blocks they point at).

use super::block::Block;
use super::file::{Footer, Handle, KvFile, LayerPlace, Meta, display_key};
use super::layers::{Layered, lookup_in_memory};
use super::model::ModelKind;
use super::read::{Kind, Reader};
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
    /// Level-1 index blocks (SSTable) or layer pieces (tuned) read.
    pub index_blocks: u64,
}

/// Checks all of `file`; the first problem is the error.
pub fn verify(file: &KvFile) -> Result<VerifyReport> {
    let cache = BlockCache::new(0);
    let mut reader = Reader::new(file, &cache);
    let corrupt = |problem: String| Error::format(file.path(), FormatError::Inconsistent(problem));
    // Each data block's handle and, for an SSTable, the last key its level-1 entry names.
    let mut handles: Vec<(Handle, Option<Vec<u8>>)> = Vec::new();
    match &file.meta {
        Meta::Tuned { keymap, layers, .. } => {
            return verify_tuned(file, &mut reader, keymap, layers);
        }
        Meta::Btree { levels } => return verify_btree(file, &mut reader, levels),
        Meta::Learned { .. } => {
            handles.extend(reader.data_handles()?.into_iter().map(|h| (h, None)));
        }
        Meta::Sstable { level0 } => {
            for (i, (l0_key, ih)) in level0.iter().enumerate() {
                let index = reader.index_block(*ih)?;
                if index.is_empty() || index.key(index.len() - 1) != &**l0_key {
                    return Err(corrupt(format!(
                        "level-0 entry {i} does not name the last key of its level-1 block"
                    )));
                }
                for (j, h) in reader.entry_handles(&index, *ih)?.into_iter().enumerate() {
                    handles.push((h, Some(index.key(j).to_vec())));
                }
            }
        }
    }
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
            if let Some(predicted) = file.learned_block(key)
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
        if let Some(named) = named_last
            && named.as_slice() != block.key(block.len() - 1)
        {
            return Err(file.bad_block(
                h,
                format!(
                    "ends with key {}, but its level-1 entry names {}",
                    display_key(block.key(block.len() - 1)),
                    display_key(named)
                ),
            ));
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

/// The tuned layout: every page in key order, every layer's pieces checked, and the layers
/// finding every page's first key where it is.
fn verify_tuned(
    file: &KvFile,
    reader: &mut Reader<'_>,
    keymap: &super::KeyMap,
    places: &[LayerPlace],
) -> Result<VerifyReport> {
    let (report, first_keys) = verify_pages(file, reader, places.iter().map(|l| l.pieces).sum())?;
    let footer = file.footer();
    let firsts: Vec<u64> = first_keys.iter().map(|k| keymap.map(k)).collect();
    let mut layers = Vec::with_capacity(places.len());
    for l in places {
        let mut layer = l.shape();
        layer.pieces = reader.read_pieces_at(l.offset, l.pieces)?;
        layers.push(layer);
    }
    let index = Layered {
        page_size: footer.block_size,
        layers,
    };
    for (p, &x) in firsts.iter().enumerate() {
        let want = firsts.partition_point(|&f| f <= x).saturating_sub(1) as u64;
        let (found, _) = lookup_in_memory(&index, &firsts, x);
        if found != want {
            return Err(Error::format(
                file.path(),
                FormatError::Inconsistent(format!(
                    "the layers lead the first key of page {p} to page {found}, not {want}"
                )),
            ));
        }
    }
    records_as_counted(file, report)
}

/// Every page of a layout of fixed pages in key order; the report (with `index_blocks`)
/// and each page's first key.
fn verify_pages(
    file: &KvFile,
    reader: &mut Reader<'_>,
    index_blocks: u64,
) -> Result<(VerifyReport, Vec<Vec<u8>>)> {
    let footer = file.footer();
    let mut report = VerifyReport {
        data_blocks: footer.data_blocks,
        index_blocks,
        ..VerifyReport::default()
    };
    let mut firsts = Vec::with_capacity(footer.data_blocks as usize);
    let mut previous: Option<Vec<u8>> = None;
    for p in 0..footer.data_blocks {
        let page = reader.read_pages(p, 1, Kind::Data)?.remove(0);
        firsts.push(page.key(0).to_vec());
        for i in 0..page.len() {
            let key = page.key(i);
            if previous.as_deref().is_some_and(|prev| prev >= key) {
                return Err(file.bad_block(
                    page_handle(file, p),
                    format!("holds key {} out of order", display_key(key)),
                ));
            }
            previous = Some(key.to_vec());
            report.records += 1;
        }
    }
    Ok((report, firsts))
}

fn page_handle(file: &KvFile, p: u64) -> Handle {
    let size = file.footer().block_size;
    Handle {
        offset: p * size,
        size,
    }
}

/// The B+tree layout: every page in key order, and each level's entries, node after node,
/// naming each unit of the level below (its first key and page number) in order.
fn verify_btree(file: &KvFile, reader: &mut Reader<'_>, levels: &[u64]) -> Result<VerifyReport> {
    let (report, mut below) = verify_pages(file, reader, levels.iter().sum())?;
    let mut first_below = 0;
    let mut page = file.footer().data_blocks;
    for &nodes in levels {
        let mut firsts = Vec::with_capacity(nodes as usize);
        let mut entry = 0;
        for p in page..page + nodes {
            let node = reader.read_pages(p, 1, Kind::Index)?.remove(0);
            firsts.push(node.key(0).to_vec());
            for j in 0..node.len() {
                let (key, child) = node.record(j);
                let want = first_below + entry as u64;
                if below.get(entry).map(Vec::as_slice) != Some(key) || child != want.to_le_bytes() {
                    return Err(file.bad_block(
                        page_handle(file, p),
                        format!("entry {j} does not name page {want} by its first key"),
                    ));
                }
                entry += 1;
            }
        }
        if entry != below.len() {
            return Err(Error::format(
                file.path(),
                FormatError::Inconsistent(format!(
                    "a B+tree level names {entry} pages of the {} below it",
                    below.len()
                )),
            ));
        }
        first_below = page;
        page += nodes;
        below = firsts;
    }
    records_as_counted(file, report)
}

/// `report` when the footer counts the records it read, else the error saying so.
fn records_as_counted(file: &KvFile, report: VerifyReport) -> Result<VerifyReport> {
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
    /// Bytes of the index held in memory.
    pub index_memory_bytes: u64,
    /// Bytes of the index on disk (level-1 blocks and the meta).
    pub index_disk_bytes: u64,
    /// Level-1 index blocks (SSTable), 0 for the learned layout.
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
        index_disk_bytes: file.index_disk_bytes(),
        index_blocks: file.index_blocks(),
        data_blocks: BlockSizes::of(&sizes),
        learned: file.learned().map(|(keymap, model, _)| LearnedInfo {
            model: model.kind(),
            pieces: model.pieces() as u64,
            prefix_bytes: keymap.prefix().len() as u64,
            positions: keymap.positions() as u64,
        }),
    })
}
