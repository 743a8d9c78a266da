//! Parses arbitrary bytes as an SOSD key file, from memory (at two alignments) and from
//! a file. All three must agree: the same keys, and `(len - 8) / 8` of them, or an error.

use std::io::Write;

use lidx::data::KeyFile;
use lidx::data::sosd::parse_keys;

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    // The same bytes at an 8-byte-aligned address (keys borrowed) and one past it (keys
    // copied), whatever alignment libFuzzer's buffer has.
    let mut raw = vec![0u8; data.len() + 16];
    let start = raw.as_ptr().align_offset(8);
    raw[start..start + data.len()].copy_from_slice(data);
    let aligned = &raw[start..start + data.len()];
    let mut raw_odd = vec![0u8; data.len() + 16];
    let odd = raw_odd.as_ptr().align_offset(8) + 1;
    raw_odd[odd..odd + data.len()].copy_from_slice(data);
    let shifted = &raw_odd[odd..odd + data.len()];

    let parsed = parse_keys(data);
    let a = parse_keys(aligned);
    let b = parse_keys(shifted);
    assert_eq!(parsed, a);
    assert_eq!(parsed, b);

    let mut file = tempfile::NamedTempFile::new().expect("create a temporary file");
    file.write_all(data).expect("write the fuzz input");
    let opened = KeyFile::open(file.path());
    assert_eq!(
        parsed.is_ok(),
        opened.is_ok(),
        "parse {parsed:?} but open {:?}",
        opened.as_ref().err()
    );

    if let (Ok(keys), Ok(kf)) = (&parsed, &opened) {
        let want = (data.len() - 8) / 8;
        assert_eq!(keys.len(), want);
        assert_eq!(kf.len(), want);
        assert_eq!(kf.keys(), &keys[..]);
        for (i, &k) in keys.iter().enumerate() {
            let at = 8 + 8 * i;
            assert_eq!(
                k,
                u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"))
            );
        }
    }
}
