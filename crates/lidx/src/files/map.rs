//! The memory map of an input file: the one place in [`files`](super) that needs
//! `unsafe`, so its argument lives here.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::{Error, Result};

/// Maps `len` bytes of `file` from `offset` read-only; `len` must be at least 1.
///
/// Crate-private because its soundness rests on how lidx treats its files (below), which
/// callers outside lidx cannot promise.
pub(crate) fn map_readonly(file: &File, path: &Path, offset: u64, len: usize) -> Result<Mmap> {
    // SAFETY: the map is read-only and private to this process. lidx never writes an input
    // file in place (every writer creates a new file and renames it over the old path), so
    // the mapped pages change only if another program truncates or rewrites the file while
    // it is mapped, which lidx documents as unsupported.
    #[expect(
        unsafe_code,
        reason = "memory-mapping a file is unsafe; see SAFETY above"
    )]
    let map = unsafe {
        memmap2::MmapOptions::new()
            .offset(offset)
            .len(len)
            .map(file)
    };
    map.map_err(|e| Error::io(path, "memory-map", e))
}
