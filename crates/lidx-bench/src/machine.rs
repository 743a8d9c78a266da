//! A one-line description of the machine, carried in every CSV row, and the process's
//! read counters.

/// "CPU model, N cores, M GiB" from `/proc`; parts that cannot be read are left out.
pub fn describe() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .map_or("unknown CPU", str::trim)
        .to_string();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib >> 20);
    format!("{model}, {cores} cores, {mem_gib} GiB")
}

/// The process's read counters (`/proc/self/io`), zeros where the file is missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessReads {
    /// Read system calls (`syscr`).
    pub calls: u64,
    /// Bytes those calls returned, from storage or the page cache (`rchar`).
    pub chars: u64,
    /// Bytes fetched from storage (`read_bytes`).
    pub storage_bytes: u64,
}

/// The process's read counters now.
pub fn process_reads() -> ProcessReads {
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0)
    };
    ProcessReads {
        calls: field("syscr:"),
        chars: field("rchar:"),
        storage_bytes: field("read_bytes:"),
    }
}

/// The calling thread's major page faults so far (`/proc/thread-self/stat`, field 12); 0
/// where it cannot be read.
pub fn thread_major_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // The fields after the command name (in parentheses, which may hold spaces): state is
    // field 3, majflt field 12.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(12 - 3))
        .and_then(|f| f.parse().ok())
        .unwrap_or(0)
}
