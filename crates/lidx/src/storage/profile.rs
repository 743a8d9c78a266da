//! The disk benchmark and the storage profile it saves (paper 1's affine I/O model, section
//! 3.3; paper 2's storage profile of latency and bandwidth).
//!
//! [`run_disk_bench`] writes a scratch file in the directory to study and reads it with
//! `O_DIRECT` at read sizes from 4 KiB to 4 MiB, sequentially and at random aligned offsets,
//! timing every read. [`StorageProfile::fit`] turns those measurements into the affine cost
//! model `cost(k bytes) = latency + k / bandwidth`, one for each pattern, which later
//! commands (the join cost model) load from the saved JSON file.
//!
//! The affine fit uses synchronous reads, one in flight at a time (queue depth 1), as paper 1
//! reads. Random 4 KiB reads are also measured with 2 to 32 in flight (one thread each), so
//! a user sees how much parallelism the device has to offer to deep I/O queues.
//!
//! A profile is a file a user may edit, so every number in it is checked when it is loaded
//! ([`StorageProfile::check`]): latency within [`LATENCY_US`], bandwidth within
//! [`BANDWIDTH_MB_S`], measurements finite and non-negative, queue depths within
//! [`MAX_QUEUE_DEPTH`]. The modelled time of a read ([`LatencyModel::read_time`]) cannot
//! panic or exceed [`MAX_READ_TIME`] even for a cost that was never checked.

use std::io::Write;
use std::ops::RangeInclusive;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::aligned::AlignedBuf;
use super::format::BLOCK_SIZE;
use crate::files::{AtomicFile, PendingGuard, cache, open_for_reading};
use crate::pla::LineSums;
use crate::{Error, Result};

/// Version of the profile's JSON layout. History: 1 = first version.
pub const PROFILE_VERSION: u32 = 1;

/// The largest storage profile file read: a profile is a few kilobytes of JSON.
const MAX_PROFILE_BYTES: u64 = 16 << 20;

/// The fixed cost of one read a profile may give, in microseconds: from 0 (a device that
/// only transfers, which a fit to cached reads can find) to 10 s (a hundred times a remote
/// disk's 100 ms; beyond it a modelled lookup would sleep for minutes).
pub const LATENCY_US: RangeInclusive<f64> = 0.0..=10_000_000.0;

/// The transfer rate a profile may give, in MB/s (10^6 bytes per second): from 0.01
/// (10 kB/s, slower than any disk or network share) to 1,000,000 (1 TB/s, beyond the
/// bandwidth of any storage device and of main memory).
pub const BANDWIDTH_MB_S: RangeInclusive<f64> = 0.01..=1_000_000.0;

/// The most reads in flight [`run_disk_bench`] measures at (one thread each), and the
/// largest queue depth a profile's measurements may give.
pub const MAX_QUEUE_DEPTH: u64 = 1024;

/// The longest time [`LatencyModel::read_time`] gives any read, whatever its cost says: one
/// day (a checked profile reaches it only for single reads of more than 800 MiB).
pub const MAX_READ_TIME: Duration = Duration::from_secs(24 * 3600);

/// `value` as a message shows it: plain for ordinary magnitudes, in scientific notation for
/// tiny and huge ones (`1e-300`, not three hundred zeros).
fn show(value: f64) -> String {
    let a = value.abs();
    if a != 0.0 && a.is_finite() && !(1e-4..1e9).contains(&a) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// `None` when `value` is finite and within `range`; else why not, naming `field`.
fn out_of_range(
    field: &str,
    value: f64,
    range: &RangeInclusive<f64>,
    unit: &str,
) -> Option<String> {
    (!range.contains(&value)).then(|| {
        format!(
            "{field} is {}, outside the allowed {} to {} {unit}",
            show(value),
            show(*range.start()),
            show(*range.end())
        )
    })
}

/// `None` when `value` is finite and not negative; else why not, naming `field`.
fn not_a_time(field: &str, value: f64) -> Option<String> {
    (!(value.is_finite() && value >= 0.0)).then(|| {
        format!(
            "{field} is {}, not a finite non-negative number",
            show(value)
        )
    })
}

/// Access pattern of a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Consecutive reads from the start of the file.
    Sequential,
    /// Reads at uniformly random offsets aligned to 4096 bytes.
    Random,
}

crate::names::name_table!(Pattern, "access pattern", [
    Sequential => "sequential",
    Random => "random",
]);

/// What to measure.
#[derive(Clone, Debug)]
pub struct DiskBenchOptions {
    /// Directory on the device to study; the scratch file is created (and removed) there.
    pub dir: PathBuf,
    /// Size of the scratch file in bytes (a multiple of 4 MiB).
    pub file_size: u64,
    /// Read sizes in bytes, each a multiple of 4096.
    pub read_sizes: Vec<u64>,
    /// Time spent on each (pattern, read size) point.
    pub time_per_point: Duration,
    /// Seed of the random offsets.
    pub seed: u64,
    /// Queue depths at which random 4 KiB reads are measured (threads reading at once).
    pub queue_depths: Vec<u64>,
}

