//! The study's CSV rows (paper 3, section 8): one per kind, workload and key set, the
//! median of the repeats.

use lidx::updatable::Kind;
use serde::Serialize;

use super::sets::KeySet;
use super::{Options, is_learned};
use crate::csv_rows::{Fixed, LIDX_VERSION};
use crate::key_source::KeySource;
use crate::updatable::RunReport;

/// One measurement: a CSV row.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// Which figure the run is for: heatmap, tail (every operation timed alone, for Figs.
    /// 10–11), phases (Fig. 3's timed inserts), alex-m (Fig. 9), scan, shift (to the other set), shift-base (to the same
    /// source), bulk.
    pub part: String,
    /// The key set (for a shift, the one bulk-loaded).
    pub set: String,
    /// grid, synthetic or sosd.
    pub set_source: String,
    /// The generator's local and global targets (grid sets; 0 otherwise).
    pub local_target: u64,
    pub global_target: u64,
    /// Measured segments at ε = 32 and ε = 4096.
    pub local_segments: u64,
    pub global_segments: u64,
    /// The set whose keys a shift inserts (empty otherwise).
    pub shift_to: String,
    pub kind: String,
    /// The ALEX-like index's data-node density at build (alex: 0.7; alex-m: tuned to
    /// LIPP's memory, Fig. 9); 0 for other kinds.
    pub alex_density: Fixed<3>,
    /// learned or traditional.
    pub family: String,
    pub workload: String,
    pub scan_len: usize,
    pub keys: u64,
    pub bulk_loaded: u64,
    pub bulk_load_s: Fixed<4>,
    pub lookups: usize,
    pub inserts: usize,
    pub removals: usize,
    pub scans: usize,
    pub ops_per_s: Fixed<0>,
    pub mean_ns: Fixed<1>,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    /// Lookups timed alone, and their tail.
    pub lookup_sampled: u64,
    pub lookup_p99_ns: u64,
    pub lookup_p999_ns: u64,
    /// Inserts timed alone, and their tail.
    pub insert_sampled: u64,
    pub insert_p99_ns: u64,
    pub insert_p999_ns: u64,
    /// Bytes of the index after the run: measured by the allocator where the process
    /// counts (the `lidx` binary), else as the index reports them.
    pub size_bytes: u64,
    /// Where `size_bytes` comes from: `allocator` or `index`.
    pub size_from: &'static str,
    pub nodes_traversed: u64,
    pub keys_shifted: u64,
    pub nodes_created: u64,
    pub structure_modifications: u64,
    /// Nanoseconds per insert in each phase (part `phases`; 0 elsewhere): Fig. 3.
    pub search_ns: Fixed<1>,
    pub collision_ns: Fixed<1>,
    pub statistics_ns: Fixed<1>,
    pub smo_ns: Fixed<1>,
    /// The whole insert, for a kind that does not divide it.
    pub undivided_ns: Fixed<1>,
    pub repeat: usize,
    pub seed: u64,
    pub machine: String,
    pub lidx_version: String,
}

impl Row {
    pub(super) fn new(part: &str, set: &KeySet, r: &RunReport, o: &Options, machine: &str) -> Row {
        let (local_target, global_target) = match set.source {
            KeySource::Hard { local, global } => (local, global),
            _ => (0, 0),
        };
        let kind = r.kind.parse::<Kind>().map_or(true, is_learned);
        Row {
            part: part.into(),
            set: set.name.clone(),
            set_source: match set.source {
                KeySource::Hard { .. } => "grid",
                KeySource::Synthetic(_) => "synthetic",
                KeySource::Sosd(_) => "sosd",
            }
            .into(),
            local_target,
            global_target,
            local_segments: set.local_segments,
            global_segments: set.global_segments,
            shift_to: String::new(),
            kind: r.kind.clone(),
            alex_density: Fixed(0.0),
            family: if kind { "learned" } else { "traditional" }.into(),
            workload: r.workload.clone(),
            scan_len: 0,
            keys: r.keys,
            bulk_loaded: r.bulk_loaded,
            bulk_load_s: Fixed(r.bulk_load_s),
            lookups: r.mix[0],
            inserts: r.mix[1],
            removals: r.mix[2],
            scans: r.mix[3],
            ops_per_s: Fixed(r.ops_per_s),
            mean_ns: Fixed(r.mean_ns),
            p50_ns: r.p50_ns,
            p99_ns: r.p99_ns,
            p999_ns: r.p999_ns,
            lookup_sampled: r.lookup_tail.sampled,
            lookup_p99_ns: r.lookup_tail.p99_ns,
            lookup_p999_ns: r.lookup_tail.p999_ns,
            insert_sampled: r.insert_tail.sampled,
            insert_p99_ns: r.insert_tail.p99_ns,
            insert_p999_ns: r.insert_tail.p999_ns,
            size_bytes: r.measured_bytes.unwrap_or(r.size_bytes),
            size_from: match r.measured_bytes {
                Some(_) => "allocator",
                None => "index",
            },
            nodes_traversed: r.counters.nodes_traversed,
            keys_shifted: r.counters.keys_shifted,
            nodes_created: r.counters.nodes_created,
            structure_modifications: r.counters.structure_modifications,
            search_ns: Fixed(r.phases.map_or(0.0, |p| p.search_ns)),
            collision_ns: Fixed(r.phases.map_or(0.0, |p| p.collision_ns)),
            statistics_ns: Fixed(r.phases.map_or(0.0, |p| p.statistics_ns)),
            smo_ns: Fixed(r.phases.map_or(0.0, |p| p.smo_ns)),
            undivided_ns: Fixed(r.phases.map_or(0.0, |p| p.undivided_ns)),
            repeat: o.repeat,
            seed: o.seed,
            machine: machine.into(),
            lidx_version: LIDX_VERSION.into(),
        }
    }
}

/// The report of median throughput among `reports` (not empty).
pub(super) fn median(mut reports: Vec<RunReport>) -> Option<RunReport> {
    reports.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    let mid = reports.len() / 2;
    (!reports.is_empty()).then(|| reports.swap_remove(mid))
}
