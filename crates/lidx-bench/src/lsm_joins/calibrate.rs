//! The cost model's prices on this machine (paper 5, section 3): seconds per sequential and
//! per random block, calibrated once from two joins on warm RocksDB; and every method's
//! latency there, the ranking a trivial advisor would take from the same run.
//!
//! The calibration's data is held out from the study's cells: `unif` drawn with another
//! seed, at half the rows.

use std::path::Path;

use anyhow::Context as _;
use lidx::join::CountSink;
use lidx::storage::profile::{AffineCost, PROFILE_VERSION, StorageProfile, assumed_ssd};
use lidx_lsm::joins::cost::{self, CostInputs};
use lidx_lsm::joins::{self, IndexSpec, LsmDb, Method};

use super::Options;
use super::cells::UNIF;

/// The calibration: the profile it prices the model by, what it says of itself, and every
/// method's latency on its data (join and index build), fastest first.
pub(super) struct Calibration {
    pub(super) profile: StorageProfile,
    pub(super) description: String,
    pub(super) ranking: Vec<(Method, f64)>,
}

/// The seed of the calibration's rows: not the cells'.
fn held_out_seed(seed: u64) -> u64 {
    seed ^ 0x9e37_79b9_7f4a_7c15
}

/// The cost model priced by this machine's warm RocksDB: seconds per sequential block
/// from HJ-P's join (all sequential in the model), per random block from INLJ-P's (its
/// scan priced as sequential), each the fastest of three, on `unif` at half of `o.rows`
/// drawn with another seed than the cells'; then every method once there, its indexes
/// built from the loaded rows. The database is made at `dir`, a new path in the study's
/// scratch directory, and removed.
pub(super) fn calibrate(dir: &Path, o: &Options) -> anyhow::Result<Calibration> {
    let rows = (o.rows / 2).max(1);
    let (config, workload) = (
        o.config_for(rows, 64),
        UNIF.workload(rows, held_out_seed(o.seed)),
    );
    let (mut db, _) = LsmDb::create(dir, config, workload)?;
    db.settle()?;
    let fastest = |db: &mut LsmDb, name: &str| -> anyhow::Result<f64> {
        let method: Method = name.parse().map_err(anyhow::Error::msg)?;
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let r = joins::join(db, method, &mut CountSink::default())?;
            best = best.min(r.join_s);
        }
        Ok(best)
    };
    let hj = fastest(&mut db, "HJ-P")?;
    let inlj = fastest(&mut db, "INLJ-P")?;
    let inputs = CostInputs::of(&db, 1, 0)?;
    let mut built: Vec<(IndexSpec, f64)> = Vec::new();
    let mut ranking = Vec::new();
    for method in Method::every() {
        let mut index_s = 0.0;
        for spec in method.indexes() {
            let seconds = match built.iter().find(|(s, _)| *s == spec) {
                Some(&(_, seconds)) => seconds,
                None => {
                    let seconds = db.build_index(spec)?;
                    built.push((spec, seconds));
                    seconds
                }
            };
            index_s += seconds;
        }
        let r = joins::join(&mut db, method, &mut CountSink::default())?;
        ranking.push((method, r.join_s + index_s));
    }
    ranking.sort_by(|a, b| a.1.total_cmp(&b.1));
    drop(db);
    std::fs::remove_dir_all(dir)?;
    let predicted = cost::advise(&inputs, &assumed_ssd());
    let io = |name: &str| {
        predicted
            .iter()
            .find(|p| p.method == name)
            .map(|p| p.join_io)
            .with_context(|| format!("the model has no {name}"))
    };
    let (hj_io, inlj_io) = (io("HJ-P")?, io("INLJ-P")?);
    let seq_s = hj / hj_io.sequential.max(1.0);
    let rand_s = ((inlj - seq_s * inlj_io.sequential) / inlj_io.random.max(1.0)).max(seq_s);
    let block = config.block_size as f64;
    let description = format!(
        "this machine's RocksDB, warm: {:.2} us a random block, {:.0} MB/s sequential (calibrated on unif drawn with another seed than the cells', {} rows a table: HJ-P {:.3} s, INLJ-P {:.3} s)",
        rand_s * 1e6,
        block / (seq_s * 1e6),
        workload.rows,
        hj,
        inlj
    );
    let profile = StorageProfile {
        version: PROFILE_VERSION,
        dir: dir.display().to_string(),
        device: description.clone(),
        measured_at_unix: 0,
        file_size: 0,
        sequential: AffineCost {
            latency_us: 0.0,
            bandwidth_mb_s: block / (seq_s * 1e6),
        },
        random: AffineCost {
            latency_us: rand_s * 1e6,
            bandwidth_mb_s: 1e12,
        },
        measurements: Vec::new(),
    };
    Ok(Calibration {
        profile,
        description,
        ranking,
    })
}
