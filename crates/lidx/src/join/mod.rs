//! Joins of two tables on disk (paper 1, sections 3, 4.3, 4.4 and 5): index nested loop
//! join through any [`Index`](crate::index::Index) ([`inlj`]) or through ALEX on disk
//! ([`alex`]) and sort-merge join ([`merge`]), which need sorted tables; hash and grace hash
//! join ([`hash`], [`grace`]), any order; and the joins of unsorted tables through
//! unclustered indexes ([`unclustered`]). Each counts the blocks, bytes and reads it costs;
//! [`parallel`] runs them on threads, [`cost`] is paper 1's cost model, and [`driver`] runs
//! one whole join of any method as `lidx join` does, returning a [`JoinRecord`].
//!
//! Every method emits the same multiset of `(key, outer value, inner value)` triples: one
//! for each pair of an outer and an inner tuple with equal keys (duplicates on both sides
//! give their cross product). Output goes to a [`JoinSink`]: a count, a vector, or a
//! [`SpillSink`] whose parts are copied into an output table in thread order.

pub mod alex;
pub mod cost;
pub mod driver;
pub mod grace;
pub mod hash;
pub mod inlj;
pub mod merge;
pub mod method;
pub mod output;
pub mod parallel;
pub mod record;
pub(crate) mod scan;
pub mod unclustered;

pub use driver::{JoinPlan, JoinRequest, JoinRun, Stage};
pub use grace::grace_hash_join;
pub use hash::{HASH_ENTRY_BYTES, HashTable, hash_join};
pub use inlj::{InljOptions, inlj, inlj_any, inlj_any_range, inlj_range, inlj_tuples};
pub use merge::{merge_join, merge_join_ranges};
pub use method::JoinMethod;
pub use output::SpillSink;
pub use parallel::{Method, parallel_join, parallel_join_with};
pub use record::{JoinRecord, UnclusteredFigures};

use crate::Result;
use crate::storage::IoStats;

/// Where a join's output triples go.
pub trait JoinSink {
    /// Takes one output triple.
    fn emit(&mut self, key: u64, outer_value: u64, inner_value: u64) -> Result<()>;
}

/// A sink borrowed, or chosen at run time (`&mut dyn JoinSink`), is a sink too.
impl<S: JoinSink + ?Sized> JoinSink for &mut S {
    fn emit(&mut self, key: u64, outer_value: u64, inner_value: u64) -> Result<()> {
        (**self).emit(key, outer_value, inner_value)
    }
}

/// Counts the output without keeping it (`--count-only`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountSink(pub u64);

impl JoinSink for CountSink {
    #[inline]
    fn emit(&mut self, _: u64, _: u64, _: u64) -> Result<()> {
        self.0 += 1;
        Ok(())
    }
}

impl JoinSink for Vec<(u64, u64, u64)> {
    #[inline]
    fn emit(&mut self, key: u64, outer_value: u64, inner_value: u64) -> Result<()> {
        self.push((key, outer_value, inner_value));
        Ok(())
    }
}

/// What a join did: the I/O on each side, the index lookups, the output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JoinStats {
    /// Reads of the outer table.
    pub outer_io: IoStats,
    /// Reads of the inner table.
    pub inner_io: IoStats,
    /// Index searches (INLJ only).
    pub lookups: u64,
    /// Output triples.
    pub output: u64,
    /// Bytes written to temporary partitions (grace hash join only).
    pub spilled_bytes: u64,
}
