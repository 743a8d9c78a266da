//! One module per subcommand; each has `Args` or `Command` and a `run`.

pub mod bench;
pub mod cache;
pub mod demo;
pub mod gen_keys;
pub mod table;

use std::path::Path;

use anyhow::Context as _;
use lidx::storage::AtomicFile;

/// Writes a CSV file atomically: `header` then one record per row.
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<String>]) -> anyhow::Result<()> {
    let mut csv = csv::Writer::from_writer(Vec::new());
    csv.write_record(header)?;
    for row in rows {
        csv.write_record(row)?;
    }
    let bytes = csv
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("{}: cannot encode CSV", path.display()))?;
    let mut out = AtomicFile::create(path)?;
    out.write_all(&bytes)?;
    out.finish()?;
    Ok(())
}
