//! `lidx experiment join-sorted`: paper 1's joins of sorted tables (sections 5.3, 5.5 and
//! 5.6). The outer table is a uniform 1/ratio sample of the inner (so every outer key
//! matches); INLJ through sampled PGM and a B+tree (windows of 256, 1024, 4096 tuples, read
//! with one call each), sort-merge and hash joins, on 1..N threads, and (beyond the paper)
//! with 32 window reads in flight. Fig. 6 is time against ratio, Fig. 10 against threads,
//! Fig. 11 against window size; Fig. 8 (HDD) is the cost model's prediction under an assumed
//! disk, labelled as such.
//!
//! The study in parts: `measure` (the cells, one per key set and ratio, and running one),
//! `rows` (the joins measured, their CSV rows and medians, and Fig. 8's predictions),
//! `findings` (section 5.3's findings and the cost model's pick beside this run's, one
//! function each), `summary` (the table) and `plots`.

mod findings;
mod measure;
mod plots;
mod rows;
mod summary;
#[cfg(test)]
pub(crate) mod tests;

use anyhow::bail;
use lidx::index::{AnyParams, IndexKind};

use self::measure::Measuring;
use self::plots::plot_all;
use self::rows::{CsvRow, HddRow, hdd_prediction};
use self::summary::summarize;
use crate::csv_rows::write_rows;
use crate::harness::{self, Setup, Study};
use crate::progress::Progress;

/// The study's own settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Size ratios |S|/|R|: the outer table is a uniform 1/ratio sample of the inner.
    pub ratios: Vec<u64>,
    /// Thread counts; `None`: those of 1, 2, 4, 6, 8 up to the machine's cores.
    pub threads: Option<Vec<usize>>,
    /// Index windows in tuples for the INLJ methods; each window is read with one call.
    pub windows: Vec<u64>,
    /// Window reads in flight per INLJ thread (1 is paper 1's synchronous reading).
    pub io_depths: Vec<usize>,
    /// Indexes of the INLJ methods: the learned one first, then the baseline.
    pub indexes: Vec<IndexKind>,
    /// Bytes per sequential read of a scanned table in the large-read baseline.
    pub read_size: u64,
    /// Measurements per cell; every figure of a cell is the median of its repeats.
    pub repeat: usize,
}

impl Options {
    /// Checks every setting and fills in the default threads.
    fn validate(&mut self) -> anyhow::Result<()> {
        if self.ratios.is_empty() || self.ratios.contains(&0) {
            bail!("invalid ratios: each must be at least 1");
        }
        if self.windows.is_empty() || self.windows.iter().any(|&w| w < 4) {
            bail!("invalid windows: each must be at least 4 tuples");
        }
        if self.io_depths.is_empty() || self.io_depths.contains(&0) {
            bail!("invalid io-depths: each must be at least 1");
        }
        if self.indexes.is_empty() || self.indexes.contains(&IndexKind::Binary) {
            bail!("invalid indexes: give one or more of pgm, sampled-pgm, rs, rmi, btree");
        }
        if self.repeat == 0 {
            bail!("invalid repeat: at least 1 measurement per cell");
        }
        if self.read_size < 4096 || !self.read_size.is_multiple_of(4096) {
            bail!("invalid read-size: a positive multiple of 4 KiB");
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = self.threads.take().unwrap_or_else(|| {
            [1, 2, 4, 6, 8]
                .into_iter()
                .filter(|&t| t == 1 || t <= cores)
                .collect()
        });
        if threads.is_empty() || threads.contains(&0) {
            bail!("invalid threads: each must be at least 1");
        }
        self.threads = Some(threads);
        Ok(())
    }

    fn threads(&self) -> &[usize] {
        self.threads.as_deref().unwrap_or(&[1])
    }

    /// The indexes every key set's inner table gets, built and saved before its joins:
    /// each kind at each window it has a setting for, in order.
    fn saved_indexes(&self) -> impl Iterator<Item = (IndexKind, u64, AnyParams)> + '_ {
        self.indexes.iter().flat_map(move |&kind| {
            self.windows.iter().filter_map(move |&window| {
                Some((kind, window, AnyParams::for_width(kind, window)?))
            })
        })
    }

    /// Joins per ratio and repeat: merge and hash at every window and with large reads,
    /// INLJ through every saved index at every depth, each on every thread count.
    fn runs_per_ratio(&self) -> u64 {
        let inlj = self.saved_indexes().count() * self.io_depths.len();
        (self.threads().len() * (2 * (self.windows.len() + 1) + inlj)) as u64
    }

    /// The learned index kind (the first), and the baseline (the B+tree if measured).
    fn learned_and_baseline(&self) -> (IndexKind, IndexKind) {
        let learned = self.indexes[0];
        let baseline = self
            .indexes
            .iter()
            .copied()
            .find(|&k| k == IndexKind::BTree)
            .unwrap_or(learned);
        (learned, baseline)
    }
}

/// Runs the study; returns the report to print.
pub fn run(setup: &Setup, mut options: Options, progress: &dyn Progress) -> anyhow::Result<String> {
    options.validate()?;
    let options = &options;
    let (study, [mut csv_out, mut hdd_out, mut summary_out]) = setup.begin(
        "join-sorted",
        [
            "join_sorted.csv",
            "join_sorted_hdd_prediction.csv",
            "summary.md",
        ],
        progress,
    )?;
    let Study {
        sets,
        dirs,
        machine,
        profile,
        profile_path,
        started,
    } = &study;

    let mut measuring = Measuring::new(setup, options, sets, &dirs.data, profile_path);
    let (_, rows) = harness::measure(&mut measuring, "join-sorted", "joins", progress)?;
    drop(measuring);
    // Fig. 8 stand-in, per key set from its measured sizes.
    let hdd_rows: Vec<HddRow> = sets
        .iter()
        .flat_map(|set| hdd_prediction(options, &set.name(), &rows))
        .collect();

    let csv_rows: Vec<CsvRow<'_>> = rows
        .iter()
        .map(|r| CsvRow::new(r, machine, profile))
        .collect();
    write_rows(&mut csv_out.file, &csv_rows)?;
    write_rows(&mut hdd_out.file, &hdd_rows)?;
    let summary = summarize(options, sets, &rows, profile);
    let mut md = format!(
        "# lidx experiment join-sorted\n\nMachine: {machine}. Device: {}. {} key sets of {} keys; every join a fresh process, cold, {}.\n\n",
        profile.device,
        sets.len(),
        setup.n,
        setup.reads()
    );
    md.push_str(&summary);
    summary_out.file.write_all(md.as_bytes())?;
    let paths = [&csv_out, &hdd_out, &summary_out].map(|o| o.path.display().to_string());
    csv_out.finish()?;
    hdd_out.finish()?;
    summary_out.finish()?;
    let plots = plot_all(options, sets, &rows, &hdd_rows, &dirs.out)?;
    dirs.finish();
    Ok(format!(
        "{summary}\n\n{} joins in {:.0} s. Wrote {}, {}, {}, {} and {plots} plots in {}\n",
        rows.len(),
        started.elapsed().as_secs_f64(),
        paths[0],
        paths[1],
        paths[2],
        profile_path.display(),
        dirs.out.display()
    ))
}
