//! One cell of the study (a key set): its systems built, then each looked up cold, along
//! the cold→warm sequence and warm, under every profile.

use std::path::Path;
use std::time::Duration;

use anyhow::bail;
use lidx::data::write_keys;
use lidx::kv::input::RecordInput;
use lidx::kv::{BlockCache, KeyEncoding};
use lidx::storage::IoStats;
use lidx::storage::profile::{AffineCost, StorageProfile, resolve_profile};
use rand::{Rng as _, SeedableRng as _};

use super::Options;
use super::probe::{OnMount, Opened, Probe, look_up, open_cold, probe};
use super::rows::Row;
use super::systems::{Built, Sketch, System, build_all, sketch};
use crate::csv_rows::{Fixed, LIDX_VERSION};
use crate::harness::Experiment;
use crate::key_source::{KeySource, Unsorted};
use crate::profiled_fs::{FileReads, ProfiledMount};
use crate::progress::Progress;
use crate::stats::mean;

/// Where a run's reads come from.
#[derive(Clone, Debug)]
pub(super) struct RunProfile {
    pub(super) name: String,
    /// The cost the tuner is given (the measured profile's random reads, or the named one).
    pub(super) cost: AffineCost,
    /// `None`: the local disk, timed as it is; else the files are read through the
    /// study's [`ProfiledMount`] at this cost.
    pub(super) charged: Option<AffineCost>,
    pub(super) device: String,
}

/// The profiles to run under, `measured` resolved to this disk's profile.
pub(super) fn run_profiles(
    o: &Options,
    data_dir: &Path,
    progress: &dyn Progress,
) -> anyhow::Result<Vec<RunProfile>> {
    let mut out = Vec::new();
    for name in &o.profiles {
        if out.iter().any(|p: &RunProfile| &p.name == name) {
            bail!("profile {name} is given twice");
        }
        out.push(if name == "measured" {
            let p: StorageProfile =
                crate::harness::storage_profile(o.measured_profile.as_deref(), data_dir, progress)?;
            RunProfile {
                name: name.clone(),
                cost: p.random,
                charged: None,
                device: format!(
                    "{} ({})",
                    p.device,
                    if o.buffered { "buffered" } else { "O_DIRECT" }
                ),
            }
        } else {
            let p = resolve_profile(name)?;
            RunProfile {
                name: name.clone(),
                cost: p.random,
                charged: Some(p.random),
                device: p.device,
            }
        });
    }
    Ok(out)
}

/// The lookups every system answers: keys drawn uniformly from the records, and the
/// position each must return.
struct Lookups {
    /// One key for each cold start.
    cold: Vec<(u64, u64)>,
    /// The cold→warm sequence, then the warm lookups.
    sequence: Vec<(u64, u64)>,
}

impl Lookups {
    fn new(keys: &[u64], o: &Options) -> Lookups {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(o.seed ^ 0xA1_2024);
        let mut draw = |n: usize| -> Vec<(u64, u64)> {
            (0..n)
                .map(|_| {
                    let i = rng.random_range(0..keys.len());
                    (keys[i], i as u64)
                })
                .collect()
        };
        Lookups {
            cold: draw(o.cold_starts),
            sequence: draw(o.queries + o.warm_queries),
        }
    }
}

/// The study as the harness runs it: one cell per key set, whose systems are built, then
/// measured under every profile (each profile's own AirIndex file, and every baseline).
pub(super) struct Measuring<'a> {
    o: &'a Options,
    profiles: &'a [RunProfile],
    data_dir: &'a Path,
    /// `data_dir` under the profiles' cost (where a profile is not `measured`).
    mount: Option<&'a ProfiledMount>,
    machine: &'a str,
    /// The tuner's choices on each key set measured so far (and at the sketch size).
    pub(super) sketches: Vec<Sketch>,
}

impl<'a> Measuring<'a> {
    /// The study of `o` under `profiles`, its files in `data_dir`, read through `mount`
    /// under every profile but `measured`.
    pub(super) fn new(
        o: &'a Options,
        profiles: &'a [RunProfile],
        (data_dir, mount): (&'a Path, Option<&'a ProfiledMount>),
        machine: &'a str,
    ) -> Measuring<'a> {
        Measuring {
            o,
            profiles,
            data_dir,
            mount,
            machine,
            sketches: Vec::new(),
        }
    }

    /// The tuner's choices on `set` at the sketch size, where that is larger than the
    /// measured one (laid out and tuned, never written as a store).
    fn sketch_larger(
        &mut self,
        set: &KeySource,
        measured: usize,
        progress: &dyn Progress,
    ) -> anyhow::Result<()> {
        let o = self.o;
        if !set.generated() || o.sketch_keys <= measured {
            return Ok(());
        }
        progress.message(&format!(
            "sketching the tuner on {} keys of {}",
            o.sketch_keys,
            set.name()
        ));
        let big = set.keys(o.sketch_keys, o.seed, Unsorted::Sort)?;
        let path = self.data_dir.join(format!("{}-sketch.keys", set.name()));
        write_keys(&path, &big)?;
        let input = RecordInput::sosd(&path, KeyEncoding::U64Be)?;
        self.sketches.push(Sketch {
            set: set.name(),
            keys: big.len() as u64,
            choices: sketch(o, self.profiles, &input.records())?,
        });
        drop(input);
        let _ = std::fs::remove_file(&path);
        Ok(())
    }
}

