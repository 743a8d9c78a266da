//! Paper 3's measurements read back (section 8): a run's row, the best learned kind over
//! the best traditional one, throughputs.

use lidx::updatable::{Kind, Workload};

use super::rows::Row;
use super::{Options, is_learned};
use crate::key_source::KeySource;

/// Which learned kinds contend in a heatmap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Learned {
    /// As paper 3's Fig. 2: ALEX and LIPP, not the dynamic PGM, whose write speed comes
    /// from its LSM-like buffer rather than its learned design (section 4.1).
    AsPaper,
    /// Every learned kind, the dynamic PGM too.
    WithPgm,
}

impl Learned {
    /// Whether the learned `kind` contends.
    pub(super) fn counts(self, kind: Kind) -> bool {
        self == Learned::WithPgm || kind != Kind::DynamicPgm
    }
}

/// The measurements, read back for plots and the summary.
pub(super) struct Study<'a> {
    pub(super) o: &'a Options,
    pub(super) rows: &'a [Row],
    pub(super) grid: &'a [KeySource],
    /// Every set of the heatmap: name, source, local and global segments.
    pub(super) sets: &'a [(String, KeySource, u64, u64)],
    pub(super) easy: String,
    pub(super) hard: String,
}

impl Study<'_> {
    pub(super) fn find(&self, part: &str, set: &str, kind: &str, workload: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.part == part && r.set == set && r.kind == kind && r.workload == workload)
    }

    /// The best learned kind's throughput over the best traditional one's, and the best
    /// learned kind's name (where learned wins) or the best traditional one's, with the
    /// learned kinds as paper 3's Fig. 2 counts them (the dynamic PGM left out).
    pub(super) fn ratio(&self, set: &str, workload: Workload) -> Option<(f64, String)> {
        self.ratio_counting(set, workload, Learned::AsPaper)
    }

    /// [`Self::ratio`], with the learned kinds `learned` says.
    pub(super) fn ratio_counting(
        &self,
        set: &str,
        workload: Workload,
        learned: Learned,
    ) -> Option<(f64, String)> {
        let best = |family: bool| {
            self.o
                .kinds
                .iter()
                .filter(|&&k| is_learned(k) == family && (!family || learned.counts(k)))
                .filter_map(|&k| self.find("heatmap", set, k.name(), workload.name()))
                .max_by(|a, b| a.ops_per_s.0.total_cmp(&b.ops_per_s.0))
        };
        let (l, t) = (best(true)?, best(false)?);
        let ratio = l.ops_per_s.0 / t.ops_per_s.0.max(1e-9);
        let winner = if ratio >= 1.0 { &l.kind } else { &t.kind };
        Some((ratio, winner.clone()))
    }

    pub(super) fn kind_names(&self) -> Vec<&'static str> {
        self.o.kinds.iter().map(|k| k.name()).collect()
    }

    pub(super) fn has(&self, kind: Kind) -> bool {
        self.o.kinds.contains(&kind)
    }

    pub(super) fn throughput(&self, set: &str, kind: Kind, w: Workload) -> Option<f64> {
        self.find("heatmap", set, kind.name(), w.name())
            .map(|r| r.ops_per_s.0)
    }
}
