//! The B+tree layout, paper 2's disk B+tree baseline (section 3 measures PostgreSQL's; FORMAT.md
//! section 8): the tuned layout's data pages, then nodes of the same size, level by level
//! up to the root, each entry the first key of a page or node below and its page number.
//! A get reads the root, takes the last entry whose key is at most the key (the first if
//! none), and so on down to a data page: one read per level and one for the page.

#![deny(clippy::indexing_slicing)]

use std::sync::Arc;

use super::paged::{self, PageIndex};
use super::{LayoutIndex, Written, Wrote};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::kv::block::{Block, record_bytes};
use crate::kv::file::Footer;
use crate::kv::read::{Kind, Reader};
use crate::kv::verify::{VerifyReport, records_as_counted};
use crate::kv::write::{BuildOptions, Record, Writer};
use crate::{Error, FormatError, Result};

/// The B+tree layout's meta: nodes per level, leaves' parents first, the root (one node)
/// last; level `i`'s nodes are the pages right after level `i − 1`'s (after the data
/// pages for the first).
#[derive(Clone, Debug)]
pub(crate) struct BtreeMeta {
    pub(crate) levels: Vec<u64>,
}

impl BtreeMeta {
    /// The pages of level `level` (at least 1: the nodes just above the data pages): the
    /// levels lie one after another after the data pages, level 1 first.
    fn level_pages(&self, data_pages: u64, level: usize) -> std::ops::Range<u64> {
        let below = level.saturating_sub(1);
        let first = data_pages + self.levels.iter().take(below).sum::<u64>();
        first..first + self.levels.get(below).copied().unwrap_or(0)
    }
}

