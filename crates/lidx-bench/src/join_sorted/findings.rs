//! Paper 1's findings on joins of sorted tables (section 5.3, Fig. 6) beside what this run
//! measured, one function each, and the checks lidx adds: the cost model's pick
//! (`lidx join --method auto`) against the measured fastest method, and sort-merge's
//! bandwidth against the storage profile's.

use std::collections::HashMap;
use std::fmt::Write as _;

use lidx::index::IndexKind;
use lidx::join::cost::{self, Choice};
use lidx::storage::profile::StorageProfile;

use super::rows::{Figures, Point};

/// The paper's finding for learned INLJ against B+tree INLJ at `ratio` (SSD, section 5.3).
fn paper_vs_btree(ratio: u64) -> &'static str {
    match ratio {
        1..=100 => "1.2-1.6x",
        1000 => "0.6-0.9x",
        _ => "-",
    }
}

/// The paper's finding for learned INLJ against sort-merge at `ratio` (SSD, section 5.3).
fn paper_vs_merge(ratio: u64) -> &'static str {
    match ratio {
        1 => "<1 (merge wins)",
        10..=100 => "1.1-1.4x",
        _ => "-",
    }
}

/// Finding 1 (section 5.3): on SSDs, learned INLJ is 1.2-1.6x faster than B+tree INLJ at
/// ratios 1 to 100. The B+tree join's time over the learned one's at `ratio` (above 1:
/// learned faster), beside the paper's range for that ratio.
pub(super) fn learned_vs_btree(ratio: u64, learned_s: f64, btree_s: f64) -> (f64, &'static str) {
    (btree_s / learned_s, paper_vs_btree(ratio))
}

/// Finding 2 (section 5.3): learned INLJ is 1.1-1.4x faster than sort-merge at ratios 10
/// to 100, and sort-merge wins at ratio 1. Sort-merge's time over the learned join's at
/// `ratio`, beside the paper's range for that ratio.
pub(super) fn learned_vs_merge(ratio: u64, learned_s: f64, merge_s: f64) -> (f64, &'static str) {
    (merge_s / learned_s, paper_vs_merge(ratio))
}

/// The cost model's pick among the three methods `lidx join --method auto` weighs, each
/// as auto would run it (the hash join building its table), against the measured fastest:
/// both method names and how much slower the pick ran.
fn judge(
    m: &HashMap<Point, Figures>,
    inlj: (&str, &Point),
    merge: &Point,
    hash: &Point,
) -> Option<(String, String, f64)> {
    let point_of = |c: Choice| match c {
        Choice::Inlj => inlj.1,
        Choice::Merge => merge,
        Choice::Hash => hash,
    };
    let name = |c: Choice| match c {
        Choice::Inlj => inlj.0.to_string(),
        Choice::Merge => "merge".to_string(),
        Choice::Hash => "hash".to_string(),
    };
    let measured = |c: Choice| -> Option<f64> {
        let f = m.get(point_of(c))?;
        Some(match c {
            Choice::Hash => f.time + f.build,
            _ => f.time,
        })
    };
    let choices = [Choice::Inlj, Choice::Merge, Choice::Hash];
    let times: Vec<(Choice, f64)> = choices
        .iter()
        .map(|&c| Some((c, measured(c)?)))
        .collect::<Option<_>>()?;
    let pick = cost::fastest(true, |c| {
        m.get(point_of(c)).map_or(f64::INFINITY, |f| f.model)
    });
    let (fastest, best) = times.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let picked = times.iter().find(|t| t.0 == pick)?.1;
    Some((name(pick), name(fastest), picked / best))
}

/// The cost model's picks over the summary's cells, each judged twice: with every scan
/// reading the window's tuples per call, and with merge and hash at large reads (as
/// `lidx join --method auto` runs them).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ModelPicks {
    /// Cells judged with window reads.
    picks: usize,
    /// Of them, where the pick was the measured fastest.
    matched: usize,
    /// Of them, where the pick ran at most 10% slower than the fastest.
    near: usize,
    /// Cells judged with large reads.
    big_picks: usize,
    /// Of them, where the pick was the measured fastest.
    big_matched: usize,
}

/// One key set at one ratio, as the cost model's pick is judged there: the learned INLJ
/// (its name and point), and merge and hash at window reads and at large reads.
pub(super) struct PickCell<'a> {
    pub(super) inlj: (&'a str, &'a Point),
    pub(super) merge: &'a Point,
    pub(super) hash: &'a Point,
    pub(super) big_merge: &'a Point,
    pub(super) big_hash: &'a Point,
}

impl ModelPicks {
    /// Judges `cell` both ways and counts it; the pick with window reads and the measured
    /// fastest, `-` where a time is missing.
    pub(super) fn judge(&mut self, m: &HashMap<Point, Figures>, cell: &PickCell) -> [String; 2] {
        let shown = match judge(m, cell.inlj, cell.merge, cell.hash) {
            Some((pick, fastest, slower)) => {
                self.picks += 1;
                self.matched += usize::from(pick == fastest);
                self.near += usize::from(slower <= 1.1);
                [pick, fastest]
            }
            None => ["-".to_string(), "-".to_string()],
        };
        if let Some((pick, fastest, _)) = judge(m, cell.inlj, cell.big_merge, cell.big_hash) {
            self.big_picks += 1;
            self.big_matched += usize::from(pick == fastest);
        }
        shown
    }

    /// The picks in a sentence: how often the model (priced by `device`) picked the
    /// fastest of `learned`, merge and hash reading `window` tuples per call, or one at
    /// most 10% slower, and how often with merge and hash reading `big` per call.
    pub(super) fn sentence(
        &self,
        device: &str,
        learned: IndexKind,
        window: u64,
        big: &str,
    ) -> String {
        let ModelPicks {
            picks,
            matched,
            near,
            big_picks,
            big_matched,
        } = *self;
        format!(
            "The cost model ({device}) picked the measured fastest of inlj:{learned}, merge and hash (all reading {window} tuples per call) in {matched} of {picks} cells, and a method at most 10% slower than the fastest in {near}; with merge and hash reading {big} per call, as `lidx join --method auto` runs them, it picked the fastest in {big_matched} of {big_picks}."
        )
    }
}

/// Sort-merge with `read_size` reads at ratio 1 on each key set of `measured` (its name
/// and the MB/s it read at), against the MB/s `profile` predicts for sequential reads of
/// that size: a line per key set.
pub(super) fn merge_bandwidth(
    profile: &StorageProfile,
    read_size: u64,
    big: &str,
    measured: &[(String, f64)],
) -> String {
    let mut s = String::new();
    let seq = profile.sequential.bandwidth_mb_s;
    let seq_at_read = read_size as f64 / profile.sequential.read_us(read_size);
    for (name, bw) in measured {
        let _ = writeln!(
            s,
            "Sort-merge with {big} reads on {name} at ratio 1 read {bw:.0} MB/s: {:.0}% of the {seq_at_read:.0} MB/s the profile predicts for {big} sequential reads ({seq:.0} MB/s asymptotic).",
            100.0 * bw / seq_at_read,
        );
    }
    s
}
