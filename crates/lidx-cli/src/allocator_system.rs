//! The process's allocator where the command line runs without mimalloc (the Python
//! package's `lidx`, inside an interpreter whose `malloc` an extension must not replace):
//! the system's, its live bytes counted so that studies still measure what an index holds.
//! The settings mimalloc takes are no-ops here.

/// The system allocator, counted ([`lidx_bench::alloc_meter`]).
#[global_allocator]
static ALLOCATOR: lidx_bench::alloc_meter::Counting<std::alloc::System> =
    lidx_bench::alloc_meter::Counting(std::alloc::System);

/// Transparent huge pages for the process's memory, or not (the kernel's side only: the
/// system allocator takes no setting).
pub fn huge_pages(on: bool) {
    let _ = rustix::thread::disable_transparent_huge_pages(!on);
}

/// Nothing to set: the system allocator gives large freed blocks back by itself.
pub fn follow_held_memory() {
    huge_pages(false);
}
