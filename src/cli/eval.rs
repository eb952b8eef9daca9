//! `moot eval`: a panel over a dataset, with a progress line on stderr.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::EvalArgs;
use super::run::load_panel;
use crate::config::registry::Registry;
use crate::eval::progress::{self, Progress, Style};
use crate::eval::{EvalConfig, EvalSummary, Pricing, Selection, Shard};
use crate::provider::batch::{BatchSettings, Batcher};

/// Items running at once when `--concurrency` is not given and no call is batched.
const DEFAULT_CONCURRENCY: u32 = 4;

/// `moot eval`'s batch API flags (see docs/eval.md, *Batch APIs*).
#[derive(Debug, clap::Args)]
pub struct BatchArgs {
    /// Send the calls no one waits for live (first evaluations, G-Eval scores and steps, pairwise
    /// judgments) through the providers' batch APIs (OpenAI, Anthropic): half price, answered
    /// within 24 hours; later phases run live. `batch = true` in a provider's table of moot.toml
    /// does it for that provider.
    #[arg(long, conflicts_with = "no_batch")]
    pub batch: bool,
    /// Keep every call live, whatever moot.toml says.
    #[arg(long)]
    pub no_batch: bool,
    /// Seconds before the first look at a pending batch; the wait doubles up to ten times this.
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = positive_secs)]
    pub batch_poll: f64,
    /// Seconds without a new request before the gathered requests go up as a batch.
    #[arg(long, value_name = "SECS", default_value_t = 2.0, value_parser = positive_secs)]
    pub batch_gather: f64,
    /// At most this many requests in one batch.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=50_000))]
    pub batch_max: u64,
}

fn positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a positive number of seconds")),
    }
}

impl BatchArgs {
    /// Whether some provider may batch: `--batch`, or a provider configured with `batch = true`.
    fn on(&self, registry: &Registry) -> bool {
        !self.no_batch && (self.batch || registry.config().providers.values().any(|p| p.batch == Some(true)))
    }

    fn settings(&self) -> BatchSettings {
        BatchSettings {
            all: self.batch,
            poll: Duration::from_secs_f64(self.batch_poll),
            gather: Duration::from_secs_f64(self.batch_gather),
            max_requests: self.batch_max as usize,
            ..BatchSettings::default()
        }
    }
}

/// `--batch` when none of the providers the panel uses has a batch API
/// (the embedded model has none): refused before any provider is built.
fn refuse_unbatchable(registry: &Registry, panel: &crate::panel::Panel, args: &EvalArgs) -> anyhow::Result<()> {
    let used = super::run::used_providers(registry, panel, &args.models);
    let can = |name: &String| {
        let http = registry.config().kind_of(name).is_some_and(|k| k != crate::config::ProviderKind::Local);
        http && registry.config().providers.get(name).and_then(|p| p.batch) != Some(false)
    };
    if args.batching.batch && !used.iter().any(can) {
        anyhow::bail!(
            "--batch: none of the providers this panel uses ({}) has a batch API; batches are for OpenAI and \
             Anthropic providers (the embedded model has none, and answers at once anyway). Run without --batch",
            used.join(", ")
        );
    }
    Ok(())
}

/// With batches: which used providers batch, and which do not and why.
fn batch_notes(registry: &Registry, panel: &crate::panel::Panel, args: &EvalArgs, batcher: &Batcher) -> Vec<String> {
    let batching = batcher.providers();
    let mut notes = Vec::new();
    for name in super::run::used_providers(registry, panel, &args.models).iter().filter(|n| !batching.contains(n)) {
        let kind = registry.config().kind_of(name);
        let configured = registry.config().providers.get(name).and_then(|p| p.batch);
        if kind == Some(crate::config::ProviderKind::Local) && args.batching.batch {
            notes.push(format!("provider {name} is the embedded model, which has no batch API; its calls run live"));
        } else if configured == Some(false) {
            notes.push(format!("provider {name} has batch = false in moot.toml; its calls run live"));
        }
    }
    if !batching.is_empty() {
        notes.push(format!(
            "batches: {} send first evaluations, scores and pairwise judgments through their batch APIs \
             (half price, answered within 24 h); later phases run live",
            batching.join(", ")
        ));
    }
    notes
}

/// Seconds between plain progress lines when stderr is not a terminal
/// (`MOOT_PROGRESS_SECS` overrides).
const PLAIN_EVERY_SECS: u64 = 10;

/// Resamples of the end summary's pairwise intervals (as `moot report`).
const PAIRWISE_RESAMPLES: usize = 10_000;

