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
//!
//! In front of the hash table sits a table of slots (as a buffer manager's page table,
//! e.g. vmcache's, maps a page to its frame without a hash table): an entry's key (a
//! decoded block's or a page's) picks a set of four slots by a multiplicative hash, and a
//! slot holding that key answers the lookup with one lock and one reference count, where
//! the hash table costs a hash, a shard lock and two or three dependent cache misses. A
//! slot only ever holds an entry the cache holds: it is filled when the entry is kept or
//! found, and emptied when the entry is evicted. Hits on slots reach the eviction policy
//! once per epoch (an eighth of the cache's entries kept), so the policy still sees which
//! blocks are hot. The table, 2 slots of 64 B per page of budget (3% of it), is counted in
//! the budget. A slot also keeps where a hit will read (the entry's header, and what its
//! type names as read first: a block's offsets), and fetches those cache lines before it
//! takes its lock, so that a warm lookup's cache misses overlap instead of following one
//! another.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use parking_lot::RwLock;
use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};

use crate::prefetch::prefetch;

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

/// A decoded entry the cache can hold: any `Send + Sync` type, telling where a lookup of it
/// reads first (which the cache fetches early: see [`Slot`]).
pub trait Decoded: Any + Send + Sync {
    /// The memory a lookup reads first after the value itself (e.g. a block's offsets,
    /// which sit in another allocation); empty for none.
    fn first_read(&self) -> &[u8] {
        &[]
    }
}

/// Cache lines [`prefetch`] fetches at most for one hint.
const HINT_LINES: usize = 8;

/// Where a lookup will read, packed in a word for a slot: the address in the low 56 bits
/// (user-space addresses are below 2^48), the cache lines from it in the top 8; 0 for none.
#[derive(Clone, Copy, Default)]
struct Hint(usize);

impl Hint {
    /// The lines `bytes` covers, at most [`HINT_LINES`].
    fn of(bytes: &[u8]) -> Hint {
        if bytes.is_empty() {
            return Hint(0);
        }
        Hint::lines(bytes.as_ptr().addr(), bytes.len())
    }

    /// The lines `len` bytes from `address` cover, at most [`HINT_LINES`].
    fn lines(address: usize, len: usize) -> Hint {
        let lines = ((address % 64 + len).div_ceil(64)).min(HINT_LINES);
        match address < 1 << 56 {
            true => Hint(address | lines << 56),
            false => Hint(0),
        }
    }

    fn address(self) -> usize {
        self.0 & ((1 << 56) - 1)
    }

    /// Asks the processor to fetch the lines, without waiting for them: reads nothing.
    fn prefetch(self) {
        prefetch(self.address(), self.0 >> 56);
    }
}

#[derive(Clone)]
enum Entry {
    Page(Arc<[u8]>),
    Decoded {
        value: Arc<dyn Any + Send + Sync>,
        /// [`Decoded::first_read`] of the value.
        first_read: Hint,
        bytes: u64,
        /// Kept ahead of other entries: never evicted (an index block within the high-
        /// priority share).
        pinned: bool,
    },
}

/// A decoded entry of `bytes`, `pinned` or not.
fn decoded<T: Decoded>(value: Arc<T>, bytes: u64, pinned: bool) -> Entry {
    Entry::Decoded {
        first_read: Hint::of(value.first_read()),
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

/// What the cache does as entries leave (evicted, replaced or refused): counts them,
/// empties their slots, and gives a high-priority entry's share back.
#[derive(Clone)]
struct OnEvict {
    evictions: Arc<AtomicU64>,
    slots: Arc<Slots>,
    high_priority: Arc<AtomicU64>,
}

impl Lifecycle<CacheKey, Entry> for OnEvict {
    type RequestState = ();

    fn begin_request(&self) -> Self::RequestState {}

    fn is_pinned(&self, _key: &CacheKey, entry: &Entry) -> bool {
        matches!(entry, Entry::Decoded { pinned: true, .. })
    }

    fn on_evict(&self, _state: &mut (), key: CacheKey, entry: Entry) {
        self.evictions.fetch_add(1, Ordering::Relaxed);
        self.slots.empty(&key, None);
        if let Entry::Decoded {
            pinned: true,
            bytes,
            ..
        } = entry
        {
            // Only a replacement takes a pinned entry out (two readers kept one index
            // block at once); the share it held is free again.
            let weight = ENTRY_OVERHEAD + bytes;
            let _ = self
                .high_priority
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                    Some(held.saturating_sub(weight))
                });
        }
    }
}

