//! Index files (`.idx`): a header that names the kind and the keys the index was built on,
//! the kind's payload, and a CRC32C of everything before it.
//!
//! | offset | size | field                                                 |
//! |-------:|-----:|-------------------------------------------------------|
//! | 0      | 8    | magic `LIDXIDX\0`                                     |
//! | 8      | 4    | format version (2; 1 is still read)                   |
//! | 12     | 1    | kind tag ([`IndexKind`])                              |
//! | 13     | 3    | reserved, zero                                        |
//! | 16     | 8    | keys indexed, n                                       |
//! | 24     | 8    | smallest key (0 when n = 0)                           |
//! | 32     | 8    | largest key (0 when n = 0)                            |
//! | 40     | 4    | CRC32C of the keys (little-endian `u64`s)             |
//! | 44     | 4    | reserved, zero                                        |
//! | 48     | 8    | payload length P                                      |
//! | 56     | P    | payload (see each kind's `encode`)                    |
//! | 56 + P | 4    | CRC32C of bytes `0 .. 56 + P`                          |
//!
//! The keys' facts let a join refuse an index built for another table before it reads a
//! block (the public peers' serialized indexes carry no magic, version or checksum).
//!
//! [`FileKind`] tells lidx's four kinds of index file apart by their magic (the `.idx`
//! files of this module, ALEX files, partitions files and inserted B+tree files), and
//! [`VerifyReport`] is what a full check of any of them reports; [`verify`] is the check of
//! an `.idx` file, each other kind's sits beside its reader.

#![deny(clippy::indexing_slicing)]

use std::fmt;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{AnyIndex, IndexKind, Window};
use crate::files::codec::{Decoder, Encoder};
use crate::files::{AtomicFile, map_readonly, open_regular};
use crate::storage::Table;
use crate::{Error, FormatError, Result};

/// The first eight bytes of every index file.
pub const MAGIC: [u8; 8] = FileKind::Index.magic();
/// Format version written; history: 1 = first version; 2 = PGM segments in 16 bytes (the
/// PGM payload gained a form field).
pub const VERSION: u32 = 2;
/// Oldest format version read.
pub const OLDEST_VERSION: u32 = 1;
const HEADER_BYTES: usize = 56;

/// The kinds of index file lidx writes, told apart by their first eight bytes: the
/// recognition `lidx index info` and `lidx index verify` share. Each kind's magic is
/// defined here, once, and its reader takes it from here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// An `.idx` file (this module): a kind of the index family over a sorted table.
    Index,
    /// An ALEX file (`updatable::alex::file`): ALEX's data nodes, holding a sorted table's
    /// tuples.
    Alex,
    /// A partitions file (`partition`): the learned partition index of an unsorted table.
    Partition,
    /// An inserted B+tree file (`partition::btree`): the B+tree built by inserts over an
    /// unsorted table.
    InsertedBTree,
}

impl FileKind {
    /// Every kind.
    pub const ALL: [FileKind; 4] = [
        FileKind::Index,
        FileKind::Alex,
        FileKind::Partition,
        FileKind::InsertedBTree,
    ];

    /// The first eight bytes of every file of this kind.
    pub const fn magic(self) -> [u8; 8] {
        match self {
            FileKind::Index => *b"LIDXIDX\0",
            FileKind::Alex => *b"LIDXALX\0",
            FileKind::Partition => *b"LIDXPRT\0",
            FileKind::InsertedBTree => *b"LIDXBTI\0",
        }
    }

    /// The kind whose magic `head` (a file's first bytes) starts with. Anything else is
    /// taken for an `.idx` file, so that its reader names what is wrong (wrong magic, or
    /// too short).
    pub fn of_head(head: &[u8]) -> FileKind {
        FileKind::ALL
            .into_iter()
            .find(|k| head.starts_with(&k.magic()))
            .unwrap_or(FileKind::Index)
    }

