//! One cell of the study (a key set): its systems built, then each looked up cold, along
//! the cold→warm sequence and warm, under every profile.

use std::path::Path;

use anyhow::bail;
use lidx::data::write_keys;
use lidx::kv::input::RecordInput;
use lidx::kv::{BlockCache, KeyEncoding};
use lidx::storage::IoStats;
use lidx::storage::profile::{AffineCost, LatencyModel, StorageProfile, resolve_profile};
use rand::{Rng as _, SeedableRng as _};

use super::probe::{Probe, look_up, open_cold, probe};
use super::rows::Row;
use super::systems::{Built, Sketch, System, build_all, sketch};
use super::{KeySet, Options};
use crate::csv_rows::{Fixed, LIDX_VERSION};
use crate::harness::Experiment;
use crate::progress::Progress;
use crate::stats::mean;

/// Where a run's reads come from.
#[derive(Clone, Debug)]
pub(super) struct RunProfile {
    pub(super) name: String,
    /// The cost the tuner is given (the measured profile's random reads, or the named one).
    pub(super) cost: AffineCost,
    /// `None`: the local disk, timed as it is.
    pub(super) model: Option<LatencyModel>,
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
                model: None,
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
                model: Some(LatencyModel::timed(p.random)),
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
    machine: &'a str,
    /// The tuner's choices on each key set measured so far (and at the sketch size).
    pub(super) sketches: Vec<Sketch>,
}

impl<'a> Measuring<'a> {
    /// The study of `o` under `profiles`, its files in `data_dir`.
    pub(super) fn new(
        o: &'a Options,
        profiles: &'a [RunProfile],
        data_dir: &'a Path,
        machine: &'a str,
    ) -> Measuring<'a> {
        Measuring {
            o,
            profiles,
            data_dir,
            machine,
            sketches: Vec::new(),
        }
    }

    /// The tuner's choices on `set` at the sketch size, where that is larger than the
    /// measured one (laid out and tuned, never written as a store).
    fn sketch_larger(
        &mut self,
        set: &KeySet,
        measured: usize,
        progress: &dyn Progress,
    ) -> anyhow::Result<()> {
        let o = self.o;
        if !matches!(set, KeySet::Synthetic(_)) || o.sketch_keys <= measured {
            return Ok(());
        }
        progress.message(&format!(
            "sketching the tuner on {} keys of {}",
            o.sketch_keys,
            set.name()
        ));
        let big = set.keys(o.sketch_keys, o.seed)?;
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
    type Cell = KeySet;
    type Row = Row;

    fn cells(&self) -> anyhow::Result<Vec<KeySet>> {
        Ok(self.o.key_sets.clone())
    }

    /// Under each profile, its own AirIndex file and every baseline.
    fn steps(&self, _: &KeySet) -> u64 {
        (self.profiles.len() * System::under_each_profile(self.o).len()) as u64
    }

    fn run_cell(&mut self, set: &KeySet, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        let o = self.o;
        progress.message(&format!("keys {}", set.name()));
        let keys = set.keys(o.keys, o.seed)?;
        if keys.is_empty() {
            bail!("key set {} has no key", set.name());
        }
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
            for b in &built {
                if b.system == System::AirIndex && b.tuned_for != profile.name {
                    continue;
                }
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
                rows.extend(measure_system(o, profile, b, &lookups, &base)?);
                progress.step();
            }
        }
        self.sketch_larger(set, keys.len(), progress)?;
        Ok(rows)
    }
}

/// Cold starts, the cold→warm sequence and the warm lookups of `b` under `profile`.
fn measure_system(
    o: &Options,
    profile: &RunProfile,
    b: &Built,
    lookups: &Lookups,
    base: &Row,
) -> anyhow::Result<Vec<Row>> {
    let what = format!(
        "{} on {} under {}",
        b.system.name(),
        base.key_set,
        profile.name
    );
    let timed = profile.model;
    let counted = profile.model.map(|m| LatencyModel::counted(m.cost));
    let mut rows = Vec::new();
    // Cold: open and one lookup, from fresh starts.
    let mut cold = Vec::new();
    let mut opens = Vec::new();
    let mut cold_io = IoStats::default();
    for &lookup in &lookups.cold {
        let cache = BlockCache::new(o.cache_bytes);
        let (opened, open) = open_cold(o, b, timed)?;
        let mut p = probe(o, &opened, &cache)?;
        p.set_latency(timed);
        let mut one = Vec::new();
        look_up(&mut *p, &[lookup], timed, &what, &mut one)?;
        cold_io += p.io();
        opens.push(open.as_secs_f64() * 1e6);
        cold.push(open.as_secs_f64() * 1e6 + one[0]);
    }
    let timed_cold = cold.len();
    rows.push(base.phase("cold", &cold, timed_cold, cold_io, mean(&opens)));
    // The cold→warm sequence from one more fresh start, then the warm lookups. Under a
    // latency profile, the first lookups of each sleep out their reads and the rest are
    // counted.
    let cache = BlockCache::new(o.cache_bytes);
    let (opened, open) = open_cold(o, b, timed)?;
    let open_us = open.as_secs_f64() * 1e6;
    let mut p = probe(o, &opened, &cache)?;
    let (sequence, warm) = lookups.sequence.split_at(o.queries);
    let timed_first = |n: usize| match timed {
        Some(_) => o.timed_queries.min(n),
        None => n,
    };
    let timed_n = timed_first(sequence.len());
    let (mut latencies, ios) = look_up_each(&mut *p, sequence, timed_n, (timed, counted), &what)?;
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
    let before = p.io();
    let (warm_latencies, ios) = look_up_each(&mut *p, warm, timed_warm, (timed, counted), &what)?;
    let mut phases = vec![("warm", warm.len())];
    if timed_warm < warm.len() {
        phases.push(("warm-timed", timed_warm));
    }
    for (phase, n) in phases {
        let io = ios[n - 1].since(&before);
        rows.push(base.phase(phase, &warm_latencies[..n], n.min(timed_warm), io, 0.0));
    }
    Ok(rows)
}

/// Looks up each of `lookups` through `p`, the first `timed_n` under the `timed` model and
/// the rest under `counted` (`models`); their latencies (µs), and the probe's reads so far
/// after each. (The probe is asked for its reads only after a lookup: RocksDB's reads are
/// the process's, and asking reads `/proc`, which would count as the lookups' reads.)
fn look_up_each(
    p: &mut dyn Probe,
    lookups: &[(u64, u64)],
    timed_n: usize,
    (timed, counted): (Option<LatencyModel>, Option<LatencyModel>),
    what: &str,
) -> anyhow::Result<(Vec<f64>, Vec<IoStats>)> {
    let mut latencies = Vec::with_capacity(lookups.len());
    let mut ios = Vec::with_capacity(lookups.len());
    for (i, lookup) in lookups.iter().enumerate() {
        let model = if i < timed_n { timed } else { counted };
        if i == 0 || i == timed_n {
            p.set_latency(model);
        }
        look_up(p, std::slice::from_ref(lookup), model, what, &mut latencies)?;
        ios.push(p.io());
    }
    Ok((latencies, ios))
}
