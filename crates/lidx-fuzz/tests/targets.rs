//! Every fuzz target on the stable toolchain: on each of its seeds as they are, on seeds
//! corrupted in one to four places (a flipped bit, an overwritten byte or 8-byte word, a cut,
//! bytes appended), and on random bytes. A target panics only on a bug, and proptest shrinks
//! the input that made it panic. cargo-fuzz (`fuzz/`) runs the same bodies for longer.

use lidx_fuzz::{TARGETS, Target};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// One change to an input.
#[derive(Clone, Debug)]
enum Corruption {
    /// Flips bit `bit` of the byte at `at` (modulo the length).
    FlipBit { at: usize, bit: u8 },
    /// Overwrites the byte at `at`.
    Byte { at: usize, value: u8 },
    /// Overwrites the 8 bytes from `at` (as far as the input goes) with `value`.
    Word { at: usize, value: u64 },
    /// Cuts the input to `len` bytes (modulo its length plus one).
    Cut { len: usize },
    /// Appends bytes.
    Append(Vec<u8>),
}

impl Corruption {
    fn apply(&self, data: &mut Vec<u8>) {
        let n = data.len();
        match *self {
            Corruption::FlipBit { at, bit } if n > 0 => data[at % n] ^= 1 << (bit % 8),
            Corruption::Byte { at, value } if n > 0 => data[at % n] = value,
            Corruption::Word { at, value } if n > 0 => {
                let at = at % n;
                let end = (at + 8).min(n);
                data[at..end].copy_from_slice(&value.to_le_bytes()[..end - at]);
            }
            Corruption::Cut { len } => data.truncate(len % (n + 1)),
            Corruption::Append(ref bytes) => data.extend_from_slice(bytes),
            _ => {}
        }
    }
}

fn corruption() -> impl Strategy<Value = Corruption> {
    // Counts and lengths that parsers must not trust: zero, one, the type limits.
    let word = prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::from(u32::MAX)),
        Just(u64::MAX),
        Just(1 << 40),
        any::<u64>(),
    ];
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, bit)| Corruption::FlipBit { at, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, value)| Corruption::Byte { at, value }),
        (any::<usize>(), word).prop_map(|(at, value)| Corruption::Word { at, value }),
        any::<usize>().prop_map(|len| Corruption::Cut { len }),
        vec(any::<u8>(), 1..64).prop_map(Corruption::Append),
    ]
}

fn exercise(name: &str) {
    let target: &Target = TARGETS
        .iter()
        .find(|t| t.name == name)
        .expect("a target of that name");
    let seeds = (target.seeds)();
    assert!(seeds.len() >= 2, "{name}: {} seeds", seeds.len());
    for seed in &seeds {
        (target.run)(seed);
    }
    let config = Config {
        cases: target.stable_cases,
        failure_persistence: None,
        ..Config::default()
    };
    let corrupted = (0..seeds.len(), vec(corruption(), 1..5));
    TestRunner::new(config.clone())
        .run(&corrupted, |(seed, changes)| {
            let mut data = seeds[seed].clone();
            for change in &changes {
                change.apply(&mut data);
            }
            (target.run)(&data);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{name} on a corrupted seed: {e}"));
    TestRunner::new(config)
        .run(&vec(any::<u8>(), 0..8192), |data| {
            (target.run)(&data);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{name} on random bytes: {e}"));
}

#[test]
fn every_target_is_tested_here() {
    let tested = [
        "table_open",
        "sosd_parse",
        "header_decode",
        "paper1_header",
        "index_load",
        "partition_open",
        "kv_open",
        "alex_open",
        "lsm_manifest",
        "profile_load",
    ];
    let mut all: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    all.sort_unstable();
    let mut tested = tested.to_vec();
    tested.sort_unstable();
    assert_eq!(all, tested);
}

#[test]
fn corruptions_change_what_they_say() {
    let mut data = vec![0u8; 10];
    Corruption::FlipBit { at: 13, bit: 9 }.apply(&mut data);
    assert_eq!(data[3], 2);
    Corruption::Word {
        at: 6,
        value: u64::MAX,
    }
    .apply(&mut data);
    assert_eq!(&data[6..], &[0xff; 4]);
    Corruption::Cut { len: 25 }.apply(&mut data);
    assert_eq!(data.len(), 3);
    Corruption::Append(vec![7]).apply(&mut data);
    assert_eq!(data, [0, 0, 0, 7]);
    let mut empty = Vec::new();
    Corruption::Byte { at: 3, value: 1 }.apply(&mut empty);
    assert!(empty.is_empty());
}

#[test]
fn table_open() {
    exercise("table_open");
}

#[test]
fn sosd_parse() {
    exercise("sosd_parse");
}

#[test]
fn header_decode() {
    exercise("header_decode");
}

#[test]
fn paper1_header() {
    exercise("paper1_header");
}

#[test]
fn index_load() {
    exercise("index_load");
}

#[test]
fn partition_open() {
    exercise("partition_open");
}

#[test]
fn kv_open() {
    exercise("kv_open");
}

#[test]
fn alex_open() {
    exercise("alex_open");
}

#[test]
fn lsm_manifest() {
    exercise("lsm_manifest");
}

#[test]
fn profile_load() {
    exercise("profile_load");
}
