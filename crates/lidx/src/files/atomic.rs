//! Publish-or-nothing output files.
//!
//! An [`AtomicFile`] writes to a temporary file in the destination's directory. Only
//! [`AtomicFile::finish`] makes it visible: it flushes, fsyncs the file, gives it its name
//! with a rename over the destination and fsyncs the directory. A reader therefore never
//! sees a partly written output. Dropping an unfinished `AtomicFile` (an error, a panic)
//! removes the temporary file, so a failed command never leaves partial output.
//!
//! What a process that dies mid-write leaves behind depends on the file system:
//!
//! - **Unnamed temporary files** (Linux, on file systems with `O_TMPFILE`: ext4, XFS, Btrfs,
//!   tmpfs and others). The output is written to a file that has no name, so nothing of it
//!   is left when the process is killed, even by SIGKILL or a crash. `finish` links the
//!   complete file to a hidden name and renames that over the destination (`linkat` cannot
//!   replace a file); only a kill in the moment between those two calls leaves a name
//!   behind, and the next `AtomicFile` in that directory removes it (below).
//! - **Named temporary files** elsewhere (file systems without `O_TMPFILE`, such as NFS and
//!   FAT, or where `/proc` is not mounted). The output is written to a hidden file beside
//!   the destination. SIGINT and SIGTERM remove it through [`remove_pending_files`], which
//!   the `lidx` program calls from its signal handler; SIGKILL cannot be caught, so the
//!   file stays until the next `AtomicFile` in that directory removes it.
//!
//! Every named temporary file is called `.lidx-tmp-<pid>-<host>-<random>`: the id of the
//! process that made it, 8 hex digits that stand for the machine's boot and the process's
//! pid namespace (so a pid is only ever judged where it means the same process), and random
//! letters and digits. The first `AtomicFile`, [`scratch_path`] or [`scratch_dir`] a process
//! creates in a directory removes the temporary files there whose `<host>` is its own and
//! whose process is gone, and the scratch directories named so, with all that is inside
//! them. It touches nothing else: not an entry whose owner is alive or cannot be told
//! (another machine sharing the directory, another pid namespace, a pid since reused, no
//! `/proc`), nor a symbolic link, nor anything not named exactly so; and it never follows a
//! symbolic link inside a directory it removes.
//!
//! # Scratch, and what else a signal ends
//!
//! - [`scratch_path`] names a scratch file, [`scratch_dir`] makes a scratch directory (a
//!   grace join's partitions, an experiment's tables): named as temporary files, so that
//!   they go on drop, on SIGINT/SIGTERM ([`remove_pending_files`]) and after a SIGKILL (the
//!   sweep above). [`ScratchDir::persist`] instead renames a finished directory (a
//!   database built whole) into place, never over anything.
//! - [`AtomicFile::create`] refuses, before any work, an output path that exists and is not
//!   a regular file (a symbolic link, a named pipe, a device node, a directory): the rename
//!   would replace it, and lidx replaces nothing it did not make.
//! - A program that runs child processes registers each ([`ChildGuard`]) and sets its
//!   parent-death signal ([`end_with_this_process`]); its handler calls [`stop_children`]
//!   before [`remove_pending_files`], so no child outlives it, whether it ends by SIGINT,
//!   SIGTERM or SIGKILL.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use tempfile::TempPath;

use crate::{Error, Result};

/// Size of the write buffer in front of the temporary file.
const WRITE_BUFFER: usize = 1 << 20;

/// How the name of every named temporary file of lidx starts.
const TEMP_PREFIX: &str = ".lidx-tmp-";

/// Random letters and digits at the end of a temporary file's name.
const TEMP_RANDOM: usize = 8;

/// Temporary files and scratch directories of this process, for [`remove_pending_files`].
static PENDING: Mutex<Vec<(PathBuf, Kind)>> = Mutex::new(Vec::new());

/// What a path in [`PENDING`] names, so that a file is never removed as a directory tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A file (removed alone).
    File,
    /// A scratch directory lidx made (removed with everything in it).
    Dir,
    /// A directory lidx made to hold others (removed only if empty).
    EmptyDir,
    /// A file system this process mounted (detached, so that the directory it covers can
    /// be removed).
    Mount,
}

/// Directories this process has already removed stale temporary files from.
static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Removes the temporary files of every unfinished output in this process, and every
/// [`ScratchDir`] it holds with all that is inside. Destructors do not run when a process
/// is killed by a signal, so a command-line program calls this from its SIGINT/SIGTERM
/// handler before exiting; nothing partial is then left behind. (An output written to an
/// unnamed temporary file has nothing to remove: it vanishes with the process.)
///
/// A scratch directory is removed without following symbolic links: a link inside it is
/// removed, never what it points to. Best effort: what cannot be removed is left for the
/// sweep of a later run.
pub fn remove_pending_files() {
    remove_pending(|_| true);
}

/// [`remove_pending_files`] of the registered paths `which` selects (all, but for tests
/// that must not remove the files of the tests running beside them).
fn remove_pending(which: impl Fn(&Path) -> bool) {
    let pending = PENDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // Newest first: what was made inside a directory goes before it.
    for (path, kind) in pending.iter().rev().filter(|(path, _)| which(path)) {
        match kind {
            Kind::File => {
                let _ = std::fs::remove_file(path);
            }
            Kind::Dir => remove_tree(path),
            Kind::EmptyDir => {
                let _ = std::fs::remove_dir(path);
            }
            Kind::Mount => detach(path),
        }
    }
}

/// Removes the directory `path` and everything in it, never following a symbolic link
/// (`std::fs::remove_dir_all` removes a link, not its target, and does not follow one at
/// `path` itself). Tries a few times: another thread of this process may still be adding
/// files while a signal handler removes the tree. Best effort.
fn remove_tree(path: &Path) {
    // A mount inside (a profiled file system a killed run left) is detached first, never
    // descended into: what it shows is not part of the tree.
    for mount in mounts_under(path) {
        detach(&mount);
    }
    for _ in 0..5 {
        match std::fs::remove_dir_all(path) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => {}
        }
    }
}

