//! RocksDB's C API bindings, generated once, behind bindgen's builder.
//!
//! `librocksdb-sys` compiles RocksDB from its bundled source with the `cc` crate (a C++
//! compiler is all it needs), but its build script also runs bindgen over
//! `rocksdb/include/rocksdb/c.h`, and bindgen needs libclang, which a machine with only a Rust
//! toolchain lacks. The workspace's `[patch.crates-io]` puts this crate in bindgen's place:
//! [`Builder::generate`] checks that it is asked for exactly what
//! [`BINDINGS`] was generated from (the same `c.h`, byte for byte, and the same settings) and
//! hands that file back. Anything else is refused with an error saying how to regenerate, so a
//! newer `librocksdb-sys` can never be built against stale declarations.
//!
//! [`BINDINGS`] was made by the real bindgen 0.69.5 from RocksDB 8.10.0's `c.h` (as bundled in
//! `librocksdb-sys` 0.16.0+8.10.0) with librocksdb-sys's own settings and an allowlist of
//! RocksDB's `rocksdb_*` names, so it holds no libc-internal item and suits every 64-bit
//! target (`libc`'s C types; `size_t` as `usize`; its layout checks fail the build elsewhere).
//! `regenerate.sh` beside this crate makes it again.

use std::fmt;
use std::fs;
use std::io;
use std::path::Path;

/// The generated bindings, as bindgen wrote them.
pub const BINDINGS: &str = include_str!("rocksdb_c_8_10_0.rs");

/// FNV-1a (64-bit) of the `c.h` that [`BINDINGS`] was generated from, and its length.
const HEADER_FNV1A: u64 = 0x1522_c4b7_814b_7329;
const HEADER_LEN: u64 = 143_443;

/// The settings [`BINDINGS`] was generated with, as librocksdb-sys's build script sets them.
const CTYPES_PREFIX: &str = "libc";
const BLOCKLISTED: &[&str] = &["max_align_t"];

/// Why [`Builder::generate`] refused: the request differs from what [`BINDINGS`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindgenError(String);

impl fmt::Display for BindgenError {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "{} (lidx's pregenerated RocksDB bindings answer only librocksdb-sys 0.16.0+8.10.0's \
             request; run crates/rocksdb-bindgen/regenerate.sh for another version)",
            self.0
        )
    }
}

impl std::error::Error for BindgenError {}

/// The subset of bindgen's builder that librocksdb-sys's build script calls, recording each
/// setting so [`generate`](Self::generate) can check it.
#[derive(Debug, Clone)]
pub struct Builder {
    headers: Vec<String>,
    derive_debug: bool,
    blocklisted_types: Vec<String>,
    ctypes_prefix: Option<String>,
    size_t_is_usize: bool,
}

impl Default for Builder {
    /// bindgen's defaults: `Debug` derived, `size_t` as `usize`, C types from `core::ffi`.
    fn default() -> Self {
        Builder {
            headers: Vec::new(),
            derive_debug: true,
            blocklisted_types: Vec::new(),
            ctypes_prefix: None,
            size_t_is_usize: true,
        }
    }
}

impl Builder {
    /// Adds a header to generate bindings for.
    pub fn header<T: Into<String>>(mut self, header: T) -> Builder {
        self.headers.push(header.into());
        self
    }

    /// Whether to derive `Debug` for generated types.
    pub fn derive_debug(mut self, yes: bool) -> Builder {
        self.derive_debug = yes;
        self
    }

    /// Leaves a type out of the bindings.
    pub fn blocklist_type<T: AsRef<str>>(mut self, name: T) -> Builder {
        self.blocklisted_types.push(name.as_ref().to_owned());
        self
    }

    /// The module the C types come from.
    pub fn ctypes_prefix<T: Into<String>>(mut self, prefix: T) -> Builder {
        self.ctypes_prefix = Some(prefix.into());
        self
    }

    /// Whether `size_t` becomes `usize`.
    pub fn size_t_is_usize(mut self, yes: bool) -> Builder {
        self.size_t_is_usize = yes;
        self
    }