    /// The kind of the file at `path`, from its first eight bytes ([`of_head`](Self::of_head)).
    /// Fails only when the file cannot be opened or read, or is not a regular file.
    pub fn of_file(path: &Path) -> Result<FileKind> {
        let (file, len) = open_regular(path)?;
        let mut head = vec![0u8; len.min(8) as usize];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| Error::io(path, "read", e))?;
        Ok(FileKind::of_head(&head))
    }

    /// The kind's name as `lidx index build --kind` spells it (`index` for any `.idx`
    /// kind).
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Index => "index",
            FileKind::Alex => "alex",
            FileKind::Partition => "partition",
            FileKind::InsertedBTree => "btree-inserts",
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a full check of an index file of any kind found: counts of what was read and
/// checked. A check that finds a problem returns it as the error instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyReport {
    /// The file's kind.
    pub kind: FileKind,
    /// Bytes of the file: every one was read and checked.
    pub bytes: u64,
    /// CRC32Cs checked: an `.idx` file's one; or the header's, the tail's and every
    /// page's.
    pub checksums: u64,
    /// Pages (ALEX, partitions) or leaves (B+tree) read; 0 for an `.idx` file.
    pub pages: u64,
    /// Keys (`.idx`), tuples (ALEX, partitions) or entries (B+tree) the file holds, each
    /// checked.
    pub entries: u64,
    /// With a table: its tuples, each found by the index where the table holds it; `None`
    /// when no table was given.
    pub table_tuples: Option<u64>,
}

/// What an index file says about the keys it was built on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeysFingerprint {
    /// Number of keys.
    pub n: u64,
    /// Smallest key (0 when n = 0).
    pub min_key: u64,
    /// Largest key (0 when n = 0).
    pub max_key: u64,
    /// CRC32C of the keys as little-endian `u64`s.
    pub crc32c: u32,
}

impl KeysFingerprint {
    /// The fingerprint of `keys` (one pass, at memory speed).
    pub fn of(keys: &[u64]) -> KeysFingerprint {
        KeysFingerprint {
            n: keys.len() as u64,
            min_key: keys.first().copied().unwrap_or(0),
            max_key: keys.last().copied().unwrap_or(0),
            crc32c: crc32c::crc32c(bytemuck::cast_slice(keys)),
        }
    }
}

impl KeysFingerprint {
    /// Fails with [`Error::IndexMismatch`] unless `actual`, the fingerprint of the table at
    /// `table_path`, is this one, that of the keys the index at `index_path` was built on.
    pub fn check(
        &self,
        actual: &KeysFingerprint,
        index_path: &Path,
        table_path: &Path,
    ) -> Result<()> {
        if self == actual {
            return Ok(());
        }
        Err(Error::IndexMismatch {
            path: index_path.to_path_buf(),
            problem: format!(
                "the index was built for other keys than those of {} (index: {} keys, crc32c {:#010x}; table: {} keys, crc32c {:#010x}); rebuild it",
                table_path.display(),
                self.n,
                self.crc32c,
                actual.n,
                actual.crc32c
            ),
        })
    }
}

/// Loads the index file at `path` and checks it against `table` as far as the table's
/// header allows: the number of keys and their range (the keys' CRC needs every key; see
/// [`KeysFingerprint::check`]).
pub fn load_for(path: &Path, table: &Table) -> Result<AnyIndex> {
    let (index, stored) = load(path)?;
    check_table(path, &stored, table)?;
    Ok(index)
}

/// Fails with [`Error::IndexMismatch`] unless the index at `path`, built on keys with
/// fingerprint `stored`, agrees with `table`'s header: the number of keys and their range.
pub fn check_table(path: &Path, stored: &KeysFingerprint, table: &Table) -> Result<()> {
    let h = table.header();
    let from_header = KeysFingerprint {
        n: h.count,
        min_key: h.min_key,
        max_key: h.max_key,
        crc32c: stored.crc32c,
    };
    stored.check(&from_header, path, table.path())
}

/// Encodes `index` built on keys with `fingerprint` as index-file bytes.
pub fn encode(index: &AnyIndex, fingerprint: &KeysFingerprint) -> Vec<u8> {
    let mut payload = Vec::new();
    index.encode(&mut payload);
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len() + 4);
    let mut e = Encoder(&mut out);
    for b in MAGIC {
        e.u8(b);
    }
    e.u32(VERSION);
    e.u8(index.kind() as u8);
    for _ in 0..3 {
        e.u8(0);
    }
    e.u64(fingerprint.n);
    e.u64(fingerprint.min_key);
    e.u64(fingerprint.max_key);
    e.u32(fingerprint.crc32c);
    e.u32(0);
    e.u64(payload.len() as u64);
    out.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes index-file bytes: magic, version, checksum, header, then the kind's payload.
