//! The Python package's tests, from `cargo test`: installs the repository with `pip install`
//! into a virtual environment kept in the build directory, as a user would, and runs its
//! pytest suite (`crates/lidx-py/python/tests`) against what was installed.
//!
//! The environment (made once, and again when `requirements-test.txt` changes) lives at
//! `<target dir>/python-venv`; the install builds the extension with the same target
//! directory, so a warm build only relinks it. Python is `python3`, or `LIDX_PYTHON`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root: the package `pip install` takes.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The target directory this test was built in (`<target>/<profile>/deps/<test binary>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors()
        .nth(3)
        .expect("the test binary lies in <target>/<profile>/deps")
        .to_path_buf()
}

/// Runs `command`, failing the test with its output unless it succeeds.
fn run(what: &str, command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start {command:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{text}",
        output.status
    );
    text
}

/// The virtual environment with the test requirements installed.
fn venv(target: &Path) -> PathBuf {
    let venv = target.join("python-venv");
    let requirements = repository().join("crates/lidx-py/python/requirements-test.txt");
    let wanted = std::fs::read_to_string(&requirements).expect("requirements-test.txt");
    let stamp = venv.join("lidx-requirements.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return venv;
    }
    let python = std::env::var_os("LIDX_PYTHON").unwrap_or_else(|| "python3".into());
    if venv.exists() {
        std::fs::remove_dir_all(&venv).expect("removing the stale environment");
    }
    run(
        "making the virtual environment",
        Command::new(&python).args(["-m", "venv"]).arg(&venv),
    );
    run(
        "installing the test requirements from PyPI",
        Command::new(venv.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(&requirements),
    );
    std::fs::write(&stamp, wanted).expect("writing the environment's stamp");
    venv
}

#[test]
fn pip_install_then_pytest() {
    let target = target_dir();
    let venv = venv(&target);
    let python = venv.join("bin/python");
    // The environment's commands first (the build backend runs `maturin` from PATH).
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    run(
        "pip install of the repository",
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-build-isolation",
                "--force-reinstall",
                "--no-deps",
            ])
            .arg(repository())
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", &target),
    );
    let tests = repository().join("crates/lidx-py/python/tests");
    let report = run(
        "the Python package's pytest suite",
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(&tests)
            // Import the installed package, not the source folder beside the tests.
            .current_dir(&tests)
            .env("PATH", &path)
            // `lidx.experiment` runs the `lidx` script the package installed.
            .env_remove("LIDX_BIN")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    );
    assert!(report.contains(" passed"), "pytest ran nothing:\n{report}");
    assert!(
        !report.contains("skipped"),
        "pytest skipped tests:\n{report}"
    );
}
