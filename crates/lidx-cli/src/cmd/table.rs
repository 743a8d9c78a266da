//! `lidx table build|shuffle|info|verify|import|export`: the `.tbl` table files of paper 1,
//! section 4.1, and the shuffled (unsorted) tables of its section 5.4.

use std::path::{Path, PathBuf};

use anyhow::bail;
use lidx::data::KeyFile;
use lidx::storage::table::{build_from_key_file, tuples_from_keys, write_shuffled};
use lidx::storage::{BLOCK_SIZE, Table, ValueSource, paper1};

use crate::progress::Context;
use crate::units::human_bytes;

/// Table files.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Build a table from an SOSD key file (keys in file order; the header records whether
    /// they are sorted).
    #[command(
        after_help = "Example:\n  lidx table build --keys lognormal.keys --out lognormal.tbl"
    )]
    Build {
        /// Input SOSD key file.
        #[arg(long, value_name = "FILE.keys")]
        keys: PathBuf,
        /// Output table.
        #[arg(long, short, value_name = "FILE.tbl")]
        out: PathBuf,
        /// Values: the key's row number in the key file, or a hash of the key
        /// (MurmurHash3's fmix64, a bijection).
        #[arg(long, value_enum, default_value = "rowid")]
        values: Values,
        /// Keep only the first of each run of equal keys (the keys must be sorted).
        #[arg(long)]
        dedup: bool,
    },
    /// Write a table's tuples, or a key file's keys as tuples, in a seeded random order: an
    /// unsorted table (paper 1 shuffles its keys for the joins of unsorted tables). Holds
    /// the tuples in memory, 16 bytes each.
    #[command(
        after_help = "Examples:\n  lidx table shuffle --table lognormal.tbl --seed 7 --out lognormal-u.tbl\n  lidx table shuffle --keys lognormal.keys --out lognormal-u.tbl"
    )]
    Shuffle {
        /// Input table (its (key, value) tuples move together).
        #[arg(
            long,
            value_name = "FILE.tbl",
            conflicts_with = "keys",
            required_unless_present = "keys"
        )]
        table: Option<PathBuf>,
        /// Input SOSD key file (values as in `table build`, from the keys' rows in this file).
        #[arg(long, value_name = "FILE.keys")]
        keys: Option<PathBuf>,
        /// Values for `--keys` (see `table build`).
        #[arg(long, value_enum, default_value = "rowid", requires = "keys")]
        values: Values,
        /// Seed of the order: the same input and seed give the same table.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Output table.
        #[arg(long, short, value_name = "FILE.tbl")]
        out: PathBuf,
    },
    /// Print a table's header and layout.
    Info {
        /// The table.
        #[arg(value_name = "FILE.tbl")]
        table: PathBuf,
    },
    /// Read the whole table and check every checksum, the padding, and that count,
    /// sortedness and key range agree with the header.
    Verify {
        /// The table.
        #[arg(value_name = "FILE.tbl")]
        table: PathBuf,
    },
    /// Convert a file in another layout into a table.
    #[command(
        after_help = "Example:\n  lidx table import --format paper1 books.bin --out books.tbl"
    )]
    Import {
        /// Layout of the input: paper1 = 16-byte header (u64 count, u32 key size, u32 value
        /// size) then 16-byte tuples, as paper 1's code writes them.
        #[arg(long, value_enum)]
        format: ExchangeFormat,
        /// Input file.
        input: PathBuf,
        /// Output table.
        #[arg(long, short, value_name = "FILE.tbl")]
        out: PathBuf,
    },
    /// Convert a sorted table into another layout.
    #[command(
        after_help = "Example:\n  lidx table export --format paper1 books.tbl --out books.bin"
    )]
    Export {
        /// Layout of the output (see `import`).
        #[arg(long, value_enum)]
        format: ExchangeFormat,
        /// The table.
        #[arg(value_name = "FILE.tbl")]
        table: PathBuf,
        /// Output file.
        #[arg(long, short)]
        out: PathBuf,
    },
}

