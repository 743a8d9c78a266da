//! `lidx demo`: a short tour on small generated data, one section per capability, each a
//! few library calls, its lines handed to the caller as they are made. Every capability
//! adds itself here.
//!
//! The sections by file, one function each: `files` (key sets, tables, cold window reads,
//! the exchange with paper 1's code), `indexes`, `joins` (sorted and unsorted tables),
//! `kv` (key-value files, layers tuned to the storage), `updatable`, `lsm` (feature
//! `rocksdb`: joins over LSM-trees) and `disk` (the disk under the files).

use std::io;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use lidx::storage::Table;

use crate::progress::Progress;

/// Passes one line, formatted as by `format!`, to a section's `say`; its error ends the
/// section.
macro_rules! say {
    ($say:expr, $($arg:tt)*) => {
        ($say)(&format!($($arg)*))?
    };
}

mod disk;
mod files;
mod indexes;
mod joins;
mod kv;
#[cfg(feature = "rocksdb")]
mod lsm;
mod updatable;

/// Where the demo's lines go: one line at a time, without its newline.
type Say<'a> = dyn FnMut(&str) -> io::Result<()> + 'a;

/// What the demo runs on.
#[derive(Clone, Debug)]
pub struct Options {
    /// Keys per generated key set.
    pub n: usize,
    /// The directory the demo's files are written to and left in (created if missing).
    /// `None`: a hidden `.lidx-tmp-…` scratch directory in the system's temporary
    /// directory ([`lidx::files::scratch_dir`]), removed at the end, by lidx's signal
    /// handler on SIGINT or SIGTERM, and after a SIGKILL by the next lidx writing there.
    pub dir: Option<PathBuf>,
}

/// Runs the demo: every section in order, each line of the report passed to `say`
/// (without its newline) as soon as it is made, so that sections appear one by one; long
/// steps are reported to `progress`.
///
/// A section that cannot run here says so and the demo goes on (the disk profile, where
/// the file system refuses `O_DIRECT`); any other failure, or an error from `say` (such as
/// a closed pipe), ends the demo with that error.
pub fn run(
    options: &Options,
    say: &mut dyn FnMut(&str) -> io::Result<()>,
    progress: &dyn Progress,
) -> anyhow::Result<()> {
    let scratch;
    let dir: &Path = match &options.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .with_context(|| format!("{}: cannot create the directory", d.display()))?;
            d
        }
        None => {
            // Named as lidx's temporary files: removed at the end, by the signal handler on
            // SIGINT or SIGTERM, and after a SIGKILL by the next lidx writing there.
            scratch = lidx::files::scratch_dir(&std::env::temp_dir())?;
            scratch.path()
        }
    };
    say!(
        say,
        "lidx demo: learned indexes on data that lives on disk. Files in {}",
        dir.display()
    );
    let key_files = files::key_sets(say, dir, options.n)?;
    let tables = files::tables(say, progress, dir, &key_files)?;
    files::cold_window_reads(say, &tables)?;
    files::paper1_round_trip(say, dir, &tables[0])?;
    let lognormal = Table::open(&tables[1])?;
    let keys = lognormal.read_keys()?;
    indexes::indexes(say, &lognormal, &keys)?;
    joins::joins(say, dir, &lognormal, &keys)?;
    joins::unsorted(say, dir, &tables[1])?;
    kv::key_value(say, dir)?;
    kv::tuned_layers(say, dir)?;
    updatable::updatable_indexes(say)?;
    #[cfg(feature = "rocksdb")]
    lsm::lsm_joins(say, dir)?;
    disk::disk_profile(say, progress, dir)?;
    heading(
        say,
        "Next: lidx gen --help, lidx table --help, lidx index --help, lidx kv --help, lidx experiment --help, lidx bench disk --help.",
    )?;
    Ok(())
}

/// A section's heading: an empty line, then `title`.
fn heading(say: &mut Say<'_>, title: &str) -> io::Result<()> {
    say("")?;
    say(title)
}

/// Passes a report whose lines end in newlines to `say`, line by line.
fn text(say: &mut Say<'_>, report: &str) -> io::Result<()> {
    report.lines().try_for_each(say)
}
