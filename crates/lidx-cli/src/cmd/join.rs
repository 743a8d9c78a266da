//! `lidx join`: join two tables on disk by index nested loop (through any index), sort-merge
//! or hash (paper 1, sections 3 and 4.3), on one or more threads, counting every block read.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use anyhow::bail;
use lidx::index::file::{self, KeysFingerprint};
use lidx::index::{AnyIndex, AnyParams, IndexKind};
use lidx::join::{
    CountSink, HashTable, InljOptions, JoinSink, JoinStats, Method, SpillSink, cost,
    grace_hash_join, parallel_join, parallel_join_with,
};
use lidx::storage::profile::StorageProfile;
use lidx::storage::{IoBackend, IoStats, ReadMode, Table, TableWriter};

use crate::progress::Context;
use crate::units::{human_bytes, parse_size};

/// The join algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinMethod {
    /// Index nested loop join through an index of this kind on the inner table.
    Inlj(IndexKind),
    /// Sort-merge join (both tables sorted).
    Merge,
    /// Hash join: the outer table in memory, the inner streamed past it.
    Hash,
    /// Whichever of inlj:sampled-pgm, merge and hash the cost model predicts fastest.
    Auto,
    /// Grace hash join: partitions both tables to disk when the outer's hash table would
    /// exceed --memory-budget (one thread).
    Grace,
}

impl FromStr for JoinMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "merge" => Ok(JoinMethod::Merge),
            "hash" => Ok(JoinMethod::Hash),
            "auto" => Ok(JoinMethod::Auto),
            "grace" => Ok(JoinMethod::Grace),
            _ => match s.strip_prefix("inlj:") {
                Some(kind) => kind
                    .parse()
                    .map(JoinMethod::Inlj)
                    .map_err(|e: lidx::Error| e.to_string()),
                None => Err(format!(
                    "'{s}' is not one of inlj:KIND (pgm, sampled-pgm, rs, rmi, btree, binary), merge, hash"
                )),
            },
        }
    }
}

/// Join two tables.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  lidx join --outer r.tbl --inner s.tbl --method inlj:sampled-pgm --index s.idx --direct --out rs.tbl\n  lidx join --outer r.tbl --inner s.tbl --method merge --threads 2 --count-only"
)]
pub struct Args {
    /// The outer (smaller) table.
    #[arg(long, value_name = "R.tbl")]
    outer: PathBuf,
    /// The inner table (sorted).
    #[arg(long, value_name = "S.tbl")]
    inner: PathBuf,
    /// inlj:pgm, inlj:sampled-pgm, inlj:rs, inlj:rmi, inlj:btree, inlj:binary, merge, hash,
    /// grace, or auto (the cost model's pick).
    #[arg(long, value_parser = JoinMethod::from_str)]
    method: JoinMethod,
    /// Storage profile for the cost model (from `lidx bench disk`) [default: an assumed SSD,
    /// labelled as such].
    #[arg(long, value_name = "PROFILE.json")]
    profile: Option<PathBuf>,
    /// A saved index of the inner table (inlj); without it one is built with the kind's
    /// defaults, and its build time is reported apart.
    #[arg(long, value_name = "S.idx")]
    index: Option<PathBuf>,
    /// Threads, each joining a contiguous share of the outer table (of the inner for hash).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Read the inputs with O_DIRECT (cold reads, as paper 1 measures).
    #[arg(long)]
    direct: bool,
    /// Bytes per sequential read of a scanned table.
    #[arg(long, value_parser = parse_size, default_value = "1MiB")]
    read_size: u64,
    /// Turn off paper 1's monotone-window optimization (inlj).
    #[arg(long)]
    no_monotone: bool,
    /// Turn off paper 1's first optimization, moving along the index's lowest level (inlj):
    /// every key is searched from the root.
    #[arg(long)]
    no_cursor: bool,
    /// Window reads each inlj thread keeps in flight at once (1: one at a time, as paper 1
    /// reads); the output stays in key order.
    #[arg(long, default_value_t = 1)]
    io_depth: usize,
    /// What keeps deep reads in flight: uring (Linux io_uring), threads (anywhere), or auto.
    #[arg(long, default_value = "auto")]
    io_backend: IoBackend,
    /// Drop the inputs' pages from the OS page cache before joining (paper 1 starts cold;
    /// O_DIRECT reads bypass the cache anyway).
    #[arg(long)]
    cold: bool,
    /// Print one JSON object with every figure instead of the report (for scripts and
    /// `lidx experiment`).
    #[arg(long)]
    json: bool,
    /// Output table of (key, outer value, inner value) tuples.
    #[arg(
        long,
        short,
        value_name = "OUT.tbl",
        required_unless_present = "count_only",
        conflicts_with = "count_only"
    )]
    out: Option<PathBuf>,
    /// Count the output instead of writing it.
    #[arg(long)]
    count_only: bool,
    /// Memory for the grace hash join's hash table (its partitions go next to the inner
    /// table).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    memory_budget: u64,
}

