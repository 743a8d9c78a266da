//! Paper 5's summary (section 4): the setting, a table per panel and metric with the
//! panel's findings under it, and the advisor's picks.

use super::calibrate::Calibration;
use super::study::{Metric, Study, metrics, show};
use super::{Figure, Options};
use crate::harness::Findings;

impl Study<'_> {
    pub(super) fn summary(
        &self,
        o: &Options,
        machine: &str,
        calibration: &Calibration,
        seconds: f64,
    ) -> String {
        let mut s = String::new();
        s.push_str("# Paper 5: joins over LSM-trees (RocksDB)\n\n");
        s.push_str(&format!(
            "Machine: {machine}. {} rows a table before each figure's scaling (the paper: 10M), 64-byte entries unless swept, RocksDB {} with the settings of the paper's code (`exp_context.hpp`) where its text and code differ: 4 KiB blocks, size ratio 5, Bloom filters of 10 bits a key, no block cache unless swept, static level sizes, a compaction at the first level-0 file, the data trees' write buffer {} and first level four times it or more, the index trees' write buffer {}, compaction files of 256 Ki entries scaled the same way, and {} for the sort-merge join's runs and the hash join's partitions, which carry whole entries. Every run is warm (the databases fit in the page cache, as the paper's did). {} runs in {seconds:.0} s.\n\n",
            o.rows,
            lidx_lsm::ROCKSDB_VERSION,
            match o.write_buffer {
                Some(b) => crate::text::human_bytes(b as u64),
                None => "the paper's code's 64 MiB scaled by rows / 10M (at least 64 KiB)".into(),
            },
            match o.index_write_buffer {
                Some(b) => crate::text::human_bytes(b as u64),
                None => "its 8,382,464 bytes ((M − 12 KiB) / 2, M = 16 MiB) scaled the same way".into(),
            },
            match o.join_memory {
                Some(b) => crate::text::human_bytes(b),
                None => "the paper's 16 MB scaled the same way (at least 1 MiB)".into(),
            },
            self.runs.len()
        ));
        s.push_str("Data sets are synthetic with the features of the paper's Table 5 (d: rows per attribute value, ε: share of R's rows with a match, θ: Zipf skew): unif (d 4, ε 0.8), zipf (d 3, ε 1, θ 0.5), and stand-ins for the real sets: face-like (d 1, ε 1), wiki-like (d 1, ε 1, θ 0.2), user-like (d 4, ε 0.4, θ 0.9), movie-like (d 5, ε 0.85, θ 0.9). Latency is summed over a run's joins (join) and its index upkeep through every batch (index); seconds.\n\n");
        for (name, files) in &o.data {
            let (dup, matching) = files
                .clone()
                .take(o.rows as usize, o.rows as usize)
                .map_or((f64::NAN, f64::NAN), |g| g.features());
            s.push_str(&format!(
                "`{name}` is read from key files instead of its stand-in: S's attributes from {}, R's from {} (each key modulo 10^10); its first {} rows have d {dup:.2} and ε {matching:.2}.\n\n",
                files.s.display(),
                files.r.as_deref().unwrap_or(&files.s).display(),
                o.rows
            ));
        }
        s.push_str(&self.verdicts());
        for panel in self.panels() {
            let (figure, dataset, param) = panel;
            s.push_str(&format!(
                "## Fig. {}: {} ({dataset}, by {param})\n\n",
                figure.name(),
                figure.title()
            ));
            let methods = self.methods_of(panel);
            for &metric in metrics(figure) {
                s.push_str(&format!("{}:\n\n| {param} |", metric.name()));
                for m in &methods {
                    s.push_str(&format!(" {m} |"));
                }
                s.push('\n');
                s.push_str(&"|---".repeat(methods.len() + 1));
                s.push_str("|\n");
                let mut keys: Vec<(f64, f64)> = self
                    .runs_of(panel)
                    .iter()
                    .map(|(c, _)| (c.x2, c.x))
                    .collect();
                keys.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
                keys.dedup();
                for (x2, x) in keys {
                    let values: Vec<Option<f64>> = methods
                        .iter()
                        .map(|m| self.value(panel, x, x2, &m.to_string(), metric))
                        .collect();
                    let best = values
                        .iter()
                        .flatten()
                        .copied()
                        .fold(f64::INFINITY, f64::min);
                    let label = if figure == Figure::F7 {
                        format!("c={x2} d={x}")
                    } else {
                        show(param, x)
                    };
                    s.push_str(&format!("| {label} |"));
                    for v in values {
                        match v {
                            Some(v) if v == best && metric != Metric::Index => {
                                s.push_str(&format!(" **{v:.3}** |"))
                            }
                            Some(v) => s.push_str(&format!(" {v:.3} |")),
                            None => s.push_str(" – |"),
                        }
                    }
                    s.push('\n');
                }
                s.push('\n');
            }
            let mut findings = Findings::new("paper 5", "here");
            findings.push(self.findings(panel));
            s.push_str(&findings.list());
            s.push('\n');
        }
        s.push_str(&self.advice_summary(calibration));
        s
    }
}
