//! How a row of R or S is stored in its tree (paper 5, section 4): a primary key and a join
//! attribute are integers below 10^10 written as 10 ASCII digits (zero-padded, so byte
//! order is numeric order), as the paper's 10-byte keys. A row is the entry `key = p`,
//! `value = n ‖ rest`, where `rest` fills the entry to its size (default 64 bytes: 10 of
//! key, 10 of attribute, 44 more). The workload generator ([`super::data`]), the key files
//! ([`super::keys`]), the trees and the joins all read and write rows through this.

/// Bytes of an encoded primary key or join attribute.
pub const KEY_BYTES: usize = 10;
/// Keys and attributes are below this (10 decimal digits).
pub const KEY_LIMIT: u64 = 10_000_000_000;
/// The smallest entry: a key and an attribute.
pub const MIN_ENTRY: usize = 2 * KEY_BYTES;

/// `v` (below [`KEY_LIMIT`]) as 10 ASCII digits.
pub fn encode_key(v: u64) -> [u8; KEY_BYTES] {
    debug_assert!(v < KEY_LIMIT);
    let mut out = [b'0'; KEY_BYTES];
    let mut v = v % KEY_LIMIT;
    for b in out.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out
}

/// The value of 10 ASCII digits; `None` for anything else.
pub fn decode_key(bytes: &[u8]) -> Option<u64> {
    if bytes.len() != KEY_BYTES {
        return None;
    }
    bytes.iter().try_fold(0u64, |v, &b| {
        b.is_ascii_digit().then(|| v * 10 + u64::from(b - b'0'))
    })
}

/// The value stored for a row with attribute `attr` in an entry of `entry_size` bytes: the
/// attribute, then `entry_size - 20` bytes of the rest of the row (a pattern of the
/// primary key, so that a covering index's copy can be checked).
pub fn row_value(pk: u64, attr: u64, entry_size: usize) -> Vec<u8> {
    let mut value = Vec::with_capacity(entry_size - KEY_BYTES);
    value.extend_from_slice(&encode_key(attr));
    value.extend(rest_pattern(pk, entry_size));
    value
}

/// The rest of a row beyond its attribute.
pub fn rest_pattern(pk: u64, entry_size: usize) -> impl Iterator<Item = u8> {
    let seed = pk.to_le_bytes();
    (0..entry_size.saturating_sub(MIN_ENTRY)).map(move |i| b'a' + (seed[i % 8] ^ i as u8) % 26)
}

/// The attribute a stored row's value holds; `None` if it is not a row of this format.
pub fn attr_of(value: &[u8]) -> Option<u64> {
    value.get(..KEY_BYTES).and_then(decode_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_encode_as_ten_digits_in_numeric_order() {
        assert_eq!(&encode_key(0), b"0000000000");
        assert_eq!(&encode_key(KEY_LIMIT - 1), b"9999999999");
        assert_eq!(decode_key(&encode_key(1234567)), Some(1234567));
        assert_eq!(decode_key(b"12345678x0"), None);
        assert_eq!(decode_key(b"123"), None);
        assert!(encode_key(99) < encode_key(100));
        let v = row_value(7, 42, 64);
        assert_eq!(v.len(), 54);
        assert_eq!(attr_of(&v), Some(42));
    }
}
