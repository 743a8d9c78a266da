//! `lidx experiment`: paper 1's studies, one command each, under paper 1's protocol
//! (section 5.1): indexes are built and saved first; every join is a fresh `lidx join`
//! process that loads its index, drops the inputs' pages and reads them with `O_DIRECT`.
//! Each experiment prints a summary table and writes CSV (one row per measurement, with
//! every parameter, the I/O counted, the cost model's estimate, the machine and the storage
//! profile), PNG plots in the shape of the paper's figures, and `summary.md`.

pub mod indexes;
pub mod join_sorted;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::Duration;

use anyhow::{Context as _, bail};
use lidx::data::{Distribution, GenParams, KeyFile, first_unsorted, generate};
use lidx::files::PendingGuard;
use lidx::storage::profile::{DiskBenchOptions, StorageProfile};
use lidx::storage::table::build_distinct_from_keys;
use lidx::storage::{TableHeader, ValueSource};

use super::join::JoinRecord;
use crate::progress::Context;
use crate::units::parse_count;

/// Paper 1's experiments.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Paper 1's joins of sorted tables (sections 5.3, 5.5, 5.6): INLJ through sampled PGM
    /// and a B+tree, sort-merge and hash, at size ratios 1 to 1000, over threads, window
    /// sizes and I/O depths (Figs. 6, 10, 11; Fig. 8 predicted by the cost model).
    #[command(
        after_help = "Examples:\n  lidx experiment join-sorted\n  lidx experiment join-sorted --n 50M --dir /mnt/nvme/lidx --threads 1,2,4,8\n  lidx experiment join-sorted --keys fb_200M_uint64 --keys books_200M_uint64"
    )]
    JoinSorted(join_sorted::Args),
    /// Paper 1's index study (section 5.2): size, build time and a cold INLJ self-join for
    /// every index kind (Fig. 5), and sampled PGM's size against its window (Table 2).
    #[command(
        after_help = "Examples:\n  lidx experiment indexes\n  lidx experiment indexes --n 20M --sets lognormal,usparse"
    )]
    Indexes(indexes::Args),
}

pub fn run(ctx: &Context, command: Command) -> anyhow::Result<()> {
    match command {
        Command::JoinSorted(args) => join_sorted::run(ctx, args),
        Command::Indexes(args) => indexes::run(ctx, args),
    }
}

/// What every experiment takes: the key sets, where the data and the results go, the device.
#[derive(clap::Args)]
pub struct Common {
    /// Keys per synthetic key set (paper 1 uses 200M).
    #[arg(long, value_parser = parse_count, default_value = "4M")]
    n: u64,
    /// Synthetic key sets, comma-separated (udense, usparse, normal, lognormal, clustered,
    /// heavytail) [default: lognormal,usparse,normal, unless --keys is given].
    #[arg(long, value_delimiter = ',')]
    sets: Option<Vec<Distribution>>,
    /// SOSD key files to study (the paper's FB, Wiki, OSM, Books); repeat for several.
    #[arg(long = "keys", value_name = "FILE.keys")]
    keys: Vec<PathBuf>,
    /// Directory for the tables and indexes: put it on the device to study
    /// [default: OUT_DIR/data].
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
    /// Directory for the CSV, plots and summary [default: results/EXPERIMENT].
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Storage profile from `lidx bench disk`; without it a short one is measured on --dir.
    #[arg(long, value_name = "PROFILE.json")]
    profile: Option<PathBuf>,
    /// Read the inputs through the page cache (dropped first) instead of O_DIRECT, for file
    /// systems without O_DIRECT.
    #[arg(long)]
    buffered: bool,
    /// Keep the generated tables and indexes in --dir.
    #[arg(long)]
    keep_data: bool,
    /// Seed of the generators and samples.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// Where an experiment's files go.
pub struct Dirs {
    /// Tables and indexes.
    pub data: PathBuf,
    /// CSV, plots, summary, profile.
    pub out: PathBuf,
}

impl Common {
    /// Creates the output and data directories.
    pub fn dirs(&self, experiment: &str) -> anyhow::Result<Dirs> {
        let out = self
            .out_dir
            .clone()
            .unwrap_or_else(|| Path::new("results").join(experiment));
        let data = self.dir.clone().unwrap_or_else(|| out.join("data"));
        for dir in [&out, &data] {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create the directory", dir.display()))?;
        }
        Ok(Dirs { data, out })
    }

    /// The key sets to study, in order (loaded one at a time by [`KeySet::load`]).
    pub fn key_sets(&self) -> anyhow::Result<Vec<KeySet>> {
        if self.n == 0 {
            bail!("invalid n: a key set needs at least 1 key");
        }
        let n = usize::try_from(self.n).context("invalid n: too large for this machine")?;
        let sets = match (&self.sets, self.keys.is_empty()) {
            (Some(sets), _) => sets.clone(),
            (None, true) => vec![
                Distribution::Lognormal,
                Distribution::Usparse,
                Distribution::Normal,
            ],
            (None, false) => Vec::new(),
        };
        let mut out: Vec<KeySet> = sets
            .into_iter()
            .map(|dist| KeySet::Synthetic {
                dist,
                n,
                seed: self.seed,
            })
            .collect();
        for path in &self.keys {
            // Opened now, so a bad file fails before any measuring.
            KeyFile::open(path)?;
            out.push(KeySet::File(path.clone()));
        }
        Ok(out)
    }