type Inner = Cache<CacheKey, Entry, EntryBytes, DefaultHashBuilder, OnEvict>;

/// An entry a slot holds: a page or a decoded block.
#[derive(Clone)]
enum Held {
    Page(Arc<[u8]>),
    Decoded(Arc<dyn Any + Send + Sync>),
}

impl Held {
    /// What `entry` holds.
    fn of(entry: &Entry) -> Held {
        match entry {
            Entry::Page(p) => Held::Page(Arc::clone(p)),
            Entry::Decoded { value, .. } => Held::Decoded(Arc::clone(value)),
        }
    }

    /// Where a lookup reads the entry: its reference counts (16 bytes before its data)
    /// and the decoded value itself (a block's header: at most [`HINT_LINES`] lines),
    /// then what it reads next.
    fn hints(entry: &Entry) -> [Hint; 2] {
        match entry {
            Entry::Page(p) => [Hint::lines(p.as_ptr().addr().wrapping_sub(16), 16), Hint(0)],
            Entry::Decoded {
                value, first_read, ..
            } => {
                let data = Arc::as_ptr(value).cast::<u8>().addr();
                let header = 16 + std::mem::size_of_val(&**value);
                [Hint::lines(data.wrapping_sub(16), header), *first_read]
            }
        }
    }

