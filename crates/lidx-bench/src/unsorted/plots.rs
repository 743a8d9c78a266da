//! Paper 1's figures of unsorted tables (section 5.4): Fig. 9a (every join route against
//! the ratio) per key set and limit, Fig. 9b (the index builds against the limit) and the
//! sorts per key set.

use std::path::Path;

use super::rows::{Lookup, Role, Row};
use super::{INDEXES, OTHER_JOINS, SORTS, route};
use crate::harness::KeySet;
use crate::plot::{Scale, Series, chart};
use crate::text::human_bytes;

/// Fig. 9a per limit, Fig. 9b and the sorts per key set; returns how many PNGs were
/// written.
pub(super) fn plot_all(
    limits: &[u64],
    sets: &[KeySet],
    rows: &[Row],
    ratios: &[u64],
    out: &Path,
) -> anyhow::Result<usize> {
    let q = Lookup::of(rows);
    let mut written = 0;
    for set in sets {
        let name = set.name();
        for &limit in limits {
            let size = human_bytes(limit).replace(' ', "");
            let routes: Vec<String> = INDEXES
                .iter()
                .map(|&(kind, entries)| route(kind, entries))
                .chain(OTHER_JOINS.iter().map(|m| m.to_string()))
                .collect();
            let over_ratios = |time: &dyn Fn(&str, u64) -> Option<f64>, method: &str| Series {
                name: method.to_string(),
                points: ratios
                    .iter()
                    .filter_map(|&r| Some((r as f64, time(method, r)?)))
                    .collect(),
            };
            let joins: Vec<Series> = routes
                .iter()
                .map(|m| over_ratios(&|m, r| Some(q.join(&name, m, r, limit)?.seconds), m))
                .filter(|s| !s.points.is_empty())
                .collect();
            // The join with the work before it: the indexes built, or both tables sorted.
            let with_work: Vec<Series> = routes
                .iter()
                .filter(|m| m.as_str() != "grace")
                .map(|m| over_ratios(&|m, r| q.join_with_builds(&name, m, r, limit), m))
                .filter(|s| !s.points.is_empty())
                .collect();
            let title = format!(
                "{name}: joins of unsorted tables, memory limit {}",
                human_bytes(limit)
            );
            for (file, what, series) in [
                (format!("fig9a_{name}_{size}.png"), "", joins),
                (
                    format!("fig9a_{name}_{size}_with_builds.png"),
                    " (with index builds or sorts)",
                    with_work,
                ),
            ] {
                chart(
                    &out.join(file),
                    &format!("{title}{what}"),
                    ("size ratio |S|/|R|", Scale::Log),
                    ("time (s)", Scale::Log),
                    &series,
                    true,
                )?;
                written += 1;
            }
        }
        let at_limits = |f: &dyn Fn(u64) -> Option<f64>| -> Vec<(f64, f64)> {
            limits
                .iter()
                .filter_map(|&l| Some((l as f64, f(l)?)))
                .collect()
        };
        let series: Vec<Series> = INDEXES
            .iter()
            .map(|&(kind, entries)| {
                let index = route(kind, entries);
                Series {
                    points: at_limits(&|l| {
                        Some(q.build(&name, Role::Inner, &index, 1, l)?.seconds)
                    }),
                    name: index,
                }
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        chart(
            &out.join(format!("fig9b_{name}.png")),
            &format!("{name}: time to build an unclustered index against the memory limit"),
            ("memory limit (bytes)", Scale::Log),
            ("index creation (s)", Scale::Log),
            &series,
            true,
        )?;
        let series: Vec<Series> = SORTS
            .iter()
            .map(|&method| Series {
                name: method.to_string(),
                points: at_limits(&|l| Some(q.sort(&name, method, l)?.seconds)),
            })
            .collect();
        chart(
            &out.join(format!("sorts_{name}.png")),
            &format!("{name}: sorting the unsorted table against the memory limit"),
            ("memory limit (bytes)", Scale::Log),
            ("sort time (s)", Scale::Log),
            &series,
            true,
        )?;
        written += 2;
    }
    Ok(written)
}
