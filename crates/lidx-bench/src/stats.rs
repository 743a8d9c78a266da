//! Medians over repeated measurements: every figure of a cell (time, I/O, build time, the
//! model's estimate) is the median of its repeats, so one disturbed run moves none of them.

use std::collections::HashMap;
use std::hash::Hash;

/// The median of `values` (0 for none; the mean of the middle two for an even count).
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The rows grouped by `cell`, with the median of each figure `figures` gives a row:
/// `medians[cell][i]` is the median of figure `i` over the cell's rows.
pub fn medians<R, C: Hash + Eq, const N: usize>(
    rows: &[R],
    cell: impl Fn(&R) -> C,
    figures: impl Fn(&R) -> [f64; N],
) -> HashMap<C, [f64; N]> {
    let mut groups: HashMap<C, Vec<[f64; N]>> = HashMap::new();
    for r in rows {
        groups.entry(cell(r)).or_default().push(figures(r));
    }
    groups
        .into_iter()
        .map(|(c, runs)| {
            let each =
                std::array::from_fn(|i| median(&mut runs.iter().map(|f| f[i]).collect::<Vec<_>>()));
            (c, each)
        })
        .collect()
}

/// The mean of `v` (NaN for none).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// The `q` quantile of `v` (nearest rank).
pub fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let i = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
    s[i]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_take_each_figure_apart() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        let rows = [
            ("a", 1.0, 30.0),
            ("a", 3.0, 10.0),
            ("a", 2.0, 20.0),
            ("b", 5.0, 5.0),
        ];
        let m = medians(&rows, |r| r.0, |r| [r.1, r.2]);
        assert_eq!(
            m["a"],
            [2.0, 20.0],
            "each figure's own median, not one row's"
        );
        assert_eq!(m["b"], [5.0, 5.0]);
    }
}
