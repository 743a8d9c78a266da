//! Paper 5's statements (sections 4.2–4.9 and 5.4) judged on the runs: for each, our value,
//! whether it agrees, and the counts behind a disagreement. The summary's first table;
//! every cell of it is computed from the rows of this run.
//!
//! A statement is judged on each panel of its figure that has its data set and parameter:
//! it agrees where it held on every such panel, partly where on some. A statement about a
//! direction ("grows", "falls") holds where the change is beyond 10%, one about no change
//! ("does not change") where it stays within 0.8x-1.25x; the thresholds are in each
//! statement's judge.

use lidx_lsm::joins::Maintenance;

use super::Figure;
use super::cells::inlj_designs;
use super::measure::Run;
use super::study::{Metric, Panel, Study, seconds, show};
use crate::harness::{Finding, Findings, Verdict};
use crate::text::times;

/// What a statement came to on one panel.
struct Judged {
    /// Our value, as the statement reads it.
    value: String,
    /// Whether the statement holds there.
    holds: bool,
    /// The counts behind the value where it does not hold (empty where it does).
    why: String,
}

impl Judged {
    /// `value`, holding where `holds`; `why` kept only where it does not.
    fn new(value: String, holds: bool, why: String) -> Judged {
        Judged {
            value,
            holds,
            why: if holds { String::new() } else { why },
        }
    }
}

/// One of the paper's statements, judged on every panel of `figure` by `param` whose data
/// set starts with one of `datasets` (every data set where empty).
struct Claim {
    figure: Figure,
    param: &'static str,
    datasets: &'static [&'static str],
    statement: &'static str,
    judge: fn(&Study<'_>, Panel) -> Option<Judged>,
}

/// A change within 0.8x-1.25x: no change.
fn flat(ratio: f64) -> bool {
    (0.8..=1.25).contains(&ratio)
}

