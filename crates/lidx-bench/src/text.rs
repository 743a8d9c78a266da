//! Numbers as people read them in summaries and reports.

/// Bytes as a short human string with a binary unit (`3.0 MiB`, `512 B`).
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A ratio as `1.23x`, with three digits after the point below 0.1.
pub fn times(ratio: f64) -> String {
    if ratio < 0.1 {
        format!("{ratio:.3}x")
    } else {
        format!("{ratio:.2}x")
    }
}

/// A Markdown table: the header, its rule, and a line per row.
pub fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut s = format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for r in rows {
        s += &format!("| {} |\n", r.join(" | "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ratios_read_well() {
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(times(1.234), "1.23x");
        assert_eq!(times(0.0123), "0.012x");
    }
}