impl Default for DiskBenchOptions {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("."),
            file_size: 1 << 30,
            read_sizes: (0..6).map(|i| 4096u64 << (2 * i)).collect(), // 4 KiB ..= 4 MiB
            time_per_point: Duration::from_millis(500),
            seed: 42,
            queue_depths: vec![1, 2, 4, 8, 16, 32],
        }
    }
}

/// One (pattern, read size) point of the disk benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Sequential or random.
    pub pattern: Pattern,
    /// Bytes per read.
    pub read_size: u64,
    /// Reads timed.
    pub reads: u64,
    /// Bytes read in all.
    pub bytes: u64,
    /// Wall time of all reads, in seconds.
    pub seconds: f64,
    /// Mean latency of one read, in microseconds.
    pub mean_us: f64,
    /// Median latency, in microseconds.
    pub p50_us: f64,
    /// 99th-percentile latency, in microseconds.
    pub p99_us: f64,
    /// Reads in flight at once (1: synchronous; more: that many threads reading at random).
    #[serde(default = "one")]
    pub depth: u64,
}

fn one() -> u64 {
    1
}

impl Measurement {
    /// Bandwidth in MB/s (10^6 bytes per second).
    pub fn bandwidth_mb_s(&self) -> f64 {
        self.bytes as f64 / self.seconds.max(f64::MIN_POSITIVE) / 1e6
    }

    /// Why this measurement cannot be one of [`run_disk_bench`]'s, naming the field
    /// (prefixed with `name`): `None` when its times are finite and non-negative, its read
    /// size positive and its depth in 1 ..= [`MAX_QUEUE_DEPTH`].
    fn problem(&self, name: &str) -> Option<String> {
        let times = [
            ("seconds", self.seconds),
            ("mean_us", self.mean_us),
            ("p50_us", self.p50_us),
            ("p99_us", self.p99_us),
        ];
        times
            .into_iter()
            .find_map(|(field, v)| not_a_time(&format!("{name}.{field}"), v))
            .or_else(|| {
                (self.read_size == 0).then(|| format!("{name}.read_size is 0, not a read size"))
            })
            .or_else(|| {
                (!(1..=MAX_QUEUE_DEPTH).contains(&self.depth)).then(|| {
                    format!(
                        "{name}.depth is {}, outside the allowed 1 to {MAX_QUEUE_DEPTH} reads in flight",
                        self.depth
                    )
                })
            })
    }
}

/// Affine cost of one read: `latency_us + bytes / (bandwidth_mb_s * 1e6) * 1e6` microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AffineCost {
    /// Fixed cost of a read, in microseconds.
    pub latency_us: f64,
    /// Transfer rate once a read is under way, in MB/s (10^6 bytes per second).
    pub bandwidth_mb_s: f64,
}

impl AffineCost {
    /// Predicted time of one read of `bytes` bytes, in microseconds: finite and not negative
    /// for a cost that passes [`check`](Self::check).
    pub fn read_us(&self, bytes: u64) -> f64 {
        self.latency_us + bytes as f64 / self.bandwidth_mb_s
    }

    /// Checks that the cost is one of a real device: `latency_us` within [`LATENCY_US`] and
    /// `bandwidth_mb_s` within [`BANDWIDTH_MB_S`] (so neither is NaN nor infinite). The
    /// error ([`Error::InvalidParam`]) names the field and the allowed range.
    pub fn check(&self) -> Result<()> {
        match self.problem("") {
            None => Ok(()),
            Some(reason) => Err(Error::param("storage cost", reason)),
        }
    }

    /// What [`check`](Self::check) refuses, naming the field prefixed with `name`.
    fn problem(&self, name: &str) -> Option<String> {
        out_of_range(
            &format!("{name}latency_us"),
            self.latency_us,
            &LATENCY_US,
            "us",
        )
        .or_else(|| {
            out_of_range(
                &format!("{name}bandwidth_mb_s"),
                self.bandwidth_mb_s,
                &BANDWIDTH_MB_S,
                "MB/s",
            )
        })
    }

    /// Fits `mean_us = latency_us + read_size / bandwidth` to `points` (all of one pattern)
    /// by least squares on relative errors (weights 1/mean²), so small and large reads count
    /// alike although their times differ a thousandfold. `None` with fewer than two distinct
    /// read sizes or when time does not grow with size.
    fn fit(points: &[&Measurement]) -> Option<AffineCost> {
        let mut sums = LineSums::default();
        for m in points {
            let w = 1.0 / (m.mean_us * m.mean_us).max(f64::MIN_POSITIVE);
            sums.add_weighted(m.read_size as f64, m.mean_us, w);
        }
        if points.len() < 2 {
            return None;
        }
        let us_per_byte = sums.slope_by_determinant()?;
        if !(us_per_byte > 0.0 && us_per_byte.is_finite()) {
            return None;
        }
        let latency_us = sums.intercept(us_per_byte).max(0.0);
        Some(AffineCost {
            latency_us,
            bandwidth_mb_s: 1.0 / us_per_byte,
        })
    }
}

