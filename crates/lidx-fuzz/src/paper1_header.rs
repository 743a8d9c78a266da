//! Decodes arbitrary bytes as paper 1's 16-byte header, for a file as long as the input
//! (and, to reach the overflow checks, for a length read from the input's bytes 16..24).

use lidx::storage::paper1::{HEADER_LEN, decode_header, encode_header};

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    let check = |file_len: u64| {
        if let Ok(count) = decode_header(data, file_len) {
            assert_eq!(
                count
                    .checked_mul(16)
                    .and_then(|b| b.checked_add(HEADER_LEN as u64)),
                Some(file_len)
            );
            assert_eq!(encode_header(count)[..], data[..HEADER_LEN]);
        }
    };
    check(data.len() as u64);
    if let Some(len) = data.get(16..24) {
        check(u64::from_le_bytes(len.try_into().expect("8 bytes")));
    }
}
