//! Join output that does not wait in memory: each thread's [`SpillSink`] streams its triples
//! to an unnamed temporary file (removed by the OS when closed, even after a crash), and the
//! parts are copied into the output table in thread order — placed one after the other, at
//! the offsets their predecessors' counts give, never re-sorted.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{CountSink, JoinSink};
use crate::storage::{OUTPUT_TUPLE_SIZE, OutputTuple, TableWriter};
use crate::{Error, Result};

/// Buffer of each spill file, writing and reading.
const BUFFER: usize = 1 << 20;

/// A sink that streams triples to a temporary file in a directory.
pub struct SpillSink {
    dir: PathBuf,
    file: BufWriter<File>,
    count: u64,
}

impl SpillSink {
    /// A sink spilling into an unnamed temporary file in `dir`.
    pub fn new(dir: &Path) -> Result<SpillSink> {
        let file = tempfile::tempfile_in(dir)
            .map_err(|e| Error::io(dir, "create a spill file for join output in", e))?;
        Ok(SpillSink {
            dir: dir.to_path_buf(),
            file: BufWriter::with_capacity(BUFFER, file),
            count: 0,
        })
    }

    /// Triples taken so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Appends every triple taken, in order, to `out`.
    pub fn drain_into(self, out: &mut TableWriter) -> Result<()> {
        let dir = self.dir;
        let io = |e| Error::io(&dir, "read back a spill file of join output in", e);
        let mut file = self.file.into_inner().map_err(|e| io(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut reader = BufReader::with_capacity(BUFFER, file);
        let mut buf = [0u8; OUTPUT_TUPLE_SIZE];
        for _ in 0..self.count {
            reader.read_exact(&mut buf).map_err(io)?;
            out.push_output(bytemuck::pod_read_unaligned::<OutputTuple>(&buf))?;
        }
        Ok(())
    }
}

impl JoinSink for SpillSink {
    #[inline]
    fn emit(&mut self, key: u64, outer: u64, inner: u64) -> Result<()> {
        let t = OutputTuple { key, outer, inner };
        self.file
            .write_all(bytemuck::bytes_of(&t))
            .map_err(|e| Error::io(&self.dir, "write a spill file of join output in", e))?;
        self.count += 1;
        Ok(())
    }
}

/// A join writes straight into an output table (one thread, in emitting order).
impl JoinSink for TableWriter {
    #[inline]
    fn emit(&mut self, key: u64, outer: u64, inner: u64) -> Result<()> {
        self.push_output(OutputTuple { key, outer, inner })
    }
}

/// The output of a one-thread join as it emits it: written into an output table, or
/// counted.
pub(crate) enum InPlace {
    /// Counted (`--count-only`).
    Count(CountSink),
    /// Written, in emitting order.
    Table(TableWriter),
}

impl JoinSink for InPlace {
    #[inline]
    fn emit(&mut self, key: u64, outer: u64, inner: u64) -> Result<()> {
        match self {
            InPlace::Count(count) => count.emit(key, outer, inner),
            InPlace::Table(table) => table.emit(key, outer, inner),
        }
    }
}
