//! How a key-value file's keys were written (FORMAT.md section 8.1, the footer's key
//! encoding byte) and how commands read and print them: byte strings as given, or `u64`
//! keys as 8 big-endian bytes or decimal strings (paper 4, section 5 encodes its integer
//! keys as strings). Keys are always compared as bytes; the mapping of keys to integers
//! that a model learns is [`KeyMap`](super::KeyMap).

use crate::files::codec::invalid;
use crate::{Error, FormatError, Result};

/// How keys were written, so that commands read and print them the user's way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyEncoding {
    /// Byte strings as given (TSV input).
    #[default]
    Bytes,
    /// `u64` keys as 8 big-endian bytes, so byte order is numeric order.
    U64Be,
    /// `u64` keys as decimal strings (the paper's integer keys encoded as strings).
    Decimal,
}

crate::names::name_table!(KeyEncoding, "key encoding", [
    Bytes => "bytes",
    U64Be => "u64-be",
    Decimal => "decimal",
]);

impl KeyEncoding {
    /// The footer's byte for this encoding.
    pub(crate) fn tag(self) -> u8 {
        match self {
            KeyEncoding::Bytes => 0,
            KeyEncoding::U64Be => 1,
            KeyEncoding::Decimal => 2,
        }
    }

    /// The encoding a footer's byte stands for, or the error naming the bytes known.
    pub(crate) fn from_tag(tag: u8) -> Result<KeyEncoding, FormatError> {
        match tag {
            0 => Ok(KeyEncoding::Bytes),
            1 => Ok(KeyEncoding::U64Be),
            2 => Ok(KeyEncoding::Decimal),
            t => Err(invalid("key encoding", t.into(), "0, 1 or 2")),
        }
    }

    /// The stored bytes of a key given on a command line: a `u64` for the integer
    /// encodings, the argument's bytes otherwise.
    pub fn parse(self, arg: &str) -> Result<Vec<u8>> {
        let int = || {
            arg.parse::<u64>().map_err(|_| {
                Error::param(
                    "key",
                    format!("'{arg}' is not a u64, and the file's keys are"),
                )
            })
        };
        Ok(match self {
            KeyEncoding::Bytes => arg.as_bytes().to_vec(),
            KeyEncoding::U64Be => u64_key(int()?).to_vec(),
            KeyEncoding::Decimal => int()?.to_string().into_bytes(),
        })
    }

    /// A stored key the way a user wrote it: the integer for `u64-be`, the bytes otherwise.
    pub fn render(self, key: &[u8]) -> Vec<u8> {
        match (self, <[u8; 8]>::try_from(key)) {
            (KeyEncoding::U64Be, Ok(b)) => key_u64(b).to_string().into_bytes(),
            _ => key.to_vec(),
        }
    }
}

/// A `u64` key as 8 bytes whose byte order is the numbers' order (big-endian).
#[allow(
    clippy::big_endian_bytes,
    reason = "keys compare as bytes: only big-endian keeps numeric order"
)]
pub fn u64_key(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

/// The `u64` of a key written by [`u64_key`].
#[allow(
    clippy::big_endian_bytes,
    reason = "keys compare as bytes: only big-endian keeps numeric order"
)]
pub fn key_u64(b: [u8; 8]) -> u64 {
    u64::from_be_bytes(b)
}

/// A key as text for messages: as is when it is printable UTF-8, else in hex.
pub fn display_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(s) if !s.chars().any(char::is_control) => format!("'{s}'"),
        _ => {
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            format!("0x{hex} ({} bytes)", key.len())
        }
    }
}
