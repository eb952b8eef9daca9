//! The command line.

pub mod bench;
pub mod cache;
pub mod eval;
pub mod headless;
pub mod logging;
pub mod optimize;
mod optimize_resume;
pub mod personas;
pub mod providers;
pub mod report;
pub mod resume;
pub mod run;
pub mod sessions;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

const ENVIRONMENT: &str = "Environment:
  MOOT_CONFIG        config file: providers, screen settings and keys (default ./moot.toml, then the user config file)
  MOOT_SESSIONS_DIR  folder for session logs (default ./sessions)
  MOOT_MODEL_DIR     where local models are kept; MOOT_CACHE_DIR: the response cache
  MOOT_USER          name put on your comments and overrides (default $USER)
  MOOT_LOG           log filter, e.g. warn (default), moot=debug
  MOOT_LOG_FILE      log file (default moot.log in the state directory, ~/.local/state/moot on Linux)";

/// The end of `run --help` and `eval --help`: every bundled panel with its
/// title, from the panels compiled into the binary.
fn bundled_panels_help() -> &'static str {
    static HELP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        use std::fmt::Write;
        let panels: Vec<(&str, String)> = crate::panel::Panel::bundled_titles().collect();
        let width = panels.iter().map(|(stem, _)| stem.len()).max().unwrap_or(0);
        let mut s = String::from("Bundled panels (PANEL may name one; docs/panels.md):");
        for (stem, title) in panels {
            let _ = write!(s, "\n  {stem:<width$}  {title}");
        }
        s
    });
    &HELP
}

/// Panels of LLM judges that evaluate generated text by debating — watch them, steer them, measure them.
#[derive(Debug, Parser)]
#[command(name = "moot", version, about, long_about = None, after_help = ENVIRONMENT)]
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
    /// Replay a recorded session in the live screen, or an optimisation run (its folder or optimize.jsonl).
    Replay {
        /// Session id or path to a session log, or an optimisation run folder.
        session: String,
        /// Playback speed, 0.25 to 32.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// Colour theme (dark, light, high-contrast, or a user theme).
        #[arg(long)]
        theme: Option<String>,
    },
    /// Run a panel over every item of a dataset, several at once, one session log per item.
    Eval(EvalArgs),
    /// Agreement of judges with human ratings, from run folders or session logs.
    Report(ReportArgs),
    /// Time a run headless (the sample panel on the embedded model by default): setup, first score, whole run.
    Bench(bench::BenchArgs),
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
    /// Optimise a judge's prompt against human labels: feedback and rewrites you review, best held-out prompt kept.
    Optimize(optimize::OptimizeArgs),
    /// Build a stakeholder panel from documents: stakeholders, their perspectives with checked evidence, personas.
    Personas(personas::PersonasArgs),
    /// Inspect or clear the response cache.
    Cache {
        #[command(subcommand)]
        command: cache::CacheCommand,
    },
}

/// Who judges with what: options shared by `run` and `eval`.
#[derive(Debug, Clone, Args, Default)]
pub struct ModelArgs {
    /// Provider for every participant: openai, anthropic, local, or a name from moot.toml.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model for every participant (for the local provider: a known model such as smollm2-135m, or a GGUF path).
    #[arg(long)]
    pub model: Option<String>,
    /// Moderator policy: llm, round-robin, random, disagreement, least-spoken.
    #[arg(long)]
    pub moderator: Option<String>,
    /// Seed for shuffles, random moderation and providers that accept one.
    #[arg(long)]
    pub seed: Option<u64>,
}

impl ModelArgs {
    /// Apply `--moderator` to the panel, bind every participant to its provider
    /// and model (`--provider`/`--model` override the panel), and pick the seed
    /// (`--seed`, else the panel's, else random).
    pub fn bind(
        &self,
        panel: &mut crate::panel::Panel,
        registry: &mut crate::config::registry::Registry,
    ) -> anyhow::Result<(crate::engine::Bindings, u64)> {
        run::set_moderator(panel, self.moderator.as_deref())?;
        let bindings = crate::engine::bindings::bind(registry, panel, self.provider.as_deref(), self.model.as_deref())?;
        let seed = self.seed.or(panel.generation.seed).unwrap_or_else(rand::random);
        Ok((bindings, seed))
    }
}

/// A `--format` name of items (moot's own or a dataset's), lower-cased.
fn items_format(s: &str) -> Result<String, String> {
    crate::item::Format::from_name(s).map(|_| s.trim().to_ascii_lowercase()).map_err(|e| e.to_string())
}

/// A positive, finite amount (a cost limit).
fn positive_amount(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number")),
    }
}

/// What one session may spend: options shared by `run` and `eval`.
#[derive(Debug, Clone, Copy, Args, Default)]
pub struct BudgetArgs {
    /// Stop a session's debate (and go to aggregation) once it has used this many tokens.
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens_total: Option<u64>,
    /// Stop a session's debate (and go to aggregation) once its cost reaches this (needs provider prices in moot.toml).
    #[arg(long, value_name = "AMOUNT", value_parser = positive_amount)]
    pub max_cost: Option<f64>,
}

