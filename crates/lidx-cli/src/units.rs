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
    if !(v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64) {
        return Err(format!("'{s}' is not a whole non-negative count"));
    }
    Ok(v as u64)
}

/// Parses a size in bytes: a count with an optional binary suffix `KiB`, `MiB`, `GiB`
/// (also `K`, `M`, `G` meaning the same powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let stripped = lower.trim_end_matches("ib").trim_end_matches('b');
    let (num, shift) = match stripped.chars().last() {
        Some('k') => (&stripped[..stripped.len() - 1], 10),
        Some('m') => (&stripped[..stripped.len() - 1], 20),
        Some('g') => (&stripped[..stripped.len() - 1], 30),
        _ => (stripped, 0),
    };
    let v: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a size (examples: 4096, 64MiB, 1GiB)"))?;
    v.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{s}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
