//! A join database: R and S in LSM-trees of their own, keyed by primary key, and the
//! secondary indexes built on them, each in a directory under one root with a manifest
//! (`lidx-lsm.json`: the settings, the workload, the batches applied, the indexes, and the
//! key files the attributes come from, if they do).
//!
//! A database changes all at once or not at all: a killed load leaves nothing, a killed
//! batch of updates is rolled back and a killed index build removed at the next open (see
//! [`super::recovery`]).
//!
//! Every change to a data table goes to every index of that table, as paper 5's
//! consistency strategies say (section 3.2): a synchronous index first looks the row's old
//! attribute up in the data table and removes its entry (Algorithm 1), a validation index
//! only takes the new entry and leaves stale ones for the joins to check (Algorithm 2).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::config::{LsmConfig, TreeKind};
use super::data::{Batch, Change, Workload};
use super::keys::{AttrFiles, GivenAttrs};
use super::method::{IndexSpec, Maintenance, Side};
use super::recovery::{self, DbLock, Pending};
use super::rows::{attr_of, encode_key, row_value};
use super::tree::{SecondaryIndex, Tree};
use crate::{Error, Result};

/// The manifest's file name.
pub const MANIFEST: &str = "lidx-lsm.json";
/// The most updates one call of [`LsmDb::update`] applies (the most rows a batch has).
pub const MAX_UPDATES: u64 = super::rows::KEY_LIMIT / 4;

/// The largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The manifest's format tag and version.
///
/// - 1: the settings, the workload, the batches applied and the indexes; later, without a
///   bump, `attributes` (key files, `null` where drawn), `config.join_memory` and
///   `pending`, each optional on read.
/// - 2: the same fields. Bumped because a reader of version 1 that predates `pending` or
///   `attributes` ignores them (unknown fields pass), so it would open a database in the
///   middle of a change without undoing it, or draw attributes a key file should give.
///
/// - 3: `config` gains the settings of the paper's code: `index_write_buffer`,
///   `data_level_base`, `data_bloom_bits`, `l0_trigger` and `target_file_size`, and
///   `write_buffer` and `bloom_bits` are the data trees' and the index trees' alone. Bumped because a reader of version 2 would give every tree the
///   data trees' write buffer.
///
/// A manifest of version 1 or 2 reads with the settings it was written with (every tree
/// with its one write buffer and Bloom filter, the first level that times the size ratio,
/// RocksDB's level-0 trigger of 4 and its 64 MiB files; but the levels are now sized
/// statically, where RocksDB 8.10 sized them from the last), and is written back as
/// version 3 at the next change.
const FORMAT: &str = "lidx-lsm joins";
const VERSION: u32 = 3;
/// The oldest manifest version read.
const OLDEST_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Manifest {
    format: String,
    version: u32,
    config: LsmConfig,
    workload: Workload,
    /// Batches of the workload applied (the load is batch 0).
    batches: u64,
    indexes: Vec<IndexSpec>,
    /// The key files the join attributes come from, where they are not drawn.
    #[serde(default)]
    attributes: Option<AttrFiles>,
    /// A change begun and not finished; the next open undoes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pending: Option<Pending>,
}

impl Manifest {
    /// The directory names of every tree: R, S, then each index.
    fn trees(&self) -> Vec<String> {
        let mut names = vec!["r".to_string(), "s".to_string()];
        names.extend(self.indexes.iter().map(IndexSpec::dir_name));
        names
    }
}

/// Time spent applying changes: writing the data tables, and keeping the indexes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ApplyTimes {
    /// Seconds writing the data tables.
    pub data_s: f64,
    /// Seconds keeping the indexes: their writes and, for synchronous ones, the lookups of
    /// old attributes, then waiting for their flushes and compactions.
    pub index_s: f64,
}

/// What a batch of updates does besides inserting new rows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UpdateMix {
    /// The share of updates that give a live row another attribute.
    pub changes: f64,
    /// The share of updates that remove a live row.
    pub deletes: f64,
}

impl UpdateMix {
    fn check(&self) -> lidx::Result<()> {
        if self.changes < 0.0 || self.deletes < 0.0 || self.changes + self.deletes > 1.0 {
            return Err(lidx::Error::param(
                "update mix",
                format!(
                    "changes {} and deletes {} must be shares adding up to at most 1",
                    self.changes, self.deletes
                ),
            ));
        }
        Ok(())
    }
}

