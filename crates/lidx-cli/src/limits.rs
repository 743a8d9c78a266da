//! `--cgroup DIR`, shared by the commands that take a memory limit: join a cgroup the user
//! made, and say which limit applies.

use std::path::Path;

use crate::units::human_bytes;

/// Moves this process into the cgroup at `dir`, if given, and prints its memory limit
/// unless `quiet` (a command whose output is one JSON object).
pub fn enter_cgroup(dir: Option<&Path>, quiet: bool) -> anyhow::Result<()> {
    let Some(dir) = dir else {
        return Ok(());
    };
    let cgroup = lidx::memory::enter_cgroup(dir)?;
    if quiet {
        return Ok(());
    }
    let limit = cgroup.limit.map_or_else(|| "none".to_string(), human_bytes);
    say!(
        "running in cgroup {} (v{}, memory limit {limit})",
        cgroup.dir.display(),
        cgroup.version
    );
    Ok(())
}
