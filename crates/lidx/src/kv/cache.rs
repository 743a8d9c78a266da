//! The block cache every layout reads through (paper 4, section 1: cache pressure is why
//! a smaller index matters): decoded blocks, data and index alike, under one byte budget,
//! shared by all the threads reading any number of files.
//!
//! It is `quick_cache`'s concurrent sharded cache (a Clock-PRO / S3-FIFO policy, which
//! resists scans better than LRU), weighed in bytes, with lidx counting hits, misses and
//! evictions. A budget of 0 disables it: every lookup misses and nothing is kept.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};

use super::block::Block;

/// A cached block's key: the file's id ([`KvFile::id`](super::KvFile::id)) and the block's
/// byte offset in it.
pub type BlockKey = (u64, u64);

/// Bytes a cached block is charged beyond its body: the entry and its bookkeeping.
const ENTRY_OVERHEAD: u64 = 64;

#[derive(Clone)]
struct BodyBytes;

impl Weighter<BlockKey, Arc<Block>> for BodyBytes {
    fn weight(&self, _key: &BlockKey, block: &Arc<Block>) -> u64 {
        block.body_bytes() as u64 + ENTRY_OVERHEAD
    }
}

#[derive(Clone)]
struct CountEvictions(Arc<AtomicU64>);

impl Lifecycle<BlockKey, Arc<Block>> for CountEvictions {
    type RequestState = ();

    fn begin_request(&self) -> Self::RequestState {}

    fn on_evict(&self, _state: &mut (), _key: BlockKey, _block: Arc<Block>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

type Inner = Cache<BlockKey, Arc<Block>, BodyBytes, DefaultHashBuilder, CountEvictions>;

/// A concurrent cache of decoded blocks holding at most its budget in bytes.
pub struct BlockCache {
    inner: Option<Inner>,
    capacity: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: Arc<AtomicU64>,
}

/// What a cache has done since it was made or last [`reset`](BlockCache::reset_stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// The budget in bytes.
    pub capacity: u64,
    /// Bytes held now.
    pub used: u64,
    /// Lookups that found their block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks pushed out (or refused as larger than a shard) to stay within the budget.
    pub evictions: u64,
}

impl BlockCache {
    /// A cache of at most `bytes` bytes; 0 keeps nothing.
    pub fn new(bytes: u64) -> BlockCache {
        let evictions = Arc::new(AtomicU64::new(0));
        let inner = (bytes > 0).then(|| {
            // Blocks are tens of KiB: a few shards keep contention low without making any
            // shard too small to hold a block.
            let items = (bytes / 4096).clamp(16, 1 << 24) as usize;
            let shards = (bytes / (1 << 20)).clamp(1, 16) as usize;
            let options = OptionsBuilder::new()
                .estimated_items_capacity(items)
                .weight_capacity(bytes)
                .shards(shards)
                .build();
            options.ok().map(|o| {
                Cache::with_options(
                    o,
                    BodyBytes,
                    DefaultHashBuilder::default(),
                    CountEvictions(Arc::clone(&evictions)),
                )
            })
        });
        BlockCache {
            inner: inner.flatten(),
            capacity: bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions,
        }
    }

    /// The block under `key`, counting a hit or a miss.
    pub fn get(&self, key: BlockKey) -> Option<Arc<Block>> {
        let found = self.inner.as_ref().and_then(|c| c.get(&key));
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Whether the cache holds `key` (counts nothing).
    pub fn contains(&self, key: BlockKey) -> bool {
        self.inner.as_ref().is_some_and(|c| c.contains_key(&key))
    }

    /// Keeps `block` under `key`, evicting others as the budget requires.
    pub fn insert(&self, key: BlockKey, block: Arc<Block>) {
        if let Some(c) = &self.inner {
            c.insert(key, block);
        }
    }

    /// Drops every block (counting no evictions).
    pub fn clear(&self) {
        if let Some(c) = &self.inner {
            c.clear();
        }
    }

    /// The counters, and the bytes held now.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            capacity: self.capacity,
            used: self.inner.as_ref().map_or(0, |c| c.weight()),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    /// Sets the counters back to 0 (the blocks stay).
    pub fn reset_stats(&self) {
        self.hits.store(0, Ordering::Relaxed);
        self.misses.store(0, Ordering::Relaxed);
        self.evictions.store(0, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("stats", &self.stats())
            .finish()
    }
}