    /// [`BINDINGS`], if the request is the one they answer: one header named `rocksdb/c.h`,
    /// librocksdb-sys's settings, and RocksDB 8.10.0's `c.h` byte for byte (checked in that
    /// order, reading the header last). Errors name what differs.
    pub fn generate(self) -> Result<Bindings, BindgenError> {
        let [header] = self.headers.as_slice() else {
            return Err(BindgenError(format!(
                "asked for {} headers, not one",
                self.headers.len()
            )));
        };
        if !header.ends_with("rocksdb/c.h") {
            return Err(BindgenError(format!("asked for {header}, not rocksdb/c.h")));
        }
        let settings_match = !self.derive_debug
            && self.size_t_is_usize
            && self.ctypes_prefix.as_deref() == Some(CTYPES_PREFIX)
            && self.blocklisted_types == BLOCKLISTED;
        if !settings_match {
            return Err(BindgenError(format!(
                "asked for other settings than the bindings were made with: {self:?}"
            )));
        }
        let bytes = fs::read(header)
            .map_err(|e| BindgenError(format!("cannot read header {header}: {e}")))?;
        if bytes.len() as u64 != HEADER_LEN || fnv1a(&bytes) != HEADER_FNV1A {
            return Err(BindgenError(format!(
                "header {header} is not RocksDB 8.10.0's c.h ({} bytes, FNV-1a {:#018x})",
                bytes.len(),
                fnv1a(&bytes)
            )));
        }
        Ok(Bindings)
    }
}

/// Generated bindings, ready to be written where the build script includes them from.
#[derive(Debug, Clone, Copy)]
pub struct Bindings;

impl Bindings {
    /// Writes [`BINDINGS`] to `path`.
    pub fn write_to_file<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        fs::write(path, BINDINGS)
    }
}

impl fmt::Display for Bindings {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        out.write_str(BINDINGS)
    }
}

/// 64-bit FNV-1a: enough to tell one version of a header from another.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn librocksdb_sys_request(header: &Path) -> Builder {
        Builder::default()
            .header(header.to_string_lossy())
            .derive_debug(false)
            .blocklist_type("max_align_t")
            .ctypes_prefix("libc")
            .size_t_is_usize(true)
    }

    fn scratch_header(contents: &[u8]) -> (tempdir::Dir, std::path::PathBuf) {
        let dir = tempdir::Dir::new();
        let path = dir.0.join("rocksdb").join("c.h");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, contents).unwrap();
        (dir, path)
    }

    /// A scratch directory removed on drop (this crate has no dependencies to borrow one from).
    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                use std::sync::atomic::{AtomicU32, Ordering};
                static NEXT: AtomicU32 = AtomicU32::new(0);
                let path = std::env::temp_dir().join(format!(
                    "rocksdb-bindgen-test-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&path).unwrap();
                Dir(path)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn another_header_is_refused_naming_it() {
        let (_dir, path) = scratch_header(b"/* not rocksdb 8.10.0 */");
        let err = librocksdb_sys_request(&path).generate().unwrap_err();
        assert!(err.0.contains("is not RocksDB 8.10.0's c.h"), "{err}");
        assert!(err.to_string().contains("regenerate.sh"), "{err}");
    }

    #[test]
    fn a_missing_header_is_refused() {
        let err = librocksdb_sys_request(Path::new("/nonexistent/rocksdb/c.h"))
            .generate()
            .unwrap_err();
        assert!(err.0.contains("cannot read header"), "{err}");
    }

    #[test]
    fn other_settings_or_headers_are_refused_before_reading() {
        let path = Path::new("/nonexistent/rocksdb/c.h");
        let two = librocksdb_sys_request(path).header("other.h");
        assert!(two.generate().unwrap_err().0.contains("2 headers"));
        let wrong_name = Builder::default().header("zlib.h").generate().unwrap_err();
        assert!(wrong_name.0.contains("not rocksdb/c.h"));
        let with_debug = librocksdb_sys_request(path).derive_debug(true);
        assert!(
            with_debug
                .generate()
                .unwrap_err()
                .0
                .contains("other settings")
        );
        let core_types = librocksdb_sys_request(path).ctypes_prefix("core::ffi");
        assert!(
            core_types
                .generate()
                .unwrap_err()
                .0
                .contains("other settings")
        );
    }

    #[test]
    fn the_bindings_declare_what_the_rocksdb_crate_calls() {
        for name in [
            "pub fn rocksdb_open_column_families(",
            "pub fn rocksdb_write(",
            "pub fn rocksdb_writebatch_put_cf(",
            "pub fn rocksdb_create_iterator_cf(",
            "pub fn rocksdb_options_set_merge_operator(",
            "pub fn rocksdb_perfcontext_metric(",
            "pub struct rocksdb_t {",
        ] {
            assert!(BINDINGS.contains(name), "{name} missing");
        }
        // Only RocksDB's own names: nothing from glibc's headers, which vary by target.
        assert!(!BINDINGS.contains("__uint64_t"));
        assert!(!BINDINGS.contains("_STDINT_H"));
    }
}
