//! The fits against naive references: exact lines through collinear points, no line with
//! a smaller squared error than the least-squares one, the degenerate inputs (no points,
//! one, no spread in `x`), keys at `u64::MAX` scale, and the variants' agreement where
//! their formulas must agree bit for bit.

use proptest::prelude::*;

use super::*;

/// Sum of squared residuals of `y = a + b x` over `points`, in `f64`.
fn sse(points: &[(f64, f64)], a: f64, b: f64) -> f64 {
    points
        .iter()
        .map(|&(x, y)| {
            let e = y - (a + b * x);
            e * e
        })
        .sum()
}

/// The naive reference: closed form over plain means, in `f64`.
fn naive(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - b * mx, b)
}

fn sums_of(points: &[(f64, f64)]) -> LineSums {
    let mut s = LineSums::default();
    for &(x, y) in points {
        s.add(x, y);
    }
    s
}

#[test]
fn points_on_a_line_give_that_line() {
    let mut fit = LineFit::default();
    for x in 0..100u64 {
        fit.add(x * 10, 7 * x * 10 + 3);
    }
    let line = fit.line();
    assert!((line.slope - 7.0).abs() < 1e-9, "{line:?}");
    assert!((line.intercept - 3.0).abs() < 1e-6, "{line:?}");
    assert!((line.predict(100) - 703.0).abs() < 1e-6);

    let pts: Vec<(f64, f64)> = (0..100)
        .map(|x| (f64::from(x), 3.0 + 2.0 * f64::from(x)))
        .collect();
    let s = sums_of(&pts);
    assert_eq!(s.monotone_slope(), 2.0);
    assert_eq!(s.slope_by_determinant(), Some(2.0));
    assert_eq!(s.intercept(2.0), 3.0);
    let c = CentredLine::fit(pts.iter().copied()).expect("points");
    assert_eq!((c.slope, c.intercept(), c.predict(10.0)), (2.0, 3.0, 23.0));
}

#[test]
fn no_points_one_point_and_no_spread_give_a_flat_line() {
    assert_eq!(
        LineFit::default().line(),
        Line {
            slope: 0.0,
            intercept: 0.0
        }
    );
    let mut one = LineFit::default();
    one.add(5, 500);
    assert_eq!(
        one.line(),
        Line {
            slope: 0.0,
            intercept: 500.0
        }
    );
    let mut same_x = LineFit::default();
    same_x.add(9, 0);
    same_x.add(9, 100);
    assert_eq!(
        same_x.line(),
        Line {
            slope: 0.0,
            intercept: 50.0
        }
    );

    let empty = LineSums::default();
    assert_eq!(empty.weight(), 0.0);
    assert_eq!(empty.monotone_slope(), 0.0);
    assert_eq!(empty.slope_by_determinant(), None);
    assert_eq!(CentredLine::fit(std::iter::empty()), None);
    assert_eq!(running_means(std::iter::empty()), (0.0, 0.0, 0.0));

    let same = sums_of(&[(4.0, 1.0), (4.0, 3.0), (4.0, 8.0)]);
    assert_eq!(same.monotone_slope(), 0.0);
    assert_eq!(same.slope_by_determinant(), None);
    assert_eq!(same.intercept(0.0), 4.0);
    let c = CentredLine::fit([(4.0, 1.0), (4.0, 3.0), (4.0, 8.0)]).expect("points");
    assert_eq!((c.slope, c.predict(100.0)), (0.0, 4.0));
    let single = CentredLine::fit([(7.0, 2.0)]).expect("a point");
    assert_eq!((single.slope, single.predict(7.0)), (0.0, 2.0));
}

#[test]
fn falling_points_give_no_negative_monotone_slope() {
    let s = sums_of(&[(0.0, 10.0), (1.0, 5.0), (2.0, 0.0)]);
    assert_eq!(s.monotone_slope(), 0.0);
    assert_eq!(s.slope_by_determinant(), Some(-5.0));
    let c = CentredLine::fit([(0.0, 10.0), (1.0, 5.0), (2.0, 0.0)]).expect("points");
    assert_eq!(c.slope, -5.0);
}

#[test]
fn keys_near_2_to_the_53_keep_their_precision() {
    let base = (1u64 << 53) - 1_000_000;
    let mut fit = LineFit::default();
    for i in 0..1000u64 {
        fit.add(base + i * 1000, i * 1024);
    }
    let line = fit.line();
    assert!((line.slope - 1.024).abs() < 1e-9, "{line:?}");
    assert!((line.predict(base + 500 * 1000) - 500.0 * 1024.0).abs() < 1e-3);
}

