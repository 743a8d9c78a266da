//! What every experiment shares (paper 1, section 5.1): the key sets, where data and results
//! go, the storage profile, scratch files that never outlive the run, and the cold harness
//! that runs each join as a fresh `lidx join --json` process (its own page cache state,
//! inputs dropped from the cache and read with `O_DIRECT`) and reads back its
//! [`JoinRecord`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use lidx::data::{Distribution, GenParams, KeyFile, generate};
use lidx::files::{
    AtomicFile, ChildGuard, PendingGuard, ScratchDir, end_with_this_process, scratch_dir,
};
use lidx::index::file::KeysFingerprint;
use lidx::join::{JoinMethod, JoinRecord};
use lidx::storage::profile::{DiskBenchOptions, StorageProfile};
use lidx::storage::table::build_distinct_from_keys;
use lidx::storage::{TableHeader, ValueSource};

use crate::progress::Progress;

/// What every experiment takes: the key sets, where the data and the results go, how the
/// joins read, and the `lidx` executable each cold join runs in.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Keys per synthetic key set (paper 1 uses 200M).
    pub n: u64,
    /// Synthetic key sets; `None`: lognormal, usparse and normal unless `keys` are given.
    pub sets: Option<Vec<Distribution>>,
    /// SOSD key files to study (the paper's FB, Wiki, OSM, Books).
    pub keys: Vec<PathBuf>,
    /// Where the tables and indexes go (the device to study); `None`: `OUT/data`. Unless
    /// kept, they go into a scratch directory in it, and nothing else there is touched.
    pub dir: Option<PathBuf>,
    /// Where the CSV, plots and summary go; `None`: `results/EXPERIMENT`.
    pub out_dir: Option<PathBuf>,
    /// A storage profile from `lidx bench disk`; `None`: a short one is measured.
    pub profile: Option<PathBuf>,
    /// Read through the page cache (dropped first) instead of `O_DIRECT`.
    pub buffered: bool,
    /// Keep the generated tables and indexes.
    pub keep_data: bool,
    /// Seed of the generators and samples.
    pub seed: u64,
    /// The `lidx` executable every cold join runs as.
    pub exe: PathBuf,
}

/// Where an experiment's files go: the data as a [`DataDir`] says, the results in `out`.
pub struct Dirs {
    /// Tables and indexes.
    pub data: PathBuf,
    /// CSV, plots, summary, profile.
    pub out: PathBuf,
    /// The data directory asked for (`data` is inside it unless the data is kept): the
    /// device a storage profile is measured on, under its own name.
    device: PathBuf,
    /// The data directory and its scratch (taken by `finish`).
    data_dir: Mutex<Option<DataDir>>,
    /// The output directory, where created here (removed at the end only if empty).
    _out_made: MadeDirs,
}

impl Dirs {
    /// Removes the scratch directory with the data, and the data directory when the
    /// experiment created it and it is empty (as dropping does, on an error too).
    pub fn finish(&self) {
        drop(take(&self.data_dir));
    }
}

/// What `slot` holds, leaving `None`.
fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take()
}

/// An experiment's data directory (`--dir`, or `OUT/data`) and where in it the data goes.
///
/// The directory is created where missing, with its missing parents, and what was created
/// here is removed when dropped (or on SIGINT and SIGTERM) only if it is empty then: a
/// directory that existed before is never removed. Unless the data is kept, the data goes
/// into a [`ScratchDir`] inside it, so nothing the user has there is replaced or removed,
/// and the scratch directory goes with everything in it whichever way the experiment ends
/// (done, failed, interrupted by SIGINT or SIGTERM, or, after a SIGKILL, at the next lidx
/// run that writes into the data directory).
#[derive(Debug)]
pub struct DataDir {
    /// The directory asked for.
    dir: PathBuf,
    /// Where the data goes: the scratch directory, or the directory itself when kept.
    path: PathBuf,
    /// Dropped first (fields drop in order): it is inside the directories below.
    _scratch: Option<ScratchDir>,
    /// The directories created here.
    _made: MadeDirs,
}

impl DataDir {
    /// Creates `dir` and its missing parents, and a scratch directory in it unless `keep`.
    pub fn create(dir: &Path, keep: bool) -> anyhow::Result<DataDir> {
        let made = MadeDirs::create(dir)?;
        let scratch = match keep {
            true => None,
            false => Some(scratch_dir(dir)?),
        };
        Ok(DataDir {
            dir: dir.to_path_buf(),
            path: scratch
                .as_ref()
                .map_or_else(|| dir.to_path_buf(), |s| s.path().to_path_buf()),
            _scratch: scratch,
            _made: made,
        })
    }

