//! `lidx experiment indexes`: paper 1's index study (section 5.2). For every index kind
//! and key set: the in-memory size, the build time (keys in memory, as the paper measures),
//! and the time of a cold INLJ self-join through the saved index in a fresh process
//! (Fig. 5); and the sizes of PGM and sampled PGM as their window grows (Table 2).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::time::Instant;

use anyhow::bail;
use lidx::files::AtomicFile;
use lidx::index::file::{self, KeysFingerprint};
use lidx::index::{AnyIndex, AnyParams, IndexKind, tune};

use super::{Common, Scratch, measure_join, write_table};
use crate::cmd::join::JoinRecord;
use crate::plot::{Scale, Series, chart};
use crate::progress::Context;
use crate::units::human_bytes;

/// The window every kind of Fig. 5 is built for: one block of 256 tuples.
const FIG5_WINDOW: u64 = 256;

/// Run paper 1's index study.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Index kinds for Fig. 5, each built for windows of at most 256 positions (the paper's
    /// B+tree indexes every 256th key; RMI is the hybrid that bounds its leaves' windows).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pgm,sampled-pgm,rs,rmi,btree"
    )]
    indexes: Vec<IndexKind>,
    /// Windows for Table 2 (PGM and sampled PGM sizes).
    #[arg(long, value_delimiter = ',', default_value = "256,1024,2048,4096")]
    windows: Vec<u64>,
    /// Tune RadixSpline and RMI on each key set, as the paper takes SOSD's Pareto-optimal
    /// settings (`lidx index build --tune`: the fastest lookups within 1% of the data's size;
    /// RMI windows are then unbounded) instead of their 256-position settings.
    #[arg(long)]
    tune: bool,
}

/// One index of Fig. 5 and its self-join.
struct Row {
    set: String,
    kind: IndexKind,
    params: String,
    bytes: u64,
    max_window: u64,
    build_s: f64,
    join: JoinRecord,
}

/// One size of Table 2.
struct SizeRow {
    set: String,
    kind: IndexKind,
    window: u64,
    bytes: u64,
    build_s: f64,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    if args.indexes.is_empty() {
        bail!("invalid indexes: give one or more index kinds");
    }
    if args.windows.iter().any(|&w| w < 4) {
        bail!("invalid windows: each must be at least 4 tuples");
    }
    let sets = args.common.key_sets()?;
    let dirs = args.common.dirs("indexes")?;
    let machine = crate::machine::describe();
    let csv_path = dirs.out.join("indexes.csv");
    let sizes_path = dirs.out.join("table2_sizes.csv");
    let summary_path = dirs.out.join("summary.md");
    let mut csv_out = AtomicFile::create(&csv_path)?;
    let mut sizes_out = AtomicFile::create(&sizes_path)?;
    let mut summary_out = AtomicFile::create(&summary_path)?;
    let (profile, profile_path) = args.common.profile(ctx, &dirs)?;
    let started = Instant::now();