pub fn decode(bytes: &[u8]) -> Result<(AnyIndex, KeysFingerprint), FormatError> {
    decode_with_version(bytes).map(|(index, fp, _)| (index, fp))
}

/// [`decode`], also returning the file's format version.
fn decode_with_version(bytes: &[u8]) -> Result<(AnyIndex, KeysFingerprint, u32), FormatError> {
    let head = bytes.get(..MAGIC.len()).unwrap_or(bytes);
    if MAGIC.get(..head.len()) != Some(head) {
        return Err(FormatError::BadMagic {
            expected: "lidx index file",
            found: head.to_vec(),
        });
    }
    let Some((body, crc)) = bytes
        .split_last_chunk::<4>()
        .filter(|(b, _)| b.len() >= HEADER_BYTES)
    else {
        return Err(FormatError::Truncated {
            what: "an index file header",
            expected: HEADER_BYTES as u64 + 4,
            actual: bytes.len() as u64,
        });
    };
    let mut d = Decoder::new(body, "an index file header");
    for _ in 0..MAGIC.len() {
        d.u8()?;
    }
    let version = d.u32()?;
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(FormatError::UnsupportedVersion {
            found: version,
            oldest: OLDEST_VERSION,
            newest: VERSION,
        });
    }
    let stored = u32::from_le_bytes(*crc);
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(FormatError::FileChecksum {
            expected: stored,
            got: computed,
        });
    }
    let tag = d.u8()?;
    let kind = IndexKind::from_tag(tag).ok_or(FormatError::BadField {
        field: "index kind",
        value: tag.into(),
        expected: "a kind this build knows (pgm, sampled-pgm, rs, rmi, btree, binary)",
    })?;
    let reserved = [d.u8()?, d.u8()?, d.u8()?];
    let fingerprint = KeysFingerprint {
        n: d.u64()?,
        min_key: d.u64()?,
        max_key: d.u64()?,
        crc32c: d.u32()?,
    };
    let reserved2 = d.u32()?;
    if reserved != [0; 3] || reserved2 != 0 {
        return Err(FormatError::NonZeroPadding {
            what: "the index file header",
        });
    }
    let payload_len = d.u64()?;
    let payload = body.get(HEADER_BYTES..).unwrap_or_default();
    if payload_len != payload.len() as u64 {
        return Err(FormatError::CountMismatch {
            count: payload_len,
            unit: "payload bytes",
            expected: HEADER_BYTES as u64 + payload_len + 4,
            actual: bytes.len() as u64,
        });
    }
    let index = AnyIndex::decode_version(kind, payload, version)?;
    if index.len() != fingerprint.n {
        return Err(FormatError::HeaderDisagrees {
            field: "key count",
            header: fingerprint.n,
            data: index.len(),
        });
    }
    if fingerprint.min_key > fingerprint.max_key {
        return Err(FormatError::BadField {
            field: "smallest key",
            value: fingerprint.min_key,
            expected: "at most the largest key",
        });
    }
    Ok((index, fingerprint, version))
}

/// Saves `index` (built on keys with `fingerprint`) at `path`, atomically.
pub fn save(path: &Path, index: &AnyIndex, fingerprint: &KeysFingerprint) -> Result<()> {
    let mut out = AtomicFile::create(path)?;
    out.write_all(&encode(index, fingerprint))?;
    out.finish()
}

/// Loads the index file at `path`: maps it into memory and decodes it (the structures are
/// rebuilt from the mapped bytes once; their fields are interleaved in the file, so they are
/// not used in place).
pub fn load(path: &Path) -> Result<(AnyIndex, KeysFingerprint)> {
    with_bytes(path, decode)
}

/// Calls `parse` on the bytes of the file at `path` (mapped, or read when too short to map
/// or to be an index) and names the file in its error.
fn with_bytes<T>(path: &Path, parse: impl FnOnce(&[u8]) -> Result<T, FormatError>) -> Result<T> {
    let (file, len) = open_regular(path)?;
    if len < (HEADER_BYTES + 4) as u64 {
        // Too short to map (or to be an index): decode the few bytes to say what is wrong.
        let mut head = vec![0u8; len as usize];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| Error::io(path, "read", e))?;
        return parse(&head).map_err(|p| Error::format(path, p));
    }
    let len = usize::try_from(len).map_err(|_| {
        Error::format(
            path,
            FormatError::BadField {
                field: "file length",
                value: len,
                expected: "a length this machine can map",
            },
        )
    })?;
    let map = map_readonly(&file, path, 0, len)?;
    parse(&map).map_err(|p| Error::format(path, p))
}

