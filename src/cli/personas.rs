//! `moot personas`: a stakeholder panel built from documents.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;

use crate::config::registry::Registry;
use crate::panel::{Panel, Protocol};
use crate::personas::log::{BuildEvent, BuildEventKind, BuildLog, BuildStatus, read_log};
use crate::personas::panel::PanelOptions;
use crate::personas::state::BuildState;
use crate::personas::{self, Ctx, Document, Model, Options, num};
use crate::provider::cache::ResponseCache;
use crate::tui::personas::Exit;

/// The bundled sample: a task and three short interview-study documents
/// about shared reading with young children, written for this project.
pub const SAMPLE_TASK: &str = include_str!("../../assets/docs/task.txt");
pub const SAMPLE_DOCS: &[(&str, &str)] = &[
    ("teachers-interviews.md", include_str!("../../assets/docs/teachers-interviews.md")),
    ("parents-diary-study.md", include_str!("../../assets/docs/parents-diary-study.md")),
    ("child-development-review.md", include_str!("../../assets/docs/child-development-review.md")),
];

#[derive(Debug, Args)]
pub struct PersonasArgs {
    /// What the panel will judge (the panel's task); `@FILE` reads it from a file.
    #[arg(long, required_unless_present_any = ["sample", "from_log", "review"])]
    pub task: Option<String>,
    /// Documents to read: PDF, Markdown or plain text.
    #[arg(long, num_args = 1.., required_unless_present_any = ["sample", "from_log", "review"])]
    pub docs: Vec<PathBuf>,
    /// Use the bundled sample task and documents (shared reading with children aged 4–8).
    #[arg(long, conflicts_with_all = ["docs", "from_log", "review"])]
    pub sample: bool,
    /// Panel file to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace an existing panel file.
    #[arg(long)]
    pub force: bool,
    /// Protocol of the written panel: maj-eval, collab-eval, g-eval, sage-eval.
    #[arg(long, default_value = "maj-eval")]
    pub protocol: String,
    /// Take dimensions, scale and settings from this panel (a file or a bundled name); default: one `quality`
    /// dimension (with --sample: storybook-qa's).
    #[arg(long, value_name = "PANEL")]
    pub dimensions_from: Option<String>,
    /// Write one-line roles only (the ablation of detailed personas).
    #[arg(long)]
    pub simple_roles: bool,
    /// At most N personas per group.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_per_group: Option<u32>,
    /// Name of the panel (default: from the file name).
    #[arg(long)]
    pub name: Option<String>,
    /// Provider: openai, anthropic, local, or a name from moot.toml.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model (for the local provider: a known model or a GGUF path; default there: qwen2.5-coder-1.5b, the larger tier, unless moot.toml sets one).
    #[arg(long)]
    pub model: Option<String>,
    /// Seed for providers that accept one.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Document text per extraction request, in characters (default: what the model's context allows, at most 12000).
    #[arg(long, value_name = "CHARS")]
    pub chunk_chars: Option<usize>,
    /// The builder's log (default: beside the panel, `<name>.build.jsonl`).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Write the panel from an earlier build's log (its decisions applied) without calling a model.
    #[arg(long, value_name = "LOG", conflicts_with = "review")]
    pub from_log: Option<PathBuf>,
    /// Open an earlier build's log in the review screen (no new build); decisions are appended to it.
    #[arg(long, value_name = "LOG", conflicts_with_all = ["docs", "headless"])]
    pub review: Option<PathBuf>,
    /// Print progress instead of opening the review screen.
    #[arg(long)]
    pub headless: bool,
    /// With --headless: print the log's events as JSON lines.
    #[arg(long, requires = "headless")]
    pub json: bool,
    /// Answer repeated requests from the on-disk response cache.
    #[arg(long)]
    pub cache: bool,
    /// Items file for `x` in the review screen (save, then run the panel on the file's first item).
    #[arg(long)]
    pub item: Option<PathBuf>,
    /// Colour theme of the review screen.
    #[arg(long)]
    pub theme: Option<String>,
}

