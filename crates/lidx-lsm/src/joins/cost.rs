//! Paper 5's cost model (Tables 2–4) as an advisor: the I/O each of the 29 methods costs
//! for a workload of joins and updates, turned into seconds by a storage profile, and the
//! method it predicts fastest.
//!
//! In the paper's notation (Table 2): an LSM-tree of N entries of e bytes has
//! L = ⌈log_T(N·e / M)⌉ levels (at least 1) for size ratio T and write buffer M (an index
//! tree's; a data tree's first level is set apart, as in the paper's code, so its M is that
//! level's bytes over T); blocks hold
//! B bytes; a Bloom filter of b bits per key lets a fraction p ≈ 0.6185^b of absent keys
//! through. An index entry has e' bytes: a Lazy or Eager entry holds the d postings of an
//! attribute (10 bytes of key each, plus the rest of the row when covering), a Composite
//! entry one posting.
//!
//! Point lookups (Table 3): a primary key costs `Z0 = L·p` when absent and `Z1 = L·p +
//! ⌈e/B⌉` when present; through an index, as the table gives per design and consistency
//! (a validation hit also reads each of its d rows, `d·(L·p + ⌈e/B⌉)`). Where Table 3
//! charges a Lazy hit a read on every level, we charge the levels that hold a fragment of
//! its posting list, and `L'·p` for the others: RocksDB's get gathers merge operands only
//! where the Bloom filters let it in. A posting lands on a level with the level's share of
//! the tree, so d postings hold `Σ_l 1 - (1 - T^(l-1)(T-1)/(T^L - 1))^d` levels, mostly
//! just the last. Primary keys written c times leave 1/c of the rows (Table 2 has no c;
//! paper 5's Fig. 7 varies it): tables and synchronous indexes hold the live rows,
//! validation indexes every posting written. An index update costs its writes, `L'·T·e'/B` amortized over compactions, plus for synchronous indexes
//! the lookup of the row's old attribute, and for Eager the read of the entry it rewrites.
//!
//! Joins (Table 4): INLJ scans R (`N_R·e_R/B`) and makes N_R lookups, a share ε of them
//! hits; a sort-merge join reads a side that an index or its key order gives sorted once,
//! and sorts the others (`5·N·e/B`: scan, write runs, read them, write and read the merged
//! output); a hash join reads, writes and reads both (`3·N·e/B`), a hybrid one all but the
//! share of R its memory holds, and S's that meets it. A validation index read
//! in order by a sort-merge join also reads each posting's row. Scans and sorts read
//! sequentially; lookups are random reads of one block each.
//!
//! A workload of F joins over U updates applied in F equal batches (a join after each, as
//! paper 5's join-frequency experiments) costs the F joins at the sizes the tables have
//! then, the indexes' builds over the loaded rows (from a scan: no old attribute to look
//! up), and their upkeep through the updates. The profile prices reads as cold ones; a
//! database in the page cache runs faster than predicted, INLJ most of all.
//! The paper draws its decision graph (Fig. 4) from these formulas; [`advise`] evaluates
//! them for every method and names the cheapest.

use lidx::storage::profile::StorageProfile;
use serde::Serialize;

use super::db::LsmDb;
use super::method::{Algorithm, Design, IndexSpec, JoinOn, Maintenance, Method, Shape, Side};
use super::rows::{KEY_BYTES, MIN_ENTRY};
use super::run::HybridLayout;
use crate::Result;

/// What the model is evaluated on.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostInputs {
    /// Live rows of R and of S now.
    pub rows: (f64, f64),
    /// Bytes of an entry.
    pub entry_size: f64,
    /// Bytes of a block.
    pub block_size: f64,
    /// Bloom filter bits per key.
    /// Bloom filter bits per key of the index trees.
    pub bloom_bits: f64,
    /// Bloom filter bits per key of the data trees.
    pub data_bloom_bits: f64,
    /// Size ratio T.
    pub size_ratio: f64,
    /// A data tree's first level, bytes (its levels are counted as a tree's whose write
    /// buffer is this over T).
    pub data_level_base: f64,
    /// An index tree's write buffer M, bytes.
    pub index_write_buffer: f64,
    /// Bytes of the sort and hash joins' memory.
    pub join_memory: f64,
    /// ε: the share of R's rows with a match in S.
    pub match_rate: f64,
    /// d: rows written per attribute value (Table 2: "in a sequence of updates").
    pub dup_attr: f64,
    /// c: writes per primary key; a table keeps 1/c of the rows written to it (the later
    /// copies overwrite), so do its synchronous indexes, and its validation indexes keep
    /// every posting written.
    pub dup_pk: f64,
    /// F: joins in the workload.
    pub joins: f64,
    /// U: rows written after the load, over both tables, in F equal batches.
    pub updates: f64,
    /// The share of those rows that go to S (the workload's |S| / (|R| + |S|)).
    pub s_share: f64,
}

