//! The cache every reader of lidx's key-value files reads through (paper 4, section 1:
//! cache pressure is why a smaller index matters; paper 2, section 3: the cold→warm curve
//! is a page cache filling): whole 4 KiB pages of a file, and decoded blocks, under one
//! byte budget, shared by all the threads reading any number of files.
//!
//! It is `quick_cache`'s concurrent sharded cache (a Clock-PRO / S3-FIFO policy, which
//! resists scans better than LRU), weighed in bytes, with lidx counting hits, misses and
//! evictions. A budget of 0 disables it: every lookup misses and nothing is kept.
//!
//! Pages are raw bytes ([`PAGE`] of them, fewer for a file's last page) read by
//! [`PagedReads`](super::paged::PagedReads). Decoded blocks are any `Send + Sync` type the
//! reader that made them asks back for ([`get_decoded`](BlockCache::get_decoded)), charged
//! the bytes the reader says they take.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};

/// Bytes of a cached page: the direct-I/O block.
pub const PAGE: u64 = super::BLOCK_SIZE as u64;

/// Bytes an entry is charged beyond its body: the entry and its bookkeeping.
const ENTRY_OVERHEAD: u64 = 64;

/// What the cache holds an entry under: the file's id ([`next_file_id`]) and the entry's
/// place in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheKey {
    /// A decoded block starting at this byte offset.
    Block {
        /// The file's id.
        file: u64,
        /// The block's byte offset.
        offset: u64,
    },
    /// Page `page` (bytes `page × PAGE ..`).
    Page {
        /// The file's id.
        file: u64,
        /// The page number.
        page: u64,
    },
}

#[derive(Clone)]
enum Entry {
    Page(Arc<[u8]>),
    Decoded {
        value: Arc<dyn Any + Send + Sync>,
        bytes: u64,
        /// Kept ahead of other entries: never evicted (an index block within the high-
        /// priority share).
        pinned: bool,
    },
}

/// A decoded entry of `bytes`, `pinned` or not.
fn decoded<T: Any + Send + Sync>(value: Arc<T>, bytes: u64, pinned: bool) -> Entry {
    Entry::Decoded {
        value,
        bytes,
        pinned,
    }
}

#[derive(Clone)]
struct EntryBytes;

impl Weighter<CacheKey, Entry> for EntryBytes {
    fn weight(&self, _key: &CacheKey, entry: &Entry) -> u64 {
        ENTRY_OVERHEAD
            + match entry {
                Entry::Page(p) => p.len() as u64,
                Entry::Decoded { bytes, .. } => *bytes,
            }
    }
}

#[derive(Clone)]
struct CountEvictions(Arc<AtomicU64>);

impl Lifecycle<CacheKey, Entry> for CountEvictions {
    type RequestState = ();

    fn begin_request(&self) -> Self::RequestState {}

    fn is_pinned(&self, _key: &CacheKey, entry: &Entry) -> bool {
        matches!(entry, Entry::Decoded { pinned: true, .. })
    }

    fn on_evict(&self, _state: &mut (), _key: CacheKey, _entry: Entry) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

type Inner = Cache<CacheKey, Entry, EntryBytes, DefaultHashBuilder, CountEvictions>;

static NEXT_FILE_ID: AtomicU64 = AtomicU64::new(0);

/// A fresh id that tells an open file apart from every other in a shared cache.
pub fn next_file_id() -> u64 {
    NEXT_FILE_ID.fetch_add(1, Ordering::Relaxed)
}

/// A concurrent cache of pages and decoded blocks holding at most its budget in bytes.
pub struct BlockCache {
    inner: Option<Inner>,
    capacity: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: Arc<AtomicU64>,
    /// Bytes of the entries kept at high priority.
    high_priority: AtomicU64,
}

/// The share of the budget index blocks may hold ahead of other entries: RocksDB's LRU
/// cache's `high_pri_pool_ratio` default.
pub const HIGH_PRIORITY_SHARE: f64 = 0.5;

/// What a cache has done since it was made or last [`reset`](BlockCache::reset_stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// The budget in bytes.
    pub capacity: u64,
    /// Bytes held now.
    pub used: u64,
    /// Lookups that found their entry.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries pushed out (or refused as larger than a shard) to stay within the budget.
    pub evictions: u64,
}

