//! ALEX on disk: the gapped-array index's data nodes in a file, its inner nodes in memory
//! (paper 1, section 5.2 and Fig. 5, after Lan et al.'s disk-resident ALEX: "the data
//! nodes are stored as a contiguous file on disk, while the inner nodes are stored in main
//! memory").
//!
//! [`build`] bulk-loads a sorted table the way the in-memory [`Alex`](super::Alex) does (the
//! same cost model picks every fanout and every data node, `alex::plan`), then
//! writes each data node's gapped array, 0.7 full, into consecutive slots of the file:
//! entries at the positions their node's least-squares model predicts, each gap holding the
//! key of the next entry (`u64::MAX` after a node's last), an occupancy bit per slot. A
//! page holds 253 slots (keys, then values, then the bitmap, then its CRC32C), and the
//! nodes follow each other with no padding, so a node may start and end anywhere in a page.
//! Unlike the in-memory kind, which is a map, the file keeps every tuple of the table:
//! equal keys sit side by side in one data node.
//!
//! [`AlexFile::open`] loads what stays in memory (counted by
//! [`size_in_bytes`](AlexFile::size_in_bytes)): the inner nodes (a router and a child per
//! slot) and a descriptor per data node (its first slot, its slots, its entries and its
//! model). An [`AlexReader`] looks a key up as ALEX does, a page at a time: the inner nodes
//! route to a data node, its model predicts a slot, the page holding it is read, and where
//! the key's place is not in that page an exponential search over the node's pages (one
//! read per probe), then a binary search between the last two probes, finds the page that
//! holds it. Every page read is counted ([`IoStats`]), buffered or `O_DIRECT`, and checked
//! against its CRC; the reader keeps the last four pages it read.
//!
//! The file's layout is in `docs/FORMAT.md`, section 10.
#![deny(clippy::indexing_slicing)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::AlexParams;
use super::plan::{self, Model, NodeSink, Router, place};
use crate::files::codec::{Decoder, Encoder, invalid};
use crate::files::paged::{self, PAGE_SIZE, PageCrc, PageReader, Pages};
use crate::files::{AtomicFile, reopen};
use crate::index::file::{self as index_file, FileKind, KeysFingerprint, VerifyReport};
use crate::storage::{IoStats, ReadMode, Table, Tuple};
use crate::{Error, FormatError, Result};

/// The first eight bytes of an ALEX file.
pub const MAGIC: [u8; 8] = FileKind::Alex.magic();
/// Format version written and read.
pub const VERSION: u32 = 1;
/// Slots in a page: 253 keys and 253 values of 8 bytes, a 32-byte bitmap and a CRC32C fit
/// in 4096 bytes.
pub const SLOTS_PER_PAGE: u64 = 253;

const SPP: usize = SLOTS_PER_PAGE as usize;
/// Byte offsets in a page: the keys, the values, the occupancy bitmap (4 `u64` words,
/// bit `i % 64` of word `i / 64` for slot `i`), the CRC32C of the bytes before it.
const VALUES_AT: usize = SPP * 8;
const BITMAP_AT: usize = 2 * SPP * 8;
const CRC_AT: usize = BITMAP_AT + 32;
/// Bytes of a data node's descriptor in the file and in memory.
const DATA_NODE_BYTES: usize = 40;
/// A child reference with this bit set names a data node, without it an inner node.
const DATA_BIT: u32 = 1 << 31;
/// Pages a reader keeps.
const HELD_PAGES: usize = 4;
/// Inner levels a file may have: a bulk load parts every range of more than 64 keys
/// between two slots or more, so it nests at most about 64 deep.
const MAX_DEPTH: usize = 128;

/// An inner node: its router and a child reference per slot.
#[derive(Clone, Debug, PartialEq)]
struct InnerNode {
    router: Router,
    children: Vec<u32>,
}

/// A data node: the slots it takes in the file, the entries among them, its model over
/// its own slots.
#[derive(Clone, Copy, Debug, PartialEq)]
struct DataNode {
    first_slot: u64,
    slots: u64,
    entries: u64,
    model: Model,
}

impl DataNode {
    /// One past its last slot.
    fn end_slot(&self) -> u64 {
        self.first_slot + self.slots
    }

    /// The slot (in the file) its model predicts for `key`.
    fn predict(&self, key: u64) -> u64 {
        let slots = usize::try_from(self.slots).unwrap_or(usize::MAX);
        self.first_slot + self.model.predict(key, slots) as u64
    }
}

/// What a build did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BuildReport {
    /// Tuples written.
    pub tuples: u64,
    /// Data nodes.
    pub data_nodes: u64,
    /// Inner nodes.
    pub inner_nodes: u64,
    /// Levels of nodes from the root to the deepest data node (1: the root is a data node).
    pub depth: u64,
    /// Pages of slots.
    pub pages: u64,
    /// Slots, gaps included.
    pub slots: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// Bytes the open file keeps in memory ([`AlexFile::size_in_bytes`]).
    pub memory_bytes: u64,
    /// Seconds spent choosing the nodes (the bulk load over the keys in memory).
    pub plan_s: f64,
    /// Seconds spent writing the file (reading the table's values, placing, fsync).
    pub write_s: f64,
}

/// The bulk load's sink: node descriptors, data nodes in key order.
#[derive(Default)]
struct Layout {
    inner: Vec<InnerNode>,
    data: Vec<DataNode>,
    /// The first entry of each data node.
    starts: Vec<u64>,
    next_slot: u64,
    root: u32,
}

impl NodeSink<u64> for Layout {
    fn data(&mut self, at: usize, keys: &[u64], slots: usize) -> u32 {
        let id = self.data.len() as u32 | DATA_BIT;
        self.data.push(DataNode {
            first_slot: self.next_slot,
            slots: slots as u64,
            entries: keys.len() as u64,
            model: Model::fit(keys, slots),
        });
        self.starts.push(at as u64);
        self.next_slot += slots as u64;
        id
    }

    fn inner(&mut self, router: Router, fanout: usize) -> u32 {
        self.inner.push(InnerNode {
            router,
            children: vec![0; fanout],
        });
        (self.inner.len() - 1) as u32
    }

    #[expect(
        clippy::indexing_slicing,
        reason = "the bulk load names nodes and slots it made"
    )]
    fn child(&mut self, id: u32, slots: std::ops::Range<usize>, child: u32) {
        self.inner[id as usize].children[slots].fill(child);
    }
}

