//! The rows of R(p_r, n_r) and S(p_s, n_s) as paper 5 generates them (section 4,
//! "Datasets" and Table 5); how a row is stored is [`super::rows`]'.
//!
//! **Generation** ([`Workload`]), seeded, batch by batch (a load is batch 0, each update
//! batch the next): S gets `rows` rows and R `rows / ratio`.
//! - S's primary keys are distinct values, each written `dup_pk` (c) times in a row of the
//!   batch, every copy with an attribute of its own: the later copies overwrite, as the
//!   paper's primary-key duplication does (each table keeps about 1/c of its rows live).
//! - S's attributes are `rows / dup_attr` distinct values, a subset of S's primary keys,
//!   drawn uniformly or, with skew θ > 0, by a Zipf distribution of exponent θ over them
//!   (Table 5's Unif and Zipf). Each is therefore also a key of S: the `P` family (R's
//!   attribute = S's key) and the others (R's attribute = S's attribute) both find matches
//!   in the same tables.
//! - R's attributes, in runs of `dup_attr` equal ones (d), come with probability
//!   `match_rate` (ε) from S's attribute values and otherwise are values S does not hold.
//! - The rows of a batch are written in a random order.
//! - Or the attributes are given, read from SOSD key files (see [`super::keys`]): then they
//!   bring their own duplication, matching rate and skew.

use std::collections::{HashMap, HashSet, VecDeque};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::keys::GivenAttrs;
use super::rows::{KEY_LIMIT, MIN_ENTRY};

/// A change to a data table: a row written (inserted, or overwriting its key), or removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Write row (`pk`, `attr`).
    Put {
        /// Primary key.
        pk: u64,
        /// Join attribute.
        attr: u64,
    },
    /// Remove the row of `pk` (nothing where there is none).
    Delete {
        /// Primary key.
        pk: u64,
    },
}

impl Change {
    /// The primary key it changes.
    pub fn pk(&self) -> u64 {
        match self {
            Change::Put { pk, .. } | Change::Delete { pk } => *pk,
        }
    }
}

/// The changes of one batch to each table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Changes to R, in order.
    pub r: Vec<Change>,
    /// Changes to S, in order.
    pub s: Vec<Change>,
}

impl Batch {
    /// The batch cut into `parts` consecutive batches of about equal size, R's and S's
    /// changes each in their order (paper 5's join-frequency experiments: one data set
    /// arriving in F subsets, a join after each). `parts` of 0 counts as 1.
    pub fn split(&self, parts: usize) -> Vec<Batch> {
        let parts = parts.max(1);
        let chunk = |changes: &[Change], i: usize| -> Vec<Change> {
            let size = changes.len().div_ceil(parts);
            changes
                .chunks(size.max(1))
                .nth(i)
                .map_or_else(Vec::new, <[Change]>::to_vec)
        };
        (0..parts)
            .map(|i| Batch {
                r: chunk(&self.r, i),
                s: chunk(&self.s, i),
            })
            .collect()
    }
}

/// How rows are generated (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Rows of S per batch.
    pub rows: u64,
    /// |S| / |R|: R gets `rows / ratio` rows per batch.
    pub ratio: f64,
    /// Bytes of an entry (key and value), at least 20.
    pub entry_size: usize,
    /// ε: the share of R's attributes drawn from S's.
    pub match_rate: f64,
    /// c: times each primary key is written in a batch.
    pub dup_pk: u32,
    /// d: times each attribute value is repeated.
    pub dup_attr: u32,
    /// θ: 0 for uniform attributes, above 0 for a Zipf distribution of that exponent.
    pub skew: f64,
    /// The seed of batch 0; batch b uses a generator seeded from it and b.
    pub seed: u64,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            rows: 100_000,
            ratio: 1.0,
            entry_size: 64,
            match_rate: 1.0,
            dup_pk: 1,
            dup_attr: 1,
            skew: 0.0,
            seed: 42,
        }
    }
}

