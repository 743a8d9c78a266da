//! Paper 3's workloads (GRE, section 3.3, section 4.4, section 6.3 and App. E), as a bulk
//! load and a sequence of operations, seeded.
//!
//! The key set is shuffled first. Then:
//! - **read-only**: bulk-load every key, then look up keys drawn uniformly from them;
//! - **read-intensive / balanced / write-heavy / write-only**: bulk-load half of the keys,
//!   then insert the other half in their shuffled order, each insert preceded by lookups
//!   (of keys present at the time, drawn uniformly) so that writes are 20%, 50%, 80% or
//!   100% of the operations;
//! - **delete-heavy**: bulk-load every key, then remove half of them in shuffled order,
//!   with lookups of keys still present making up 20% of the operations (section 4.4);
//! - **scan**: bulk-load every key, then scans of `scan_len` entries from keys drawn
//!   uniformly (section 6.3);
//! - **ycsb-a / ycsb-b / ycsb-c**: bulk-load every key, then lookups and updates (50/50,
//!   95/5, 100/0) of keys drawn by a Zipf distribution of exponent 0.99 over a random
//!   order of the keys (App. E).
//! - **duplicates** (App. B): every key repeated 1 + a geometric number of times (2 on
//!   average, as keys repeat in SOSD's wiki set), then balanced over the copies; the
//!   contract is a map, so a copy inserted where its key is present updates the payload.
//! - **shift** (section 6.2, [`plan_shift`]): bulk-load one key set X, then a balanced
//!   workload that inserts another, Y, and looks up keys of X, both rescaled onto one
//!   domain.
//!
//! Payloads are the key's position in the sorted key set (updates write a new one).
//! `ops` caps the operations; `None` runs the workload to its end (read-only, scan and
//! YCSB: as many operations as keys).

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::{Error, Result};

/// One operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Look `key` up.
    Get(u64),
    /// Insert (or update) `key` with a payload.
    Insert(u64, u64),
    /// Remove `key`.
    Remove(u64),
    /// Read `len` entries from `key` on.
    Scan(u64, usize),
}

impl Op {
    /// Where the operation counts in [`Plan::mix`]: lookups 0, inserts 1, removals 2,
    /// scans 3.
    pub fn mix_index(self) -> usize {
        match self {
            Op::Get(_) => 0,
            Op::Insert(..) => 1,
            Op::Remove(_) => 2,
            Op::Scan(..) => 3,
        }
    }
}

/// A named workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Bulk-load all, then lookups.
    ReadOnly,
    /// Bulk-load half, then 80% lookups and 20% inserts of the rest.
    ReadIntensive,
    /// Bulk-load half, then 50% lookups and 50% inserts.
    Balanced,
    /// Bulk-load half, then 20% lookups and 80% inserts.
    WriteHeavy,
    /// Bulk-load half, then inserts of the rest.
    WriteOnly,
    /// Bulk-load all, then 80% lookups and 20% removals until half are gone (paper 3,
    /// Fig. 7, as are the three below).
    DeleteIntensive,
    /// Bulk-load all, then 50% lookups and 50% removals until half are gone.
    DeleteBalanced,
    /// Bulk-load all, then 20% lookups and 80% removals until half are gone.
    DeleteHeavy,
    /// Bulk-load all, then removals until half are gone.
    DeleteOnly,
    /// Bulk-load all, then range scans.
    Scan,
    /// YCSB A: 50% lookups, 50% updates, Zipf 0.99.
    YcsbA,
    /// YCSB B: 95% lookups, 5% updates, Zipf 0.99.
    YcsbB,
    /// YCSB C: lookups only, Zipf 0.99.
    YcsbC,
    /// Bulk-load one key set, then balanced inserts of another ([`plan_shift`]).
    Shift,
    /// Keys repeated as in a wiki-like set (App. B), then balanced: half of the copies
    /// bulk-loaded, the other half inserted (an insert of a present key updates it).
    Duplicates,
}

crate::names::name_table!(Workload, "workload", [
    ReadOnly => "read-only",
    ReadIntensive => "read-intensive",
    Balanced => "balanced",
    WriteHeavy => "write-heavy",
    WriteOnly => "write-only",
    DeleteIntensive => "delete-intensive",
    DeleteBalanced => "delete-balanced",
    DeleteHeavy => "delete-heavy",
    DeleteOnly => "delete-only",
    Scan => "scan",
    YcsbA => "ycsb-a",
    YcsbB => "ycsb-b",
    YcsbC => "ycsb-c",
    Shift => "shift",
    Duplicates => "duplicates",
]);

