//! INLJ (paper 5, section 3.3): R's data table scanned, each row's attribute looked up in S:
//! a get by primary key (`P`), or the S index (`NS`), its hits validated where it is a
//! validation index.

use lidx::join::JoinSink;

use super::{Counting, Emit, LsmJoinReport, in_parallel, index_of, key_ranges, validate};
use crate::Result;
use crate::joins::db::LsmDb;
use crate::joins::method::{Maintenance, Method, Shape, Side};
use crate::joins::rows::encode_key;

pub(super) fn inlj<S: JoinSink>(
    db: &LsmDb,
    method: Method,
    threads: usize,
    out: &mut Counting<'_, S>,
    report: &mut LsmJoinReport,
) -> Result<()> {
    let index = match method.shape {
        Shape::P => None,
        _ => Some(index_of(db, method, Side::S)?),
    };
    in_parallel(key_ranges(threads), out, report, |keys, out, report| {
        let mut matches = Vec::new();
        db.r.scan_entries(keys, |pk_r, attr, _, _| {
            report.lookups += 1;
            let Some(index) = index else {
                if db.s.get(&encode_key(attr))?.is_some() {
                    out.emit(attr, pk_r, attr)?;
                }
                return Ok(());
            };
            matches.clear();
            index.lookup(attr, &mut matches)?;
            if index.spec.maintenance == Maintenance::Validation {
                report.validations += validate(&db.s, attr, &mut matches)?;
            }
            for &pk_s in &matches {
                out.emit(attr, pk_r, pk_s)?;
            }
            Ok(())
        })
    })
}
