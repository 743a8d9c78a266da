//! The measurements of paper 5's study read back (section 4): panels, their runs and
//! methods, and the values plots, tables and findings show.

use lidx_lsm::joins::Method;

use super::Figure;
use super::cells::Cell;
use super::measure::Run;
use super::rows::AdviceRow;
use crate::text::times;

/// What a chart or table shows of a run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Metric {
    Join,
    Index,
    Total,
}

impl Metric {
    pub(super) fn of(self, run: &Run) -> f64 {
        match self {
            Metric::Join => run.join_s(),
            Metric::Index => run.index_s(),
            Metric::Total => run.total_s(),
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Metric::Join => "join latency",
            Metric::Index => "index latency",
            Metric::Total => "join + index latency",
        }
    }

    pub(super) fn file(self) -> &'static str {
        match self {
            Metric::Join => "join",
            Metric::Index => "index",
            Metric::Total => "total",
        }
    }
}

/// The metrics a figure shows, as the paper's does.
pub(super) fn metrics(figure: Figure) -> &'static [Metric] {
    match figure {
        Figure::F5a | Figure::F13b | Figure::F13c => &[Metric::Join],
        Figure::F5b | Figure::F9 => &[Metric::Total],
        Figure::F10 => &[Metric::Join, Metric::Index],
        Figure::F5c | Figure::F6 | Figure::F7 | Figure::F8 | Figure::F11 | Figure::F12 => {
            &[Metric::Join, Metric::Index]
        }
    }
}

/// A parameter's value as people read it.
pub(super) fn show(param: &str, x: f64) -> String {
    match param {
        "write_buffer" | "index_write_buffer" | "block_cache" | "join_memory" => {
            crate::text::human_bytes(x as u64)
        }
        "entry_size" => format!("{x} B"),
        _ => format!("{x}"),
    }
}

/// The measurements, read back for plots and the summary.
pub(super) struct Study<'a> {
    pub(super) cells: &'a [Cell],
    pub(super) runs: &'a [Run],
    pub(super) advice: &'a [AdviceRow],
}

/// A figure's panel: one data set and one swept parameter.
pub(super) type Panel = (Figure, &'static str, &'static str);

impl Study<'_> {
    /// The panels present, in the order they ran.
    pub(super) fn panels(&self) -> Vec<Panel> {
        let mut out: Vec<Panel> = Vec::new();
        for c in self.cells {
            let p = (c.figure, c.dataset, c.param);
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// The runs of a panel with their cells.
    pub(super) fn runs_of(&self, (figure, dataset, param): Panel) -> Vec<(&Cell, &Run)> {
        self.runs
            .iter()
            .map(|r| (&self.cells[r.cell], r))
            .filter(|(c, _)| c.figure == figure && c.dataset == dataset && c.param == param)
            .collect()
    }

    /// The methods of a panel, in their cells' order.
    pub(super) fn methods_of(&self, panel: Panel) -> Vec<Method> {
        let mut out = Vec::new();
        for (_, r) in self.runs_of(panel) {
            if !out.contains(&r.method) {
                out.push(r.method);
            }
        }
        out
    }

    /// `metric` of `method` in the panel's cell at `x` (and `x2`).
    pub(super) fn value(
        &self,
        panel: Panel,
        x: f64,
        x2: f64,
        method: &str,
        metric: Metric,
    ) -> Option<f64> {
        self.runs_of(panel)
            .into_iter()
            .find(|(c, r)| c.x == x && c.x2 == x2 && r.method.to_string() == method)
            .map(|(_, r)| metric.of(r))
    }

    /// The swept values of a panel, ascending.
    pub(super) fn xs(&self, panel: Panel) -> Vec<f64> {
        let mut xs: Vec<f64> = self.runs_of(panel).iter().map(|(c, _)| c.x).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs
    }

    /// `metric` of `method` at the smallest and the largest swept value of the panel.
    pub(super) fn ends(&self, panel: Panel, method: &str, metric: Metric) -> Option<(f64, f64)> {
        let xs = self.xs(panel);
        let (lo, hi) = (*xs.first()?, *xs.last()?);
        Some((
            self.value(panel, lo, 0.0, method, metric)?,
            self.value(panel, hi, 0.0, method, metric)?,
        ))
    }

    /// How `metric` of `method` changed from the smallest to the largest swept value, as
    /// `1.23x` (`–` where either is missing).
    pub(super) fn growth(&self, panel: Panel, method: &str, metric: Metric) -> String {
        self.ends(panel, method, metric)
            .map_or_else(|| "–".into(), |(a, b)| times(b / a.max(1e-9)))
    }

    /// The fastest method by `metric` at `x`.
    pub(super) fn fastest_at(&self, panel: Panel, x: f64, metric: Metric) -> Option<(String, f64)> {
        self.runs_of(panel)
            .into_iter()
            .filter(|(c, _)| c.x == x)
            .map(|(_, r)| (r.method.to_string(), metric.of(r)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// Seconds as people read them: `12 ms`, `1.23 s`.
pub(super) fn seconds(v: f64) -> String {
    if v < 1.0 {
        format!("{:.0} ms", v * 1e3)
    } else {
        format!("{v:.2} s")
    }
}
