//! The profiled file system (`lidx bench mount`) charges what reaches it, file by file:
//! reads that carry data, nothing for metadata; read-only; unmounted on drop, and when
//! either process is killed.
#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

use lidx::storage::profile::AffineCost;
use lidx_bench::profiled_fs::{FileReads, MAX_REQUEST, ProfiledMount};

/// 1 ms a read and 1 MB/s: a 4 KiB read costs 1 ms + 4.096 ms.
const COST: AffineCost = AffineCost {
    latency_us: 1000.0,
    bandwidth_mb_s: 1.0,
};

fn charged(bytes: u64) -> u64 {
    (COST.read_us(bytes) * 1e3).round() as u64
}

fn mounted(files: &[(&str, usize)]) -> (tempfile::TempDir, tempfile::TempDir, ProfiledMount) {
    let source = tempfile::tempdir().unwrap();
    for &(name, len) in files {
        let path = source.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(path, bytes).unwrap();
    }
    let parent = tempfile::tempdir().unwrap();
    let mount = ProfiledMount::mount(
        Path::new(env!("CARGO_BIN_EXE_lidx")),
        source.path(),
        parent.path(),
        COST,
    )
    .unwrap();
    (source, parent, mount)
}

fn direct(path: &Path) -> File {
    lidx::files::open_read(path, true).unwrap()
}

#[test]
fn direct_reads_are_charged_one_for_one_with_their_bytes() {
    let (_source, _parent, mount) = mounted(&[("a.bin", 100_000), ("sub/b.bin", 9_000)]);
    let a = direct(&mount.path().join("a.bin"));
    let mut buf = vec![0u8; 8192];
    a.read_exact_at(&mut buf, 4096).unwrap();
    let expect: Vec<u8> = (4096..4096 + 8192).map(|i| (i * 7 % 251) as u8).collect();
    assert_eq!(buf, expect, "the mount shows the file's bytes");
    // A read of the tail returns what is left; one past the end returns nothing.
    let n = a.read_at(&mut buf, 98_304).unwrap();
    assert_eq!(n, 100_000 - 98_304);
    let b = direct(&mount.path().join("sub/b.bin"));
    b.read_exact_at(&mut buf[..4096], 0).unwrap();
    let files = mount.by_file().unwrap();
    let a_reads = files[Path::new("a.bin")];
    assert_eq!(a_reads.reads, 2, "{a_reads:?}");
    assert_eq!(a_reads.bytes, 8192 + (100_000 - 98_304) as u64);
    assert_eq!(a_reads.charged_ns, charged(8192) + charged(1696));
    assert_eq!(files[Path::new("sub/b.bin")].reads, 1);
    assert_eq!(mount.total().unwrap().reads, 3);
}

#[test]
fn a_read_larger_than_a_request_arrives_in_pieces() {
    let len = 3 * MAX_REQUEST as usize + 10;
    let (_source, _parent, mount) = mounted(&[("big", len)]);
    mount
        .set_cost(AffineCost {
            latency_us: 100.0,
            bandwidth_mb_s: 1000.0,
        })
        .unwrap();
    let f = direct(&mount.path().join("big"));
    let mut buf = vec![0u8; len + 4086];
    let mut got = 0;
    while got < len {
        got += f.read_at(&mut buf[got..], got as u64).unwrap();
    }
    let reads = mount.total().unwrap();
    assert_eq!(reads.bytes, len as u64);
    assert!(reads.reads >= 4, "{reads:?}");
}

#[test]
fn a_random_buffered_read_asks_for_its_page_alone() {
    let (_source, _parent, mount) = mounted(&[("f", 1 << 20)]);
    let f = File::open(mount.path().join("f")).unwrap();
    let mut buf = [0u8; 100];
    f.read_exact_at(&mut buf, 10_000).unwrap();
    let once = mount.total().unwrap();
    assert_eq!(once.reads, 1, "{once:?}");
    assert_eq!(once.blocks, 1, "one page, no read-ahead: {once:?}");
    // The page is cached now: a second read within it reaches nothing.
    f.read_exact_at(&mut buf, 10_200).unwrap();
    assert_eq!(mount.total().unwrap(), once);
    // A read to the end, and past it: the kernel knows the size and asks for nothing more.
    let mut all = Vec::new();
    File::open(mount.path().join("f"))
        .unwrap()
        .read_to_end(&mut all)
        .unwrap();
    assert_eq!(all.len(), 1 << 20);
    let after = mount.total().unwrap();
    assert_eq!(after.empty, 0, "{after:?}");
    assert_eq!(after.bytes - once.bytes, 1 << 20, "reopened: read afresh");
}

