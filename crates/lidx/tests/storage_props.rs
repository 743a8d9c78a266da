//! Property tests of key files, table files and block reads against simple references.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::path::Path;

use lidx::data::sosd::parse_keys;
use lidx::data::{KeyFile, write_keys};
use lidx::storage::format::TableHeader;
use lidx::storage::{
    BlockRange, BlockReader, IoBackend, OutputTuple, ReadMode, TUPLES_PER_BLOCK, Table,
    TableWriter, Tuple, paper1,
};
use lidx::{Error, FormatError};
use proptest::prelude::*;

/// Keys biased to the edges of u64 and to collisions.
fn key() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(2),
        Just(u64::MAX - 2),
        Just(u64::MAX - 1),
        Just(u64::MAX),
        0..600u64,
        any::<u64>(),
    ]
}

/// Key sets of 0 to ~1500 keys (up to six blocks), sorted or not, with duplicate runs.
fn key_set() -> impl Strategy<Value = Vec<u64>> {
    (
        prop::collection::vec(key(), 0..1500),
        any::<bool>(),
        0..4usize,
    )
        .prop_map(|(mut keys, sort, dup_every)| {
            if dup_every > 0 {
                for i in (1..keys.len()).step_by(dup_every + 1) {
                    keys[i] = keys[i - 1];
                }
            }
            if sort {
                keys.sort_unstable();
            }
            keys
        })
}