/// Builds the ALEX file of the sorted `table`, whose keys are `keys` (loaded by the
/// caller, as every index build takes them), at `out`: the bulk load over the keys in
/// memory, then one sequential pass over the table's tuples placing them in their data
/// nodes' slots. `progress` hears the tuples placed so far. The file is written to a
/// temporary file, fsynced and renamed into place; an `out` that is the table's file is
/// refused ([`Error::OutputIsInput`]).
pub fn build(
    table: &Table,
    keys: &[u64],
    out: &Path,
    params: &AlexParams,
    progress: impl FnMut(u64),
) -> Result<BuildReport> {
    crate::files::refuse_same_file(table.path(), out)?;
    table.require_sorted("building an ALEX file")?;
    table.require_pairs("building an ALEX file")?;
    params.check()?;
    if keys.len() as u64 != table.len() {
        return Err(Error::misuse(
            "alex::file::build",
            format!(
                "{} keys given for a table of {} tuples",
                keys.len(),
                table.len()
            ),
        ));
    }
    if table.len() >= u64::from(DATA_BIT) * SLOTS_PER_PAGE {
        return Err(Error::param("table", "more tuples than an ALEX file takes"));
    }
    let started = Instant::now();
    let mut layout = Layout::default();
    layout.root = plan::bulk_load(keys, params, DATA_NODE_BYTES, &mut layout);
    let plan_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let report = write(table, keys, layout, params, out, progress)?;
    Ok(BuildReport {
        plan_s,
        write_s: started.elapsed().as_secs_f64(),
        ..report
    })
}

/// Writes the file of `layout` over `table` (whose keys are `keys`) at `out`.
fn write(
    table: &Table,
    keys: &[u64],
    layout: Layout,
    params: &AlexParams,
    out: &Path,
    mut progress: impl FnMut(u64),
) -> Result<BuildReport> {
    let mut file = AtomicFile::create(out)?;
    file.write_all(&[0u8; PAGE_SIZE])?;
    let mut filler = Filler::new(&layout, keys);
    filler.finish_empty_nodes(&mut file)?;
    let mut placed = 0u64;
    table.scan(|tuples| {
        for t in tuples {
            filler.push(*t, &mut file).map_err(|e| e.at(out))?;
        }
        placed += tuples.len() as u64;
        progress(placed);
        Ok(())
    })?;
    let pages = filler.finish(&mut file).map_err(|e| e.at(out))?;
    let slots = layout.next_slot;
    let built = AlexFile {
        path: out.to_path_buf(),
        file: None,
        n: table.len(),
        pages,
        fingerprint: KeysFingerprint::of(keys),
        params: *params,
        root: layout.root,
        inner: layout.inner,
        data: layout.data,
    };
    let tail = built.encode_tail();
    let fields = [built.n, pages, built.data.len() as u64];
    let written = paged::write_tail_and_header(&mut file, MAGIC, VERSION, fields, pages, &tail)?;
    file.finish()?;
    Ok(BuildReport {
        tuples: built.n,
        data_nodes: built.data.len() as u64,
        inner_nodes: built.inner.len() as u64,
        depth: built.depth(),
        pages,
        slots,
        file_bytes: written + pages * PAGE_SIZE as u64,
        memory_bytes: built.size_in_bytes(),
        plan_s: 0.0,
        write_s: 0.0,
    })
}

/// A fault found while placing tuples, before the output's path is known to the error.
enum FillError {
    /// The table's tuples disagree with the keys the layout was planned on.
    Disagrees(String),
    /// Writing failed.
    Io(Error),
}

impl FillError {
    fn at(self, out: &Path) -> Error {
        match self {
            FillError::Disagrees(problem) => {
                Error::misuse("alex::file::build", format!("{}: {problem}", out.display()))
            }
            FillError::Io(e) => e,
        }
    }
}

impl From<Error> for FillError {
    fn from(e: Error) -> Self {
        FillError::Io(e)
    }
}

/// Places the table's tuples, in order, into the slots the layout gives them and writes
/// the pages as they fill.
struct Filler<'a> {
    layout: &'a Layout,
    keys: &'a [u64],
    /// The node being filled and the entries placed in it.
    node: usize,
    placed: u64,
    /// The current node's slot for each of its entries, relative to its first slot.
    positions: Vec<u64>,
    /// Every slot before this one is final.
    next_slot: u64,
    /// The page being filled, and its number.
    page: Box<[u8; PAGE_SIZE]>,
    page_no: u64,
}

impl<'a> Filler<'a> {
    fn new(layout: &'a Layout, keys: &'a [u64]) -> Self {
        let mut filler = Filler {
            layout,
            keys,
            node: 0,
            placed: 0,
            positions: Vec::new(),
            next_slot: 0,
            page: Box::new([0u8; PAGE_SIZE]),
            page_no: 0,
        };
        filler.plan_node();
        filler
    }

    /// Where the current node's entries go.
    #[expect(
        clippy::indexing_slicing,
        reason = "the layout's nodes and their first entries come from the keys being written"
    )]
    fn plan_node(&mut self) {
        self.positions.clear();
        let Some(d) = self.layout.data.get(self.node) else {
            return;
        };
        let at = self.layout.starts[self.node] as usize;
        let keys = &self.keys[at..at + d.entries as usize];
        let positions = &mut self.positions;
        place(keys, d.slots as usize, &d.model, |_, _, pos| {
            positions.push(pos as u64)
        });
    }

    /// Sets slot `slot` (the next one) to `key` and `value`, occupied or a gap.
    #[expect(
        clippy::indexing_slicing,
        reason = "slots are below 253, so keys, values and bitmap bits lie within the page"
    )]
    fn set(
        &mut self,
        slot: u64,
        key: u64,
        value: u64,
        occupied: bool,
        out: &mut AtomicFile,
    ) -> Result<()> {
        debug_assert_eq!(slot, self.next_slot);
        let page = slot / SLOTS_PER_PAGE;
        if page != self.page_no {
            self.flush(out)?;
            self.page_no = page;
        }
        let i = (slot % SLOTS_PER_PAGE) as usize;
        self.page[i * 8..i * 8 + 8].copy_from_slice(&key.to_le_bytes());
        let v = VALUES_AT + i * 8;
        self.page[v..v + 8].copy_from_slice(&value.to_le_bytes());
        if occupied {
            self.page[BITMAP_AT + i / 8] |= 1 << (i % 8);
        }
        self.next_slot = slot + 1;
        Ok(())
    }

    /// Fills the slots up to `end` with gaps holding `key`.
    fn gaps(&mut self, end: u64, key: u64, out: &mut AtomicFile) -> Result<()> {
        while self.next_slot < end {
            self.set(self.next_slot, key, 0, false, out)?;
        }
        Ok(())
    }

    /// Writes the page being filled (its CRC set) and starts an empty one.
    #[expect(
        clippy::indexing_slicing,
        reason = "the CRC's offset lies within the page"
    )]
    fn flush(&mut self, out: &mut AtomicFile) -> Result<()> {
        let crc = crc32c::crc32c(&self.page[..CRC_AT]);
        self.page[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        out.write_all(&self.page[..])?;
        self.page.fill(0);
        Ok(())
    }

    /// Closes the current node once all its entries are placed (its last gaps hold
    /// `u64::MAX`), and every empty node after it.
    fn finish_empty_nodes(&mut self, out: &mut AtomicFile) -> Result<()> {
        while let Some(d) = self.layout.data.get(self.node) {
            if self.placed < d.entries {
                break;
            }
            self.gaps(d.end_slot(), u64::MAX, out)?;
            self.node += 1;
            self.placed = 0;
            self.plan_node();
        }
        Ok(())
    }

    /// Places the next tuple of the table.
    #[expect(
        clippy::indexing_slicing,
        reason = "a node's entries and planned positions are as many as its tuples being placed"
    )]
    fn push(&mut self, t: Tuple, out: &mut AtomicFile) -> std::result::Result<(), FillError> {
        let Some(&d) = self.layout.data.get(self.node) else {
            return Err(FillError::Disagrees(
                "the table holds more tuples than its keys".into(),
            ));
        };
        let at = self.layout.starts[self.node] + self.placed;
        if self.keys.get(at as usize) != Some(&t.key) {
            return Err(FillError::Disagrees(format!(
                "tuple {at} of the table has key {}, not the key the nodes were planned on",
                t.key
            )));
        }
        let slot = d.first_slot + self.positions[self.placed as usize];
        self.gaps(slot, t.key, out)?;
        self.set(slot, t.key, t.value, true, out)?;
        self.placed += 1;
        self.finish_empty_nodes(out)?;
        Ok(())
    }

    /// Writes the last page; returns the pages written.
    fn finish(mut self, out: &mut AtomicFile) -> std::result::Result<u64, FillError> {
        if self.node < self.layout.data.len() {
            return Err(FillError::Disagrees(
                "the table holds fewer tuples than its keys".into(),
            ));
        }
        if self.next_slot == 0 {
            return Ok(0);
        }
        self.flush(out)?;
        Ok(self.page_no + 1)
    }
}

