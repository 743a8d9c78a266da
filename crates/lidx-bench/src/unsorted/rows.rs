//! The runs paper 1's unsorted-table study measured (section 5.4): one [`Row`] per run, its
//! CSV row, the medians of each point's repeats, and lookups of them by what they are.

use std::collections::HashMap;
use std::path::PathBuf;

use lidx::partition::{Operation, UnsortedRecord};
use serde::Serialize;

use super::RSS_SLACK;
use crate::csv_rows::Fixed;
use crate::stats::medians;

/// What a row measured the run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Role {
    /// A build or sort of the inner table S.
    Inner,
    /// A build of the outer table R.
    Outer,
    /// A join of R with S.
    Join,
}

impl Role {
    /// The role as `unsorted.csv`'s `table` column names it.
    fn name(self) -> &'static str {
        match self {
            Role::Inner => "inner",
            Role::Outer => "outer",
            Role::Join => "join",
        }
    }
}

/// One run as measured: what it ran on and the record its process printed. Its CSV row is
/// a [`CsvRow`], which adds the machine and the device.
pub(super) struct Row {
    pub(super) set: String,
    pub(super) role: Role,
    /// |S|/|R| (1 for runs on S alone).
    pub(super) ratio: u64,
    pub(super) cgroup: Option<PathBuf>,
    /// The most memory its cgroup held during the run (process and page cache), where the
    /// study made the cgroup.
    pub(super) cgroup_peak: Option<u64>,
    /// Times the cgroup's usage reached its limit during the run (reclaim), likewise.
    pub(super) cgroup_limit_hits: Option<u64>,
    pub(super) repeat: usize,
    pub(super) baseline_rss: u64,
    pub(super) rec: UnsortedRecord,
}

impl Row {
    /// What ran: an index build, a sort or a join.
    pub(super) fn operation(&self) -> Operation {
        self.rec.operation.unwrap_or(Operation::Join)
    }

    /// The peak RSS's growth beyond the process's baseline.
    pub(super) fn rss_growth(&self) -> Option<u64> {
        self.rec
            .peak_rss
            .map(|rss| rss.saturating_sub(self.baseline_rss))
    }

    /// Whether the peak RSS grew by at most the limit (and the slack).
    pub(super) fn within_limit(&self) -> Option<bool> {
        self.rss_growth()
            .map(|g| g <= self.rec.memory_limit + RSS_SLACK)
    }

    /// What ran as the summary names it: the method, with what its indexes held
    /// (`partition:pointers`) where it built or joined through unclustered indexes.
    pub(super) fn route(&self) -> String {
        match self.rec.entries.as_str() {
            "" => self.rec.method.clone(),
            entries => format!("{}:{entries}", self.rec.method),
        }
    }

    fn point(&self) -> Point {
        Point {
            set: self.set.clone(),
            role: self.role,
            method: self.route(),
            operation: self.operation(),
            ratio: self.ratio,
            limit: self.rec.memory_limit,
        }
    }
}

/// The point of the tables and figures a run belongs to (its repeats share it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Point {
    set: String,
    role: Role,
    operation: Operation,
    method: String,
    ratio: u64,
    limit: u64,
}

