//! SQL over lidx tables through [Apache DataFusion](https://datafusion.apache.org): lidx
//! tables as DataFusion tables ([`table`]) that tell the planner their row counts, key
//! ranges and order, and the learned index nested loop join of paper 1 (sections 3 and 4.3)
//! as a DataFusion operator ([`join`]) that a physical optimizer rule ([`rule`]) puts in
//! place of the hash join where paper 1's cost model (section 3.2) predicts it faster.
//! [`session`] makes a session with the rule and registers files by path; `lidx sql` is
//! its command line.
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! use lidx_datafusion::session::{SqlOptions, context, register};
//! use lidx_datafusion::table::IndexSource;
//! use lidx::storage::ReadMode;
//!
//! let ctx = context(&SqlOptions::default());
//! register(&ctx, "r", "outer.tbl".as_ref(), &IndexSource::None, ReadMode::Buffered).await?;
//! register(&ctx, "s", "inner.tbl".as_ref(), &IndexSource::default_build(), ReadMode::Buffered).await?;
//! let batches = ctx.sql("SELECT count(*) FROM r JOIN s ON r.key = s.key").await?.collect().await?;
//! # Ok(()) }
//! ```

pub mod counts;
pub mod join;
pub mod keys;
pub mod parquet;
pub mod rule;
pub mod session;
pub mod table;

use datafusion::error::DataFusionError;

/// A lidx error as DataFusion's, kept whole so a caller can print its one line.
pub fn lidx_error(e: lidx::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The message of `e` without DataFusion's wrapping ("External error: ..."), for a
/// command line's one error line.
pub fn message(e: &DataFusionError) -> String {
    match e.find_root() {
        DataFusionError::External(inner) => inner.to_string(),
        root => root.to_string(),
    }
}
