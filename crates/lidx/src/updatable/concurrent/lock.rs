//! The optimistic version lock of paper 3's concurrent indexes (section 2.3: "a versioned
//! lock per node ... readers only need to verify the version did not change before and
//! after their accesses; writers would acquire locks as usual but also increment the
//! version number"), in the layout of B+-TreeOLC and LIPP+: one 64-bit word, bit 0 set when
//! the thing it guards is obsolete (replaced), bit 1 while a writer holds it, the version
//! above.
//!
//! What it guards must be read and written through atomics (relaxed is enough): a reader
//! reads while a writer may be writing and throws the values away when [`OptLock::check`]
//! fails. The memory orders follow Boehm's seqlock recipe (a release fence after the
//! writer takes the lock, an acquire fence before the reader checks).

use std::sync::atomic::{AtomicU64, Ordering, fence};

const OBSOLETE: u64 = 0b01;
const LOCKED: u64 = 0b10;

/// A version lock: many optimistic readers, one writer.
#[derive(Debug, Default)]
pub struct OptLock(AtomicU64);

impl OptLock {
    /// An unlocked, current lock at version 0.
    pub const fn new() -> OptLock {
        OptLock(AtomicU64::new(0))
    }

    /// A lock taken by its creator (a node built to replace another, published locked and
    /// unlocked once it is in place).
    pub const fn new_locked() -> OptLock {
        OptLock(AtomicU64::new(LOCKED))
    }

    /// Starts an optimistic read: the version, or `None` while a writer holds the lock or
    /// the guarded thing is obsolete (the reader restarts).
    #[inline]
    pub fn read(&self) -> Option<u64> {
        let v = self.0.load(Ordering::Acquire);
        (v & (LOCKED | OBSOLETE) == 0).then_some(v)
    }

    /// Ends an optimistic read begun at `version`: whether nothing was written since, so
    /// what was read is consistent.
    #[inline]
    pub fn check(&self, version: u64) -> bool {
        fence(Ordering::Acquire);
        self.0.load(Ordering::Relaxed) == version
    }

    /// Takes the lock if it is still at `version` (a read becomes a write).
    #[inline]
    pub fn try_upgrade(&self, version: u64) -> bool {
        let taken = self
            .0
            .compare_exchange(
                version,
                version | LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok();
        if taken {
            fence(Ordering::Release);
        }
        taken
    }

    /// Takes the lock unless a writer holds it or it is obsolete.
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.read().is_some_and(|v| self.try_upgrade(v))
    }

    /// Takes the lock, waiting for a writer that holds it; `false` if it is (or becomes)
    /// obsolete.
    pub fn lock(&self) -> bool {
        let mut spins = 0u32;
        loop {
            let v = self.0.load(Ordering::Relaxed);
            if v & OBSOLETE != 0 {
                return false;
            }
            if v & LOCKED == 0 && self.try_upgrade(v) {
                return true;
            }
            back_off(&mut spins);
        }
    }

    /// Releases the lock, the version one higher.
    #[inline]
    pub fn unlock(&self) {
        // LOCKED is set: adding it clears it and carries into the version.
        self.0.fetch_add(LOCKED, Ordering::Release);
    }

    /// Releases the lock and marks the guarded thing obsolete: every later read and lock
    /// fails.
    pub fn unlock_obsolete(&self) {
        self.0.fetch_add(LOCKED | OBSOLETE, Ordering::Release);
    }

    /// Whether a writer holds the lock.
    pub fn is_locked(&self) -> bool {
        self.0.load(Ordering::Relaxed) & LOCKED != 0
    }

    /// Whether the guarded thing was replaced.
    pub fn is_obsolete(&self) -> bool {
        self.0.load(Ordering::Relaxed) & OBSOLETE != 0
    }
}

/// Waits a little longer each time: a pause for the first spins, then a yield of the
/// thread (as LIPP+ and the OLC indexes do), so that a descheduled writer gets the core.
#[inline]
pub fn back_off(spins: &mut u32) {
    if *spins < 6 {
        for _ in 0..(1 << *spins) {
            std::hint::spin_loop();
        }
    } else {
        std::thread::yield_now();
    }
    *spins = spins.saturating_add(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_moves_the_version_and_fails_reads_begun_before_it() {
        let l = OptLock::new();
        let v = l.read().unwrap();
        assert!(l.check(v));
        assert!(l.try_upgrade(v));
        assert!(l.read().is_none() && l.is_locked());
        assert!(!l.try_lock());
        l.unlock();
        assert!(!l.check(v));
        let w = l.read().unwrap();
        assert_ne!(v, w);
        // An upgrade from a stale version fails.
        assert!(!l.try_upgrade(v));
        assert!(l.lock());
        l.unlock_obsolete();
        assert!(l.is_obsolete() && !l.is_locked());
        assert!(l.read().is_none() && !l.try_lock() && !l.lock());
    }

    #[test]
    fn a_lock_born_locked_opens_once() {
        let l = OptLock::new_locked();
        assert!(l.read().is_none());
        l.unlock();
        assert!(l.read().is_some());
    }

    #[test]
    fn writers_exclude_each_other() {
        use std::sync::atomic::AtomicU64;
        let l = OptLock::new();
        let (a, b) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        assert!(l.lock());
                        // Two relaxed updates no other writer may interleave with.
                        let x = a.load(Ordering::Relaxed);
                        b.store(x + 1, Ordering::Relaxed);
                        a.store(x + 1, Ordering::Relaxed);
                        l.unlock();
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..50_000 {
                    if let Some(v) = l.read() {
                        let (x, y) = (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed));
                        if l.check(v) {
                            assert_eq!(x, y, "a consistent read saw a half-made write");
                        }
                    }
                }
            });
        });
        assert_eq!(a.load(Ordering::Relaxed), 80_000);
    }
}
