//! Paper 3's summary: the key sets' hardness, Fig. 2's ratios, the tables of Figs. 3, 8,
//! 10–13 and the bulk loads, then the messages ([`findings`](super::findings)).

use lidx::updatable::Workload;

use super::rows::Row;
use super::study::{Learned, Study};
use crate::key_source::KeySource;
use crate::text::{table, times};

/// Owned strings of `items`, for a table's header.
pub(super) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

impl Study<'_> {
    pub(super) fn summary(&self, machine: &str, seconds: f64) -> String {
        let o = self.o;
        let mut s = String::from("# Paper 3 (GRE): are updatable learned indexes ready?\n\n");
        s += &format!(
            "{} keys per generated set, at most {} operations per run after the bulk load (1% of them timed alone), the median of {} run(s); {machine}; took {seconds:.0} s. Learned: alex, lipp, and dynamic-pgm (which paper 3's Fig. 2 leaves out); traditional: btree, art, btreemap.\n\n",
            o.n,
            o.ops.unwrap_or(o.n),
            o.repeat.max(1)
        );
        s += "## Key sets and their hardness (optimal PLA segments)\n\n";
        let rows: Vec<Vec<String>> = self
            .sets
            .iter()
            .map(|(name, source, l, g)| {
                let target = match source {
                    KeySource::Hard { local, global } => format!("{local} / {global}"),
                    _ => "-".into(),
                };
                vec![name.clone(), target, l.to_string(), g.to_string()]
            })
            .collect();
        s += &table(
            &strings(&[
                "set",
                "target local / global",
                "segments at eps 32",
                "at eps 4096",
            ]),
            &rows,
        );

        s += "\n## Fig. 2: best learned over best traditional throughput\n\n";
        s += "As paper 3 draws it: the learned contenders are alex and lipp. Paper 3 leaves the dynamic PGM out, since its write speed comes from its LSM-like buffer, not its learned design (section 4.1).\n\n";
        s += &self.heatmap_table(Learned::AsPaper, &o.workloads);
        s += "\n### Fig. 2 with the dynamic PGM counted as learned (not as paper 3 draws it)\n\n";
        s += &self.heatmap_table(Learned::WithPgm, &o.workloads);
        s += &self.deletion_table();

        s += &self.insert_table();
        s += &self.phase_table();
        s += &self.size_table();
        s += &self.alex_m_table();
        s += &self.tail_table();
        s += &self.shift_table();
        s += &self.scan_table();
        s += &self.bulk_table();
        s += "\n## Paper 3's messages, and what this run shows\n\n";
        s += &self.findings().table();
        s
    }

    /// Fig. 2's ratios, one row per set, one column per workload of `workloads`.
    fn heatmap_table(&self, learned: Learned, workloads: &[Workload]) -> String {
        let mut header = vec!["set".to_string()];
        header.extend(workloads.iter().map(|w| w.name().to_string()));
        let rows: Vec<Vec<String>> = self
            .sets
            .iter()
            .map(|(name, ..)| {
                let mut row = vec![name.clone()];
                row.extend(workloads.iter().map(|&w| {
                    self.ratio_counting(name, w, learned)
                        .map_or("-".into(), |(r, k)| format!("{} {k}", times(r)))
                }));
                row
            })
            .collect();
        table(&header, &rows)
    }

    /// Fig. 7's workloads: read-only (where it ran) and the deletion workloads.
    pub(super) fn deletion_workloads(&self) -> Vec<Workload> {
        let o = self.o;
        let read_only = o.workloads.iter().filter(|&&w| w == Workload::ReadOnly);
        read_only.chain(&o.delete_workloads).copied().collect()
    }

    /// Fig. 7: the heatmap's ratios on the deletion workloads.
    fn deletion_table(&self) -> String {
        if self.o.delete_workloads.is_empty() {
            return String::new();
        }
        let s = String::from(
            "\n## Fig. 7: best learned over best traditional throughput, deletions\n\nEvery key bulk-loaded, then lookups of the keys that stay and removals until half are gone; learned: alex and lipp, as Fig. 2.\n\n",
        );
        s + &self.heatmap_table(Learned::AsPaper, &self.deletion_workloads())
    }

    /// The sets Fig. 9 ran on, easiest first.
    pub(super) fn alex_m_sets(&self) -> Vec<&str> {
        let mut sets: Vec<&str> = Vec::new();
        for r in self.rows.iter().filter(|r| r.part == "alex-m") {
            if !sets.contains(&r.set.as_str()) {
                sets.push(&r.set);
            }
        }
        sets
    }

    /// Fig. 9: ALEX-M against LIPP, with ALEX's own throughput beside them.
    fn alex_m_table(&self) -> String {
        let sets = self.alex_m_sets();
        if sets.is_empty() {
            return String::new();
        }
        let mut s = String::from(
            "\n## Fig. 9: ALEX-M (alex built at the density that takes lipp's memory) against lipp\n\n",
        );
        let header = strings(&[
            "set",
            "workload",
            "lipp Mops/s",
            "alex-m Mops/s",
            "alex-m / lipp",
            "alex Mops/s (Fig. 2)",
            "keys shifted per insert, alex-m / alex",
        ]);
        let mut rows = Vec::new();
        let mut sizes = Vec::new();
        for &set in &sets {
            for w in &self.o.workloads {
                let at = |kind: &str| self.find("alex-m", set, kind, w.name());
                let (Some(lipp), Some(m)) = (at("lipp"), at("alex-m")) else {
                    continue;
                };
                let alex = self.find("heatmap", set, "alex", w.name());
                let shifts = |r: &Row| r.keys_shifted as f64 / r.inserts.max(1) as f64;
                let mops = |r: &Row| format!("{:.2}", r.ops_per_s.0 / 1e6);
                rows.push(vec![
                    set.to_string(),
                    w.name().to_string(),
                    mops(lipp),
                    mops(m),
                    times(m.ops_per_s.0 / lipp.ops_per_s.0.max(1e-9)),
                    alex.map_or("-".into(), mops),
                    match (m.inserts, alex) {
                        (0, _) | (_, None) => "-".into(),
                        (_, Some(a)) => format!("{:.1} / {:.1}", shifts(m), shifts(a)),
                    },
                ]);
                if *w == Workload::WriteOnly {
                    sizes.push(format!(
                        "{set}: density {:.3}, lipp {:.1} MiB, alex-m {:.1} MiB",
                        m.alex_density.0,
                        lipp.size_bytes as f64 / (1u64 << 20) as f64,
                        m.size_bytes as f64 / (1u64 << 20) as f64
                    ));
                }
            }
        }
        s += "ALEX-M's density is the one at which alex, bulk-loaded with the whole set, takes the bytes lipp takes (paper 3: 0.2–0.25 against ALEX's 0.7); the other densities are scaled alike. Both kinds ran in turns on the same plans.";
        if !sizes.is_empty() {
            s += &format!(" Sizes after write-only: {}.", sizes.join("; "));
        }
        s += "\n\n";
        s + &table(&header, &rows)
    }

    /// Table 3 and Fig. 3: per insert, on the easiest and the hardest set.
    pub(super) fn insert_table(&self) -> String {
        let mut s =
            String::from("\n## Fig. 3 / Table 3: where an insert's time goes (write-only)\n\n");
        let header = strings(&[
            "kind",
            "set",
            "insert ns",
            "lookup ns (read-only)",
            "nodes traversed",
            "keys shifted",
            "nodes created",
            "structure modifications",
        ]);
        let mut rows = Vec::new();
        for set in [&self.easy, &self.hard] {
            for k in self.kind_names() {
                let (Some(w), Some(r)) = (
                    self.find("heatmap", set, k, Workload::WriteOnly.name()),
                    self.find("heatmap", set, k, Workload::ReadOnly.name()),
                ) else {
                    continue;
                };
                let per = |v: u64| format!("{:.2}", v as f64 / w.inserts.max(1) as f64);
                rows.push(vec![
                    k.to_string(),
                    set.clone(),
                    format!("{:.0}", w.mean_ns.0),
                    format!("{:.0}", r.mean_ns.0),
                    per(w.nodes_traversed),
                    per(w.keys_shifted),
                    per(w.nodes_created),
                    per(w.structure_modifications),
                ]);
            }
        }
        s += "Counts are per insert. Keys shifted include the entries a kind copies when it rebuilds, splits or merges.\n\n";
        s + &table(&header, &rows)
    }

    /// Fig. 3's timed insert of `kind` on `set`: nanoseconds per insert in the search,
    /// the collision, the statistics, the SMOs and undivided, where it ran.
    pub(super) fn phases_of(&self, set: &str, kind: &str) -> Option<[f64; 5]> {
        let r = self.find("phases", set, kind, Workload::WriteOnly.name())?;
        Some([
            r.search_ns.0,
            r.collision_ns.0,
            r.statistics_ns.0,
            r.smo_ns.0,
            r.undivided_ns.0,
        ])
    }

    /// Fig. 3 by phase: where each kind's insert time goes, on the easiest and the
    /// hardest set.
    fn phase_table(&self) -> String {
        if !self.rows.iter().any(|r| r.part == "phases") {
            return String::new();
        }
        let mut s = String::from(
            "\n### Fig. 3 by phase: nanoseconds per insert (write-only, every insert timed)\n\n",
        );
        s += "From runs of their own, each insert's phases read off the time-stamp counter (a read's own cost, the least of 10,000, taken off each phase), so their totals run above the heatmap's mean insert. Search: finding the slot (the lookup that is an insert's first step); collision: shifting entries or chaining a node; statistics: the counts an index keeps for its SMOs; SMO: expansions, splits, rebuilds. The dynamic PGM and `BTreeMap` are not divided.\n\n";
        let header = strings(&[
            "kind",
            "set",
            "search",
            "collision",
            "statistics",
            "smo",
            "undivided",
            "total",
        ]);
        let mut rows = Vec::new();
        for set in [&self.easy, &self.hard] {
            for k in self.kind_names() {
                let Some(p) = self.phases_of(set, k) else {
                    continue;
                };
                let mut row = vec![k.to_string(), set.clone()];
                row.extend(p.iter().map(|v| format!("{v:.0}")));
                row.push(format!("{:.0}", p.iter().sum::<f64>()));
                rows.push(row);
            }
        }
        s + &table(&header, &rows)
    }

    /// Fig. 8: bytes per key after write-only.
    pub(super) fn size_table(&self) -> String {
        let mut s =
            String::from("\n## Fig. 8: size after the write-only workload (bytes per key)\n\n");
        let from_allocator = self.rows.iter().any(|r| r.size_from == "allocator");
        s += if from_allocator {
            "Every byte the index holds, counted by the allocator.\n\n"
        } else {
            "As each index reports its bytes (this process does not count its allocations).\n\n"
        };
        let mut header = vec!["kind".to_string()];
        header.extend(self.sets.iter().map(|x| x.0.clone()));
        let rows: Vec<Vec<String>> = self
            .kind_names()
            .iter()
            .map(|&k| {
                let mut row = vec![k.to_string()];
                row.extend(self.sets.iter().map(|x| {
                    self.find("heatmap", &x.0, k, Workload::WriteOnly.name())
                        .map_or("-".into(), |r| {
                            let keys = (r.bulk_loaded as usize + r.inserts).max(1);
                            format!("{:.1}", r.size_bytes as f64 / keys as f64)
                        })
                }));
                row
            })
            .collect();
        s += &table(&header, &rows);
        s
    }

    pub(super) fn tail_table(&self) -> String {
        let mut s = String::from("\n## Figs. 10–11: tail latency, p99 / p99.9 in ns\n\n");
        let header = strings(&[
            "kind",
            "lookups, easiest",
            "lookups, hardest",
            "inserts, easiest",
            "inserts, hardest",
        ]);
        let rows: Vec<Vec<String>> = self
            .kind_names()
            .iter()
            .map(|&k| {
                let cell = |set: &str, w: Workload, f: fn(&Row) -> (u64, u64, u64)| {
                    self.find("tail", set, k, w.name())
                        .map_or("-".into(), |r| tail_cell(f(r)))
                };
                let lookups = |r: &Row| (r.lookup_sampled, r.lookup_p99_ns, r.lookup_p999_ns);
                let inserts = |r: &Row| (r.insert_sampled, r.insert_p99_ns, r.insert_p999_ns);
                vec![
                    k.to_string(),
                    cell(&self.easy, Workload::ReadOnly, lookups),
                    cell(&self.hard, Workload::ReadOnly, lookups),
                    cell(&self.easy, Workload::WriteOnly, inserts),
                    cell(&self.hard, Workload::WriteOnly, inserts),
                ]
            })
            .collect();
        s += &format!(
            "Easiest: {}; hardest: {}. Every operation of these runs is timed alone (their throughput is not the heatmap's); a percentile is shown where at least 100 samples lie beyond it (p99: 10,000 samples, p99.9: 100,000), else `-`; the samples are in brackets.\n\n",
            self.easy, self.hard
        );
        s + &table(&header, &rows)
    }

    /// The balanced throughput with the inserts from `to`, over the plain one on `from`.
    /// The throughput of the shift from `from` to the other set over that of inserting
    /// keys from `from`'s own source.
    pub(super) fn shift_ratio(&self, from: &str, kind: &str) -> Option<f64> {
        let run = |part: &str| {
            self.rows
                .iter()
                .find(|r| r.part == part && r.set == from && r.kind == kind)
                .map(|r| r.ops_per_s.0)
        };
        Some(run("shift")? / run("shift-base")?.max(1e-9))
    }

    pub(super) fn shift_table(&self) -> String {
        if !self.rows.iter().any(|r| r.part == "shift") {
            return String::new();
        }
        let s = String::from(
            "\n## Fig. 12: distribution shift (balanced, throughput inserting the other set's keys / the same source's)\n\n",
        );
        let header = vec![
            "kind".to_string(),
            format!("{} -> {}", self.easy, self.hard),
            format!("{} -> {}", self.hard, self.easy),
        ];
        let rows: Vec<Vec<String>> = self
            .kind_names()
            .iter()
            .map(|&k| {
                let cell = |from: &str| self.shift_ratio(from, k).map_or("-".into(), times);
                vec![k.to_string(), cell(&self.easy), cell(&self.hard)]
            })
            .collect();
        s + &table(&header, &rows)
    }

    pub(super) fn scan_table(&self) -> String {
        if self.o.scan_lens.is_empty() {
            return String::new();
        }
        let set = self
            .rows
            .iter()
            .find(|r| r.part == "scan")
            .map_or("", |r| r.set.as_str());
        let mut s =
            format!("\n## Fig. 13: range scans on {set} (million entries read per second)\n\n");
        let mut header = vec!["kind".to_string()];
        header.extend(self.o.scan_lens.iter().map(|l| format!("{l} per scan")));
        let rows: Vec<Vec<String>> = self
            .kind_names()
            .iter()
            .map(|&k| {
                let mut row = vec![k.to_string()];
                row.extend(self.o.scan_lens.iter().map(|&l| {
                    self.rows
                        .iter()
                        .find(|r| r.part == "scan" && r.kind == k && r.scan_len == l)
                        .map_or("-".into(), |r| {
                            format!("{:.1}", r.ops_per_s.0 * l as f64 / 1e6)
                        })
                }));
                row
            })
            .collect();
        s += &table(&header, &rows);
        s
    }

    /// Nanoseconds per key of each bulk load, smallest first.
    pub(super) fn bulk_ns_per_key(&self, kind: &str) -> Vec<(u64, f64)> {
        let mut v: Vec<(u64, f64)> = self
            .rows
            .iter()
            .filter(|r| r.part == "bulk" && r.kind == kind)
            .map(|r| {
                (
                    r.bulk_loaded,
                    r.bulk_load_s.0 * 1e9 / r.bulk_loaded.max(1) as f64,
                )
            })
            .collect();
        v.sort_by_key(|p| p.0);
        v
    }

    pub(super) fn bulk_table(&self) -> String {
        let mut s = String::from(
            "\n## Bulk load: nanoseconds per key at n, 2n and 4n keys (the fastest of 3)\n\n",
        );
        let rows: Vec<Vec<String>> = self
            .kind_names()
            .iter()
            .map(|&k| {
                let mut row = vec![k.to_string()];
                row.extend(
                    self.bulk_ns_per_key(k)
                        .iter()
                        .map(|(n, ns)| format!("{ns:.0} ({n})")),
                );
                row
            })
            .collect();
        s += &table(&strings(&["kind", "n", "2n", "4n"]), &rows);
        s
    }
}

/// `p99 / p99.9 (samples)`, each percentile only where at least 100 samples lie beyond it.
fn tail_cell((sampled, p99, p999): (u64, u64, u64)) -> String {
    let show = |p: u64, needs: u64| match sampled >= needs {
        true => p.to_string(),
        false => "-".into(),
    };
    format!(
        "{} / {} ({sampled})",
        show(p99, 10_000),
        show(p999, 100_000)
    )
}