/// An open ALEX file: its inner nodes and data node descriptors in memory, checked; pages
/// are read by an [`AlexReader`].
#[derive(Debug)]
pub struct AlexFile {
    path: PathBuf,
    /// `None` only while a build encodes the tail.
    file: Option<File>,
    n: u64,
    pages: u64,
    fingerprint: KeysFingerprint,
    params: AlexParams,
    root: u32,
    inner: Vec<InnerNode>,
    data: Vec<DataNode>,
}

impl AlexFile {
    /// Opens and checks the ALEX file at `path`: magic, version, header and tail
    /// checksums, the file's length, and the nodes' invariants (every reference names a
    /// node, the inner nodes form a tree whose leaves are the data nodes in file order, the
    /// data nodes' slots tile the pages, their entries add up to the tuples, every model is
    /// finite). Pages are checked when read.
    pub fn open(path: &Path) -> Result<AlexFile> {
        let opened = paged::open(path, MAGIC, VERSION..=VERSION, "lidx ALEX file", 1)?;
        let [n, pages, data_nodes] = opened.fields;
        let mut file = decode_tail(&opened.tail, n, pages, data_nodes)
            .map_err(|problem| Error::format(path, problem))?;
        file.path = path.to_path_buf();
        file.file = Some(opened.file);
        Ok(file)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tuples held.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True when it holds no tuples.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Pages of slots.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Slots, gaps included.
    pub fn slots(&self) -> u64 {
        self.data.last().map_or(0, DataNode::end_slot)
    }

    /// Data nodes.
    pub fn data_nodes(&self) -> u64 {
        self.data.len() as u64
    }

    /// Inner nodes.
    pub fn inner_nodes(&self) -> u64 {
        self.inner.len() as u64
    }

    /// Levels from the root to the deepest data node (1 when the root is a data node).
    pub fn depth(&self) -> u64 {
        let mut deepest = 1;
        let mut stack = vec![(self.root, 1u64)];
        while let Some((node, level)) = stack.pop() {
            deepest = deepest.max(level);
            if let Some(inner) = self.inner_node(node) {
                let mut last = None;
                for &c in &inner.children {
                    if last != Some(c) {
                        stack.push((c, level + 1));
                        last = Some(c);
                    }
                }
            }
        }
        deepest
    }

    /// The parameters it was built with.
    pub fn params(&self) -> AlexParams {
        self.params
    }

    /// What the file says of the keys it was built on.
    pub fn fingerprint(&self) -> KeysFingerprint {
        self.fingerprint
    }

    /// Bytes kept in memory: the inner nodes (a router of 16 bytes and 4 bytes a slot) and
    /// the data nodes' descriptors (40 bytes each); paper 1's "index size in main memory".
    pub fn size_in_bytes(&self) -> u64 {
        let inner: u64 = self
            .inner
            .iter()
            .map(|n| 16 + 4 * n.children.len() as u64)
            .sum();
        inner + DATA_NODE_BYTES as u64 * self.data.len() as u64
    }

    fn inner_node(&self, node: u32) -> Option<&InnerNode> {
        if node & DATA_BIT == 0 {
            self.inner.get(node as usize)
        } else {
            None
        }
    }

    /// The data node `key` routes to.
    #[expect(
        clippy::indexing_slicing,
        reason = "check_tree checked at open that every child reference names a node the file has"
    )]
    fn route(&self, key: u64) -> &DataNode {
        let mut node = self.root;
        while let Some(inner) = self.inner_node(node) {
            node = inner.children[inner.router.slot(key, inner.children.len())];
        }
        // `open` checked that every reference names a node.
        &self.data[(node & !DATA_BIT) as usize]
    }

    /// The tail: the keys' fingerprint, the parameters, the root, the inner nodes, the data
    /// nodes' descriptors.
    fn encode_tail(&self) -> Vec<u8> {
        let mut tail = Vec::new();
        let mut e = Encoder(&mut tail);
        let fp = self.fingerprint;
        e.u64(fp.n);
        e.u64(fp.min_key);
        e.u64(fp.max_key);
        e.u32(fp.crc32c);
        e.f64(self.params.init_density);
        e.f64(self.params.min_density);
        e.f64(self.params.max_density);
        e.u64(self.params.max_data_slots as u64);
        e.u64(self.params.max_fanout as u64);
        e.u32(self.root);
        e.u64(self.inner.len() as u64);
        for n in &self.inner {
            e.u64(n.router.base);
            e.f64(n.router.slope);
            e.u64(n.children.len() as u64);
            for &c in &n.children {
                e.u32(c);
            }
        }
        for d in &self.data {
            e.u64(d.slots);
            e.u64(d.entries);
            e.u64(d.model.base);
            e.f64(d.model.slope);
            e.f64(d.model.intercept);
        }
        tail
    }

    /// Reads every page and checks everything a lookup relies on: each page's CRC and
    /// padding, each data node's entries (as many as its descriptor says, keys in order,
    /// each gap holding the next entry's key, `u64::MAX` after the last, and value 0), every entry
    /// routing to its own node, and the keys' fingerprint. Returns the tuples checked.
    pub fn verify(&self) -> Result<u64> {
        let fail = |problem: String| Error::format(&self.path, FormatError::Inconsistent(problem));
        let mut reader = AlexReader::new(self, ReadMode::Buffered)?;
        let (mut crc, mut min, mut max, mut count) = (0u32, 0u64, 0u64, 0u64);
        for (i, d) in self.data.iter().enumerate() {
            let mut entries = 0u64;
            let mut last_entry: Option<u64> = None;
            // The key the run of gaps just passed holds: the next entry's.
            let mut gaps: Option<u64> = None;
            for slot in d.first_slot..d.end_slot() {
                let (key, value, occupied) = reader.slot(slot)?;
                if gaps.is_some_and(|g| g != key) {
                    return Err(fail(format!(
                        "a gap before slot {slot} of data node {i} does not hold the key after it, {key}"
                    )));
                }
                if !occupied {
                    if value != 0 {
                        return Err(fail(format!(
                            "the gap at slot {slot} of data node {i} holds value {value}, where the format has 0"
                        )));
                    }
                    gaps = Some(key);
                    continue;
                }
                gaps = None;
                if last_entry.is_some_and(|l| l > key) {
                    return Err(fail(format!(
                        "data node {i} holds key {key} after a greater key"
                    )));
                }
                if !std::ptr::eq(self.route(key), d) {
                    return Err(fail(format!(
                        "key {key} is in data node {i} but routes elsewhere"
                    )));
                }
                last_entry = Some(key);
                entries += 1;
                if count == 0 {
                    min = key;
                }
                max = key;
                count += 1;
                crc = crc32c::crc32c_append(crc, &key.to_le_bytes());
            }
            if gaps.is_some_and(|g| g != u64::MAX) {
                return Err(fail(format!(
                    "the last gaps of data node {i} do not hold u64::MAX"
                )));
            }
            if entries != d.entries {
                return Err(fail(format!(
                    "data node {i} says it holds {} entries, its slots hold {entries}",
                    d.entries
                )));
            }
        }
        // What lookups never read: the slots past the last node, bits past slot 253.
        for slot in self.slots()..self.pages * SLOTS_PER_PAGE {
            if reader.slot(slot)? != (0, 0, false) {
                return Err(fail(format!(
                    "slot {slot}, past the last data node, is not zero"
                )));
            }
        }
        for page in 0..self.pages {
            if reader.page(page)?.get(CRC_AT - 1).copied().unwrap_or(0) >> (SPP % 8) != 0 {
                return Err(fail(format!(
                    "page {page} marks slots past the 253rd as taken"
                )));
            }
        }
        let found = KeysFingerprint {
            n: count,
            min_key: min,
            max_key: max,
            crc32c: crc,
        };
        if found != self.fingerprint {
            return Err(fail(
                "the entries' keys are not those the file was built on".to_string(),
            ));
        }
        Ok(count)
    }
}

