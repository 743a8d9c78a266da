//! Storage that behaves like a profile at the level of real reads, the same for every
//! store: a read-only FUSE file system that passes reads through to a directory and makes
//! each one take the profile's latency + bytes / bandwidth, counting reads and bytes per
//! file (paper 2, section 3: the NFS that AirIndex is tuned for; paper 4: a distributed
//! file system).
//!
//! Any store opens its files under [`ProfiledMount::path`] as it would anywhere: lidx's
//! layouts, RocksDB, LMDB, a memory-mapped file. What is charged is what reaches the file
//! system, never a system call of the process that does not read the store's files (sysfs,
//! `/proc`, a read the kernel answers at end of file). Each read that arrives is done on the
//! directory below (normally from the page cache, in microseconds), then answered once the
//! profile's time has passed since it arrived: its latency, then its bytes over one link
//! at the profile's bandwidth. Reads in flight wait out their latencies together, as RPCs
//! to a server do, and share the link's bandwidth one after another. A read that returns
//! no bytes costs the latency alone.
//!
//! `O_DIRECT` reads arrive as the store makes them, cut into requests of at most 1 MiB.
//! Buffered reads go through the kernel's page cache and its read-ahead, as on NFS: a
//! small random read asks for its page alone, a sequential one for windows of up to
//! 1 MiB (the read-ahead is raised from FUSE's 128 KiB to NFS's usual `rsize`). The kernel drops a file's cached
//! pages at each open (no `FOPEN_KEEP_CACHE`), so a store opened afresh reads from the
//! profile.
//! Metadata (lookups, attributes, directory listings) is answered at once and not charged.
//!
//! Charging can be switched from sleeping to counting ([`ProfiledMount::set_sleeping`]):
//! then reads are answered at once and their profile time only added up, for runs too
//! long to sleep through.
//!
//! Mounting needs `/dev/fuse` and the right to mount (root, or `fusermount3` on the path).
//! The file system is served by a `lidx bench mount` process ([`serve`]), which a user can
//! also run by hand to put any store on a profile. [`ProfiledMount`] starts one at a
//! scratch directory of lidx's own and reads its counters; the mount is detached when it
//! is dropped, by either process's SIGINT/SIGTERM handler, when the parent dies (the
//! server's parent-death signal), and by a later run's sweep after a SIGKILL.

use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use std::io::{BufRead, BufReader, Read as _, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::Context as _;
use fuser::{
    BackgroundSession, Config, Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation,
    INodeNo, KernelConfig, LockOwner, MountOption, OpenAccMode, OpenFlags, ReplyAttr, ReplyData,
    ReplyDirectory, ReplyEntry, ReplyOpen, ReplyStatfs, Request,
};
use lidx::files::{ChildGuard, PendingGuard, ScratchDir, end_with_this_process, scratch_dir};
use lidx::storage::IoStats;
use lidx::storage::profile::AffineCost;

/// The largest read the kernel is asked to send as one request, bytes.
pub const MAX_REQUEST: u32 = 1 << 20;

/// How long the kernel may keep names and attributes: the files do not change while a
/// store reads them.
const ATTR_TTL: Duration = Duration::from_secs(1);

/// What the reads of one file (or of all) cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileReads {
    /// Read requests that reached the file system.
    pub reads: u64,
    /// Bytes they returned.
    pub bytes: u64,
    /// Requests that returned no bytes (at or past the end of the file).
    pub empty: u64,
    /// 4096-byte blocks the requests covered.
    pub blocks: u64,
    /// Their profile time, nanoseconds (slept or only counted).
    pub charged_ns: u64,
}

impl FileReads {
    fn add(&mut self, offset: u64, asked: u32, got: usize, charged_ns: u64) {
        self.reads += 1;
        self.bytes += got as u64;
        self.empty += u64::from(got == 0);
        let end = offset + u64::from(asked);
        self.blocks += end.div_ceil(4096) - offset / 4096;
        self.charged_ns += charged_ns;
    }

    /// These reads and `other`'s together.
    fn plus(self, other: &FileReads) -> FileReads {
        FileReads {
            reads: self.reads + other.reads,
            bytes: self.bytes + other.bytes,
            empty: self.empty + other.empty,
            blocks: self.blocks + other.blocks,
            charged_ns: self.charged_ns + other.charged_ns,
        }
    }

