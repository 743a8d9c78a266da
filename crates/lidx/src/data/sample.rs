//! Samples of key sets (paper 1: every k-th key for sampled indexes and the B+tree's
//! separators; uniform random samples as the outer tables of its joins).

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::{Error, Result};

/// Every `k`-th key, starting with the first: `keys[0], keys[k], keys[2k], …`.
pub fn every_kth(keys: &[u64], k: usize) -> Result<Vec<u64>> {
    if k == 0 {
        return Err(Error::param("sampling step k", "must be at least 1"));
    }
    Ok(keys.iter().step_by(k).copied().collect())
}

/// A uniform random sample without replacement of `round(fraction * n)` keys (at least
/// one from a non-empty set), kept in the input's order; seeded, so repeatable.
pub fn random_fraction(keys: &[u64], fraction: f64, seed: u64) -> Result<Vec<u64>> {
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(Error::param(
            "sample fraction",
            format!("{fraction} is not in (0, 1]"),
        ));
    }
    let n = keys.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let amount = ((n as f64 * fraction).round() as usize).clamp(1, n);
    if amount == n {
        return Ok(keys.to_vec());
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut picked = rand::seq::index::sample(&mut rng, n, amount).into_vec();
    picked.sort_unstable();
    Ok(picked.into_iter().map(|i| keys[i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kth_takes_the_first_and_each_kth() {
        let keys: Vec<u64> = (0..10).collect();
        assert_eq!(every_kth(&keys, 3).unwrap(), vec![0, 3, 6, 9]);
        assert_eq!(every_kth(&keys, 1).unwrap(), keys);
        assert!(every_kth(&keys, 0).is_err());
        assert!(every_kth(&[], 5).unwrap().is_empty());
    }

    #[test]
    fn random_fraction_is_an_ordered_subset_of_the_right_size() {
        let keys: Vec<u64> = (0..1000).map(|i| i * 7).collect();
        let s = random_fraction(&keys, 0.1, 9).unwrap();
        assert_eq!(s.len(), 100);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(s.iter().all(|k| keys.binary_search(k).is_ok()));
        assert_eq!(s, random_fraction(&keys, 0.1, 9).unwrap(), "seeded");
        assert_ne!(s, random_fraction(&keys, 0.1, 10).unwrap());
        assert_eq!(random_fraction(&keys, 1e-9, 1).unwrap().len(), 1);
        assert!(random_fraction(&keys, 0.0, 1).is_err());
        assert!(random_fraction(&keys, 1.5, 1).is_err());
        assert!(random_fraction(&keys, f64::NAN, 1).is_err());
    }
}
