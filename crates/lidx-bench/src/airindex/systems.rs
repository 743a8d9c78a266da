//! The systems compared, built on one key set: AirIndex tuned per profile, and the
//! baselines paper 2 measured (section 3), with the tuner's choices sketched.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use lidx::index::file::KeysFingerprint;
use lidx::index::{AnyIndex, Index, Rmi, RmiParams};
use lidx::kv::write::{Record, TunedReport, sketch_tuned};
use lidx::kv::{BuildOptions, KvFile, Layout, ModelKind};
use lidx::storage::profile::{AffineCost, resolve_profile};
use lidx::storage::{ReadMode, TUPLE_SIZE};

use super::measure::RunProfile;
use super::{Options, rocks};
use crate::key_source::KeySource;
use crate::progress::Progress;
use crate::text::human_bytes;

/// The systems compared, as the CSV names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum System {
    AirIndex,
    Btree,
    Sstable,
    Learned,
    RmiMmap,
    Lmdb,
    RocksDb,
}

impl System {
    /// The systems measured under each profile, in the order they run: the AirIndex file
    /// tuned for that profile, then the baselines [`build_all`] builds.
    pub(super) fn under_each_profile(o: &Options) -> Vec<System> {
        let mut systems = vec![
            System::AirIndex,
            System::Btree,
            System::Sstable,
            System::Learned,
            System::RmiMmap,
            System::Lmdb,
        ];
        if o.rocksdb {
            systems.push(System::RocksDb);
        }
        systems
    }

    /// The system's name in rows, plots and the summary.
    pub(super) fn name(self) -> &'static str {
        match self {
            System::AirIndex => "airindex",
            System::Btree => "btree",
            System::Sstable => "sstable",
            System::Learned => "learned",
            System::RmiMmap => "rmi-mmap",
            System::Lmdb => "lmdb",
            System::RocksDb => "rocksdb",
        }
    }
}

/// A system as built on one key set.
#[derive(Clone)]
pub(super) struct Built {
    pub(super) system: System,
    /// The profile an `airindex` file was tuned for (empty for the others).
    pub(super) tuned_for: String,
    /// The `.kv` file, the RMI's `.tbl` records, or RocksDB's directory.
    pub(super) path: PathBuf,
    /// The RMI's `.idx` file.
    pub(super) model_path: Option<PathBuf>,
    /// What the index is, in a few words.
    pub(super) structure: String,
    /// Bytes of the index (on disk for the layouts, in memory for the RMI and RocksDB).
    pub(super) index_bytes: u64,
}

impl Built {
    /// The same system, its files as they appear under `mount`.
    pub(super) fn at(&self, mount: &crate::profiled_fs::ProfiledMount) -> anyhow::Result<Built> {
        Ok(Built {
            system: self.system,
            tuned_for: self.tuned_for.clone(),
            path: mount.view(&self.path)?,
            model_path: self
                .model_path
                .as_deref()
                .map(|p| mount.view(p))
                .transpose()?,
            structure: self.structure.clone(),
            index_bytes: self.index_bytes,
        })
    }
}

/// The tuner's choices on one key set at one size, per profile.
pub(super) struct Sketch {
    pub(super) set: String,
    pub(super) keys: u64,
    pub(super) choices: Vec<(String, TunedReport)>,
}

