//! Every one of the 29 methods (and the hybrid hash joins) against a join computed in memory from the live rows, after
//! loads and updates that change attributes, delete rows and write them again; and every
//! index against its table.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

/// The join the methods must emit, from the tables' live rows: for the `P` family R's
/// attribute against S's primary key, for the others against S's attribute.
fn reference(db: &LsmDb, by_s_key: bool) -> Vec<(u64, u64, u64)> {
    let r = db.rows(Side::R).expect("R's rows");
    let s = db.rows(Side::S).expect("S's rows");
    let mut s_by: HashMap<u64, Vec<u64>> = HashMap::new();
    for &(pk, attr) in &s {
        s_by.entry(if by_s_key { pk } else { attr })
            .or_default()
            .push(pk);
    }
    let mut out = Vec::new();
    for &(pk_r, attr) in &r {
        for &pk_s in s_by.get(&attr).into_iter().flatten() {
            out.push((attr, pk_r, pk_s));
        }
    }
    out.sort_unstable();
    out
}

/// Small trees (64 KiB write buffers and files, the data trees' first level five times
/// that), so a few hundred rows already span levels.
fn small_trees() -> LsmConfig {
    LsmConfig {
        write_buffer: 64 << 10,
        index_write_buffer: 64 << 10,
        data_level_base: 5 * (64 << 10),
        target_file_size: 64 << 10,
        ..LsmConfig::default()
    }
}

/// A batch that changes the attributes of some live rows, deletes others, writes some of
/// those back, and deletes keys that were never there.
fn churn(db: &LsmDb, seed: u64) -> Batch {
    let mut batch = Batch::default();
    for side in [Side::R, Side::S] {
        let rows = db.rows(side).expect("rows");
        let changes = match side {
            Side::R => &mut batch.r,
            Side::S => &mut batch.s,
        };
        // Attributes to move rows to: ones the other rows hold, so matches change too.
        let pool: Vec<u64> = rows.iter().map(|r| r.1).collect();
        for (i, &(pk, attr)) in rows.iter().enumerate() {
            let pick = (seed.wrapping_mul(31).wrapping_add(i as u64 * 7919)) % 10;
            match pick {
                0 | 1 => changes.push(Change::Put {
                    pk,
                    attr: pool[(i * 13 + seed as usize) % pool.len()],
                }),
                2 => changes.push(Change::Delete { pk }),
                3 => {
                    changes.push(Change::Delete { pk });
                    changes.push(Change::Put { pk, attr });
                }
                4 => changes.push(Change::Put { pk, attr }),
                _ => {}
            }
        }
        changes.push(Change::Delete { pk: 9_999_999_999 });
    }
    batch
}

fn check_every_method(db: &mut LsmDb) -> Result<(), TestCaseError> {
    check_every_method_on(db, 1)
}

