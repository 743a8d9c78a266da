//! `lidx bench disk`: read bandwidth and latency of a device with `O_DIRECT`, saved as the
//! storage profile (paper 1's affine I/O cost model, section 3.3) that later commands read.

use std::path::PathBuf;
use std::time::Duration;

use lidx::files::AtomicFile;
use lidx::storage::profile::{DiskBenchOptions, Measurement, StorageProfile, run_disk_bench};

use crate::progress::Context;
use crate::units::{human_bytes, parse_size};

/// Benchmarks.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Sequential and random O_DIRECT reads of 4 KiB to 4 MiB on the device holding --dir:
    /// prints a table, writes CSV and saves the storage profile.
    #[command(after_help = "Example:\n  lidx bench disk --dir /mnt/nvme --file-size 4GiB")]
    Disk {
        /// Directory on the device to measure (a scratch file is written there and removed).
        #[arg(long)]
        dir: PathBuf,
        /// Scratch file size; larger than the device's cache gives honest numbers.
        #[arg(long, value_parser = parse_size, default_value = "1GiB")]
        file_size: u64,
        /// Read sizes, comma-separated.
        #[arg(long, value_parser = parse_size, value_delimiter = ',', default_value = "4KiB,16KiB,64KiB,256KiB,1MiB,4MiB")]
        read_sizes: Vec<u64>,
        /// Milliseconds spent on each (pattern, read size) point.
        #[arg(long, default_value_t = 500)]
        ms_per_point: u64,
        /// Queue depths (reads in flight) for random 4 KiB reads, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32")]
        queue_depths: Vec<u64>,
        /// CSV output, one row per point [default: DIR/lidx-bench-disk.csv].
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Storage profile output [default: DIR/lidx-profile.json].
        #[arg(long)]
        profile: Option<PathBuf>,
    },
}

pub fn run(ctx: &Context, command: Command) -> anyhow::Result<()> {
    let Command::Disk {
        dir,
        file_size,
        read_sizes,
        ms_per_point,
        queue_depths,
        csv,
        profile,
    } = command;
    let opts = DiskBenchOptions {
        dir: dir.clone(),
        file_size,
        read_sizes,
        time_per_point: Duration::from_millis(ms_per_point),
        seed: 42,
        queue_depths,
    };
    let profile_path = profile.unwrap_or_else(|| dir.join("lidx-profile.json"));
    let csv_path = csv.unwrap_or_else(|| dir.join("lidx-bench-disk.csv"));
    // Create both outputs first: an unwritable path fails before minutes of measuring.
    let mut csv_out = AtomicFile::create(&csv_path)?;
    let mut profile_out = AtomicFile::create(&profile_path)?;
    let profile = measure(ctx, &opts)?;
    print_profile(&profile)?;
    write_rows(&mut csv_out, &opts, &profile)?;
    profile_out.write_all(&profile.to_json())?;
    csv_out.finish()?;
    profile_out.finish()?;
    say!(
        "wrote {} and the storage profile {}",
        csv_path.display(),
        profile_path.display()
    );
    Ok(())
}

/// Runs the benchmark with a progress bar and fits the profile.
pub fn measure(ctx: &Context, opts: &DiskBenchOptions) -> anyhow::Result<StorageProfile> {
    let bar = ctx.bar(2 * opts.read_sizes.len() as u64, "disk", "points");
    let ms = run_disk_bench(opts, |_| bar.inc(1))?;
    bar.finish_and_clear();
    Ok(StorageProfile::fit(opts, ms)?)
}

/// Prints the measurements and the fitted model as a table.
pub fn print_profile(p: &StorageProfile) -> anyhow::Result<()> {
    say!(
        "device: {} (scratch file {})",
        p.device,
        human_bytes(p.file_size)
    );
    say!(
        "{:<10} {:>6} {:>9} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "pattern",
        "depth",
        "read",
        "reads",
        "MB/s",
        "mean us",
        "p50 us",
        "p99 us"
    );
    for m in &p.measurements {
        say!(
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
        say!(
            "model, {name:<10}: a read of k bytes costs {:.1} us + k / {:.0} MB/s",
            c.latency_us,
            c.bandwidth_mb_s
        );
    }
    Ok(())
}

fn write_rows(
    out: &mut AtomicFile,
    opts: &DiskBenchOptions,
    p: &StorageProfile,
) -> anyhow::Result<()> {
    let machine = crate::machine::describe();
    let row = |m: &Measurement| {
        vec![
            env!("CARGO_PKG_VERSION").to_string(),
            machine.clone(),
            p.device.clone(),
            p.dir.clone(),
            p.file_size.to_string(),
            opts.time_per_point.as_millis().to_string(),
            opts.seed.to_string(),
            m.pattern.name().to_string(),
            m.depth.to_string(),
            m.read_size.to_string(),
            m.reads.to_string(),
            m.bytes.to_string(),
            format!("{:.6}", m.seconds),
            format!("{:.2}", m.bandwidth_mb_s()),
            format!("{:.2}", m.mean_us),
            format!("{:.2}", m.p50_us),
            format!("{:.2}", m.p99_us),
        ]
    };
    let rows: Vec<_> = p.measurements.iter().map(row).collect();
    super::write_csv(
        out,
        &[
            "lidx_version",
            "machine",
            "device",
            "dir",
            "file_size",
            "ms_per_point",
            "seed",
            "pattern",
            "depth",
            "read_size",
            "reads",
            "bytes",
            "seconds",
            "bandwidth_mb_s",
            "mean_us",
            "p50_us",
            "p99_us",
        ],
        &rows,
    )
}
