//! [`JoinMethod`]: every join `lidx join --method` runs, by name, with what each takes
//! (threads, a saved index, a memory budget) and which of paper 1's cost model's methods
//! predicts it.

use std::fmt;
use std::str::FromStr;

use super::cost::Choice;
use crate::index::IndexKind;
use crate::memory::MemoryBudget;
use crate::{Error, Result};

/// The memory budget of the methods that spill or hold partitions (grace, partition,
/// btree-inserts, sort-merge) when the request gives none: 256 MiB.
pub const DEFAULT_SPILL_BUDGET: u64 = 256 << 20;

/// A join method by name, as `lidx join --method` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JoinMethod {
    /// Index nested loop join through an index of this kind on the inner table (sorted).
    Inlj(IndexKind),
    /// Index nested loop join through ALEX on disk, whose file holds the inner table's
    /// tuples (paper 1, Fig. 5); one thread.
    InljAlex,
    /// Sort-merge join (both tables sorted).
    Merge,
    /// Hash join: the outer table in memory, the inner streamed past it.
    Hash,
    /// Grace hash join: both tables partitioned to disk when the outer's hash table and
    /// read buffers would exceed the memory budget; any order, one thread.
    Grace,
    /// Two unsorted tables through their learned partition indexes; one thread.
    Partition,
    /// Two unsorted tables through B+trees built by inserts; one thread.
    BTreeInserts,
    /// Two unsorted tables sorted by an external merge sort (each with the whole budget in
    /// turn), then merged: paper 1's sort-then-merge; one thread.
    SortMerge,
}

impl JoinMethod {
    /// The joins of two unsorted tables through unclustered indexes or sorted copies, in
    /// the order reports list them.
    pub const UNSORTED: [JoinMethod; 3] = [
        JoinMethod::Partition,
        JoinMethod::BTreeInserts,
        JoinMethod::SortMerge,
    ];

    /// Whether it runs on threads, each a contiguous share of the outer table (of the
    /// inner for hash); the others run on one.
    pub fn on_threads(self) -> bool {
        matches!(
            self,
            JoinMethod::Inlj(_) | JoinMethod::Merge | JoinMethod::Hash
        )
    }

    /// Whether it joins through a saved index of the inner table when given one.
    pub fn takes_index(self) -> bool {
        matches!(
            self,
            JoinMethod::Inlj(_)
                | JoinMethod::InljAlex
                | JoinMethod::Partition
                | JoinMethod::BTreeInserts
        )
    }

    /// Whether it joins through a saved index of the outer table when given one.
    pub fn takes_outer_index(self) -> bool {
        matches!(self, JoinMethod::Partition | JoinMethod::BTreeInserts)
    }

    /// Whether a memory budget limits it (ALEX's join holds only its fixed buffers and
    /// the file's inner nodes).
    pub fn takes_budget(self) -> bool {
        self != JoinMethod::InljAlex
    }

    /// The method of paper 1's cost model that predicts it (the grace join as the
    /// in-memory hash join); `None` where the model has none.
    pub fn modelled_as(self) -> Option<Choice> {
        match self {
            JoinMethod::Inlj(_) => Some(Choice::Inlj),
            JoinMethod::Merge => Some(Choice::Merge),
            JoinMethod::Hash | JoinMethod::Grace => Some(Choice::Hash),
            _ => None,
        }
    }

    /// Its budget when the request gives none: [`DEFAULT_SPILL_BUDGET`] for the methods
    /// that spill or hold partitions, no limit for the others.
    pub fn default_budget(self) -> MemoryBudget {
        match self {
            JoinMethod::Grace
            | JoinMethod::Partition
            | JoinMethod::BTreeInserts
            | JoinMethod::SortMerge => MemoryBudget::new(DEFAULT_SPILL_BUDGET),
            _ => MemoryBudget::unlimited(),
        }
    }
}

impl fmt::Display for JoinMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinMethod::Inlj(kind) => write!(f, "inlj:{kind}"),
            JoinMethod::InljAlex => f.write_str("inlj:alex"),
            JoinMethod::Merge => f.write_str("merge"),
            JoinMethod::Hash => f.write_str("hash"),
            JoinMethod::Grace => f.write_str("grace"),
            JoinMethod::Partition => f.write_str("partition"),
            JoinMethod::BTreeInserts => f.write_str("btree-inserts"),
            JoinMethod::SortMerge => f.write_str("sort-merge"),
        }
    }
}

impl FromStr for JoinMethod {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let named = [
            JoinMethod::InljAlex,
            JoinMethod::Merge,
            JoinMethod::Hash,
            JoinMethod::Grace,
            JoinMethod::Partition,
            JoinMethod::BTreeInserts,
            JoinMethod::SortMerge,
        ];
        if let Some(method) = named.into_iter().find(|m| m.to_string() == s) {
            return Ok(method);
        }
        match s.strip_prefix("inlj:") {
            Some(kind) => kind.parse().map(JoinMethod::Inlj),
            None => Err(Error::param(
                "join method",
                format!(
                    "'{s}' is not one of inlj:KIND ({}), inlj:alex, merge, hash, grace, or over unsorted tables partition, btree-inserts, sort-merge",
                    IndexKind::ALL.map(IndexKind::name).join(", ")
                ),
            )),
        }
    }
}

impl From<Choice> for JoinMethod {
    /// The method the cost model's choice runs as (its INLJ through sampled PGM).
    fn from(choice: Choice) -> JoinMethod {
        match choice {
            Choice::Inlj => JoinMethod::Inlj(IndexKind::SampledPgm),
            Choice::Merge => JoinMethod::Merge,
            Choice::Hash => JoinMethod::Hash,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_parse_and_print_back() {
        assert_eq!("merge".parse::<JoinMethod>().ok(), Some(JoinMethod::Merge));
        assert_eq!(
            "inlj:sampled-pgm".parse::<JoinMethod>().ok(),
            Some(JoinMethod::Inlj(IndexKind::SampledPgm))
        );
        assert_eq!(
            "inlj:alex".parse::<JoinMethod>().ok(),
            Some(JoinMethod::InljAlex)
        );
        assert!("inlj:art".parse::<JoinMethod>().is_err());
        assert!("nested".parse::<JoinMethod>().is_err());
        for m in [
            "inlj:rs",
            "inlj:alex",
            "merge",
            "hash",
            "grace",
            "partition",
            "btree-inserts",
            "sort-merge",
        ] {
            assert_eq!(
                m.parse::<JoinMethod>()
                    .map(|m| m.to_string())
                    .ok()
                    .as_deref(),
                Some(m)
            );
        }
    }
}
