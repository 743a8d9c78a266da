//! How a join database changes all at once or not at all, though its trees are separate
//! RocksDB instances written without a write-ahead log (paper 5's setting, section 4), so
//! that a kill at any point leaves either the database before a command or the one after.
//!
//! - **One process at a time.** `lidx-lsm.lock` is locked (`flock`, exclusive) before
//!   anything else of the database is read, and held while it is open; another process is
//!   refused at once ([`DbLock::take`]).
//! - **Creation** happens in a scratch directory beside the destination, renamed into place
//!   when the load is complete ([`publish`]): a killed load leaves nothing at the
//!   destination (the scratch directory is removed by the signal handler, or after a
//!   SIGKILL by the next lidx writing beside it), and of two loads racing for one
//!   directory, the loser removes only its own scratch.
//! - **Changes** (a batch of updates; an index build) are marked in the manifest
//!   ([`Pending`]) before they touch a tree, and the mark is cleared only when every tree
//!   has flushed what it took. Before a batch of updates, every tree is checkpointed into
//!   `rollback/` (RocksDB's `Checkpoint`: hard links to the immutable SST files, so it
//!   costs no copy). The next open of a database still marked rolls an interrupted batch
//!   back to those checkpoints, and removes an interrupted index build's tree
//!   ([`recover`]). Every step of the recovery can itself be interrupted and redone.

use std::fs::File;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::method::IndexSpec;
use crate::{Error, Result};

/// The lock file's name.
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

/// The database's lock, held while it lives.
#[derive(Debug)]
pub(crate) struct DbLock(#[allow(dead_code, reason = "held for its lock")] File);

impl DbLock {
    /// Locks the database at `dir` for this process, or fails saying another process has
    /// it open.
    pub(crate) fn take(dir: &Path) -> Result<DbLock> {
        let path = dir.join(LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| lidx::Error::io(&path, "open the lock file", e))?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(DbLock(file)),
            Err(rustix::io::Errno::WOULDBLOCK) => Err(lidx::Error::param(
                "database",
                format!(
                    "{}: another process has it open ({LOCK} is locked)",
                    dir.display()
                ),
            )
            .into()),
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

/// Moves the database made in `scratch` to `dir`, where nothing may be but an empty
/// directory (which it replaces); of two processes publishing to one `dir`, one fails.
pub(crate) fn publish(scratch: lidx::files::ScratchDir, dir: &Path) -> Result<()> {
    let replaces_empty = dir.symlink_metadata().is_ok_and(|m| m.is_dir());
    if replaces_empty {
        // Fails unless it is empty: an empty directory is all we replace.
        std::fs::remove_dir(dir).map_err(|e| not_empty(dir, e))?;
    }
    let published = scratch.persist(dir);
    if published.is_err() && replaces_empty {
        // The empty directory is given back (unless another process's database took it).
        let _ = std::fs::create_dir(dir);
    }
    published.map_err(|e| match e {
        lidx::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists => {
            not_empty(dir, source)
        }
        e => e.into(),
    })
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
