//! The summary of paper 1's study of unsorted tables (section 5.4): the index builds
//! (Fig. 9b) and the joins (Fig. 9a) with the paper's findings beside this run's
//! ([`findings`]), the sorts, and every run's memory.

use std::fmt::Write as _;

use super::Options;
use super::findings;
use super::rows::{Lookup, Role, Row};
use crate::harness::KeySet;
use crate::text::{human_bytes, times};

/// A limit's name in tables: its size, and where the limits are the defaults, which of
/// them it is.
fn limit_name(limits: &[u64], limit: u64, defaults: bool) -> String {
    let size = human_bytes(limit);
    let last = limits.len().saturating_sub(1);
    match (defaults, limits.iter().position(|&l| l == limit)) {
        (true, Some(0)) => format!("small ({size})"),
        (true, Some(i)) if i == last => format!("large ({size})"),
        (true, Some(_)) => format!("medium ({size})"),
        _ => size,
    }
}

/// The summary's text (after its title and setting).
pub(super) fn summarize(
    options: &Options,
    limits: &[u64],
    sets: &[KeySet],
    rows: &[Row],
) -> String {
    let q = Lookup::of(rows);
    let defaults = options.limits.is_none();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## Index creation (Fig. 9b)\n\nBuilding both unclustered indexes of the shuffled inner table, in seconds; medians of {} run(s). Write amplification is bytes written per byte of tuples. Index in memory: the PGM and partition map, or the B+tree's levels above its leaves. Paper 1 (FB, 200M keys): 2 GB limit 10,777 s B-tree against 2,993 s PGM (3.6x); 32 GB 1,406 s against 411 s (3.4x); PGM 3 MB against B-tree 12 MB.\n",
        options.repeat
    );
    let _ = writeln!(
        s,
        "| key set | limit | btree-inserts (s) | partition (s) | speedup | paper | WA btree / partition | leaf reads | evictions | in memory: btree levels / partition model and map (model alone) |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---|---:|---:|---:|---:|");
    for set in sets {
        let name = set.name();
        for &limit in limits {
            let b = q.build(&name, Role::Inner, "btree-inserts", 1, limit);
            let p = q.build(&name, Role::Inner, "partition", 1, limit);
            let (Some(b), Some(p)) = (b, p) else {
                continue;
            };
            let (speedup, paper) = findings::faster_learned_builds(limits, limit, &b, &p);
            let _ = writeln!(
                s,
                "| {name} | {} | {:.2} | {:.2} | {speedup} | {paper} | {:.1} / {:.2} | {:.0} | {:.0} | {} / {} ({}) |",
                limit_name(limits, limit, defaults),
                b.seconds,
                p.seconds,
                b.write_amplification,
                p.write_amplification,
                b.leaf_reads,
                b.evictions,
                human_bytes(b.index_bytes as u64),
                human_bytes(p.index_bytes as u64),
                human_bytes(p.model_bytes as u64),
            );
        }
    }

    let _ = writeln!(
        s,
        "\n## Joins of unsorted tables (Fig. 9a)\n\nJoin time in seconds after the indexes are built (as the paper plots it); sort-merge after both tables are sorted. In brackets: with that work (both indexes built at the same limit, or both tables sorted). Paper 1: the learned and B-tree joins perform about the same.\n"
    );
    let _ = writeln!(
        s,
        "| key set | limit | ratio | partition | btree-inserts | btree / partition | grace | sort-merge |"
    );
    let _ = writeln!(s, "|---|---|---:|---|---|---:|---|---|");
    for set in sets {
        let name = set.name();
        for &limit in limits {
            for &ratio in &options.ratios {
                let cell = |method: &str| -> String {
                    match (
                        q.join(&name, method, ratio, limit),
                        q.join_with_builds(&name, method, ratio, limit),
                    ) {
                        (Some(j), Some(w)) if method != "grace" => {
                            format!("{:.3} ({w:.2})", j.seconds)
                        }
                        (Some(j), _) => format!("{:.3}", j.seconds),
                        _ => "-".to_string(),
                    }
                };
                let ratio_of = findings::joins_alike(&q, &name, ratio, limit);
                let _ = writeln!(
                    s,
                    "| {name} | {} | {ratio} | {} | {} | {ratio_of} | {} | {} |",
                    limit_name(limits, limit, defaults),
                    cell("partition"),
                    cell("btree-inserts"),
                    cell("grace"),
                    cell("sort-merge"),
                );
            }
        }
    }

    for set in sets {
        let (limit, ratio) = (limits[0], options.ratios[0]);
        let cgroups = !options.cgroups.is_empty();
        if let Some(why) = findings::index_routes_read(&q, &set.name(), ratio, limit, cgroups) {
            let _ = writeln!(s, "\n{why}");
        }
    }

    let _ = writeln!(
        s,
        "\n## Sorts (beyond the paper)\n\nThe inner table sorted into a new table, in seconds; all three write the same bytes.\n"
    );
    let _ = writeln!(
        s,
        "| key set | limit | external | learned | btree-inserts | learned / external |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|");
    for set in sets {
        let name = set.name();
        for &limit in limits {
            let t = |method| q.sort(&name, method, limit).map(|f| f.seconds);
            let (Some(e), Some(l), Some(b)) = (t("external"), t("learned"), t("btree-inserts"))
            else {
                continue;
            };
            let _ = writeln!(
                s,
                "| {name} | {} | {e:.3} | {l:.3} | {b:.3} | {} |",
                limit_name(limits, limit, defaults),
                times(l / e)
            );
        }
    }

    let _ = write!(s, "\n## Memory\n\n{}", findings::memory_within_limits(rows));
    s
}
