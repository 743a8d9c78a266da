//! The demo's disk: a short measurement of the device under its files.

use std::path::Path;
use std::time::Duration;

use lidx::storage::profile::DiskBenchOptions;

use super::{Say, heading, text};
use crate::disk;
use crate::progress::Progress;

/// Section 9: a short measurement of the disk under the demo's files; where it cannot run
/// (no `O_DIRECT`, say), one line says why.
pub(super) fn disk_profile(
    say: &mut Say<'_>,
    progress: &dyn Progress,
    dir: &Path,
) -> anyhow::Result<()> {
    heading(
        say,
        "9. The disk under these files (short run; `lidx bench disk --dir D` for the full profile)",
    )?;
    let options = DiskBenchOptions {
        dir: dir.to_path_buf(),
        file_size: 64 << 20,
        read_sizes: vec![4096, 64 << 10, 1 << 20, 4 << 20],
        time_per_point: Duration::from_millis(100),
        seed: 42,
        queue_depths: vec![1, 8],
    };
    match disk::measure(&options, progress) {
        Ok(profile) => text(say, &disk::profile_table(&profile))?,
        Err(e) => say!(say, "   skipped: {e:#}"),
    }
    Ok(())
}
