//! How a join database changes all at once or not at all, though its trees are separate
//! RocksDB instances written without a write-ahead log (paper 5's setting, section 4), so
//! that a kill at any point leaves either the database before a command or the one after.
//!
//! - **One process at a time.** The database directory is locked (`flock`, exclusive)
//!   before anything in it is read, and held while it is open; another process is refused
//!   at once ([`DbLock::take`]).
//! - **Creation** happens in a scratch directory beside the destination, renamed into place
//!   when the load is complete ([`publish`]): a killed load leaves nothing at the
//!   destination (the scratch directory is removed by the signal handler, or after a
//!   SIGKILL by the next lidx writing beside it), and of two loads racing for one
//!   directory, the loser removes only its own scratch. Into an existing empty directory
//!   (the user's: its owner, mode or mount stay), the load locks it, builds in a scratch
//!   directory inside it, and moves the trees up, the manifest last ([`move_up`]).
//! - **Changes** (a batch of updates; an index build) are marked in the manifest
//!   ([`Pending`]) before they touch a tree, and the mark is cleared only when every tree
//!   has flushed what it took. Before a batch of updates, every tree is checkpointed into
//!   `rollback/` (RocksDB's `Checkpoint`: hard links to the immutable SST files, so it
//!   costs no copy). The next open of a database still marked rolls an interrupted batch
//!   back to those checkpoints, and removes an interrupted index build's tree
//!   ([`recover`]). Every step of the recovery can itself be interrupted and redone.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::method::IndexSpec;
use crate::{Error, Result};

/// The lock file's name, where a directory cannot be locked.
pub(crate) const LOCK: &str = "lidx-lsm.lock";
/// Where the trees' checkpoints wait while a batch of changes is applied.
pub(crate) const ROLLBACK: &str = "rollback";

/// A change in progress, as the manifest records it until the change is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Pending {
    /// Changes to the data tables and their indexes; `rollback/` holds every tree as it was.
    Changes,
    /// The build of this index, whose tree is not yet listed.
    Index(IndexSpec),
}

/// The database's lock, held while it lives: `flock` on the database directory itself,
/// so that no file can be removed or replaced under a running command; where the file
/// system cannot lock a directory (NFS), on the file `lidx-lsm.lock` in it.
#[derive(Debug)]
pub(crate) struct DbLock(#[allow(dead_code, reason = "held for its lock")] File);

impl DbLock {
    /// Locks the database at `dir` for this process, or fails saying another process has
    /// it open.
    pub(crate) fn take(dir: &Path) -> Result<DbLock> {
        use rustix::fs::{FlockOperation, flock};
        let handle = File::open(dir).map_err(|e| lidx::Error::io(dir, "open", e))?;
        let busy = || -> Error {
            lidx::Error::param(
                "database",
                format!("{}: another process has it open", dir.display()),
            )
            .into()
        };
        match flock(&handle, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(DbLock(handle)),
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(busy()),
            Err(_) => {}
        }
        let path = dir.join(LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&path)
            .map_err(|e| lidx::Error::io(&path, "open the lock file", e))?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(lidx::Error::param(
                "database",
                format!("{}: not a regular file, so no lock", path.display()),
            )
            .into());
        }
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(DbLock(file)),
            Err(rustix::io::Errno::WOULDBLOCK) => Err(busy()),
            Err(e) => Err(lidx::Error::io(&path, "lock", e.into()).into()),
        }
    }
}

/// Checkpoints every tree of `trees` (name and open database) into `dir/rollback/`, which
/// is made anew, and makes the checkpoints durable: the first step of a batch of changes,
/// before the manifest marks it [`Pending::Changes`].
pub(crate) fn checkpoint<'a>(
    dir: &Path,
    trees: impl IntoIterator<Item = (String, &'a rocksdb::DB)>,
) -> Result<()> {
    let rollback = dir.join(ROLLBACK);
    remove_tree(&rollback)?;
    std::fs::create_dir(&rollback).map_err(|e| lidx::Error::io(&rollback, "create", e))?;
    for (name, db) in trees {
        let to = rollback.join(&name);
        rocksdb::checkpoint::Checkpoint::new(db)
            .and_then(|c| c.create_checkpoint(&to))
            .map_err(crate::rocks(&to, "checkpoint a tree into"))?;
    }
    sync_dir(&rollback)?;
    sync_dir(dir)
}

