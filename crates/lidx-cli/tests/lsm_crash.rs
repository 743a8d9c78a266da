//! A crash test of the LSM join database in the spirit of RocksDB's `db_stress`: random
//! loads, updates, index builds and joins run by the `lidx` binary, each killed at a random
//! point (SIGKILL, SIGTERM or SIGINT) or left to finish, then the database reopened and
//! checked against a model.
//!
//! The model of each step is the database before it and the database after it: every step
//! first runs whole on a copy (which gives the "after"), then on the database itself, killed
//! somewhere within the time the copy took. The reopened database must equal one of the
//! two (the same live rows in R and S, the same indexes; a join that builds two indexes may
//! also leave the first of them, as each is built whole), every synchronous index must hold
//! exactly its table's rows and every validation index at least them, and every one of the
//! 29 methods whose indexes it holds must count the join computed in memory from the rows.
//!
//! Rounds: `LIDX_CRASH_ROUNDS` (default 10; the seed of the rounds, `LIDX_CRASH_SEED`, is
//! printed, so a failure can be replayed).

#![cfg(all(target_os = "linux", feature = "rocksdb"))]
#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use lidx_lsm::joins::{Design, IndexSpec, LsmDb, Maintenance, Method, Side, join_with_threads};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn lidx() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lidx"));
    cmd.arg("--quiet");
    cmd
}

fn run(args: &[String]) -> Output {
    lidx().args(args).stdin(Stdio::null()).output().unwrap()
}

/// What the test can see of a database: its live rows and its indexes.
#[derive(Clone, Debug, PartialEq)]
struct State {
    r: Vec<(u64, u64)>,
    s: Vec<(u64, u64)>,
    indexes: Vec<IndexSpec>,
}

impl State {
    fn of(db: &LsmDb) -> State {
        let mut indexes = db.index_specs();
        indexes.sort_by_key(IndexSpec::dir_name);
        State {
            r: db.rows(Side::R).unwrap(),
            s: db.rows(Side::S).unwrap(),
            indexes,
        }
    }

    /// The join's size in memory: R's attribute against S's key (`P` family) or S's
    /// attribute.
    fn join_count(&self, by_s_key: bool) -> u64 {
        let mut s_by: HashMap<u64, u64> = HashMap::new();
        for &(pk, attr) in &self.s {
            *s_by.entry(if by_s_key { pk } else { attr }).or_default() += 1;
        }
        self.r
            .iter()
            .map(|&(_, attr)| s_by.get(&attr).copied().unwrap_or(0))
            .sum()
    }
}

/// Opens `dir` (recovering it), checks it against itself (indexes, every method it can run
/// without building an index), and returns what it holds.
fn open_and_check(dir: &Path, step: &str) -> State {
    let mut db = LsmDb::open(dir).unwrap_or_else(|e| panic!("{step}: open: {e}"));
    let state = State::of(&db);
    db.check_indexes()
        .unwrap_or_else(|e| panic!("{step}: indexes: {e}"));
    let held: HashSet<IndexSpec> = state.indexes.iter().copied().collect();
    let wants = [state.join_count(false), state.join_count(true)];
    for method in Method::all() {
        if !method.indexes().iter().all(|spec| held.contains(spec)) {
            continue;
        }
        let report = join_with_threads(&mut db, method, 2, &mut lidx::join::CountSink::default())
            .unwrap_or_else(|e| panic!("{step}: {method}: {e}"));
        assert_eq!(
            report.output,
            wants[usize::from(method.joins_s_key())],
            "{step}: {method} disagrees with the join in memory"
        );
    }
    state
}

/// Copies the directory tree `from` to `to` (files and directories).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Names in `dir` that are lidx's scratch.
fn scratch_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".lidx-tmp-"))
        .collect()
}