    /// As the library's read counter: reads, bytes, blocks and their modelled time.
    pub fn io(&self) -> IoStats {
        IoStats {
            reads: self.reads,
            bytes: self.bytes,
            blocks: self.blocks,
            modelled_ns: self.charged_ns,
            ..IoStats::default()
        }
    }
}

/// A directory served by a `lidx bench mount` process at a scratch mount point, its reads
/// made to cost a profile's time. Dropping it unmounts it and removes the mount point.
///
/// The file system runs in a process of its own: a process that serves its own FUSE mount
/// can never finish dying once killed while one of its threads waits on a read (the
/// kernel waits for the answer, which only the dying process could give). The server
/// ends with this process (its parent-death signal), detaching the mount.
pub struct ProfiledMount {
    control: Mutex<Control>,
    source: PathBuf,
    read_ahead_kb: Option<u64>,
    _child: ChildGuard,
    /// Detached on a signal before the mount point is removed (registered after it).
    _detach_on_signal: PendingGuard,
    mount_point: ScratchDir,
}

/// The server's pipes.
struct Control {
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
}

impl ProfiledMount {
    /// Mounts `source` (a directory) read-only at a new scratch directory in `parent`, each
    /// read costing `cost` and slept out, served by `lidx_exe bench mount`. Fails with the
    /// reason when FUSE cannot be mounted here (no `/dev/fuse`, no right to mount).
    pub fn mount(
        lidx_exe: &Path,
        source: &Path,
        parent: &Path,
        cost: AffineCost,
    ) -> anyhow::Result<ProfiledMount> {
        cost.check()?;
        let source = std::fs::canonicalize(source)
            .with_context(|| format!("{}: cannot open the directory", source.display()))?;
        let mount_point = scratch_dir(parent)?;
        let detach = PendingGuard::mount(mount_point.path());
        let mut cmd = Command::new(lidx_exe);
        cmd.args(["bench", "mount", "--latency-us"])
            .arg(cost.latency_us.to_string())
            .arg("--bandwidth-mb-s")
            .arg(cost.bandwidth_mb_s.to_string())
            .arg(&source)
            .arg(mount_point.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        end_with_this_process(&mut cmd);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("{}: cannot start the mount's server", lidx_exe.display()))?;
        let guard = ChildGuard::new(child.id());
        let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
            anyhow::bail!("the mount's server has no pipes");
        };
        let mut control = Control {
            child,
            to,
            from: BufReader::new(from),
        };
        let ready = match control.line() {
            Ok(line) => line,
            Err(_) => {
                let mut why = String::new();
                if let Some(mut err) = control.child.stderr.take() {
                    let _ = err.read_to_string(&mut why);
                }
                let _ = control.child.wait();
                anyhow::bail!("{}", why.trim().trim_start_matches("lidx: "));
            }
        };
        let read_ahead_kb = ready
            .strip_prefix("ready ")
            .with_context(|| format!("the mount's server said {ready:?}"))?
            .parse()
            .ok();
        Ok(ProfiledMount {
            control: Mutex::new(control),
            source,
            read_ahead_kb,
            _child: guard,
            _detach_on_signal: detach,
            mount_point,
        })
    }

    /// Where the directory appears.
    pub fn path(&self) -> &Path {
        self.mount_point.path()
    }

    /// `path` (in the source directory) as it appears under the mount.
    pub fn view(&self, path: &Path) -> anyhow::Result<PathBuf> {
        let canonical = std::fs::canonicalize(path)
            .with_context(|| format!("{}: cannot open", path.display()))?;
        let inside = canonical.strip_prefix(&self.source).with_context(|| {
            format!(
                "{}: not in the mounted directory {}",
                path.display(),
                self.source.display()
            )
        })?;
        Ok(self.path().join(inside))
    }

    /// The kernel's read-ahead on the mount, KiB (`None`: unknown).
    pub fn read_ahead_kb(&self) -> Option<u64> {
        self.read_ahead_kb
    }

    /// Charges reads `cost` from now on.
    pub fn set_cost(&self, cost: AffineCost) -> anyhow::Result<()> {
        cost.check()?;
        self.ask(&format!("cost {} {}", cost.latency_us, cost.bandwidth_mb_s))?;
        Ok(())
    }

    /// Whether reads sleep out their time (true, as mounted) or are answered at once with
    /// their time only counted.
    pub fn set_sleeping(&self, sleeping: bool) -> anyhow::Result<()> {
        self.ask(if sleeping { "sleep on" } else { "sleep off" })?;
        Ok(())
    }

    /// Every read so far, all files together.
    pub fn total(&self) -> anyhow::Result<FileReads> {
        let answer = self.ask("total")?;
        let (reads, _) = parse_reads(&answer)?;
        Ok(reads)
    }

    /// Every read so far, by file (its path in the source directory).
    pub fn by_file(&self) -> anyhow::Result<BTreeMap<PathBuf, FileReads>> {
        let answer = self.ask("by-file")?;
        answer
            .lines()
            .map(|line| {
                let (reads, path) = parse_reads(line)?;
                Ok((PathBuf::from(unescape_line(path)), reads))
            })
            .collect()
    }

    /// Sends `command` and returns the answer (the lines before `end`), or the server's
    /// error.
    fn ask(&self, command: &str) -> anyhow::Result<String> {
        let mut c = lock(&self.control);
        writeln!(c.to, "{command}")
            .and_then(|()| c.to.flush())
            .context("the mount's server is gone")?;
        let mut answer = String::new();
        loop {
            let line = c.line()?;
            if line == "end" {
                return Ok(answer);
            }
            if let Some(error) = line.strip_prefix("error ") {
                anyhow::bail!("the mount's server: {error}");
            }
            answer.push_str(&line);
            answer.push('\n');
        }
    }
}