/// A temporary directory for tests that read with O_DIRECT: under the build's target
/// directory, which is on the project's file system, not in /tmp, which is a tmpfs without
/// O_DIRECT on many systems.
fn direct_capable_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn tuples_of(keys: &[u64]) -> Vec<Tuple> {
    keys.iter()
        .enumerate()
        .map(|(i, &key)| Tuple {
            key,
            value: (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        })
        .collect()
}

fn write_table(path: &Path, tuples: &[Tuple]) -> TableHeader {
    let mut w = TableWriter::create(path).unwrap();
    for &t in tuples {
        w.push(t).unwrap();
    }
    w.finish().unwrap()
}

fn expected_header(keys: &[u64]) -> TableHeader {
    TableHeader {
        count: keys.len() as u64,
        sorted: keys.windows(2).all(|w| w[0] <= w[1]),
        distinct: keys.windows(2).all(|w| w[0] < w[1]),
        min_key: keys.iter().copied().min().unwrap_or(0),
        max_key: keys.iter().copied().max().unwrap_or(0),
        ..TableHeader::EMPTY
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sosd_round_trips(keys in key_set()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.keys");
        write_keys(&path, &keys).unwrap();
        let file = KeyFile::open(&path).unwrap();
        prop_assert_eq!(file.keys(), &keys[..]);
        // The byte parser agrees, also on a misaligned copy.
        let bytes = std::fs::read(&path).unwrap();
        prop_assert_eq!(&parse_keys(&bytes).unwrap()[..], &keys[..]);
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&bytes);
        prop_assert_eq!(&parse_keys(&shifted[1..]).unwrap()[..], &keys[..]);
    }

    #[test]
    fn table_round_trips_and_header_facts_are_right(keys in key_set()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tbl");
        let tuples = tuples_of(&keys);
        let written = write_table(&path, &tuples);
        prop_assert_eq!(written, expected_header(&keys));
        let table = Table::open(&path).unwrap();
        prop_assert_eq!(*table.header(), written);
        let mapped = table.map().unwrap();
        prop_assert_eq!(mapped.tuples(), &tuples[..]);
        let report = table.verify(|_| {}).unwrap();
        prop_assert_eq!(report.header, written);
        prop_assert_eq!(report.data_blocks, (keys.len() as u64).div_ceil(TUPLES_PER_BLOCK));
    }

    #[test]
    fn window_reads_return_the_covering_blocks(keys in key_set(), windows in prop::collection::vec((any::<u16>(), any::<u16>()), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tbl");
        let tuples = tuples_of(&keys);
        write_table(&path, &tuples);
        let table = Table::open(&path).unwrap();
        let n = keys.len() as u64;
        let mut reader = BlockReader::new(&table, ReadMode::Buffered).unwrap();
        for (a, b) in windows {
            let (mut lo, mut hi) = (u64::from(a) % (n + 1), u64::from(b) % (n + 1));
            if lo > hi { std::mem::swap(&mut lo, &mut hi); }
            let before = reader.stats();
            let run = reader.read_window(lo, hi).unwrap();
            let positions = run.positions();
            let got = run.tuples.to_vec();
            prop_assert_eq!(&got[..], &tuples[positions.start as usize..positions.end as usize]);
            if lo < hi {
                // The run covers the window and no more than its blocks.
                prop_assert!(positions.start <= lo && hi <= positions.end);
                prop_assert_eq!(positions.start % TUPLES_PER_BLOCK, 0);
                prop_assert!(positions.start + TUPLES_PER_BLOCK > lo);
                prop_assert!(positions.end == n || positions.end.is_multiple_of(TUPLES_PER_BLOCK));
                prop_assert!(positions.end < hi + TUPLES_PER_BLOCK);
                let after = reader.stats();
                prop_assert!(after.reads - before.reads <= 1);
            } else {
                prop_assert!(got.is_empty());
            }
        }
        // Past the end is refused, never read.
        prop_assert!(reader.read_window(0, n + 1).is_err());
    }

    #[test]
    fn direct_reads_equal_buffered_reads(keys in prop::collection::vec(key(), 1..3000), windows in prop::collection::vec((any::<u16>(), any::<u16>()), 1..20)) {
        let dir = direct_capable_dir();
        let path = dir.path().join("t.tbl");
        write_table(&path, &tuples_of(&keys));
        let table = Table::open(&path).unwrap();
        let n = keys.len() as u64;
        let mut direct = BlockReader::new(&table, ReadMode::Direct).unwrap();
        let mut buffered = BlockReader::new(&table, ReadMode::Buffered).unwrap();
        for (a, b) in windows {
            let (mut lo, mut hi) = (u64::from(a) % (n + 1), u64::from(b) % (n + 1));
            if lo > hi { std::mem::swap(&mut lo, &mut hi); }
            let range = BlockRange::for_window(lo, hi);
            let d = direct.read_blocks(range).unwrap().to_vec();
            let b = buffered.read_blocks(range).unwrap().to_vec();
            prop_assert_eq!(d.len() as u64, range.count * 4096);
            prop_assert_eq!(d, b);
        }
        prop_assert_eq!(direct.stats(), buffered.stats());
    }

    #[test]
    fn paper1_layout_round_trips(keys in prop::collection::vec(key(), 0..1200)) {
        let mut keys = keys;
        keys.sort_unstable();
        let dir = tempfile::tempdir().unwrap();
        let tbl = dir.path().join("t.tbl");
        let p1 = dir.path().join("t.p1");
        let back = dir.path().join("back.tbl");
        let tuples = tuples_of(&keys);
        write_table(&tbl, &tuples);
        paper1::export(&Table::open(&tbl).unwrap(), &p1, |_| {}).unwrap();
        let bytes = std::fs::read(&p1).unwrap();
        prop_assert_eq!(bytes.len(), 16 + 16 * keys.len());
        prop_assert_eq!(paper1::decode_header(&bytes, bytes.len() as u64).unwrap(), keys.len() as u64);
        paper1::import(&p1, &back, |_| {}).unwrap();
        prop_assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&tbl).unwrap());
    }

    /// Random and mutated bytes reach every parser: the outcome is Ok or Err, never a panic,
    /// and a mutated table never reads back different tuples without an error.
    #[test]
    fn mutated_files_give_errors_not_panics(keys in prop::collection::vec(key(), 1..700), flips in prop::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 1..4), cut in any::<Option<prop::sample::Index>>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tbl");
        let tuples = tuples_of(&keys);
        write_table(&path, &tuples);
        let mut bytes = std::fs::read(&path).unwrap();
        for (at, mask) in &flips {
            let i = at.index(bytes.len());
            bytes[i] ^= mask;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        let _ = TableHeader::decode(&bytes);
        let _ = parse_keys(&bytes);
        let _ = paper1::decode_header(&bytes, bytes.len() as u64);
        std::fs::write(&path, &bytes).unwrap();
        match Table::open(&path) {
            Err(_) => {}
            Ok(table) => {
                match table.map() {
                    Ok(m) => prop_assert_eq!(m.tuples(), &tuples[..]),
                    Err(e) => prop_assert!(matches!(e, Error::ChecksumMismatch { .. }), "{e}"),
                }
                let verified = table.verify(|_| {});
                if verified.is_ok() {
                    let mapped = table.map().unwrap();
                    prop_assert_eq!(mapped.tuples(), &tuples[..]);
                }
            }
        }
    }
}