    let per_set = args.indexes.len() + 2 * args.windows.len();
    let bar = ctx.bar((sets.len() * per_set) as u64, "indexes", "steps");
    let mut rows = Vec::new();
    let mut sizes = Vec::new();
    for set in &sets {
        let name = set.name();
        bar.set_message(format!("{name}: data"));
        let keys = set.load()?;
        let mut scratch = Scratch::new(args.common.keep_data);
        let table = scratch.add(dirs.data.join(format!("{name}.tbl")));
        write_table(&keys, &table)?;
        let fingerprint = KeysFingerprint::of(&keys);
        for &kind in &args.indexes {
            bar.set_message(format!("{name}: {kind}"));
            // Every kind at its 256-position setting, as paper 1 compares them (its RMI
            // and RadixSpline are tuned per data set; a plain RMI's window is unbounded).
            let params = crate::cmd::index::params_for_width(kind, FIG5_WINDOW)
                .unwrap_or_else(|| AnyParams::default_for(kind));
            let t = Instant::now();
            let tuned = args.tune && matches!(kind, IndexKind::RadixSpline | IndexKind::Rmi);
            let (index, build_s) = if tuned {
                let (queries, _) = crate::cmd::index::queries(&keys, 100_000, 7);
                let epsilon = match params {
                    AnyParams::RadixSpline(p) => p.epsilon,
                    _ => 0,
                };
                let budget = keys.len() as u64 * 16 / 100;
                let (index, trials) = tune::tune(kind, &keys, &queries, epsilon, budget, |_| {})?;
                // The build time of the configuration chosen, not of the whole search.
                let chosen = index.describe();
                let build_s = trials
                    .iter()
                    .find(|t| t.params == chosen)
                    .map_or(t.elapsed().as_secs_f64(), |t| t.build_seconds);
                (index, build_s)
            } else {
                let index = AnyIndex::build(&keys, &params)?;
                (index, t.elapsed().as_secs_f64())
            };
            let path = scratch.add(dirs.data.join(format!("{name}.{kind}.idx")));
            file::save(&path, &index, &fingerprint)?;
            // The self-join, cold, in a fresh process through the saved index (paper 1).
            let mut a: Vec<OsString> = vec![
                "--outer".into(),
                table.clone().into(),
                "--inner".into(),
                table.clone().into(),
                "--method".into(),
                format!("inlj:{kind}").into(),
                "--index".into(),
                path.clone().into(),
                "--profile".into(),
                profile_path.clone().into(),
            ];
            a.extend(args.common.read_flags().into_iter().map(OsString::from));
            let join = measure_join(&a)?;
            bar.inc(1);
            rows.push(Row {
                set: name.clone(),
                kind,
                params: index.describe(),
                bytes: index.size_in_bytes(),
                max_window: index.max_width(),
                build_s,
                join,
            });
        }
        for kind in [IndexKind::Pgm, IndexKind::SampledPgm] {
            for &window in &args.windows {
                let Some(params) = crate::cmd::index::params_for_width(kind, window) else {
                    continue;
                };
                let t = Instant::now();
                let index = AnyIndex::build(&keys, &params)?;
                sizes.push(SizeRow {
                    set: name.clone(),
                    kind,
                    window,
                    bytes: index.size_in_bytes(),
                    build_s: t.elapsed().as_secs_f64(),
                });
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();

    let records: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                "indexes".to_string(),
                r.set.clone(),
                r.join.inner_tuples.to_string(),
                r.kind.to_string(),
                r.params.clone(),
                r.max_window.to_string(),
                r.bytes.to_string(),
                format!("{:.6}", r.build_s),
                format!("{:.6}", r.join.join_s),
                r.join.direct.to_string(),
                r.join.output_tuples.to_string(),
                r.join.inner_blocks.to_string(),
                r.join.inner_bytes.to_string(),
                r.join.inner_reads.to_string(),
                r.join.outer_reads.to_string(),
                format!("{:.6}", r.join.model_s),
                machine.clone(),
                profile.device.clone(),
            ]
        })
        .collect();
    super::super::write_csv(
        &mut csv_out,
        &[
            "experiment",
            "key_set",
            "n",
            "index",
            "params",
            "max_window",
            "index_bytes",
            "build_s",
            "self_join_s",
            "direct",
            "output_tuples",
            "inner_blocks",
            "inner_bytes",
            "inner_reads",
            "outer_reads",
            "model_s",
            "machine",
            "device",
        ],
        &records,
    )?;
    let size_records: Vec<Vec<String>> = sizes
        .iter()
        .map(|r| {
            vec![
                r.set.clone(),
                r.kind.to_string(),
                r.window.to_string(),
                r.bytes.to_string(),
                format!("{:.6}", r.build_s),
                machine.clone(),
            ]
        })
        .collect();
    super::super::write_csv(
        &mut sizes_out,
        &[
            "key_set",
            "index",
            "window",
            "index_bytes",
            "build_s",
            "machine",
        ],
        &size_records,
    )?;

    let summary = summarize(&args, &rows, &sizes);
    say!("{summary}");
    let md = format!(
        "# lidx experiment indexes\n\nMachine: {machine}. Device: {}. {} keys per set; each self-join a fresh process, cold, {}.\n\n{summary}",
        profile.device,
        args.common.n,
        if args.common.buffered {
            "buffered (pages dropped)"
        } else {
            "O_DIRECT"
        }
    );
    summary_out.write_all(md.as_bytes())?;
    csv_out.finish()?;
    sizes_out.finish()?;
    summary_out.finish()?;
    plot(&args, &rows, &sizes, &dirs.out)?;
    dirs.finish(&args.common);
    say!(
        "\n{} indexes in {:.0} s. Wrote {}, {}, {} and 3 plots in {}",
        rows.len() + sizes.len(),
        started.elapsed().as_secs_f64(),
        csv_path.display(),
        sizes_path.display(),
        summary_path.display(),
        dirs.out.display()
    );
    Ok(())
}

