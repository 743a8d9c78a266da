//! SJ (paper 5, section 3.3): each side in join-key order, from a secondary index, from S's
//! own key order, or from lidx's external merge sort of a scan's whole entries within the
//! join memory; then one merge.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use lidx::join::JoinSink;
use lidx::memory::MemoryBudget;
use lidx::sort::{RecordSorter, SortOptions, SortedRecords, min_sort_memory_for};
use rocksdb::DBRawIterator;

use super::{
    Counting, Emit, LsmJoinReport, each_in_thread, index_of, key_ranges, pk_of, validate,
    whole_entry,
};
use crate::joins::db::LsmDb;
use crate::joins::method::{Maintenance, Method, Shape, Side};
use crate::joins::rows::{KEY_BYTES, decode_key};
use crate::joins::tree::{SecondaryIndex, Tree};
use crate::{Result, rocks};

/// (join key, primary key) pairs in key order.
trait Sorted {
    fn next(&mut self) -> Result<Option<(u64, u64)>>;

    /// Rows read from the data table to check postings so far (validation indexes only).
    fn validations(&self) -> u64 {
        0
    }
}

/// A table's entries sorted by join key with lidx's external sort: one sorted stream per
/// thread's range of the table, merged.
struct SortedEntries {
    ranges: Vec<SortedRecords>,
    /// The next record of each range, smallest first.
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
}

impl SortedEntries {
    fn refill(&mut self, range: usize) -> Result<()> {
        if let Some((key, entry)) = self.ranges[range].next_record()? {
            self.heap.push(Reverse((key, pk_of(entry), range)));
        }
        Ok(())
    }
}

impl Sorted for SortedEntries {
    fn next(&mut self) -> Result<Option<(u64, u64)>> {
        let Some(Reverse((key, pk, range))) = self.heap.pop() else {
            return Ok(None);
        };
        self.refill(range)?;
        Ok(Some((key, pk)))
    }
}

/// Sorts a table's whole entries by join key (the primary key where `by_key`, else the
/// attribute) with lidx's external sort: each of `threads` threads sorts its range of the
/// table in an equal share of the database's join memory (at least the least a sort
/// works in).
fn sorted_rows(
    db: &LsmDb,
    table: &Tree,
    by_key: bool,
    threads: usize,
    report: &mut LsmJoinReport,
) -> Result<SortedEntries> {
    let entry_size = db.workload().entry_size;
    let share = (db.config().join_memory / threads as u64).max(min_sort_memory_for(entry_size));
    let ranges = each_in_thread(key_ranges(threads), |keys| {
        let options = SortOptions {
            scratch_dir: db.dir().to_path_buf(),
            budget: MemoryBudget::new(share),
        };
        let mut sorter = RecordSorter::new(entry_size, u64::MAX, &options)?;
        let mut buffer = Vec::with_capacity(entry_size);
        table.scan_entries(keys, |pk, attr, k, v| {
            let entry = whole_entry(&mut buffer, k, v, entry_size, table)?;
            Ok(sorter.push(if by_key { pk } else { attr }, entry)?)
        })?;
        Ok(sorter.finish(0, |_| {})?)
    })?;
    for records in &ranges {
        let sort = records.report();
        if sort.runs > 1 {
            report.scratch_bytes += sort.bytes_written;
            report.scratch_files += sort.runs;
        }
    }
    let mut sorted = SortedEntries {
        heap: BinaryHeap::with_capacity(ranges.len()),
        ranges,
    };
    for range in 0..sorted.ranges.len() {
        sorted.refill(range)?;
    }
    Ok(sorted)
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
    /// Rows read from `table` to check postings.
    validations: u64,
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
            validations: 0,
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
            self.validations += validate(self.table, attr, &mut self.pending)?;
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

    fn validations(&self) -> u64 {
        self.validations
    }
}

pub(super) fn sort_merge<S: JoinSink>(
    db: &LsmDb,
    method: Method,
    threads: usize,
    out: &mut Counting<'_, S>,
    report: &mut LsmJoinReport,
) -> Result<()> {
    let by_key = method.joins_s_key();
    let mut r: Box<dyn Sorted + '_> = match method.shape {
        Shape::Ps | Shape::Ss => Box::new(ByIndex::new(index_of(db, method, Side::R)?, &db.r)),
        _ => Box::new(sorted_rows(db, &db.r, false, threads, report)?),
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
        Shape::N => Box::new(sorted_rows(db, &db.s, by_key, threads, report)?),
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
    report.validations += r.validations() + s.validations();
    Ok(())
}