/// Prices from the two flags (a missing one counts as 0).
pub fn pricing(input: Option<f64>, output: Option<f64>) -> anyhow::Result<Option<Pricing>> {
    if input.is_none() && output.is_none() {
        return Ok(None);
    }
    let (i, o) = (input.unwrap_or(0.0), output.unwrap_or(0.0));
    if !(i.is_finite() && o.is_finite() && i >= 0.0 && o >= 0.0) {
        anyhow::bail!("prices must be non-negative numbers (per million tokens)");
    }
    Ok(Some(Pricing { input_per_mtok: i, output_per_mtok: o }))
}

/// Providers whose own concurrency limit is below what `--concurrency` asks
/// for (each item makes one call per agent at once in its first phase), so
/// items will wait for them.
fn concurrency_notes(
    registry: &Registry,
    panel: &crate::panel::Panel,
    args: &EvalArgs,
    concurrency: u32,
) -> Vec<String> {
    let agents = panel.agents().count().max(1);
    let wanted = concurrency as usize * agents;
    super::run::used_providers(registry, panel, &args.models)
        .into_iter()
        .filter_map(|name| {
            let pc = registry.config().providers.get(&name).cloned().unwrap_or_default();
            let kind = registry.config().kind_of(&name)?;
            // The embedded model queues its calls itself unless a limit is configured.
            if kind == crate::config::ProviderKind::Local && pc.max_concurrency.is_none() {
                return None;
            }
            // A pool's limit is each endpoint's.
            let limit = pc.limits().max_concurrency * pc.urls().map_or(1, |u| u.len());
            (limit < wanted).then(|| {
                format!(
                    "provider {name} takes at most {limit} calls at once (max_concurrency in moot.toml); \
                     --concurrency {concurrency} with {agents} agents asks for up to {wanted}, so calls will queue"
                )
            })
        })
        .collect()
}

fn default_out(panel_name: &str) -> PathBuf {
    let slug: String = panel_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    PathBuf::from("runs").join(format!("{}-{}", slug, chrono::Utc::now().format("%Y%m%dT%H%M%S")))
}

pub fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let mut panel = load_panel(Some(&args.panel))?;
    let file = crate::item::resolve_items_as(&args.data, args.format.as_deref())?;
    for problem in &file.skipped {
        eprintln!("moot eval: {}: {problem} (skipped)", file.source);
    }
    let shard = args.shard.as_deref().map(str::parse::<Shard>).transpose().map_err(anyhow::Error::msg)?;
    let selection = Selection { ids: args.ids.as_deref().map(Selection::parse_ids), shard, limit: args.limit };
    let mut registry = Registry::from_env()?;
    if !args.no_cache {
        registry.set_cache(Some(crate::provider::cache::ResponseCache::new(
            crate::provider::cache::ResponseCache::default_dir(),
        )));
    }
    let out = args.out.clone().unwrap_or_else(|| default_out(&panel.name));
    let batcher = match args.batching.on(&registry) {
        true => Some(crate::eval::batch::batcher(args.batching.settings(), &out, shard)?),
        false => None,
    };
    if batcher.is_some() {
        refuse_unbatchable(&registry, &panel, &args)?;
    }
    registry.set_batch(batcher.clone());
    let (bindings, mut seed) = args.models.bind(&mut panel, &mut registry)?;
    // A resumed run keeps its seed unless one is given (a different one is refused).
    if args.resume
        && args.models.seed.is_none()
        && let Some(previous) = crate::eval::shard::load(&out, &crate::eval::shard::manifest_name(shard))?
    {
        seed = previous.seed;
    }
    if let Some(b) = &batcher {
        for line in batch_notes(&registry, &panel, &args, b) {
            eprintln!("moot eval: note: {line}");
        }
    }
    let batching = batcher.as_ref().is_some_and(|b| !b.providers().is_empty());
    let concurrency = match (args.concurrency, batching) {
        (Some(c), _) => c,
        // Every item at once: its first phase joins the batch, the rest waits for it.
        (None, true) => u32::try_from(file.items.len().max(1)).unwrap_or(u32::MAX),
        (None, false) => DEFAULT_CONCURRENCY,
    };
    let pricing = pricing(args.price_input, args.price_output)?;
    let note = super::run::provider_note(&registry, &panel, &args.models, args.budget.max_cost.is_some());
    if args.run_max_cost.is_some() && pricing.is_none() {
        let unpriced = super::run::unpriced_providers(&registry, &panel, &args.models);
        if !unpriced.is_empty() {
            eprintln!(
                "moot eval: warning: --run-max-cost: no prices for {} and no --price-input/--price-output; \
                 their calls count as free",
                unpriced.join(", ")
            );
        }
    }
    if !batching {
        for line in concurrency_notes(&registry, &panel, &args, concurrency) {
            eprintln!("moot eval: note: {line}");
        }
    }
    for warning in note.split("; warning: ").skip(1) {
        eprintln!("moot eval: warning: {warning}");
    }
    let panel = Arc::new(panel);
    let mut config = EvalConfig::new(panel, bindings, file.items, out);
    config.provider_note = Some(note);
    config.steps_cache = Some(crate::engine::stages::StepsCache::default_dir());
    config.budget = args.budget.budget();
    let run_budget = crate::engine::Budget { max_tokens_total: args.run_max_tokens, max_cost: args.run_max_cost };
    if !run_budget.is_unlimited() {
        let fallback = pricing.map(|p| crate::provider::pricing::Prices {
            input_per_million: p.input_per_mtok,
            output_per_million: p.output_per_mtok,
        });
        config.run_budget = Some(Arc::new(crate::engine::RunBudget::new(run_budget, fallback)));
    }
    config.data = args.data.clone();
    config.bad_items = file.skipped;
    config.selection = selection;
    config.concurrency = concurrency as usize;
    config.resume = args.resume;
    config.seed = seed;
    config.pricing = pricing;

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let batcher = batcher.filter(|_| batching);
    runtime.block_on(run_async(config, args, batcher))
}