impl CostInputs {
    /// The inputs of `db` as it stands, for a workload of `joins` joins and `updates`
    /// updates to come. ε and d are measured from the live rows (the workload's where a
    /// table is empty), so attributes read from key files bring their own; d counts the
    /// rows written, c per live one.
    pub fn of(db: &LsmDb, joins: u64, updates: u64) -> Result<CostInputs> {
        if joins > MAX_JOINS {
            return Err(lidx::Error::param(
                "joins",
                format!("{joins} is not in 1 ..= {MAX_JOINS}"),
            )
            .into());
        }
        let c = db.config();
        let w = db.workload();
        let (r, s) = (db.rows(Side::R)?, db.rows(Side::S)?);
        let held: std::collections::HashSet<u64> = s.iter().map(|row| row.1).collect();
        let dup_pk = f64::from(w.dup_pk);
        let dup_attr = match s.len() {
            0 => f64::from(w.dup_attr),
            n => n as f64 / held.len() as f64 * dup_pk,
        };
        let match_rate = match r.len() {
            0 => w.match_rate,
            n => r.iter().filter(|row| held.contains(&row.1)).count() as f64 / n as f64,
        };
        Ok(CostInputs {
            rows: (r.len() as f64, s.len() as f64),
            entry_size: w.entry_size as f64,
            block_size: c.block_size as f64,
            bloom_bits: c.bloom_bits,
            data_bloom_bits: c.data_bloom_bits,
            size_ratio: c.size_ratio,
            data_level_base: c.data_level_base as f64,
            index_write_buffer: c.index_write_buffer as f64,
            join_memory: c.join_memory as f64,
            match_rate,
            dup_attr,
            dup_pk,
            joins: joins.max(1) as f64,
            updates: updates as f64,
            s_share: w.ratio / (1.0 + w.ratio),
        })
    }

    /// p of an index tree's Bloom filters.
    fn bloom_fpr(&self) -> f64 {
        false_positive_rate(self.bloom_bits)
    }

    /// p of a data tree's Bloom filters.
    fn data_bloom_fpr(&self) -> f64 {
        false_positive_rate(self.data_bloom_bits)
    }

    /// L of a tree of `entries` of `entry_size` bytes whose write buffer is `buffer` bytes.
    fn levels(&self, entries: f64, entry_size: f64, buffer: f64) -> f64 {
        let ratio = entries * entry_size / buffer;
        if ratio <= 1.0 {
            1.0
        } else {
            ratio.log(self.size_ratio).ceil().max(1.0)
        }
    }

    /// Levels of an `levels`-level tree that hold at least one of `postings` written over
    /// time, each landing on a level with that level's share of the tree,
    /// `T^(l-1)·(T-1) / (T^L - 1)` (so mostly on the last).
    fn levels_holding(&self, postings: f64, levels: f64) -> f64 {
        let t = self.size_ratio;
        let l = levels.round().clamp(1.0, 64.0) as i32;
        let total = t.powi(l) - 1.0;
        (1..=l)
            .map(|k| {
                let share = t.powi(k - 1) * (t - 1.0) / total;
                1.0 - (1.0 - share).powf(postings)
            })
            .sum::<f64>()
            .max(1.0)
    }

    /// Blocks one entry of `bytes` spans when read (at least one).
    fn blocks(&self, bytes: f64) -> f64 {
        (bytes / self.block_size).ceil().max(1.0)
    }
}

/// p ≈ 0.6185^b of a Bloom filter of `bits` bits per key (1: no filter).
fn false_positive_rate(bits: f64) -> f64 {
    if bits <= 0.0 {
        1.0
    } else {
        0.6185f64.powf(bits)
    }
}

/// I/O in blocks: read sequentially (scans, sorts, partitions, compactions) or randomly
/// (point lookups, one block a read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Io {
    /// Blocks read or written in long sequential runs.
    pub sequential: f64,
    /// Blocks read one at a time.
    pub random: f64,
}