impl Control {
    /// The server's next line.
    fn line(&mut self) -> anyhow::Result<String> {
        let mut line = String::new();
        if self.from.read_line(&mut line)? == 0 {
            anyhow::bail!("the mount's server is gone");
        }
        Ok(line.trim_end_matches('\n').to_string())
    }
}

impl Drop for ProfiledMount {
    fn drop(&mut self) {
        let c = self.control.get_mut().unwrap_or_else(|p| p.into_inner());
        // Asked to quit, the server unmounts; gone already, it was detached.
        let _ = writeln!(c.to, "quit").and_then(|()| c.to.flush());
        let _ = c.child.wait();
    }
}

impl std::fmt::Debug for ProfiledMount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfiledMount")
            .field("source", &self.source)
            .field("path", &self.path())
            .finish()
    }
}

/// `reads bytes empty blocks charged_ns[ rest]`: the reads and the rest of the line.
fn parse_reads(line: &str) -> anyhow::Result<(FileReads, &str)> {
    let mut parts = line.trim_end_matches('\n').splitn(6, ' ');
    let mut next = || -> anyhow::Result<u64> {
        parts
            .next()
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("the mount's server said {line:?}"))
    };
    let reads = FileReads {
        reads: next()?,
        bytes: next()?,
        empty: next()?,
        blocks: next()?,
        charged_ns: next()?,
    };
    Ok((reads, parts.next().unwrap_or("")))
}

fn reads_line(r: &FileReads) -> String {
    format!(
        "{} {} {} {} {}",
        r.reads, r.bytes, r.empty, r.blocks, r.charged_ns
    )
}

/// A path on one line: backslashes and newlines escaped.
fn escape_line(path: &Path) -> String {
    path.to_string_lossy()
        .replace('\\', "\\\\")
        .replace('\n', "\\n")
}

