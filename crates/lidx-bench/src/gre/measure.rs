//! Running paper 3's study (GRE, section 8) cell by cell: each cell is every kind on one
//! workload over one key set, run `repeat` times with the kinds taking turns, the median
//! kept.

use lidx::updatable::{Alex, AlexParams, Kind, Lipp, Updatable, Workload};

use super::Options;
use super::rows::{Row, median};
use super::sets::KeySet;
use crate::csv_rows::Fixed;
use crate::harness::Experiment;
use crate::key_source::KeySource;
use crate::progress::Progress;
use crate::updatable::{self, RunOptions, RunReport};

/// One cell of paper 3's study.
#[derive(Clone, Debug)]
pub(super) enum Cell {
    /// Fig. 2 (and 3, 8, 10, 11 from the same runs): every kind on `workload` over the
    /// `set`-th of the grid's and the named sets.
    Heatmap { set: usize, workload: Workload },
    /// Figs. 10–11: `workload` (read-only for lookups, write-only for inserts) over the
    /// easiest or the hardest set with every operation timed alone, so that a p99.9
    /// rests on hundreds of samples (paper 3 times 1% of 100M operations and more).
    Tail { hardest: bool, workload: Workload },
    /// Fig. 13: scans of `len` entries over the scan set.
    Scan { len: usize },
    /// Fig. 12: balanced runs over the set from `from` inserting keys of the set from `to`
    /// (drawn with another seed where `twin`: the same source), as part `part`.
    Shift {
        from: KeySource,
        to: KeySource,
        twin: bool,
        part: &'static str,
    },
    /// Fig. 3: every kind on write-only over the easiest or the hardest set, each
    /// insert's phases timed.
    Phases { hardest: bool },
    /// Fig. 9: LIPP and ALEX-M on `workload` over the easiest or the hardest set.
    AlexM { hardest: bool, workload: Workload },
    /// Bulk loads of `scale` × n keys, each the fastest of three.
    Bulk { scale: usize },
}

/// Paper 3's study as the harness runs it.
pub(super) struct Measuring<'a> {
    o: &'a Options,
    machine: &'a str,
    /// The grid's and the named sets, in order.
    sources: Vec<KeySource>,
    /// The easiest and the hardest set (Fig. 12) and the set scans and bulk loads use.
    easy: KeySource,
    hard: KeySource,
    scan_set: KeySource,
    /// The heatmap's set loaded last (its place among `sources`), kept for the cells of
    /// its other workloads.
    loaded: Option<(usize, KeySet)>,
    /// Every set of the heatmap: name, source, local and global segments.
    pub(super) sets_seen: Vec<(String, KeySource, u64, u64)>,
    /// ALEX-M's density on each set it ran on (Fig. 9), found once per set.
    alex_m_density: Vec<(String, f64)>,
}

