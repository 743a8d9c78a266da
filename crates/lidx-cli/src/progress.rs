//! Progress bars on stderr: shown on a terminal, hidden when piped or with `--quiet`.

use std::cell::RefCell;
use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// What every command needs to know about how to talk to the user.
pub struct Context {
    /// `--quiet`: no progress bars.
    pub quiet: bool,
}

impl Context {
    /// True when bars are drawn: on a terminal, unless quiet.
    fn shows(&self) -> bool {
        !self.quiet && std::io::stderr().is_terminal()
    }

    /// A bar counting to `len` in `unit`s, or a hidden one.
    pub fn bar(&self, len: u64, what: &str, unit: &str) -> ProgressBar {
        if !self.shows() {
            return ProgressBar::hidden();
        }
        let template =
            format!("{{msg:>14}} [{{bar:40}}] {{human_pos}}/{{human_len}} {unit} ({{eta}})");
        let style = ProgressStyle::with_template(&template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        ProgressBar::new(len)
            .with_style(style)
            .with_message(what.to_string())
    }

    /// A spinner with a message, for work of unknown length, or a hidden one.
    pub fn spinner(&self, what: &str) -> ProgressBar {
        if !self.shows() {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new_spinner().with_message(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        bar
    }

    /// Bars for a study's tasks, one at a time.
    pub fn progress(&self) -> Bars<'_> {
        Bars {
            ctx: self,
            bar: RefCell::new(ProgressBar::hidden()),
        }
    }
}

/// A study's progress drawn as one bar (or spinner) per task.
pub struct Bars<'a> {
    ctx: &'a Context,
    bar: RefCell<ProgressBar>,
}

impl lidx_bench::Progress for Bars<'_> {
    fn start(&self, total: u64, what: &str, unit: &str) {
        self.bar.replace(self.ctx.bar(total, what, unit));
    }

    fn spin(&self, what: &str) {
        self.bar.replace(self.ctx.spinner(what));
    }

    fn message(&self, message: &str) {
        self.bar.borrow().set_message(message.to_string());
    }

    fn step(&self) {
        self.bar.borrow().inc(1);
    }

    fn position(&self, done: u64) {
        self.bar.borrow().set_position(done);
    }

    fn finish(&self) {
        self.bar.borrow().finish_and_clear();
    }

    fn warn(&self, warning: &str) {
        self.bar
            .borrow()
            .suspend(|| eprintln!("lidx: warning: {warning}"));
    }
}
