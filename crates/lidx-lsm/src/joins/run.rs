//! The three join algorithms over a join database (paper 5, section 3.3), each emitting one
//! `(attribute, R's key, S's key)` triple per pair of matching rows into a
//! [`JoinSink`](lidx::join::JoinSink), so every method that answers the same join emits the
//! same multiset.
//!
//! - **INLJ**: R's data table is scanned; each row's attribute is looked up in S: a get by
//!   primary key (`P`), or the S index (`NS`).
//! - **SJ**: each side arrives in join-key order: from a secondary index (`PS`: R's; `NS`,
//!   `SS`: S's), from S's own key order (`P`, `PS`), or from lidx's external merge sort
//!   (`lidx::sort`, 16 MB) of the (key, primary key) pairs of a scan; then one merge.
//! - **HJ**: grace hash join: both sides' (key, primary key) pairs are partitioned to
//!   scratch files by the BKDR hash (seed 131, as the paper) of the 10-byte key, so that a
//!   partition of R fits the 16 MB budget; each partition of R goes into a hash table and
//!   S's is probed against it.
//!
//! A validation index's hits are checked against the data table (Algorithm 2): each
//! distinct primary key of a lookup is read and kept only if its row still holds the
//! attribute. Synchronous indexes are trusted. The sort and hash joins carry 16-byte
//! (key, primary key) pairs, which is all the output needs, where the paper's code carries
//! whole entries.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::Instant;

use lidx::join::JoinSink;
use lidx::memory::MemoryBudget;
use lidx::sort::{SortOptions, sort_table};
use lidx::storage::{Table, TableWriter, Tuple};
use rocksdb::DBRawIterator;
use serde::{Deserialize, Serialize};

use super::data::{KEY_BYTES, attr_of, decode_key, encode_key};
use super::db::LsmDb;
use super::method::{Algorithm, Maintenance, Method, Shape, Side};
use super::tree::{SecondaryIndex, Tree, TreeStats};
use crate::Result;
use crate::rocks;

/// The memory the sort and hash joins work in (paper 5: 16 MB).
pub const JOIN_MEMORY: u64 = 16 << 20;

/// What a join did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LsmJoinReport {
    /// The method, as the paper names it.
    pub method: String,
    /// Output triples.
    pub output: u64,
    /// Seconds of the join (sorting and partitioning included).
    pub join_s: f64,
    /// Seconds spent building the indexes the join needed and the database lacked.
    pub index_build_s: f64,
    /// Lookups in S (INLJ).
    pub lookups: u64,
    /// Rows read from a data table to check a validation index's hits.
    pub validations: u64,
    /// RocksDB's tickers over the join, all trees summed.
    pub stats: TreeStats,
}

/// Joins R and S of `db` by `method`, building the indexes it needs first where missing
/// (their time reported apart), and emits into `sink`.
pub fn join(db: &mut LsmDb, method: Method, sink: &mut impl JoinSink) -> Result<LsmJoinReport> {
    let mut report = LsmJoinReport {
        method: method.to_string(),
        ..LsmJoinReport::default()
    };
    for spec in method.indexes() {
        report.index_build_s += db.build_index(spec)?;
    }
    let before = db.stats();
    let started = Instant::now();
    let mut counted = Counting { sink, output: 0 };
    match method.algorithm {
        Algorithm::Inlj => inlj(db, method, &mut counted, &mut report)?,
        Algorithm::Hj => hash_join(db, method, &mut counted)?,
        Algorithm::Sj => sort_merge(db, method, &mut counted)?,
    }
    report.output = counted.output;
    report.join_s = started.elapsed().as_secs_f64();
    report.stats = db.stats().since(&before);
    Ok(report)
}

/// A sink that counts what passes.
struct Counting<'s, S> {
    sink: &'s mut S,
    output: u64,
}

impl<S: JoinSink> Counting<'_, S> {
    fn emit(&mut self, key: u64, r: u64, s: u64) -> Result<()> {
        self.output += 1;
        Ok(self.sink.emit(key, r, s)?)
    }
}

