//! Opening a store cold and looking keys up in it, the same way for every system: each
//! behind [`Probe`], its reads counted. Under a latency profile every system reads its
//! files through one [`ProfiledMount`], which charges the reads that reach it ([`OnMount`]).

use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use lidx::files::{drop_cached_pages, open_read};
use lidx::index::{AnyIndex, Index, Rmi};
use lidx::kv::keys::u64_key;
use lidx::kv::{BlockCache, KvFile, Reader};
use lidx::storage::cache::next_file_id;
use lidx::storage::paged::{PagedFile, PagedReads};
use lidx::storage::{IoStats, ReadMode, TableLayout};

use super::Options;
#[cfg(feature = "rocksdb")]
use super::rocks;
use super::systems::{Built, FLAT_RECORD, System};
use crate::profiled_fs::{FileReads, ProfiledMount};

/// A store opened for lookups.
pub(super) trait Probe {
    /// The position stored under `key`, if any.
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>>;
    /// Its reads so far.
    fn io(&mut self) -> anyhow::Result<IoStats>;
}

/// A probe of a store whose files are read through a [`ProfiledMount`]: its reads, bytes
/// and their profile time are what reached the mount since the store was opened (its
/// opening included); its cache's hits and misses are its own.
pub(super) struct OnMount<'a> {
    pub(super) probe: Box<dyn Probe + 'a>,
    pub(super) mount: &'a ProfiledMount,
    /// The mount's reads before the store was opened.
    pub(super) since: FileReads,
}

impl Probe for OnMount<'_> {
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>> {
        self.probe.get(key)
    }

    fn io(&mut self) -> anyhow::Result<IoStats> {
        let own = self.probe.io()?;
        let reads = self.mount.total()?.io().since(&self.since.io());
        Ok(IoStats {
            cache_hits: own.cache_hits,
            cache_misses: own.cache_misses,
            ..reads
        })
    }
}

/// A store's files, open; the probe borrows them.
pub(super) enum Opened {
    Kv(Box<KvFile>),
    Rmi(Box<(Rmi, File, PathBuf, u64)>),
    Lmdb(Box<lidx_lmdb::LmdbKv>),
    #[cfg(feature = "rocksdb")]
    Rocks(Box<lidx_lsm::RocksKv>),
}

struct KvProbe<'a> {
    reader: Reader<'a>,
    value: Vec<u8>,
}

impl Probe for KvProbe<'_> {
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>> {
        if !self.reader.get_into(&u64_key(key), &mut self.value)? {
            return Ok(None);
        }
        Ok(std::str::from_utf8(&self.value)
            .ok()
            .and_then(|s| s.parse().ok()))
    }

    fn io(&mut self) -> anyhow::Result<IoStats> {
        Ok(self.reader.stats().io)
    }
}

struct RmiProbe<'a> {
    rmi: &'a Rmi,
    file: PagedFile<'a>,
    cache: &'a BlockCache,
    io: PagedReads,
}

impl Probe for RmiProbe<'_> {
    /// The RMI's window, and the record at its end (which may hold the key: the window
    /// bounds its lower bound), read through the cache's pages as `mmap` faults them in.
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>> {
        let w = self.rmi.search(key);
        let hi = (w.hi + 1).min(self.rmi.len());
        if w.lo >= hi {
            return Ok(None);
        }
        let bytes = self.io.read_cached(
            self.file,
            self.cache,
            // After the table's header block: its pages hold the records a headerless
            // flat array's would.
            TableLayout::data_block_offset(0) + w.lo * FLAT_RECORD,
            (hi - w.lo) * FLAT_RECORD,
        )?;
        let word = |r: &[u8], i: usize| {
            u64::from_le_bytes(r[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]))
        };
        let records: Vec<&[u8]> = bytes.chunks_exact(FLAT_RECORD as usize).collect();
        let i = records.partition_point(|r| word(r, 0) < key);
        Ok(records
            .get(i)
            .filter(|r| word(r, 0) == key)
            .map(|r| word(r, 1)))
    }

    fn io(&mut self) -> anyhow::Result<IoStats> {
        Ok(self.io.counts())
    }
}