/// A device's read costs, saved by `lidx bench disk` and read by later commands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StorageProfile {
    /// [`PROFILE_VERSION`] of the file.
    pub version: u32,
    /// Directory that was measured.
    pub dir: String,
    /// The file system holding it: "source (type) on mount point".
    pub device: String,
    /// Seconds since the Unix epoch when it was measured.
    pub measured_at_unix: u64,
    /// Scratch file size used.
    pub file_size: u64,
    /// Cost of sequential reads.
    pub sequential: AffineCost,
    /// Cost of random reads.
    pub random: AffineCost,
    /// The measurements the costs were fitted to.
    pub measurements: Vec<Measurement>,
}

impl StorageProfile {
    /// Fits a profile to `measurements` of `opts.dir`. Needs two read sizes per pattern.
    pub fn fit(opts: &DiskBenchOptions, measurements: Vec<Measurement>) -> Result<StorageProfile> {
        let fit = |p: Pattern| {
            let points: Vec<&Measurement> = measurements
                .iter()
                .filter(|m| m.pattern == p && m.depth == 1)
                .collect();
            AffineCost::fit(&points).ok_or_else(|| {
                Error::param(
                    "read sizes",
                    "the profile needs at least two different read sizes, and reads of the larger size that took longer than those of the smaller (on a busy machine, measure longer: --ms-per-point)",
                )
            })
        };
        let profile = StorageProfile {
            version: PROFILE_VERSION,
            dir: opts.dir.display().to_string(),
            device: describe_device(&opts.dir),
            measured_at_unix: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            file_size: opts.file_size,
            sequential: fit(Pattern::Sequential)?,
            random: fit(Pattern::Random)?,
            measurements,
        };
        match profile.problem() {
            None => Ok(profile),
            Some(reason) => Err(Error::param(
                "storage profile",
                format!(
                    "the fit to the measurements gives {reason} (on a busy machine, measure longer: --ms-per-point)"
                ),
            )),
        }
    }

    /// Checks every number of the profile: both costs as [`AffineCost::check`] does, and
    /// each measurement's times finite and non-negative, its read size positive and its
    /// depth in 1 ..= [`MAX_QUEUE_DEPTH`]. The error ([`Error::InvalidParam`]) names the
    /// field (`random.bandwidth_mb_s`, `measurements[3].seconds`) and what it may be.
    /// [`load`](Self::load) checks every profile it reads.
    pub fn check(&self) -> Result<()> {
        match self.problem() {
            None => Ok(()),
            Some(reason) => Err(Error::param("storage profile", reason)),
        }
    }

    /// What [`check`](Self::check) refuses, naming the field.
    fn problem(&self) -> Option<String> {
        self.sequential
            .problem("sequential.")
            .or_else(|| self.random.problem("random."))
            .or_else(|| {
                self.measurements
                    .iter()
                    .enumerate()
                    .find_map(|(i, m)| m.problem(&format!("measurements[{i}]")))
            })
    }

    /// How many times the random reads per second at `depth` reads in flight exceed those
    /// at depth 1 (random 4 KiB reads), the best measured at a queue depth not above `depth` (1 where the
    /// profile has no queue-depth measurements). Always finite and at least 1: rates that
    /// are not finite are left out.
    pub fn random_speedup(&self, depth: u64) -> f64 {
        let rate = |d: u64| {
            self.measurements
                .iter()
                .filter(|m| m.pattern == Pattern::Random && m.read_size == 4096)
                .filter(|m| m.depth == d && m.seconds > 0.0)
                .map(|m| m.reads as f64 / m.seconds)
                .filter(|r| r.is_finite())
                .reduce(f64::max)
        };
        let Some(base) = rate(1).filter(|&r| r > 0.0) else {
            return 1.0;
        };
        self.measurements
            .iter()
            .filter(|m| m.pattern == Pattern::Random && m.depth <= depth)
            .filter_map(|m| rate(m.depth))
            .map(|r| r / base)
            .filter(|s| s.is_finite())
            .fold(1.0, f64::max)
    }

    /// The profile as pretty-printed JSON, newline-terminated.
    pub fn to_json(&self) -> Vec<u8> {
        let mut json = serde_json::to_vec_pretty(self).unwrap_or_default();
        json.push(b'\n');
        json
    }

