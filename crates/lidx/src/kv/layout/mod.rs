//! The four layouts of a key-value file, and the one place that tells them apart
//! (FORMAT.md section 8): each module holds one layout's in-memory index (its meta, with
//! the meta's codec), its part of the writer (what it does at block boundaries and the
//! index it writes when finishing), its locate (key → block or page) and scan, and its
//! verify.
//!
//! - [`learned`]: paper 4, section 4: a model of each key's byte offset places records in
//!   blocks and finds them again through the block-location array.
//! - [`sstable`]: paper 4, section 3: Bigtable's SSTable, blocks filled to τ under a
//!   two-level index of their last keys.
//! - [`tuned`]: paper 2, section 2 (AirIndex): fixed pages under layers of models
//!   tuned to a storage profile.
//! - [`btree`]: paper 2's baseline (section 3, PostgreSQL's B+tree): the same pages under a disk B+tree.
//!
//! [`LayoutIndex`] is the contract each layout's meta keeps; [`Meta`] is the file's meta,
//! one of the four, and the only `match` over layouts: everything else asks it.

use std::sync::Arc;

use super::block::Block;
use super::file::{Footer, Handle};
use super::read::Reader;
use super::verify::VerifyReport;
use super::write::{BuildOptions, Record, TunedReport, Writer};
use crate::files::codec::{Decoder, invalid};
use crate::{FormatError, Result};

pub mod btree;
pub mod learned;
mod paged;
pub mod sstable;
pub mod tuned;

pub(crate) use paged::open_page;

/// How records are laid out in blocks and found again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Paper 4: a monotone model of each key's byte offset decides its block; the model
    /// and a block-location array find it again, no key stored.
    #[default]
    Learned,
    /// Bigtable's classic SSTable: blocks filled to τ, a two-level index of each block's
    /// last key (level 1 in index blocks in the file, level 0 in memory).
    Sstable,
    /// Paper 2's layered index (AirIndex): fixed-size pages, and layers of models on
    /// storage each predicting byte offsets in the one below, tuned to a storage profile.
    Tuned,
    /// Paper 2's B+tree baseline: the tuned layout's fixed-size pages under a disk B+tree
    /// of nodes of the same size, read from the root down.
    Btree,
}

crate::names::name_table!(Layout, "layout", [
    Learned => "learned",
    Sstable => "sstable",
    Tuned => "tuned",
    Btree => "btree",
]);

/// What a layout's writer tells the build report besides its meta.
#[derive(Clone, Debug, Default)]
pub(crate) struct Written {
    /// The block size the footer records: τ, or the page size chosen.
    pub(crate) block_size: u64,
    /// Index blocks the report counts: level-1 blocks (SSTable), nodes (B+tree), else 0.
    pub(crate) index_blocks: u64,
    /// Model pieces: the learned model's, or the tuned layers' together; else 0.
    pub(crate) model_pieces: u64,
    /// Character positions the key map reads (learned, tuned); else 0.
    pub(crate) key_positions: u64,
    /// The tuner's choice (tuned only).
    pub(crate) tuned: Option<TunedReport>,
    /// The learned writer's model and overflow (learned only).
    pub(crate) learned: Option<learned::LearnedBuild>,
}

/// What a scan hands blocks to: it returns whether it wants more.
pub(crate) type Emit<'e> = dyn FnMut(&Block) -> bool + 'e;

/// A layout writer's outcome: its meta, and what the build report needs.
pub(crate) type Wrote<M> = Result<(M, Written)>;