fn unescape_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// Serves `source` read-only at `mount_point` (an empty directory), each read costing
/// `cost`, until `commands` ends or says `quit`: the `lidx bench mount` process. Writes
/// `ready READ_AHEAD_KB` once mounted, then answers each command on `answers`, ending each
/// answer with `end` (or one `error ...` line):
///
/// - `total`: `READS BYTES EMPTY BLOCKS CHARGED_NS` over every file;
/// - `by-file`: the same and the file's path, a line per file read;
/// - `cost LATENCY_US BANDWIDTH_MB_S`: the cost of reads from now on;
/// - `sleep on|off`: reads sleep out their time, or are answered at once and counted;
/// - `quit`: unmounts.
pub fn serve(
    source: &Path,
    mount_point: &Path,
    cost: AffineCost,
    commands: impl BufRead,
    mut answers: impl Write,
) -> anyhow::Result<()> {
    let server = Server::mount(source, mount_point, cost)?;
    let ahead = server
        .read_ahead_kb
        .map_or_else(|| "-".to_string(), |kb| kb.to_string());
    writeln!(answers, "ready {ahead}")?;
    answers.flush()?;
    for line in commands.lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer: anyhow::Result<String> = match words.as_slice() {
            ["quit"] => break,
            ["total"] => Ok(format!("{}\n", reads_line(&server.total()))),
            ["by-file"] => Ok(server
                .by_file()
                .iter()
                .map(|(path, r)| format!("{} {}\n", reads_line(r), escape_line(path)))
                .collect()),
            ["cost", latency, bandwidth] => parse_cost(latency, bandwidth)
                .and_then(|cost| server.set_cost(cost))
                .map(|()| String::new()),
            ["sleep", on @ ("on" | "off")] => {
                server.set_sleeping(*on == "on");
                Ok(String::new())
            }
            _ => Err(anyhow::anyhow!(
                "unknown command {line:?}: total, by-file, cost LATENCY_US BANDWIDTH_MB_S, sleep on|off, quit"
            )),
        };
        match answer {
            Ok(text) => writeln!(answers, "{text}end")?,
            Err(e) => writeln!(answers, "error {e:#}")?,
        }
        answers.flush()?;
    }
    drop(server);
    Ok(())
}

fn parse_cost(latency: &str, bandwidth: &str) -> anyhow::Result<AffineCost> {
    let number = |s: &str| -> anyhow::Result<f64> {
        s.parse().with_context(|| format!("{s:?} is not a number"))
    };
    let cost = AffineCost {
        latency_us: number(latency)?,
        bandwidth_mb_s: number(bandwidth)?,
    };
    cost.check()?;
    Ok(cost)
}

/// The file system, mounted in this process (see [`ProfiledMount`] for why this is a
/// process of its own).
struct Server {
    /// Unmounted first (fields drop in order).
    session: Option<BackgroundSession>,
    /// Detached on a signal (the parent's death included).
    _detach_on_signal: PendingGuard,
    shared: Arc<Shared>,
    replier: Option<JoinHandle<()>>,
    read_ahead_kb: Option<u64>,
}

impl Server {
    fn mount(source: &Path, mount_point: &Path, cost: AffineCost) -> anyhow::Result<Server> {
        cost.check()?;
        let source = std::fs::canonicalize(source)
            .with_context(|| format!("{}: cannot open the directory", source.display()))?;
        if !source.is_dir() {
            anyhow::bail!("{}: not a directory", source.display());
        }
        let empty = std::fs::read_dir(mount_point)
            .with_context(|| format!("{}: cannot open the mount point", mount_point.display()))?
            .next()
            .is_none();
        if !empty {
            anyhow::bail!(
                "{}: not empty; mount on an empty directory (nothing in it is hidden then)",
                mount_point.display()
            );
        }
        let shared = Arc::new(Shared::new(source, cost));
        let replier = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("lidx-profiled-fs".into())
                .spawn(move || shared.answer_when_due())?
        };
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::RO,
            MountOption::NoAtime,
            MountOption::FSName("lidx-profiled".into()),
        ];
        // Registered before mounting: a signal right after the mount still undoes it.
        let detach = PendingGuard::mount(mount_point);
        let fs = ProfiledFs {
            shared: Arc::clone(&shared),
        };
        let session = match fuser::spawn_mount(fs, mount_point, &config) {
            Ok(session) => session,
            Err(e) => {
                shared.stop();
                let _ = replier.join();
                anyhow::bail!(
                    "{}: cannot mount a FUSE file system ({e}); it needs /dev/fuse and the right to mount (root, or fusermount3)",
                    mount_point.display()
                );
            }
        };
        Ok(Server {
            read_ahead_kb: widen_read_ahead(mount_point),
            session: Some(session),
            _detach_on_signal: detach,
            shared,
            replier: Some(replier),
        })
    }

    fn set_cost(&self, cost: AffineCost) -> anyhow::Result<()> {
        cost.check()?;
        *lock(&self.shared.cost) = cost;
        Ok(())
    }

    fn set_sleeping(&self, sleeping: bool) {
        self.shared.sleeping.store(sleeping, Ordering::SeqCst);
    }

    fn total(&self) -> FileReads {
        lock(&self.shared.reads)
            .values()
            .fold(FileReads::default(), |all, f| all.plus(f))
    }

    fn by_file(&self) -> BTreeMap<PathBuf, FileReads> {
        let files = lock(&self.shared.reads);
        let inodes = lock(&self.shared.inodes);
        files
            .iter()
            .map(|(&ino, &reads)| (inodes.relative(ino).to_path_buf(), reads))
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop();
        if let Some(replier) = self.replier.take() {
            let _ = replier.join();
        }
        if let Some(session) = self.session.take() {
            let _ = session.umount_and_join();
        }
    }
}

