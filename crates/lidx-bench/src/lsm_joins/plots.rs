//! Paper 5's figures as PNG charts (Figs. 5–13): a line chart per panel and metric,
//! Fig. 7's heatmaps and Fig. 10's cumulative latency.

use std::path::Path;

use super::Figure;
use super::study::{Metric, Panel, Study, metrics, seconds};
use crate::plot::{HeatPanel, Scale, Series, bars, chart, heatmaps};

impl Study<'_> {
    pub(super) fn plots(&self, dir: &Path) -> anyhow::Result<()> {
        for panel in self.panels() {
            let (figure, dataset, param) = panel;
            match figure {
                Figure::F7 => self.duplication_heatmaps(dir, panel)?,
                Figure::F10 => self.cumulative(dir, panel)?,
                // One setting: drawn with the other data sets' in one bar chart below.
                _ if self.xs(panel).len() < 2 => {}
                _ => {
                    for &metric in metrics(figure) {
                        let series: Vec<Series> = self
                            .methods_of(panel)
                            .into_iter()
                            .map(|m| Series {
                                name: m.to_string(),
                                points: self
                                    .runs_of(panel)
                                    .into_iter()
                                    .filter(|(_, r)| r.method == m)
                                    .map(|(c, r)| (c.x, metric.of(r)))
                                    .collect(),
                            })
                            .collect();
                        if series.iter().all(|s| s.points.iter().all(|p| p.1 <= 0.0)) {
                            continue;
                        }
                        let x_scale = match param {
                            "match_rate" | "skew" => Scale::Linear,
                            _ => Scale::Log,
                        };
                        let path = dir.join(format!(
                            "fig{}-{dataset}-{param}-{}.png",
                            figure.name(),
                            metric.file()
                        ));
                        chart(
                            &path,
                            &format!(
                                "Fig. {}: {} against {param} ({dataset})",
                                figure.name(),
                                metric.name()
                            ),
                            (param, x_scale),
                            ("seconds", Scale::Log),
                            &series,
                            true,
                        )?;
                    }
                }
            }
        }
        self.hybrid_bars(dir)?;
        Ok(())
    }

    /// Fig. 13b: each data set's hybrid and grace hash join at the paper's memory (the
    /// smallest of its panel), one group a data set.
    fn hybrid_bars(&self, dir: &Path) -> anyhow::Result<()> {
        let panels: Vec<Panel> = self
            .panels()
            .into_iter()
            .filter(|p| p.0 == Figure::F13b)
            .collect();
        if panels.is_empty() {
            return Ok(());
        }
        let groups: Vec<String> = panels.iter().map(|p| p.1.to_string()).collect();
        let series: Vec<Series> = ["HHJ-P", "HJ-P"]
            .into_iter()
            .map(|m| Series {
                name: m.into(),
                points: panels
                    .iter()
                    .enumerate()
                    .filter_map(|(g, &p)| {
                        let x = *self.xs(p).first()?;
                        Some((g as f64, self.value(p, x, 0.0, m, Metric::Join)?))
                    })
                    .collect(),
            })
            .collect();
        bars(
            &dir.join("fig13b-datasets-join.png"),
            "Fig. 13b: join latency at the paper's join memory, by data set",
            &groups,
            ("seconds", Scale::Linear),
            &series,
        )
    }

    /// Fig. 7: one heatmap per metric, a panel per design, c down and d across; each cell
    /// coloured by how much slower than the fastest cell of the figure it is.
    pub(super) fn duplication_heatmaps(&self, dir: &Path, panel: Panel) -> anyhow::Result<()> {
        let runs = self.runs_of(panel);
        let mut cs: Vec<f64> = runs.iter().map(|(c, _)| c.x2).collect();
        cs.sort_by(f64::total_cmp);
        cs.dedup();
        let ds = self.xs(panel);
        for metric in [Metric::Join, Metric::Index] {
            let panels: Vec<HeatPanel> = self
                .methods_of(panel)
                .into_iter()
                .map(|m| {
                    let best = runs
                        .iter()
                        .filter(|(_, r)| r.method == m)
                        .map(|(_, r)| metric.of(r))
                        .filter(|v| *v > 0.0)
                        .fold(f64::INFINITY, f64::min);
                    HeatPanel {
                        title: m.to_string(),
                        rows: cs.iter().map(|c| format!("c={c}")).collect(),
                        columns: ds.iter().map(|d| format!("d={d}")).collect(),
                        cells: cs
                            .iter()
                            .map(|&c| {
                                ds.iter()
                                    .map(|&d| {
                                        let v = self.value(panel, d, c, &m.to_string(), metric)?;
                                        Some((best / v.max(1e-9), seconds(v)))
                                    })
                                    .collect()
                            })
                            .collect(),
                    }
                })
                .collect();
            heatmaps(
                &dir.join(format!("fig7-{}-{}.png", panel.1, metric.file())),
                &format!(
                    "Fig. 7: {} over key duplication c and attribute duplication d ({}); each method against its fastest cell",
                    metric.name(),
                    panel.1
                ),
                ("d", "c"),
                &panels,
                3,
            )?;
        }
        Ok(())
    }

    /// Fig. 10: cumulative join and index latency after each batch.
    pub(super) fn cumulative(&self, dir: &Path, panel: Panel) -> anyhow::Result<()> {
        for metric in [Metric::Join, Metric::Index] {
            let series: Vec<Series> = self
                .runs_of(panel)
                .into_iter()
                .map(|(_, r)| {
                    let mut sum = 0.0;
                    Series {
                        name: r.method.to_string(),
                        points: r
                            .batches
                            .iter()
                            .map(|b| {
                                sum += match metric {
                                    Metric::Index => b.apply.index_s,
                                    _ => b.join.join_s,
                                };
                                (b.batch as f64, sum)
                            })
                            .collect(),
                    }
                })
                .filter(|s| s.points.iter().any(|p| p.1 > 0.0))
                .collect();
            if series.is_empty() {
                continue;
            }
            chart(
                &dir.join(format!("fig10-{}-{}.png", panel.1, metric.file())),
                &format!(
                    "Fig. 10: cumulative {} as batches of updates arrive ({})",
                    metric.name(),
                    panel.1
                ),
                ("batches applied (a join after each)", Scale::Linear),
                ("cumulative seconds", Scale::Log),
                &series,
                true,
            )?;
        }
        Ok(())
    }
}