impl Io {
    fn seq(blocks: f64) -> Io {
        Io {
            sequential: blocks,
            random: 0.0,
        }
    }

    fn rand(blocks: f64) -> Io {
        Io {
            sequential: 0.0,
            random: blocks,
        }
    }

    fn plus(self, o: Io) -> Io {
        Io {
            sequential: self.sequential + o.sequential,
            random: self.random + o.random,
        }
    }

    fn times(self, k: f64) -> Io {
        Io {
            sequential: self.sequential * k,
            random: self.random * k,
        }
    }

    /// Seconds under `profile`: sequential blocks at its sequential bandwidth (in 1 MiB
    /// reads), random ones a read each.
    pub fn seconds(&self, profile: &StorageProfile, block_size: f64) -> f64 {
        let seq_bytes = self.sequential * block_size;
        let seq_us = profile.sequential.read_us(1 << 20) * seq_bytes / f64::from(1u32 << 20);
        let rand_us = profile.random.read_us(block_size as u64) * self.random;
        (seq_us + rand_us) / 1e6
    }
}

/// The model's prediction for one method.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// The method, as the paper names it.
    pub method: String,
    /// The join it answers.
    pub joins_on: JoinOn,
    /// I/O of all the workload's joins.
    pub join_io: Io,
    /// I/O of building the method's indexes over the loaded rows and keeping them through
    /// the updates.
    pub index_io: Io,
    /// Seconds of the joins under the profile.
    pub join_s: f64,
    /// Seconds of the indexes under the profile.
    pub index_s: f64,
}

impl Prediction {
    /// Joins and indexes together.
    pub fn total_s(&self) -> f64 {
        self.join_s + self.index_s
    }
}

/// One table at some size, as the model sees it.
struct TableAt<'a> {
    inputs: &'a CostInputs,
    rows: f64,
}

impl TableAt<'_> {
    fn levels(&self) -> f64 {
        let i = self.inputs;
        i.levels(self.rows, i.entry_size, i.data_level_base / i.size_ratio)
    }

    /// Blocks of a scan of the table.
    fn scan(&self) -> f64 {
        self.rows * self.inputs.entry_size / self.inputs.block_size
    }

    /// A point lookup by primary key that finds its row.
    fn get_hit(&self) -> f64 {
        self.levels() * self.inputs.data_bloom_fpr() + self.inputs.blocks(self.inputs.entry_size)
    }

    /// Postings of an attribute the index `spec` holds: the live rows' for a synchronous
    /// index, every one written for a validation index.
    fn postings(&self, spec: IndexSpec) -> f64 {
        let i = self.inputs;
        match spec.maintenance {
            Maintenance::Sync => (i.dup_attr / i.dup_pk.max(1.0)).max(1.0),
            Maintenance::Validation => i.dup_attr.max(1.0),
        }
    }

    /// Bytes of an index entry of `spec`, and entries of the index.
    fn index_shape(&self, spec: IndexSpec) -> (f64, f64) {
        let i = self.inputs;
        let posting = KEY_BYTES as f64
            + if spec.covering {
                i.entry_size - MIN_ENTRY as f64
            } else {
                0.0
            };
        let postings = self.postings(spec);
        let held = match spec.maintenance {
            Maintenance::Sync => self.rows,
            Maintenance::Validation => self.rows * i.dup_pk.max(1.0),
        };
        match spec.design {
            Design::Eager | Design::Lazy => (
                KEY_BYTES as f64 + postings * posting,
                (held / postings).max(1.0),
            ),
            Design::Comp => (MIN_ENTRY as f64 + posting - KEY_BYTES as f64, held),
        }
    }

    fn index_levels(&self, spec: IndexSpec) -> f64 {
        let (e, n) = self.index_shape(spec);
        self.inputs.levels(n, e, self.inputs.index_write_buffer)
    }

    /// Table 3's empty and non-empty lookups through the index `spec`.
    fn index_lookups(&self, spec: IndexSpec) -> (Io, Io) {
        let i = self.inputs;
        let (e_idx, _) = self.index_shape(spec);
        let l_idx = self.index_levels(spec);
        let p = i.bloom_fpr();
        let d = self.postings(spec);
        let z0 = Io::rand(l_idx * p);
        let found = match spec.design {
            Design::Eager => Io::rand(l_idx * p + i.blocks(e_idx)),
            // Postings appended blindly lie in fragments on the levels they were pushed to;
            // a get gathers them all, its Bloom filters skipping the levels that hold none.
            Design::Lazy => {
                let fragments = i.levels_holding(d, l_idx);
                Io::rand(l_idx * p + fragments * i.blocks(e_idx / fragments))
            }
            Design::Comp => Io::rand(l_idx + d * e_idx / i.block_size),
        };
        let validate = match spec.maintenance {
            Maintenance::Sync => Io::default(),
            Maintenance::Validation => Io::rand(d * self.get_hit()),
        };
        (z0, found.plus(validate))
    }

    /// The cost of one row's entry when the index is built from its table: as an update,
    /// without the lookup of an old attribute (the rows are consistent already).
    fn index_build(&self, spec: IndexSpec) -> Io {
        self.index_update(IndexSpec {
            maintenance: Maintenance::Validation,
            ..spec
        })
    }

    /// Table 3's cost of one update of the index `spec`.
    fn index_update(&self, spec: IndexSpec) -> Io {
        let i = self.inputs;
        let (e_idx, _) = self.index_shape(spec);
        let l_idx = self.index_levels(spec);
        let write = Io::seq(l_idx * i.size_ratio * e_idx / i.block_size);
        let p = i.bloom_fpr();
        let old_attr = Io::rand(self.get_hit());
        let rewrite = Io::rand(l_idx * p + i.blocks(e_idx));
        match (spec.maintenance, spec.design) {
            (Maintenance::Sync, Design::Eager) => old_attr.plus(rewrite).plus(write),
            (Maintenance::Sync, _) => old_attr.plus(write),
            (Maintenance::Validation, Design::Eager) => rewrite.plus(write),
            (Maintenance::Validation, _) => write,
        }
    }

    /// Reading the index `spec` whole in attribute order (and, for validation, each
    /// posting's row).
    fn index_scan(&self, spec: IndexSpec) -> Io {
        let (e_idx, n_idx) = self.index_shape(spec);
        let read = Io::seq(n_idx * e_idx / self.inputs.block_size);
        match spec.maintenance {
            Maintenance::Sync => read,
            Maintenance::Validation => read.plus(Io::rand(
                self.rows * self.inputs.dup_pk.max(1.0) * self.get_hit(),
            )),
        }
    }
}

