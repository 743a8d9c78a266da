//! Opens arbitrary bytes as an ALEX file (ALEX's data nodes on disk), as they are and with
//! every checksum recomputed (so that mutations reach the tail's decoder and the lookups
//! instead of stopping at a CRC). Outcome: `Err`, or a file whose accessors, `verify` and
//! lookups (fixed keys and keys from the input's first bytes) return without panicking or
//! looping (errors allowed: pages are checked when read, and a page with a valid checksum
//! may still hold anything). `AlexFile::verify_file`, the check `lidx index verify` runs,
//! must agree with `open` and `verify`.

use std::io::Write;

use lidx::storage::ReadMode;
use lidx::updatable::alex::{AlexFile, AlexReader};

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    open_and_look_up(data, data);
    let mut repaired = data.to_vec();
    repair_checksums(&mut repaired);
    open_and_look_up(&repaired, data);
}

/// The little-endian `u64` at byte `at`.
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// Sets every page's CRC, the tail's and the header's to those of the bytes as they are
/// (FORMAT.md section 10).
fn repair_checksums(bytes: &mut [u8]) {
    const PAGE: usize = 4096;
    if bytes.len() < PAGE {
        return;
    }
    let pages = u64_at(bytes, 24);
    for g in 0..pages.min((bytes.len() / PAGE) as u64) {
        let at = PAGE * (1 + g as usize);
        if at + PAGE > bytes.len() {
            break;
        }
        let crc = crc32c::crc32c(&bytes[at..at + 4080]);
        bytes[at + 4080..at + 4084].copy_from_slice(&crc.to_le_bytes());
    }
    let tail_at = pages
        .checked_add(1)
        .and_then(|p| p.checked_mul(PAGE as u64))
        .and_then(|t| usize::try_from(t).ok());
    if let Some(tail) = tail_at.and_then(|t| bytes.get(t..)) {
        let crc = crc32c::crc32c(tail);
        bytes[48..52].copy_from_slice(&crc.to_le_bytes());
    }
    let crc = crc32c::crc32c(&bytes[..52]);
    bytes[52..56].copy_from_slice(&crc.to_le_bytes());
}

fn open_and_look_up(data: &[u8], keys_from: &[u8]) {
    let mut file = tempfile::NamedTempFile::new().expect("create a temporary file");
    file.write_all(data).expect("write the input");
    let Ok(alex) = AlexFile::open(file.path()) else {
        assert!(
            AlexFile::verify_file(file.path(), None).is_err(),
            "a file open refuses passed verify_file"
        );
        return;
    };
    std::hint::black_box((
        alex.len(),
        alex.pages(),
        alex.slots(),
        alex.depth(),
        alex.size_in_bytes(),
        alex.fingerprint(),
    ));
    let verified = alex.verify();
    assert_eq!(
        AlexFile::verify_file(file.path(), None).is_ok(),
        verified.is_ok(),
        "verify_file disagrees with open and verify"
    );
    let Ok(mut reader) = AlexReader::new(&alex, ReadMode::Buffered) else {
        return;
    };
    let from_input = keys_from
        .chunks_exact(8)
        .take(16)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    for key in [0, 1, 1 << 32, u64::MAX - 1, u64::MAX]
        .into_iter()
        .chain(from_input)
    {
        let found = reader.get_all(key);
        if verified.is_ok() {
            // A file that verifies answers every lookup.
            assert!(found.is_ok(), "a verified file failed a lookup of {key}");
        }
    }
}
