//! Parsing counts and sizes on the command line: `1M`, `200e6`, `64MiB`; printing them
//! as lidx-bench's summaries do.

pub use lidx_bench::text::human_bytes;

/// Parses a count: a plain integer (`_` allowed), scientific notation (`2e8`), or a decimal
/// suffix `K`, `M`, `G` (10^3, 10^6, 10^9).
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        Some('g' | 'G') => (&t[..t.len() - 1], 1e9),
        _ => (t.as_str(), 1.0),
    };
    if mult == 1.0
        && let Ok(v) = num.parse::<u64>()
    {
        return Ok(v);
    }
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a count (examples: 1000, 1M, 2e8)"))?;
    let v = v * mult;
    if !(v >= 0.0 && v.fract() == 0.0) {
        return Err(format!("'{s}' is not a whole non-negative count"));
    }
    // `u64::MAX as f64` is 2^64 itself, one past the largest count.
    if v >= u64::MAX as f64 {
        return Err(format!("'{s}' is too large (counts go up to 2^64 - 1)"));
    }
    Ok(v as u64)
}

/// Parses a size in bytes: a whole number with an optional binary suffix `KiB`, `MiB`,
/// `GiB`, `TiB`, `PiB`, `EiB` (also `K`, `M`, `G`, `T`, `P`, `E` meaning the same powers
/// of 1024). A size of 2^64 bytes or more (`16EiB`) is "too large", not "not a size".
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let stripped = lower.trim_end_matches("ib").trim_end_matches('b');
    let suffix = stripped.chars().last().and_then(|c| {
        let shift = match c {
            'k' => 10,
            'm' => 20,
            'g' => 30,
            't' => 40,
            'p' => 50,
            'e' => 60,
            _ => return None,
        };
        Some((&stripped[..stripped.len() - 1], shift))
    });
    let (num, shift) = suffix.unwrap_or((stripped, 0));
    let num = num.trim();
    let v: u64 = match num.parse() {
        Ok(v) => v,
        // All digits yet no u64: a number beyond 2^64 - 1.
        Err(_) if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) => {
            return Err(too_large(s));
        }
        Err(_) => return Err(format!("'{s}' is not a size (examples: 4096, 64MiB, 1GiB)")),
    };
    v.checked_mul(1u64 << shift).ok_or_else(|| too_large(s))
}

fn too_large(s: &str) -> String {
    format!("'{s}' is too large (sizes go up to 16EiB - 1 byte)")
}

/// `value` when it is at most `max`; else an error for clap naming the bound as the help
/// states it (`max_text`, such as "1GiB").
pub fn at_most(value: u64, max: u64, max_text: &str) -> Result<u64, String> {
    if value > max {
        return Err(format!("{value} is more than the {max_text} allowed"));
    }
    Ok(value)
}

/// A comma-separated list of `T`, where "" is the empty list (for options whose help
/// says so; clap takes the field as one value when its type is spelled
/// `std::vec::Vec<T>`).
pub fn parse_list<T>(s: &str) -> Result<Vec<T>, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    s.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| item.parse::<T>().map_err(|e| e.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_the_empty_string_is_none() {
        assert_eq!(parse_list::<u64>(""), Ok(vec![]));
        assert_eq!(parse_list::<u64>("1,2, 3"), Ok(vec![1, 2, 3]));
        assert!(parse_list::<u64>("1,x").is_err());
    }

    #[test]
    fn counts_and_sizes_parse() {
        assert_eq!(parse_count("1000"), Ok(1000));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert_eq!(parse_count("1M"), Ok(1_000_000));
        assert_eq!(parse_count("2e8"), Ok(200_000_000));
        assert_eq!(parse_count("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_count("1.5").is_err());
        assert!(parse_count("-3").is_err());
        assert!(parse_count("lots").is_err());
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
    }

    #[test]
    fn the_largest_sizes_and_counts_are_too_large_not_malformed() {
        assert_eq!(parse_size("1TiB"), Ok(1 << 40));
        assert_eq!(parse_size("2P"), Ok(2 << 50));
        assert_eq!(parse_size("15EiB"), Ok(15 << 60));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        for big in [
            "16EiB",
            "16E",
            "18446744073709551616",
            "99999999999999999999999",
        ] {
            let err = parse_size(big).unwrap_err();
            assert!(err.contains("too large"), "{big}: {err}");
        }
        assert!(parse_size("-1").unwrap_err().contains("not a size"));
        assert!(parse_size("EiB").unwrap_err().contains("not a size"));
        // 2^64 as a float rounds to u64::MAX as f64: still too large.
        for big in ["18446744073709551616", "2e19", "1e30"] {
            let err = parse_count(big).unwrap_err();
            assert!(err.contains("too large"), "{big}: {err}");
        }
        assert_eq!(parse_count("1e19"), Ok(10_000_000_000_000_000_000));
        assert_eq!(at_most(5, 5, "5"), Ok(5));
        assert!(
            at_most(6, 5, "5")
                .unwrap_err()
                .contains("more than the 5 allowed")
        );
    }
}
