//! Helpers shared by the tests of the `lidx` binary.

use std::path::Path;

use assert_cmd::Command;

/// The `lidx` binary of this build.
pub fn lidx() -> Command {
    Command::cargo_bin("lidx").unwrap()
}

/// Runs `lidx args` in `dir`, expects success, returns stdout.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let out = lidx().current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "lidx {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A short `lidx bench disk` of `dir` (an 8 MiB scratch file, 4 KiB and 1 MiB reads,
/// queue depths 1 and 4, `ms_per_point` on each point) with `extra` arguments; expects
/// success, returns stdout.
pub fn short_disk_bench(dir: &Path, ms_per_point: &str, extra: &[&str]) -> String {
    ok(dir, &short_disk_bench_args(ms_per_point, extra))
}

/// The arguments of [`short_disk_bench`].
pub fn short_disk_bench_args<'a>(ms_per_point: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "bench",
        "disk",
        "--dir",
        ".",
        "--file-size",
        "8MiB",
        "--read-sizes",
        "4KiB,1MiB",
        "--ms-per-point",
        ms_per_point,
        "--queue-depths",
        "1,4",
    ];
    args.extend_from_slice(extra);
    args
}
