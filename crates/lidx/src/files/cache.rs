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