/// Reads the whole `.idx` file at `path` and checks everything its format has
/// ([`verify_bytes`]). With `table` (sorted (key, value) tuples), also checks that the index
/// was built on exactly the table's keys (count, range and CRC, [`KeysFingerprint::check`])
/// and that every key's window holds the key's position ([`check_keys`]): the check that
/// catches a file whose checksum was recomputed after a change.
pub fn verify(path: &Path, table: Option<&Table>) -> Result<VerifyReport> {
    let (index, fp, bytes) = with_bytes(path, |b| {
        verify_bytes(b).map(|(i, fp)| (i, fp, b.len() as u64))
    })?;
    let mut report = VerifyReport {
        kind: FileKind::Index,
        bytes,
        checksums: 1,
        pages: 0,
        entries: fp.n,
        table_tuples: None,
    };
    if let Some(table) = table {
        table.require_sorted("verifying an index against a table")?;
        let keys = table.read_keys()?;
        fp.check(&KeysFingerprint::of(&keys), path, table.path())?;
        let checked = check_keys(&index, &keys).map_err(|p| Error::format(path, p))?;
        report.table_tuples = Some(checked);
    }
    Ok(report)
}

/// Decodes `.idx` bytes as [`decode`] does, then checks what the bytes alone allow beyond
/// it: that encoding the decoded index gives back exactly these bytes (so no padding byte,
/// and no bit a decoder passes over, differs; version-1 files, whose pgm payloads this
/// build writes in version 2's form, are exempt), and that the windows of the keys the
/// header names hold their lower bounds: 0 for keys up to the smallest key, `n` for keys
/// past the largest, each window inside `0..=n` and no wider than
/// [`max_width`](AnyIndex::max_width).
pub fn verify_bytes(bytes: &[u8]) -> Result<(AnyIndex, KeysFingerprint), FormatError> {
    let (index, fp, version) = decode_with_version(bytes)?;
    if version == VERSION {
        let again = encode(&index, &fp);
        if again != bytes {
            let at = again.iter().zip(bytes).position(|(a, b)| a != b);
            return Err(FormatError::Inconsistent(match at {
                Some(at) => format!(
                    "byte {at} is {:#04x}, where the index it decodes to has {:#04x}",
                    bytes.get(at).copied().unwrap_or(0),
                    again.get(at).copied().unwrap_or(0)
                ),
                None => format!(
                    "the file has {} bytes, the index it decodes to {}",
                    bytes.len(),
                    again.len()
                ),
            }));
        }
    }
    // Keys whose lower bound the header gives: 0 up to the smallest key, n past the largest.
    let mut probes = vec![(0, 0), (fp.min_key, 0)];
    if let Some(past) = fp.max_key.checked_add(1) {
        probes.extend([(past, fp.n), (u64::MAX, fp.n)]);
    }
    for (key, lower_bound) in probes {
        check_window(&index, key, lower_bound, index.search(key))?;
    }
    Ok((index, fp))
}

/// Checks `index` against the sorted `keys` it says it was built on: the window of each
/// distinct key holds the key's first position, the window of the key just past each run
/// of equal keys (where that key is absent) holds the position after the run, and those
/// of 0 and `u64::MAX` hold theirs; no window is wider than
/// [`max_width`](AnyIndex::max_width) or reaches past `n`; and
/// [`search_from`](AnyIndex::search_from), with one hint along these ascending keys, gives
/// [`search`](AnyIndex::search)'s windows. Returns the keys checked, `keys.len()`.
pub fn check_keys(index: &AnyIndex, keys: &[u64]) -> Result<u64, FormatError> {
    let n = keys.len() as u64;
    if index.len() != n {
        return Err(FormatError::HeaderDisagrees {
            field: "key count",
            header: index.len(),
            data: n,
        });
    }
    let mut hint = 0usize;
    let mut last: Option<u64> = None;
    let mut probe = |key: u64, lower_bound: u64| -> Result<(), FormatError> {
        if last.is_some_and(|l| l >= key) {
            return Ok(());
        }
        last = Some(key);
        let window = index.search(key);
        check_window(index, key, lower_bound, window)?;
        let from_hint = index.search_from(key, &mut hint);
        if from_hint != window {
            return Err(FormatError::Inconsistent(format!(
                "the window of key {key} is {}..{} from a search and {}..{} from a hint",
                window.lo, window.hi, from_hint.lo, from_hint.hi
            )));
        }
        Ok(())
    };
    probe(0, 0)?;
    let mut start = 0u64;
    for run in keys.chunk_by(|a, b| a == b) {
        let key = run.first().copied().unwrap_or(0);
        let end = start + run.len() as u64;
        probe(key, start)?;
        if let Some(next) = key.checked_add(1) {
            probe(next, end)?;
        }
        start = end;
    }
    probe(u64::MAX, n)?;
    Ok(n)
}

