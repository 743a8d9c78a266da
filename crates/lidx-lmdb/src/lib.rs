//! The records of a key-value file in LMDB: a real B+tree store, read through a memory map,
//! as the B+tree and `mmap` peer of paper 2 (section 3: "RMI instead operates on virtual
//! memory addresses via mmap"; Fig. 3's second drop) and of paper 4's layouts.
//!
//! The records are appended in key order into one LMDB database (`MDB_APPEND`, so every
//! leaf is filled, as a bulk-loaded B+tree's are) in a new environment directory
//! (`data.mdb`), made in a temporary directory beside it and renamed into place. It is read
//! through LMDB's own memory map, opened read-only with read-ahead off (`MDB_NORDAHEAD`,
//! LMDB's advice for a database larger than memory): a get touches the branch pages on its
//! path and one leaf, and each page not in the page cache is one 4 KiB read of the file.
//!
//! LMDB keeps no cache of its own: its memory is the page cache's pages of `data.mdb`,
//! bounded only by what the operating system gives it (a memory cgroup bounds it).

use std::path::{Path, PathBuf};

use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, PutFlags, RoTxn, WithoutTls};

/// An error of this crate: every one names the environment's directory.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// LMDB (or the file system under it) refused an operation.
    #[error("{}: LMDB could not {op}: {source}", path.display())]
    Lmdb {
        /// The environment's directory.
        path: PathBuf,
        /// What lidx asked of it.
        op: &'static str,
        /// LMDB's error.
        #[source]
        source: heed::Error,
    },
    /// The records given to [`LmdbKv::build`] are not in strictly increasing key order.
    #[error("{}: the records are not in increasing key order (record {index})", path.display())]
    Unsorted {
        /// The environment's directory.
        path: PathBuf,
        /// The first record out of order, counted from 0.
        index: u64,
    },
    /// The directory to build exists: lidx replaces nothing it did not make.
    #[error("{}: exists; LMDB is built into a new directory", path.display())]
    Exists {
        /// The directory.
        path: PathBuf,
    },
    /// A file operation around LMDB failed.
    #[error("{}: cannot {op}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was tried.
        op: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn lmdb<'p>(path: &'p Path, op: &'static str) -> impl FnOnce(heed::Error) -> Error + 'p {
    move |source| Error::Lmdb {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// The shape of an LMDB database, from `mdb_stat`, and its file's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LmdbFigures {
    /// Bytes of an LMDB page (the operating system's page size).
    pub page_size: u64,
    /// Levels of the B+tree, its leaves included.
    pub depth: u64,
    /// Branch (inner) pages: the B+tree's index.
    pub branch_pages: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Overflow pages (values too large for a leaf).
    pub overflow_pages: u64,
    /// Records.
    pub entries: u64,
    /// Bytes of `data.mdb`.
    pub file_bytes: u64,
}

impl LmdbFigures {
    /// Bytes of the branch pages: what must be in memory for a get to read only its leaf.
    pub fn index_bytes(&self) -> u64 {
        self.branch_pages * self.page_size
    }
}

/// An LMDB environment of one database, opened read-only.
pub struct LmdbKv {
    env: Env<WithoutTls>,
    db: Database<Bytes, Bytes>,
    dir: PathBuf,
}

/// The name of an environment's data file in its directory.
pub const DATA_FILE: &str = "data.mdb";

impl LmdbKv {
    /// Builds a new environment at `dir` holding `records`, which must be in strictly
    /// increasing key order (bytewise, LMDB's order), and returns its figures.
    ///
    /// The environment is made in a temporary directory beside `dir` and renamed into
    /// place when complete, so `dir` holds a whole database or does not exist; `dir` must
    /// not exist. The records are iterated twice: once to size the memory map, once to
    /// write them.
    pub fn build<'r, I>(records: I, dir: &Path) -> Result<LmdbFigures>
    where
        I: IntoIterator<Item = (&'r [u8], &'r [u8])> + Clone,
    {
        if dir.symlink_metadata().is_ok() {
            return Err(Error::Exists {
                path: dir.to_path_buf(),
            });
        }
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let scratch = tempfile::Builder::new()
            .prefix(".lidx-lmdb-")
            .tempdir_in(parent)
            .map_err(|source| Error::Io {
                path: parent.to_path_buf(),
                op: "make a temporary directory in",
                source,
            })?;
        let map_size = map_size_for(records.clone());
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options.map_size(map_size).max_dbs(1);
        // SAFETY: the environment is a new directory this process just made: no other
        // process or handle maps or writes it, and the map is dropped before the rename.
        #[allow(unsafe_code)]
        let env =
            unsafe { options.open(scratch.path()) }.map_err(lmdb(dir, "create the environment"))?;
        let mut txn = env.write_txn().map_err(lmdb(dir, "begin a write"))?;
        let db: Database<Bytes, Bytes> = env
            .create_database(&mut txn, None)
            .map_err(lmdb(dir, "create the database"))?;
        let mut previous: Option<&[u8]> = None;
        for (i, (key, value)) in records.into_iter().enumerate() {
            if previous.is_some_and(|p| p >= key) {
                return Err(Error::Unsorted {
                    path: dir.to_path_buf(),
                    index: i as u64,
                });
            }
            previous = Some(key);
            db.put_with_flags(&mut txn, PutFlags::APPEND, key, value)
                .map_err(lmdb(dir, "append a record to"))?;
        }
        txn.commit().map_err(lmdb(dir, "commit"))?;
        env.force_sync().map_err(lmdb(dir, "sync"))?;
        drop(env);
        let made = scratch.keep();
        std::fs::rename(&made, dir).map_err(|source| {
            let _ = std::fs::remove_dir_all(&made);
            Error::Io {
                path: dir.to_path_buf(),
                op: "rename the new environment into",
                source,
            }
        })?;
        LmdbKv::open(dir)?.figures()
    }

    /// Opens the environment at `dir` (made by [`build`](Self::build)) read-only, without
    /// read-ahead and without LMDB's lock file.
    pub fn open(dir: &Path) -> Result<LmdbKv> {
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options.max_dbs(1);
        // SAFETY: NO_LOCK leaves readers and writers unsynchronised; lidx opens its
        // environments only read-only and never writes one after `build` renamed it into
        // place, so there is no writer to synchronise with. READ_ONLY and NO_READ_AHEAD are
        // safe flags.
        #[allow(unsafe_code)]
        unsafe {
            options.flags(EnvFlags::READ_ONLY | EnvFlags::NO_READ_AHEAD | EnvFlags::NO_LOCK);
        }
        // SAFETY: the map is of a file no process writes while it is open (above), so the
        // bytes LMDB hands out do not change under the borrows it gives.
        #[allow(unsafe_code)]
        let env = unsafe { options.open(dir) }.map_err(lmdb(dir, "open the environment"))?;
        let txn = env.read_txn().map_err(lmdb(dir, "begin a read"))?;
        let db = env
            .open_database::<Bytes, Bytes>(&txn, None)
            .map_err(lmdb(dir, "open the database"))?
            .ok_or_else(|| Error::Lmdb {
                path: dir.to_path_buf(),
                op: "find its database",
                source: heed::Error::Mdb(heed::MdbError::NotFound),
            })?;
        txn.commit().map_err(lmdb(dir, "end a read"))?;
        Ok(LmdbKv {
            env,
            db,
            dir: dir.to_path_buf(),
        })
    }

    /// The database's shape and file size.
    pub fn figures(&self) -> Result<LmdbFigures> {
        let txn = self
            .env
            .read_txn()
            .map_err(lmdb(&self.dir, "begin a read"))?;
        let s = self
            .db
            .stat(&txn)
            .map_err(lmdb(&self.dir, "read the statistics of"))?;
        let data = self.dir.join(DATA_FILE);
        let file_bytes = std::fs::metadata(&data)
            .map_err(|source| Error::Io {
                path: data,
                op: "stat",
                source,
            })?
            .len();
        Ok(LmdbFigures {
            page_size: u64::from(s.page_size),
            depth: u64::from(s.depth),
            branch_pages: s.branch_pages as u64,
            leaf_pages: s.leaf_pages as u64,
            overflow_pages: s.overflow_pages as u64,
            entries: s.entries as u64,
            file_bytes,
        })
    }

    /// A read transaction for gets: LMDB's snapshot, which readers keep for a batch of gets
    /// (a transaction costs a few hundred nanoseconds to begin).
    pub fn reader(&self) -> Result<LmdbReader<'_>> {
        Ok(LmdbReader {
            db: self.db,
            dir: &self.dir,
            txn: self
                .env
                .read_txn()
                .map_err(lmdb(&self.dir, "begin a read"))?,
        })
    }

    /// The environment's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Gets in one read transaction.
pub struct LmdbReader<'e> {
    db: Database<Bytes, Bytes>,
    dir: &'e Path,
    txn: RoTxn<'e, WithoutTls>,
}