#[test]
fn counted_reads_are_charged_without_waiting() {
    let (_source, _parent, mount) = mounted(&[("f", 4096)]);
    mount.set_sleeping(false).unwrap();
    mount
        .set_cost(AffineCost {
            latency_us: 10e6,
            bandwidth_mb_s: 1.0,
        })
        .unwrap();
    let mut buf = [0u8; 4096];
    direct(&mount.path().join("f"))
        .read_exact_at(&mut buf, 0)
        .unwrap();
    let reads: FileReads = mount.total().unwrap();
    // Ten seconds charged, answered at once.
    assert_eq!(reads.charged_ns, 10_004_096_000);
    assert_eq!(reads.io().modelled_ns, reads.charged_ns);
}

#[test]
fn the_mount_is_read_only_and_goes_on_drop() {
    let (source, _parent, mount) = mounted(&[("f", 10)]);
    let path = mount.path().to_path_buf();
    assert!(std::fs::write(path.join("f"), b"x").is_err());
    assert!(std::fs::write(path.join("new"), b"x").is_err());
    assert!(std::fs::remove_file(path.join("f")).is_err());
    assert_eq!(std::fs::read(source.path().join("f")).unwrap().len(), 10);
    let mut names: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["f"]);
    assert_eq!(
        mount.total().unwrap().reads,
        0,
        "listing and stat are not reads"
    );
    drop(mount);
    assert!(!path.exists(), "mount point removed");
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(path.to_str().unwrap()));
}

#[test]
fn view_maps_source_paths_and_refuses_others() {
    let (source, _parent, mount) = mounted(&[("d/f", 10)]);
    assert_eq!(
        mount.view(&source.path().join("d/f")).unwrap(),
        mount.path().join("d/f")
    );
    let elsewhere = tempfile::NamedTempFile::new().unwrap();
    let err = mount.view(elsewhere.path()).unwrap_err().to_string();
    assert!(err.contains("not in the mounted directory"), "{err}");
}

#[test]
fn a_sequential_buffered_read_arrives_in_windows_of_a_mebibyte() {
    let (_source, _parent, mount) = mounted(&[("f", 3 << 20)]);
    assert_eq!(mount.read_ahead_kb(), Some(1024));
    mount
        .set_cost(AffineCost {
            latency_us: 100.0,
            bandwidth_mb_s: 1000.0,
        })
        .unwrap();
    let all = std::fs::read(mount.path().join("f")).unwrap();
    assert_eq!(all.len(), 3 << 20);
    let reads = mount.total().unwrap();
    assert_eq!(reads.bytes, 3 << 20);
    assert!(reads.reads <= 4, "{reads:?}");
}