/// Fails unless `window`, the one `index` gives `key`, holds `lower_bound` (`lo <=
/// lower_bound <= hi <= n`) and is no wider than the index's largest width.
fn check_window(
    index: &AnyIndex,
    key: u64,
    lower_bound: u64,
    window: Window,
) -> Result<(), FormatError> {
    let Window { lo, hi } = window;
    let problem = if lo > hi || hi > index.len() {
        format!("is outside 0..={}", index.len())
    } else if !(lo..=hi).contains(&lower_bound) {
        format!("does not hold the key's lower bound {lower_bound}")
    } else if hi - lo > index.max_width() {
        format!("is wider than the index's {} positions", index.max_width())
    } else {
        return Ok(());
    };
    Err(FormatError::Inconsistent(format!(
        "the window of key {key} is {lo}..{hi}, which {problem}"
    )))
}

#[cfg(test)]
#[expect(
    clippy::indexing_slicing,
    reason = "tests may index: a panic is a failed test"
)]
pub(crate) mod tests {
    use std::path::PathBuf;

    use proptest::prelude::*;

    use super::*;
    use crate::index::{AnyParams, BTreeParams, PgmParams, RadixSplineParams, RmiParams};
    use crate::storage::ValueSource;
    use crate::storage::table::build_from_keys;

    /// Unsorted key sets of 1 to about 700 keys for the verify tests of every kind of index
    /// file: keys anywhere, keys near 0 and `u64::MAX` (both included), a dense range, and
    /// a run of one of them repeated up to 300 times.
    pub(crate) fn key_set() -> impl Strategy<Value = Vec<u64>> {
        let key = prop_oneof![
            3 => any::<u64>(),
            2 => 0u64..3,
            2 => (u64::MAX - 2)..=u64::MAX,
            3 => 1000u64..1100,
        ];
        (prop::collection::vec(key, 1..400), 0usize..300).prop_map(|(mut keys, run)| {
            let repeated = keys[keys.len() / 2];
            keys.extend(std::iter::repeat_n(repeated, run));
            keys
        })
    }

    /// A sorted table of `keys` (values: row numbers) in `dir`.
    fn sorted_table(dir: &Path, keys: &mut [u64]) -> Table {
        keys.sort_unstable();
        let path = dir.join("s.tbl");
        build_from_keys(keys, ValueSource::RowId, &path, |_| {}).unwrap();
        Table::open(&path).unwrap()
    }

    /// Default and narrow settings of every kind, the narrow ones making many segments,
    /// points, leaves and nodes on small key sets.
    fn all_params() -> Vec<AnyParams> {
        let mut params: Vec<AnyParams> = IndexKind::ALL
            .into_iter()
            .map(AnyParams::default_for)
            .collect();
        params.extend([
            AnyParams::Pgm(PgmParams {
                epsilon: 1,
                epsilon_rec: 1,
                max_height: 4,
            }),
            AnyParams::RadixSpline(RadixSplineParams {
                epsilon: 2,
                radix_bits: 3,
            }),
            AnyParams::Rmi(RmiParams {
                max_window: 4,
                branching: 16,
                ..RmiParams::default()
            }),
            AnyParams::BTree(BTreeParams { every: 1 }),
        ]);
        params.extend(AnyParams::for_width(IndexKind::SampledPgm, 16));
        params
    }

    fn golden(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(name)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn valid_files_of_every_kind_verify_against_their_table(mut keys in key_set()) {
            let dir = tempfile::tempdir().unwrap();
            let table = sorted_table(dir.path(), &mut keys);
            let path = dir.path().join("s.idx");
            for params in all_params() {
                let index = AnyIndex::build(&keys, &params).unwrap();
                save(&path, &index, &KeysFingerprint::of(&keys)).unwrap();
                let alone = verify(&path, None).unwrap();
                let report = verify(&path, Some(&table)).unwrap();
                prop_assert_eq!(report.table_tuples, Some(keys.len() as u64), "{}", params);
                prop_assert_eq!(
                    (alone.kind, alone.bytes, alone.checksums, alone.entries),
                    (FileKind::Index, std::fs::metadata(&path).unwrap().len(), 1, keys.len() as u64)
                );
            }
        }
    }

