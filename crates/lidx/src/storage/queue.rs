//! Deep I/O queues, beyond paper 1 (which reads one window at a time): up to `depth` reads
//! of block runs in flight at once, so a device that serves many random reads in parallel
//! (an SSD at queue depth 32 delivers several times the reads per second of depth 1) is kept
//! busy while the join works through the windows already read.
//!
//! Reads complete in any order but are handed back strictly in submission order, so a join
//! that submits its windows in key order emits its output in key order. Two backends do the
//! reading: `io_uring` on Linux (one ring per queue, a read submitted with one system call,
//! completions reaped as they are needed), and a portable pool of `depth` threads each doing
//! blocking `pread`s, used elsewhere, where the kernel refuses `io_uring`, or on request.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use super::aligned::AlignedBuf;
use super::block_range::BlockRange;

/// Which machinery keeps a deep queue's reads in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoBackend {
    /// `io_uring` where the kernel offers it, threads otherwise.
    #[default]
    Auto,
    /// `io_uring` only (an error where it is unavailable).
    Uring,
    /// A pool of threads doing blocking reads (works everywhere).
    Threads,
}

crate::names::name_table!(IoBackend, "I/O backend", [
    Auto => "auto",
    Uring => "uring",
    Threads => "threads",
]);

impl IoBackend {
    /// The most reads a queue keeps in flight, on either backend. Far beyond what a device
    /// needs to be kept busy (an NVMe SSD saturates near 256), and small enough that the
    /// thread backend's one thread per read stays within what a system grants.
    pub const MAX_DEPTH: usize = 4096;

    /// The backend a queue asking for `self` gets on this machine: `Auto` becomes `Uring`
    /// where the kernel grants a ring, `Threads` otherwise.
    pub fn resolve(self) -> IoBackend {
        match self {
            #[cfg(target_os = "linux")]
            IoBackend::Auto if io_uring::IoUring::new(2).is_ok() => IoBackend::Uring,
            IoBackend::Auto => IoBackend::Threads,
            other => other,
        }
    }
}

/// One read in flight: its blocks, where they start in the file, and (with `io_uring`) the
/// buffer the kernel is writing into, owned here until the read completes.
struct Pending {
    id: u64,
    range: BlockRange,
    offset: u64,
    len: usize,
    buf: Option<AlignedBuf>,
}

/// Reads of block runs, at most `depth` in flight, handed back in submission order.
pub(crate) struct ReadQueue {
    backend: Backend,
    file: File,
    depth: usize,
    in_flight: VecDeque<Pending>,
    spare: Vec<AlignedBuf>,
    next_id: u64,
}

enum Backend {
    #[cfg(target_os = "linux")]
    Uring(Box<uring::Ring>),
    Threads(Pool),
}