impl BudgetArgs {
    pub fn budget(&self) -> crate::engine::Budget {
        crate::engine::Budget { max_tokens_total: self.max_tokens_total, max_cost: self.max_cost }
    }
}

#[derive(Debug, Args, Default)]
#[command(after_help = bundled_panels_help())]
pub struct RunArgs {
    /// Panel file, or the name of a bundled panel (listed below).
    pub panel: Option<String>,
    /// Resume an interrupted session (its id, a unique prefix of it, or its
    /// log's path): its panel, item and seed come from its log, the turns
    /// it completed are taken from the log (no call is made again), turns
    /// cut off are asked again, and it goes on in the same log.
    #[arg(long, value_name = "SESSION", conflicts_with_all = ["panel", "item", "id", "content", "blind", "out", "seed", "moderator"])]
    pub resume: Option<String>,
    /// Items file (JSONL, JSON or CSV).
    #[arg(long)]
    pub item: Option<PathBuf>,
    /// Which item of the file (default: the first).
    #[arg(long)]
    pub id: Option<String>,
    /// Evaluate this text instead of an items file.
    #[arg(long, conflicts_with = "item")]
    pub content: Option<String>,
    #[command(flatten)]
    pub models: ModelArgs,
    /// Print a live transcript instead of opening the screen.
    #[arg(long)]
    pub headless: bool,
    /// With --headless: print the events as JSON lines instead.
    #[arg(long, requires = "headless")]
    pub json: bool,
    /// Folder for the session log (default ./sessions, or MOOT_SESSIONS_DIR).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Answer repeated requests from the on-disk response cache.
    #[arg(long, overrides_with = "no_cache")]
    pub cache: bool,
    /// Do not use the response cache.
    #[arg(long, overrides_with = "cache")]
    pub no_cache: bool,
    /// Colour theme of the live screen (dark, light, high-contrast, or a user theme).
    #[arg(long)]
    pub theme: Option<String>,
    /// Pairwise: judge blind. The screen hides the systems' names and shows
    /// each pair in a random (seeded, recorded) order; the judges' verdicts
    /// on a pair stay hidden until you give your own (A, B or T), which is
    /// recorded as a human label.
    #[arg(long)]
    pub blind: bool,
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

#[derive(Debug, Args)]
#[command(after_help = bundled_panels_help())]
pub struct EvalArgs {
    /// Panel file, or the name of a bundled panel (listed below).
    pub panel: String,
    /// Items file (JSONL, JSON or CSV), a dataset's own file or folder (see --format), or the name
    /// of bundled items (storybook-qa, mslr-cochrane, summeval, …).
    #[arg(long)]
    pub data: String,
    /// Format of --data: jsonl, json or csv (moot's own items), or a public dataset in the files
    /// its authors distribute: mslr (MSLR-Cochrane facet sheets; a folder merges the annotators),
    /// mslr-pairwise, summeval (G-Eval's summeval.json), summeval-annotations (SummEval's
    /// per-expert JSONL), topical-chat, mt-bench (human judgments), stsb (GLUE or original STS-B).
    /// Without it a known dataset is recognised by its header or keys, else the extension
    /// decides. docs/datasets.md has each mapping.
    #[arg(long, value_name = "NAME", value_parser = items_format)]
    pub format: Option<String>,
    /// Items running at once (providers apply their own limits on top); default 4, and with
    /// batches every selected item (one waiting for its batch holds no connection).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: Option<u32>,
    /// Run folder (default: runs/<panel>-<time>); --resume needs it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue a run: skip completed items, run failed, stopped and unfinished ones again (with the run's seed; its models must be the same).
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
    #[command(flatten)]
    pub models: ModelArgs,
    /// Do not answer repeated requests from the response cache (the cache is on by default for moot eval).
    #[arg(long)]
    pub no_cache: bool,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Stop the whole run once its sessions have used this many tokens: running debates go to
    /// aggregation, no new item starts (--resume continues later).
    #[arg(long, value_name = "TOKENS")]
    pub run_max_tokens: Option<u64>,
    /// Stop the whole run once its cost reaches this (provider prices, else --price-input/--price-output).
    #[arg(long, value_name = "AMOUNT", value_parser = positive_amount)]
    pub run_max_cost: Option<f64>,
    /// Price of a million input tokens, for cost totals (also MOOT_PRICE_INPUT).
    #[arg(long, env = "MOOT_PRICE_INPUT")]
    pub price_input: Option<f64>,
    /// Price of a million output tokens, for cost totals (also MOOT_PRICE_OUTPUT).
    #[arg(long, env = "MOOT_PRICE_OUTPUT")]
    pub price_output: Option<f64>,
    #[command(flatten)]
    pub batching: eval::BatchArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run folders, folders of session logs, or session log files.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Human ratings keyed by item id (CSV or JSONL); they override ratings in the items and sessions.
    #[arg(long)]
    pub human: Option<PathBuf>,
    /// Output format: table, csv, json or html (one self-contained page; see docs/html.md).
    #[arg(long, default_value = "table")]
    pub format: String,
    /// Write the output here instead of to stdout; with `--format html`, a
    /// folder (index.html, and each item's session page under sessions/) when
    /// it ends in `/` or is an existing folder.
    #[arg(long, value_name = "FILE|DIR")]
    pub out: Option<PathBuf>,
    /// Bootstrap resamples for the 95% confidence intervals (0: no intervals).
    #[arg(long, default_value_t = 10_000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Table format: add each agent's own correlations with the humans at the initial and final stages
    /// (CSV and JSON always carry them, as rows with `agent` set).
    #[arg(long)]
    pub agents: bool,
    /// Write SVG charts into this folder.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Print a paper's table as this run fills it, with the paper's figures beside moot's:
    /// maj-eval, collab-eval, sage-eval, masa, prompt-opt (NAME:TABLE for one of its tables).
    #[arg(long, value_name = "NAME")]
    pub paper: Option<String>,
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
    /// Export a session's scores as CSV or JSON, or the whole session as one
    /// self-contained HTML page (`--format html`). The rows: per agent `initial`, `final`
    /// and `human_adjusted`, per group and for the panel `aggregate` and
    /// `human_adjusted`. `initial`, `final` and `aggregate` are the judges'
    /// own values; `human_adjusted` has the values people set, named with
    /// their author in `set_by` (`grammar=alice`). A result without scores
    /// says why in `no_result`. See docs/session-log.md.
    Export {
        session: String,
        /// `json` (an array of rows), `csv` (one column per dimension, then
        /// `overall`, `set_by`, `no_result`) or `html` (the whole session as
        /// one self-contained page; see docs/html.md).
        #[arg(long, default_value = "json")]
        format: String,
        /// Write to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// Parse arguments and run; the exit code follows the outcome.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init();
    let result = match cli.command {
        Some(Command::Run(args)) => run::run(args),
        Some(Command::Sessions { command }) => sessions::run(command),
        Some(Command::Model { command }) => model_command(command),
        Some(Command::Providers(args)) => providers::run(args),
        Some(Command::Cache { command }) => cache::run(command),
        None => home(cli.theme.as_deref()),
        Some(Command::Replay { session, speed, theme }) => replay(&session, speed, theme.as_deref()),
        Some(Command::Eval(args)) => eval::run(args),
        Some(Command::Report(args)) => report::run(args),
        Some(Command::Bench(args)) => bench::run(args),
        Some(Command::Optimize(args)) => optimize::run(args),
        Some(Command::Personas(args)) => personas::run(args),
    };
    // The embedded model's threads free it before the process ends.
    #[cfg(feature = "local")]
    crate::provider::local::wait_for_workers(std::time::Duration::from_secs(10));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("moot: {}", crate::errors::error_text(&e));
            ExitCode::from(1)
        }
    }
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
    if let Some(log) = crate::optimize::log::find_log(std::path::Path::new(session)) {
        let events = crate::optimize::log::read_log(&log)?;
        let env = screen_env(theme)?;
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        runtime.block_on(async {
            let mut tui = crate::tui::Tui::enter()?;
            crate::tui::optimize::replay(&mut tui, env, events, speed).await
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let path = sessions::resolve_session(session)?;
    let log = crate::tui::load_events(&path)?;
    let problems = log.problems.clone();
    let env = screen_env(theme)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut tui = crate::tui::Tui::enter()?;
        crate::tui::replay(&mut tui, env, log, speed).await
    })?;
    // The screen showed the first; the terminal keeps them all.
    for p in problems {
        eprintln!("moot: {}: {p}", if p.is_torn() { "note" } else { "warning" });
    }
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
    let build = |panel: &str| -> anyhow::Result<crate::tui::StartRun> {
        let plan = run::RunPlan::new(&RunArgs { panel: Some(panel.to_string()), ..RunArgs::default() })?;
        let title = plan.title();
        let models = ModelArgs::default();
        Ok(crate::tui::StartRun { title, bind: Box::new(move |sink| plan.bind(&models, Some(sink))) })
    };
    let resume_one = |path: &std::path::Path| -> anyhow::Result<crate::tui::StartResume> {
        let resumable = resume::Resumable::at(path)?;
        let (path, journal) = (resumable.path.clone(), resumable.journal.clone());
        let title = format!("resuming {}", path.display());
        let bind = Box::new(move |_: crate::model::ProgressSink| {
            resumable.bind(&ModelArgs::default(), false, crate::engine::Budget::default())
        });
        Ok(crate::tui::StartResume { title, path, journal, bind })
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut tui = crate::tui::Tui::enter()?;
        crate::tui::home(&mut tui, env, dirs, &build, &resume_one).await
    })?;
    Ok(ExitCode::SUCCESS)
}