    /// Whether the two are the same entry (not copies of it).
    fn same(&self, other: &Held) -> bool {
        match (self, other) {
            (Held::Page(a), Held::Page(b)) => Arc::ptr_eq(a, b),
            (Held::Decoded(a), Held::Decoded(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// A key packed into 12 bytes, so that a slot fits one cache line: the file and the
/// block's offset, or the page number with the top bit set.
#[derive(Clone, Copy, PartialEq, Eq)]
struct SlotKey {
    file: u32,
    at: u64,
}

impl SlotKey {
    const PAGE: u64 = 1 << 63;

    /// The key of an empty slot: no entry packs to it (its file is not packed).
    const NONE: SlotKey = SlotKey {
        file: u32::MAX,
        at: u64::MAX,
    };

    /// The packed key; `None` (no slot: the hash table alone answers) for an offset or
    /// page number with the top bit set, or a file id from `u32::MAX` on.
    fn of(key: &CacheKey) -> Option<SlotKey> {
        let (file, at, tag) = match *key {
            CacheKey::Block { file, offset } => (file, offset, 0),
            CacheKey::Page { file, page } => (file, page, Self::PAGE),
        };
        let file = u32::try_from(file).ok().filter(|&f| f != u32::MAX)?;
        (at & Self::PAGE == 0).then_some(SlotKey { file, at: at | tag })
    }
}

/// One slot of the table: 64 bytes, a cache line of its own.
///
/// The key of the entry it holds sits beside the lock, in atomics written only under the
/// lock's write side: a lookup compares the keys of a set's slots without taking a lock,
/// then confirms the one that matches under its read lock. So do two [`Hint`]s the
/// lookup prefetches before it takes the lock, the entry's and the one a lookup of it
/// reads first ([`Decoded::first_read`]): the lock and the reference count are atomic
/// read-modify-writes, which no later load passes, so those cache lines would otherwise be
/// fetched only after them, one miss after another.
#[repr(align(64))]
struct Slot {
    at: AtomicU64,
    file: AtomicU32,
    /// The epoch in which a hit on this slot's entry last reached the policy.
    reported: AtomicU32,
    /// [`Held::hints`] of the entry held, packed ([`Hint`]); 0 for none.
    hints: [AtomicUsize; 2],
    held: RwLock<Option<Held>>,
}

// A slot is one cache line: its key packed, its entry's hints, its lock and its epoch.
const _: () = assert!(std::mem::size_of::<Slot>() == 64);

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            at: AtomicU64::new(SlotKey::NONE.at),
            file: AtomicU32::new(SlotKey::NONE.file),
            reported: AtomicU32::new(0),
            hints: Default::default(),
            held: RwLock::new(None),
        }
    }
}

impl Slot {
    /// Whether the slot's key is `key`: a hint without the lock, the truth under it.
    fn keyed(&self, key: SlotKey) -> bool {
        self.at.load(Ordering::Relaxed) == key.at && self.file.load(Ordering::Relaxed) == key.file
    }

    /// Sets the slot's key and the hints of what it holds; only under the write lock.
    fn set_key(&self, key: SlotKey, hints: [Hint; 2]) {
        self.file.store(key.file, Ordering::Relaxed);
        self.at.store(key.at, Ordering::Relaxed);
        for (to, h) in self.hints.iter().zip(hints) {
            to.store(h.0, Ordering::Relaxed);
        }
    }

    /// Whether the slot holds nothing (a hint, as [`keyed`](Self::keyed)).
    fn looks_empty(&self) -> bool {
        self.keyed(SlotKey::NONE)
    }
}

/// The slots a key may sit in: four lines of one 256-byte block.
#[derive(Default)]
#[repr(align(256))]
struct Set([Slot; Slots::WAYS]);

/// The table of slots in front of the hash table (see the module doc), four-way set
/// associative: with a block per two slots, a direct-mapped table would hold about 79% of
/// the blocks (the rest collide), two ways about 90%, four 96%.
///
/// Invariant: a slot holds an entry only while the hash table holds that same entry, but
/// for the moment between a fill and its check. A block kept is put in a slot before the
/// hash table, a block the hash table answered with before the check that it still holds
/// that block; eviction and replacement empty every slot of the key after the entry leaves
/// the hash table; so whichever comes last of the check and the eviction empties the slot.
/// Two threads may fill two ways with one key; both then hold the hash table's entry, and
/// emptying empties both.
struct Slots {
    table: Box<[Set]>,
    /// `64 - log2(table.len())`: the shift that turns a 64-bit hash into a set.
    shift: u32,
    /// Entries kept since the cache was made.
    kept: AtomicU64,
    /// `log2` of the entries kept per epoch.
    epoch_shift: u32,
}

impl Slots {
    /// Bytes of one slot.
    const SLOT_BYTES: u64 = std::mem::size_of::<Slot>() as u64;

    /// Slots a key may sit in.
    const WAYS: usize = 4;

    /// A table for a cache of `budget` bytes: 2 slots per page of budget, a power of two,
    /// at most 2^20 (64 MiB, for budgets from 2 GiB), none for a budget too small to spare
    /// them (at most 1/32 of the budget).
    fn new(budget: u64) -> Slots {
        let wanted = (budget / PAGE * 2).min(1 << 20);
        let ways = Self::WAYS as u64;
        let sets = match wanted {
            n if n < 2 * ways => 0,
            n => (1u64 << n.ilog2()) / ways,
        };
        let entries = (budget / PAGE).max(1);
        Slots {
            table: (0..sets).map(|_| Set::default()).collect(),
            shift: 64 - sets.max(1).ilog2(),
            kept: AtomicU64::new(0),
            epoch_shift: (entries / 8).max(1).ilog2(),
        }
    }

    /// Slots in the table.
    fn len(&self) -> usize {
        self.table.len() * Self::WAYS
    }

    /// Bytes the table takes.
    fn bytes(&self) -> u64 {
        self.len() as u64 * Self::SLOT_BYTES
    }

    /// The slots `key` may sit in (none with no table).
    fn set(&self, key: SlotKey) -> Option<&[Slot; Slots::WAYS]> {
        // Fibonacci hashing: consecutive offsets or pages of one file spread over the table.
        let hash =
            (key.at ^ u64::from(key.file).rotate_left(40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let index = hash.checked_shr(self.shift).unwrap_or(0) as usize;
        self.table.get(index).map(|set| &set.0)
    }

    /// The current epoch.
    fn epoch(&self) -> u32 {
        (self.kept.load(Ordering::Relaxed) >> self.epoch_shift) as u32
    }

    /// The entry under `key` if a slot holds it, and whether the hit is the first in this
    /// epoch (then the caller reports it to the policy). `within`, a range of a page's
    /// bytes, is what the caller will read of it.
    fn get(&self, key: &CacheKey, within: Option<(usize, usize)>) -> Option<(Held, bool)> {
        let key = SlotKey::of(key)?;
        let slot = self.set(key)?.iter().find(|slot| slot.keyed(key))?;
        let [entry, next] = slot
            .hints
            .each_ref()
            .map(|h| Hint(h.load(Ordering::Relaxed)));
        entry.prefetch();
        match within {
            // The page's bytes start 16 bytes after its reference counts.
            Some((from, len)) if entry.0 != 0 => {
                Hint::lines(entry.address().wrapping_add(16 + from), len).prefetch();
            }
            _ => next.prefetch(),
        }
        let value = {
            let held = slot.held.read();
            if !slot.keyed(key) {
                return None;
            }
            held.clone()?
        };
        let epoch = self.epoch();
        let first = slot.reported.load(Ordering::Relaxed) != epoch;
        if first {
            slot.reported.store(epoch, Ordering::Relaxed);
        }
        Some((value, first))
    }

    /// Puts `entry` in a slot of `key`'s set: the one keyed `key`, else an empty one, else
    /// the one whose entry's hits reached the policy longest ago. `kept` says whether it is
    /// being kept now (a fresh entry: its first hit has not reached the policy). A value
    /// kept now replaces what the slot holds; a value the hash table answered with goes in
    /// only where the slot does not hold `key`, since a copy of the same block in the slot
    /// was kept after that answer (which may have been evicted since, leaving the copy the
    /// one the cache counts).
    fn fill(&self, key: &CacheKey, entry: &Entry, kept: bool) {
        let Some(key) = SlotKey::of(key) else { return };
        let Some(set) = self.set(key) else { return };
        let epoch = self.epoch();
        let slot = set
            .iter()
            .find(|s| s.keyed(key))
            .or_else(|| set.iter().find(|s| s.looks_empty()))
            .or_else(|| {
                set.iter()
                    .max_by_key(|s| epoch.wrapping_sub(s.reported.load(Ordering::Relaxed)))
            });
        let Some(slot) = slot else { return };
        let previous = {
            let mut held = slot.held.write();
            if !kept && held.is_some() && slot.keyed(key) {
                return;
            }
            slot.set_key(key, Held::hints(entry));
            held.replace(Held::of(entry))
        };
        slot.reported.store(
            if kept { epoch.wrapping_sub(1) } else { epoch },
            Ordering::Relaxed,
        );
        // Dropped outside the lock.
        drop(previous);
    }

    /// Empties the slots that hold `key` (and, when `only` is given, that value itself).
    fn empty(&self, key: &CacheKey, only: Option<&Held>) {
        let Some(key) = SlotKey::of(key) else { return };
        let Some(set) = self.set(key) else { return };
        for slot in set.iter().filter(|s| s.keyed(key)) {
            let previous = {
                let mut held = slot.held.write();
                let ours = held
                    .as_ref()
                    .is_some_and(|h| only.is_none_or(|v| h.same(v)));
                if slot.keyed(key) && ours {
                    slot.set_key(SlotKey::NONE, [Hint(0); 2]);
                    held.take()
                } else {
                    None
                }
            };
            drop(previous);
        }
    }

    /// Empties every slot.
    fn clear(&self) {
        for slot in self.table.iter().flat_map(|set| &set.0) {
            let previous = {
                let mut held = slot.held.write();
                slot.set_key(SlotKey::NONE, [Hint(0); 2]);
                held.take()
            };
            drop(previous);
        }
    }
}

static NEXT_FILE_ID: AtomicU64 = AtomicU64::new(0);

/// A fresh id that tells an open file apart from every other in a shared cache.
pub fn next_file_id() -> u64 {
    NEXT_FILE_ID.fetch_add(1, Ordering::Relaxed)
}

/// A concurrent cache of pages and decoded blocks holding at most its budget in bytes.
pub struct BlockCache {
    inner: Option<Inner>,
    slots: Arc<Slots>,
    capacity: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: Arc<AtomicU64>,
    /// Bytes of the entries kept at high priority.
    high_priority: Arc<AtomicU64>,
}

/// The share of the budget index blocks may hold ahead of other entries: RocksDB's LRU
/// cache's `high_pri_pool_ratio` default.
pub const HIGH_PRIORITY_SHARE: f64 = 0.5;

/// What a cache has done since it was made or last [`reset`](BlockCache::reset_stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// The budget in bytes.
    pub capacity: u64,
    /// Bytes held now, the slot table's included.
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
        BlockCache::with_slots(bytes, Slots::new(bytes))
    }

    /// A cache of at most `bytes` bytes, `slots` in front of its hash table.
    fn with_slots(bytes: u64, slots: Slots) -> BlockCache {
        let evictions = Arc::new(AtomicU64::new(0));
        let high_priority = Arc::new(AtomicU64::new(0));
        let slots = Arc::new(slots);
        let entries = bytes - slots.bytes();
        let inner = (entries > 0).then(|| {
            // Entries are 4 KiB to tens of KiB: a few shards keep contention low without
            // making any shard too small to hold a block.
            let items = (entries / PAGE).clamp(16, 1 << 24) as usize;
            let shards = (entries / (1 << 20)).clamp(1, 16) as usize;
            let options = OptionsBuilder::new()
                .estimated_items_capacity(items)
                .weight_capacity(entries)
                .shards(shards)
                .build();
            options.ok().map(|o| {
                Cache::with_options(
                    o,
                    EntryBytes,
                    DefaultHashBuilder::default(),
                    OnEvict {
                        evictions: Arc::clone(&evictions),
                        slots: Arc::clone(&slots),
                        high_priority: Arc::clone(&high_priority),
                    },
                )
            })
        });
        BlockCache {
            inner: inner.flatten(),
            slots,
            capacity: bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions,
            high_priority,
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
    pub fn get_decoded<T: Decoded>(&self, key: CacheKey) -> Option<Arc<T>> {
        let found = match self.lookup(key, None) {
            Some(Held::Decoded(value)) => value.downcast::<T>().ok(),
            _ => None,
        };
        self.counted(found)
    }

    /// The entry under `key`: from a slot when one holds it (the policy sees one hit an
    /// epoch), else from the hash table, then put in a slot. Counts nothing.
    fn lookup(&self, key: CacheKey, within: Option<(usize, usize)>) -> Option<Held> {
        let c = self.inner.as_ref()?;
        if let Some((value, first)) = self.slots.get(&key, within) {
            if first {
                let _ = c.get(&key);
            }
            return Some(value);
        }
        let entry = c.get(&key)?;
        let value = Held::of(&entry);
        self.slots.fill(&key, &entry, false);
        if !c.peek(&key).is_some_and(|now| Held::of(&now).same(&value)) {
            // Evicted or replaced meanwhile, perhaps before the slot was filled.
            self.slots.empty(&key, Some(&value));
        }
        Some(value)
    }

    /// Keeps `value`, charged `bytes`, under `key`, evicting others as the budget requires.
    pub fn insert_decoded<T: Decoded>(&self, key: CacheKey, value: Arc<T>, bytes: u64) {
        if let Some(c) = &self.inner {
            self.keep(c, key, decoded(value, bytes, false));
        }
    }

    /// Keeps `entry` under `key`, in a slot too.
    fn keep(&self, c: &Inner, key: CacheKey, entry: Entry) {
        self.slots.kept.fetch_add(1, Ordering::Relaxed);
        // Before the hash table: if the entry is evicted at once, its slot is emptied.
        self.slots.fill(&key, &entry, true);
        c.insert(key, entry);
    }

    /// Keeps an index block as [`insert_decoded`](Self::insert_decoded) does, at high
    /// priority while the entries so kept stay within [`HIGH_PRIORITY_SHARE`] of the budget:
    /// such an entry is never evicted to make room (RocksDB's
    /// `cache_index_and_filter_blocks_with_high_priority`, whose high-priority pool keeps
    /// index blocks ahead of data blocks). Past that share it is kept like any block.
    pub fn insert_index<T: Decoded>(&self, key: CacheKey, value: Arc<T>, bytes: u64) {
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
        self.keep(c, key, decoded(value, bytes, pinned));
    }

    /// Bytes held at high priority ([`insert_index`](Self::insert_index)).
    pub fn high_priority_bytes(&self) -> u64 {
        self.high_priority.load(Ordering::Relaxed)
    }

    /// The page under `key`, counting a hit or a miss.
    pub fn get_page(&self, key: CacheKey) -> Option<Arc<[u8]>> {
        self.get_page_for(key, 0, 0)
    }

    /// [`get_page`](Self::get_page) for a caller that will read `len` bytes from `from`
    /// in it (fetched early).
    pub fn get_page_for(&self, key: CacheKey, from: usize, len: usize) -> Option<Arc<[u8]>> {
        let within = (len > 0).then_some((from, len));
        let found = match self.lookup(key, within) {
            Some(Held::Page(p)) => Some(p),
            _ => None,
        };
        self.counted(found)
    }

    /// Keeps a copy of `page` under `key`.
    pub fn insert_page(&self, key: CacheKey, page: &[u8]) {
        if let Some(c) = &self.inner {
            self.keep(c, key, Entry::Page(page.into()));
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
        self.slots.clear();
        self.high_priority.store(0, Ordering::Relaxed);
    }

    /// The counters, and the bytes held now.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            capacity: self.capacity,
            used: self.inner.as_ref().map_or(0, |c| c.weight()) + self.slots.bytes(),
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

    impl Decoded for u32 {}
    impl Decoded for u64 {}

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
        // 16 pages of budget: 32 slots of 64 B.
        assert_eq!(s.used, 4096 + 100 + 2 * ENTRY_OVERHEAD + 32 * 64);
    }

    /// Block `i`'s key in file 1.
    fn block(i: u64) -> CacheKey {
        CacheKey::Block {
            file: 1,
            offset: i * 4096,
        }
    }

    #[test]
    fn a_slot_is_a_cache_line_and_the_table_a_thirty_second_of_the_budget_at_most() {
        assert_eq!(Slots::SLOT_BYTES, 64);
        for budget in [
            0,
            1,
            4095,
            4096,
            8191,
            100_000,
            1 << 20,
            165_703_761,
            1 << 31,
        ] {
            let slots = Slots::new(budget);
            assert!(slots.bytes() <= budget / 32, "{budget}: {}", slots.bytes());
            assert!(slots.len().is_power_of_two() || slots.len() == 0);
        }
        assert_eq!(Slots::new(1 << 20).len(), 512);
        assert_eq!(Slots::new(1 << 32).len(), 1 << 20);
    }

    #[test]
    fn the_slots_never_answer_for_an_entry_the_cache_no_longer_holds_nor_keep_it_alive() {
        // 32 entries of 4 KiB fit; 400 go through, each looked up twice as it goes.
        let cache = BlockCache::new(40 * 4096);
        let values: Vec<Arc<u64>> = (0..400).map(Arc::new).collect();
        for (i, v) in values.iter().enumerate() {
            let i = i as u64;
            cache.insert_decoded(block(i), Arc::clone(v), 4096);
            assert_eq!(cache.get_decoded::<u64>(block(i)).as_deref(), Some(&i));
            if i >= 7 {
                let _ = cache.get_decoded::<u64>(block(i - 7));
            }
        }
        let mut held = 0;
        for (i, v) in values.iter().enumerate() {
            let key = block(i as u64);
            let found = cache.get_decoded::<u64>(key);
            assert_eq!(found.is_some(), cache.contains(key), "block {i}");
            assert!(found.is_none_or(|f| *f == i as u64));
            // Ours, and the cache's if it holds it, in its hash table and perhaps a slot.
            let expected = if cache.contains(key) { 2..=3 } else { 1..=1 };
            assert!(expected.contains(&Arc::strong_count(v)), "block {i}");
            held += usize::from(cache.contains(key));
        }
        assert!((20..=40).contains(&held), "{held}");
        assert!(cache.stats().used <= 40 * 4096, "{:?}", cache.stats());
        cache.clear();
        assert!(values.iter().all(|v| Arc::strong_count(v) == 1));
    }

    #[test]
    fn four_ways_hold_most_blocks_of_a_cache_they_fit() {
        // Blocks at scattered offsets, all in a cache with room for them, 2 slots per block
        // of room: a direct-mapped table keeps 2(1 - e^-0.5) = 79% of them in slots (the
        // rest collide), two ways 90%, four 96% of the expected count. (Consecutive offsets
        // spread evenly under Fibonacci hashing and would not collide at all.)
        let cache = BlockCache::new(1 << 26);
        let blocks = cache.slots.len() / 2;
        let mut state = 7u64;
        let offsets: Vec<u64> = (0..blocks)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state >> 24
            })
            .collect();
        for &at in &offsets {
            cache.insert_decoded(block(at), Arc::new(at), 3000);
        }
        let in_slots = offsets
            .iter()
            .filter(|&&at| cache.slots.get(&block(at), None).is_some())
            .count();
        assert_eq!(cache.stats().evictions, 0);
        assert!(in_slots * 100 >= blocks * 94, "{in_slots} of {blocks}");
    }

    #[test]
    fn the_slots_keep_the_hit_ratio_of_the_hash_table_alone() {
        // Skewed lookups over 2,000 blocks through room for 200: which blocks stay is the
        // policy's choice, so hits on slots must reach it as hits on the hash table do.
        let run = |cache: BlockCache| {
            let mut state = 7u64;
            for _ in 0..100_000 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                let i = (2000.0 * u.powi(4)) as u64;
                if cache.get_decoded::<u64>(block(i)).is_none() {
                    cache.insert_decoded(block(i), Arc::new(i), 4096);
                }
            }
            cache.stats().hits
        };
        let budget = 210 * 4096;
        let alone = run(BlockCache::with_slots(budget, Slots::new(0)));
        let slotted = run(BlockCache::new(budget));
        // Measured: 99.6% of the hits alone; 98.4% when slot hits do not reach the policy.
        assert!(
            slotted * 100 >= alone * 99,
            "{slotted} hits with slots, {alone} without"
        );
        assert!(alone > 50_000, "{alone}");
    }

    #[test]
    fn threads_sharing_a_small_cache_get_their_own_blocks_and_leave_no_copy_outside_it() {
        let cache = BlockCache::new(48 * 4096);
        let lookups = AtomicU64::new(0);
        let kept: Vec<Vec<Arc<u64>>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..4u64)
                .map(|t| {
                    let (cache, lookups) = (&cache, &lookups);
                    scope.spawn(move || {
                        let mut kept = Vec::new();
                        let mut state = t + 1;
                        for _ in 0..20_000 {
                            // xorshift: 200 blocks, most of them out of the cache at a time.
                            state ^= state << 13;
                            state ^= state >> 7;
                            state ^= state << 17;
                            let i = state % 200;
                            lookups.fetch_add(1, Ordering::Relaxed);
                            match cache.get_decoded::<u64>(block(i)) {
                                Some(v) => assert_eq!(*v, i),
                                None => {
                                    let v = Arc::new(i);
                                    cache.insert_decoded(block(i), Arc::clone(&v), 4096);
                                    kept.push(v);
                                }
                            }
                        }
                        kept
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let s = cache.stats();
        assert_eq!(s.hits + s.misses, lookups.load(Ordering::Relaxed));
        assert!(s.used <= 48 * 4096, "{s:?}");
        // Whatever the interleaving, the cache holds one copy of a block at most (in its
        // hash table and perhaps its slot), and no slot holds one it no longer holds.
        let mut copies = [0usize; 200];
        for v in kept.iter().flatten() {
            if Arc::strong_count(v) > 1 {
                copies[**v as usize] += 1;
            }
        }
        for (i, &n) in copies.iter().enumerate() {
            let key = block(i as u64);
            assert_eq!(n, usize::from(cache.contains(key)), "block {i}: {n} copies");
            assert_eq!(cache.get_decoded::<u64>(key).is_some(), cache.contains(key));
        }
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
        // 40 index blocks of 4 KiB: the first 31 fit in half the budget (with overhead).
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

    #[test]
    fn an_index_block_kept_twice_at_once_is_counted_once() {
        // What two readers do when both find the block missing and both keep it: each
        // takes its share, and the second copy replaces the first.
        let cache = BlockCache::new(256 * 1024);
        let c = cache.inner.as_ref().unwrap();
        let key = CacheKey::Block { file: 3, offset: 0 };
        for copy in 0..2u64 {
            cache
                .high_priority
                .fetch_add(4096 + ENTRY_OVERHEAD, Ordering::Relaxed);
            cache.keep(c, key, decoded(Arc::new(copy), 4096, true));
        }
        assert_eq!(cache.high_priority_bytes(), 4096 + ENTRY_OVERHEAD);
        assert_eq!(cache.get_decoded::<u64>(key).as_deref(), Some(&1));
    }
}