/// The index of `side` that `method` reads.
fn index_of(db: &LsmDb, method: Method, side: Side) -> Result<&SecondaryIndex> {
    let spec = method
        .indexes()
        .into_iter()
        .find(|s| s.side == side)
        .ok_or_else(|| {
            lidx::Error::misuse("joins::run", format!("{method} reads no index of {side}"))
        })?;
    db.index(spec).ok_or_else(|| {
        lidx::Error::misuse(
            "joins::run",
            format!("the index {} is missing", spec.dir_name()),
        )
        .into()
    })
}

/// Keeps in `pks` the distinct keys whose row in `table` still holds `attr` (Algorithm 2).
fn validate(table: &Tree, attr: u64, pks: &mut Vec<u64>, report: &mut LsmJoinReport) -> Result<()> {
    pks.sort_unstable();
    pks.dedup();
    let mut kept = 0;
    for i in 0..pks.len() {
        report.validations += 1;
        let row = table.get(&encode_key(pks[i]))?;
        if row.as_deref().and_then(attr_of) == Some(attr) {
            pks[kept] = pks[i];
            kept += 1;
        }
    }
    pks.truncate(kept);
    Ok(())
}

fn inlj<S: JoinSink>(
    db: &LsmDb,
    method: Method,
    out: &mut Counting<'_, S>,
    report: &mut LsmJoinReport,
) -> Result<()> {
    let mut matches = Vec::new();
    match method.shape {
        Shape::P => db.r.scan_rows(|pk_r, attr| {
            report.lookups += 1;
            if db.s.get(&encode_key(attr))?.is_some() {
                out.emit(attr, pk_r, attr)?;
            }
            Ok(())
        }),
        _ => {
            let index = index_of(db, method, Side::S)?;
            db.r.scan_rows(|pk_r, attr| {
                report.lookups += 1;
                matches.clear();
                index.lookup(attr, &mut matches)?;
                if index.spec.maintenance == Maintenance::Validation {
                    validate(&db.s, attr, &mut matches, report)?;
                }
                for &pk_s in &matches {
                    out.emit(attr, pk_r, pk_s)?;
                }
                Ok(())
            })
        }
    }
}

/// BKDR hash (seed 131) of a 10-byte key, as paper 5's hash join partitions.
fn bkdr(key: &[u8; KEY_BYTES]) -> u32 {
    key.iter()
        .fold(0u32, |h, &b| h.wrapping_mul(131).wrapping_add(u32::from(b)))
}

/// Pairs of (join key, primary key) written to one scratch file per partition.
struct Partitions {
    files: Vec<BufWriter<File>>,
}

