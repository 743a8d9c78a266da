//! Closed-loop concurrent clients (paper 4, section 5): each of `clients × outstanding`
//! threads sends a request, waits for the reply and sends the next, so that many requests
//! are always in flight, against any [`Store`]: a lidx key-value file of either layout
//! through a [`BlockCache`], or (with the `rocksdb` feature) RocksDB holding the same
//! records. Every operation's latency goes into an HDR histogram; blocks, reads and bytes
//! are counted per operation.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use hdrhistogram::Histogram;
use lidx::kv::{BlockCache, CacheStats, KvFile, OpStats, Reader};

use crate::profiled_fs::{FileReads, ProfiledMount};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// One kind of operation the clients send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A single-row read.
    Get,
    /// A scan of `rows` consecutive rows from a key.
    Scan {
        /// Rows per scan.
        rows: usize,
    },
}

impl Op {
    /// `get` or `scan`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Scan { .. } => "scan",
        }
    }
}

/// What the clients query: one per run, shared by its threads.
pub trait Store: Sync {
    /// One thread's handle.
    type Client<'s>: Client
    where
        Self: 's;

    /// A client for one thread; `prefetch`: scans read the next block with the one needed.
    fn client(&self, prefetch: bool) -> Self::Client<'_>;

    /// Starts the measured part of a run (resets what the store counts as a whole).
    fn begin_measuring(&self);

    /// What the store counted since [`begin_measuring`](Self::begin_measuring).
    fn counters(&self) -> StoreCounters;
}

/// One thread's handle on a [`Store`].
pub trait Client {
    /// The value of `key` into `value`; `false` when absent.
    fn get_into(&mut self, key: &[u8], value: &mut Vec<u8>) -> anyhow::Result<bool>;
    /// Reads up to `rows` records from the first key at least `from`; returns how many.
    fn scan(&mut self, from: &[u8], rows: usize) -> anyhow::Result<usize>;
    /// What this client read so far.
    fn stats(&mut self) -> OpStats;
}

/// What a store counts as a whole over the measured time.
#[derive(Clone, Copy, Debug, Default)]
pub struct StoreCounters {
    /// The block cache's counters.
    pub cache: CacheStats,
    /// Index blocks read, where the store counts them only as a whole (RocksDB); `None`
    /// where every client counts its own, or where nobody can tell them from data blocks.
    pub index_block_reads: Option<u64>,
    /// Whether the clients' counts tell index blocks from data blocks (RocksDB without a
    /// block cache reads its index partitions uncounted as such).
    pub blocks_split: bool,
    /// Read calls and bytes the operating system counted for the process (RocksDB's
    /// iterators read ahead where its own counters do not look), where used.
    pub os_reads: Option<(u64, u64)>,
}

/// A lidx key-value file and the block cache its readers share.
pub struct KvStore<'f> {
    /// The file.
    pub file: &'f KvFile,
    /// The cache.
    pub cache: BlockCache,
}

impl Store for KvStore<'_> {
    type Client<'s>
        = Reader<'s>
    where
        Self: 's;

    fn client(&self, prefetch: bool) -> Reader<'_> {
        let mut reader = Reader::new(self.file, &self.cache);
        reader.set_prefetch(prefetch);
        reader
    }

    fn begin_measuring(&self) {
        self.cache.reset_stats();
    }

    fn counters(&self) -> StoreCounters {
        StoreCounters {
            cache: self.cache.stats(),
            index_block_reads: None,
            blocks_split: true,
            os_reads: None,
        }
    }
}

impl Client for Reader<'_> {
    fn get_into(&mut self, key: &[u8], value: &mut Vec<u8>) -> anyhow::Result<bool> {
        Ok(Reader::get_into(self, key, value)?)
    }

    fn scan(&mut self, from: &[u8], rows: usize) -> anyhow::Result<usize> {
        Ok(Reader::scan(self, from, rows, |_, _| {})?)
    }

    fn stats(&mut self) -> OpStats {
        Reader::stats(self)
    }
}

/// What one closed-loop run measured.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Operations completed within the measured time.
    pub ops: u64,
    /// Rows they returned.
    pub rows: u64,
    /// The measured time.
    pub elapsed: Duration,
    /// Latency of every operation, microseconds.
    pub latency: Histogram<u64>,
    /// Blocks, reads and bytes of the operations counted.
    pub io: OpStats,
    /// The store's counters over the time counted.
    pub counters: StoreCounters,
    /// Operations `io` and `counters` cover: `ops`, or those of a separate counting run
    /// ([`take_counts`](Self::take_counts)).
    pub counted_ops: u64,
}

impl Measured {
    /// Takes `io`, `counters` and `counted_ops` from `counting`, a run of the same load
    /// with the store's counters on (this run's were off, so as not to slow it).
    pub fn take_counts(&mut self, counting: Measured) {
        self.io = counting.io;
        self.counters = counting.counters;
        self.counted_ops = counting.counted_ops;
    }

