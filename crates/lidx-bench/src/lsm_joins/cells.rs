//! Paper 5's cells (section 4, Table 5): the data sets standing in for the paper's, the
//! trees' settings scaled with the data, and every figure's grid of cells with the methods
//! compared in each.

use lidx_lsm::joins::config::MIN_JOIN_MEMORY;
use lidx_lsm::joins::{Algorithm, AttrFiles, Batch, LsmConfig, Method, Shape, Workload};

use super::{Figure, Options};

/// A synthetic data set with the features of one of the paper's (Table 5).
#[derive(Clone, Copy, Debug)]
pub(super) struct Dataset {
    pub(super) name: &'static str,
    /// The paper's data set this one stands in for, where it does: the name key files
    /// given for it take.
    pub(super) real: Option<&'static str>,
    pub(super) match_rate: f64,
    pub(super) dup_attr: u32,
    pub(super) skew: f64,
}

/// Every data set of the study.
pub(super) const DATA_SETS: [Dataset; 6] = [UNIF, ZIPF, FACE, WIKI, USER, MOVIE];

pub(super) const UNIF: Dataset = Dataset {
    name: "unif",
    real: None,
    match_rate: 0.8,
    dup_attr: 4,
    skew: 0.0,
};
pub(super) const ZIPF: Dataset = Dataset {
    name: "zipf",
    real: None,
    match_rate: 1.0,
    dup_attr: 3,
    skew: 0.5,
};
pub(super) const FACE: Dataset = Dataset {
    name: "face-like",
    real: Some("face"),
    match_rate: 1.0,
    dup_attr: 1,
    skew: 0.0,
};
pub(super) const WIKI: Dataset = Dataset {
    name: "wiki-like",
    real: Some("wiki"),
    match_rate: 1.0,
    dup_attr: 1,
    skew: 0.2,
};
pub(super) const USER: Dataset = Dataset {
    name: "user-like",
    real: Some("user"),
    match_rate: 0.4,
    dup_attr: 4,
    skew: 0.9,
};
pub(super) const MOVIE: Dataset = Dataset {
    name: "movie-like",
    real: Some("movie"),
    match_rate: 0.85,
    dup_attr: 5,
    skew: 0.9,
};

impl Options {
    /// The settings for tables of `rows` rows of `entry_size` bytes: the paper's code's
    /// scaled by rows / 10M ([`LsmConfig::scaled_to`]), but for what is given.
    pub(super) fn config_for(&self, rows: u64, entry_size: usize) -> LsmConfig {
        let mut config = LsmConfig::scaled_to(rows, entry_size);
        if let Some(bytes) = self.write_buffer {
            config.write_buffer = bytes;
            config.data_level_base = config.data_level_base.max(4 * bytes as u64);
        }
        if let Some(bytes) = self.index_write_buffer {
            config.index_write_buffer = bytes;
        }
        if let Some(bytes) = self.join_memory {
            config.join_memory = bytes;
        }
        config
    }
}

impl Dataset {
    /// `rows` rows of S and of R, 64 bytes each, with the set's features.
    pub(super) fn workload(self, rows: u64, seed: u64) -> Workload {
        Workload {
            rows: rows.max(1),
            ratio: 1.0,
            entry_size: 64,
            match_rate: self.match_rate,
            dup_pk: 1,
            dup_attr: self.dup_attr,
            skew: self.skew,
            seed,
        }
    }
}

/// One setting of a figure: a workload, the trees' settings, the join frequency, and the
/// methods compared there.
#[derive(Clone, Debug)]
pub(super) struct Cell {
    pub(super) figure: Figure,
    pub(super) dataset: &'static str,
    /// The swept parameter's name and value.
    pub(super) param: &'static str,
    pub(super) x: f64,
    /// Fig. 7's second coordinate (c); 0 elsewhere.
    pub(super) x2: f64,
    /// Rows of S over the whole workload (`rows`) and the rest of its parameters.
    pub(super) workload: Workload,
    /// The key files the attributes come from, where they are not drawn.
    pub(super) attributes: Option<AttrFiles>,
    pub(super) config: LsmConfig,
    /// F: the workload arrives in this many batches, a join after each.
    pub(super) joins: u64,
    /// Threads each join runs on.
    pub(super) threads: usize,
    pub(super) methods: Vec<Method>,
}

