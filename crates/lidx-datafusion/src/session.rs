//! A DataFusion session that knows lidx: [`context`] makes one with the learned INLJ rule
//! in its optimizer ([`crate::rule`]), and [`register`] names a file as a table, whatever
//! it is (a lidx table, a Parquet file), recognised from its bytes.

use std::path::Path;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::context::SessionContext;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::prelude::{ParquetReadOptions, SessionConfig};
use lidx::join::InljOptions;
use lidx::sniff::{Sniffed, sniff};
use lidx::storage::profile::StorageProfile;
use lidx::storage::{IoBackend, ReadMode};

use crate::lidx_error;
use crate::rule::{IndexJoin, LearnedJoinRule};
use crate::table::{IndexSource, LidxTable};

/// Reads of windows the learned INLJ keeps in flight unless told otherwise: deep enough to
/// keep an SSD's queue busy (paper 1's single read at a time is `1`).
pub const DEFAULT_IO_DEPTH: usize = 32;

/// How a session plans and runs queries.
#[derive(Clone, Debug)]
pub struct SqlOptions {
    /// Partitions DataFusion splits work into (its `target_partitions`): the threads.
    pub threads: usize,
    /// When the learned INLJ replaces a hash join.
    pub index_join: IndexJoin,
    /// The device the cost model predicts for.
    pub profile: StorageProfile,
    /// Reads of windows each learned INLJ keeps in flight.
    pub io_depth: usize,
    /// What keeps them in flight.
    pub io_backend: IoBackend,
    /// How lidx tables are read (Parquet files go through the page cache).
    pub mode: ReadMode,
}

impl Default for SqlOptions {
    /// Two threads, the cost model's pick on an assumed SSD, [`DEFAULT_IO_DEPTH`], buffered.
    fn default() -> Self {
        SqlOptions {
            threads: 2,
            index_join: IndexJoin::Auto,
            profile: lidx::join::cost::assumed_ssd(),
            io_depth: DEFAULT_IO_DEPTH,
            io_backend: IoBackend::Auto,
            mode: ReadMode::Buffered,
        }
    }
}

/// A session planning with DataFusion's own rules and, right after its `join_selection`,
/// [`LearnedJoinRule`].
pub fn context(options: &SqlOptions) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(options.threads.max(1));
    let rule = LearnedJoinRule {
        mode: options.index_join,
        profile: options.profile.clone(),
        options: InljOptions {
            mode: options.mode,
            io_depth: options.io_depth.max(1),
            io_backend: options.io_backend,
            ..InljOptions::default()
        },
    };
    let mut rules = PhysicalOptimizer::new().rules;
    let at = rules
        .iter()
        .position(|r| r.name() == "join_selection")
        .map_or(0, |i| i + 1);
    rules.insert(at, Arc::new(rule));
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_physical_optimizer_rules(rules)
        .build();
    SessionContext::new_with_state(state)
}

/// What [`register`] found a file to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFile {
    /// A lidx table, with an index or without.
    Lidx {
        /// It has an index to look its keys up through.
        indexed: bool,
    },
    /// A Parquet file.
    Parquet,
}

/// The first four bytes of a Parquet file.
const PARQUET_MAGIC: &[u8; 4] = b"PAR1";

/// Names the file at `path` `name` in `ctx`: a lidx table (with its index from `index`
/// where it is a sorted table of pairs; [`IndexSource::None`] leaves it unindexed) or a
/// Parquet file. Fails naming the file when it is neither, is damaged, or a saved index
/// does not fit it.
pub async fn register(
    ctx: &SessionContext,
    name: &str,
    path: &Path,
    index: &IndexSource,
    mode: ReadMode,
) -> Result<TableFile> {
    let kind = sniff(path).map_err(lidx_error)?;
    match kind {
        Sniffed::Table => {
            let (path, index) = (path.to_path_buf(), index.clone());
            // Opening may build an index over every key: off the async threads.
            let table = tokio::task::spawn_blocking(move || LidxTable::open(&path, &index, mode))
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?
                .map_err(lidx_error)?;
            let indexed = table.index().is_some();
            ctx.register_table(name, Arc::new(table))?;
            Ok(TableFile::Lidx { indexed })
        }
        Sniffed::Other if is_parquet(path)? => {
            if matches!(index, IndexSource::Saved(_)) {
                return Err(DataFusionError::Plan(format!(
                    "{}: a Parquet file takes no lidx index",
                    path.display()
                )));
            }
            let Some(text) = path.to_str() else {
                return Err(DataFusionError::Plan(format!(
                    "{}: DataFusion reads Parquet files by paths in UTF-8 only",
                    path.display()
                )));
            };
            ctx.register_parquet(name, text, ParquetReadOptions::default())
                .await?;
            Ok(TableFile::Parquet)
        }
        other => Err(DataFusionError::Plan(format!(
            "{}: not a table SQL can read ({}); give a lidx table (.tbl) or a Parquet file",
            path.display(),
            describe(other)
        ))),
    }
}

/// What a sniffed file is, in words.
fn describe(kind: Sniffed) -> String {
    match kind {
        Sniffed::Table => "a lidx table".into(),
        Sniffed::Index(kind) => format!("an index file ({})", kind.name()),
        Sniffed::Kv => "a key-value file".into(),
        Sniffed::SosdKeys => "an SOSD key file".into(),
        Sniffed::Other => "not a file lidx knows".into(),
    }
}

/// True when the file starts with Parquet's magic.
fn is_parquet(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut head = [0u8; 4];
    let mut file = std::fs::File::open(path)
        .map_err(|e| DataFusionError::External(Box::new(lidx::Error::io(path, "open", e))))?;
    Ok(file.read_exact(&mut head).is_ok() && &head == PARQUET_MAGIC)
}