/// Child processes running now, for [`stop_children`]: their pids.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Registers a running child process for [`stop_children`] for as long as the guard lives
/// (drop it once the child has been waited for). A program that runs other programs (the
/// experiments run `lidx` once per measurement) makes one right after spawning each, so
/// that its SIGINT/SIGTERM handler can end them: `kill`, `timeout` and most supervisors
/// signal only the parent, and an orphaned child would run on and keep its files.
#[derive(Debug)]
pub struct ChildGuard(u32);

impl ChildGuard {
    /// Registers the child process `pid` (as [`std::process::Child::id`] gives it).
    pub fn new(pid: u32) -> Self {
        CHILDREN
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(pid);
        ChildGuard(pid)
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let mut children = CHILDREN
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(i) = children.iter().position(|&p| p == self.0) {
            children.swap_remove(i);
        }
    }
}

/// Sends SIGTERM to every registered child process ([`ChildGuard`]), and to any other
/// child this process has, and waits up to
/// `grace` for them to end (their own handlers remove their unfinished files); one that is
/// still running then gets SIGKILL (what it leaves is swept by a later run). A signal
/// handler calls this before [`remove_pending_files`], so that no child is still writing
/// into a directory being removed. Only processes that are still children of this one are
/// signalled: a pid the system has since given to another process is left alone.
pub fn stop_children(grace: std::time::Duration) {
    let mut children: Vec<u32> = CHILDREN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    // A child spawned but not registered yet (its guard is made once `spawn` returns, and
    // a child stopped before its exec never lets `spawn` return) is found by its parent.
    let unregistered: Vec<u32> = running_children()
        .filter(|pid| !children.contains(pid))
        .collect();
    children.extend(unregistered);
    let signal = |pid: u32, signal: rustix::process::Signal| {
        if let Some(pid) = rustix::process::Pid::from_raw(pid as i32)
            && is_running_child(pid.as_raw_pid() as u32)
        {
            let _ = rustix::process::kill_process(pid, signal);
        }
    };
    for &pid in &children {
        signal(pid, rustix::process::Signal::TERM);
    }
    let began = std::time::Instant::now();
    while children.iter().any(|&pid| is_running_child(pid)) && began.elapsed() < grace {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for &pid in &children {
        signal(pid, rustix::process::Signal::KILL);
    }
}

/// The processes running now whose parent is this process.
fn running_children() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| is_running_child(pid))
}

/// Whether `pid` is a child of this process that has not ended (a zombie, ended but not
/// yet waited for, has).
fn is_running_child(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (command) state ppid ...": the command may hold spaces and parentheses.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next().unwrap_or("Z");
    let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
    !matches!(state, "Z" | "X" | "x") && ppid == Some(std::process::id())
}

/// Makes the child that `cmd` spawns receive SIGTERM when this process ends, however it
/// ends (SIGKILL included), so that it never runs on as an orphan; its own SIGTERM handler
/// then removes its unfinished files. Linux's parent-death signal, set between fork and
/// exec; if this process is already gone by then, the spawn fails. Elsewhere it does
/// nothing.
///
/// The signal comes when the *thread* that spawned the child ends: spawn from a thread
/// that outlives the child (one that waits for it, as `Command::output` does).
#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "Command::pre_exec runs code in the child between fork and exec"
)]
pub fn end_with_this_process(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe work is allowed. It makes two system calls (prctl and getppid)
    // through rustix, which wraps them without allocating, locking or touching memory
    // shared with other threads; its error is built from a raw errno, which allocates
    // nothing either.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
            // The parent ended before the signal was set: nothing would send it.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::from_raw_os_error(
                    rustix::io::Errno::SRCH.raw_os_error(),
                ));
            }
            Ok(())
        });
    }
}

/// [`end_with_this_process`] where there is no parent-death signal: nothing.
#[cfg(not(target_os = "linux"))]
pub fn end_with_this_process(_cmd: &mut std::process::Command) {}

/// A named scratch file in `dir`, for data a command reads back by path and removes when
/// done (an index built for one join, a sorted copy): named as this process's unfinished
/// outputs are, so that while the guard lives SIGINT and SIGTERM remove it, and after a
/// SIGKILL the next lidx that writes into `dir` does. Removed when the path drops. An
/// [`AtomicFile`] or table written there is published without fsync: nothing needs it
/// after a crash.
pub fn scratch_path(dir: &Path) -> Result<(TempPath, PendingGuard)> {
    sweep_once(dir);
    let path = tempfile::Builder::new()
        .prefix(&temp_prefix())
        .rand_bytes(TEMP_RANDOM)
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, "create a scratch file in", e))?
        .into_temp_path();
    let guard = PendingGuard::new(&path);
    Ok((path, guard))
}