/// The mounts and processes a test left: none may be left under `dir`.
fn mounts_under(dir: &Path) -> Vec<String> {
    let dir = std::fs::canonicalize(dir).unwrap();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| Path::new(p).starts_with(&dir))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_killed_server_leaves_errors_not_a_hang_and_its_mount_goes_with_the_handle() {
    let (_source, parent, mount) = mounted(&[("f", 8192)]);
    let path = mount.path().to_path_buf();
    // Kill the server (the only process named so whose mount point is ours).
    let pids = std::process::Command::new("pgrep")
        .args(["-f", &format!("bench mount .* {}", path.display())])
        .output()
        .unwrap();
    let pid = String::from_utf8(pids.stdout).unwrap();
    let pid = pid
        .split_whitespace()
        .next()
        .expect("the server is running");
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", pid])
            .status()
            .unwrap()
            .success()
    );
    // Its connection is gone: reads fail at once.
    let mut tries = 0;
    while std::fs::read(path.join("f")).is_ok() {
        tries += 1;
        assert!(
            tries < 1000,
            "reads still answered after the server was killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(mount.total().is_err(), "a dead server is reported");
    drop(mount);
    assert!(mounts_under(parent.path()).is_empty());
    assert!(!path.exists());
}

#[test]
fn a_study_killed_mid_read_leaves_no_mount_and_no_stuck_process() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    let run = |seed: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_lidx"))
            .current_dir(d)
            .args([
                "experiment",
                "airindex",
                "--keys",
                "20K",
                "--sets",
                "lognormal",
                "--profile",
                "nfs",
                "--sketch-keys",
                "0",
                "--queries",
                "100",
                "--warm-queries",
                "20",
                "--cold-starts",
                "50",
                "--no-rocksdb",
                "--out-dir",
                "air",
                "-q",
                "--seed",
                seed,
            ])
            .spawn()
            .unwrap()
    };
    let mut child = run("1");
    // Wait for the mount (its server's process), then for reads under way, and kill.
    let mut tries = 0;
    while mounts_under(d).is_empty() {
        tries += 1;
        assert!(tries < 6000, "no mount after a minute");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    // It ends (no thread of it waits forever on a read of its own mount) ...
    child.wait().unwrap();
    // ... and its server, told by its parent-death signal, detaches the mount.
    let mut tries = 0;
    while !mounts_under(d).is_empty() {
        tries += 1;
        assert!(tries < 3000, "mounts left: {:?}", mounts_under(d));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The next run into the same directory sweeps the killed run's scratch directories.
    let mut again = run("2");
    let mut tries = 0;
    while mounts_under(d).is_empty() {
        tries += 1;
        assert!(tries < 6000, "no mount after a minute");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    again.kill().unwrap();
    again.wait().unwrap();
    let data = d.join("air/data");
    let mut tries = 0;
    while !mounts_under(d).is_empty() {
        tries += 1;
        assert!(tries < 3000, "mounts left: {:?}", mounts_under(d));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let left: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(&format!("-{}-", child.id())))
        .collect();
    assert!(
        left.is_empty(),
        "the first run's scratch was not swept: {left:?}"
    );
}

#[test]
fn bench_mount_refuses_bad_places_in_one_line_and_answers_bad_commands() {
    let source = tempfile::tempdir().unwrap();
    let busy = tempfile::tempdir().unwrap();
    std::fs::write(busy.path().join("mine"), b"x").unwrap();
    let lidx = || std::process::Command::new(env!("CARGO_BIN_EXE_lidx"));
    let refused = |args: &[&std::ffi::OsStr], why: &str| {
        let out = lidx().args(args).output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(why), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    refused(
        &[
            &os("bench"),
            &os("mount"),
            &os("--profile"),
            &os("nfs"),
            source.path().as_os_str(),
            busy.path().as_os_str(),
        ],
        "not empty",
    );
    assert_eq!(std::fs::read(busy.path().join("mine")).unwrap(), b"x");
    let empty = tempfile::tempdir().unwrap();
    refused(
        &[
            &os("bench"),
            &os("mount"),
            &os("--profile"),
            &os("nfs"),
            &os("/nonexistent/lidx"),
            empty.path().as_os_str(),
        ],
        "/nonexistent/lidx",
    );
    refused(
        &[
            &os("bench"),
            &os("mount"),
            &os("--latency-us=-5"),
            &os("--bandwidth-mb-s"),
            &os("10"),
            source.path().as_os_str(),
            empty.path().as_os_str(),
        ],
        "latency",
    );
    // A command it does not know is answered with an error; the mount carries on.
    let (_source, _parent, mount) = mounted(&[("f", 10)]);
    assert!(
        mount
            .set_cost(AffineCost {
                latency_us: f64::NAN,
                bandwidth_mb_s: 1.0
            })
            .is_err()
    );
    assert_eq!(mount.total().unwrap(), FileReads::default());
}
