//! Records for a key-value file: read from a TSV file (one record per line, key TAB value,
//! bytes as given, no tab or newline inside) or an SOSD key file (`u64` keys, value = the
//! key's position as a decimal string), then sorted and checked for duplicates; and the
//! paper's records generated (section 5: random integer keys encoded as strings, values
//! of a fixed size).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::keys::{KeyEncoding, display_key, u64_key};
use super::write::Record;
use crate::data::KeyFile;
use crate::files::{AtomicFile, open_regular};
use crate::{Error, FormatError, Result};

/// Where a record's key and value lie in an input's bytes.
#[derive(Clone, Copy, Debug)]
struct Span {
    key: usize,
    key_len: u32,
    value: usize,
    value_len: u32,
}

enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
    Empty,
}

/// An input's records, sorted by key, each key once.
pub struct RecordInput {
    path: PathBuf,
    bytes: Bytes,
    spans: Vec<Span>,
    encoding: KeyEncoding,
}

impl RecordInput {
    /// Reads the TSV file at `path`.
    pub fn tsv(path: &Path) -> Result<RecordInput> {
        let (file, len) = open_regular(path)?;
        let bytes = if len == 0 {
            Bytes::Empty
        } else {
            let len = usize::try_from(len)
                .map_err(|_| Error::param("input", "a file larger than the address space"))?;
            Bytes::Mapped(crate::files::map_readonly(&file, path, 0, len)?)
        };
        let mut input = RecordInput {
            path: path.to_path_buf(),
            bytes,
            spans: Vec::new(),
            encoding: KeyEncoding::Bytes,
        };
        input.spans = parse_tsv(input.data(), path)?;
        input.sort_and_check()?;
        Ok(input)
    }

    /// Reads the SOSD key file at `path`: key `i` (in file order) gets the value `i` as a
    /// decimal string; keys are stored as `encoding` says (`u64-be` or `decimal`).
    pub fn sosd(path: &Path, encoding: KeyEncoding) -> Result<RecordInput> {
        if encoding == KeyEncoding::Bytes {
            return Err(Error::param(
                "key encoding",
                "an SOSD file's u64 keys are stored as u64-be or decimal",
            ));
        }
        let keys = KeyFile::open(path)?;
        let mut owned = Vec::new();
        let mut spans = Vec::with_capacity(keys.len());
        for (i, &k) in keys.keys().iter().enumerate() {
            let key = owned.len();
            match encoding {
                KeyEncoding::Decimal => owned.extend_from_slice(k.to_string().as_bytes()),
                _ => owned.extend_from_slice(&u64_key(k)),
            }
            let value = owned.len();
            owned.extend_from_slice(i.to_string().as_bytes());
            spans.push(Span {
                key,
                key_len: (value - key) as u32,
                value,
                value_len: (owned.len() - value) as u32,
            });
        }
        let mut input = RecordInput {
            path: path.to_path_buf(),
            bytes: Bytes::Owned(owned),
            spans,
            encoding,
        };
        input.sort_and_check()?;
        Ok(input)
    }

    fn data(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
            Bytes::Empty => &[],
        }
    }

    fn key(&self, s: &Span) -> &[u8] {
        &self.data()[s.key..s.key + s.key_len as usize]
    }

    fn sort_and_check(&mut self) -> Result<()> {
        let mut spans = std::mem::take(&mut self.spans);
        if spans.windows(2).any(|w| self.key(&w[0]) > self.key(&w[1])) {
            spans.sort_unstable_by(|a, b| self.key(a).cmp(self.key(b)));
        }
        if let Some(w) = spans
            .windows(2)
            .find(|w| self.key(&w[0]) == self.key(&w[1]))
        {
            return Err(Error::DuplicateKey {
                path: self.path.clone(),
                key: display_key(&self.encoding.render(self.key(&w[0]))),
            });
        }
        self.spans = spans;
        Ok(())
    }

    /// How the keys are stored.
    pub fn encoding(&self) -> KeyEncoding {
        self.encoding
    }

    /// Records in the input.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// The file the records were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the input holds no record.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The records in key order.
    pub fn records(&self) -> Vec<Record<'_>> {
        let data = self.data();
        self.spans
            .iter()
            .map(|s| Record {
                key: &data[s.key..s.key + s.key_len as usize],
                value: &data[s.value..s.value + s.value_len as usize],
            })
            .collect()
    }
}

/// The records of TSV `bytes`, in file order; `path` names the file in errors.
fn parse_tsv(bytes: &[u8], path: &Path) -> Result<Vec<Span>> {
    let mut spans = Vec::new();
    let mut start = 0;
    let mut line = 0u64;
    let bad = |line: u64, what: String| {
        Error::format(
            path,
            FormatError::BadLine {
                line,
                problem: format!("is not a record: {what}"),
            },
        )
    };
    while start < bytes.len() {
        line += 1;
        let end = memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let text = &bytes[start..end];
        let tab = memchr(b'\t', text).ok_or_else(|| {
            bad(
                line,
                "a key, a tab and a value expected; no tab found".into(),
            )
        })?;
        let (key, value) = (&text[..tab], &text[tab + 1..]);
        if memchr(b'\t', value).is_some() {
            return Err(bad(line, "a second tab: values hold no tab".into()));
        }
        if key.len() > super::block::MAX_KEY || value.len() > u32::MAX as usize {
            return Err(bad(
                line,
                format!("a key of {} bytes: at most 65535", key.len()),
            ));
        }
        spans.push(Span {
            key: start,
            key_len: key.len() as u32,
            value: start + tab + 1,
            value_len: value.len() as u32,
        });
        start = end + 1;
    }
    Ok(spans)
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Writes `rows` records as TSV to `path` (atomically): distinct random `u64` keys as
/// decimal strings of 20 digits (zero-padded, so that byte order is numeric order, as
/// fixed-width row keys are written), in random order, each with a value of `value_size` random letters and
/// digits, all from `seed`. Calls `progress` with the rows written so far.
pub fn generate_tsv(
    rows: u64,
    value_size: usize,
    seed: u64,
    path: &Path,
    mut progress: impl FnMut(u64),
) -> Result<()> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut seen = HashSet::with_capacity(usize::try_from(rows).unwrap_or(0).min(1 << 28));
    let mut out = AtomicFile::create(path)?;
    let mut line = Vec::with_capacity(value_size + 32);
    for i in 0..rows {
        let key = loop {
            let k: u64 = rng.random();
            if seen.insert(k) {
                break k;
            }
        };
        line.clear();
        line.extend_from_slice(format!("{key:020}").as_bytes());
        line.push(b'\t');
        line.extend((0..value_size).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())]));
        line.push(b'\n');
        out.write_all(&line)?;
        if i % 65_536 == 0 {
            progress(i);
        }
    }
    out.finish()?;
    progress(rows);
    Ok(())
}