impl AlexFile {
    /// Opens the ALEX file at `path` and checks everything its format has: what
    /// [`open`](Self::open) checks, then every page and node ([`verify`](Self::verify)).
    /// With `table` (the sorted (key, value) table it was built from), also
    /// [`check_table`](Self::check_table): every key of the table is found, with exactly
    /// the table's values.
    pub fn verify_file(path: &Path, table: Option<&Table>) -> Result<VerifyReport> {
        let alex = AlexFile::open(path)?;
        let entries = alex.verify()?;
        let table_tuples = match table {
            Some(table) => Some(alex.check_table(table)?),
            None => None,
        };
        let bytes = alex
            .file
            .as_ref()
            .map(|f| f.metadata().map(|m| m.len()))
            .transpose()
            .map_err(|e| Error::io(path, "read the metadata of", e))?
            .unwrap_or(0);
        Ok(VerifyReport {
            kind: FileKind::Alex,
            bytes,
            checksums: 2 + alex.pages,
            pages: alex.pages,
            entries,
            table_tuples,
        })
    }

    /// Checks the file against `table`, the sorted (key, value) table it says it was built
    /// from: the count and key range its header gives, then a lookup of each of the
    /// table's keys, which must return exactly the table's values for that key in table
    /// order ([`Error::IndexMismatch`] otherwise). Returns the table's tuples.
    pub fn check_table(&self, table: &Table) -> Result<u64> {
        table.require_sorted("verifying an ALEX file against a table")?;
        table.require_pairs("verifying an ALEX file against a table")?;
        index_file::check_table(&self.path, &self.fingerprint, table)?;
        let mut reader = AlexReader::new(self, ReadMode::Buffered)?;
        // The run of equal keys being read from the table, and what a lookup finds.
        let (mut key, mut values, mut found) = (None, Vec::new(), Vec::new());
        table.scan(|tuples| {
            for t in tuples {
                if key != Some(t.key) {
                    if let Some(k) = key {
                        reader.check_run(k, &values, &mut found, table)?;
                    }
                    key = Some(t.key);
                    values.clear();
                }
                values.push(t.value);
            }
            Ok(())
        })?;
        if let Some(k) = key {
            reader.check_run(k, &values, &mut found, table)?;
        }
        Ok(table.len())
    }
}