/// An open join database, locked for this process while it lives.
pub struct LsmDb {
    dir: PathBuf,
    manifest: Manifest,
    pub(crate) r: Tree,
    pub(crate) s: Tree,
    pub(crate) indexes: Vec<SecondaryIndex>,
    /// What the open undid: a change an earlier process began and did not finish.
    recovered: Option<Pending>,
    /// Dropped last, once every tree is closed.
    _lock: DbLock,
}

impl LsmDb {
    /// Creates a database at `dir` (which must not exist, or be an empty directory) and
    /// loads batch 0 of `workload` into R and S. The database is made in a scratch
    /// directory beside `dir` and renamed into place when loaded: if this fails or the
    /// process is killed, nothing is left at `dir`.
    pub fn create(
        dir: &Path,
        config: LsmConfig,
        workload: Workload,
    ) -> Result<(LsmDb, ApplyTimes)> {
        Self::create_then(dir, config, workload, &[], LsmDb::apply_next_batch)
    }

    /// Creates a database at `dir` as [`create`](Self::create) does, its join attributes
    /// read from the key files `files` (see [`super::keys`]) in this batch and every later
    /// one.
    pub fn create_with_keys(
        dir: &Path,
        config: LsmConfig,
        workload: Workload,
        files: AttrFiles,
    ) -> Result<(LsmDb, ApplyTimes)> {
        Self::create_then(dir, config, workload, &[], |db| {
            db.use_key_files(files)?;
            db.apply_next_batch()
        })
    }

    /// Creates a database at `dir` as [`create`](Self::create) does, with the secondary
    /// indexes `indexes` and no rows: the caller writes them, by
    /// [`apply_next_batch`](Self::apply_next_batch) or [`apply`](Self::apply), through the
    /// indexes (the paper's ingestion: every row written through its indexes, their time
    /// in [`ApplyTimes::index_s`]).
    pub fn create_empty(
        dir: &Path,
        config: LsmConfig,
        workload: Workload,
        indexes: &[IndexSpec],
    ) -> Result<LsmDb> {
        Ok(Self::create_then(dir, config, workload, indexes, |_| Ok(()))?.0)
    }