impl<'a> Measuring<'a> {
    /// Nothing measured yet.
    pub(super) fn new(
        o: &'a Options,
        machine: &'a str,
        sources: Vec<KeySource>,
        (easy, hard, scan_set): (KeySource, KeySource, KeySource),
    ) -> Measuring<'a> {
        Measuring {
            o,
            machine,
            sources,
            easy,
            hard,
            scan_set,
            loaded: None,
            sets_seen: Vec::new(),
            alex_m_density: Vec::new(),
        }
    }

    /// A run of `kind` on `workload`, as the study's options say.
    fn base(&self, kind: lidx::updatable::Kind, workload: Workload) -> RunOptions {
        RunOptions {
            kind,
            workload,
            ops: Some(self.o.ops.unwrap_or(self.o.n)),
            scan_len: 100,
            seed: self.o.seed,
            verify: false,
            sample_every: 100,
            alex_density: None,
            time_phases: false,
        }
    }

    /// The hardest set where `hardest`, else the easiest, loaded.
    fn easiest_or_hardest(&self, hardest: bool) -> anyhow::Result<KeySet> {
        let source = if hardest { &self.hard } else { &self.easy };
        KeySet::load(source, self.o.n, self.o.seed)
    }

    /// ALEX-M's density on `set`, found on its first use.
    fn alex_m_density(&mut self, set: &KeySet) -> anyhow::Result<f64> {
        if let Some(&(_, d)) = self.alex_m_density.iter().find(|(n, _)| *n == set.name) {
            return Ok(d);
        }
        let d = alex_m_density(&set.keys)?;
        self.alex_m_density.push((set.name.clone(), d));
        Ok(d)
    }

    /// Each of `runs` (one per kind) `repeat` times, the kinds taking turns in every
    /// round so that a slow spell of the machine falls on all of them; the median run's
    /// row is kept.
    fn run_kinds(
        &self,
        part: &str,
        set: &KeySet,
        shift_to: Option<&KeySet>,
        runs: &[RunOptions],
        progress: &dyn Progress,
    ) -> anyhow::Result<Vec<Row>> {
        let o = self.o;
        let mut reports: Vec<Vec<RunReport>> = vec![Vec::new(); runs.len()];
        for _ in 0..o.repeat.max(1) {
            for (run, got) in runs.iter().zip(&mut reports) {
                progress.message(&format!("{} {} on {}", run.kind, run.workload, set.name));
                let to = shift_to.map(|s| s.keys.as_slice());
                got.push(updatable::run(&set.keys, to, run)?);
            }
        }
        let mut rows = Vec::new();
        for (run, got) in runs.iter().zip(reports) {
            let Some(report) = median(got) else { continue };
            let mut row = Row::new(part, set, &report, o, self.machine);
            if run.workload == Workload::Scan {
                row.scan_len = run.scan_len;
            }
            if run.kind == Kind::Alex {
                let d = run
                    .alex_density
                    .unwrap_or(AlexParams::default().init_density);
                row.alex_density = Fixed(d);
            }
            row.shift_to = shift_to.map(|s| s.name.clone()).unwrap_or_default();
            rows.push(row);
            progress.step();
        }
        Ok(rows)
    }

    /// Makes the heatmap's `i`-th set the one loaded: kept where it is already, else
    /// loaded now and listed among the sets seen.
    fn load_heatmap_set(&mut self, i: usize) -> anyhow::Result<()> {
        if self.loaded.as_ref().is_none_or(|(j, _)| *j != i) {
            let source = self
                .sources
                .get(i)
                .ok_or_else(|| anyhow::anyhow!("no key set {i}"))?;
            let set = KeySet::load(source, self.o.n, self.o.seed)?;
            self.sets_seen.push((
                set.name.clone(),
                set.source.clone(),
                set.local_segments,
                set.global_segments,
            ));
            self.loaded = Some((i, set));
        }
        Ok(())
    }

    /// Every kind's three bulk loads of `scale` × n keys (a SOSD file: every 4th key,
    /// every other key, all), the fastest of each kept, so caches and noise bend the line
    /// less.
    fn bulk(&self, scale: usize, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        let o = self.o;
        let set = match &self.scan_set {
            KeySource::Sosd(_) => {
                let mut set = KeySet::load(&self.scan_set, o.n, o.seed)?;
                set.keys = set.keys.iter().step_by(4 / scale).copied().collect();
                set
            }
            source => KeySet::load(source, o.n * scale, o.seed)?,
        };
        let mut rows = Vec::new();
        for &kind in &o.kinds {
            progress.message(&format!("bulk-loading {kind} with {} keys", set.keys.len()));
            let run = RunOptions {
                ops: Some(0),
                ..self.base(kind, Workload::ReadOnly)
            };
            let mut best: Option<RunReport> = None;
            for _ in 0..3 {
                let r = updatable::run(&set.keys, None, &run)?;
                if best.as_ref().is_none_or(|b| r.bulk_load_s < b.bulk_load_s) {
                    best = Some(r);
                }
            }
            if let Some(r) = best {
                rows.push(Row::new("bulk", &set, &r, o, self.machine));
            }
            progress.step();
        }
        Ok(rows)
    }
}

impl Measuring<'_> {
    /// Whether Fig. 9 runs: asked for, with alex and lipp among the kinds.
    fn runs_alex_m(&self) -> bool {
        let o = self.o;
        o.alex_m && o.kinds.contains(&Kind::Alex) && o.kinds.contains(&Kind::Lipp)
    }
}

/// The density at which the ALEX-like index, bulk-loaded with all of `keys`, takes the
/// bytes the LIPP-like index takes (paper 3 tunes ALEX's fill factor to LIPP's memory,
/// section 5): ALEX's size is about its entries over the density, so the density is
/// scaled by the ratio of the sizes until it settles, within 0.05 and ALEX's own 0.7.
pub(super) fn alex_m_density(keys: &[u64]) -> anyhow::Result<f64> {
    let entries: Vec<(u64, u64)> = keys.iter().map(|&k| (k, k)).collect();
    let lipp = Lipp::bulk_load(&entries)?.size_in_bytes() as f64;
    let mut density = AlexParams::default().init_density;
    for _ in 0..3 {
        let alex = Alex::with_params(&entries, AlexParams::with_density(density))?;
        density = (density * alex.size_in_bytes() as f64 / lipp).clamp(0.05, 0.7);
    }
    Ok(density)
}

