//! Tables on disk and the reads that fetch them (paper 1, section 4.1).
//!
//! - [`format`](mod@format): the `.tbl` header and layout, as bytes in and bytes out.
//! - [`table`]: the streaming [`TableWriter`], the [`Table`] reader (memory map or block
//!   reads) and full verification.
//! - [`block`]: [`BlockReader`], which reads the blocks under a window of tuple positions as
//!   one contiguous read into a reused, aligned buffer and counts its I/O in [`IoStats`].
//! - `queue` (crate-private): deep I/O queues (`io_uring` or threads) that keep many block
//!   reads in flight for [`BlockReader::prefetch`]; their backend is an [`IoBackend`].
//! - [`paper1`]: import and export of paper 1's table layout.
//! - [`profile`]: the disk benchmark and the storage profile it saves, and the latency
//!   model that makes reads take as long as a profile says.
//! - [`cache`]: the byte-budgeted cache of pages and decoded blocks readers share.
//! - [`paged`]: byte ranges read through that cache a page at a time, under a latency model.

pub(crate) use crate::files::aligned;
pub mod block;
mod block_range;
pub mod cache;
pub mod format;
pub mod paged;
pub mod paper1;
pub mod profile;
mod queue;
pub mod table;

pub use block::{BlockReader, IoStats, MAX_WINDOW_READ_BLOCKS, ReadMode, WindowRun};
pub use block_range::BlockRange;
pub use format::{
    BLOCK_SIZE, OUTPUT_TUPLE_SIZE, OutputTuple, TUPLE_SIZE, TUPLES_PER_BLOCK, TableHeader,
    TableLayout, Tuple,
};
pub use queue::IoBackend;
pub use table::{MappedTable, Table, TableWriter, ValueSource, VerifyReport};
