//! The study's plots: Fig. 5 (size against build time and against the self-join) and
//! Table 2 (size against the window).

use std::path::Path;

use super::Options;
use super::rows::{Row, SizeRow};
use super::summary::size_series;
use crate::plot::{Scale, Series, chart};

pub(super) fn plot(
    options: &Options,
    rows: &[Row],
    sizes: &[SizeRow],
    out: &Path,
) -> anyhow::Result<()> {
    let by_kind = |f: &dyn Fn(&Row) -> (f64, f64)| -> Vec<Series> {
        options
            .indexes
            .iter()
            .map(|&kind| Series {
                name: kind.to_string(),
                points: rows.iter().filter(|r| r.kind == kind).map(f).collect(),
            })
            .collect()
    };
    chart(
        &out.join("fig5_size_vs_self_join.png"),
        "Index size against cold INLJ self-join time (one point per key set)",
        ("index size (bytes)", Scale::Log),
        ("self-join time (s)", Scale::Log),
        &by_kind(&|r| (r.bytes as f64, r.join.join_s)),
        false,
    )?;
    chart(
        &out.join("fig5_size_vs_build.png"),
        "Index size against build time (one point per key set)",
        ("index size (bytes)", Scale::Log),
        ("build time (s)", Scale::Log),
        &by_kind(&|r| (r.bytes as f64, r.build_s)),
        false,
    )?;
    let series: Vec<Series> = size_series(sizes)
        .into_iter()
        .map(|(set, kind)| Series {
            name: format!("{set} {kind}"),
            points: sizes
                .iter()
                .filter(|x| x.key_set == set && x.index == kind)
                .map(|x| (x.window as f64, x.index_bytes as f64))
                .collect(),
        })
        .collect();
    chart(
        &out.join("table2_size_vs_window.png"),
        "Table 2: PGM and sampled PGM size against window",
        ("window (positions)", Scale::Log),
        ("index size (bytes)", Scale::Log),
        &series,
        true,
    )
}
