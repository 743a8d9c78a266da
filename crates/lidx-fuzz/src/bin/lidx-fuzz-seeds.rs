//! Writes every target's seeds as cargo-fuzz's corpus: `DIR/<target>/seed-<i>` (DIR:
//! `fuzz/corpus` by default). Run from the repository's root:
//! `cargo run -p lidx-fuzz --bin lidx-fuzz-seeds`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("fuzz/corpus"), PathBuf::from);
    for target in lidx_fuzz::TARGETS {
        let target_dir = dir.join(target.name);
        let seeds = (target.seeds)();
        let written = std::fs::create_dir_all(&target_dir).and_then(|()| {
            seeds.iter().enumerate().try_for_each(|(i, seed)| {
                std::fs::write(target_dir.join(format!("seed-{i}")), seed)
            })
        });
        if let Err(e) = written {
            eprintln!("lidx-fuzz-seeds: error: {}: {e}", target_dir.display());
            return ExitCode::FAILURE;
        }
        println!("{}: {} seeds", target_dir.display(), seeds.len());
    }
    ExitCode::SUCCESS
}
