//! The demo's joins over LSM-trees (feature `rocksdb`): paper 5's methods on R and S in
//! RocksDB, and its cost model's pick.

use std::path::Path;

use lidx::join::CountSink;
use lidx_lsm::joins::{self, LsmConfig, LsmDb, Workload, cost};

use super::{Say, heading};
use crate::text::human_bytes;

/// Section 8d: R and S in RocksDB joined by a few of paper 5's 29 methods, each building
/// the secondary index it needs, and the cost model's pick.
pub(super) fn lsm_joins(say: &mut Say<'_>, dir: &Path) -> anyhow::Result<()> {
    heading(
        say,
        "8e. Joins over LSM-trees (paper 5): R and S of 50K rows in RocksDB, ε 0.8, d 4, 1 MiB for the sort and hash joins",
    )?;
    let workload = Workload {
        rows: 50_000,
        match_rate: 0.8,
        dup_attr: 4,
        ..Workload::default()
    };
    // The paper's code's trees and join memory, scaled down with the table.
    let config = LsmConfig::scaled_to(workload.rows, workload.entry_size);
    let (mut db, _) = LsmDb::create(&dir.join("lsm"), config, workload)?;
    db.settle()?;
    for name in [
        "INLJ-P",
        "SJ-P",
        "HJ-P",
        "HJ-N",
        "INLJ-NS/S-Eager",
        "INLJ-NS/V-Lazy",
        "SJ-SS/S-Comp",
    ] {
        let method: joins::Method = name.parse().map_err(anyhow::Error::msg)?;
        let r = joins::join(&mut db, method, &mut CountSink::default())?;
        let built = match r.index_build_s {
            0.0 => String::new(),
            s => format!(", its indexes built first in {s:.3} s"),
        };
        let spilled = match r.scratch_bytes {
            0 => String::new(),
            b => format!(", {} spilled", human_bytes(b)),
        };
        say!(
            say,
            "   {name:<16} {:>7} pairs in {:.3} s{built}{spilled}",
            r.output,
            r.join_s
        );
    }
    let inputs = cost::CostInputs::of(&db, 1, 0)?;
    let ssd = lidx::storage::profile::assumed_ssd();
    for on in [joins::JoinOn::Key, joins::JoinOn::Attribute] {
        if let Some(pick) = cost::advise_for(&inputs, &ssd, on).first() {
            say!(
                say,
                "   the cost model (Tables 2-4, cold SSD assumed) picks {} for one join {}",
                pick.method,
                on.equation()
            );
        }
    }
    say!(
        say,
        "   (`lidx lsm --help`; `lidx experiment lsm-joins` runs Figs. 5-12, 13b and 13c)"
    );
    Ok(())
}
