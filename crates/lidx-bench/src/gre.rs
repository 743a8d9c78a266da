//! Paper 3's study (GRE, "Are Updatable Learned Indexes Ready?"): every updatable kind on
//! every workload over key sets placed on the hardness plane, and the paper's figures.
//!
//! - **Fig. 2**: for each workload, the throughput of the best learned kind over the best
//!   traditional one, on a grid of the hardness generator's key sets (local × global
//!   segments, section 7) and on named sets (lidx's synthetic ones and SOSD files).
//! - **Fig. 3 / Table 3**: where an insert's time goes, from the write-only runs: its mean
//!   latency beside a lookup's (read-only), and per insert the nodes traversed, keys
//!   shifted, nodes created and structure modifications.
//! - **Fig. 8**: the size of each index after the write-only workload.
//! - **Figs. 10–11**: p99 and p99.9 of lookups (read-only) and inserts (write-only), on
//!   the easiest and the hardest grid set.
//! - **Fig. 12**: balanced throughput when the inserted keys come from another set
//!   (easiest → hardest and back, rescaled onto one domain), against the same workload
//!   inserting keys of the bulk-loaded set's own source (generated with another seed).
//! - **Fig. 13**: scans of 10 to 10,000 entries.
//! - Bulk loads of n, 2n and 4n keys, to show each is linear.
//!
//! Every run is one process-local [`updatable::run`]: bulk load, then the workload's
//! operations timed as a whole, 1% of them timed alone. Kinds run one after another on the
//! same keys and plan, so ratios compare like with like.

use std::path::{Path, PathBuf};
use std::time::Instant;

use lidx::data::{Distribution, GenParams, HardnessParams, KeyFile, generate, generate_hard};
use lidx::files::AtomicFile;
use lidx::pla::segment_count;
use lidx::updatable::{Kind, Workload};
use serde::Serialize;

use crate::csv_rows::{Fixed, LIDX_VERSION, write_rows};
use crate::plot::{HeatPanel, Scale, Series, bars, chart, heatmaps};
use crate::progress::Progress;
use crate::text::times;
use crate::updatable::{self, RunOptions, RunReport};

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Keys per generated set (paper 3: 200M).
    pub n: usize,
    /// Operations per run at most (`None`: as many as keys).
    pub ops: Option<usize>,
    /// The grid's local hardness targets (segments at ε = 32), easiest first.
    pub local: Vec<u64>,
    /// The grid's global hardness targets (segments at ε = 4096), easiest first.
    pub global: Vec<u64>,
    /// lidx's synthetic sets to run beside the grid.
    pub sets: Vec<Distribution>,
    /// SOSD key files to run beside the grid.
    pub sosd: Vec<PathBuf>,
    /// The kinds.
    pub kinds: Vec<Kind>,
    /// The workloads of the heatmap.
    pub workloads: Vec<Workload>,
    /// Scan lengths of Fig. 13 (empty: no scans).
    pub scan_lens: Vec<usize>,
    /// Run Fig. 12's shifts.
    pub shift: bool,
    /// Runs of each measurement; the one of median throughput is kept.
    pub repeat: usize,
    /// Where the CSV, plots and summary go; `None`: `results/updatable`.
    pub out_dir: Option<PathBuf>,
    /// Seed of the keys and the plans.
    pub seed: u64,
}

impl Default for Options {
    /// Finishes in about 5 minutes on 2 cores: 500K keys, a 3 × 3 grid, two named sets,
    /// each measurement the median of 3 runs.
    fn default() -> Self {
        Options {
            n: 500_000,
            ops: None,
            local: vec![16, 160, 1600],
            global: vec![1, 4, 16],
            sets: vec![Distribution::Lognormal, Distribution::Clustered],
            sosd: Vec::new(),
            kinds: Kind::ALL.to_vec(),
            workloads: vec![
                Workload::ReadOnly,
                Workload::ReadIntensive,
                Workload::Balanced,
                Workload::WriteHeavy,
                Workload::WriteOnly,
            ],
            scan_lens: vec![10, 100, 1000, 10_000],
            shift: true,
            repeat: 3,
            out_dir: None,
            seed: 42,
        }
    }
}

/// Whether a kind is learned (paper 3's learned indexes) or traditional.
pub fn is_learned(kind: Kind) -> bool {
    matches!(kind, Kind::DynamicPgm | Kind::Alex | Kind::Lipp)
}

/// Where a key set comes from.
#[derive(Clone, Debug)]
enum Source {
    Grid { local: u64, global: u64 },
    Synthetic(Distribution),
    Sosd(PathBuf),
}

/// A key set of the study, with its measured hardness.
struct KeySet {
    name: String,
    source: Source,
    keys: Vec<u64>,
    local_segments: u64,
    global_segments: u64,
}