/// Every method, on `threads` threads, against the join in memory.
fn check_every_method_on(db: &mut LsmDb, threads: usize) -> Result<(), TestCaseError> {
    let wants = [reference(db, true), reference(db, false)];
    for method in Method::every() {
        let mut got: Vec<(u64, u64, u64)> = Vec::new();
        let report = join_with_threads(db, method, threads, &mut got)
            .map_err(|e| TestCaseError::fail(format!("{method} on {threads}: {e}")))?;
        got.sort_unstable();
        let want = &wants[usize::from(!method.joins_s_key())];
        prop_assert_eq!(report.output, got.len() as u64);
        // A validation index has every posting it hands out checked against its table, so
        // each distinct row of that side in the output was read once at least.
        let validated: Vec<Side> = method
            .indexes()
            .iter()
            .filter(|spec| spec.maintenance == Maintenance::Validation)
            .map(|spec| spec.side)
            .collect();
        let mut checked_rows = 0;
        for side in &validated {
            let mut pks: Vec<u64> = got
                .iter()
                .map(|t| if *side == Side::R { t.1 } else { t.2 })
                .collect();
            pks.sort_unstable();
            pks.dedup();
            checked_rows += pks.len() as u64;
        }
        if validated.is_empty() {
            prop_assert_eq!(report.validations, 0, "{}", method);
        } else {
            prop_assert!(
                report.validations >= checked_rows,
                "{}: {} validations for {} distinct rows out",
                method,
                report.validations,
                checked_rows
            );
        }
        prop_assert!(
            &got == want,
            "{}: {} triples, want {}",
            method,
            got.len(),
            want.len()
        );
    }
    db.check_indexes()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10))]

    #[test]
    fn every_method_agrees_with_a_join_in_memory_through_updates(
        // At least as many rows per batch as the largest duplication below: a workload
        // with fewer is refused (`Workload::check`), not joined.
        rows in 4u64..400,
        ratio in prop_oneof![Just(0.5), Just(1.0), Just(3.0)],
        entry_size in prop_oneof![Just(20usize), Just(64), Just(300)],
        match_rate in prop_oneof![Just(0.0), Just(0.5), Just(1.0)],
        dup_pk in 1u32..3,
        dup_attr in 1u32..5,
        skew in prop_oneof![Just(0.0), Just(0.9)],
        seed in any::<u64>(),
        threads in prop_oneof![Just(1usize), Just(2), Just(3), Just(7)],
    ) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let workload = Workload { rows, ratio, entry_size, match_rate, dup_pk, dup_attr, skew, seed };
        let (mut db, _) = LsmDb::create(&dir.path().join("db"), small_trees(), workload)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Half the indexes exist before the updates and are kept through them; the other
        // half are built from the tables afterwards.
        for method in Method::all().into_iter().step_by(2) {
            for spec in method.indexes() {
                db.build_index(spec).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
        }
        // The load on disk, the updates partly in memtables above it.
        db.settle().map_err(|e| TestCaseError::fail(e.to_string()))?;
        db.apply_next_batch().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let batch = churn(&db, seed);
        db.apply(&batch).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mix = UpdateMix { changes: 0.3, deletes: 0.1 };
        db.update(rows / 2 + 1, mix, seed ^ 1).map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_every_method(&mut db)?;
        // The database reopens with its indexes and answers the same.
        let path = db.dir().to_path_buf();
        drop(db);
        let mut db = LsmDb::open(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(db.batches(), 3);
        // And on several threads, each taking a range of the keys.
        check_every_method_on(&mut db, threads)?;
    }
}

#[test]
fn a_missing_foreign_or_busy_database_is_one_clear_error() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let err = LsmDb::open(&dir.path().join("nothing"))
        .err()
        .map(|e| e.to_string());
    assert!(
        err.as_deref()
            .is_some_and(|e| e.contains("no lidx LSM database")),
        "{err:?}"
    );
    std::fs::write(dir.path().join("lidx-lsm.json"), "{\"format\": \"other\"}").expect("write");
    let err = LsmDb::open(dir.path()).err().map(|e| e.to_string());
    assert!(
        err.as_deref().is_some_and(|e| e.contains("lidx-lsm.json")),
        "{err:?}"
    );
    let path = dir.path().join("db");
    let workload = Workload {
        rows: 100,
        ..Workload::default()
    };
    let (db, _) = LsmDb::create(&path, small_trees(), workload).expect("create");
    let err = LsmDb::open(&path).err().map(|e| e.to_string());
    assert!(
        err.as_deref()
            .is_some_and(|e| e.contains("another process has it open")),
        "{err:?}"
    );
    drop(db);
    assert!(LsmDb::open(&path).is_ok());
    let again = LsmDb::create(&path, small_trees(), workload)
        .err()
        .map(|e| e.to_string());
    assert!(
        again.as_deref().is_some_and(|e| e.contains("not empty")),
        "{again:?}"
    );
}

#[test]
fn joins_report_rocksdb_tickers_and_trees_grow_levels() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let workload = Workload {
        rows: 6_000,
        match_rate: 0.5,
        ..Workload::default()
    };
    let (mut db, _) =
        LsmDb::create(&dir.path().join("db"), small_trees(), workload).expect("create");
    db.settle().expect("settle");
    let levels = db.levels().expect("levels");
    assert!(levels.iter().any(|(_, l)| *l >= 2), "{levels:?}");
    let inlj: Method = "INLJ-P".parse().expect("a method");
    let report = join(&mut db, inlj, &mut lidx::join::CountSink::default()).expect("join");
    assert_eq!(report.lookups, 6_000);
    // Half of R's attributes are absent from S: the filters answer most of those.
    assert!(report.stats.bloom_useful > 1_000, "{:?}", report.stats);
    assert!(
        report.stats.bloom_false_positive_rate() < 0.1,
        "{:?}",
        report.stats
    );
    assert!(
        report.stats.get_bytes > 0 && report.stats.iter_bytes > 0,
        "{:?}",
        report.stats
    );
}

