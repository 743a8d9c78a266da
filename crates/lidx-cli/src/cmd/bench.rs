//! `lidx bench disk`: read bandwidth and latency of a device with `O_DIRECT`, saved as the
//! storage profile (paper 1's affine I/O cost model, section 3.3) that later commands read;
//! `lidx bench mount`: a directory served as storage of a profile (`profiled_fs`). The
//! measuring and the serving are lidx-bench's.

use std::path::PathBuf;
use std::time::Duration;

use lidx::storage::profile::{AffineCost, DiskBenchOptions, MAX_QUEUE_DEPTH, resolve_profile};
use lidx_bench::{disk, profiled_fs};

use crate::progress::Context;
use crate::units::{at_most, parse_size};

/// The largest read size measured: 1 GiB (one buffer of it is held).
const MAX_READ_SIZE: u64 = 1 << 30;

/// The most time spent on one point: 10 minutes (a whole run measures 18 or more points).
const MAX_MS_PER_POINT: u64 = 600_000;

/// `--read-sizes`: each a size of at most [`MAX_READ_SIZE`].
fn read_size(s: &str) -> Result<u64, String> {
    at_most(parse_size(s)?, MAX_READ_SIZE, "1GiB")
}

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
        /// Read sizes, comma-separated: multiples of 4KiB, at most 1GiB.
        #[arg(long, value_parser = read_size, value_delimiter = ',', default_value = "4KiB,16KiB,64KiB,256KiB,1MiB,4MiB")]
        read_sizes: Vec<u64>,
        /// Milliseconds spent on each (pattern, read size) point (at most 600000, ten minutes).
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(0..=MAX_MS_PER_POINT))]
        ms_per_point: u64,
        /// Queue depths (reads in flight, one thread each) for random 4 KiB reads,
        /// comma-separated, each 1 to 1024.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32", value_parser = clap::value_parser!(u64).range(1..=MAX_QUEUE_DEPTH))]
        queue_depths: Vec<u64>,
        /// CSV output, one row per point [default: DIR/lidx-bench-disk.csv].
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Storage profile output [default: DIR/lidx-profile.json].
        #[arg(long)]
        profile: Option<PathBuf>,
    },
    /// Serve a directory read-only at MOUNT_POINT (FUSE) with every read that reaches it
    /// taking a storage profile's latency + bytes / bandwidth: any store put there runs as
    /// on that storage, and is charged only the reads of its files. Reads are counted per
    /// file. Commands on standard input, answered on standard output: total, by-file,
    /// cost LATENCY_US BANDWIDTH_MB_S, sleep on|off, quit (or end of input) to unmount.
    #[command(
        after_help = "Example:\n  lidx bench mount --profile nfs data/ /mnt/slow    # then run a store on /mnt/slow"
    )]
    Mount {
        /// The directory to serve.
        source: PathBuf,
        /// An empty directory to mount it on.
        mount_point: PathBuf,
        /// The cost of a read: ssd, nfs, hdd or a profile saved by lidx bench disk.
        #[arg(long, conflicts_with_all = ["latency_us", "bandwidth_mb_s"])]
        profile: Option<String>,
        /// The cost of a read: its latency, microseconds.
        #[arg(long, requires = "bandwidth_mb_s")]
        latency_us: Option<f64>,
        /// The cost of a read: MB/s its bytes cross at.
        #[arg(long, requires = "latency_us")]
        bandwidth_mb_s: Option<f64>,
    },
}

pub fn run(ctx: &Context, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Disk {
            dir,
            file_size,
            read_sizes,
            ms_per_point,
            queue_depths,
            csv,
            profile,
        } => {
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
        Command::Mount {
            source,
            mount_point,
            profile,
            latency_us,
            bandwidth_mb_s,
        } => {
            let cost = match (profile, latency_us, bandwidth_mb_s) {
                (Some(name), _, _) => resolve_profile(&name)?.random,
                (None, Some(latency_us), Some(bandwidth_mb_s)) => AffineCost {
                    latency_us,
                    bandwidth_mb_s,
                },
                _ => anyhow::bail!("give --profile, or --latency-us and --bandwidth-mb-s"),
            };
            profiled_fs::serve(
                &source,
                &mount_point,
                cost,
                std::io::stdin().lock(),
                std::io::stdout().lock(),
            )
        }
    }
}