/// Decodes and checks the tail of a file whose header gives `n` tuples, `pages` pages and
/// `data_nodes` data nodes.
fn decode_tail(
    tail: &[u8],
    n: u64,
    pages: u64,
    data_nodes: u64,
) -> std::result::Result<AlexFile, FormatError> {
    let mut d = Decoder::new(tail, "ALEX file tail");
    let fingerprint = KeysFingerprint {
        n: d.u64()?,
        min_key: d.u64()?,
        max_key: d.u64()?,
        crc32c: d.u32()?,
    };
    if fingerprint.n != n {
        return Err(FormatError::HeaderDisagrees {
            field: "tuples",
            header: n,
            data: fingerprint.n,
        });
    }
    let densities = [d.f64()?, d.f64()?, d.f64()?];
    let (max_data_slots, max_fanout) = (d.u64()?, d.u64()?);
    let params = AlexParams {
        init_density: densities[0],
        min_density: densities[1],
        max_density: densities[2],
        max_data_slots: usize::try_from(max_data_slots).unwrap_or(usize::MAX),
        max_fanout: usize::try_from(max_fanout).unwrap_or(usize::MAX),
    };
    if params.check().is_err() {
        return Err(invalid(
            "parameters",
            0,
            "densities 0 < minimum <= initial < maximum < 1, at least 16 data slots and 2 child slots",
        ));
    }
    let root = d.u32()?;
    // An inner node takes at least 28 bytes of the tail.
    let inner_count = d.count(28)?;
    let mut inner = Vec::with_capacity(inner_count);
    for _ in 0..inner_count {
        let base = d.u64()?;
        let slope = d.f64()?;
        let fanout = d.count(4)?;
        if fanout == 0 || !slope.is_finite() || slope < 0.0 {
            return Err(invalid(
                "inner node",
                fanout as u64,
                "at least one slot and a finite slope of at least 0",
            ));
        }
        let children = (0..fanout)
            .map(|_| d.u32())
            .collect::<Result<Vec<_>, _>>()?;
        inner.push(InnerNode {
            router: Router { base, slope },
            children,
        });
    }
    let need = data_nodes
        .checked_mul(DATA_NODE_BYTES as u64)
        .filter(|&b| b <= d.remaining() as u64);
    if need.is_none() || data_nodes == 0 || data_nodes >= u64::from(DATA_BIT) {
        return Err(invalid(
            "data nodes",
            data_nodes,
            "at least 1, each with a 40-byte descriptor in the tail",
        ));
    }
    let mut data = Vec::with_capacity(data_nodes as usize);
    let (mut next_slot, mut entries_total) = (0u64, 0u64);
    for _ in 0..data_nodes {
        let slots = d.u64()?;
        let entries = d.u64()?;
        let model = Model {
            base: d.u64()?,
            slope: d.f64()?,
            intercept: d.f64()?,
        };
        if slots == 0 || entries > slots || !model.slope.is_finite() || !model.intercept.is_finite()
        {
            return Err(invalid(
                "data node",
                slots,
                "at least one slot, no more entries than slots, a finite model",
            ));
        }
        data.push(DataNode {
            first_slot: next_slot,
            slots,
            entries,
            model,
        });
        next_slot = next_slot.checked_add(slots).ok_or(invalid(
            "data node slots",
            slots,
            "a total below 2^64",
        ))?;
        entries_total += entries;
    }
    d.finish()?;
    if entries_total != n {
        return Err(FormatError::HeaderDisagrees {
            field: "tuples",
            header: n,
            data: entries_total,
        });
    }
    if next_slot.div_ceil(SLOTS_PER_PAGE) != pages {
        return Err(FormatError::HeaderDisagrees {
            field: "pages",
            header: pages,
            data: next_slot.div_ceil(SLOTS_PER_PAGE),
        });
    }
    check_tree(root, &inner, data.len())?;
    Ok(AlexFile {
        path: PathBuf::new(),
        file: None,
        n,
        pages,
        fingerprint,
        params,
        root,
        inner,
        data,
    })
}

/// Checks that the references from `root` form a tree over all `inner` nodes whose leaves,
/// left to right, are the data nodes `0..data_nodes` in order (a child takes one run of
/// adjacent slots). Walks with a stack of its own, so no file can exhaust the call stack.
fn check_tree(
    root: u32,
    inner: &[InnerNode],
    data_nodes: usize,
) -> std::result::Result<(), FormatError> {
    let broken = |what: &str| FormatError::Inconsistent(format!("the ALEX file's nodes {what}"));
    let mut next_data = 0usize;
    let mut seen = vec![false; inner.len()];
    let mut visit =
        |node: u32, stack: &mut Vec<(usize, usize)>| -> std::result::Result<(), FormatError> {
            if node & DATA_BIT != 0 {
                if (node & !DATA_BIT) as usize != next_data {
                    return Err(broken("do not list the data nodes in file order"));
                }
                next_data += 1;
                return Ok(());
            }
            let i = node as usize;
            match seen.get_mut(i) {
                None => Err(broken("refer to an inner node past the last")),
                Some(true) => Err(broken("reach an inner node twice")),
                Some(s) => {
                    *s = true;
                    stack.push((i, 0));
                    Ok(())
                }
            }
        };
    let mut stack = Vec::new();
    visit(root, &mut stack)?;
    while let Some(&(i, slot)) = stack.last() {
        if stack.len() > MAX_DEPTH {
            return Err(broken("nest deeper than a bulk load does"));
        }
        let children = inner
            .get(i)
            .map(|n| n.children.as_slice())
            .unwrap_or_default();
        let Some((&child, rest)) = children.get(slot..).and_then(<[u32]>::split_first) else {
            stack.pop();
            continue;
        };
        let end = slot + 1 + rest.iter().take_while(|&&c| c == child).count();
        if let Some(top) = stack.last_mut() {
            top.1 = end;
        }
        visit(child, &mut stack)?;
    }
    if next_data != data_nodes {
        return Err(broken("leave data nodes out of the tree"));
    }
    if seen.contains(&false) {
        return Err(broken("leave inner nodes out of the tree"));
    }
    Ok(())
}

/// Looks keys up in an [`AlexFile`], reading its pages (buffered or `O_DIRECT`) and
/// counting the reads; keeps the last four pages read.
pub struct AlexReader<'f> {
    file: &'f AlexFile,
    handle: File,
    mode: ReadMode,
    /// Reads, checks and counts pages, keeping the last [`HELD_PAGES`].
    reader: PageReader,
    lookups: u64,
}

impl<'f> AlexReader<'f> {
    /// A reader of `file`'s pages with a handle of its own, opened for `mode`; fails with
    /// [`Error::DirectUnsupported`] where the file system refuses `O_DIRECT`.
    pub fn new(file: &'f AlexFile, mode: ReadMode) -> Result<Self> {
        let open = file.file.as_ref().ok_or_else(|| {
            Error::misuse("AlexReader::new", "the file is being built, not opened")
        })?;
        let handle = reopen(open, &file.path, mode == ReadMode::Direct)?;
        Ok(AlexReader {
            file,
            handle,
            mode,
            reader: PageReader::new(HELD_PAGES),
            lookups: 0,
        })
    }

    /// The read mode.
    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    /// Page reads since creation.
    pub fn stats(&self) -> IoStats {
        self.reader.stats()
    }

    /// Lookups since creation.
    pub fn lookups(&self) -> u64 {
        self.lookups
    }