#[test]
fn every_window_of_small_tables_maps_to_exactly_its_blocks() {
    for n in [0u64, 1, 2, 255, 256, 257, 511, 512, 513, 700] {
        for lo in 0..=n {
            for hi in lo..=n {
                let r = BlockRange::for_window(lo, hi);
                let blocks: Vec<u64> = (lo..hi).map(|p| p / TUPLES_PER_BLOCK).collect();
                let want_first = blocks.first().copied();
                if let Some(first) = want_first {
                    assert_eq!(r.first, first, "window {lo}..{hi}");
                    assert_eq!(r.end(), blocks.last().unwrap() + 1, "window {lo}..{hi}");
                } else {
                    assert_eq!(r.count, 0, "window {lo}..{hi}");
                }
            }
        }
    }
}

#[test]
fn a_flipped_data_byte_is_caught_by_reads_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tbl");
    let keys: Vec<u64> = (0..1000).collect();
    write_table(&path, &tuples_of(&keys));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[4096 + 4096 + 100] ^= 1; // data block 1
    std::fs::write(&path, &bytes).unwrap();
    let table = Table::open(&path).unwrap();
    let mut reader = BlockReader::new(&table, ReadMode::Buffered).unwrap();
    assert!(reader.read_window(0, 256).is_ok(), "block 0 is intact");
    let err = reader.read_window(300, 301).unwrap_err();
    assert!(
        matches!(err, Error::ChecksumMismatch { block: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("t.tbl"), "{err}");
    assert!(matches!(
        table.verify(|_| {}),
        Err(Error::ChecksumMismatch { block: 1, .. })
    ));
    assert!(table.map().is_err());
}

#[test]
fn truncated_and_foreign_files_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tbl");
    write_table(&path, &tuples_of(&(0..600).collect::<Vec<_>>()));
    let bytes = std::fs::read(&path).unwrap();

    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let err = Table::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Format {
                problem: FormatError::CountMismatch { count: 600, .. },
                ..
            }
        ),
        "{err}"
    );

    std::fs::write(&path, &bytes[..100]).unwrap();
    let err = Table::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Format {
                problem: FormatError::Truncated { .. },
                ..
            }
        ),
        "{err}"
    );

    let mut foreign = bytes.clone();
    foreign[..8].copy_from_slice(b"SQLite f");
    std::fs::write(&path, &foreign).unwrap();
    let err = Table::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Format {
                problem: FormatError::BadMagic { .. },
                ..
            }
        ),
        "{err}"
    );

    let mut future = bytes.clone();
    future[8] = 2;
    std::fs::write(&path, &future).unwrap();
    let err = Table::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Format {
                problem: FormatError::UnsupportedVersion { found: 2, .. },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn an_unfinished_writer_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tbl");
    {
        let mut w = TableWriter::create(&path).unwrap();
        w.push(Tuple { key: 1, value: 2 }).unwrap();
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn unsorted_tables_are_first_class_but_refused_where_sorted_is_needed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tbl");
    let h = write_table(&path, &tuples_of(&[5, 3, 9, 3]));
    assert!(!h.sorted && !h.distinct);
    let table = Table::open(&path).unwrap();
    assert_eq!(table.verify(|_| {}).unwrap().header, h);
    let err = paper1::export(&table, &dir.path().join("x.p1"), |_| {}).unwrap_err();
    assert!(matches!(err, Error::NotSorted { .. }), "{err}");
    assert!(!dir.path().join("x.p1").exists());
}

#[test]
fn an_empty_table_round_trips_through_every_reader() {
    let dir = direct_capable_dir();
    let path = dir.path().join("empty.tbl");
    let h = write_table(&path, &[]);
    assert_eq!(h, TableHeader::EMPTY);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
    let table = Table::open(&path).unwrap();
    assert!(table.is_empty());
    let mapped = table.map().unwrap();
    assert!(mapped.tuples().is_empty());
    assert_eq!(mapped.keys().count(), 0);
    assert_eq!(table.verify(|_| {}).unwrap().header, TableHeader::EMPTY);
    let mut reader = BlockReader::new(&table, ReadMode::Direct).unwrap();
    assert!(reader.read_window(0, 0).unwrap().tuples.is_empty());
    assert!(reader.read_window(0, 1).is_err());
    assert!(
        reader
            .read_blocks(BlockRange { first: 0, count: 1 })
            .is_err()
    );
    assert!(
        reader
            .read_blocks(BlockRange {
                first: u64::MAX,
                count: u64::MAX
            })
            .is_err()
    );
    assert_eq!(reader.stats(), lidx::storage::IoStats::default());
    let p1 = dir.path().join("empty.p1");
    paper1::export(&table, &p1, |_| {}).unwrap();
    assert_eq!(std::fs::read(&p1).unwrap().len(), 16);
    let back = dir.path().join("back.tbl");
    paper1::import(&p1, &back, |_| {}).unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&path).unwrap());
}

