//! The `lidx` command line as a library: [`run`] parses a command line and dispatches to
//! its subcommand in `cmd/`. The `lidx` binary (`main.rs`) calls it, and so does the Python
//! package's `lidx` command (crates/lidx-py), which runs it inside the interpreter.

/// `println!` that returns an error (a closed pipe, say) instead of panicking; use in
/// functions returning `anyhow::Result`.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

/// Writes a report that ends its own lines to stdout as it is (a closed pipe is an error,
/// as with `say!`).
macro_rules! say_text {
    ($text:expr) => {{
        use std::io::Write as _;
        std::io::stdout().lock().write_all($text.as_bytes())?
    }};
}

#[cfg_attr(not(feature = "mimalloc"), path = "allocator_system.rs")]
mod allocator;
mod cmd;
mod limits;
mod progress;
mod units;

use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::{Parser, Subcommand};

/// Learned indexes on data that lives on disk: key sets, table files and block reads that
/// count their I/O. Start with `lidx demo`.
#[derive(Parser)]
#[command(name = "lidx", version, propagate_version = true)]
struct Cli {
    /// No progress bars.
    #[arg(long, short, global = true)]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate a key set (SOSD key file) or sample one.
    Gen(cmd::gen_keys::Args),
    /// Build, inspect, verify, import and export table files.
    #[command(subcommand)]
    Table(cmd::table::Command),
    /// Build, inspect and benchmark indexes over sorted tables.
    #[command(subcommand)]
    Index(cmd::index::Command),
    /// Join two tables: index nested loop through any index, sort-merge or hash.
    Join(cmd::join::Args),
    /// Sort a table by key into a new one, within a memory limit.
    Sort(cmd::sort::Args),
    /// How hard a key set is to learn: PLA segments at several error bounds (paper 3).
    Hardness(cmd::hardness::Args),
    /// Key-value files: a learned block layout or an SSTable index (paper 4), layers tuned
    /// to the storage or a disk B+tree (paper 2).
    #[command(subcommand)]
    Kv(cmd::kv::Command),
    /// Updatable learned indexes against a B+tree on paper 3's workloads.
    #[command(subcommand)]
    Updatable(cmd::updatable::Command),
    /// Joins over LSM-trees (paper 5): R and S in RocksDB, secondary indexes, 29 methods.
    #[cfg(feature = "rocksdb")]
    #[command(subcommand)]
    Lsm(cmd::lsm::Command),
    /// One SQL query through DataFusion over lidx tables and Parquet files, with the learned
    /// index nested loop join where the cost model predicts it faster.
    #[cfg(feature = "sql")]
    Sql(cmd::sql::Args),
    /// Measure the machine.
    #[command(subcommand)]
    Bench(cmd::bench::Command),
    /// Control the OS page cache, to start cold.
    #[command(subcommand)]
    Cache(cmd::cache::Command),
    /// The papers' studies, one command each: CSV, plots and a summary.
    #[command(subcommand)]
    Experiment(cmd::experiment::Command),
    /// A one-minute tour of what lidx does, on small generated data.
    Demo(cmd::demo::Args),
}

/// Set by the SIGINT/SIGTERM handler, which then ends the process with exit code 130.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// How long the handler waits for the child processes it stopped to remove their files.
const CHILD_GRACE: Duration = Duration::from_secs(10);

/// The executable that runs this command line, for the processes an experiment starts:
/// the one [`run`] was given, else this process's own.
static EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();

/// The executable an experiment runs its measurements in: the `lidx` that runs this process.
pub(crate) fn executable() -> std::io::Result<PathBuf> {
    match EXECUTABLE.get() {
        Some(exe) => Ok(exe.clone()),
        None => std::env::current_exe(),
    }
}

/// Runs the command line `args` (the program's name first) and returns its exit code: 0,
/// 1 for an error (one `lidx: error:` line on stderr), 2 for a bad command line, 130 when
/// interrupted (which ends the process). `executable` is the program that runs the command
/// line, where it is not this process's executable (the Python package's `lidx` script):
/// an experiment starts its measurements with it. Call once per process: it installs the
/// process's SIGINT and SIGTERM handler.
pub fn run(args: Vec<OsString>, executable: Option<PathBuf>) -> u8 {
    if let Some(exe) = executable {
        let _ = EXECUTABLE.set(exe);
    }
    allocator::huge_pages(false);
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    // Destructors do not run when a signal ends the process: end the child processes (an
    // experiment's measurements), whose own handlers remove their unfinished files, then
    // remove this process's unfinished outputs and scratch directories.
    let _ = ctrlc::set_handler(|| {
        INTERRUPTED.store(true, Ordering::SeqCst);
        lidx::files::stop_children(CHILD_GRACE);
        lidx::files::remove_pending_files();
        // Not eprintln!: with the parent that reads our stderr gone, it would panic here
        // and the process would run on.
        let _ = writeln!(
            std::io::stderr(),
            "lidx: interrupted; unfinished output removed"
        );
        std::process::exit(130);
    });
    let ctx = progress::Context { quiet: cli.quiet };
    let result = match cli.command {
        Command::Gen(args) => cmd::gen_keys::run(&ctx, args),
        Command::Table(c) => cmd::table::run(&ctx, c),
        Command::Index(c) => cmd::index::run(&ctx, c),
        Command::Sort(args) => cmd::sort::run(&ctx, args),
        Command::Hardness(args) => cmd::hardness::run(args),
        Command::Updatable(command) => cmd::updatable::run(command),
        #[cfg(feature = "rocksdb")]
        Command::Lsm(c) => cmd::lsm::run(&ctx, c),
        Command::Join(args) => cmd::join::run(&ctx, args),
        Command::Kv(c) => cmd::kv::run(&ctx, c),
        #[cfg(feature = "sql")]
        Command::Sql(args) => cmd::sql::run(&ctx, args),
        Command::Bench(c) => cmd::bench::run(&ctx, c),
        Command::Cache(c) => cmd::cache::run(c),
        Command::Experiment(c) => cmd::experiment::run(&ctx, c),
        Command::Demo(args) => cmd::demo::run(&ctx, args),
    };
    if INTERRUPTED.load(Ordering::SeqCst) {
        // The handler is cleaning up and exits with 130; the command's own ending (often
        // an error, as its child was stopped) is not the outcome.
        loop {
            std::thread::park();
        }
    }
    match result {
        Ok(()) => 0,
        Err(err) => {
            let broken_pipe = err.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return 0;
            }
            eprintln!("lidx: error: {}", one_line(&err));
            1
        }
    }
}

/// The error and its causes on one line, leaving out a cause whose text the message
/// already contains (library errors print their cause in their own message).
fn one_line(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line.replace('\n', " ")
}

/// Help and version go to stdout as clap prints them; any other command-line error is one
/// `lidx: error:` line and exit code 2.
fn usage_error(err: clap::Error) -> u8 {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            0
        }
        _ => {
            // clap's message up to its usage block, on one line: the arguments it names
            // (a missing one, say) sit on the lines below the first.
            let text = err.to_string();
            let message: Vec<&str> = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let message = message.join(" ");
            let message = message.strip_prefix("error: ").unwrap_or(&message);
            let message = if message.is_empty() {
                "invalid command line"
            } else {
                message
            };
            eprintln!("lidx: error: {message} (see lidx --help)");
            2
        }
    }
}