    /// Hands `visit` the value of every tuple with key `key`, in the order the table held
    /// them, and returns how many there were.
    pub fn matches(&mut self, key: u64, mut visit: impl FnMut(u64)) -> Result<u64> {
        self.lookups += 1;
        let node = *self.file.route(key);
        let mut slot = self.lower_bound(&node, key)?;
        let end = node.end_slot();
        let mut found = 0;
        while slot < end {
            let page = self.page(slot / SLOTS_PER_PAGE)?;
            let first = slot % SLOTS_PER_PAGE;
            let last = (end - (slot - first)).min(SLOTS_PER_PAGE);
            let mut i = first;
            while i < last {
                let (k, value, occupied) = page_slot(page, i as usize);
                if k != key {
                    // A gap holds the next entry's key: a greater one ends the run.
                    return Ok(found);
                }
                if occupied {
                    visit(value);
                    found += 1;
                }
                i += 1;
            }
            slot += last - first;
        }
        Ok(found)
    }

    /// The values of every tuple with key `key` (see [`matches`](Self::matches)).
    pub fn get_all(&mut self, key: u64) -> Result<Vec<u64>> {
        let mut values = Vec::new();
        self.matches(key, |v| values.push(v))?;
        Ok(values)
    }

    /// Fails with [`Error::IndexMismatch`] unless a lookup of `key` finds exactly `values`,
    /// those of `table`'s run of tuples with that key, in order (`found` is scratch).
    fn check_run(
        &mut self,
        key: u64,
        values: &[u64],
        found: &mut Vec<u64>,
        table: &Table,
    ) -> Result<()> {
        found.clear();
        self.matches(key, |v| found.push(v))?;
        if found == values {
            return Ok(());
        }
        let problem = if found.len() != values.len() {
            format!(
                "a lookup of key {key} finds {} tuples, where {} holds {}",
                found.len(),
                table.path().display(),
                values.len()
            )
        } else {
            format!(
                "a lookup of key {key} finds other values than {} holds",
                table.path().display()
            )
        };
        Err(Error::IndexMismatch {
            path: self.file.path.clone(),
            problem: format!("{problem}; rebuild it"),
        })
    }

    /// The first slot of `node` whose key is at least `key` (its end when none is): the
    /// page of the predicted slot, then an exponential search over the node's pages where
    /// the key's place is not in it, then a binary search between the last two probes.
    fn lower_bound(&mut self, node: &DataNode, key: u64) -> Result<u64> {
        let (first_page, last_page) = (
            node.first_slot / SLOTS_PER_PAGE,
            (node.end_slot() - 1) / SLOTS_PER_PAGE,
        );
        let mut page = node.predict(key) / SLOTS_PER_PAGE;
        if !self.starts_below(node, page, key)? {
            if page > first_page {
                // The place is before this page: probe leftwards.
                let (mut hi, mut step) = (page, 1);
                let lo = loop {
                    let probe = hi.saturating_sub(step).max(first_page);
                    if self.starts_below(node, probe, key)? {
                        break probe;
                    }
                    if probe == first_page {
                        return Ok(node.first_slot);
                    }
                    hi = probe;
                    step *= 2;
                };
                page = self.last_below(node, lo, hi, key)?;
            }
        } else if page < last_page && self.ends_below(node, page, key)? {
            // The place is after this page: probe rightwards.
            let (mut lo, mut step) = (page, 1);
            page = loop {
                let probe = (lo + step).min(last_page);
                if !self.starts_below(node, probe, key)? {
                    break self.last_below(node, lo, probe, key)?;
                }
                if probe == last_page {
                    break probe;
                }
                lo = probe;
                step *= 2;
            };
        }
        let (a, b) = clip(node, page);
        let bytes = self.page(page)?;
        let keys = page_keys(bytes);
        let at = keys
            .get((a % SLOTS_PER_PAGE) as usize..(a % SLOTS_PER_PAGE + (b - a)) as usize)
            .unwrap_or_default()
            .partition_point(|&k| k < key);
        Ok(a + at as u64)
    }