/// One run, as a row of `unsorted.csv`.
#[derive(Serialize, Default)]
pub(super) struct CsvRow<'a> {
    experiment: &'static str,
    key_set: &'a str,
    operation: &'static str,
    method: &'a str,
    entries: &'a str,
    table: &'static str,
    ratio: u64,
    tuples: u64,
    inner_tuples: u64,
    memory_limit: u64,
    cgroup: String,
    cgroup_limit: Option<u64>,
    cgroup_peak: Option<u64>,
    cgroup_limit_hits: Option<u64>,
    repeat: usize,
    seconds: Fixed<6>,
    prepare_s: Fixed<6>,
    bytes_read: u64,
    read_calls: u64,
    storage_read_bytes: Option<u64>,
    bytes_written: u64,
    write_calls: u64,
    write_amplification: Fixed<3>,
    pages_written: u64,
    page_write_amplification: Fixed<3>,
    file_bytes: u64,
    index_memory_bytes: u64,
    model_bytes: u64,
    output_tuples: u64,
    lookups: u64,
    leaves: u64,
    leaf_reads: u64,
    leaf_writes: u64,
    splits: u64,
    pool_hits: u64,
    evictions: u64,
    partitions: u64,
    largest_partition: u64,
    empty_partitions: u64,
    overflowed_partitions: u64,
    pages: u64,
    partitions_read: u64,
    peak_reserved: u64,
    peak_rss: Option<u64>,
    baseline_rss: u64,
    rss_growth: Option<u64>,
    within_limit: Option<bool>,
    page_cache: &'static str,
    machine: &'a str,
    device: &'a str,
}

impl<'a> CsvRow<'a> {
    /// `r` measured on `machine`, its data on `device`.
    pub(super) fn new(r: &'a Row, machine: &'a str, device: &'a str) -> Self {
        let rec = &r.rec;
        CsvRow {
            experiment: "unsorted",
            key_set: &r.set,
            operation: r.operation().name(),
            method: &rec.method,
            entries: &rec.entries,
            table: r.role.name(),
            ratio: r.ratio,
            tuples: rec.tuples,
            inner_tuples: rec.inner_tuples,
            memory_limit: rec.memory_limit,
            cgroup: r
                .cgroup
                .as_ref()
                .map_or_else(String::new, |c| c.display().to_string()),
            cgroup_limit: rec.cgroup_limit,
            cgroup_peak: r.cgroup_peak,
            cgroup_limit_hits: r.cgroup_limit_hits,
            repeat: r.repeat,
            seconds: Fixed(rec.seconds),
            prepare_s: Fixed(rec.prepare_s),
            bytes_read: rec.bytes_read,
            read_calls: rec.read_calls,
            storage_read_bytes: rec.storage_read_bytes,
            bytes_written: rec.bytes_written,
            write_calls: rec.write_calls,
            write_amplification: Fixed(rec.write_amplification()),
            pages_written: rec.pages_written,
            page_write_amplification: Fixed(rec.page_write_amplification()),
            file_bytes: rec.file_bytes,
            index_memory_bytes: rec.index_memory_bytes,
            model_bytes: rec.model_bytes,
            output_tuples: rec.output_tuples,
            lookups: rec.lookups,
            leaves: rec.leaves,
            leaf_reads: rec.leaf_reads,
            leaf_writes: rec.leaf_writes,
            splits: rec.splits,
            pool_hits: rec.pool_hits,
            evictions: rec.evictions,
            partitions: rec.partitions,
            largest_partition: rec.largest_partition,
            empty_partitions: rec.empty_partitions,
            overflowed_partitions: rec.overflowed_partitions,
            pages: rec.pages,
            partitions_read: rec.partitions_read,
            peak_reserved: rec.peak_reserved,
            peak_rss: rec.peak_rss,
            baseline_rss: r.baseline_rss,
            rss_growth: r.rss_growth(),
            within_limit: r.within_limit(),
            page_cache: if r.cgroup.is_some() {
                "cgroup"
            } else {
                "unbounded"
            },
            machine,
            device,
        }
    }
}

/// The median figures of a point.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Figures {
    pub(super) seconds: f64,
    pub(super) prepare: f64,
    pub(super) write_amplification: f64,
    pub(super) index_bytes: f64,
    pub(super) model_bytes: f64,
    pub(super) leaf_reads: f64,
    pub(super) read_calls: f64,
    pub(super) bytes_read: f64,
    pub(super) page_write_amplification: f64,
    /// The index file's bytes per byte of the table.
    pub(super) file_share: f64,
    /// Partitions past their first page per partition.
    pub(super) overflowed_share: f64,
    pub(super) leaf_writes: f64,
    /// The cgroup's peak usage in bytes (0 without a made cgroup).
    pub(super) cgroup_peak: f64,
    /// A build's partitions, or leaves.
    pub(super) units: f64,
    /// Bytes read from storage (page-cache misses).
    pub(super) storage_read: f64,
}

