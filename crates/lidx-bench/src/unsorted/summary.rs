//! The summary of paper 1's study of unsorted tables (section 5.4): the paper's
//! statements judged ([`findings`]), the index builds (Fig. 9b) and the joins (Fig. 9a) of
//! indexes holding pointers (the paper's) and holding tuples, the sorts, and every run's
//! memory.

use std::fmt::Write as _;

use lidx::partition::Entries;

use super::findings::{self, PaperLimits};
use super::rows::{Lookup, Role, Row};
use super::{Cgroups, Options, route};
use crate::harness::KeySet;
use crate::text::{human_bytes, times};

/// A limit's name in tables: its size and its share of the table of `n` tuples.
fn limit_name(limit: u64, n: u64) -> String {
    let share = limit as f64 / (16 * n).max(1) as f64;
    let share = if share < 1.0 {
        format!("{:.0}%", 100.0 * share)
    } else {
        format!("{share:.1}x")
    };
    format!("{} ({share} of the table)", human_bytes(limit))
}

/// The summary's text (after its title and setting), for a table of `n` tuples.
pub(super) fn summarize(
    options: &Options,
    limits: &[u64],
    n: u64,
    sets: &[KeySet],
    rows: &[Row],
) -> String {
    let q = Lookup::of(rows);
    let at = PaperLimits::of(limits, n);
    let cgroups = options.cgroups != Cgroups::None && rows.iter().any(|r| r.cgroup.is_some());
    let mut s = String::new();
    for set in sets {
        let name = set.name();
        let judged = findings::statements(&q, &name, limits, n, &options.ratios, cgroups);
        let _ = writeln!(
            s,
            "## Paper 1's statements ({name})\n\nJudged on the indexes holding pointers, as the paper's do; its 2 GB limit stands beside {} (its share of the paper's 3.2 GB table is 5/8).\n\n{}",
            human_bytes(at.tight),
            judged.table()
        );
    }

    let _ = writeln!(
        s,
        "## Index creation (Fig. 9b)\n\nBuilding each unclustered index of the shuffled inner table, in seconds; medians of {} run(s). Pointers: (key, position) entries, the paper's; tuples: (key, value) partitions and (key, position, value) leaves. Write amplification: bytes written per byte of the table, and the 4 KiB pages the writes touched per byte of the table. File: the index file per byte of the table (overflow pages included). In memory: the B+tree's levels above its leaves, or the partition index's model and map (the model alone). Paper 1 (FB, 200M keys, pointers): 2 GB limit 10,777 s B-tree against 2,993 s PGM (3.6x); 32 GB 1,406 s against 411 s (3.4x); PGM 3 MB against B-tree 12 MB.\n",
        options.repeat
    );
    let _ = writeln!(
        s,
        "| key set | limit | holds | btree-inserts (s) | partition (s) | speedup | paper | WA bytes btree / partition | WA pages btree / partition | file btree / partition | partitions past their page | leaf reads / writes | in memory btree / partition (model) |"
    );
    let _ = writeln!(
        s,
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"
    );
    for set in sets {
        let name = set.name();
        for &limit in limits {
            for entries in Entries::ALL {
                let b = q.build(
                    &name,
                    Role::Inner,
                    &route("btree-inserts", entries),
                    1,
                    limit,
                );
                let p = q.build(&name, Role::Inner, &route("partition", entries), 1, limit);
                let (Some(b), Some(p)) = (b, p) else {
                    continue;
                };
                let paper = match entries {
                    Entries::Pointers => at.paper_speedup(limit),
                    Entries::Tuples => "-".to_string(),
                };
                let _ = writeln!(
                    s,
                    "| {name} | {} | {entries} | {:.2} | {:.2} | {} | {paper} | {:.1} / {:.2} | {:.1} / {:.1} | {:.2} / {:.2} | {:.0}% | {:.0} / {:.0} | {} / {} ({}) |",
                    limit_name(limit, n),
                    b.seconds,
                    p.seconds,
                    times(b.seconds / p.seconds),
                    b.write_amplification,
                    p.write_amplification,
                    b.page_write_amplification,
                    p.page_write_amplification,
                    b.file_share,
                    p.file_share,
                    100.0 * p.overflowed_share,
                    b.leaf_reads,
                    b.leaf_writes,
                    human_bytes(b.index_bytes as u64),
                    human_bytes(p.index_bytes as u64),
                    human_bytes(p.model_bytes as u64),
                );
            }
        }
    }

    let _ = writeln!(
        s,
        "\n## Joins of unsorted tables (Fig. 9a)\n\nJoin time in seconds after the indexes are built (as the paper plots it); sort-merge after both tables are sorted. In brackets: with that work (both indexes built at the same limit, or both tables sorted). Indexes of pointers fetch each matching tuple's value from its table (the paper's); indexes of tuples read values from themselves. Paper 1: the learned and B-tree joins perform about the same.\n"
    );
    let _ = writeln!(
        s,
        "| key set | limit | ratio | partition, pointers | btree-inserts, pointers | btree / partition | partition, tuples | btree-inserts, tuples | btree / partition | grace | sort-merge |"
    );
    let _ = writeln!(s, "|---|---|---:|---|---|---:|---|---|---:|---|---|");
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
                let versus = |entries| match (
                    q.join(&name, &route("btree-inserts", entries), ratio, limit),
                    q.join(&name, &route("partition", entries), ratio, limit),
                ) {
                    (Some(b), Some(p)) => times(b.seconds / p.seconds),
                    _ => "-".to_string(),
                };
                let (pp, bp) = (
                    route("partition", Entries::Pointers),
                    route("btree-inserts", Entries::Pointers),
                );
                let (pt, bt) = (
                    route("partition", Entries::Tuples),
                    route("btree-inserts", Entries::Tuples),
                );
                let _ = writeln!(
                    s,
                    "| {name} | {} | {ratio} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    limit_name(limit, n),
                    cell(&pp),
                    cell(&bp),
                    versus(Entries::Pointers),
                    cell(&pt),
                    cell(&bt),
                    versus(Entries::Tuples),
                    cell("grace"),
                    cell("sort-merge"),
                );
            }
        }
    }

    for set in sets {
        if let Some(why) = routes_read(&q, &set.name(), options.ratios[0], at.tight) {
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
                limit_name(limit, n),
                times(l / e)
            );
        }
    }

    let _ = write!(s, "\n## Memory\n\n{}", findings::memory_within_limits(rows));
    s
}

/// What each index route read on `set` at `ratio` and `limit`, pointers and tuples apart:
/// where the two routes' time goes. `None` where a join is missing.
fn routes_read(q: &Lookup, set: &str, ratio: u64, limit: u64) -> Option<String> {
    let mut s = format!(
        "What the index routes read ({set}, ratio {ratio}, {}):",
        human_bytes(limit)
    );
    for entries in Entries::ALL {
        let p = q.join(set, &route("partition", entries), ratio, limit)?;
        let b = q.join(set, &route("btree-inserts", entries), ratio, limit)?;
        let _ = write!(
            s,
            " {entries}: the learned join {} in {:.0} calls ({} from storage), the B+tree join {} in {:.0} calls besides {:.0} leaf reads ({} from storage){}.",
            human_bytes(p.bytes_read as u64),
            p.read_calls,
            human_bytes(p.storage_read as u64),
            human_bytes(b.bytes_read as u64),
            b.read_calls,
            b.leaf_reads,
            human_bytes(b.storage_read as u64),
            match entries {
                Entries::Pointers => " (both fetch values from the tables through positions)",
                Entries::Tuples => " (neither reads the tables)",
            }
        );
    }
    Some(s)
}
