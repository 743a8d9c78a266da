//! One LSM-tree of a join database (a data table or a secondary index): a RocksDB instance
//! in a directory of its own, written without a write-ahead log (how changes survive a
//! kill anyway: [`super::recovery`]), and the secondary index
//! designs of paper 5, section 3.1, over such a tree.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rocksdb::{Cache, DB, DBRawIterator, Options, ReadOptions, WriteOptions};

use super::config::{LsmConfig, TreeKind};
use super::method::{Design, IndexSpec};
use super::rows::{KEY_BYTES, KEY_LIMIT, attr_of, decode_key, encode_key, rest_pattern};
use crate::{Error, Result, rocks};

/// RocksDB's statistics tickers a join is judged by, summed over trees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TreeStats {
    /// Block cache hits.
    pub cache_hits: u64,
    /// Block cache misses (blocks read from the files, where a cache exists).
    pub cache_misses: u64,
    /// Lookups a whole-key Bloom filter answered "absent".
    pub bloom_useful: u64,
    /// Lookups a whole-key Bloom filter let through.
    pub bloom_positive: u64,
    /// Of those, the ones that found the key.
    pub bloom_true_positive: u64,
    /// Prefix Bloom filter checks (Composite indexes) and the ones that answered "absent".
    pub prefix_checked: u64,
    /// See `prefix_checked`.
    pub prefix_useful: u64,
    /// Bytes read by point lookups.
    pub get_bytes: u64,
    /// Bytes read by iterators.
    pub iter_bytes: u64,
}

impl TreeStats {
    /// `self - before`, ticker by ticker.
    pub fn since(&self, before: &TreeStats) -> TreeStats {
        TreeStats {
            cache_hits: self.cache_hits - before.cache_hits,
            cache_misses: self.cache_misses - before.cache_misses,
            bloom_useful: self.bloom_useful - before.bloom_useful,
            bloom_positive: self.bloom_positive - before.bloom_positive,
            bloom_true_positive: self.bloom_true_positive - before.bloom_true_positive,
            prefix_checked: self.prefix_checked - before.prefix_checked,
            prefix_useful: self.prefix_useful - before.prefix_useful,
            get_bytes: self.get_bytes - before.get_bytes,
            iter_bytes: self.iter_bytes - before.iter_bytes,
        }
    }

    fn add(&mut self, o: &TreeStats) {
        self.cache_hits += o.cache_hits;
        self.cache_misses += o.cache_misses;
        self.bloom_useful += o.bloom_useful;
        self.bloom_positive += o.bloom_positive;
        self.bloom_true_positive += o.bloom_true_positive;
        self.prefix_checked += o.prefix_checked;
        self.prefix_useful += o.prefix_useful;
        self.get_bytes += o.get_bytes;
        self.iter_bytes += o.iter_bytes;
    }

    /// Sums `parts`.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a TreeStats>) -> TreeStats {
        let mut total = TreeStats::default();
        for p in parts {
            total.add(p);
        }
        total
    }

    /// The share of absent keys the whole-key filters let through: false positives over
    /// all absent keys checked (0 where none were).
    pub fn bloom_false_positive_rate(&self) -> f64 {
        let false_pos = self.bloom_positive.saturating_sub(self.bloom_true_positive);
        let absent = false_pos + self.bloom_useful;
        if absent == 0 {
            0.0
        } else {
            false_pos as f64 / absent as f64
        }
    }

    /// Block cache hits over all block lookups (0 without a cache).
    pub fn cache_hit_rate(&self) -> f64 {
        let all = self.cache_hits + self.cache_misses;
        if all == 0 {
            0.0
        } else {
            self.cache_hits as f64 / all as f64
        }
    }

    /// Reads RocksDB's statistics dump (`rocksdb.<ticker> COUNT : <n>` lines).
    fn parse(dump: &str) -> TreeStats {
        let ticker = |name: &str| -> u64 {
            dump.lines()
                .find_map(|l| {
                    let rest = l.strip_prefix(name)?.strip_prefix(" COUNT : ")?;
                    rest.trim().parse().ok()
                })
                .unwrap_or(0)
        };
        TreeStats {
            cache_hits: ticker("rocksdb.block.cache.hit"),
            cache_misses: ticker("rocksdb.block.cache.miss"),
            bloom_useful: ticker("rocksdb.bloom.filter.useful"),
            bloom_positive: ticker("rocksdb.bloom.filter.full.positive"),
            bloom_true_positive: ticker("rocksdb.bloom.filter.full.true.positive"),
            prefix_checked: ticker("rocksdb.bloom.filter.prefix.checked"),
            prefix_useful: ticker("rocksdb.bloom.filter.prefix.useful"),
            get_bytes: ticker("rocksdb.bytes.read"),
            iter_bytes: ticker("rocksdb.db.iter.bytes.read"),
        }
    }
}

