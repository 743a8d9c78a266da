//! `lidx demo`: a short tour on small generated data, one section per capability
//! (`lidx_bench::demo`), its lines printed as they come.

use std::path::PathBuf;

use anyhow::Context as _;
use lidx_bench::demo;

use crate::progress::Context;
use crate::units::parse_count;

/// Run the demo.
#[derive(clap::Args)]
pub struct Args {
    /// Keys per generated key set.
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    n: u64,
    /// Keep the files in this directory instead of a temporary one (a hidden
    /// `.lidx-tmp-…` directory in the system's temporary directory, removed at the end or
    /// when the demo is interrupted).
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// Runs the demo, printing each line to stdout as it is made.
pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    let options = demo::Options {
        n: usize::try_from(args.n).context("n does not fit in memory")?,
        dir: args.dir,
    };
    let mut print = |line: &str| -> std::io::Result<()> {
        say!("{line}");
        Ok(())
    };
    demo::run(&options, &mut print, &ctx.progress())
}