/// A scratch directory: made in `parent` with the name of a temporary file of this process
/// (`.lidx-tmp-<pid>-<host>-<random>`), so that everything a command puts in it goes at
/// once, whichever way the command ends:
///
/// - dropped: removed with all that is inside;
/// - SIGINT or SIGTERM: removed by [`remove_pending_files`] (the `lidx` program's handler);
/// - SIGKILL or a crash: removed by the first lidx of a later run (same machine and pid
///   namespace) that writes into `parent`, once this process is gone.
///
/// Nothing is ever removed but this directory and what is inside it; a symbolic link in it
/// is removed, not followed. [`ScratchDir::persist`] instead gives it a name of its own, for
/// a directory that is built whole before it appears (a database).
pub fn scratch_dir(parent: &Path) -> Result<ScratchDir> {
    sweep_once(parent);
    let mut tries = 0;
    loop {
        let path = parent.join(temp_name());
        // Registered first: SIGINT or SIGTERM right after the mkdir removes it.
        let pending = PendingGuard::with_kind(&path, Kind::Dir);
        match std::fs::create_dir(&path) {
            Ok(()) => {
                return Ok(ScratchDir {
                    path,
                    pending: Some(pending),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 100 => {
                tries += 1;
            }
            Err(e) => {
                return Err(Error::io(parent, "create a scratch directory in", e));
            }
        }
    }
}

/// A directory made by [`scratch_dir`]: removed with its contents when dropped, on SIGINT
/// or SIGTERM, or by a later run after a SIGKILL, unless [`persist`](Self::persist)ed.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    /// Registered for [`remove_pending_files`]; `None` once persisted.
    pending: Option<PendingGuard>,
}

impl ScratchDir {
    /// Where the directory is (`PARENT/.lidx-tmp-…`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the directory `dest`, durably: fsyncs every file and directory in it (symbolic
    /// links are not followed), renames it to `dest` and fsyncs the directories that the
    /// rename changed. `dest` must be on the same file system as the scratch directory (in
    /// practice: in the same parent directory, or below it).
    ///
    /// Refuses when anything at all exists at `dest` (a file, a directory, even empty, a
    /// symbolic link): the rename is `RENAME_NOREPLACE`, so that even a concurrent creator
    /// of `dest` is never replaced. Only on file systems without `RENAME_NOREPLACE` does it
    /// check first and then rename, where a directory made empty at `dest` in between would
    /// be replaced. On any error the scratch directory is removed, as on drop.
    pub fn persist(mut self, dest: &Path) -> Result<()> {
        sync_tree(&self.path)?;
        {
            // A signal handler removes the pending trees holding this lock: renamed and
            // struck off under it, the directory is either removed whole before the rename
            // (which then fails) or published whole, never emptied after it appears.
            let mut pending = PENDING
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            rename_noreplace(&self.path, dest)?;
            if let Some(i) = pending.iter().position(|(p, _)| *p == self.path) {
                pending.swap_remove(i);
            }
        }
        // Renamed: nothing is left to remove, at the old name or by a signal.
        self.pending = None;
        let dest_parent = super::parent_dir(dest);
        sync_dir(dest_parent)?;
        let old_parent = super::parent_dir(&self.path);
        if same_dir(old_parent, dest_parent) != Some(true) {
            sync_dir(old_parent)?;
        }
        Ok(())
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if self.pending.is_some() {
            remove_tree(&self.path);
        }
    }
}

/// Whether two directories are the same one (`None` where either cannot be read).
fn same_dir(a: &Path, b: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (std::fs::metadata(a).ok()?, std::fs::metadata(b).ok()?);
    Some((a.dev(), a.ino()) == (b.dev(), b.ino()))
}

/// Fsyncs every regular file and directory under `dir`, and `dir` itself, without
/// following symbolic links.
fn sync_tree(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "read the directory", e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, "read the directory", e))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| Error::io(&path, "read the metadata of", e))?;
        if kind.is_dir() {
            sync_tree(&path)?;
        } else if kind.is_file() {
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| Error::io(&path, "fsync", e))?;
        }
    }
    sync_dir(dir)
}

/// Renames `from` to `to`, failing if anything exists at `to`: `renameat2` with
/// `RENAME_NOREPLACE`, or, where the file system does not support that, a check and a
/// plain rename.
fn rename_noreplace(from: &Path, to: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::RenameFlags;
        use rustix::io::Errno;
        match rustix::fs::renameat_with(
            rustix::fs::CWD,
            from,
            rustix::fs::CWD,
            to,
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => return Ok(()),
            Err(Errno::EXIST) => return Err(already_exists(to)),
            // No RENAME_NOREPLACE on this file system (or kernel): check, then rename.
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
            Err(e) => return Err(Error::io(to, RENAME_DIR, e.into())),
        }
    }
    rename_checked(from, to)
}

/// The fallback of [`rename_noreplace`]: refuses when anything exists at `to`, else renames.
fn rename_checked(from: &Path, to: &Path) -> Result<()> {
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(already_exists(to));
    }
    std::fs::rename(from, to).map_err(|e| Error::io(to, RENAME_DIR, e))
}

/// What [`ScratchDir::persist`] was doing, in its errors.
const RENAME_DIR: &str = "move the finished directory into place";

/// The refusal to rename a directory over `to`.
fn already_exists(to: &Path) -> Error {
    Error::io(
        to,
        RENAME_DIR,
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "something already exists there, and lidx replaces nothing it did not make: \
             remove it or choose another path",
        ),
    )
}

/// Whether `path` is named as a [`scratch_path`] is: such a file is removed after a crash
/// anyway, so finishing it needs no fsync. (A file inside a [`scratch_dir`] is fsynced as
/// any other: the children of an experiment time their outputs' fsync there.)
fn is_scratch(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.as_bytes().starts_with(TEMP_PREFIX.as_bytes()))
}

/// Registers a path for [`remove_pending_files`] for as long as the guard lives: the
/// temporary file of an [`AtomicFile`], or a scratch file a program removes when done.
#[derive(Debug)]
pub struct PendingGuard(PathBuf);

impl PendingGuard {
    /// Registers the file `path` until the guard is dropped (only that file is ever
    /// removed: a directory at `path` is left alone).
    pub fn new(path: &Path) -> Self {
        Self::with_kind(path, Kind::File)
    }

    /// Registers the directory `path`, which this process made to hold others, until the
    /// guard is dropped: SIGINT and SIGTERM remove it if it is empty then (after what was
    /// registered later, such as a scratch directory inside it), and leave it otherwise.
    pub fn empty_dir(path: &Path) -> Self {
        Self::with_kind(path, Kind::EmptyDir)
    }

    /// Registers the mount point `path` of a file system this process mounted, until the
    /// guard is dropped: SIGINT and SIGTERM detach it (`umount -l`) before removing the
    /// scratch directories registered earlier, which may hold it.
    pub fn mount(path: &Path) -> Self {
        Self::with_kind(path, Kind::Mount)
    }

    /// Registers `path`, a file or a scratch directory, until the guard is dropped.
    fn with_kind(path: &Path, kind: Kind) -> Self {
        let mut pending = PENDING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.push((path.to_path_buf(), kind));
        PendingGuard(path.to_path_buf())
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        let mut pending = PENDING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(i) = pending.iter().position(|(p, _)| *p == self.0) {
            pending.swap_remove(i);
        }
    }
}

/// A file that appears at its path only when [`finish`](Self::finish) succeeds.
///
/// It is written to an unnamed temporary file where the file system allows (nothing is
/// left if the process is killed), else to a named one beside the destination (SIGKILL
/// leaves it, and the next `AtomicFile` in the directory removes it); see the
/// [module documentation](self).
pub struct AtomicFile {
    path: PathBuf,
    writer: BufWriter<File>,
    temp: Temp,
}

