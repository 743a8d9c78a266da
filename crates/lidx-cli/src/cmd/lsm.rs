//! `lidx lsm`: joins over LSM-trees (paper 5): R and S in RocksDB, secondary indexes, and
//! the 29 join methods and the hybrid hash joins. The database and the joins are `lidx_lsm::joins`'; this module
//! parses and prints.

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use lidx::join::CountSink;
use lidx::storage::TableWriter;
use lidx_lsm::joins::cost::{self, CostInputs};
use lidx_lsm::joins::{
    self, ApplyTimes, Design, IndexSpec, JoinOn, LsmConfig, LsmDb, Maintenance, Method, Side,
    UpdateMix, Workload,
};

use crate::progress::Context;
use crate::units::{human_bytes, parse_count, parse_size};

/// Joins over LSM-trees (paper 5).
#[derive(clap::Subcommand)]
pub enum Command {
    /// Create R and S in RocksDB under --dir and load them.
    #[command(
        after_help = "Examples:\n  lidx lsm load --dir db --rows 1M\n  lidx lsm load --dir db --rows 1M --match-rate 0.2 --dup-attr 4 --entry-size 256\n  lidx lsm load --dir db --rows 1M --skew 0.7"
    )]
    Load(LoadArgs),
    /// Build a secondary index on one table (kept through every later update).
    #[command(
        after_help = "Example:\n  lidx lsm index --dir db --table s --design eager --maintenance sync"
    )]
    Index(IndexArgs),
    /// Apply updates to the data tables and every index there.
    #[command(after_help = "Example:\n  lidx lsm update --dir db --updates 100K --changes 0.2")]
    Update(UpdateArgs),
    /// List the join methods, one a line, as paper 5 names them: Table 4's 29, then the
    /// hybrid hash joins of its Fig. 13b.
    Methods,
    /// Join R and S by one method, building the indexes it needs where missing.
    #[command(
        after_help = "Examples:\n  lidx lsm join --dir db --method INLJ-P --count-only\n  lidx lsm join --dir db --method SJ-NS/S-Eager --out rs.tbl --json"
    )]
    Join(JoinArgs),
    /// Name the method paper 5's cost model predicts fastest for a workload of joins and
    /// updates on this database, with every method's predicted costs.
    #[command(
        after_help = "Examples:\n  lidx lsm advise --dir db --join-on key\n  lidx lsm advise --dir db --join-on attribute --joins 16 --updates 1M --profile disk.json"
    )]
    Advise(AdviseArgs),
    /// What a database holds: settings, workload, indexes, levels.
    Info {
        /// The database directory.
        #[arg(long)]
        dir: PathBuf,
    },
}

/// Arguments of `lsm load`.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// A new (or empty) directory for the database.
    #[arg(long)]
    dir: PathBuf,
    /// Rows of S (paper: 10M).
    #[arg(long, value_parser = parse_count)]
    rows: u64,
    /// |S| / |R|.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1.0)]
    ratio: f64,
    /// Bytes of an entry: a 10-byte key, a 10-byte attribute and the rest of the row.
    #[arg(long, value_parser = parse_size, default_value = "64")]
    entry_size: u64,
    /// ε: the share of R's attributes that S holds.
    #[arg(
        long,
        allow_negative_numbers = true,
        default_value_t = 1.0,
        conflicts_with = "keys"
    )]
    match_rate: f64,
    /// c: times each primary key is written (the later copies overwrite).
    #[arg(long, default_value_t = 1)]
    dup_pk: u32,
    /// d: times each attribute value repeats.
    #[arg(long, default_value_t = 1, conflicts_with = "keys")]
    dup_attr: u32,
    /// θ: Zipf exponent of S's attributes (0: uniform).
    #[arg(
        long,
        allow_negative_numbers = true,
        default_value_t = 0.0,
        conflicts_with = "keys"
    )]
    skew: f64,
    /// Take the join attributes from this SOSD key file (each key modulo 10^10), R's and
    /// S's alike, in consecutive chunks, one a batch, as the paper's Face and Wiki; the
    /// file's own duplication, matching and skew replace --match-rate, --dup-attr, --skew.
    #[arg(long, value_name = "FILE.keys")]
    keys: Option<PathBuf>,
    /// With --keys: R's join attributes from this file instead (two joinable columns, as
    /// the paper's User and Movie).
    #[arg(long, value_name = "FILE.keys", requires = "keys")]
    r_keys: Option<PathBuf>,
    /// Seed of the rows.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    #[command(flatten)]
    trees: TreeArgs,
}

