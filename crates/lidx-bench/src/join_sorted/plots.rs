//! Paper 1's figures of joins of sorted tables (sections 5.3, 5.5, 5.6), per key set:
//! Fig. 6 (time against ratio), Fig. 10 (against threads), Fig. 11 (the learned join
//! against its window) and Fig. 8's stand-in (the cost model's prediction under an
//! assumed HDD).

use std::path::Path;

use super::Options;
use super::rows::{HddRow, Point, Row, point_medians};
use crate::harness::KeySet;
use crate::plot::{Scale, Series, chart};
use crate::text::human_bytes;

/// Figs. 6, 8 (predicted), 10 and 11 per key set; returns how many PNGs were written.
pub(super) fn plot_all(
    options: &Options,
    sets: &[KeySet],
    rows: &[Row],
    hdd_rows: &[HddRow],
    out: &Path,
) -> anyhow::Result<usize> {
    let m = point_medians(rows);
    let window = options.windows[0];
    let t1 = options.threads()[0];
    let shallow = options.io_depths[0];
    let deep = options.io_depths.iter().copied().max().unwrap_or(1);
    let time = |c: &Point| m.get(c).map(|f| f.time);
    // Figs. 10 and 11 at ratio 100, as in the paper, or the middle ratio given.
    let focus = if options.ratios.contains(&100) {
        100
    } else {
        options.ratios[options.ratios.len() / 2]
    };
    let big = human_bytes(options.read_size);
    let mut written = 0;
    for set in sets {
        let name = set.name();
        let cell = |ratio, method: &str, window, threads, depth| Point {
            set: name.clone(),
            ratio,
            method: method.to_string(),
            window,
            threads,
            depth,
        };
        let mut methods: Vec<(String, u64, usize)> = Vec::new();
        for kind in &options.indexes {
            methods.push((format!("inlj:{kind}"), window, shallow));
            if deep != shallow {
                methods.push((format!("inlj:{kind}"), window, deep));
            }
        }
        for method in ["merge", "hash"] {
            methods.push((method.into(), window, 1));
            methods.push((method.into(), 0, 1));
        }
        let label = |method: &str, window: u64, depth: usize| match (window, depth) {
            (0, _) => format!("{method}, {big} reads"),
            (_, 1) => method.to_string(),
            (_, d) => format!("{method} io-depth {d}"),
        };

        // One series per method, with its time at each x where `at` names the cell.
        let per_method = |xs: &[u64], at: &dyn Fn(u64, &str, u64, usize) -> Point| -> Vec<Series> {
            methods
                .iter()
                .map(|(method, w, depth)| Series {
                    name: label(method, *w, *depth),
                    points: xs
                        .iter()
                        .filter_map(|&x| time(&at(x, method, *w, *depth)).map(|s| (x as f64, s)))
                        .collect(),
                })
                .collect()
        };

        // Fig. 6: time against ratio.
        let series = per_method(&options.ratios, &|r, method, w, depth| {
            cell(r, method, w, t1, depth)
        });
        chart(
            &out.join(format!("fig6_{name}.png")),
            &format!("{name}: join time against |S|/|R| ({t1} thread, window {window})"),
            ("size ratio |S|/|R|", Scale::Log),
            ("join time (s)", Scale::Log),
            &series,
            true,
        )?;

        // Fig. 10: time against threads.
        let threads: Vec<u64> = options.threads().iter().map(|&t| t as u64).collect();
        let series = per_method(&threads, &|t, method, w, depth| {
            cell(focus, method, w, t as usize, depth)
        });
        chart(
            &out.join(format!("fig10_{name}.png")),
            &format!("{name}: join time against threads (ratio {focus}, window {window})"),
            ("threads", Scale::Linear),
            ("join time (s)", Scale::Log),
            &series,
            true,
        )?;

        // Fig. 11: the learned join's time against its window, one series per thread count.
        let learned = format!("inlj:{}", options.indexes[0]);
        let series: Vec<Series> = options
            .threads()
            .iter()
            .map(|&t| Series {
                name: format!("{learned}, {t} thread(s)"),
                points: options
                    .windows
                    .iter()
                    .filter_map(|&w| {
                        time(&cell(focus, &learned, w, t, shallow)).map(|s| (w as f64, s))
                    })
                    .collect(),
            })
            .collect();
        chart(
            &out.join(format!("fig11_{name}.png")),
            &format!("{name}: {learned} join time against window size (ratio {focus})"),
            ("window (tuples, one read each)", Scale::Linear),
            ("join time (s)", Scale::Linear),
            &series,
            true,
        )?;

        // Fig. 8 stand-in: predicted under the assumed HDD.
        let series: Vec<Series> = ["inlj", "merge", "hash"]
            .iter()
            .map(|&method| Series {
                name: format!("{method} (predicted)"),
                points: hdd_rows
                    .iter()
                    .filter(|r| r.key_set == name && r.method == method)
                    .map(|r| (r.ratio as f64, r.predicted_s.0))
                    .collect(),
            })
            .collect();
        chart(
            &out.join(format!("fig8_predicted_hdd_{name}.png")),
            &format!("{name}: PREDICTED join time on an assumed 7200 rpm HDD (cost model)"),
            ("size ratio |S|/|R|", Scale::Log),
            ("predicted join time (s)", Scale::Log),
            &series,
            true,
        )?;
        written += 4;
    }
    Ok(written)
}
