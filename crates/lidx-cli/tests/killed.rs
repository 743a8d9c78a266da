//! A `lidx` killed by SIGKILL in the middle of writing an output leaves nothing beside it.
//!
//! Where the file system has `O_TMPFILE` the output is written to an unnamed file, so the
//! directory holds exactly the inputs after the kill. Elsewhere the killed process leaves
//! its named temporary file, and the next `lidx` that writes into the directory removes it;
//! the test checks whichever of the two it finds.

#![cfg(target_os = "linux")]
#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Bytes of a table per key: the key and its row id.
const TUPLE: u64 = 16;

fn lidx() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lidx"));
    cmd.arg("--quiet");
    cmd
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

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// The temporary file an output is being written to, as seen in the writer's fd table.
#[derive(Debug)]
enum Temp {
    /// An `O_TMPFILE` file: `/proc` shows it as `DIR/#INODE (deleted)`.
    Unnamed,
    /// A hidden file of this name in the output's directory.
    Named(String),
}

/// The temporary file in `dir` that process `pid` has open, and its size now.
fn open_temp(pid: u32, dir: &Path) -> Option<(Temp, u64)> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    for fd in fds.flatten() {
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        if target.parent() != Some(dir) {
            continue;
        }
        let Some(name) = target.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let temp = if name.starts_with('#') && name.ends_with(" (deleted)") {
            Temp::Unnamed
        } else if name.starts_with(".lidx-tmp-") {
            Temp::Named(name.to_string())
        } else {
            continue;
        };
        // The size through the fd: it reaches the file even when it has no name.
        let Ok(meta) = std::fs::metadata(fd.path()) else {
            continue;
        };
        return Some((temp, meta.len()));
    }
    None
}

/// What happened to one `lidx table build` of `keys` keys.
enum Run {
    /// Killed mid-write; the temporary file it was writing.
    Killed(Temp),
    /// It finished before it could be caught writing.
    TooFast,
}

/// Starts `lidx table build` of `keys.keys` into `out.tbl` in `dir`, waits until it is
/// writing (its temporary file open and growing, less than half written) and kills it with
/// SIGKILL. The wait is bounded by the build, which ends, not by a clock: a machine under
/// load makes it slower, not a failure.
fn kill_mid_write(dir: &Path, keys: u64) -> Run {
    let mut child = lidx()
        .current_dir(dir)
        .args(["table", "build", "--keys", "keys.keys", "--out", "out.tbl"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let half = keys * TUPLE / 2;
    let mut first_size = None;
    // Seen half written or more: too far along to be sure a kill lands before the end.
    let mut too_late = false;
    let caught = loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "lidx table build failed: {status}");
            break None;
        }
        if !too_late && let Some((temp, size)) = open_temp(pid, dir) {
            match first_size {
                _ if size >= half => too_late = true,
                None => first_size = Some(size),
                Some(first) if size > first => break Some(temp),
                Some(_) => {}
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    let Some(temp) = caught else {
        return Run::TooFast;
    };
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    if status.success() {
        // It finished in the moment between the check and the kill.
        return Run::TooFast;
    }
    assert_eq!(status.signal(), Some(9), "not killed by SIGKILL: {status}");
    Run::Killed(temp)
}

#[test]
fn sigkill_mid_write_leaves_nothing_beside_the_output() {
    let tmp = tempfile::tempdir().unwrap();
    // /proc shows the resolved path.
    let dir: PathBuf = tmp.path().canonicalize().unwrap();
    // Writing 32 MB takes long enough to be caught; four times as many keys each time the
    // build finishes first.
    let mut keys: u64 = 2_000_000;
    let temp = loop {
        let n = keys.to_string();
        ok(
            &dir,
            &["gen", "--dist", "udense", "--n", &n, "--out", "keys.keys"],
        );
        match kill_mid_write(&dir, keys) {
            Run::Killed(temp) => break temp,
            Run::TooFast if keys < 32_000_000 => {
                std::fs::remove_file(dir.join("out.tbl")).unwrap();
                keys *= 4;
            }
            Run::TooFast => panic!(
                "lidx table build of {keys} keys finished each time before it was caught writing"
            ),
        }
    };
    match temp {
        Temp::Unnamed => assert_eq!(
            listing(&dir),
            ["keys.keys"],
            "a killed lidx left files behind (it was writing an unnamed file)"
        ),
        Temp::Named(name) => {
            // No O_TMPFILE here: the killed process's file stays until the next lidx.
            eprintln!("no O_TMPFILE in {}: checking the cleanup", dir.display());
            assert_eq!(listing(&dir), [name, "keys.keys".to_string()]);
            ok(
                &dir,
                &[
                    "gen",
                    "--dist",
                    "udense",
                    "--n",
                    "1000",
                    "--out",
                    "more.keys",
                ],
            );
            assert_eq!(
                listing(&dir),
                ["keys.keys", "more.keys"],
                "the next lidx did not remove the killed one's temporary file"
            );
        }
    }
}