/// RocksDB's settings (paper 5, section 4, as its code sets them). Sizes not given are the
/// paper's code's scaled by rows / 10M, so a smaller table keeps the paper's levels.
#[derive(clap::Args)]
struct TreeArgs {
    /// Data block size.
    #[arg(long, value_parser = parse_size, default_value = "4096")]
    block_size: u64,
    /// Write buffer (memtable) of the data trees R and S [default: the paper's code's 64 MiB
    /// scaled by rows / 10M, at least 64 KiB].
    #[arg(long, value_parser = parse_size)]
    write_buffer: Option<u64>,
    /// Bytes of a data tree's first level [default: the paper's code's 256 MiB scaled, at
    /// least four write buffers].
    #[arg(long, value_parser = parse_size)]
    level_base: Option<u64>,
    /// Write buffer of every index tree, whose first level is this times the size ratio
    /// [default: the paper's code's 8,382,464 bytes scaled, at least 64 KiB].
    #[arg(long, value_parser = parse_size)]
    index_write_buffer: Option<u64>,
    /// Size of the files compactions write [default: the paper's code's 256 Ki entries,
    /// scaled, at least 64 KiB].
    #[arg(long, value_parser = parse_size)]
    file_size: Option<u64>,
    /// Level-0 files that start a compaction (the paper's code: 1).
    #[arg(long, default_value_t = 1)]
    l0_trigger: u32,
    /// Size ratio between levels.
    #[arg(long, allow_negative_numbers = true, default_value_t = 5.0)]
    size_ratio: f64,
    /// Bloom filter bits per key of the index trees (0: none).
    #[arg(long, allow_negative_numbers = true, default_value_t = 10.0)]
    bloom_bits: f64,
    /// Bloom filter bits per key of the data trees (0: none; the paper's code: 10).
    #[arg(long, allow_negative_numbers = true, default_value_t = 10.0)]
    data_bloom_bits: f64,
    /// Block cache per tree (0: none).
    #[arg(long, value_parser = parse_size, default_value = "0")]
    block_cache: u64,
    /// Memory of the sort-merge join's runs and the hash join's partitions [default: the
    /// paper's 16 MB scaled by rows / 10M, at least 1 MiB].
    #[arg(long, value_parser = parse_size)]
    join_memory: Option<u64>,
}

impl TreeArgs {
    /// The settings for `rows` rows of `entry_size` bytes: those given, the rest scaled.
    fn config(&self, rows: u64, entry_size: usize) -> anyhow::Result<LsmConfig> {
        let scaled = LsmConfig::scaled_to(rows, entry_size);
        let write_buffer = match self.write_buffer {
            Some(b) => usize::try_from(b).context("--write-buffer is too large")?,
            None => scaled.write_buffer,
        };
        Ok(LsmConfig {
            block_size: usize::try_from(self.block_size).context("--block-size is too large")?,
            write_buffer,
            index_write_buffer: match self.index_write_buffer {
                Some(b) => usize::try_from(b).context("--index-write-buffer is too large")?,
                None => scaled.index_write_buffer,
            },
            data_level_base: self
                .level_base
                .unwrap_or_else(|| scaled.data_level_base.max(4 * write_buffer as u64)),
            target_file_size: self.file_size.unwrap_or(scaled.target_file_size),
            l0_trigger: self.l0_trigger,
            size_ratio: self.size_ratio,
            bloom_bits: self.bloom_bits,
            data_bloom_bits: self.data_bloom_bits,
            block_cache: self.block_cache,
            join_memory: self.join_memory.unwrap_or(scaled.join_memory),
        })
    }
}

