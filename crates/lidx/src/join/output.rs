//! Join output that does not wait in memory: each thread's [`SpillSink`] streams its triples
//! to an unnamed temporary file (removed by the OS when closed, even after a crash), and the
//! parts are copied into the output table in thread order — placed one after the other, at
//! the offsets their predecessors' counts give, never re-sorted.

use std::path::Path;

use super::{CountSink, JoinSink};
use crate::Result;
use crate::files::spill::{SpillFile, Spilled};
use crate::storage::{OUTPUT_TUPLE_SIZE, OutputTuple, TableWriter};

/// Buffer of each spill file, writing and reading.
const BUFFER: usize = 1 << 20;

/// A sink that streams triples to an unnamed temporary file in a directory.
pub struct SpillSink {
    file: SpillFile,
}

impl SpillSink {
    /// A sink spilling into an unnamed temporary file in `dir`.
    pub fn new(dir: &Path) -> Result<SpillSink> {
        Ok(SpillSink {
            file: SpillFile::new(dir, Spilled::JoinOutput, BUFFER)?,
        })
    }

    /// Triples taken so far.
    pub fn count(&self) -> u64 {
        self.file.records()
    }

    /// Appends every triple taken, in order, to `out`.
    pub fn drain_into(self, out: &mut TableWriter) -> Result<()> {
        let mut reader = self.file.into_reader(BUFFER)?;
        let mut buf = [0u8; OUTPUT_TUPLE_SIZE];
        while reader.next_record(&mut buf)? {
            out.push_output(bytemuck::pod_read_unaligned::<OutputTuple>(&buf))?;
        }
        Ok(())
    }
}

impl JoinSink for SpillSink {
    #[inline]
    fn emit(&mut self, key: u64, outer: u64, inner: u64) -> Result<()> {
        let t = OutputTuple { key, outer, inner };
        self.file.push(&[bytemuck::bytes_of(&t)])
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