/// Every point's medians.
fn point_medians(rows: &[Row]) -> HashMap<Point, Figures> {
    medians(rows, Row::point, |r| {
        let rec = &r.rec;
        [
            rec.seconds,
            rec.prepare_s,
            rec.write_amplification(),
            rec.index_memory_bytes as f64,
            rec.model_bytes as f64,
            rec.leaf_reads as f64,
            rec.leaf_writes as f64,
            rec.read_calls as f64,
            rec.bytes_read as f64,
            rec.page_write_amplification(),
            rec.file_bytes as f64 / (16 * rec.tuples).max(1) as f64,
            rec.overflowed_partitions as f64 / rec.partitions.max(1) as f64,
            r.cgroup_peak.unwrap_or(0) as f64,
            (rec.partitions + rec.leaves) as f64,
            rec.storage_read_bytes.unwrap_or(0) as f64,
        ]
    })
    .into_iter()
    .map(|(c, f)| {
        let figures = Figures {
            seconds: f[0],
            prepare: f[1],
            write_amplification: f[2],
            index_bytes: f[3],
            model_bytes: f[4],
            leaf_reads: f[5],
            leaf_writes: f[6],
            read_calls: f[7],
            bytes_read: f[8],
            page_write_amplification: f[9],
            file_share: f[10],
            overflowed_share: f[11],
            cgroup_peak: f[12],
            units: f[13],
            storage_read: f[14],
        };
        (c, figures)
    })
    .collect()
}

/// Every point's medians, looked up by what the point is.
pub(super) struct Lookup {
    m: HashMap<Point, Figures>,
}

impl Lookup {
    /// The medians of `rows`.
    pub(super) fn of(rows: &[Row]) -> Lookup {
        Lookup {
            m: point_medians(rows),
        }
    }

    fn get(
        &self,
        set: &str,
        role: Role,
        operation: Operation,
        method: &str,
        ratio: u64,
        limit: u64,
    ) -> Option<Figures> {
        let cell = Point {
            set: set.to_string(),
            role,
            operation,
            method: method.to_string(),
            ratio,
            limit,
        };
        self.m.get(&cell).copied()
    }

    /// An index build of `index` (a route, `partition:pointers`) on S (`Role::Inner`,
    /// ratio 1) or on R (`Role::Outer`).
    pub(super) fn build(
        &self,
        set: &str,
        role: Role,
        index: &str,
        ratio: u64,
        limit: u64,
    ) -> Option<Figures> {
        self.get(set, role, Operation::IndexBuild, index, ratio, limit)
    }

    /// A join of R (at `ratio`) with S by `method` (a route through indexes,
    /// `partition:pointers`, or `grace`, `sort-merge`).
    pub(super) fn join(&self, set: &str, method: &str, ratio: u64, limit: u64) -> Option<Figures> {
        self.get(set, Role::Join, Operation::Join, method, ratio, limit)
    }

    /// A sort of S by `method`.
    pub(super) fn sort(&self, set: &str, method: &str, limit: u64) -> Option<Figures> {
        self.get(set, Role::Inner, Operation::Sort, method, 1, limit)
    }

    /// A join's time with the work before it: both indexes built at the same limit
    /// (index routes), both tables sorted (sort-merge), nothing (grace).
    pub(super) fn join_with_builds(
        &self,
        set: &str,
        method: &str,
        ratio: u64,
        limit: u64,
    ) -> Option<f64> {
        let join = self.join(set, method, ratio, limit)?;
        if !method.contains(':') {
            return Some(join.seconds + join.prepare);
        }
        let inner = self.build(set, Role::Inner, method, 1, limit)?;
        let outer = self.build(set, Role::Outer, method, ratio, limit)?;
        Some(join.seconds + inner.seconds + outer.seconds)
    }
}