async fn run_async(config: EvalConfig, args: EvalArgs, batcher: Option<Batcher>) -> anyhow::Result<ExitCode> {
    let cancel = CancellationToken::new();
    let quit_now = CancellationToken::new();
    let pre = config.selection.apply(&config.items).map(|s| s.len()).unwrap_or(0);
    let progress = Arc::new(Progress::new(pre, config.pricing));
    let style = if std::io::stderr().is_terminal() {
        Style::Bar
    } else {
        let secs = std::env::var("MOOT_PROGRESS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(PLAIN_EVERY_SECS);
        Style::Lines { every: Duration::from_secs(secs.max(1)) }
    };
    // The bars (on a terminal); lines printed while they show go above them.
    let bars = progress::draw_target(style);
    let signals = tokio::spawn({
        let (cancel, quit_now, bars) = (cancel.clone(), quit_now.clone(), bars.clone());
        async move {
            let mut count = 0;
            while tokio::signal::ctrl_c().await.is_ok() {
                count += 1;
                if count == 1 {
                    // The bars are cleared for the line and drawn again under it.
                    let lead = if style == Style::Bar { "" } else { "\n" };
                    bars.suspend(|| {
                        eprintln!(
                            "{lead}moot eval: stopping: no new items start, running sessions end as `stopped` (Ctrl-C again to quit now)"
                        )
                    });
                    cancel.cancel();
                } else {
                    quit_now.cancel();
                    return;
                }
            }
        }
    });
    let (dir, seed) = (config.out.clone(), config.seed);
    let bindings = config.bindings.clone();
    eprintln!("moot eval: run folder {}", dir.display());
    let stop_printer = CancellationToken::new();
    // The bar counts the items this invocation runs; resumed items are known only
    // once the folder is read, so the total is adjusted when the run starts.
    let batch_printer = batcher
        .clone()
        .map(|b| tokio::spawn(crate::eval::batch::print_batches(b, style, bars.clone(), stop_printer.clone())));
    let printer = tokio::spawn(progress::print_progress(progress.clone(), style, bars, stop_printer.clone()));
    let result = tokio::select! {
        r = crate::eval::run_eval(config, Some(progress.clone()), cancel.clone()) => Some(r),
        () = quit_now.cancelled() => None,
    };
    stop_printer.cancel();
    let _ = printer.await;
    if let Some(p) = batch_printer {
        let _ = p.await;
    }
    signals.abort();
    if let Some(b) = &batcher {
        for line in crate::eval::batch::summary(b, &crate::eval::batch::batch_file(&dir, shard_of(&args))) {
            eprintln!("moot eval: {line}");
        }
    }
    let Some(result) = result else {
        eprintln!(
            "moot eval: quit; unfinished logs are kept and run again with: {}",
            resume_command(&args, &dir, seed)
        );
        return Ok(ExitCode::from(130));
    };
    let summary = result?;
    print_summary(&summary, &args, seed);
    for pool in bindings.pools() {
        eprintln!("moot eval: {}", pool.summary_line());
    }
    for line in progress.pairwise().summary(PAIRWISE_RESAMPLES, 0) {
        eprintln!("moot eval: {line}");
    }
    Ok(if summary.interrupted || summary.budget_reached.is_some() {
        ExitCode::from(3)
    } else if summary.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The shard the run was given, if any.
fn shard_of(args: &EvalArgs) -> Option<Shard> {
    args.shard.as_deref().and_then(|s| s.parse().ok())
}

/// The command that resumes this run in `dir`: the same panel, data and
/// options that decide what is run and how (the format, the items chosen,
/// providers, models, the moderator, the seed, the cache, the session
/// budgets, batching). A run budget is left out: it is what stopped the run,
/// and a resumed run takes a larger one or none.
fn resume_command(args: &EvalArgs, dir: &Path, seed: u64) -> String {
    let mut words = vec!["moot".to_string(), "eval".into(), args.panel.clone(), "--data".into(), args.data.clone()];
    let mut opt = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            words.extend([format!("--{name}"), v]);
        }
    };
    opt("format", args.format.clone());
    opt("ids", args.ids.clone());
    opt("limit", args.limit.map(|n| n.to_string()));
    opt("shard", args.shard.clone());
    opt("provider", args.models.provider.clone());
    opt("model", args.models.model.clone());
    opt("moderator", args.models.moderator.clone());
    opt("seed", Some(seed.to_string()));
    opt("concurrency", args.concurrency.map(|n| n.to_string()));
    opt("max-tokens-total", args.budget.max_tokens_total.map(|n| n.to_string()));
    opt("max-cost", args.budget.max_cost.map(|n| n.to_string()));
    opt("price-input", args.price_input.map(|n| n.to_string()));
    opt("price-output", args.price_output.map(|n| n.to_string()));
    if args.no_cache {
        words.push("--no-cache".into());
    }
    // A resumed batch run collects its pending batches only with batches on.
    if args.batching.batch {
        words.push("--batch".into());
    }
    if args.batching.no_batch {
        words.push("--no-batch".into());
    }
    words.extend(["--out".into(), dir.display().to_string(), "--resume".into()]);
    words.iter().map(|w| shell_word(w)).collect::<Vec<_>>().join(" ")
}

/// `word` as a shell reads it back: as it is when it has only characters
/// no shell treats specially, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn print_summary(s: &EvalSummary, args: &EvalArgs, seed: u64) {
    let c = &s.counts;
    let mut line = format!(
        "moot eval: {} items: {} completed, {} failed, {} stopped, {} not started",
        c.items, c.completed, c.failed, c.stopped, c.not_started
    );
    if c.already_done > 0 {
        line.push_str(&format!(" ({} completed before and skipped)", c.already_done));
    }
    if c.bad_items > 0 {
        let lines = if c.bad_items == 1 { "line" } else { "lines" };
        line.push_str(&format!("; {} bad {lines} in the data skipped", c.bad_items));
    }
    eprintln!("{line}");
    // Servers that say how much of each prompt came from their prefix cache.
    let cached = s
        .usage
        .cached_input_tokens
        .map(|c| format!(", {} of it from the servers' prefix caches", progress::fmt_tokens(c)))
        .unwrap_or_default();
    let mut totals = format!(
        "moot eval: tokens this run {} (in {}{cached}, out {}); folder total {}",
        progress::fmt_tokens(s.usage.total()),
        progress::fmt_tokens(s.usage.input_tokens),
        progress::fmt_tokens(s.usage.output_tokens),
        progress::fmt_tokens(s.totals.input_tokens + s.totals.output_tokens)
    );
    if let Some(cost) = s.totals.cost {
        totals.push_str(&format!("; cost total {cost:.4}"));
    }
    eprintln!("{totals}");
    for p in &s.moved_aside {
        eprintln!("moot eval: earlier attempt kept as {}", p.display());
    }
    for f in s.failures.iter().take(10) {
        eprintln!("moot eval:   {} {}: {}", f.id, f.status.as_str(), f.error.as_deref().unwrap_or(""));
    }
    if s.failures.len() > 10 {
        eprintln!("moot eval:   … and {} more (see run.json)", s.failures.len() - 10);
    }
    if let Some(reason) = &s.budget_reached {
        eprintln!("moot eval: stopped: {reason}");
    }
    if !s.failures.is_empty() || c.not_started > 0 {
        eprintln!("moot eval: to run the rest: {}", resume_command(args, &s.dir, seed));
    }
    eprintln!(
        "moot eval: results: {} (moot report {})",
        s.dir.join(crate::session::run_folder::MANIFEST).display(),
        s.dir.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_the_resume_command_read_back_as_given() {
        assert_eq!(shell_word("runs/qa-1.5b"), "runs/qa-1.5b");
        assert_eq!(shell_word("my runs"), "'my runs'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
