//! What the two layouts of fixed pages share (paper 2, section 2: the tuned layout and
//! its B+tree baseline; FORMAT.md section 8): writing records into pages of `P` bytes,
//! each a sealed block, zeros, and the block's length in its last 4 bytes; opening such a
//! page; gets and scans once a layout has found a key's page; and checking every page.

#![deny(clippy::indexing_slicing)]

use std::sync::Arc;

use super::{Emit, Locate};
use crate::kv::block::{Block, BlockProblem, Compression, TRAILER, record_bytes};
use crate::kv::file::{Handle, KvFile};
use crate::kv::keys::display_key;
use crate::kv::read::{Kind, Reader};
use crate::kv::verify::VerifyReport;
use crate::kv::write::{Record, Writer};
use crate::{Error, Result};

/// A layout of fixed pages: how it finds a key's page.
pub(super) trait PageIndex {
    /// The page that holds `key` if any does, and its number. May leave the reader's
    /// level set; [`Locate`] sets it back.
    fn page_of(&self, r: &mut Reader<'_>, key: &[u8]) -> Result<Option<(u64, Arc<Block>)>>;
}

/// `index`'s page of `key`, the reader's level set back after.
fn page_of(
    index: &impl PageIndex,
    r: &mut Reader<'_>,
    key: &[u8],
) -> Result<Option<(u64, Arc<Block>)>> {
    let found = index.page_of(r, key);
    r.set_level(None);
    found
}

/// A layout of fixed pages reads the page it finds, then the pages after it.
impl<T: PageIndex> Locate for T {
    fn locate(&self, r: &mut Reader<'_>, key: &[u8]) -> Result<Option<Arc<Block>>> {
        Ok(page_of(self, r, key)?.map(|(_, page)| page))
    }

    /// Two pages in a read when the reader prefetches.
    fn scan(&self, r: &mut Reader<'_>, from: &[u8], emit: &mut Emit<'_>) -> Result<()> {
        let Some((mut p, first)) = page_of(self, r, from)? else {
            return Ok(());
        };
        let mut more = emit(&first);
        let pages = r.file().footer().data_blocks;
        p += 1;
        while more && p < pages {
            let n = if r.prefetching() { 2.min(pages - p) } else { 1 };
            for page in r.read_pages(p, n, Kind::Data)? {
                more = emit(&page);
            }
            p += n;
        }
        Ok(())
    }

    /// The pages' places, computed: no read.
    fn data_handles(&self, r: &mut Reader<'_>) -> Result<Vec<Handle>> {
        let file = r.file();
        Ok((0..file.footer().data_blocks)
            .map(|p| page_handle(file, p))
            .collect())
    }
}

/// Page `p`'s place.
pub(super) fn page_handle(file: &KvFile, p: u64) -> Handle {
    let size = file.footer().block_size;
    Handle {
        offset: p * size,
        size,
    }
}

/// Every page in key order; the report (with `index_blocks`) and each page's first key.
pub(super) fn check_pages(
    r: &mut Reader<'_>,
    index_blocks: u64,
) -> Result<(VerifyReport, Vec<Vec<u8>>)> {
    let file = r.file();
    let footer = file.footer();
    let mut report = VerifyReport {
        data_blocks: footer.data_blocks,
        index_blocks,
        ..VerifyReport::default()
    };
    let mut firsts = Vec::with_capacity(footer.data_blocks as usize);
    let mut previous: Option<Vec<u8>> = None;
    for p in 0..footer.data_blocks {
        let page = r.read_pages(p, 1, Kind::Data)?.remove(0);
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

/// A page: a sealed block, zeros, and the sealed block's length as a `u32` in the last 4
/// bytes.
pub(crate) fn open_page(page: &[u8]) -> Result<Block, BlockProblem> {
    let malformed = BlockProblem::Malformed;
    let (body, len) = page
        .split_last_chunk::<4>()
        .ok_or(malformed("a page shorter than its length"))?;
    let len = u32::from_le_bytes(*len) as usize;
    let (sealed, padding) = body
        .split_at_checked(len)
        .ok_or(malformed("a page's block longer than the page"))?;
    if padding.iter().any(|&b| b != 0) {
        return Err(malformed("non-zero bytes after a page's block"));
    }
    let block = Block::open(sealed)?;
    if block.is_empty() {
        return Err(malformed("a page with no record"));
    }
    Ok(block)
}

/// The page writer the tuned and B+tree layouts share.
impl Writer {
    /// The most bytes a block of `body` bytes takes sealed, with a page's length word.
    pub(super) fn worst_sealed(&self, body: u64) -> u64 {
        let stored = match self.compression {
            Compression::None => body,
            Compression::Lz4 => body + body / 255 + 16 + 4,
        };
        stored + TRAILER as u64 + 4
    }

    /// A page size for `records`: the target, or more where one record (or, with
    /// `entries_per_node` > 0, that many B+tree entries of the longest key) needs it.
    pub(super) fn page_size(
        &self,
        records: &[Record<'_>],
        target: u64,
        entries_per_node: u64,
    ) -> u64 {
        let largest = records
            .iter()
            .map(|r| self.worst_sealed(record_bytes(r.key, r.value) + 4))
            .max()
            .unwrap_or(0);
        let longest_key = records.iter().map(|r| r.key.len()).max().unwrap_or(0);
        let entry = record_bytes(&vec![0; longest_key], &[0; 8]) + 4;
        let node = self.worst_sealed(entries_per_node * entry);
        target.max(largest).max(node)
    }

    /// Writes `records` into pages of `page` bytes, each filled while its sealed block
    /// fits; returns the index of each page's first record.
    pub(super) fn pages(&mut self, records: &[Record<'_>], page: u64) -> Result<Vec<usize>> {
        let mut firsts = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let size = record_bytes(r.key, r.value);
            if !self.block.is_empty()
                && self.worst_sealed(self.block.body_bytes() as u64 + size) > page
            {
                self.close_page(page)?;
            }
            if self.block.is_empty() {
                firsts.push(i);
            }
            self.add(r)?;
        }
        if !self.block.is_empty() {
            self.close_page(page)?;
        }
        self.data_bytes = self.written;
        Ok(firsts)
    }

    /// Seals a B+tree node into a page, not counted among the data blocks.
    pub(super) fn close_node(&mut self, page: u64) -> Result<()> {
        self.close_page(page)?;
        self.sizes.pop();
        Ok(())
    }

    /// Seals the block being built into a page of `page` bytes and appends it.
    fn close_page(&mut self, page: u64) -> Result<()> {
        self.block
            .finish(self.compression, &mut self.sealed)
            .map_err(|e| Error::param("block size", e))?;
        let sealed = self.sealed.len() as u64;
        if sealed + 4 > page {
            return Err(Error::Internal {
                problem: format!("a sealed block of {sealed} bytes does not fit a page of {page}"),
            });
        }
        self.sealed.resize(page as usize - 4, 0);
        self.sealed
            .extend_from_slice(&(sealed as u32).to_le_bytes());
        self.write_sealed()?;
        self.sizes.push(page);
        Ok(())
    }
}
