//! The study's summary: each system's index and blocks; paper 4's statements beside what
//! this run measured, against the strongest baseline; the learned layout against the
//! strongest baseline, and against each, per table size, memory budget and operation.

use std::fmt::Write as _;
use std::time::Duration;

use super::Options;
use super::rows::{Cell, Row, cell, system_names};
use crate::text::{human_bytes, times};

/// The summary of the study `o`, which measured `rows` on `machine` in `took`.
pub(super) fn summary(o: &Options, machine: &str, rows: &[Row], took: Duration) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Paper 4 (Bigtable), Fig. 1: learned block layout vs SSTable index{}\n",
        if o.rocksdb { " and RocksDB" } else { "" }
    );
    let _ = writeln!(
        s,
        "Machine: {machine}. Records: random u64 keys as 20-digit strings, values of {}; blocks of {} ({} compression), read with {} from {}. Clients: {} x {} outstanding (threads), closed loop, {:.1} s measured after {:.1} s of warm-up, keys drawn uniformly. The learned layout's model: {}. Took {:.0} s.\n",
        human_bytes(o.value_size),
        human_bytes(o.block_size),
        o.compression,
        if o.buffered {
            "the page cache"
        } else {
            "O_DIRECT"
        },
        match &o.profile {
            None => "the local disk".to_string(),
            Some(p) => format!(
                "storage of the {p} profile (every system's files through one FUSE mount that makes each read take the profile's latency + bytes / bandwidth; reads and bytes are those that reached it)"
            ),
        },
        o.clients,
        o.outstanding,
        o.measure.as_secs_f64(),
        o.warmup.as_secs_f64(),
        o.model,
        took.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "**Equal memory.** Each cell has a memory budget: every system's block cache is the budget less the index it keeps in memory outside the cache (the learned layout's model and block locations, the SSTable's level 0, RocksDB's table readers), so all hold the same bytes. The SSTable's level-1 blocks and RocksDB's index partitions and filter go through the cache, index blocks ahead of data blocks (RocksDB's high-priority pool; lidx's cache keeps index blocks the same way up to half the budget). A budget of 0 means no cache for anyone (RocksDB then keeps its whole index and filter outside the budget: not at equal memory).\n"
    );
    if let Some(r) = rows.iter().find(|r| r.layout == "rocksdb") {
        let _ = writeln!(s, "RocksDB: {}.\n", r.settings);
    }
    index_table(&mut s, o, rows);
    verdicts(&mut s, o, rows);
    strongest_table(&mut s, o, rows);
    let runs = against(&mut s, o, rows);
    let _ = writeln!(s, "Each figure is the median of {runs} run(s).");
    s
}

/// Each system's index (resident, whole, on disk) and data blocks, per table size.
fn index_table(s: &mut String, o: &Options, rows: &[Row]) {
    let _ = writeln!(s, "## Index\n");
    let _ = writeln!(
        s,
        "| rows | system | resident index | whole index | index on disk | filter | data blocks | empty | block mean | block p99 | block max |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for &n in &o.rows {
        for system in system_names(o) {
            if let Some(r) = rows.iter().find(|r| r.rows == n && r.layout == system) {
                let _ = writeln!(
                    s,
                    "| {n} | {system} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    human_bytes(r.resident_index_bytes),
                    human_bytes(r.full_index_bytes),
                    human_bytes(r.index_disk_bytes),
                    human_bytes(r.filter_bytes),
                    r.data_blocks,
                    r.empty_blocks,
                    human_bytes(r.block_mean.0 as u64),
                    human_bytes(r.block_p99),
                    human_bytes(r.block_max)
                );
            }
        }
    }
    let reads = match o.profile {
        Some(_) => {
            "its reads and bytes per operation, like every system's, are those that reached the mount"
        }
        None => {
            "its reads and bytes per operation are the process's (RocksDB's own counters miss what its iterators read ahead)"
        }
    };
    let _ = writeln!(
        s,
        "\n*Resident*: kept in memory outside the cache, charged to the budget. *Whole*: every byte that must be in memory for a get to read no index block (the SSTable's level 0 and level-1 blocks, RocksDB's index partitions and top level, the learned layout's model and block locations). The learned layout stores no key. RocksDB reports its data block sizes on average only; {reads}; its blocks per operation are its perf context's, counted in a separate run with statistics on (the timed run has them off), and it tells index from data blocks only through its cache (n/a without one).\n"
    );
}

/// The strongest baseline of a cell: the other system with the lowest mean latency.
fn strongest(
    o: &Options,
    rows: &[Row],
    n: u64,
    budget: u64,
    op: &str,
) -> Option<(&'static str, Cell)> {
    system_names(o)
        .into_iter()
        .skip(1)
        .filter_map(|b| cell(rows, n, b, budget, op).map(|c| (b, c)))
        .min_by(|a, b| a.1.mean_us.total_cmp(&b.1.mean_us))
}