/// Where an [`AtomicFile`] is written until it is finished.
enum Temp {
    /// An `O_TMPFILE` file: it has no name until `finish` links it.
    Unnamed,
    /// A hidden file beside the destination, removed when dropped or on SIGINT/SIGTERM.
    Named {
        path: TempPath,
        _pending: PendingGuard,
    },
}

impl AtomicFile {
    /// Starts writing `path`: creates a temporary file in its directory (unnamed where the
    /// file system supports it, else hidden), after removing stale temporary files of dead
    /// lidx processes there.
    pub fn create(path: &Path) -> Result<Self> {
        Self::with_buffer(path, WRITE_BUFFER)
    }

    /// [`create`](Self::create) with a write buffer of `buffer` bytes (many files open at
    /// once, as a partitioning join keeps, need small ones).
    pub fn with_buffer(path: &Path, buffer: usize) -> Result<Self> {
        Self::open(path, buffer, true)
    }

    /// [`with_buffer`](Self::with_buffer); `unnamed: false` forces a named temporary file
    /// (for tests of the fallback).
    fn open(path: &Path, buffer: usize, unnamed: bool) -> Result<Self> {
        let dir = super::parent_dir(path);
        refuse_non_regular_output(path)?;
        sweep_once(dir);
        let create_error = |e| Error::io(path, "create a temporary file beside the output", e);
        if unnamed && let Some(file) = open_unnamed(dir).map_err(create_error)? {
            return Ok(Self {
                path: path.to_path_buf(),
                writer: BufWriter::with_capacity(buffer, file),
                temp: Temp::Unnamed,
            });
        }
        let tmp = tempfile::Builder::new()
            .prefix(&temp_prefix())
            .rand_bytes(TEMP_RANDOM)
            // Ordinary file permissions (0666 less the umask), not the 0600 of a temp file.
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(create_error)?;
        let (file, temp_path) = tmp.into_parts();
        Ok(Self {
            path: path.to_path_buf(),
            temp: Temp::Named {
                _pending: PendingGuard::new(&temp_path),
                path: temp_path,
            },
            writer: BufWriter::with_capacity(buffer, file),
        })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.writer
            .write_all(bytes)
            .map_err(|e| Error::io(&self.path, "write", e))
    }

    /// Overwrites `bytes` at `offset` (used to fill in a header once the data is known),
    /// then returns to the end of the file.
    pub fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let path = self.path.clone();
        let io = |e| Error::io(&path, "write", e);
        self.writer.flush().map_err(io)?;
        let file = self.writer.get_mut();
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        file.write_all(bytes).map_err(io)?;
        file.seek(SeekFrom::End(0)).map_err(io)?;
        Ok(())
    }

    /// Writes `bytes` at `offset` with one positioned write, leaving the end of the file
    /// where appends go as it is (for files filled out of order, such as a partitioning's
    /// pages). Flushes pending appends first.
    pub fn write_all_at(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let io = |e| Error::io(&self.path, "write", e);
        if !self.writer.buffer().is_empty() {
            self.writer.flush().map_err(io)?;
        }
        self.writer
            .get_ref()
            .write_all_at(bytes, offset)
            .map_err(io)
    }

    /// Reads `buf.len()` bytes at `offset` of what was written so far (for files that
    /// are read back while being built, such as a B+tree's leaves). Flushes pending
    /// appends first.
    pub fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let io = |e| Error::io(&self.path, "read back", e);
        if !self.writer.buffer().is_empty() {
            self.writer.flush().map_err(io)?;
        }
        self.writer.get_ref().read_exact_at(buf, offset).map_err(io)
    }

    /// Flushes, fsyncs, renames into place (an unnamed file is first linked to a hidden
    /// name) and fsyncs the directory; a scratch file ([`scratch_path`]) is not fsynced.
    pub fn finish(self) -> Result<()> {
        let AtomicFile { path, writer, temp } = self;
        let file = writer
            .into_inner()
            .map_err(|e| Error::io(&path, "write", e.into_error()))?;
        let durable = !is_scratch(&path);
        if durable {
            file.sync_all().map_err(|e| Error::io(&path, "fsync", e))?;
        }
        match temp {
            Temp::Unnamed => link_into_place(&file, &path)?,
            Temp::Named {
                path: tmp,
                _pending,
            } => tmp
                .persist(&path)
                .map_err(|e| Error::io(&path, "rename the temporary file into place", e.error))?,
        }
        if durable {
            sync_parent_dir(&path)?;
        }
        Ok(())
    }
}

/// Fails unless `path` is absent or a regular file: the rename of [`AtomicFile::finish`]
/// would replace whatever is there, so a directory, a symbolic link (even to a regular
/// file: the link would go, its target stay), a named pipe, a socket or a device node (as
/// root, `--out /dev/null` would replace the system's `/dev/null`) is refused, before any
/// work, with what it is and what to do.
fn refuse_non_regular_output(path: &Path) -> Result<()> {
    use std::io::ErrorKind;
    use std::os::unix::fs::FileTypeExt;
    const ONLY_FILES: &str =
        "lidx writes an output only to a regular file, which it replaces whole";
    let kind = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta.file_type(),
        // Absent (or not to be looked at): creating the temporary file will tell.
        Err(_) => return Ok(()),
    };
    let (error_kind, problem) = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        (ErrorKind::IsADirectory, "it is a directory".to_string())
    } else if kind.is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        if is_stream(&target) {
            (
                ErrorKind::InvalidInput,
                format!(
                    "it is a symbolic link to {}, a stream; {ONLY_FILES}: name a file \
                     (a command that can print its result has an option for that, such as \
                     --json, or --count-only to count a join's output)",
                    target.display()
                ),
            )
        } else {
            (
                ErrorKind::InvalidInput,
                format!(
                    "it is a symbolic link; lidx replaces only regular files: remove it or \
                     name its target ({})",
                    target.display()
                ),
            )
        }
    } else {
        let what = if kind.is_fifo() {
            "a named pipe (FIFO)"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device node"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        (
            ErrorKind::InvalidInput,
            format!("it is {what}; {ONLY_FILES}: remove it or name a file"),
        )
    };
    Err(Error::io(
        path,
        "write the output",
        std::io::Error::new(error_kind, problem),
    ))
}

