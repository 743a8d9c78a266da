//! Where a study's key set comes from: one of lidx's synthetic distributions, paper 3's
//! hardness generator (a chosen number of optimal PLA segments at ε = 32 and ε = 4096), or
//! an SOSD key file. Shared by the studies that take `--sets`, `--local`/`--global` and
//! `--sosd` (paper 2's AirIndex study, paper 3's GRE study).

use std::path::PathBuf;

use anyhow::bail;
use lidx::data::{Distribution, GenParams, HardnessParams, KeyFile, generate, generate_hard};

/// A key set's source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// Paper 3's hardness generator: about `local` segments at ε = 32 and `global` at
    /// ε = 4096.
    Hard {
        /// Target segments at ε = 32.
        local: u64,
        /// Target segments at ε = 4096.
        global: u64,
    },
    /// One of lidx's synthetic distributions.
    Synthetic(Distribution),
    /// The keys of an SOSD file.
    Sosd(PathBuf),
}

/// What to do with an SOSD file whose keys are not sorted and distinct.
#[derive(Clone, Copy, Debug)]
pub enum Unsorted {
    /// Refuse it, with this reason.
    Refuse(&'static str),
    /// Sort it and drop repeated keys.
    Sort,
}

impl KeySource {
    /// The name in file names, CSV rows, plots and summaries: `hard-l20000-g2000`, the
    /// distribution's name, or the file's name.
    pub fn name(&self) -> String {
        match self {
            KeySource::Hard { local, global } => format!("hard-l{local}-g{global}"),
            KeySource::Synthetic(d) => d.name().to_string(),
            KeySource::Sosd(path) => path.file_name().map_or_else(
                || path.display().to_string(),
                |f| f.to_string_lossy().into_owned(),
            ),
        }
    }

    /// Whether the keys are generated (so a study can draw any number of them).
    pub fn generated(&self) -> bool {
        !matches!(self, KeySource::Sosd(_))
    }

    /// The set's keys, sorted: `n` generated with `seed`, or all of an SOSD file's (an
    /// unsorted file refused or sorted, with repeats dropped, as `unsorted` says). Fails on
    /// an empty set.
    pub fn keys(&self, n: usize, seed: u64, unsorted: Unsorted) -> anyhow::Result<Vec<u64>> {
        let keys = match self {
            KeySource::Hard { local, global } => generate_hard(&HardnessParams {
                n,
                local: *local,
                global: *global,
                seed,
            })?,
            KeySource::Synthetic(d) => generate(&GenParams::new(*d, n, seed))?,
            KeySource::Sosd(path) => {
                let file = KeyFile::open(path)?;
                match unsorted {
                    Unsorted::Refuse(why) => {
                        file.require_sorted(why)?;
                        file.keys().to_vec()
                    }
                    Unsorted::Sort => {
                        let mut keys = file.keys().to_vec();
                        keys.sort_unstable();
                        keys.dedup();
                        keys
                    }
                }
            }
        };
        if keys.is_empty() {
            bail!("key set {} has no key", self.name());
        }
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_name_themselves_and_give_sorted_keys() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("k.keys");
        lidx::data::write_keys(&path, &[9, 3, 3, 7]).expect("write");
        let file = KeySource::Sosd(path);
        assert_eq!(file.name(), "k.keys");
        assert!(!file.generated());
        assert_eq!(file.keys(0, 0, Unsorted::Sort).expect("sorted"), [3, 7, 9]);
        let refused = file
            .keys(0, 0, Unsorted::Refuse("sort it first"))
            .expect_err("unsorted");
        assert!(refused.to_string().contains("sort it first"), "{refused}");
        let hard = KeySource::Hard {
            local: 200,
            global: 5,
        };
        assert_eq!(hard.name(), "hard-l200-g5");
        let keys = hard.keys(50_000, 1, Unsorted::Sort).expect("hard keys");
        assert_eq!(keys.len(), 50_000);
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let lognormal = KeySource::Synthetic(Distribution::Lognormal);
        assert_eq!(
            lognormal.keys(1000, 1, Unsorted::Sort).expect("keys").len(),
            1000
        );
    }
}
