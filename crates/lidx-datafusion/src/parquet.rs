//! A lidx table as a Parquet file of the same tuples: what a DataFusion user would join
//! instead, so a comparison reads the same rows from each (`lidx table export --format
//! parquet`, and the SQL join study's baseline). Written in key order with the table's
//! order declared in the file's metadata (so DataFusion knows it is sorted), row-group and
//! page statistics on, written whole and renamed into place.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::metadata::SortingColumn;
use datafusion::parquet::file::properties::WriterProperties;
use lidx::files::AtomicFile;
use lidx::storage::Table;
use lidx::{Error, Result};

/// Rows per row group: DataFusion's own default for the files it writes.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// How the file's pages are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParquetCompression {
    /// None: the fewest CPU cycles per row read.
    None,
    /// Snappy.
    Snappy,
    /// Zstandard at level 3 (what DataFusion's `COPY TO` writes).
    Zstd,
}

/// [`AtomicFile`] as a [`Write`] for Parquet's writer.
struct Sink(AtomicFile);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .write_all(bytes)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes `table`'s pairs to a Parquet file at `out` (columns `key`, `value`, `UInt64`,
/// never null), `compression` on its pages; `progress` hears how many tuples are written.
/// Returns the file's bytes. A join's output table is refused (export its pairs only).
pub fn export(
    table: &Table,
    out: &Path,
    compression: ParquetCompression,
    mut progress: impl FnMut(u64),
) -> Result<u64> {
    table.require_pairs("exporting to Parquet")?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::UInt64, false),
        Field::new("value", DataType::UInt64, false),
    ]));
    let codec = match compression {
        ParquetCompression::None => Compression::UNCOMPRESSED,
        ParquetCompression::Snappy => Compression::SNAPPY,
        ParquetCompression::Zstd => Compression::ZSTD(ZstdLevel::default()),
    };
    let mut props = WriterProperties::builder()
        .set_compression(codec)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
    if table.header().sorted {
        props = props.set_sorting_columns(Some(vec![SortingColumn {
            column_idx: 0,
            descending: false,
            nulls_first: false,
        }]));
    }
    let failed = |e: datafusion::parquet::errors::ParquetError| {
        Error::param("Parquet output", format!("{}: {e}", out.display()))
    };
    let file = AtomicFile::create(out)?;
    let mut writer = ArrowWriter::try_new(Sink(file), Arc::clone(&schema), Some(props.build()))
        .map_err(failed)?;
    let mut done = 0u64;
    table.scan_in_chunks(8 << 20, |tuples| {
        let keys: ArrayRef = Arc::new(UInt64Array::from_iter_values(tuples.iter().map(|t| t.key)));
        let values: ArrayRef = Arc::new(UInt64Array::from_iter_values(
            tuples.iter().map(|t| t.value),
        ));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![keys, values])
            .map_err(|e| Error::param("Parquet output", e.to_string()))?;
        writer.write(&batch).map_err(failed)?;
        done += tuples.len() as u64;
        progress(done);
        Ok(())
    })?;
    let Sink(file) = writer.into_inner().map_err(failed)?;
    file.finish()?;
    Ok(std::fs::metadata(out)
        .map_err(|e| Error::io(out, "read the size of", e))?
        .len())
}