impl LmdbReader<'_> {
    /// The value stored under `key`, borrowed from the memory map (no copy).
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        self.db
            .get(&self.txn, key)
            .map_err(lmdb(self.dir, "get a key from"))
    }
}

/// A memory map large enough for `records` appended in order: twice their bytes with
/// LMDB's per-record overhead, and a whole page for each value too large for a leaf, plus
/// a margin, rounded to 1 MiB. The map is address space only: the file grows as written.
fn map_size_for<'r>(records: impl IntoIterator<Item = (&'r [u8], &'r [u8])>) -> usize {
    const PAGE: u64 = 4096;
    let bytes: u64 = records
        .into_iter()
        .map(|(k, v)| {
            let (k, v) = (k.len() as u64, v.len() as u64);
            let overflow = if k + v > PAGE / 4 {
                v.div_ceil(PAGE) * PAGE + PAGE
            } else {
                0
            };
            k + v + 16 + overflow
        })
        .sum();
    let size = (2 * bytes + (16 << 20)).next_multiple_of(1 << 20);
    usize::try_from(size).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn build(map: &BTreeMap<Vec<u8>, Vec<u8>>, dir: &Path) -> Result<LmdbFigures> {
        LmdbKv::build(map.iter().map(|(k, v)| (&k[..], &v[..])), dir)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Every key's value comes back, and keys absent from the records (between,
        /// before, after, prefixes and extensions of stored keys) are absent.
        #[test]
        fn gets_match_a_btreemap(
            map in proptest::collection::btree_map(
                proptest::collection::vec(any::<u8>(), 1..24),
                proptest::collection::vec(any::<u8>(), 0..3000),
                0..400,
            ),
            probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..24), 0..64),
        ) {
            let scratch = tempfile::tempdir().expect("tempdir");
            let dir = scratch.path().join("env");
            let figures = build(&map, &dir).expect("build");
            prop_assert_eq!(figures.entries, map.len() as u64);
            let kv = LmdbKv::open(&dir).expect("open");
            let r = kv.reader().expect("reader");
            for (k, v) in &map {
                prop_assert_eq!(r.get(k).expect("get"), Some(&v[..]));
                let mut longer = k.clone();
                longer.push(0);
                prop_assert_eq!(r.get(&longer).expect("get"), map.get(&longer).map(|v| &v[..]));
                prop_assert_eq!(r.get(&k[..k.len() - 1]).ok().flatten(), map.get(&k[..k.len() - 1]).map(|v| &v[..]));
            }
            for p in &probes {
                prop_assert_eq!(r.get(p).expect("get"), map.get(p).map(|v| &v[..]));
            }
        }
    }

    #[test]
    fn a_bulk_loaded_tree_has_full_leaves_and_a_branch_index() {
        let map: BTreeMap<Vec<u8>, Vec<u8>> = (0u64..50_000)
            .map(|i| {
                (
                    format!("{i:08}").into_bytes(),
                    (i * 7).to_le_bytes().to_vec(),
                )
            })
            .collect();
        let scratch = tempfile::tempdir().expect("tempdir");
        let dir = scratch.path().join("env");
        let f = build(&map, &dir).expect("build");
        assert_eq!(f.entries, 50_000);
        assert!(f.depth >= 2, "{f:?}");
        // A leaf node is 8 bytes of header + 8 of key + 8 of value and a 2-byte pointer:
        // 26 bytes, so a full 4 KiB leaf holds 156; appended leaves are full but the last.
        let per_leaf = (f.page_size - 16) / 26;
        assert!(f.leaf_pages <= 50_000u64.div_ceil(per_leaf) + 1, "{f:?}");
        assert!(f.branch_pages >= 1 && f.index_bytes() == f.branch_pages * f.page_size);
        assert!(f.file_bytes >= (f.leaf_pages + f.branch_pages) * f.page_size);
    }

    #[test]
    fn unsorted_records_are_refused_and_leave_nothing() {
        let scratch = tempfile::tempdir().expect("tempdir");
        let dir = scratch.path().join("env");
        let records: Vec<(&[u8], &[u8])> = vec![(b"b", b"1"), (b"a", b"2")];
        let err = LmdbKv::build(records.iter().copied(), &dir).expect_err("unsorted");
        assert!(matches!(err, Error::Unsorted { index: 1, .. }), "{err}");
        assert!(err.to_string().contains("env"), "{err}");
        let left: Vec<_> = std::fs::read_dir(scratch.path()).expect("ls").collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    #[test]
    fn an_existing_directory_is_not_replaced() {
        let scratch = tempfile::tempdir().expect("tempdir");
        let dir = scratch.path().join("env");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("mine"), b"user data").expect("write");
        let records: Vec<(&[u8], &[u8])> = vec![(b"a", b"1")];
        let err = LmdbKv::build(records.iter().copied(), &dir).expect_err("exists");
        assert!(matches!(err, Error::Exists { .. }), "{err}");
        assert_eq!(std::fs::read(dir.join("mine")).expect("read"), b"user data");
    }

    #[test]
    fn opening_a_directory_without_a_database_names_it() {
        let scratch = tempfile::tempdir().expect("tempdir");
        let err = LmdbKv::open(&scratch.path().join("nothing"))
            .err()
            .expect("error");
        assert!(err.to_string().contains("nothing"), "{err}");
        std::fs::write(scratch.path().join(DATA_FILE), vec![7u8; 9000]).expect("write");
        let err = LmdbKv::open(scratch.path()).err().expect("garbage");
        assert!(err.to_string().contains("LMDB could not open"), "{err}");
    }
}