#[test]
fn workloads_have_their_sizes_duplication_and_matching_rate() {
    let w = Workload {
        rows: 20_000,
        ratio: 2.0,
        dup_attr: 4,
        match_rate: 0.25,
        ..Workload::default()
    };
    let b = w.batch(0);
    assert_eq!((b.s.len(), b.r.len()), (20_000, 10_000));
    let s_attrs: std::collections::HashSet<u64> =
        b.s.iter()
            .filter_map(|c| match c {
                Change::Put { attr, .. } => Some(*attr),
                Change::Delete { .. } => None,
            })
            .collect();
    let matching =
        b.r.iter()
            .filter(|c| matches!(c, Change::Put { attr, .. } if s_attrs.contains(attr)))
            .count() as f64
            / b.r.len() as f64;
    assert!((matching - 0.25).abs() < 0.05, "matching rate {matching}");
    // Attributes of S are about rows / d distinct values.
    let distinct = s_attrs.len() as f64;
    assert!(
        (4_000.0..=5_100.0).contains(&distinct),
        "{distinct} distinct attributes"
    );
    assert_eq!(w.batch(0), b, "batches repeat by seed");
    assert_ne!(w.batch(1), b);
}

#[test]
fn indexes_in_place_before_the_load_are_kept_through_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // Each key written three times in the load: synchronous indexes must drop the first two.
    let workload = Workload {
        rows: 900,
        dup_pk: 3,
        dup_attr: 2,
        match_rate: 0.7,
        skew: 0.8,
        ..Workload::default()
    };
    let specs: Vec<IndexSpec> = Method::all().iter().flat_map(|m| m.indexes()).collect();
    let mut db = LsmDb::create_empty(&dir.path().join("db"), small_trees(), workload, &specs)
        .expect("create");
    assert_eq!(db.index_specs().len(), 12, "{:?}", db.index_specs());
    assert!(db.rows(Side::S).expect("rows").is_empty());
    let times = db.apply_next_batch().expect("batch 0");
    // The time is reported, not judged; the rows reached every index.
    assert!(
        times.index_s.is_finite() && times.index_s >= 0.0,
        "{times:?}"
    );
    db.check_indexes()
        .expect("every index keeps its table's rows");
    // A batch cut in parts, as the join-frequency experiments apply one.
    for part in workload.batch(1).split(3) {
        db.apply(&part).expect("a part of batch 1");
    }
    check_every_method(&mut db).expect("every method");
    // Nothing was left to build: the join adds no index.
    join(
        &mut db,
        "SJ-SS/S-Eager".parse().expect("a method"),
        &mut lidx::join::CountSink::default(),
    )
    .expect("join");
    assert_eq!(db.index_specs().len(), 12, "{:?}", db.index_specs());
}

#[test]
fn sort_and_hash_joins_spill_whole_entries_and_agree() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // 3,000 rows of 1 KiB a side: about 3 MiB, three times the join memory, so the sorts
    // write runs and the hash join several partitions.
    let workload = Workload {
        rows: 3_000,
        entry_size: 1024,
        dup_attr: 2,
        match_rate: 0.6,
        ..Workload::default()
    };
    let config = LsmConfig {
        join_memory: config::MIN_JOIN_MEMORY,
        ..small_trees()
    };
    let (mut db, _) = LsmDb::create(&dir.path().join("db"), config, workload).expect("create");
    db.settle().expect("settle");
    let wants = [reference(&db, true), reference(&db, false)];
    let rows = 2 * 3_000u64;
    for (name, threads) in ["SJ-P", "SJ-N", "HJ-P", "HJ-N"]
        .into_iter()
        .flat_map(|m| [(m, 1), (m, 3), (m, 64)])
    {
        let method: Method = name.parse().expect("a method");
        let mut got: Vec<(u64, u64, u64)> = Vec::new();
        let report = join_with_threads(&mut db, method, threads, &mut got).expect("join");
        assert_eq!(report.threads, threads);
        got.sort_unstable();
        assert_eq!(got, wants[usize::from(!method.joins_s_key())], "{name}");
        // On 64 threads a sort's range (about 47 rows) fits its share in memory, and the
        // hash join partitions on as many threads as keep its files within bounds.
        if threads == 64 && name.starts_with("SJ") {
            continue;
        }
        // Whole entries went to scratch: at least once each for what the method spills
        // (SJ-P sorts R alone; the others spill both sides).
        let spilled = if name == "SJ-P" { rows / 2 } else { rows };
        assert!(
            report.scratch_bytes >= spilled * 1024,
            "{name}: {} bytes in {} files",
            report.scratch_bytes,
            report.scratch_files
        );
        assert!(report.scratch_files >= 3, "{name}: {report:?}");
        if name.starts_with("HJ") {
            assert!(
                report.scratch_files <= run::MAX_PARTITION_FILES as u64,
                "{name} on {threads}: {report:?}"
            );
        }
    }
    // The join memory is kept with the database.
    drop(db);
    let db = LsmDb::open(&dir.path().join("db")).expect("open");
    assert_eq!(db.config().join_memory, config::MIN_JOIN_MEMORY);
}