/// Per table size, budget and operation: the learned layout against the strongest
/// baseline, the weaker beside it.
fn strongest_table(s: &mut String, o: &Options, rows: &[Row]) {
    let _ = writeln!(
        s,
        "## Learned against the strongest baseline (ratios above 1 favour learned: baseline / learned for latency, learned / baseline for throughput)\n"
    );
    let _ = writeln!(
        s,
        "| rows | memory | op | strongest | mean ratio | p99 ratio | throughput ratio | blocks/op (learned / strongest) | weaker | its mean ratio |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for &n in &o.rows {
        for &b in &o.memory_budgets {
            for op in ["get", "scan"] {
                let (Some(l), Some((best, t))) = (
                    cell(rows, n, "learned", b, op),
                    strongest(o, rows, n, b, op),
                ) else {
                    continue;
                };
                let weaker = system_names(o)
                    .into_iter()
                    .skip(1)
                    .filter(|&w| w != best)
                    .filter_map(|w| cell(rows, n, w, b, op).map(|c| (w, c)))
                    .map(|(w, c)| format!("{w} | {}", times(c.mean_us / l.mean_us.max(1e-9))))
                    .next()
                    .unwrap_or_else(|| "– | –".into());
                let line = format!(
                    "| {n} | {} | {op} | {best} | {} | {} | {} | {:.2} / {:.2} | {weaker} |",
                    budget_name(b),
                    times(t.mean_us / l.mean_us.max(1e-9)),
                    times(t.p99_us / l.p99_us.max(1e-9)),
                    times(l.rows_per_s / t.rows_per_s.max(1e-9)),
                    l.index_blocks_per_op + l.data_blocks_per_op,
                    t.index_blocks_per_op + t.data_blocks_per_op,
                );
                let _ = writeln!(s, "{}", line.replace("NaN", "n/a"));
            }
        }
    }
    let skipped: Vec<String> = rows_over_budget(o, rows);
    if !skipped.is_empty() {
        let _ = writeln!(
            s,
            "\nOver budget (the index alone passes the budget; the cell was not run): {}.",
            skipped.join(", ")
        );
    }
    let _ = writeln!(s);
}

/// The (rows, system, budget) cells no row came from because the index passed the budget.
fn rows_over_budget(o: &Options, rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for &n in &o.rows {
        for system in system_names(o) {
            let Some(any) = rows.iter().find(|r| r.rows == n && r.layout == system) else {
                continue;
            };
            for &b in &o.memory_budgets {
                if b > 0 && b <= any.resident_index_bytes {
                    out.push(format!("{system} at {n} rows and {}", human_bytes(b)));
                }
            }
        }
    }
    out
}

fn budget_name(b: u64) -> String {
    match b {
        0 => "no cache".into(),
        b => human_bytes(b),
    }
}

