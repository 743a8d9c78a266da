//! One module per subcommand; each has `Args` or `Command` and a `run`.

pub mod bench;
pub mod cache;
pub mod demo;
pub mod experiment;
pub mod gen_keys;
pub mod hardness;
pub mod index;
pub mod join;
pub mod table;

use std::path::Path;

use anyhow::Context as _;
use lidx::files::AtomicFile;

/// Writes CSV to `out` (an output not yet published): `header` then one record per row.
pub fn write_csv(
    out: &mut AtomicFile,
    header: &[&str],
    rows: &[Vec<String>],
) -> anyhow::Result<()> {
    let mut csv = csv::Writer::from_writer(Vec::new());
    csv.write_record(header)?;
    for row in rows {
        csv.write_record(row)?;
    }
    let bytes = csv
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("{}: cannot encode CSV", out.path().display()))?;
    out.write_all(&bytes)?;
    Ok(())
}

/// Refuses an output path that names the input file itself (writing it would destroy the
/// input before it is read).
pub fn refuse_same_file(input: &Path, output: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(a), Ok(b)) = (std::fs::metadata(input), std::fs::metadata(output)) {
        if (a.dev(), a.ino()) == (b.dev(), b.ino()) {
            anyhow::bail!(
                "{}: the output is the input file {} itself; choose another output path",
                output.display(),
                input.display()
            );
        }
    }
    Ok(())
}
