//! Paper 1's findings on unsorted tables (section 5.4, Fig. 9) beside what this run
//! measured, one function each, and the check lidx adds: every run's memory against its
//! limit.

use std::fmt::Write as _;

use super::RSS_SLACK;
use super::rows::{Figures, Lookup, Row};
use crate::text::{human_bytes, times};

/// Finding 1 (section 5.4, Fig. 9b): the learned partition index of an unsorted table
/// builds up to 3.5x faster than the B-tree by inserts (3.6x under 2 GB, 3.4x under
/// 32 GB). The B+tree's build time over the partitioning's at `limit`, beside the paper's
/// speedup at the limit in the same place among `limits` (the smallest: 2 GB; the
/// largest: 32 GB).
pub(super) fn faster_learned_builds(
    limits: &[u64],
    limit: u64,
    btree: &Figures,
    partition: &Figures,
) -> (String, &'static str) {
    let paper = match limits.iter().position(|&l| l == limit) {
        Some(0) => "3.6x (2 GB)",
        Some(i) if i + 1 == limits.len() => "3.4x (32 GB)",
        _ => "-",
    };
    (times(btree.seconds / partition.seconds), paper)
}

/// Finding 2 (section 5.4, Fig. 9a): the learned and the B-tree joins perform about the
/// same. The B+tree route's join time over the learned partitions' on `set` at `ratio` and
/// `limit`, `-` where either is missing.
pub(super) fn joins_alike(q: &Lookup, set: &str, ratio: u64, limit: u64) -> String {
    match (
        q.join(set, "btree-inserts", ratio, limit),
        q.join(set, "partition", ratio, limit),
    ) {
        (Some(b), Some(p)) => times(b.seconds / p.seconds),
        _ => "-".to_string(),
    }
}

/// Finding 3 (section 5.4): the learned index is smaller (3 MB against the B-tree's
/// 12 MB), but I/O dominates the join and the smaller index does not reduce it. What each
/// index route read on `set` at `ratio` and `limit`, and why; `cgroups`: whether each run
/// was in a cgroup bounding the page cache, as paper 1's were. `None` where either join is
/// missing.
pub(super) fn index_routes_read(
    q: &Lookup,
    set: &str,
    ratio: u64,
    limit: u64,
    cgroups: bool,
) -> Option<String> {
    let p = q.join(set, "partition", ratio, limit)?;
    let b = q.join(set, "btree-inserts", ratio, limit)?;
    Some(format!(
        "Why the two index routes differ ({set}, ratio {ratio}, {}): the learned partitions hold the tuples themselves, so its join read {} in {:.0} calls, each partition once; the B+tree holds (key, position) pairs and fetches every tuple through its position, a block read per tuple on each side unless it is the block read last: {} in {:.0} calls, besides {:.0} leaf reads. With 8-byte values a position is as large as the value, so the partitions take no more space than the leaves. {}",
        human_bytes(limit),
        human_bytes(p.bytes_read as u64),
        p.read_calls,
        human_bytes(b.bytes_read as u64),
        b.read_calls,
        b.leaf_reads,
        if cgroups {
            "Each run here was in the cgroup given for its limit, which bounds the page cache too, as paper 1's cgroups did."
        } else {
            "Paper 1 ran its joins under a cgroup that bounded the page cache too; without one (`--cgroups`) the reads here after the first are served from the page cache."
        },
    ))
}

/// lidx's check where paper 1 relied on its cgroups: how many runs' peak RSS grew by at
/// most their limit (and [`RSS_SLACK`]) beyond the process's own baseline, and the run
/// that grew most against its limit; a line each.
pub(super) fn memory_within_limits(rows: &[Row]) -> String {
    let mut s = String::new();
    let measured: Vec<&Row> = rows.iter().filter(|r| r.rec.peak_rss.is_some()).collect();
    let within = measured
        .iter()
        .filter(|r| r.within_limit() == Some(true))
        .count();
    let worst = measured
        .iter()
        .filter_map(|r| Some((r.rss_growth()? as f64 - r.rec.memory_limit as f64, *r)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let _ = writeln!(
        s,
        "Peak RSS grew by at most the limit plus {} beyond the process's own baseline (the same command on a 256-tuple table) in {within} of {} runs.",
        human_bytes(RSS_SLACK),
        measured.len()
    );
    if let Some((over, r)) = worst {
        let _ = writeln!(
            s,
            "Largest growth against its limit: {} {} ({}, {} tuples) grew {} under a limit of {} ({} {}).",
            r.operation().name(),
            r.rec.method,
            r.set,
            r.rec.tuples,
            human_bytes(r.rss_growth().unwrap_or(0)),
            human_bytes(r.rec.memory_limit),
            human_bytes(over.abs() as u64),
            if over > 0.0 { "above" } else { "below" }
        );
    }
    s
}
