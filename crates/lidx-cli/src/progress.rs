//! Progress bars on stderr: shown on a terminal, hidden when piped or with `--quiet`.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// What every command needs to know about how to talk to the user.
pub struct Context {
    /// `--quiet`: no progress bars.
    pub quiet: bool,
}

impl Context {
    /// A bar counting to `len` in `unit`s, or a hidden one.
    pub fn bar(&self, len: u64, what: &str, unit: &str) -> ProgressBar {
        if self.quiet || !std::io::stderr().is_terminal() {
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
        if self.quiet || !std::io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new_spinner().with_message(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        bar
    }
}
