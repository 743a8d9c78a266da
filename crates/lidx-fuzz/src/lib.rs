//! The bodies of lidx's fuzz targets: one module per parser, each with a `run(data)` that
//! must return for every input and panics only on a bug (a wrong answer or a crash), and the
//! valid inputs each starts from ([`seeds`]).
//!
//! Two drivers run them. `fuzz/` holds the libFuzzer binaries for cargo-fuzz (coverage
//! guided, for as long as you like; see `fuzz/README.md`), each a one-line call into this
//! crate. On the stable toolchain, `tests/targets.rs` runs every target on its seeds, on
//! random bytes and on seeds corrupted by flipped bits, overwritten words, truncation and
//! extension, as part of the workspace's test suite, so every target is built and exercised
//! by every CI run.

pub mod alex_open;
pub mod header_decode;
pub mod index_load;
pub mod kv_open;
pub mod lsm_manifest;
pub mod paper1_header;
pub mod partition_open;
pub mod profile_load;
pub mod seeds;
pub mod sosd_parse;
pub mod table_open;

/// A fuzz target: its name (the libFuzzer binary's), its body and its seeds.
#[derive(Clone, Copy)]
pub struct Target {
    /// The name of the target and of its binary under `fuzz/fuzz_targets/`.
    pub name: &'static str,
    /// The body: returns for every input, panics only on a bug.
    pub run: fn(&[u8]),
    /// Valid inputs of the target's format, made by lidx's own writers.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// How many random and corrupted inputs the stable test runs (fewer where one input
    /// costs a database).
    pub stable_cases: u32,
}

/// Every fuzz target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "table_open",
        run: table_open::run,
        seeds: seeds::tables,
        stable_cases: 256,
    },
    Target {
        name: "sosd_parse",
        run: sosd_parse::run,
        seeds: seeds::key_files,
        stable_cases: 256,
    },
    Target {
        name: "header_decode",
        run: header_decode::run,
        seeds: seeds::table_headers,
        stable_cases: 256,
    },
    Target {
        name: "paper1_header",
        run: paper1_header::run,
        seeds: seeds::paper1_files,
        stable_cases: 256,
    },
    Target {
        name: "index_load",
        run: index_load::run,
        seeds: seeds::index_files,
        stable_cases: 256,
    },
    Target {
        name: "partition_open",
        run: partition_open::run,
        seeds: seeds::partition_files,
        stable_cases: 128,
    },
    Target {
        name: "kv_open",
        run: kv_open::run,
        seeds: seeds::kv_files,
        stable_cases: 128,
    },
    Target {
        name: "alex_open",
        run: alex_open::run,
        seeds: seeds::alex_files,
        stable_cases: 128,
    },
    Target {
        name: "profile_load",
        run: profile_load::run,
        seeds: seeds::profiles,
        stable_cases: 256,
    },
    Target {
        name: "lsm_manifest",
        run: lsm_manifest::run,
        seeds: seeds::lsm_manifests,
        stable_cases: 24,
    },
];
