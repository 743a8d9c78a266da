//! What a study tells the person running it while it works. The command line draws
//! progress bars and prints warnings; scripts and tests pass [`Quiet`].

/// Hears a study's progress: one task at a time, counted in steps.
pub trait Progress {
    /// A new task of `total` steps counted in `unit`s, named `what`.
    fn start(&self, total: u64, what: &str, unit: &str);
    /// A task of unknown length, named `what`.
    fn spin(&self, what: &str);
    /// What the task is doing now.
    fn message(&self, message: &str);
    /// One step of the task done.
    fn step(&self);
    /// `done` of the task's steps done in all, for work that reports a running count
    /// rather than single steps. By default ignored: the task is then drawn as not
    /// advancing until it finishes.
    fn position(&self, done: u64) {
        let _ = done;
    }
    /// The task is over.
    fn finish(&self);
    /// Something the user should know that does not stop the study.
    fn warn(&self, warning: &str);
}

/// Progress nobody watches.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _: u64, _: &str, _: &str) {}
    fn spin(&self, _: &str) {}
    fn message(&self, _: &str) {}
    fn step(&self) {}
    fn position(&self, _: u64) {}
    fn finish(&self) {}
    fn warn(&self, _: &str) {}
}