    /// The last page in `lo..hi` whose first slot (in `node`) holds a key below `key`,
    /// given that `lo`'s does and `hi`'s does not.
    fn last_below(&mut self, node: &DataNode, mut lo: u64, mut hi: u64, key: u64) -> Result<u64> {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.starts_below(node, mid, key)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Whether the first of `node`'s slots in `page` holds a key below `key`.
    fn starts_below(&mut self, node: &DataNode, page: u64, key: u64) -> Result<bool> {
        let (a, _) = clip(node, page);
        Ok(self.slot(a)?.0 < key)
    }

    /// Whether the last of `node`'s slots in `page` holds a key below `key`.
    fn ends_below(&mut self, node: &DataNode, page: u64, key: u64) -> Result<bool> {
        let (_, b) = clip(node, page);
        Ok(self.slot(b - 1)?.0 < key)
    }

    /// The key, value and occupancy of slot `slot`.
    fn slot(&mut self, slot: u64) -> Result<(u64, u64, bool)> {
        let page = self.page(slot / SLOTS_PER_PAGE)?;
        Ok(page_slot(page, (slot % SLOTS_PER_PAGE) as usize))
    }

    /// Page `page`'s bytes: held, or read (one read, counted) and checked against its CRC,
    /// by the one paged-file reader.
    fn page(&mut self, page: u64) -> Result<&[u8]> {
        if page >= self.file.pages {
            return Err(Error::misuse(
                "AlexReader::page",
                format!("page {page} is past the file's {} pages", self.file.pages),
            ));
        }
        let pages = Pages::paged(
            &self.handle,
            &self.file.path,
            self.file.pages,
            PageCrc::Trailer { at: CRC_AT },
            self.mode == ReadMode::Direct,
        );
        self.reader.page(&pages, page)
    }
}

/// The slots of `node` in `page`: `[a, b)`, in the file's numbering.
fn clip(node: &DataNode, page: u64) -> (u64, u64) {
    let a = (page * SLOTS_PER_PAGE).max(node.first_slot);
    let b = ((page + 1) * SLOTS_PER_PAGE).min(node.end_slot());
    (a, b.max(a + 1))
}

/// A page's keys.
fn page_keys(page: &[u8]) -> &[u64] {
    bytemuck::cast_slice(page.get(..VALUES_AT).unwrap_or_default())
}

/// The key, value and occupancy of slot `i` of a page.
fn page_slot(page: &[u8], i: usize) -> (u64, u64, bool) {
    let word = |at: usize| {
        page.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    };
    let occupied = page
        .get(BITMAP_AT + i / 8)
        .is_some_and(|b| b & (1 << (i % 8)) != 0);
    (word(i * 8), word(VALUES_AT + i * 8), occupied)
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
mod tests {
    use super::*;
    use crate::storage::ValueSource;
    use crate::storage::table::build_from_keys;

    fn table_of(dir: &Path, keys: &[u64]) -> Table {
        let path = dir.join("t.tbl");
        build_from_keys(keys, ValueSource::RowId, &path, |_| {}).unwrap();
        Table::open(&path).unwrap()
    }

    /// The row ids of `key` in `keys`, in order: what a lookup must return.
    fn rows_of(keys: &[u64], key: u64) -> Vec<u64> {
        let from = keys.partition_point(|&k| k < key);
        (from..keys.partition_point(|&k| k <= key))
            .map(|i| i as u64)
            .collect()
    }

    /// Keys every third integer from 1000, with runs of duplicates, and the edges of u64.
    fn awkward_keys() -> Vec<u64> {
        let mut keys: Vec<u64> = (0..6000u64).map(|i| 1000 + 3 * i).collect();
        keys.extend([0, 0, 5000, 5000, 5000, u64::MAX, u64::MAX, u64::MAX - 1]);
        keys.extend(std::iter::repeat_n(12_001, 700));
        keys.sort_unstable();
        keys
    }

    /// A file of one data node over `keys` whose model is `model`, however bad.
    fn one_node_file(dir: &Path, keys: &[u64], model: Model) -> AlexFile {
        let table = table_of(dir, keys);
        let slots = plan::slots_for(keys.len(), 0.7) as u64;
        let layout = Layout {
            inner: Vec::new(),
            data: vec![DataNode {
                first_slot: 0,
                slots,
                entries: keys.len() as u64,
                model,
            }],
            starts: vec![0],
            next_slot: slots,
            root: DATA_BIT,
        };
        let out = dir.join("t.alex");
        write(&table, keys, layout, &AlexParams::default(), &out, |_| {}).unwrap();
        AlexFile::open(&out).unwrap()
    }

    #[test]
    fn a_model_that_misses_by_many_pages_still_finds_every_key() {
        let keys = awkward_keys();
        let slots = plan::slots_for(keys.len(), 0.7) as f64;
        let models = [
            // Everything predicted at the first slot: entries packed left, searches go right.
            Model::default(),
            // Everything at the last slot: packed right, searches go left.
            Model {
                base: 0,
                slope: 0.0,
                intercept: slots,
            },
            // Falling, then saturating: predictions in no order at all.
            Model {
                base: 0,
                slope: -1e-3,
                intercept: slots / 2.0,
            },
            // The least-squares fit.
            Model::fit(&keys, slots as usize),
        ];
        let mut most_reads = 0;
        for (m, model) in models.into_iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let file = one_node_file(dir.path(), &keys, model);
            assert!(file.pages() > 20, "the node spans {} pages", file.pages());
            assert_eq!(file.verify().unwrap(), keys.len() as u64);
            let mut queries: Vec<u64> = keys
                .iter()
                .flat_map(|&k| [k.saturating_sub(1), k, k.saturating_add(1)])
                .collect();
            queries.extend([0, 1, 2, 999, 4_000_000, u64::MAX - 2]);
            for &q in &queries {
                // A fresh reader each time, so every search starts from nothing held.
                let mut reader = AlexReader::new(&file, ReadMode::Buffered).unwrap();
                assert_eq!(
                    reader.get_all(q).unwrap(),
                    rows_of(&keys, q),
                    "model {m}, key {q}"
                );
                most_reads = most_reads.max(reader.stats().reads);
            }
        }
        // The misses were found by searching across pages, a read per probe.
        assert!(most_reads >= 5, "at most {most_reads} reads per lookup");
    }

    #[test]
    fn built_files_answer_like_the_table_and_keep_pages_they_read() {
        let keys = awkward_keys();
        let dir = tempfile::tempdir().unwrap();
        let table = table_of(dir.path(), &keys);
        let out = dir.path().join("t.alex");
        let report = build(&table, &keys, &out, &AlexParams::default(), |_| {}).unwrap();
        let file = AlexFile::open(&out).unwrap();
        assert_eq!(file.verify().unwrap(), keys.len() as u64);
        assert_eq!(
            (
                report.pages,
                report.data_nodes,
                report.inner_nodes,
                report.depth
            ),
            (
                file.pages(),
                file.data_nodes(),
                file.inner_nodes(),
                file.depth()
            )
        );
        assert_eq!(report.memory_bytes, file.size_in_bytes());
        assert_eq!(
            std::fs::metadata(&out).unwrap().len(),
            report.file_bytes,
            "the report counts every byte"
        );
        let mut reader = AlexReader::new(&file, ReadMode::Buffered).unwrap();
        for &q in keys.iter().chain(&[1, 4, u64::MAX - 2]) {
            assert_eq!(reader.get_all(q).unwrap(), rows_of(&keys, q), "key {q}");
        }
        // Looking the last key up again reads nothing: its page is held.
        let before = reader.stats();
        reader.get_all(u64::MAX - 2).unwrap();
        assert_eq!(reader.stats(), before);
        assert_eq!(reader.lookups(), keys.len() as u64 + 4);
    }

    #[test]
    fn empty_and_one_tuple_tables_make_files() {
        for keys in [vec![], vec![u64::MAX], vec![0]] {
            let dir = tempfile::tempdir().unwrap();
            let table = table_of(dir.path(), &keys);
            let out = dir.path().join("t.alex");
            build(&table, &keys, &out, &AlexParams::default(), |_| {}).unwrap();
            let file = AlexFile::open(&out).unwrap();
            assert_eq!(
                (file.len(), file.data_nodes(), file.pages()),
                (keys.len() as u64, 1, 1)
            );
            assert_eq!(file.verify().unwrap(), keys.len() as u64);
            let mut reader = AlexReader::new(&file, ReadMode::Buffered).unwrap();
            for q in [0, 1, u64::MAX] {
                assert_eq!(
                    reader.get_all(q).unwrap(),
                    rows_of(&keys, q),
                    "{keys:?}: key {q}"
                );
            }
        }
    }

    #[test]
    fn a_corrupt_page_fails_its_lookup_and_verify_with_a_checksum_error() {
        let keys: Vec<u64> = (0..2000).collect();
        let dir = tempfile::tempdir().unwrap();
        let table = table_of(dir.path(), &keys);
        let out = dir.path().join("t.alex");
        build(&table, &keys, &out, &AlexParams::default(), |_| {}).unwrap();
        let mut bytes = std::fs::read(&out).unwrap();
        // Key 0's slot is in the first page: flip a bit of a key there.
        bytes[PAGE_SIZE + 8] ^= 4;
        std::fs::write(&out, &bytes).unwrap();
        let file = AlexFile::open(&out).unwrap();
        let mut reader = AlexReader::new(&file, ReadMode::Buffered).unwrap();
        let err = reader.get_all(0).unwrap_err().to_string();
        assert!(err.contains("checksum mismatch in data block 1"), "{err}");
        assert!(file.verify().is_err());
    }

    mod verify {
        use proptest::prelude::*;

        use super::*;
        use crate::files::paged::testing::{flipped, reseal, u64_at};
        use crate::index::file::tests::key_set;
        use crate::storage::{TableWriter, ValueSource};

        /// The ALEX file of the sorted `keys` at `dir/t.alex`, its table and its bytes.
        fn built(dir: &Path, keys: &mut [u64], params: &AlexParams) -> (Table, PathBuf, Vec<u8>) {
            keys.sort_unstable();
            let table = table_of(dir, keys);
            let out = dir.join("t.alex");
            build(&table, keys, &out, params, |_| {}).unwrap();
            let bytes = std::fs::read(&out).unwrap();
            (table, out, bytes)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(32))]

            #[test]
            fn valid_files_verify_against_their_table(mut keys in key_set(), small in any::<bool>()) {
                let dir = tempfile::tempdir().unwrap();
                let params = if small {
                    AlexParams { max_data_slots: 16, max_fanout: 2, ..AlexParams::default() }
                } else {
                    AlexParams::default()
                };
                let (table, out, bytes) = built(dir.path(), &mut keys, &params);
                let pages = AlexFile::open(&out).unwrap().pages();
                let report = AlexFile::verify_file(&out, Some(&table)).unwrap();
                prop_assert_eq!(
                    report,
                    VerifyReport {
                        kind: FileKind::Alex,
                        bytes: bytes.len() as u64,
                        checksums: 2 + pages,
                        pages,
                        entries: keys.len() as u64,
                        table_tuples: Some(keys.len() as u64),
                    }
                );
                prop_assert_eq!(AlexFile::verify_file(&out, None).unwrap().table_tuples, None);
            }
        }