/// Raises the kernel's read-ahead on the file system mounted at `mount_point` to
/// [`MAX_REQUEST`] (FUSE starts at 128 KiB), as NFS reads ahead in `rsize` windows of
/// 1 MiB; returns what it is then. Best effort: where the setting cannot be written, the
/// kernel's stays.
fn widen_read_ahead(mount_point: &Path) -> Option<u64> {
    let dev = std::fs::metadata(mount_point).ok()?.dev();
    let setting = format!(
        "/sys/class/bdi/{}:{}/read_ahead_kb",
        rustix::fs::major(dev),
        rustix::fs::minor(dev)
    );
    let _ = std::fs::write(&setting, (MAX_REQUEST / 1024).to_string());
    std::fs::read_to_string(&setting).ok()?.trim().parse().ok()
}

/// What the file system and its owner share.
struct Shared {
    source: PathBuf,
    cost: Mutex<AffineCost>,
    sleeping: AtomicBool,
    inodes: Mutex<Inodes>,
    open: Mutex<HashMap<u64, (u64, Arc<File>)>>,
    next_handle: AtomicU64,
    reads: Mutex<BTreeMap<u64, FileReads>>,
    due: Mutex<Due>,
    due_changed: Condvar,
}

impl Shared {
    fn new(source: PathBuf, cost: AffineCost) -> Shared {
        Shared {
            source,
            cost: Mutex::new(cost),
            sleeping: AtomicBool::new(true),
            inodes: Mutex::new(Inodes::default()),
            open: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            reads: Mutex::new(BTreeMap::new()),
            due: Mutex::new(Due::default()),
            due_changed: Condvar::new(),
        }
    }

    fn stop(&self) {
        lock(&self.due).stopped = true;
        self.due_changed.notify_all();
    }

    /// Answers each delayed read once its time has come (at once after [`stop`]).
    ///
    /// A thread that sleeps until an instant wakes after it: the kernel's timer slack
    /// (50 µs by default), then the wait for a core. Left alone, that lateness would add
    /// about a hundred microseconds to every read on a busy 2-core machine, 40% more than
    /// the `ssd` profile's 250 µs. So this thread asks for the least slack, and wakes
    /// early by the lateness it has seen (a running mean of its last wake-ups, at most
    /// [`MAX_EARLY`]), so that replies leave on time on average.
    fn answer_when_due(&self) {
        // Best effort: without it, replies are only later.
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        let mut early = Duration::ZERO;
        let mut due = lock(&self.due);
        loop {
            let now = Instant::now();
            let next = due.replies.peek().map(|r| r.at);
            match next {
                Some(at) if at <= now + early || due.stopped => {
                    if let Some(r) = due.replies.pop() {
                        drop(due);
                        r.reply.data(&r.data);
                        due = lock(&self.due);
                    }
                }
                Some(at) => {
                    let wake = at - early;
                    let (guard, waited) = self
                        .due_changed
                        .wait_timeout(due, wake.saturating_duration_since(now))
                        .unwrap_or_else(|p| p.into_inner());
                    due = guard;
                    if waited.timed_out() {
                        let late = Instant::now().saturating_duration_since(wake);
                        early = ((early * 7 + late) / 8).min(MAX_EARLY);
                    }
                }
                None if due.stopped => return,
                None => {
                    due = self
                        .due_changed
                        .wait(due)
                        .unwrap_or_else(|p| p.into_inner());
                }
            }
        }
    }
}

/// The most the replying thread wakes before a reply's time, to make up for how late it
/// wakes.
const MAX_EARLY: Duration = Duration::from_micros(500);