/// The task text: `@FILE` is read from the file.
fn task_text(args: &PersonasArgs) -> anyhow::Result<String> {
    let task = match (&args.task, args.sample) {
        (Some(t), _) => match t.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path).with_context(|| format!("--task: cannot read {path}"))?,
            None => t.clone(),
        },
        (None, true) => SAMPLE_TASK.to_string(),
        (None, false) => bail!("--task is required"),
    };
    if task.trim().is_empty() {
        bail!("--task is empty");
    }
    Ok(task.trim().to_string())
}

/// The model a build uses: `--model`, else the provider's own setting;
/// on the embedded model with none set, the larger tier
/// ([`crate::model::BETTER_MODEL`]): a build reads long documents and
/// quotes them, which the small default does poorly, and writes little, so
/// the larger tier's slower generation costs little.
fn persona_model(args: &PersonasArgs, registry: &Registry, provider: &str) -> String {
    if let Some(m) = &args.model {
        return m.clone();
    }
    let config = registry.config();
    let local = config.kind_of(provider) == Some(crate::config::ProviderKind::Local);
    let set = config.providers.get(provider).is_some_and(|pc| pc.model.is_some() || pc.model_path.is_some());
    if local && !set { crate::model::BETTER_MODEL.to_string() } else { String::new() }
}

/// The documents, read before any model is loaded: a missing or unreadable file is named at once.
pub fn documents(args: &PersonasArgs) -> anyhow::Result<Vec<Document>> {
    if args.sample {
        return Ok(sample_documents());
    }
    let mut out = Vec::new();
    for p in &args.docs {
        out.push(personas::read_document(p)?);
    }
    Ok(out)
}

/// The bundled sample documents.
pub fn sample_documents() -> Vec<Document> {
    SAMPLE_DOCS
        .iter()
        .map(|(name, text)| {
            let path = PathBuf::from(format!("bundled:{name}"));
            personas::docs::from_text(name, &path, personas::docs::DocKind::Markdown, text)
        })
        .collect()
}

/// How the panel will be written, from the flags.
pub fn panel_options(args: &PersonasArgs) -> anyhow::Result<PanelOptions> {
    let protocol = Protocol::parse(&args.protocol).with_context(|| {
        format!("--protocol: unknown protocol \"{}\"; valid: maj-eval, collab-eval, g-eval, sage-eval", args.protocol)
    })?;
    let template = match (&args.dimensions_from, args.sample) {
        (Some(p), _) => Some(Panel::resolve(p).with_context(|| format!("--dimensions-from {p}"))?),
        (None, true) => Panel::bundled("storybook-qa"),
        (None, false) => None,
    };
    let name = args.name.clone().unwrap_or_else(|| {
        let stem = args.out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let words: Vec<String> = stem
            .split(['-', '_', ' '])
            .filter(|w| !w.is_empty())
            .map(|w| {
                let mut c = w.chars();
                c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
            })
            .collect();
        if words.is_empty() { "Stakeholder panel".into() } else { words.join(" ") }
    });
    Ok(PanelOptions { name, protocol, template, simple_roles: args.simple_roles })
}

/// `panels/x.toml` → `panels/x.build.jsonl` (then `.build-2.jsonl`, … if taken).
pub fn default_log_path(out: &Path) -> PathBuf {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "panel".into());
    let dir = out.parent().map(Path::to_path_buf).unwrap_or_default();
    std::iter::once(dir.join(format!("{stem}.build.jsonl")))
        .chain((2..).map(|n| dir.join(format!("{stem}.build-{n}.jsonl"))))
        .find(|p| !p.exists())
        .expect("a free name")
}