impl Experiment for Measuring<'_> {
    type Cell = Cell;
    type Row = Row;

    /// The heatmap's sets and workloads, then the scans, the shifts (easy → hard and
    /// hard → easy, each against inserting keys of its own source drawn with another
    /// seed; a SOSD file: its own keys again, as updates) and the bulk loads.
    fn cells(&self) -> anyhow::Result<Vec<Cell>> {
        let o = self.o;
        let mut cells = Vec::new();
        for set in 0..self.sources.len() {
            for &workload in o.workloads.iter().chain(&o.delete_workloads) {
                cells.push(Cell::Heatmap { set, workload });
            }
        }
        let tails = [Workload::ReadOnly, Workload::WriteOnly];
        for hardest in [false, true] {
            cells.extend(
                tails
                    .iter()
                    .filter(|w| o.workloads.contains(w))
                    .map(|&workload| Cell::Tail { hardest, workload }),
            );
        }
        if o.phases {
            cells.extend([false, true].map(|hardest| Cell::Phases { hardest }));
        }
        if self.runs_alex_m() {
            for hardest in [false, true] {
                cells.extend(
                    o.workloads
                        .iter()
                        .map(|&workload| Cell::AlexM { hardest, workload }),
                );
            }
        }
        cells.extend(o.scan_lens.iter().map(|&len| Cell::Scan { len }));
        if o.shift {
            let (e, h) = (&self.easy, &self.hard);
            for (from, to, twin, part) in [
                (e, h, false, "shift"),
                (e, e, true, "shift-base"),
                (h, e, false, "shift"),
                (h, h, true, "shift-base"),
            ] {
                cells.push(Cell::Shift {
                    from: from.clone(),
                    to: to.clone(),
                    twin,
                    part,
                });
            }
        }
        cells.extend([1, 2, 4].map(|scale| Cell::Bulk { scale }));
        Ok(cells)
    }

    fn steps(&self, cell: &Cell) -> u64 {
        match cell {
            Cell::AlexM { .. } => 2,
            _ => self.o.kinds.len() as u64,
        }
    }

    fn run_cell(&mut self, cell: &Cell, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        let o = self.o;
        let all = |workload| -> Vec<RunOptions> {
            o.kinds.iter().map(|&k| self.base(k, workload)).collect()
        };
        match cell {
            Cell::Heatmap { set, workload } => {
                let runs = all(*workload);
                self.load_heatmap_set(*set)?;
                let (_, set) = self
                    .loaded
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("a set was just loaded"))?;
                self.run_kinds("heatmap", set, None, &runs, progress)
            }
            Cell::Tail { hardest, workload } => {
                let set = self.easiest_or_hardest(*hardest)?;
                let runs: Vec<RunOptions> = o
                    .kinds
                    .iter()
                    .map(|&k| RunOptions {
                        sample_every: 1,
                        ..self.base(k, *workload)
                    })
                    .collect();
                self.run_kinds("tail", &set, None, &runs, progress)
            }
            Cell::Scan { len } => {
                let len = *len;
                let set = KeySet::load(&self.scan_set, o.n, o.seed)?;
                // About 2M entries read per run, at least 100 scans.
                let scans = (2_000_000 / len).clamp(100, o.ops.unwrap_or(o.n).max(100));
                let runs: Vec<RunOptions> = o
                    .kinds
                    .iter()
                    .map(|&k| RunOptions {
                        ops: Some(scans),
                        scan_len: len,
                        ..self.base(k, Workload::Scan)
                    })
                    .collect();
                self.run_kinds("scan", &set, None, &runs, progress)
            }
            Cell::Shift {
                from,
                to,
                twin,
                part,
            } => {
                let from = KeySet::load(from, o.n, o.seed)?;
                let seed = if *twin { o.seed ^ 0x5eed } else { o.seed };
                let to = KeySet::load(to, o.n, seed)?;
                self.run_kinds(part, &from, Some(&to), &all(Workload::Shift), progress)
            }
            Cell::Phases { hardest } => {
                let set = self.easiest_or_hardest(*hardest)?;
                let runs: Vec<RunOptions> = o
                    .kinds
                    .iter()
                    .map(|&k| RunOptions {
                        time_phases: true,
                        ..self.base(k, Workload::WriteOnly)
                    })
                    .collect();
                self.run_kinds("phases", &set, None, &runs, progress)
            }
            Cell::AlexM { hardest, workload } => {
                let set = self.easiest_or_hardest(*hardest)?;
                progress.message(&format!("sizing alex-m to lipp on {}", set.name));
                let density = self.alex_m_density(&set)?;
                let runs = [
                    self.base(Kind::Lipp, *workload),
                    RunOptions {
                        alex_density: Some(density),
                        ..self.base(Kind::Alex, *workload)
                    },
                ];
                self.run_kinds("alex-m", &set, None, &runs, progress)
            }
            Cell::Bulk { scale } => self.bulk(*scale, progress),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alex_m_takes_about_lipps_bytes_at_its_density() {
        let keys = lidx::data::generate(&lidx::data::GenParams::new(
            lidx::data::Distribution::Lognormal,
            200_000,
            7,
        ))
        .unwrap();
        let entries: Vec<(u64, u64)> = keys.iter().map(|&k| (k, k)).collect();
        let lipp = Lipp::bulk_load(&entries).unwrap().size_in_bytes() as f64;
        let alex = Alex::bulk_load(&entries).unwrap().size_in_bytes() as f64;
        let d = alex_m_density(&keys).unwrap();
        let alex_m = Alex::with_params(&entries, AlexParams::with_density(d))
            .unwrap()
            .size_in_bytes() as f64;
        // LIPP is the larger, so ALEX-M is sparser than ALEX and within a fifth of LIPP.
        assert!(lipp > alex, "{lipp} {alex}");
        assert!(d < 0.7, "{d}");
        assert!((alex_m / lipp - 1.0).abs() < 0.2, "{alex_m} {lipp} at {d}");
    }
}
