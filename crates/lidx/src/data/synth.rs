//! Seeded synthetic key sets (paper 1, section 5.1, Table 1; SOSD's synthetic sets).
//!
//! These are synthetic stand-ins for the paper's data, not the paper's files: the same
//! seed and parameters give the same keys on every machine with the same lidx version.
//! Real SOSD files (books, fb, osm, wiki) are read as they are with
//! [`KeyFile`](super::KeyFile).
//!
//! | name        | keys (before sorting)                                                        |
//! |-------------|------------------------------------------------------------------------------|
//! | `udense`    | the consecutive integers `0 .. n` (paper 1: "sequential integers")            |
//! | `usparse`   | uniform over all of `u64` (paper 1: "integers picked uniform randomly")       |
//! | `normal`    | N(0, 1) mapped linearly from [-6, 6] onto `0 ..= u64::MAX`                     |
//! | `lognormal` | lognormal(μ = 0, σ = 2) times 2^40, saturating at `u64::MAX`                   |
//! | `clustered` | about n / 5000 clusters at uniform positions, cluster sizes Pareto(1.2) distributed, each with its own mean gap between 1 and 2^20 (exponential gaps) |
//! | `heavytail` | Pareto(scale 2^32, shape 0.6): a dense body and a long sparse upper tail     |
//!
//! Keys are distinct and sorted unless asked otherwise: duplicates and collisions are
//! removed and replaced by fresh draws until `n` distinct keys exist. Options add runs of
//! duplicates, force 0 and `u64::MAX` in, or shuffle the result for unsorted tables.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution as _, Exp, LogNormal, Normal, Pareto};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::{Error, Result};

/// A synthetic key distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// Consecutive integers `0 .. n`.
    Udense,
    /// Uniform over `0 ..= u64::MAX`.
    Usparse,
    /// Normal, scaled onto the whole `u64` range.
    Normal,
    /// Lognormal(0, 2) times 2^40.
    Lognormal,
    /// Many clusters of varied size and density at random positions.
    Clustered,
    /// Pareto-distributed: dense body, long sparse upper tail.
    Heavytail,
}

crate::names::name_table!(Distribution, "distribution", [
    Udense => "udense",
    Usparse => "usparse",
    Normal => "normal",
    Lognormal => "lognormal",
    Clustered => "clustered",
    Heavytail => "heavytail",
]);

/// Everything that determines a generated key set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenParams {
    /// The distribution.
    pub dist: Distribution,
    /// Number of keys, at least 1.
    pub n: usize,
    /// Seed of the random generator.
    pub seed: u64,
    /// Fraction in `[0, 1)` of keys replaced by a copy of their predecessor, making runs of
    /// equal keys (geometric lengths; long runs as the fraction nears 1).
    pub duplicates: f64,
    /// Force the smallest key to 0 and the largest to `u64::MAX` (needs `n >= 2`).
    pub extremes: bool,
    /// Shuffle the keys (for unsorted tables) instead of returning them sorted.
    pub shuffle: bool,
}

impl GenParams {
    /// Sorted distinct keys of `dist`, no options.
    pub fn new(dist: Distribution, n: usize, seed: u64) -> Self {
        Self {
            dist,
            n,
            seed,
            duplicates: 0.0,
            extremes: false,
            shuffle: false,
        }
    }

    fn validate(&self) -> Result<()> {
        if self.n == 0 {
            return Err(Error::param("n", "a key set needs at least 1 key"));
        }
        if !(0.0..1.0).contains(&self.duplicates) {
            return Err(Error::param(
                "duplicate fraction",
                format!("{} is not in [0, 1)", self.duplicates),
            ));
        }
        if self.extremes && self.n < 2 {
            return Err(Error::param(
                "n",
                "including both 0 and u64::MAX needs at least 2 keys",
            ));
        }
        Ok(())
    }
}

/// Generates the key set `params` describes.
pub fn generate(params: &GenParams) -> Result<Vec<u64>> {
    params.validate()?;
    let n = params.n;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(params.seed);
    let mut keys = reserve_keys(n)?;
    match params.dist {
        Distribution::Udense => keys.extend(0..n as u64),
        dist => distinct_draws(dist, n, &mut rng, &mut keys)?,
    }
    if params.extremes {
        keys[0] = 0;
        keys[n - 1] = u64::MAX;
    }
    if params.duplicates > 0.0 {
        for i in 1..n {
            if rng.random_bool(params.duplicates) {
                keys[i] = keys[i - 1];
            }
        }
        if params.extremes {
            keys[n - 1] = u64::MAX;
        }
    }
    if params.shuffle {
        keys.shuffle(&mut rng);
    }
    Ok(keys)
}

/// An empty vector with room for `n` keys, or a clear error where memory is short.
fn reserve_keys(n: usize) -> Result<Vec<u64>> {
    let mut keys = Vec::new();
    keys.try_reserve_exact(n).map_err(|_| {
        Error::param(
            "n",
            format!(
                "{n} keys need {} GiB of memory, which cannot be allocated here",
                (n as u64).saturating_mul(8) >> 30
            ),
        )
    })?;
    Ok(keys)
}