impl KeySet {
    fn load(source: &Source, n: usize, seed: u64) -> anyhow::Result<KeySet> {
        let (name, keys) = match source {
            Source::Grid { local, global } => {
                let params = HardnessParams {
                    n,
                    local: *local,
                    global: *global,
                    seed,
                };
                (format!("hard-l{local}-g{global}"), generate_hard(&params)?)
            }
            Source::Synthetic(dist) => (
                dist.name().to_string(),
                generate(&GenParams::new(*dist, n, seed))?,
            ),
            Source::Sosd(path) => {
                let file = KeyFile::open(path)?;
                let keys = file.keys().to_vec();
                if let Some(i) = lidx::data::first_unsorted(&keys) {
                    anyhow::bail!(
                        "{}: key {} at position {i} follows {}: a workload bulk-loads sorted keys",
                        path.display(),
                        keys[i],
                        keys[i - 1]
                    );
                }
                let name = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |f| f.to_string_lossy().into_owned(),
                );
                (name, keys)
            }
        };
        let local_segments = segment_count(&keys, 32)?;
        let global_segments = segment_count(&keys, 4096)?;
        Ok(KeySet {
            name,
            source: source.clone(),
            keys,
            local_segments,
            global_segments,
        })
    }
}

/// One measurement: a CSV row.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// Which figure the run is for: heatmap, scan, shift (to the other set), shift-base
    /// (to the same source), bulk.
    pub part: String,
    /// The key set (for a shift, the one bulk-loaded).
    pub set: String,
    /// grid, synthetic or sosd.
    pub set_source: String,
    /// The generator's local and global targets (grid sets; 0 otherwise).
    pub local_target: u64,
    pub global_target: u64,
    /// Measured segments at ε = 32 and ε = 4096.
    pub local_segments: u64,
    pub global_segments: u64,
    /// The set whose keys a shift inserts (empty otherwise).
    pub shift_to: String,
    pub kind: String,
    /// learned or traditional.
    pub family: String,
    pub workload: String,
    pub scan_len: usize,
    pub keys: u64,
    pub bulk_loaded: u64,
    pub bulk_load_s: Fixed<4>,
    pub lookups: usize,
    pub inserts: usize,
    pub removals: usize,
    pub scans: usize,
    pub ops_per_s: Fixed<0>,
    pub mean_ns: Fixed<1>,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub lookup_p99_ns: u64,
    pub lookup_p999_ns: u64,
    pub insert_p99_ns: u64,
    pub insert_p999_ns: u64,
    pub size_bytes: u64,
    pub nodes_traversed: u64,
    pub keys_shifted: u64,
    pub nodes_created: u64,
    pub structure_modifications: u64,
    pub repeat: usize,
    pub seed: u64,
    pub machine: String,
    pub lidx_version: String,
}

impl Row {
    fn new(part: &str, set: &KeySet, r: &RunReport, o: &Options, machine: &str) -> Row {
        let (local_target, global_target) = match set.source {
            Source::Grid { local, global } => (local, global),
            _ => (0, 0),
        };
        let kind = r.kind.parse::<Kind>().map_or(true, is_learned);
        Row {
            part: part.into(),
            set: set.name.clone(),
            set_source: match set.source {
                Source::Grid { .. } => "grid",
                Source::Synthetic(_) => "synthetic",
                Source::Sosd(_) => "sosd",
            }
            .into(),
            local_target,
            global_target,
            local_segments: set.local_segments,
            global_segments: set.global_segments,
            shift_to: String::new(),
            kind: r.kind.clone(),
            family: if kind { "learned" } else { "traditional" }.into(),
            workload: r.workload.clone(),
            scan_len: 0,
            keys: r.keys,
            bulk_loaded: r.bulk_loaded,
            bulk_load_s: Fixed(r.bulk_load_s),
            lookups: r.mix[0],
            inserts: r.mix[1],
            removals: r.mix[2],
            scans: r.mix[3],
            ops_per_s: Fixed(r.ops_per_s),
            mean_ns: Fixed(r.mean_ns),
            p50_ns: r.p50_ns,
            p99_ns: r.p99_ns,
            p999_ns: r.p999_ns,
            lookup_p99_ns: r.lookup_tail.p99_ns,
            lookup_p999_ns: r.lookup_tail.p999_ns,
            insert_p99_ns: r.insert_tail.p99_ns,
            insert_p999_ns: r.insert_tail.p999_ns,
            size_bytes: r.size_bytes,
            nodes_traversed: r.counters.nodes_traversed,
            keys_shifted: r.counters.keys_shifted,
            nodes_created: r.counters.nodes_created,
            structure_modifications: r.counters.structure_modifications,
            repeat: o.repeat,
            seed: o.seed,
            machine: machine.into(),
            lidx_version: LIDX_VERSION.into(),
        }
    }
}

/// The report of median throughput among `reports` (not empty).
fn median(mut reports: Vec<RunReport>) -> Option<RunReport> {
    reports.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    let mid = reports.len() / 2;
    (!reports.is_empty()).then(|| reports.swap_remove(mid))
}