/// Arguments of `lsm index`.
#[derive(clap::Args)]
pub struct IndexArgs {
    /// The database directory.
    #[arg(long)]
    dir: PathBuf,
    /// The table: r or s.
    #[arg(long)]
    table: Side,
    /// eager, lazy or comp.
    #[arg(long)]
    design: Design,
    /// sync or validation.
    #[arg(long)]
    maintenance: Maintenance,
    /// Entries carry the rest of the row [default: for sync indexes, as the methods use].
    #[arg(long)]
    covering: Option<bool>,
}

/// Arguments of `lsm update`.
#[derive(clap::Args)]
pub struct UpdateArgs {
    /// The database directory.
    #[arg(long)]
    dir: PathBuf,
    /// Updates, spread over R and S by their sizes.
    #[arg(long, value_parser = parse_count)]
    updates: u64,
    /// Share of updates that change a live row's attribute (the rest insert new rows).
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.0)]
    changes: f64,
    /// Share of updates that delete a live row.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.0)]
    deletes: f64,
    /// Seed of the updates [default: the workload's].
    #[arg(long)]
    seed: Option<u64>,
}

/// Arguments of `lsm join`.
#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("output").required(true).args(["count_only", "out"]))]
pub struct JoinArgs {
    /// The database directory.
    #[arg(long)]
    dir: PathBuf,
    /// One of paper 5's methods (`lidx lsm methods`).
    #[arg(long)]
    method: Method,
    /// Count the output (this or --out).
    #[arg(long)]
    count_only: bool,
    /// Or write it: a table of (attribute, R's key, S's key) tuples.
    #[arg(long, short, value_name = "OUT.tbl")]
    out: Option<PathBuf>,
    /// Threads, each joining an equal range of the keys (paper 5's Fig. 13c).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: u16,
    /// Print one JSON object with every figure instead.
    #[arg(long)]
    json: bool,
}

/// Arguments of `lsm advise`.
#[derive(clap::Args)]
pub struct AdviseArgs {
    /// The database directory.
    #[arg(long)]
    dir: PathBuf,
    /// Joins in the workload (a join after each of as many equal batches of updates),
    /// 1 ..= 1M.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    joins: u64,
    /// Rows written over the workload, across R and S.
    #[arg(long, value_parser = parse_count, default_value = "0")]
    updates: u64,
    /// The join asked: key (R's attribute = S's primary key: the P and PS methods) or
    /// attribute (R's attribute = S's attribute: N, NS, SS). Only methods that answer it
    /// are ranked.
    #[arg(long, value_name = "key|attribute")]
    join_on: JoinOn,
    /// Storage profile (from `lidx bench disk`) [default: an assumed SSD, labelled as such].
    #[arg(long, value_name = "PROFILE.json")]
    profile: Option<PathBuf>,
    /// Print one JSON object (the inputs and every prediction) instead.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Load(a) => load(ctx, a),
        Command::Index(a) => index(ctx, a),
        Command::Update(a) => update(ctx, a),
        Command::Methods => {
            for m in Method::every() {
                say!("{m}");
            }
            Ok(())
        }
        Command::Join(a) => join(ctx, a),
        Command::Advise(a) => advise(a),
        Command::Info { dir } => info(&dir),
    }
}

/// Opens the database at `dir`, saying on stderr what the open undid, if anything.
fn open(dir: &std::path::Path) -> anyhow::Result<LsmDb> {
    let db = LsmDb::open(dir)?;
    if let Some(undone) = db.recovered() {
        eprintln!("lidx: note: {}: {undone}", dir.display());
    }
    Ok(db)
}

fn say_times(what: &str, t: ApplyTimes) -> anyhow::Result<()> {
    say!(
        "{what}: data tables {:.2} s, indexes {:.2} s",
        t.data_s,
        t.index_s
    );
    Ok(())
}