/// Every figure of one join, as `--json` prints it (one CSV row of `lidx experiment`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct JoinRecord {
    pub method: String,
    pub threads: usize,
    pub direct: bool,
    pub io_depth: usize,
    pub io_backend: String,
    /// INLJ settings (paper 1's two optimizations and the widest window read whole).
    pub cursor: bool,
    pub monotone: bool,
    pub max_window_blocks: u64,
    pub read_size: u64,
    pub outer_tuples: u64,
    pub inner_tuples: u64,
    pub output_tuples: u64,
    pub join_s: f64,
    pub build_s: Option<f64>,
    pub write_s: Option<f64>,
    pub fsync_s: Option<f64>,
    pub lookups: u64,
    pub outer_blocks: u64,
    pub outer_bytes: u64,
    pub outer_reads: u64,
    pub inner_blocks: u64,
    pub inner_bytes: u64,
    pub inner_reads: u64,
    pub spilled_bytes: u64,
    pub index_window: f64,
    pub model_s: f64,
    pub model_device: String,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    if args.threads == 0 {
        bail!("invalid threads: 0 is not a number of threads");
    }
    if args.io_depth == 0 {
        bail!("invalid io-depth: 0 reads in flight cannot make progress");
    }
    if args.json {
        // The JSON object is the only output: no progress either.
        let quiet = Context { quiet: true };
        return run_quiet(&quiet, args);
    }
    run_quiet(ctx, args)
}