/// Runs the study; returns the summary.
pub fn run(o: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    anyhow::ensure!(
        o.n >= 16,
        "invalid n: the study needs at least 16 keys per set"
    );
    anyhow::ensure!(!o.kinds.is_empty(), "no kinds to run");
    anyhow::ensure!(
        o.kinds.iter().any(|&k| is_learned(k)) && o.kinds.iter().any(|&k| !is_learned(k)),
        "the study compares learned and traditional kinds: give at least one of each"
    );
    anyhow::ensure!(
        o.scan_lens.iter().all(|&l| l > 0),
        "scan lengths must be at least 1"
    );
    for path in &o.sosd {
        KeyFile::open(path)?;
    }
    let mut grid = Vec::new();
    for &local in &o.local {
        for &global in &o.global {
            if local >= global {
                grid.push(Source::Grid { local, global });
            }
        }
    }
    let named: Vec<Source> = o
        .sets
        .iter()
        .map(|&d| Source::Synthetic(d))
        .chain(o.sosd.iter().cloned().map(Source::Sosd))
        .collect();
    let easy = grid.first().cloned().or_else(|| named.first().cloned());
    let hard = grid.last().cloned().or_else(|| named.last().cloned());
    let (Some(easy), Some(hard)) = (easy, hard) else {
        anyhow::bail!("no key sets: give a grid (--local, --global), --sets or --sosd");
    };
    let out_dir = o
        .out_dir
        .clone()
        .unwrap_or_else(|| Path::new("results").join("updatable"));
    let _out_made = crate::harness::MadeDirs::create(&out_dir)?;
    let mut csv_out = AtomicFile::create(&out_dir.join("updatable.csv"))?;
    let mut summary_out = AtomicFile::create(&out_dir.join("summary.md"))?;
    let machine = crate::machine::describe();
    let started = Instant::now();

    let scan_set = named.first().cloned().unwrap_or_else(|| easy.clone());

    let kinds = o.kinds.len();
    let total = (grid.len() + named.len()) * o.workloads.len() * kinds
        + o.scan_lens.len() * kinds
        + if o.shift { 4 * kinds } else { 0 }
        + 3 * kinds;
    progress.start(total as u64, "paper 3's study", "runs");
    let mut rows: Vec<Row> = Vec::new();
    // Each of `runs` (one per kind) `repeat` times, the kinds taking turns in every round
    // so that a slow spell of the machine falls on all of them; the median run is kept.
    let run_kinds = |part: &str,
                     set: &KeySet,
                     shift_to: Option<&KeySet>,
                     runs: &[RunOptions],
                     rows: &mut Vec<Row>|
     -> anyhow::Result<()> {
        let mut reports: Vec<Vec<RunReport>> = vec![Vec::new(); runs.len()];
        for _ in 0..o.repeat.max(1) {
            for (run, got) in runs.iter().zip(&mut reports) {
                progress.message(&format!("{} {} on {}", run.kind, run.workload, set.name));
                let to = shift_to.map(|s| s.keys.as_slice());
                got.push(updatable::run(&set.keys, to, run)?);
            }
        }
        for (run, got) in runs.iter().zip(reports) {
            let Some(report) = median(got) else { continue };
            let mut row = Row::new(part, set, &report, o, &machine);
            if run.workload == Workload::Scan {
                row.scan_len = run.scan_len;
            }
            row.shift_to = shift_to.map(|s| s.name.clone()).unwrap_or_default();
            rows.push(row);
            progress.step();
        }
        Ok(())
    };
    let base = |kind, workload| RunOptions {
        kind,
        workload,
        ops: Some(o.ops.unwrap_or(o.n)),
        scan_len: 100,
        seed: o.seed,
        verify: false,
        sample_every: 100,
    };

    // Fig. 2 (and 3, 8, 10, 11 from the same runs).
    let mut sets_seen = Vec::new();
    for source in grid.iter().chain(&named) {
        let set = KeySet::load(source, o.n, o.seed)?;
        for &workload in &o.workloads {
            let runs: Vec<RunOptions> = o.kinds.iter().map(|&k| base(k, workload)).collect();
            run_kinds("heatmap", &set, None, &runs, &mut rows)?;
        }
        sets_seen.push((
            set.name.clone(),
            set.source.clone(),
            set.local_segments,
            set.global_segments,
        ));
    }
    // Fig. 13.
    if !o.scan_lens.is_empty() {
        let set = KeySet::load(&scan_set, o.n, o.seed)?;
        for &len in &o.scan_lens {
            // About 2M entries read per run, at least 100 scans.
            let scans = (2_000_000 / len).clamp(100, o.ops.unwrap_or(o.n).max(100));
            let runs: Vec<RunOptions> = o
                .kinds
                .iter()
                .map(|&k| RunOptions {
                    ops: Some(scans),
                    scan_len: len,
                    ..base(k, Workload::Scan)
                })
                .collect();
            run_kinds("scan", &set, None, &runs, &mut rows)?;
        }
    }
    // Fig. 12: easy → hard and hard → easy, each against inserting keys of its own
    // source drawn with another seed (a SOSD file: its own keys again, as updates).
    if o.shift {
        let (e, h) = (
            KeySet::load(&easy, o.n, o.seed)?,
            KeySet::load(&hard, o.n, o.seed)?,
        );
        let twin = |source: &Source| KeySet::load(source, o.n, o.seed ^ 0x5eed);
        let (e2, h2) = (twin(&easy)?, twin(&hard)?);
        for (from, to, part) in [
            (&e, &h, "shift"),
            (&e, &e2, "shift-base"),
            (&h, &e, "shift"),
            (&h, &h2, "shift-base"),
        ] {
            let runs: Vec<RunOptions> = o.kinds.iter().map(|&k| base(k, Workload::Shift)).collect();
            run_kinds(part, from, Some(to), &runs, &mut rows)?;
        }
    }
    // Bulk loads of n, 2n and 4n generated keys (a SOSD file: every 4th key, every
    // other key, all), each the fastest of three, so caches and noise bend the line less.
    for scale in [1, 2, 4] {
        let set = match &scan_set {
            Source::Sosd(_) => {
                let mut set = KeySet::load(&scan_set, o.n, o.seed)?;
                set.keys = set.keys.iter().step_by(4 / scale).copied().collect();
                set
            }
            source => KeySet::load(source, o.n * scale, o.seed)?,
        };
        for &kind in &o.kinds {
            progress.message(&format!("bulk-loading {kind} with {} keys", set.keys.len()));
            let run = RunOptions {
                ops: Some(0),
                ..base(kind, Workload::ReadOnly)
            };
            let mut best: Option<RunReport> = None;
            for _ in 0..3 {
                let r = updatable::run(&set.keys, None, &run)?;
                if best.as_ref().is_none_or(|b| r.bulk_load_s < b.bulk_load_s) {
                    best = Some(r);
                }
            }
            if let Some(r) = best {
                rows.push(Row::new("bulk", &set, &r, o, &machine));
            }
            progress.step();
        }
    }
    progress.finish();

    write_rows(&mut csv_out, &rows)?;
    csv_out.finish()?;
    let study = Study {
        o,
        rows: &rows,
        grid: &grid,
        sets: &sets_seen,
        easy: name_of(&easy, &sets_seen),
        hard: name_of(&hard, &sets_seen),
    };
    study.plots(&out_dir)?;
    let text = study.summary(&machine, started.elapsed().as_secs_f64());
    summary_out.write_all(text.as_bytes())?;
    summary_out.finish()?;
    Ok(format!(
        "{text}\nwrote {}, {} and the plots in {}",
        out_dir.join("updatable.csv").display(),
        out_dir.join("summary.md").display(),
        out_dir.display()
    ))
}