#[test]
fn the_hybrid_hash_join_writes_only_what_its_memory_cannot_hold() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let memory = config::MIN_JOIN_MEMORY;
    // R about 3x the join memory (3,000 rows of 1 KiB), then about 11x (20,000 of 512 B,
    // as the study's default cells are): some of R stays in memory either way.
    for (rows, entry_size) in [(3_000u64, 1024usize), (20_000, 512)] {
        let workload = Workload {
            rows,
            entry_size,
            dup_attr: 2,
            match_rate: 0.6,
            ..Workload::default()
        };
        let config = LsmConfig {
            join_memory: memory,
            write_buffer: 1 << 20,
            index_write_buffer: 1 << 20,
            data_level_base: 4 << 20,
            target_file_size: 1 << 20,
            ..LsmConfig::default()
        };
        let path = dir.path().join(format!("db{rows}"));
        let (mut db, _) = LsmDb::create(&path, config, workload).expect("create");
        db.settle().expect("settle");
        let width = 8 + entry_size as u64;
        let held = rows * (width + 48);
        let layout = run::HybridLayout::of(held, memory);
        assert!(layout.spilled >= 1 && layout.resident > 0, "{layout:?}");
        for (hybrid, grace) in [("HHJ-P", "HJ-P"), ("HHJ-N", "HJ-N")] {
            let mut reports = Vec::new();
            let mut outputs = Vec::new();
            for name in [hybrid, grace] {
                let method: Method = name.parse().expect("a method");
                let mut got: Vec<(u64, u64, u64)> = Vec::new();
                reports.push(join(&mut db, method, &mut got).expect("join"));
                got.sort_unstable();
                outputs.push(got);
            }
            assert_eq!(outputs[0], outputs[1], "{hybrid} against {grace}");
            assert_eq!(outputs[0], reference(&db, hybrid == "HHJ-P"), "{hybrid}");
            let (h, g) = (&reports[0], &reports[1]);
            // Grace writes every row of both sides once; the hybrid keeps its resident
            // share of R, and S's rows that meet it, out of its files.
            assert_eq!(g.scratch_bytes, 2 * rows * width, "{g:?}");
            assert!(h.scratch_bytes > 0, "{h:?}");
            let kept = layout.resident_share(held);
            assert!(
                (h.scratch_bytes as f64) < (1.0 - kept / 2.0) * g.scratch_bytes as f64,
                "{hybrid}: {h:?} against {g:?}, {kept:.3} of R resident"
            );
            // At most the resident share of R stays: the rest of R was written.
            let r_written = (rows as f64 * (1.0 - kept)).floor() as u64 * width;
            assert!(h.scratch_bytes >= r_written, "{h:?}: {layout:?}");
            assert_eq!(h.threads, 1);
        }
    }

    // A database filled batch by batch after its creation (as the study fills them) is
    // partitioned for the rows it holds, too: grace's partitions each fit the memory.
    let workload = Workload {
        rows: 3_000,
        entry_size: 1024,
        ..Workload::default()
    };
    let config = LsmConfig {
        join_memory: memory,
        ..small_trees()
    };
    let mut db =
        LsmDb::create_empty(&dir.path().join("applied"), config, workload, &[]).expect("create");
    db.apply(&workload.batch(0)).expect("apply");
    db.settle().expect("settle");
    let method: Method = "HJ-N".parse().expect("a method");
    let report = join(&mut db, method, &mut lidx::join::CountSink::default()).expect("join");
    // 3,000 rows of 1 KiB (and 56 bytes each held) against 1 MiB: at least 4 partitions a
    // side.
    assert!(report.scratch_files >= 8, "{report:?}");
    let method: Method = "HHJ-N".parse().expect("a method");
    let report = join(&mut db, method, &mut lidx::join::CountSink::default()).expect("join");
    assert!(report.scratch_files >= 2, "{report:?}");
    assert!(report.scratch_bytes < 2 * 3_000 * (8 + 1024), "{report:?}");

    // Tables that fit the memory are joined without a file.
    let small = Workload {
        rows: 300,
        entry_size: 1024,
        ..Workload::default()
    };
    let config = LsmConfig {
        join_memory: memory,
        ..small_trees()
    };
    let (mut db, _) = LsmDb::create(&dir.path().join("small"), config, small).expect("create");
    let method: Method = "HHJ-N".parse().expect("a method");
    let mut got: Vec<(u64, u64, u64)> = Vec::new();
    let report = join(&mut db, method, &mut got).expect("join");
    got.sort_unstable();
    assert_eq!(got, reference(&db, false));
    assert_eq!((report.scratch_files, report.scratch_bytes), (0, 0));
}

