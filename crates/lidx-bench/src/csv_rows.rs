//! CSV output as typed records: each study defines a row struct whose field names are the
//! CSV header, serialized with serde; no study builds or parses rows by column position.

use anyhow::Context as _;
use lidx::files::AtomicFile;
use serde::{Serialize, Serializer};

/// The version of lidx that wrote a row.
pub const LIDX_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A figure written with `D` digits after the point, so rows carry the precision a
/// measurement has rather than seventeen digits of noise (NaN is written `NaN`).
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Fixed<const D: usize>(pub f64);

impl<const D: usize> Serialize for Fixed<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{:.*}", D, self.0))
    }
}

/// Writes `rows` as CSV into `out` (an output not yet published): the header named by the
/// row type's fields, then one line per row (with no rows, the header alone).
pub fn write_rows<T: Serialize + Default>(out: &mut AtomicFile, rows: &[T]) -> anyhow::Result<()> {
    let encode = |rows: &[T]| -> anyhow::Result<Vec<u8>> {
        let mut csv = csv::Writer::from_writer(Vec::new());
        for row in rows {
            csv.serialize(row)?;
        }
        Ok(csv.into_inner().map_err(|e| e.into_error())?)
    };
    let bytes = match rows {
        // The header comes with the first row: take it from a default one.
        [] => encode(&[T::default()]).map(|mut one| {
            let end = one
                .iter()
                .position(|&b| b == b'\n')
                .map_or(one.len(), |i| i + 1);
            one.truncate(end);
            one
        }),
        rows => encode(rows),
    }
    .with_context(|| format!("{}: cannot encode CSV", out.path().display()))?;
    out.write_all(&bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Default)]
    struct Row {
        name: String,
        seconds: Fixed<3>,
        built: Option<Fixed<1>>,
    }

    #[test]
    fn rows_are_written_with_their_field_names_and_fixed_digits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.csv");
        let mut out = AtomicFile::create(&path).unwrap();
        let rows = [
            Row {
                name: "a, b".into(),
                seconds: Fixed(0.12345),
                built: None,
            },
            Row {
                name: "c".into(),
                seconds: Fixed(f64::NAN),
                built: Some(Fixed(2.0)),
            },
        ];
        write_rows(&mut out, &rows).unwrap();
        out.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "name,seconds,built\n\"a, b\",0.123,\nc,NaN,2.0\n");
        let mut out = AtomicFile::create(&path).unwrap();
        write_rows::<Row>(&mut out, &[]).unwrap();
        out.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "name,seconds,built\n"
        );
    }
}