impl ReadQueue {
    /// A queue of `depth` (at least 1) reads of `file` on `backend`. A depth above
    /// [`IoBackend::MAX_DEPTH`] is refused (`InvalidInput`), as is a thread the system will
    /// not start: an error, never a panic.
    pub(crate) fn new(file: File, depth: usize, backend: IoBackend) -> io::Result<Self> {
        if depth > IoBackend::MAX_DEPTH {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{depth} reads in flight is more than the {} lidx keeps",
                    IoBackend::MAX_DEPTH
                ),
            ));
        }
        let depth = depth.max(1);
        let backend = match backend {
            IoBackend::Threads => Backend::Threads(Pool::new(&file, depth)?),
            #[cfg(target_os = "linux")]
            IoBackend::Uring => Backend::Uring(Box::new(uring::Ring::new(&file, depth)?)),
            #[cfg(target_os = "linux")]
            IoBackend::Auto => match uring::Ring::new(&file, depth) {
                Ok(ring) => Backend::Uring(Box::new(ring)),
                Err(_) => Backend::Threads(Pool::new(&file, depth)?),
            },
            #[cfg(not(target_os = "linux"))]
            IoBackend::Uring => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "io_uring exists only on Linux",
                ));
            }
            #[cfg(not(target_os = "linux"))]
            IoBackend::Auto => Backend::Threads(Pool::new(&file, depth)?),
        };
        Ok(Self {
            backend,
            file,
            depth,
            in_flight: VecDeque::with_capacity(depth),
            spare: Vec::new(),
            next_id: 0,
        })
    }

    /// The backend in use ("uring" or "threads").
    pub(crate) fn backend(&self) -> IoBackend {
        match self.backend {
            #[cfg(target_os = "linux")]
            Backend::Uring(_) => IoBackend::Uring,
            Backend::Threads(_) => IoBackend::Threads,
        }
    }

    /// True when another read may be submitted.
    pub(crate) fn has_room(&self) -> bool {
        self.in_flight.len() < self.depth
    }

    /// The blocks of the oldest read in flight.
    pub(crate) fn oldest(&self) -> Option<BlockRange> {
        self.in_flight.front().map(|p| p.range)
    }

    /// Reads in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Starts reading `len` bytes at `offset` into a buffer of its own; the caller checks
    /// [`has_room`](Self::has_room) first.
    pub(crate) fn submit(&mut self, range: BlockRange, offset: u64, len: usize) -> io::Result<()> {
        debug_assert!(self.has_room());
        let id = self.next_id;
        self.next_id += 1;
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.get_mut(len);
        match &mut self.backend {
            #[cfg(target_os = "linux")]
            Backend::Uring(ring) => {
                ring.push(id, &mut buf, len, offset)?;
                // In flight from here on (even if submitting fails, the entry stays queued
                // and goes with the next submission), so its buffer is held until reaped.
                self.in_flight.push_back(Pending {
                    id,
                    range,
                    offset,
                    len,
                    buf: Some(buf),
                });
                ring.submit()
            }
            Backend::Threads(pool) => {
                pool.submit(id, buf, len, offset)?;
                self.in_flight.push_back(Pending {
                    id,
                    range,
                    offset,
                    len,
                    buf: None,
                });
                Ok(())
            }
        }
    }

    /// Waits for the oldest read in flight and hands back its blocks and buffer (the bytes
    /// are `buf.get(len)`); `None` when nothing is in flight.
    pub(crate) fn wait_oldest(&mut self) -> Option<io::Result<(BlockRange, AlignedBuf)>> {
        let pending = self.in_flight.pop_front()?;
        Some(self.complete(pending))
    }

    fn complete(&mut self, pending: Pending) -> io::Result<(BlockRange, AlignedBuf)> {
        let Pending {
            id,
            range,
            offset,
            len,
            buf,
        } = pending;
        let (mut buf, done) = match &mut self.backend {
            #[cfg(target_os = "linux")]
            Backend::Uring(ring) => match ring.wait(id) {
                Ok(done) => (buf.unwrap_or_default(), done),
                Err(e) => {
                    // The ring failed before the read completed: the kernel may still write
                    // into the buffer, so it must never be freed or reused.
                    std::mem::forget(buf);
                    return Err(e);
                }
            },
            Backend::Threads(pool) => pool.wait(id)?,
        };
        let done = done?;
        if done < len {
            // A short read (rare on regular files): finish it synchronously.
            self.file
                .read_exact_at(&mut buf.get_mut(len)[done..], offset + done as u64)?;
        }
        Ok((range, buf))
    }

    /// Takes back a buffer for later reads.
    pub(crate) fn recycle(&mut self, buf: AlignedBuf) {
        if self.spare.len() <= self.depth {
            self.spare.push(buf);
        }
    }
}

impl Drop for ReadQueue {
    /// Waits for every read still in flight: the kernel may be writing into their buffers.
    fn drop(&mut self) {
        while let Some(pending) = self.in_flight.pop_front() {
            let _ = self.complete(pending);
        }
    }
}

/// A job for the thread pool: read `len` bytes at `offset` into `buf`.
struct Job {
    id: u64,
    buf: AlignedBuf,
    len: usize,
    offset: u64,
}

/// What a worker hands back: the job's id, its buffer, and the bytes read or the error.
type Done = (u64, AlignedBuf, io::Result<usize>);

/// Stack of a read thread: it only waits for jobs and calls `pread`.
const WORKER_STACK: usize = 128 << 10;

