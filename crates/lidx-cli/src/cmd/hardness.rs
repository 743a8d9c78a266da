//! `lidx hardness`: paper 3's measure of how hard a key set is to learn (section 3.2): the
//! number of segments of its optimal PLA at ε = 32 and ε = 4096, and beside it (text only)
//! the mean squared error of one least-squares line (App. D).

use std::path::PathBuf;

use lidx::data::KeyFile;
use lidx::pla::{linear_mse, segment_count};

/// Arguments of `hardness`.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  lidx hardness books_200M_uint64 --csv")]
pub struct Args {
    /// A sorted SOSD key file.
    #[arg(value_name = "FILE.keys")]
    keys: PathBuf,
    /// Error bounds, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "32,4096")]
    epsilon: Vec<u64>,
    /// Print CSV (file,n,epsilon,segments) instead of text.
    #[arg(long)]
    csv: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let file = KeyFile::open(&args.keys)?;
    file.require_sorted("the hardness metric needs sorted keys")?;
    let keys = file.keys();
    if args.csv {
        say!("file,n,epsilon,segments");
    }
    for &eps in &args.epsilon {
        let segments = segment_count(keys, eps)?;
        if args.csv {
            say!("{},{},{eps},{segments}", args.keys.display(), keys.len());
        } else {
            say!(
                "epsilon {eps:>6}: {segments:>10} segments ({:.1} keys per segment)",
                keys.len() as f64 / segments.max(1) as f64
            );
        }
    }
    if !args.csv {
        let mse = linear_mse(keys)?;
        say!(
            "one line's MSE: {mse:.4e} ranks² (RMSE {:.1} ranks; paper 3, App. D: sensitive to outliers)",
            mse.sqrt()
        );
    }
    Ok(())
}
