//! Cgroups an experiment makes to bound a run's memory as paper 1 bounded its processes
//! (section 5.4: "To constrain the memory during join process, we employ CGroupsV2"): the
//! whole process, its page cache included.
//!
//! Where the machine allows it (a writable memory controller: cgroup v2, or v1 as on these
//! machines), [`MadeCgroups::make`] creates one child of the experiment's own cgroup per
//! memory limit, named `lidx-<pid>-<n>`, each with its limit set; the runs join them with
//! `--cgroup`. They are removed when dropped, registered with the pending-file guard so
//! that SIGINT and SIGTERM remove them too, and a later study removes those a killed one
//! left (their process gone). Where it cannot, it says why, and the study runs without.

use std::fs;
use std::path::{Path, PathBuf};

use lidx::files::PendingGuard;

/// Cgroups this process has made: the `n` of the next one's name.
static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A cgroup this process made, removed when dropped (once its processes have left).
#[derive(Debug)]
pub struct MadeCgroup {
    dir: PathBuf,
    version: u8,
    limit: u64,
    _guard: PendingGuard,
}

impl MadeCgroup {
    /// Its directory, which `lidx ... --cgroup` joins.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its memory limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The most memory (the processes' own and their page cache) it held since the last
    /// [`reset_peak`](Self::reset_peak), where the kernel reports it.
    pub fn peak(&self) -> Option<u64> {
        let file = match self.version {
            1 => "memory.max_usage_in_bytes",
            _ => "memory.peak",
        };
        read_u64(&self.dir.join(file))
    }

    /// Times its usage reached the limit (v1 `memory.failcnt`; v2 `memory.events`'s `max`).
    pub fn limit_hits(&self) -> Option<u64> {
        match self.version {
            1 => read_u64(&self.dir.join("memory.failcnt")),
            _ => event(&self.dir.join("memory.events"), "max"),
        }
    }

    /// Starts the peak and the limit hits afresh, where the kernel allows it (v1; v2 from
    /// Linux 6.12 for the peak).
    pub fn reset_peak(&self) {
        let files: &[&str] = match self.version {
            1 => &["memory.max_usage_in_bytes", "memory.failcnt"],
            _ => &["memory.peak"],
        };
        for f in files {
            let _ = fs::write(self.dir.join(f), "0");
        }
    }
}

impl Drop for MadeCgroup {
    fn drop(&mut self) {
        // A process that just exited may still be leaving: try a few times.
        for _ in 0..50 {
            if fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// The cgroups of a study, one per memory limit in order.
#[derive(Debug)]
pub struct MadeCgroups {
    /// The cgroups.
    pub cgroups: Vec<MadeCgroup>,
    /// Where they are, and what they are: "cgroup v1 memory controller under DIR".
    pub place: String,
}

impl MadeCgroups {
    /// One cgroup per limit in `limits`, each with memory limit `limit + overhead` (the
    /// process's own memory, its binary and allocator, beside what `--memory-limit`
    /// governs), children of this process's own memory cgroup. `Err` says why they cannot
    /// be made here (no memory controller, no permission, a v2 parent that cannot delegate
    /// memory), having made none.
    pub fn make(limits: &[u64], overhead: u64) -> Result<MadeCgroups, String> {
        let (parent, version) = own_memory_cgroup()?;
        sweep_stale(&parent);
        if version == 2 {
            let controllers =
                fs::read_to_string(parent.join("cgroup.subtree_control")).map_err(|e| {
                    format!(
                        "{}: cannot read cgroup.subtree_control: {e}",
                        parent.display()
                    )
                })?;
            if !controllers.split_whitespace().any(|c| c == "memory") {
                return Err(format!(
                    "{}: its children get no memory controller (cgroup.subtree_control lacks memory)",
                    parent.display()
                ));
            }
        }
        let mut cgroups = Vec::new();
        for &limit in limits {
            let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = parent.join(format!("lidx-{}-{n}", std::process::id()));
            fs::create_dir(&dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
            let made = MadeCgroup {
                _guard: PendingGuard::empty_dir(&dir),
                dir,
                version,
                limit: limit.saturating_add(overhead),
            };
            let file = if version == 1 {
                "memory.limit_in_bytes"
            } else {
                "memory.max"
            };
            fs::write(made.dir.join(file), made.limit.to_string())
                .map_err(|e| format!("{}: cannot set {file}: {e}", made.dir.display()))?;
            cgroups.push(made);
        }
        Ok(MadeCgroups {
            cgroups,
            place: format!(
                "cgroup v{version} memory controller under {}",
                parent.display()
            ),
        })
    }
}

/// This process's memory cgroup's directory and the cgroup version, from
/// `/proc/self/cgroup` and `/proc/self/mountinfo`.
fn own_memory_cgroup() -> Result<(PathBuf, u8), String> {
    let groups = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let mounts = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    // v1: a line "N:memory:/path" and a mount of type cgroup with the memory option.
    let v1 = groups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    });
    if let Some(path) = v1 {
        let mount = mount_point(&mounts, |fstype, options| {
            fstype == "cgroup" && options.split(',').any(|o| o == "memory")
        })
        .ok_or("no cgroup v1 memory controller is mounted")?;
        return Ok((join_cgroup_path(&mount, &path), 1));
    }
    // v2: the line "0::/path" and the cgroup2 mount.
    let path = groups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process is in no memory cgroup")?;
    let mount = mount_point(&mounts, |fstype, _| fstype == "cgroup2")
        .ok_or("no cgroup2 file system is mounted")?;
    Ok((join_cgroup_path(&mount, path), 2))
}

/// The mount point of the first mount in `mountinfo` whose file system type and super
/// options `wanted` accepts.
fn mount_point(mountinfo: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        // "id parent dev root mountpoint options [optional...] - fstype source superoptions"
        let (before, after) = line.split_once(" - ")?;
        let mount = before.split(' ').nth(4)?;
        let mut after = after.split(' ');
        let (fstype, _, options) = (after.next()?, after.next()?, after.next().unwrap_or(""));
        wanted(fstype, options).then(|| PathBuf::from(mount))
    })
}

