//! Opens arbitrary bytes as an ALEX file (ALEX's data nodes on disk). Outcome: `Err`, or a
//! file whose accessors, `verify` and lookups (fixed keys and keys from the input's first
//! bytes) return without panicking or looping (errors allowed: pages are checked when
//! read, and a page with a valid checksum may still hold anything).

#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use lidx::storage::ReadMode;
use lidx::updatable::alex::{AlexFile, AlexReader};

fuzz_target!(|data: &[u8]| {
    let mut file = tempfile::NamedTempFile::new().expect("create a temporary file");
    file.write_all(data).expect("write the input");
    let Ok(alex) = AlexFile::open(file.path()) else {
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
    let Ok(mut reader) = AlexReader::new(&alex, ReadMode::Buffered) else {
        return;
    };
    let from_input = data
        .chunks_exact(8)
        .take(16)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    for key in [0, 1, 1 << 32, u64::MAX - 1, u64::MAX].into_iter().chain(from_input) {
        let found = reader.get_all(key);
        if verified.is_ok() {
            // A file that verifies answers every lookup.
            assert!(found.is_ok(), "a verified file failed a lookup of {key}");
        }
    }
});
