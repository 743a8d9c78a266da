//! `lidx kv`: key-value files with a learned block layout or an SSTable index (paper 4):
//! generate the paper's records, build a file, get, scan, inspect and verify it.

use std::ffi::{OsStr, OsString};
use std::io::{Read as _, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use lidx::kv::input::{RecordInput, generate_tsv};
use lidx::kv::{
    BlockCache, BuildOptions, Compression, KeyEncoding, KvFile, Layout, ModelKind, Reader,
};
use lidx::sniff::Sniffed;
use lidx::storage::ReadMode;
use lidx::storage::profile::{LatencyModel, resolve_profile};
use lidx_bench::text::human_bytes;

use crate::progress::Context;
use crate::units::{parse_count, parse_size};

/// The most records `kv gen` writes: 10^10 (its distinct keys are held in memory, and the
/// TSV of that many 1 KiB records is 10 TB).
const MAX_GEN_ROWS: u64 = 10_000_000_000;

/// The largest value `kv gen` writes: 1 GiB (one line is built in memory; `kv build`
/// reads values up to 4 GiB).
const MAX_GEN_VALUE: u64 = 1 << 30;

/// Key-value files.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Generate the paper's records as TSV: distinct random u64 keys written as 20-digit
    /// decimal strings (zero-padded: byte order is numeric order), in random order, each with a value of random letters and digits.
    Gen(GenArgs),
    /// Build a key-value file from TSV records or an SOSD key file.
    Build(BuildArgs),
    /// Print the value of a key, or of many in one process (exit 1 with `not found` on
    /// stderr when one is absent). A key is taken as the bytes given (any bytes, not only
    /// UTF-8), or as hex digits with --hex: the keys `kv gen` writes are 20 zero-padded
    /// digits, and must be given so (`00000000000000000042`, not `42`).
    Get(GetArgs),
    /// Print `key TAB value` lines in key order from the first key at least FROM (bytes as
    /// given, or hex digits with --hex).
    Scan(ScanArgs),
    /// The layout, records, blocks, the index's size in memory and on disk, and the
    /// block-size distribution.
    Info(FileArgs),
    /// Read every block and check checksums, key order, counts and the index.
    Verify(FileArgs),
}

#[derive(clap::Args)]
#[command(after_help = "Example:\n  lidx kv gen --rows 1M --value-size 1KiB --out recs.tsv")]
pub struct GenArgs {
    /// Records (at most 10G).
    #[arg(long, value_parser = gen_rows)]
    rows: u64,
    /// Bytes of each value (at most 1GiB).
    #[arg(long, value_parser = gen_value_size, default_value = "1KiB")]
    value_size: u64,
    /// Seed of the keys and values.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Output TSV file.
    #[arg(long, short)]
    out: PathBuf,
}

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  lidx kv build --input recs.tsv --layout learned --out recs.kv\n  lidx kv build --input recs.tsv --layout sstable --block-size 4KiB --compress lz4 --out recs-sst.kv\n  lidx kv build --input books.sosd --key-encoding decimal --model pgm --out books.kv"
)]
pub struct BuildArgs {
    /// Records: TSV (one per line, key TAB value, bytes as given, no tab or newline
    /// inside) or an SOSD key file (u64 keys, value = position). Any order; each key once.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// The input's format (default: SOSD when the file's length fits its count, else TSV).
    #[arg(long)]
    format: Option<InputFormat>,
    /// learned: a monotone model of each key's byte offset decides its block, and finds
    /// it again with no key stored (paper 4); sstable: blocks filled to the block size,
    /// found through a two-level index of each block's last key (Bigtable's); tuned: pages
    /// of the block size under layers of models on storage, tuned to --profile (paper 2);
    /// btree: the same pages under a disk B+tree of nodes of the block size (paper 2's
    /// baseline).
    #[arg(long, default_value = "learned")]
    layout: Layout,
    /// Target block size τ (of uncompressed blocks).
    #[arg(long, value_parser = parse_size, default_value = "32KiB")]
    block_size: u64,
    /// Block compression: none or lz4.
    #[arg(long, default_value = "none")]
    compress: Compression,
    /// The learned layout's model: linear (one least-squares line, as the paper), pgm
    /// (segments within --epsilon bytes), rmi (a root line routing to --leaves lines), or
    /// auto: the line where it keeps every block within --max-block, else pgm.
    #[arg(long, default_value = "auto")]
    model: ModelKind,
    /// The learned layout's cap on a data block's record bytes [default: twice
    /// --block-size]: a block the model fills past it continues in overflow blocks, found
    /// through their first keys kept in memory (a warning says so).
    #[arg(long, value_parser = parse_size)]
    max_block: Option<u64>,
    /// The tuned layout's model families, comma-separated: pgm (a piecewise-linear layer
    /// within an error), step (B+tree-like runs of units), or both, the default.
    #[arg(long, value_delimiter = ',', default_value = "pgm,step", value_parser = ["pgm", "step"])]
    families: Vec<String>,
    /// The pgm model's error in bytes (default: a quarter of the block size).
    #[arg(long, value_parser = parse_size)]
    epsilon: Option<u64>,
    /// The rmi model's leaves (default: one per 1024 records).
    #[arg(long, value_parser = parse_count)]
    leaves: Option<u64>,
    /// How an SOSD file's u64 keys are stored: u64-be (8 bytes, numeric order) or decimal
    /// (strings, as the paper's keys).
    #[arg(long, default_value = "u64-be")]
    key_encoding: KeyEncoding,
    /// The storage the tuned layout is tuned for (paper 2): ssd, nfs, hdd (lidx's
    /// assumptions) or a profile saved by `lidx bench disk` [default: ssd]. Only the tuned
    /// layout takes one: the others' structure does not depend on the storage (any file
    /// runs under a profile with `kv get --profile`).
    #[arg(long, value_name = "ssd|nfs|hdd|FILE.json")]
    profile: Option<String>,
    /// Output key-value file.
    #[arg(long, short, value_name = "FILE.kv")]
    out: PathBuf,
    /// Print the build report as one JSON object, and nothing else.
    #[arg(long)]
    json: bool,
}