impl Experiment for Measuring<'_> {
    type Cell = KeySource;
    type Row = Row;

    fn cells(&self) -> anyhow::Result<Vec<KeySource>> {
        Ok(self.o.key_sets.clone())
    }

    /// Under each profile, every profile's AirIndex file and every baseline.
    fn steps(&self, _: &KeySource) -> u64 {
        let files = System::under_each_profile(self.o).len() - 1 + self.profiles.len();
        (self.profiles.len() * files) as u64
    }

    fn run_cell(&mut self, set: &KeySource, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        let o = self.o;
        progress.message(&format!("keys {}", set.name()));
        let keys = set.keys(o.keys, o.seed, Unsorted::Sort)?;
        let keys_path = self.data_dir.join(format!("{}.keys", set.name()));
        write_keys(&keys_path, &keys)?;
        let input = RecordInput::sosd(&keys_path, KeyEncoding::U64Be)?;
        let records = input.records();
        self.sketches.push(Sketch {
            set: set.name(),
            keys: keys.len() as u64,
            choices: sketch(o, self.profiles, &records)?,
        });
        let built = build_all(
            o,
            self.profiles,
            set,
            &keys,
            &records,
            self.data_dir,
            progress,
        )?;
        drop(records);
        drop(input);
        let lookups = Lookups::new(&keys, o);
        let mut rows = Vec::new();
        for profile in self.profiles {
            // Every profile's AirIndex file runs under every profile: the matrix of paper
            // 2's claim (each profile's own structure should win under it).
            for b in &built {
                progress.message(&format!("{} under {}", b.system.name(), profile.name));
                let base = Row {
                    experiment: "airindex",
                    lidx_version: LIDX_VERSION,
                    machine: self.machine.to_string(),
                    profile: profile.name.clone(),
                    profile_latency_us: Fixed(profile.cost.latency_us),
                    profile_bandwidth_mb_s: Fixed(profile.cost.bandwidth_mb_s),
                    device: profile.device.clone(),
                    key_set: set.name(),
                    keys: keys.len() as u64,
                    system: b.system.name().into(),
                    tuned_for: b.tuned_for.clone(),
                    structure: b.structure.clone(),
                    index_bytes: b.index_bytes,
                    cache_bytes: o.cache_bytes,
                    page_size: o.page_size,
                    ..Row::default()
                };
                let storage = match (profile.charged, self.mount) {
                    (None, _) => None,
                    (Some(cost), Some(mount)) => {
                        mount.set_cost(cost)?;
                        Some(mount)
                    }
                    (Some(_), None) => bail!("profile {} needs the mount", profile.name),
                };
                rows.extend(measure_system(o, storage, b, &lookups, &base)?);
                progress.step();
            }
        }
        self.sketch_larger(set, keys.len(), progress)?;
        Ok(rows)
    }
}

