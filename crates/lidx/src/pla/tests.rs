//! The PLA against brute force: every segment fits, no segment could be extended, and the
//! count is the minimum.

use proptest::prelude::*;

use super::*;

/// Exact check: does one line pass within `eps` of every point? (Brute force over lines
/// through two band corners; a non-empty bounded feasible region has such a vertex.)
fn feasible(points: &[(u64, u64)], eps: u64) -> bool {
    if points.len() <= 2 {
        return true;
    }
    let x0 = points[0].0;
    let pts: Vec<(i128, i128)> = points
        .iter()
        .map(|&(x, y)| (i128::from(x - x0), i128::from(y)))
        .collect();
    let e = i128::from(eps);
    for a in 0..pts.len() {
        for b in a + 1..pts.len() {
            for sa in [-e, e] {
                for sb in [-e, e] {
                    let (xa, ya) = (pts[a].0, pts[a].1 + sa);
                    let (xb, yb) = (pts[b].0, pts[b].1 + sb);
                    let d = xb - xa;
                    if pts.iter().all(|&(x, y)| {
                        let v = ya * d + (yb - ya) * (x - xa);
                        (y - e) * d <= v && v <= (y + e) * d
                    }) {
                        return true;
                    }
                }
            }
        }
    }
    false
}

/// The fewest segments any cut into consecutive feasible runs can have.
fn brute_minimum(points: &[(u64, u64)], eps: u64) -> usize {
    let n = points.len();
    let mut best = vec![usize::MAX; n + 1];
    best[0] = 0;
    for end in 1..=n {
        for start in 0..end {
            if best[start] != usize::MAX && feasible(&points[start..end], eps) {
                best[end] = best[end].min(best[start] + 1);
            }
        }
    }
    best[n]
}