impl LayoutIndex for BtreeMeta {
    /// Data pages as in the tuned layout (of at least two entries of the longest key),
    /// then the nodes, level by level.
    fn write(w: &mut Writer, records: &[Record<'_>], options: &BuildOptions) -> Wrote<Self> {
        let page = w.page_size(records, options.block_size, 2);
        let firsts = w.pages(records, page)?;
        let mut below: Vec<(&[u8], u64)> = firsts
            .iter()
            .filter_map(|&i| records.get(i))
            .zip(0u64..)
            .map(|(r, p)| (r.key, p))
            .collect();
        let mut next_page = below.len() as u64;
        let mut levels = Vec::new();
        while below.len() > 1 || (levels.is_empty() && !below.is_empty()) {
            let mut level = Vec::new();
            for &(key, child) in &below {
                let size = record_bytes(key, &child.to_le_bytes());
                if !w.block.is_empty() && w.worst_sealed(w.block.body_bytes() as u64 + size) > page
                {
                    w.close_node(page)?;
                    next_page += 1;
                }
                if w.block.is_empty() {
                    level.push((key, next_page));
                }
                w.block
                    .add(key, &child.to_le_bytes())
                    .map_err(|e| Error::param("block size", e))?;
            }
            w.close_node(page)?;
            next_page += 1;
            levels.push(level.len() as u64);
            below = level;
        }
        let written = Written {
            block_size: page,
            index_blocks: levels.iter().sum(),
            ..Written::default()
        };
        Ok((BtreeMeta { levels }, written))
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder(out);
        e.u64(self.levels.len() as u64);
        for &n in &self.levels {
            e.u64(n);
        }
    }

    fn decode(d: &mut Decoder<'_>, footer: &Footer) -> Result<Self, FormatError> {
        let n = d.count(8)?;
        let mut levels = Vec::with_capacity(n);
        for i in 0..n {
            let nodes = d.u64()?;
            let below = levels.last().copied().unwrap_or(footer.data_blocks);
            // Each node holds at least one entry; all but the root at least two.
            if nodes == 0 || nodes > below || (nodes == below && below > 1) {
                return Err(invalid(
                    "B+tree level",
                    i as u64,
                    "fewer nodes than the level below, one at the root",
                ));
            }
            levels.push(nodes);
        }
        if levels.last().is_some_and(|&root| root != 1)
            || levels.is_empty() != (footer.data_blocks == 0)
        {
            return Err(invalid("B+tree levels", n as u64, "one root node"));
        }
        let pages = levels
            .iter()
            .try_fold(footer.data_blocks, |a, &b| a.checked_add(b));
        if pages.and_then(|p| p.checked_mul(footer.block_size)) != Some(footer.meta_offset)
            || footer.data_blocks.checked_mul(footer.block_size) != Some(footer.data_bytes)
        {
            return Err(FormatError::HeaderDisagrees {
                field: "meta offset",
                header: footer.meta_offset,
                data: pages.unwrap_or(0).saturating_mul(footer.block_size),
            });
        }
        Ok(BtreeMeta { levels })
    }

    fn memory_bytes(&self) -> u64 {
        8 * self.levels.len() as u64
    }

    fn index_blocks(&self) -> u64 {
        self.levels.iter().sum()
    }

    /// Every page in key order, and each level's entries, node after node, naming each
    /// unit of the level below (its first key and page number) in order.
    fn verify(&self, r: &mut Reader<'_>) -> Result<VerifyReport> {
        let (report, mut below) = paged::check_pages(r, self.index_blocks())?;
        let file = r.file();
        let mut first_below = 0;
        let mut page = file.footer().data_blocks;
        for &nodes in &self.levels {
            let mut firsts = Vec::with_capacity(nodes as usize);
            let mut entry = 0;
            for p in page..page + nodes {
                let node = r.read_pages(p, 1, Kind::Index)?.remove(0);
                firsts.push(node.key(0).to_vec());
                for j in 0..node.len() {
                    let (key, child) = node.record(j);
                    let want = first_below + entry as u64;
                    if below.get(entry).map(Vec::as_slice) != Some(key)
                        || child != want.to_le_bytes()
                    {
                        return Err(file.bad_block(
                            paged::page_handle(file, p),
                            format!("entry {j} does not name page {want} by its first key"),
                        ));
                    }
                    entry += 1;
                }
            }
            if entry != below.len() {
                return Err(file.corrupt(format!(
                    "a B+tree level names {entry} pages of the {} below it",
                    below.len()
                )));
            }
            first_below = page;
            page += nodes;
            below = firsts;
        }
        records_as_counted(file, report)
    }
}

impl PageIndex for BtreeMeta {
    /// From the root down, in each node the last entry whose key is at most `key` (the
    /// first when there is none).
    fn page_of(&self, r: &mut Reader<'_>, key: &[u8]) -> Result<Option<(u64, Arc<Block>)>> {
        let file = r.file();
        let data_pages = file.footer().data_blocks;
        let top = self.levels.len();
        if top == 0 {
            return Ok(None);
        }
        // The root: the top level's last page.
        let Some(mut page) = self.level_pages(data_pages, top).end.checked_sub(1) else {
            return Ok(None);
        };
        for level in (1..=top).rev() {
            r.set_level(Some(level));
            let node = r.read_page(page, Kind::Index)?;
            // Below every key, the first child: a scan from there starts at page 0.
            let entry = node.floor_or_first(key);
            let below = match level {
                1 => 0..data_pages,
                _ => self.level_pages(data_pages, level - 1),
            };
            let child = entry
                .and_then(|(_, child)| <[u8; 8]>::try_from(child).ok())
                .map(u64::from_le_bytes)
                .filter(|c| below.contains(c));
            let Some(child) = child else {
                return Err(file.bad_block(
                    paged::page_handle(file, page),
                    format!(
                        "holds a child page outside the level below for key {}",
                        crate::kv::keys::display_key(key)
                    ),
                ));
            };
            page = child;
        }
        r.set_level(None);
        Ok(Some((page, r.read_page(page, Kind::Data)?)))
    }
}
