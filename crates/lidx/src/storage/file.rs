//! Opening and mapping input files: the one place that memory-maps, so the one `unsafe`
//! argument lives here.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use memmap2::Mmap;

use crate::{Error, Result};

/// Opens `path` for reading and returns the file and its length. Refuses anything but a
/// regular file (a pipe or a device has no length to check a header against).
pub fn open_regular(path: &Path) -> Result<(File, u64)> {
    let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::io(path, "read the metadata of", e))?;
    if !meta.is_file() {
        return Err(Error::io(
            path,
            "read",
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is not a regular file (lidx reads files, not pipes or devices)",
            ),
        ));
    }
    Ok((file, meta.len()))
}

/// Opens the same file as `file` once more, as a new open file description (so its flags,
/// `O_DIRECT` among them, are its own), through `/proc/self/fd`. Unlike opening by path,
/// this reaches the very file `file` has open even if the path was renamed over since.
pub fn reopen(file: &File, path: &Path, direct: bool) -> Result<File> {
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let mut options = OpenOptions::new();
    options.read(true);
    if direct {
        options.custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32);
    }
    options.open(&proc_path).map_err(|e| {
        if direct && e.kind() == io::ErrorKind::InvalidInput {
            Error::DirectUnsupported {
                path: path.to_path_buf(),
                source: e,
            }
        } else {
            Error::io(path, "open a second handle to", e)
        }
    })
}

/// Maps `len` bytes of `file` from `offset` read-only; `len` must be at least 1.
pub fn map_readonly(file: &File, path: &Path, offset: u64, len: usize) -> Result<Mmap> {
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
