//! A byte buffer aligned to 4096 bytes, as `O_DIRECT` reads need, made from a plain `Vec`
//! (no `unsafe`): the `Vec` is over-allocated by one block and the aligned part is used.
//! The paged-file reader, block reads, the read queue and the disk benchmark all read into
//! one.

/// The alignment `O_DIRECT` needs, and the size of lidx's pages and blocks.
const BLOCK_SIZE: usize = super::paged::PAGE_SIZE;

/// A 4096-byte-aligned byte buffer that grows on demand and is reused between reads.
#[derive(Default)]
pub(crate) struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A buffer of `len` aligned bytes, zeroed.
    pub(crate) fn with_len(len: usize) -> Self {
        let mut buf = AlignedBuf::default();
        buf.get_mut(len);
        buf
    }

    /// The most bytes it holds without growing.
    pub(crate) fn capacity(&self) -> usize {
        self.len
    }

    /// An aligned slice of `len` bytes; reallocates only when the buffer is too small (and
    /// then the old contents are gone).
    pub(crate) fn get_mut(&mut self, len: usize) -> &mut [u8] {
        if len > self.len {
            self.raw = vec![0u8; len + BLOCK_SIZE];
            self.start = self.raw.as_ptr().align_offset(BLOCK_SIZE);
            self.len = len;
        }
        &mut self.raw[self.start..self.start + len]
    }

    /// Makes room for `len` bytes, keeping the bytes held so far.
    pub(crate) fn grow_preserving(&mut self, len: usize) {
        if len > self.len {
            let mut bigger = AlignedBuf::default();
            bigger.get_mut(len)[..self.len].copy_from_slice(self.get(self.len));
            *self = bigger;
        }
    }

    /// The first `len` bytes (at most the capacity).
    pub(crate) fn get(&self, len: usize) -> &[u8] {
        &self.raw[self.start..self.start + len.min(self.len)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_aligned_and_growth_keeps_the_contents() {
        let mut buf = AlignedBuf::with_len(10);
        assert_eq!(buf.get_mut(10).as_ptr().align_offset(BLOCK_SIZE), 0);
        buf.get_mut(10).copy_from_slice(b"0123456789");
        buf.grow_preserving(3 * BLOCK_SIZE);
        assert_eq!(buf.capacity(), 3 * BLOCK_SIZE);
        assert_eq!(&buf.get(10)[..10], b"0123456789");
        assert_eq!(buf.get(3 * BLOCK_SIZE).as_ptr().align_offset(BLOCK_SIZE), 0);
    }
}