/// The tuner's choice for `records` under every run profile and every sketch profile.
pub(super) fn sketch(
    o: &Options,
    profiles: &[RunProfile],
    records: &[Record<'_>],
) -> anyhow::Result<Vec<(String, TunedReport)>> {
    let mut costs: Vec<(String, AffineCost)> =
        profiles.iter().map(|p| (p.name.clone(), p.cost)).collect();
    for name in &o.sketch_profiles {
        if !costs.iter().any(|(n, _)| n == name) {
            costs.push((name.clone(), resolve_profile(name)?.random));
        }
    }
    costs
        .into_iter()
        .map(|(name, cost)| {
            let options = BuildOptions {
                layout: Layout::Tuned,
                block_size: o.page_size,
                profile: Some(cost),
                ..BuildOptions::default()
            };
            Ok((name, sketch_tuned(records, &options)?))
        })
        .collect()
}

/// Every system on one key set: an `airindex` file per run profile, then the baselines.
pub(super) fn build_all(
    o: &Options,
    profiles: &[RunProfile],
    set: &KeySource,
    keys: &[u64],
    records: &[Record<'_>],
    dir: &Path,
    progress: &dyn Progress,
) -> anyhow::Result<Vec<Built>> {
    let name = set.name();
    let mut out = Vec::new();
    let kv = |layout: Layout,
              tag: &str,
              profile: Option<AffineCost>|
     -> anyhow::Result<(PathBuf, KvFile, lidx::kv::BuildReport)> {
        progress.message(&format!("building {tag} on {name}"));
        let path = dir.join(format!("{name}-{tag}.kv"));
        let options = BuildOptions {
            layout,
            block_size: o.page_size,
            model: ModelKind::Pgm,
            profile,
            ..BuildOptions::default()
        };
        let report = lidx::kv::build(records, &options, &path)?;
        let file = KvFile::open(&path, ReadMode::Buffered)?;
        Ok((path, file, report))
    };
    for p in profiles {
        let (path, _, report) = kv(Layout::Tuned, &format!("airindex-{}", p.name), Some(p.cost))?;
        let chosen = report
            .tuned
            .as_ref()
            .and_then(|t| t.candidates.first())
            .context("a tuned file without a choice")?;
        out.push(Built {
            system: System::AirIndex,
            tuned_for: p.name.clone(),
            path,
            model_path: None,
            structure: structure_of(chosen),
            index_bytes: chosen.bytes.iter().sum(),
        });
    }
    let (path, file, _) = kv(Layout::Btree, "btree", None)?;
    let levels = file.btree_levels().unwrap_or(&[]).to_vec();
    out.push(Built {
        system: System::Btree,
        tuned_for: String::new(),
        path,
        model_path: None,
        structure: format!("{} levels of nodes {levels:?}", levels.len()),
        index_bytes: levels.iter().sum::<u64>() * file.footer().block_size,
    });
    for (system, layout) in [
        (System::Sstable, Layout::Sstable),
        (System::Learned, Layout::Learned),
    ] {
        let (path, file, report) = kv(layout, system.name(), None)?;
        let structure = match layout {
            Layout::Sstable => format!("{} level-1 index blocks", report.index_blocks),
            _ => format!("pgm of {} pieces", report.model_pieces),
        };
        out.push(Built {
            system,
            tuned_for: String::new(),
            path,
            model_path: None,
            structure,
            index_bytes: file.index_memory_bytes() + file.index_disk_bytes(),
        });
    }
    progress.message(&format!("building rmi-mmap on {name}"));
    out.push(build_rmi(keys, dir, &name)?);
    progress.message(&format!("loading LMDB with {name}"));
    out.push(build_lmdb(records, dir, &name)?);
    if o.rocksdb {
        progress.message(&format!("loading RocksDB with {name}"));
        out.push(rocks::build(records, dir, &name, o)?);
    }
    Ok(out)
}

/// "L = 2: Δ 1.0 KiB / 8.6 KiB, step / 88 B": a tuned structure's layers, each its error
/// (PGM) or "step", and bytes, layer 1 first.
pub fn structure_of(c: &lidx::kv::layers::Candidate) -> String {
    let layers: Vec<String> = c
        .deltas
        .iter()
        .zip(&c.bytes)
        .zip(&c.steps)
        .map(|((d, b), &step)| match step {
            true => format!("step / {}", human_bytes(*b)),
            false => format!("Δ {} / {}", human_bytes(*d), human_bytes(*b)),
        })
        .collect();
    format!("L = {}: {}", c.deltas.len(), layers.join(", "))
}

/// The records in LMDB (a real B+tree read through its memory map): its index is its
/// branch pages, and its memory the page cache's pages of its file (not `--cache`).
fn build_lmdb(records: &[Record<'_>], dir: &Path, name: &str) -> anyhow::Result<Built> {
    let path = dir.join(format!("{name}-lmdb"));
    let f = lidx_lmdb::LmdbKv::build(records.iter().map(|r| (r.key, r.value)), &path)?;
    Ok(Built {
        system: System::Lmdb,
        tuned_for: String::new(),
        path,
        model_path: None,
        structure: format!(
            "B+tree of {} levels, {} branch and {} leaf pages of {} B, memory-mapped (the page cache, not --cache)",
            f.depth, f.branch_pages, f.leaf_pages, f.page_size
        ),
        index_bytes: f.index_bytes(),
    })
}

/// Bytes of an RMI-over-mmap record: a `.tbl` tuple, the key and its position,
/// little-endian.
pub(super) const FLAT_RECORD: u64 = TUPLE_SIZE as u64;

/// The records as a `.tbl` table of (key, position), and the RMI over its keys saved beside
/// it as an `.idx` file: the project's own formats, read as paper 2's RMI over `mmap` reads
/// its flat array (the tuples a page at a time, without the table's header or checksums).
fn build_rmi(keys: &[u64], dir: &Path, name: &str) -> anyhow::Result<Built> {
    let path = dir.join(format!("{name}-rmi.tbl"));
    crate::harness::write_table(keys, &path)?;
    let params = RmiParams::default();
    let rmi = Rmi::build(keys, &params)?;
    let mut bytes = Vec::new();
    rmi.encode(&mut bytes);
    let structure = format!("rmi {params}, windows up to {}", rmi.max_width());
    let model_path = dir.join(format!("{name}-rmi.idx"));
    lidx::index::file::save(&model_path, &AnyIndex::Rmi(rmi), &KeysFingerprint::of(keys))?;
    Ok(Built {
        system: System::RmiMmap,
        tuned_for: String::new(),
        path,
        model_path: Some(model_path),
        structure,
        index_bytes: bytes.len() as u64,
    })
}