impl Cell {
    /// The cell's data set: the workload's first batch, its attributes drawn or read from
    /// the key files.
    pub(super) fn batch(&self) -> anyhow::Result<Batch> {
        let w = self.workload;
        Ok(match &self.attributes {
            None => w.batch(0),
            Some(files) => {
                let given = files.clone().take(w.rows as usize, w.r_rows() as usize)?;
                w.batch_with(0, Some(&given))
            }
        })
    }

    /// Rows of S and of R in one of the F batches.
    pub(super) fn rows_per_batch(&self) -> (u64, u64) {
        let f = self.joins.max(1);
        (
            self.workload.rows.div_ceil(f),
            self.workload.r_rows().div_ceil(f),
        )
    }
}

/// The methods named (names of [`Method`]'s `Display`), in that order.
pub(super) fn methods(names: &[&str]) -> Vec<Method> {
    names
        .iter()
        .filter_map(|n| Method::every().into_iter().find(|m| m.to_string() == *n))
        .collect()
}

/// INLJ through each of the six index designs on S (Figs. 6–9).
pub(super) fn inlj_designs() -> Vec<Method> {
    Method::all()
        .into_iter()
        .filter(|m| m.algorithm == Algorithm::Inlj && m.shape == Shape::Ns)
        .collect()
}

