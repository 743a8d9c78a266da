//! A join database: R and S in LSM-trees of their own, keyed by primary key, and the
//! secondary indexes built on them, each in a directory under one root with a manifest
//! (`lidx-lsm.json`: the settings, the workload, the batches applied, the indexes, and the
//! key files the attributes come from, if they do).
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
use super::data::{Batch, Change, Workload, attr_of, encode_key, row_value};
use super::keys::{AttrFiles, GivenAttrs};
use super::method::{IndexSpec, Maintenance, Side};
use super::tree::{SecondaryIndex, Tree};
use crate::{Error, Result};

/// The manifest's file name.
pub const MANIFEST: &str = "lidx-lsm.json";
/// The manifest's format tag and version.
const FORMAT: &str = "lidx-lsm joins";
const VERSION: u32 = 1;

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

/// An open join database.
pub struct LsmDb {
    dir: PathBuf,
    manifest: Manifest,
    pub(crate) r: Tree,
    pub(crate) s: Tree,
    pub(crate) indexes: Vec<SecondaryIndex>,
}

impl LsmDb {
    /// Creates a database at `dir` (which must not exist, or be empty) and loads batch 0
    /// of `workload` into R and S.
    pub fn create(
        dir: &Path,
        config: LsmConfig,
        workload: Workload,
    ) -> Result<(LsmDb, ApplyTimes)> {
        Self::create_dir(dir, || {
            let mut db = Self::create_in(dir, config, workload, &[])?;
            let times = db.apply_next_batch()?;
            Ok((db, times))
        })
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
        Self::create_dir(dir, || {
            let mut db = Self::create_in(dir, config, workload, &[])?;
            db.use_key_files(files)?;
            let times = db.apply_next_batch()?;
            Ok((db, times))
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
        Self::create_dir(dir, || Self::create_in(dir, config, workload, indexes))
    }

    /// Runs `create` in `dir`, which must be new or empty; removes what it made if
    /// `create` fails.
    fn create_dir<T>(dir: &Path, create: impl FnOnce() -> Result<T>) -> Result<T> {
        if dir.exists() && std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_some()) {
            return Err(lidx::Error::param(
                "directory",
                format!(
                    "{} exists and is not empty; a database is created in a new directory",
                    dir.display()
                ),
            )
            .into());
        }
        let made = !dir.exists();
        std::fs::create_dir_all(dir).map_err(|e| lidx::Error::io(dir, "create", e))?;
        let created = create();
        if created.is_err() && made {
            // No half-loaded database is left behind.
            let _ = std::fs::remove_dir_all(dir);
        }
        created
    }

    fn create_in(
        dir: &Path,
        config: LsmConfig,
        workload: Workload,
        specs: &[IndexSpec],
    ) -> Result<LsmDb> {
        config.check()?;
        workload.check()?;
        let mut unique: Vec<IndexSpec> = Vec::new();
        for &spec in specs {
            if !unique.contains(&spec) {
                unique.push(spec);
            }
        }
        let indexes = unique
            .iter()
            .map(|&spec| SecondaryIndex::open(dir, spec, &config, workload.entry_size))
            .collect::<Result<Vec<_>>>()?;
        let manifest = Manifest {
            format: FORMAT.to_string(),
            version: VERSION,
            config,
            workload,
            batches: 0,
            indexes: unique,
            attributes: None,
        };
        let db = LsmDb {
            r: Tree::open(&dir.join("r"), &config, TreeKind::Plain)?,
            s: Tree::open(&dir.join("s"), &config, TreeKind::Plain)?,
            indexes,
            dir: dir.to_path_buf(),
            manifest,
        };
        db.save_manifest()?;
        Ok(db)
    }

    /// Opens the database at `dir`: fails with one clear error where it is missing, is not
    /// a database of this kind (no or a foreign manifest), or is open in another process.
    pub fn open(dir: &Path) -> Result<LsmDb> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                lidx::Error::param(
                    "database",
                    format!(
                        "{}: no lidx LSM database here (no {MANIFEST}; `lidx lsm load` makes one)",
                        dir.display()
                    ),
                )
            } else {
                lidx::Error::io(&path, "read", e)
            }
        })?;
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
            lidx::Error::format(
                &path,
                lidx::FormatError::Inconsistent(format!("not a lidx LSM manifest: {e}")),
            )
        })?;
        if manifest.format != FORMAT || manifest.version != VERSION {
            return Err(lidx::Error::format(
                &path,
                lidx::FormatError::Inconsistent(format!(
                    "a manifest of {} version {}, where this lidx reads {FORMAT} version {VERSION}",
                    manifest.format, manifest.version
                )),
            )
            .into());
        }
        manifest.config.check()?;
        manifest.workload.check()?;
        let config = manifest.config;
        let entry_size = manifest.workload.entry_size;
        let indexes = manifest
            .indexes
            .iter()
            .map(|&spec| SecondaryIndex::open(dir, spec, &config, entry_size))
            .collect::<Result<Vec<_>>>()?;
        Ok(LsmDb {
            r: Tree::open(&dir.join("r"), &config, TreeKind::Plain)?,
            s: Tree::open(&dir.join("s"), &config, TreeKind::Plain)?,
            indexes,
            dir: dir.to_path_buf(),
            manifest,
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

    /// Generates the workload's next batch and applies it.
    pub fn apply_next_batch(&mut self) -> Result<ApplyTimes> {
        let workload = self.manifest.workload;
        let given = self.next_attrs(workload.rows, workload.r_rows())?;
        let batch = workload.batch_with(self.manifest.batches, given.as_ref());
        let times = self.apply(&batch)?;
        self.manifest.batches += 1;
        self.save_manifest()?;
        Ok(times)
    }

    /// Applies `n` updates spread over R and S in proportion to their sizes: a share
    /// `mix.changes` give a live row a new attribute (drawn from the workload's), a share
    /// `mix.deletes` remove a live row, and the rest insert rows generated as the load's
    /// (batch number [`batches`](Self::batches), seeded from `seed`).
    pub fn update(&mut self, n: u64, mix: UpdateMix, seed: u64) -> Result<ApplyTimes> {
        mix.check()?;
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
        let times = self.apply(&batch)?;
        self.manifest.batches += 1;
        self.save_manifest()?;
        Ok(times)
    }

    /// Applies `batch` to the data tables and to every index of each.
    pub fn apply(&mut self, batch: &Batch) -> Result<ApplyTimes> {
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
    /// an update would) and records it; returns the seconds it took, flushes and
    /// compactions included. An index already there is left as it is (0 seconds).
    pub fn build_index(&mut self, spec: IndexSpec) -> Result<f64> {
        if self.has_index(spec) {
            return Ok(0.0);
        }
        let entry_size = self.manifest.workload.entry_size;
        let started = Instant::now();
        let index = SecondaryIndex::open(&self.dir, spec, &self.manifest.config, entry_size)?;
        self.table(spec.side)
            .scan_rows(|pk, attr| index.insert(attr, pk, entry_size))?;
        index.tree.settle()?;
        let seconds = started.elapsed().as_secs_f64();
        self.indexes.push(index);
        self.manifest.indexes.push(spec);
        self.save_manifest()?;
        Ok(seconds)
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
        for tree in [&self.r, &self.s]
            .into_iter()
            .chain(self.indexes.iter().map(|i| &i.tree))
        {
            tree.settle()?;
        }
        Ok(())
    }

    /// Every tree's statistics tickers since the database was opened, summed.
    pub fn stats(&self) -> super::tree::TreeStats {
        let parts: Vec<_> = [&self.r, &self.s]
            .into_iter()
            .chain(self.indexes.iter().map(|i| &i.tree))
            .map(Tree::stats)
            .collect();
        super::tree::TreeStats::sum(&parts)
    }

    /// Levels holding data in each tree: `r`, `s`, then each index by its directory name.
    pub fn levels(&self) -> Result<Vec<(String, u64)>> {
        let mut out = vec![
            ("r".to_string(), self.r.levels()?),
            ("s".to_string(), self.s.levels()?),
        ];
        for i in &self.indexes {
            out.push((i.spec.dir_name(), i.tree.levels()?));
        }
        Ok(out)
    }

    fn save_manifest(&self) -> Result<()> {
        let path = self.dir.join(MANIFEST);
        let text = serde_json::to_string_pretty(&self.manifest)
            .map_err(|e| lidx::Error::misuse("LsmDb::save_manifest", e.to_string()))?;
        let mut file = lidx::files::AtomicFile::create(&path)?;
        file.write_all(text.as_bytes())?;
        file.finish()?;
        Ok(())
    }
}