/// Fills the empty `keys` with `n` sorted distinct keys of a random distribution,
/// redrawing collisions.
fn distinct_draws(
    dist: Distribution,
    n: usize,
    rng: &mut Xoshiro256PlusPlus,
    keys: &mut Vec<u64>,
) -> Result<()> {
    const ROUNDS: usize = 64;
    for _ in 0..ROUNDS {
        draw(dist, n - keys.len(), rng, keys);
        keys.sort_unstable();
        keys.dedup();
        if keys.len() == n {
            return Ok(());
        }
    }
    Err(Error::param(
        "n",
        format!(
            "{dist} could not produce {n} distinct keys (only {} after {ROUNDS} rounds of draws)",
            keys.len()
        ),
    ))
}

/// Appends `count` raw draws of `dist` to `out`.
fn draw(dist: Distribution, count: usize, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<u64>) {
    // `as u64` on an f64 saturates: negatives to 0, too large to u64::MAX.
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    match dist {
        Distribution::Udense => {
            let start = out.len() as u64;
            out.extend(start..start + count as u64);
        }
        Distribution::Usparse => out.extend((0..count).map(|_| rng.random::<u64>())),
        Distribution::Normal => {
            let normal =
                Normal::new(0.0, 1.0).unwrap_or_else(|_| unreachable!("constant parameters"));
            out.extend((0..count).map(|_| ((normal.sample(rng) + 6.0) / 12.0 * TWO_64) as u64));
        }
        Distribution::Lognormal => {
            let lognormal =
                LogNormal::new(0.0, 2.0).unwrap_or_else(|_| unreachable!("constant parameters"));
            out.extend((0..count).map(|_| (lognormal.sample(rng) * (1u64 << 40) as f64) as u64));
        }
        Distribution::Heavytail => {
            let pareto = Pareto::new((1u64 << 32) as f64, 0.6)
                .unwrap_or_else(|_| unreachable!("constant parameters"));
            out.extend((0..count).map(|_| pareto.sample(rng) as u64));
        }
        Distribution::Clustered => {
            let clusters = (count / 5000).clamp(1, 100_000);
            let sizes =
                Pareto::new(1.0, 1.2).unwrap_or_else(|_| unreachable!("constant parameters"));
            let weights: Vec<f64> = (0..clusters).map(|_| sizes.sample(rng)).collect();
            let total: f64 = weights.iter().sum();
            let mut left = count;
            for (c, w) in weights.iter().enumerate() {
                let size = if c + 1 == clusters {
                    left
                } else {
                    ((w / total * count as f64).round() as usize).min(left)
                };
                left -= size;
                let mean_gap = 2f64.powf(rng.random_range(0.0..20.0));
                let gaps =
                    Exp::new(1.0 / mean_gap).unwrap_or_else(|_| unreachable!("positive rate"));
                let mut key = rng.random::<u64>();
                for _ in 0..size {
                    out.push(key);
                    key = key.saturating_add(1 + gaps.sample(rng) as u64);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_distribution_gives_n_sorted_distinct_keys_repeatably() {
        for dist in Distribution::ALL {
            let p = GenParams::new(dist, 20_000, 7);
            let keys = generate(&p).unwrap();
            assert_eq!(keys.len(), 20_000, "{dist}");
            assert!(
                keys.windows(2).all(|w| w[0] < w[1]),
                "{dist} not sorted and distinct"
            );
            assert_eq!(keys, generate(&p).unwrap(), "{dist} not repeatable");
            assert_eq!(dist.name().parse::<Distribution>().unwrap(), dist);
        }
        assert_eq!(
            generate(&GenParams::new(Distribution::Udense, 3, 0)).unwrap(),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn distributions_differ_in_shape() {
        let spread = |d| {
            let k = generate(&GenParams::new(d, 50_000, 3)).unwrap();
            (k[k.len() / 2], k[k.len() - 1])
        };
        let (median, max) = spread(Distribution::Heavytail);
        assert!(
            max / 1000 > median,
            "heavytail needs a long upper tail: median {median}, max {max}"
        );
        let (median, _) = spread(Distribution::Normal);
        let mid = u64::MAX / 2;
        assert!(median.abs_diff(mid) < u64::MAX / 100, "normal is centred");
    }

    #[test]
    fn options_add_duplicates_extremes_and_shuffle() {
        let mut p = GenParams::new(Distribution::Usparse, 10_000, 5);
        p.duplicates = 0.5;
        p.extremes = true;
        let keys = generate(&p).unwrap();
        assert_eq!(keys.len(), 10_000);
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        let equal = keys.windows(2).filter(|w| w[0] == w[1]).count();
        assert!((4000..6000).contains(&equal), "{equal} equal neighbours");
        assert_eq!((keys[0], keys[9_999]), (0, u64::MAX));

        p.shuffle = true;
        let mut shuffled = generate(&p).unwrap();
        assert_ne!(shuffled, keys);
        shuffled.sort_unstable();
        assert_eq!(shuffled, keys);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(generate(&GenParams::new(Distribution::Udense, 0, 1)).is_err());
        let mut p = GenParams::new(Distribution::Udense, 1, 1);
        p.extremes = true;
        assert!(generate(&p).is_err());
        p = GenParams::new(Distribution::Normal, 10, 1);
        p.duplicates = 1.0;
        assert!(generate(&p).is_err());
        assert!("books".parse::<Distribution>().is_err());
    }
}