#[test]
fn a_hybrid_layout_spills_the_fewest_partitions_that_fit_the_memory() {
    let mib = 1u64 << 20;
    assert_eq!(
        run::HybridLayout::of(mib / 2, mib),
        run::HybridLayout {
            spilled: 0,
            resident: mib / 2,
            room: mib
        }
    );
    for held in [mib + 1, 3 * mib, 12 * mib, 1000 * mib] {
        let l = run::HybridLayout::of(held, mib);
        let buffers = 2 * l.spilled * (16 << 10);
        // Past a thousand partitions their buffers take all the memory: grace's join.
        assert_eq!(l.room, mib.saturating_sub(buffers), "{held}: {l:?}");
        assert_eq!(l.resident, (l.room as f64 / 1.2) as u64, "{held}: {l:?}");
        // Enough partitions for the rest to fit, and one fewer would not do.
        assert!(l.spilled * mib + l.room >= held, "{held}: {l:?}");
        let fewer = l.spilled - 1;
        assert!(
            fewer * mib + (mib - 2 * fewer * (16 << 10)) < held,
            "{held}: {l:?}"
        );
    }
}

#[test]
fn attributes_from_key_files_join_alike_in_every_method() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // An SOSD-like file: keys repeated, all but the first few beyond 10 digits.
    let keys: Vec<u64> = (0..700u64)
        .map(|i| match i % 50 {
            0 => u64::MAX - i,
            _ => (i / 3) * 0x0123_4567_89ab,
        })
        .collect();
    let path = dir.path().join("face.keys");
    lidx::data::sosd::write_keys(&path, &keys).expect("write the keys");
    let workload = Workload {
        rows: 300,
        ..Workload::default()
    };
    let (mut db, _) = LsmDb::create_with_keys(
        &dir.path().join("db"),
        small_trees(),
        workload,
        AttrFiles::new(&path, None),
    )
    .expect("create");
    // One file for both sides: every R attribute is one S holds.
    let (r, s) = (db.rows(Side::R).expect("R"), db.rows(Side::S).expect("S"));
    let held: std::collections::HashSet<u64> = s.iter().map(|row| row.1).collect();
    assert!(r.iter().all(|row| held.contains(&row.1)));
    let from_file: std::collections::HashSet<u64> =
        keys[..300].iter().map(|k| k % rows::KEY_LIMIT).collect();
    assert_eq!(held, from_file, "S's attributes are the file's first chunk");
    let inputs = cost::CostInputs::of(&db, 1, 0).expect("inputs");
    assert!((inputs.match_rate - 1.0).abs() < 1e-9, "{inputs:?}");
    assert!(inputs.dup_attr > 2.0, "the file repeats keys: {inputs:?}");
    check_every_method(&mut db).expect("every method");
    // Later batches read on, past the end of the file and around.
    db.apply_next_batch().expect("batch 1");
    db.apply_next_batch().expect("batch 2");
    assert_eq!(db.key_files().map(|f| f.read), Some((900, 900)));
    let mix = UpdateMix {
        changes: 0.3,
        deletes: 0.1,
    };
    db.update(200, mix, 7).expect("updates");
    check_every_method(&mut db).expect("every method after updates");
    let path = db.dir().to_path_buf();
    drop(db);
    let db = LsmDb::open(&path).expect("reopen");
    assert!(db.key_files().is_some_and(|f| f.read.0 > 900));
    // Key files are chosen before the load.
    let mut db = db;
    let err = db
        .use_key_files(AttrFiles::new(&dir.path().join("face.keys"), None))
        .err()
        .map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.contains("before the load")));
}

