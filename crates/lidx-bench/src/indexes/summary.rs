//! The study's summary: Fig. 5 (size, build and self-join per index) and Table 2 (sizes
//! as the window grows), beside paper 1's statements.

use std::fmt::Write as _;

use lidx::index::IndexKind;

use super::rows::{Row, SizeRow};
use super::{Fig5Index, Options};
use crate::text::{human_bytes, times};

/// The (key set, kind) pairs of Table 2, in the order they were measured.
pub(super) fn size_series(sizes: &[SizeRow]) -> Vec<(&str, &'static str)> {
    let mut seen: Vec<(&str, &'static str)> = Vec::new();
    for r in sizes {
        if !seen.contains(&(r.key_set.as_str(), r.index)) {
            seen.push((r.key_set.as_str(), r.index));
        }
    }
    seen
}

pub(super) fn summarize(options: &Options, rows: &[Row], sizes: &[SizeRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Fig. 5: size in memory, build time (keys in memory) and a cold INLJ self-join through each index. Paper (SSD, 200M-800M keys): PGM 1.1-1.7x faster than the B+tree in the self-join, 4x (real) to 10x (synthetic) smaller; learned indexes slower to build; ALEX on disk (data nodes in a file, inner nodes in memory) not competitive in the self-join and out of memory on OSM and Books. ALEX's build writes its file (the table's tuples in gapped data nodes), and its self-join reads that file, not the table.\n"
    );
    let _ = writeln!(
        s,
        "| key set | index | params | max window | size | inner file | build s | self-join s | inner reads | speedup vs btree | btree size / size |"
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let btree = rows
            .iter()
            .find(|b| b.set == r.set && b.kind == Fig5Index::Family(IndexKind::BTree));
        let (vs_join, vs_size) = match btree {
            Some(b) => (
                times(b.join.join_s / r.join.join_s),
                times(b.bytes as f64 / r.bytes.max(1) as f64),
            ),
            None => ("-".into(), "-".into()),
        };
        let window = match r.kind {
            Fig5Index::Alex => "-".to_string(),
            Fig5Index::Family(_) => r.max_window.to_string(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {window} | {} | {} | {:.3} | {:.3} | {} | {vs_join} | {vs_size} |",
            r.set,
            r.kind,
            r.params,
            human_bytes(r.bytes),
            human_bytes(r.inner_file_bytes),
            r.build_s,
            r.join.join_s,
            r.join.inner_reads,
        );
    }
    let _ = writeln!(
        s,
        "\nTable 2: index size against window (paper, sampled PGM: shrinks several-fold from 256 to 4096).\n"
    );
    let mut header = "| key set | index |".to_string();
    let mut rule = "|---|---|".to_string();
    for w in &options.windows {
        let _ = write!(header, " w={w} |");
        rule.push_str("---:|");
    }
    let _ = writeln!(s, "{header}\n{rule}");
    for (set, kind) in size_series(sizes) {
        let mut line = format!("| {set} | {kind} |");
        for w in &options.windows {
            let size = sizes
                .iter()
                .find(|x| x.key_set == set && x.index == kind && x.window == *w)
                .map_or("-".to_string(), |x| human_bytes(x.index_bytes));
            let _ = write!(line, " {size} |");
        }
        let _ = writeln!(s, "{line}");
    }
    s
}