/// The I/O of one join by `method` with R and S of `rows`.
fn join_io(inputs: &CostInputs, method: Method, rows: (f64, f64)) -> Io {
    let r = TableAt {
        inputs,
        rows: rows.0,
    };
    let s = TableAt {
        inputs,
        rows: rows.1,
    };
    let eps = inputs.match_rate;
    let spec = |side| {
        method
            .indexes()
            .into_iter()
            .find(|x: &IndexSpec| x.side == side)
    };
    match (method.algorithm, method.shape) {
        (Algorithm::Inlj, Shape::P) => {
            let l = s.levels();
            let z0 = l * inputs.data_bloom_fpr();
            Io::seq(r.scan()).plus(Io::rand(r.rows * ((1.0 - eps) * z0 + eps * s.get_hit())))
        }
        (Algorithm::Inlj, _) => {
            let (z0, z1) =
                spec(Side::S).map_or((Io::default(), Io::default()), |x| s.index_lookups(x));
            Io::seq(r.scan()).plus(z0.times(r.rows * (1.0 - eps)).plus(z1.times(r.rows * eps)))
        }
        (Algorithm::Hj, _) => Io::seq(3.0 * (r.scan() + s.scan())),
        // The share of R that stays in the join memory is neither written nor read back,
        // nor is S's share that meets it.
        (Algorithm::Hhj, _) => {
            let held = (r.rows * (inputs.entry_size + HASH_ROW_OVERHEAD)) as u64;
            let resident = HybridLayout::of(held, inputs.join_memory as u64).resident_share(held);
            Io::seq((1.0 + 2.0 * (1.0 - resident)) * (r.scan() + s.scan()))
        }
        (Algorithm::Sj, shape) => {
            let r_side = match (shape, spec(Side::R)) {
                (Shape::Ps | Shape::Ss, Some(x)) => r.index_scan(x),
                _ => Io::seq(5.0 * r.scan()),
            };
            let s_side = match (shape, spec(Side::S)) {
                (Shape::P | Shape::Ps, _) => Io::seq(s.scan()),
                (Shape::Ns | Shape::Ss, Some(x)) => s.index_scan(x),
                _ => Io::seq(5.0 * s.scan()),
            };
            r_side.plus(s_side)
        }
    }
}

