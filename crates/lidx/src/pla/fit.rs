//! Least-squares fitting, the one place lidx writes it: every line (and the RMI root's
//! polynomial) that a model fits to points comes from here.
//!
//! Users and the variant each takes (each keeps its own summation order and formula, so
//! the models, and the files that store them, stay bit for bit what they were):
//!
//! - **kv** (paper 4, section 4, "Learned Index Training"): [`LineFit`], one pass over
//!   `(mapped key, bytes before it)`, centred in `f64` on the first point, giving a
//!   non-decreasing [`Line`]; the kv RMI's root and leaves are such lines too.
//! - **RMI** (Kraska et al., 2018; paper 1, section 2.2): each leaf's line from
//!   [`LineSums`] over `(key − leaf base, position)`, with
//!   [`monotone_slope`](LineSums::monotone_slope) and
//!   [`intercept`](LineSums::intercept); the root's polynomial from [`polynomial_fit`].
//! - **ALEX** (paper 3, section 2.1; Ding et al., section 4): a data node's model by two
//!   passes about means the node supplies, [`CentredLine::fit_about`].
//! - **Hardness** (paper 3, App. D, [`linear_mse`](super::linear_mse)): the same two passes
//!   about [`running_means`], the residuals from [`CentredLine::predict`].
//! - **Storage profile** (paper 1's cost model, paper 2's profile): weighted sums
//!   ([`LineSums::add_weighted`], weights 1/mean²) solved by
//!   [`slope_by_determinant`](LineSums::slope_by_determinant).
//!
//! The PGM's lines are not least squares: they come from the optimal PLA in
//! [`PlaBuilder`](super::PlaBuilder).

/// Running (optionally weighted) sums of a least-squares fit of `y` on `x`: total weight,
/// `Σwx`, `Σwy`, `Σwx²`, `Σwxy`, each added to in the order the points come. The caller
/// chooses the coordinates (to keep precision with large keys, centre them on a point of
/// the data first, as [`LineFit`] and the RMI's leaves do).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LineSums {
    w: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl LineSums {
    /// Adds the point `(x, y)` with weight 1.
    #[inline]
    pub fn add(&mut self, x: f64, y: f64) {
        self.w += 1.0;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
    }

    /// Adds the point `(x, y)` with weight `w` (the products taken as `(w·x)·x` and
    /// `(w·x)·y`). With `w = 1` the sums are bit for bit those of [`add`](Self::add).
    #[inline]
    pub fn add_weighted(&mut self, x: f64, y: f64, w: f64) {
        self.w += w;
        self.sx += w * x;
        self.sy += w * y;
        self.sxx += w * x * x;
        self.sxy += w * x * y;
    }

    /// The total weight: the number of points when all were added by [`add`](Self::add)
    /// (exact up to 2^53 points, where adding 1 to an `f64` stops counting).
    pub fn weight(&self) -> f64 {
        self.w
    }

    /// The means `(Σwx / Σw, Σwy / Σw)`; NaN when nothing was added.
    pub fn means(&self) -> (f64, f64) {
        (self.sx / self.w, self.sy / self.w)
    }

    /// The least-squares slope cut to be non-negative, by the centred form
    /// `(Σxy − Σx·Σy/n) / (Σx² − Σx²/n)`: 0 when the `x` have no spread (a variance not
    /// above 0, or NaN with nothing added), and 0 where rounding (or falling data) would
    /// give a negative or NaN slope. The kv line's and the RMI leaves' slope.
    pub fn monotone_slope(&self) -> f64 {
        let n = self.w;
        let var = self.sxx - self.sx * self.sx / n;
        let cov = self.sxy - self.sx * self.sy / n;
        if var > 0.0 { (cov / var).max(0.0) } else { 0.0 }
    }

    /// The least-squares slope by the determinant form
    /// `(Σw·Σwxy − Σwx·Σwy) / (Σw·Σwx² − (Σwx)²)`, of any sign; `None` when the
    /// determinant is not above 0 (fewer than two distinct `x`, or NaN). The storage
    /// profile's slope.
    pub fn slope_by_determinant(&self) -> Option<f64> {
        let det = self.w * self.sxx - self.sx * self.sx;
        if det > 0.0 {
            Some((self.w * self.sxy - self.sx * self.sy) / det)
        } else {
            None
        }
    }

    /// The intercept at `x = 0` of the line with slope `slope` through the weighted means,
    /// as `(Σwy − slope·Σwx) / Σw`.
    pub fn intercept(&self, slope: f64) -> f64 {
        (self.sy - slope * self.sx) / self.w
    }
}

/// The least-squares line of `y` on `x` fitted in one pass over integer points, such as
/// keys (or keys mapped to integers) and the bytes or positions before them. Points are
/// centred on the first one in `f64`, so that sums of squares of 2^53-sized integers keep
/// their precision. Paper 4's line, used by the kv files' models.
#[derive(Clone, Debug, Default)]
pub struct LineFit {
    origin: Option<(f64, f64)>,
    sums: LineSums,
}

impl LineFit {
    /// Adds the point `(x, y)`.
    pub fn add(&mut self, x: u64, y: u64) {
        let (x, y) = (x as f64, y as f64);
        let (ox, oy) = *self.origin.get_or_insert((x, y));
        self.sums.add(x - ox, y - oy);
    }

