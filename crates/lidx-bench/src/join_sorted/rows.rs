//! The joins paper 1's sorted-table study measured (section 5.3): one [`Row`] per join, its
//! CSV row, the medians of each point's repeats, and Fig. 8's predicted rows.

use std::collections::HashMap;

use lidx::index::IndexKind;
use lidx::join::JoinRecord;
use lidx::join::cost::{self, Choice};
use lidx::storage::profile::StorageProfile;
use serde::Serialize;

use super::Options;
use crate::csv_rows::Fixed;
use crate::stats::medians;

/// One join as measured: its settings and the record its process printed. Its CSV row is a
/// [`CsvRow`], which adds the machine and the storage profile.
pub(super) struct Row {
    pub(super) set: String,
    pub(super) ratio: u64,
    pub(super) index: Option<IndexKind>,
    /// Tuples per read of every table (the INLJ's window); 0 for the large-read baseline.
    pub(super) window: u64,
    pub(super) index_bytes: u64,
    pub(super) index_max_window: u64,
    pub(super) index_build_s: f64,
    pub(super) repeat: usize,
    pub(super) rec: JoinRecord,
}

/// The point of the figures a join belongs to (its repeats share it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Point {
    pub(super) set: String,
    pub(super) ratio: u64,
    pub(super) method: String,
    pub(super) window: u64,
    pub(super) threads: usize,
    pub(super) depth: usize,
}

impl Row {
    fn point(&self) -> Point {
        Point {
            set: self.set.clone(),
            ratio: self.ratio,
            method: self.rec.method.clone(),
            window: self.window,
            threads: self.rec.threads,
            depth: self.rec.io_depth,
        }
    }
}

/// One predicted time of Fig. 8, as a row of `join_sorted_hdd_prediction.csv`.
#[derive(Serialize, Default)]
pub(super) struct HddRow {
    pub(super) key_set: String,
    inner_tuples: u64,
    outer_tuples: u64,
    pub(super) ratio: u64,
    pub(super) method: &'static str,
    window: u64,
    pub(super) predicted_s: Fixed<6>,
    profile: String,
}

/// Fig. 8 stand-in: the cost model's times under an assumed hard disk, per ratio, for the
/// key set named `set` (the sizes of its first join at each ratio).
pub(super) fn hdd_prediction(options: &Options, set: &str, rows: &[Row]) -> Vec<HddRow> {
    let window = options.windows[0];
    let device = cost::assumed_hdd().device;
    let mut out = Vec::new();
    for &ratio in &options.ratios {
        let Some(row) = rows.iter().find(|r| r.set == set && r.ratio == ratio) else {
            continue;
        };
        let (outer, inner) = (row.rec.outer_tuples, row.rec.inner_tuples);
        let e = cost::predict_hdd(outer, inner, window);
        for (method, choice) in [
            ("inlj", Choice::Inlj),
            ("merge", Choice::Merge),
            ("hash", Choice::Hash),
        ] {
            out.push(HddRow {
                key_set: set.to_string(),
                inner_tuples: inner,
                outer_tuples: outer,
                ratio,
                method,
                window,
                predicted_s: Fixed(e.seconds(choice)),
                profile: device.clone(),
            });
        }
    }
    out
}