    /// `v` per counted operation.
    pub fn per_counted_op(&self, v: u64) -> f64 {
        v as f64 / self.counted_ops.max(1) as f64
    }
}

/// How a closed-loop run goes.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// What each request is.
    pub op: Op,
    /// Threads, each with one request in flight.
    pub threads: usize,
    /// Time before measuring (the cache fills).
    pub warmup: Duration,
    /// Time measured.
    pub measure: Duration,
    /// Seed of the keys each thread draws.
    pub seed: u64,
}

/// Runs `load.threads` closed-loop clients against `store`, each sending `load.op` for a
/// key drawn uniformly from `keys` and the next when the reply comes.
///
/// Nothing is counted during the warm-up. The clients then pause between operations, the
/// counters are read with none in flight, and the measured time begins; every operation
/// that starts within it is counted, and it ends when the last of them has ended. So the
/// operations counted and the reads counted (the store's, and where its files are read
/// through `mount`, the mount's, for every store alike) cover the same instants.
pub fn closed_loop<S: Store>(
    store: &S,
    keys: &[&[u8]],
    load: &Load,
    mount: Option<&ProfiledMount>,
) -> anyhow::Result<Measured> {
    if keys.is_empty() {
        bail!("no keys to query");
    }
    const WARMING: u8 = 0;
    const PAUSING: u8 = 1;
    const MEASURING: u8 = 2;
    const STOPPING: u8 = 3;
    let phase = AtomicU8::new(WARMING);
    // Clients waiting for the measured time to begin.
    let paused = AtomicUsize::new(0);
    let worker = |t: usize| -> anyhow::Result<(Histogram<u64>, u64, u64, OpStats)> {
        let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
        let mut client = store.client(matches!(load.op, Op::Scan { .. }));
        let mut rng =
            Xoshiro256PlusPlus::seed_from_u64(load.seed ^ (t as u64).wrapping_mul(0x9e37_79b9));
        let mut value = Vec::new();
        let (mut ops, mut rows, mut io) = (0u64, 0u64, OpStats::default());
        loop {
            let mut at_start = phase.load(Ordering::Acquire);
            if at_start == PAUSING {
                paused.fetch_add(1, Ordering::AcqRel);
                while at_start == PAUSING {
                    std::thread::sleep(Duration::from_micros(50));
                    at_start = phase.load(Ordering::Acquire);
                }
            }
            if at_start == STOPPING {
                break;
            }
            let key = keys[rng.random_range(0..keys.len())];
            let before = client.stats();
            let started = Instant::now();
            let got = match load.op {
                Op::Get => client.get_into(key, &mut value).map(u64::from),
                Op::Scan { rows } => client.scan(key, rows).map(|n| n as u64),
            }
            // A failed client stops the others.
            .inspect_err(|_| phase.store(STOPPING, Ordering::Release))?;
            let micros = started.elapsed().as_micros() as u64;
            if at_start == MEASURING {
                hist.saturating_record(micros.max(1));
                ops += 1;
                rows += got;
                io += client.stats().since(&before);
            }
        }
        Ok((hist, ops, rows, io))
    };
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let (mut ops, mut rows, mut io) = (0, 0, OpStats::default());
    let mut elapsed = Duration::ZERO;
    let mut counters = StoreCounters::default();
    let mut reached: Option<(FileReads, FileReads)> = None;
    std::thread::scope(|s| -> anyhow::Result<()> {
        let mut handles = Vec::with_capacity(load.threads);
        for t in 0..load.threads {
            let worker = &worker;
            let spawned = std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn_scoped(s, move || worker(t));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    phase.store(STOPPING, Ordering::Release);
                    return Err(e).context("cannot start a client thread");
                }
            }
        }
        std::thread::sleep(load.warmup);
        let _ = phase.compare_exchange(WARMING, PAUSING, Ordering::AcqRel, Ordering::Acquire);
        // A client that failed has stopped the others; they will not pause.
        while paused.load(Ordering::Acquire) < load.threads
            && phase.load(Ordering::Acquire) == PAUSING
        {
            std::thread::sleep(Duration::from_micros(100));
        }
        store.begin_measuring();
        let at_start = mount.map(ProfiledMount::total).transpose();
        let t0 = Instant::now();
        let measuring =
            phase.compare_exchange(PAUSING, MEASURING, Ordering::AcqRel, Ordering::Acquire);
        if measuring.is_ok() {
            std::thread::sleep(load.measure);
        }
        phase.store(STOPPING, Ordering::Release);
        let mut first_error = None;
        for h in handles {
            match h.join() {
                Ok(Ok((hist, o, r, i))) => {
                    latency.add(&hist)?;
                    ops += o;
                    rows += r;
                    io += i;
                }
                Ok(Err(e)) => first_error = first_error.or(Some(e)),
                Err(_) => {
                    first_error = first_error.or(Some(anyhow::anyhow!("a client thread panicked")));
                }
            }
        }
        elapsed = t0.elapsed();
        counters = store.counters();
        let at_end = mount.map(ProfiledMount::total).transpose();
        if let (Ok(Some(a)), Ok(Some(b))) = (&at_start, &at_end) {
            reached = Some((*a, *b));
        }
        first_error.map_or(Ok(()), Err)?;
        at_start.and(at_end).map(|_| ())
    })?;
    if let Some(index) = counters.index_block_reads {
        // The store counted index blocks as a whole; the clients counted every block.
        io.data_block_reads = io.data_block_reads.saturating_sub(index);
        io.index_block_reads = index;
    }
    if let Some((reads, bytes)) = counters.os_reads {
        io.io.reads = reads;
        io.io.bytes = bytes;
    }
    if let Some((start, end)) = reached {
        let r = end.io().since(&start.io());
        io.io.reads = r.reads;
        io.io.bytes = r.bytes;
        io.io.blocks = r.blocks;
        io.io.modelled_ns = r.modelled_ns;
    }
    Ok(Measured {
        ops,
        rows,
        elapsed,
        latency,
        io,
        counters,
        counted_ops: ops,
    })
}

