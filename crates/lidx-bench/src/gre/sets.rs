//! Paper 3's key sets (GRE, section 7): the hardness generator's grid, lidx's synthetic
//! sets and SOSD files, each with its measured hardness (optimal PLA segments).

use lidx::pla::segment_count;

use crate::key_source::{KeySource, Unsorted};

/// A key set of the study, with its measured hardness.
pub(super) struct KeySet {
    pub(super) name: String,
    pub(super) source: KeySource,
    pub(super) keys: Vec<u64>,
    pub(super) local_segments: u64,
    pub(super) global_segments: u64,
}

impl KeySet {
    pub(super) fn load(source: &KeySource, n: usize, seed: u64) -> anyhow::Result<KeySet> {
        let keys = source.keys(
            n,
            seed,
            Unsorted::Refuse("a workload bulk-loads sorted keys"),
        )?;
        let local_segments = segment_count(&keys, 32)?;
        let global_segments = segment_count(&keys, 4096)?;
        Ok(KeySet {
            name: source.name(),
            source: source.clone(),
            keys,
            local_segments,
            global_segments,
        })
    }
}

/// The name a source's set got.
pub(super) fn name_of(source: &KeySource, sets: &[(String, KeySource, u64, u64)]) -> String {
    sets.iter()
        .find(|s| &s.1 == source)
        .map_or_else(String::new, |s| s.0.clone())
}
