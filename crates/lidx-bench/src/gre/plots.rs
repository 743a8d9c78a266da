//! Paper 3's figures as PNGs: Fig. 2's heatmaps, per-kind bars (Figs. 3, 8, 10–11) and
//! Fig. 13's scans.

use std::path::Path;

use lidx::updatable::Workload;

use super::rows::Row;
use super::study::{Learned, Study};
use crate::key_source::KeySource;
use crate::plot::{HeatPanel, Scale, Series, bars, chart, heatmaps};

impl Study<'_> {
    pub(super) fn plots(&self, out: &Path) -> anyhow::Result<()> {
        self.heatmap_plots(out)?;
        self.kind_bars(out)?;
        self.alex_m_plot(out)?;
        self.phase_plot(out)?;
        self.scan_plot(out)?;
        Ok(())
    }

    pub(super) fn heatmap_plots(&self, out: &Path) -> anyhow::Result<()> {
        let ws = &self.o.workloads;
        for (learned, file, label) in [
            (Learned::AsPaper, "fig2", "alex, lipp"),
            (
                Learned::WithPgm,
                "fig2_with_pgm",
                "alex, lipp and dynamic-pgm",
            ),
        ] {
            self.heatmap_plot(out, (learned, label), ws, ("Fig. 2", file))?;
        }
        if !self.o.delete_workloads.is_empty() {
            let ws = self.deletion_workloads();
            let label = "alex, lipp; deletions";
            self.heatmap_plot(out, (Learned::AsPaper, label), &ws, ("Fig. 7", "fig7"))?;
        }
        Ok(())
    }

    /// Paper 3's `figure` (Fig. 2 or 7) over `ws`, with the learned kinds `learned` counts
    /// (named `label`), to `{fig}_heatmap{rest}.png` and `{fig}_sets{rest}.png` where
    /// `file` is `{fig}{rest}`.
    fn heatmap_plot(
        &self,
        out: &Path,
        (learned, label): (Learned, &str),
        ws: &[Workload],
        (figure, file): (&str, &str),
    ) -> anyhow::Result<()> {
        let (fig, rest) = file.split_at(file.find('_').unwrap_or(file.len()));
        if !self.grid.is_empty() {
            let locals: Vec<u64> = self.o.local.iter().rev().copied().collect();
            let globals = &self.o.global;
            let panels: Vec<HeatPanel> = ws
                .iter()
                .map(|&w| HeatPanel {
                    title: w.name().to_string(),
                    rows: locals.iter().map(|l| format!("{l}")).collect(),
                    columns: globals.iter().map(|g| format!("{g}")).collect(),
                    cells: locals
                        .iter()
                        .map(|&l| {
                            globals
                                .iter()
                                .map(|&g| {
                                    self.ratio_counting(&format!("hard-l{l}-g{g}"), w, learned)
                                })
                                .collect()
                        })
                        .collect(),
                })
                .collect();
            heatmaps(
                &out.join(format!("{fig}_heatmap{rest}.png")),
                &format!(
                    "Paper 3 {figure}: best learned ({label}) / best traditional throughput (green: learned wins)"
                ),
                (
                    "global hardness target (segments at eps 4096)",
                    "local (eps 32)",
                ),
                &panels,
                3,
            )?;
        }
        let named: Vec<&str> = self
            .sets
            .iter()
            .filter(|s| !matches!(s.1, KeySource::Hard { .. }))
            .map(|s| s.0.as_str())
            .collect();
        if !named.is_empty() {
            let panel = HeatPanel {
                title: "named key sets".into(),
                rows: named.iter().map(|s| s.to_string()).collect(),
                columns: ws.iter().map(|w| w.name().to_string()).collect(),
                cells: named
                    .iter()
                    .map(|s| {
                        ws.iter()
                            .map(|&w| self.ratio_counting(s, w, learned))
                            .collect()
                    })
                    .collect(),
            };
            heatmaps(
                &out.join(format!("{fig}_sets{rest}.png")),
                &format!(
                    "Paper 3 {figure} on named sets: best learned ({label}) / best traditional"
                ),
                ("workload", "set"),
                &[panel],
                1,
            )?;
        }
        Ok(())
    }

    /// Figs. 3, 8, 10, 11: one bar per kind and series.
    pub(super) fn kind_bars(&self, out: &Path) -> anyhow::Result<()> {
        let kinds: Vec<String> = self.o.kinds.iter().map(|k| k.name().to_string()).collect();
        let series = |name: String, value: &dyn Fn(&str) -> Option<f64>| Series {
            name,
            points: kinds
                .iter()
                .enumerate()
                .filter_map(|(i, k)| Some((i as f64, value(k)?)))
                .collect(),
        };
        let (ro, wo) = (Workload::ReadOnly.name(), Workload::WriteOnly.name());
        let pairs = [("easiest", &self.easy), ("hardest", &self.hard)];
        let mut fig3 = Vec::new();
        let mut fig10 = Vec::new();
        let mut fig11 = Vec::new();
        for (label, set) in pairs {
            let get = |w: &'static str, f: fn(&Row) -> f64| {
                move |k: &str| self.find("heatmap", set, k, w).map(f)
            };
            // The tails from the runs that time every operation, each percentile only
            // where at least 100 samples lie beyond it.
            let tail = |w: &'static str, f: fn(&Row) -> Option<f64>| {
                move |k: &str| self.find("tail", set, k, w).and_then(f)
            };
            fig3.push(series(
                format!("lookup, {label} ({set})"),
                &get(ro, |r| r.mean_ns.0),
            ));
            fig3.push(series(
                format!("insert, {label} ({set})"),
                &get(wo, |r| r.mean_ns.0),
            ));
            fig10.push(series(
                format!("p99, {label}"),
                &tail(ro, |r| {
                    (r.lookup_sampled >= 10_000).then_some(r.lookup_p99_ns as f64)
                }),
            ));
            fig10.push(series(
                format!("p99.9, {label}"),
                &tail(ro, |r| {
                    (r.lookup_sampled >= 100_000).then_some(r.lookup_p999_ns as f64)
                }),
            ));
            fig11.push(series(
                format!("p99, {label}"),
                &tail(wo, |r| {
                    (r.insert_sampled >= 10_000).then_some(r.insert_p99_ns as f64)
                }),
            ));
            fig11.push(series(
                format!("p99.9, {label}"),
                &tail(wo, |r| {
                    (r.insert_sampled >= 100_000).then_some(r.insert_p999_ns as f64)
                }),
            ));
        }
        let fig8: Vec<Series> = self
            .sets
            .iter()
            .map(|s| {
                series(s.0.clone(), &|k: &str| {
                    self.find("heatmap", &s.0, k, wo)
                        .map(|r| r.size_bytes as f64 / (1u64 << 20) as f64)
                })
            })
            .collect();
        let mut shift = Vec::new();
        for (from, to) in [(&self.easy, &self.hard), (&self.hard, &self.easy)] {
            shift.push(series(format!("{from} -> {to}"), &|k: &str| {
                self.shift_ratio(from, k)
            }));
        }
        let plots: [(&str, &str, &str, Scale, Vec<Series>); 5] = [
            (
                "fig3_insert_vs_lookup.png",
                "Paper 3 Fig. 3: mean insert (write-only) and lookup (read-only) latency",
                "ns",
                Scale::Log,
                fig3,
            ),
            (
                "fig8_size.png",
                "Paper 3 Fig. 8: size after the write-only workload",
                "MiB",
                Scale::Log,
                fig8,
            ),
            (
                "fig10_lookup_tail.png",
                "Paper 3 Fig. 10: lookup tail latency (read-only)",
                "ns",
                Scale::Log,
                fig10,
            ),
            (
                "fig11_insert_tail.png",
                "Paper 3 Fig. 11: insert tail latency (write-only)",
                "ns",
                Scale::Log,
                fig11,
            ),
            (
                "fig12_shift.png",
                "Paper 3 Fig. 12: balanced throughput, inserts from the other set / from the same source",
                "ratio",
                Scale::Linear,
                shift,
            ),
        ];
        for (file, title, unit, scale, series) in plots {
            if series.iter().any(|s| !s.points.is_empty()) {
                bars(&out.join(file), title, &kinds, (unit, scale), &series)?;
            }
        }
        Ok(())
    }

    /// Fig. 3 by phase: a group per kind that divides its inserts (the paper's four) and
    /// set, a bar per phase.
    fn phase_plot(&self, out: &Path) -> anyhow::Result<()> {
        let mut groups = Vec::new();
        let mut phases: Vec<[f64; 5]> = Vec::new();
        for (label, set) in [("easiest", &self.easy), ("hardest", &self.hard)] {
            for k in self.kind_names() {
                if let Some(p) = self.phases_of(set, k).filter(|p| p[4] == 0.0) {
                    groups.push(format!("{k}, {label}"));
                    phases.push(p);
                }
            }
        }
        if groups.is_empty() {
            return Ok(());
        }
        let names = ["search", "collision", "statistics", "smo"];
        let series: Vec<Series> = names
            .iter()
            .enumerate()
            .map(|(i, name)| Series {
                name: name.to_string(),
                points: phases
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p[i] > 0.0)
                    .map(|(g, p)| (g as f64, p[i]))
                    .collect(),
            })
            .collect();
        bars(
            &out.join("fig3_phases.png"),
            &format!(
                "Paper 3 Fig. 3: an insert's time by phase (write-only; easiest {}, hardest {})",
                self.easy, self.hard
            ),
            &groups,
            ("ns per insert", Scale::Linear),
            &series,
        )
    }

    /// Fig. 9: LIPP and ALEX-M per workload, on each set they ran on.
    fn alex_m_plot(&self, out: &Path) -> anyhow::Result<()> {
        let workloads: Vec<String> = self.o.workloads.iter().map(|w| w.name().into()).collect();
        let mut series = Vec::new();
        for set in self.alex_m_sets() {
            for kind in ["lipp", "alex-m"] {
                let points = (0..workloads.len())
                    .filter_map(|i| {
                        let r = self.find("alex-m", set, kind, &workloads[i])?;
                        Some((i as f64, r.ops_per_s.0 / 1e6))
                    })
                    .collect();
                series.push(Series {
                    name: format!("{kind}, {set}"),
                    points,
                });
            }
        }
        if series.iter().any(|s| !s.points.is_empty()) {
            bars(
                &out.join("fig9_alex_m.png"),
                "Paper 3 Fig. 9: ALEX-M (alex at lipp's memory) against lipp",
                &workloads,
                ("Mops/s", Scale::Linear),
                &series,
            )?;
        }
        Ok(())
    }

    pub(super) fn scan_plot(&self, out: &Path) -> anyhow::Result<()> {
        let series: Vec<Series> = self
            .o
            .kinds
            .iter()
            .map(|k| Series {
                name: k.name().into(),
                points: self
                    .rows
                    .iter()
                    .filter(|r| r.part == "scan" && r.kind == k.name())
                    .map(|r| (r.scan_len as f64, r.ops_per_s.0 * r.scan_len as f64))
                    .collect(),
            })
            .collect();
        if series.iter().any(|s| !s.points.is_empty()) {
            chart(
                &out.join("fig13_scans.png"),
                "Paper 3 Fig. 13: range scans, entries read per second",
                ("entries per scan", Scale::Log),
                ("entries/s", Scale::Log),
                &series,
                true,
            )?;
        }
        Ok(())
    }
}
