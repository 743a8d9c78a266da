//! `lidx bench disk`: read bandwidth and latency of a device with `O_DIRECT`, fitted into
//! the storage profile (paper 1's affine I/O cost model, section 3.3) that later commands
//! and the experiments read. One CSV row per measured point.

use std::fmt::Write as _;
use std::path::Path;

use lidx::files::{AtomicFile, scratch_dir};
use lidx::storage::profile::{DiskBenchOptions, Measurement, StorageProfile, run_disk_bench};
use serde::Serialize;

use crate::csv_rows::{Fixed, LIDX_VERSION, write_rows};
use crate::progress::Progress;
use crate::text::human_bytes;

/// Runs the benchmark with `options`, showing the points as they are measured, and fits
/// the profile.
///
/// The scratch file is written inside a [`scratch_dir`] in `options.dir` (the same device),
/// so that whichever way the run ends nothing of it stays: removed when done, by the signal
/// handler on SIGINT or SIGTERM, and after a SIGKILL by the next lidx writing into the
/// directory.
pub fn measure(
    options: &DiskBenchOptions,
    progress: &dyn Progress,
) -> anyhow::Result<StorageProfile> {
    let scratch = scratch_dir(&options.dir)?;
    let in_scratch = DiskBenchOptions {
        dir: scratch.path().to_path_buf(),
        ..options.clone()
    };
    progress.start(2 * options.read_sizes.len() as u64, "disk", "points");
    let measured = run_disk_bench(&in_scratch, |_| progress.step());
    progress.finish();
    drop(scratch);
    // The profile names the directory asked for, not the scratch one.
    Ok(StorageProfile::fit(options, measured?)?)
}

/// The whole of `lidx bench disk`: both outputs created first (an unwritable path fails
/// before minutes of measuring), the device measured, the CSV and the profile published.
/// Returns the profile and the report to print.
pub fn run(
    options: &DiskBenchOptions,
    csv_path: &Path,
    profile_path: &Path,
    progress: &dyn Progress,
) -> anyhow::Result<(StorageProfile, String)> {
    let mut csv_out = AtomicFile::create(csv_path)?;
    let mut profile_out = AtomicFile::create(profile_path)?;
    let profile = measure(options, progress)?;
    let machine = crate::machine::describe();
    let rows: Vec<DiskRow> = profile
        .measurements
        .iter()
        .map(|m| DiskRow::new(&machine, options, &profile, m))
        .collect();
    write_rows(&mut csv_out, &rows)?;
    profile_out.write_all(&profile.to_json())?;
    csv_out.finish()?;
    profile_out.finish()?;
    let mut report = profile_table(&profile);
    let _ = writeln!(
        report,
        "wrote {} and the storage profile {}",
        csv_path.display(),
        profile_path.display()
    );
    Ok((profile, report))
}

/// The measurements and the fitted model as a table, a line each.
pub fn profile_table(p: &StorageProfile) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "device: {} (scratch file {})",
        p.device,
        human_bytes(p.file_size)
    );
    let _ = writeln!(
        s,
        "{:<10} {:>6} {:>9} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "pattern", "depth", "read", "reads", "MB/s", "mean us", "p50 us", "p99 us"
    );
    for m in &p.measurements {
        let _ = writeln!(
            s,
            "{:<10} {:>6} {:>9} {:>8} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
            m.pattern.name(),
            m.depth,
            human_bytes(m.read_size),
            m.reads,
            m.bandwidth_mb_s(),
            m.mean_us,
            m.p50_us,
            m.p99_us
        );
    }
    for (name, c) in [("sequential", p.sequential), ("random", p.random)] {
        let _ = writeln!(
            s,
            "model, {name:<10}: a read of k bytes costs {:.1} us + k / {:.0} MB/s",
            c.latency_us, c.bandwidth_mb_s
        );
    }
    s
}

/// One measured point, as a row of `lidx-bench-disk.csv`.
#[derive(Serialize, Default)]
struct DiskRow {
    lidx_version: &'static str,
    machine: String,
    device: String,
    dir: String,
    file_size: u64,
    ms_per_point: u64,
    seed: u64,
    pattern: &'static str,
    depth: u64,
    read_size: u64,
    reads: u64,
    bytes: u64,
    seconds: Fixed<6>,
    bandwidth_mb_s: Fixed<2>,
    mean_us: Fixed<2>,
    p50_us: Fixed<2>,
    p99_us: Fixed<2>,
}

impl DiskRow {
    fn new(machine: &str, o: &DiskBenchOptions, p: &StorageProfile, m: &Measurement) -> Self {
        DiskRow {
            lidx_version: LIDX_VERSION,
            machine: machine.to_string(),
            device: p.device.clone(),
            dir: p.dir.clone(),
            file_size: p.file_size,
            ms_per_point: u64::try_from(o.time_per_point.as_millis()).unwrap_or(u64::MAX),
            seed: o.seed,
            pattern: m.pattern.name(),
            depth: m.depth,
            read_size: m.read_size,
            reads: m.reads,
            bytes: m.bytes,
            seconds: Fixed(m.seconds),
            bandwidth_mb_s: Fixed(m.bandwidth_mb_s()),
            mean_us: Fixed(m.mean_us),
            p50_us: Fixed(m.p50_us),
            p99_us: Fixed(m.p99_us),
        }
    }
}
