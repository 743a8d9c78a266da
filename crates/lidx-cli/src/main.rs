//! `lidx`: learned indexes on data that lives on disk. The command line is the library's
//! ([`lidx_cli::run`]); this is its executable.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(lidx_cli::run(std::env::args_os().collect(), None))
}
