//! Per-data-set tuning of RadixSpline and RMI (paper 1, section 5.1: "for each dataset,
//! we choose the Pareto-optimal index configuration ... as evaluated by the SOSD
//! benchmark"): a small grid search on the data, the size/lookup-time Pareto front, and a
//! pick from it.

use std::time::Instant;

use super::measure::lookup_ns;
use super::{AnyIndex, AnyParams, IndexKind, RadixSplineParams, RmiParams, RootKind};
use crate::Result;

/// One configuration tried.
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// The parameters, as text.
    pub params: String,
    /// Index size in bytes.
    pub size_bytes: u64,
    /// Mean full-lookup time in nanoseconds (existing keys).
    pub lookup_ns: f64,
    /// Largest window width.
    pub max_width: u64,
    /// Build time in seconds.
    pub build_seconds: f64,
    /// On the size/lookup-time Pareto front: no other trial is both no larger and no slower
    /// (and better in one).
    pub pareto: bool,
}

/// The grid for a kind: RadixSpline radix bits 16 to 28 (step 2) at `epsilon`; RMI roots
/// linear, cubic and radix with 2^8 to 2^22 leaves (step 2^2).
pub fn grid(kind: IndexKind, epsilon: u64) -> Vec<AnyParams> {
    match kind {
        IndexKind::RadixSpline => (16..=28)
            .step_by(2)
            .map(|radix_bits| {
                AnyParams::RadixSpline(RadixSplineParams {
                    epsilon,
                    radix_bits,
                })
            })
            .collect(),
        IndexKind::Rmi => RootKind::ALL
            .into_iter()
            .flat_map(|root| {
                (8..=22).step_by(2).map(move |b| {
                    AnyParams::Rmi(RmiParams {
                        root,
                        branching: 1 << b,
                        max_window: 0,
                    })
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A lower bound on the size of an index with `params`, known before building it.
fn size_floor(params: &AnyParams) -> u64 {
    match params {
        AnyParams::RadixSpline(p) => 4 * ((1u64 << p.radix_bits) + 1),
        AnyParams::Rmi(p) => 40 * p.branching,
        _ => 0,
    }
}

/// Marks the Pareto front of `trials` (smaller and faster is better).
pub fn mark_pareto(trials: &mut [Trial]) {
    let snapshot: Vec<(u64, f64)> = trials.iter().map(|t| (t.size_bytes, t.lookup_ns)).collect();
    for (i, t) in trials.iter_mut().enumerate() {
        t.pareto = !snapshot.iter().enumerate().any(|(j, &(s, ns))| {
            j != i
                && s <= t.size_bytes
                && ns <= t.lookup_ns
                && (s < t.size_bytes || ns < t.lookup_ns)
        });
    }
}

/// Tunes `kind` (RadixSpline or RMI) on `keys`, timing lookups of `queries`: tries the grid
/// (leaving out configurations certain to exceed `size_budget`), marks the Pareto front, and returns the fastest front configuration no larger than
/// `size_budget` bytes (the smallest front one when none fits), with every trial.
/// `progress` is called after each trial.
pub fn tune(
    kind: IndexKind,
    keys: &[u64],
    queries: &[u64],
    epsilon: u64,
    size_budget: u64,
    mut progress: impl FnMut(&Trial),
) -> Result<(AnyIndex, Vec<Trial>)> {
    let mut trials = Vec::new();
    let mut best: Option<(usize, AnyIndex)> = None;
    // Configurations whose fixed part alone exceeds the budget are not built (a 2^28-slot
    // radix table is 1 GiB), unless none fits: then the smallest is tried.
    let grid = grid(kind, epsilon);
    let fits: Vec<AnyParams> = grid
        .iter()
        .copied()
        .filter(|p| size_floor(p) <= size_budget)
        .collect();
    let tried = if fits.is_empty() {
        grid.into_iter().take(1).collect()
    } else {
        fits
    };
    for params in tried {
        let t = Instant::now();
        let index = AnyIndex::build(keys, &params)?;
        let build_seconds = t.elapsed().as_secs_f64();
        let (ns, _) = lookup_ns(&index, keys, queries);
        let trial = Trial {
            params: index.describe(),
            size_bytes: index.size_in_bytes(),
            lookup_ns: ns,
            max_width: index.max_width(),
            build_seconds,
            pareto: false,
        };
        progress(&trial);
        // Keep the best candidate so far by the final rule, so the chosen one need not be rebuilt.
        let better = |b: &Trial| {
            let fits = trial.size_bytes <= size_budget;
            let b_fits = b.size_bytes <= size_budget;
            match (fits, b_fits) {
                (true, false) => true,
                (false, true) => false,
                (true, true) => trial.lookup_ns < b.lookup_ns,
                (false, false) => trial.size_bytes < b.size_bytes,
            }
        };
        if best.as_ref().is_none_or(|(i, _)| better(&trials[*i])) {
            best = Some((trials.len(), index));
        }
        trials.push(trial);
    }
    mark_pareto(&mut trials);
    let (_, index) =
        best.ok_or_else(|| crate::Error::param("index kind", "only rs and rmi are tuned"))?;
    Ok((index, trials))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(size: u64, ns: f64) -> Trial {
        Trial {
            params: String::new(),
            size_bytes: size,
            lookup_ns: ns,
            max_width: 0,
            build_seconds: 0.0,
            pareto: false,
        }
    }

    #[test]
    fn the_pareto_front_keeps_only_undominated_points() {
        let mut t = vec![
            trial(10, 50.0),
            trial(20, 40.0),
            trial(30, 45.0),
            trial(5, 100.0),
            trial(20, 40.0),
        ];
        mark_pareto(&mut t);
        let front: Vec<bool> = t.iter().map(|t| t.pareto).collect();
        assert_eq!(front, vec![true, true, false, true, true]);
    }

    #[test]
    fn tuning_picks_a_configuration_within_the_budget() {
        let keys = crate::data::generate(&crate::data::GenParams::new(
            crate::data::Distribution::Lognormal,
            50_000,
            3,
        ))
        .unwrap();
        let queries: Vec<u64> = keys.iter().step_by(7).copied().collect();
        let (index, trials) = tune(
            IndexKind::RadixSpline,
            &keys,
            &queries,
            127,
            1 << 20,
            |_| {},
        )
        .unwrap();
        // Only 16 radix bits fit in 1 MiB: the table alone is 4 (2^r + 1) bytes.
        assert_eq!(trials.len(), 1);
        assert!(trials.iter().any(|t| t.pareto));
        assert!(
            index.size_in_bytes() <= 1 << 20,
            "{}",
            index.size_in_bytes()
        );
        let (index, trials) = tune(IndexKind::Rmi, &keys, &queries, 127, 1 << 20, |_| {}).unwrap();
        // 2^8 to 2^14 leaves of 40 bytes fit in 1 MiB, for each of the three roots.
        assert_eq!(trials.len(), 3 * 4);
        assert!(index.size_in_bytes() <= 1 << 20);
    }

    #[test]
    fn a_budget_nothing_fits_still_tries_the_smallest() {
        let keys: Vec<u64> = (0..5000).map(|i| i * 3).collect();
        let (index, trials) = tune(IndexKind::RadixSpline, &keys, &keys, 16, 10, |_| {}).unwrap();
        assert_eq!(trials.len(), 1);
        assert_eq!(index.describe(), "eps=16 radix_bits=16");
    }
}
