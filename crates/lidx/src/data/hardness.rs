//! Paper 3's synthetic hardness generator (GRE, section 7): keys whose optimal PLA has
//! about `global` segments at ε = 4096 and about `local` segments at ε = 32, the two axes
//! of paper 3's hardness plane.
//!
//! Keys are made in rank order from random linear models, as the paper describes: for a
//! line `y = m·k + b` (rank `y`, key `k`) and an error ε, the key of rank `y` is drawn
//! uniformly from `[max((y − ε − b)/m, prev + 1), (y + ε − b)/m]`, so every key lies
//! within ε ranks of its line. The ranks are cut into `global` segments of equal size,
//! each with a slope of its own (successive slopes differ 4 to 64 times, so no line
//! within 4096 ranks spans two of them), and each global segment into `local / global`
//! local segments of equal size, whose slopes stray from the global one alternately up
//! and down by enough to move 128 to 1024 ranks off its line over the segment: more than
//! a line within 32 ranks can absorb, never more than one within 4096 can. Keys within a
//! local segment are drawn within 16 ranks of its line.
//!
//! How well the counts are hit depends on the segments' sizes: a global segment needs some
//! tens of thousands of keys for its bend to show at ε = 4096, a local one some hundreds
//! at ε = 32; below that the measured counts fall short of the targets. No key set has
//! more than ⌈n / (2ε + 1)⌉ segments (any 2ε + 1 keys fit one line): at most n / 65 local
//! and n / 8193 global segments, whatever is asked.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::{Error, Result};

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HardnessParams {
    /// Keys, at least 1.
    pub n: usize,
    /// Target segments at ε = 32 (at least `global`).
    pub local: u64,
    /// Target segments at ε = 4096 (at least 1).
    pub global: u64,
    /// Seed of the random generator.
    pub seed: u64,
}

/// Sorted distinct keys with the hardness `params` asks for.
pub fn generate_hard(params: &HardnessParams) -> Result<Vec<u64>> {
    let HardnessParams {
        n,
        local,
        global,
        seed,
    } = *params;
    if n == 0 {
        return Err(Error::param("n", "a key set needs at least 1 key"));
    }
    if global == 0 || local < global {
        return Err(Error::param(
            "hardness",
            format!(
                "--global must be at least 1 and --local at least --global (got local {local}, global {global})"
            ),
        ));
    }
    if global > n as u64 || local > n as u64 {
        return Err(Error::param(
            "hardness",
            format!("{n} keys cannot make {local} local or {global} global segments"),
        ));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut keys = Vec::with_capacity(n);
    // Keys per rank along the current global line.
    let mut gap: f64 = 2f64.powf(rng.random_range(4.0..12.0));
    let per_global = local / global;
    // The key where the current segment's line starts, and its rank.
    let mut origin = 0f64;
    let mut origin_rank = 0usize;
    let mut prev: Option<u64> = None;
    for g in 0..global {
        let (g_start, g_end) = share(n, global, g);
        if g > 0 {
            // A new global slope, 4 to 64 times steeper or flatter, kept within range.
            let factor = 2f64.powf(rng.random_range(2.0..6.0));
            let flatter = rng.random_bool(0.5) && gap / factor >= 1.0 || gap * factor > 1e9;
            gap = if flatter { gap / factor } else { gap * factor };
        }
        for l in 0..per_global {
            let (s, e) = share(g_end - g_start, per_global, l);
            let (start, end) = (g_start + s, g_start + e);
            let size = (end - start).max(1) as f64;
            // Stray from the global slope by 128 to 1024 ranks over the segment, up and
            // down in turn, so the global line stays within reach.
            let drift = if per_global > 1 {
                (rng.random_range(128.0..1024.0) / size).min(0.9)
            } else {
                0.0
            };
            let local_gap = if l % 2 == 0 {
                gap * (1.0 + drift)
            } else {
                gap * (1.0 - drift)
            };
            for y in start..end {
                let line = origin + (y - origin_rank) as f64 * local_gap;
                let spread = 16.0 * local_gap;
                let lo = (line - spread).max(prev.map_or(0.0, |p| p as f64 + 1.0));
                let hi = (line + spread).max(lo);
                let drawn = if hi > lo {
                    rng.random_range(lo..=hi)
                } else {
                    lo
                };
                let key = (drawn as u64).max(prev.map_or(0, |p| p + 1));
                if prev.is_some_and(|p| p == u64::MAX) || drawn >= u64::MAX as f64 {
                    return Err(Error::param(
                        "hardness",
                        format!(
                            "{n} keys with these slopes run past u64::MAX; ask for fewer keys or segments"
                        ),
                    ));
                }
                keys.push(key);
                prev = Some(key);
            }
            // The next segment's line starts where this one ended.
            origin += (end - start) as f64 * local_gap;
            origin_rank = end;
        }
    }
    Ok(keys)
}

/// The `i`-th of `parts` near-equal shares of `0..n`: `(start, end)`.
fn share(n: usize, parts: u64, i: u64) -> (usize, usize) {
    let parts = parts as u128;
    let at = |j: u128| (n as u128 * j / parts) as usize;
    (at(i as u128), at(i as u128 + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pla::segment_count;

    #[test]
    fn the_generated_keys_have_about_the_hardness_asked_for() {
        for (local, global) in [(100u64, 1u64), (1000, 10), (400, 40), (4000, 4), (20, 20)] {
            let p = HardnessParams {
                n: 1_000_000,
                local,
                global,
                seed: 7,
            };
            let keys = generate_hard(&p).unwrap();
            assert_eq!(keys.len(), 1_000_000);
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
            let at32 = segment_count(&keys, 32).unwrap();
            let at4096 = segment_count(&keys, 4096).unwrap();
            let near = |got: u64, want: u64| {
                got as f64 >= 0.6 * want as f64 && got as f64 <= 1.6 * want as f64
            };
            assert!(near(at32, local), "local {local}: {at32} segments at 32");
            assert!(
                near(at4096, global),
                "global {global}: {at4096} segments at 4096"
            );
        }
    }

    /// The most segments an optimal PLA at `epsilon` can have over `n` distinct keys.
    fn most_segments(n: usize, epsilon: u64) -> u64 {
        (n as u64).div_ceil(2 * epsilon + 1)
    }

    #[test]
    fn no_key_set_has_more_segments_than_one_per_two_epsilon_plus_one_keys() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for n in [1usize, 64, 65, 66, 1000, 20_000] {
            // Keys as jagged as random gaps of wildly different sizes make them.
            let mut keys: Vec<u64> = Vec::with_capacity(n);
            let mut key = 0u64;
            for _ in 0..n {
                key += 1 + (rng.random::<u64>() >> rng.random_range(20..64));
                keys.push(key);
            }
            for eps in [32, 4096] {
                let got = segment_count(&keys, eps).unwrap();
                assert!(got <= most_segments(n, eps), "{n} keys at {eps}: {got}");
            }
        }
    }

    #[test]
    fn bad_hardness_is_refused() {
        let p = |n, local, global| HardnessParams {
            n,
            local,
            global,
            seed: 1,
        };
        assert!(generate_hard(&p(0, 1, 1)).is_err());
        assert!(generate_hard(&p(100, 1, 0)).is_err());
        assert!(generate_hard(&p(100, 2, 5)).is_err());
        assert!(generate_hard(&p(100, 500, 5)).is_err());
        assert_eq!(generate_hard(&p(1, 1, 1)).unwrap().len(), 1);
    }
}