    #[test]
    fn golden_files_of_both_versions_verify_against_their_table() {
        let table = Table::open(&golden("v1-small.tbl")).unwrap();
        for version in ["v1", "v2"] {
            for kind in IndexKind::ALL {
                let path = golden(&format!("{version}-{kind}.idx"));
                let report = verify(&path, Some(&table)).unwrap();
                assert_eq!(report.table_tuples, Some(300), "{}", path.display());
            }
        }
    }

    #[test]
    fn an_epsilon_forged_with_its_checksum_loads_but_fails_verify_against_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let mut keys = crate::data::generate(&crate::data::GenParams::new(
            crate::data::Distribution::Lognormal,
            3000,
            1,
        ))
        .unwrap();
        let table = sorted_table(dir.path(), &mut keys);
        let index = AnyIndex::build(&keys, &AnyParams::default_for(IndexKind::Pgm)).unwrap();
        let mut bytes = encode(&index, &KeysFingerprint::of(&keys));
        // The pgm payload starts with ε: 127 becomes 1, and the file's CRC is made to fit.
        assert_eq!(bytes[HEADER_BYTES..HEADER_BYTES + 8], 127u64.to_le_bytes());
        bytes[HEADER_BYTES..HEADER_BYTES + 8].copy_from_slice(&1u64.to_le_bytes());
        let body = bytes.len() - 4;
        let crc = crc32c::crc32c(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
        let path = dir.path().join("forged.idx");
        std::fs::write(&path, &bytes).unwrap();

        load_for(&path, &table).unwrap();
        verify(&path, None).unwrap();
        let err = verify(&path, Some(&table)).unwrap_err().to_string();
        assert!(
            err.contains("forged.idx: the window of key") && err.contains("does not hold"),
            "{err}"
        );
    }

    #[test]
    fn a_non_zero_reserved_word_is_refused_by_load_and_verify() {
        // RadixSpline's payload has two reserved words, always written as zero.
        let keys: Vec<u64> = (0..3000).map(|i| i * 7).collect();
        let index =
            AnyIndex::build(&keys, &AnyParams::default_for(IndexKind::RadixSpline)).unwrap();
        let mut bytes = encode(&index, &KeysFingerprint::of(&keys));
        let reserved = HEADER_BYTES + 8 + 4 + 5 * 8;
        assert_eq!(bytes[reserved..reserved + 16], [0; 16]);
        bytes[reserved + 3] = 0x40;
        let body = bytes.len() - 4;
        let crc = crc32c::crc32c(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
        for err in [
            decode(&bytes).unwrap_err().to_string(),
            verify_bytes(&bytes).unwrap_err().to_string(),
        ] {
            assert!(err.contains("reserved words"), "{err}");
        }
    }

    #[test]
    fn a_btree_whose_node_padding_is_not_the_largest_key_is_refused() {
        // A search reads the last node of a level whole: its padding must stay above every
        // key, or keys past the last separator would go to the wrong window.
        let keys: Vec<u64> = (0..3000).collect();
        let index = AnyIndex::build(&keys, &AnyParams::default_for(IndexKind::BTree)).unwrap();
        let mut bytes = encode(&index, &KeysFingerprint::of(&keys));
        let last_pad = bytes.len() - 5;
        assert_eq!(bytes[last_pad], 0xff);
        bytes[last_pad] = 0x7f;
        let body = bytes.len() - 4;
        let crc = crc32c::crc32c(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
        let err = decode(&bytes).unwrap_err().to_string();
        assert!(err.contains("B+tree node padding"), "{err}");
    }

    #[test]
    fn file_kinds_are_told_by_their_magic() {
        for kind in FileKind::ALL {
            assert_eq!(FileKind::of_head(&kind.magic()), kind);
        }
        assert_eq!(FileKind::of_head(b"LIDXTBL\0"), FileKind::Index);
        assert_eq!(FileKind::of_head(b"LIDX"), FileKind::Index);
    }
}
