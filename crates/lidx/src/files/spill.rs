//! Spill files: unnamed scratch files of records, appended through a buffer and read back
//! in order. The operating system removes one when it is closed, even after a crash or a
//! kill, so nothing is left behind. Joins spill through them: each thread's output
//! ([`SpillSink`](crate::join::SpillSink)) and the hash partitions of the LSM joins'
//! hash join (paper 5, section 3.3).

use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// What a spill file holds, which its error messages name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spilled {
    /// A join's output triples.
    JoinOutput,
    /// One hash partition of a table's records.
    HashPartition,
}

impl Spilled {
    /// The verb phrases of its errors: creating, writing and reading back the file.
    fn ops(self) -> [&'static str; 3] {
        match self {
            Spilled::JoinOutput => [
                "create a spill file for join output in",
                "write a spill file of join output in",
                "read back a spill file of join output in",
            ],
            Spilled::HashPartition => [
                "create a hash partition in",
                "write a hash partition in",
                "read a hash partition in",
            ],
        }
    }
}

/// An unnamed scratch file of records being written.
#[derive(Debug)]
pub struct SpillFile {
    dir: PathBuf,
    holds: Spilled,
    file: BufWriter<File>,
    records: u64,
}

impl SpillFile {
    /// An empty spill file in `dir`, written through a buffer of `buffer` bytes.
    pub fn new(dir: &Path, holds: Spilled, buffer: usize) -> Result<SpillFile> {
        let file = tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, holds.ops()[0], e))?;
        Ok(SpillFile {
            dir: dir.to_path_buf(),
            holds,
            file: BufWriter::with_capacity(buffer, file),
            records: 0,
        })
    }

    /// Appends one record, the concatenation of `parts`.
    #[inline]
    pub fn push(&mut self, parts: &[&[u8]]) -> Result<()> {
        for part in parts {
            self.file
                .write_all(part)
                .map_err(|e| Error::io(&self.dir, self.holds.ops()[1], e))?;
        }
        self.records += 1;
        Ok(())
    }

    /// Records appended so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Ends the writing and returns a reader from the first record, through a buffer of
    /// `buffer` bytes.
    pub fn into_reader(self, buffer: usize) -> Result<SpillReader> {
        let [_, write, read] = self.holds.ops();
        let mut file = self
            .file
            .into_inner()
            .map_err(|e| Error::io(&self.dir, write, e.into_error()))?;
        file.rewind().map_err(|e| Error::io(&self.dir, read, e))?;
        Ok(SpillReader {
            reader: BufReader::with_capacity(buffer, file),
            dir: self.dir,
            holds: self.holds,
        })
    }
}

/// A spill file read back in order.
#[derive(Debug)]
pub struct SpillReader {
    reader: BufReader<File>,
    dir: PathBuf,
    holds: Spilled,
}

impl SpillReader {
    /// Reads the next record into `record` (its width is the records'); false at the end.
    #[inline]
    pub fn next_record(&mut self, record: &mut [u8]) -> Result<bool> {
        match self.reader.read_exact(record) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(Error::io(&self.dir, self.holds.ops()[2], e)),
        }
    }

    /// Appends every record left to `into`, in large reads.
    pub fn read_to_end(&mut self, into: &mut Vec<u8>) -> Result<()> {
        self.reader
            .read_to_end(into)
            .map(drop)
            .map_err(|e| Error::io(&self.dir, self.holds.ops()[2], e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_in_order_and_the_file_leaves_nothing() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut spill =
            SpillFile::new(dir.path(), Spilled::HashPartition, 16).expect("a spill file");
        for i in 0u64..1000 {
            spill
                .push(&[&i.to_le_bytes(), &[i as u8; 3]])
                .expect("a record");
        }
        assert_eq!(spill.records(), 1000);
        // Unnamed: the directory shows nothing while it is open.
        let listed = std::fs::read_dir(dir.path()).expect("listed").count();
        assert_eq!(listed, 0);
        let mut reader = spill.into_reader(64).expect("a reader");
        let mut record = [0u8; 11];
        for i in 0u64..500 {
            assert!(reader.next_record(&mut record).expect("a record"));
            assert_eq!(record[..8], i.to_le_bytes());
            assert_eq!(record[8..], [i as u8; 3]);
        }
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).expect("the rest");
        assert_eq!(rest.len(), 500 * 11);
        assert_eq!(rest[..8], 500u64.to_le_bytes());
        assert!(!reader.next_record(&mut record).expect("the end"));
    }
}