#[test]
fn keys_at_u64_max_scale_give_finite_non_negative_lines() {
    let keys: Vec<u64> = (0..1000u64)
        .map(|i| u64::MAX - (999 - i) * (1 << 40))
        .collect();
    let mut fit = LineFit::default();
    for (i, &k) in keys.iter().enumerate() {
        fit.add(k, i as u64);
    }
    let line = fit.line();
    assert!(line.slope.is_finite() && line.slope >= 0.0, "{line:?}");
    assert!(line.intercept.is_finite(), "{line:?}");
    // Centred on the first key by integer subtraction (as the RMI's leaves do), exactly.
    let mut s = LineSums::default();
    for (i, &k) in keys.iter().enumerate() {
        s.add((k - keys[0]) as f64, i as f64);
    }
    let slope = s.monotone_slope();
    assert!((slope - 1.0 / (1u64 << 40) as f64).abs() < 1e-20, "{slope}");
    assert!(s.intercept(slope).abs() < 1e-6);
    let edge = [(0.0, 0.0), (u64::MAX as f64, 1.0)];
    let c = CentredLine::fit(edge).expect("points");
    assert!(c.slope.is_finite() && c.slope > 0.0);
}

#[test]
fn weight_one_sums_equal_plain_sums_bit_for_bit() {
    let pts = [(3.5, 1.25), (1e15, 7.0), (0.1, 0.3), (2e-7, 9e9)];
    let mut w = LineSums::default();
    for &(x, y) in &pts {
        w.add_weighted(x, y, 1.0);
    }
    assert_eq!(w, sums_of(&pts));
}

#[test]
fn polynomial_fit_recovers_a_cubic_and_refuses_singular_systems() {
    let ts: Vec<f64> = (0..50).map(|i| f64::from(i) / 49.0).collect();
    let ys: Vec<f64> = ts
        .iter()
        .map(|t| 1.0 + 2.0 * t + 3.0 * t * t + 4.0 * t * t * t)
        .collect();
    let c = polynomial_fit(&ts, &ys, &[0, 1, 2, 3]).expect("a cubic");
    for (got, want) in c.iter().zip([1.0, 2.0, 3.0, 4.0]) {
        assert!((got - want).abs() < 1e-6, "{c:?}");
    }
    let line = polynomial_fit(&ts, &ys, &[0, 1]).expect("a line");
    assert_eq!((line[2], line[3]), (0.0, 0.0));
    assert_eq!(polynomial_fit(&[], &[], &[0, 1]), None);
    assert_eq!(polynomial_fit(&[0.5; 10], &[1.0; 10], &[0, 1]), None);
    assert_eq!(polynomial_fit(&ts, &ys, &[0, 4]), None);
}

/// Points with small integer coordinates, where the fits are exact enough to compare.
fn small_points() -> impl Strategy<Value = Vec<(f64, f64)>> {
    prop::collection::vec((0u32..1000, 0u32..1000), 0..60).prop_map(|v| {
        v.into_iter()
            .map(|(x, y)| (f64::from(x), f64::from(y)))
            .collect()
    })
}