    /// Makes a database in a scratch directory beside `dir`, runs `fill` on it, and moves
    /// it to `dir` (which must be new or an empty directory); returns it open at `dir`,
    /// with what `fill` returned. On failure the scratch directory is removed and `dir`
    /// is as it was.
    fn create_then<T>(
        dir: &Path,
        config: LsmConfig,
        workload: Workload,
        specs: &[IndexSpec],
        fill: impl FnOnce(&mut LsmDb) -> Result<T>,
    ) -> Result<(LsmDb, T)> {
        config.check()?;
        workload.check()?;
        let existing = dir.symlink_metadata().is_ok_and(|m| m.is_dir());
        // An empty directory the user made stays theirs (its owner, mode, mount): the
        // database is made in a scratch directory inside it, under its lock, and moved up.
        // Else it is made beside `dir` and renamed to it.
        let (lock, parent) = match existing {
            true => (Some(DbLock::take(dir)?), dir),
            false => (None, lidx::files::parent_dir(dir)),
        };
        std::fs::create_dir_all(parent).map_err(|e| lidx::Error::io(parent, "create", e))?;
        let scratch = lidx::files::scratch_dir(parent)?;
        if existing {
            recovery::refuse_taken(dir, scratch.path())?;
        } else if dir.symlink_metadata().is_ok() {
            return Err(recovery::not_empty(
                dir,
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        let mut db = Self::create_in(scratch.path(), config, workload, specs)?;
        let filled = fill(&mut db)?;
        // The lock is carried to the open at `dir`, never let go and taken again: a lock
        // let go can stay held for a moment by a child another thread forks (until it
        // execs), and between the two another process could take the new database.
        let made = db.close_keeping_lock();
        let lock = match existing {
            true => {
                recovery::move_up(scratch, dir)?;
                lock.unwrap_or(made)
            }
            false => {
                // `flock` holds the directory, which the rename keeps.
                recovery::publish(scratch, dir)?;
                made
            }
        };
        Ok((LsmDb::open_locked(dir, lock)?, filled))
    }

    fn create_in(
        dir: &Path,
        config: LsmConfig,
        workload: Workload,
        specs: &[IndexSpec],
    ) -> Result<LsmDb> {
        let mut unique: Vec<IndexSpec> = Vec::new();
        for &spec in specs {
            if !unique.contains(&spec) {
                unique.push(spec);
            }
        }
        let lock = DbLock::take(dir)?;
        let indexes = unique
            .iter()
            .map(|&spec| SecondaryIndex::create(dir, spec, &config, workload.entry_size))
            .collect::<Result<Vec<_>>>()?;
        let manifest = Manifest {
            format: FORMAT.to_string(),
            version: VERSION,
            config,
            workload,
            batches: 0,
            indexes: unique,
            attributes: None,
            pending: None,
        };
        let db = LsmDb {
            r: Tree::create(&dir.join("r"), &config, TreeKind::Data)?,
            s: Tree::create(&dir.join("s"), &config, TreeKind::Data)?,
            indexes,
            dir: dir.to_path_buf(),
            manifest,
            recovered: None,
            _lock: lock,
        };
        db.save_manifest()?;
        Ok(db)
    }

    /// Opens the database at `dir` and locks it for this process: fails with one clear
    /// error where it is missing, is not a database of this kind (no or a foreign
    /// manifest), is open in another process, or has lost a tree. A change an earlier
    /// process began and did not finish (it was killed) is undone first: see
    /// [`recovered`](Self::recovered).
    pub fn open(dir: &Path) -> Result<LsmDb> {
        let path = dir.join(MANIFEST);
        if path.symlink_metadata().is_err() {
            return Err(lidx::Error::param(
                "database",
                format!(
                    "{}: no lidx LSM database here (no {MANIFEST}; `lidx lsm load` makes one)",
                    dir.display()
                ),
            )
            .into());
        }
        Self::open_locked(dir, DbLock::take(dir)?)
    }

    /// Closes every tree and returns the database's lock, still held.
    fn close_keeping_lock(self) -> DbLock {
        // The fields not moved out are dropped (the trees closed) when this returns.
        self._lock
    }

    /// [`open`](Self::open), with `dir` already locked by this process.
    fn open_locked(dir: &Path, lock: DbLock) -> Result<LsmDb> {
        let path = dir.join(MANIFEST);
        let mut manifest = read_manifest(&path)?;
        let recovered = match manifest.pending {
            Some(pending) => {
                recovery::recover(dir, pending, &manifest.trees())?;
                manifest.pending = None;
                save_manifest(dir, &manifest)?;
                Some(pending)
            }
            None => None,
        };
        // Checkpoints of a change that finished (or was never begun) go.
        recovery::finish(dir)?;
        let config = manifest.config;
        let entry_size = manifest.workload.entry_size;
        let indexes = manifest
            .indexes
            .iter()
            .map(|&spec| SecondaryIndex::open(dir, spec, &config, entry_size))
            .collect::<Result<Vec<_>>>()?;
        Ok(LsmDb {
            r: Tree::open(&dir.join("r"), &config, TreeKind::Data)?,
            s: Tree::open(&dir.join("s"), &config, TreeKind::Data)?,
            indexes,
            dir: dir.to_path_buf(),
            manifest,
            recovered,
            _lock: lock,
        })
    }

    /// What opening undid, described: a batch of changes or an index build that an
    /// earlier process began and did not finish (it was killed), or `None`.
    pub fn recovered(&self) -> Option<String> {
        self.recovered.map(|p| match p {
            Pending::Changes => "an interrupted batch of changes was rolled back".to_string(),
            Pending::Index(spec) => {
                format!(
                    "the interrupted build of index {} was removed",
                    spec.dir_name()
                )
            }
        })
    }

    /// The database's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The trees' settings.
    pub fn config(&self) -> LsmConfig {
        self.manifest.config
    }

    /// How its rows were generated.
    pub fn workload(&self) -> Workload {
        self.manifest.workload
    }

    /// Batches applied so far (the load included).
    pub fn batches(&self) -> u64 {
        self.manifest.batches
    }

    /// The secondary indexes it holds.
    pub fn index_specs(&self) -> Vec<IndexSpec> {
        self.indexes.iter().map(|i| i.spec).collect()
    }

    /// Whether it holds the index `spec`.
    pub fn has_index(&self, spec: IndexSpec) -> bool {
        self.indexes.iter().any(|i| i.spec == spec)
    }

    pub(crate) fn index(&self, spec: IndexSpec) -> Option<&SecondaryIndex> {
        self.indexes.iter().find(|i| i.spec == spec)
    }

    pub(crate) fn table(&self, side: Side) -> &Tree {
        match side {
            Side::R => &self.r,
            Side::S => &self.s,
        }
    }

    /// Takes the join attributes of every batch from now on from key files (see
    /// [`super::keys`]) instead of drawing them: only before the first batch. Fails naming
    /// a file that is missing, foreign or empty.
    pub fn use_key_files(&mut self, files: AttrFiles) -> Result<()> {
        if self.manifest.batches > 0 {
            return Err(lidx::Error::misuse(
                "LsmDb::use_key_files",
                "the database holds batches already; key files are chosen before the load",
            )
            .into());
        }
        files.clone().take(1, 1)?;
        self.manifest.attributes = Some(files);
        self.save_manifest()
    }

    /// The key files the join attributes come from, if they do.
    pub fn key_files(&self) -> Option<&AttrFiles> {
        self.manifest.attributes.as_ref()
    }

    /// The attributes of the next `s_rows` and `r_rows` rows, from the key files where the
    /// database has them.
    fn next_attrs(&mut self, s_rows: u64, r_rows: u64) -> Result<Option<GivenAttrs>> {
        self.manifest
            .attributes
            .as_mut()
            .map(|files| files.take(s_rows as usize, r_rows as usize))
            .transpose()
    }

    /// Generates the workload's next batch and applies it, all at once or not at all.
    pub fn apply_next_batch(&mut self) -> Result<ApplyTimes> {
        self.change(Pending::Changes, |db| {
            let workload = db.manifest.workload;
            let given = db.next_attrs(workload.rows, workload.r_rows())?;
            let batch = workload.batch_with(db.manifest.batches, given.as_ref());
            let times = db.apply_changes(&batch)?;
            db.manifest.batches += 1;
            Ok(times)
        })
    }

    /// Applies `n` updates spread over R and S in proportion to their sizes: a share
    /// `mix.changes` give a live row a new attribute (drawn from the workload's), a share
    /// `mix.deletes` remove a live row, and the rest insert rows generated as the load's
    /// (batch number [`batches`](Self::batches), seeded from `seed`).
    /// All at once or not at all.
    pub fn update(&mut self, n: u64, mix: UpdateMix, seed: u64) -> Result<ApplyTimes> {
        mix.check()?;
        if n > MAX_UPDATES {
            return Err(lidx::Error::param(
                "updates",
                format!("{n} is not in 0 ..= {MAX_UPDATES}"),
            )
            .into());
        }
        self.change(Pending::Changes, |db| db.update_in(n, mix, seed))
    }

    fn update_in(&mut self, n: u64, mix: UpdateMix, seed: u64) -> Result<ApplyTimes> {
        let workload = self.manifest.workload;
        let changed = (n as f64 * mix.changes).round() as u64;
        let deleted = (n as f64 * mix.deletes).round() as u64;
        let inserted = n.saturating_sub(changed + deleted);
        // S's share of the inserts, as S's share of the rows.
        let s_share = workload.ratio / (1.0 + workload.ratio);
        let s_rows = (inserted as f64 * s_share).round() as u64;
        let mut batch = if inserted > 0 && s_rows > 0 {
            let inserts = Workload {
                rows: s_rows,
                seed,
                ..workload
            };
            let given = self.next_attrs(inserts.rows, inserts.r_rows())?;
            inserts.batch_with(self.manifest.batches, given.as_ref())
        } else {
            Batch::default()
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(
            seed ^ 0x5EED_u64.rotate_left(self.manifest.batches as u32),
        );
        let pool: Vec<u64> = batch
            .s
            .iter()
            .filter_map(|c| match c {
                Change::Put { attr, .. } => Some(*attr),
                Change::Delete { .. } => None,
            })
            .collect();
        for side in [Side::S, Side::R] {
            let share = if side == Side::S {
                s_share
            } else {
                1.0 - s_share
            };
            let (changes, deletes) = (
                (changed as f64 * share).round() as usize,
                (deleted as f64 * share).round() as usize,
            );
            if changes + deletes == 0 {
                continue;
            }
            let live = self.rows(side)?;
            if live.is_empty() {
                continue;
            }
            let out = match side {
                Side::R => &mut batch.r,
                Side::S => &mut batch.s,
            };
            for i in 0..changes + deletes {
                let (pk, attr) = live[rng.random_range(0..live.len())];
                if i < deletes {
                    out.push(Change::Delete { pk });
                } else {
                    let attr = pool
                        .get(rng.random_range(0..pool.len().max(1)))
                        .copied()
                        .unwrap_or(attr);
                    out.push(Change::Put { pk, attr });
                }
            }
        }
        let times = self.apply_changes(&batch)?;
        self.manifest.batches += 1;
        Ok(times)
    }

    /// Applies `batch` to the data tables and to every index of each, all at once or not
    /// at all.
    pub fn apply(&mut self, batch: &Batch) -> Result<ApplyTimes> {
        self.change(Pending::Changes, |db| db.apply_changes(batch))
    }

    /// Runs `body`, a change of kind `pending`, so that it happens all at once or not at
    /// all: before it, a batch of changes checkpoints every tree, and the manifest marks
    /// the change; after it, every tree flushes and the mark goes. A kill in between is
    /// undone by the next [`open`](Self::open); an error leaves the mark, so this database
    /// refuses further work (see [`ensure_whole`](Self::ensure_whole)) until it is opened
    /// again.
    fn change<T>(
        &mut self,
        pending: Pending,
        body: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        self.ensure_whole()?;
        if pending == Pending::Changes {
            recovery::checkpoint(&self.dir, self.trees().map(|(n, t)| (n, &t.db)))?;
        }
        self.manifest.pending = Some(pending);
        self.save_manifest()?;
        let out = body(self)?;
        for (_, tree) in self.trees() {
            tree.flush()?;
        }
        self.manifest.pending = None;
        self.save_manifest()?;
        recovery::finish(&self.dir)?;
        Ok(out)
    }

    /// Fails where a change to this database failed part-way in this process: its trees
    /// may disagree until it is opened again, which undoes the change.
    pub(crate) fn ensure_whole(&self) -> Result<()> {
        if self.manifest.pending.is_some() {
            return Err(lidx::Error::misuse(
                "LsmDb",
                format!(
                    "{}: a change failed part-way; open the database again to undo it",
                    self.dir.display()
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Every tree with its directory name: R, S, then each index.
    fn trees(&self) -> impl Iterator<Item = (String, &Tree)> {
        [("r".to_string(), &self.r), ("s".to_string(), &self.s)]
            .into_iter()
            .chain(self.indexes.iter().map(|i| (i.spec.dir_name(), &i.tree)))
    }

    fn apply_changes(&mut self, batch: &Batch) -> Result<ApplyTimes> {
        let mut times = ApplyTimes::default();
        for side in [Side::S, Side::R] {
            let changes = match side {
                Side::R => &batch.r,
                Side::S => &batch.s,
            };
            for change in changes {
                self.apply_change(side, *change, &mut times)?;
            }
        }
        let started = Instant::now();
        for index in &self.indexes {
            index.tree.settle()?;
        }
        times.index_s += started.elapsed().as_secs_f64();
        Ok(times)
    }

    fn apply_change(&self, side: Side, change: Change, times: &mut ApplyTimes) -> Result<()> {
        crash_point()?;
        let entry_size = self.manifest.workload.entry_size;
        let table = self.table(side);
        if self.indexes.iter().any(|i| i.spec.side == side) {
            self.keep_indexes(side, change, times)?;
        }
        let pk = encode_key(change.pk());
        let started = Instant::now();
        match change {
            Change::Put { pk: key, attr } => table.put(&pk, &row_value(key, attr, entry_size))?,
            Change::Delete { .. } => table.delete(&pk)?,
        }
        times.data_s += started.elapsed().as_secs_f64();
        Ok(())
    }

    /// Applies `change` of a row of `side` to that table's indexes (before the table).
    fn keep_indexes(&self, side: Side, change: Change, times: &mut ApplyTimes) -> Result<()> {
        let entry_size = self.manifest.workload.entry_size;
        let table = self.table(side);
        let started = Instant::now();
        let indexes = || self.indexes.iter().filter(move |i| i.spec.side == side);
        let sync = || indexes().filter(|i| i.spec.maintenance == Maintenance::Sync);
        let pk = encode_key(change.pk());
        // Algorithm 1: a synchronous index removes the row's old entry first.
        if sync().next().is_some()
            && let Some(old) = table.get(&pk)?.as_deref().and_then(attr_of)
        {
            for i in sync() {
                i.remove(old, change.pk())?;
            }
        }
        if let Change::Put { pk, attr } = change {
            for i in indexes() {
                i.insert(attr, pk, entry_size)?;
            }
        }
        times.index_s += started.elapsed().as_secs_f64();
        Ok(())
    }

    /// Builds the index `spec` from its table's rows (a scan, each row's entry inserted as
    /// an update would) and records it, all at once or not at all; returns the seconds it
    /// took, flushes and compactions included. An index already there is left as it is
    /// (0 seconds).
    pub fn build_index(&mut self, spec: IndexSpec) -> Result<f64> {
        if self.has_index(spec) {
            return Ok(0.0);
        }
        let path = self.dir.join(spec.dir_name());
        if path.symlink_metadata().is_ok() {
            return Err(lidx::Error::param(
                "database",
                format!(
                    "{}: exists, but the manifest lists no such index (left by an older lidx?); remove it to build the index",
                    path.display()
                ),
            )
            .into());
        }
        self.change(Pending::Index(spec), |db| {
            let entry_size = db.manifest.workload.entry_size;
            let started = Instant::now();
            let index = SecondaryIndex::create(&db.dir, spec, &db.manifest.config, entry_size)?;
            db.table(spec.side).scan_rows(|pk, attr| {
                crash_point()?;
                index.insert(attr, pk, entry_size)
            })?;
            index.tree.settle()?;
            let seconds = started.elapsed().as_secs_f64();
            db.indexes.push(index);
            db.manifest.indexes.push(spec);
            Ok(seconds)
        })
    }

    /// The live rows of `side`, as (primary key, attribute), in key order.
    pub fn rows(&self, side: Side) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        self.table(side).scan_rows(|pk, attr| {
            out.push((pk, attr));
            Ok(())
        })?;
        Ok(out)
    }

    /// Checks that every synchronous index of the database holds exactly its table's live
    /// rows, and every validation index at least them; names the first difference.
    pub fn check_indexes(&self) -> Result<()> {
        for index in &self.indexes {
            let live: HashSet<(u64, u64)> = self
                .rows(index.spec.side)?
                .into_iter()
                .map(|(pk, attr)| (attr, pk))
                .collect();
            let mut held: Vec<(u64, u64)> = Vec::new();
            index.scan(|attr, pk| {
                held.push((attr, pk));
                Ok(())
            })?;
            let held_set: HashSet<(u64, u64)> = held.iter().copied().collect();
            let fail = |what: String| -> Error {
                lidx::Error::misuse(
                    "LsmDb::check_indexes",
                    format!("{}: {what}", index.spec.dir_name()),
                )
                .into()
            };
            if let Some(missing) = live.iter().find(|e| !held_set.contains(e)) {
                return Err(fail(format!(
                    "row {missing:?} (attribute, key) has no entry"
                )));
            }
            if index.spec.maintenance == Maintenance::Sync {
                if held.len() != held_set.len() {
                    return Err(fail("an entry is held twice".into()));
                }
                if let Some(stale) = held_set.iter().find(|e| !live.contains(e)) {
                    return Err(fail(format!("entry {stale:?} has no live row")));
                }
            }
        }
        Ok(())
    }

    /// Flushes every tree's memtable and waits for the flushes and compactions that causes.
    pub fn settle(&self) -> Result<()> {
        self.trees().try_for_each(|(_, tree)| tree.settle())
    }

    /// Every tree's statistics tickers since the database was opened, summed.
    pub fn stats(&self) -> super::tree::TreeStats {
        let parts: Vec<_> = self.trees().map(|(_, tree)| tree.stats()).collect();
        super::tree::TreeStats::sum(&parts)
    }

    /// Levels holding data in each tree: `r`, `s`, then each index by its directory name.
    pub fn levels(&self) -> Result<Vec<(String, u64)>> {
        self.trees()
            .map(|(name, tree)| Ok((name, tree.levels()?)))
            .collect()
    }

    fn save_manifest(&self) -> Result<()> {
        save_manifest(&self.dir, &self.manifest)
    }
}

#[cfg(test)]
thread_local! {
    /// Tests only: the writes a change may still make before it fails, as a process
    /// killed in the middle of it would stop (`None`: no limit).
    pub(crate) static WRITES_BEFORE_CRASH: std::cell::Cell<Option<u64>> =
        const { std::cell::Cell::new(None) };
}

/// Fails where a test asked for a crash at this write (see `WRITES_BEFORE_CRASH`);
/// nothing otherwise.
fn crash_point() -> Result<()> {
    #[cfg(test)]
    if let Some(left) = WRITES_BEFORE_CRASH.get() {
        if left == 0 {
            return Err(lidx::Error::misuse("crash point", "a crash injected by a test").into());
        }
        WRITES_BEFORE_CRASH.set(Some(left - 1));
    }
    Ok(())
}

/// Fails naming both paths where `output` lies inside the database directory `db_dir`:
/// writing it would damage the database (its manifest, a tree's `CURRENT`). Checked before
/// the database is opened, so a refused command leaves nothing in it.
pub fn refuse_output_inside(db_dir: &Path, output: &Path) -> Result<()> {
    let parent = lidx::files::parent_dir(output);
    if let (Ok(db), Ok(parent)) = (db_dir.canonicalize(), parent.canonicalize())
        && parent.starts_with(&db)
    {
        return Err(lidx::Error::param(
            "output",
            format!(
                "{} is inside the database {} it reads, and writing it could damage it; choose a path outside",
                output.display(),
                db_dir.display()
            ),
        )
        .into());
    }
    Ok(())
}

/// Reads and checks the manifest at `path`.
fn read_manifest(path: &Path) -> Result<Manifest> {
    // A manifest is a few kilobytes; anything but a regular file (a pipe) is refused.
    let (file, len) = lidx::files::open_regular(path)?;
    if len > MAX_MANIFEST_BYTES {
        return Err(lidx::Error::format(
            path,
            lidx::FormatError::Inconsistent(format!(
                "{len} bytes is too large for a manifest (at most {MAX_MANIFEST_BYTES})"
            )),
        )
        .into());
    }
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(file, MAX_MANIFEST_BYTES),
        &mut text,
    )
    .map_err(|e| lidx::Error::io(path, "read", e))?;
    let mut manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
        lidx::Error::format(
            path,
            lidx::FormatError::Inconsistent(format!("not a lidx LSM manifest: {e}")),
        )
    })?;
    if manifest.format != FORMAT || !(OLDEST_VERSION..=VERSION).contains(&manifest.version) {
        return Err(lidx::Error::format(
            path,
            lidx::FormatError::Inconsistent(format!(
                "a manifest of {} version {}, where this lidx reads {FORMAT} versions {OLDEST_VERSION} to {VERSION}",
                manifest.format, manifest.version
            )),
        )
        .into());
    }
    if manifest.version < 3 {
        manifest.config = manifest.config.as_before_version_3();
    }
    manifest.config.check()?;
    manifest.workload.check()?;
    // Older versions' fields read as this one's: the next save writes this version.
    manifest.version = VERSION;
    Ok(manifest)
}

/// Writes `manifest` into `dir`, replacing the old one at once (durably).
fn save_manifest(dir: &Path, manifest: &Manifest) -> Result<()> {
    let path = dir.join(MANIFEST);
    let text = serde_json::to_string_pretty(manifest)
        .map_err(|e| lidx::Error::misuse("LsmDb::save_manifest", e.to_string()))?;
    let mut file = lidx::files::AtomicFile::create(&path)?;
    file.write_all(text.as_bytes())?;
    file.finish()?;
    Ok(())
}
