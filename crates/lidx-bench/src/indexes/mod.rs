//! `lidx experiment indexes`: paper 1's index study (section 5.2). For every index kind
//! and key set: the in-memory size, the build time (keys in memory, as the paper measures),
//! and the time of a cold INLJ self-join through the saved index in a fresh process
//! (Fig. 5), ALEX on disk among them (its data nodes, holding the tuples, in a file read a
//! page at a time; its inner nodes in memory); and the sizes of PGM and sampled PGM as
//! their window grows (Table 2).
//!
//! The study runs as the harness's cells: per key set, each index of Fig. 5 is a cell
//! (built, saved and self-joined), then Table 2's sizes one more; the set's table is
//! written by its first cell and removed, with its indexes, after its last.

mod measure;
mod plots;
mod rows;
mod summary;
#[cfg(test)]
mod tests;

use anyhow::bail;
use lidx::index::IndexKind;

use crate::csv_rows::{Fixed, write_rows};
use crate::harness::{self, Setup, Study};
use crate::progress::Progress;
use measure::{Measured, Measuring};
use plots::plot;
use rows::CsvRow;
use summary::summarize;

/// The window every kind of Fig. 5 is built for: one block of 256 tuples.
pub(super) const FIG5_WINDOW: u64 = 256;

/// An index of Fig. 5: a kind of the index family, or ALEX on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fig5Index {
    /// A kind of the index family, at its 256-position setting (or tuned).
    Family(IndexKind),
    /// ALEX on disk (`lidx index build --kind alex`), at its default densities.
    Alex,
}

impl Fig5Index {
    /// The name on the command line and in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Fig5Index::Family(kind) => kind.name(),
            Fig5Index::Alex => "alex",
        }
    }
}

impl std::fmt::Display for Fig5Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Fig5Index {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "alex" {
            return Ok(Fig5Index::Alex);
        }
        s.parse()
            .map(Fig5Index::Family)
            .map_err(|e: lidx::Error| format!("{e}, or alex"))
    }
}

/// The study's own settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Indexes for Fig. 5, each family kind built for windows of at most 256 positions.
    pub indexes: Vec<Fig5Index>,
    /// Windows for Table 2 (PGM and sampled PGM sizes).
    pub windows: Vec<u64>,
    /// Tune RadixSpline and RMI on each key set (the fastest lookups within 1% of the
    /// data's size) instead of their 256-position settings.
    pub tune: bool,
}

/// Runs the study; returns the report to print.
pub fn run(setup: &Setup, options: &Options, progress: &dyn Progress) -> anyhow::Result<String> {
    if options.indexes.is_empty() {
        bail!("invalid indexes: give one or more index kinds");
    }
    if options.windows.iter().any(|&w| w < 4) {
        bail!("invalid windows: each must be at least 4 tuples");
    }
    let (study, [mut csv_out, mut sizes_out, mut summary_out]) = setup.begin(
        "indexes",
        ["indexes.csv", "table2_sizes.csv", "summary.md"],
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

    let mut measuring = Measuring {
        setup,
        o: options,
        sets,
        data: &dirs.data,
        machine,
        profile: profile_path,
        set: None,
    };
    let (_, measured) = harness::measure(&mut measuring, "indexes", "steps", progress)?;
    drop(measuring);
    let mut rows = Vec::new();
    let mut sizes = Vec::new();
    for m in measured {
        match m {
            Measured::Fig5(row) => rows.push(*row),
            Measured::Table2(size) => sizes.push(size),
        }
    }

    let csv_rows: Vec<CsvRow<'_>> = rows
        .iter()
        .map(|r| CsvRow {
            experiment: "indexes",
            key_set: &r.set,
            n: r.join.inner_tuples,
            index: r.kind.name(),
            params: &r.params,
            max_window: r.max_window,
            index_bytes: r.bytes,
            inner_file_bytes: r.inner_file_bytes,
            build_s: Fixed(r.build_s),
            self_join_s: Fixed(r.join.join_s),
            direct: r.join.direct,
            output_tuples: r.join.output_tuples,
            inner_blocks: r.join.inner_blocks,
            inner_bytes: r.join.inner_bytes,
            inner_reads: r.join.inner_reads,
            outer_reads: r.join.outer_reads,
            model_s: Fixed(r.join.model_s),
            machine,
            device: &profile.device,
        })
        .collect();
    write_rows(&mut csv_out.file, &csv_rows)?;
    write_rows(&mut sizes_out.file, &sizes)?;

    let summary = summarize(options, &rows, &sizes);
    let md = format!(
        "# lidx experiment indexes\n\nMachine: {machine}. Device: {}. {} keys per set; each self-join a fresh process, cold, {}.\n\n{summary}",
        profile.device,
        setup.n,
        setup.reads()
    );
    summary_out.file.write_all(md.as_bytes())?;
    let paths = [&csv_out, &sizes_out, &summary_out].map(|o| o.path.display().to_string());
    csv_out.finish()?;
    sizes_out.finish()?;
    summary_out.finish()?;
    plot(options, &rows, &sizes, &dirs.out)?;
    dirs.finish();
    Ok(format!(
        "{summary}\n\n{} indexes in {:.0} s. Wrote {}, {}, {} and 3 plots in {}\n",
        rows.len() + sizes.len(),
        started.elapsed().as_secs_f64(),
        paths[0],
        paths[1],
        paths[2],
        dirs.out.display()
    ))
}
