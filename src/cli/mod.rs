//! The command line.

pub mod eval;
pub mod headless;
pub mod report;
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
    /// Run a panel over every item of a dataset, several at once, one session log per item.
    Eval(EvalArgs),
    /// Agreement of judges with human ratings, from run folders or session logs.
    Report(ReportArgs),
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

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Panel file, or the name of a bundled panel (storybook-qa, summary-collab).
    pub panel: String,
    /// Items file (JSONL, JSON or CSV), or the name of bundled items.
    #[arg(long)]
    pub data: String,
    /// Items running at once (providers apply their own limits on top).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: u32,
    /// Run folder (default: runs/<panel>-<time>); --resume needs it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue a run: skip completed items, run failed, stopped and unfinished ones again.
    #[arg(long, requires = "out")]
    pub resume: bool,
    /// Run at most N items (after --ids and --shard).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Run only these item ids (comma-separated).
    #[arg(long)]
    pub ids: Option<String>,
    /// Run part I of N of the items, split by a hash of the item id (e.g. 2/4).
    #[arg(long)]
    pub shard: Option<String>,
    /// Provider for every participant (openai, local).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model for every participant.
    #[arg(long)]
    pub model: Option<String>,
    /// Moderator policy: llm, round-robin, random, disagreement, least-spoken.
    #[arg(long)]
    pub moderator: Option<String>,
    /// Seed for shuffles, random moderation and providers that accept one.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Price of a million input tokens, for cost totals (also MOOT_PRICE_INPUT).
    #[arg(long, env = "MOOT_PRICE_INPUT")]
    pub price_input: Option<f64>,
    /// Price of a million output tokens, for cost totals (also MOOT_PRICE_OUTPUT).
    #[arg(long, env = "MOOT_PRICE_OUTPUT")]
    pub price_output: Option<f64>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run folders, folders of session logs, or session log files.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Human ratings keyed by item id (CSV or JSONL); they override ratings in the items and sessions.
    #[arg(long)]
    pub human: Option<PathBuf>,
    /// Output format: table, csv or json.
    #[arg(long, default_value = "table")]
    pub format: String,
    /// Bootstrap resamples for the 95% confidence intervals (0: no intervals).
    #[arg(long, default_value_t = 10_000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write SVG charts into this folder.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Price of a million input tokens (default: the run folder's, or MOOT_PRICE_INPUT).
    #[arg(long, env = "MOOT_PRICE_INPUT")]
    pub price_input: Option<f64>,
    /// Price of a million output tokens (default: the run folder's, or MOOT_PRICE_OUTPUT).
    #[arg(long, env = "MOOT_PRICE_OUTPUT")]
    pub price_output: Option<f64>,
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
        Some(Command::Eval(args)) => eval::run(args),
        Some(Command::Report(args)) => report::run(args),
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