    /// Saves the profile as JSON at `path` (atomically).
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut out = AtomicFile::create(path)?;
        out.write_all(&self.to_json())?;
        out.finish()
    }

    /// Loads a profile saved by [`save`](Self::save) (or written by hand in its layout),
    /// and [`check`](Self::check)s it: a value outside its range is an error naming the
    /// file, the field and the range.
    pub fn load(path: &Path) -> Result<StorageProfile> {
        let (file, len) = crate::files::open_regular(path)?;
        if len > MAX_PROFILE_BYTES {
            return Err(Error::format(
                path,
                crate::FormatError::Inconsistent(format!(
                    "{len} bytes is too large for a storage profile (at most {MAX_PROFILE_BYTES})"
                )),
            ));
        }
        let mut bytes = Vec::with_capacity(len as usize);
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_PROFILE_BYTES),
            &mut bytes,
        )
        .map_err(|e| Error::io(path, "read", e))?;
        let profile: StorageProfile = serde_json::from_slice(&bytes).map_err(|e| {
            Error::io(
                path,
                "parse the storage profile (JSON written by `lidx bench disk`)",
                e.into(),
            )
        })?;
        if profile.version != PROFILE_VERSION {
            return Err(Error::format(
                path,
                crate::FormatError::UnsupportedVersion {
                    found: profile.version,
                    oldest: PROFILE_VERSION,
                    newest: PROFILE_VERSION,
                },
            ));
        }
        match profile.problem() {
            None => Ok(profile),
            Some(reason) => Err(Error::io(
                path,
                "use the storage profile",
                std::io::Error::new(std::io::ErrorKind::InvalidData, reason),
            )),
        }
    }
}

/// Measures `opts.dir` with `O_DIRECT` reads; `progress` is called after each point.
pub fn run_disk_bench(
    opts: &DiskBenchOptions,
    mut progress: impl FnMut(&Measurement),
) -> Result<Vec<Measurement>> {
    const CHUNK: u64 = 4 << 20;
    if opts.file_size < CHUNK || !opts.file_size.is_multiple_of(CHUNK) {
        return Err(Error::param(
            "file size",
            format!(
                "{} bytes is not a positive multiple of 4 MiB",
                opts.file_size
            ),
        ));
    }
    if let Some(bad) = opts
        .read_sizes
        .iter()
        .find(|&&s| s == 0 || s % BLOCK_SIZE as u64 != 0 || s > opts.file_size)
    {
        return Err(Error::param(
            "read size",
            format!("{bad} bytes is not a multiple of 4096 no larger than the scratch file"),
        ));
    }
    if let Some(bad) = opts
        .queue_depths
        .iter()
        .find(|d| !(1..=MAX_QUEUE_DEPTH).contains(d))
    {
        return Err(Error::param(
            "queue depth",
            format!("{bad} is outside 1 to {MAX_QUEUE_DEPTH} reads in flight"),
        ));
    }
    let mut distinct = opts.read_sizes.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 2 {
        return Err(Error::param(
            "read sizes",
            "the profile needs at least two different read sizes to tell latency from bandwidth",
        ));
    }
    if !opts.dir.is_dir() {
        return Err(Error::io(
            &opts.dir,
            "use the directory",
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
        ));
    }

    // The scratch file: random bytes (so no layer can compress or dedupe them), fsynced.
    let scratch = tempfile::Builder::new()
        .prefix(".lidx-bench-disk-")
        .tempfile_in(&opts.dir)
        .map_err(|e| Error::io(&opts.dir, "create a scratch file in", e))?;
    let path = scratch.path().to_path_buf();
    let pending = PendingGuard::new(&path);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(opts.seed);
    let mut chunk = vec![0u8; CHUNK as usize];
    {
        let mut f = scratch.as_file();
        for _ in 0..opts.file_size / CHUNK {
            rng.fill(&mut chunk[..]);
            f.write_all(&chunk)
                .map_err(|e| Error::io(&path, "write", e))?;
        }
        f.sync_all().map_err(|e| Error::io(&path, "fsync", e))?;
    }
    cache::drop_file_pages(&path)?;

    let file = open_for_reading(&path, &path, true, "open")?;
    // The scratch file is needed by handle only from here on: remove its name now, so not
    // even a killed process leaves it behind.
    drop(scratch);
    drop(pending);
    let max_size = *opts.read_sizes.iter().max().unwrap_or(&(BLOCK_SIZE as u64));
    let mut raw = AlignedBuf::with_len(max_size as usize);

    let mut out = Vec::new();
    for pattern in [Pattern::Sequential, Pattern::Random] {
        for &size in &opts.read_sizes {
            let buf = raw.get_mut(size as usize);
            let slots = opts.file_size / size;
            let mut latencies = Vec::new();
            let began = Instant::now();
            let mut offset = 0u64;
            // At least one read per point, however short the time given.
            while latencies.is_empty()
                || (began.elapsed() < opts.time_per_point && latencies.len() < 1_000_000)
            {
                let at = match pattern {
                    Pattern::Sequential => {
                        let at = offset;
                        offset = (offset + size) % (slots * size);
                        at
                    }
                    Pattern::Random => {
                        rng.random_range(0..=(opts.file_size - size) / BLOCK_SIZE as u64)
                            * BLOCK_SIZE as u64
                    }
                };
                let t = Instant::now();
                file.read_exact_at(buf, at)
                    .map_err(|e| Error::io(&path, "read", e))?;
                latencies.push(t.elapsed().as_secs_f64() * 1e6);
            }
            let seconds = began.elapsed().as_secs_f64();
            let reads = latencies.len() as u64;
            let mean_us = latencies.iter().sum::<f64>() / reads as f64;
            latencies.sort_by(f64::total_cmp);
            let pct = |q: f64| latencies[((reads as f64 - 1.0) * q).round() as usize];
            let m = Measurement {
                pattern,
                read_size: size,
                reads,
                bytes: reads * size,
                seconds,
                mean_us,
                p50_us: pct(0.5),
                p99_us: pct(0.99),
                depth: 1,
            };
            progress(&m);
            out.push(m);
        }
    }
    for &depth in &opts.queue_depths {
        let m = random_at_depth(&file, &path, opts, depth)?;
        progress(&m);
        out.push(m);
    }
    Ok(out)
}