/// A database of `rows` rows a batch with an index of every design and consistency on S
/// and two on R, and the live rows of both tables.
fn indexed_db(path: &std::path::Path, rows: u64) -> LsmDb {
    let workload = Workload {
        rows,
        match_rate: 0.5,
        dup_attr: 2,
        ..Workload::default()
    };
    let (mut db, _) = LsmDb::create(path, small_trees(), workload).expect("create");
    for maintenance in [Maintenance::Sync, Maintenance::Validation] {
        for design in [Design::Eager, Design::Lazy, Design::Comp] {
            db.build_index(IndexSpec::of_method(Side::S, design, maintenance))
                .expect("an index on S");
        }
        db.build_index(IndexSpec::of_method(Side::R, Design::Lazy, maintenance))
            .expect("an index on R");
    }
    db
}

fn live_rows(db: &LsmDb) -> [Vec<(u64, u64)>; 2] {
    [
        db.rows(Side::R).expect("R's rows"),
        db.rows(Side::S).expect("S's rows"),
    ]
}

/// Runs `change` on `db` with a crash injected after `writes` writes; expects it to fail.
fn crash_after(writes: u64, db: &mut LsmDb, change: impl FnOnce(&mut LsmDb) -> crate::Result<f64>) {
    db::WRITES_BEFORE_CRASH.set(Some(writes));
    let outcome = change(db);
    db::WRITES_BEFORE_CRASH.set(None);
    let err = outcome.err().map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.contains("injected")));
}

#[test]
fn a_batch_of_changes_interrupted_anywhere_is_rolled_back_at_the_next_open() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("db");
    let mut db = indexed_db(&path, 1_500);
    let before = live_rows(&db);
    let batches = db.batches();
    let mix = UpdateMix {
        changes: 0.4,
        deletes: 0.2,
    };
    // Early, in the middle, and at the last change: each leaves trees that disagree.
    for writes in [0, 1, 700, 1_999] {
        crash_after(writes, &mut db, |db| db.update(2_000, mix, 9).map(|_| 0.0));
        // The half-changed database refuses work until it is opened again.
        let join_err = join(&mut db, "HJ-N".parse().expect("a method"), &mut Vec::new())
            .err()
            .map(|e| e.to_string());
        assert!(join_err.is_some_and(|e| e.contains("open the database again")));
        drop(db);
        db = LsmDb::open(&path).expect("reopen");
        assert!(
            db.recovered().is_some_and(|r| r.contains("rolled back")),
            "after {writes} writes: {:?}",
            db.recovered()
        );
        assert_eq!(live_rows(&db), before, "after {writes} writes");
        assert_eq!(db.batches(), batches);
        db.check_indexes().expect("indexes agree with their tables");
        assert!(!path.join("rollback").exists());
    }
    // Opening again finds nothing to undo; the same update then goes through whole.
    drop(db);
    let mut db = LsmDb::open(&path).expect("reopen");
    assert_eq!(db.recovered(), None);
    db.update(2_000, mix, 9).expect("the update");
    assert_ne!(live_rows(&db), before);
    assert_eq!(db.batches(), batches + 1);
    check_every_method(&mut db).expect("every method after the update");
}

#[test]
fn an_interrupted_index_build_is_removed_and_builds_again_without_duplicates() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("db");
    let workload = Workload {
        rows: 1_000,
        match_rate: 0.5,
        dup_attr: 2,
        ..Workload::default()
    };
    let (mut db, _) = LsmDb::create(&path, small_trees(), workload).expect("create");
    for design in [Design::Eager, Design::Lazy, Design::Comp] {
        let spec = IndexSpec::of_method(Side::S, design, Maintenance::Sync);
        crash_after(600, &mut db, |db| db.build_index(spec));
        drop(db);
        db = LsmDb::open(&path).expect("reopen");
        assert!(
            db.recovered().is_some_and(|r| r.contains(&spec.dir_name())),
            "{:?}",
            db.recovered()
        );
        assert!(!db.has_index(spec));
        assert!(!path.join(spec.dir_name()).exists());
        db.build_index(spec).expect("the build, again");
        // A synchronous index holds each live row once: none twice.
        db.check_indexes().expect("no posting twice");
    }
    check_every_method(&mut db).expect("every method");
}