        #[test]
        fn a_flipped_byte_in_the_unused_header_is_refused_by_open_and_verify() {
            let dir = tempfile::tempdir().unwrap();
            let (_, _, good) = built(dir.path(), &mut awkward_keys(), &AlexParams::default());
            let damaged = dir.path().join("d.alex");
            let mut reserved = flipped(&good, 13);
            reseal(&mut reserved, u64_at(&good, 24));
            for (at, bytes) in [
                (100, flipped(&good, 100)),
                (4095, flipped(&good, 4095)),
                (13, reserved),
            ] {
                std::fs::write(&damaged, bytes).unwrap();
                let want = format!("d.alex: header byte {at} is 0x40 where the format has zero");
                let err = AlexFile::open(&damaged).unwrap_err().to_string();
                assert!(err.contains(&want), "{err}");
                let err = AlexFile::verify_file(&damaged, None)
                    .unwrap_err()
                    .to_string();
                assert!(err.contains(&want), "{err}");
            }
        }

        #[test]
        fn a_value_forged_with_its_page_checksum_fails_verify_against_the_table() {
            let dir = tempfile::tempdir().unwrap();
            let mut keys = awkward_keys();
            let (table, _, good) = built(dir.path(), &mut keys, &AlexParams::default());
            let mut bytes = good;
            // The first page's first occupied slot gets another value, its CRC fixed.
            let page = &mut bytes[PAGE_SIZE..2 * PAGE_SIZE];
            let slot = (0..SPP)
                .find(|&i| page[BITMAP_AT + i / 8] & (1 << (i % 8)) != 0)
                .unwrap();
            page[VALUES_AT + 8 * slot] ^= 1;
            let crc = crc32c::crc32c(&page[..CRC_AT]);
            page[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            let damaged = dir.path().join("d.alex");
            std::fs::write(&damaged, &bytes).unwrap();
            AlexFile::verify_file(&damaged, None).unwrap();
            let err = AlexFile::verify_file(&damaged, Some(&table))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("finds other values than") && err.contains("rebuild it"),
                "{err}"
            );
        }

        #[test]
        fn a_gap_value_forged_with_its_page_checksum_fails_verify() {
            let dir = tempfile::tempdir().unwrap();
            let mut keys = awkward_keys();
            let (_, out, good) = built(dir.path(), &mut keys, &AlexParams::default());
            let pages = AlexFile::open(&out).unwrap().pages() as usize;
            let mut bytes = good;
            // The first gap of the first page with one gets a value, its CRC fixed.
            let gap =
                |page: &[u8]| (0..SPP).find(|&i| page[BITMAP_AT + i / 8] & (1 << (i % 8)) == 0);
            let (p, slot) = (1..=pages)
                .find_map(|p| Some((p, gap(&bytes[p * PAGE_SIZE..(p + 1) * PAGE_SIZE])?)))
                .expect("a page with a gap");
            let page = &mut bytes[p * PAGE_SIZE..(p + 1) * PAGE_SIZE];
            page[VALUES_AT + 8 * slot] = 0x09;
            let crc = crc32c::crc32c(&page[..CRC_AT]);
            page[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            let damaged = dir.path().join("g.alex");
            std::fs::write(&damaged, &bytes).unwrap();
            let err = AlexFile::verify_file(&damaged, None)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("holds value 9, where the format has 0"),
                "{err}"
            );
        }

        #[test]
        fn verify_refuses_another_table() {
            let dir = tempfile::tempdir().unwrap();
            let mut keys = awkward_keys();
            let (table, out, _) = built(dir.path(), &mut keys, &AlexParams::default());
            // The same keys with other values.
            let other = dir.path().join("o.tbl");
            build_from_keys(&keys, ValueSource::KeyHash, &other, |_| {}).unwrap();
            let err = AlexFile::verify_file(&out, Some(&Table::open(&other).unwrap()))
                .unwrap_err()
                .to_string();
            assert!(err.contains("o.tbl"), "{err}");
            // One tuple fewer.
            let fewer = dir.path().join("f.tbl");
            let mut w = TableWriter::create(&fewer).unwrap();
            for (i, &key) in keys[1..].iter().enumerate() {
                w.push(Tuple {
                    key,
                    value: i as u64 + 1,
                })
                .unwrap();
            }
            w.finish().unwrap();
            let err = AlexFile::verify_file(&out, Some(&Table::open(&fewer).unwrap()))
                .unwrap_err()
                .to_string();
            assert!(err.contains("the index was built for other keys"), "{err}");
            AlexFile::verify_file(&out, Some(&table)).unwrap();
        }
    }

    #[test]
    fn builds_refuse_unsorted_tables_and_keys_of_another_table() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.alex");
        let table = table_of(dir.path(), &[3, 1, 2]);
        let err = build(&table, &[1, 2, 3], &out, &AlexParams::default(), |_| {});
        assert!(err.unwrap_err().to_string().contains("not sorted"));
        let table = table_of(dir.path(), &[1, 2, 3]);
        let err = build(&table, &[1, 2, 4], &out, &AlexParams::default(), |_| {});
        assert!(err.unwrap_err().to_string().contains("tuple 2"));
        assert!(!out.exists(), "a failed build leaves no file");
    }
}
