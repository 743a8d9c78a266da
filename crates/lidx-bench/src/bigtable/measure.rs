//! One cell of the study (a table size): its records generated, every system built on
//! them, then each serving gets and scans at every memory budget in turn (paper 4, Fig. 1).

use std::path::Path;

use lidx::kv::Layout;
use lidx::kv::input::{RecordInput, generate_tsv};

use super::Options;
use super::rows::{Row, RunId, row};
use super::systems::{Built, Served, System, build_kv, rocks_build, rocks_served, serve};
use crate::clients::{Load, Op};
use crate::harness::Experiment;
use crate::profiled_fs::ProfiledMount;
use crate::progress::Progress;
use crate::text::human_bytes;

/// The study as the harness runs it: one cell per table size.
pub(super) struct Measuring<'a> {
    o: &'a Options,
    data_dir: &'a Path,
    /// `data_dir` under the profile's cost, where there is one.
    mount: Option<&'a ProfiledMount>,
    machine: &'a str,
}

impl<'a> Measuring<'a> {
    /// The study of `o`, its files in `data_dir`, read through `mount` where given.
    pub(super) fn new(
        o: &'a Options,
        data_dir: &'a Path,
        mount: Option<&'a ProfiledMount>,
        machine: &'a str,
    ) -> Measuring<'a> {
        Measuring {
            o,
            data_dir,
            mount,
            machine,
        }
    }

    /// Every system built on `records` of a table of `rows` rows.
    fn build(
        &self,
        rows: u64,
        records: &[lidx::kv::write::Record<'_>],
        progress: &dyn Progress,
    ) -> anyhow::Result<Vec<(System, Served, Built)>> {
        let mut systems = Vec::new();
        for layout in [Layout::Learned, Layout::Sstable] {
            progress.message(&format!("building {layout} ({rows} rows)"));
            let path = self.data_dir.join(format!("records-{rows}-{layout}.kv"));
            let (served, built) = build_kv(records, layout, &path, self.o, self.mount)?;
            systems.push((System::Kv(layout), served, built));
        }
        if self.o.rocksdb {
            progress.message(&format!("loading RocksDB ({rows} rows)"));
            let dir = self.data_dir.join(format!("records-{rows}-rocksdb"));
            let built = rocks_build(records, &dir, self.o)?;
            let dir = match self.mount {
                Some(mount) => mount.view(&dir)?,
                None => dir,
            };
            systems.push((System::RocksDb, rocks_served(dir)?, built));
        }
        Ok(systems)
    }
}

impl Experiment for Measuring<'_> {
    type Cell = u64;
    type Row = Row;

    fn cells(&self) -> anyhow::Result<Vec<u64>> {
        Ok(self.o.rows.clone())
    }

    /// Every system serving gets and scans at every cache size, each `repeat` times.
    fn steps(&self, _: &u64) -> u64 {
        let o = self.o;
        (o.memory_budgets.len() * 2 * o.repeat * System::all(o).len()) as u64
    }

    fn run_cell(&mut self, &rows: &u64, progress: &dyn Progress) -> anyhow::Result<Vec<Row>> {
        let o = self.o;
        let tsv = self.data_dir.join(format!("records-{rows}.tsv"));
        progress.message(&format!("records {rows}"));
        let value_size = usize::try_from(o.value_size)?;
        generate_tsv(rows, value_size, o.seed, &tsv, |_| {})?;
        let input = RecordInput::tsv(&tsv)?;
        let records = input.records();
        let keys: Vec<&[u8]> = records.iter().map(|r| r.key).collect();
        let systems = self.build(rows, &records, progress)?;
        let threads = o.clients * o.outstanding;
        let ops = [Op::Get, Op::Scan { rows: o.scan_rows }];
        let mut out = Vec::new();
        for &budget in &o.memory_budgets {
            for op in ops {
                for repeat in 0..o.repeat {
                    // The systems take turns going first, so a drift of the machine
                    // favours none.
                    let mut order: Vec<usize> = (0..systems.len()).collect();
                    order.rotate_left(repeat % systems.len());
                    for i in order {
                        let (system, served, built) = &systems[i];
                        // Equal memory: the cache is what the budget leaves beside the
                        // index the system keeps in memory.
                        let Some(cache_bytes) = built.cache_within(budget) else {
                            progress.step();
                            continue;
                        };
                        progress.message(&format!(
                            "{} {} memory {} (cache {})",
                            system.name(),
                            op.name(),
                            human_bytes(budget),
                            human_bytes(cache_bytes)
                        ));
                        let load = Load {
                            op,
                            threads,
                            warmup: o.warmup,
                            measure: o.measure,
                            seed: o.seed ^ repeat as u64,
                        };
                        let m = serve(served, cache_bytes, &keys, &load, o, self.mount)?;
                        let run = RunId {
                            rows,
                            system: *system,
                            memory_budget: budget,
                            cache_bytes,
                            op,
                            repeat,
                        };
                        out.push(row(o, self.machine, &run, &m, built));
                        progress.step();
                    }
                }
            }
        }
        drop(systems);
        if !o.places.keep_data {
            let _ = std::fs::remove_file(&tsv);
        }
        Ok(out)
    }
}
