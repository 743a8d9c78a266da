//! `lidx gen`: generate a synthetic key set, or sample an existing one, as an SOSD key file.

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use lidx::data::{
    Distribution, GenParams, HardnessParams, KeyFile, first_unsorted, generate, generate_hard,
    sample, write_keys,
};

use crate::progress::Context;
use crate::units::{human_bytes, parse_count};

/// Generate a key set or a sample of one.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  lidx gen --dist lognormal --n 10M --seed 1 --out lognormal.keys\n  lidx gen --sample-of lognormal.keys --ratio 100 --out outer.keys\n  lidx gen --sample-of lognormal.keys --fraction 0.1 --shuffle --out lookups.keys"
)]
pub struct Args {
    /// Distribution: udense, usparse, normal, lognormal (paper 1's synthetic sets), the
    /// harder clustered and heavytail sets, or hardness (paper 3's generator, with --local
    /// and --global). All are synthetic stand-ins, not the papers' files.
    #[arg(
        long,
        required_unless_present = "sample_of",
        conflicts_with = "sample_of"
    )]
    dist: Option<GenDist>,

    /// With --dist hardness: the optimal PLA's segments at epsilon 32 to aim for.
    #[arg(long, value_name = "H", value_parser = parse_count)]
    local: Option<u64>,

    /// With --dist hardness: the optimal PLA's segments at epsilon 4096 to aim for.
    #[arg(long, value_name = "H", value_parser = parse_count)]
    global: Option<u64>,

    /// Number of keys (1000, 1M, 2e8, ...).
    #[arg(long, value_parser = parse_count, required_unless_present = "sample_of", conflicts_with = "sample_of")]
    n: Option<u64>,

    /// Seed of the random generator (same seed, same keys).
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Fraction in [0, 1) of keys replaced by a copy of their predecessor (runs of duplicates).
    #[arg(
        long,
        default_value_t = 0.0,
        conflicts_with = "sample_of",
        allow_negative_numbers = true
    )]
    duplicates: f64,

    /// Make the smallest key 0 and the largest u64::MAX.
    #[arg(long, conflicts_with = "sample_of")]
    extremes: bool,

    /// Shuffle the keys (for unsorted tables, or a sample as lookups in random order)
    /// instead of writing them sorted.
    #[arg(long)]
    shuffle: bool,

    /// Sample this SOSD key file instead of generating keys.
    #[arg(long, value_name = "FILE.keys")]
    sample_of: Option<PathBuf>,

    /// With --sample-of: keep every K-th key, starting with the first.
    #[arg(long, value_name = "K", requires = "sample_of", conflicts_with_all = ["fraction", "ratio"])]
    every: Option<u64>,

    /// With --sample-of: keep a uniform random fraction F in (0, 1] of the keys.
    #[arg(
        long,
        value_name = "F",
        requires = "sample_of",
        conflicts_with = "ratio",
        allow_negative_numbers = true
    )]
    fraction: Option<f64>,

    /// With --sample-of: keep a uniform random 1/R of the keys, R at least 1 (paper 1's
    /// size ratio |S|/|R|).
    #[arg(
        long,
        value_name = "R",
        requires = "sample_of",
        allow_negative_numbers = true
    )]
    ratio: Option<f64>,

    /// Output SOSD key file.
    #[arg(long, short, value_name = "FILE.keys")]
    out: PathBuf,
}

/// A distribution of the library's, or paper 3's hardness generator.
#[derive(Clone, Copy, Debug)]
pub enum GenDist {
    /// A named distribution.
    Named(Distribution),
    /// Keys of a chosen local and global hardness.
    Hardness,
}

impl std::str::FromStr for GenDist {
    type Err = lidx::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "hardness" => Ok(GenDist::Hardness),
            _ => s.parse().map(GenDist::Named),
        }
    }
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    if !matches!(args.dist, Some(GenDist::Hardness))
        && (args.local.is_some() || args.global.is_some())
    {
        bail!("--local and --global go with --dist hardness");
    }
    let (keys, what) = match (&args.sample_of, args.dist, args.n) {
        (Some(src), _, _) => sample_of(&args, src)?,
        (None, Some(GenDist::Hardness), Some(n)) => {
            let n = usize::try_from(n).context("n does not fit in memory on this machine")?;
            let (Some(local), Some(global)) = (args.local, args.global) else {
                bail!("--dist hardness needs --local H and --global H");
            };
            if args.duplicates > 0.0 || args.extremes {
                bail!("--duplicates and --extremes do not go with --dist hardness");
            }
            let spinner = ctx.spinner(&format!(
                "generating {n} keys of hardness {local} / {global}"
            ));
            let mut keys = generate_hard(&HardnessParams {
                n,
                local,
                global,
                seed: args.seed,
            })?;
            spinner.finish_and_clear();
            if args.shuffle {
                lidx::data::shuffle(&mut keys, args.seed);
            }
            (
                keys,
                format!(
                    "hardness: local {local}, global {global}, seed {}",
                    args.seed
                ),
            )
        }
        (None, Some(GenDist::Named(dist)), Some(n)) => {
            let n = usize::try_from(n).context("n does not fit in memory on this machine")?;
            let params = GenParams {
                dist,
                n,
                seed: args.seed,
                duplicates: args.duplicates,
                extremes: args.extremes,
                shuffle: args.shuffle,
            };
            let spinner = ctx.spinner(&format!("generating {n} {dist} keys"));
            let keys = generate(&params)?;
            spinner.finish_and_clear();
            (keys, format!("{dist}, seed {}", args.seed))
        }
        _ => bail!("give --dist and --n, or --sample-of"),
    };
    write_keys(&args.out, &keys)?;
    let sorted = if first_unsorted(&keys).is_none() {
        "sorted"
    } else {
        "unsorted"
    };
    say!(
        "wrote {} {sorted} keys ({what}) to {} ({})",
        keys.len(),
        args.out.display(),
        human_bytes(8 + 8 * keys.len() as u64)
    );
    Ok(())
}

fn sample_of(args: &Args, src: &std::path::Path) -> anyhow::Result<(Vec<u64>, String)> {
    lidx::files::refuse_same_file(src, &args.out)?;
    let file = KeyFile::open(src)?;
    let keys = file.keys();
    if keys.is_empty() {
        bail!(
            "{}: the key file holds no keys, so a sample would be empty",
            src.display()
        );
    }
    let sampled: (Vec<u64>, String) = match (args.every, args.fraction, args.ratio) {
        (Some(k), None, None) => {
            let k = usize::try_from(k).unwrap_or(usize::MAX);
            (
                sample::every_kth(keys, k)?,
                format!("every {k}-th key of {}", src.display()),
            )
        }
        (None, Some(f), None) => (
            sample::random_fraction(keys, f, args.seed)?,
            format!("fraction {f} of {}, seed {}", src.display(), args.seed),
        ),
        (None, None, Some(r)) => {
            if !(r >= 1.0 && r.is_finite()) {
                bail!("invalid ratio: {r} is not a number of at least 1");
            }
            (
                sample::random_fraction(keys, 1.0 / r, args.seed)?,
                format!("1/{r} of {}, seed {}", src.display(), args.seed),
            )
        }
        _ => bail!("with --sample-of, give one of --every, --fraction or --ratio"),
    };
    let (mut keys, what) = sampled;
    if args.shuffle {
        lidx::data::shuffle(&mut keys, args.seed);
        return Ok((keys, format!("{what}, shuffled")));
    }
    Ok((keys, what))
}
