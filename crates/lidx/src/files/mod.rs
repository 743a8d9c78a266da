//! File helpers below every other layer: opening input files, memory-mapping them,
//! publishing outputs atomically and dropping cached pages. `data` and `storage` both stand
//! on this module; it knows nothing of key sets or tables.
//!
//! - [`open_regular`], [`open_read`] and `reopen` (crate-private): the checked ways lidx
//!   opens a file to read, each refusing, without blocking, anything but a regular file (a
//!   named pipe, a device, a directory); [`refuse_same_file`] keeps an output from
//!   overwriting an input.
//! - [`parent_dir`]: where temporary files beside an output go.
//! - [`atomic`]: every output file is written to a temporary file (unnamed where the file
//!   system allows, so a killed process leaves nothing), fsynced and renamed into place;
//!   scratch files and directories named so that signals and later runs remove them; the
//!   registry of child processes a signal ends.
//! - [`cache`]: start cold by dropping a file's pages or the whole OS page cache.
//! - [`spill`]: unnamed scratch files of records, written and read back in order (join
//!   output parts, hash partitions).
//! - `map` (crate-private): the memory map, the one place in this module that needs
//!   `unsafe`, with its argument.
//! - `codec` (crate-private): little-endian encoding of file payloads, and a decoder that
//!   checks every length before it reads.
//! - `aligned` (crate-private): the 4096-byte-aligned buffer `O_DIRECT` reads need.
//! - `paged` (crate-private but for [`IoStats`]): the shape of lidx's paged files (a
//!   checksummed header block, 4096-byte pages, a checksummed tail), shared by the
//!   partitions file, the inserted B+tree file and the ALEX file; the one reader of
//!   checksummed pages every paged format reads through (the `.tbl` data blocks too); and
//!   [`IoStats`], the one I/O counter.

pub(crate) mod aligned;
pub mod atomic;
pub mod cache;
pub(crate) mod codec;
mod map;
pub(crate) mod paged;
pub mod spill;

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub use atomic::{
    AtomicFile, ChildGuard, PendingGuard, ScratchDir, end_with_this_process, remove_pending_files,
    scratch_dir, scratch_path, stop_children,
};
pub(crate) use map::map_readonly;
pub use paged::IoStats;

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
/// regular file (a pipe or a device has no length to check a header against), without
/// blocking: a named pipe with no writer is refused at once rather than waited on.
pub fn open_regular(path: &Path) -> Result<(File, u64)> {
    let file = open_for_reading(path, path, false, "open")?;
    let len = file
        .metadata()
        .map_err(|e| Error::io(path, "read the metadata of", e))?
        .len();
    Ok((file, len))
}

/// The refusal of an input that is not a regular file, saying what it is: one message for
/// every input lidx reads.
fn not_a_regular_file(path: &Path, kind: std::fs::FileType) -> Error {
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "something else"
    };
    Error::io(
        path,
        "read",
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it is {what}, not a regular file (lidx reads files, not pipes, devices or directories)"
            ),
        ),
    )
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
/// where the file system refuses it); refuses anything but a regular file, as
/// [`open_regular`] does.
pub fn open_read(path: &Path, direct: bool) -> Result<File> {
    open_for_reading(path, path, direct, "open")
}

/// Asks the kernel to drop the file's clean pages from its page cache (so the next reads
/// of it go to the device, as a cold start's do); a hint, not a guarantee. Refuses what is
/// not a regular file, as [`open_regular`] does.
pub fn drop_cached_pages(path: &Path) -> Result<()> {
    let file = open_for_reading(path, path, false, "open")?;
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| Error::io(path, "drop the cached pages of", e.into()))
}

/// Opens `open` for reading, with `O_DIRECT` when `direct`, and refuses anything but a
/// regular file. Errors name `path` and say they could not `op` it; a file system that
/// refuses `O_DIRECT` gives [`Error::DirectUnsupported`].
///
/// What is not a regular file is refused before it is opened (`stat`), so no device is
/// ever opened; the file is then opened with `O_NONBLOCK` and checked again (`fstat`), so
/// that a named pipe put in its place meanwhile is refused too rather than waited on (a
/// plain open of a pipe waits for a writer, possibly forever). A regular file then gets its
/// blocking mode back (it makes no difference to one, but nothing should inherit a
/// surprising flag).
pub(crate) fn open_for_reading(
    open: &Path,
    path: &Path,
    direct: bool,
    op: &'static str,
) -> Result<File> {
    use rustix::fs::OFlags;
    // Absent or unreadable: the open below says why.
    if let Ok(meta) = std::fs::metadata(open)
        && !meta.is_file()
    {
        return Err(not_a_regular_file(path, meta.file_type()));
    }
    let mut flags = OFlags::NONBLOCK;
    if direct {
        flags |= OFlags::DIRECT;
    }
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(flags.bits() as i32);
    let file = options.open(open).map_err(|e| {
        if direct && e.kind() == io::ErrorKind::InvalidInput {
            Error::DirectUnsupported {
                path: path.to_path_buf(),
                source: e,
            }
        } else {
            Error::io(path, op, e)
        }
    })?;
    let kind = file
        .metadata()
        .map_err(|e| Error::io(path, "read the metadata of", e))?
        .file_type();
    if !kind.is_file() {
        return Err(not_a_regular_file(path, kind));
    }
    rustix::fs::fcntl_getfl(&file)
        .and_then(|flags| rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK))
        .map_err(|e| Error::io(path, op, e.into()))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Makes a named pipe at `path` (for the tests of `atomic` too).
    pub(super) fn mkfifo(path: &Path) {
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            path,
            rustix::fs::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
    }

    /// A named pipe with no writer is refused at once (a plain open would wait for one
    /// forever: the test would hang, not fail), by every way lidx opens an input.
    #[test]
    fn inputs_that_are_not_regular_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p");
        mkfifo(&fifo);
        let link = dir.path().join("link-to-p");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        for path in [&fifo, &link] {
            let errors = [
                open_regular(path).err().unwrap(),
                open_read(path, false).err().unwrap(),
                drop_cached_pages(path).err().unwrap(),
            ];
            for err in errors {
                let text = err.to_string();
                assert!(text.contains("named pipe"), "{text}");
                assert!(text.contains("not a regular file"), "{text}");
                assert!(text.contains(&*path.to_string_lossy()), "{text}");
            }
        }
        for (path, what) in [
            (Path::new("/dev/null"), "a device"),
            (dir.path(), "a directory"),
        ] {
            let err = open_regular(path).err().unwrap();
            assert!(err.to_string().contains(what), "{err}");
        }
    }

    #[test]
    fn a_regular_file_opens_blocking_with_its_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").unwrap();
        let (file, len) = open_regular(&path).unwrap();
        assert_eq!(len, 5);
        let flags = rustix::fs::fcntl_getfl(&file).unwrap();
        assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK));
    }
}