impl Partitions {
    fn new(dir: &Path, count: usize) -> Result<Partitions> {
        let files = (0..count)
            .map(|_| {
                tempfile::tempfile_in(dir)
                    .map(|f| BufWriter::with_capacity(1 << 14, f))
                    .map_err(|e| lidx::Error::io(dir, "create a hash partition in", e).into())
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Partitions { files })
    }

    fn push(&mut self, key: u64, pk: u64, dir: &Path) -> Result<()> {
        let p = bkdr(&encode_key(key)) as usize % self.files.len();
        let mut record = [0u8; 16];
        record[..8].copy_from_slice(&key.to_le_bytes());
        record[8..].copy_from_slice(&pk.to_le_bytes());
        self.files[p]
            .write_all(&record)
            .map_err(|e| lidx::Error::io(dir, "write a hash partition in", e).into())
    }

    /// The partitions, each read from its start.
    fn into_readers(self, dir: &Path) -> Result<Vec<BufReader<File>>> {
        use std::io::Seek;
        self.files
            .into_iter()
            .map(|w| {
                let mut f = w.into_inner().map_err(|e| {
                    lidx::Error::io(dir, "write a hash partition in", e.into_error())
                })?;
                f.rewind()
                    .map_err(|e| lidx::Error::io(dir, "read a hash partition in", e))?;
                Ok(BufReader::with_capacity(1 << 16, f))
            })
            .collect()
    }
}

/// The next (key, primary key) pair of a partition.
fn next_pair(reader: &mut BufReader<File>, dir: &Path) -> Result<Option<(u64, u64)>> {
    let mut record = [0u8; 16];
    match reader.read_exact(&mut record) {
        Ok(()) => Ok(Some((
            u64::from_le_bytes(record[..8].try_into().unwrap_or_default()),
            u64::from_le_bytes(record[8..].try_into().unwrap_or_default()),
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(lidx::Error::io(dir, "read a hash partition in", e).into()),
    }
}

fn hash_join<S: JoinSink>(db: &LsmDb, method: Method, out: &mut Counting<'_, S>) -> Result<()> {
    let dir = db.dir();
    // A hash table entry takes about 48 bytes with its key and vector: enough partitions
    // for R's share of each to fit the budget.
    let r_rows = db.batches() * db.workload().r_rows();
    let count = (r_rows * 48).div_ceil(JOIN_MEMORY).clamp(1, 4096) as usize;
    let mut r_parts = Partitions::new(dir, count)?;
    db.r.scan_rows(|pk, attr| r_parts.push(attr, pk, dir))?;
    let mut s_parts = Partitions::new(dir, count)?;
    let by_key = method.joins_s_key();
    db.s.scan_rows(|pk, attr| s_parts.push(if by_key { pk } else { attr }, pk, dir))?;
    let mut table: HashMap<u64, Vec<u64>> = HashMap::new();
    for (mut r, mut s) in r_parts
        .into_readers(dir)?
        .into_iter()
        .zip(s_parts.into_readers(dir)?)
    {
        table.clear();
        while let Some((key, pk)) = next_pair(&mut r, dir)? {
            table.entry(key).or_default().push(pk);
        }
        while let Some((key, pk_s)) = next_pair(&mut s, dir)? {
            if let Some(rs) = table.get(&key) {
                for &pk_r in rs {
                    out.emit(key, pk_r, pk_s)?;
                }
            }
        }
    }
    Ok(())
}

/// (join key, primary key) pairs in key order.
trait Sorted {
    fn next(&mut self) -> Result<Option<(u64, u64)>>;
}

/// A table sorted by lidx's external sort, read through a memory map.
struct SortedTable {
    tuples: lidx::storage::MappedTable,
    at: usize,
    _paths: [tempfile::TempPath; 2],
}

impl Sorted for SortedTable {
    fn next(&mut self) -> Result<Option<(u64, u64)>> {
        let t = self.tuples.tuples().get(self.at).copied();
        self.at += 1;
        Ok(t.map(|t| (t.key, t.value)))
    }
}

/// Sorts the (join key, primary key) pairs of a table's rows with lidx's external sort.
fn sorted_rows(db: &LsmDb, table: &Tree, by_key: bool) -> Result<SortedTable> {
    let dir = db.dir();
    let (unsorted, _guard_u) = lidx::files::scratch_path(dir)?;
    let (sorted, _guard_s) = lidx::files::scratch_path(dir)?;
    let mut writer = TableWriter::create(&unsorted)?;
    table.scan_rows(|pk, attr| {
        Ok(writer.push(Tuple {
            key: if by_key { pk } else { attr },
            value: pk,
        })?)
    })?;
    writer.finish()?;
    let options = SortOptions {
        scratch_dir: dir.to_path_buf(),
        budget: MemoryBudget::new(JOIN_MEMORY),
    };
    sort_table(&Table::open(&unsorted)?, &sorted, &options, |_, _| {})?;
    let tuples = Table::open(&sorted)?.map()?;
    Ok(SortedTable {
        tuples,
        at: 0,
        _paths: [unsorted, sorted],
    })
}

/// A data table in its own (primary key) order, as (key, key) pairs.
struct ByPrimaryKey<'t> {
    it: DBRawIterator<'t>,
    path: &'t Path,
}

impl Sorted for ByPrimaryKey<'_> {
    fn next(&mut self) -> Result<Option<(u64, u64)>> {
        while let Some(k) = self.it.key() {
            let pk = decode_key(k);
            self.it.next();
            if let Some(pk) = pk {
                return Ok(Some((pk, pk)));
            }
        }
        self.it.status().map_err(rocks(self.path, "read"))?;
        Ok(None)
    }
}

/// A secondary index in attribute order, each posting checked against the data table
/// where the index is a validation one.
struct ByIndex<'d> {
    index: &'d SecondaryIndex,
    table: &'d Tree,
    /// The entries of the attribute being read.
    pairs: std::vec::IntoIter<(u64, u64)>,
    it: DBRawIterator<'d>,
    pending: Vec<u64>,
}

impl<'d> ByIndex<'d> {
    fn new(index: &'d SecondaryIndex, table: &'d Tree) -> Self {
        let mut it = index.tree.iter(false);
        it.seek_to_first();
        ByIndex {
            index,
            table,
            pairs: Vec::new().into_iter(),
            it,
            pending: Vec::new(),
        }
    }