/// Bytes besides its entry a row of R held in a hash join's table takes (its join key and
/// the table's share), as the hash joins charge it; the hybrid hash join keeps what its
/// memory holds once its spilled partitions' buffers are charged.
const HASH_ROW_OVERHEAD: f64 = 56.0;

/// The most joins a workload given to the model may have (each is costed at its own size).
pub const MAX_JOINS: u64 = 1_000_000;

/// The model's prediction for every method that answers `on`, cheapest first under
/// `profile`: methods of the other join answer a different question, so they are not
/// ranked beside these.
pub fn advise_for(inputs: &CostInputs, profile: &StorageProfile, on: JoinOn) -> Vec<Prediction> {
    let mut all = advise(inputs, profile);
    all.retain(|p| p.joins_on == on);
    all
}

/// The model's prediction for every method, cheapest first under `profile` (both joins:
/// see [`advise_for`]).
pub fn advise(inputs: &CostInputs, profile: &StorageProfile) -> Vec<Prediction> {
    let f = inputs.joins.max(1.0);
    let (r_rows, s_rows) = inputs.rows;
    let s_share = inputs.s_share.clamp(0.0, 1.0);
    let mut out: Vec<Prediction> = Method::every()
        .into_iter()
        .map(|method| {
            // A join after each of F batches, at the sizes the tables have then.
            let mut join = Io::default();
            for k in 1..=(f as u64) {
                // Writes of a primary key after its first overwrite: 1/c of them stay.
                let grown = inputs.updates * k as f64 / f / inputs.dup_pk.max(1.0);
                let rows = (r_rows + grown * (1.0 - s_share), s_rows + grown * s_share);
                join = join.plus(join_io(inputs, method, rows));
            }
            let mut index = Io::default();
            for spec in method.indexes() {
                let (rows, share) = match spec.side {
                    Side::R => (r_rows, 1.0 - s_share),
                    Side::S => (s_rows, s_share),
                };
                let table = TableAt { inputs, rows };
                let build = table.index_build(spec).times(rows);
                let upkeep = table.index_update(spec).times(inputs.updates * share);
                index = index.plus(build).plus(upkeep);
            }
            Prediction {
                method: method.to_string(),
                joins_on: method.joins_on(),
                join_s: join.seconds(profile, inputs.block_size),
                index_s: index.seconds(profile, inputs.block_size),
                join_io: join,
                index_io: index,
            }
        })
        .collect();
    out.sort_by(|a, b| a.total_s().total_cmp(&b.total_s()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> CostInputs {
        CostInputs {
            rows: (10e6, 10e6),
            entry_size: 64.0,
            block_size: 4096.0,
            bloom_bits: 10.0,
            data_bloom_bits: 10.0,
            size_ratio: 5.0,
            data_level_base: 256.0 * 1048576.0,
            index_write_buffer: 8_382_464.0,
            join_memory: 16.0 * 1048576.0,
            match_rate: 0.8,
            dup_attr: 4.0,
            dup_pk: 1.0,
            joins: 1.0,
            updates: 0.0,
            s_share: 0.5,
        }
    }

    fn by_name<'p>(p: &'p [Prediction], name: &str) -> &'p Prediction {
        p.iter()
            .find(|x| x.method == name)
            .unwrap_or_else(|| panic!("{name} predicted"))
    }

    #[test]
    fn every_method_gets_a_finite_positive_prediction() {
        let profile = lidx::storage::profile::assumed_ssd();
        let p = advise(&inputs(), &profile);
        assert_eq!(p.len(), 31);
        assert!(
            p.iter()
                .all(|x| x.total_s().is_finite() && x.total_s() > 0.0)
        );
        assert!(p.windows(2).all(|w| w[0].total_s() <= w[1].total_s()));
    }

    #[test]
    fn a_hybrid_hash_join_saves_the_share_its_memory_holds() {
        let profile = lidx::storage::profile::assumed_ssd();
        let join_of = |join_memory: f64, name: &str| {
            let inputs = CostInputs {
                join_memory,
                ..inputs()
            };
            by_name(&advise(&inputs, &profile), name).join_io.sequential
        };
        // 10M rows of 64 bytes against 16 MiB: about 1.4% resident.
        let (grace, hybrid) = (
            join_of(16.0 * 1048576.0, "HJ-P"),
            join_of(16.0 * 1048576.0, "HHJ-P"),
        );
        assert!(
            hybrid < grace && hybrid > 0.95 * grace,
            "{hybrid} against {grace}"
        );
        // All of R in memory: one read of each side, a third of grace's I/O.
        let (grace, hybrid) = (join_of(1e12, "HJ-N"), join_of(1e12, "HHJ-N"));
        assert!(
            (hybrid * 3.0 - grace).abs() < 1e-6 * grace,
            "{hybrid} against {grace}"
        );
    }

    #[test]
    fn the_model_has_the_papers_shape() {
        let profile = lidx::storage::profile::assumed_ssd();
        let one = advise(&inputs(), &profile);
        // Sort-merge over two indexes reads each side once: cheapest join of all, but its
        // indexes cost to build.
        let ss = by_name(&one, "SJ-SS/S-Comp");
        assert!(ss.join_s < by_name(&one, "SJ-N").join_s);
        assert!(ss.join_s < by_name(&one, "HJ-N").join_s);
        assert!(ss.index_s > 0.0 && by_name(&one, "HJ-P").index_s == 0.0);
        // Validation pays at join time, synchronous at update time.
        let v = by_name(&one, "INLJ-NS/V-Eager");
        let s = by_name(&one, "INLJ-NS/S-Eager");
        assert!(v.join_s > s.join_s && v.index_s < s.index_s);
        // More joins over the same updates favour the indexed sort-merge (Fig. 5b).
        let many = advise(
            &CostInputs {
                joins: 32.0,
                updates: 10e6,
                ..inputs()
            },
            &profile,
        );
        let few = advise(
            &CostInputs {
                joins: 1.0,
                updates: 10e6,
                ..inputs()
            },
            &profile,
        );
        let against_hash =
            |p: &[Prediction]| by_name(p, "SJ-PS/S-Comp").total_s() / by_name(p, "HJ-P").total_s();
        assert!(against_hash(&many) < against_hash(&few));
        // INLJ's join cost grows with the matching rate (Fig. 5c), hash join's does not.
        let low = advise(
            &CostInputs {
                match_rate: 0.2,
                ..inputs()
            },
            &profile,
        );
        assert!(by_name(&low, "INLJ-P").join_s < by_name(&one, "INLJ-P").join_s);
        assert_eq!(by_name(&low, "HJ-P").join_s, by_name(&one, "HJ-P").join_s);
        // Larger entries grow scans, not INLJ's lookups of one block (Fig. 5a).
        let big = CostInputs {
            entry_size: 2048.0,
            ..inputs()
        };
        let big = advise(&big, &profile);
        let grow = |name: &str| by_name(&big, name).join_s / by_name(&one, name).join_s;
        assert!(
            grow("HJ-P") > 2.0 * grow("INLJ-P"),
            "{} {}",
            grow("HJ-P"),
            grow("INLJ-P")
        );
    }

    #[test]
    fn lazy_gets_gather_few_levels_and_overwrites_shrink_the_tables() {
        let i = inputs();
        // One posting sits on one level; many spread over at most every level, mostly the
        // last (size ratio 5: 80% of a tree is its last level).
        assert_eq!(i.levels_holding(1.0, 4.0), 1.0);
        let few = i.levels_holding(3.0, 4.0);
        assert!(few > 1.0 && few < 2.0, "{few}");
        assert!(i.levels_holding(1e6, 4.0) > 3.99 && i.levels_holding(1e6, 4.0) <= 4.0);
        // A Lazy hit reads more than an Eager one (fragments), far less than a read a level.
        let profile = lidx::storage::profile::assumed_ssd();
        let one = advise(&i, &profile);
        let (lazy, eager) = (
            by_name(&one, "INLJ-NS/S-Lazy").join_s,
            by_name(&one, "INLJ-NS/S-Eager").join_s,
        );
        assert!(lazy > eager && lazy < 2.0 * eager, "{lazy} {eager}");
        // Keys written ten times leave a tenth of the rows to join (Fig. 7).
        let growing = CostInputs {
            rows: (0.0, 0.0),
            updates: 20e6,
            ..i
        };
        let once = advise(&growing, &profile);
        let tenfold = advise(
            &CostInputs {
                dup_pk: 10.0,
                ..growing
            },
            &profile,
        );
        let hj = |p: &[Prediction]| by_name(p, "HJ-P").join_s;
        assert!((hj(&once) / hj(&tenfold) - 10.0).abs() < 0.5);
    }
}