    /// The fitted line; its slope is never negative (with `x` and `y` both rising, as keys
    /// and their offsets do, least squares gives none; a rounding that would is cut to 0),
    /// see [`LineSums::monotone_slope`]. With no spread in `x` the line is flat at the mean
    /// of `y`; with no points it is `y = 0`.
    pub fn line(&self) -> Line {
        let Some((ox, oy)) = self.origin else {
            return Line {
                slope: 0.0,
                intercept: 0.0,
            };
        };
        let slope = self.sums.monotone_slope();
        let (mx, my) = self.sums.means();
        let mean_x = ox + mx;
        let mean_y = oy + my;
        Line {
            slope,
            intercept: mean_y - slope * mean_x,
        }
    }
}

/// `f(x) = slope · x + intercept`, with `slope >= 0` (as [`LineFit::line`] gives it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    /// Rise of `y` per unit of `x` (for the kv models: bytes per unit of the mapped key).
    pub slope: f64,
    /// `y` at `x = 0`.
    pub intercept: f64,
}

impl Line {
    /// `f(x)`. Never decreasing in `x` when `slope >= 0`.
    pub fn predict(&self, x: u64) -> f64 {
        self.slope * x as f64 + self.intercept
    }
}

/// The means of `points` by the running update `m += (v − m) / n` (no sum grows past the
/// values' own size), with their count: `(n, mean_x, mean_y)`; `(0, 0, 0)` for no points.
pub fn running_means(points: impl IntoIterator<Item = (f64, f64)>) -> (f64, f64, f64) {
    let (mut n, mut mean_x, mut mean_y) = (0f64, 0f64, 0f64);
    for (x, y) in points {
        n += 1.0;
        mean_x += (x - mean_x) / n;
        mean_y += (y - mean_y) / n;
    }
    (n, mean_x, mean_y)
}

/// A least-squares line written about its points' means:
/// `y = mean_y + slope · (x − mean_x)`. Fitted by two passes, the means first (by whatever
/// rule the caller keeps), then the centred sums, so no large sums of squares cancel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CentredLine {
    /// The mean of the `x` the line was fitted about.
    pub mean_x: f64,
    /// The mean of the `y`.
    pub mean_y: f64,
    /// `Σ dx·dy / Σ dx²` over the centred points (any sign); 0 when the `x` have no spread.
    pub slope: f64,
}

impl CentredLine {
    /// The second pass: the least-squares slope of `points` about the given means
    /// (which should be the points' own, for the result to be the least-squares line).
    pub fn fit_about(
        points: impl IntoIterator<Item = (f64, f64)>,
        mean_x: f64,
        mean_y: f64,
    ) -> CentredLine {
        let (mut sxx, mut sxy) = (0f64, 0f64);
        for (x, y) in points {
            let (dx, dy) = (x - mean_x, y - mean_y);
            sxx += dx * dx;
            sxy += dx * dy;
        }
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        CentredLine {
            mean_x,
            mean_y,
            slope,
        }
    }

    /// Both passes, the means by [`running_means`]; `None` for no points.
    pub fn fit<I>(points: I) -> Option<CentredLine>
    where
        I: IntoIterator<Item = (f64, f64)>,
        I::IntoIter: Clone,
    {
        let points = points.into_iter();
        let (n, mean_x, mean_y) = running_means(points.clone());
        (n > 0.0).then(|| CentredLine::fit_about(points, mean_x, mean_y))
    }

    /// The line's value at `x = 0`: `mean_y − slope · mean_x`.
    pub fn intercept(&self) -> f64 {
        self.mean_y - self.slope * self.mean_x
    }

    /// The line's value at `x`: `mean_y + slope · (x − mean_x)`.
    pub fn predict(&self, x: f64) -> f64 {
        self.mean_y + self.slope * (x - self.mean_x)
    }
}

/// Least squares of `ys` on `ts` over the polynomial terms in `terms` (0 = constant,
/// 1 = `t`, 2 = `t²`, 3 = `t³`, each at most once), by the normal equations and Gaussian
/// elimination with partial pivoting. Returns `c`, the polynomial being
/// `c[0] + c[1]·t + c[2]·t² + c[3]·t³`, with 0 for terms not used; `None` when the system
/// is singular (a pivot below 1e-300) or a term is above 3. Pairs beyond the shorter of
/// `ts` and `ys` are ignored. The RMI root's fit.
pub fn polynomial_fit(ts: &[f64], ys: &[f64], terms: &[usize]) -> Option<[f64; 4]> {
    let k = terms.len();
    if terms.iter().any(|&t| t > 3) {
        return None;
    }
    let mut a = vec![vec![0.0f64; k + 1]; k];
    for (&t, &y) in ts.iter().zip(ys) {
        let pw = [1.0, t, t * t, t * t * t];
        for i in 0..k {
            for j in 0..k {
                a[i][j] += pw[terms[i]] * pw[terms[j]];
            }
            a[i][k] += pw[terms[i]] * y;
        }
    }
    for col in 0..k {
        let pivot = (col..k).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
        a.swap(col, pivot);
        if a[col][col].abs() < 1e-300 {
            return None;
        }
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (v, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *v -= f * p;
                }
            }
        }
    }
    let mut c = [0.0; 4];
    for i in 0..k {
        c[terms[i]] = a[i][k] / a[i][i];
    }
    Some(c)
}

#[cfg(test)]
mod tests;
