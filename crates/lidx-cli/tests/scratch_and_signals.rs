//! Nothing deleted or replaced that lidx did not make, and nothing left after a kill
//! (issue 33: F9–F12, F14, F15, F17 of the reliability audit of 2026-11-25).
//!
//! - Scratch directories (the grace join's partitions, the demo's files, `bench disk`'s
//!   scratch file, an experiment's data) are removed by the SIGINT/SIGTERM handler, and
//!   after a SIGKILL by the next lidx that writes into their directory.
//! - An experiment's running child `lidx` ends with the experiment, whether it was ended by
//!   SIGTERM (the handler stops the child) or SIGKILL (the child's parent-death signal).
//! - A named pipe as input is refused without waiting for a writer; a named pipe or a
//!   symbolic link as output is refused and left as it was.
//! - `experiment lsm-joins --dir D` leaves what the user has in D alone.
//!
//! No test judges a time: a kill lands when the test has seen the process reach the state it
//! wants (a scratch directory made, a child running), and waits are bounded by the process
//! ending, or by a generous count of short polls that only a hang exhausts.

#![cfg(target_os = "linux")]
#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// Polls of 10 ms before a wait for something that must happen is given up: 10 minutes,
/// which only a process that never gets there uses up.
const PATIENCE: u32 = 60_000;

/// `O_NONBLOCK` on Linux (x86-64, arm64 and the other common ports).
const O_NONBLOCK: i32 = 0o4000;

fn lidx() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lidx"));
    cmd.arg("--quiet");
    cmd
}

/// A fresh directory on the disk the build is on (it has `O_DIRECT`, which `bench disk`
/// needs, unlike some /tmp file systems).
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Runs `lidx args` in `dir` and expects success.
fn ok(dir: &Path, args: &[&str]) {
    let out = lidx().current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "lidx {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The names in `dir`, hidden ones included, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// The scratch directories (`.lidx-tmp-…`) in `dir`.
fn scratch_dirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| {
            e.file_name().to_string_lossy().starts_with(".lidx-tmp-")
                && e.file_type().unwrap().is_dir()
        })
        .map(|e| e.path())
        .collect()
}