/// The paper's statements, in its order.
const CLAIMS: &[Claim] = &[
    Claim {
        figure: Figure::F5a,
        param: "entry_size",
        datasets: &[],
        statement: "SJ and HJ have comparable join latencies at every entry size (4.2).",
        judge: |st, p| {
            let ratios: Vec<(f64, f64)> = st
                .xs(p)
                .into_iter()
                .filter_map(|x| Some((x, st.ratio(p, x, 0.0, "SJ-P", "HJ-P", Metric::Join)?)))
                .collect();
            let (lo, hi) = min_max(ratios.iter().map(|r| r.1))?;
            let worst = ratios
                .iter()
                .max_by(|a, b| a.1.max(1.0 / a.1).total_cmp(&b.1.max(1.0 / b.1)))?;
            Some(Judged::new(
                format!("SJ-P / HJ-P {}-{}", times(lo), times(hi)),
                lo >= 0.5 && hi <= 2.0,
                format!("at {} B SJ-P takes {} HJ-P's time", worst.0, times(worst.1)),
            ))
        },
    },
    Claim {
        figure: Figure::F5a,
        param: "entry_size",
        datasets: &[],
        statement: "INLJ-P's join grows far less with entry size than HJ-P's, at most half as much (Face, 32 B to 4 KiB: 1.5x against 6x; here to the figure's largest, 2 KiB) (4.2).",
        judge: |st, p| {
            let inlj = st.growth_of(p, "INLJ-P", Metric::Join)?;
            let hj = st.growth_of(p, "HJ-P", Metric::Join)?;
            Some(Judged::new(
                format!("INLJ-P {}, HJ-P {}", times(inlj), times(hj)),
                inlj < 0.5 * hj,
                format!("INLJ-P grew {} to HJ-P's {}", times(inlj), times(hj)),
            ))
        },
    },
    Claim {
        figure: Figure::F5a,
        param: "entry_size",
        datasets: &[],
        statement: "INLJ-P joins faster than SJ-P and HJ-P at the largest entries (User: beyond 512 B) (4.2).",
        judge: |st, p| {
            let hi = *st.xs(p).last()?;
            let inlj = st.value(p, hi, 0.0, "INLJ-P", Metric::Join)?;
            let scan = st.value(p, hi, 0.0, "SJ-P", Metric::Join)?.min(st.value(
                p,
                hi,
                0.0,
                "HJ-P",
                Metric::Join,
            )?);
            Some(Judged::new(
                format!("INLJ-P / the faster scan at {hi} B: {}", times(inlj / scan)),
                inlj < scan,
                format!(
                    "INLJ-P {} for {} lookups, the faster scan {}",
                    seconds(inlj),
                    st.lookups(p, hi, "INLJ-P").unwrap_or(0),
                    seconds(scan)
                ),
            ))
        },
    },
    Claim {
        figure: Figure::F5b,
        param: "joins",
        datasets: &[],
        statement: "At one join SJ-PS's join + index latency is nearly 5x the best method's (HJ-P there), at least 3x here (4.3).",
        judge: |st, p| {
            let lo = *st.xs(p).first()?;
            let (best, v) = st.fastest_at(p, lo, Metric::Total)?;
            let r = st.value(p, lo, 0.0, "SJ-PS/S-Comp", Metric::Total)? / v.max(1e-9);
            Some(Judged::new(
                format!("SJ-PS / the fastest ({best}) at F={lo}: {}", times(r)),
                r >= 3.0,
                format!(
                    "SJ-PS {}; {best} {}",
                    st.split(p, lo, "SJ-PS/S-Comp"),
                    st.split(p, lo, &best)
                ),
            ))
        },
    },
    Claim {
        figure: Figure::F5b,
        param: "joins",
        datasets: &[],
        statement: "At 32 joins SJ-PS is the fastest, at about half of HJ-P's latency (0.6x or less here) (4.3).",
        judge: |st, p| {
            let hi = *st.xs(p).last()?;
            let r = st.ratio(p, hi, 0.0, "SJ-PS/S-Comp", "HJ-P", Metric::Total)?;
            let (best, _) = st.fastest_at(p, hi, Metric::Total)?;
            Some(Judged::new(
                format!("SJ-PS / HJ-P at F={hi}: {}; the fastest: {best}", times(r)),
                r <= 0.6 && best == "SJ-PS/S-Comp",
                format!(
                    "SJ-PS {}; HJ-P {}",
                    st.split(p, hi, "SJ-PS/S-Comp"),
                    st.split(p, hi, "HJ-P")
                ),
            ))
        },
    },
    Claim {
        figure: Figure::F5c,
        param: "match_rate",
        datasets: &[],
        statement: "INLJ's join cost grows with the matching rate (4.4).",
        judge: |st, p| {
            let g = st.growth_of(p, "INLJ-NS/S-Comp", Metric::Join)?;
            Some(Judged::new(
                format!(
                    "INLJ-NS/S-Comp from the lowest to the highest rate: {}",
                    times(g)
                ),
                g > 1.1,
                "its join changed by less than 10%".into(),
            ))
        },
    },
    Claim {
        figure: Figure::F5c,
        param: "match_rate",
        datasets: &[],
        statement: "SJ's and HJ's joins do not change with the matching rate (4.4).",
        judge: |st, p| {
            let hj = st.growth_of(p, "HJ-N", Metric::Join)?;
            let sj = st.growth_of(p, "SJ-N", Metric::Join)?;
            Some(Judged::new(
                format!("HJ-N {}, SJ-N {}", times(hj), times(sj)),
                flat(hj) && flat(sj),
                format!(
                    "HJ-N {}, SJ-N {} from the lowest rate",
                    times(hj),
                    times(sj)
                ),
            ))
        },
    },
    Claim {
        figure: Figure::F6,
        param: "entry_size",
        datasets: &["movie"],
        statement: "On skewed data synchronous Eager's index latency grows with entry size far more than Lazy's and Comp's (7000 s at 2 KiB on Movie) (4.5).",
        judge: |st, p| {
            let e = st.growth_of(p, "INLJ-NS/S-Eager", Metric::Index)?;
            let l = st.growth_of(p, "INLJ-NS/S-Lazy", Metric::Index)?;
            let c = st.growth_of(p, "INLJ-NS/S-Comp", Metric::Index)?;
            Some(Judged::new(
                format!(
                    "S-Eager {}, S-Lazy {}, S-Comp {}",
                    times(e),
                    times(l),
                    times(c)
                ),
                e > l.max(c),
                format!("S-Eager's grew {} to at most {}", times(e), times(l.max(c))),
            ))
        },
    },
    Claim {
        figure: Figure::F6,
        param: "entry_size",
        datasets: &["face"],
        statement: "On uniform data validation joins faster than synchronous upkeep at large entries (over 512 B on Face) (4.5, 4.7).",
        judge: |st, p| {
            let hi = *st.xs(p).last()?;
            let best = |m: Maintenance| st.best_design(p, hi, 0.0, m, Metric::Join);
            let (v, s) = (best(Maintenance::Validation)?, best(Maintenance::Sync)?);
            Some(Judged::new(
                format!(
                    "best validation / best synchronous at {hi} B: {}",
                    times(v.1 / s.1)
                ),
                v.1 < s.1,
                format!("{} {} against {} {}", v.0, seconds(v.1), s.0, seconds(s.1)),
            ))
        },
    },
    Claim {
        figure: Figure::F7,
        param: "dup_attr",
        datasets: &[],
        statement: "Joins get cheaper as primary keys repeat: the tree merges them (4.6).",
        judge: |st, p| {
            let (c_lo, c_hi, d_lo, _) = st.grid(p)?;
            let by_c = |m: &str| {
                Some(
                    st.value(p, d_lo, c_hi, m, Metric::Join)?
                        / st.value(p, d_lo, c_lo, m, Metric::Join)?,
                )
            };
            let (s, v) = (by_c("INLJ-NS/S-Comp")?, by_c("INLJ-NS/V-Comp")?);
            Some(Judged::new(
                format!(
                    "c {c_lo} to {c_hi}: S-Comp {}, V-Comp {}",
                    times(s),
                    times(v)
                ),
                s < 0.9 && v < 0.9,
                format!("S-Comp {}, V-Comp {}", times(s), times(v)),
            ))
        },
    },
    Claim {
        figure: Figure::F7,
        param: "dup_attr",
        datasets: &[],
        statement: "Validation joins slow down as join attributes repeat (4.6).",
        judge: |st, p| {
            let (c_lo, _, d_lo, d_hi) = st.grid(p)?;
            let by_d = |m: &str| {
                Some(
                    st.value(p, d_hi, c_lo, m, Metric::Join)?
                        / st.value(p, d_lo, c_lo, m, Metric::Join)?,
                )
            };
            let g = [
                by_d("INLJ-NS/V-Eager")?,
                by_d("INLJ-NS/V-Lazy")?,
                by_d("INLJ-NS/V-Comp")?,
            ];
            Some(Judged::new(
                format!(
                    "d {d_lo} to {d_hi}: V-Eager {}, V-Lazy {}, V-Comp {}",
                    times(g[0]),
                    times(g[1]),
                    times(g[2])
                ),
                g.iter().all(|&x| x > 1.1),
                "a validation join changed by less than 10%".into(),
            ))
        },
    },
    Claim {
        figure: Figure::F7,
        param: "dup_attr",
        datasets: &[],
        statement: "Eager's index latency rises as attributes repeat; Lazy's falls (validation, Figs. 7b-c) (4.6).",
        judge: |st, p| {
            let (c_lo, _, d_lo, d_hi) = st.grid(p)?;
            let by_d = |m: &str| {
                Some(
                    st.value(p, d_hi, c_lo, m, Metric::Index)?
                        / st.value(p, d_lo, c_lo, m, Metric::Index)?,
                )
            };
            let (e, l) = (by_d("INLJ-NS/V-Eager")?, by_d("INLJ-NS/V-Lazy")?);
            Some(Judged::new(
                format!(
                    "d {d_lo} to {d_hi}: V-Eager {}, V-Lazy {}",
                    times(e),
                    times(l)
                ),
                e > 1.1 && l < 0.9,
                format!("V-Eager {}, V-Lazy {}", times(e), times(l)),
            ))
        },
    },
    Claim {
        figure: Figure::F8,
        param: "skew",
        datasets: &[],
        statement: "Validation joins slow down sharply as skew grows; synchronous ones do not (4.6).",
        judge: |st, p| {
            let v = st.mean_growth_of(p, Maintenance::Validation, Metric::Join)?;
            let s = st.mean_growth_of(p, Maintenance::Sync, Metric::Join)?;
            Some(Judged::new(
                format!(
                    "mean join growth: validation {}, synchronous {}",
                    times(v),
                    times(s)
                ),
                v > 1.25 * s,
                format!("validation {} against synchronous {}", times(v), times(s)),
            ))
        },
    },
    Claim {
        figure: Figure::F8,
        param: "skew",
        datasets: &[],
        statement: "At the highest skew Eager's index latency dwarfs the other designs' (θ=0.7: 767 s synchronous and 172 s validation, against under 25 s for Lazy and Comp), at least 2x here (4.6).",
        judge: |st, p| {
            let hi = *st.xs(p).last()?;
            let index = |m: &str| st.value(p, hi, 0.0, m, Metric::Index);
            let eager = index("INLJ-NS/S-Eager")?.min(index("INLJ-NS/V-Eager")?);
            let mut others = 0.0f64;
            for m in [
                "INLJ-NS/S-Lazy",
                "INLJ-NS/S-Comp",
                "INLJ-NS/V-Lazy",
                "INLJ-NS/V-Comp",
            ] {
                others = others.max(index(m)?);
            }
            Some(Judged::new(
                format!(
                    "the cheaper Eager / the costliest Lazy or Comp at θ={hi}: {}",
                    times(eager / others)
                ),
                eager > 2.0 * others,
                format!("Eager {} against {}", seconds(eager), seconds(others)),
            ))
        },
    },
    Claim {
        figure: Figure::F9,
        param: "joins",
        datasets: &[],
        statement: "With more joins validation's join + index latency rises much faster than synchronous upkeep's (4.7).",
        judge: |st, p| {
            let v = st.mean_growth_of(p, Maintenance::Validation, Metric::Total)?;
            let s = st.mean_growth_of(p, Maintenance::Sync, Metric::Total)?;
            Some(Judged::new(
                format!(
                    "mean growth: validation {}, synchronous {}",
                    times(v),
                    times(s)
                ),
                v > 1.25 * s,
                format!("validation {} against synchronous {}", times(v), times(s)),
            ))
        },
    },
    Claim {
        figure: Figure::F9,
        param: "joins",
        datasets: &[],
        statement: "Eager with synchronous upkeep has the lowest join + index latency when joins are frequent (User, 32 joins: 390 s against 570-630 s) (4.7).",
        judge: |st, p| {
            let hi = *st.xs(p).last()?;
            let (best, v) = st.fastest_at(p, hi, Metric::Total)?;
            let eager = st.value(p, hi, 0.0, "INLJ-NS/S-Eager", Metric::Total)?;
            Some(Judged::new(
                format!(
                    "fastest at F={hi}: {best}; S-Eager {} its time",
                    times(eager / v)
                ),
                best == "INLJ-NS/S-Eager",
                format!(
                    "S-Eager {}; {best} {}",
                    st.split(p, hi, "INLJ-NS/S-Eager"),
                    st.split(p, hi, &best)
                ),
            ))
        },
    },
    Claim {
        figure: Figure::F10,
        param: "joins",
        datasets: &["unif"],
        statement: "On uniform data cumulative join latency grows quadratically (each join reads all data so far) (4.8).",
        judge: |st, p| {
            let g: Vec<f64> = st
                .runs_of(p)
                .into_iter()
                .filter_map(|(_, r)| second_half(r))
                .collect();
            let mean = g.iter().sum::<f64>() / g.len().max(1) as f64;
            (!g.is_empty()).then(|| {
                Judged::new(
                    format!("cumulative join after all batches over after half: {} on average (2x linear, 3.6x quadratic)", times(mean)),
                    mean >= 2.8,
                    format!("{} on average", times(mean)),
                )
            })
        },
    },
    Claim {
        figure: Figure::F10,
        param: "joins",
        datasets: &["zipf"],
        statement: "On skewed data INLJ's cumulative join latency exceeds SJ's (4.8).",
        judge: |st, p| {
            let x = *st.xs(p).first()?;
            let inlj = st.value(p, x, 0.0, "INLJ-NS/S-Comp", Metric::Join)?;
            let sj = st.value(p, x, 0.0, "SJ-SS/S-Lazy", Metric::Join)?;
            Some(Judged::new(
                format!("INLJ-NS/S-Comp / SJ-SS/S-Lazy: {}", times(inlj / sj)),
                inlj > sj,
                format!("INLJ {} against SJ {}", seconds(inlj), seconds(sj)),
            ))
        },
    },
    Claim {
        figure: Figure::F11,
        param: "size_ratio",
        datasets: &[],
        statement: "As the size ratio grows INLJ-NS/S-Comp's join falls (60 s to 30 s from T=2 to 100) (4.9).",
        judge: |st, p| {
            let g = st.growth_of(p, "INLJ-NS/S-Comp", Metric::Join)?;
            Some(Judged::new(
                format!("INLJ-NS/S-Comp {}", times(g)),
                g < 0.9,
                format!("{} from the smallest T", times(g)),
            ))
        },
    },
    Claim {
        figure: Figure::F11,
        param: "size_ratio",
        datasets: &[],
        statement: "Eager's join stays as the size ratio grows; SJ's and HJ's do not change (4.9).",
        judge: |st, p| {
            let e = st.growth_of(p, "INLJ-NS/S-Eager", Metric::Join)?;
            let h = st.growth_of(p, "HJ-P", Metric::Join)?;
            let j = st.growth_of(p, "SJ-NS/S-Lazy", Metric::Join)?;
            let value = format!(
                "INLJ-NS/S-Eager {}, HJ-P {}, SJ-NS/S-Lazy {}",
                times(e),
                times(h),
                times(j)
            );
            Some(Judged::new(
                value.clone(),
                flat(e) && flat(h) && flat(j),
                value,
            ))
        },
    },
    Claim {
        figure: Figure::F11,
        param: "size_ratio",
        datasets: &[],
        statement: "Index latency rises with the size ratio (SJ-SS/V-Comp: 25 s to 105 s from T=20 to 100) (4.9).",
        judge: |st, p| {
            let xs = st.xs(p);
            let from = *xs.iter().find(|&&x| x >= 20.0).or(xs.first())?;
            let hi = *xs.last()?;
            let a = st.value(p, from, 0.0, "SJ-SS/V-Comp", Metric::Index)?;
            let b = st.value(p, hi, 0.0, "SJ-SS/V-Comp", Metric::Index)?;
            Some(Judged::new(
                format!(
                    "SJ-SS/V-Comp's index latency from T={from} to {hi}: {}",
                    times(b / a)
                ),
                b > 1.1 * a,
                format!("{} at T={from}, {} at T={hi}", seconds(a), seconds(b)),
            ))
        },
    },
    Claim {
        figure: Figure::F11,
        param: "index_write_buffer",
        datasets: &[],
        statement: "A larger write buffer speeds INLJ through Comp indexes (fewer levels), less so with validation; the largest (256 MB) joins slower than 64 MB (4.9).",
        judge: |st, p| {
            let xs = st.xs(p);
            let lo = *xs.first()?;
            let join = |x: f64, m: &str| st.value(p, x, 0.0, m, Metric::Join);
            let base = join(lo, "INLJ-NS/S-Comp")?;
            let (best_x, best) = xs
                .iter()
                .filter_map(|&x| Some((x, join(x, "INLJ-NS/S-Comp")?)))
                .min_by(|a, b| a.1.total_cmp(&b.1))?;
            let lazy = st.growth_of(p, "INLJ-NS/V-Lazy", Metric::Join)?;
            Some(Judged::new(
                format!(
                    "INLJ-NS/S-Comp at its best M ({}) over the smallest: {}; INLJ-NS/V-Lazy from the smallest to the largest: {}",
                    show("index_write_buffer", best_x),
                    times(best / base),
                    times(lazy)
                ),
                best < 0.9 * base,
                format!(
                    "INLJ-NS/S-Comp {} at the smallest M, {} at its best",
                    seconds(base),
                    seconds(best)
                ),
            ))
        },
    },
    Claim {
        figure: Figure::F12,
        param: "bloom_bits",
        datasets: &[],
        statement: "Bloom filters of 10 bits a key instead of 2 cut INLJ-NS/S-Eager's join by about 30% (4.9).",
        judge: |st, p| {
            let a = st.value(p, 2.0, 0.0, "INLJ-NS/S-Eager", Metric::Join)?;
            let b = st.value(p, 10.0, 0.0, "INLJ-NS/S-Eager", Metric::Join)?;
            Some(Judged::new(
                format!("INLJ-NS/S-Eager at 10 bits over 2: {}", times(b / a)),
                b <= 0.85 * a,
                format!("{} at 2 bits, {} at 10", seconds(a), seconds(b)),
            ))
        },
    },
    Claim {
        figure: Figure::F12,
        param: "block_cache",
        datasets: &[],
        statement: "HJ and SJ without validation do not care about the block cache: they scan (4.9).",
        judge: |st, p| {
            let h = st.growth_of(p, "HJ-P", Metric::Join)?;
            let s = st.growth_of(p, "SJ-SS/S-Comp", Metric::Join)?;
            Some(Judged::new(
                format!(
                    "from no cache to the largest: HJ-P {}, SJ-SS/S-Comp {}",
                    times(h),
                    times(s)
                ),
                flat(h) && flat(s),
                format!("HJ-P {}, SJ-SS/S-Comp {}", times(h), times(s)),
            ))
        },
    },
    Claim {
        figure: Figure::F13b,
        param: "join_memory",
        datasets: &[],
        statement: "The hybrid hash join joins about as fast as the grace hash join (about a second apart) on every data set: little of a table fits 16 MB (5.4).",
        judge: |st, p| {
            let lo = *st.xs(p).first()?;
            let r = st.ratio(p, lo, 0.0, "HHJ-P", "HJ-P", Metric::Join)?;
            Some(Judged::new(
                format!("HHJ-P / HJ-P at {}: {}", show("join_memory", lo), times(r)),
                flat(r),
                format!(
                    "HHJ-P {}; HJ-P {}",
                    st.split(p, lo, "HHJ-P"),
                    st.split(p, lo, "HJ-P")
                ),
            ))
        },
    },
    Claim {
        figure: Figure::F13c,
        param: "threads",
        datasets: &[],
        statement: "INLJ-P gains the most from more threads (over 80% less latency at 16); judged here at as many threads as the machine has cores (5.4).",
        judge: |st, p| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
            let at = st
                .xs(p)
                .into_iter()
                .filter(|&x| x <= cores)
                .fold(1.0, f64::max);
            let speedup = |m: &str| {
                Some(
                    st.value(p, 1.0, 0.0, m, Metric::Join)?
                        / st.value(p, at, 0.0, m, Metric::Join)?,
                )
            };
            let inlj = speedup("INLJ-P")?;
            let others = speedup("SJ-P")?.max(speedup("HJ-P")?);
            Some(Judged::new(
                format!(
                    "speed-up at {at} threads: INLJ-P {}, the better of SJ-P and HJ-P {}",
                    times(inlj),
                    times(others)
                ),
                inlj >= others,
                format!("INLJ-P {} against {}", times(inlj), times(others)),
            ))
        },
    },
];

