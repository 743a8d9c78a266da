//! Publish-or-nothing output files.
//!
//! An [`AtomicFile`] writes to a temporary file in the destination's directory. Only
//! [`AtomicFile::finish`] makes it visible: it flushes, fsyncs the file, renames it over the
//! destination and fsyncs the directory. Dropping an unfinished `AtomicFile` (an error, a
//! panic) deletes the temporary file, so a failed command never leaves partial output.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tempfile::NamedTempFile;

use crate::{Error, Result};

/// Size of the write buffer in front of the temporary file.
const WRITE_BUFFER: usize = 1 << 20;

/// Temporary files of unfinished outputs in this process, for [`remove_pending_files`].
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes the temporary files of every unfinished output in this process. Destructors do
/// not run when a process is killed by a signal, so a command-line program calls this from
/// its SIGINT/SIGTERM handler before exiting; nothing partial is then left behind.
pub fn remove_pending_files() {
    let pending = PENDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for path in pending.iter() {
        let _ = std::fs::remove_file(path);
    }
}

/// Registers a path for [`remove_pending_files`] for as long as the guard lives: the
/// temporary file of an [`AtomicFile`], or a scratch file a program removes when done.
pub struct PendingGuard(PathBuf);

impl PendingGuard {
    /// Registers `path` until the guard is dropped.
    pub fn new(path: &Path) -> Self {
        let mut pending = PENDING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.push(path.to_path_buf());
        PendingGuard(path.to_path_buf())
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        let mut pending = PENDING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(i) = pending.iter().position(|p| *p == self.0) {
            pending.swap_remove(i);
        }
    }
}

/// A file that appears at its path only when [`finish`](Self::finish) succeeds.
pub struct AtomicFile {
    path: PathBuf,
    writer: BufWriter<NamedTempFile>,
    _pending: PendingGuard,
}

impl AtomicFile {
    /// Starts writing `path`: creates a hidden temporary file beside it.
    pub fn create(path: &Path) -> Result<Self> {
        Self::with_buffer(path, WRITE_BUFFER)
    }

    /// [`create`](Self::create) with a write buffer of `buffer` bytes (many files open at
    /// once, as a partitioning join keeps, need small ones).
    pub fn with_buffer(path: &Path, buffer: usize) -> Result<Self> {
        let dir = super::parent_dir(path);
        if path.is_dir() {
            return Err(Error::io(
                path,
                "write the output",
                std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory"),
            ));
        }
        let tmp = tempfile::Builder::new()
            .prefix(".lidx-tmp-")
            // Ordinary file permissions (0666 less the umask), not the 0600 of a temp file.
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| Error::io(path, "create a temporary file beside the output", e))?;
        Ok(Self {
            path: path.to_path_buf(),
            _pending: PendingGuard::new(tmp.path()),
            writer: BufWriter::with_capacity(buffer, tmp),
        })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.writer
            .write_all(bytes)
            .map_err(|e| Error::io(&self.path, "write", e))
    }

    /// Overwrites `bytes` at `offset` (used to fill in a header once the data is known),
    /// then returns to the end of the file.
    pub fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let path = self.path.clone();
        let io = |e| Error::io(&path, "write", e);
        self.writer.flush().map_err(io)?;
        let file = self.writer.get_mut().as_file_mut();
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        file.write_all(bytes).map_err(io)?;
        file.seek(SeekFrom::End(0)).map_err(io)?;
        Ok(())
    }

    /// Flushes, fsyncs, renames into place and fsyncs the directory.
    pub fn finish(self) -> Result<()> {
        let AtomicFile {
            path,
            writer,
            _pending,
        } = self;
        let tmp = writer
            .into_inner()
            .map_err(|e| Error::io(&path, "write", e.into_error()))?;
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::io(&path, "fsync", e))?;
        tmp.persist(&path)
            .map_err(|e| Error::io(&path, "rename the temporary file into place", e.error))?;
        sync_parent_dir(&path)
    }
}

/// Fsyncs the directory holding `path`, so a rename into it is durable.
fn sync_parent_dir(path: &Path) -> Result<()> {
    let dir = super::parent_dir(path);
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, "fsync the directory", e))
}
