//! The study's summary: each system's index and blocks, and the learned layout against
//! each other system per table size, cache size and operation, beside paper 4's Fig. 1.

use std::fmt::Write as _;
use std::time::Duration;

use super::Options;
use super::rows::{Row, cell, system_names};
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
    index_table(&mut s, o, rows);
    let runs = against(&mut s, o, rows);
    let _ = writeln!(s, "Each figure is the median of {runs} run(s).");
    let _ = writeln!(
        s,
        "\nPaper 4 (5 tablet servers, 15 clients x 100 requests, 1 KB rows, 32 KB blocks): the learned index cut p99 latency of point lookups by 38% (1.61x) and mean latency by 36% (1.56x) and 22% for scans (1.28x), kept scans' p99 the same, and raised throughput by 54-55% for lookups and 28-56% for scans."
    );
    s
}

/// Each system's index (in memory, on disk) and data blocks, per table size.
fn index_table(s: &mut String, o: &Options, rows: &[Row]) {
    let _ = writeln!(s, "## Index\n");
    let _ = writeln!(
        s,
        "| rows | system | index in memory | index on disk | data blocks | empty | block mean | block p99 | block max |\n|---|---|---|---|---|---|---|---|---|"
    );
    for &n in &o.rows {
        for system in system_names(o) {
            if let Some(r) = rows.iter().find(|r| r.rows == n && r.layout == system) {
                let _ = writeln!(
                    s,
                    "| {n} | {system} | {} | {} | {} | {} | {} | {} | {} |",
                    human_bytes(r.index_memory_bytes),
                    human_bytes(r.index_disk_bytes),
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
        "\nThe SSTable keeps level 0 in memory and reads level-1 index blocks through the cache; the learned layout keeps its model and block locations (Elias–Fano, a few bytes a block, and the first key of any overflow block) in memory and stores no key. RocksDB (one SST file, two-level index: the top level in memory, index partitions through the cache; with no cache every get reads a partition and a data block) reports its data block sizes on average only; {reads}; its blocks per operation are its perf context's, and it tells index from data blocks only through its cache (n/a without one).\n"
    );
}

/// Fig. 1: the learned layout against each other system, latency and throughput per table
/// size, cache size and operation; the most runs any figure is the median of.
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
            "| rows | cache | op | mean µs (learned / {other}) | p99 µs (learned / {other}) | mean ratio | p99 ratio | throughput ratio | index blocks/op (learned / {other}) | data blocks/op (learned / {other}) |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for &n in &o.rows {
            for &c in &o.cache_sizes {
                for op in ["get", "scan"] {
                    let (Some(l), Some(t)) =
                        (cell(rows, n, "learned", c, op), cell(rows, n, other, c, op))
                    else {
                        continue;
                    };
                    let line = format!(
                        "| {n} | {} | {op} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {} | {} | {:.2} / {:.2} | {:.2} / {:.2} |",
                        human_bytes(c),
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
