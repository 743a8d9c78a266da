//! Paper 3's messages (GRE, section 8) beside what this run measured, one function per
//! numbered message; each is `None` where the run lacks the kinds or parts it needs.

use lidx::updatable::{Kind, Workload};

use super::is_learned;
use super::study::{Learned, Study};
use crate::harness::{Finding, Findings, Verdict};
use crate::key_source::KeySource;
use crate::text::times;

impl Study<'_> {
    /// Paper 3's messages beside what this run measured, in the paper's order.
    pub(super) fn findings(&self) -> Findings {
        let mut out = Findings::new("paper 3", "here");
        out.push(self.diagonal());
        out.push(self.lipp_fastest_and_largest());
        out.push(self.insert_phases());
        out.push(self.pgm_best_writes());
        out.push(self.insert_tails());
        out.push(self.shift_sensitivity());
        out.push(self.easy_lookups_beat_btree());
        out.push(self.light_deletions());
        out.push(self.alex_m_beats_lipp());
        out.push(Some(self.linear_bulk_loads()));
        out
    }

    /// Every set's name, in the order they ran.
    fn set_names(&self) -> Vec<&str> {
        self.sets.iter().map(|s| s.0.as_str()).collect()
    }

    /// Message 1: Fig. 2's diagonal: learned kinds win on easy data and read-heavy workloads, over
    /// the grid's sets (every set without a grid).
    fn diagonal(&self) -> Option<Finding> {
        let grid_sets: Vec<&str> = self
            .sets
            .iter()
            .filter(|s| matches!(s.1, KeySource::Hard { .. }))
            .map(|s| s.0.as_str())
            .collect();
        let all_sets = self.set_names();
        let over = if grid_sets.is_empty() {
            &all_sets
        } else {
            &grid_sets
        };
        let wins: Vec<String> = self
            .o
            .workloads
            .iter()
            .filter(|&&w| over.iter().any(|s| self.ratio(s, w).is_some()))
            .map(|&w| {
                let ran = over.iter().filter(|s| self.ratio(s, w).is_some()).count();
                let won = |learned| {
                    over.iter()
                        .filter(|s| {
                            self.ratio_counting(s, w, learned)
                                .is_some_and(|r| r.0 >= 1.0)
                        })
                        .count()
                };
                let (paper, with_pgm) = (won(Learned::AsPaper), won(Learned::WithPgm));
                format!("{} {paper}/{ran} ({with_pgm} with dynamic-pgm)", w.name())
            })
            .collect();
        let corner = |set: &str, w| self.ratio(set, w).map_or("-".into(), |r| times(r.0));
        // The diagonal's two ends: learned wins the easiest set read-only and loses the
        // hardest write-only.
        let ends = [
            self.ratio(&self.easy, Workload::ReadOnly)
                .map(|r| r.0 >= 1.0),
            self.ratio(&self.hard, Workload::WriteOnly)
                .map(|r| r.0 < 1.0),
        ];
        let judged = ends.iter().flatten().count();
        let held = ends.iter().flatten().filter(|&&h| h).count();
        Some(Finding {
            paper: "Learned indexes win on easy data and read-heavy workloads and lose on hard data and write-heavy ones (Fig. 2's diagonal).".into(),
            here: format!(
                "Learned (alex, lipp, as paper 3's Fig. 2) wins in {} cells. Best learned / best traditional: {} on the easiest set read-only, {} on the hardest write-only.",
                wins.join(", "),
                corner(&self.easy, Workload::ReadOnly),
                corner(&self.hard, Workload::WriteOnly)
            ),
            verdict: (judged > 0).then(|| Verdict::of(held, judged)),
            why: format!(
                "the diagonal's ends ({} of {judged} as the paper has them); this grid's hardest set ({}) is far easier than paper 3's osm or genome",
                held, self.hard
            ),
        })
    }

    /// Message 2: LIPP has the fastest lookups and is the largest (Figs. 2 and 8), over
    /// the sets where every kind ran the workload.
    fn lipp_fastest_and_largest(&self) -> Option<Finding> {
        if !self.has(Kind::Lipp) {
            return None;
        }
        let all_sets = self.set_names();
        // Each kind's read-only throughput on `set`, where every kind has one.
        let read_only = |set: &str| -> Option<Vec<(Kind, f64)>> {
            self.o
                .kinds
                .iter()
                .map(|&k| Some((k, self.throughput(set, k, Workload::ReadOnly)?)))
                .collect()
        };
        let size = |set: &str, k: Kind| {
            self.find("heatmap", set, k.name(), Workload::WriteOnly.name())
                .map(|r| r.size_bytes as f64)
        };
        let sizes = |set: &str| -> Option<Vec<(Kind, f64)>> {
            self.o
                .kinds
                .iter()
                .map(|&k| Some((k, size(set, k)?)))
                .collect()
        };
        let is_top = |v: &[(Kind, f64)]| {
            let lipp = v.iter().find(|p| p.0 == Kind::Lipp).map_or(0.0, |p| p.1);
            v.iter().all(|p| p.1 <= lipp)
        };
        let lookups: Vec<Vec<(Kind, f64)>> = all_sets.iter().filter_map(|s| read_only(s)).collect();
        let sized: Vec<Vec<(Kind, f64)>> = all_sets.iter().filter_map(|s| sizes(s)).collect();
        if lookups.is_empty() && sized.is_empty() {
            return None;
        }
        let fastest = lookups.iter().filter(|v| is_top(v)).count();
        // Which kind has the fastest lookups on each set.
        let mut winners: Vec<(Kind, usize)> = Vec::new();
        for v in &lookups {
            if let Some(top) = v.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
                match winners.iter_mut().find(|w| w.0 == top.0) {
                    Some(w) => w.1 += 1,
                    None => winners.push((top.0, 1)),
                }
            }
        }
        let largest = sized.iter().filter(|v| is_top(v)).count();
        let vs_alex: Vec<f64> = all_sets
            .iter()
            .filter_map(|s| Some(size(s, Kind::Lipp)? / size(s, Kind::Alex)?))
            .collect();
        let range = if vs_alex.is_empty() {
            String::new()
        } else {
            let lo = vs_alex.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = vs_alex.iter().copied().fold(0.0, f64::max);
            format!(" LIPP is {lo:.1}–{hi:.1}× ALEX's size.")
        };
        let mut here = Vec::new();
        if !lookups.is_empty() {
            here.push(format!(
                "lipp has the fastest read-only lookups on {fastest}/{} sets.",
                lookups.len()
            ));
        }
        if !sized.is_empty() {
            here.push(format!(
                "It is the largest after write-only on {largest}/{} sets.{range}",
                sized.len()
            ));
        }
        let held = usize::from(lookups.is_empty() || 2 * fastest > lookups.len())
            + usize::from(sized.is_empty() || largest == sized.len());
        let winners: Vec<String> = winners
            .iter()
            .map(|(k, n)| format!("{} on {n}", k.name()))
            .collect();
        Some(Finding {
            paper: "LIPP is the fastest on lookups but the largest (4–5× ALEX).".into(),
            here: here.join(" "),
            verdict: Some(Verdict::of(held, 2)),
            why: match lookups.len() {
                0 => "size alone: the run has no read-only workload".into(),
                n => format!("the fastest lookups: {} (of {n} sets)", winners.join(", ")),
            },
        })
    }

    /// Message 3: The dynamic PGM-Index inserts fastest among the learned kinds
    /// (write-only), over the sets where every learned kind ran write-only.
    fn pgm_best_writes(&self) -> Option<Finding> {
        let learned: Vec<Kind> = self
            .o
            .kinds
            .iter()
            .copied()
            .filter(|&k| is_learned(k))
            .collect();
        if !learned.contains(&Kind::DynamicPgm) || learned.len() < 2 {
            return None;
        }
        let cells: Vec<Vec<(Kind, f64)>> = self
            .set_names()
            .iter()
            .filter_map(|s| {
                learned
                    .iter()
                    .map(|&k| Some((k, self.throughput(s, k, Workload::WriteOnly)?)))
                    .collect()
            })
            .collect();
        if cells.is_empty() {
            return None;
        }
        let best = cells
            .iter()
            .filter(|v| {
                let pgm = v
                    .iter()
                    .find(|p| p.0 == Kind::DynamicPgm)
                    .map_or(0.0, |p| p.1);
                v.iter().all(|p| p.1 <= pgm)
            })
            .count();
        Some(Finding {
            paper: "The dynamic PGM-Index has the highest insert throughput (write-only) among learned indexes, from its LSM-like buffering.".into(),
            here: format!(
                "dynamic-pgm is the fastest learned kind on write-only on {best}/{} sets.",
                cells.len()
            ),
            verdict: Some(Verdict::of(best, cells.len())),
            why: format!(
                "on the other {} sets another learned kind inserts faster",
                cells.len() - best
            ),
        })
    }

    /// Message 4: Learned kinds' insert tails grow on hard data (Figs. 10–11), against the
    /// traditional kinds' median, from the runs that time every insert (a p99.9 only where
    /// at least 100 samples lie beyond it).
    fn insert_tails(&self) -> Option<Finding> {
        // A p99.9 only where at least 100 samples lie beyond it.
        let tail = |set: &str, k: Kind| {
            self.find("tail", set, k.name(), Workload::WriteOnly.name())
                .filter(|r| r.insert_sampled >= 100_000)
                .map(|r| r.insert_p999_ns as f64)
        };
        let traditional = |set: &str| {
            let mut v: Vec<f64> = self
                .o
                .kinds
                .iter()
                .filter(|&&k| !is_learned(k))
                .filter_map(|&k| tail(set, k))
                .collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        let (easy, hard) = (traditional(&self.easy)?, traditional(&self.hard)?);
        let (mut judged, mut grew) = (0, 0);
        let learned: Vec<String> = [Kind::Alex, Kind::Lipp, Kind::DynamicPgm]
            .iter()
            .filter_map(|&k| {
                let (e, h) = (tail(&self.easy, k)?, tail(&self.hard, k)?);
                let (e, h) = (e / easy.max(1.0), h / hard.max(1.0));
                judged += 1;
                grew += usize::from(h > e);
                Some(format!("{} {} / {}", k.name(), times(e), times(h)))
            })
            .collect();
        Some(Finding {
            paper: "Learned indexes' insert tail latency (p99.9) grows on hard data, from structure modifications.".into(),
            here: format!(
                "Insert p99.9 over the traditional kinds' median, on {} / on {}: {}.",
                self.easy,
                self.hard,
                learned.join(", ")
            ),
            verdict: (judged > 0).then(|| Verdict::of(grew, judged)),
            why: format!("{grew} of {judged} learned kinds' relative p99.9 grows from the easiest set to the hardest"),
        })
    }

    /// Message 5: A shift of the inserted keys' distribution moves learned kinds and not
    /// traditional ones (Fig. 12).
    fn shift_sensitivity(&self) -> Option<Finding> {
        if !self.rows.iter().any(|r| r.part == "shift") {
            return None;
        }
        let spread = |learned: bool| {
            let v: Vec<f64> = self
                .o
                .kinds
                .iter()
                .filter(|&&k| is_learned(k) == learned)
                .flat_map(|&k| {
                    [
                        self.shift_ratio(&self.easy, k.name()),
                        self.shift_ratio(&self.hard, k.name()),
                    ]
                })
                .flatten()
                .map(|r| (r - 1.0).abs())
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        let (learned, traditional) = (spread(true), spread(false));
        Some(Finding {
            paper: "Learned indexes are sensitive to a shift of the inserted keys' distribution (either way); traditional ones are not.".into(),
            here: format!(
                "Mean change of balanced throughput under a shift: learned {:.0}%, traditional {:.0}%.",
                learned * 100.0,
                traditional * 100.0
            ),
            verdict: Some(match learned > 2.0 * traditional {
                true => Verdict::Agree,
                false => Verdict::Disagree,
            }),
            why: "agree where the learned kinds' mean change is over twice the traditional ones'".into(),
        })
    }

    /// Message 6: The floor: each learned kind's read-only lookups on easy data at least
    /// the B+tree's.
    fn easy_lookups_beat_btree(&self) -> Option<Finding> {
        let bt = self.throughput(&self.easy, Kind::Btree, Workload::ReadOnly)?;
        let ratios: Vec<(Kind, f64)> = self
            .o
            .kinds
            .iter()
            .filter(|&&k| is_learned(k))
            .filter_map(|&k| Some((k, self.throughput(&self.easy, k, Workload::ReadOnly)? / bt)))
            .collect();
        let each: Vec<String> = ratios
            .iter()
            .map(|(k, r)| format!("{} {}", k.name(), times(*r)))
            .collect();
        let beat = ratios.iter().filter(|r| r.1 >= 1.0).count();
        Some(Finding {
            paper: "Learned lookups on easy data beat a B+tree (read-only).".into(),
            here: format!(
                "On {}, read-only throughput against the B+tree's: {}.",
                self.easy,
                each.join(", ")
            ),
            verdict: (!ratios.is_empty()).then(|| Verdict::of(beat, ratios.len())),
            why: format!(
                "{beat} of {} learned kinds at least the B+tree's",
                ratios.len()
            ),
        })
    }

    /// Fig. 3: a learned insert's first step (the search) is faster than the traditional
    /// kinds', and the rest of it (collision, statistics, SMO) slower than the best
    /// traditional kind's: on each set, for ALEX and LIPP against the B+tree and ART.
    fn insert_phases(&self) -> Option<Finding> {
        let split = |set: &str, k: Kind| {
            let p = self.phases_of(set, k.name())?;
            Some((p[0], p[1] + p[2] + p[3]))
        };
        let mut judged = Vec::new();
        for set in [&self.easy, &self.hard] {
            let traditional: Vec<(f64, f64)> = [Kind::Btree, Kind::Art]
                .iter()
                .filter_map(|&k| split(set, k))
                .collect();
            if traditional.is_empty() {
                continue;
            }
            let best_search = traditional
                .iter()
                .map(|t| t.0)
                .fold(f64::INFINITY, f64::min);
            let best_rest = traditional
                .iter()
                .map(|t| t.1)
                .fold(f64::INFINITY, f64::min);
            for k in [Kind::Alex, Kind::Lipp] {
                let Some((search, rest)) = split(set, k) else {
                    continue;
                };
                let holds = search < best_search && rest > best_rest;
                judged.push((
                    holds,
                    format!(
                        "{set} {}: search {search:.0} ns against {best_search:.0}, the rest {rest:.0} against {best_rest:.0}",
                        k.name()
                    ),
                ));
            }
        }
        if judged.is_empty() {
            return None;
        }
        let held = judged.iter().filter(|j| j.0).count();
        Some(Finding {
            paper: "A learned insert's first step (its search) is faster than a traditional index's, but the rest of it (collisions, statistics, SMOs) costs more than the best traditional index's (Fig. 3).".into(),
            here: format!(
                "Per insert, against the best of the B+tree and ART: {}.",
                judged.iter().map(|j| j.1.as_str()).collect::<Vec<_>>().join("; ")
            ),
            verdict: Some(Verdict::of(held, judged.len())),
            why: format!("{held} of {} (kind, set) cells have both halves as the paper has them", judged.len()),
        })
    }

    /// Message 8: deletions are light (no model pollution), so learned kinds win more of
    /// Fig. 7's cells than of Fig. 2's: each deletion workload against the insert workload
    /// of the same write share, over the sets where both ran.
    fn light_deletions(&self) -> Option<Finding> {
        let pairs = [
            (Workload::ReadIntensive, Workload::DeleteIntensive),
            (Workload::Balanced, Workload::DeleteBalanced),
            (Workload::WriteHeavy, Workload::DeleteHeavy),
            (Workload::WriteOnly, Workload::DeleteOnly),
        ];
        let mut compared = Vec::new();
        for (insert, delete) in pairs {
            let both: Vec<&str> = self
                .set_names()
                .into_iter()
                .filter(|s| self.ratio(s, insert).is_some() && self.ratio(s, delete).is_some())
                .collect();
            if both.is_empty() {
                continue;
            }
            let wins = |w| {
                both.iter()
                    .filter(|s| self.ratio(s, w).is_some_and(|r| r.0 >= 1.0))
                    .count()
            };
            compared.push((insert, delete, wins(insert), wins(delete), both.len()));
        }
        if compared.is_empty() {
            return None;
        }
        let held = compared.iter().filter(|c| c.3 >= c.2).count();
        let listed: Vec<String> = compared
            .iter()
            .map(|(i, d, wi, wd, n)| format!("{d} {wd}/{n} against {i} {wi}/{n}"))
            .collect();
        Some(Finding {
            paper: "Deletions in learned indexes are light, with no model pollution: learned indexes win more of Fig. 7's cells than of Fig. 2's (Message 8).".into(),
            here: format!("Learned (alex, lipp) wins: {}.", listed.join(", ")),
            verdict: Some(Verdict::of(held, compared.len())),
            why: format!(
                "{held} of {} deletion workloads won on at least as many sets as the insert workload of the same share",
                compared.len()
            ),
        })
    }

    /// Section 5 (Fig. 9): ALEX given LIPP's memory (ALEX-M) has faster lookups than LIPP
    /// on easy and hard data.
    fn alex_m_beats_lipp(&self) -> Option<Finding> {
        let ratio = |set: &str, w: Workload| {
            let at = |kind: &str| self.find("alex-m", set, kind, w.name());
            Some(at("alex-m")?.ops_per_s.0 / at("lipp")?.ops_per_s.0.max(1e-9))
        };
        let sets = self.alex_m_sets();
        let lookups: Vec<(&str, f64)> = sets
            .iter()
            .filter_map(|&s| Some((s, ratio(s, Workload::ReadOnly)?)))
            .collect();
        if lookups.is_empty() {
            return None;
        }
        let beat = lookups.iter().filter(|r| r.1 >= 1.0).count();
        let each = |w: Workload| -> Vec<String> {
            sets.iter()
                .filter_map(|&s| Some(format!("{s} {}", times(ratio(s, w)?))))
                .collect()
        };
        // What the sparser nodes changed, against ALEX at 0.7 on the same set: its
        // lookups, and the keys an insert shifts (paper 3: ALEX-M "can often find a gap").
        let against_alex: Vec<String> = sets
            .iter()
            .filter_map(|&s| {
                let m = |w: Workload| self.find("alex-m", s, "alex-m", w.name());
                let a = |w: Workload| self.find("heatmap", s, "alex", w.name());
                let (wm, wa) = (m(Workload::WriteOnly)?, a(Workload::WriteOnly)?);
                let shifts = |r: &super::rows::Row| r.keys_shifted as f64 / r.inserts.max(1) as f64;
                let lookups = m(Workload::ReadOnly)?.ops_per_s.0
                    / a(Workload::ReadOnly)?.ops_per_s.0.max(1e-9);
                Some(format!(
                    "{s}: lookups {} ALEX's, keys shifted per insert {:.1} against {:.1}",
                    times(lookups),
                    shifts(wm),
                    shifts(wa)
                ))
            })
            .collect();
        Some(Finding {
            paper: "ALEX tuned to LIPP's memory (ALEX-M, fill factor 0.2–0.25) has faster lookups than LIPP on easy and hard data: LIPP trades space for speed (Fig. 9).".into(),
            here: format!(
                "ALEX-M / LIPP throughput, read-only: {}; write-only: {}.",
                each(Workload::ReadOnly).join(", "),
                each(Workload::WriteOnly).join(", ")
            ),
            verdict: Some(Verdict::of(beat, lookups.len())),
            why: format!(
                "ALEX-M's lookups at least LIPP's on {beat} of {} sets; against ALEX at 0.7 ({})",
                lookups.len(),
                against_alex.join("; ")
            ),
        })
    }

    /// Message 7: Bulk loading is linear in n: time per key at 4n over that at n.
    fn linear_bulk_loads(&self) -> Finding {
        let growth: Vec<(&str, f64)> = self
            .kind_names()
            .iter()
            .filter_map(|&k| {
                let v = self.bulk_ns_per_key(k);
                let (first, last) = (v.first()?, v.last()?);
                Some((k, last.1 / first.1.max(1e-9)))
            })
            .collect();
        // Linear: the time per key grows by less than half from n to 4n.
        let linear = growth.iter().filter(|g| g.1 < 1.5).count();
        let listed: Vec<String> = growth
            .iter()
            .map(|(k, g)| format!("{k} {}", times(*g)))
            .collect();
        Finding {
            paper: "Bulk loading is linear in n.".into(),
            here: format!("Time per key at 4n over n: {}.", listed.join(", ")),
            verdict: (!growth.is_empty()).then(|| Verdict::of(linear, growth.len())),
            why: format!(
                "{linear} of {} kinds' time per key grows by less than half from n to 4n",
                growth.len()
            ),
        }
    }
}
