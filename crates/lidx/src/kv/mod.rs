//! Key-value files with a learned block layout (paper 4, Bigtable): byte-string keys and
//! values in blocks, where a monotone model of each key's byte offset decides which block
//! a record goes into, so the model alone finds it.
//!
//! So far: [`keymap`], the mapping of byte-string keys to the integers such a model learns
//! from (paper 4, section 4).

pub mod keymap;

pub use keymap::KeyMap;
