//! Bounds on a table's key taken from a query's filters, so a scan of a sorted table reads
//! only the positions they allow.

use std::fmt;

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};

/// The keys `low..=high` (empty when `low > high`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRange {
    /// The least key allowed.
    pub low: u64,
    /// The greatest key allowed.
    pub high: u64,
}

impl KeyRange {
    /// Every key.
    pub const ALL: KeyRange = KeyRange {
        low: 0,
        high: u64::MAX,
    };
    /// No key.
    pub const EMPTY: KeyRange = KeyRange { low: 1, high: 0 };

    /// The keys both allow.
    pub fn intersect(self, other: KeyRange) -> KeyRange {
        KeyRange {
            low: self.low.max(other.low),
            high: self.high.min(other.high),
        }
    }

    /// True when it allows no key.
    pub fn is_empty(self) -> bool {
        self.low > self.high
    }

    /// True when it allows `key`.
    pub fn contains(self, key: u64) -> bool {
        self.low <= key && key <= self.high
    }
}

impl fmt::Display for KeyRange {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.is_empty() {
            write!(f, "[]")
        } else {
            write!(f, "[{}, {}]", self.low, self.high)
        }
    }
}

/// A literal as a key: `Ok(key)` for an integer in `u64`'s range, `Err(true)` for one
/// above it, `Err(false)` for one below it; `None` for anything else (a float, a string,
/// a null).
fn literal_key(value: &ScalarValue) -> Option<Result<u64, bool>> {
    let wide: i128 = match value {
        ScalarValue::UInt64(Some(v)) => i128::from(*v),
        ScalarValue::UInt32(Some(v)) => i128::from(*v),
        ScalarValue::UInt16(Some(v)) => i128::from(*v),
        ScalarValue::UInt8(Some(v)) => i128::from(*v),
        ScalarValue::Int64(Some(v)) => i128::from(*v),
        ScalarValue::Int32(Some(v)) => i128::from(*v),
        ScalarValue::Int16(Some(v)) => i128::from(*v),
        ScalarValue::Int8(Some(v)) => i128::from(*v),
        _ => return None,
    };
    Some(u64::try_from(wide).map_err(|_| wide > 0))
}

/// The keys `column <op> literal` allows, for a literal of any integer type.
fn compare(op: Operator, literal: Result<u64, bool>) -> Option<KeyRange> {
    use Operator::{Eq, Gt, GtEq, Lt, LtEq};
    let all_or_none = |all: bool| if all { KeyRange::ALL } else { KeyRange::EMPTY };
    Some(match (op, literal) {
        (Eq, Ok(v)) => KeyRange { low: v, high: v },
        (Eq, Err(_)) => KeyRange::EMPTY,
        (Lt, Ok(v)) => match v.checked_sub(1) {
            Some(high) => KeyRange { low: 0, high },
            None => KeyRange::EMPTY,
        },
        (LtEq, Ok(v)) => KeyRange { low: 0, high: v },
        (Gt, Ok(v)) => match v.checked_add(1) {
            Some(low) => KeyRange {
                low,
                high: u64::MAX,
            },
            None => KeyRange::EMPTY,
        },
        (GtEq, Ok(v)) => KeyRange {
            low: v,
            high: u64::MAX,
        },
        // A literal above every key: `key < big` holds for all; below every key: none.
        (Lt | LtEq, Err(above)) => all_or_none(above),
        (Gt | GtEq, Err(above)) => all_or_none(!above),
        _ => return None,
    })
}

/// The keys a filter allows when it bounds the column named `column` alone (`key = 5`,
/// `key >= 10`, `3 < key`, `key BETWEEN 1 AND 9`, and conjunctions of them); `None` when it
/// says something else, which the scan leaves to DataFusion.
pub fn key_range(filter: &Expr, column: &str) -> Option<KeyRange> {
    let is_key = |e: &Expr| matches!(e, Expr::Column(c) if c.name == column);
    let literal = |e: &Expr| match e {
        Expr::Literal(v, _) => literal_key(v),
        _ => None,
    };
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            if *op == Operator::And {
                return Some(key_range(left, column)?.intersect(key_range(right, column)?));
            }
            if is_key(left) {
                compare(*op, literal(right)?)
            } else if is_key(right) {
                compare(op.swap()?, literal(left)?)
            } else {
                None
            }
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if is_key(expr) => {
            let low = compare(Operator::GtEq, literal(low)?)?;
            let high = compare(Operator::LtEq, literal(high)?)?;
            Some(low.intersect(high))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    #[test]
    fn bounds_on_the_key_become_ranges_and_anything_else_none() {
        let r = |e: Expr| key_range(&e, "key");
        let range = |low, high| Some(KeyRange { low, high });
        assert_eq!(r(col("key").eq(lit(5u64))), range(5, 5));
        assert_eq!(r(col("key").lt(lit(5u64))), range(0, 4));
        assert_eq!(r(col("key").lt(lit(0u64))), Some(KeyRange::EMPTY));
        assert_eq!(r(col("key").gt(lit(u64::MAX))), Some(KeyRange::EMPTY));
        assert_eq!(r(col("key").gt_eq(lit(7i64))), range(7, u64::MAX));
        assert_eq!(r(lit(7i32).lt(col("key"))), range(8, u64::MAX));
        assert_eq!(r(col("key").gt(lit(-3i64))), Some(KeyRange::ALL));
        assert_eq!(r(col("key").lt_eq(lit(-3i64))), Some(KeyRange::EMPTY));
        assert_eq!(r(col("key").eq(lit(-3i64))), Some(KeyRange::EMPTY));
        assert_eq!(r(col("key").between(lit(3u64), lit(9u64))), range(3, 9));
        assert_eq!(
            r(col("key").gt(lit(3u64)).and(col("key").lt(lit(9u64)))),
            range(4, 8)
        );
        assert_eq!(r(col("value").eq(lit(5u64))), None);
        assert_eq!(r(col("key").not_eq(lit(5u64))), None);
        assert_eq!(r(col("key").eq(lit(1.5f64))), None);
        assert_eq!(
            r(col("key").gt(lit(3u64)).or(col("key").lt(lit(1u64)))),
            None
        );
        assert_eq!(r(col("key").not_between(lit(3u64), lit(9u64))), None);
        assert!(KeyRange::EMPTY.is_empty() && !KeyRange::EMPTY.contains(0));
    }
}