/// Random 4 KiB reads with `depth` of them in flight: that many threads, each with its own
/// aligned buffer and offsets, reading for `opts.time_per_point`.
fn random_at_depth(
    file: &std::fs::File,
    path: &Path,
    opts: &DiskBenchOptions,
    depth: u64,
) -> Result<Measurement> {
    const SIZE: usize = BLOCK_SIZE;
    let slots = opts.file_size / SIZE as u64;
    let began = Instant::now();
    let per_thread: Vec<Result<Vec<f64>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..depth.max(1))
            .map(|t| {
                scope.spawn(move || {
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(opts.seed.wrapping_add(t + 1));
                    let mut raw = AlignedBuf::with_len(SIZE);
                    let buf = raw.get_mut(SIZE);
                    let mut latencies = Vec::new();
                    while latencies.is_empty() || began.elapsed() < opts.time_per_point {
                        let at = rng.random_range(0..slots) * SIZE as u64;
                        let t = Instant::now();
                        file.read_exact_at(buf, at)
                            .map_err(|e| Error::io(path, "read", e))?;
                        latencies.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    Ok(latencies)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or(Err(Error::ThreadPanicked {
                    what: "disk benchmark",
                }))
            })
            .collect()
    });
    let seconds = began.elapsed().as_secs_f64();
    let mut latencies = Vec::new();
    for part in per_thread {
        latencies.extend(part?);
    }
    latencies.sort_by(f64::total_cmp);
    let reads = latencies.len() as u64;
    let pct = |q: f64| {
        latencies
            .get(((reads as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    Ok(Measurement {
        pattern: Pattern::Random,
        read_size: SIZE as u64,
        reads,
        bytes: reads * SIZE as u64,
        seconds,
        mean_us: latencies.iter().sum::<f64>() / reads.max(1) as f64,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
        depth,
    })
}

/// "source (fstype) on mountpoint" for the mount holding `dir`, from `/proc/self/mounts`.
fn describe_device(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (source, target, fstype) = (f.next()?, f.next()?, f.next()?);
            dir.starts_with(target)
                .then(|| (target.len(), format!("{source} ({fstype}) on {target}")))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown device".to_string(), |(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(pattern: Pattern, read_size: u64, mean_us: f64) -> Measurement {
        Measurement {
            pattern,
            read_size,
            reads: 1,
            bytes: read_size,
            seconds: mean_us / 1e6,
            mean_us,
            p50_us: mean_us,
            p99_us: mean_us,
            depth: 1,
        }
    }

    #[test]
    fn affine_fit_recovers_latency_and_bandwidth() {
        // 100 us latency, 1000 MB/s = 1000 bytes per us.
        let a = point(Pattern::Random, 4096, 100.0 + 4.096);
        let b = point(Pattern::Random, 4 << 20, 100.0 + 4194.304);
        let fit = AffineCost::fit(&[&a, &b]).unwrap();
        assert!((fit.latency_us - 100.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.bandwidth_mb_s - 1000.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.read_us(1 << 20) - (100.0 + 1048.576)).abs() < 1e-6);
    }

    #[test]
    fn bench_measures_every_point_and_profile_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let opts = DiskBenchOptions {
            dir: dir.path().to_path_buf(),
            file_size: 8 << 20,
            read_sizes: vec![4096, 1 << 20],
            time_per_point: Duration::from_millis(20),
            seed: 1,
            queue_depths: vec![1, 4],
        };
        let ms = run_disk_bench(&opts, |_| {}).unwrap();
        assert_eq!(ms.len(), 6);
        assert_eq!(ms.iter().filter(|m| m.depth == 4).count(), 1);
        assert!(
            ms.iter()
                .all(|m| m.reads > 0 && m.bytes == m.reads * m.read_size)
        );
        // The times are reported, not judged: whether the 1 MiB reads took longer than the
        // 4 KiB ones, as a fit to them needs, depends on the machine's load. The fit is of
        // known points (1000 MB/s, and 10 us a sequential read, 100 us a random one); the
        // profile keeps the measurements.
        for m in &ms {
            for t in [m.seconds, m.mean_us, m.p50_us, m.p99_us] {
                assert!(t.is_finite() && t >= 0.0, "{m:?}");
            }
        }
        let known = vec![
            point(Pattern::Sequential, 4096, 10.0 + 4.096),
            point(Pattern::Sequential, 1 << 20, 10.0 + 1048.576),
            point(Pattern::Random, 4096, 100.0 + 4.096),
            point(Pattern::Random, 1 << 20, 100.0 + 1048.576),
        ];
        let profile = StorageProfile {
            measurements: ms,
            ..StorageProfile::fit(&opts, known).unwrap()
        };
        assert!(
            (profile.sequential.latency_us - 10.0).abs() < 1e-6,
            "{profile:?}"
        );
        assert!(
            (profile.random.latency_us - 100.0).abs() < 1e-6,
            "{profile:?}"
        );
        assert!(
            (profile.random.bandwidth_mb_s - 1000.0).abs() < 1e-6,
            "{profile:?}"
        );
        let path = dir.path().join("profile.json");
        profile.save(&path).unwrap();
        assert_eq!(StorageProfile::load(&path).unwrap(), profile);
        // The scratch file is gone.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }

    /// The audit's profile (issue 33, F1) with both costs set to `latency` and `bandwidth`,
    /// as JSON text (so values JSON can write but Rust would not build pass through).
    fn profile_json(latency: &str, bandwidth: &str) -> String {
        format!(
            r#"{{"version":1,"dir":".","device":"x","measured_at_unix":0,"file_size":4194304,
 "sequential":{{"latency_us":{latency},"bandwidth_mb_s":{bandwidth}}},
 "random":{{"latency_us":{latency},"bandwidth_mb_s":{bandwidth}}},"measurements":[]}}"#
        )
    }

    #[test]
    fn load_refuses_costs_outside_their_ranges_naming_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        let cases = [
            ("60.0", "0.0", "sequential.bandwidth_mb_s is 0,"),
            ("60.0", "1e-300", "sequential.bandwidth_mb_s is 1e-300,"),
            ("60.0", "-1", "sequential.bandwidth_mb_s is -1,"),
            ("60.0", "1e12", "sequential.bandwidth_mb_s is 1e12,"),
            ("1e12", "300.0", "sequential.latency_us is 1e12,"),
            ("1e308", "300.0", "sequential.latency_us is 1e308,"),
            ("-5", "300.0", "sequential.latency_us is -5,"),
            ("-1e6", "300.0", "sequential.latency_us is -1000000,"),
        ];
        for (latency, bandwidth, field) in cases {
            std::fs::write(&path, profile_json(latency, bandwidth)).unwrap();
            let err = StorageProfile::load(&path).unwrap_err().to_string();
            assert!(err.starts_with(&path.display().to_string()), "{err}");
            assert!(err.contains(field), "{latency} {bandwidth}: {err}");
            let range = if field.contains("latency") {
                "outside the allowed 0 to 10000000 us"
            } else {
                "outside the allowed 0.01 to 1000000 MB/s"
            };
            assert!(err.contains(range), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
        // Numbers JSON cannot hold as a float, and no number at all, fail too.
        for (latency, bandwidth) in [("1e999", "300.0"), ("null", "300.0"), ("60.0", "\"NaN\"")] {
            std::fs::write(&path, profile_json(latency, bandwidth)).unwrap();
            let err = StorageProfile::load(&path).unwrap_err().to_string();
            assert!(err.starts_with(&path.display().to_string()), "{err}");
        }
        // A measurement with a time that is not one, or a depth beyond the bench's.
        let mut profile = assumed_ssd();
        profile.measurements = vec![point(Pattern::Random, 4096, 100.0)];
        profile.measurements[0].seconds = -1.0;
        std::fs::write(&path, profile.to_json()).unwrap();
        let err = StorageProfile::load(&path).unwrap_err().to_string();
        assert!(err.contains("measurements[0].seconds is -1"), "{err}");
        profile.measurements[0].seconds = 1.0;
        profile.measurements[0].depth = 0;
        std::fs::write(&path, profile.to_json()).unwrap();
        let err = StorageProfile::load(&path).unwrap_err().to_string();
        assert!(err.contains("measurements[0].depth is 0"), "{err}");
        // The edges themselves are accepted.
        std::fs::write(&path, profile_json("0", "0.01")).unwrap();
        StorageProfile::load(&path).unwrap();
        std::fs::write(&path, profile_json("10000000", "1000000")).unwrap();
        StorageProfile::load(&path).unwrap();
    }

    #[test]
    fn check_refuses_nan_and_infinity_and_passes_lidx_own_profiles() {
        for (latency_us, bandwidth_mb_s) in [
            (f64::NAN, 100.0),
            (100.0, f64::NAN),
            (f64::INFINITY, 100.0),
            (100.0, f64::INFINITY),
            (100.0, 0.0),
        ] {
            let cost = AffineCost {
                latency_us,
                bandwidth_mb_s,
            };
            let err = cost.check().unwrap_err().to_string();
            assert!(err.contains("outside the allowed"), "{err}");
            let profile = StorageProfile {
                random: cost,
                ..assumed_ssd()
            };
            let err = profile.check().unwrap_err().to_string();
            assert!(err.contains("random."), "{err}");
        }
        assumed_ssd().check().unwrap();
        assumed_hdd().check().unwrap();
        for name in PROFILE_NAMES {
            named_profile(name).unwrap().check().unwrap();
        }
    }

    #[test]
    fn read_time_never_panics_and_stays_within_its_cap() {
        let costs = [
            (60.0, 0.0),
            (60.0, 1e-300),
            (1e308, 300.0),
            (1e12, 300.0),
            (-5.0, 300.0),
            (f64::NAN, 300.0),
            (60.0, f64::NAN),
            (f64::INFINITY, 1.0),
            (f64::NEG_INFINITY, 1.0),
            (60.0, -1.0),
        ];
        for (latency_us, bandwidth_mb_s) in costs {
            let model = LatencyModel::counted(AffineCost {
                latency_us,
                bandwidth_mb_s,
            });
            for bytes in [0, 1, 4096, u64::MAX] {
                let t = model.read_time(bytes);
                assert!(t <= MAX_READ_TIME, "{latency_us} {bandwidth_mb_s}: {t:?}");
                // A counting model returns at once, whatever the time.
                assert_eq!(model.finish(Instant::now(), bytes), t);
            }
        }
        let ssd = LatencyModel::counted(named_profile("ssd").unwrap().random);
        assert_eq!(ssd.read_time(0), Duration::from_micros(250));
        assert_eq!(
            LatencyModel::counted(AffineCost {
                latency_us: 1e12,
                bandwidth_mb_s: 1.0
            })
            .read_time(0),
            MAX_READ_TIME
        );
    }

    #[test]
    fn disk_bench_refuses_queue_depths_outside_its_range() {
        for depth in [0, MAX_QUEUE_DEPTH + 1, 100_000] {
            let opts = DiskBenchOptions {
                dir: PathBuf::from("/nonexistent"),
                file_size: 4 << 20,
                read_sizes: vec![4096, 8192],
                queue_depths: vec![1, depth],
                ..DiskBenchOptions::default()
            };
            let err = run_disk_bench(&opts, |_| {}).unwrap_err().to_string();
            assert!(err.contains("outside 1 to 1024 reads in flight"), "{err}");
        }
    }

    #[test]
    fn random_speedup_is_finite_for_any_checked_profile() {
        let mut fast = point(Pattern::Random, 4096, 1.0);
        fast.reads = u64::MAX;
        fast.seconds = f64::MIN_POSITIVE;
        fast.depth = 8;
        let mut base = point(Pattern::Random, 4096, 1.0);
        base.seconds = 1e300;
        let profile = StorageProfile {
            measurements: vec![base, fast],
            ..assumed_ssd()
        };
        profile.check().unwrap();
        for depth in [0, 1, 8, u64::MAX] {
            let s = profile.random_speedup(depth);
            assert!(s.is_finite() && s >= 1.0, "{depth}: {s}");
        }
    }
}

/// The profile lidx assumes when none was measured: a SATA-class SSD (100 µs per random
/// read, 500 MB/s), labelled as an assumption wherever it is used.
pub fn assumed_ssd() -> StorageProfile {
    assumed("assumed SSD (no profile measured)", 100.0, 500.0)
}

/// A hard disk lidx assumes where none is present, to predict paper 1's HDD figure
/// (Fig. 8): a 7200 rpm drive at 10 ms per random read (seek and half a turn), 0.2 ms per
/// sequential read, 150 MB/s, no gain from queued reads. A lidx assumption, labelled as a
/// prediction wherever it is used.
pub fn assumed_hdd() -> StorageProfile {
    StorageProfile {
        sequential: AffineCost {
            latency_us: 200.0,
            bandwidth_mb_s: 150.0,
        },
        ..assumed(
            "assumed 7200 rpm HDD (prediction, not a measurement)",
            10_000.0,
            150.0,
        )
    }
}

/// A profile of one affine cost for every read, named `device`.
fn assumed(device: &str, latency_us: f64, bandwidth_mb_s: f64) -> StorageProfile {
    let cost = AffineCost {
        latency_us,
        bandwidth_mb_s,
    };
    StorageProfile {
        version: PROFILE_VERSION,
        dir: String::new(),
        device: device.to_string(),
        measured_at_unix: 0,
        file_size: 0,
        sequential: cost,
        random: cost,
        measurements: Vec::new(),
    }
}

/// The names [`named_profile`] knows.
pub const PROFILE_NAMES: [&str; 3] = ["ssd", "nfs", "hdd"];

/// A named profile, for running under storage this machine lacks (paper 2):
/// - `ssd`: 250 µs + 175 MB/s, the local SSD of paper 2's public code;
/// - `nfs`: 50 ms + 12 MB/s, the remote NFS of paper 2's public code;
/// - `hdd`: [`assumed_hdd`]'s random reads.
///
/// All three are assumptions, labelled so in their `device` field, not measurements.
pub fn named_profile(name: &str) -> Option<StorageProfile> {
    Some(match name {
        "ssd" => assumed(
            "paper 2's local SSD: 250 us + 175 MB/s (an assumption, not a measurement)",
            250.0,
            175.0,
        ),
        "nfs" => assumed(
            "paper 2's Azure NFS: 50 ms + 12 MB/s (an assumption, not a measurement)",
            50_000.0,
            12.0,
        ),
        "hdd" => {
            let hdd = assumed_hdd();
            StorageProfile {
                sequential: hdd.random,
                ..hdd
            }
        }
        _ => return None,
    })
}

/// The profile `arg` names: `ssd`, `nfs`, `hdd` ([`named_profile`]) or the path of a
/// profile saved by `lidx bench disk`.
pub fn resolve_profile(arg: &str) -> Result<StorageProfile> {
    match named_profile(arg) {
        Some(p) => Ok(p),
        None if !Path::new(arg).exists() => Err(Error::param(
            "profile",
            format!(
                "'{arg}' is none of {} and no such file exists (save one with lidx bench disk --profile FILE)",
                PROFILE_NAMES.join(", ")
            ),
        )),
        None => StorageProfile::load(Path::new(arg)),
    }
}

/// Reads that take as long as a profile says (paper 2 times lookups under storage the
/// machine lacks): each read is done on the local file, then its thread sleeps until
/// `latency + bytes / bandwidth` after the read began. Reads on different threads overlap,
/// as reads in flight on a real device do; none finishes before its modelled cost.
///
/// A model that does not [`sleep`](Self::sleep) only counts the modelled time: for runs
/// too long to sleep through (70,000 lookups at 50 ms a read), whose latency is then the
/// wall time plus the modelled time, said so wherever it is reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyModel {
    /// The cost of one read.
    pub cost: AffineCost,
    /// Whether a read sleeps out its modelled time, or only counts it.
    pub sleep: bool,
}

impl LatencyModel {
    /// Reads that sleep out `cost`.
    pub fn timed(cost: AffineCost) -> LatencyModel {
        LatencyModel { cost, sleep: true }
    }

    /// Reads whose `cost` is counted, not slept.
    pub fn counted(cost: AffineCost) -> LatencyModel {
        LatencyModel { cost, sleep: false }
    }

    /// The modelled time of a read of `bytes`: its cost's [`read_us`](AffineCost::read_us),
    /// never more than [`MAX_READ_TIME`]. Never panics: a cost that is negative or NaN (one
    /// that failed [`AffineCost::check`]) gives zero, an infinite one [`MAX_READ_TIME`].
    pub fn read_time(&self, bytes: u64) -> Duration {
        let seconds = self.cost.read_us(bytes) / 1e6;
        if seconds.is_nan() || seconds <= 0.0 {
            return Duration::ZERO;
        }
        Duration::try_from_secs_f64(seconds).map_or(MAX_READ_TIME, |d| d.min(MAX_READ_TIME))
    }

    /// Sleeps until `started` plus the modelled time of a read of `bytes` (a model that
    /// does not sleep returns at once); returns that modelled time.
    pub fn finish(&self, started: Instant, bytes: u64) -> Duration {
        let modelled = self.read_time(bytes);
        if !self.sleep {
            return modelled;
        }
        let Some(deadline) = started.checked_add(modelled) else {
            return modelled;
        };
        // `sleep` may wake early on some platforms: sleep again until the deadline.
        loop {
            let now = Instant::now();
            if now >= deadline {
                return modelled;
            }
            std::thread::sleep(deadline - now);
        }
    }
}