#[test]
fn block_reads_count_blocks_bytes_and_calls_and_reuse_the_buffer() {
    let dir = direct_capable_dir();
    let path = dir.path().join("t.tbl");
    let keys: Vec<u64> = (0..2000).collect(); // 8 blocks, the last one partial
    write_table(&path, &tuples_of(&keys));
    let table = Table::open(&path).unwrap();
    for mode in [ReadMode::Buffered, ReadMode::Direct] {
        let mut reader = BlockReader::new(&table, mode).unwrap();
        // Positions 250..770 lie in blocks 0, 1, 2 and 3: one read of four blocks.
        let run = reader.read_window(250, 770).unwrap();
        assert_eq!(run.positions(), 0..1024);
        assert_eq!(
            reader.stats(),
            lidx::storage::IoStats {
                blocks: 4,
                bytes: 4 * 4096,
                reads: 1,
                ..Default::default()
            }
        );
        // Windows inside the buffered blocks cost nothing.
        reader.read_window(300, 301).unwrap();
        reader.read_window(768, 1024).unwrap();
        assert_eq!(reader.stats().reads, 1);
        // One block past them is a new read, of that block's run only.
        let run = reader.read_window(1024, 1025).unwrap();
        assert_eq!(run.positions(), 1024..1280);
        assert_eq!(
            reader.stats(),
            lidx::storage::IoStats {
                blocks: 5,
                bytes: 5 * 4096,
                reads: 2,
                ..Default::default()
            }
        );
        // The partial last block is clipped at the table's end.
        let run = reader.read_window(1999, 2000).unwrap();
        assert_eq!(run.positions(), 1792..2000);
        assert_eq!(run.tuples.last().unwrap().key, 1999);
        reader.reset_stats();
        assert_eq!(reader.stats(), lidx::storage::IoStats::default());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The on-disk lower bound agrees with `partition_point`, whether it reads the window at
    /// once or narrows it block by block.
    #[test]
    fn on_disk_lower_bound_matches_partition_point(mut keys in prop::collection::vec(key(), 1..3000), queries in prop::collection::vec(key(), 1..40), max_blocks in 1u64..4) {
        keys.sort_unstable();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tbl");
        write_table(&path, &tuples_of(&keys));
        let table = Table::open(&path).unwrap();
        let mut reader = BlockReader::new(&table, ReadMode::Buffered).unwrap();
        let n = keys.len() as u64;
        for q in queries {
            let lb = keys.partition_point(|&k| k < q) as u64;
            prop_assert_eq!(reader.lower_bound(0, n, q, max_blocks).unwrap(), lb);
            // A narrow window around the answer works as well.
            let (lo, hi) = (lb.saturating_sub(3), (lb + 3).min(n));
            prop_assert_eq!(reader.lower_bound(lo, hi, q, max_blocks).unwrap(), lb);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Join output tables (24-byte tuples, 170 per block) round-trip, verify, and are
    /// refused where (key, value) tuples are needed.
    #[test]
    fn output_tables_round_trip(keys in key_set()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.tbl");
        let tuples: Vec<OutputTuple> = keys.iter().enumerate().map(|(i, &key)| OutputTuple { key, outer: i as u64, inner: !key }).collect();
        let mut w = TableWriter::create_output(&path).unwrap();
        for &t in &tuples {
            w.push_output(t).unwrap();
        }
        prop_assert!(w.push(Tuple::default()).is_err(), "an output table takes no pairs");
        let h = w.finish().unwrap();
        prop_assert!(h.is_output());
        let table = Table::open(&path).unwrap();
        prop_assert_eq!(table.layout().data_blocks, (keys.len() as u64).div_ceil(170));
        prop_assert_eq!(table.verify(|_| {}).unwrap().header, h);
        let mut back = Vec::new();
        table.scan_output(|t| { back.extend_from_slice(t); Ok(()) }).unwrap();
        prop_assert_eq!(back, tuples);
        prop_assert!(table.map().is_err());
        prop_assert!(BlockReader::new(&table, ReadMode::Buffered).is_err());
        let exported = paper1::export(&table, &dir.path().join("x.p1"), |_| {});
        prop_assert!(exported.is_err());
    }
}

/// Read-ahead: reads come back in order, a read that continues the held blocks keeps the
/// requested ones in front of it, windows inside what is held cost nothing more, and every
/// byte equals the table's.
#[test]
fn prefetched_reads_are_handed_back_in_order_and_joined_to_the_held_blocks() {
    let dir = direct_capable_dir();
    let keys: Vec<u64> = (0..2_000u64).map(|i| i * 3).collect();
    let tuples = tuples_of(&keys);
    let path = dir.path().join("t.tbl");
    write_table(&path, &tuples);
    let table = Table::open(&path).unwrap();
    for backend in backends() {
        for mode in [ReadMode::Buffered, ReadMode::Direct] {
            let mut reader = BlockReader::new(&table, mode).unwrap();
            reader.set_io_depth(4, backend).unwrap();
            let run = |first, count| BlockRange { first, count };
            for r in [run(0, 2), run(2, 1), run(5, 2)] {
                assert!(reader.can_prefetch());
                reader.prefetch(r).unwrap();
            }
            assert_eq!(reader.prefetching(), 3);
            assert!(reader.take_prefetched(None).unwrap());
            // Blocks 1 and 2: block 1 kept from the first read, block 2 read next.
            assert!(reader.take_prefetched(Some(1)).unwrap());
            let before = reader.stats();
            let w = reader.read_window(256, 768).unwrap();
            assert_eq!(w.first_position, 256);
            assert_eq!(w.tuples, &tuples[256..768]);
            assert_eq!(reader.stats(), before, "blocks 1 and 2 are held");
            // Block 5 does not continue block 2: it replaces what is held.
            assert!(reader.take_prefetched(Some(2)).unwrap());
            let w = reader.read_window(5 * 256, 7 * 256).unwrap();
            assert_eq!(w.tuples, &tuples[5 * 256..7 * 256]);
            assert_eq!(reader.stats(), before);
            assert!(
                !reader.take_prefetched(None).unwrap(),
                "nothing left in flight"
            );
            assert_eq!(reader.stats().reads, 3);
            assert_eq!(reader.stats().blocks, 5);
            // Past the end is refused, and a full queue has no room.
            assert!(reader.prefetch(run(7, 2)).is_err());
        }
    }
}

/// The backends this machine offers: threads everywhere, `io_uring` where the kernel grants
/// a ring (where it does not, `IoBackend::Auto` falls back to threads, tested here too).
fn backends() -> Vec<IoBackend> {
    match IoBackend::Auto.resolve() {
        IoBackend::Uring => vec![IoBackend::Uring, IoBackend::Threads],
        _ => vec![IoBackend::Threads, IoBackend::Auto],
    }
}

/// Every library pipeline that reads one file and writes another refuses an output that
/// is its input (through another path too: a hard link), before writing anything: the
/// input is still intact afterwards.
#[test]
fn pipelines_refuse_to_write_over_their_input() {
    let dir = tempfile::tempdir().unwrap();
    let is_refusal = |r: lidx::Result<()>, what: &str| match r {
        Err(Error::OutputIsInput { .. }) => {}
        other => panic!("{what}: expected OutputIsInput, got {other:?}"),
    };

    let keys_path = dir.path().join("k.keys");
    write_keys(&keys_path, &[1, 2, 2, 3]).unwrap();
    let link = dir.path().join("k-link.keys");
    std::fs::hard_link(&keys_path, &link).unwrap();
    let file = KeyFile::open(&keys_path).unwrap();
    for distinct in [false, true] {
        let r = lidx::storage::table::build_from_key_file(
            &file,
            lidx::storage::ValueSource::RowId,
            distinct,
            &link,
            |_| {},
        );
        is_refusal(r.map(drop), "table from keys");
    }
    drop(file);
    assert_eq!(
        KeyFile::open(&keys_path).unwrap().keys(),
        &[1, 2, 2, 3],
        "the key file is intact"
    );
    // Unsorted keys with distinct: refused as unsorted, nothing written.
    let unsorted = dir.path().join("u.keys");
    write_keys(&unsorted, &[3, 1]).unwrap();
    let out = dir.path().join("u.tbl");
    let r = lidx::storage::table::build_from_key_file(
        &KeyFile::open(&unsorted).unwrap(),
        lidx::storage::ValueSource::RowId,
        true,
        &out,
        |_| {},
    );
    assert!(matches!(r, Err(Error::Unsorted { .. })), "{r:?}");
    assert!(!out.exists());

    let tbl = dir.path().join("t.tbl");
    write_table(&tbl, &tuples_of(&[1, 2, 3]));
    let table = Table::open(&tbl).unwrap();
    is_refusal(paper1::export(&table, &tbl, |_| {}), "paper 1 export");
    let p1 = dir.path().join("t.p1");
    paper1::export(&table, &p1, |_| {}).unwrap();
    is_refusal(paper1::import(&p1, &p1, |_| {}).map(drop), "paper 1 import");
    is_refusal(
        lidx::updatable::alex::file::build(
            &table,
            &[1, 2, 3],
            &tbl,
            &lidx::updatable::alex::AlexParams::default(),
            |_| {},
        )
        .map(drop),
        "ALEX file",
    );
    drop(table);
    assert_eq!(Table::open(&tbl).unwrap().read_keys().unwrap(), [1, 2, 3]);

    let tsv = dir.path().join("r.tsv");
    std::fs::write(&tsv, "a\t1\nb\t2\n").unwrap();
    let input = lidx::kv::input::RecordInput::tsv(&tsv).unwrap();
    is_refusal(
        lidx::kv::build_from_input(&input, &lidx::kv::BuildOptions::default(), &tsv).map(drop),
        "kv file",
    );
    assert_eq!(std::fs::read_to_string(&tsv).unwrap(), "a\t1\nb\t2\n");
}