fn run_quiet(ctx: &Context, mut args: Args) -> anyhow::Result<()> {
    if args.index.is_some() && !matches!(args.method, JoinMethod::Inlj(_)) {
        bail!("--index applies to inlj methods only");
    }
    if let Some(out) = &args.out {
        super::refuse_same_file(&args.outer, out)?;
        super::refuse_same_file(&args.inner, out)?;
    }
    let outer = Table::open(&args.outer)?;
    let inner = Table::open(&args.inner)?;
    outer.require_pairs("a join")?;
    inner.require_pairs("a join")?;
    if args.cold {
        lidx::files::cache::drop_file_pages(&args.outer)?;
        lidx::files::cache::drop_file_pages(&args.inner)?;
    }
    let mode = if args.direct {
        ReadMode::Direct
    } else {
        ReadMode::Buffered
    };
    let read_tuples = (args.read_size / 16).max(1);

    // The cost model: every join prints its estimate beside the measured time; `auto` picks by it.
    let profile = match &args.profile {
        Some(path) => StorageProfile::load(path)?,
        None => cost::assumed_ssd(),
    };
    let window = match &args.index {
        Some(path) => file::load(path)?.0.max_width() as f64,
        None => 256.0,
    };
    let shape = cost::JoinShape {
        outer: outer.len(),
        inner: inner.len(),
        window,
        read_bytes: args.read_size,
        tuple_bytes: 16,
        threads: args.threads as u64,
        io_depth: args.io_depth as u64,
    };
    let estimate = cost::estimate(&shape, &profile, &cost::CpuCosts::default());
    if args.method == JoinMethod::Auto {
        let both_sorted = outer.header().sorted && inner.header().sorted;
        let mut options = vec![(estimate.hash_s, JoinMethod::Hash)];
        if both_sorted {
            options.push((estimate.merge_s, JoinMethod::Merge));
            options.push((estimate.inlj_s, JoinMethod::Inlj(IndexKind::SampledPgm)));
        }
        let (_, pick) = options
            .into_iter()
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .unwrap_or((0.0, JoinMethod::Hash));
        args.method = match (pick, &args.index) {
            (JoinMethod::Inlj(_), Some(path)) => JoinMethod::Inlj(file::load(path)?.0.kind()),
            (pick, _) => pick,
        };
        if !args.json {
            say!(
                "auto: the cost model predicts inlj {:.3} s, merge {:.3} s, hash {:.3} s on {}; running {}",
                estimate.inlj_s,
                estimate.merge_s,
                estimate.hash_s,
                profile.device,
                method_name(args.method)
            );
        }
    }

    if args.method == JoinMethod::Grace {
        return run_grace(
            ctx,
            &args,
            &outer,
            &inner,
            mode,
            read_tuples,
            estimate.hash_s,
            &profile.device,
        );
    }

    // Everything that can refuse the inputs happens before any output exists.
    let mut build_s = None;
    let index;
    let hashed;
    let method = match args.method {
        JoinMethod::Inlj(kind) => {
            inner.require_sorted("an index nested loop join (its inner table)")?;
            if !args.no_monotone {
                outer.require_sorted(
                    "an index nested loop join with monotone windows (its outer table)",
                )?;
            }
            index = load_or_build(ctx, args.index.as_deref(), &inner, kind, &mut build_s)?;
            let options = InljOptions {
                mode,
                outer_read_tuples: read_tuples,
                cursor: !args.no_cursor,
                monotone: !args.no_monotone,
                io_depth: args.io_depth,
                io_backend: args.io_backend,
                ..InljOptions::default()
            };
            Method::Inlj {
                index: &index,
                options,
            }
        }
        JoinMethod::Merge => {
            outer.require_sorted("a sort-merge join")?;
            inner.require_sorted("a sort-merge join")?;
            Method::Merge { mode, read_tuples }
        }
        JoinMethod::Hash | JoinMethod::Auto | JoinMethod::Grace => {
            let t = Instant::now();
            hashed = HashTable::build(&outer, mode, read_tuples)?;
            build_s = Some(t.elapsed().as_secs_f64());
            Method::Hash {
                table: &hashed,
                mode,
                read_tuples,
            }
        }
    };
    let spinner = ctx.spinner("joining");
    let t = Instant::now();
    let (output, stats) = if args.count_only {
        let (counts, stats) = parallel_join::<CountSink>(&outer, &inner, &method, args.threads)?;
        (None, (counts.iter().map(|c| c.0).sum::<u64>(), stats))
    } else {
        // Each thread spills its output next to the output file; nothing waits in memory.
        let dir = match args.out.as_deref().and_then(Path::parent) {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (parts, stats) = parallel_join_with(&outer, &inner, &method, args.threads, || {
            SpillSink::new(&dir)
        })?;
        (Some(parts), (stats.output, stats))
    };
    let join_s = t.elapsed().as_secs_f64();
    spinner.finish_and_clear();
    let (count, stats) = stats;

    let mut write = None;
    if let (Some(parts), Some(out)) = (output, &args.out) {
        // Each thread's part at the offset its predecessors' counts give: in order, never sorted.
        write = Some(write_parts(out, parts)?);
    }
    let predicted = match args.method {
        JoinMethod::Inlj(_) => estimate.inlj_s,
        JoinMethod::Merge => estimate.merge_s,
        _ => estimate.hash_s,
    };
    let record = record(
        &args,
        (outer.len(), inner.len()),
        &stats,
        count,
        join_s,
        build_s,
        write.as_ref(),
    );
    let record = JoinRecord {
        index_window: window,
        model_s: predicted,
        model_device: profile.device.clone(),
        ..record
    };
    report(&args, &record)?;
    if !args.json {
        say!(
            "  cost model ({}): {predicted:.3} s predicted, {join_s:.3} s measured; |S|/W = {:.0}, inlj breaks even with merge near |R| = {:.0}",
            profile.device,
            estimate.crossover_outer,
            estimate.break_even_outer
        );
    }
    Ok(())
}

fn method_name(method: JoinMethod) -> String {
    match method {
        JoinMethod::Inlj(kind) => format!("inlj:{kind}"),
        JoinMethod::Merge => "merge".to_string(),
        JoinMethod::Hash => "hash".to_string(),
        JoinMethod::Auto => "auto".to_string(),
        JoinMethod::Grace => "grace".to_string(),
    }
}

/// Copies the spilled parts, in order, into a join output table at `out`; returns the path,
/// the seconds spent writing and the seconds of the fsync and rename.
fn write_parts(out: &Path, parts: Vec<SpillSink>) -> anyhow::Result<(PathBuf, f64, f64)> {
    let t = Instant::now();
    let mut writer = TableWriter::create_output(out)?;
    for part in parts {
        part.drain_into(&mut writer)?;
    }
    let written = t.elapsed().as_secs_f64();
    let t = Instant::now();
    writer.finish()?;
    Ok((out.to_path_buf(), written, t.elapsed().as_secs_f64()))
}

/// The grace hash join, on one thread.
#[expect(
    clippy::too_many_arguments,
    reason = "the grace path takes the join's settings and the model's estimate"
)]
fn run_grace(
    ctx: &Context,
    args: &Args,
    outer: &Table,
    inner: &Table,
    mode: ReadMode,
    read_tuples: u64,
    predicted: f64,
    device: &str,
) -> anyhow::Result<()> {
    let temp_dir = match inner.path().parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let spinner = ctx.spinner("joining");
    let t = Instant::now();
    let mut count = CountSink::default();
    let mut spill = match &args.out {
        Some(_) if !args.count_only => Some(SpillSink::new(&temp_dir)?),
        _ => None,
    };
    let mut sink: &mut dyn JoinSink = match spill.as_mut() {
        Some(spill) => spill,
        None => &mut count,
    };
    let stats = grace_hash_join(
        outer,
        inner,
        mode,
        read_tuples,
        args.memory_budget,
        &temp_dir,
        &mut sink,
    )?;
    let join_s = t.elapsed().as_secs_f64();
    spinner.finish_and_clear();
    let write = match (&args.out, spill) {
        (Some(out), Some(spill)) => Some(write_parts(out, vec![spill])?),
        _ => None,
    };
    let record = JoinRecord {
        model_s: predicted,
        model_device: device.to_string(),
        ..record(
            args,
            (outer.len(), inner.len()),
            &stats,
            stats.output,
            join_s,
            None,
            write.as_ref(),
        )
    };
    report(args, &record)?;
    if !args.json {
        say!(
            "  {} spilled to partitions (memory budget {})",
            human_bytes(stats.spilled_bytes),
            human_bytes(args.memory_budget)
        );
        say!(
            "  cost model ({device}): {predicted:.3} s predicted for an in-memory hash join, {join_s:.3} s measured"
        );
    }
    Ok(())
}

