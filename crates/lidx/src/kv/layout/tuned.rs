//! The tuned layout, paper 2's layered index (AirIndex, section 2; FORMAT.md
//! sections 8.3 and 8.5a): pages of a fixed size (the block size, or more where a record
//! needs it), each a sealed block, zeros and the block's length; then the layers the
//! tuner chose for a storage profile, layer 1 first. A get reads the root whole, a window
//! of each layer below it, then the window of pages, of which the last whose first key is
//! at most the key: one read per layer and one for the pages, as the tuner costed it.

#![deny(clippy::indexing_slicing)]

use std::sync::Arc;

use super::paged::{self, PageIndex};
use super::{LayoutIndex, Written, Wrote};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::kv::block::Block;
use crate::kv::file::{Footer, Handle, KvFile, STEP_LAYER_VERSION};
use crate::kv::keymap::KeyMap;
use crate::kv::layers::{
    Layer, Layered, STORED_PIECE, StoredPiece, lookup_in_memory, tune_families,
};
use crate::kv::read::{Kind, Reader};
use crate::kv::verify::{VerifyReport, records_as_counted};
use crate::kv::write::{BuildOptions, Record, TunedReport, Writer};
use crate::storage::profile::{AffineCost, named_profile};
use crate::{FormatError, Result};

/// The tuned layout's meta: the key map, where each layer lies (layer 1 first; its
/// pieces follow the data pages, layer after layer) and the profile it was tuned for.
#[derive(Clone, Debug)]
pub(crate) struct TunedMeta {
    pub(crate) keymap: KeyMap,
    pub(crate) layers: Vec<LayerPlace>,
    pub(crate) cost: AffineCost,
}

/// Where a layer of the tuned layout lies and how it reads the layer below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerPlace {
    /// Byte offset of its first stored piece.
    pub offset: u64,
    /// Stored pieces.
    pub pieces: u64,
    /// Its error bound Δ in bytes.
    pub delta: u64,
    /// Bytes of a unit of the layer below (the page size, or a stored piece).
    pub unit: u64,
    /// Units in the layer below.
    pub units_below: u64,
    /// A step layer (each piece names a run of units); else a PGM layer.
    pub step: bool,
}

impl LayerPlace {
    /// The layer's window rule, without its pieces.
    pub(crate) fn shape(&self) -> Layer {
        Layer {
            pieces: Vec::new(),
            delta: self.delta,
            unit: self.unit,
            units_below: self.units_below,
            step: self.step,
        }
    }

    /// Bytes of the layer.
    pub fn bytes(&self) -> u64 {
        self.pieces * STORED_PIECE
    }
}

