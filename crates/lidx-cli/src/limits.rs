//! Running under a memory limit, shared by the commands that take one (`--memory-limit`,
//! `join --memory-budget`, `--cgroup DIR`): resident memory that follows what is held, the
//! cgroup the user made, and which limit applies.

use std::path::Path;

use crate::allocator::follow_held_memory;
use crate::units::human_bytes;

/// Sets the process up to run under a memory limit: its resident memory follows what it
/// holds ([`follow_held_memory`]). Then moves it into the cgroup at `dir`, if given, and
/// prints its memory limit unless `quiet` (a command whose output is one JSON object);
/// returns that limit.
pub fn run_limited(dir: Option<&Path>, quiet: bool) -> anyhow::Result<Option<u64>> {
    follow_held_memory();
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

/// Prints `record` as the command's only output, with the process's peak RSS, its reads
/// from storage and the cgroup's limit filled in.
pub fn say_record(
    mut record: lidx::partition::UnsortedRecord,
    cgroup_limit: Option<u64>,
) -> anyhow::Result<()> {
    record.peak_rss = lidx::memory::peak_rss();
    record.cgroup_limit = cgroup_limit;
    record.storage_read_bytes = lidx::files::cache::storage_io().map(|io| io.read_bytes);
    say!("{}", serde_json::to_string(&record)?);
    Ok(())
}
