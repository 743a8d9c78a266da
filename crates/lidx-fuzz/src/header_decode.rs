//! Decodes arbitrary bytes as a `.tbl` header. A header that decodes must be exactly the
//! one lidx writes: encoding it again gives back the input's first 4096 bytes.

use lidx::storage::{BLOCK_SIZE, TableHeader};

/// Runs the target on `data`: panics only on a bug in lidx.
pub fn run(data: &[u8]) {
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
}
