//! The process's allocator: mimalloc, for Rust and, through its `override` feature, for the
//! C and C++ linked in (LMDB, RocksDB), so the systems a study compares in one process
//! allocate from one allocator.
//!
//! Transparent huge pages are off, except where a study of warm CPU asks for them
//! ([`huge_pages`]). With 2 MiB pages a warm get's three or four random places in a heap
//! of hundreds of MB (a block cache's slot table, the block, the key map's input) are
//! mostly TLB hits where with 4 KiB pages each is a miss, a page walk that virtualisation
//! makes two-dimensional: on `lidx experiment warm` (1M records, 100 B values) they alone
//! took lidx's layouts from 1.22–1.54× LMDB's CPU per get to 1.06–1.40×. But a heap on huge
//! pages shared by many threads is a trap: each thread's allocator pages fault in 2 MiB
//! zeroed at a time, and `lidx experiment bigtable` (1,500 client threads) grew to 11.9 GB
//! of RSS (0.7 GB with glibc's malloc, 2.2 GB with mimalloc on 4 KiB pages) and its first
//! cells ran 10–20 times slower.
//!
//! A command that runs under a memory limit wants its resident memory to follow what it
//! holds: [`follow_held_memory`] gives freed memory back at once.

use libmimalloc_sys::{mi_option_set, mi_option_t};

/// mimalloc, its live bytes counted so that studies measure what an index holds
/// ([`lidx_bench::alloc_meter`]: a relaxed add to a per-thread counter per call).
#[global_allocator]
static ALLOCATOR: lidx_bench::alloc_meter::Counting<mimalloc::MiMalloc> =
    lidx_bench::alloc_meter::Counting(mimalloc::MiMalloc);

/// `mi_option_purge_delay` (milliseconds before freed memory is given back; 1000
/// by default), by its number in the `mi_option_e` of the mimalloc v3 that libmimalloc-sys
/// 0.1.49 carries: that crate names only the older options.
const PURGE_DELAY: mi_option_t = 15;

/// `mi_option_allow_thp` (ask for transparent huge pages; 1 by default), as above.
const ALLOW_THP: mi_option_t = 43;

/// Sets mimalloc option `option` to `value`.
fn set(option: mi_option_t, value: std::ffi::c_long) {
    #[expect(
        unsafe_code,
        reason = "mimalloc's options are set through its C interface"
    )]
    // SAFETY: mi_option_set stores an integer that mimalloc reads when it next needs it
    // (a plain store: called before the command starts its threads); both numbers name
    // existing options of the pinned version (checked by a test below).
    unsafe {
        mi_option_set(option, value);
    }
}

/// Lets the heap use transparent huge pages (where the kernel's setting allows them) or
/// not: mimalloc asks for them for the memory it maps from now on, and the kernel backs
/// the process's memory with them or stops (no new huge-page faults, no collapsing; those
/// in place split when partly freed). Off from the start of `main`; on only for a study
/// of warm CPU on one thread. A kernel without the call (before 3.15) refuses it, and
/// nothing is lost.
pub fn huge_pages(on: bool) {
    set(ALLOW_THP, on.into());
    let _ = rustix::thread::disable_transparent_huge_pages(!on);
}

/// Makes the process give freed memory back to the system at once, so that its resident
/// memory follows what it holds under `--memory-limit` or a cgroup: with mimalloc's
/// defaults (and huge pages), an external sort under a 1 MiB limit peaked at 29.5 MB RSS,
/// and at 21.0 MB with freed memory given back at once and no huge pages. Costs some speed
/// in allocation-heavy work; call it only where a memory limit applies.
pub fn follow_held_memory() {
    set(PURGE_DELAY, 0);
    huge_pages(false);
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
        // mimalloc reads its options from variables named MIMALLOC_... in any case.
        let set_by_user = std::env::vars_os().any(|(name, _)| {
            name.to_string_lossy()
                .to_ascii_uppercase()
                .starts_with("MIMALLOC_")
        });
        if !set_by_user {
            assert_eq!((option(PURGE_DELAY), option(ALLOW_THP)), (1000, 1));
        }
        huge_pages(true);
        assert_eq!(option(ALLOW_THP), 1);
        assert!(!rustix::thread::transparent_huge_pages_are_disabled().unwrap_or(false));
        follow_held_memory();
        assert_eq!((option(PURGE_DELAY), option(ALLOW_THP)), (0, 0));
        assert!(rustix::thread::transparent_huge_pages_are_disabled().unwrap_or(true));
    }
}
