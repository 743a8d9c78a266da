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
        path: PathBuf,
        op: &'static str,
        #[source]
        source: io::Error,
    },

    /// The file's bytes do not form a valid file of the expected kind.
    #[error("{}: {problem}", path.display())]
    Format { path: PathBuf, problem: FormatError },

    /// A data block's stored CRC32C disagrees with its contents.
    #[error(
        "{}: checksum mismatch in data block {block} (stored {expected:#010x}, computed {got:#010x}); the file is corrupt",
        path.display()
    )]
    ChecksumMismatch {
        path: PathBuf,
        block: u64,
        expected: u32,
        got: u32,
    },

    /// A sorted input was required and the keys are out of order.
    #[error(
        "{}: keys are not sorted (key at position {position} is {key}, after {previous}); {hint}",
        path.display()
    )]
    Unsorted {
        path: PathBuf,
        position: u64,
        previous: u64,
        key: u64,
        hint: &'static str,
    },

    /// A table whose header says it is unsorted was given to a command that needs a sorted one.
    #[error("{}: the table is not sorted by key, and {what} needs a sorted table; sort the keys first", path.display())]
    NotSorted { path: PathBuf, what: &'static str },

    /// The file system refused `O_DIRECT`.
    #[error(
        "{}: the file system does not support O_DIRECT ({source}); put the files on one that does (ext4, xfs, btrfs)",
        path.display()
    )]
    DirectUnsupported {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// A parameter is outside the range where it makes sense.
    #[error("invalid {name}: {reason}")]
    InvalidParam { name: &'static str, reason: String },
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
}

/// What is wrong with a file's bytes, independent of where they came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The file does not start with the expected magic bytes.
    #[error("not a {expected} (wrong magic bytes {found:02x?})")]
    BadMagic {
        expected: &'static str,
        found: Vec<u8>,
    },

    /// The format version is newer or older than this build reads.
    #[error(
        "format version {found} is not supported (this build reads versions {oldest} to {newest}); upgrade lidx or rebuild the file"
    )]
    UnsupportedVersion {
        found: u32,
        oldest: u32,
        newest: u32,
    },

    /// The file is shorter than its header requires.
    #[error("truncated: {what} needs {expected} bytes, the file has {actual}")]
    Truncated {
        what: &'static str,
        expected: u64,
        actual: u64,
    },

    /// The count in the header disagrees with the file's length.
    #[error(
        "the header says {count} {unit}, which needs {expected} bytes, but the file has {actual} bytes"
    )]
    CountMismatch {
        count: u64,
        unit: &'static str,
        expected: u64,
        actual: u64,
    },

    /// The header's own checksum is wrong.
    #[error(
        "header checksum mismatch (stored {expected:#010x}, computed {got:#010x}); the header is corrupt"
    )]
    HeaderChecksum { expected: u32, got: u32 },

    /// The whole file's checksum is wrong.
    #[error(
        "checksum mismatch (stored {expected:#010x}, computed {got:#010x}); the file is corrupt"
    )]
    FileChecksum { expected: u32, got: u32 },

    /// A header field has a value this build does not accept.
    #[error("header field {field} is {value}, expected {expected}")]
    BadField {
        field: &'static str,
        value: u64,
        expected: &'static str,
    },

    /// Padding that must be zero is not.
    #[error("non-zero bytes in the padding of {what}; the file is corrupt")]
    NonZeroPadding { what: &'static str },

    /// The header disagrees with the data it describes.
    #[error("the header says {field} is {header}, but the data has {data}")]
    HeaderDisagrees {
        field: &'static str,
        header: u64,
        data: u64,
    },
}
