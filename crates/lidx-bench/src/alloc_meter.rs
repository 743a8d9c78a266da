//! Bytes a structure holds, measured by the allocator rather than by a formula (paper 3,
//! Fig. 8, counts every byte of an index, leaves included): [`Counting`] wraps the
//! process's global allocator and keeps the bytes live, and [`live_bytes`] reads them, so
//! a study takes the difference around building and running an index.
//!
//! The count is sharded: each thread adds to its own cache line (threads beyond the 64
//! shards share them), so that a run of many threads that allocate as they insert does
//! not serialise on one counter. The bytes counted are those asked for (`Layout::size`),
//! not the allocator's rounding.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

const SHARDS: usize = 64;

#[repr(align(128))]
struct Shard(AtomicI64);

static LIVE: [Shard; SHARDS] = [const { Shard(AtomicI64::new(0)) }; SHARDS];
static INSTALLED: AtomicBool = AtomicBool::new(false);
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn shard() -> &'static AtomicI64 {
    let i = SHARD
        .try_with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
                s.set(i);
            }
            i
        })
        // A thread being torn down frees through shard 0.
        .unwrap_or(0);
    &LIVE[i].0
}

/// Notes that the counting allocator is in use, writing the shared flag only once: a
/// store on every allocation would pull its cache line from thread to thread.
#[inline]
fn mark_installed() {
    if !INSTALLED.load(Ordering::Relaxed) {
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

/// A global allocator that counts the bytes live through `A`:
/// `#[global_allocator] static A: Counting<MiMalloc> = Counting(MiMalloc);`.
pub struct Counting<A>(pub A);

#[expect(
    unsafe_code,
    reason = "a global allocator is an unsafe trait; this one forwards every call"
)]
// SAFETY: every method forwards to `A` with the same arguments and returns what it
// returned; the counting touches no memory `A` manages.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            mark_installed();
            shard().fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            mark_installed();
            shard().fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shard().fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            shard().fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
}

/// Bytes live through the process's [`Counting`] allocator, or `None` where the process
/// has another allocator (tests, a library user's program).
pub fn live_bytes() -> Option<i64> {
    INSTALLED
        .load(Ordering::Relaxed)
        .then(|| LIVE.iter().map(|s| s.0.load(Ordering::Relaxed)).sum())
}