/// A workload made concrete: what to bulk-load (sorted) and the operations after it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Entries for the bulk load, sorted by key.
    pub bulk: Vec<(u64, u64)>,
    /// The operations, in order.
    pub ops: Vec<Op>,
}

impl Plan {
    /// The most entries any scan of the plan asks for (0 without scans).
    pub fn max_scan(&self) -> usize {
        self.ops
            .iter()
            .map(|op| match op {
                Op::Scan(_, n) => *n,
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// How many operations of each kind: lookups, inserts, removals, scans.
    pub fn mix(&self) -> [usize; 4] {
        let mut m = [0; 4];
        for op in &self.ops {
            m[op.mix_index()] += 1;
        }
        m
    }
}

/// The magic at the start of a plan file ([`Plan::write`]).
pub const PLAN_MAGIC: &[u8; 8] = b"LIDXPLAN";

impl Plan {
    /// Writes the plan to `path` (temporary file, renamed into place) for a program outside
    /// lidx to replay, so that it runs exactly the operations lidx runs: the C++ originals'
    /// drivers read it. All integers little-endian:
    ///
    /// | bytes | field |
    /// |---|---|
    /// | 8 | [`PLAN_MAGIC`] |
    /// | 4 | version, 1 |
    /// | 4 | 0 |
    /// | 8 | `B`, entries of the bulk load |
    /// | 8 | `M`, operations |
    /// | 16 × B | (key, payload), sorted by key, a key possibly more than once (the last payload wins) |
    /// | 24 × M | (tag, key, argument): tag 0 lookup, 1 insert (argument: payload), 2 removal, 3 scan (argument: entries) |
    pub fn write(&self, path: &std::path::Path) -> Result<()> {
        let mut out = crate::files::AtomicFile::create(path)?;
        let mut header = Vec::with_capacity(32);
        header.extend_from_slice(PLAN_MAGIC);
        header.extend_from_slice(&1u32.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&(self.bulk.len() as u64).to_le_bytes());
        header.extend_from_slice(&(self.ops.len() as u64).to_le_bytes());
        out.write_all(&header)?;
        let mut buf = Vec::with_capacity(1 << 16);
        for &(k, v) in &self.bulk {
            buf.extend_from_slice(&k.to_le_bytes());
            buf.extend_from_slice(&v.to_le_bytes());
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        for &op in &self.ops {
            let (tag, key, arg) = match op {
                Op::Get(k) => (0u64, k, 0u64),
                Op::Insert(k, v) => (1, k, v),
                Op::Remove(k) => (2, k, 0),
                Op::Scan(k, n) => (3, k, n as u64),
            };
            for x in [tag, key, arg] {
                buf.extend_from_slice(&x.to_le_bytes());
            }
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        out.write_all(&buf)?;
        out.finish()
    }
}

/// The plan of `workload` over `keys` (sorted; duplicates allowed, as a key set may
/// hold them), at most `ops` operations, scans of `scan_len`, seeded by `seed`.
pub fn plan(
    workload: Workload,
    keys: &[u64],
    ops: Option<usize>,
    scan_len: usize,
    seed: u64,
) -> Result<Plan> {
    if keys.is_empty() {
        return Err(Error::param("keys", "a workload needs at least one key"));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    // (key, position in the sorted set), shuffled.
    let mut shuffled: Vec<(u64, u64)> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i as u64))
        .collect();
    if workload == Workload::Duplicates {
        shuffled = with_copies(&shuffled, &mut rng);
    }
    shuffled.shuffle(&mut rng);
    let sorted = |mut v: Vec<(u64, u64)>| {
        v.sort_by_key(|e| e.0);
        v
    };
    let n = shuffled.len();
    let cap = |len: usize| ops.map_or(len, |o| o.min(len));
    let plan = match workload {
        Workload::Shift => {
            return Err(Error::param(
                "workload",
                "shift inserts a second key set: plan it with plan_shift",
            ));
        }
        Workload::ReadOnly => {
            let count = cap(n);
            let ops = (0..count)
                .map(|_| Op::Get(shuffled[rng.random_range(0..n)].0))
                .collect();
            Plan {
                bulk: sorted(shuffled),
                ops,
            }
        }
        Workload::Scan => {
            let count = cap(n);
            let ops = (0..count)
                .map(|_| Op::Scan(shuffled[rng.random_range(0..n)].0, scan_len))
                .collect();
            Plan {
                bulk: sorted(shuffled),
                ops,
            }
        }
        Workload::ReadIntensive
        | Workload::Balanced
        | Workload::WriteHeavy
        | Workload::WriteOnly
        | Workload::Duplicates => {
            let writes = match workload {
                Workload::ReadIntensive => 0.2,
                Workload::Balanced | Workload::Duplicates => 0.5,
                Workload::WriteHeavy => 0.8,
                _ => 1.0,
            };
            let (loaded, rest) = shuffled.split_at(n / 2);
            let mut present: Vec<u64> = loaded.iter().map(|e| e.0).collect();
            let mut out = Vec::new();
            let limit = ops.unwrap_or(usize::MAX);
            let mut inserted = 0usize;
            while out.len() < limit && inserted < rest.len() {
                // Lookups owed so far: writes / (writes + reads) of the operations.
                let reads_owed = ((inserted + 1) as f64 * (1.0 - writes) / writes).round() as usize;
                let reads_done = out.len() - inserted;
                if reads_done < reads_owed && !present.is_empty() {
                    out.push(Op::Get(present[rng.random_range(0..present.len())]));
                } else {
                    let (k, v) = rest[inserted];
                    out.push(Op::Insert(k, v));
                    present.push(k);
                    inserted += 1;
                }
            }
            Plan {
                bulk: sorted(loaded.to_vec()),
                ops: out,
            }
        }
        Workload::DeleteIntensive
        | Workload::DeleteBalanced
        | Workload::DeleteHeavy
        | Workload::DeleteOnly => {
            let deletes = match workload {
                Workload::DeleteIntensive => 0.2,
                Workload::DeleteBalanced => 0.5,
                Workload::DeleteHeavy => 0.8,
                _ => 1.0,
            };
            // Lookups ask for the keys that stay; half of the keys are removed.
            let victims: Vec<u64> = shuffled[..n / 2].iter().map(|e| e.0).collect();
            let alive: Vec<u64> = shuffled[n / 2..].iter().map(|e| e.0).collect();
            let mut out = Vec::new();
            let limit = ops.unwrap_or(usize::MAX);
            let mut removed = 0usize;
            while out.len() < limit && removed < victims.len() {
                let reads_owed =
                    ((removed + 1) as f64 * (1.0 - deletes) / deletes).round() as usize;
                if out.len() - removed < reads_owed && !alive.is_empty() {
                    out.push(Op::Get(alive[rng.random_range(0..alive.len())]));
                } else {
                    out.push(Op::Remove(victims[removed]));
                    removed += 1;
                }
            }
            Plan {
                bulk: sorted(shuffled),
                ops: out,
            }
        }
        Workload::YcsbA | Workload::YcsbB | Workload::YcsbC => {
            let updates = match workload {
                Workload::YcsbA => 0.5,
                Workload::YcsbB => 0.05,
                _ => 0.0,
            };
            let zipf =
                Zipf::new(n as f64, 0.99).map_err(|e| Error::param("zipf", e.to_string()))?;
            let count = cap(n);
            let ops = (0..count)
                .map(|_| {
                    // Zipf ranks from 1; the shuffle makes rank r a random key.
                    let rank = (zipf.sample(&mut rng) as usize).clamp(1, n) - 1;
                    let (k, v) = shuffled[rank];
                    if rng.random_bool(updates) {
                        Op::Insert(k, v ^ 1)
                    } else {
                        Op::Get(k)
                    }
                })
                .collect();
            Plan {
                bulk: sorted(shuffled),
                ops,
            }
        }
    };
    Ok(plan)
}

/// Most copies of one key in the duplicates workload.
const MAX_COPIES: u64 = 16;

/// Each entry of `entries` repeated as keys repeat in a wiki-like set: 1 + a geometric
/// number of extra copies (each further copy with probability 1/2, at most
/// [`MAX_COPIES`] in all; 2 on average), each copy with a payload of its own.
fn with_copies(entries: &[(u64, u64)], rng: &mut Xoshiro256PlusPlus) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(entries.len() * 2);
    for &(k, v) in entries {
        out.push((k, v));
        let mut copy = 1;
        while copy < MAX_COPIES && rng.random_bool(0.5) {
            out.push((k, v ^ (copy << 48)));
            copy += 1;
        }
    }
    out
}

/// The domain both key sets of a shift are rescaled onto: `0 ..= 2^48`.
const SHIFT_DOMAIN: f64 = (1u64 << 48) as f64;

/// `keys` (sorted) mapped linearly from their own range onto `0 ..= 2^48`, still sorted.
pub fn rescale(keys: &[u64]) -> Vec<u64> {
    let (Some(&lo), Some(&hi)) = (keys.first(), keys.last()) else {
        return Vec::new();
    };
    let span = (hi - lo).max(1) as f64;
    keys.iter()
        .map(|&k| ((k - lo) as f64 / span * SHIFT_DOMAIN) as u64)
        .collect()
}

/// Paper 3's distribution shift (section 6.2): `loaded` (sorted) rescaled and bulk-loaded,
/// then `inserted` (sorted) rescaled, shuffled and inserted, each insert beside a lookup
/// of a loaded key (50/50, the balanced mix), at most `ops` operations.
pub fn plan_shift(loaded: &[u64], inserted: &[u64], ops: Option<usize>, seed: u64) -> Result<Plan> {
    if loaded.is_empty() || inserted.is_empty() {
        return Err(Error::param("keys", "a shift needs keys on both sides"));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let x = rescale(loaded);
    let mut y: Vec<(u64, u64)> = rescale(inserted)
        .into_iter()
        .enumerate()
        .map(|(i, k)| (k, i as u64))
        .collect();
    y.shuffle(&mut rng);
    let limit = ops.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    for &(k, v) in &y {
        if out.len() >= limit {
            break;
        }
        out.push(Op::Get(x[rng.random_range(0..x.len())]));
        if out.len() < limit {
            out.push(Op::Insert(k, v));
        }
    }
    Ok(Plan {
        bulk: x.iter().enumerate().map(|(i, &k)| (k, i as u64)).collect(),
        ops: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_file_holds_the_bulk_load_and_every_operation_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.plan");
        let p = Plan {
            bulk: vec![(1, 10), (1, 11), (5, 50)],
            ops: vec![Op::Get(5), Op::Insert(7, 70), Op::Remove(1), Op::Scan(0, 3)],
        };
        p.write(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        assert_eq!(&bytes[..8], PLAN_MAGIC);
        assert_eq!(&bytes[8..16], &[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!((word(16), word(24)), (3, 4));
        assert_eq!(bytes.len(), 32 + 3 * 16 + 4 * 24);
        let bulk: Vec<(u64, u64)> = (0..3)
            .map(|i| (word(32 + 16 * i), word(40 + 16 * i)))
            .collect();
        assert_eq!(bulk, p.bulk);
        let ops: Vec<[u64; 3]> = (0..4)
            .map(|i| {
                let at = 32 + 48 + 24 * i;
                [word(at), word(at + 8), word(at + 16)]
            })
            .collect();
        assert_eq!(ops, [[0, 5, 0], [1, 7, 70], [2, 1, 0], [3, 0, 3]]);
    }

    fn keys(n: u64) -> Vec<u64> {
        (0..n).map(|i| i * 3).collect()
    }

    #[test]
    fn mixes_have_their_write_share_and_insert_exactly_the_other_half() {
        let k = keys(10_000);
        for (w, share) in [
            (Workload::ReadIntensive, 0.2),
            (Workload::Balanced, 0.5),
            (Workload::WriteHeavy, 0.8),
            (Workload::WriteOnly, 1.0),
        ] {
            let p = plan(w, &k, None, 100, 7).unwrap();
            assert_eq!(p.bulk.len(), 5000);
            assert!(p.bulk.windows(2).all(|x| x[0].0 <= x[1].0));
            let [gets, inserts, removes, scans] = p.mix();
            assert_eq!((inserts, removes, scans), (5000, 0, 0));
            let got = inserts as f64 / (gets + inserts) as f64;
            assert!((got - share).abs() < 0.01, "{w:?}: {got}");
            // Every key once: bulk-loaded or inserted.
            let mut all: Vec<u64> = p.bulk.iter().map(|e| e.0).collect();
            all.extend(p.ops.iter().filter_map(|o| match o {
                Op::Insert(k, _) => Some(*k),
                _ => None,
            }));
            all.sort_unstable();
            assert_eq!(all, k);
        }
    }

    #[test]
    fn lookups_ask_for_keys_present_at_the_time_and_plans_repeat_by_seed() {
        let k = keys(2000);
        for w in Workload::ALL.into_iter().filter(|&w| w != Workload::Shift) {
            let p = plan(w, &k, Some(3000), 10, 11).unwrap();
            assert_eq!(p, plan(w, &k, Some(3000), 10, 11).unwrap());
            assert!(p.ops.len() <= 3000);
            let mut present: std::collections::BTreeSet<u64> = p.bulk.iter().map(|e| e.0).collect();
            for op in &p.ops {
                match *op {
                    Op::Get(key) => assert!(present.contains(&key), "{w:?}: {key}"),
                    Op::Insert(key, _) => {
                        present.insert(key);
                    }
                    Op::Remove(key) => assert!(present.remove(&key), "{w:?}: {key}"),
                    Op::Scan(_, len) => assert_eq!(len, 10),
                }
            }
        }
        for (w, share) in [
            (Workload::DeleteIntensive, 0.2),
            (Workload::DeleteBalanced, 0.5),
            (Workload::DeleteHeavy, 0.8),
            (Workload::DeleteOnly, 1.0),
        ] {
            let p = plan(w, &k, None, 10, 3).unwrap();
            let [gets, inserts, removes, scans] = p.mix();
            assert_eq!((p.bulk.len(), inserts, removes, scans), (2000, 0, 1000, 0));
            let got = removes as f64 / (gets + removes) as f64;
            assert!((got - share).abs() < 0.01, "{w:?}: {got}");
        }
        assert!(plan(Workload::ReadOnly, &[], None, 1, 0).is_err());
        assert!(plan(Workload::Shift, &k, None, 1, 0).is_err());
    }

    #[test]
    fn duplicates_repeat_keys_twice_on_average_and_insert_copies_of_present_keys() {
        let k = keys(20_000);
        let p = plan(Workload::Duplicates, &k, None, 1, 9).unwrap();
        let [gets, inserts, removes, scans] = p.mix();
        let copies = p.bulk.len() + inserts;
        assert!((copies as f64 / 20_000.0 - 2.0).abs() < 0.05, "{copies}");
        assert_eq!((removes, scans), (0, 0));
        assert!((gets as f64 / (gets + inserts) as f64 - 0.5).abs() < 0.01);
        // The bulk load holds keys more than once, and some inserts hit a present key.
        assert!(p.bulk.windows(2).any(|w| w[0].0 == w[1].0));
        let present: std::collections::BTreeSet<u64> = p.bulk.iter().map(|e| e.0).collect();
        let updates = p
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Insert(key, _) if present.contains(key)))
            .count();
        assert!(updates > inserts / 4, "{updates} of {inserts}");
        // Every key of the set is among the copies, and no other.
        let mut all: Vec<u64> = p.bulk.iter().map(|e| e.0).collect();
        all.extend(p.ops.iter().filter_map(|o| match o {
            Op::Insert(k, _) => Some(*k),
            _ => None,
        }));
        all.sort_unstable();
        all.dedup();
        assert_eq!(all, k);
    }

    #[test]
    fn ycsb_keys_are_skewed() {
        let k = keys(10_000);
        let p = plan(Workload::YcsbC, &k, None, 1, 5).unwrap();
        let mut counts = std::collections::HashMap::new();
        for op in &p.ops {
            if let Op::Get(key) = op {
                *counts.entry(*key).or_insert(0usize) += 1;
            }
        }
        let top = counts.values().copied().max().unwrap();
        // Zipf 0.99 over 10,000 keys: the hottest key takes about 10% of the lookups.
        assert!(top > 500, "{top}");
        let [_, updates, _, _] = plan(Workload::YcsbA, &k, None, 1, 5).unwrap().mix();
        assert!((updates as f64 / 10_000.0 - 0.5).abs() < 0.03);
    }

    #[test]
    fn a_shift_loads_one_set_and_inserts_the_other_on_one_domain() {
        let x: Vec<u64> = (0..1000u64).map(|i| i * i).collect();
        let y: Vec<u64> = (0..1000u64).map(|i| 1_000_000_000 + i * 7).collect();
        let p = plan_shift(&x, &y, None, 3).unwrap();
        assert_eq!(p.bulk.len(), 1000);
        assert_eq!(p.bulk.first().map(|e| e.0), Some(0));
        assert_eq!(p.bulk.last().map(|e| e.0), Some(1 << 48));
        let [gets, inserts, _, _] = p.mix();
        assert_eq!((gets, inserts), (1000, 1000));
        let inserted: Vec<u64> = p
            .ops
            .iter()
            .filter_map(|o| match o {
                Op::Insert(k, _) => Some(*k),
                _ => None,
            })
            .collect();
        assert_eq!(inserted.iter().min(), Some(&0));
        assert_eq!(inserted.iter().max(), Some(&(1 << 48)));
        assert!(plan_shift(&x, &[], None, 3).is_err());
    }
}