/// A ratio as `1.23x`, with three significant digits below 0.1.
fn times(ratio: f64) -> String {
    if ratio < 0.1 {
        format!("{ratio:.3}x")
    } else {
        format!("{ratio:.2}x")
    }
}

fn summarize(args: &Args, rows: &[Row], sizes: &[SizeRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Fig. 5: size in memory, build time (keys in memory) and a cold INLJ self-join through each index. Paper (SSD, 200M-800M keys): PGM 1.1-1.7x faster than the B+tree in the self-join, 4x (real) to 10x (synthetic) smaller; learned indexes slower to build.\n"
    );
    let _ = writeln!(
        s,
        "| key set | index | params | max window | size | build s | self-join s | inner reads | speedup vs btree | btree size / size |"
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let btree = rows
            .iter()
            .find(|b| b.set == r.set && b.kind == IndexKind::BTree);
        let (vs_join, vs_size) = match btree {
            Some(b) => (
                times(b.join.join_s / r.join.join_s),
                times(b.bytes as f64 / r.bytes.max(1) as f64),
            ),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.3} | {:.3} | {} | {vs_join} | {vs_size} |",
            r.set,
            r.kind,
            r.params,
            r.max_window,
            human_bytes(r.bytes),
            r.build_s,
            r.join.join_s,
            r.join.inner_reads,
        );
    }
    let _ = writeln!(
        s,
        "\nTable 2: index size against window (paper, sampled PGM: shrinks several-fold from 256 to 4096).\n"
    );
    let mut header = "| key set | index |".to_string();
    let mut rule = "|---|---|".to_string();
    for w in &args.windows {
        let _ = write!(header, " w={w} |");
        rule.push_str("---:|");
    }
    let _ = writeln!(s, "{header}\n{rule}");
    let mut seen = Vec::new();
    for r in sizes {
        if seen.contains(&(r.set.clone(), r.kind)) {
            continue;
        }
        seen.push((r.set.clone(), r.kind));
        let mut line = format!("| {} | {} |", r.set, r.kind);
        for w in &args.windows {
            let size = sizes
                .iter()
                .find(|x| x.set == r.set && x.kind == r.kind && x.window == *w)
                .map_or("-".to_string(), |x| human_bytes(x.bytes));
            let _ = write!(line, " {size} |");
        }
        let _ = writeln!(s, "{line}");
    }
    s
}

fn plot(args: &Args, rows: &[Row], sizes: &[SizeRow], out: &std::path::Path) -> anyhow::Result<()> {
    let by_kind = |f: &dyn Fn(&Row) -> (f64, f64)| -> Vec<Series> {
        args.indexes
            .iter()
            .map(|&kind| Series {
                name: kind.to_string(),
                points: rows.iter().filter(|r| r.kind == kind).map(f).collect(),
            })
            .collect()
    };
    chart(
        &out.join("fig5_size_vs_self_join.png"),
        "Index size against cold INLJ self-join time (one point per key set)",
        ("index size (bytes)", Scale::Log),
        ("self-join time (s)", Scale::Log),
        &by_kind(&|r| (r.bytes as f64, r.join.join_s)),
        false,
    )?;
    chart(
        &out.join("fig5_size_vs_build.png"),
        "Index size against build time (one point per key set)",
        ("index size (bytes)", Scale::Log),
        ("build time (s)", Scale::Log),
        &by_kind(&|r| (r.bytes as f64, r.build_s)),
        false,
    )?;
    let mut series = Vec::new();
    let mut seen = Vec::new();
    for r in sizes {
        if seen.contains(&(r.set.clone(), r.kind)) {
            continue;
        }
        seen.push((r.set.clone(), r.kind));
        series.push(Series {
            name: format!("{} {}", r.set, r.kind),
            points: sizes
                .iter()
                .filter(|x| x.set == r.set && x.kind == r.kind)
                .map(|x| (x.window as f64, x.bytes as f64))
                .collect(),
        });
    }
    chart(
        &out.join("table2_size_vs_window.png"),
        "Table 2: PGM and sampled PGM size against window",
        ("window (positions)", Scale::Log),
        ("index size (bytes)", Scale::Log),
        &series,
        true,
    )
}