/// Whether a symbolic link's `target` names a process's standard stream or open file
/// (`/dev/stdout`, `/proc/self/fd/1`, `/dev/fd/1`), rather than a file.
fn is_stream(target: &Path) -> bool {
    let text = target.to_string_lossy();
    text.starts_with("/dev/std")
        || text.starts_with("/dev/fd/")
        || text.starts_with("/proc/self/fd/")
        || (text.starts_with("/proc/") && text.contains("/fd/"))
}

/// Opens an unnamed (`O_TMPFILE`) file in `dir`, or `None` where that is not to be had:
/// the file system does not support it, or there is no `/proc/self/fd` to link it through
/// at the end.
#[cfg(target_os = "linux")]
fn open_unnamed(dir: &Path) -> std::io::Result<Option<File>> {
    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    static PROC_FD: OnceLock<bool> = OnceLock::new();
    if !*PROC_FD.get_or_init(|| Path::new("/proc/self/fd").is_dir()) {
        return Ok(None);
    }
    match rustix::fs::openat(
        rustix::fs::CWD,
        dir,
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        // 0666 less the umask, as for any new file.
        Mode::from_bits_truncate(0o666),
    ) {
        Ok(fd) => Ok(Some(File::from(fd))),
        // No O_TMPFILE on this file system; EISDIR from kernels older than it (they read
        // the flag as O_DIRECTORY).
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_unnamed(_dir: &Path) -> std::io::Result<Option<File>> {
    Ok(None)
}

/// Gives the finished unnamed `file` the name `path`, replacing any file there: links it
/// to a fresh hidden name in the same directory (`linkat` through `/proc/self/fd`, which
/// needs no privilege, unlike `AT_EMPTY_PATH`), then renames that over `path`.
#[cfg(target_os = "linux")]
fn link_into_place(file: &File, path: &Path) -> Result<()> {
    use rustix::fs::AtFlags;
    use rustix::io::Errno;
    use std::os::fd::AsRawFd;
    let dir = super::parent_dir(path);
    let source = format!("/proc/self/fd/{}", file.as_raw_fd());
    let mut tries = 0;
    let (link, _pending) = loop {
        let link = dir.join(temp_name());
        // Registered first: SIGINT or SIGTERM after the link removes it.
        let pending = PendingGuard::new(&link);
        match rustix::fs::linkat(
            rustix::fs::CWD,
            source.as_str(),
            rustix::fs::CWD,
            &link,
            AtFlags::SYMLINK_FOLLOW,
        ) {
            Ok(()) => break (link, pending),
            Err(Errno::EXIST) if tries < 100 => tries += 1,
            Err(e) => {
                return Err(Error::io(
                    path,
                    "link the finished file into the output's directory",
                    e.into(),
                ));
            }
        }
    };
    std::fs::rename(&link, path).map_err(|e| {
        let _ = std::fs::remove_file(&link);
        Error::io(path, "rename the temporary file into place", e)
    })
}

#[cfg(not(target_os = "linux"))]
fn link_into_place(_file: &File, path: &Path) -> Result<()> {
    Err(Error::io(
        path,
        "link the finished file into the output's directory",
        std::io::Error::from(std::io::ErrorKind::Unsupported),
    ))
}

/// Fsyncs the directory holding `path`, so a rename into it is durable.
fn sync_parent_dir(path: &Path) -> Result<()> {
    sync_dir(super::parent_dir(path))
}

/// Fsyncs the directory `dir` (its entries: names made, renamed or removed in it).
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, "fsync the directory", e))
}

/// 8 hex digits for this machine's boot and this process's pid namespace: where two
/// processes' tags are equal, so is the meaning of their pids. `None` where `/proc` does
/// not tell.
fn host_tag() -> Option<&'static str> {
    static TAG: OnceLock<Option<String>> = OnceLock::new();
    TAG.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
        // FNV-1a folded to 32 bits: a fixed hash, so that every build of lidx agrees.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in boot
            .trim()
            .as_bytes()
            .iter()
            .chain(b"/")
            .chain(namespace.as_os_str().as_bytes())
        {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Some(format!("{:08x}", (hash ^ (hash >> 32)) as u32))
    })
    .as_deref()
}

/// `.lidx-tmp-<pid>-<host>-`: how this process's temporary files are named, before the
/// random part. `<host>` is `x` where it cannot be told (no sweep ever matches that).
fn temp_prefix() -> String {
    format!(
        "{TEMP_PREFIX}{}-{}-",
        std::process::id(),
        host_tag().unwrap_or("x")
    )
}

/// A fresh temporary file name of this process.
fn temp_name() -> String {
    use rand::Rng;
    let random: String = rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(TEMP_RANDOM)
        .map(char::from)
        .collect();
    temp_prefix() + &random
}

/// The pid in `name` when it is exactly the name of a temporary file that a process with
/// host tag `tag` made: `.lidx-tmp-<pid>-<tag>-<letters and digits>`.
fn temp_owner(name: &str, tag: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_PREFIX)?;
    let (pid, rest) = rest.split_once('-')?;
    let (host, random) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if host != tag
        || !digits(pid)
        || random.is_empty()
        || !random.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return None;
    }
    pid.parse().ok().filter(|&pid| pid != 0)
}

/// Whether no process `pid` exists (in this process's pid namespace). False where that
/// cannot be told.
fn process_is_gone(pid: u32) -> bool {
    matches!(
        std::fs::symlink_metadata(format!("/proc/{pid}")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound
    )
}

/// [`remove_stale_temp_files`] in `dir`, the first time this process writes there.
fn sweep_once(dir: &Path) {
    let first = SWEPT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(dir.to_path_buf());
    if first {
        remove_stale_temp_files(dir);
    }
}

/// Detaches the file system mounted at `path` (lazily: it goes once no one uses it). Best
/// effort: nothing mounted there, or no right to unmount, leaves things as they are.
fn detach(path: &Path) {
    let _ = rustix::mount::unmount(path, rustix::mount::UnmountFlags::DETACH);
}

/// The mount points at or below `dir`, deepest first, from `/proc/self/mountinfo` (none
/// where it cannot be read).
fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut found: Vec<PathBuf> = info
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(unescape_mount_field(field)))
        .filter(|point| point.starts_with(&dir))
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    found
}