/// Brings the database at `dir` (locked by this process) back to a consistent state if
/// its manifest marks a change as pending: restores every tree of `trees` (directory
/// names) checkpointed before an interrupted batch of changes, or removes the tree of an
/// interrupted index build. Returns the change undone; the caller then saves the
/// manifest unmarked and calls [`finish`].
pub(crate) fn recover(dir: &Path, pending: Pending, trees: &[String]) -> Result<Pending> {
    match pending {
        Pending::Changes => {
            let rollback = dir.join(ROLLBACK);
            for name in trees {
                let saved = rollback.join(name);
                // A tree whose checkpoint is gone was restored by an earlier recovery.
                if saved.symlink_metadata().is_ok() {
                    let live = dir.join(name);
                    remove_tree(&live)?;
                    std::fs::rename(&saved, &live)
                        .map_err(|e| lidx::Error::io(&saved, "restore a tree from", e))?;
                }
            }
        }
        Pending::Index(spec) => remove_tree(&dir.join(spec.dir_name()))?,
    }
    sync_dir(dir)?;
    Ok(pending)
}

/// Removes the checkpoints of a change that is complete (or undone), once the manifest
/// says so.
pub(crate) fn finish(dir: &Path) -> Result<()> {
    remove_tree(&dir.join(ROLLBACK))
}

/// Renames the database made in `scratch` (beside `dir`) to `dir`, where nothing may be;
/// of two processes publishing to one `dir`, one fails.
pub(crate) fn publish(scratch: lidx::files::ScratchDir, dir: &Path) -> Result<()> {
    scratch.persist(dir).map_err(|e| match e {
        lidx::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists => {
            not_empty(dir, source)
        }
        e => e.into(),
    })
}

/// Fails unless the directory `dir` (locked by this process) holds nothing but `scratch`
/// and its lock file: it is empty, as a database is created in.
pub(crate) fn refuse_taken(dir: &Path, scratch: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| lidx::Error::io(dir, "list", e))?;
    for entry in entries {
        let entry = entry.map_err(|e| lidx::Error::io(dir, "list", e))?;
        let name = entry.file_name();
        if name != LOCK && Some(name.as_os_str()) != scratch.file_name() {
            let why = match dir.join(super::db::MANIFEST).exists() {
                true => "it holds a database",
                false => "it holds other files",
            };
            return Err(not_empty(dir, std::io::Error::other(why)));
        }
    }
    Ok(())
}

/// Moves the database made in `scratch` (inside `dir`, which this process has locked and
/// found empty) up into `dir`: every tree, then the manifest, which is what makes `dir` a
/// database; then the scratch directory goes. A kill before the manifest moves leaves
/// trees without one, which no command opens (and a later load refuses, naming them).
pub(crate) fn move_up(scratch: lidx::files::ScratchDir, dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(scratch.path())
        .map_err(|e| lidx::Error::io(scratch.path(), "list", e))?;
    let mut names = Vec::new();
    for entry in entries {
        let name = entry
            .map_err(|e| lidx::Error::io(scratch.path(), "list", e))?
            .file_name();
        if name != LOCK && name != super::db::MANIFEST {
            names.push(name);
        }
    }
    // The trees are durable already (RocksDB syncs its files and directories), and so is
    // the manifest (written as an AtomicFile): only the renames are to be synced.
    names.push(super::db::MANIFEST.into());
    for name in &names {
        if name == super::db::MANIFEST {
            sync_dir(dir)?;
        }
        let (from, to) = (scratch.path().join(name), dir.join(name));
        rustix::fs::renameat_with(
            rustix::fs::CWD,
            &from,
            rustix::fs::CWD,
            &to,
            rustix::fs::RenameFlags::NOREPLACE,
        )
        .map_err(|e| lidx::Error::io(&to, "move into place", e.into()))?;
    }
    sync_dir(dir)
}

/// The error of creating a database where something is already.
pub(crate) fn not_empty(dir: &Path, source: std::io::Error) -> Error {
    lidx::Error::param(
        "directory",
        format!(
            "{} exists and is not empty; a database is created in a new directory ({source})",
            dir.display()
        ),
    )
    .into()
}

/// Removes the directory `path` and what it holds, if it is there.
fn remove_tree(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(lidx::Error::io(path, "remove", e).into())
        }
        _ => Ok(()),
    }
}

/// Makes the entries of directory `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| lidx::Error::io(dir, "fsync", e).into())
}
