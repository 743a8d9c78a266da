//! `lidx experiment unsorted`: paper 1's joins of unsorted tables under a memory limit
//! (sections 4.4 and 5.4, Fig. 9), and the sorts beyond it.
//!
//! The inner table S holds a key set's keys in a seeded random order (the paper shuffles
//! FB); the outer table R of ratio r is a uniform 1/r sample of them, shuffled apart. At
//! every memory limit:
//! - **Fig. 9b**: both unclustered indexes of S (and of R) are built: the learned partition
//!   index and the B+tree by inserts, with their time, I/O, write amplification and index
//!   sizes.
//! - **Fig. 9a**: R joins S through those indexes (learned and B+tree routes, the join's
//!   time without the builds, as the paper plots it), beside the grace hash join and
//!   sort-then-merge (the sorting counted apart).
//! - **Sorts**: S sorted three ways (external merge sort, learned sort, B+tree in order).
//!
//! Every run is a fresh `lidx ... --json` process under `--memory-limit` (and the user's
//! cgroup for that limit, where given), started after the pages of its inputs are dropped
//! from the OS page cache. Each reports its peak RSS; the same command on a 256-tuple table
//! gives the process's own baseline, so every row says whether the run's growth stayed
//! within the limit.

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
use crate::csv_rows::write_rows;
use crate::harness::{self, Setup, Study};
use crate::progress::Progress;
use crate::text::human_bytes;

/// The study's own settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Memory limits in bytes; `None`: a small one, where the B+tree's leaves do not fit
    /// (a sixteenth of the table), a medium one (half the table) and a large one, where
    /// everything does (four tables).
    pub limits: Option<Vec<u64>>,
    /// Cgroups the user made, one per limit in the same order (or none): every run at a
    /// limit joins its cgroup, which bounds the page cache as paper 1's cgroups did.
    pub cgroups: Vec<PathBuf>,
    /// Size ratios |S|/|R|.
    pub ratios: Vec<u64>,
    /// Measurements per cell; the summary takes the median.
    pub repeat: usize,
}

/// The unsorted join routes, as `lidx join --method` names them.
const JOINS: [&str; 4] = ["partition", "btree-inserts", "grace", "sort-merge"];
/// The unclustered indexes, as `lidx index build --kind` names them.
const INDEXES: [&str; 2] = ["partition", "btree-inserts"];
/// The sorts, as `lidx sort --method` names them.
const SORTS: [&str; 3] = ["external", "learned", "btree-inserts"];

/// Growth of the peak RSS beyond the limit that still counts as within it: allocator
/// rounding, stacks and the standard library's buffers (the CLI's RSS test uses the same).
pub const RSS_SLACK: u64 = 2 << 20;

impl Options {
    /// Checks every setting against a key set of `n` tuples and returns the limits.
    fn limits(&self, n: u64) -> anyhow::Result<Vec<u64>> {
        if self.ratios.is_empty() || self.ratios.contains(&0) {
            bail!("invalid ratios: each must be at least 1");
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
                // Between them, where part of the B+tree's leaves fit.
                let medium = mib((data / 2).clamp(small, large));
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
        if !self.cgroups.is_empty() && self.cgroups.len() != limits.len() {
            bail!(
                "invalid cgroups: give one per memory limit ({} limits, {} cgroups)",
                limits.len(),
                self.cgroups.len()
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
    let mut measuring = Measuring::new(setup, options, &limits, sets, &dirs.data, baselines);
    let (_, rows) = harness::measure(&mut measuring, "unsorted", "runs", progress)?;
    drop(measuring);

    let csv_rows: Vec<CsvRow<'_>> = rows
        .iter()
        .map(|r| CsvRow::new(r, machine, &profile.device))
        .collect();
    write_rows(&mut csv_out.file, &csv_rows)?;
    let summary = summarize(options, &limits, sets, &rows);
    let mut md = format!(
        "# lidx experiment unsorted\n\nMachine: {machine}. Device: {}. {} key set(s) of {} keys, shuffled; every run a fresh process under `--memory-limit`, its inputs' pages dropped first; reads buffered{}.\n\n",
        profile.device,
        sets.len(),
        setup.n,
        if options.cgroups.is_empty() {
            " (the page cache is not bounded: no cgroup given)"
        } else {
            ", each run in the cgroup given for its limit"
        }
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