/// When a read that arrived at `arrived` is answered: the bytes cross one link, so its
/// transfer starts after its latency and once the link is free of the reads before it.
fn answer_at(
    arrived: Instant,
    (latency, transfer): (Duration, Duration),
    link_free: Option<Instant>,
) -> Instant {
    (arrived + latency).max(link_free.unwrap_or(arrived)) + transfer
}

/// Reads waiting for their time.
#[derive(Default)]
struct Due {
    replies: BinaryHeap<Delayed>,
    next_seq: u64,
    /// When the link is free of the transfers of the reads answered so far.
    link_free: Option<Instant>,
    stopped: bool,
}

/// A read done, to be answered at `at`.
struct Delayed {
    at: Instant,
    seq: u64,
    reply: ReplyData,
    data: Vec<u8>,
}

impl PartialEq for Delayed {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Delayed {}

impl PartialOrd for Delayed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Delayed {
    /// Earliest first out of the (max-)heap.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Inode numbers for the paths under the source directory, given as they are looked up
/// (the root is 1).
#[derive(Default)]
struct Inodes {
    /// Path (relative to the source) of inode `i + 1`; the root's is empty.
    paths: Vec<PathBuf>,
    numbers: HashMap<PathBuf, u64>,
}

impl Inodes {
    fn relative(&self, ino: u64) -> &Path {
        ino.checked_sub(2)
            .and_then(|i| self.paths.get(i as usize))
            .map_or(Path::new(""), |p| p.as_path())
    }

