//! What a file is, from its bytes: [`sniff`], the one recognition every command that takes
//! "a file of some kind" shares. Each kind's magic is defined once, by its format's module;
//! this reads them from there.
//!
//! - lidx's own files start with their eight-byte magic: a table (`LIDXTBL`), an index file
//!   of any kind ([`FileKind`]), or, at the start of its footer in the last
//!   [`FOOTER`](crate::kv::file::FOOTER) bytes, a key-value file (`LIDXKV`).
//! - An SOSD key file has no magic: it is a file whose first eight bytes count the eight-byte
//!   keys that follow, to the byte.
//! - Anything else is [`Sniffed::Other`] (a TSV of records, say): the reader of the format
//!   the caller expects names what is wrong with it.

use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::files::open_regular;
use crate::index::file::FileKind;
use crate::{Error, Result};

/// What [`sniff`] found a file to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sniffed {
    /// A `.tbl` table.
    Table,
    /// An index file of this kind (`.idx`, ALEX, partitions, inserted B+tree).
    Index(FileKind),
    /// A key-value file.
    Kv,
    /// An SOSD key file: a `u64` count, then exactly that many `u64` keys.
    SosdKeys,
    /// None of these.
    Other,
}

/// Reads the first bytes of the regular file at `path` (and, for a key-value file, its
/// footer's first bytes) and says what it is. Fails only where the file cannot be opened
/// or read.
pub fn sniff(path: &Path) -> Result<Sniffed> {
    let (file, len) = open_regular(path)?;
    let read_at = |at: u64| -> Result<Option<[u8; 8]>> {
        let mut bytes = [0u8; 8];
        if at.checked_add(8).is_none_or(|end| end > len) {
            return Ok(None);
        }
        file.read_exact_at(&mut bytes, at)
            .map_err(|e| Error::io(path, "read the first bytes of", e))?;
        Ok(Some(bytes))
    };
    let Some(head) = read_at(0)? else {
        return Ok(Sniffed::Other);
    };
    if head == crate::storage::format::MAGIC {
        return Ok(Sniffed::Table);
    }
    if let Some(kind) = FileKind::ALL.into_iter().find(|k| head == k.magic()) {
        return Ok(Sniffed::Index(kind));
    }
    let footer = crate::kv::file::FOOTER as u64;
    if let Some(at) = len.checked_sub(footer)
        && read_at(at)? == Some(crate::kv::file::MAGIC)
    {
        return Ok(Sniffed::Kv);
    }
    let count = u64::from_le_bytes(head);
    if count.checked_mul(8).and_then(|b| b.checked_add(8)) == Some(len) {
        return Ok(Sniffed::SosdKeys);
    }
    Ok(Sniffed::Other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::write_keys;
    use crate::storage::ValueSource;
    use crate::storage::table::build_from_keys;

    #[test]
    fn each_kind_is_told_apart() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let d = dir.path();
        let keys: Vec<u64> = (0..1000).map(|i| i * 7).collect();
        write_keys(&d.join("k.keys"), &keys).expect("keys");
        build_from_keys(&keys, ValueSource::RowId, &d.join("t.tbl"), |_| {}).expect("table");
        let index = crate::index::AnyIndex::build(
            &keys,
            &crate::index::AnyParams::default_for(crate::index::IndexKind::Pgm),
        )
        .expect("an index");
        crate::index::file::save(
            &d.join("t.idx"),
            &index,
            &crate::index::file::KeysFingerprint::of(&keys),
        )
        .expect("saved");
        std::fs::write(d.join("r.tsv"), "1\tone\n2\ttwo\n").expect("tsv");
        std::fs::write(d.join("short"), "abc").expect("short");
        // Eight bytes counting one key, and one byte too many.
        let mut off = 1u64.to_le_bytes().to_vec();
        off.extend([0u8; 9]);
        std::fs::write(d.join("off.keys"), &off).expect("off by one");
        for (name, want) in [
            ("k.keys", Sniffed::SosdKeys),
            ("t.tbl", Sniffed::Table),
            ("t.idx", Sniffed::Index(FileKind::Index)),
            ("r.tsv", Sniffed::Other),
            ("short", Sniffed::Other),
            ("off.keys", Sniffed::Other),
        ] {
            assert_eq!(sniff(&d.join(name)).ok(), Some(want), "{name}");
        }
        assert!(sniff(&d.join("missing")).is_err());
        assert!(sniff(d).is_err(), "a directory is refused");
    }
}