#[test]
fn a_failed_load_leaves_nothing_and_an_empty_directory_is_taken() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("db");
    let workload = Workload {
        rows: 500,
        ..Workload::default()
    };
    db::WRITES_BEFORE_CRASH.set(Some(300));
    let failed = LsmDb::create(&path, small_trees(), workload);
    db::WRITES_BEFORE_CRASH.set(None);
    assert!(failed.is_err());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // An empty directory (one the user made for it) is replaced by the database.
    std::fs::create_dir(&path).expect("mkdir");
    let (db, _) = LsmDb::create(&path, small_trees(), workload).expect("create");
    assert_eq!(db.rows(Side::S).expect("S").len(), 500);
}

#[test]
fn a_missing_tree_is_damage_not_an_empty_table() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("db");
    let db = indexed_db(&path, 200);
    let spec = IndexSpec::of_method(Side::S, Design::Eager, Maintenance::Sync);
    drop(db);
    for tree in ["r".to_string(), "s".to_string(), spec.dir_name()] {
        let copy = dir.path().join(format!("without-{tree}"));
        copy_dir(&path, &copy);
        std::fs::remove_dir_all(copy.join(&tree)).expect("remove the tree");
        let err = LsmDb::open(&copy).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("damaged") && e.contains(&tree)),
            "{err:?}"
        );
        assert!(!copy.join(&tree).exists(), "{tree} was made again");
    }
}

#[test]
fn corruption_is_reported_as_damage_not_as_a_held_lock() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("db");
    let db = indexed_db(&path, 3_000);
    drop(db);
    let mut flipped = 0;
    for entry in std::fs::read_dir(path.join("s")).expect("list s") {
        let file = entry.expect("an entry").path();
        if file.extension().is_some_and(|e| e == "sst") {
            let mut bytes = std::fs::read(&file).expect("read");
            let at = bytes.len() / 3;
            bytes[at] ^= 0x40;
            std::fs::write(&file, bytes).expect("write");
            flipped += 1;
        }
    }
    assert!(flipped > 0);
    let err = LsmDb::open(&path)
        .and_then(|mut db| join(&mut db, "SJ-P".parse().expect("a method"), &mut Vec::new()))
        .err()
        .map(|e| e.to_string());
    assert!(
        err.as_deref()
            .is_some_and(|e| e.contains("damaged") && !e.contains("another process")),
        "{err:?}"
    );
}

#[test]
fn an_output_inside_the_database_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("db");
    let workload = Workload {
        rows: 50,
        ..Workload::default()
    };
    let (db, _) = LsmDb::create(&path, small_trees(), workload).expect("create");
    for inside in [path.join("lidx-lsm.json"), path.join("s").join("CURRENT")] {
        assert!(
            refuse_output_inside(db.dir(), &inside).is_err(),
            "{inside:?}"
        );
    }
    refuse_output_inside(db.dir(), &dir.path().join("rs.tbl"))
        .expect("beside the database is fine");
}

/// Copies the directory tree `from` to `to` (files and directories only).
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("list") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