/// How a layout finds records: the learned and SSTable layouts each their own way, the
/// two layouts of fixed pages through [`paged`] once they have found a key's page.
pub(crate) trait Locate {
    /// The data block or page that holds `key` if any does (`None`: none can).
    fn locate(&self, r: &mut Reader<'_>, key: &[u8]) -> Result<Option<Arc<Block>>>;

    /// Hands `emit` the data blocks or pages in key order from the one `from` belongs to,
    /// until `emit` returns `false` (it wants no more) or the data ends.
    fn scan(&self, r: &mut Reader<'_>, from: &[u8], emit: &mut Emit<'_>) -> Result<()>;

    /// Every data block's handle in file order.
    fn data_handles(&self, r: &mut Reader<'_>) -> Result<Vec<Handle>>;
}

/// The contract of one layout's in-memory index: how it is written, stored, read and
/// checked. Every method keeps the behaviour FORMAT.md section 8 describes for its layout.
pub(crate) trait LayoutIndex: Locate + Sized {
    /// Writes `records` (checked: keys strictly increasing) as this layout's data and
    /// index through `w`; returns the meta and what the report needs.
    fn write(w: &mut Writer, records: &[Record<'_>], options: &BuildOptions) -> Wrote<Self>;

    /// Appends the meta's bytes (FORMAT.md section 8.3).
    fn encode(&self, out: &mut Vec<u8>);

    /// Reads a meta written by [`encode`](Self::encode), checking each field against the
    /// footer before anything is allocated for it.
    fn decode(d: &mut Decoder<'_>, footer: &Footer) -> Result<Self, FormatError>;

    /// Bytes of the index kept in memory.
    fn memory_bytes(&self) -> u64;

    /// Index blocks on disk: level-1 blocks, layer pieces or nodes; 0 for none.
    fn index_blocks(&self) -> u64;

    /// Checks every block of the file and that the index finds every key where it is;
    /// the first problem is the error.
    fn verify(&self, r: &mut Reader<'_>) -> Result<VerifyReport>;
}

/// The index a file keeps in memory: one layout's meta.
#[derive(Clone, Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per open file, read on every get: a box would add a pointer to follow"
)]
pub(crate) enum Meta {
    /// Key map, model and block-location array.
    Learned(learned::LearnedMeta),
    /// Level 0 of the two-level index.
    Sstable(sstable::SstableMeta),
    /// Key map, the layers' places and the cost tuned for.
    Tuned(tuned::TunedMeta),
    /// Nodes per level.
    Btree(btree::BtreeMeta),
}

/// `$body` with `$m` bound to the layout's meta, whichever layout `$meta` holds.
macro_rules! each {
    ($meta:expr, $m:ident => $body:expr) => {
        match $meta {
            Meta::Learned($m) => $body,
            Meta::Sstable($m) => $body,
            Meta::Tuned($m) => $body,
            Meta::Btree($m) => $body,
        }
    };
}

/// `$body` with `$T` the meta type of layout `$layout` and `$wrap` the [`Meta`] variant
/// that holds it.
#[rustfmt::skip]
macro_rules! of_layout {
    ($layout:expr, |$T:ident, $wrap:ident| $body:expr) => {
        match $layout {
            Layout::Learned => { type $T = learned::LearnedMeta; let $wrap = Meta::Learned; $body }
            Layout::Sstable => { type $T = sstable::SstableMeta; let $wrap = Meta::Sstable; $body }
            Layout::Tuned => { type $T = tuned::TunedMeta; let $wrap = Meta::Tuned; $body }
            Layout::Btree => { type $T = btree::BtreeMeta; let $wrap = Meta::Btree; $body }
        }
    };
}

impl Layout {
    /// The footer's byte for this layout.
    pub(crate) fn tag(self) -> u8 {
        match self {
            Layout::Learned => 1,
            Layout::Sstable => 2,
            Layout::Tuned => 3,
            Layout::Btree => 4,
        }
    }

    /// The layout a footer's byte stands for, or the error naming the bytes known.
    pub(crate) fn from_tag(tag: u8) -> Result<Layout, FormatError> {
        Layout::ALL
            .into_iter()
            .find(|l| l.tag() == tag)
            .ok_or_else(|| {
                invalid(
                    "layout",
                    tag.into(),
                    "1 (learned), 2 (sstable), 3 (tuned) or 4 (btree)",
                )
            })
    }
}

impl Meta {
    /// Writes `records` in `options`' layout through `w`.
    pub(crate) fn write(
        w: &mut Writer,
        records: &[Record<'_>],
        options: &BuildOptions,
    ) -> Result<(Meta, Written)> {
        of_layout!(options.layout, |T, wrap| {
            T::write(w, records, options).map(|(m, written)| (wrap(m), written))
        })
    }

    /// Reads the meta `bytes` of a file whose footer is `footer`; every byte must be read.
    pub(crate) fn decode(bytes: &[u8], footer: &Footer) -> Result<Meta, FormatError> {
        let mut d = Decoder::new(bytes, "index");
        let meta = of_layout!(footer.layout, |T, wrap| T::decode(&mut d, footer).map(wrap))?;
        d.finish()?;
        Ok(meta)
    }

    /// Appends the meta's bytes.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        each!(self, m => m.encode(out));
    }

    /// Bytes of the index kept in memory.
    pub(crate) fn memory_bytes(&self) -> u64 {
        each!(self, m => m.memory_bytes())
    }

    /// Index blocks on disk.
    pub(crate) fn index_blocks(&self) -> u64 {
        each!(self, m => m.index_blocks())
    }

    /// The block or page that holds `key` if any does.
    pub(crate) fn locate(&self, r: &mut Reader<'_>, key: &[u8]) -> Result<Option<Arc<Block>>> {
        each!(self, m => m.locate(r, key))
    }

    /// The blocks or pages in key order from `from`'s, while `emit` wants more.
    pub(crate) fn scan(&self, r: &mut Reader<'_>, from: &[u8], emit: &mut Emit<'_>) -> Result<()> {
        each!(self, m => m.scan(r, from, emit))
    }

    /// Every data block's handle in file order.
    pub(crate) fn data_handles(&self, r: &mut Reader<'_>) -> Result<Vec<Handle>> {
        each!(self, m => m.data_handles(r))
    }

    /// Checks the whole file.
    pub(crate) fn verify(&self, r: &mut Reader<'_>) -> Result<VerifyReport> {
        each!(self, m => m.verify(r))
    }

    /// The learned layout's meta.
    pub(crate) fn learned(&self) -> Option<&learned::LearnedMeta> {
        match self {
            Meta::Learned(m) => Some(m),
            _ => None,
        }
    }

    /// The tuned layout's meta.
    pub(crate) fn tuned(&self) -> Option<&tuned::TunedMeta> {
        match self {
            Meta::Tuned(m) => Some(m),
            _ => None,
        }
    }

    /// The B+tree layout's meta.
    pub(crate) fn btree(&self) -> Option<&btree::BtreeMeta> {
        match self {
            Meta::Btree(m) => Some(m),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layout_has_its_own_footer_byte_and_others_are_refused_naming_all_four() {
        for layout in Layout::ALL {
            assert_eq!(Layout::from_tag(layout.tag()).expect("known"), layout);
        }
        for tag in [0u8, 5, 255] {
            let e = Layout::from_tag(tag).expect_err("unknown");
            assert!(
                matches!(e, FormatError::BadField { field: "layout", value, expected }
                    if value == u64::from(tag) && expected.contains("4 (btree)")),
                "{e:?}"
            );
        }
    }
}