impl Workload {
    /// Fails naming the first parameter out of range.
    pub fn check(&self) -> lidx::Result<()> {
        let bad = |name, why: String| Err(lidx::Error::param(name, why));
        if self.rows == 0 || self.rows > KEY_LIMIT / 4 {
            return bad("rows", format!("{} is not in 1 ..= 2.5e9", self.rows));
        }
        if !(self.ratio > 0.0 && self.ratio <= 1e6) || self.r_rows() == 0 {
            return bad(
                "ratio",
                format!("{} leaves R with no rows or is not positive", self.ratio),
            );
        }
        if !(MIN_ENTRY..=(1 << 20)).contains(&self.entry_size) {
            return bad(
                "entry size",
                format!("{} bytes is not in {MIN_ENTRY} ..= 1 MiB", self.entry_size),
            );
        }
        if !(0.0..=1.0).contains(&self.match_rate) {
            return bad(
                "match rate",
                format!("{} is not in 0 ..= 1", self.match_rate),
            );
        }
        if self.dup_pk == 0 || self.dup_attr == 0 {
            return bad("duplication", "c and d are at least 1".to_string());
        }
        if u64::from(self.dup_pk.max(self.dup_attr)) > self.rows {
            return bad(
                "duplication",
                format!(
                    "c {} and d {} must not exceed the rows per batch, {}",
                    self.dup_pk, self.dup_attr, self.rows
                ),
            );
        }
        if !(0.0..=5.0).contains(&self.skew) {
            return bad("skew", format!("{} is not in 0 ..= 5", self.skew));
        }
        Ok(())
    }

    /// Rows of R per batch.
    pub fn r_rows(&self) -> u64 {
        (self.rows as f64 / self.ratio).round() as u64
    }

    /// The rows of batch `b`, in the order they are written.
    pub fn batch(&self, b: u64) -> Batch {
        self.batch_with(b, None)
    }

    /// The rows of batch `b`, their join attributes drawn as the workload says or, with
    /// `given`, taken in order from it (S's [`rows`](Self::rows) from `given.s`, R's
    /// [`r_rows`](Self::r_rows) from `given.r`, each cycled where shorter). Given
    /// attributes bring their own duplication, matching and skew: `dup_attr`,
    /// `match_rate` and `skew` are not used, and S's primary keys include every distinct
    /// attribute S holds that they have room for (so the `P` family, R's attribute
    /// against S's key, finds matches too).
    pub fn batch_with(&self, b: u64, given: Option<&GivenAttrs>) -> Batch {
        let mut rng =
            Xoshiro256PlusPlus::seed_from_u64(self.seed ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let r_rows = self.r_rows() as usize;
        let (s_keys, mut draw_s): (Vec<u64>, Box<AttrDraw<'_>>) = match given {
            None => {
                let (keys, attrs) = self.s_values(&mut rng);
                (keys, Box::new(self.attr_sampler(attrs)))
            }
            Some(g) => {
                let keys = self.keys_holding(&g.s, &mut rng);
                let mut next = g.s.iter().copied().cycle();
                (keys, Box::new(move |_: &mut _| next.next().unwrap_or(0)))
            }
        };
        let mut s = Vec::with_capacity(self.rows as usize);
        for &pk in &s_keys {
            for _ in 0..self.dup_pk {
                s.push(Change::Put {
                    pk,
                    attr: draw_s(&mut rng),
                });
            }
        }
        s.truncate(self.rows as usize);
        let mut r_attrs = match given {
            None => {
                let held: HashSet<u64> = s_keys.iter().copied().collect();
                let mut r_attrs = Vec::with_capacity(r_rows);
                while r_attrs.len() < r_rows {
                    let attr = if rng.random_bool(self.match_rate) {
                        draw_s(&mut rng)
                    } else {
                        fresh(&mut rng, &held)
                    };
                    for _ in 0..self.dup_attr {
                        r_attrs.push(attr);
                    }
                }
                r_attrs.truncate(r_rows);
                r_attrs.shuffle(&mut rng);
                r_attrs
            }
            // Popped from the back below: reversed, R's rows take them in order.
            Some(g) => {
                let mut r_attrs: Vec<u64> = g.r.iter().copied().cycle().take(r_rows).collect();
                r_attrs.reverse();
                r_attrs
            }
        };
        let r_keys = distinct_values(
            &mut rng,
            r_rows.div_ceil(self.dup_pk as usize),
            &HashSet::new(),
        );
        let mut r = Vec::with_capacity(r_rows);
        'keys: for &pk in &r_keys {
            for _ in 0..self.dup_pk {
                let Some(attr) = r_attrs.pop() else {
                    break 'keys;
                };
                r.push(Change::Put { pk, attr });
            }
        }
        shuffle_keeping_copies_in_order(&mut r, &mut rng);
        shuffle_keeping_copies_in_order(&mut s, &mut rng);
        Batch { r, s }
    }

