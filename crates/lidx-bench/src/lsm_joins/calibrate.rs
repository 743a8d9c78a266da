//! The cost model's prices on this machine (paper 5, section 3): seconds per sequential and
//! per random block, calibrated once from two joins on warm RocksDB.

use std::path::Path;

use anyhow::Context as _;
use lidx::join::CountSink;
use lidx::storage::profile::{AffineCost, PROFILE_VERSION, StorageProfile, assumed_ssd};
use lidx_lsm::joins::cost::{self, CostInputs};
use lidx_lsm::joins::{self, LsmDb, Method};

use super::Options;
use super::cells::UNIF;

/// The cost model priced by this machine's warm RocksDB: seconds per sequential block
/// from HJ-P's join (all sequential in the model), per random block from INLJ-P's (its
/// scan priced as sequential), each the fastest of three, on `unif` at `o.rows`. The
/// database is made at `dir`, a new path in the study's scratch directory, and removed.
pub(super) fn calibrate(dir: &Path, o: &Options) -> anyhow::Result<(StorageProfile, String)> {
    let (config, workload) = (o.config_for(o.rows, 64), UNIF.workload(o.rows, o.seed));
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
        "this machine's RocksDB, warm: {:.2} us a random block, {:.0} MB/s sequential (calibrated on unif, {} rows a table: HJ-P {:.3} s, INLJ-P {:.3} s)",
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
    Ok((profile, description))
}
