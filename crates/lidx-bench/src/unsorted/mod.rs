//! `lidx experiment unsorted`: paper 1's joins of unsorted tables under a memory limit
//! (sections 4.4 and 5.4, Fig. 9), and the sorts beyond it.
//!
//! The inner table S holds a key set's keys in a seeded random order (the paper shuffles
//! FB); the outer table R of ratio r is a uniform 1/r sample of them, shuffled apart. At
//! every memory limit:
//! - **Fig. 9b**: both unclustered indexes of S (and of R) are built, each holding
//!   pointers (key and position, the paper's) and holding tuples (a clustered copy): the
//!   learned partition index and the B+tree by inserts, with their time, I/O, write
//!   amplification (bytes, and pages touched), file and index sizes.
//! - **Fig. 9a**: R joins S through those indexes (learned and B+tree routes, pointers with
//!   pointers and tuples with tuples, the join's time without the builds, as the paper
//!   plots it), beside the grace hash join and sort-then-merge (the sorting counted apart).
//! - **Sorts**: S sorted three ways (external merge sort, learned sort, B+tree in order).
//!
//! Every run is a fresh `lidx ... --json` process under `--memory-limit`, started after the
//! pages of its inputs are dropped from the OS page cache, and in a cgroup for its limit
//! that bounds the process's memory and its page cache as paper 1's did: one the study
//! makes where the machine allows it ([`crate::cgroups`]), or the user's. Each reports its
//! peak RSS; the same command on a 256-tuple table gives the process's own baseline, so
//! every row says whether the run's growth stayed within the limit.

//!
//! The study in parts: `measure` (the commands it runs, the RSS baselines, the cells, one
//! per key set, repeat and limit, and running one), `rows` (the runs measured, their CSV
//! rows and medians), `findings` (section 5.4's findings beside this run's, one function
//! each), `summary` (the tables) and `plots`.

mod findings;
mod measure;
mod plots;
mod rows;
mod summary;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use anyhow::bail;
use lidx::data::Distribution;
use lidx::partition::{Entries, PartitionParams};
use lidx::storage::TUPLE_SIZE;

use self::measure::{Baselines, Measuring};
use self::plots::plot_all;
use self::rows::CsvRow;
use self::summary::summarize;
use crate::cgroups::MadeCgroups;
use crate::csv_rows::write_rows;
use crate::harness::{self, Setup, Study};
use crate::progress::Progress;
use crate::text::human_bytes;

/// Where the runs' cgroups come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cgroups {
    /// Made by the study, one per limit, where the machine allows it; else none, and the
    /// summary says why.
    Auto,
    /// None: only lidx's own accounting bounds memory, and the page cache is unbounded.
    None,
    /// Made by the user, one per limit in the same order.
    Given(Vec<PathBuf>),
}

/// The study's own settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Memory limits in bytes; `None`: a small one, where the B+tree's leaves do not fit
    /// (a sixteenth of the table), one at paper 1's ratio (its 2 GB against a 3.2 GB table:
    /// five eighths of the table) and a large one, where everything fits (four tables).
    pub limits: Option<Vec<u64>>,
    /// The runs' cgroups, which bound the page cache as paper 1's did.
    pub cgroups: Cgroups,
    /// What the unclustered indexes hold: pointers (the paper's), tuples, or both.
    pub entries: Vec<Entries>,
    /// Size ratios |S|/|R|.
    pub ratios: Vec<u64>,
    /// Measurements per cell; the summary takes the median.
    pub repeat: usize,
}

/// Every unclustered index the study can build: the kind as `lidx index build --kind`
/// names it, and what it holds. The paper's (pointers) first.
const INDEXES: [(&str, Entries); 4] = [
    ("partition", Entries::Pointers),
    ("btree-inserts", Entries::Pointers),
    ("partition", Entries::Tuples),
    ("btree-inserts", Entries::Tuples),
];
/// The join routes without an index of their own, as `lidx join --method` names them;
/// every index the study builds is a route too.
const OTHER_JOINS: [&str; 2] = ["grace", "sort-merge"];