fn load(ctx: &Context, a: LoadArgs) -> anyhow::Result<()> {
    let config = a.trees.config(
        a.rows,
        usize::try_from(a.entry_size).context("--entry-size is too large")?,
    )?;
    let workload = Workload {
        rows: a.rows,
        ratio: a.ratio,
        entry_size: usize::try_from(a.entry_size)?,
        match_rate: a.match_rate,
        dup_pk: a.dup_pk,
        dup_attr: a.dup_attr,
        skew: a.skew,
        seed: a.seed,
    };
    let spinner = ctx.spinner("loading R and S");
    let created = match &a.keys {
        Some(keys) => {
            let files = joins::AttrFiles::new(keys, a.r_keys.as_deref());
            LsmDb::create_with_keys(&a.dir, config, workload, files)
        }
        None => LsmDb::create(&a.dir, config, workload),
    };
    spinner.finish_and_clear();
    let (db, times) = created?;
    say!(
        "loaded S ({} rows) and R ({} rows) of {} bytes into {}",
        workload.rows,
        workload.r_rows(),
        workload.entry_size,
        db.dir().display()
    );
    let c = db.config();
    say!(
        "  trees: data {} write buffer, first level {}; indexes {} write buffer; files of {}",
        human_bytes(c.write_buffer as u64),
        human_bytes(c.data_level_base),
        human_bytes(c.index_write_buffer as u64),
        human_bytes(c.target_file_size)
    );
    let table_bytes = workload.rows.max(workload.r_rows()) * workload.entry_size as u64;
    if table_bytes <= c.write_buffer as u64 {
        eprintln!(
            "lidx: note: a table of {} fits in one {} write buffer, so each tree is one file; a smaller --write-buffer (or none: the paper's scaled to the rows) gives it levels",
            human_bytes(table_bytes),
            human_bytes(c.write_buffer as u64)
        );
    }
    say_times("  took", times)
}

fn index(ctx: &Context, a: IndexArgs) -> anyhow::Result<()> {
    let mut db = open(&a.dir)?;
    let mut spec = IndexSpec::of_method(a.table, a.design, a.maintenance);
    if let Some(covering) = a.covering {
        spec.covering = covering;
    }
    if db.has_index(spec) {
        bail!(
            "{}: it holds the index {} already",
            a.dir.display(),
            spec.dir_name()
        );
    }
    let spinner = ctx.spinner(&format!("building {}", spec.dir_name()));
    let built = db.build_index(spec);
    spinner.finish_and_clear();
    say!("built {} in {:.2} s", spec.dir_name(), built?);
    Ok(())
}

fn update(ctx: &Context, a: UpdateArgs) -> anyhow::Result<()> {
    let mut db = open(&a.dir)?;
    let seed = a.seed.unwrap_or(db.workload().seed);
    let mix = UpdateMix {
        changes: a.changes,
        deletes: a.deletes,
    };
    let spinner = ctx.spinner("updating");
    let times = db.update(a.updates, mix, seed);
    spinner.finish_and_clear();
    say_times(&format!("applied {} updates", a.updates), times?)
}