/// The smallest and the largest of `values`.
fn min_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// A run's cumulative join latency after all its batches over after half of them.
fn second_half(run: &Run) -> Option<f64> {
    let n = run.batches.len();
    let half: f64 = run.batches[..n / 2].iter().map(|b| b.join.join_s).sum();
    let all: f64 = run.batches.iter().map(|b| b.join.join_s).sum();
    (half > 0.0).then(|| all / half)
}

impl Study<'_> {
    /// The table of the paper's statements against this run.
    pub(super) fn verdicts(&self) -> String {
        let mut table = Findings::new("paper 5 says", "here");
        let panels = self.panels();
        for claim in CLAIMS {
            let judged: Vec<(Panel, Judged)> = panels
                .iter()
                .filter(|p| {
                    p.0 == claim.figure
                        && p.2 == claim.param
                        && (claim.datasets.is_empty()
                            || claim.datasets.iter().any(|d| p.1.starts_with(d)))
                })
                .filter_map(|&p| Some((p, (claim.judge)(self, p)?)))
                .collect();
            if judged.is_empty() {
                continue;
            }
            let held = judged.iter().filter(|(_, j)| j.holds).count();
            let each = |f: fn(&Judged) -> &str| {
                judged
                    .iter()
                    .filter(|(_, j)| !f(j).is_empty())
                    .map(|(p, j)| format!("{}: {}", p.1, f(j)))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            table.push(Some(Finding {
                paper: format!("Fig. {}: {}", claim.figure.name(), claim.statement),
                here: each(|j| &j.value),
                verdict: Some(Verdict::of(held, judged.len())),
                why: each(|j| &j.why),
            }));
        }
        let rows = table.rows();
        let count = |v: Verdict| rows.iter().filter(|f| f.verdict == Some(v)).count();
        format!(
            "## The paper's statements against this run\n\nEach statement is judged on every panel of its figure that has its data set: it agrees where it held on all, partly where on some. A direction holds where the change passes 10%, no change where it stays within 0.8x-1.25x. Of {} statements, {} agree, {} partly and {} disagree.\n\n{}\n",
            rows.len(),
            count(Verdict::Agree),
            count(Verdict::Partly),
            count(Verdict::Disagree),
            table.table()
        )
    }

    /// `a`'s `metric` over `b`'s at (`x`, `x2`).
    fn ratio(
        &self,
        panel: Panel,
        x: f64,
        x2: f64,
        a: &str,
        b: &str,
        metric: Metric,
    ) -> Option<f64> {
        Some(self.value(panel, x, x2, a, metric)? / self.value(panel, x, x2, b, metric)?.max(1e-9))
    }

    /// `metric` of `method` at the largest swept value over at the smallest.
    fn growth_of(&self, panel: Panel, method: &str, metric: Metric) -> Option<f64> {
        let (a, b) = self.ends(panel, method, metric)?;
        Some(b / a.max(1e-9))
    }

    /// The mean growth of `metric` over the INLJ designs kept by `maintenance`.
    fn mean_growth_of(
        &self,
        panel: Panel,
        maintenance: Maintenance,
        metric: Metric,
    ) -> Option<f64> {
        let g: Vec<f64> = inlj_designs()
            .into_iter()
            .filter(|m| m.index.is_some_and(|(mt, _)| mt == maintenance))
            .filter_map(|m| self.growth_of(panel, &m.to_string(), metric))
            .collect();
        (!g.is_empty()).then(|| g.iter().sum::<f64>() / g.len() as f64)
    }

    /// The fastest INLJ design kept by `maintenance` at (`x`, `x2`), and its `metric`.
    fn best_design(
        &self,
        panel: Panel,
        x: f64,
        x2: f64,
        maintenance: Maintenance,
        metric: Metric,
    ) -> Option<(String, f64)> {
        inlj_designs()
            .into_iter()
            .filter(|m| m.index.is_some_and(|(mt, _)| mt == maintenance))
            .filter_map(|m| {
                Some((
                    m.to_string(),
                    self.value(panel, x, x2, &m.to_string(), metric)?,
                ))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Fig. 7's grid: the smallest and largest c, then d.
    fn grid(&self, panel: Panel) -> Option<(f64, f64, f64, f64)> {
        let mut cs: Vec<f64> = self.runs_of(panel).iter().map(|(c, _)| c.x2).collect();
        cs.sort_by(f64::total_cmp);
        let ds = self.xs(panel);
        Some((*cs.first()?, *cs.last()?, *ds.first()?, *ds.last()?))
    }

    /// `method`'s run at `x`.
    fn run_at(&self, panel: Panel, x: f64, method: &str) -> Option<&Run> {
        self.runs_of(panel)
            .into_iter()
            .find(|(c, r)| c.x == x && r.method.to_string() == method)
            .map(|(_, r)| r)
    }

    /// Lookups of `method`'s joins at `x`.
    fn lookups(&self, panel: Panel, x: f64, method: &str) -> Option<u64> {
        let run = self.run_at(panel, x, method)?;
        Some(run.batches.iter().map(|b| b.join.lookups).sum())
    }

    /// `method`'s latency at `x` split: `join 1.2 s + index 3.4 s (5,000 validations,
    /// 1.0 MiB written)`.
    fn split(&self, panel: Panel, x: f64, method: &str) -> String {
        let Some(run) = self.run_at(panel, x, method) else {
            return "–".into();
        };
        let validations: u64 = run.batches.iter().map(|b| b.join.validations).sum();
        let scratch: u64 = run.batches.iter().map(|b| b.join.scratch_bytes).sum();
        let mut s = format!(
            "join {} + index {}",
            seconds(run.join_s()),
            seconds(run.index_s())
        );
        if validations > 0 {
            s.push_str(&format!(", {validations} validations"));
        }
        if scratch > 0 {
            s.push_str(&format!(
                ", {} to scratch",
                crate::text::human_bytes(scratch)
            ));
        }
        s
    }
}
