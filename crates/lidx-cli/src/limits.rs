//! `--cgroup DIR`, shared by the commands that take a memory limit: join a cgroup the user
//! made, and say which limit applies.

use std::path::Path;

use crate::units::human_bytes;

/// Buffers of at least this many bytes are mapped apart and unmapped when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: i32 = 128 << 10;

/// Makes freed large buffers go back to the system at once, so that a command's peak RSS
/// follows what it holds under `--memory-limit`. glibc's malloc otherwise raises its mmap
/// threshold to the size of the largest buffer freed (up to 32 MiB) and serves later ones
/// from its heap, which keeps freed memory: a sort-merge join at 31 MiB, two sorts in a
/// row, grew its RSS by 39 MiB; with the threshold fixed at 128 KiB, by 31 MiB.
pub fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[expect(unsafe_code, reason = "mallopt is glibc's C interface")]
    // SAFETY: mallopt only changes a malloc setting; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Moves this process into the cgroup at `dir`, if given, and prints its memory limit
/// unless `quiet` (a command whose output is one JSON object); returns that limit.
pub fn enter_cgroup(dir: Option<&Path>, quiet: bool) -> anyhow::Result<Option<u64>> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    let cgroup = lidx::memory::enter_cgroup(dir)?;
    if quiet {
        return Ok(cgroup.limit);
    }
    let limit = cgroup.limit.map_or_else(|| "none".to_string(), human_bytes);
    say!(
        "running in cgroup {} (v{}, memory limit {limit})",
        cgroup.dir.display(),
        cgroup.version
    );
    Ok(cgroup.limit)
}

/// Prints `record` as the command's only output, with the process's peak RSS and the
/// cgroup's limit filled in.
pub fn say_record(
    mut record: lidx::partition::UnsortedRecord,
    cgroup_limit: Option<u64>,
) -> anyhow::Result<()> {
    record.peak_rss = lidx::memory::peak_rss();
    record.cgroup_limit = cgroup_limit;
    say!("{}", serde_json::to_string(&record)?);
    Ok(())
}