/// `mount` joined with the cgroup path `path` (which starts with `/`).
fn join_cgroup_path(mount: &Path, path: &str) -> PathBuf {
    mount.join(path.trim_start_matches('/'))
}

/// Removes the cgroups `lidx-<pid>-<n>` under `parent` whose process is gone (a study
/// killed before it could remove them); those of running processes stay.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("lidx-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The count of `key` in a `memory.events` file.
fn event(path: &Path, key: &str) -> Option<u64> {
    fs::read_to_string(path).ok()?.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_read_from_mountinfo() {
        let info = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                    35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n";
        let v1 = mount_point(info, |t, o| {
            t == "cgroup" && o.split(',').any(|x| x == "memory")
        });
        assert_eq!(v1, Some(PathBuf::from("/sys/fs/cgroup/memory")));
        let v2 = mount_point(info, |t, _| t == "cgroup2");
        assert_eq!(v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(mount_point(info, |t, _| t == "nfs"), None);
        assert_eq!(
            join_cgroup_path(Path::new("/sys/fs/cgroup/memory"), "/a/b"),
            PathBuf::from("/sys/fs/cgroup/memory/a/b")
        );
    }

    /// Where this machine lets a process make memory cgroups (as root on cgroup v1 or a
    /// delegated v2), each gets its limit and goes when dropped; where it does not, the
    /// reason names what is missing. Either way nothing is left behind.
    #[test]
    fn made_cgroups_have_their_limits_and_go_when_dropped() {
        match MadeCgroups::make(&[64 << 20, 128 << 20], 16 << 20) {
            Ok(made) => {
                let dirs: Vec<PathBuf> =
                    made.cgroups.iter().map(|c| c.dir().to_path_buf()).collect();
                assert_eq!(made.cgroups.len(), 2);
                for (c, want) in made.cgroups.iter().zip([80u64 << 20, 144 << 20]) {
                    assert_eq!(c.limit(), want);
                    let file = if c.version == 1 {
                        "memory.limit_in_bytes"
                    } else {
                        "memory.max"
                    };
                    assert_eq!(read_u64(&c.dir().join(file)), Some(want), "{made:?}");
                    assert!(c.dir().exists());
                    assert!(
                        c.dir()
                            .file_name()
                            .unwrap()
                            .to_string_lossy()
                            .starts_with(&format!("lidx-{}-", std::process::id()))
                    );
                }
                drop(made);
                assert!(dirs.iter().all(|d| !d.exists()), "{dirs:?}");
            }
            Err(why) => assert!(!why.is_empty()),
        }
    }

    /// A cgroup a killed study left (its process gone) is removed by the next study's
    /// [`MadeCgroups::make`]; one of a running process stays.
    #[test]
    fn cgroups_of_gone_processes_are_swept() {
        let Ok((parent, _)) = own_memory_cgroup() else {
            return;
        };
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let stale = parent.join(format!("lidx-{dead}-0"));
        if fs::create_dir(&stale).is_err() {
            // Not allowed to make cgroups here: `make` says why (the other test).
            assert!(MadeCgroups::make(&[1 << 20], 0).is_err());
            return;
        }
        let made = MadeCgroups::make(&[64 << 20], 0).unwrap();
        assert!(!stale.exists(), "{stale:?} was not swept");
        assert!(made.cgroups[0].dir().exists());
    }
}