pub fn run(args: PersonasArgs) -> anyhow::Result<ExitCode> {
    if args.out.exists() && !args.force {
        bail!("{}: already exists (use --force to replace it)", args.out.display());
    }
    let options = panel_options(&args)?;
    if let Some(log) = &args.from_log {
        let events = read_log(log).map_err(anyhow::Error::msg)?;
        let state = BuildState::from_events(&events);
        return write_panel(&state, &options, &args.out, None);
    }
    if let Some(log) = &args.review {
        return review_log(&args, log, options);
    }
    let task = task_text(&args)?;
    let docs = documents(&args)?;
    let mut registry = Registry::from_env()?;
    if args.cache {
        registry.set_cache(Some(ResponseCache::new(ResponseCache::default_dir())));
    }
    let provider_name = args.provider.clone().unwrap_or_else(|| registry.default_name().to_string());
    let model_name = persona_model(&args, &registry, &provider_name);
    let prices = registry.config().providers.get(&provider_name).and_then(|pc| pc.prices());
    let log_path = args.log.clone().unwrap_or_else(|| default_log_path(&args.out));
    let build_options = Options {
        chunk_chars: args.chunk_chars.unwrap_or(0),
        max_per_group: args.max_per_group.map(|n| n as usize),
        author: crate::session::human_name(),
        prices,
    };
    if !args.headless {
        if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
            bail!("the review screen needs a terminal; use --headless to build without it");
        }
        let ui = crate::tui::config::UiConfig::load(args.theme.as_deref())?;
        let env = crate::tui::app::Env::new(ui);
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        let provider = registry.get(&provider_name, &model_name, "moot personas")?;
        let mut model = Model::new(provider, model_name);
        model.seed = args.seed;
        let log_path_shown = log_path.clone();
        let plan = crate::tui::personas::Plan {
            task,
            docs,
            model,
            options: build_options,
            panel: options,
            out: args.out.clone(),
            log: log_path.clone(),
        };
        let exit = runtime.block_on(async {
            let mut tui = crate::tui::Tui::enter()?;
            crate::tui::personas::review(&mut tui, env, plan).await
        })?;
        drop(runtime);
        eprintln!("moot: builder's log: {}", log_path_shown.display());
        return finish_review(exit, &args);
    }
    let provider = registry.get(&provider_name, &model_name, "moot personas")?;
    let mut model = Model::new(provider, model_name);
    model.seed = args.seed;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let log = Arc::new(
        BuildLog::new(Some(&log_path), Some(tx))
            .with_context(|| format!("cannot create the builder's log {}", log_path.display()))?,
    );
    let ctx = Arc::new(Ctx::new(task, model, log.clone()));
    let json = args.json;
    let events = runtime.block_on(async {
        let cancel = ctx.cancel.clone();
        let interrupt = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\nmoot: stopping the build");
                cancel.cancel();
            }
        });
        let worker = {
            let ctx = ctx.clone();
            tokio::spawn(async move { personas::build(&ctx, &docs, &build_options).await })
        };
        drop(ctx);
        let mut printer = Printer::default();
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            if json {
                let mut out = std::io::stdout().lock();
                let _ = serde_json::to_writer(&mut out, &e);
                let _ = writeln!(out);
            } else {
                printer.event(&e);
            }
            let done = matches!(e.kind, BuildEventKind::BuildEnded { .. });
            events.push(e);
            if done {
                break;
            }
        }
        interrupt.abort();
        let _ = worker.await;
        events
    });
    eprintln!("moot: builder's log: {}", log_path.display());
    let state = BuildState::from_events(&events);
    if state.status == Some(BuildStatus::Stopped) {
        eprintln!("moot: the build was stopped; no panel was written");
        return Ok(ExitCode::from(3));
    }
    if state.status != Some(BuildStatus::Completed) {
        bail!("the build did not complete: {}", state.error.as_deref().unwrap_or("unknown error"));
    }
    write_panel(&state, &options, &args.out, Some(&log))
}

/// The documents a log names, in its order, read again for the evidence's
/// context; one that cannot be read is shown without context.
fn log_documents(state: &BuildState) -> Vec<Document> {
    let sample = sample_documents();
    state
        .documents
        .iter()
        .map(|info| {
            let bundled = sample.iter().find(|d| d.path == info.path).cloned();
            bundled.or_else(|| personas::read_document(&info.path).ok()).unwrap_or_else(|| {
                eprintln!(
                    "moot: warning: {} cannot be read again; its quotes are shown without context",
                    info.path.display()
                );
                personas::docs::from_text(&info.name, &info.path, personas::docs::DocKind::Text, "")
            })
        })
        .collect()
}