/// The name an index (or a join through it) goes by in lookups and the summary:
/// `partition:pointers`, `btree-inserts:tuples`.
fn route(kind: &str, entries: Entries) -> String {
    format!("{kind}:{entries}")
}
/// The sorts, as `lidx sort --method` names them.
const SORTS: [&str; 3] = ["external", "learned", "btree-inserts"];

/// Growth of the peak RSS beyond the limit that still counts as within it: allocator
/// rounding, stacks and the standard library's buffers (the CLI's RSS test uses the same).
pub const RSS_SLACK: u64 = 2 << 20;

impl Options {
    /// The indexes the study builds: those of [`INDEXES`] holding one of `entries`.
    fn indexes(&self) -> Vec<(&'static str, Entries)> {
        INDEXES
            .into_iter()
            .filter(|(_, e)| self.entries.contains(e))
            .collect()
    }

    /// Checks every setting against a key set of `n` tuples and returns the limits.
    fn limits(&self, n: u64) -> anyhow::Result<Vec<u64>> {
        if self.ratios.is_empty() || self.ratios.contains(&0) {
            bail!("invalid ratios: each must be at least 1");
        }
        if self.entries.is_empty() {
            bail!("invalid entries: give pointers, tuples or both");
        }
        if self.repeat == 0 {
            bail!("invalid repeat: at least 1 measurement per cell");
        }
        let need = smallest_limit(n);
        let limits = match &self.limits {
            Some(limits) => limits.clone(),
            None => {
                let data = n * TUPLE_SIZE as u64;
                let mib = |b: u64| b.div_ceil(1 << 20) << 20;
                let small = mib((data / 16).max(2 * need));
                let large = mib(4 * data).max(2 * small);
                // Paper 1's ratio: its 2 GB against the 3.2 GB of 200M 16-byte tuples.
                let medium = mib((data * 5 / 8).clamp(small, large));
                let mut limits = vec![small, medium, large];
                limits.dedup();
                limits
            }
        };
        if limits.is_empty() {
            bail!("invalid memory-limits: give at least one");
        }
        if let Some(&small) = limits.iter().find(|&&l| l < need) {
            bail!(
                "invalid memory-limits: {} is too small for {n} tuples; the smallest that works is {} ({need} bytes)",
                human_bytes(small),
                human_bytes(need)
            );
        }
        if let Cgroups::Given(cgroups) = &self.cgroups
            && cgroups.len() != limits.len()
        {
            bail!(
                "invalid cgroups: give one per memory limit ({} limits, {} cgroups)",
                limits.len(),
                cgroups.len()
            );
        }
        Ok(limits)
    }
}

/// The smallest limit every run on `n` tuples works with: the larger index build (the
/// B+tree's or the partitioning's), or a sort, whichever needs more.
pub fn smallest_limit(n: u64) -> u64 {
    let partition = lidx::partition::min_build_memory(n, &PartitionParams::default());
    let btree = lidx::partition::btree::min_build_memory(n, Entries::Tuples);
    partition.max(btree).max(lidx::sort::min_sort_memory())
}

/// The cgroups the runs go in, one per limit (none: no cgroup), and what the summary says
/// of them.
struct RunsIn {
    dirs: Vec<PathBuf>,
    made: Option<MadeCgroups>,
    said: String,
}

/// Memory a made cgroup allows a run beyond its `--memory-limit`, besides the process's
/// own peak RSS on a tiny table: the allocator's rounding and the kernel's per-process
/// pages.
const CGROUP_SLACK: u64 = 8 << 20;