/// Input formats of `lidx kv build`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// Key TAB value lines.
    Tsv,
    /// A u64 count and that many little-endian u64 keys.
    Sosd,
}

/// `kv gen --rows`: a count of at most [`MAX_GEN_ROWS`].
fn gen_rows(s: &str) -> Result<u64, String> {
    crate::units::at_most(parse_count(s)?, MAX_GEN_ROWS, "10G records")
}

/// `kv gen --value-size`: a size of at most [`MAX_GEN_VALUE`].
fn gen_value_size(s: &str) -> Result<u64, String> {
    crate::units::at_most(parse_size(s)?, MAX_GEN_VALUE, "1GiB")
}

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  lidx kv get recs.kv 1234567890123456789\n  lidx kv get --hex keys.kv 00ff41   (the key of bytes 0x00 0xff 'A')\n  lidx kv get keys.kv -- -5         (a key that starts with '-')"
)]
pub struct GetArgs {
    /// The key-value file.
    file: PathBuf,
    /// The keys: each its bytes as given (any bytes, not only UTF-8), a u64 for files of
    /// u64 keys, or with --hex the stored bytes as hex digits.
    keys: Vec<OsString>,
    /// Also the keys in this file, one per line as they would be given on the command line
    /// (`-`: standard input). All are answered in one process, through one cache.
    #[arg(long, value_name = "FILE")]
    keys_from: Option<PathBuf>,
    /// Print JSON lines: one per key (found, value, latency, reads by level, bytes, cache
    /// hits), then one summary (latency percentiles and histogram, reads in all).
    #[arg(long)]
    json: bool,
    /// KEY is hex digits, two per byte (`fffe` is the bytes 0xff 0xfe): the stored key's
    /// bytes exactly, for keys a command line cannot hold (a NUL byte) and for the 8
    /// big-endian bytes of a u64 key.
    #[arg(long)]
    hex: bool,
    #[command(flatten)]
    read: ReadArgs,
}

