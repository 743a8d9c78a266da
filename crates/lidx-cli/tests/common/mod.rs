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