    /// `lidx join` flags for the read mode: O_DIRECT unless --buffered, cold either way.
    pub fn read_flags(&self) -> Vec<&'static str> {
        let mut flags = vec!["--cold"];
        if !self.buffered {
            flags.push("--direct");
        }
        flags
    }

    /// The storage profile: loaded from --profile, or measured briefly on `dirs.data`
    /// (256 MiB scratch file, 200 ms per point), or an assumed SSD where measuring fails.
    /// Saved as `profile.json` in the output directory, where every join reads it.
    pub fn profile(&self, ctx: &Context, dirs: &Dirs) -> anyhow::Result<(StorageProfile, PathBuf)> {
        let profile = match &self.profile {
            Some(path) => StorageProfile::load(path)?,
            None => {
                let opts = DiskBenchOptions {
                    dir: dirs.data.clone(),
                    file_size: 256 << 20,
                    time_per_point: Duration::from_millis(200),
                    ..DiskBenchOptions::default()
                };
                match super::bench::measure(ctx, &opts) {
                    Ok(p) => p,
                    Err(e) => {
                        eprintln!(
                            "lidx: warning: cannot measure {} ({e:#}); the cost model assumes an SSD",
                            dirs.data.display()
                        );
                        lidx::join::cost::assumed_ssd()
                    }
                }
            }
        };
        let path = dirs.out.join("profile.json");
        profile.save(&path)?;
        Ok((profile, path))
    }
}

/// A key set of an experiment.
pub enum KeySet {
    /// Generated keys.
    Synthetic {
        dist: Distribution,
        n: usize,
        seed: u64,
    },
    /// A SOSD key file.
    File(PathBuf),
}

impl KeySet {
    /// The name in file names, CSV rows and plots.
    pub fn name(&self) -> String {
        match self {
            KeySet::Synthetic { dist, .. } => dist.name().to_string(),
            KeySet::File(path) => path
                .file_name()
                .map_or("keys".to_string(), |s| s.to_string_lossy().into_owned()),
        }
    }

    /// The sorted keys, duplicates removed (paper 1's tables hold distinct keys).
    pub fn load(&self) -> anyhow::Result<Vec<u64>> {
        let mut keys = match self {
            KeySet::Synthetic { dist, n, seed } => generate(&GenParams::new(*dist, *n, *seed))?,
            KeySet::File(path) => {
                let file = KeyFile::open(path)?;
                if let Some(i) = first_unsorted(file.keys()) {
                    bail!(
                        "{}: the keys are not sorted (key {i} is smaller than key {})",
                        path.display(),
                        i - 1
                    );
                }
                file.keys().to_vec()
            }
        };
        keys.dedup();
        if keys.is_empty() {
            bail!("{}: the key set is empty", self.name());
        }
        Ok(keys)
    }
}

/// Writes `keys` (sorted, distinct) as a table of (key, row id) at `path`.
pub fn write_table(keys: &[u64], path: &Path) -> anyhow::Result<TableHeader> {
    Ok(build_distinct_from_keys(
        keys,
        ValueSource::RowId,
        path,
        |_| {},
    )?)
}

/// Runs one measurement as a fresh `lidx join ... --json` process (paper 1's protocol) and
/// returns its figures.
pub fn measure_join(args: &[OsString]) -> anyhow::Result<JoinRecord> {
    let exe = std::env::current_exe().context("cannot find the lidx executable")?;
    let output = Process::new(&exe)
        .arg("join")
        .args(args)
        .args(["--json", "--count-only", "--quiet"])
        .output()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    let shown = || {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        let line = err.lines().last().unwrap_or("no message");
        bail!("the measurement `lidx join {}` failed: {line}", shown());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim())
        .with_context(|| format!("`lidx join {}` printed no JSON record", shown()))
}

/// The median of `values` (0 for none).
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// Generated tables and indexes, removed when dropped (on success or error) or on Ctrl-C,
/// unless kept.
pub struct Scratch {
    paths: Vec<(PathBuf, Option<PendingGuard>)>,
    keep: bool,
}

impl Scratch {
    /// Files to remove when dropped, unless `keep`.
    pub fn new(keep: bool) -> Self {
        Self {
            paths: Vec::new(),
            keep,
        }
    }

    /// Registers `path` and returns it.
    pub fn add(&mut self, path: PathBuf) -> PathBuf {
        let guard = (!self.keep).then(|| PendingGuard::new(&path));
        self.paths.push((path.clone(), guard));
        path
    }

    /// Removes the files registered so far (unless kept).
    pub fn clear(&mut self) {
        for (path, guard) in self.paths.drain(..) {
            if guard.is_some() {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Dirs {
    /// Removes the data directory when the experiment made it and it is empty.
    pub fn finish(&self, common: &Common) {
        if common.dir.is_none() && !common.keep_data {
            let _ = std::fs::remove_dir(&self.data);
        }
    }
}