/// A RocksDB instance holding one table or one index.
pub(crate) struct Tree {
    pub(crate) db: DB,
    pub(crate) options: Options,
    _cache: Option<Cache>,
    pub(crate) path: PathBuf,
    write: WriteOptions,
}

impl Tree {
    /// Creates the tree at `path`, which must not hold one.
    pub(crate) fn create(path: &Path, config: &LsmConfig, kind: TreeKind) -> Result<Tree> {
        Self::start(path, config, kind, true)
    }

    /// Opens the tree at `path`; fails with [`Error::Damaged`] where it is missing (a
    /// database never loses a tree but by damage: RocksDB would make an empty one).
    pub(crate) fn open(path: &Path, config: &LsmConfig, kind: TreeKind) -> Result<Tree> {
        if !path.join("CURRENT").is_file() {
            return Err(Error::Damaged {
                path: path.to_path_buf(),
                problem: "this tree is missing (no RocksDB database here)".into(),
            });
        }
        Self::start(path, config, kind, false)
    }

    fn start(path: &Path, config: &LsmConfig, kind: TreeKind, create: bool) -> Result<Tree> {
        let (mut options, cache) = config
            .options(kind)
            .map_err(rocks(path, "make a block cache for"))?;
        options.create_if_missing(create);
        options.set_error_if_exists(create);
        let db = DB::open(&options, path).map_err(rocks(path, "open"))?;
        let mut write = WriteOptions::default();
        write.disable_wal(true);
        Ok(Tree {
            db,
            options,
            _cache: cache,
            path: path.to_path_buf(),
            write,
        })
    }