proptest! {
    /// Collinear points with a non-negative slope give that line, in every variant.
    #[test]
    fn collinear_points_give_their_line(
        xs in prop::collection::btree_set(0u64..1 << 20, 2..80),
        a in 0u64..1000,
        b in 0u64..64,
    ) {
        let pts: Vec<(f64, f64)> = xs.iter().map(|&x| (x as f64, (a + b * x) as f64)).collect();
        let (a, b) = (a as f64, b as f64);
        let s = sums_of(&pts);
        prop_assert!((s.monotone_slope() - b).abs() < 1e-9);
        prop_assert!((s.intercept(s.monotone_slope()) - a).abs() < 1e-3);
        let d = s.slope_by_determinant().expect("two distinct x");
        prop_assert!((d - b).abs() < 1e-9);
        let c = CentredLine::fit(pts.iter().copied()).expect("points");
        prop_assert!((c.slope - b).abs() < 1e-9 && (c.intercept() - a).abs() < 1e-3);
        let mut fit = LineFit::default();
        for &x in &xs {
            fit.add(x, (a + b * x as f64) as u64);
        }
        let line = fit.line();
        prop_assert!((line.slope - b).abs() < 1e-9 && (line.intercept - a).abs() < 1e-3);
    }

    /// Every variant agrees with the naive reference, and no nudged line has a smaller
    /// squared error (where the slope is not cut at 0).
    #[test]
    fn the_fits_are_the_least_squares_line(pts in small_points(), da in -1.0f64..1.0, db in -0.1f64..0.1) {
        prop_assume!(!pts.is_empty());
        let (a, b) = naive(&pts);
        let tol = |v: f64| 1e-6 * (1.0 + v.abs());
        let c = CentredLine::fit(pts.iter().copied()).expect("points");
        prop_assert!((c.slope - b).abs() <= tol(b) && (c.intercept() - a).abs() <= tol(a));
        let s = sums_of(&pts);
        prop_assert!((s.monotone_slope() - b.max(0.0)).abs() <= tol(b));
        if let Some(d) = s.slope_by_determinant() {
            prop_assert!((d - b).abs() <= tol(b));
            prop_assert!((s.intercept(d) - a).abs() <= tol(a));
        }
        let best = sse(&pts, a, b);
        prop_assert!(best <= sse(&pts, a + da, b + db) + 1e-6 * (1.0 + best));
        let mut fit = LineFit::default();
        let mut sorted: Vec<(u64, u64)> = pts.iter().map(|&(x, y)| (x as u64, y as u64)).collect();
        sorted.sort_unstable();
        for &(x, y) in &sorted {
            fit.add(x, y);
        }
        let line = fit.line();
        prop_assert!((line.slope - b.max(0.0)).abs() <= tol(b));
        if b >= 0.0 {
            prop_assert!((line.intercept - a).abs() <= 1e-4 * (1.0 + a.abs()));
        }
    }

    /// An integer weight counts as that many copies of the point.
    #[test]
    fn weights_count_as_repeats(pts in small_points(), reps in prop::collection::vec(1u32..4, 60)) {
        let mut weighted = LineSums::default();
        let mut repeated = LineSums::default();
        for (&(x, y), &r) in pts.iter().zip(&reps) {
            weighted.add_weighted(x, y, f64::from(r));
            for _ in 0..r {
                repeated.add(x, y);
            }
        }
        match (weighted.slope_by_determinant(), repeated.slope_by_determinant()) {
            (Some(w), Some(r)) => prop_assert!((w - r).abs() <= 1e-9 * (1.0 + r.abs())),
            (w, r) => prop_assert_eq!(w.is_some(), r.is_some()),
        }
    }

    /// With keys anywhere in `u64`, the slopes stay finite and the kv line non-negative.
    #[test]
    fn any_keys_give_finite_slopes(mut keys in prop::collection::vec(any::<u64>(), 1..200)) {
        keys.sort_unstable();
        let mut fit = LineFit::default();
        let mut s = LineSums::default();
        for (i, &k) in keys.iter().enumerate() {
            fit.add(k, i as u64);
            s.add((k - keys[0]) as f64, i as f64);
        }
        let line = fit.line();
        prop_assert!(line.slope.is_finite() && line.slope >= 0.0 && line.intercept.is_finite());
        prop_assert!(s.monotone_slope().is_finite() && s.monotone_slope() >= 0.0);
        let c = CentredLine::fit(keys.iter().enumerate().map(|(i, &k)| (k as f64, i as f64)))
            .expect("points");
        prop_assert!(c.slope.is_finite() && c.slope >= 0.0);
        for w in keys.windows(2) {
            prop_assert!(line.predict(w[0]) <= line.predict(w[1]));
        }
    }
}

proptest! {
    /// Over rising offsets (the kv models' points) the kv line's predictions never
    /// decrease with the key.
    #[test]
    fn kv_predictions_never_decrease(
        mut xs in prop::collection::vec(0u64..(1u64 << 53), 1..200),
        sizes in prop::collection::vec(1u64..5000, 200),
    ) {
        xs.sort_unstable();
        let mut fit = LineFit::default();
        let mut offset = 0u64;
        for (&x, &size) in xs.iter().zip(&sizes) {
            fit.add(x, offset);
            offset += size;
        }
        let line = fit.line();
        prop_assert!(line.slope >= 0.0);
        for w in xs.windows(2) {
            prop_assert!(line.predict(w[0]) <= line.predict(w[1]));
        }
    }
}