    /// Reads the entries of the next attribute into `pairs`.
    fn refill(&mut self) -> Result<bool> {
        let Some(first) = self.it.key().map(|k| k[..KEY_BYTES.min(k.len())].to_vec()) else {
            self.it
                .status()
                .map_err(rocks(&self.index.tree.path, "read"))?;
            return Ok(false);
        };
        let attr = decode_key(&first).unwrap_or(0);
        self.pending.clear();
        while let Some(k) = self.it.key() {
            if k.get(..KEY_BYTES) != Some(&first[..]) {
                break;
            }
            self.index
                .postings_of(k, self.it.value().unwrap_or_default(), &mut self.pending)?;
            self.it.next();
        }
        if self.index.spec.maintenance == Maintenance::Validation {
            validate(
                self.table,
                attr,
                &mut self.pending,
                &mut LsmJoinReport::default(),
            )?;
        }
        let pairs: Vec<(u64, u64)> = self.pending.iter().map(|&pk| (attr, pk)).collect();
        self.pairs = pairs.into_iter();
        Ok(true)
    }
}

impl Sorted for ByIndex<'_> {
    fn next(&mut self) -> Result<Option<(u64, u64)>> {
        loop {
            if let Some(p) = self.pairs.next() {
                return Ok(Some(p));
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }
}

fn sort_merge<S: JoinSink>(db: &LsmDb, method: Method, out: &mut Counting<'_, S>) -> Result<()> {
    let by_key = method.joins_s_key();
    let mut r: Box<dyn Sorted + '_> = match method.shape {
        Shape::Ps | Shape::Ss => Box::new(ByIndex::new(index_of(db, method, Side::R)?, &db.r)),
        _ => Box::new(sorted_rows(db, &db.r, false)?),
    };
    let mut s: Box<dyn Sorted + '_> = match method.shape {
        Shape::P | Shape::Ps => {
            let mut it = db.s.iter(false);
            it.seek_to_first();
            Box::new(ByPrimaryKey {
                it,
                path: &db.s.path,
            })
        }
        Shape::Ns | Shape::Ss => Box::new(ByIndex::new(index_of(db, method, Side::S)?, &db.s)),
        Shape::N => Box::new(sorted_rows(db, &db.s, by_key)?),
    };
    let (mut a, mut b) = (r.next()?, s.next()?);
    let (mut rs, mut ss) = (Vec::new(), Vec::new());
    while let (Some((ka, _)), Some((kb, _))) = (a, b) {
        if ka < kb {
            a = r.next()?;
        } else if kb < ka {
            b = s.next()?;
        } else {
            rs.clear();
            ss.clear();
            while let Some((_, pk)) = a.filter(|p| p.0 == ka) {
                rs.push(pk);
                a = r.next()?;
            }
            while let Some((_, pk)) = b.filter(|p| p.0 == ka) {
                ss.push(pk);
                b = s.next()?;
            }
            for &pk_r in &rs {
                for &pk_s in &ss {
                    out.emit(ka, pk_r, pk_s)?;
                }
            }
        }
    }
    Ok(())
}