/// Lays `records` out in pages through `w` and runs the tuner over them for `options`'
/// profile (default: the `ssd` profile's random reads); writes the layers it chose.
/// With no output (sketching) nothing is written, and the choice is the same.
pub(crate) fn write_tuned(
    w: &mut Writer,
    records: &[Record<'_>],
    options: &BuildOptions,
) -> Result<(TunedMeta, TunedReport)> {
    // The PGM's PLA is exact on any u64: the widest span, the fewest ties.
    let keymap = KeyMap::train_within(records.iter().map(|r| r.key), u64::MAX);
    let page = w.page_size(records, options.block_size, 0);
    let firsts: Vec<u64> = w
        .pages(records, page)?
        .into_iter()
        .filter_map(|i| records.get(i))
        .map(|r| keymap.map(r.key))
        .collect();
    let cost = options
        .profile
        .or_else(|| named_profile("ssd").map(|p| p.random))
        .unwrap_or(AffineCost {
            latency_us: 250.0,
            bandwidth_mb_s: 175.0,
        });
    let mut places = Vec::new();
    let mut report = TunedReport {
        cost,
        page_size: page,
        candidates: Vec::new(),
        sketched: 0,
    };
    if !firsts.is_empty() {
        let tuned = tune_families(&firsts, page, &cost, options.families)?;
        for layer in &tuned.index.layers {
            let mut bytes = Vec::with_capacity(layer.bytes() as usize);
            for p in &layer.pieces {
                p.encode(&mut bytes);
            }
            places.push(LayerPlace {
                offset: w.written,
                pieces: layer.pieces.len() as u64,
                delta: layer.delta,
                unit: layer.unit,
                units_below: layer.units_below,
                step: layer.step,
            });
            w.write_raw(&bytes)?;
        }
        report.candidates = tuned.per_layers;
        report.sketched = tuned.sketched;
    }
    let meta = TunedMeta {
        keymap,
        layers: places,
        cost,
    };
    Ok((meta, report))
}

impl LayoutIndex for TunedMeta {
    fn write(w: &mut Writer, records: &[Record<'_>], options: &BuildOptions) -> Wrote<Self> {
        let (meta, report) = write_tuned(w, records, options)?;
        let written = Written {
            block_size: report.page_size,
            model_pieces: meta.layers.iter().map(|l| l.pieces).sum(),
            key_positions: meta.keymap.positions() as u64,
            tuned: Some(report),
            ..Written::default()
        };
        Ok((meta, written))
    }

    fn encode(&self, out: &mut Vec<u8>) {
        self.keymap.encode(out);
        let mut e = Encoder(out);
        e.f64(self.cost.latency_us);
        e.f64(self.cost.bandwidth_mb_s);
        e.u64(self.layers.len() as u64);
        for l in &self.layers {
            for v in [l.offset, l.pieces, l.delta, l.unit, l.units_below] {
                e.u64(v);
            }
            e.u64(u64::from(l.step));
        }
    }

    fn decode(d: &mut Decoder<'_>, footer: &Footer) -> Result<Self, FormatError> {
        let keymap = KeyMap::decode(d, u64::MAX)?;
        let cost = AffineCost {
            latency_us: d.f64()?,
            bandwidth_mb_s: d.f64()?,
        };
        // From version 3 each layer says whether it is a step layer.
        let kinds = footer.version >= STEP_LAYER_VERSION;
        let n = d.count(if kinds { 48 } else { 40 })?;
        let mut layers: Vec<LayerPlace> = Vec::with_capacity(n);
        let mut next = footer.data_bytes;
        for i in 0..n {
            let mut l = LayerPlace {
                offset: d.u64()?,
                pieces: d.u64()?,
                delta: d.u64()?,
                unit: d.u64()?,
                units_below: d.u64()?,
                step: false,
            };
            if kinds {
                l.step = match d.u64()? {
                    0 => false,
                    1 => true,
                    kind => return Err(invalid("layer kind", kind, "0 (PGM) or 1 (step)")),
                };
            }
            let (unit, below) = match layers.last() {
                None => (footer.block_size, footer.data_blocks),
                Some(prev) => (STORED_PIECE, prev.pieces),
            };
            let fits = l.offset == next
                && l.pieces >= 1
                && l.unit == unit
                && l.units_below == below
                && l.delta <= 1 << 60;
            if !fits {
                return Err(invalid(
                    "layer",
                    i as u64,
                    "layers one after another from the end of the pages, each over the one below",
                ));
            }
            next = l
                .pieces
                .checked_mul(STORED_PIECE)
                .and_then(|b| b.checked_add(next))
                .ok_or_else(|| invalid("layer pieces", l.pieces, "within the file"))?;
            layers.push(l);
        }
        if next != footer.meta_offset || (layers.is_empty() != (footer.data_blocks == 0)) {
            return Err(FormatError::HeaderDisagrees {
                field: "meta offset",
                header: footer.meta_offset,
                data: next,
            });
        }
        if footer.data_blocks.checked_mul(footer.block_size) != Some(footer.data_bytes) {
            return Err(invalid(
                "data bytes",
                footer.data_bytes,
                "pages times the page size",
            ));
        }
        Ok(TunedMeta {
            keymap,
            layers,
            cost,
        })
    }

    fn memory_bytes(&self) -> u64 {
        self.keymap.size_in_bytes() + 40 * self.layers.len() as u64
    }

    fn index_blocks(&self) -> u64 {
        self.layers.iter().map(|l| l.pieces).sum()
    }

    /// Every page in key order, every layer's pieces checked, and the layers finding every
    /// page's first key where it is.
    fn verify(&self, r: &mut Reader<'_>) -> Result<VerifyReport> {
        let (report, first_keys) = paged::check_pages(r, self.index_blocks())?;
        let file = r.file();
        let firsts: Vec<u64> = first_keys.iter().map(|k| self.keymap.map(k)).collect();
        let mut layers = Vec::with_capacity(self.layers.len());
        for l in &self.layers {
            let mut layer = l.shape();
            layer.pieces = read_pieces(r, l.offset, l.pieces)?;
            layers.push(layer);
        }
        let index = Layered {
            page_size: file.footer().block_size,
            layers,
        };
        for (p, &x) in firsts.iter().enumerate() {
            let want = firsts.partition_point(|&f| f <= x).saturating_sub(1) as u64;
            let (found, _) = lookup_in_memory(&index, &firsts, x);
            if found != want {
                return Err(file.corrupt(format!(
                    "the layers lead the first key of page {p} to page {found}, not {want}"
                )));
            }
        }
        records_as_counted(file, report)
    }
}

impl PageIndex for TunedMeta {
    /// The root read whole, a window of each layer below it, then the window of pages, of
    /// which the last whose first key is at most `key`.
    fn page_of(&self, r: &mut Reader<'_>, key: &[u8]) -> Result<Option<(u64, Arc<Block>)>> {
        let Some(root) = self.layers.last() else {
            return Ok(None);
        };
        let x = self.keymap.map(key);
        let file = r.file();
        r.set_level(Some(self.layers.len()));
        let bytes = r.read_span(root.offset, root.pieces * STORED_PIECE, Kind::Index)?;
        let mut piece = covering_piece(file, root.offset, &bytes.0, x)?;
        // From the root down: each layer's window in the one below it.
        for (i, layer) in self.layers.iter().enumerate().rev() {
            let shape = layer.shape();
            let Some(above) = piece else {
                return Ok(None);
            };
            let (start, n) = shape.window(&above, x);
            let Some(below) = i.checked_sub(1).and_then(|b| self.layers.get(b)) else {
                r.set_level(None);
                let guess = shape.predicted_unit(&above, x);
                return last_mile(r, key, start, n, guess, true);
            };
            r.set_level(Some(i));
            let offset = below.offset + start * STORED_PIECE;
            let bytes = r.read_paged(offset, n * STORED_PIECE, Kind::Index, 1)?;
            piece = covering_piece(file, offset, bytes, x)?;
        }
        Ok(None)
    }
}

/// The piece of the stored pieces `bytes` (at least one, read from `offset` of `file`)
/// that covers `x` (the last whose first key is at most `x`, or the first). The pieces'
/// first keys are bisected as stored; only the piece found and the one after it (whose
/// first key bounds it) are decoded and checked, so a lookup checks two pieces however
/// wide the root. A piece that fails its check is an error.
fn covering_piece(file: &KvFile, offset: u64, bytes: &[u8], x: u64) -> Result<Option<StoredPiece>> {
    let size = STORED_PIECE as usize;
    let stored = |i: usize| bytes.get(i * size..(i + 1) * size);
    let first_x = |i: usize| {
        stored(i)
            .and_then(|p| p.first_chunk::<8>())
            .map_or(u64::MAX, |b| u64::from_le_bytes(*b))
    };
    let count = bytes.len() / size;
    let (mut lo, mut hi) = (0, count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if first_x(mid) <= x {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let i = lo.saturating_sub(1);
    let piece = stored(i).and_then(StoredPiece::decode);
    let next_ok = i + 1 >= count || stored(i + 1).and_then(StoredPiece::decode).is_some();
    match piece {
        Some(p) if next_ok => Ok(Some(p)),
        _ => Err(file.bad_block(
            Handle {
                offset,
                size: bytes.len() as u64,
            },
            "holds a layer piece that fails its checksum or does not decode".into(),
        )),
    }
}

/// Reads and checks `n` (at least 1) stored pieces from `offset`, through the cache's
/// pages, as index blocks of the reader's level.
fn read_pieces(r: &mut Reader<'_>, offset: u64, n: u64) -> Result<Vec<StoredPiece>> {
    let bytes = r.read_paged(offset, n * STORED_PIECE, Kind::Index, 1)?;
    let pieces: Option<Vec<StoredPiece>> = bytes
        .chunks_exact(STORED_PIECE as usize)
        .map(StoredPiece::decode)
        .collect();
    match pieces {
        Some(p) if !p.is_empty() => Ok(p),
        _ => Err(r.file().bad_block(
            Handle {
                offset,
                size: n * STORED_PIECE,
            },
            "holds a layer piece that fails its checksum or does not decode".into(),
        )),
    }
}

/// The page of the window `start .. start + n` that holds `key` if any does (the last
/// whose first key is at most `key`, or the first). Cached pages narrow the window
/// first, the `guess` (the page the model predicts) looked up first: one whose keys span
/// `key` is the answer, one that starts above `key` rules out itself and those after it,
/// one that ends below rules out those before it. The rest are read in one batch; only
/// the page the key leads to is kept, since its neighbours were read only to find it and
/// would crowd the cache. With `step_back`, a key below the window's first page is looked
/// for in the page before (one more read).
fn last_mile(
    r: &mut Reader<'_>,
    key: &[u8],
    start: u64,
    n: u64,
    guess: Option<u64>,
    step_back: bool,
) -> Result<Option<(u64, Arc<Block>)>> {
    let window = start..start + n;
    let guess = guess.filter(|g| window.contains(g));
    let order = guess
        .into_iter()
        .chain(window.clone().filter(|&p| Some(p) != guess));
    // The cached pages that did not hold the key (none, with no allocation, when the
    // guess does: the warm path).
    let mut cached: Vec<(u64, Arc<Block>)> = Vec::new();
    let (mut lo, mut hi) = (start, start + n);
    for p in order {
        let Some(b) = r.cached_page(p) else { continue };
        match b.span_order(key) {
            std::cmp::Ordering::Less => hi = hi.min(p),
            std::cmp::Ordering::Equal => return Ok(Some((p, b))),
            std::cmp::Ordering::Greater => lo = lo.max(p),
        }
        cached.push((p, b));
    }
    if hi <= lo {
        // Below the window's first page (then cached): the page before it (a key the key
        // map ties with a step run's first key), or the first page.
        if start > 0 && step_back {
            return last_mile(r, key, start - 1, 1, None, false);
        }
        return Ok(cached.into_iter().find(|&(p, _)| p == start));
    }
    let mut pages: Vec<Option<Arc<Block>>> = vec![None; (hi - lo) as usize];
    for (p, b) in cached {
        if let Some(slot) = p.checked_sub(lo).and_then(|i| pages.get_mut(i as usize)) {
            *slot = Some(b);
        }
    }
    let pages = r.fill_window(lo, pages, Kind::Data, false)?;
    let within = pages.partition_point(|b| b.key(0) <= key).saturating_sub(1);
    let Some(page) = pages.into_iter().nth(within) else {
        return Ok(None);
    };
    let p = lo + within as u64;
    if p == start && start > 0 && step_back && key < page.key(0) {
        // Below the window: a key the key map sends to the first key of a step layer's
        // run that sorts below it by its bytes; it is in the page before.
        return last_mile(r, key, start - 1, 1, None, false);
    }
    r.keep_page(p, &page);
    Ok(Some((p, page)))
}