/// LMDB's gets, read through its memory map. Its reads are the page faults that read its
/// file: on the local disk the thread's major faults (a 4 KiB page each, read-ahead being
/// off), under a profile the mount's count ([`OnMount`]).
struct LmdbProbe<'a> {
    reader: lidx_lmdb::LmdbReader<'a>,
    faults_at_open: u64,
}

impl Probe for LmdbProbe<'_> {
    fn get(&mut self, key: u64) -> anyhow::Result<Option<u64>> {
        Ok(self
            .reader
            .get(&u64_key(key))?
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|s| s.parse().ok()))
    }

    fn io(&mut self) -> anyhow::Result<IoStats> {
        let faults = crate::machine::thread_major_faults().saturating_sub(self.faults_at_open);
        Ok(IoStats {
            reads: faults,
            bytes: faults * 4096,
            ..IoStats::default()
        })
    }
}

/// Opens `b` cold (its files' cached pages dropped): the store and the time it took.
pub(super) fn open_cold(o: &Options, b: &Built) -> anyhow::Result<(Opened, Duration)> {
    let mut files = vec![b.path.clone()];
    files.extend(b.model_path.clone());
    if b.path.is_dir() {
        files = std::fs::read_dir(&b.path)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
    }
    for f in &files {
        drop_cached_pages(f)?;
    }
    let started = Instant::now();
    let opened = match b.system {
        System::RmiMmap => {
            let model_path = b.model_path.as_ref().context("an RMI without its model")?;
            let bytes = std::fs::read(model_path)
                .with_context(|| format!("{}: cannot read", model_path.display()))?;
            let (index, _) = lidx::index::file::decode(&bytes)
                .map_err(|e| lidx::Error::format(model_path, e))?;
            let AnyIndex::Rmi(rmi) = index else {
                bail!("{}: not an RMI", model_path.display());
            };
            let file = open_read(&b.path, !o.buffered)?;
            Opened::Rmi(Box::new((rmi, file, b.path.clone(), next_file_id())))
        }
        System::Lmdb => Opened::Lmdb(Box::new(lidx_lmdb::LmdbKv::open(&b.path)?)),
        #[cfg(feature = "rocksdb")]
        System::RocksDb => Opened::Rocks(Box::new(rocks::open(&b.path, o)?)),
        #[cfg(not(feature = "rocksdb"))]
        System::RocksDb => bail!("this lidx was built without RocksDB"),
        _ => Opened::Kv(Box::new(KvFile::open(&b.path, read_mode(o))?)),
    };
    Ok((opened, started.elapsed()))
}

pub(super) fn read_mode(o: &Options) -> ReadMode {
    if o.buffered {
        ReadMode::Buffered
    } else {
        ReadMode::Direct
    }
}

/// The probe of an opened store reading through `cache`.
pub(super) fn probe<'a>(
    o: &Options,
    opened: &'a Opened,
    cache: &'a BlockCache,
) -> anyhow::Result<Box<dyn Probe + 'a>> {
    Ok(match opened {
        Opened::Kv(file) => Box::new(KvProbe {
            reader: Reader::new(file, cache),
            value: Vec::new(),
        }),
        Opened::Rmi(b) => {
            let (rmi, file, path, id) = &**b;
            Box::new(RmiProbe {
                rmi,
                file: PagedFile {
                    file,
                    path,
                    id: *id,
                    mode: read_mode(o),
                },
                cache,
                io: PagedReads::default(),
            })
        }
        Opened::Lmdb(kv) => Box::new(LmdbProbe {
            reader: kv.reader()?,
            faults_at_open: crate::machine::thread_major_faults(),
        }),
        #[cfg(feature = "rocksdb")]
        Opened::Rocks(kv) => Box::new(rocks::RocksProbe::new(kv)),
    })
}

/// Looks `key` up through `p` and checks that it finds `position`: its wall time (µs).
pub(super) fn look_up(
    p: &mut dyn Probe,
    (key, position): (u64, u64),
    what: &str,
) -> anyhow::Result<f64> {
    let started = Instant::now();
    let got = p.get(key)?;
    let us = started.elapsed().as_secs_f64() * 1e6;
    if got != Some(position) {
        bail!("{what}: key {key} gave {got:?}, not position {position}");
    }
    Ok(us)
}