/// Where values come from in `table build`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Values {
    /// The key's position in the key file.
    Rowid,
    /// fmix64(key).
    Hash,
}

impl Values {
    fn source(self) -> ValueSource {
        match self {
            Values::Rowid => ValueSource::RowId,
            Values::Hash => ValueSource::KeyHash,
        }
    }
}

/// Layouts lidx exchanges tables in.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ExchangeFormat {
    /// Paper 1's layout (github.com/saltsystemslab/LearnedJoinDiskExp).
    Paper1,
    /// Parquet (export only): columns `key` and `value`, uncompressed, in the table's order.
    #[cfg(feature = "sql")]
    Parquet,
}

pub fn run(ctx: &Context, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Build {
            keys,
            out,
            values,
            dedup,
        } => build(ctx, &keys, &out, values, dedup),
        Command::Shuffle {
            table,
            keys,
            values,
            seed,
            out,
        } => shuffle(ctx, table.as_deref(), keys.as_deref(), values, seed, &out),
        Command::Info { table } => info(&table),
        Command::Verify { table } => verify(ctx, &table),
        Command::Import {
            format: ExchangeFormat::Paper1,
            input,
            out,
        } => {
            let count = paper1::tuple_count(&input)?;
            if count == 0 {
                bail!(
                    "{}: the file holds no tuples; a table needs at least one",
                    input.display()
                );
            }
            let bar = ctx.bar(count, "importing", "tuples");
            let h = paper1::import(&input, &out, |done| bar.set_position(done))?;
            bar.finish_and_clear();
            say!(
                "imported {} tuples ({}) from {} to {}",
                h.count,
                sortedness(h.sorted, h.distinct),
                input.display(),
                out.display()
            );
            Ok(())
        }
        #[cfg(feature = "sql")]
        Command::Import {
            format: ExchangeFormat::Parquet,
            ..
        } => bail!("Parquet is an export format here: lidx reads Parquet files in `lidx sql`"),
        #[cfg(feature = "sql")]
        Command::Export {
            format: ExchangeFormat::Parquet,
            table,
            out,
        } => {
            use lidx_datafusion::parquet::{ParquetCompression, export};
            lidx::files::refuse_same_file(&table, &out)?;
            let t = Table::open(&table)?;
            let bar = ctx.bar(t.len(), "exporting", "tuples");
            let bytes = export(&t, &out, ParquetCompression::None, |done| {
                bar.set_position(done)
            })?;
            bar.finish_and_clear();
            say!(
                "exported {} tuples from {} to {} ({})",
                t.len(),
                table.display(),
                out.display(),
                human_bytes(bytes)
            );
            Ok(())
        }
        Command::Export {
            format: ExchangeFormat::Paper1,
            table,
            out,
        } => {
            let t = Table::open(&table)?;
            let bar = ctx.bar(t.len(), "exporting", "tuples");
            paper1::export(&t, &out, |done| bar.set_position(done))?;
            bar.finish_and_clear();
            say!(
                "exported {} tuples from {} to {} (paper 1's layout)",
                t.len(),
                table.display(),
                out.display()
            );
            Ok(())
        }
    }
}

fn build(
    ctx: &Context,
    keys_path: &Path,
    out: &Path,
    values: Values,
    dedup: bool,
) -> anyhow::Result<()> {
    let file = KeyFile::open(keys_path)?;
    if file.is_empty() {
        bail!(
            "{}: the key file holds no keys; a table needs at least one",
            keys_path.display()
        );
    }
    let values = values.source();
    let bar = ctx.bar(file.len() as u64, "building", "tuples");
    let h = build_from_key_file(&file, values, dedup, out, |done| bar.set_position(done))?;
    bar.finish_and_clear();
    say!(
        "built {} with {} tuples ({}), keys {} ..= {}",
        out.display(),
        h.count,
        sortedness(h.sorted, h.distinct),
        h.min_key,
        h.max_key
    );
    Ok(())
}

