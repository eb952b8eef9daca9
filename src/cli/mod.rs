//! The command line.

pub mod cache;
pub mod headless;
pub mod providers;
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
    /// Colour theme of the home screen (dark, light, high-contrast, or a user theme).
    #[arg(long)]
    pub theme: Option<String>,
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
        /// Colour theme (dark, light, high-contrast, or a user theme).
        #[arg(long)]
        theme: Option<String>,
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
    /// The embedded local model: fetch it, see what is installed, print its path.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// List, show and export recorded sessions.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Show the configured providers, where each setting comes from and who uses them; `check` tests them.
    Providers(providers::ProvidersArgs),
    /// Inspect or clear the response cache.
    Cache {
        #[command(subcommand)]
        command: cache::CacheCommand,
    },
}

#[derive(Debug, Args, Default)]
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
    /// Stop the debate (and go to aggregation) once this many tokens are used.
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens_total: Option<u64>,
    /// Stop the debate (and go to aggregation) once the cost reaches this (needs configured prices).
    #[arg(long, value_name = "AMOUNT")]
    pub max_cost: Option<f64>,
    /// Answer repeated requests from the on-disk response cache.
    #[arg(long, overrides_with = "no_cache")]
    pub cache: bool,
    /// Do not use the response cache.
    #[arg(long, overrides_with = "cache")]
    pub no_cache: bool,
    /// Colour theme of the live screen (dark, light, high-contrast, or a user theme).
    #[arg(long)]
    pub theme: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Fetch a model into the cache (the default model when no NAME is given), checking its SHA-256.
    Pull { name: Option<String> },
    /// Known and cached models: where, size, hash.
    Status,
    /// Print the path of a model file (the default model when no NAME is given).
    Path { name: Option<String> },
}

fn model_command(command: ModelCommand) -> anyhow::Result<ExitCode> {
    match command {
        ModelCommand::Pull { name } => crate::model::cmd_pull(name.as_deref())?,
        ModelCommand::Status => crate::model::cmd_status()?,
        ModelCommand::Path { name } => crate::model::cmd_path(name.as_deref())?,
    }
    Ok(ExitCode::SUCCESS)
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
        Some(Command::Model { command }) => model_command(command),
        Some(Command::Providers(args)) => providers::run(args),
        Some(Command::Cache { command }) => cache::run(command),
        None => home(cli.theme.as_deref()),
        Some(Command::Replay { session, speed, theme }) => replay(&session, speed, theme.as_deref()),
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

fn screen_env(theme: Option<&str>) -> anyhow::Result<crate::tui::app::Env> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("this screen needs a terminal (try `moot sessions list` or `moot run --headless`)");
    }
    Ok(crate::tui::app::Env::new(crate::tui::config::UiConfig::load(theme)?))
}

fn replay(session: &str, speed: f64, theme: Option<&str>) -> anyhow::Result<ExitCode> {
    if !(crate::tui::replay::MIN_SPEED..=crate::tui::replay::MAX_SPEED).contains(&speed) {
        anyhow::bail!("--speed: {speed} is outside 0.25 to 32");
    }
    let path = sessions::resolve_session(session)?;
    let events = crate::tui::load_events(&path)?;
    let env = screen_env(theme)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut tui = crate::tui::Tui::enter()?;
        crate::tui::replay(&mut tui, env, events, speed).await
    })?;
    Ok(ExitCode::SUCCESS)
}

fn home(theme: Option<&str>) -> anyhow::Result<ExitCode> {
    let env = screen_env(theme)?;
    let mut dirs = vec![PathBuf::from("sessions")];
    for d in [Some(crate::session::default_sessions_dir()), env.config.ui.sessions_dir.clone()].into_iter().flatten() {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    let build = |panel: &str| {
        let args = RunArgs { panel: Some(panel.to_string()), ..RunArgs::default() };
        run::build_config(&args)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut tui = crate::tui::Tui::enter()?;
        crate::tui::home(&mut tui, env, dirs, &build).await
    })?;
    Ok(ExitCode::SUCCESS)
}