/// The inner table's index: loaded (and checked against the table) or built.
fn load_or_build(
    ctx: &Context,
    path: Option<&Path>,
    inner: &Table,
    kind: IndexKind,
    build_s: &mut Option<f64>,
) -> anyhow::Result<AnyIndex> {
    let h = inner.header();
    match path {
        Some(path) => {
            let (index, fp) = file::load(path)?;
            if index.kind() != kind {
                bail!(
                    "{}: the index is {}, but the method asks for inlj:{kind}",
                    path.display(),
                    index.kind()
                );
            }
            // The header's facts are checked here; `lidx index info --table` checks the keys' CRC too.
            let table_fp = KeysFingerprint {
                n: h.count,
                min_key: h.min_key,
                max_key: h.max_key,
                crc32c: fp.crc32c,
            };
            super::index::check_fingerprint(path, inner.path(), &fp, &table_fp)?;
            Ok(index)
        }
        None => {
            let bar = ctx.spinner(&format!("building {kind} over {} keys", h.count));
            let keys = inner.read_keys()?;
            let t = Instant::now();
            let index = AnyIndex::build(&keys, &AnyParams::default_for(kind))?;
            *build_s = Some(t.elapsed().as_secs_f64());
            bar.finish_and_clear();
            Ok(index)
        }
    }
}

