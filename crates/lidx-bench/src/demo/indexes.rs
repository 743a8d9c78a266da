//! The demo's indexes: every kind over one table, and the key set's hardness.

use lidx::index::measure::{Baseline, Queries, measure};
use lidx::index::{AnyParams, Index, IndexKind, Pgm, PgmParams};
use lidx::storage::Table;

use super::{Say, heading, text};
use crate::index_bench;

/// Section 5: every index kind over one table: size, windows, lookups in memory and cold on disk,
/// and the key set's hardness.
pub(super) fn indexes(say: &mut Say<'_>, table: &Table, keys: &[u64]) -> anyhow::Result<()> {
    heading(
        say,
        "5. Indexes over the lognormal table: each kind's window holds the key's lower bound",
    )?;
    say!(
        say,
        "   (defaults: windows of at most 256 positions, except RMI's, which depend on the data)"
    );
    let queries = Queries::draw(keys, 20_000, 7);
    let baseline = Baseline::measure(keys, &queries);
    let mut rows = Vec::new();
    for kind in IndexKind::ALL {
        let params = AnyParams::default_for(kind);
        let disk = Some((table, 300));
        rows.push(measure(keys, &params, 0, &queries, &baseline, disk, 1)?.0);
    }
    text(
        say,
        &index_bench::measurements_table(&rows, &baseline, table, keys.len()),
    )?;
    let pgm = Pgm::build(keys, &PgmParams::default())?;
    let on_two = Pgm::build_on(keys, &PgmParams::default(), 2)?;
    say!(
        say,
        "   pgm: {:?} segments of {}, float slack {:?}; built on 2 threads: {:?} segments",
        pgm.segments_per_level(),
        pgm.form(),
        pgm.slack(),
        on_two.segments_per_level()
    );
    let hard = |eps| lidx::pla::segment_count(keys, eps);
    say!(
        say,
        "   hardness (paper 3): {} PLA segments at epsilon 32, {} at epsilon 4096",
        hard(32)?,
        hard(4096)?
    );
    Ok(())
}