/// The name a source's set got.
fn name_of(source: &Source, sets: &[(String, Source, u64, u64)]) -> String {
    let same = |a: &Source, b: &Source| match (a, b) {
        (
            Source::Grid {
                local: l1,
                global: g1,
            },
            Source::Grid {
                local: l2,
                global: g2,
            },
        ) => l1 == l2 && g1 == g2,
        (Source::Synthetic(a), Source::Synthetic(b)) => a == b,
        (Source::Sosd(a), Source::Sosd(b)) => a == b,
        _ => false,
    };
    sets.iter()
        .find(|s| same(&s.1, source))
        .map_or_else(String::new, |s| s.0.clone())
}

/// The measurements, read back for plots and the summary.
struct Study<'a> {
    o: &'a Options,
    rows: &'a [Row],
    grid: &'a [Source],
    /// Every set of the heatmap: name, source, local and global segments.
    sets: &'a [(String, Source, u64, u64)],
    easy: String,
    hard: String,
}

impl Study<'_> {
    fn find(&self, part: &str, set: &str, kind: &str, workload: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.part == part && r.set == set && r.kind == kind && r.workload == workload)
    }

    /// The best learned kind's throughput over the best traditional one's, and the best
    /// learned kind's name (where learned wins) or the best traditional one's.
    fn ratio(&self, set: &str, workload: Workload) -> Option<(f64, String)> {
        let best = |learned: bool| {
            self.o
                .kinds
                .iter()
                .filter(|&&k| is_learned(k) == learned)
                .filter_map(|&k| self.find("heatmap", set, k.name(), workload.name()))
                .max_by(|a, b| a.ops_per_s.0.total_cmp(&b.ops_per_s.0))
        };
        let (l, t) = (best(true)?, best(false)?);
        let ratio = l.ops_per_s.0 / t.ops_per_s.0.max(1e-9);
        let winner = if ratio >= 1.0 { &l.kind } else { &t.kind };
        Some((ratio, winner.clone()))
    }

    fn plots(&self, out: &Path) -> anyhow::Result<()> {
        self.heatmap_plots(out)?;
        self.kind_bars(out)?;
        self.scan_plot(out)?;
        Ok(())
    }

    fn heatmap_plots(&self, out: &Path) -> anyhow::Result<()> {
        let ws = &self.o.workloads;
        if !self.grid.is_empty() {
            let locals: Vec<u64> = self.o.local.iter().rev().copied().collect();
            let globals = &self.o.global;
            let panels: Vec<HeatPanel> = ws
                .iter()
                .map(|&w| HeatPanel {
                    title: w.name().to_string(),
                    rows: locals.iter().map(|l| format!("{l}")).collect(),
                    columns: globals.iter().map(|g| format!("{g}")).collect(),
                    cells: locals
                        .iter()
                        .map(|&l| {
                            globals
                                .iter()
                                .map(|&g| self.ratio(&format!("hard-l{l}-g{g}"), w))
                                .collect()
                        })
                        .collect(),
                })
                .collect();
            heatmaps(
                &out.join("fig2_heatmap.png"),
                "Paper 3 Fig. 2: best learned / best traditional throughput (green: learned wins)",
                (
                    "global hardness target (segments at eps 4096)",
                    "local (eps 32)",
                ),
                &panels,
                3,
            )?;
        }
        let named: Vec<&str> = self
            .sets
            .iter()
            .filter(|s| !matches!(s.1, Source::Grid { .. }))
            .map(|s| s.0.as_str())
            .collect();
        if !named.is_empty() {
            let panel = HeatPanel {
                title: "named key sets".into(),
                rows: named.iter().map(|s| s.to_string()).collect(),
                columns: ws.iter().map(|w| w.name().to_string()).collect(),
                cells: named
                    .iter()
                    .map(|s| ws.iter().map(|&w| self.ratio(s, w)).collect())
                    .collect(),
            };
            heatmaps(
                &out.join("fig2_sets.png"),
                "Paper 3 Fig. 2 on named sets: best learned / best traditional",
                ("workload", "set"),
                &[panel],
                1,
            )?;
        }
        Ok(())
    }

    /// Figs. 3, 8, 10, 11: one bar per kind and series.
    fn kind_bars(&self, out: &Path) -> anyhow::Result<()> {
        let kinds: Vec<String> = self.o.kinds.iter().map(|k| k.name().to_string()).collect();
        let series = |name: String, value: &dyn Fn(&str) -> Option<f64>| Series {
            name,
            points: kinds
                .iter()
                .enumerate()
                .filter_map(|(i, k)| Some((i as f64, value(k)?)))
                .collect(),
        };
        let (ro, wo) = (Workload::ReadOnly.name(), Workload::WriteOnly.name());
        let pairs = [("easiest", &self.easy), ("hardest", &self.hard)];
        let mut fig3 = Vec::new();
        let mut fig10 = Vec::new();
        let mut fig11 = Vec::new();
        for (label, set) in pairs {
            let get = |w: &'static str, f: fn(&Row) -> f64| {
                move |k: &str| self.find("heatmap", set, k, w).map(f)
            };
            fig3.push(series(
                format!("lookup, {label} ({set})"),
                &get(ro, |r| r.mean_ns.0),
            ));
            fig3.push(series(
                format!("insert, {label} ({set})"),
                &get(wo, |r| r.mean_ns.0),
            ));
            fig10.push(series(
                format!("p99, {label}"),
                &get(ro, |r| r.lookup_p99_ns as f64),
            ));
            fig10.push(series(
                format!("p99.9, {label}"),
                &get(ro, |r| r.lookup_p999_ns as f64),
            ));
            fig11.push(series(
                format!("p99, {label}"),
                &get(wo, |r| r.insert_p99_ns as f64),
            ));
            fig11.push(series(
                format!("p99.9, {label}"),
                &get(wo, |r| r.insert_p999_ns as f64),
            ));
        }
        let fig8: Vec<Series> = self
            .sets
            .iter()
            .map(|s| {
                series(s.0.clone(), &|k: &str| {
                    self.find("heatmap", &s.0, k, wo)
                        .map(|r| r.size_bytes as f64 / (1u64 << 20) as f64)
                })
            })
            .collect();
        let mut shift = Vec::new();
        for (from, to) in [(&self.easy, &self.hard), (&self.hard, &self.easy)] {
            shift.push(series(format!("{from} -> {to}"), &|k: &str| {
                self.shift_ratio(from, k)
            }));
        }
        let plots: [(&str, &str, &str, Scale, Vec<Series>); 5] = [
            (
                "fig3_insert_vs_lookup.png",
                "Paper 3 Fig. 3: mean insert (write-only) and lookup (read-only) latency",
                "ns",
                Scale::Log,
                fig3,
            ),
            (
                "fig8_size.png",
                "Paper 3 Fig. 8: size after the write-only workload",
                "MiB",
                Scale::Log,
                fig8,
            ),
            (
                "fig10_lookup_tail.png",
                "Paper 3 Fig. 10: lookup tail latency (read-only)",
                "ns",
                Scale::Log,
                fig10,
            ),
            (
                "fig11_insert_tail.png",
                "Paper 3 Fig. 11: insert tail latency (write-only)",
                "ns",
                Scale::Log,
                fig11,
            ),
            (
                "fig12_shift.png",
                "Paper 3 Fig. 12: balanced throughput, inserts from the other set / from the same source",
                "ratio",
                Scale::Linear,
                shift,
            ),
        ];
        for (file, title, unit, scale, series) in plots {
            if series.iter().any(|s| !s.points.is_empty()) {
                bars(&out.join(file), title, &kinds, (unit, scale), &series)?;
            }
        }
        Ok(())
    }

    fn scan_plot(&self, out: &Path) -> anyhow::Result<()> {
        let series: Vec<Series> = self
            .o
            .kinds
            .iter()
            .map(|k| Series {
                name: k.name().into(),
                points: self
                    .rows
                    .iter()
                    .filter(|r| r.part == "scan" && r.kind == k.name())
                    .map(|r| (r.scan_len as f64, r.ops_per_s.0 * r.scan_len as f64))
                    .collect(),
            })
            .collect();
        if series.iter().any(|s| !s.points.is_empty()) {
            chart(
                &out.join("fig13_scans.png"),
                "Paper 3 Fig. 13: range scans, entries read per second",
                ("entries per scan", Scale::Log),
                ("entries/s", Scale::Log),
                &series,
                true,
            )?;
        }
        Ok(())
    }
}