/// `depth` threads, each doing blocking reads of its own handle to the file.
struct Pool {
    jobs: Option<mpsc::Sender<Job>>,
    done: mpsc::Receiver<Done>,
    early: HashMap<u64, (AlignedBuf, io::Result<usize>)>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    /// Starts `depth` threads; an error (the threads started so far stopped and joined) when
    /// the system refuses a file handle or a thread.
    fn new(file: &File, depth: usize) -> io::Result<Self> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (done_tx, done) = mpsc::channel::<Done>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        // Built first, so that dropping it on an error below stops and joins the threads
        // already started.
        let mut pool = Self {
            jobs: Some(jobs),
            done,
            early: HashMap::new(),
            workers: Vec::with_capacity(depth),
        };
        for _ in 0..depth {
            let file = file.try_clone()?;
            let job_rx = Arc::clone(&job_rx);
            let done_tx = done_tx.clone();
            let worker = std::thread::Builder::new()
                .name("lidx-read".into())
                .stack_size(WORKER_STACK)
                .spawn(move || {
                    loop {
                        // A poisoned lock means another worker panicked: stop too.
                        let job = match job_rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok(mut job) = job else { return };
                        let read = file
                            .read_exact_at(job.buf.get_mut(job.len), job.offset)
                            .map(|()| job.len);
                        if done_tx.send((job.id, job.buf, read)).is_err() {
                            return;
                        }
                    }
                })?;
            pool.workers.push(worker);
        }
        Ok(pool)
    }

    fn submit(&mut self, id: u64, buf: AlignedBuf, len: usize, offset: u64) -> io::Result<()> {
        let job = Job {
            id,
            buf,
            len,
            offset,
        };
        self.jobs
            .as_ref()
            .and_then(|jobs| jobs.send(job).ok())
            .ok_or_else(|| io::Error::other("the read threads have stopped"))
    }

    /// The result of job `id`, keeping results that arrive before it.
    fn wait(&mut self, id: u64) -> io::Result<(AlignedBuf, io::Result<usize>)> {
        loop {
            if let Some(done) = self.early.remove(&id) {
                return Ok(done);
            }
            let (got, buf, read) = self
                .done
                .recv()
                .map_err(|_| io::Error::other("the read threads have stopped"))?;
            self.early.insert(got, (buf, read));
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.jobs = None;
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

#[cfg(target_os = "linux")]
mod uring {
    //! The `io_uring` backend: the one place that hands the kernel a buffer to fill later.

    use std::collections::HashMap;
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd, RawFd};

    use io_uring::{IoUring, opcode, types};

    use super::AlignedBuf;

    pub(super) struct Ring {
        ring: IoUring,
        fd: RawFd,
        early: HashMap<u64, i32>,
    }

    impl Ring {
        /// A ring of `depth` entries reading `file` (which must outlive the ring: the queue
        /// owns both).
        pub(super) fn new(file: &File, depth: usize) -> io::Result<Self> {
            let entries = u32::try_from(depth.next_power_of_two()).unwrap_or(4096);
            Ok(Self {
                ring: IoUring::new(entries)?,
                fd: file.as_raw_fd(),
                early: HashMap::new(),
            })
        }

        /// Queues a read of `len` bytes at `offset` into `buf` (started by the next
        /// [`submit`](Self::submit) or [`wait`](Self::wait)).
        ///
        /// The caller must keep `buf`'s heap allocation alive and untouched until
        /// [`wait`](Self::wait) returns for `id`; [`super::ReadQueue`] does so by holding
        /// the buffer in its `Pending` entry and, when dropped, waiting for every read.
        #[expect(
            unsafe_code,
            reason = "io_uring writes into the buffer after this call returns; see SAFETY"
        )]
        pub(super) fn push(
            &mut self,
            id: u64,
            buf: &mut AlignedBuf,
            len: usize,
            offset: u64,
        ) -> io::Result<()> {
            let len32 = u32::try_from(len)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "read too large"))?;
            let target = buf.get_mut(len).as_mut_ptr();
            let entry = opcode::Read::new(types::Fd(self.fd), target, len32)
                .offset(offset)
                .build()
                .user_data(id);
            // SAFETY: `target` points at `len` writable bytes of a heap allocation that the
            // queue keeps alive and unaliased until the completion for `id` is reaped (see
            // this function's contract); `self.fd` stays open as long as the queue.
            unsafe { self.ring.submission().push(&entry) }
                .map_err(|_| io::Error::other("the io_uring submission queue is full"))
        }

        /// Hands the queued reads to the kernel.
        pub(super) fn submit(&mut self) -> io::Result<()> {
            loop {
                match self.ring.submit() {
                    Ok(_) => return Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
        }

        /// Waits for read `id` to complete and returns its outcome: the bytes it read or its
        /// error. The outer error means the ring itself failed and the read may still be in
        /// flight.
        pub(super) fn wait(&mut self, id: u64) -> io::Result<io::Result<usize>> {
            loop {
                for cqe in self.ring.completion() {
                    self.early.insert(cqe.user_data(), cqe.result());
                }
                if let Some(res) = self.early.remove(&id) {
                    return Ok(if res < 0 {
                        Err(io::Error::from_raw_os_error(-res))
                    } else if res == 0 {
                        Err(io::ErrorKind::UnexpectedEof.into())
                    } else {
                        Ok(res as usize)
                    });
                }
                match self.ring.submit_and_wait(1) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `blocks` 4 KiB blocks, block `i` filled with byte `i`.
    fn file_of(blocks: u8) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for i in 0..blocks {
            std::io::Write::write_all(&mut f, &[i; 4096]).unwrap();
        }
        f
    }

    #[test]
    fn a_depth_beyond_the_cap_is_refused_on_every_backend() {
        let f = file_of(1);
        for backend in [IoBackend::Auto, IoBackend::Threads, IoBackend::Uring] {
            for depth in [IoBackend::MAX_DEPTH + 1, 100_000, usize::MAX] {
                let file = f.reopen().unwrap();
                let err = ReadQueue::new(file, depth, backend).err().unwrap();
                assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{backend} {depth}");
                assert!(err.to_string().contains("more than the 4096"), "{err}");
            }
        }
    }

    #[test]
    fn deep_thread_queues_read_in_submission_order() {
        let f = file_of(8);
        let depth = 64;
        let mut q = ReadQueue::new(f.reopen().unwrap(), depth, IoBackend::Threads).unwrap();
        assert_eq!(q.backend(), IoBackend::Threads);
        let mut got = Vec::new();
        for round in 0..3u64 {
            for i in 0..8u64 {
                assert!(q.has_room());
                let range = BlockRange::default();
                q.submit(range, ((i + round) % 8) * 4096, 4096).unwrap();
            }
            while let Some(done) = q.wait_oldest() {
                let (_, buf) = done.unwrap();
                got.push(buf.get(4096)[0]);
                q.recycle(buf);
            }
        }
        let want: Vec<u8> = (0..3u8)
            .flat_map(|r| (0..8u8).map(move |i| (i + r) % 8))
            .collect();
        assert_eq!(got, want);
    }
}