#[test]
fn settings_that_would_hang_or_exhaust_memory_are_refused() {
    let rows = 10;
    let workload = |dup_pk, dup_attr| Workload {
        rows,
        dup_pk,
        dup_attr,
        ..Workload::default()
    };
    // d = 10^9 over 10 rows generated runs for minutes.
    assert!(workload(1, 1_000_000_000).check().is_err());
    assert!(workload(11, 1).check().is_err());
    workload(10, 10).check().expect("c and d up to the rows");
    for config in [
        LsmConfig {
            write_buffer: 100 << 30,
            ..LsmConfig::default()
        },
        LsmConfig {
            block_cache: 1 << 50,
            ..LsmConfig::default()
        },
        LsmConfig {
            join_memory: 1 << 50,
            ..LsmConfig::default()
        },
        LsmConfig {
            index_write_buffer: 1 << 10,
            ..LsmConfig::default()
        },
        LsmConfig {
            l0_trigger: 0,
            ..LsmConfig::default()
        },
        LsmConfig {
            target_file_size: 1 << 50,
            ..LsmConfig::default()
        },
    ] {
        assert!(config.check().is_err(), "{config:?}");
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (mut db, _) =
        LsmDb::create(&dir.path().join("db"), small_trees(), workload(1, 1)).expect("create");
    assert!(cost::CostInputs::of(&db, cost::MAX_JOINS + 1, 0).is_err());
    let mix = UpdateMix::default();
    assert!(db.update(db::MAX_UPDATES + 1, mix, 1).is_err());
}

#[test]
fn of_two_loads_racing_for_one_directory_one_wins_and_the_other_removes_only_its_own() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for attempt in 0..6 {
        let path = dir.path().join(format!("race{attempt}"));
        if attempt % 2 == 1 {
            std::fs::create_dir(&path).expect("an empty directory to load into");
        }
        let results: Vec<Result<u64, String>> = std::thread::scope(|scope| {
            let racers: Vec<_> = [1u64, 7]
                .into_iter()
                .map(|seed| {
                    let path = &path;
                    scope.spawn(move || {
                        let workload = Workload {
                            rows: 300,
                            seed,
                            ..Workload::default()
                        };
                        LsmDb::create(path, small_trees(), workload)
                            .map(|(db, _)| db.workload().seed)
                            .map_err(|e| e.to_string())
                    })
                })
                .collect();
            racers
                .into_iter()
                .map(|r| r.join().expect("a racer"))
                .collect()
        });
        let won: Vec<u64> = results
            .iter()
            .filter_map(|r| r.as_ref().ok().copied())
            .collect();
        assert_eq!(won.len(), 1, "attempt {attempt}: {results:?}");
        assert!(
            results.iter().any(|r| r.as_ref().is_err_and(
                |e| e.contains("not empty") || e.contains("another process has it open")
            )),
            "{results:?}"
        );
        let db = LsmDb::open(&path).expect("the winner's database");
        assert_eq!(db.workload().seed, won[0]);
        assert_eq!(db.rows(Side::S).expect("S").len(), 300);
    }
    let scratch: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("an entry").file_name())
        .filter(|n| n.to_string_lossy().starts_with(".lidx-tmp-"))
        .collect();
    assert!(scratch.is_empty(), "{scratch:?}");
}

#[test]
fn a_load_into_an_empty_directory_keeps_that_directory_and_refuses_a_taken_one() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("mine");
    std::fs::create_dir(&path).expect("mkdir");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o2750)).expect("chmod");
    let before = std::fs::metadata(&path).expect("stat");
    let workload = Workload {
        rows: 200,
        ..Workload::default()
    };
    let (db, _) = LsmDb::create(&path, small_trees(), workload).expect("create");
    let after = std::fs::metadata(&path).expect("stat");
    assert_eq!((after.ino(), after.mode()), (before.ino(), before.mode()));
    assert_eq!(db.rows(Side::S).expect("S").len(), 200);
    drop(db);
    let mut names: Vec<String> = std::fs::read_dir(&path)
        .expect("list")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert_eq!(names, ["lidx-lsm.json", "r", "s"], "no scratch left");
    // A directory holding anything is refused and left as it was.
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).expect("mkdir");
    std::fs::write(taken.join(".hidden"), b"h").expect("write");
    let err = LsmDb::create(&taken, small_trees(), workload)
        .err()
        .map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.contains("not empty")));
    let left: Vec<_> = std::fs::read_dir(&taken).expect("list").collect();
    assert_eq!(left.len(), 1);
    // So is the database itself, and a symbolic link to an empty directory.
    assert!(LsmDb::create(&path, small_trees(), workload).is_err());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&empty, &link).expect("symlink");
    assert!(LsmDb::create(&link, small_trees(), workload).is_err());
    assert!(std::fs::read_dir(&empty).expect("list").next().is_none());
}

#[test]
fn the_lock_is_the_directory_so_removing_a_lock_file_lets_no_one_in() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("db");
    let workload = Workload {
        rows: 100,
        ..Workload::default()
    };
    let (db, _) = LsmDb::create(&path, small_trees(), workload).expect("create");
    // Files in the directory change nothing: a FIFO named as the old lock file neither.
    let _ = std::fs::remove_file(path.join(recovery::LOCK));
    let status = std::process::Command::new("mkfifo")
        .arg(path.join(recovery::LOCK))
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let err = LsmDb::open(&path).err().map(|e| e.to_string());
    assert!(
        err.as_deref()
            .is_some_and(|e| e.contains("another process has it open")),
        "{err:?}"
    );
    drop(db);
    LsmDb::open(&path).expect("open once the holder is gone");
}