/// How `get` and `scan` read.
#[derive(clap::Args)]
pub struct ReadArgs {
    /// Read with O_DIRECT, past the page cache.
    #[arg(long)]
    direct: bool,
    /// A block cache of this many bytes that every lookup reads through (0: none), the
    /// index blocks and data blocks alike; at most 1TiB.
    #[arg(long, value_parser = cache_size, default_value = "0")]
    cache: u64,
    /// Print the blocks read, the read calls and bytes on stderr.
    #[arg(long)]
    stats: bool,
    /// Make each read take as long as this storage would (paper 2): ssd, nfs, hdd (lidx's
    /// assumptions) or a profile saved by `lidx bench disk`.
    #[arg(long, value_name = "ssd|nfs|hdd|FILE.json")]
    profile: Option<String>,
}

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  lidx kv scan recs.kv 5 --rows 100\n  lidx kv scan --hex keys.kv ff --rows 10   (from the first key at least the byte 0xff)\n  lidx kv scan recs.kv --keys-from starts.txt --rows 100 --cache 64MiB --json"
)]
pub struct ScanArgs {
    /// The key-value file.
    file: PathBuf,
    /// Where to start: the first key at least this (its bytes as given, any bytes; a u64
    /// for u64 keys; hex digits with --hex). Several: one scan from each, in order.
    from: Vec<OsString>,
    /// Also scan from each key in this file, one per line as it would be given on the
    /// command line (`-`: standard input). All scans run in one process, through one cache.
    #[arg(long, value_name = "FILE")]
    keys_from: Option<PathBuf>,
    /// Print JSON lines: one per scan (its start, rows, first and last key, latency, reads
    /// by level, bytes, cache hits), then one summary (latency percentiles and histogram,
    /// reads in all); no records.
    #[arg(long)]
    json: bool,
    /// FROM is hex digits, two per byte: stored key bytes exactly (see `kv get --hex`).
    #[arg(long)]
    hex: bool,
    /// Records to print at most.
    #[arg(long, value_parser = parse_count, default_value = "100")]
    rows: u64,
    #[command(flatten)]
    read: ReadArgs,
}

#[derive(clap::Args)]
pub struct FileArgs {
    /// The key-value file.
    file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Gen(args) => gen_records(ctx, args),
        Command::Build(args) => build(ctx, args),
        Command::Get(args) => get(args),
        Command::Scan(args) => scan(args),
        Command::Info(args) => info(args),
        Command::Verify(args) => verify(args),
    }
}

fn gen_records(ctx: &Context, args: GenArgs) -> anyhow::Result<()> {
    let value_size = usize::try_from(args.value_size)?;
    let bar = ctx.bar(args.rows, "generating", "rows");
    generate_tsv(args.rows, value_size, args.seed, &args.out, |n| {
        bar.set_position(n)
    })?;
    bar.finish_and_clear();
    say!(
        "{}: {} records, keys random u64 as 20-digit decimal strings, values of {} (seed {})",
        args.out.display(),
        args.rows,
        human_bytes(args.value_size),
        args.seed
    );
    Ok(())
}

