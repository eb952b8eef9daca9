//! The command line.

pub mod headless;
pub mod run;
pub mod sessions;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// Panels of LLM judges that evaluate generated text by debating — watch them, steer them, measure them.
#[derive(Debug, Parser)]
#[command(name = "moot", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a panel on one item, live (the bundled sample panel when no PANEL is given).
    Run(RunArgs),
    /// Replay a recorded session in the live screen.
    Replay {
        /// Session id or path to a session log.
        session: String,
        /// Playback speed, 0.25 to 32.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
    },
    /// Run a panel over every item of a dataset.
    Eval {
        panel: String,
        #[arg(long)]
        data: PathBuf,
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        resume: bool,
    },
    /// Agreement of judges with human ratings, from run folders or session logs.
    Report {
        paths: Vec<PathBuf>,
        #[arg(long)]
        human: Option<PathBuf>,
        #[arg(long, default_value = "table")]
        format: String,
    },
    /// List, show and export recorded sessions.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Panel file, or the name of a bundled panel (storybook-qa, summary-collab).
    pub panel: Option<String>,
    /// Items file (JSONL, JSON or CSV).
    #[arg(long)]
    pub item: Option<PathBuf>,
    /// Which item of the file (default: the first).
    #[arg(long)]
    pub id: Option<String>,
    /// Evaluate this text instead of an items file.
    #[arg(long, conflicts_with = "item")]
    pub content: Option<String>,
    /// Provider for every participant (openai, local).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model for every participant.
    #[arg(long)]
    pub model: Option<String>,
    /// Moderator policy: llm, round-robin, random, disagreement, least-spoken.
    #[arg(long)]
    pub moderator: Option<String>,
    /// Print a live transcript instead of opening the screen.
    #[arg(long)]
    pub headless: bool,
    /// With --headless: print the events as JSON lines instead.
    #[arg(long, requires = "headless")]
    pub json: bool,
    /// Folder for the session log (default ./sessions, or MOOT_SESSIONS_DIR).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed for shuffles, random moderation and providers that accept one.
    #[arg(long)]
    pub seed: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List recorded sessions, newest first.
    List {
        /// Folder to list (default ./sessions, or MOOT_SESSIONS_DIR).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Print a recorded session as a transcript.
    Show {
        /// Session id or path to a session log.
        session: String,
        /// Print the raw events as JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Export a session's results (final and initial scores per agent) as CSV or JSON.
    Export {
        session: String,
        #[arg(long, default_value = "json")]
        format: String,
    },
}

/// Parse arguments and run; the exit code follows the outcome.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Run(args)) => run::run(args),
        Some(Command::Sessions { command }) => sessions::run(command),
        None => not_yet("the home screen"),
        Some(Command::Replay { .. }) => not_yet("`moot replay`"),
        Some(Command::Eval { .. }) => not_yet("`moot eval`"),
        Some(Command::Report { .. }) => not_yet("`moot report`"),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("moot: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn not_yet(what: &str) -> anyhow::Result<ExitCode> {
    eprintln!("moot: {what} is not available in this version yet; `moot run --headless` and `moot sessions` are.");
    Ok(ExitCode::from(2))
}
