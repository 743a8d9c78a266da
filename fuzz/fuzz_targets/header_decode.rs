//! Decodes arbitrary bytes as a `.tbl` header. A header that decodes must be exactly the
//! one lidx writes: encoding it again gives back the input's first 4096 bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use lidx::storage::{BLOCK_SIZE, TableHeader};

fuzz_target!(|data: &[u8]| {
    let Ok(header) = TableHeader::decode(data) else {
        return;
    };
    let encoded = header.encode();
    assert_eq!(TableHeader::decode(&encoded), Ok(header));
    assert!(header.layout().is_ok());
    assert!(
        encoded[..] == data[..BLOCK_SIZE],
        "{header:?} decodes from bytes it does not encode to; first difference at byte {}",
        encoded
            .iter()
            .zip(data)
            .position(|(a, b)| a != b)
            .unwrap_or(BLOCK_SIZE)
    );
});