/// The study's cells, figure by figure.
pub(super) fn cells(o: &Options) -> Vec<Cell> {
    let cell = |figure, d: Dataset, rows: u64, param, x: f64, methods: &[Method]| {
        let files = d
            .real
            .and_then(|real| o.data.iter().find(|(name, _)| name == real));
        let mut workload = d.workload(rows, o.seed);
        if let Some((_, files)) = files {
            // The file's own features, for the CSV and the cost model (skew not measured).
            let given = files
                .clone()
                .take(workload.rows as usize, workload.r_rows() as usize);
            let (dup, matching) = given.map_or((1.0, 1.0), |g| g.features());
            workload.dup_attr = dup.round().max(1.0) as u32;
            workload.match_rate = matching;
            workload.skew = 0.0;
        }
        Cell {
            figure,
            dataset: match files {
                Some(_) => d.real.unwrap_or(d.name),
                None => d.name,
            },
            param,
            x,
            x2: 0.0,
            workload,
            attributes: files.map(|f| f.1.clone()),
            config: o.config_for(rows, 64),
            joins: 1,
            threads: 1,
            methods: methods.to_vec(),
        }
    };
    let algorithms = methods(&["INLJ-P", "SJ-P", "HJ-P", "SJ-PS/S-Comp"]);
    let designs = inlj_designs();
    let n = o.rows;
    let mut out = Vec::new();
    for &figure in &o.figures {
        match figure {
            Figure::F5a => {
                // The paper's code's B = 128, 32, 8, 4, 2 entries a 4 KiB block.
                for d in [USER, FACE] {
                    for e in [32usize, 128, 512, 1024, 2048] {
                        let mut c = cell(figure, d, n / 4, "entry_size", e as f64, &algorithms);
                        c.workload.entry_size = e;
                        c.config = o.config_for(c.workload.rows, e);
                        out.push(c);
                    }
                }
            }
            Figure::F5b => {
                for d in [USER, FACE] {
                    for f in [1u64, 2, 4, 8, 16, 32] {
                        let mut c = cell(figure, d, n, "joins", f as f64, &algorithms);
                        c.joins = f;
                        out.push(c);
                    }
                }
            }
            Figure::F5c => {
                let ns = methods(&[
                    "INLJ-NS/S-Comp",
                    "SJ-NS/S-Comp",
                    "SJ-SS/S-Comp",
                    "SJ-N",
                    "HJ-N",
                ]);
                for eps in [0.2, 0.4, 0.6, 0.8, 1.0] {
                    let mut c = cell(figure, UNIF, n, "match_rate", eps, &ns);
                    c.workload.match_rate = eps;
                    out.push(c);
                }
            }
            Figure::F6 => {
                for d in [MOVIE, FACE] {
                    for e in [32usize, 128, 512, 1024, 2048, 4096] {
                        let mut c = cell(figure, d, n / 8, "entry_size", e as f64, &designs);
                        c.workload.entry_size = e;
                        c.config = o.config_for(c.workload.rows, e);
                        out.push(c);
                    }
                }
            }
            Figure::F7 => {
                for dup_pk in [2u32, 4, 6, 8, 10] {
                    for dup_attr in [2u32, 4, 6, 8, 10] {
                        let mut c =
                            cell(figure, UNIF, n / 4, "dup_attr", dup_attr.into(), &designs);
                        c.x2 = dup_pk.into();
                        c.workload.dup_pk = dup_pk;
                        c.workload.dup_attr = dup_attr;
                        out.push(c);
                    }
                }
            }
            Figure::F8 => {
                for theta in [0.1, 0.3, 0.5, 0.7] {
                    let mut c = cell(figure, ZIPF, n / 2, "skew", theta, &designs);
                    c.workload.skew = theta;
                    out.push(c);
                }
            }
            Figure::F9 => {
                for d in [USER, WIKI] {
                    for f in [1u64, 2, 4, 8, 16, 32] {
                        let mut c = cell(figure, d, n / 8, "joins", f as f64, &designs);
                        c.joins = f;
                        out.push(c);
                    }
                }
            }
            Figure::F10 => {
                // The paper's code's five (`test_4.8.sh`).
                let mix = methods(&[
                    "INLJ-P",
                    "INLJ-NS/S-Comp",
                    "SJ-SS/S-Lazy",
                    "SJ-SS/V-Eager",
                    "HJ-N",
                ]);
                for d in [UNIF, ZIPF] {
                    let mut c = cell(figure, d, n, "joins", 10.0, &mix);
                    c.joins = 10;
                    out.push(c);
                }
            }
            Figure::F11 => {
                // The paper's code's five (its CEager run of the M sweep failed) and HJ-P.
                let tuned = methods(&[
                    "INLJ-NS/S-Comp",
                    "INLJ-NS/S-Eager",
                    "INLJ-NS/V-Lazy",
                    "SJ-SS/V-Comp",
                    "SJ-NS/S-Lazy",
                    "HJ-P",
                ]);
                let rows = n / 2;
                for t in [2.0, 5.0, 10.0, 20.0, 50.0, 100.0] {
                    let mut c = cell(figure, UNIF, rows, "size_ratio", t, &tuned);
                    c.config.size_ratio = t;
                    out.push(c);
                }
                // The paper's M, 8 to 256 MiB (16 MiB by default), sets the index trees'
                // write buffers ((M − 3 pages) / 2) and the join memory.
                let paper = o.config_for(rows, 64);
                let mut cells_m: Vec<Cell> = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
                    .iter()
                    .map(|k| {
                        let buffer = ((paper.index_write_buffer as f64 * k) as usize).max(64 << 10);
                        let mut c = cell(
                            figure,
                            UNIF,
                            rows,
                            "index_write_buffer",
                            buffer as f64,
                            &tuned,
                        );
                        c.config.index_write_buffer = buffer;
                        c.config.join_memory =
                            ((paper.join_memory as f64 * k) as u64).max(MIN_JOIN_MEMORY);
                        c
                    })
                    .collect();
                // At small sizes the floor makes the smallest ones one.
                cells_m.dedup_by(|a, b| a.x == b.x);
                out.extend(cells_m);
            }
            Figure::F12 => {
                // The methods of the paper's code's block cache and Bloom filter runs, and
                // HJ-P, which reads no index.
                let probed = methods(&[
                    "INLJ-NS/S-Eager",
                    "INLJ-NS/S-Lazy",
                    "INLJ-NS/S-Comp",
                    "INLJ-NS/V-Lazy",
                    "SJ-SS/S-Comp",
                    "SJ-SS/V-Eager",
                    "HJ-P",
                ]);
                let rows = n / 2;
                // The paper's 0-256 MB against 0.64 GB of data: up to 40% of a table.
                let table_bytes = rows * 64;
                for share in [0.0, 0.1, 0.2, 0.4] {
                    let bytes = (table_bytes as f64 * share) as u64;
                    let mut c = cell(figure, UNIF, rows, "block_cache", bytes as f64, &probed);
                    c.config.block_cache = bytes;
                    out.push(c);
                }
                // The index trees' filters (the data trees' stay at 10 bits).
                for bits in [2.0, 5.0, 10.0, 20.0] {
                    let mut c = cell(figure, UNIF, rows, "bloom_bits", bits, &probed);
                    c.config.bloom_bits = bits;
                    out.push(c);
                }
            }
            Figure::F13b => {
                // The paper ran both hash joins on its six data sets at 16 MB; and on unif
                // more memory, up to where R fits in it.
                let hashes = methods(&["HHJ-P", "HJ-P"]);
                for d in DATA_SETS {
                    let mut c = cell(figure, d, n, "join_memory", 0.0, &hashes);
                    c.x = c.config.join_memory as f64;
                    out.push(c);
                }
                let paper = o.config_for(n, 64).join_memory;
                for k in [4u64, 16, 64] {
                    let mut c = cell(figure, UNIF, n, "join_memory", (paper * k) as f64, &hashes);
                    c.config.join_memory = paper * k;
                    out.push(c);
                }
            }
            Figure::F13c => {
                // The paper's 1 to 16 threads; more threads than cores show the cost of
                // sharing them.
                // 128-byte entries, as the paper's code runs it (B = 32).
                for threads in [1usize, 2, 4, 8, 16] {
                    let mut c = cell(figure, FACE, n, "threads", threads as f64, &algorithms);
                    c.threads = threads;
                    c.workload.entry_size = 128;
                    c.config = o.config_for(n, 128);
                    out.push(c);
                }
            }
        }
    }
    out
}

