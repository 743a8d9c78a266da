//! The last-mile search (paper 1, section 4.2): once an index has narrowed a key to a
//! window of positions, a branchless lower bound finds it among the keys or tuples of that
//! window. It sits below `storage` and `index`, which both finish their searches with it.

/// The lower bound of `key` in `items` (ordered by `key_of`): the first position whose key
/// is `>= key`, or `items.len()`. Branchless (paper 1, section 4.2: the comparison feeds a
/// conditional move, not a jump), so its time depends on the length alone.
#[inline]
pub fn lower_bound<T>(items: &[T], key: u64, key_of: impl Fn(&T) -> u64) -> usize {
    let mut len = items.len();
    if len == 0 {
        return 0;
    }
    let mut base = 0usize;
    while len > 1 {
        let half = len / 2;
        // base + half - 1 < base + len <= items.len(): always in bounds.
        let probe = items.get(base + half - 1).map_or(u64::MAX, &key_of);
        base = if probe < key { base + half } else { base };
        len -= half;
    }
    base + usize::from(items.get(base).is_some_and(|t| key_of(t) < key))
}