/// Cold starts, the cold→warm sequence and the warm lookups of `b`, its files read from
/// the local disk or through `mount`.
fn measure_system(
    o: &Options,
    mount: Option<&ProfiledMount>,
    b: &Built,
    lookups: &Lookups,
    base: &Row,
) -> anyhow::Result<Vec<Row>> {
    let what = format!(
        "{} on {} under {}",
        b.system.name(),
        base.key_set,
        base.profile
    );
    let b = &match mount {
        Some(mount) => {
            mount.set_sleeping(true)?;
            b.at(mount)?
        }
        None => b.clone(),
    };
    let mut rows = Vec::new();
    // Cold: open and one lookup, from fresh starts.
    let mut cold = Vec::new();
    let mut opens = Vec::new();
    let mut cold_io = IoStats::default();
    let mut open_io: Option<IoStats> = None;
    for &lookup in &lookups.cold {
        let cache = BlockCache::new(o.cache_bytes);
        let s = start(o, b, mount)?;
        let mut p = on_storage(probe(o, &s.opened, &cache)?, mount, s.after);
        let one = look_up(&mut *p, lookup, &what)?;
        cold_io += p.io()?;
        if let Some(reads) = s.open_reads {
            *open_io.get_or_insert_with(IoStats::default) += reads;
        }
        opens.push(s.took.as_secs_f64() * 1e6);
        cold.push(s.took.as_secs_f64() * 1e6 + one);
    }
    let timed_cold = cold.len();
    rows.push(
        base.phase("cold", &cold, timed_cold, cold_io, mean(&opens))
            .with_open_reads(open_io, cold.len()),
    );
    // The cold→warm sequence from one more fresh start, then the warm lookups. Under a
    // latency profile, the first lookups of each sleep out their reads and the rest are
    // counted.
    let cache = BlockCache::new(o.cache_bytes);
    let s = start(o, b, mount)?;
    let open_us = s.took.as_secs_f64() * 1e6;
    let mut p = on_storage(probe(o, &s.opened, &cache)?, mount, s.after);
    let (sequence, warm) = lookups.sequence.split_at(o.queries);
    let timed_first = |n: usize| match mount {
        Some(_) => o.timed_queries.min(n),
        None => n,
    };
    let timed_n = timed_first(sequence.len());
    let (mut latencies, ios) = look_up_each(&mut *p, sequence, timed_n, mount, &what)?;
    if let Some(first) = latencies.first_mut() {
        *first += open_us;
    }
    let mut n = 1;
    loop {
        let k = n.min(latencies.len());
        rows.push(base.phase(
            "curve",
            &latencies[..k],
            k.min(timed_n),
            ios[k - 1],
            open_us,
        ));
        if k == latencies.len() {
            break;
        }
        n *= 2;
    }
    // Warm: a second row has the slept lookups alone.
    let timed_warm = timed_first(warm.len());
    let before = p.io()?;
    let (warm_latencies, ios) = look_up_each(&mut *p, warm, timed_warm, mount, &what)?;
    let mut phases = vec![("warm", warm.len())];
    if timed_warm < warm.len() {
        phases.push(("warm-timed", timed_warm));
    }
    for (phase, n) in phases {
        let io = ios[n - 1].since(&before);
        rows.push(base.phase(phase, &warm_latencies[..n], n.min(timed_warm), io, 0.0));
    }
    if let Some(mount) = mount {
        mount.set_sleeping(true)?;
    }
    Ok(rows)
}

/// A store opened cold.
struct Started {
    opened: Opened,
    /// The time it took.
    took: Duration,
    /// The mount's reads when it was open.
    after: FileReads,
    /// The reads that opening it made (under a mount).
    open_reads: Option<IoStats>,
}

/// Opens `b` cold.
fn start(o: &Options, b: &Built, mount: Option<&ProfiledMount>) -> anyhow::Result<Started> {
    let before = mount.map(|m| m.total()).transpose()?.unwrap_or_default();
    let (opened, took) = open_cold(o, b)?;
    let after = mount.map(|m| m.total()).transpose()?.unwrap_or_default();
    Ok(Started {
        opened,
        took,
        after,
        open_reads: mount.map(|_| after.io().since(&before.io())),
    })
}

/// `probe`, its reads those that reached `mount` since `since` where there is one.
fn on_storage<'a>(
    probe: Box<dyn Probe + 'a>,
    mount: Option<&'a ProfiledMount>,
    since: FileReads,
) -> Box<dyn Probe + 'a> {
    match mount {
        Some(mount) => Box::new(OnMount {
            probe,
            mount,
            since,
        }),
        None => probe,
    }
}

/// Looks up each of `lookups` through `p`, the first `timed_n` with their reads slept out
/// and the rest, under a `mount`, with their reads counted; their latencies (µs), and the
/// probe's reads so far after each. A counted lookup's latency is its wall time plus its
/// reads' profile time. (The probe is asked for its reads only between lookups, once each:
/// under a mount that is a round trip to its server, and RocksDB's reads on the local disk
/// are the process's, which asking reads from `/proc`.)
fn look_up_each(
    p: &mut dyn Probe,
    lookups: &[(u64, u64)],
    timed_n: usize,
    mount: Option<&ProfiledMount>,
    what: &str,
) -> anyhow::Result<(Vec<f64>, Vec<IoStats>)> {
    let mut latencies = Vec::with_capacity(lookups.len());
    let mut ios = Vec::with_capacity(lookups.len());
    let mut before = p.io()?;
    for (i, &lookup) in lookups.iter().enumerate() {
        let counted = i >= timed_n && mount.is_some();
        if let Some(mount) = mount
            && (i == 0 || i == timed_n)
        {
            mount.set_sleeping(!counted)?;
        }
        let wall_us = look_up(p, lookup, what)?;
        let io = p.io()?;
        latencies.push(match counted {
            true => wall_us + io.modelled_ns.saturating_sub(before.modelled_ns) as f64 / 1e3,
            false => wall_us,
        });
        ios.push(io);
        before = io;
    }
    Ok((latencies, ios))
}