/// `--review LOG`: the review screen on a finished build.
fn review_log(args: &PersonasArgs, log: &Path, options: PanelOptions) -> anyhow::Result<ExitCode> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bail!("the review screen needs a terminal; use --from-log to write the panel from the log");
    }
    let events = read_log(log).map_err(anyhow::Error::msg)?;
    let state = BuildState::from_events(&events);
    let docs = log_documents(&state);
    let mut registry = Registry::from_env()?;
    let provider_name = args.provider.clone().unwrap_or_else(|| registry.default_name().to_string());
    let model_name = persona_model(args, &registry, &provider_name);
    let provider = registry.get(&provider_name, &model_name, "moot personas")?;
    let mut model = Model::new(provider, model_name);
    model.seed = args.seed;
    let ui = crate::tui::config::UiConfig::load(args.theme.as_deref())?;
    let env = crate::tui::app::Env::new(ui);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let out = args.out.clone();
    let exit = runtime.block_on(async {
        let mut tui = crate::tui::Tui::enter()?;
        crate::tui::personas::review_log(&mut tui, env, log, model, docs, options, out).await
    })?;
    drop(runtime);
    finish_review(exit, args)
}

/// After the review screen: say what was saved, or run the saved panel.
fn finish_review(exit: Exit, args: &PersonasArgs) -> anyhow::Result<ExitCode> {
    match exit {
        Exit::Quit(Some(path)) => {
            eprintln!("moot: panel written: {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Exit::Quit(None) => {
            eprintln!("moot: no panel was saved");
            Ok(ExitCode::from(3))
        }
        Exit::Run(path) => {
            eprintln!("moot: panel written: {}", path.display());
            let run = super::RunArgs {
                panel: Some(path.display().to_string()),
                item: args.item.clone(),
                theme: args.theme.clone(),
                ..super::RunArgs::default()
            };
            super::run::run(run)
        }
    }
}

/// Write the panel and record it in the log.
fn write_panel(
    state: &BuildState,
    options: &PanelOptions,
    out: &Path,
    log: Option<&BuildLog>,
) -> anyhow::Result<ExitCode> {
    let r = personas::panel::write(state, options, out).map_err(anyhow::Error::msg)?;
    if let Some(log) = log {
        log.emit(BuildEventKind::PanelWritten { path: out.to_path_buf(), groups: r.groups, agents: r.agents });
    }
    for id in &r.without_persona {
        eprintln!("moot: warning: perspective {id} has no persona (its call failed) and was left out");
    }
    let unverified = state.unverified();
    if unverified > 0 {
        eprintln!(
            "moot: warning: {unverified} evidence quote(s) were not found in their documents (marked NOT FOUND in the panel)"
        );
    }
    eprintln!("moot: panel written: {} ({} groups, {} personas)", out.display(), r.groups, r.agents);
    eprintln!("moot: try it: moot run {} --item ITEMS", out.display());
    Ok(ExitCode::SUCCESS)
}

/// The headless progress lines.
#[derive(Default)]
pub struct Printer {
    state: BuildState,
}

impl Printer {
    pub fn event(&mut self, e: &BuildEvent) {
        self.state.apply(e);
        if let Some(line) = self.line(e) {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{line}");
        }
    }

    /// The line an event prints, if any.
    pub fn line(&self, e: &BuildEvent) -> Option<String> {
        let s = &self.state;
        Some(match &e.kind {
            BuildEventKind::BuildStarted { provider, model, estimate, .. } => {
                let cost = estimate.cost.map(|c| format!(", ≈ {c:.2} in the configured prices")).unwrap_or_default();
                format!(
                    "building personas with {provider}/{model}; estimate: ≈ {} calls, ≈ {} input tokens, ≤ {} output tokens{cost}",
                    estimate.calls,
                    num(estimate.input_tokens),
                    num(estimate.output_tokens)
                )
            }
            BuildEventKind::DocumentRead { info, .. } => {
                let skipped = if info.skipped.is_empty() {
                    String::new()
                } else {
                    let list: Vec<String> = info.skipped.iter().map(|(h, n)| format!("{h} ({n})")).collect();
                    format!("; left out: {}", list.join(", "))
                };
                format!("read {}: {} paragraphs in {} part(s){skipped}", info.name, info.paragraphs, info.chunks)
            }
            BuildEventKind::CallCompleted { call, usage, parse_error, .. } => {
                let c = s.calls.iter().rev().find(|c| c.call == *call)?;
                let bad = parse_error.as_ref().map(|e| format!(" — unreadable: {e}")).unwrap_or_default();
                let cost = s.usage.cost.map(|c| format!(", cost {c:.4}")).unwrap_or_default();
                format!(
                    "  [{}] {}: {} in / {} out tokens (total {} of ≈ {}{cost}){bad}",
                    c.step.as_str(),
                    c.about,
                    num(usage.input_tokens),
                    num(usage.output_tokens),
                    num(s.usage.total()),
                    num(s.estimate.input_tokens + s.estimate.output_tokens),
                )
            }
            BuildEventKind::CallFailed { error, attempt, will_retry, .. } => {
                format!("  call failed (attempt {attempt}): {error}{}", if *will_retry { "; retrying" } else { "" })
            }
            BuildEventKind::StakeholdersExtracted { stakeholders, .. } if stakeholders.is_empty() => {
                "    nothing relevant to the task".to_string()
            }
            BuildEventKind::StakeholdersExtracted { stakeholders, .. } => {
                let mut out = Vec::new();
                for st in stakeholders {
                    out.push(format!("    {} ({}): {}", st.name, st.id, st.characteristics));
                    for p in &st.perspectives {
                        let mark = if p.check.found { "✓" } else { "✗ evidence NOT FOUND:" };
                        out.push(format!("      {} {} {mark} \"{}\"", p.id, p.text, p.evidence));
                    }
                }
                out.join("\n")
            }
            BuildEventKind::StepFailed { step, about, error } => format!("  ! {} {about}: {error}", step.as_str()),
            BuildEventKind::GroupsFormed { groups, left_out } => {
                let list: Vec<String> =
                    groups.iter().map(|g| format!("{} ({} perspectives)", g.name, g.perspectives.len())).collect();
                let dropped = if left_out.is_empty() {
                    String::new()
                } else {
                    format!("\n  in no group (left out): {}", left_out.join(", "))
                };
                format!("groups: {}{dropped}", list.join(", "))
            }
            BuildEventKind::PersonaWritten { perspective, persona } => {
                format!("    persona {perspective}: {} — {}", persona.name, persona.role)
            }
            BuildEventKind::Decided { decision, author } => format!("  decided by {author}: {decision:?}"),
            BuildEventKind::BuildEnded { status, error, usage, duration_ms } => format!(
                "build {}: {} tokens ({} in, {} out) in {:.1} s{}",
                match status {
                    BuildStatus::Completed => "completed",
                    BuildStatus::Failed => "failed",
                    BuildStatus::Stopped => "stopped",
                },
                num(usage.total()),
                num(usage.input_tokens),
                num(usage.output_tokens),
                *duration_ms as f64 / 1000.0,
                error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
            ),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: PersonasArgs,
    }

    fn args(extra: &[&str]) -> PersonasArgs {
        let mut argv = vec!["moot-personas", "--sample", "--out", "x.toml"];
        argv.extend_from_slice(extra);
        Cli::parse_from(argv).args
    }

    #[test]
    fn a_build_on_the_embedded_model_uses_the_larger_tier_unless_told() {
        let no_env = Registry::with_env(|_| None);
        assert_eq!(persona_model(&args(&[]), &no_env, "local"), crate::model::BETTER_MODEL);
        assert_eq!(persona_model(&args(&["--model", "smollm2-135m"]), &no_env, "local"), "smollm2-135m");
        // A model set for the provider in moot.toml is kept.
        let text = "[providers.local]\nkind = \"local\"\nmodel = \"qwen2.5-coder-0.5b\"\n";
        let config = crate::config::Config::parse(text, Path::new("moot.toml")).unwrap();
        assert_eq!(persona_model(&args(&[]), &Registry::with_config(config, |_| None), "local"), "");
        // Another provider keeps its own default.
        let server = Registry::with_env(|k| (k == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:1/v1".to_string()));
        assert_eq!(persona_model(&args(&[]), &server, "openai"), "");
    }
}