/// A path as `/proc/self/mountinfo` writes it: space, tab, newline and backslash as
/// three octal digits after a backslash.
fn unescape_mount_field(field: &str) -> std::ffi::OsString {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    std::ffi::OsString::from_vec(out)
}

/// Removes from `dir` the temporary files and scratch directories (with their contents)
/// that processes of this machine and pid namespace left when killed (see the module
/// documentation); returns how many. Best effort: an entry that cannot be removed, or a
/// directory that cannot be read, is left as it is. A symbolic link is never followed nor
/// removed, whatever its name.
fn remove_stale_temp_files(dir: &Path) -> usize {
    // Without /proc no owner can be told apart from a dead one.
    let Some(tag) = host_tag() else { return 0 };
    if !Path::new("/proc/self").exists() {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| temp_owner(name, tag)) else {
            continue;
        };
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if !(kind.is_file() || kind.is_dir()) || !process_is_gone(pid) {
            continue;
        }
        let path = entry.path();
        let gone = if kind.is_dir() {
            remove_tree(&path);
            std::fs::symlink_metadata(&path).is_err()
        } else {
            std::fs::remove_file(&path).is_ok()
        };
        if gone {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::tests::mkfifo;

    #[test]
    fn mount_points_are_read_as_mountinfo_escapes_them() {
        assert_eq!(unescape_mount_field("/a/b"), "/a/b");
        assert_eq!(unescape_mount_field(r"/a\040b\011c\134d"), "/a b\tc\\d");
        // A backslash not followed by three octal digits stays as it is.
        assert_eq!(unescape_mount_field(r"/x\9y\04"), r"/x\9y\04");
        let dir = tempfile::tempdir().unwrap();
        assert!(mounts_under(dir.path()).is_empty());
        assert!(mounts_under(Path::new("/")).contains(&PathBuf::from("/")));
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    /// A pid no process has: that of a child that has exited and been reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(process_is_gone(pid), "pid {pid} was reused at once");
        pid
    }

    /// Writes `a`, rewrites its first bytes with `write_at`, appends and finishes; checks
    /// nothing is visible before `finish`, and nothing but the output after.
    fn write_and_finish(unnamed: bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        let mut f = AtomicFile::open(&path, 4, unnamed).unwrap();
        if !unnamed {
            assert!(matches!(f.temp, Temp::Named { .. }));
        }
        f.write_all(b"xxxx-body").unwrap();
        f.write_at(0, b"head").unwrap();
        f.write_all(b"-tail").unwrap();
        assert!(!path.exists(), "output visible before finish");
        if unnamed && matches!(f.temp, Temp::Unnamed) {
            assert!(listing(dir.path()).is_empty(), "an unnamed file has a name");
        } else {
            let names = listing(dir.path());
            assert_eq!(names.len(), 1);
            assert!(names[0].starts_with(&temp_prefix()), "{names:?}");
        }
        f.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"head-body-tail");
        assert_eq!(listing(dir.path()), ["out.bin"]);
    }

    #[test]
    fn output_appears_only_at_finish() {
        write_and_finish(true);
    }

    #[test]
    fn named_fallback_appears_only_at_finish() {
        write_and_finish(false);
    }

    /// Where the test's temp directory supports O_TMPFILE (ext4, XFS, Btrfs, tmpfs do), the
    /// output is an unnamed file in the destination's directory; elsewhere the test says so
    /// and checks nothing more.
    #[test]
    fn unnamed_file_is_in_the_destination_directory() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let f = AtomicFile::create(&dir.path().join("out")).unwrap();
        if !matches!(f.temp, Temp::Unnamed) {
            eprintln!(
                "no O_TMPFILE in {}: the fallback was used",
                dir.path().display()
            );
            return;
        }
        let fd = format!("/proc/self/fd/{}", f.writer.get_ref().as_raw_fd());
        let target = std::fs::read_link(fd).unwrap();
        let dir = dir.path().canonicalize().unwrap();
        assert_eq!(target.parent(), Some(dir.as_path()), "{}", target.display());
        assert!(
            target.to_string_lossy().ends_with(" (deleted)"),
            "{}",
            target.display()
        );
    }

    #[test]
    fn dropping_leaves_nothing() {
        for unnamed in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.bin");
            let mut f = AtomicFile::open(&path, 1 << 20, unnamed).unwrap();
            f.write_all(&[7; 3 << 20]).unwrap();
            drop(f);
            assert!(listing(dir.path()).is_empty(), "unnamed: {unnamed}");
        }
    }

    #[test]
    fn finish_replaces_an_existing_file() {
        for unnamed in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.bin");
            std::fs::write(&path, b"old contents, longer than the new").unwrap();
            let mut f = AtomicFile::open(&path, 1 << 20, unnamed).unwrap();
            f.write_all(b"new").unwrap();
            assert_eq!(
                std::fs::read(&path).unwrap(),
                b"old contents, longer than the new"
            );
            f.finish().unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"new");
            assert_eq!(listing(dir.path()), ["out.bin"]);
        }
    }

    #[test]
    fn outputs_get_ordinary_permissions() {
        // The umask is process-wide and unknown here: compare with a file made as usual.
        for unnamed in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let plain = dir.path().join("plain");
            std::fs::write(&plain, b"").unwrap();
            let path = dir.path().join("out.bin");
            AtomicFile::open(&path, 16, unnamed)
                .unwrap()
                .finish()
                .unwrap();
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), mode(&plain), "unnamed: {unnamed}");
        }
    }

    #[test]
    fn refuses_a_directory_and_a_missing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let err = AtomicFile::create(dir.path()).err().unwrap();
        assert!(err.to_string().contains("directory"), "{err}");
        let missing = dir.path().join("no/such/dir/out");
        for unnamed in [true, false] {
            let err = AtomicFile::open(&missing, 16, unnamed).err().unwrap();
            assert!(
                err.to_string().contains("no/such/dir/out"),
                "unnamed {unnamed}: {err}"
            );
        }
    }

    #[test]
    fn refuses_outputs_that_are_not_regular_files_and_leaves_them() {
        use std::os::unix::fs::FileTypeExt;
        let (_outside_dir, outside) = outside_file();
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo_out");
        mkfifo(&fifo);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let stdout = dir.path().join("so");
        std::os::unix::fs::symlink("/proc/self/fd/1", &stdout).unwrap();
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        let cases = [
            (&fifo, "named pipe"),
            (&link, "symbolic link; lidx replaces only regular files"),
            (&stdout, "a stream"),
            (&dangling, "symbolic link"),
        ];
        for (path, what) in cases {
            for unnamed in [true, false] {
                let err = AtomicFile::open(path, 16, unnamed).err().unwrap();
                let text = err.to_string();
                assert!(text.contains(what), "{text}");
                assert!(text.contains(&*path.to_string_lossy()), "{text}");
            }
        }
        // Nothing was replaced or added, and the link's target is as it was.
        assert_eq!(listing(dir.path()), ["dangling", "fifo_out", "link", "so"]);
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        assert_eq!(std::fs::read_link(&link).unwrap(), outside);
        assert_eq!(std::fs::read(&outside).unwrap(), b"mine");
        // A device node, where one is at hand (no privilege is needed to try: /dev/null
        // itself is refused before anything is created).
        let err = AtomicFile::create(Path::new("/dev/null")).err().unwrap();
        assert!(err.to_string().contains("device node"), "{err}");
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    #[test]
    fn scratch_files_are_named_as_unfinished_outputs_and_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let (path, guard) = scratch_path(dir.path()).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let tag = host_tag().unwrap_or("x");
        assert_eq!(temp_owner(&name, tag), Some(std::process::id()), "{name}");
        assert!(path.exists());
        drop(guard);
        drop(path);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn temp_names_are_recognised_exactly() {
        let tag = "0123abcd";
        assert_eq!(temp_owner(".lidx-tmp-42-0123abcd-Ab9xYz12", tag), Some(42));
        for other in [
            ".lidx-tmp-42-0123abcd-",           // no random part
            ".lidx-tmp-42-0123abcd-ab.c",       // not letters and digits
            ".lidx-tmp-42-0123abce-abc",        // another host or pid namespace
            ".lidx-tmp--0123abcd-abc",          // no pid
            ".lidx-tmp-4x2-0123abcd-abc",       // not a pid
            ".lidx-tmp-0-0123abcd-abc",         // pid 0
            ".lidx-tmp-99999999999-0123abcd-a", // beyond u32
            ".lidx-tmp-42-x-abc",               // the host could not be told
            ".lidx-tmp-abc123",                 // the naming of older lidx versions
            "lidx-tmp-42-0123abcd-abc",
            "out.tbl",
        ] {
            assert_eq!(temp_owner(other, tag), None, "{other}");
        }
    }

    #[test]
    fn stale_temp_files_of_dead_processes_are_removed_and_nothing_else() {
        let Some(tag) = host_tag() else {
            eprintln!("no /proc: nothing is ever removed");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let live = std::process::id();
        let stale = format!("{TEMP_PREFIX}{dead}-{tag}-x");
        let keep = [
            format!("{TEMP_PREFIX}{live}-{tag}-x"),
            format!("{TEMP_PREFIX}{dead}-0000000g-x"),
            format!("{TEMP_PREFIX}{dead}-{tag}-x.tbl"),
            format!("{TEMP_PREFIX}{dead}"),
            format!("keep-{dead}-{tag}-x"),
            ".lidx-tmp-abc123".to_string(),
            "out.tbl".to_string(),
        ];
        for name in keep.iter().chain([&stale]) {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        assert_eq!(remove_stale_temp_files(dir.path()), 1);
        let mut want = keep.to_vec();
        want.sort();
        assert_eq!(listing(dir.path()), want);
    }

    /// A directory named so, its files, subdirectories and a symbolic link out of it.
    fn fill(dir: &Path, outside: &Path) {
        std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
        std::fs::write(dir.join("a.tbl"), b"a").unwrap();
        std::fs::write(dir.join("sub/deeper/b.tbl"), b"b").unwrap();
        std::os::unix::fs::symlink(outside, dir.join("sub/link")).unwrap();
        std::os::unix::fs::symlink(outside.parent().unwrap(), dir.join("dirlink")).unwrap();
    }

    /// A file outside the directories under test, which no removal may reach.
    fn outside_file() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keep.txt");
        std::fs::write(&file, b"mine").unwrap();
        (dir, file)
    }

    #[test]
    fn stale_scratch_dirs_of_dead_processes_are_removed_whole_and_nothing_else() {
        let Some(tag) = host_tag() else {
            eprintln!("no /proc: nothing is ever removed");
            return;
        };
        let (_outside_dir, outside) = outside_file();
        let dir = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let live = std::process::id();
        let stale = format!("{TEMP_PREFIX}{dead}-{tag}-Dd1");
        fill(&dir.path().join(&stale), &outside);
        let keep = [
            format!("{TEMP_PREFIX}{live}-{tag}-Dd2"),
            format!("{TEMP_PREFIX}{dead}-0000000g-Dd3"),
            format!("{TEMP_PREFIX}{dead}-{tag}-Dd.4"),
            format!("cell0-{dead}-{tag}-Dd5"),
        ];
        for name in &keep {
            fill(&dir.path().join(name), &outside);
        }
        // A symbolic link named as a stale directory is neither followed nor removed.
        let link = format!("{TEMP_PREFIX}{dead}-{tag}-Ln6");
        let target = tempfile::tempdir().unwrap();
        std::fs::write(target.path().join("x"), b"x").unwrap();
        std::os::unix::fs::symlink(target.path(), dir.path().join(&link)).unwrap();

        assert_eq!(remove_stale_temp_files(dir.path()), 1);
        let mut want: Vec<String> = keep.iter().cloned().chain([link]).collect();
        want.sort();
        assert_eq!(listing(dir.path()), want);
        for name in &keep {
            assert_eq!(
                std::fs::read(dir.path().join(name).join("sub/deeper/b.tbl")).unwrap(),
                b"b"
            );
        }
        assert_eq!(listing(target.path()), ["x"]);
        assert_eq!(std::fs::read(&outside).unwrap(), b"mine");
    }

    #[test]
    fn scratch_dirs_are_named_as_temp_files_and_removed_whole_on_drop() {
        let (_outside_dir, outside) = outside_file();
        let dir = tempfile::tempdir().unwrap();
        let scratch = scratch_dir(dir.path()).unwrap();
        let name = scratch.path().file_name().unwrap().to_str().unwrap();
        let tag = host_tag().unwrap_or("x");
        assert_eq!(temp_owner(name, tag), Some(std::process::id()), "{name}");
        assert_eq!(scratch.path().parent(), Some(dir.path()));
        fill(scratch.path(), &outside);
        drop(scratch);
        assert!(listing(dir.path()).is_empty());
        assert_eq!(std::fs::read(&outside).unwrap(), b"mine");
        assert_eq!(listing(_outside_dir.path()), ["keep.txt"]);
    }

    #[test]
    fn pending_scratch_dirs_are_removed_whole_as_on_a_signal() {
        let (_outside_dir, outside) = outside_file();
        let dir = tempfile::tempdir().unwrap();
        let scratch = scratch_dir(dir.path()).unwrap();
        fill(scratch.path(), &outside);
        // A file registered by path is removed alone, even where a directory took its place.
        let not_a_file = dir.path().join("registered-as-a-file");
        std::fs::create_dir(&not_a_file).unwrap();
        std::fs::write(not_a_file.join("inside"), b"i").unwrap();
        let _guard = PendingGuard::new(&not_a_file);
        // What the signal handler does, limited to this test's directory (other tests of
        // this process run beside it).
        remove_pending(|p| p.starts_with(dir.path()));
        assert_eq!(listing(dir.path()), ["registered-as-a-file"]);
        assert_eq!(listing(&not_a_file), ["inside"]);
        assert_eq!(std::fs::read(&outside).unwrap(), b"mine");
        drop(scratch);
        assert_eq!(listing(dir.path()), ["registered-as-a-file"]);
    }

    #[test]
    fn a_registered_empty_dir_goes_on_a_signal_after_what_was_made_in_it_and_only_if_empty() {
        let dir = tempfile::tempdir().unwrap();
        let (outer, inner) = (dir.path().join("a"), dir.path().join("a/b"));
        let _outer = PendingGuard::empty_dir(&outer);
        let _inner = PendingGuard::empty_dir(&inner);
        std::fs::create_dir_all(&inner).unwrap();
        let scratch = scratch_dir(&inner).unwrap();
        std::fs::write(scratch.path().join("data"), b"d").unwrap();
        // Newest first: the scratch, then b, then a.
        remove_pending(|p| p.starts_with(dir.path()));
        assert!(listing(dir.path()).is_empty());
        // One holding something the process did not make stays.
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(inner.join("users"), b"u").unwrap();
        remove_pending(|p| p.starts_with(dir.path()));
        assert_eq!(listing(&inner), ["users"]);
        drop(scratch);
    }

    #[test]
    fn persist_renames_the_whole_directory_into_place() {
        let dir = tempfile::tempdir().unwrap();
        let scratch = scratch_dir(dir.path()).unwrap();
        std::fs::create_dir(scratch.path().join("s")).unwrap();
        std::fs::write(scratch.path().join("s/CURRENT"), b"MANIFEST-1\n").unwrap();
        let dest = dir.path().join("db");
        scratch.persist(&dest).unwrap();
        assert_eq!(listing(dir.path()), ["db"]);
        assert_eq!(
            std::fs::read(dest.join("s/CURRENT")).unwrap(),
            b"MANIFEST-1\n"
        );
        // No longer registered: a signal now removes nothing.
        remove_pending(|p| p.starts_with(dir.path()));
        assert_eq!(listing(dir.path()), ["db"]);
    }

    #[test]
    fn persist_refuses_anything_at_the_destination_and_leaves_it() {
        let (_outside_dir, outside) = outside_file();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"old").unwrap();
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let full = dir.path().join("full");
        std::fs::create_dir(&full).unwrap();
        std::fs::write(full.join("notes.txt"), b"mine").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        for dest in [&file, &empty, &full, &link, &dangling] {
            let scratch = scratch_dir(dir.path()).unwrap();
            std::fs::write(scratch.path().join("new"), b"new").unwrap();
            // The fallback for file systems without RENAME_NOREPLACE refuses as well.
            let err = rename_checked(scratch.path(), dest).unwrap_err();
            assert!(err.to_string().contains("already exists"), "{err}");
            let err = scratch.persist(dest).unwrap_err();
            assert!(err.to_string().contains("already exists"), "{err}");
            assert!(err.to_string().contains(&*dest.to_string_lossy()), "{err}");
        }
        // Every destination as it was; every scratch directory gone.
        assert_eq!(
            listing(dir.path()),
            ["dangling", "empty", "file", "full", "link"]
        );
        assert_eq!(std::fs::read(&file).unwrap(), b"old");
        assert!(listing(&empty).is_empty());
        assert_eq!(listing(&full), ["notes.txt"]);
        assert_eq!(std::fs::read_link(&link).unwrap(), outside);
        assert_eq!(std::fs::read(&outside).unwrap(), b"mine");
    }

    #[test]
    fn creating_an_output_removes_stale_temp_files_beside_it() {
        let Some(tag) = host_tag() else {
            eprintln!("no /proc: nothing is ever removed");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let stale = format!("{TEMP_PREFIX}{}-{tag}-Zz9", dead_pid());
        std::fs::write(dir.path().join(&stale), b"partial").unwrap();
        let path = dir.path().join("out.bin");
        let mut f = AtomicFile::create(&path).unwrap();
        assert!(!dir.path().join(&stale).exists());
        f.write_all(b"done").unwrap();
        f.finish().unwrap();
        assert_eq!(listing(dir.path()), ["out.bin"]);
    }
}
