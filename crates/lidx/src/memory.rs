//! One memory budget for everything a command may limit (paper 1, section 4.4: joins and
//! partitioning under a memory limit), in the manner of DataFusion's memory reservations:
//! whatever holds memory that grows with the data (a hash table, read buffers, partition
//! writers, sort runs, a buffer pool, a block cache) reserves it from a [`MemoryBudget`]
//! before allocating, grows the [`Reservation`] as it goes, and releases it when done
//! (dropping releases). A refused reservation is [`Error::OverBudget`], naming what did not
//! fit; a caller that can do with less (the grace hash join partitions to disk) asks
//! [`MemoryBudget::available`] first.
//!
//! The budget counts what its users say they hold, not what the allocator hands out; each
//! user documents how it estimates its bytes. It is shared by cloning (one count behind an
//! `Arc`), so threads of one join reserve from the same budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

/// A limit on the bytes reserved at once, shared by every clone.
#[derive(Clone, Debug)]
pub struct MemoryBudget {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    limit: u64,
    used: AtomicU64,
    peak: AtomicU64,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        MemoryBudget {
            shared: Arc::new(Shared {
                limit,
                used: AtomicU64::new(0),
                peak: AtomicU64::new(0),
            }),
        }
    }

    /// A budget that grants everything (it still counts, so [`peak`](Self::peak) reports
    /// what was used).
    pub fn unlimited() -> Self {
        Self::new(u64::MAX)
    }

    /// The limit in bytes (`u64::MAX` when unlimited).
    pub fn limit(&self) -> u64 {
        self.shared.limit
    }

    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        self.shared.used.load(Ordering::Acquire)
    }

    /// Bytes that may still be reserved.
    pub fn available(&self) -> u64 {
        self.limit().saturating_sub(self.used())
    }

    /// The most bytes reserved at any one time so far; never above the limit.
    pub fn peak(&self) -> u64 {
        self.shared.peak.load(Ordering::Acquire)
    }

    /// Reserves `bytes` for `what` (named in the error when they do not fit), held until
    /// the reservation is dropped.
    pub fn reserve(&self, bytes: u64, what: impl Into<String>) -> Result<Reservation> {
        let mut reservation = Reservation {
            budget: self.clone(),
            bytes: 0,
            what: what.into(),
        };
        reservation.grow(bytes)?;
        Ok(reservation)
    }

    fn try_take(&self, bytes: u64) -> std::result::Result<(), u64> {
        let s = &self.shared;
        let taken = s
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&after| after <= s.limit)
            })
            .map_err(|used| s.limit.saturating_sub(used))?;
        s.peak.fetch_max(taken + bytes, Ordering::AcqRel);
        Ok(())
    }

    fn give_back(&self, bytes: u64) {
        self.shared.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// Bytes held from a [`MemoryBudget`]; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: MemoryBudget,
    bytes: u64,
    what: String,
}

impl Reservation {
    /// Bytes held.
    pub fn size(&self) -> u64 {
        self.bytes
    }

    /// Holds `more` bytes besides; fails with [`Error::OverBudget`] (holding what it held)
    /// when they do not fit.
    pub fn grow(&mut self, more: u64) -> Result<()> {
        self.budget
            .try_take(more)
            .map_err(|available| Error::OverBudget {
                what: self.what.clone(),
                need: self.bytes.saturating_add(more),
                available: available.saturating_add(self.bytes),
                limit: self.budget.limit(),
            })?;
        self.bytes += more;
        Ok(())
    }

    /// Holds `bytes` in all, growing or giving back the difference.
    pub fn resize(&mut self, bytes: u64) -> Result<()> {
        if bytes >= self.bytes {
            self.grow(bytes - self.bytes)
        } else {
            self.budget.give_back(self.bytes - bytes);
            self.bytes = bytes;
            Ok(())
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

/// The process's peak resident set size in bytes (`VmHWM` in `/proc/self/status`), what a
/// memory limit is checked against; `None` where the kernel does not report it.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A control group the user made, that this process has joined (paper 1 bounds its runs'
/// memory with cgroups v2; only `lidx experiment unsorted` creates them, in lidx-bench).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup {
    /// The cgroup's directory.
    pub dir: std::path::PathBuf,
    /// 2 (`memory.max`) or 1 (`memory.limit_in_bytes`).
    pub version: u8,
    /// Its memory limit in bytes; `None` when it has none.
    pub limit: Option<u64>,
}

/// Moves this process into the cgroup at `dir` (writes its pid to `cgroup.procs`) and reads
/// the cgroup's memory limit: `memory.max` (v2) or `memory.limit_in_bytes` (v1, where
/// values of 2^62 and above mean none).
pub fn enter_cgroup(dir: &std::path::Path) -> Result<Cgroup> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let (version, limit) = match (read("memory.max"), read("memory.limit_in_bytes")) {
        (Some(v2), _) => (2, v2.trim().parse::<u64>().ok()),
        (None, Some(v1)) => (1, v1.trim().parse::<u64>().ok().filter(|&l| l < 1 << 62)),
        (None, None) => {
            return Err(Error::param(
                "cgroup",
                format!(
                    "{}: not a cgroup with a memory controller (it has neither memory.max nor memory.limit_in_bytes)",
                    dir.display()
                ),
            ));
        }
    };
    let procs = dir.join("cgroup.procs");
    std::fs::write(&procs, format!("{}\n", std::process::id()))
        .map_err(|e| Error::io(&procs, "join the cgroup through", e))?;
    Ok(Cgroup {
        dir: dir.to_path_buf(),
        version,
        limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_count_against_the_limit_until_dropped() {
        let budget = MemoryBudget::new(100);
        let a = budget.reserve(60, "a").unwrap();
        let err = budget.reserve(50, "the second").unwrap_err();
        assert!(
            matches!(
                &err,
                Error::OverBudget { need: 50, available: 40, limit: 100, what } if what == "the second"
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("the second would take 50 bytes"),
            "{err}"
        );
        let mut b = budget.reserve(40, "b").unwrap();
        assert_eq!((budget.used(), budget.available()), (100, 0));
        drop(a);
        assert_eq!(budget.used(), 40);
        b.grow(60).unwrap();
        assert!(b.grow(1).is_err());
        assert_eq!(b.size(), 100, "a refused growth keeps what was held");
        b.resize(10).unwrap();
        assert_eq!(budget.used(), 10);
        drop(b);
        assert_eq!((budget.used(), budget.peak()), (0, 100));
    }

    #[test]
    fn clones_share_one_count_across_threads() {
        let budget = MemoryBudget::new(1000);
        std::thread::scope(|s| {
            for _ in 0..4 {
                let budget = budget.clone();
                s.spawn(move || {
                    for _ in 0..1000 {
                        if let Ok(r) = budget.reserve(300, "t") {
                            assert!(budget.used() <= 1000);
                            drop(r);
                        }
                    }
                });
            }
        });
        assert_eq!(budget.used(), 0);
        assert!(budget.peak() <= 1000 && budget.peak() >= 300);
        let unlimited = MemoryBudget::unlimited();
        let _huge = unlimited.reserve(u64::MAX - 1, "huge").unwrap();
        assert!(
            unlimited.reserve(2, "more").is_err(),
            "no overflow past u64::MAX"
        );
    }
}
