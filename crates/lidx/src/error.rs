//! The library's one error type.
//!
//! Byte parsers return a [`FormatError`] (what is wrong with the bytes); the function that
//! opened the file wraps it in [`Error::Format`] with the path, so every message a user
//! sees names the file and the problem in one sentence.

use std::io;
use std::path::{Path, PathBuf};

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in lidx. Each variant's message names the file (where
/// there is one) and says what was wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system call on a file failed.
    #[error("{}: cannot {op}: {source}", path.display())]
    Io {
        /// The file (or directory) the call was about.
        path: PathBuf,
        /// What lidx was doing, as a verb phrase ("open", "read the header of").
        op: &'static str,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },

    /// The file's bytes do not form a valid file of the expected kind.
    #[error("{}: {problem}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with its bytes.
        problem: FormatError,
    },

    /// A data block's stored CRC32C disagrees with its contents.
    #[error(
        "{}: checksum mismatch in data block {block} (stored {expected:#010x}, computed {got:#010x}); the file is corrupt",
        path.display()
    )]
    ChecksumMismatch {
        /// The table file.
        path: PathBuf,
        /// The data block, counted from 0.
        block: u64,
        /// The checksum stored in the file.
        expected: u32,
        /// The checksum of the block's bytes.
        got: u32,
    },

    /// A sorted input was required and the keys are out of order.
    #[error(
        "{}: keys are not sorted (key at position {position} is {key}, after {previous}); {hint}",
        path.display()
    )]
    Unsorted {
        /// The input.
        path: PathBuf,
        /// Position of the first key out of order.
        position: u64,
        /// The key before it.
        previous: u64,
        /// The key out of order.
        key: u64,
        /// What needed sorted keys, or what to do about it.
        hint: &'static str,
    },

    /// A table whose header says it is unsorted was given to a command that needs a sorted one.
    #[error("{}: the table is not sorted by key, and {what} needs a sorted table; sort the keys first", path.display())]
    NotSorted {
        /// The table.
        path: PathBuf,
        /// The operation that needs sorted keys.
        what: &'static str,
    },

    /// A block of a key-value file fails its checksum or does not decode.
    #[error("{}: the block at byte {offset} {problem}; the file is corrupt", path.display())]
    BadBlock {
        /// The file.
        path: PathBuf,
        /// The block's byte offset.
        offset: u64,
        /// What is wrong with it.
        problem: String,
    },

    /// A key-value input holds one key twice.
    #[error("{}: the key {key} appears more than once; a key-value file holds each key once", path.display())]
    DuplicateKey {
        /// The input.
        path: PathBuf,
        /// The key, as text or hex.
        key: String,
    },

    /// A table of one kind of tuples was given where the other kind is needed (a join's
    /// output, of (key, outer value, inner value) tuples, where (key, value) tuples are).
    #[error("invalid table: {} holds {holds}, and {what} needs {needs}", path.display())]
    WrongTuples {
        /// The table.
        path: PathBuf,
        /// What it holds.
        holds: &'static str,
        /// What the operation needs.
        needs: &'static str,
        /// The operation.
        what: &'static str,
    },

    /// An index given for a table does not belong to it: built for other keys, or of
    /// another kind than asked for.
    #[error("{}: {problem}", path.display())]
    IndexMismatch {
        /// The index file (or, where the index has no file, the table).
        path: PathBuf,
        /// What does not match.
        problem: String,
    },

    /// An output path names one of the command's input files (writing it would destroy the
    /// input before it is read).
    #[error(
        "{}: the output is the input file {} itself; choose another output path",
        output.display(),
        input.display()
    )]
    OutputIsInput {
        /// The output path.
        output: PathBuf,
        /// The input it names.
        input: PathBuf,
    },

    /// The file system refused `O_DIRECT`.
    #[error(
        "{}: the file system does not support O_DIRECT ({source}); put the files on one that does (ext4, xfs, btrfs)",
        path.display()
    )]
    DirectUnsupported {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },

    /// A [`MemoryBudget`](crate::memory::MemoryBudget) could not grant a reservation.
    #[error(
        "memory budget: {what} would take {need} bytes, but only {available} of the budget's {limit} bytes are free"
    )]
    OverBudget {
        /// What asked for the memory.
        what: String,
        /// Bytes asked for.
        need: u64,
        /// Bytes of the budget not reserved when asked.
        available: u64,
        /// The budget.
        limit: u64,
    },

    /// A worker thread panicked; its work is lost and the operation fails.
    #[error("a {what} thread panicked")]
    ThreadPanicked {
        /// What the thread was doing.
        what: &'static str,
    },

    /// A call broke its function's contract (a bug in the calling code, not bad input):
    /// a window outside the table, a read-ahead with no free slot, a tuple of the wrong
    /// width.
    #[error("{call}: {problem} (a misuse of lidx's API)")]
    Misuse {
        /// The function called.
        call: &'static str,
        /// What was wrong with the call.
        problem: String,
    },

    /// A check lidx makes on its own results failed: a bug in lidx, not in the input.
    #[error("internal check failed: {problem} (a bug in lidx; please report it)")]
    Internal {
        /// What was found wrong.
        problem: String,
    },

    /// A parameter is outside the range where it makes sense.
    #[error("invalid {name}: {reason}")]
    InvalidParam {
        /// The parameter.
        name: &'static str,
        /// Why the value is refused.
        reason: String,
    },
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub fn io(path: &Path, op: &'static str, source: io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            op,
            source,
        }
    }

    /// An [`Error::Format`] for `path`.
    pub fn format(path: &Path, problem: FormatError) -> Self {
        Error::Format {
            path: path.to_path_buf(),
            problem,
        }
    }

    /// An [`Error::InvalidParam`].
    pub fn param(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidParam {
            name,
            reason: reason.into(),
        }
    }

    /// An [`Error::Misuse`].
    pub fn misuse(call: &'static str, problem: impl Into<String>) -> Self {
        Error::Misuse {
            call,
            problem: problem.into(),
        }
    }
}