    /// S's distinct primary keys for given attributes: the distinct attributes in a random
    /// order, as many as there is room for, then fresh values.
    fn keys_holding(&self, attrs: &[u64], rng: &mut Xoshiro256PlusPlus) -> Vec<u64> {
        let count = (self.rows as usize).div_ceil(self.dup_pk as usize);
        let mut seen = HashSet::with_capacity(count);
        let mut keys: Vec<u64> = attrs.iter().copied().filter(|a| seen.insert(*a)).collect();
        keys.shuffle(rng);
        keys.truncate(count);
        let fresh = distinct_values(rng, count - keys.len(), &seen);
        keys.extend(fresh);
        keys
    }

    /// S's distinct primary keys, and its distinct attribute values (a subset of them).
    fn s_values(&self, rng: &mut Xoshiro256PlusPlus) -> (Vec<u64>, Vec<u64>) {
        let keys = distinct_values(
            rng,
            (self.rows as usize).div_ceil(self.dup_pk as usize),
            &HashSet::new(),
        );
        let attrs = (self.rows as usize)
            .div_ceil(self.dup_attr as usize)
            .min(keys.len())
            .max(1);
        let mut subset = keys.clone();
        subset.shuffle(rng);
        subset.truncate(attrs);
        (keys, subset)
    }

    /// Draws S's attributes: uniformly from `values`, or Zipf-distributed over them with
    /// the values taken in a random order (the most frequent one is not the smallest).
    fn attr_sampler(&self, values: Vec<u64>) -> impl FnMut(&mut Xoshiro256PlusPlus) -> u64 {
        let zipf = (self.skew > 0.0)
            .then(|| Zipf::new(values.len() as f64, self.skew).ok())
            .flatten();
        move |rng| match &zipf {
            Some(z) => {
                let rank = (z.sample(rng) as usize).saturating_sub(1);
                values[rank.min(values.len() - 1)]
            }
            None => values[rng.random_range(0..values.len())],
        }
    }
}

/// Draws S's next attribute.
type AttrDraw<'a> = dyn FnMut(&mut Xoshiro256PlusPlus) -> u64 + 'a;

/// `n` distinct values below [`KEY_LIMIT`] that are not in `avoid`.
fn distinct_values(rng: &mut Xoshiro256PlusPlus, n: usize, avoid: &HashSet<u64>) -> Vec<u64> {
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let v = rng.random_range(0..KEY_LIMIT);
        if !avoid.contains(&v) && seen.insert(v) {
            out.push(v);
        }
    }
    out
}

/// A value below [`KEY_LIMIT`] that is not in `held`.
fn fresh(rng: &mut Xoshiro256PlusPlus, held: &HashSet<u64>) -> u64 {
    loop {
        let v = rng.random_range(0..KEY_LIMIT);
        if !held.contains(&v) {
            return v;
        }
    }
}

/// Shuffles `changes`, keeping the copies of each primary key in their order (so the last
/// copy generated is the one that stays).
fn shuffle_keeping_copies_in_order(changes: &mut [Change], rng: &mut Xoshiro256PlusPlus) {
    let mut copies: HashMap<u64, VecDeque<Change>> = HashMap::new();
    for c in changes.iter() {
        copies.entry(c.pk()).or_default().push_back(*c);
    }
    changes.shuffle(rng);
    // Each slot a key's copy landed in takes that key's next copy in generation order.
    for slot in changes.iter_mut() {
        if let Some(c) = copies.get_mut(&slot.pk()).and_then(VecDeque::pop_front) {
            *slot = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_splits_into_parts_that_concatenate_back() {
        let b = Workload {
            rows: 1001,
            ratio: 3.0,
            dup_pk: 2,
            ..Workload::default()
        }
        .batch(0);
        for parts in [0, 1, 3, 7, 2000] {
            let split = b.split(parts);
            assert_eq!(split.len(), parts.max(1));
            let r: Vec<Change> = split.iter().flat_map(|p| p.r.clone()).collect();
            let s: Vec<Change> = split.iter().flat_map(|p| p.s.clone()).collect();
            assert_eq!((r, s), (b.r.clone(), b.s.clone()), "{parts} parts");
            let sizes: Vec<usize> = split.iter().map(|p| p.s.len()).collect();
            assert!(sizes.iter().max() <= Some(&b.s.len().div_ceil(parts.max(1))));
        }
    }
}
