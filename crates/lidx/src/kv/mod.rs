//! Key-value files with a learned block layout (paper 4, Bigtable): byte-string keys and
//! values in blocks, where a monotone model of each key's byte offset decides which block
//! a record goes into, so the model alone finds it.
//!
//! So far (paper 4, section 4): [`keymap`], the mapping of byte-string keys to the
//! integers such a model learns from, and [`line`], the least-squares line fitted in one
//! pass to the bytes before each key, which places records in blocks.

pub mod keymap;
pub mod line;

pub use keymap::KeyMap;
pub use line::{Line, LineFit};
