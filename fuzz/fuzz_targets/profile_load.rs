//! See `lidx_fuzz::profile_load`: the body lives in crates/lidx-fuzz, where a stable property
//! test also runs it.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lidx_fuzz::profile_load::run(data));