/// Sends `signal` (`TERM`, `KILL`, `STOP`, `CONT`) to `pid`; false if there is no such
/// process.
fn signal(pid: u32, signal: &str) -> bool {
    Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Kills `child` with `sig` and waits for it.
fn kill_and_wait(child: &mut Child, sig: &str) -> ExitStatus {
    signal(child.id(), sig);
    child.wait().unwrap()
}

/// Starts `cmd` and waits until `ready` holds, polling; `None` if the process ended first
/// (too fast to catch; the caller tries again), else the running process.
fn start_until(cmd: &mut Command, mut ready: impl FnMut(u32) -> bool) -> Option<Child> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if ready(child.id()) {
            return Some(child);
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "lidx ended before it was caught: {status}"
            );
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `start_until` up to five times, for a process fast enough to end before it is caught.
fn catch(mut cmd: impl FnMut() -> Command, mut ready: impl FnMut(u32) -> bool) -> Child {
    for _ in 0..5 {
        if let Some(child) = start_until(&mut cmd(), &mut ready) {
            return child;
        }
    }
    panic!("the process always ended before it could be caught");
}

/// The state letter and the parent of process `pid`, or `None` once it is gone.
fn stat(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether process `pid` has ended (gone, or a zombie no one has reaped yet).
fn ended(pid: u32) -> bool {
    !matches!(stat(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

/// Waits, polling, until process `pid` has ended; false if it never does.
fn wait_ended(pid: u32) -> bool {
    (0..PATIENCE).any(|_| {
        let gone = ended(pid);
        if !gone {
            std::thread::sleep(Duration::from_millis(10));
        }
        gone
    })
}

/// A running child process of `parent`, if it has one now.
fn child_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| matches!(stat(pid), Some((state, ppid)) if ppid == parent && state != 'Z'))
}

/// Waits until process `pid`, sent SIGSTOP, is stopped; false if it ended instead.
fn stopped(pid: u32) -> bool {
    for _ in 0..PATIENCE {
        match stat(pid) {
            Some(('T', _)) => return true,
            None | Some(('Z' | 'X', _)) => return false,
            Some(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    false
}

/// Whether process `pid` has SIGTERM pending (not yet delivered: it is stopped).
fn term_pending(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().any(|line| {
        let Some((name, mask)) = line.split_once(':') else {
            return false;
        };
        matches!(name, "ShdPnd" | "SigPnd")
            && u64::from_str_radix(mask.trim(), 16).is_ok_and(|m| m & (1 << (15 - 1)) != 0)
    })
}

/// Two tables in `dir/in` for grace joins that partition: 2M inner keys, 1M outer ones in
/// random order, joined under 4 MiB.
fn grace_inputs(dir: &Path) {
    std::fs::create_dir(dir.join("in")).unwrap();
    std::fs::create_dir(dir.join("out")).unwrap();
    let d = dir.join("in");
    ok(
        &d,
        &["gen", "--dist", "lognormal", "--n", "2M", "--out", "b.keys"],
    );
    ok(
        &d,
        &["table", "build", "--keys", "b.keys", "--out", "b.tbl"],
    );
    ok(
        &d,
        &[
            "gen",
            "--sample-of",
            "b.keys",
            "--ratio",
            "2",
            "--shuffle",
            "--out",
            "r.keys",
        ],
    );
    ok(
        &d,
        &["table", "build", "--keys", "r.keys", "--out", "r.tbl"],
    );
}

/// A grace join of the tables of [`grace_inputs`] into `out/g.tbl`, caught partitioning: its
/// scratch directory is in `out/`, beside the output, not beside the inputs.
fn grace_join_partitioning(dir: &Path) -> Child {
    let (inputs, out) = (dir.join("in"), dir.join("out"));
    let child = catch(
        || {
            let mut cmd = lidx();
            cmd.current_dir(dir).args([
                "join",
                "--outer",
                "in/r.tbl",
                "--inner",
                "in/b.tbl",
                "--method",
                "grace",
                "--memory-budget",
                "4MiB",
                "--out",
                "out/g.tbl",
            ]);
            cmd
        },
        |_| !scratch_dirs(&out).is_empty(),
    );
    assert!(scratch_dirs(&inputs).is_empty(), "{:?}", listing(&inputs));
    child
}

const INPUTS: [&str; 4] = ["b.keys", "b.tbl", "r.keys", "r.tbl"];

#[test]
fn a_grace_join_ended_by_sigterm_or_sigint_removes_its_partitions() {
    let dir = scratch();
    let d = dir.path();
    grace_inputs(d);
    for sig in ["TERM", "INT"] {
        let mut join = grace_join_partitioning(d);
        let status = kill_and_wait(&mut join, sig);
        assert_eq!(status.code(), Some(130), "SIG{sig}: {status}");
        assert!(listing(&d.join("out")).is_empty(), "SIG{sig}");
        assert_eq!(listing(&d.join("in")), INPUTS);
    }
}

#[test]
fn a_grace_join_killed_by_sigkill_leaves_partitions_the_next_run_removes() {
    let dir = scratch();
    let d = dir.path();
    grace_inputs(d);
    let mut join = grace_join_partitioning(d);
    let status = kill_and_wait(&mut join, "KILL");
    assert_eq!(status.signal(), Some(9));
    let left = scratch_dirs(&d.join("out"));
    assert_eq!(left.len(), 1, "{:?}", listing(&d.join("out")));
    // The next lidx writing into out/ removes them, the partitions inside too.
    ok(
        d,
        &[
            "join",
            "--outer",
            "in/r.tbl",
            "--inner",
            "in/b.tbl",
            "--method",
            "grace",
            "--memory-budget",
            "4MiB",
            "--out",
            "out/g.tbl",
        ],
    );
    assert_eq!(listing(&d.join("out")), ["g.tbl"]);
    assert_eq!(listing(&d.join("in")), INPUTS);
}

#[test]
fn an_interrupted_demo_leaves_nothing_in_the_temporary_directory() {
    let tmp = scratch();
    let demo = || {
        let mut cmd = lidx();
        cmd.env("TMPDIR", tmp.path()).args(["demo", "--n", "200K"]);
        cmd
    };
    // Caught once it has written a file into its scratch directory.
    let started = |_| {
        scratch_dirs(tmp.path())
            .iter()
            .any(|d| std::fs::read_dir(d).is_ok_and(|mut e| e.next().is_some()))
    };
    let mut run = catch(demo, started);
    let status = kill_and_wait(&mut run, "TERM");
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(listing(tmp.path()).is_empty(), "{:?}", listing(tmp.path()));

    // After a SIGKILL, the next lidx writing into the temporary directory removes it.
    let mut run = catch(demo, started);
    kill_and_wait(&mut run, "KILL");
    assert_eq!(scratch_dirs(tmp.path()).len(), 1);
    ok(
        tmp.path(),
        &["gen", "--dist", "udense", "--n", "10", "--out", "x.keys"],
    );
    assert_eq!(listing(tmp.path()), ["x.keys"]);
}

#[test]
fn bench_disk_leaves_no_scratch_file_after_sigterm_or_sigkill() {
    let dir = scratch();
    let d = dir.path();
    let bench = || {
        let mut cmd = lidx();
        cmd.current_dir(d).args([
            "bench",
            "disk",
            "--dir",
            ".",
            "--file-size",
            "512MiB",
            "--csv",
            "b.csv",
            "--profile",
            "p.json",
        ]);
        cmd
    };
    // Caught once its scratch file exists (inside its scratch directory).
    let writing = |_| {
        scratch_dirs(d).iter().any(|s| {
            listing(s)
                .iter()
                .any(|n| n.starts_with(".lidx-bench-disk-"))
        })
    };
    let mut run = catch(bench, writing);
    let status = kill_and_wait(&mut run, "TERM");
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(listing(d).is_empty(), "{:?}", listing(d));

    let mut run = catch(bench, writing);
    kill_and_wait(&mut run, "KILL");
    assert_eq!(scratch_dirs(d).len(), 1, "{:?}", listing(d));
    ok(
        d,
        &["gen", "--dist", "udense", "--n", "10", "--out", "x.keys"],
    );
    assert_eq!(listing(d), ["x.keys"]);
}

/// `lidx experiment unsorted` with its data in `dir/data` (made first, so it stays), caught
/// while a child `lidx` runs a measurement; returns the experiment and the child.
fn experiment_with_a_child(dir: &Path) -> (Child, u32) {
    lidx::storage::profile::assumed_ssd()
        .save(&dir.join("p.json"))
        .unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let mut found = None;
    let experiment = catch(
        || {
            let mut cmd = lidx();
            cmd.current_dir(dir).args([
                "experiment",
                "unsorted",
                "--n",
                "1M",
                "--ratios",
                "10",
                "--memory-limits",
                "8MiB",
                "--profile",
                "p.json",
                "--dir",
                "data",
                "--out-dir",
                "out",
            ]);
            cmd
        },
        |pid| {
            found = child_of(pid);
            // Stopped, it cannot finish its measurement on its own: only a signal ends it.
            found.is_some_and(|child| signal(child, "STOP") && stopped(child))
        },
    );
    (experiment, found.unwrap())
}

#[test]
fn an_experiment_ended_by_sigterm_stops_its_child_and_removes_its_data() {
    let dir = scratch();
    let d = dir.path();
    let (mut experiment, child) = experiment_with_a_child(d);
    let status = kill_and_wait(&mut experiment, "TERM");
    let child_ended = wait_ended(child);
    if !child_ended {
        signal(child, "KILL");
    }
    assert!(child_ended, "the child {child} outlived the experiment");
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(
        listing(&d.join("data")).is_empty(),
        "{:?}",
        listing(&d.join("data"))
    );
    // The cgroups it made for its runs (where this machine lets it make them) are gone.
    let left = made_cgroups(experiment.id());
    assert!(left.is_empty(), "{left:?}");
}

/// The memory cgroups `lidx-<pid>-<n>` process `pid` made beside this process's cgroup
/// (cgroup v1, as on these machines; none where there is no v1 memory controller).
fn made_cgroups(pid: u32) -> Vec<std::path::PathBuf> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let Some(path) = groups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then_some(path)
    }) else {
        return Vec::new();
    };
    let parent = Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/'));
    let prefix = format!("lidx-{pid}-");
    std::fs::read_dir(&parent)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn an_experiment_killed_by_sigkill_takes_its_child_with_it() {
    let dir = scratch();
    let d = dir.path();
    let (mut experiment, child) = experiment_with_a_child(d);
    kill_and_wait(&mut experiment, "KILL");
    // The parent-death signal is waiting for the stopped child.
    let pending = term_pending(child);
    signal(child, "CONT");
    if !pending {
        signal(child, "KILL");
    }
    assert!(
        pending,
        "the child {child} got no signal when the experiment died"
    );
    assert!(
        wait_ended(child),
        "the child {child} outlived the experiment"
    );
    // The experiment's data is left, in a scratch directory the next lidx there removes.
    assert_eq!(scratch_dirs(&d.join("data")).len(), 1);
    ok(
        &d.join("data"),
        &["gen", "--dist", "udense", "--n", "10", "--out", "x.keys"],
    );
    assert_eq!(listing(&d.join("data")), ["x.keys"]);
}

/// Makes a named pipe at `path`.
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// A named pipe as input is refused without opening it: a process that opened it to read
/// would wait for a writer (forever). The test would then hang, so instead it opens the
/// write end without blocking, which succeeds only while a reader has the pipe open, and
/// counts that as the failure.
#[test]
fn a_named_pipe_as_input_is_refused_without_waiting_for_a_writer() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = scratch();
    let d = dir.path();
    mkfifo(&d.join("p"));
    std::fs::create_dir(d.join("in")).unwrap();
    std::fs::write(d.join("in/r.tsv"), "a\tb\n").unwrap();
    for args in [
        &["table", "info", "p"][..],
        &["kv", "build", "--input", "p", "--out", "x.kv"],
        &[
            "kv",
            "build",
            "--input",
            "in/r.tsv",
            "--layout",
            "tuned",
            "--profile",
            "p",
            "--out",
            "x.kv",
        ],
        &["table", "build", "--keys", "p", "--out", "t.tbl"],
        &["hardness", "p"],
        &["gen", "--sample-of", "p", "--ratio", "2", "--out", "s.keys"],
        &[
            "kv", "build", "--format", "tsv", "--input", "p", "--out", "x.kv",
        ],
    ] {
        let mut run = lidx()
            .current_dir(d)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut opened = false;
        let status = loop {
            if let Some(status) = run.try_wait().unwrap() {
                break status;
            }
            let writer = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(O_NONBLOCK)
                .open(d.join("p"));
            // Closing our end at once lets a blocked reader go on (it reads nothing).
            opened |= writer.is_ok();
            std::thread::sleep(Duration::from_millis(1));
        };
        let out = run.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !opened,
            "lidx {args:?} opened the pipe and waited for a writer"
        );
        assert_eq!(status.code(), Some(1), "lidx {args:?}: {stderr}");
        assert!(stderr.contains("named pipe"), "lidx {args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "lidx {args:?}: {stderr}");
    }
    assert_eq!(listing(d), ["in", "p"]);
}

#[test]
fn a_named_pipe_or_a_symbolic_link_as_output_is_refused_and_left_as_it_was() {
    let dir = scratch();
    let d = dir.path();
    mkfifo(&d.join("fifo_out"));
    std::os::unix::fs::symlink("/proc/self/fd/1", d.join("so")).unwrap();
    std::fs::write(d.join("target.keys"), b"mine").unwrap();
    std::os::unix::fs::symlink("target.keys", d.join("link.keys")).unwrap();
    for (out, what) in [
        ("fifo_out", "named pipe"),
        ("so", "a stream"),
        (
            "link.keys",
            "symbolic link; lidx replaces only regular files",
        ),
    ] {
        let run = lidx()
            .current_dir(d)
            .args(["gen", "--dist", "udense", "--n", "10", "--out", out])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{out}: {stderr}");
        assert!(stderr.contains(what), "{out}: {stderr}");
        assert!(
            stderr.starts_with(&format!("lidx: error: {out}: ")),
            "{stderr}"
        );
    }
    assert_eq!(listing(d), ["fifo_out", "link.keys", "so", "target.keys"]);
    let kind = |p: &str| std::fs::symlink_metadata(d.join(p)).unwrap().file_type();
    assert!(kind("fifo_out").is_fifo());
    assert_eq!(
        std::fs::read_link(d.join("so")).unwrap(),
        Path::new("/proc/self/fd/1")
    );
    assert_eq!(
        std::fs::read_link(d.join("link.keys")).unwrap(),
        Path::new("target.keys")
    );
    assert_eq!(std::fs::read(d.join("target.keys")).unwrap(), b"mine");
}

/// `experiment lsm-joins --dir D` next to the user's own `D/cell0-method0` and a
/// `D/calibration` link: both left as they were, and D too; a D it made is removed.
#[cfg(feature = "rocksdb")]
#[test]
fn lsm_joins_leaves_what_the_user_has_in_its_directory() {
    let dir = scratch();
    let d = dir.path();
    let user = d.join("D/cell0-method0");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("notes.txt"), b"mine").unwrap();
    std::fs::create_dir(d.join("elsewhere")).unwrap();
    std::fs::write(d.join("elsewhere/x"), b"x").unwrap();
    std::os::unix::fs::symlink("../elsewhere", d.join("D/calibration")).unwrap();
    let study = |dir: &str, out: &str| {
        ok(
            d,
            &[
                "experiment",
                "lsm-joins",
                "--rows",
                "1000",
                "--figures",
                "12",
                "--dir",
                dir,
                "--out-dir",
                out,
            ],
        );
    };
    study("D", "out");
    assert_eq!(listing(&d.join("D")), ["calibration", "cell0-method0"]);
    assert_eq!(listing(&user), ["notes.txt"]);
    assert_eq!(std::fs::read(user.join("notes.txt")).unwrap(), b"mine");
    assert_eq!(
        std::fs::read_link(d.join("D/calibration")).unwrap(),
        Path::new("../elsewhere")
    );
    assert_eq!(listing(&d.join("elsewhere")), ["x"]);
    // A --dir that did not exist is made for the run and removed after it.
    study("new", "out2");
    assert!(!d.join("new").exists());
    assert!(d.join("out2/lsm-joins.csv").exists());
}