impl BlockCache {
    /// A cache of at most `bytes` bytes; 0 keeps nothing.
    pub fn new(bytes: u64) -> BlockCache {
        let evictions = Arc::new(AtomicU64::new(0));
        let inner = (bytes > 0).then(|| {
            // Entries are 4 KiB to tens of KiB: a few shards keep contention low without
            // making any shard too small to hold a block.
            let items = (bytes / PAGE).clamp(16, 1 << 24) as usize;
            let shards = (bytes / (1 << 20)).clamp(1, 16) as usize;
            let options = OptionsBuilder::new()
                .estimated_items_capacity(items)
                .weight_capacity(bytes)
                .shards(shards)
                .build();
            options.ok().map(|o| {
                Cache::with_options(
                    o,
                    EntryBytes,
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
            high_priority: AtomicU64::new(0),
        }
    }

    /// Whether the budget is 0 (nothing is ever kept).
    pub fn is_disabled(&self) -> bool {
        self.inner.is_none()
    }

    /// Counts a hit or a miss for `found`, and passes it on.
    fn counted<T>(&self, found: Option<T>) -> Option<T> {
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// The decoded block of type `T` under `key`, counting a hit or a miss (an entry of
    /// another type counts as a miss).
    pub fn get_decoded<T: Any + Send + Sync>(&self, key: CacheKey) -> Option<Arc<T>> {
        let found = match self.inner.as_ref().and_then(|c| c.get(&key)) {
            Some(Entry::Decoded { value, .. }) => value.downcast::<T>().ok(),
            _ => None,
        };
        self.counted(found)
    }

    /// Keeps `value`, charged `bytes`, under `key`, evicting others as the budget requires.
    pub fn insert_decoded<T: Any + Send + Sync>(&self, key: CacheKey, value: Arc<T>, bytes: u64) {
        if let Some(c) = &self.inner {
            c.insert(key, decoded(value, bytes, false));
        }
    }

    /// Keeps an index block as [`insert_decoded`](Self::insert_decoded) does, at high
    /// priority while the entries so kept stay within [`HIGH_PRIORITY_SHARE`] of the budget:
    /// such an entry is never evicted to make room (RocksDB's
    /// `cache_index_and_filter_blocks_with_high_priority`, whose high-priority pool keeps
    /// index blocks ahead of data blocks). Past that share it is kept like any block.
    pub fn insert_index<T: Any + Send + Sync>(&self, key: CacheKey, value: Arc<T>, bytes: u64) {
        let Some(c) = &self.inner else { return };
        if c.contains_key(&key) {
            // Another reader kept it meanwhile; replacing it would count it twice.
            return;
        }
        let weight = ENTRY_OVERHEAD + bytes;
        let share = (self.capacity as f64 * HIGH_PRIORITY_SHARE) as u64;
        let pinned = self
            .high_priority
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (held + weight <= share).then_some(held + weight)
            })
            .is_ok();
        c.insert(key, decoded(value, bytes, pinned));
    }

    /// Bytes held at high priority ([`insert_index`](Self::insert_index)).
    pub fn high_priority_bytes(&self) -> u64 {
        self.high_priority.load(Ordering::Relaxed)
    }

    /// The page under `key`, counting a hit or a miss.
    pub fn get_page(&self, key: CacheKey) -> Option<Arc<[u8]>> {
        let found = match self.inner.as_ref().and_then(|c| c.get(&key)) {
            Some(Entry::Page(p)) => Some(p),
            _ => None,
        };
        self.counted(found)
    }

    /// Keeps a copy of `page` under `key`.
    pub fn insert_page(&self, key: CacheKey, page: &[u8]) {
        if let Some(c) = &self.inner {
            c.insert(key, Entry::Page(page.into()));
        }
    }

    /// Whether the cache holds `key` (counts nothing).
    pub fn contains(&self, key: CacheKey) -> bool {
        self.inner.as_ref().is_some_and(|c| c.contains_key(&key))
    }

    /// Drops every entry (counting no evictions).
    pub fn clear(&self) {
        if let Some(c) = &self.inner {
            c.clear();
        }
        self.high_priority.store(0, Ordering::Relaxed);
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

    /// Sets the counters back to 0 (the entries stay).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_decoded_entries_share_one_budget_and_are_counted() {
        let cache = BlockCache::new(64 * 1024);
        let page = CacheKey::Page { file: 1, page: 3 };
        let block = CacheKey::Block { file: 1, offset: 3 };
        assert!(cache.get_page(page).is_none());
        cache.insert_page(page, &[7u8; 4096]);
        cache.insert_decoded(block, Arc::new(42u32), 100);
        assert_eq!(cache.get_page(page).as_deref(), Some(&[7u8; 4096][..]));
        assert_eq!(cache.get_decoded::<u32>(block).as_deref(), Some(&42));
        // A page is not a decoded block, nor a block of another type.
        assert!(cache.get_decoded::<u32>(page).is_none());
        assert!(cache.get_decoded::<u64>(block).is_none());
        let s = cache.stats();
        assert_eq!((s.hits, s.misses), (2, 3));
        assert_eq!(s.used, 4096 + 100 + 2 * ENTRY_OVERHEAD);
    }

    #[test]
    fn a_zero_budget_keeps_nothing_and_a_small_one_stays_within_it() {
        let none = BlockCache::new(0);
        assert!(none.is_disabled());
        none.insert_page(CacheKey::Page { file: 0, page: 0 }, &[1; 10]);
        assert!(none.get_page(CacheKey::Page { file: 0, page: 0 }).is_none());
        let small = BlockCache::new(16 * 1024);
        for page in 0..100 {
            small.insert_page(CacheKey::Page { file: 0, page }, &[1; 4096]);
        }
        let s = small.stats();
        assert!(s.used <= 16 * 1024, "{s:?}");
        assert!(s.evictions >= 96, "{s:?}");
    }

    #[test]
    fn index_blocks_within_the_high_priority_share_outlive_a_flood_of_data() {
        let budget = 256 * 1024;
        let cache = BlockCache::new(budget);
        let index = |i: u64| CacheKey::Block { file: 9, offset: i };
        // 40 index blocks of 4 KiB: the first 30 fit in half the budget (with overhead).
        for i in 0..40 {
            cache.insert_index(index(i), Arc::new(i), 4096);
        }
        let share = (budget as f64 * HIGH_PRIORITY_SHARE) as u64;
        assert_eq!(cache.high_priority_bytes(), 31 * (4096 + ENTRY_OVERHEAD));
        assert!(cache.high_priority_bytes() <= share);
        for page in 0..1000 {
            cache.insert_page(CacheKey::Page { file: 1, page }, &[3; 4096]);
        }
        let kept = (0..40).filter(|&i| cache.contains(index(i))).count();
        assert!(kept >= 31, "{kept}");
        for i in 0..31 {
            assert!(cache.contains(index(i)), "index block {i} was evicted");
        }
        assert!(cache.stats().used <= budget, "{:?}", cache.stats());
        // Kept again, an index block is not counted twice.
        cache.insert_index(index(0), Arc::new(0u64), 4096);
        assert_eq!(cache.high_priority_bytes(), 31 * (4096 + ENTRY_OVERHEAD));
        cache.clear();
        assert_eq!(cache.high_priority_bytes(), 0);
    }
}
