//! Opens arbitrary bytes as a key-value file. Outcome: `Err`, or a file whose info, verify,
//! gets and scans return without panicking (errors allowed: blocks are checked when read);
//! a file that verifies scans its keys in increasing order from the key asked for.

use std::io::Write;

use lidx::kv::{BlockCache, KvFile, Reader};
use lidx::storage::ReadMode;

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
    let mut file = tempfile::NamedTempFile::new().expect("create a temporary file");
    file.write_all(data).expect("write the input");
    let Ok(kv) = KvFile::open(file.path(), ReadMode::Buffered) else {
        return;
    };
    let _ = lidx::kv::info(&kv);
    let verified = lidx::kv::verify(&kv).is_ok();
    let cache = BlockCache::new(1 << 20);
    let mut reader = Reader::new(&kv, &cache);
    reader.set_prefetch(true);
    for key in [
        &b""[..],
        b"a",
        b"key0001",
        &[0xff; 20],
        &data[..data.len().min(8)],
    ] {
        let _ = reader.get(key);
        let mut last: Option<Vec<u8>> = None;
        let mut ordered = true;
        let scanned = reader.scan(key, 50, |k, _| {
            ordered &= last.as_deref().is_none_or(|l| l < k) && k >= key;
            last = Some(k.to_vec());
        });
        if verified && scanned.is_ok() {
            assert!(ordered, "a verified file scanned out of order");
        }
    }
}