/// What is wrong with a file's bytes, independent of where they came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The file does not start with the expected magic bytes.
    #[error("not a {expected} (wrong magic bytes {found:02x?})")]
    BadMagic {
        /// The kind of file expected.
        expected: &'static str,
        /// The bytes found where the magic should be.
        found: Vec<u8>,
    },

    /// The format version is newer or older than this build reads.
    #[error(
        "format version {found} is not supported (this build reads versions {oldest} to {newest}); upgrade lidx or rebuild the file"
    )]
    UnsupportedVersion {
        /// The file's version.
        found: u32,
        /// The oldest version this build reads.
        oldest: u32,
        /// The newest version this build reads.
        newest: u32,
    },

    /// The file is shorter than its header requires.
    #[error("truncated: {what} needs {expected} bytes, the file has {actual}")]
    Truncated {
        /// The part that is cut short.
        what: &'static str,
        /// Bytes it needs.
        expected: u64,
        /// Bytes there are.
        actual: u64,
    },

    /// The count in the header disagrees with the file's length.
    #[error(
        "the header says {count} {unit}, which needs {expected} bytes, but the file has {actual} bytes"
    )]
    CountMismatch {
        /// The count the header gives.
        count: u64,
        /// What it counts.
        unit: &'static str,
        /// Bytes that count needs.
        expected: u64,
        /// Bytes the file has.
        actual: u64,
    },

    /// The header's own checksum is wrong.
    #[error(
        "header checksum mismatch (stored {expected:#010x}, computed {got:#010x}); the header is corrupt"
    )]
    HeaderChecksum {
        /// The checksum stored.
        expected: u32,
        /// The checksum computed.
        got: u32,
    },

    /// The whole file's checksum is wrong.
    #[error(
        "checksum mismatch (stored {expected:#010x}, computed {got:#010x}); the file is corrupt"
    )]
    FileChecksum {
        /// The checksum stored.
        expected: u32,
        /// The checksum computed.
        got: u32,
    },

    /// A header field has a value this build does not accept.
    #[error("header field {field} is {value}, expected {expected}")]
    BadField {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// What it may be.
        expected: &'static str,
    },

    /// Padding that must be zero is not.
    #[error("non-zero bytes in the padding of {what}; the file is corrupt")]
    NonZeroPadding {
        /// Where the padding is.
        what: &'static str,
    },

    /// A line of a text input is not what the format says.
    #[error("line {line} {problem}")]
    BadLine {
        /// The line, counted from 1.
        line: u64,
        /// What is wrong with it.
        problem: String,
    },

    /// The parts of a file disagree in a way no single field names.
    #[error("{0}; the file is corrupt")]
    Inconsistent(String),

    /// The header disagrees with the data it describes.
    #[error("the header says {field} is {header}, but the data has {data}")]
    HeaderDisagrees {
        /// The field.
        field: &'static str,
        /// The header's value.
        header: u64,
        /// The value the data gives.
        data: u64,
    },
}