fn io_line(side: &str, io: &IoStats) -> String {
    format!(
        "{side:<6} {:>10} blocks {:>10} in {:>9} reads",
        io.blocks,
        human_bytes(io.bytes),
        io.reads
    )
}

/// The figures of a finished join (the model's fields left for the caller).
fn record(
    args: &Args,
    (outer_tuples, inner_tuples): (u64, u64),
    stats: &JoinStats,
    count: u64,
    join_s: f64,
    build_s: Option<f64>,
    write: Option<&(PathBuf, f64, f64)>,
) -> JoinRecord {
    let inlj = matches!(args.method, JoinMethod::Inlj(_));
    let mut method = method_name(args.method);
    if inlj && args.no_cursor {
        method.push_str(" no-cursor");
    }
    if inlj && args.no_monotone {
        method.push_str(" no-monotone");
    }
    let deep = inlj && args.io_depth > 1;
    JoinRecord {
        method,
        threads: args.threads,
        direct: args.direct,
        io_depth: if inlj { args.io_depth } else { 1 },
        cursor: inlj && !args.no_cursor,
        monotone: inlj && !args.no_monotone,
        max_window_blocks: if inlj {
            InljOptions::default().max_window_blocks
        } else {
            0
        },
        io_backend: if deep {
            args.io_backend.resolve().name().to_string()
        } else {
            "sync".to_string()
        },
        read_size: args.read_size,
        outer_tuples,
        inner_tuples,
        output_tuples: count,
        join_s,
        build_s,
        write_s: write.map(|w| w.1),
        fsync_s: write.map(|w| w.2),
        lookups: stats.lookups,
        outer_blocks: stats.outer_io.blocks,
        outer_bytes: stats.outer_io.bytes,
        outer_reads: stats.outer_io.reads,
        inner_blocks: stats.inner_io.blocks,
        inner_bytes: stats.inner_io.bytes,
        inner_reads: stats.inner_io.reads,
        spilled_bytes: stats.spilled_bytes,
        index_window: 0.0,
        model_s: 0.0,
        model_device: String::new(),
    }
}

fn report(args: &Args, r: &JoinRecord) -> anyhow::Result<()> {
    if args.json {
        say!("{}", serde_json::to_string(r)?);
        return Ok(());
    }
    let deep = if r.io_depth > 1 {
        format!(
            ", {} reads in flight per thread ({})",
            r.io_depth, r.io_backend
        )
    } else {
        String::new()
    };
    say!(
        "{} join of {} with {}: {} output tuples in {:.3} s on {} thread(s), {} reads{deep}",
        r.method,
        args.outer.display(),
        args.inner.display(),
        r.output_tuples,
        r.join_s,
        r.threads,
        if r.direct { "O_DIRECT" } else { "buffered" }
    );
    match (args.method, r.build_s) {
        (JoinMethod::Hash, Some(b)) => say!(
            "  hash table built in {b:.3} s; {:.3} s with the build",
            r.join_s + b
        ),
        (JoinMethod::Inlj(_), Some(b)) => {
            say!("  index built in {b:.3} s (not counted in the join)")
        }
        _ => {}
    }
    if r.lookups > 0 {
        say!("  {} index lookups", r.lookups);
    }
    let io = |blocks, bytes, reads| IoStats {
        blocks,
        bytes,
        reads,
    };
    say!(
        "  {}",
        io_line("outer", &io(r.outer_blocks, r.outer_bytes, r.outer_reads))
    );
    say!(
        "  {}",
        io_line("inner", &io(r.inner_blocks, r.inner_bytes, r.inner_reads))
    );
    if let (Some(written), Some(synced), Some(out)) = (r.write_s, r.fsync_s, &args.out) {
        say!(
            "  wrote {} in {written:.3} s, fsync and rename {synced:.3} s",
            out.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_parse() {
        assert_eq!("merge".parse(), Ok(JoinMethod::Merge));
        assert_eq!(
            "inlj:sampled-pgm".parse(),
            Ok(JoinMethod::Inlj(IndexKind::SampledPgm))
        );
        assert!("inlj:alex".parse::<JoinMethod>().is_err());
        assert!("nested".parse::<JoinMethod>().is_err());
    }
}
