//! The process's allocator: mimalloc, for Rust and, through its `override` feature, for the
//! C and C++ linked in (LMDB, RocksDB), so the systems a study compares in one process
//! allocate from one allocator.
//!
//! mimalloc asks for transparent huge pages for its heap where the kernel allows them (THP
//! set to `madvise` or `always`). A warm get touches three or four random places in a heap
//! of hundreds of MB (a block cache's slot table, the block, the key map's input); with
//! 4 KiB pages each is a TLB miss, a page walk that virtualisation makes two-dimensional,
//! and with 2 MiB pages most are not. On `lidx experiment warm` (1M records, 100 B values)
//! this alone took lidx's layouts from 1.22–1.54× LMDB's CPU per get to 1.06–1.40×.
//!
//! A command that runs under a memory limit wants the opposite: its resident memory should
//! follow what it holds. [`follow_held_memory`] gives freed memory back at once and turns
//! huge pages off.

use libmimalloc_sys::{mi_option_set, mi_option_t};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` (milliseconds before freed memory is given back; 1000
/// by default), by its number in the `mi_option_e` of the mimalloc v3 that libmimalloc-sys
/// 0.1.49 carries: that crate names only the older options.
const PURGE_DELAY: mi_option_t = 15;

/// `mi_option_allow_thp` (ask for transparent huge pages; 1 by default), as above.
const ALLOW_THP: mi_option_t = 43;

/// Makes the process give freed memory back to the system at once and stop using huge
/// pages, so that its resident memory follows what it holds under `--memory-limit` or a
/// cgroup: with mimalloc's defaults, an external sort under a 1 MiB limit peaked at
/// 29.5 MB RSS, and at 21.0 MB with these settings. Costs some speed in allocation-heavy
/// work; call it only where a memory limit applies.
pub fn follow_held_memory() {
    #[expect(
        unsafe_code,
        reason = "mimalloc's options are set through its C interface"
    )]
    // SAFETY: mi_option_set stores an integer that mimalloc reads on each use; both
    // numbers name existing options of the pinned version (checked by a test below).
    unsafe {
        mi_option_set(PURGE_DELAY, 0);
        mi_option_set(ALLOW_THP, 0);
    }
    // Memory already asked for as huge pages: the kernel stops backing it with them.
    // Refused only by a kernel without the call (before 3.15), where nothing is lost.
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// The value of mimalloc option `option`.
#[cfg(test)]
fn option(option: mi_option_t) -> std::ffi::c_long {
    #[expect(
        unsafe_code,
        reason = "mimalloc's options are read through its C interface"
    )]
    // SAFETY: mi_option_get reads an integer setting; `option` is below `_mi_option_last`.
    unsafe {
        libmimalloc_sys::mi_option_get(option)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_numbers_name_the_purge_delay_and_huge_pages() {
        // Their defaults differ from their neighbours' (14: 1, 16: 0; 42: 32, 44: 0), so a
        // header that renumbered the options fails here, unless the user set them.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(option(PURGE_DELAY), 1000);
        }
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            assert_eq!(option(ALLOW_THP), 1);
        }
        follow_held_memory();
        assert_eq!((option(PURGE_DELAY), option(ALLOW_THP)), (0, 0));
        assert!(rustix::thread::transparent_huge_pages_are_disabled().unwrap_or(true));
    }
}
