//! The study's plots: Fig. 1 (a–d).

use std::path::Path;

use super::Options;
use super::rows::{Cell, Row, cell, system_names};
use crate::plot::{Scale, Series, chart};
use crate::text::human_bytes;

/// Fig. 1 (a–d) at the largest table: latency (mean, p99) and throughput against the memory
/// budget, for gets and scans; and gets' latency against the table size at the smallest budget.
pub(super) fn plots(dir: &Path, o: &Options, rows: &[Row]) -> anyhow::Result<()> {
    let largest = o.rows.iter().copied().max().unwrap_or(0);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    // A log axis has no place for "no cache": with one, the cache axis is linear.
    let cache_axis = match o.memory_budgets.contains(&0) {
        true => Scale::Linear,
        false => Scale::Log,
    };
    for op in ["get", "scan"] {
        let mut latency = Vec::new();
        let mut throughput = Vec::new();
        for system in system_names(o) {
            let of = |f: &dyn Fn(&Cell) -> f64| -> Vec<(f64, f64)> {
                o.memory_budgets
                    .iter()
                    .filter_map(|&c| cell(rows, largest, system, c, op).map(|r| (mib(c), f(&r))))
                    .collect()
            };
            latency.push(Series {
                name: format!("{system} p99"),
                points: of(&|r| r.p99_us),
            });
            latency.push(Series {
                name: format!("{system} mean"),
                points: of(&|r| r.mean_us),
            });
            throughput.push(Series {
                name: system.to_string(),
                points: of(&|r| r.rows_per_s),
            });
        }
        let what = match op {
            "get" => "point lookups".to_string(),
            _ => format!("scans of {} rows", o.scan_rows),
        };
        let setting = format!(
            "{largest} rows, {} clients x {} outstanding",
            o.clients, o.outstanding
        );
        chart(
            &dir.join(format!("fig1_{op}_latency.png")),
            &format!("Latency of {what} ({setting})"),
            ("memory: index + block cache (MiB)", cache_axis),
            ("latency (µs)", Scale::Log),
            &latency,
            true,
        )?;
        chart(
            &dir.join(format!("fig1_{op}_throughput.png")),
            &format!("Throughput of {what} ({setting})"),
            ("memory: index + block cache (MiB)", cache_axis),
            ("rows per second", Scale::Log),
            &throughput,
            true,
        )?;
    }
    if o.rows.len() > 1 {
        let smallest_cache = o.memory_budgets.iter().copied().min().unwrap_or(0);
        let mut series = Vec::new();
        for system in system_names(o) {
            let pts = |f: &dyn Fn(&Cell) -> f64| -> Vec<(f64, f64)> {
                o.rows
                    .iter()
                    .filter_map(|&n| {
                        cell(rows, n, system, smallest_cache, "get").map(|r| (n as f64, f(&r)))
                    })
                    .collect()
            };
            series.push(Series {
                name: format!("{system} p99"),
                points: pts(&|r| r.p99_us),
            });
            series.push(Series {
                name: format!("{system} mean"),
                points: pts(&|r| r.mean_us),
            });
        }
        chart(
            &dir.join("table_sizes.png"),
            &format!(
                "Point lookups against table size (memory {})",
                human_bytes(smallest_cache)
            ),
            ("rows", Scale::Log),
            ("latency (µs)", Scale::Log),
            &series,
            true,
        )?;
    }
    Ok(())
}