/// Strictly increasing x (near 0, near u64::MAX, or with huge gaps), non-decreasing y.
fn point_set() -> impl Strategy<Value = Vec<(u64, u64)>> {
    (
        prop::collection::vec((1u64..1000, 0u64..6), 1..22),
        prop_oneof![
            Just(0u64),
            Just(u64::MAX - 30_000),
            any::<u64>().prop_map(|b| b / 2)
        ],
        any::<bool>(),
    )
        .prop_map(|(steps, base, huge_gaps)| {
            let mut x = base;
            let mut y = 0u64;
            let mut out = Vec::new();
            for (i, (dx, dy)) in steps.into_iter().enumerate() {
                let gap = if huge_gaps && i % 5 == 4 {
                    dx << 40
                } else {
                    dx
                };
                if i > 0 {
                    match x.checked_add(gap) {
                        Some(nx) => x = nx,
                        None => break,
                    }
                }
                y += dy;
                out.push((x, y));
            }
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn segments_are_feasible_maximal_and_fewest(points in point_set(), eps in 0u64..4) {
        let segs = segments(points.iter().copied(), eps).unwrap();
        // The segments tile the points in order.
        let mut at = 0usize;
        for (i, s) in segs.iter().enumerate() {
            let run = &points[at..at + s.points as usize];
            prop_assert_eq!((s.first_x, s.first_y), run[0]);
            prop_assert_eq!(s.last_x, run[run.len() - 1].0);
            // Exactly feasible, and the f64 line is within eps up to rounding.
            prop_assert!(feasible(run, eps));
            for &(x, y) in run {
                let err = (s.predict(x) - y as f64).abs();
                prop_assert!(err <= eps as f64 + 1e-6 * (1.0 + y as f64), "segment {i}: error {err} at ({x}, {y})");
            }
            // Maximal: the next point does not fit.
            if i + 1 < segs.len() {
                prop_assert!(!feasible(&points[at..at + s.points as usize + 1], eps), "segment {i} could be extended");
            }
            at += s.points as usize;
        }
        prop_assert_eq!(at, points.len());
        prop_assert_eq!(segs.len(), brute_minimum(&points, eps));
    }
}

#[test]
fn keys_at_the_top_of_u64_are_told_apart() {
    // A step at the very top of the key space: an f64 cannot tell these keys apart.
    let points = [
        (u64::MAX - 3, 0),
        (u64::MAX - 2, 0),
        (u64::MAX - 1, 100),
        (u64::MAX, 100),
    ];
    let segs = segments(points, 1).unwrap();
    assert_eq!(segs.len(), 2);
    assert_eq!(segs[1].first_x, u64::MAX - 1);
}

#[test]
fn hardness_counts_segments_of_distinct_keys() {
    let line: Vec<u64> = (0..10_000).map(|i| i * 7).collect();
    assert_eq!(segment_count(&line, 0).unwrap(), 1);
    let mut dups = line.clone();
    dups.extend(std::iter::repeat_n(70_000, 500));
    assert_eq!(
        segment_count(&dups, 32).unwrap(),
        1,
        "a duplicate run is one point"
    );
    let steps: Vec<u64> = (0..1000u64)
        .map(|i| if i < 500 { i } else { i + 1_000_000 })
        .collect();
    assert_eq!(segment_count(&steps, 4).unwrap(), 2);
    assert_eq!(segment_count(&[], 4).unwrap(), 0);
    assert!(segment_count(&[3, 1], 4).is_err());
    assert!(PlaBuilder::new(MAX_EPSILON + 1).is_err());
}

#[test]
fn the_brute_force_reference_itself_is_right() {
    assert!(!feasible(&[(0, 0), (1, 10), (2, 0)], 1));
    assert!(feasible(&[(0, 0), (1, 10), (2, 0)], 5));
    assert_eq!(brute_minimum(&[(0, 0), (1, 10), (2, 0)], 1), 2);
    assert_eq!(
        brute_minimum(&[(0, 0), (1, 10), (2, 20), (3, 20), (4, 20)], 0),
        2
    );
    assert_eq!(
        segments([(0, 0), (1, 10), (2, 20), (3, 20), (4, 20)], 0)
            .unwrap()
            .len(),
        2
    );
    assert!(
        segments([(0, 5), (1, 4)], 3).is_err(),
        "y must not decrease"
    );
}

#[test]
fn the_regression_mse_is_zero_on_a_line_and_grows_with_a_bend() {
    let line: Vec<u64> = (0..10_000u64).map(|i| 5 + i * 3).collect();
    assert!(super::linear_mse(&line).unwrap() < 1e-6);
    let bent: Vec<u64> = (0..10_000u64)
        .map(|i| {
            if i < 5000 {
                i
            } else {
                5000 + (i - 5000) * 1000
            }
        })
        .collect();
    let mse = super::linear_mse(&bent).unwrap();
    assert!(mse > 1e5, "{mse}");
    assert_eq!(super::linear_mse(&[7, 7, 7]).unwrap(), 0.0);
    assert!(super::linear_mse(&[3, 1]).is_err());
}

proptest! {
    /// The distance converts as the unsigned conversion does, bit for bit, on both sides of
    /// 2^63 and where the key lies below the base.
    #[test]
    fn a_distance_converts_as_the_unsigned_conversion(
        x in prop_oneof![any::<u64>(), (u64::MAX - 4096)..=u64::MAX, 0..4096u64],
        base in prop_oneof![any::<u64>(), 0..4096u64, Just(u64::MAX)],
    ) {
        let want = x.saturating_sub(base) as f64;
        prop_assert_eq!(distance_f64(x, base).to_bits(), want.to_bits());
    }
}

#[test]
fn distances_round_at_every_width_as_the_unsigned_conversion() {
    for bit in 0..64 {
        let d = 1u64 << bit;
        for x in [d - 1, d, d + 1, d | (d >> 1), d.wrapping_mul(3).max(d)] {
            assert_eq!(distance_f64(x, 0).to_bits(), (x as f64).to_bits(), "{x}");
        }
    }
    assert_eq!(distance_f64(u64::MAX, 0), u64::MAX as f64);
    assert_eq!(distance_f64(3, 7), 0.0);
}
