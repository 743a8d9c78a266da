//! The study's plots: Fig. 3 (mean latency over the first n lookups) per profile and key
//! set, and Fig. 2 (cold and warm bars) per profile.

use std::path::Path;

use super::rows::{Row, find, unique};
use crate::plot::{Scale, Series, bars, chart};

/// Fig. 3 per profile and key set; Fig. 2 (cold and warm bars) per profile.
pub(super) fn plots(dir: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let profiles = unique(rows, |r| &r.profile);
    let sets = unique(rows, |r| &r.key_set);
    let systems = unique(rows, |r| &r.system);
    for &profile in &profiles {
        for &set in &sets {
            let series: Vec<Series> = systems
                .iter()
                .map(|&s| Series {
                    name: s.to_string(),
                    points: find(rows, profile, set, s, "curve")
                        .iter()
                        .map(|r| (r.queries as f64, r.mean_us.0 / 1e3))
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            if series.is_empty() {
                continue;
            }
            chart(
                &dir.join(format!("fig3_{profile}_{set}.png")),
                &format!("Mean latency over the first n lookups ({set}, {profile})"),
                ("lookups n", Scale::Log),
                ("mean latency, ms", Scale::Log),
                &series,
                true,
            )?;
        }
        let mut groups = Vec::new();
        for &set in &sets {
            for phase in ["cold", "warm"] {
                groups.push(format!("{set} {phase}"));
            }
        }
        let series: Vec<Series> = systems
            .iter()
            .map(|&s| Series {
                name: s.to_string(),
                points: sets
                    .iter()
                    .enumerate()
                    .flat_map(|(i, &set)| {
                        ["cold", "warm"]
                            .into_iter()
                            .enumerate()
                            .filter_map(move |(j, phase)| {
                                find(rows, profile, set, s, phase)
                                    .first()
                                    .map(|r| ((2 * i + j) as f64, r.mean_us.0 / 1e3))
                            })
                    })
                    .collect(),
            })
            .collect();
        bars(
            &dir.join(format!("fig2_{profile}.png")),
            &format!("Cold and warm lookup latency ({profile})"),
            &groups,
            ("mean latency, ms", Scale::Log),
            &series,
        )?;
    }
    Ok(())
}