    fn number(&mut self, relative: &Path) -> u64 {
        if relative.as_os_str().is_empty() {
            return INodeNo::ROOT.0;
        }
        if let Some(&n) = self.numbers.get(relative) {
            return n;
        }
        self.paths.push(relative.to_path_buf());
        let n = self.paths.len() as u64 + 1;
        self.numbers.insert(relative.to_path_buf(), n);
        n
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The file system the kernel talks to.
struct ProfiledFs {
    shared: Arc<Shared>,
}

impl ProfiledFs {
    fn relative(&self, ino: INodeNo) -> PathBuf {
        lock(&self.shared.inodes).relative(ino.0).to_path_buf()
    }

    fn attr(&self, relative: &Path) -> Result<FileAttr, Errno> {
        let meta = std::fs::symlink_metadata(self.shared.source.join(relative))?;
        let ino = lock(&self.shared.inodes).number(relative);
        let kind = kind_of(meta.file_type());
        let time = |secs: i64, nanos: i64| {
            SystemTime::UNIX_EPOCH
                + Duration::new(secs.max(0) as u64, nanos.clamp(0, 999_999_999) as u32)
        };
        Ok(FileAttr {
            ino: INodeNo(ino),
            size: meta.size(),
            blocks: meta.blocks(),
            atime: time(meta.atime(), meta.atime_nsec()),
            mtime: time(meta.mtime(), meta.mtime_nsec()),
            ctime: time(meta.ctime(), meta.ctime_nsec()),
            crtime: time(meta.mtime(), meta.mtime_nsec()),
            kind,
            perm: (meta.mode() & 0o7777) as u16,
            nlink: meta.nlink() as u32,
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }
}

fn kind_of(t: std::fs::FileType) -> FileType {
    if t.is_dir() {
        FileType::Directory
    } else if t.is_symlink() {
        FileType::Symlink
    } else {
        FileType::RegularFile
    }
}

impl fuser::Filesystem for ProfiledFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // The kernel's read-ahead as large as it allows, up to a request of 1 MiB. (Off,
        // a buffered read of a few MiB would arrive one 4 KiB page at a time.)
        if let Err(most) = config.set_max_readahead(MAX_REQUEST) {
            let _ = config.set_max_readahead(most);
        }
        let _ = config.set_max_write(MAX_REQUEST);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let relative = self.relative(parent).join(name);
        match self.attr(&relative) {
            Ok(attr) => reply.entry(&ATTR_TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(&self.relative(ino)) {
            Ok(attr) => reply.attr(&ATTR_TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match std::fs::read_link(self.shared.source.join(self.relative(ino))) {
            Ok(target) => reply.data(target.as_os_str().as_encoded_bytes()),
            Err(e) => reply.error(e.into()),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        match File::open(self.shared.source.join(self.relative(ino))) {
            Ok(file) => {
                let fh = self.shared.next_handle.fetch_add(1, Ordering::SeqCst);
                lock(&self.shared.open).insert(fh, (ino.0, Arc::new(file)));
                reply.opened(FileHandle(fh), FopenFlags::empty());
            }
            Err(e) => reply.error(e.into()),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let arrived = Instant::now();
        let Some((ino, file)) = lock(&self.shared.open).get(&fh.0).cloned() else {
            return reply.error(Errno::EBADF);
        };
        let mut data = vec![0u8; size as usize];
        let mut got = 0;
        while got < data.len() {
            match file.read_at(&mut data[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return reply.error(e.into()),
            }
        }
        data.truncate(got);
        let cost = *lock(&self.shared.cost);
        let seconds = |us: f64| Duration::from_secs_f64(us.max(0.0) / 1e6);
        let latency = seconds(cost.latency_us);
        let transfer = seconds(got as f64 / cost.bandwidth_mb_s);
        let charged = latency + transfer;
        lock(&self.shared.reads).entry(ino).or_default().add(
            offset,
            size,
            got,
            charged.as_nanos() as u64,
        );
        if !self.shared.sleeping.load(Ordering::SeqCst) {
            return reply.data(&data);
        }
        let mut due = lock(&self.shared.due);
        let seq = due.next_seq;
        due.next_seq += 1;
        let at = answer_at(arrived, (latency, transfer), due.link_free);
        due.link_free = Some(at);
        due.replies.push(Delayed {
            at,
            seq,
            reply,
            data,
        });
        drop(due);
        self.shared.due_changed.notify_all();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: fuser::ReplyEmpty,
    ) {
        lock(&self.shared.open).remove(&fh.0);
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let relative = self.relative(ino);
        let entries = match std::fs::read_dir(self.shared.source.join(&relative)) {
            Ok(entries) => entries,
            Err(e) => return reply.error(e.into()),
        };
        let mut listed: Vec<(u64, FileType, std::ffi::OsString)> = vec![
            (ino.0, FileType::Directory, ".".into()),
            (ino.0, FileType::Directory, "..".into()),
        ];
        {
            let mut inodes = lock(&self.shared.inodes);
            for entry in entries.flatten() {
                let Ok(t) = entry.file_type() else { continue };
                let name = entry.file_name();
                let n = inodes.number(&relative.join(&name));
                listed.push((n, kind_of(t), name));
            }
        }
        for (i, (n, kind, name)) in listed.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(n), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        reply.statfs(0, 0, 0, 0, 0, 4096, 255, 4096);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_counts_cross_the_pipe_unchanged() {
        for path in [
            "a/b.kv",
            "odd\\name\nwith lines",
            "trailing\\",
            " spaced name ",
        ] {
            assert_eq!(unescape_line(&escape_line(Path::new(path))), path);
            assert!(!escape_line(Path::new(path)).contains('\n'));
        }
        let r = FileReads {
            reads: 1,
            bytes: 2,
            empty: 3,
            blocks: 4,
            charged_ns: u64::MAX,
        };
        let line = format!("{} {}", reads_line(&r), escape_line(Path::new("x y")));
        let (back, rest) = parse_reads(&line).unwrap();
        assert_eq!((back, unescape_line(rest).as_str()), (r, "x y"));
        assert!(parse_reads("1 2 3").is_err());
        assert!(parse_reads("1 2 3 4 x").is_err());
    }

    #[test]
    fn reads_wait_their_latencies_together_and_cross_the_link_one_after_another() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let first = answer_at(t0, (ms(50), ms(10)), None);
        assert_eq!(first, t0 + ms(60));
        // Arrived together: the same latency, then the link after the first's transfer.
        let second = answer_at(t0, (ms(50), ms(10)), Some(first));
        assert_eq!(second, t0 + ms(70));
        // Arrived once the link is idle: latency + transfer, as alone.
        let later = answer_at(t0 + ms(100), (ms(50), ms(10)), Some(second));
        assert_eq!(later, t0 + ms(160));
        // A read of no bytes costs its latency.
        assert_eq!(answer_at(t0, (ms(50), ms(0)), None), t0 + ms(50));
    }
}