impl RunsIn {
    /// The cgroups `options` ask for at `limits`; made ones allow each run its limit, the
    /// process's own peak RSS `own_rss` and [`CGROUP_SLACK`].
    fn choose(options: &Options, limits: &[u64], own_rss: u64) -> RunsIn {
        match &options.cgroups {
            Cgroups::None => RunsIn {
                dirs: Vec::new(),
                made: None,
                said: "no cgroups (`--cgroups none`): only lidx's own accounting bounds memory, and the page cache is not bounded, unlike paper 1's runs".into(),
            },
            Cgroups::Given(dirs) => RunsIn {
                dirs: dirs.clone(),
                made: None,
                said: "each run in the cgroup the user gave for its limit (`--cgroups`)".into(),
            },
            Cgroups::Auto => match MadeCgroups::make(limits, own_rss + CGROUP_SLACK) {
                Ok(made) => RunsIn {
                    dirs: made.cgroups.iter().map(|c| c.dir().to_path_buf()).collect(),
                    said: format!(
                        "each run in a cgroup this study made for its limit ({}), whose memory limit is the run's `--memory-limit` plus {} (the process's own peak RSS on a tiny table and {} of slack), page cache included, as paper 1 bounded its runs with cgroups",
                        made.place,
                        human_bytes(own_rss + CGROUP_SLACK),
                        human_bytes(CGROUP_SLACK)
                    ),
                    made: Some(made),
                },
                Err(why) => RunsIn {
                    dirs: Vec::new(),
                    made: None,
                    said: format!(
                        "no cgroups: this machine does not let the study make them ({why}), so only lidx's own accounting bounds memory and the page cache is not bounded, unlike paper 1's runs"
                    ),
                },
            },
        }
    }
}

/// Runs the study; returns the report to print.
pub fn run(setup: &Setup, options: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    let limits = options.limits(setup.n)?;
    let mut setup = setup.clone();
    if setup.sets.is_none() && setup.keys.is_empty() {
        // Paper 1 joins one key set unsorted (FB); lognormal is the synthetic set nearest it.
        setup.sets = Some(vec![Distribution::Lognormal]);
    }
    let setup = &setup;
    let (study, [mut csv_out, mut summary_out]) =
        setup.begin("unsorted", ["unsorted.csv", "summary.md"], progress)?;
    let Study {
        sets,
        dirs,
        machine,
        profile,
        started,
        ..
    } = &study;

    // The process's own peak RSS is measured once per command and limit, on a tiny table.
    progress.spin("baselines");
    let baselines = Baselines::new(setup, &dirs.data)?;
    progress.finish();
    let runs_in = RunsIn::choose(options, &limits, baselines.own_rss());
    let mut measuring = Measuring::new(setup, options, &limits, sets, &dirs.data, baselines);
    measuring.runs_in(&runs_in);
    let (_, rows) = harness::measure(&mut measuring, "unsorted", "runs", progress)?;
    drop(measuring);
    drop(runs_in.made);

    let csv_rows: Vec<CsvRow<'_>> = rows
        .iter()
        .map(|r| CsvRow::new(r, machine, &profile.device))
        .collect();
    write_rows(&mut csv_out.file, &csv_rows)?;
    let summary = summarize(options, &limits, setup.n, sets, &rows);
    let mut md = format!(
        "# lidx experiment unsorted\n\nMachine: {machine}. Device: {}. {} key set(s) of {} keys, shuffled; every run a fresh process under `--memory-limit`, its inputs' pages dropped first; reads buffered. Memory: {}.\n\n",
        profile.device,
        sets.len(),
        setup.n,
        runs_in.said,
    );
    md.push_str(&summary);
    summary_out.file.write_all(md.as_bytes())?;
    let paths = [&csv_out, &summary_out].map(|o| o.path.display().to_string());
    csv_out.finish()?;
    summary_out.finish()?;
    let plots = plot_all(&limits, sets, &rows, &options.ratios, &dirs.out)?;
    dirs.finish();
    Ok(format!(
        "{summary}\n{} runs in {:.0} s. Wrote {}, {} and {plots} plots in {}\n",
        rows.len(),
        started.elapsed().as_secs_f64(),
        paths[0],
        paths[1],
        dirs.out.display()
    ))
}