/// A Markdown table.
fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut s = format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for r in rows {
        s += &format!("| {} |\n", r.join(" | "));
    }
    s
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

impl Study<'_> {
    fn kind_names(&self) -> Vec<&'static str> {
        self.o.kinds.iter().map(|k| k.name()).collect()
    }

    fn has(&self, kind: Kind) -> bool {
        self.o.kinds.contains(&kind)
    }

    fn summary(&self, machine: &str, seconds: f64) -> String {
        let o = self.o;
        let mut s = String::from("# Paper 3 (GRE): are updatable learned indexes ready?\n\n");
        s += &format!(
            "{} keys per generated set, at most {} operations per run after the bulk load (1% of them timed alone), the median of {} run(s); {machine}; took {seconds:.0} s. Learned: dynamic-pgm, alex, lipp; traditional: btree, art, btreemap.\n\n",
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
                    Source::Grid { local, global } => format!("{local} / {global}"),
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
        let mut header = vec!["set".to_string()];
        header.extend(o.workloads.iter().map(|w| w.name().to_string()));
        let rows: Vec<Vec<String>> = self
            .sets
            .iter()
            .map(|(name, ..)| {
                let mut row = vec![name.clone()];
                row.extend(o.workloads.iter().map(|&w| {
                    self.ratio(name, w)
                        .map_or("-".into(), |(r, k)| format!("{} {k}", times(r)))
                }));
                row
            })
            .collect();
        s += &table(&header, &rows);

        s += &self.insert_table();
        s += &self.size_table();
        s += &self.tail_table();
        s += &self.shift_table();
        s += &self.scan_table();
        s += &self.bulk_table();
        s += "\n## Paper 3's messages, and what this run shows\n\n";
        s += &table(&strings(&["paper 3", "here"]), &self.messages());
        s
    }

    /// Table 3 and Fig. 3: per insert, on the easiest and the hardest set.
    fn insert_table(&self) -> String {
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

    /// Fig. 8: bytes per key after write-only.
    fn size_table(&self) -> String {
        let mut s =
            String::from("\n## Fig. 8: size after the write-only workload (bytes per key)\n\n");
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

    fn tail_table(&self) -> String {
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
                let cell = |set: &str, w: Workload, f: fn(&Row) -> (u64, u64)| {
                    self.find("heatmap", set, k, w.name())
                        .map_or("-".into(), |r| {
                            let (a, b) = f(r);
                            format!("{a} / {b}")
                        })
                };
                let lookups = |r: &Row| (r.lookup_p99_ns, r.lookup_p999_ns);
                let inserts = |r: &Row| (r.insert_p99_ns, r.insert_p999_ns);
                vec![
                    k.to_string(),
                    cell(&self.easy, Workload::ReadOnly, lookups),
                    cell(&self.hard, Workload::ReadOnly, lookups),
                    cell(&self.easy, Workload::WriteOnly, inserts),
                    cell(&self.hard, Workload::WriteOnly, inserts),
                ]
            })
            .collect();
        s += &format!("Easiest: {}; hardest: {}.\n\n", self.easy, self.hard);
        s + &table(&header, &rows)
    }

    /// The balanced throughput with the inserts from `to`, over the plain one on `from`.
    /// The throughput of the shift from `from` to the other set over that of inserting
    /// keys from `from`'s own source.
    fn shift_ratio(&self, from: &str, kind: &str) -> Option<f64> {
        let run = |part: &str| {
            self.rows
                .iter()
                .find(|r| r.part == part && r.set == from && r.kind == kind)
                .map(|r| r.ops_per_s.0)
        };
        Some(run("shift")? / run("shift-base")?.max(1e-9))
    }

    fn shift_table(&self) -> String {
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

    fn scan_table(&self) -> String {
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
    fn bulk_ns_per_key(&self, kind: &str) -> Vec<(u64, f64)> {
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

    fn bulk_table(&self) -> String {
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

    fn throughput(&self, set: &str, kind: Kind, w: Workload) -> Option<f64> {
        self.find("heatmap", set, kind.name(), w.name())
            .map(|r| r.ops_per_s.0)
    }

    /// Paper 3's messages beside what this run measured.
    fn messages(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let grid_sets: Vec<&str> = self
            .sets
            .iter()
            .filter(|s| matches!(s.1, Source::Grid { .. }))
            .map(|s| s.0.as_str())
            .collect();
        let all_sets: Vec<&str> = self.sets.iter().map(|s| s.0.as_str()).collect();
        let over = if grid_sets.is_empty() {
            &all_sets
        } else {
            &grid_sets
        };
        // 1. The diagonal.
        let wins: Vec<String> = self
            .o
            .workloads
            .iter()
            .map(|&w| {
                let won = over
                    .iter()
                    .filter(|s| self.ratio(s, w).is_some_and(|r| r.0 >= 1.0))
                    .count();
                format!("{} {won}/{}", w.name(), over.len())
            })
            .collect();
        let corner = |set: &str, w| self.ratio(set, w).map_or("-".into(), |r| times(r.0));
        out.push(vec![
            "Learned indexes win on easy data and read-heavy workloads and lose on hard data and write-heavy ones (Fig. 2's diagonal).".into(),
            format!(
                "Learned wins in {} cells. Best learned / best traditional: {} on the easiest set read-only, {} on the hardest write-only.",
                wins.join(", "),
                corner(&self.easy, Workload::ReadOnly),
                corner(&self.hard, Workload::WriteOnly)
            ),
        ]);
        // 2. LIPP: fastest lookups, largest.
        if self.has(Kind::Lipp) {
            let fastest = all_sets
                .iter()
                .filter(|s| {
                    let lipp = self
                        .throughput(s, Kind::Lipp, Workload::ReadOnly)
                        .unwrap_or(0.0);
                    self.o
                        .kinds
                        .iter()
                        .all(|&k| self.throughput(s, k, Workload::ReadOnly).unwrap_or(0.0) <= lipp)
                })
                .count();
            let largest = all_sets
                .iter()
                .filter(|s| {
                    let size = |k: Kind| {
                        self.find("heatmap", s, k.name(), Workload::WriteOnly.name())
                            .map_or(0, |r| r.size_bytes)
                    };
                    self.o.kinds.iter().all(|&k| size(k) <= size(Kind::Lipp))
                })
                .count();
            let vs_alex: Vec<f64> = all_sets
                .iter()
                .filter_map(|s| {
                    let size = |k: Kind| {
                        self.find("heatmap", s, k.name(), Workload::WriteOnly.name())
                            .map(|r| r.size_bytes as f64)
                    };
                    Some(size(Kind::Lipp)? / size(Kind::Alex)?)
                })
                .collect();
            let range = if vs_alex.is_empty() {
                String::new()
            } else {
                let lo = vs_alex.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = vs_alex.iter().copied().fold(0.0, f64::max);
                format!(" LIPP is {lo:.1}–{hi:.1}× ALEX's size.")
            };
            out.push(vec![
                "LIPP is the fastest on lookups but the largest (4–5× ALEX).".into(),
                format!(
                    "lipp has the fastest read-only lookups on {fastest}/{} sets and is the largest after write-only on {largest}/{}.{range}",
                    all_sets.len(),
                    all_sets.len()
                ),
            ]);
        }
        // 3. Dynamic PGM: best writes among learned.
        if self.has(Kind::DynamicPgm) {
            let best = all_sets
                .iter()
                .filter(|s| {
                    let pgm = self
                        .throughput(s, Kind::DynamicPgm, Workload::WriteOnly)
                        .unwrap_or(0.0);
                    [Kind::Alex, Kind::Lipp]
                        .iter()
                        .all(|&k| self.throughput(s, k, Workload::WriteOnly).unwrap_or(0.0) <= pgm)
                })
                .count();
            out.push(vec![
                "The dynamic PGM-Index has the highest insert throughput (write-only) among learned indexes, from its LSM-like buffering.".into(),
                format!("dynamic-pgm is the fastest learned kind on write-only on {best}/{} sets.", all_sets.len()),
            ]);
        }
        // 4. Insert tails on hard data, against the traditional kinds' median: a p99.9 of
        // a few thousand samples rests on a few of them, so no single kind is the yardstick.
        let tail = |set: &str, k: Kind| {
            self.find("heatmap", set, k.name(), Workload::WriteOnly.name())
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
        if let (Some(easy), Some(hard)) = (traditional(&self.easy), traditional(&self.hard)) {
            let learned: Vec<String> = [Kind::Alex, Kind::Lipp, Kind::DynamicPgm]
                .iter()
                .filter_map(|&k| {
                    let (e, h) = (tail(&self.easy, k)?, tail(&self.hard, k)?);
                    Some(format!(
                        "{} {} / {}",
                        k.name(),
                        times(e / easy.max(1.0)),
                        times(h / hard.max(1.0))
                    ))
                })
                .collect();
            out.push(vec![
                "Learned indexes' insert tail latency (p99.9) grows on hard data, from structure modifications.".into(),
                format!(
                    "Insert p99.9 over the traditional kinds' median, on {} / on {}: {}.",
                    self.easy,
                    self.hard,
                    learned.join(", ")
                ),
            ]);
        }
        // 5. Shift.
        if self.rows.iter().any(|r| r.part == "shift") {
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
            out.push(vec![
                "Learned indexes are sensitive to a shift of the inserted keys' distribution (either way); traditional ones are not.".into(),
                format!(
                    "Mean change of balanced throughput under a shift: learned {:.0}%, traditional {:.0}%.",
                    spread(true) * 100.0,
                    spread(false) * 100.0
                ),
            ]);
        }
        // 6. The floor: each kind's read-only lookups on easy data at least the B+tree's.
        if let Some(bt) = self.throughput(&self.easy, Kind::Btree, Workload::ReadOnly) {
            let each: Vec<String> = self
                .o
                .kinds
                .iter()
                .filter(|&&k| is_learned(k))
                .filter_map(|&k| {
                    Some(format!(
                        "{} {}",
                        k.name(),
                        times(self.throughput(&self.easy, k, Workload::ReadOnly)? / bt)
                    ))
                })
                .collect();
            out.push(vec![
                "Learned lookups on easy data beat a B+tree (read-only).".into(),
                format!(
                    "On {}, read-only throughput against the B+tree's: {}.",
                    self.easy,
                    each.join(", ")
                ),
            ]);
        }
        // 7. Bulk loads.
        let growth: Vec<String> = self
            .kind_names()
            .iter()
            .filter_map(|&k| {
                let v = self.bulk_ns_per_key(k);
                let (first, last) = (v.first()?, v.last()?);
                Some(format!("{k} {}", times(last.1 / first.1.max(1e-9))))
            })
            .collect();
        out.push(vec![
            "Bulk loading is linear in n.".into(),
            format!("Time per key at 4n over n: {}.", growth.join(", ")),
        ]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Quiet;

    #[test]
    fn a_small_study_writes_every_row_plot_and_message() {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            n: 20_000,
            ops: Some(2_000),
            local: vec![4, 16],
            global: vec![1, 2],
            sets: vec![Distribution::Lognormal],
            scan_lens: vec![10, 100],
            repeat: 1,
            out_dir: Some(dir.path().to_path_buf()),
            ..Options::default()
        };
        let summary = run(&o, &Quiet).unwrap();
        let kinds = Kind::ALL.len();
        // 4 grid sets and 1 named, 5 workloads; 2 scan lengths; 4 shift runs; 3 bulk sizes.
        let grid = 4;
        let want = (grid + 1) * 5 * kinds + 2 * kinds + 4 * kinds + 3 * kinds;
        let csv = std::fs::read_to_string(dir.path().join("updatable.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + want, "{csv}");
        let header = csv.lines().next().unwrap();
        for column in [
            "part",
            "set",
            "kind",
            "workload",
            "ops_per_s",
            "insert_p999_ns",
            "size_bytes",
            "keys_shifted",
            "machine",
        ] {
            assert!(
                header.split(',').any(|c| c == column),
                "{column} missing: {header}"
            );
        }
        for png in [
            "fig2_heatmap.png",
            "fig2_sets.png",
            "fig3_insert_vs_lookup.png",
            "fig8_size.png",
            "fig10_lookup_tail.png",
            "fig11_insert_tail.png",
            "fig12_shift.png",
            "fig13_scans.png",
        ] {
            let bytes = std::fs::read(dir.path().join(png)).unwrap();
            assert!(bytes.starts_with(b"\x89PNG"), "{png}");
        }
        let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
        assert!(summary.starts_with(&md[..200]));
        for needle in [
            "hard-l4-g1",
            "hard-l16-g2",
            "Fig. 2",
            "Table 3",
            "Fig. 8",
            "Fig. 12",
            "Fig. 13",
            "Bulk loading is linear",
            "LIPP is the fastest",
            "dynamic-pgm is the fastest learned kind",
        ] {
            assert!(md.contains(needle), "{needle} missing:\n{md}");
        }
        // Every cell of the heatmap's table has a ratio and a winner.
        let fig2 = md
            .split("## Fig. 2")
            .nth(1)
            .unwrap()
            .split("## Fig. 3")
            .next()
            .unwrap();
        let rows: Vec<&str> = fig2
            .lines()
            .filter(|l| l.starts_with("| hard-") || l.starts_with("| lognormal"))
            .collect();
        assert_eq!(rows.len(), grid + 1, "{fig2}");
        for row in rows {
            let cells: Vec<&str> = row
                .split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            assert_eq!(cells.len(), 6, "{row}");
            for cell in &cells[1..] {
                let (ratio, kind) = cell.split_once("x ").unwrap_or_else(|| panic!("{row}"));
                assert!(ratio.parse::<f64>().is_ok_and(|r| r >= 0.0), "{row}");
                assert!(kind.parse::<Kind>().is_ok(), "{row}");
            }
        }
        // Nothing but the results is left behind.
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 10, "{names:?}");
    }

    #[test]
    fn a_study_without_both_families_or_sets_is_refused() {
        let o = Options {
            kinds: vec![Kind::Alex, Kind::Lipp],
            ..Options::default()
        };
        assert!(run(&o, &Quiet).is_err());
        let o = Options {
            local: Vec::new(),
            sets: Vec::new(),
            ..Options::default()
        };
        let err = run(&o, &Quiet).unwrap_err().to_string();
        assert!(err.contains("no key sets"), "{err}");
    }
}
