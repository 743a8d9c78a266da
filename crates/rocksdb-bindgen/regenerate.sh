#!/usr/bin/env bash
# Regenerates src/rocksdb_c_<version>.rs from librocksdb-sys's bundled c.h with the real
# bindgen (needs libclang: Debian's libclang-dev). Run it when the pinned librocksdb-sys
# changes, then update HEADER_FNV1A and the file name in src/lib.rs.
#   cargo install bindgen-cli --version 0.69.5
#   crates/rocksdb-bindgen/regenerate.sh ~/.cargo/registry/src/*/librocksdb-sys-0.16.0+8.10.0 8_10_0
set -euo pipefail
src=${1:?usage: regenerate.sh LIBROCKSDB_SYS_DIR VERSION}
version=${2:?usage: regenerate.sh LIBROCKSDB_SYS_DIR VERSION}
out="$(dirname "$0")/src/rocksdb_c_${version}.rs"
# librocksdb-sys's own settings (derive_debug off, max_align_t blocked, libc's C types,
# size_t as usize), plus an allowlist of RocksDB's names so no libc-internal item is kept.
bindgen --no-derive-debug --blocklist-type max_align_t --ctypes-prefix libc \
    --allowlist-function 'rocksdb_.*' --allowlist-type 'rocksdb_.*' --allowlist-var 'rocksdb_.*' \
    "$src/rocksdb/include/rocksdb/c.h" -o "$out"
echo "wrote $out"
