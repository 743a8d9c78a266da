//! Paper 3's key sets (GRE, section 7): the hardness generator's grid, lidx's synthetic
//! sets and SOSD files, each with its measured hardness (optimal PLA segments).

use std::path::PathBuf;

use lidx::data::{Distribution, GenParams, HardnessParams, KeyFile, generate, generate_hard};
use lidx::pla::segment_count;

/// Where a key set comes from.
#[derive(Clone, Debug)]
pub(super) enum Source {
    Grid { local: u64, global: u64 },
    Synthetic(Distribution),
    Sosd(PathBuf),
}

/// A key set of the study, with its measured hardness.
pub(super) struct KeySet {
    pub(super) name: String,
    pub(super) source: Source,
    pub(super) keys: Vec<u64>,
    pub(super) local_segments: u64,
    pub(super) global_segments: u64,
}

impl KeySet {
    pub(super) fn load(source: &Source, n: usize, seed: u64) -> anyhow::Result<KeySet> {
        let (name, keys) = match source {
            Source::Grid { local, global } => {
                let params = HardnessParams {
                    n,
                    local: *local,
                    global: *global,
                    seed,
                };
                (format!("hard-l{local}-g{global}"), generate_hard(&params)?)
            }
            Source::Synthetic(dist) => (
                dist.name().to_string(),
                generate(&GenParams::new(*dist, n, seed))?,
            ),
            Source::Sosd(path) => {
                let file = KeyFile::open(path)?;
                file.require_sorted("a workload bulk-loads sorted keys")?;
                let keys = file.keys().to_vec();
                let name = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |f| f.to_string_lossy().into_owned(),
                );
                (name, keys)
            }
        };
        let local_segments = segment_count(&keys, 32)?;
        let global_segments = segment_count(&keys, 4096)?;
        Ok(KeySet {
            name,
            source: source.clone(),
            keys,
            local_segments,
            global_segments,
        })
    }
}

/// The name a source's set got.
pub(super) fn name_of(source: &Source, sets: &[(String, Source, u64, u64)]) -> String {
    let same = |a: &Source, b: &Source| match (a, b) {
        (
            Source::Grid {
                local: l1,
                global: g1,
            },
            Source::Grid {
                local: l2,
                global: g2,
            },
        ) => l1 == l2 && g1 == g2,
        (Source::Synthetic(a), Source::Synthetic(b)) => a == b,
        (Source::Sosd(a), Source::Sosd(b)) => a == b,
        _ => false,
    };
    sets.iter()
        .find(|s| same(&s.1, source))
        .map_or_else(String::new, |s| s.0.clone())
}