/// Runs `args` and, unless `signal` (a name for kill(1)) is `None`, sends it `signal` after
/// `delay`; returns
/// whether the process was stopped by it (rather than finishing first).
fn run_killed(args: &[String], signal: Option<&str>, delay: Duration) -> bool {
    let mut child = lidx()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let Some(signal) = signal else {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "lidx {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return false;
    };
    let started = Instant::now();
    while started.elapsed() < delay {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let killed = Command::new("kill")
        .args(["-s", signal, &child.id().to_string()])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    let out = child.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    let stopped = out.status.signal().is_some() || out.status.code() == Some(130);
    if !stopped {
        assert!(
            out.status.success(),
            "lidx {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    killed && stopped
}

/// The steps the test draws from.
fn random_step(rng: &mut Xoshiro256PlusPlus, dir: &Path, state: &State) -> Vec<String> {
    let dir = dir.display().to_string();
    let s = |x: &str| x.to_string();
    match rng.random_range(0..10) {
        0..=4 => vec![
            s("lsm"),
            s("update"),
            s("--dir"),
            dir,
            s("--updates"),
            rng.random_range(200..3_000u64).to_string(),
            s("--changes"),
            format!("{:.2}", rng.random_range(0.0..0.5)),
            s("--deletes"),
            format!("{:.2}", rng.random_range(0.0..0.3)),
            s("--seed"),
            rng.random::<u32>().to_string(),
        ],
        5..=7 => {
            let missing: Vec<(Side, Design, Maintenance)> = [Side::R, Side::S]
                .into_iter()
                .flat_map(|side| {
                    [Design::Eager, Design::Lazy, Design::Comp]
                        .into_iter()
                        .flat_map(move |d| {
                            [Maintenance::Sync, Maintenance::Validation].map(|m| (side, d, m))
                        })
                })
                .filter(|&(side, d, m)| !state.indexes.contains(&IndexSpec::of_method(side, d, m)))
                .collect();
            let Some(&(side, design, maintenance)) =
                missing.get(rng.random_range(0..missing.len().max(1)))
            else {
                return vec![s("lsm"), s("info"), s("--dir"), dir];
            };
            let name = |x: &dyn std::fmt::Debug| format!("{x:?}").to_lowercase();
            vec![
                s("lsm"),
                s("index"),
                s("--dir"),
                dir,
                s("--table"),
                name(&side),
                s("--design"),
                name(&design),
                s("--maintenance"),
                name(&maintenance),
            ]
        }
        // A join that may build the indexes it needs first.
        _ => {
            let methods = Method::all();
            let method = methods[rng.random_range(0..methods.len())];
            vec![
                s("lsm"),
                s("join"),
                s("--dir"),
                dir,
                s("--method"),
                method.to_string(),
                s("--count-only"),
            ]
        }
    }
}

#[test]
fn the_lsm_database_survives_kills_at_random_points() {
    let rounds: u32 = std::env::var("LIDX_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let seed: u64 = std::env::var("LIDX_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("crash test: {rounds} rounds, LIDX_CRASH_SEED={seed}");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("db");
    let reference: PathBuf = scratch.path().join("reference");
    let load: Vec<String> = [
        "lsm",
        "load",
        "--dir",
        dir.to_str().unwrap(),
        "--rows",
        "3K",
        "--match-rate",
        "0.5",
        "--dup-attr",
        "2",
        "--write-buffer",
        "64KiB",
    ]
    .map(String::from)
    .to_vec();
    let signals = ["KILL", "TERM", "INT"];

    // A load killed part-way leaves nothing at its directory, or (killed after the
    // rename into place) the whole database.
    let started = Instant::now();
    let loaded = run(&load);
    assert!(loaded.status.success(), "{loaded:?}");
    let load_time = started.elapsed();
    let whole = open_and_check(&dir, "load");
    std::fs::remove_dir_all(&dir).unwrap();
    for signal in signals {
        let delay = load_time.mul_f64(rng.random_range(0.0..1.0));
        run_killed(&load, Some(signal), delay);
        if dir.exists() {
            let state = open_and_check(&dir, &format!("load killed by {signal} after {delay:?}"));
            assert!(state == whole, "a killed load left a partial database");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    assert!(run(&load).status.success());
    // The load after a SIGKILL swept the killed one's scratch.
    assert_eq!(scratch_in(scratch.path()), Vec::<String>::new());
    let mut state = open_and_check(&dir, "load");

    let mut interrupted = 0;
    for round in 0..rounds {
        let step = random_step(&mut rng, &dir, &state);
        // The step whole, on a copy: the state after it, and how long it takes.
        let _ = std::fs::remove_dir_all(&reference);
        copy_dir(&dir, &reference);
        let on_reference: Vec<String> = step
            .iter()
            .map(|a| {
                if Path::new(a) == dir {
                    reference.display().to_string()
                } else {
                    a.clone()
                }
            })
            .collect();
        let started = Instant::now();
        let whole = run(&on_reference);
        assert!(
            whole.status.success(),
            "round {round}: {step:?}: {}",
            String::from_utf8_lossy(&whole.stderr)
        );
        let took = started.elapsed();
        let after = open_and_check(&reference, &format!("round {round}: {step:?} whole"));
        // The step on the database, killed somewhere in it (or not at all, now and then).
        let signal = match rng.random_range(0..10) {
            0 => None,
            1..=5 => Some("KILL"),
            6..=8 => Some("TERM"),
            _ => Some("INT"),
        };
        let delay = took.mul_f64(rng.random_range(0.0..1.1));
        let killed = run_killed(&step, signal, delay);
        interrupted += u32::from(killed);
        let mut what = format!("round {round}: {step:?}, signal {signal:?} after {delay:?}");
        if killed && rng.random_bool(0.5) {
            // The next open undoes the step: kill that too, somewhere in it.
            let info = ["lsm", "info", "--dir", dir.to_str().unwrap()].map(String::from);
            let delay = took.mul_f64(rng.random_range(0.0..0.3));
            run_killed(&info, Some("KILL"), delay);
            what.push_str(&format!(
                ", then the recovering open killed after {delay:?}"
            ));
        }
        let now = open_and_check(&dir, &what);
        // A join that builds two indexes builds them one at a time, each whole: killed
        // between them, it leaves the first.
        let some_indexes_built = now.r == state.r
            && now.s == state.s
            && now.indexes.iter().all(|i| after.indexes.contains(i))
            && state.indexes.iter().all(|i| now.indexes.contains(i));
        assert!(
            now == state || now == after || some_indexes_built,
            "{what}: the database is neither as before nor as after the step \
             (R {} rows, S {} rows, {} indexes; before {}/{}/{}, after {}/{}/{})",
            now.r.len(),
            now.s.len(),
            now.indexes.len(),
            state.r.len(),
            state.s.len(),
            state.indexes.len(),
            after.r.len(),
            after.s.len(),
            after.indexes.len()
        );
        if !killed {
            assert!(now == after, "{what}: finished, yet not as after the step");
        }
        state = now;
    }
    eprintln!("crash test: {interrupted} of {rounds} steps interrupted");
}

/// Runs `lidx args` in `dir`, expects exit 1 with one error line holding every one of
/// `words`.
fn refused(dir: &Path, args: &[&str], words: &[&str]) {
    let out = lidx().current_dir(dir).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "lidx {args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for word in words {
        assert!(err.contains(word), "lidx {args:?}: {err} (wants {word:?})");
    }
}

fn load_small(dir: &Path, name: &str) {
    let out = lidx()
        .current_dir(dir)
        .args([
            "lsm",
            "load",
            "--dir",
            name,
            "--rows",
            "20K",
            "--match-rate",
            "0.5",
        ])
        .args(["--dup-attr", "2", "--write-buffer", "256KiB"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_join_that_fails_leaves_the_previous_output_and_a_damaged_database_says_so() {
    let scratch = tempfile::tempdir().unwrap();
    let d = scratch.path();
    load_small(d, "db");
    // Every SST of S gets a flipped byte in its data blocks.
    for entry in std::fs::read_dir(d.join("db/s")).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_some_and(|e| e == "sst") {
            let mut bytes = std::fs::read(&file).unwrap();
            let at = bytes.len() / 3;
            bytes[at] ^= 0x40;
            std::fs::write(&file, bytes).unwrap();
        }
    }
    std::fs::write(d.join("rs.tbl"), "old").unwrap();
    for method in ["SJ-P", "HJ-P", "INLJ-P", "SJ-N"] {
        refused(
            d,
            &[
                "lsm", "join", "--dir", "db", "--method", method, "--out", "rs.tbl",
            ],
            &["damaged", "Corruption"],
        );
        assert_eq!(std::fs::read(d.join("rs.tbl")).unwrap(), b"old", "{method}");
    }
    let left: Vec<String> = scratch_in(d);
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_database_that_lost_a_tree_or_is_named_as_output_is_refused() {
    let scratch = tempfile::tempdir().unwrap();
    let d = scratch.path();
    load_small(d, "db");
    let join = |out: &str| {
        vec![
            "lsm", "join", "--dir", "db", "--method", "HJ-P", "--out", out,
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    for inside in ["db/lidx-lsm.json", "db/s/CURRENT", "db/new.tbl"] {
        let args = join(inside);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(d, &args, &["inside the database"]);
    }
    // The database still opens and joins.
    let out = lidx()
        .current_dir(d)
        .args([
            "lsm",
            "join",
            "--dir",
            "db",
            "--method",
            "HJ-N",
            "--count-only",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::remove_dir_all(d.join("db/r")).unwrap();
    refused(
        d,
        &[
            "lsm",
            "join",
            "--dir",
            "db",
            "--method",
            "HJ-N",
            "--count-only",
        ],
        &["damaged", "db/r", "missing"],
    );
    assert!(
        !d.join("db/r").exists(),
        "the lost tree was made again, empty"
    );
}