/// The rows a table the refinements' runs had (the study's default then).
const REFINED_AT_ROWS: u64 = 100_000;

/// Whether `cell` is one of those the cost model's two refinements (Lazy hits charged the
/// levels holding a fragment, and 1/c of the rows left by repeated keys; `lidx lsm
/// advise`'s guide) were made while watching: the grid of the study before paper 5's
/// full ranges, at 100K rows and otherwise the default options. (The trees' settings have changed since, so
/// even these cells are measured anew.)
pub(super) fn refined_on(o: &Options, cell: &Cell) -> bool {
    let defaults = Options::default();
    if o.rows != REFINED_AT_ROWS
        || o.seed != defaults.seed
        || !o.data.is_empty()
        || o.write_buffer.is_some()
        || o.index_write_buffer.is_some()
        || o.join_memory.is_some()
    {
        return false;
    }
    let x = cell.x;
    let among = |xs: &[f64]| xs.contains(&x);
    match cell.figure {
        Figure::F5a => among(&[32.0, 256.0, 1024.0, 4096.0]),
        Figure::F5b => among(&[1.0, 4.0, 16.0, 32.0]),
        Figure::F5c => among(&[0.2, 0.6, 1.0]),
        Figure::F6 => among(&[32.0, 128.0, 512.0]),
        Figure::F7 => among(&[2.0, 5.0, 10.0]) && [2.0, 5.0, 10.0].contains(&cell.x2),
        Figure::F8 | Figure::F10 => true,
        Figure::F9 => among(&[1.0, 4.0, 16.0]),
        // Their methods (Figs. 11 and 12) or their entries (13c) have changed; 13b is new.
        Figure::F11 | Figure::F12 | Figure::F13b | Figure::F13c => false,
    }
}
