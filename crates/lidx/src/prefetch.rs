//! A hint to the processor to fetch cache lines ahead of their use: the one intrinsic lidx
//! calls. The block cache prefetches the entry a lookup will read before it takes its lock;
//! the last-mile search prefetches the two places its next step may probe.

/// Asks the processor to fetch `lines` cache lines from `address` (none for 0), without
/// waiting for them: reads nothing the program sees.
#[inline]
pub(crate) fn prefetch(address: usize, lines: usize) {
    if address == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    for line in 0..lines {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let at = address.wrapping_add(64 * line);
        // SAFETY: SSE, which `_mm_prefetch` needs, is part of every x86-64 processor; a
        // prefetch never faults and reads nothing the program sees, whatever the address.
        #[expect(unsafe_code, reason = "a prefetch hint, the one intrinsic lidx calls")]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(std::ptr::without_provenance::<i8>(at));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = lines;
}

/// Asks the processor to fetch the cache line at `address` close to the core but not into
/// the caches shared with other lines' reuse (the non-temporal hint): for a line read at
/// most once soon, as the probes of a search that the comparison may not take.
#[inline]
pub(crate) fn prefetch_once(address: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_NTA, _mm_prefetch};
        // SAFETY: as in `prefetch`.
        #[expect(unsafe_code, reason = "a prefetch hint, the one intrinsic lidx calls")]
        unsafe {
            _mm_prefetch::<_MM_HINT_NTA>(std::ptr::without_provenance::<i8>(address));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