/// One join, as a row of `join_sorted.csv`.
#[derive(Serialize, Default)]
pub(super) struct CsvRow<'a> {
    experiment: &'static str,
    key_set: &'a str,
    inner_tuples: u64,
    outer_tuples: u64,
    ratio: u64,
    method: &'a str,
    index: Option<&'static str>,
    window: u64,
    index_max_window: u64,
    index_bytes: u64,
    index_build_s: Fixed<6>,
    threads: usize,
    io_depth: usize,
    io_backend: &'a str,
    cursor: bool,
    monotone: bool,
    max_window_blocks: u64,
    read_size: u64,
    direct: bool,
    repeat: usize,
    join_s: Fixed<6>,
    build_s: Option<Fixed<6>>,
    output_tuples: u64,
    lookups: u64,
    outer_blocks: u64,
    outer_bytes: u64,
    outer_reads: u64,
    inner_blocks: u64,
    inner_bytes: u64,
    inner_reads: u64,
    model_s: Fixed<6>,
    model_device: &'a str,
    machine: &'a str,
    device: &'a str,
    profile_seq_latency_us: Fixed<1>,
    profile_seq_mb_s: Fixed<1>,
    profile_rand_latency_us: Fixed<1>,
    profile_rand_mb_s: Fixed<1>,
    profile_qd32_speedup: Fixed<2>,
}

impl<'a> CsvRow<'a> {
    /// `r` measured on `machine` with the storage `profile`.
    pub(super) fn new(r: &'a Row, machine: &'a str, profile: &'a StorageProfile) -> Self {
        let rec = &r.rec;
        CsvRow {
            experiment: "join-sorted",
            key_set: &r.set,
            inner_tuples: rec.inner_tuples,
            outer_tuples: rec.outer_tuples,
            ratio: r.ratio,
            method: &rec.method,
            index: r.index.map(IndexKind::name),
            window: r.window,
            index_max_window: r.index_max_window,
            index_bytes: r.index_bytes,
            index_build_s: Fixed(r.index_build_s),
            threads: rec.threads,
            io_depth: rec.io_depth,
            io_backend: &rec.io_backend,
            cursor: rec.cursor,
            monotone: rec.monotone,
            max_window_blocks: rec.max_window_blocks,
            read_size: rec.read_size,
            direct: rec.direct,
            repeat: r.repeat,
            join_s: Fixed(rec.join_s),
            build_s: rec.build_s.map(Fixed),
            output_tuples: rec.output_tuples,
            lookups: rec.lookups,
            outer_blocks: rec.outer_blocks,
            outer_bytes: rec.outer_bytes,
            outer_reads: rec.outer_reads,
            inner_blocks: rec.inner_blocks,
            inner_bytes: rec.inner_bytes,
            inner_reads: rec.inner_reads,
            model_s: Fixed(rec.model_s),
            model_device: &rec.model_device,
            machine,
            device: &profile.device,
            profile_seq_latency_us: Fixed(profile.sequential.latency_us),
            profile_seq_mb_s: Fixed(profile.sequential.bandwidth_mb_s),
            profile_rand_latency_us: Fixed(profile.random.latency_us),
            profile_rand_mb_s: Fixed(profile.random.bandwidth_mb_s),
            profile_qd32_speedup: Fixed(profile.random_speedup(32)),
        }
    }
}

/// The median of every figure of each point over its repeats.
#[derive(Clone, Copy, Debug)]
pub(super) struct Figures {
    /// Join seconds.
    pub(super) time: f64,
    /// The cost model's seconds.
    pub(super) model: f64,
    /// Bytes read from both tables.
    pub(super) bytes: f64,
    /// Reads of the inner table.
    pub(super) reads: f64,
    /// Blocks of the inner table.
    pub(super) blocks: f64,
    /// Seconds building the index or hash table.
    pub(super) build: f64,
}

/// Every point's medians.
pub(super) fn point_medians(rows: &[Row]) -> HashMap<Point, Figures> {
    medians(rows, Row::point, |r| {
        let rec = &r.rec;
        [
            rec.join_s,
            rec.model_s,
            (rec.outer_bytes + rec.inner_bytes) as f64,
            rec.inner_reads as f64,
            rec.inner_blocks as f64,
            rec.build_s.unwrap_or(0.0),
        ]
    })
    .into_iter()
    .map(|(c, [time, model, bytes, reads, blocks, build])| {
        let figures = Figures {
            time,
            model,
            bytes,
            reads,
            blocks,
            build,
        };
        (c, figures)
    })
    .collect()
}
