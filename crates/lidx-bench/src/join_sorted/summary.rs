//! The summary of paper 1's joins of sorted tables (section 5.3): a line per key set and
//! ratio with every method's time and the paper's findings beside this run's
//! ([`findings`]), then the cost model's picks and sort-merge's bandwidth.

use std::fmt::Write as _;

use lidx::storage::profile::StorageProfile;

use super::Options;
use super::findings::{self, ModelPicks, PickCell};
use super::rows::{Figures, Point, Row, point_medians};
use crate::harness::KeySet;
use crate::text::human_bytes;

/// The summary's text (after its title and setting).
pub(super) fn summarize(
    options: &Options,
    sets: &[KeySet],
    rows: &[Row],
    profile: &StorageProfile,
) -> String {
    let m = point_medians(rows);
    let (learned, baseline) = options.learned_and_baseline();
    let window = options.windows[0];
    let t1 = options.threads()[0];
    let shallow = options.io_depths[0];
    let deep = options.io_depths.iter().copied().max().unwrap_or(1);
    let mut s = String::new();
    let big = human_bytes(options.read_size);
    let _ = writeln!(
        s,
        "Join time in seconds: {t1} thread(s); INLJ window {window} tuples and every scan reading {window} tuples per call (paper 1 streams pages); merge/hash {big} with {big} reads; INLJ at io-depth {shallow} unless named; medians of {} run(s). Speedups are time ratios, above 1 when {learned} INLJ is faster. Inner blocks and reads as counted. Hash times leave out building its table (as the paper does); the model's pick is checked against hash times with the build.\n",
        options.repeat
    );
    let _ = writeln!(
        s,
        "| key set | ratio | inlj:{learned} | inlj:{baseline} | merge | hash | merge {big} | vs {baseline} | paper | vs merge | paper | inner blocks {learned} / {baseline} | inner reads {learned} / {baseline} | {learned} depth {deep} | depth gain | model pick | fastest |"
    );
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---|---|"
    );
    let mut picks = ModelPicks::default();
    let mut merge_bw = Vec::new();
    let time = |c: &Point| m.get(c).map(|f| f.time);
    for set in sets {
        let name = set.name();
        for &ratio in &options.ratios {
            let at = |method: String, window, depth| Point {
                set: name.clone(),
                ratio,
                method,
                window,
                threads: t1,
                depth,
            };
            let learned_name = format!("inlj:{learned}");
            let l_cell = at(learned_name.clone(), window, shallow);
            let b_cell = at(format!("inlj:{baseline}"), window, shallow);
            let d_cell = at(learned_name.clone(), window, deep);
            let merge_cell = at("merge".into(), window, 1);
            let hash_cell = at("hash".into(), window, 1);
            let big_cell = at("merge".into(), 0, 1);
            let big_hash = at("hash".into(), 0, 1);
            let (Some(l), Some(b), Some(mg), Some(h), Some(d), Some(big_s)) = (
                time(&l_cell),
                time(&b_cell),
                time(&merge_cell),
                time(&hash_cell),
                time(&d_cell),
                time(&big_cell),
            ) else {
                continue;
            };
            // Judged once with every scan reading the window's tuples per call, once with
            // merge and hash at large reads.
            let [pick, fastest] = picks.judge(
                &m,
                &PickCell {
                    inlj: (learned_name.as_str(), &l_cell),
                    merge: &merge_cell,
                    hash: &hash_cell,
                    big_merge: &big_cell,
                    big_hash: &big_hash,
                },
            );
            if ratio == 1
                && let Some(f) = m.get(&big_cell)
            {
                merge_bw.push((name.clone(), f.bytes / big_s / 1e6));
            }
            let (vs_btree, paper_btree) = findings::learned_vs_btree(ratio, l, b);
            let (vs_merge, paper_merge) = findings::learned_vs_merge(ratio, l, mg);
            let count = |c: &Point, f: fn(&Figures) -> f64| m.get(c).map_or(0.0, f);
            let _ = writeln!(
                s,
                "| {name} | {ratio} | {l:.3} | {b:.3} | {mg:.3} | {h:.3} | {big_s:.3} | {vs_btree:.2}x | {paper_btree} | {vs_merge:.2}x | {paper_merge} | {} / {} | {} / {} | {d:.3} | {:.2}x | {pick} | {fastest} |",
                count(&l_cell, |f| f.blocks),
                count(&b_cell, |f| f.blocks),
                count(&l_cell, |f| f.reads),
                count(&b_cell, |f| f.reads),
                l / d,
            );
        }
    }
    let _ = writeln!(
        s,
        "\n{}",
        picks.sentence(&profile.device, learned, window, &big)
    );
    s.push_str(&findings::merge_bandwidth(
        profile,
        options.read_size,
        &big,
        &merge_bw,
    ));
    s
}
