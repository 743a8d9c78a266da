//! The least-squares line of paper 4, section 4 ("Learned Index Training"): fitted in one
//! pass to `S(k)`, the bytes of all records before key `k`, over the keys mapped to
//! integers ([`KeyMap`](super::KeyMap)); record `⟨k, v⟩` then goes to block `⌊f(k) / τ⌋`.
//! Because `f` never decreases, blocks hold key ranges in order, and the line alone finds
//! a key's block: no key is stored in the index.

/// Running sums for the closed-form least-squares fit of `y` on `x`, one point at a time.
/// Points are centred on the first one, so that sums of squares of 2^53-sized integers
/// keep their precision.
#[derive(Clone, Debug, Default)]
pub struct LineFit {
    n: f64,
    origin: Option<(f64, f64)>,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl LineFit {
    /// Adds the point `(x, y)`.
    pub fn add(&mut self, x: u64, y: u64) {
        let (x, y) = (x as f64, y as f64);
        let (ox, oy) = *self.origin.get_or_insert((x, y));
        let (dx, dy) = (x - ox, y - oy);
        self.n += 1.0;
        self.sx += dx;
        self.sy += dy;
        self.sxx += dx * dx;
        self.sxy += dx * dy;
    }

    /// The fitted line; its slope is never negative (with `x` and `y` both rising, as keys
    /// and their offsets do, least squares gives none; a rounding that would is cut to 0).
    /// With no spread in `x` the line is flat at the mean of `y`.
    pub fn line(&self) -> Line {
        let Some((ox, oy)) = self.origin else {
            return Line {
                slope: 0.0,
                intercept: 0.0,
            };
        };
        let n = self.n;
        let var = self.sxx - self.sx * self.sx / n;
        let cov = self.sxy - self.sx * self.sy / n;
        let slope = if var > 0.0 { (cov / var).max(0.0) } else { 0.0 };
        let mean_x = ox + self.sx / n;
        let mean_y = oy + self.sy / n;
        Line {
            slope,
            intercept: mean_y - slope * mean_x,
        }
    }
}

/// `f(x) = slope · x + intercept`, with `slope >= 0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    /// Bytes per unit of the mapped key.
    pub slope: f64,
    /// Bytes at mapped key 0.
    pub intercept: f64,
}

impl Line {
    /// `f(x)`: predicted bytes before a key mapped to `x`. Never decreasing in `x`.
    pub fn predict(&self, x: u64) -> f64 {
        self.slope * x as f64 + self.intercept
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

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
    }

    #[test]
    fn no_points_one_point_and_no_spread_give_a_flat_line() {
        assert_eq!(LineFit::default().line().slope, 0.0);
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

    proptest! {
        /// Over rising offsets the predictions never decrease with the key.
        #[test]
        fn predictions_never_decrease(
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
}