/// Paper 4's statements beside this run: each factor's range over the budgets (above 0)
/// at the largest table, against the strongest baseline of each cell.
fn verdicts(s: &mut String, o: &Options, rows: &[Row]) {
    let n = o.rows.iter().copied().max().unwrap_or(0);
    let budgets: Vec<u64> = o
        .memory_budgets
        .iter()
        .copied()
        .filter(|&b| b > 0)
        .collect();
    let _ = writeln!(s, "## Paper 4's statements and this run\n");
    let _ = writeln!(
        s,
        "At {n} rows, over the memory budgets {} (each cell against its strongest baseline). *Agree*: the learned layout ahead by more than 5% at every budget; *disagree*: behind by more than 5% at every one; else *partly*.\n",
        budgets
            .iter()
            .map(|&b| human_bytes(b))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "| paper 4 | this run (range over budgets) | verdict | what explains it (blocks read per op, learned / strongest, at the smallest budget) |\n|---|---|---|---|"
    );
    type Metric = fn(&Cell, &Cell) -> f64;
    let statements: [(&str, &str, Metric); 6] = [
        (
            "get",
            "point lookups: mean latency cut 36% (1.56x)",
            |l, t| t.mean_us / l.mean_us.max(1e-9),
        ),
        (
            "get",
            "point lookups: p99 latency cut 38% (1.61x)",
            |l, t| t.p99_us / l.p99_us.max(1e-9),
        ),
        ("get", "point lookups: throughput up 54-55%", |l, t| {
            l.rows_per_s / t.rows_per_s.max(1e-9)
        }),
        ("scan", "scans: mean latency cut 22% (1.28x)", |l, t| {
            t.mean_us / l.mean_us.max(1e-9)
        }),
        ("scan", "scans: p99 about the same", |l, t| {
            t.p99_us / l.p99_us.max(1e-9)
        }),
        ("scan", "scans: throughput up 28-56%", |l, t| {
            l.rows_per_s / t.rows_per_s.max(1e-9)
        }),
    ];
    for (op, paper, metric) in statements {
        let factors: Vec<(f64, &str, Cell, Cell)> = budgets
            .iter()
            .filter_map(|&b| {
                let l = cell(rows, n, "learned", b, op)?;
                let (best, t) = strongest(o, rows, n, b, op)?;
                Some((metric(&l, &t), best, l, t))
            })
            .collect();
        let Some((_, _, l0, t0)) = factors.first() else {
            let _ = writeln!(s, "| {paper} | not measured | – | – |");
            continue;
        };
        let lo = factors.iter().map(|f| f.0).fold(f64::INFINITY, f64::min);
        let hi = factors
            .iter()
            .map(|f| f.0)
            .fold(f64::NEG_INFINITY, f64::max);
        let about_the_same = paper.contains("about the same");
        let verdict = match about_the_same {
            true if lo >= 0.8 && hi <= 1.25 => "agree",
            true => "disagree",
            false if lo > 1.05 => "agree",
            false if hi < 0.95 => "disagree",
            false => "partly",
        };
        let baselines: std::collections::BTreeSet<&str> = factors.iter().map(|f| f.1).collect();
        let _ = writeln!(
            s,
            "| {paper} | {}–{} (against {}) | {verdict} | {:.2} / {:.2} (index {:.2} / {:.2}) |",
            times(lo),
            times(hi),
            baselines.into_iter().collect::<Vec<_>>().join(", "),
            l0.index_blocks_per_op + l0.data_blocks_per_op,
            t0.index_blocks_per_op + t0.data_blocks_per_op,
            l0.index_blocks_per_op,
            t0.index_blocks_per_op,
        );
    }
    // The index: the learned layout's whole index against each baseline's.
    let whole = |system: &str| {
        rows.iter()
            .find(|r| r.rows == n && r.layout == system)
            .map(|r| r.full_index_bytes)
    };
    if let Some(learned) = whole("learned") {
        let factors: Vec<String> = system_names(o)
            .into_iter()
            .skip(1)
            .filter_map(|b| {
                whole(b).map(|w| {
                    format!(
                        "{} smaller than {b}'s",
                        times(w as f64 / learned.max(1) as f64)
                    )
                })
            })
            .collect();
        let smallest = system_names(o)
            .into_iter()
            .skip(1)
            .filter_map(whole)
            .min()
            .unwrap_or(0) as f64
            / learned.max(1) as f64;
        let verdict = match smallest {
            f if f >= 100.0 => "agree",
            f if f >= 10.0 => "partly",
            _ => "disagree",
        };
        let _ = writeln!(
            s,
            "| the learned index is orders of magnitude smaller than the SSTable's | {} ({}) | {verdict} | bytes a get needs in memory to read no index block |",
            factors.join(", "),
            human_bytes(learned)
        );
    }
    let _ = writeln!(
        s,
        "\nPaper 4's setting: 5 tablet servers of 4 GB, 256M rows of 1 KB, 32 KB blocks, 15 clients x 100 async requests, a distributed file system. This run: one process, one SSTable per system, the sizes above.\n"
    );
}

/// Fig. 1: the learned layout against each other system, latency and throughput per table
/// size, memory budget and operation; the most runs any figure is the median of.
fn against(s: &mut String, o: &Options, rows: &[Row]) -> usize {
    let mut runs = 0;
    let others: Vec<&str> = system_names(o).into_iter().skip(1).collect();
    for other in others {
        let _ = writeln!(
            s,
            "## Learned against {other} (ratios: {other} / learned for latency, learned / {other} for throughput; above 1 favours learned)\n"
        );
        let _ = writeln!(
            s,
            "| rows | memory | op | mean µs (learned / {other}) | p99 µs (learned / {other}) | mean ratio | p99 ratio | throughput ratio | index blocks/op (learned / {other}) | data blocks/op (learned / {other}) |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for &n in &o.rows {
            for &c in &o.memory_budgets {
                for op in ["get", "scan"] {
                    let (Some(l), Some(t)) =
                        (cell(rows, n, "learned", c, op), cell(rows, n, other, c, op))
                    else {
                        continue;
                    };
                    let line = format!(
                        "| {n} | {} | {op} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {} | {} | {:.2} / {:.2} | {:.2} / {:.2} |",
                        budget_name(c),
                        l.mean_us,
                        t.mean_us,
                        l.p99_us,
                        t.p99_us,
                        times(t.mean_us / l.mean_us.max(1e-9)),
                        times(t.p99_us / l.p99_us.max(1e-9)),
                        times(l.rows_per_s / t.rows_per_s.max(1e-9)),
                        l.index_blocks_per_op,
                        t.index_blocks_per_op,
                        l.data_blocks_per_op,
                        t.data_blocks_per_op,
                    )
                    .replace("NaN", "n/a");
                    let _ = writeln!(s, "{line}");
                    runs = runs.max(l.runs);
                }
            }
        }
        let _ = writeln!(s);
    }
    runs
}