fn shuffle(
    ctx: &Context,
    table: Option<&Path>,
    keys: Option<&Path>,
    values: Values,
    seed: u64,
    out: &Path,
) -> anyhow::Result<()> {
    let (input, tuples) = match (table, keys) {
        (Some(path), _) => {
            lidx::files::refuse_same_file(path, out)?;
            let t = Table::open(path)?;
            t.require_pairs("shuffling")?;
            let bar = ctx.spinner(&format!("loading {} tuples", t.len()));
            let mut tuples = Vec::with_capacity(usize::try_from(t.len()).unwrap_or(0));
            t.scan(|chunk| {
                tuples.extend_from_slice(chunk);
                Ok(())
            })?;
            bar.finish_and_clear();
            (path, tuples)
        }
        (None, Some(path)) => {
            lidx::files::refuse_same_file(path, out)?;
            let file = KeyFile::open(path)?;
            (path, tuples_from_keys(file.keys(), values.source()))
        }
        // clap requires one of the two.
        (None, None) => bail!("give the input as --table FILE.tbl or --keys FILE.keys"),
    };
    if tuples.is_empty() {
        bail!(
            "{}: holds no tuples; a table needs at least one",
            input.display()
        );
    }
    let bar = ctx.bar(tuples.len() as u64, "shuffling", "tuples");
    let h = write_shuffled(tuples, seed, out, |done| bar.set_position(done))?;
    bar.finish_and_clear();
    say!(
        "wrote {} with the {} tuples of {} in a random order (seed {seed}; {})",
        out.display(),
        h.count,
        input.display(),
        sortedness(h.sorted, h.distinct)
    );
    Ok(())
}

fn sortedness(sorted: bool, distinct: bool) -> &'static str {
    match (sorted, distinct) {
        (true, true) => "sorted, distinct keys",
        (true, false) => "sorted, with duplicate keys",
        _ => "unsorted",
    }
}

fn info(path: &Path) -> anyhow::Result<()> {
    let t = Table::open(path)?;
    let h = t.header();
    let l = t.layout();
    let rows = [
        ("file", path.display().to_string()),
        (
            "format",
            format!(
                "lidx table, version {}, {}",
                h.version,
                if h.is_output() {
                    "join output (key, outer value, inner value)"
                } else {
                    "(key, value) tuples"
                }
            ),
        ),
        ("tuples", h.count.to_string()),
        ("order", sortedness(h.sorted, h.distinct).to_string()),
        (
            "keys",
            if h.count == 0 {
                "none".to_string()
            } else {
                format!("{} ..= {}", h.min_key, h.max_key)
            },
        ),
        (
            "data blocks",
            format!(
                "{} ({} tuples of {} bytes per {BLOCK_SIZE}-byte block)",
                l.data_blocks, l.tuples_per_block, l.tuple_size
            ),
        ),
        (
            "checksums",
            format!(
                "CRC32C per data block, {} blocks of them",
                l.checksum_blocks
            ),
        ),
        (
            "file size",
            format!("{} ({} bytes)", human_bytes(l.file_len()), l.file_len()),
        ),
    ];
    for (k, v) in rows {
        say!("{k:<12} {v}");
    }
    Ok(())
}

fn verify(ctx: &Context, path: &Path) -> anyhow::Result<()> {
    let t = Table::open(path)?;
    let bar = ctx.bar(t.len(), "verifying", "tuples");
    let report = t.verify(|done| bar.set_position(done))?;
    bar.finish_and_clear();
    say!(
        "{}: ok: {} tuples in {} data blocks, every checksum matches, {} as the header says",
        path.display(),
        report.header.count,
        report.data_blocks,
        sortedness(report.header.sorted, report.header.distinct)
    );
    Ok(())
}