    /// Writes the memtable to an SST file and waits for it (durable: RocksDB syncs the
    /// file and its manifest).
    pub(crate) fn flush(&self) -> Result<()> {
        self.db.flush().map_err(rocks(&self.path, "flush"))
    }

    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.get(key).map_err(rocks(&self.path, "read"))
    }

    pub(crate) fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db
            .put_opt(key, value, &self.write)
            .map_err(rocks(&self.path, "write"))
    }

    pub(crate) fn delete(&self, key: &[u8]) -> Result<()> {
        self.db
            .delete_opt(key, &self.write)
            .map_err(rocks(&self.path, "delete from"))
    }

    pub(crate) fn merge(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db
            .merge_opt(key, value, &self.write)
            .map_err(rocks(&self.path, "merge into"))
    }

    /// An iterator from the first key; `prefix` iterators stop at the end of the seek
    /// key's prefix (Composite indexes).
    pub(crate) fn iter(&self, prefix: bool) -> DBRawIterator<'_> {
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(prefix);
        read.set_total_order_seek(!prefix);
        self.db.raw_iterator_opt(read)
    }

    /// Hands `visit` every row of this data table as (primary key, attribute), in key
    /// order (entries that are not rows of this format are skipped).
    pub(crate) fn scan_rows(&self, mut visit: impl FnMut(u64, u64) -> Result<()>) -> Result<()> {
        self.scan_entries(0..KEY_LIMIT, |pk, attr, _, _| visit(pk, attr))
    }

    /// Hands `visit` every row of this data table whose primary key is in `keys` as
    /// (primary key, attribute, the entry's key bytes, its value bytes), in key order
    /// (entries that are not rows of this format are skipped).
    pub(crate) fn scan_entries(
        &self,
        keys: Range<u64>,
        mut visit: impl FnMut(u64, u64, &[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut read = ReadOptions::default();
        read.set_total_order_seek(true);
        if keys.end < KEY_LIMIT {
            read.set_iterate_upper_bound(encode_key(keys.end).to_vec());
        }
        if keys.start >= keys.end {
            return Ok(());
        }
        let mut it = self.db.raw_iterator_opt(read);
        it.seek(encode_key(keys.start.min(KEY_LIMIT - 1)));
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if let (Some(pk), Some(attr)) = (decode_key(k), attr_of(v)) {
                visit(pk, attr, k, v)?;
            }
            it.next();
        }
        it.status().map_err(rocks(&self.path, "read"))
    }

    /// Flushes the memtable and waits until no flush or compaction is pending or running,
    /// so a build's time includes the work it caused (as the paper waits).
    pub(crate) fn settle(&self) -> Result<()> {
        self.flush()?;
        let busy = |name: &str| -> Result<bool> {
            Ok(self
                .db
                .property_int_value(name)
                .map_err(rocks(&self.path, "read a property of"))?
                .unwrap_or(0)
                > 0)
        };
        let started = Instant::now();
        while busy("rocksdb.compaction-pending")?
            || busy("rocksdb.num-running-compactions")?
            || busy("rocksdb.num-running-flushes")?
        {
            if started.elapsed() > Duration::from_secs(3600) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }

    /// Its statistics tickers since it was opened.
    pub(crate) fn stats(&self) -> TreeStats {
        self.options
            .get_statistics()
            .map_or_else(TreeStats::default, |dump| TreeStats::parse(&dump))
    }

    /// Rows it holds, as RocksDB estimates them (its files' and memtables' entries: keys
    /// written again or deleted may count more than once, never fewer).
    pub(crate) fn estimated_rows(&self) -> Result<u64> {
        Ok(self
            .db
            .property_int_value("rocksdb.estimate-num-keys")
            .map_err(rocks(&self.path, "read a property of"))?
            .unwrap_or(0))
    }

    /// Levels holding data, from RocksDB's per-level file counts.
    pub(crate) fn levels(&self) -> Result<u64> {
        let mut levels = 0;
        for l in 0..7 {
            let files = self
                .db
                .property_int_value(format!("rocksdb.num-files-at-level{l}").as_str())
                .map_err(rocks(&self.path, "read a property of"))?
                .unwrap_or(0);
            if files > 0 {
                levels = l + 1;
            }
        }
        Ok(levels)
    }
}

/// A secondary index over a data table's attribute (paper 5, section 3.1).
pub(crate) struct SecondaryIndex {
    pub(crate) spec: IndexSpec,
    pub(crate) tree: Tree,
    /// Bytes of the rest of a row a covering entry carries (0 when not covering).
    rest_len: usize,
}

impl SecondaryIndex {
    /// Creates the index `spec`'s tree in the database directory `dir`, empty.
    pub(crate) fn create(
        dir: &Path,
        spec: IndexSpec,
        config: &LsmConfig,
        entry_size: usize,
    ) -> Result<Self> {
        Self::start(dir, spec, config, entry_size, Tree::create)
    }

    /// Opens the index `spec`'s tree in the database directory `dir`.
    pub(crate) fn open(
        dir: &Path,
        spec: IndexSpec,
        config: &LsmConfig,
        entry_size: usize,
    ) -> Result<Self> {
        Self::start(dir, spec, config, entry_size, Tree::open)
    }

    fn start(
        dir: &Path,
        spec: IndexSpec,
        config: &LsmConfig,
        entry_size: usize,
        tree: fn(&Path, &LsmConfig, TreeKind) -> Result<Tree>,
    ) -> Result<Self> {
        let kind = match spec.design {
            Design::Eager => TreeKind::Eager,
            Design::Lazy => TreeKind::Lazy,
            Design::Comp => TreeKind::Composite,
        };
        let tree = tree(&dir.join(spec.dir_name()), config, kind)?;
        let rest_len = if spec.covering {
            entry_size - 2 * KEY_BYTES
        } else {
            0
        };
        Ok(SecondaryIndex {
            spec,
            tree,
            rest_len,
        })
    }

    /// Bytes of one posting: a primary key and, when covering, the rest of its row.
    fn posting_len(&self) -> usize {
        KEY_BYTES + self.rest_len
    }

    fn posting(&self, pk: u64, entry_size: usize) -> Vec<u8> {
        let mut p = encode_key(pk).to_vec();
        if self.rest_len > 0 {
            p.extend(rest_pattern(pk, entry_size));
        }
        p
    }

    /// Adds the entry of row (`pk`, `attr`).
    pub(crate) fn insert(&self, attr: u64, pk: u64, entry_size: usize) -> Result<()> {
        let key = encode_key(attr);
        match self.spec.design {
            Design::Eager => {
                // Read-modify-write: the new posting in front of the list.
                let mut list = self.posting(pk, entry_size);
                if let Some(old) = self.tree.get(&key)? {
                    list.extend_from_slice(&old);
                }
                self.tree.put(&key, &list)
            }
            Design::Lazy => self.tree.merge(&key, &self.posting(pk, entry_size)),
            Design::Comp => {
                let mut k = key.to_vec();
                k.extend_from_slice(&encode_key(pk));
                let rest: Vec<u8> = if self.rest_len > 0 {
                    rest_pattern(pk, entry_size).collect()
                } else {
                    Vec::new()
                };
                self.tree.put(&k, &rest)
            }
        }
    }

    /// Removes the entry of row (`pk`, `attr`) (Algorithm 1's delete).
    pub(crate) fn remove(&self, attr: u64, pk: u64) -> Result<()> {
        let key = encode_key(attr);
        match self.spec.design {
            Design::Eager | Design::Lazy => {
                let Some(list) = self.tree.get(&key)? else {
                    return Ok(());
                };
                let pk = encode_key(pk);
                let kept: Vec<u8> = list
                    .chunks(self.posting_len())
                    .filter(|p| p.get(..KEY_BYTES) != Some(&pk[..]))
                    .flatten()
                    .copied()
                    .collect();
                if kept.is_empty() {
                    self.tree.delete(&key)
                } else {
                    self.tree.put(&key, &kept)
                }
            }
            Design::Comp => {
                let mut k = key.to_vec();
                k.extend_from_slice(&encode_key(pk));
                self.tree.delete(&k)
            }
        }
    }

    /// Appends to `out` the primary keys the index holds for `attr` (stale ones too, for a
    /// validation index; a key may come more than once).
    pub(crate) fn lookup(&self, attr: u64, out: &mut Vec<u64>) -> Result<()> {
        let key = encode_key(attr);
        match self.spec.design {
            Design::Eager | Design::Lazy => {
                if let Some(list) = self.tree.get(&key)? {
                    self.postings(&list, out)?;
                }
                Ok(())
            }
            Design::Comp => {
                let mut it = self.tree.iter(true);
                it.seek(key);
                while let Some(k) = it.key() {
                    if k.get(..KEY_BYTES) != Some(&key[..]) {
                        break;
                    }
                    out.push(self.composite_pk(k)?);
                    it.next();
                }
                it.status().map_err(rocks(&self.tree.path, "read"))
            }
        }
    }

    /// Hands `visit` every (attribute, primary key) entry in attribute order.
    pub(crate) fn scan(&self, mut visit: impl FnMut(u64, u64) -> Result<()>) -> Result<()> {
        let mut it = self.tree.iter(false);
        it.seek_to_first();
        let mut pks = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            match self.spec.design {
                Design::Eager | Design::Lazy => {
                    let attr = self.decode(k)?;
                    pks.clear();
                    self.postings(v, &mut pks)?;
                    for &pk in &pks {
                        visit(attr, pk)?;
                    }
                }
                Design::Comp => {
                    let attr = self.decode(k.get(..KEY_BYTES).unwrap_or_default())?;
                    visit(attr, self.composite_pk(k)?)?;
                }
            }
            it.next();
        }
        it.status().map_err(rocks(&self.tree.path, "read"))
    }

    /// Appends the primary keys of the entry (`key`, `value`) to `out`.
    pub(crate) fn postings_of(&self, key: &[u8], value: &[u8], out: &mut Vec<u64>) -> Result<()> {
        match self.spec.design {
            Design::Eager | Design::Lazy => self.postings(value, out),
            Design::Comp => {
                out.push(self.composite_pk(key)?);
                Ok(())
            }
        }
    }

    fn postings(&self, list: &[u8], out: &mut Vec<u64>) -> Result<()> {
        for p in list.chunks(self.posting_len()) {
            out.push(self.decode(p.get(..KEY_BYTES).unwrap_or_default())?);
        }
        Ok(())
    }

    fn composite_pk(&self, key: &[u8]) -> Result<u64> {
        self.decode(key.get(KEY_BYTES..).unwrap_or_default())
    }

    fn decode(&self, bytes: &[u8]) -> Result<u64> {
        decode_key(bytes).ok_or_else(|| {
            lidx::Error::format(
                &self.tree.path,
                lidx::FormatError::Inconsistent(format!(
                    "an index entry holds {:?} where a 10-digit key belongs",
                    String::from_utf8_lossy(bytes)
                )),
            )
            .into()
        })
    }
}
