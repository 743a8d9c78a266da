//! File helpers below every other layer: opening input files, memory-mapping them,
//! publishing outputs atomically and dropping cached pages. `data` and `storage` both stand
//! on this module; it knows nothing of key sets or tables.
//!
//! - `open_regular` and `reopen` (crate-private): the checked ways lidx opens a file to
//!   read; [`refuse_same_file`] keeps an output from overwriting an input.
//! - [`parent_dir`]: where temporary files beside an output go.
//! - [`atomic`]: every output file is written to a temporary file (unnamed where the file
//!   system allows, so a killed process leaves nothing), fsynced and renamed into place.
//! - [`cache`]: start cold by dropping a file's pages or the whole OS page cache.
//! - `map` (crate-private): the memory map, the one place in this module that needs
//!   `unsafe`, with its argument.
//! - `codec` (crate-private): little-endian encoding of file payloads, and a decoder that
//!   checks every length before it reads.
//! - `paged` (crate-private): the shape of lidx's paged files (a checksummed header block,
//!   4096-byte pages, a checksummed tail), shared by the partitions file, the inserted
//!   B+tree file and the ALEX file.

pub mod atomic;
pub mod cache;
pub(crate) mod codec;
mod map;
pub(crate) mod paged;

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub use atomic::{
    AtomicFile, PendingGuard, ScratchDir, remove_pending_files, scratch_dir, scratch_path,
};
pub(crate) use map::map_readonly;

use crate::{Error, Result};

/// The directory holding `path` (`.` for a bare file name): where temporary files beside
/// an output go, so that a rename into place stays on one file system.
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Fails with [`Error::OutputIsInput`] when `output` names the file `input` names (the same
/// device and inode, whatever the paths): writing it would destroy the input before it is
/// read. Paths that do not exist yet are fine.
pub fn refuse_same_file(input: &Path, output: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(a), Ok(b)) = (std::fs::metadata(input), std::fs::metadata(output))
        && (a.dev(), a.ino()) == (b.dev(), b.ino())
    {
        return Err(Error::OutputIsInput {
            output: output.to_path_buf(),
            input: input.to_path_buf(),
        });
    }
    Ok(())
}

/// Opens `path` for reading and returns the file and its length. Refuses anything but a
/// regular file (a pipe or a device has no length to check a header against).
pub(crate) fn open_regular(path: &Path) -> Result<(File, u64)> {
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
/// `path` names the file in errors.
pub(crate) fn reopen(file: &File, path: &Path, direct: bool) -> Result<File> {
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    open_for_reading(
        Path::new(&proc_path),
        path,
        direct,
        "open a second handle to",
    )
}

/// Opens `path` for reading, with `O_DIRECT` when `direct` ([`Error::DirectUnsupported`]
/// where the file system refuses it).
pub fn open_read(path: &Path, direct: bool) -> Result<File> {
    open_for_reading(path, path, direct, "open")
}

/// Asks the kernel to drop the file's clean pages from its page cache (so the next reads
/// of it go to the device, as a cold start's do); a hint, not a guarantee.
pub fn drop_cached_pages(path: &Path) -> Result<()> {
    let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| Error::io(path, "drop the cached pages of", e.into()))
}

/// Opens `open` for reading, with `O_DIRECT` when `direct`. Errors name `path` and say
/// they could not `op` it; a file system that refuses `O_DIRECT` gives
/// [`Error::DirectUnsupported`].
pub(crate) fn open_for_reading(
    open: &Path,
    path: &Path,
    direct: bool,
    op: &'static str,
) -> Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    if direct {
        options.custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32);
    }
    options.open(open).map_err(|e| {
        if direct && e.kind() == io::ErrorKind::InvalidInput {
            Error::DirectUnsupported {
                path: path.to_path_buf(),
                source: e,
            }
        } else {
            Error::io(path, op, e)
        }
    })
}
