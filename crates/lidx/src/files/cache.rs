//! Starting cold: drop cached pages so the next reads come from the device (paper 1,
//! section 5.1: "all operations are performed with cold cache").

use std::path::Path;

use crate::{Error, Result};

/// Drops the page-cache pages of the file at `path` (`posix_fadvise(DONTNEED)` after
/// flushing its dirty pages). Works for any user who can open the file; the kernel may
/// keep pages that another process has mapped. Refuses anything but a regular file.
pub fn drop_file_pages(path: &Path) -> Result<()> {
    let (file, _) = super::open_regular(path)?;
    file.sync_data()
        .map_err(|e| Error::io(path, "flush the dirty pages of", e))?;
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| Error::io(path, "drop the cached pages of", e.into()))
}

/// Flushes all file systems and drops the whole OS page cache
/// (`echo 3 > /proc/sys/vm/drop_caches`). Needs root; fails with a clear error otherwise.
pub fn drop_os_caches() -> Result<()> {
    let control = Path::new("/proc/sys/vm/drop_caches");
    rustix::fs::sync();
    std::fs::write(control, b"3\n")
        .map_err(|e| Error::io(control, "drop the OS page cache (this needs root)", e))
}

/// What this process has read from and written to storage so far, page-cache hits not
/// counted: `read_bytes` and `write_bytes` of `/proc/self/io` (a write counts when its
/// dirty pages are sent to the device, by whichever process sends them). `None` where the
/// kernel does not report them.
pub fn storage_io() -> Option<StorageIo> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    let field = |name: &str| -> Option<u64> {
        io.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))?
            .trim()
            .parse()
            .ok()
    };
    Some(StorageIo {
        read_bytes: field("read_bytes")?,
        write_bytes: field("write_bytes")?,
    })
}

/// Bytes a process read from and wrote to storage ([`storage_io`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StorageIo {
    /// Bytes read from the device (page-cache misses, read-ahead included).
    pub read_bytes: u64,
    /// Bytes written to the device.
    pub write_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading a file whose pages were dropped goes to storage; reading it again from the
    /// page cache does not (where the kernel counts per-process I/O).
    #[test]
    fn storage_reads_count_misses_not_hits() {
        let Some(start) = storage_io() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 4 << 20]).unwrap();
        drop_file_pages(&path).unwrap();
        let _ = std::fs::read(&path).unwrap();
        let cold = storage_io().unwrap();
        let _ = std::fs::read(&path).unwrap();
        let warm = storage_io().unwrap();
        // tmpfs has no device: nothing is read from storage there, cold or warm.
        assert!(cold.read_bytes >= start.read_bytes);
        assert!(
            warm.read_bytes - cold.read_bytes <= (cold.read_bytes - start.read_bytes).max(64 << 10)
        );
    }
}