fn join(ctx: &Context, a: JoinArgs) -> anyhow::Result<()> {
    if let Some(out) = &a.out {
        joins::refuse_output_inside(&a.dir, out)?;
    }
    let mut db = open(&a.dir)?;
    let spinner = Context {
        quiet: ctx.quiet || a.json,
    }
    .spinner(&format!("joining by {}", a.method));
    let report = match &a.out {
        Some(out) => {
            let mut writer = TableWriter::create_output(out)?;
            let report = joins::join_with_threads(&mut db, a.method, a.threads.into(), &mut writer);
            // Published only when the join succeeded; else the unfinished table is dropped.
            if report.is_ok() {
                writer.finish()?;
            }
            report
        }
        None => joins::join_with_threads(
            &mut db,
            a.method,
            a.threads.into(),
            &mut CountSink::default(),
        ),
    };
    spinner.finish_and_clear();
    let report = report?;
    if a.json {
        say!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    let threads = match report.threads {
        1 => String::new(),
        t => format!(" on {t} threads"),
    };
    say!(
        "{}: {} output tuples in {:.3} s{threads}",
        report.method,
        report.output,
        report.join_s
    );
    if report.index_build_s > 0.0 {
        say!(
            "  indexes built first in {:.3} s (not counted in the join); {:.3} s with them",
            report.index_build_s,
            report.index_build_s + report.join_s
        );
    }
    let st = &report.stats;
    say!(
        "  {} lookups, {} rows read to validate; read {} by gets, {} by iterators",
        report.lookups,
        report.validations,
        human_bytes(st.get_bytes),
        human_bytes(st.iter_bytes)
    );
    say!(
        "  Bloom filters: {} absent keys stopped, false positive rate {:.4}; block cache hit rate {:.3}",
        st.bloom_useful,
        st.bloom_false_positive_rate(),
        st.cache_hit_rate()
    );
    if report.scratch_files > 0 {
        say!(
            "  spilled {} of whole entries to {} scratch file(s) (runs or partitions)",
            human_bytes(report.scratch_bytes),
            report.scratch_files
        );
    }
    if let Some(out) = &a.out {
        say!("  wrote {}", out.display());
    }
    Ok(())
}

fn advise(a: AdviseArgs) -> anyhow::Result<()> {
    let db = open(&a.dir)?;
    let profile = match &a.profile {
        Some(path) => lidx::storage::profile::StorageProfile::load(path)?,
        None => lidx::storage::profile::assumed_ssd(),
    };
    let inputs = CostInputs::of(&db, a.joins, a.updates)?;
    let predictions = cost::advise_for(&inputs, &profile, a.join_on);
    if a.json {
        let out = serde_json::json!({
            "join_on": a.join_on,
            "inputs": inputs,
            "device": profile.device,
            "predictions": predictions,
        });
        say!("{out}");
        return Ok(());
    }
    let Some(best) = predictions.first() else {
        bail!("the cost model predicted nothing");
    };
    say!(
        "pick for {}: {} ({:.3} s predicted: joins {:.3} s, indexes {:.3} s) for {} join(s) over {} updates on {}",
        a.join_on.equation(),
        best.method,
        best.total_s(),
        best.join_s,
        best.index_s,
        a.joins,
        a.updates,
        profile.device
    );
    say!(
        "  {:<18} {:>10} {:>10} {:>10} {:>14} {:>14}",
        "method",
        "total s",
        "joins s",
        "indexes s",
        "seq blocks",
        "random blocks"
    );
    for p in &predictions {
        let io = (
            p.join_io.sequential + p.index_io.sequential,
            p.join_io.random + p.index_io.random,
        );
        say!(
            "  {:<18} {:>10.3} {:>10.3} {:>10.3} {:>14.0} {:>14.0}",
            p.method,
            p.total_s(),
            p.join_s,
            p.index_s,
            io.0,
            io.1
        );
    }
    Ok(())
}

fn info(dir: &std::path::Path) -> anyhow::Result<()> {
    let db = open(dir)?;
    let w = db.workload();
    let c = db.config();
    say!("database     {}", dir.display());
    match db.key_files() {
        None => say!(
            "workload     S {} rows, R {} rows per batch, {} B entries, match rate {}, c {}, d {}, skew {}, seed {}",
            w.rows,
            w.r_rows(),
            w.entry_size,
            w.match_rate,
            w.dup_pk,
            w.dup_attr,
            w.skew,
            w.seed
        ),
        Some(files) => {
            say!(
                "workload     S {} rows, R {} rows per batch, {} B entries, c {}, seed {}",
                w.rows,
                w.r_rows(),
                w.entry_size,
                w.dup_pk,
                w.seed
            );
            say!(
                "attributes   S's from {} ({} keys read), R's from {} ({} keys read), each modulo 10^10",
                files.s.display(),
                files.read.0,
                files.r.as_deref().unwrap_or(&files.s).display(),
                files.read.1
            );
        }
    }
    say!("batches      {}", db.batches());
    say!(
        "trees        {} blocks, size ratio {}, Bloom bits per key {} (data) and {} (indexes), block cache {}, files of {}, a compaction at {} level-0 file(s)",
        human_bytes(c.block_size as u64),
        c.size_ratio,
        c.data_bloom_bits,
        c.bloom_bits,
        human_bytes(c.block_cache),
        human_bytes(c.target_file_size),
        c.l0_trigger
    );
    say!(
        "             data trees: {} write buffer, first level {}; index trees: {} write buffer",
        human_bytes(c.write_buffer as u64),
        human_bytes(c.data_level_base),
        human_bytes(c.index_write_buffer as u64)
    );
    say!(
        "joins        {} for the sort and hash joins' runs and partitions",
        human_bytes(c.join_memory)
    );
    for (tree, levels) in db.levels()? {
        say!("  {tree:<28} {levels} level(s)");
    }
    Ok(())
}
