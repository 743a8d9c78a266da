//! `lidx bench disk`: read bandwidth and latency of a device with `O_DIRECT`, saved as the
//! storage profile (paper 1's affine I/O cost model, section 3.3) that later commands read;
//! the measuring is lidx-bench's.

use std::path::PathBuf;
use std::time::Duration;

use lidx::storage::profile::DiskBenchOptions;
use lidx_bench::disk;

use crate::progress::Context;
use crate::units::parse_size;

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
    let options = DiskBenchOptions {
        dir: dir.clone(),
        file_size,
        read_sizes,
        time_per_point: Duration::from_millis(ms_per_point),
        seed: 42,
        queue_depths,
    };
    let profile_path = profile.unwrap_or_else(|| dir.join("lidx-profile.json"));
    let csv_path = csv.unwrap_or_else(|| dir.join("lidx-bench-disk.csv"));
    let (_, report) = disk::run(&options, &csv_path, &profile_path, &ctx.progress())?;
    say_text!(report);
    Ok(())
}
