//! `lidx cache drop`: start cold (paper 1, section 5.1: every measurement with cold caches).

use std::path::PathBuf;

use anyhow::bail;
use lidx::files::cache;

/// The OS page cache.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Drop the cached pages of the given files (posix_fadvise DONTNEED), or with --all the
    /// whole OS page cache (needs root).
    Drop {
        /// Files whose pages to drop.
        files: Vec<PathBuf>,
        /// Drop the whole OS page cache (sync, then write 3 to /proc/sys/vm/drop_caches).
        #[arg(long)]
        all: bool,
    },
}

pub fn run(command: Command) -> anyhow::Result<()> {
    let Command::Drop { files, all } = command;
    if files.is_empty() && !all {
        bail!("name files whose pages to drop, or give --all for the whole page cache");
    }
    for f in &files {
        cache::drop_file_pages(f)?;
    }
    if all {
        cache::drop_os_caches()?;
    }
    say!(
        "dropped cached pages of {} file(s){}",
        files.len(),
        if all {
            " and the whole OS page cache"
        } else {
            ""
        }
    );
    Ok(())
}
