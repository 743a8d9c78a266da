//! The study's CSV row, and the lookups of rows its plots and summary make.

use serde::Serialize;

use lidx::storage::IoStats;

use crate::csv_rows::Fixed;
use crate::stats::{mean, percentile};

/// One CSV row: one system, key set and profile, one phase.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// The experiment.
    pub experiment: &'static str,
    /// lidx's version.
    pub lidx_version: &'static str,
    /// The machine.
    pub machine: String,
    /// `measured`, or the latency profile the reads ran under.
    pub profile: String,
    /// Its random read latency, µs (the measured profile's fit for `measured`).
    pub profile_latency_us: Fixed<1>,
    /// Its bandwidth, MB/s.
    pub profile_bandwidth_mb_s: Fixed<1>,
    /// The device, or what the profile assumes.
    pub device: String,
    /// The key set.
    pub key_set: String,
    /// Its keys (records).
    pub keys: u64,
    /// The system.
    pub system: String,
    /// The profile an `airindex` file was tuned for.
    pub tuned_for: String,
    /// The index's structure.
    pub structure: String,
    /// Bytes of the index.
    pub index_bytes: u64,
    /// The cache budget, bytes.
    pub cache_bytes: u64,
    /// Bytes of a page.
    pub page_size: u64,
    /// `cold`, `curve` (the first `queries` lookups of a fresh start), `warm`, or
    /// `warm-timed` (the warm lookups that slept, under a latency profile).
    pub phase: &'static str,
    /// Lookups the figures are over.
    pub queries: u64,
    /// Of those, lookups whose reads were real or slept out (the rest charged their
    /// modelled read time without sleeping).
    pub timed_queries: u64,
    /// Mean latency, µs (cold: opening the store and one lookup).
    pub mean_us: Fixed<1>,
    /// Median latency, µs.
    pub p50_us: Fixed<1>,
    /// 99th percentile latency, µs.
    pub p99_us: Fixed<1>,
    /// Mean time to open the store, µs (cold and curve).
    pub open_us: Fixed<1>,
    /// Reads per lookup (opening the store not included): under a latency profile the
    /// requests that reached the mount, on the local disk lidx's read calls or, for
    /// RocksDB, the process's read calls.
    pub reads_per_query: Fixed<3>,
    /// Bytes read per lookup.
    pub bytes_per_query: Fixed<0>,
    /// Profile time of the reads per lookup, µs (0 under `measured`).
    pub modelled_us_per_query: Fixed<1>,
    /// Cold rows under a latency profile: the reads that opening the store made (the
    /// mount's count), per fresh start; empty elsewhere.
    pub open_reads: Option<Fixed<1>>,
    /// Their bytes, per fresh start.
    pub open_bytes: Option<Fixed<0>>,
}

impl Row {
    /// This row's settings with the figures of one phase: `latencies` (µs) over its
    /// lookups, `timed` of which slept out their reads, `io` their reads in all, and the
    /// time to open the store (µs; 0 where the phase has none).
    pub(super) fn phase(
        &self,
        phase: &'static str,
        latencies: &[f64],
        timed: usize,
        io: IoStats,
        open_us: f64,
    ) -> Row {
        let n = latencies.len().max(1) as f64;
        Row {
            phase,
            queries: latencies.len() as u64,
            timed_queries: timed as u64,
            mean_us: Fixed(mean(latencies)),
            p50_us: Fixed(percentile(latencies, 0.5)),
            p99_us: Fixed(percentile(latencies, 0.99)),
            open_us: Fixed(open_us),
            reads_per_query: Fixed(io.reads as f64 / n),
            bytes_per_query: Fixed(io.bytes as f64 / n),
            modelled_us_per_query: Fixed(io.modelled_ns as f64 / 1e3 / n),
            ..self.clone()
        }
    }
}

impl Row {
    /// This row with the reads of `starts` store openings, where they were counted.
    pub(super) fn with_open_reads(self, io: Option<IoStats>, starts: usize) -> Row {
        let per = |v: u64| v as f64 / starts.max(1) as f64;
        Row {
            open_reads: io.map(|io| Fixed(per(io.reads))),
            open_bytes: io.map(|io| Fixed(per(io.bytes))),
            ..self
        }
    }
}

/// One row of `reads_by_file.csv`: what reached the mount from one file over the whole
/// run (every profile but `measured`, every system's fresh starts and lookups).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FileRow {
    /// The experiment.
    pub experiment: &'static str,
    /// The machine.
    pub machine: String,
    /// The file, in the data directory.
    pub file: String,
    /// Read requests that reached the mount.
    pub reads: u64,
    /// Bytes they returned.
    pub bytes: u64,
    /// Those that returned nothing.
    pub empty_reads: u64,
    /// 4096-byte blocks they covered.
    pub blocks: u64,
    /// Their profile time, µs (slept or counted).
    pub charged_us: Fixed<1>,
}

impl FileRow {
    /// A row per file `mount` served.
    pub(super) fn all(
        mount: &crate::profiled_fs::ProfiledMount,
        machine: &str,
    ) -> anyhow::Result<Vec<FileRow>> {
        Ok(mount
            .by_file()?
            .into_iter()
            .map(|(file, r)| FileRow {
                experiment: "airindex",
                machine: machine.to_string(),
                file: file.display().to_string(),
                reads: r.reads,
                bytes: r.bytes,
                empty_reads: r.empty,
                blocks: r.blocks,
                charged_us: Fixed(r.charged_ns as f64 / 1e3),
            })
            .collect())
    }
}

/// The rows of one profile, key set, system and phase; for `airindex`, those of the file
/// tuned for that profile (the others are [`matrix`]'s).
pub(super) fn find<'r>(
    rows: &'r [Row],
    profile: &str,
    set: &str,
    system: &str,
    phase: &str,
) -> Vec<&'r Row> {
    rows.iter()
        .filter(|r| {
            r.profile == profile
                && r.key_set == set
                && r.system == system
                && r.phase == phase
                && (r.tuned_for.is_empty() || r.tuned_for == profile)
        })
        .collect()
}

/// The AirIndex row of `set` and `phase` for the file tuned for `tuned_for`, run under
/// `profile`.
pub(super) fn matrix<'r>(
    rows: &'r [Row],
    (profile, tuned_for): (&str, &str),
    set: &str,
    phase: &str,
) -> Option<&'r Row> {
    rows.iter().find(|r| {
        r.system == "airindex"
            && r.profile == profile
            && r.tuned_for == tuned_for
            && r.key_set == set
            && r.phase == phase
    })
}

/// The distinct values `f` gives the rows, in the order they first appear.
pub(super) fn unique<'r>(rows: &'r [Row], f: impl Fn(&'r Row) -> &'r str) -> Vec<&'r str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rows {
        let v = f(r);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}
