//! Key sets: the inputs every index, table and join starts from (paper 1, section 5.1).
//!
//! - [`sosd`]: SOSD key files (`u64` count, then little-endian `u64` keys), memory-mapped.
//! - [`synth`]: seeded synthetic distributions: paper 1's `udense`, `usparse`, `normal`,
//!   `lognormal`, and two harder sets, `clustered` and `heavytail`. They are synthetic
//!   stand-ins; real SOSD files (books, fb, osm, wiki) are read as they are.
//! - [`hardness`]: paper 3's generator of keys of a chosen local and global hardness.
//! - [`sample`]: every k-th key, or a uniform random fraction.

pub mod hardness;
pub mod sample;
pub mod sosd;
pub mod synth;

pub use hardness::{HardnessParams, generate_hard};
pub use sosd::{KeyFile, write_keys};
pub use synth::{Distribution, GenParams, generate};

/// Shuffles `items` with lidx's seeded generator (Xoshiro256++ seeded from `seed` by
/// `seed_from_u64`, then a Fisher-Yates shuffle): the same seed gives the same order on
/// every machine and in every release that keeps this generator. Every shuffle lidx writes
/// (`lidx gen --shuffle`, shuffled tables) is this one.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    items.shuffle(&mut rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed));
}

/// Position of the first key that breaks non-decreasing order, if any.
pub fn first_unsorted(keys: &[u64]) -> Option<usize> {
    keys.windows(2).position(|w| w[0] > w[1]).map(|i| i + 1)
}