fn build(ctx: &Context, args: BuildArgs) -> anyhow::Result<()> {
    let format = match args.format {
        Some(f) => f,
        None if lidx::sniff::sniff(&args.input)? == Sniffed::SosdKeys => InputFormat::Sosd,
        None => InputFormat::Tsv,
    };
    let mut options = BuildOptions {
        layout: args.layout,
        block_size: args.block_size,
        compression: args.compress,
        model: args.model,
        epsilon: args.epsilon,
        leaves: args.leaves.map(usize::try_from).transpose()?,
        key_encoding: args.key_encoding,
        profile: match &args.profile {
            Some(p) => Some(resolve_profile(p)?.random),
            None => None,
        },
        max_block: args.max_block,
        families: lidx::kv::layers::Families {
            pgm: args.families.iter().any(|f| f == "pgm"),
            step: args.families.iter().any(|f| f == "step"),
        },
        location_chunk_blocks: None,
    };
    options.refuse_unused()?;
    options.check()?;
    let ctx = &Context {
        quiet: ctx.quiet || args.json,
    };
    let spinner = ctx.spinner("reading and sorting records");
    let started = Instant::now();
    let input = match format {
        InputFormat::Tsv => RecordInput::tsv(&args.input)?,
        InputFormat::Sosd => RecordInput::sosd(&args.input, args.key_encoding)?,
    };
    options.key_encoding = input.encoding();
    spinner.set_message("writing blocks");
    let report = lidx::kv::build_from_input(&input, &options, &args.out)?;
    spinner.finish_and_clear();
    if args.json {
        say!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    let b = &report.data_blocks;
    say!(
        "{}: {} records ({} as blocks count them), {} layout, built in {:.2} s",
        args.out.display(),
        report.records,
        human_bytes(report.record_bytes),
        args.layout,
        started.elapsed().as_secs_f64()
    );
    say!(
        "data blocks: {} of target {} ({} empty); stored bytes mean {:.0}, p50 {}, p99 {}, max {}",
        b.blocks,
        human_bytes(args.block_size),
        b.empty,
        b.mean,
        b.p50,
        b.p99,
        b.max
    );
    match (args.layout, &report.learned) {
        (Layout::Learned, Some(l)) => {
            say!(
                "index: {} model of {} piece(s) over keys mapped at {} positions; {} on disk",
                l.model,
                report.model_pieces,
                report.key_positions,
                human_bytes(report.index_disk_bytes)
            );
            if l.overflow_blocks > 0 {
                eprintln!(
                    "warning: the {} model put {} into one block ({:.1}× the {} target): {} overflow block(s) keep every block within --max-block {}, found through as many first keys kept in memory; {}",
                    l.model,
                    human_bytes(l.largest_logical_block),
                    l.largest_logical_block as f64 / args.block_size as f64,
                    human_bytes(args.block_size),
                    l.overflow_blocks,
                    human_bytes(l.max_block),
                    if l.model == ModelKind::Pgm {
                        "keys that map to the same integer (a long common part after the key map's positions) share a block whatever the model"
                    } else {
                        "--model pgm (or auto) fits these keys closer"
                    }
                );
            }
        }
        (Layout::Sstable, _) => say!(
            "index: {} level-1 index blocks and level 0; {} on disk",
            report.index_blocks,
            human_bytes(report.index_disk_bytes)
        ),
        (Layout::Btree, _) => say!(
            "index: a B+tree of {} node(s) of {}; {} on disk",
            report.index_blocks,
            human_bytes(report.data_blocks.max),
            human_bytes(report.index_disk_bytes)
        ),
        (Layout::Learned, None) => {}
        (Layout::Tuned, _) => {
            if let Some(t) = &report.tuned {
                say!(
                    "tuned for reads of {:.0} us + bytes / {:.0} MB/s: pages of {}, {} structures sketched",
                    t.cost.latency_us,
                    t.cost.bandwidth_mb_s,
                    human_bytes(t.page_size),
                    t.sketched
                );
                for (i, c) in t.candidates.iter().enumerate() {
                    say!(
                        "  {} {} (error / bytes per layer, layer 1 first); predicted cold lookup {:.3} ms",
                        if i == 0 { "chosen   " } else { "runner-up" },
                        lidx_bench::airindex::structure_of(c),
                        c.cost_us / 1e3
                    );
                }
            }
        }
    }
    say!("file: {}", human_bytes(report.file_bytes));
    Ok(())
}

fn open(path: &Path, direct: bool) -> anyhow::Result<KvFile> {
    let mode = if direct {
        ReadMode::Direct
    } else {
        ReadMode::Buffered
    };
    Ok(KvFile::open(path, mode)?)
}

fn print_stats(on: bool, reader: &Reader<'_>) {
    if on {
        let s = reader.stats();
        let modelled = match s.io.modelled_ns {
            0 => String::new(),
            ns => format!(", {:.3} ms under the profile", ns as f64 / 1e6),
        };
        // Read calls per level, the data's first, up to the highest level read.
        let top = s.reads_by_level.iter().rposition(|&r| r > 0).unwrap_or(0);
        let levels: Vec<String> = s.reads_by_level[..=top]
            .iter()
            .map(u64::to_string)
            .collect();
        eprintln!(
            "read: {} data block(s), {} index block(s), {} read call(s) (by level, data first: {}), {} bytes{modelled}",
            s.data_block_reads,
            s.index_block_reads,
            s.io.reads,
            levels.join(" "),
            s.io.bytes
        );
    }
}

/// The latency model of `--profile` (its random-read cost), if given.
fn latency(profile: Option<&str>) -> anyhow::Result<Option<LatencyModel>> {
    Ok(match profile {
        Some(p) => Some(LatencyModel::timed(resolve_profile(p)?.random)),
        None => None,
    })
}

/// The stored bytes of a key given on the command line: with `hex`, the bytes its hex
/// digits spell; else its bytes as given for byte keys (any bytes, not only UTF-8), or the
/// u64 it names for u64 keys.
fn key_bytes(encoding: KeyEncoding, arg: &OsStr, hex: bool) -> anyhow::Result<Vec<u8>> {
    if hex {
        return decode_hex(arg.as_bytes());
    }
    match (encoding, arg.to_str()) {
        (KeyEncoding::Bytes, _) => Ok(arg.as_bytes().to_vec()),
        (_, Some(text)) => Ok(encoding.parse(text)?),
        (_, None) => Err(lidx::Error::param(
            "key",
            format!(
                "'{}' is not a u64, and the file's keys are u64s ({encoding}); or give the stored bytes with --hex",
                arg.to_string_lossy()
            ),
        )
        .into()),
    }
}

/// The bytes hex digits spell, two digits per byte (either case).
fn decode_hex(digits: &[u8]) -> anyhow::Result<Vec<u8>> {
    let refuse = || {
        lidx::Error::param(
            "key",
            format!(
                "'{}' is not hex digits, two per byte (--hex)",
                String::from_utf8_lossy(digits)
            ),
        )
    };
    let nibble = |d: u8| char::from(d).to_digit(16).map(|v| v as u8);
    if !digits.len().is_multiple_of(2) {
        return Err(refuse().into());
    }
    digits
        .chunks_exact(2)
        .map(|pair| match pair {
            &[hi, lo] => Some(nibble(hi)? << 4 | nibble(lo)?),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| refuse().into())
}

fn get(args: GetArgs) -> anyhow::Result<()> {
    let model = latency(args.read.profile.as_deref())?;
    let file = open(&args.file, args.read.direct)?;
    let encoding = file.footer().key_encoding;
    let keys = collect_keys(encoding, &args.keys, args.keys_from.as_deref(), args.hex)?;
    let one = keys.len() == 1 && args.keys_from.is_none();
    let cache = BlockCache::new(args.read.cache);
    let mut reader = Reader::new(&file, &cache);
    reader.set_latency(model);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut latencies = Vec::with_capacity(keys.len());
    let mut missing = 0u64;
    for key in &keys {
        let before = reader.stats();
        let started = Instant::now();
        let value = reader.get(key)?;
        let us = started.elapsed().as_secs_f64() * 1e6;
        latencies.push(us);
        missing += u64::from(value.is_none());
        let shown = encoding.render(key);
        if args.json {
            let mut line = op_json(&reader.stats().since(&before), us);
            line["key"] = String::from_utf8_lossy(&shown).into();
            line["found"] = value.is_some().into();
            if let Some(v) = &value {
                line["value"] = match std::str::from_utf8(v) {
                    Ok(text) => text.into(),
                    Err(_) => serde_json::Value::Null,
                };
                line["value_hex"] = hex(v).into();
            }
            writeln!(out, "{line}")?;
        } else if one {
            if let Some(v) = &value {
                out.write_all(v)?;
                out.write_all(b"\n")?;
            }
        } else if let Some(v) = &value {
            out.write_all(&[&shown[..], b"\t", v, b"\n"].concat())?;
        } else {
            eprintln!("not found: {}", String::from_utf8_lossy(&shown));
        }
    }
    if args.json {
        writeln!(
            out,
            "{}",
            get_summary(&reader, args.read.cache, &latencies, missing)
        )?;
    }
    out.flush()?;
    print_stats(args.read.stats, &reader);
    if missing > 0 {
        if one && !args.json {
            eprintln!("not found");
        } else if !args.json {
            eprintln!("{missing} of {} keys not found", keys.len());
        }
        std::process::exit(1);
    }
    Ok(())
}

/// The keys given as arguments, then those of `keys_from`, as stored bytes; at least one.
fn collect_keys(
    encoding: KeyEncoding,
    args: &[OsString],
    keys_from: Option<&Path>,
    hex: bool,
) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut keys = Vec::with_capacity(args.len());
    for k in args {
        keys.push(key_bytes(encoding, k, hex)?);
    }
    if let Some(path) = keys_from {
        for k in key_lines(path)? {
            keys.push(
                key_bytes(encoding, OsStr::from_bytes(&k), hex)
                    .with_context(|| format!("{}", path.display()))?,
            );
        }
    }
    if keys.is_empty() {
        anyhow::bail!("no key: give KEY arguments or --keys-from FILE");
    }
    Ok(keys)
}

/// One operation's JSON line: its latency and what it read.
fn op_json(op: &lidx::kv::OpStats, us: f64) -> serde_json::Value {
    serde_json::json!({
        "latency_us": us,
        "reads": op.io.reads,
        "bytes": op.io.bytes,
        "reads_by_level": op.reads_by_level,
        "data_block_reads": op.data_block_reads,
        "index_block_reads": op.index_block_reads,
        "cache_hits": op.io.cache_hits,
        "cache_misses": op.io.cache_misses,
        "modelled_us": op.io.modelled_ns as f64 / 1e3,
    })
}

/// The keys in `path` (`-`: standard input), one per line (the line's bytes without its
/// newline).
fn key_lines(path: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    let bytes = if path == Path::new("-") {
        let mut all = Vec::new();
        std::io::stdin().lock().read_to_end(&mut all)?;
        all
    } else {
        std::fs::read(path).with_context(|| format!("{}: cannot read the keys", path.display()))?
    };
    Ok(bytes
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

/// Lowercase hex digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The summary line of `kv get --json` and `kv scan --json`: operations ("keys"), those
/// that found something, reads in all, latency percentiles and a histogram of latencies in
/// power-of-two microsecond buckets.
fn get_summary(
    reader: &Reader<'_>,
    cache_bytes: u64,
    latencies: &[f64],
    missing: u64,
) -> serde_json::Value {
    use lidx_bench::stats::{mean, percentile};
    let s = reader.stats();
    let mut histogram: Vec<serde_json::Value> = Vec::new();
    let mut upper = 1.0f64;
    let mut left = latencies.len();
    let mut sorted = latencies.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut at = 0;
    while left > 0 {
        let n = sorted[at..].partition_point(|&us| us < upper);
        if n > 0 {
            histogram.push(serde_json::json!({"below_us": upper, "count": n}));
        }
        at += n;
        left -= n;
        upper *= 2.0;
    }
    serde_json::json!({"summary": {
        "keys": latencies.len(),
        "found": latencies.len() as u64 - missing,
        "cache_bytes": cache_bytes,
        "reads": s.io.reads,
        "bytes": s.io.bytes,
        "reads_by_level": s.reads_by_level,
        "data_block_reads": s.data_block_reads,
        "index_block_reads": s.index_block_reads,
        "cache_hits": s.io.cache_hits,
        "cache_misses": s.io.cache_misses,
        "modelled_us": s.io.modelled_ns as f64 / 1e3,
        "latency_us": {
            "mean": mean(latencies),
            "p50": percentile(latencies, 0.5),
            "p90": percentile(latencies, 0.9),
            "p99": percentile(latencies, 0.99),
            "p999": percentile(latencies, 0.999),
            "max": sorted.last().copied().unwrap_or(f64::NAN),
        },
        "histogram": histogram,
    }})
}

/// `--cache`: a size of at most 1 TiB.
fn cache_size(s: &str) -> Result<u64, String> {
    crate::units::at_most(parse_size(s)?, 1 << 40, "1TiB")
}

fn scan(args: ScanArgs) -> anyhow::Result<()> {
    let model = latency(args.read.profile.as_deref())?;
    let file = open(&args.file, args.read.direct)?;
    let encoding = file.footer().key_encoding;
    let starts = collect_keys(encoding, &args.from, args.keys_from.as_deref(), args.hex)?;
    let cache = BlockCache::new(args.read.cache);
    let mut reader = Reader::new(&file, &cache);
    reader.set_latency(model);
    reader.set_prefetch(true);
    let rows = usize::try_from(args.rows)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut latencies = Vec::with_capacity(starts.len());
    let mut empty = 0u64;
    for from in &starts {
        let before = reader.stats();
        let mut failed = None;
        let (mut first, mut last) = (None, None);
        let started = Instant::now();
        let n = reader.scan(from, rows, |k, v| {
            if args.json {
                if first.is_none() {
                    first = Some(encoding.render(k));
                }
                last = Some(k.to_vec());
            } else if failed.is_none() {
                let line = [&encoding.render(k)[..], b"\t", v, b"\n"].concat();
                failed = out.write_all(&line).err();
            }
        })?;
        let us = started.elapsed().as_secs_f64() * 1e6;
        if let Some(e) = failed {
            return Err(e.into());
        }
        latencies.push(us);
        empty += u64::from(n == 0);
        if args.json {
            let shown = |k: Option<Vec<u8>>| k.map(|k| String::from_utf8_lossy(&k).into_owned());
            let mut line = op_json(&reader.stats().since(&before), us);
            line["from"] = String::from_utf8_lossy(&encoding.render(from)).into();
            line["rows"] = n.into();
            line["first_key"] = shown(first).into();
            line["last_key"] = shown(last.map(|k| encoding.render(&k))).into();
            writeln!(out, "{line}")?;
        }
    }
    if args.json {
        writeln!(
            out,
            "{}",
            get_summary(&reader, args.read.cache, &latencies, empty)
        )?;
    }
    out.flush()?;
    print_stats(args.read.stats, &reader);
    Ok(())
}

fn info(args: FileArgs) -> anyhow::Result<()> {
    let file = open(&args.file, false)?;
    let info = lidx::kv::info(&file)?;
    if args.json {
        say!("{}", serde_json::to_string(&info)?);
        return Ok(());
    }
    let f = &info.footer;
    say!(
        "file: {} ({})",
        args.file.display(),
        human_bytes(info.file_bytes)
    );
    say!("layout: {}", f.layout);
    if let Some(l) = &info.learned {
        say!(
            "model: {} with {} piece(s); keys mapped at {} position(s) after a {}-byte common prefix",
            l.model,
            l.pieces,
            l.positions,
            l.prefix_bytes
        );
        say!(
            "blocks: {} logical (the model's), {} overflow; block locations {} in memory",
            l.logical_blocks,
            l.overflow_blocks,
            human_bytes(l.locations_bytes)
        );
    }
    if let Some((layers, cost)) = file.tuned() {
        say!("layers: {}", layers.len());
        for (i, l) in layers.iter().enumerate() {
            say!(
                "layer {}: {}, error {} bytes, {} bytes ({} pieces)",
                i + 1,
                if l.step { "step" } else { "pgm" },
                l.delta,
                l.bytes(),
                l.pieces
            );
        }
        say!(
            "tuned for: {:.0} us + bytes / {:.0} MB/s per read",
            cost.latency_us,
            cost.bandwidth_mb_s
        );
    }
    if let Some(levels) = file.btree_levels() {
        say!(
            "levels: {} (nodes per level, the root's last: {levels:?})",
            levels.len()
        );
    }
    say!("records: {}", f.records);
    say!("key encoding: {}", f.key_encoding);
    say!(
        "blocks: {} data block(s) of target {}, {} empty; compression {}",
        f.data_blocks,
        human_bytes(f.block_size),
        info.data_blocks.empty,
        f.compression
    );
    let b = &info.data_blocks;
    say!(
        "block bytes (stored): mean {:.0}, p50 {}, p99 {}, max {}",
        b.mean,
        b.p50,
        b.p99,
        b.max
    );
    say!(
        "index in memory: {} bytes (kept by the open file; {} bytes with the index blocks, so that a get reads no index block)",
        info.index_memory_bytes,
        info.full_index_bytes
    );
    match f.layout {
        Layout::Sstable => say!(
            "index on disk: {} bytes ({} level-1 index block(s))",
            info.index_disk_bytes,
            info.index_blocks
        ),
        Layout::Tuned => say!(
            "index on disk: {} bytes ({} layer piece(s))",
            info.index_disk_bytes,
            info.index_blocks
        ),
        Layout::Btree => say!(
            "index on disk: {} bytes ({} node(s))",
            info.index_disk_bytes,
            info.index_blocks
        ),
        Layout::Learned => say!("index on disk: {} bytes", info.index_disk_bytes),
    }
    Ok(())
}

fn verify(args: FileArgs) -> anyhow::Result<()> {
    let file = open(&args.file, false)?;
    let report = lidx::kv::verify(&file)?;
    if args.json {
        say!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    let index = match file.footer().layout {
        Layout::Learned => "no index block".to_string(),
        Layout::Sstable => format!("{} index block(s)", report.index_blocks),
        Layout::Tuned => format!("{} layer piece(s)", report.index_blocks),
        Layout::Btree => format!("{} B+tree node(s)", report.index_blocks),
    };
    say!(
        "{}: ok ({} records in {} data block(s), {} empty, {index}; every checksum, the key order and the index checked)",
        args.file.display(),
        report.records,
        report.data_blocks,
        report.empty_blocks,
    );
    Ok(())
}
