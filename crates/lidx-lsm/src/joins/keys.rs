//! Join attributes read from SOSD key files instead of drawn (paper 5, section 4,
//! "Datasets"): Face and Wiki are SOSD sets, and the paper joins each with itself, R's and
//! S's attributes read from the same file; User and Movie are two joinable columns, which a
//! user supplies as two files.
//!
//! Each side reads its file in consecutive chunks, one per batch, from where the last batch
//! stopped (wrapping around at the end of the file), and takes every key modulo 10^10 so
//! that it fits the 10-digit attribute, as the paper's loader does. With the same file for
//! both sides and as many rows in R as in S, R's attributes are S's: a matching rate of 1
//! and the file's own duplication.

use std::path::{Path, PathBuf};

use lidx::data::sosd::KeyFile;
use serde::{Deserialize, Serialize};

use super::rows::KEY_LIMIT;
use crate::Result;

/// Where a database's join attributes come from, and how far each file has been read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttrFiles {
    /// S's attributes, and R's where `r` is `None`.
    pub s: PathBuf,
    /// R's attributes, where they come from a file of their own.
    pub r: Option<PathBuf>,
    /// Keys read so far from S's file and from R's (R's counts in S's file where R has
    /// none of its own): the next batch starts there.
    #[serde(default)]
    pub read: (u64, u64),
}

/// The attributes of one batch's rows, in the order the rows are generated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GivenAttrs {
    /// S's attributes.
    pub s: Vec<u64>,
    /// R's attributes.
    pub r: Vec<u64>,
}

impl GivenAttrs {
    /// The features Table 5 lists, measured: S's rows per distinct attribute (d), and the
    /// share of R's rows whose attribute S holds (ε).
    pub fn features(&self) -> (f64, f64) {
        let held: std::collections::HashSet<u64> = self.s.iter().copied().collect();
        let dup = self.s.len() as f64 / held.len().max(1) as f64;
        let matching =
            self.r.iter().filter(|a| held.contains(a)).count() as f64 / self.r.len().max(1) as f64;
        (dup, matching)
    }
}

impl AttrFiles {
    /// Files not read yet: S's (and R's, where `r` is `None`) at `s`.
    pub fn new(s: &Path, r: Option<&Path>) -> AttrFiles {
        AttrFiles {
            s: s.to_path_buf(),
            r: r.map(Path::to_path_buf),
            read: (0, 0),
        }
    }

    /// Reads the next `s_rows` attributes of S and `r_rows` of R, and moves past them.
    /// Fails naming the file where one is missing, is not an SOSD key file, or is empty.
    pub fn take(&mut self, s_rows: usize, r_rows: usize) -> Result<GivenAttrs> {
        let s_file = open_nonempty(&self.s)?;
        let s = chunk(s_file.keys(), self.read.0, s_rows);
        let r = match &self.r {
            Some(path) => chunk(open_nonempty(path)?.keys(), self.read.1, r_rows),
            None => chunk(s_file.keys(), self.read.1, r_rows),
        };
        self.read.0 += s_rows as u64;
        self.read.1 += r_rows as u64;
        Ok(GivenAttrs { s, r })
    }
}

fn open_nonempty(path: &Path) -> Result<KeyFile> {
    let file = KeyFile::open(path)?;
    if file.is_empty() {
        return Err(lidx::Error::param(
            "key file",
            format!(
                "{}: holds no keys to take join attributes from",
                path.display()
            ),
        )
        .into());
    }
    Ok(file)
}

/// `n` keys from position `from` on (wrapping around), each modulo 10^10.
fn chunk(keys: &[u64], from: u64, n: usize) -> Vec<u64> {
    let start = (from % keys.len() as u64) as usize;
    keys[start..]
        .iter()
        .chain(keys.iter().cycle())
        .take(n)
        .map(|k| k % KEY_LIMIT)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_each_other_wrap_around_and_fit_ten_digits() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("k.keys");
        lidx::data::sosd::write_keys(&path, &[1, 2, u64::MAX, 3 * KEY_LIMIT + 7]).expect("write");
        let mut files = AttrFiles::new(&path, None);
        let a = files.take(3, 3).expect("a chunk");
        assert_eq!(a.s, vec![1, 2, u64::MAX % KEY_LIMIT]);
        assert_eq!(a.r, a.s, "one file: R's attributes are S's");
        assert_eq!(a.features(), (1.0, 1.0));
        let b = files.take(3, 1).expect("the next chunk");
        assert_eq!(b.s, vec![7, 1, 2], "wraps around");
        assert_eq!(b.r, vec![7]);
        assert_eq!(files.read, (6, 4));

        let empty = dir.path().join("empty.keys");
        lidx::data::sosd::write_keys(&empty, &[]).expect("write");
        let err = AttrFiles::new(&empty, None)
            .take(1, 1)
            .expect_err("no keys")
            .to_string();
        assert!(
            err.contains("empty.keys") && err.contains("no keys"),
            "{err}"
        );
        let err = AttrFiles::new(&path, Some(&dir.path().join("missing.keys")))
            .take(1, 1)
            .expect_err("no file")
            .to_string();
        assert!(err.contains("missing.keys"), "{err}");
    }
}