    /// Where the data goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory asked for: the device a study measures, under its own name.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The directories an experiment created to reach one it writes in (its output or data
/// directory and the missing parents of it): each is removed when this drops, or on SIGINT
/// and SIGTERM, if it is empty then; one that existed before is never touched.
#[derive(Debug)]
pub struct MadeDirs(Vec<(PathBuf, PendingGuard)>);

impl MadeDirs {
    /// Creates `dir` with its missing parents.
    pub fn create(dir: &Path) -> anyhow::Result<MadeDirs> {
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at.filter(|d| !d.as_os_str().is_empty()) {
            if std::fs::symlink_metadata(d).is_ok() {
                break;
            }
            missing.push(d.to_path_buf());
            at = d.parent();
        }
        // Registered outermost first, so that the handler (newest first) removes the
        // deepest first; kept deepest first for the same order on drop.
        let mut made: Vec<(PathBuf, PendingGuard)> = missing
            .into_iter()
            .rev()
            .map(|d| {
                let guard = PendingGuard::empty_dir(&d);
                (d, guard)
            })
            .collect();
        made.reverse();
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create the directory", dir.display()))?;
        Ok(MadeDirs(made))
    }
}

impl Drop for MadeDirs {
    fn drop(&mut self) {
        for (dir, _) in &self.0 {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// What every experiment starts from.
pub struct Study {
    /// The key sets, in order.
    pub sets: Vec<KeySet>,
    /// Where data and results go.
    pub dirs: Dirs,
    /// The machine, as every CSV row names it.
    pub machine: String,
    /// The storage profile every join's cost model uses.
    pub profile: StorageProfile,
    /// Where it was saved (beside the results), for the joins to read.
    pub profile_path: PathBuf,
    /// When the measuring began.
    pub started: Instant,
}

/// A result file of an experiment: created before any measuring (an unwritable path fails
/// at once, not after minutes), published when the study is done.
pub struct Output {
    /// Where it appears.
    pub path: PathBuf,
    /// The unpublished file.
    pub file: AtomicFile,
}

impl Output {
    /// Publishes the file.
    pub fn finish(self) -> anyhow::Result<()> {
        Ok(self.file.finish()?)
    }
}

/// Creates the result files `names` in `dir`, unpublished.
fn create_outputs<const N: usize>(dir: &Path, names: [&str; N]) -> anyhow::Result<[Output; N]> {
    let mut files = Vec::with_capacity(N);
    for name in names {
        let path = dir.join(name);
        let file = AtomicFile::create(&path)?;
        files.push(Output { path, file });
    }
    files
        .try_into()
        .map_err(|_| anyhow::anyhow!("one output per name"))
}

impl Setup {
    /// Begins `experiment`: its key sets (a bad key file fails now), its directories, the
    /// result files named `outputs` in the output directory, and the storage profile.
    pub fn begin<const N: usize>(
        &self,
        experiment: &str,
        outputs: [&str; N],
        progress: &dyn Progress,
    ) -> anyhow::Result<(Study, [Output; N])> {
        let sets = self.key_sets()?;
        let dirs = self.dirs(experiment)?;
        let files = create_outputs(&dirs.out, outputs)?;
        let (profile, profile_path) = self.storage_profile(&dirs, progress)?;
        let study = Study {
            sets,
            dirs,
            machine: crate::machine::describe(),
            profile,
            profile_path,
            started: Instant::now(),
        };
        Ok((study, files))
    }

    /// Creates the output and data directories of `experiment`.
    fn dirs(&self, experiment: &str) -> anyhow::Result<Dirs> {
        let out = self
            .out_dir
            .clone()
            .unwrap_or_else(|| Path::new("results").join(experiment));
        let out_made = MadeDirs::create(&out)?;
        let data_dir = data_dir(self.dir.as_deref(), &out, self.keep_data)?;
        Ok(Dirs {
            data: data_dir.path().to_path_buf(),
            device: data_dir.dir().to_path_buf(),
            out,
            data_dir: Mutex::new(Some(data_dir)),
            _out_made: out_made,
        })
    }

    /// The key sets to study, in order (loaded one at a time by [`KeySet::load`]); key
    /// files are opened now, so a bad one fails before any measuring.
    fn key_sets(&self) -> anyhow::Result<Vec<KeySet>> {
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
            KeyFile::open(path)?;
            out.push(KeySet::File(path.clone()));
        }
        Ok(out)
    }

    /// How the joins read, in words, for summaries.
    pub fn reads(&self) -> &'static str {
        if self.buffered {
            "buffered (pages dropped)"
        } else {
            "O_DIRECT"
        }
    }

    /// The storage profile: loaded from [`profile`](Self::profile), or measured briefly in
    /// the data directory (256 MiB scratch file, 200 ms per point), or an assumed SSD where
    /// measuring fails (with a warning). Saved as `profile.json` in the output directory,
    /// where every join reads it.
    fn storage_profile(
        &self,
        dirs: &Dirs,
        progress: &dyn Progress,
    ) -> anyhow::Result<(StorageProfile, PathBuf)> {
        let profile = storage_profile(self.profile.as_deref(), &dirs.device, progress)?;
        let path = dirs.out.join("profile.json");
        profile.save(&path)?;
        Ok((profile, path))
    }

    /// Runs `join` as a fresh `lidx join ... --json --count-only` process, cold (and
    /// `O_DIRECT` unless buffered), and returns its figures.
    pub fn cold_join(&self, join: &ColdJoin<'_>) -> anyhow::Result<JoinRecord> {
        let mut args: Vec<OsString> = vec![
            "--outer".into(),
            join.outer.into(),
            "--inner".into(),
            join.inner.into(),
            "--method".into(),
            join.method.to_string().into(),
            "--threads".into(),
            join.threads.to_string().into(),
            "--read-size".into(),
            join.read_size.to_string().into(),
            "--cold".into(),
        ];
        // The cost model predicts the joins of tables; ALEX's has none.
        if join.method.modelled_as().is_some() {
            args.extend(["--profile".into(), join.profile.into()]);
        }
        if !self.buffered {
            args.push("--direct".into());
        }
        if let Some(index) = join.index {
            args.extend(["--index".into(), index.into()]);
        }
        if join.io_depth != 1 {
            args.extend(["--io-depth".into(), join.io_depth.to_string().into()]);
        }
        args.extend(["--json".into(), "--count-only".into()]);
        self.run_json("join", &args)
    }

    /// Runs `lidx SUBCOMMAND ARGS... --quiet` as a fresh process and parses the one JSON
    /// object it prints; a failed run is an error carrying the command line and the last
    /// line of its message. The child never outlives this process: it is registered for
    /// the SIGINT/SIGTERM handler ([`ChildGuard`]) and gets SIGTERM when this process dies,
    /// even by SIGKILL ([`end_with_this_process`]).
    pub fn run_json<T: serde::de::DeserializeOwned>(
        &self,
        subcommand: &str,
        args: &[OsString],
    ) -> anyhow::Result<T> {
        let mut command = Command::new(&self.exe);
        command
            .arg(subcommand)
            .args(args)
            .arg("--quiet")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The child ends with this process, even after a SIGKILL, and this process's
        // SIGINT/SIGTERM handler stops it (through the guard) before exiting.
        end_with_this_process(&mut command);
        let child = command
            .spawn()
            .with_context(|| format!("cannot run {}", self.exe.display()))?;
        let running = ChildGuard::new(child.id());
        let output = child
            .wait_with_output()
            .with_context(|| format!("cannot run {}", self.exe.display()))?;
        drop(running);
        let shown = || {
            args.iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        if !output.status.success() {
            let err = String::from_utf8_lossy(&output.stderr);
            let line = err.lines().last().unwrap_or("no message");
            bail!(
                "the measurement `lidx {subcommand} {}` failed: {line}",
                shown()
            );
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        serde_json::from_str(stdout.trim())
            .with_context(|| format!("`lidx {subcommand} {}` printed no JSON record", shown()))
    }
}

/// One join measured by [`Setup::cold_join`].
#[derive(Clone, Copy, Debug)]
pub struct ColdJoin<'a> {
    /// The outer table.
    pub outer: &'a Path,
    /// The inner table.
    pub inner: &'a Path,
    /// The method.
    pub method: JoinMethod,
    /// A saved index of the inner table (INLJ; the ALEX file for [`JoinMethod::InljAlex`]).
    pub index: Option<&'a Path>,
    /// Threads.
    pub threads: usize,
    /// Bytes per read of a scanned table.
    pub read_size: u64,
    /// Window reads in flight per INLJ thread.
    pub io_depth: usize,
    /// The storage profile the join's cost model uses.
    pub profile: &'a Path,
}

/// A key set of an experiment.
#[derive(Clone, Debug)]
pub enum KeySet {
    /// Generated keys.
    Synthetic {
        /// The distribution.
        dist: Distribution,
        /// How many keys.
        n: usize,
        /// The generator's seed.
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
                file.require_sorted("paper 1's tables are sorted by key; sort the key file first")?;
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

/// A key set's keys and its table of (key, row id), written into the data directory for
/// the set's cells, with the fingerprint saved indexes of the keys carry; the table, and
/// every file the cells add to `scratch`, is removed when this drops (unless kept).
pub struct SetTable {
    /// The key set's place among the study's sets.
    pub set: usize,
    /// The key set's name.
    pub name: String,
    /// Its sorted, distinct keys.
    pub keys: Vec<u64>,
    /// Its table.
    pub table: PathBuf,
    /// The keys' fingerprint.
    pub fingerprint: KeysFingerprint,
    /// The set's files.
    pub scratch: Scratch,
}

impl SetTable {
    /// Loads the `i`-th of `sets` and writes its table into `data` (kept after the run
    /// if `keep`). A study drops the previous set's `SetTable` first: a set of the same
    /// name writes the same paths.
    pub fn write(
        sets: &[KeySet],
        i: usize,
        (data, keep): (&Path, bool),
        progress: &dyn Progress,
    ) -> anyhow::Result<SetTable> {
        let set = sets
            .get(i)
            .ok_or_else(|| anyhow::anyhow!("no key set {i}"))?;
        let name = set.name();
        progress.message(&format!("{name}: data"));
        let keys = set.load()?;
        let mut scratch = Scratch::new(keep);
        let table = scratch.add(data.join(format!("{name}.tbl")));
        write_table(&keys, &table)?;
        Ok(SetTable {
            set: i,
            name,
            fingerprint: KeysFingerprint::of(&keys),
            keys,
            table,
            scratch,
        })
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

/// What every study has, whichever paper it reproduces, in the order a run goes through
/// them:
///
/// 1. **cells**: the settings it measures (a figure's swept value, a workload on a key
///    set), listed before any measuring so that progress can count them;
/// 2. **one cell run**: the cell's systems, methods or kinds measured in turn;
/// 3. **rows**: a typed row per measurement, written (as it is, or with the machine and
///    device added) by [`write_rows`](crate::csv_rows::write_rows) into a file of
///    [`Results`];
/// 4. **plots**: PNGs drawn from what was measured into the results directory;
/// 5. **findings**: the paper's numbered findings beside what this run measured
///    ([`Findings`]), each computed by one function of the study.
///
/// A study implements the first three here and [`measure`] runs them; its plots and
/// findings read back what it measured. Paper 1's studies begin with [`Setup::begin`]
/// (key sets, directories, storage profile), the others with [`Results::create`] and, when
/// they write data, [`data_dir`]. Each study's `run` returns the summary it also saves.
pub trait Experiment {
    /// One setting the study measures.
    type Cell;
    /// One measurement: a CSV row, or what one is made from.
    type Row;
    /// The cells, in the order they run.
    fn cells(&self) -> anyhow::Result<Vec<Self::Cell>>;
    /// How many steps progress counts in `cell` (one per method or kind measured).
    fn steps(&self, cell: &Self::Cell) -> u64;
    /// Measures `cell`, a step at a time; its rows.
    fn run_cell(
        &mut self,
        cell: &Self::Cell,
        progress: &dyn Progress,
    ) -> anyhow::Result<Vec<Self::Row>>;
}

/// What [`measure`] returns: the cells and all their rows, in order.
pub type Measured<E> = (Vec<<E as Experiment>::Cell>, Vec<<E as Experiment>::Row>);

/// Runs every cell of `study` in order, counting their steps on `progress` as `title`
/// (in `unit`); the cells and all their rows, in order.
pub fn measure<E: Experiment>(
    study: &mut E,
    title: &str,
    unit: &str,
    progress: &dyn Progress,
) -> anyhow::Result<Measured<E>> {
    let cells = study.cells()?;
    let total: u64 = cells.iter().map(|c| study.steps(c)).sum();
    progress.start(total, title, unit);
    let mut rows = Vec::new();
    for cell in &cells {
        rows.extend(study.run_cell(cell, progress)?);
    }
    progress.finish();
    Ok((cells, rows))
}

/// A study's result files (CSV, summary), created with the results directory before any
/// measuring, so that an unwritable path fails at once and not after minutes, and
/// published together when the study is done. The directory, where created here, is
/// removed at the end if it is still empty (on an error or Ctrl-C).
pub struct Results<const N: usize> {
    /// The results directory.
    pub dir: PathBuf,
    /// The files, in the order named.
    pub files: [Output; N],
    /// Dropped last: the files are inside it.
    _made: MadeDirs,
}

impl<const N: usize> Results<N> {
    /// Creates `out_dir` (`None`: `results/EXPERIMENT`) and the files `names` in it.
    pub fn create(
        out_dir: Option<&Path>,
        experiment: &str,
        names: [&str; N],
    ) -> anyhow::Result<Results<N>> {
        let dir = out_dir.map_or_else(|| Path::new("results").join(experiment), Path::to_path_buf);
        let made = MadeDirs::create(&dir)?;
        let files = create_outputs(&dir, names)?;
        Ok(Results {
            dir,
            files,
            _made: made,
        })
    }

    /// The file named `i`-th, to write in.
    pub fn file(&mut self, i: usize) -> &mut AtomicFile {
        &mut self.files[i].file
    }

    /// Where the `i`-th file appears.
    pub fn path(&self, i: usize) -> &Path {
        &self.files[i].path
    }

    /// Publishes the files; the paths they appear at, in order, for the study's last line.
    pub fn publish(self) -> anyhow::Result<(PathBuf, [PathBuf; N])> {
        let Results { dir, files, _made } = self;
        let mut paths = Vec::with_capacity(N);
        for output in files {
            paths.push(output.path.clone());
            output.finish()?;
        }
        let paths: [PathBuf; N] = paths
            .try_into()
            .map_err(|_| anyhow::anyhow!("one path per output"))?;
        Ok((dir, paths))
    }
}

impl<const N: usize> Results<N> {
    /// For a study whose files are its CSVs, then its summary: writes `summary` into the
    /// last, publishes them all, and returns the report to print (the summary, then where
    /// the files and plots are).
    pub fn finish(mut self, summary: &str) -> anyhow::Result<String> {
        let Some(last) = N.checked_sub(1) else {
            anyhow::bail!("a study's results end with its summary");
        };
        self.file(last).write_all(summary.as_bytes())?;
        let (dir, paths) = self.publish()?;
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        Ok(format!(
            "{summary}\nWrote {} and the plots in {}.\n",
            names.join(", "),
            dir.display()
        ))
    }
}

/// Where a study writes: the data it generates and its results, and whether the data
/// outlives the run.
#[derive(Clone, Debug, Default)]
pub struct Places {
    /// Where the generated data goes, in a scratch directory inside it unless kept;
    /// `None`: `OUT/data`.
    pub dir: Option<PathBuf>,
    /// Where the CSV, plots and summary go; `None`: `results/EXPERIMENT`.
    pub out_dir: Option<PathBuf>,
    /// Keep the generated data: written in `dir` itself, not in a scratch directory.
    pub keep_data: bool,
}

impl Places {
    /// Creates the result files `names` of `experiment` ([`Results::create`]), then the
    /// data directory ([`data_dir`]), in that order, so that an unwritable path fails
    /// before any measuring.
    pub fn create<const N: usize>(
        &self,
        experiment: &str,
        names: [&str; N],
    ) -> anyhow::Result<(Results<N>, DataDir)> {
        let results = Results::create(self.out_dir.as_deref(), experiment, names)?;
        let data = data_dir(self.dir.as_deref(), &results.dir, self.keep_data)?;
        Ok((results, data))
    }
}

/// A study's data directory: `dir` (`--dir`) or `OUT/data`, with a scratch directory in it
/// unless `keep` (see [`DataDir`]).
pub fn data_dir(dir: Option<&Path>, out: &Path, keep: bool) -> anyhow::Result<DataDir> {
    let parent = dir.map_or_else(|| out.join("data"), Path::to_path_buf);
    DataDir::create(&parent, keep)
}

/// One of a paper's numbered findings beside what this run measured.
#[derive(Clone, Debug, Default)]
pub struct Finding {
    /// What the paper reports.
    pub paper: String,
    /// What this run shows.
    pub here: String,
    /// Whether this run agrees (`None` where the study does not judge the finding).
    pub verdict: Option<Verdict>,
    /// The counts that explain the verdict, a disagreement above all.
    pub why: String,
}

/// Whether a run agrees with a paper's finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// In every cell the finding covers.
    Agree,
    /// In some.
    Partly,
    /// In none.
    Disagree,
}

impl Verdict {
    /// The verdict of a finding that held in `held` of `cells` cells (none counts as a
    /// disagreement).
    pub fn of(held: usize, cells: usize) -> Verdict {
        match held {
            0 => Verdict::Disagree,
            n if n >= cells => Verdict::Agree,
            _ => Verdict::Partly,
        }
    }

    /// `agree`, `partly` or `disagree`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Partly => "partly",
            Verdict::Disagree => "disagree",
        }
    }
}

/// A study's findings table: the paper's beside this run's, in the paper's order. Each
/// numbered finding is one function of its study returning `Option<Finding>` (`None`
/// where the run lacks what the finding needs).
#[derive(Clone, Debug)]
pub struct Findings {
    /// The table's two column names (`paper 3`, `here`).
    columns: [String; 2],
    rows: Vec<Finding>,
}

impl Findings {
    /// An empty table with the column names `paper` and `here`.
    pub fn new(paper: &str, here: &str) -> Findings {
        Findings {
            columns: [paper.to_string(), here.to_string()],
            rows: Vec::new(),
        }
    }

    /// Adds a finding, if there is one.
    pub fn push(&mut self, finding: Option<Finding>) {
        self.rows.extend(finding);
    }

    /// The findings so far.
    pub fn rows(&self) -> &[Finding] {
        &self.rows
    }

    /// The findings as a Markdown table: with a verdict and its explanation where any
    /// finding is judged.
    pub fn table(&self) -> String {
        let judged = self.rows.iter().any(|f| f.verdict.is_some());
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|f| {
                let mut row = vec![f.paper.clone(), f.here.clone()];
                if judged {
                    row.push(f.verdict.map_or("-", Verdict::name).to_string());
                    row.push(if f.why.is_empty() {
                        "-".into()
                    } else {
                        f.why.clone()
                    });
                }
                row
            })
            .collect();
        let mut columns = self.columns.to_vec();
        if judged {
            columns.extend(["verdict".to_string(), "what explains it".to_string()]);
        }
        crate::text::table(&columns, &rows)
    }

    /// The findings as a Markdown list, the paper's line then this run's.
    pub fn list(&self) -> String {
        self.rows
            .iter()
            .map(|f| format!("- {}\n- {}\n", f.paper, f.here))
            .collect()
    }
}

/// The storage profile at `path` (saved by `lidx bench disk`), or one measured briefly on
/// `dir` (256 MiB scratch file, 200 ms per point), or an assumed SSD where measuring fails
/// (with a warning).
pub fn storage_profile(
    path: Option<&Path>,
    dir: &Path,
    progress: &dyn Progress,
) -> anyhow::Result<StorageProfile> {
    Ok(match path {
        Some(path) => StorageProfile::load(path)?,
        None => {
            let opts = DiskBenchOptions {
                dir: dir.to_path_buf(),
                file_size: 256 << 20,
                time_per_point: Duration::from_millis(200),
                ..DiskBenchOptions::default()
            };
            match crate::disk::measure(&opts, progress) {
                Ok(p) => p,
                Err(e) => {
                    progress.warn(&format!(
                        "cannot measure {} ({e:#}); assuming an SSD",
                        dir.display()
                    ));
                    lidx::join::cost::assumed_ssd()
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("list")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_data_dir_removes_what_it_made_and_only_that() {
        let root = tempfile::tempdir().expect("a temporary directory");
        // Missing parents are made, and go when empty at the end.
        let data = DataDir::create(&root.path().join("a/b/c"), false).expect("create");
        std::fs::write(data.path().join("t.tbl"), b"t").expect("write");
        assert!(data.path().starts_with(root.path().join("a/b/c")));
        drop(data);
        assert!(names(root.path()).is_empty());
        // A directory that existed stays, with the user's files; kept data stays too.
        let mine = root.path().join("mine");
        std::fs::create_dir(&mine).expect("mkdir");
        std::fs::write(mine.join("notes.txt"), b"n").expect("write");
        let data = DataDir::create(&mine, false).expect("create");
        drop(data);
        assert_eq!(names(&mine), ["notes.txt"]);
        let kept = DataDir::create(&root.path().join("kept/x"), true).expect("create");
        assert_eq!(kept.path(), root.path().join("kept/x"));
        std::fs::write(kept.path().join("t.tbl"), b"t").expect("write");
        drop(kept);
        assert_eq!(names(&root.path().join("kept/x")), ["t.tbl"]);
    }
}