/// RocksDB holding the same records, as a [`Store`].
#[cfg(feature = "rocksdb")]
pub mod rocks {
    use std::sync::Mutex;

    use lidx::kv::{CacheStats, OpStats};
    use lidx_lsm::{RocksKv, RocksReads, ThreadReads};

    use super::{Client, Store, StoreCounters};

    /// A RocksDB database and its counters at the start of the measured time.
    pub struct RocksStore {
        /// The database.
        pub kv: RocksKv,
        /// Its block cache budget (0: none).
        pub cache_bytes: u64,
        /// Whether clients count their block reads (RocksDB's per-thread perf context).
        counting: bool,
        base: Mutex<(Option<RocksReads>, (u64, u64))>,
    }

    /// The process's read calls and bytes read from storage.
    fn process_reads() -> (u64, u64) {
        let r = crate::machine::process_reads();
        (r.calls, r.storage_bytes)
    }

    impl RocksStore {
        /// The store of `kv`, opened with a cache of `cache_bytes`; `counting`: its clients
        /// count their block reads through RocksDB's perf context (which costs some CPU
        /// an operation; off while timing).
        pub fn new(kv: RocksKv, cache_bytes: u64, counting: bool) -> RocksStore {
            RocksStore {
                kv,
                cache_bytes,
                counting,
                base: Mutex::new((None, (0, 0))),
            }
        }
    }

    /// One thread's handle: RocksDB's per-thread perf context counts its block reads.
    pub struct RocksClient<'s> {
        kv: &'s RocksKv,
        perf: Option<ThreadReads>,
        totals: OpStats,
    }

    impl Store for RocksStore {
        type Client<'s> = RocksClient<'s>;

        fn client(&self, _prefetch: bool) -> RocksClient<'_> {
            RocksClient {
                kv: &self.kv,
                perf: self.counting.then(ThreadReads::start),
                totals: OpStats::default(),
            }
        }

        fn begin_measuring(&self) {
            if let Ok(mut base) = self.base.lock() {
                *base = (self.kv.reads(), process_reads());
            }
        }

        /// Index block hits and misses stand for the cache's hits and misses (RocksDB 7.8
        /// reports no data block ones; none at all without statistics); read calls and
        /// bytes are the process's.
        fn counters(&self) -> StoreCounters {
            let (now, (calls, bytes)) = (self.kv.reads(), process_reads());
            let (base, (calls0, bytes0)) = self.base.lock().map(|b| *b).unwrap_or_default();
            let cached = self.cache_bytes > 0;
            let index = now.zip(base).map(|(now, base)| RocksReads {
                index_block_reads: now.index_block_reads - base.index_block_reads,
                index_block_hits: now.index_block_hits - base.index_block_hits,
            });
            StoreCounters {
                cache: CacheStats {
                    capacity: self.cache_bytes,
                    hits: index.map_or(0, |i| i.index_block_hits),
                    misses: index.map_or(0, |i| i.index_block_reads),
                    ..CacheStats::default()
                },
                index_block_reads: index.filter(|_| cached).map(|i| i.index_block_reads),
                blocks_split: cached && index.is_some(),
                os_reads: Some((calls - calls0, bytes - bytes0)),
            }
        }
    }

    impl Client for RocksClient<'_> {
        fn get_into(&mut self, key: &[u8], value: &mut Vec<u8>) -> anyhow::Result<bool> {
            Ok(self.kv.get_into(key, value)?)
        }

        fn scan(&mut self, from: &[u8], rows: usize) -> anyhow::Result<usize> {
            Ok(self.kv.scan(from, rows, |_, _| {})?)
        }

        /// Every block RocksDB read for this thread counts as a data block and a read here;
        /// [`closed_loop`](super::closed_loop) moves the index blocks apart.
        fn stats(&mut self) -> OpStats {
            let Some(perf) = &mut self.perf else {
                return self.totals;
            };
            let (blocks, bytes) = perf.take();
            self.totals.data_block_reads += blocks;
            self.totals.io.reads += blocks;
            self.totals.io.bytes += bytes;
            self.totals
        }
    }
}
