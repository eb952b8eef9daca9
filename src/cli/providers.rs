//! `moot providers [check]`: which providers exist, where their settings come
//! from, who uses them, and whether they answer.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use tokio_util::sync::CancellationToken;

use super::run::load_panel;
use crate::config::registry::Registry;
use crate::engine::bindings::{self, Choice, Participant};
use crate::provider::{ChatMessage, ChatRequest, ProviderError};

#[derive(Debug, Args)]
pub struct ProvidersArgs {
    #[command(subcommand)]
    pub command: Option<ProvidersCommand>,
    /// Panel whose participants to show (default: the bundled sample panel).
    #[arg(long)]
    pub panel: Option<String>,
    /// As `moot run --provider`.
    #[arg(long)]
    pub provider: Option<String>,
    /// As `moot run --model`.
    #[arg(long)]
    pub model: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// Send one tiny request to each provider and report latency or the exact error.
    Check {
        /// Providers to check (default: the configured ones and the default one).
        names: Vec<String>,
        /// Seconds to wait for each answer.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
}

pub fn run(args: ProvidersArgs) -> anyhow::Result<ExitCode> {
    let mut registry = Registry::from_env()?;
    match args.command {
        Some(ProvidersCommand::Check { names, timeout }) => {
            let names = if names.is_empty() { check_targets(&registry) } else { names };
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let results = runtime.block_on(check_all(&mut registry, &names, Duration::from_secs(timeout)));
            let mut out = std::io::stdout().lock();
            let width = names.iter().map(String::len).max().unwrap_or(0);
            let mut failed = false;
            for r in &results {
                match &r.outcome {
                    Ok((latency, model, reply)) => {
                        writeln!(
                            out,
                            "{:width$}  ok      {:>6} ms  {model}  reply: {:?}",
                            r.name,
                            latency.as_millis(),
                            reply.chars().take(40).collect::<String>()
                        )?;
                        match &r.structured {
                            Some(Ok(form)) => writeln!(out, "{:width$}  structured output: {form}", "")?,
                            Some(Err(e)) => {
                                failed = true;
                                writeln!(out, "{:width$}  structured output FAILED: {e}", "")?;
                            }
                            None => {}
                        }
                        match r.window {
                            Some(n) => writeln!(out, "{:width$}  context window: {n} tokens", "")?,
                            None => writeln!(
                                out,
                                "{:width$}  context window: unknown (long discussions are not shortened; set context_length)",
                                ""
                            )?,
                        }
                    }
                    Err(e) => {
                        failed = true;
                        writeln!(out, "{:width$}  FAILED  {e}", r.name)?;
                    }
                }
            }
            Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        None => {
            let panel = load_panel(args.panel.as_deref())?;
            if let Some(p) = &args.provider {
                registry.set_default(p, format!("{p}: chosen with --provider"));
            }
            let choices = bindings::choices(&registry, &panel, args.provider.as_deref(), args.model.as_deref());
            let pools = check_pools(&mut registry)?;
            let mut out = std::io::stdout().lock();
            // On a terminal the settings fit its width; piped, they keep
            // the widest layout.
            let columns = std::io::stdout()
                .is_terminal()
                .then(|| ratatui::crossterm::terminal::size().ok())
                .flatten()
                .map(|(width, _)| usize::from(width));
            write_overview(&mut out, &registry, &panel.name, &choices, columns)?;
            write_pools(&mut out, &pools)?;
            let method = crate::panel::Panel::method_line(Some(&panel), panel.protocol.preset, &panel.departures());
            writeln!(out, "{}", fill(&format!("protocol {}: {method}", panel.protocol.kind.as_str()), columns))?;
            if let Some(stages) = panel.stages_line() {
                writeln!(out, "{}", fill(&stages, columns))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The pools among the configured providers (and the default), each
/// endpoint checked once now.
fn check_pools(registry: &mut Registry) -> anyhow::Result<Vec<crate::provider::pool::PoolStatus>> {
    let names = check_targets(registry);
    let pooled: Vec<String> = names
        .into_iter()
        .filter(|n| registry.summary(n).is_ok_and(|s| s.settings.iter().any(|setting| setting.field == "pool")))
        .collect();
    if pooled.is_empty() {
        return Ok(Vec::new());
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut pools = Vec::new();
    for name in pooled {
        match registry.get(&name, "", "moot providers") {
            Ok(provider) => pools.extend(runtime.block_on(provider.check_pool())),
            Err(e) => eprintln!("moot providers: {e}"),
        }
    }
    Ok(pools)
}

/// Each pool's endpoints and their state.
pub fn write_pools(out: &mut dyn Write, pools: &[crate::provider::pool::PoolStatus]) -> anyhow::Result<()> {
    for pool in pools {
        writeln!(out)?;
        writeln!(out, "pool {} (affinity {}):", pool.name, if pool.affinity { "on" } else { "off" })?;
        // Columns as wide as their longest entry ("down: why" can be long).
        let label = pool.endpoints.iter().map(|e| e.label.chars().count()).max().unwrap_or(0);
        let state = pool.endpoints.iter().map(|e| e.state.chars().count()).max().unwrap_or(0);
        for e in &pool.endpoints {
            let check = e.last_check.as_deref().unwrap_or("health checks off");
            writeln!(out, "  {:label$}  {:state$}  limit {:3}  {check}", e.label, e.state, e.limit)?;
        }
    }
    Ok(())
}

/// The providers `check` tries without names: configured ones and the default.
pub fn check_targets(registry: &Registry) -> Vec<String> {
    let mut names: Vec<String> = registry.config().providers.keys().cloned().collect();
    if !names.iter().any(|n| n == registry.default_name()) {
        names.push(registry.default_name().to_string());
    }
    names
}

/// The result of checking one provider: latency, model and reply, or the
/// error; for an HTTP provider, the structured-output form it accepted.
#[derive(Debug)]
pub struct CheckResult {
    pub name: String,
    pub outcome: Result<(Duration, String, String), String>,
    pub structured: Option<Result<String, String>>,
    /// The context window the provider knows after answering (a llama.cpp
    /// server's comes from its `/props`); none when unknown.
    pub window: Option<u64>,
}

/// One request; the reply's text.
async fn ask(
    provider: &dyn crate::provider::Provider,
    request: &ChatRequest,
    timeout: Duration,
) -> Result<String, String> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    match tokio::time::timeout(timeout, provider.stream(request, &tx, &cancel)).await {
        Ok(Ok(c)) => Ok(c.text),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => {
            cancel.cancel();
            Err(ProviderError::Timeout(crate::provider::TimeoutKind::Total, timeout).to_string())
        }
    }
}

/// Ask for a tiny verdict with a schema: which form the provider ended up
/// sending (after any fallback), and whether the verdict came back.
async fn check_structured(
    provider: &dyn crate::provider::Provider,
    timeout: Duration,
) -> Option<Result<String, String>> {
    provider.structured_output()?;
    let mut request = ChatRequest::new(vec![ChatMessage::user(
        "Say hello in a few words, then give the verdict {\"ok\": 1} as a JSON object.",
    )]);
    request.max_tokens = 96;
    request.temperature = Some(0.0);
    request.response_schema = Some(std::sync::Arc::new(serde_json::json!({
        "type": "object",
        "properties": {"ok": {"type": "integer", "minimum": 0, "maximum": 9}},
        "required": ["ok"],
        "additionalProperties": false
    })));
    let text = match ask(provider, &request, timeout).await {
        Ok(t) => t,
        Err(e) => return Some(Err(e)),
    };
    let form = provider.structured_output().unwrap_or_else(|| "off".into());
    let read = crate::engine::parse::json_objects(&text).iter().any(|o| o.map.contains_key("ok"));
    Some(Ok(if read {
        format!("{form} (verdict read)")
    } else {
        format!("{form} (no verdict in the reply: {:?})", text.chars().take(60).collect::<String>())
    }))
}

/// Send one tiny request to each provider (one attempt each, no cache).
pub async fn check_all(registry: &mut Registry, names: &[String], timeout: Duration) -> Vec<CheckResult> {
    let mut results = Vec::new();
    for name in names {
        let outcome = match registry.get(name, "", "moot providers check") {
            Err(e) => Err(e.to_string()),
            Ok(provider) => {
                let mut request = ChatRequest::new(vec![ChatMessage::user("Reply with the single word: ok")]);
                request.max_tokens = 16;
                request.temperature = Some(0.0);
                let started = Instant::now();
                ask(provider.as_ref(), &request, timeout)
                    .await
                    .map(|text| (started.elapsed(), provider.info().model, text.trim().to_string()))
                    .map(|ok| (ok, provider))
            }
        };
        let (outcome, structured, window) = match outcome {
            Ok((ok, provider)) => {
                let structured = check_structured(provider.as_ref(), timeout).await;
                let window = provider.context_window(&ok.1);
                (Ok(ok), structured, window)
            }
            Err(e) => (Err(e), None, None),
        };
        results.push(CheckResult { name: name.clone(), outcome, structured, window });
    }
    results
}

/// The providers, their settings with origins, and the panel's bindings.
pub fn write_overview(
    out: &mut dyn Write,
    registry: &Registry,
    panel_name: &str,
    choices: &[Choice],
    columns: Option<usize>,
) -> anyhow::Result<()> {
    let width = value_width(columns);
    match registry.config_source() {
        Some(p) => writeln!(out, "config file: {}", p.display())?,
        None => {
            let none = format!("config file: none (./moot.toml or {} not found)", user_config_display());
            writeln!(out, "{}", fill(&none, columns))?
        }
    }
    writeln!(out, "{}", fill(&format!("default provider: {}", registry.default_reason), columns))?;
    let mut users: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in choices.iter().filter(|c| c.participant != Participant::Default) {
        users.entry(c.provider.as_str()).or_default().push(c.participant.to_string());
    }
    let mut names = registry.names();
    for used in users.keys() {
        if !names.iter().any(|n| n == used) {
            names.push((*used).to_string());
        }
    }
    for name in &names {
        writeln!(out)?;
        match registry.summary(name) {
            Ok(s) => {
                writeln!(out, "{}  ({}, {})", s.name, s.kind, s.defined_in)?;
                for setting in &s.settings {
                    // A long value wraps within its column (a URL or a
                    // word is never broken), so the sources line up.
                    let lines = wrap_value(&setting.value, width);
                    writeln!(out, "  {:20} {:width$} from {}", setting.field, lines[0], setting.from)?;
                    for line in &lines[1..] {
                        writeln!(out, "  {:20} {line}", "")?;
                    }
                }
            }
            Err(e) => writeln!(out, "{name}  (error: {e})")?,
        }
        let used_by = users.get(name.as_str()).map(|u| u.join(", ")).unwrap_or_else(|| "nobody".into());
        writeln!(out, "{}", fill(&format!("  used by: {used_by}"), columns))?;
    }
    writeln!(out)?;
    let order = "the first that applies: --provider/--model, the participant's own setting, the panel's, the default";
    writeln!(out, "{}", fill(&format!("panel \"{panel_name}\" ({order}):"), columns))?;
    let bound: Vec<&Choice> = choices.iter().filter(|c| c.participant != Participant::Default).collect();
    let names: Vec<String> = bound.iter().map(|c| c.participant.to_string()).collect();
    let name_width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    for (c, name) in bound.iter().zip(&names) {
        // The provider's own model needs no origin of its own.
        let (model, origin) = if c.model.is_empty() {
            ("its default model", format!("provider from {}", c.provider_from))
        } else {
            (c.model.as_str(), format!("provider from {}; model from {}", c.provider_from, c.model_from))
        };
        writeln!(out, "  {name:name_width$}  {} / {model}  ({origin})", c.provider)?;
    }
    Ok(())
}

/// A long line wrapped to a terminal `columns` wide (its later lines
/// indented two more than its first); as it is when the output is no
/// terminal.
fn fill(line: &str, columns: Option<usize>) -> String {
    let Some(c) = columns else {
        return line.to_string();
    };
    let indent = format!("{}  ", &line[..line.len() - line.trim_start().len()]);
    textwrap::fill(line, wrap_options(c).subsequent_indent(&indent))
}

/// Wrapping at spaces only: a URL, a hyphenated word or a `key = "value"`
/// is never split.
fn wrap_options<'a>(width: usize) -> textwrap::Options<'a> {
    textwrap::Options::new(width)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
}

/// Widest value column in the settings list (and its width when the
/// output is no terminal).
const VALUE_WIDTH: usize = 44;

/// The value column for a terminal `columns` wide: what is left beside the
/// field's column and `from built-in default`, between 24 and
/// [`VALUE_WIDTH`].
fn value_width(columns: Option<usize>) -> usize {
    const BESIDE: usize = 2 + 20 + 1 + 1 + "from built-in default".len();
    columns.map_or(VALUE_WIDTH, |c| c.saturating_sub(BESIDE).clamp(24, VALUE_WIDTH))
}

/// A setting's value as the lines of its column `width` wide: wrapped at
/// spaces, never inside a word, so a URL longer than the column stays
/// whole on its line.
fn wrap_value(value: &str, width: usize) -> Vec<String> {
    let lines: Vec<String> =
        textwrap::wrap(value, wrap_options(width).break_words(false)).into_iter().map(|l| l.into_owned()).collect();
    if lines.is_empty() { vec![String::new()] } else { lines }
}

fn user_config_display() -> String {
    crate::config::user_config_file().map(|p| p.display().to_string()).unwrap_or_else(|| "the user config file".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::server::{Reply, TestServer};

    #[tokio::test]
    async fn check_reports_latency_or_the_exact_error() {
        let server = TestServer::start().await.unwrap();
        server.push(Reply::openai_stream(&["ok"], Some((5, 1))));
        server.push(Reply::openai_stream(&["{\"speech\": \"Hello.\", ", "\"ok\": 1}"], Some((5, 1))));
        server.push(Reply::json(401, &serde_json::json!({"error": {"message": "bad key"}})));
        let url = server.base_url();
        let mut registry = Registry::with_env(move |k| (k == "OPENAI_BASE_URL").then(|| url.clone()));
        let names = vec!["openai".to_string(), "nonesuch".to_string()];
        let results = check_all(&mut registry, &names, Duration::from_secs(10)).await;
        assert_eq!(results[0].outcome.as_ref().map(|r| r.2.as_str()), Ok("ok"));
        assert_eq!(results[0].structured, Some(Ok("json_schema (verdict read)".to_string())));
        let asked = server.requests()[1].body_json().unwrap();
        assert_eq!(asked["response_format"]["type"], "json_schema");
        assert!(results[1].outcome.as_ref().unwrap_err().contains("unknown provider \"nonesuch\""));
        let results = check_all(&mut registry, &names[..1], Duration::from_secs(10)).await;
        let e = results[0].outcome.as_ref().unwrap_err();
        assert!(e.contains("HTTP 401") && e.contains("bad key"), "{e}");
        assert_eq!(results[0].structured, None, "no structured check after a failed one");
    }

    #[tokio::test]
    async fn check_reports_the_context_window_a_llama_cpp_server_gave() {
        let server = TestServer::start().await.unwrap();
        server.push(Reply::openai_stream(&["ok"], Some((5, 1))));
        server.push(Reply::openai_stream(&["Hello.\n{\"ok\": 1}"], Some((5, 1))));
        server.serve_props(serde_json::json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 2}));
        let url = server.base_url();
        let mut registry = Registry::with_env(move |k| (k == "OPENAI_BASE_URL").then(|| url.clone()));
        let results = check_all(&mut registry, &["openai".to_string()], Duration::from_secs(10)).await;
        assert_eq!(results[0].outcome.as_ref().map(|r| r.2.as_str()), Ok("ok"));
        assert_eq!(results[0].window, Some(4096));
        assert_eq!(results[0].structured, Some(Ok("llama.cpp grammar (lean form) (verdict read)".to_string())));
        assert!(server.requests()[1].body_json().unwrap().get("grammar").is_some(), "the lean form from the start");
        let other = TestServer::start().await.unwrap();
        other.push(Reply::openai_stream(&["ok"], Some((5, 1))));
        other.push(Reply::openai_stream(&["{\"speech\": \"Hi.\", \"ok\": 1}"], Some((5, 1))));
        let url = other.base_url();
        let mut registry = Registry::with_env(move |k| (k == "OPENAI_BASE_URL").then(|| url.clone()));
        let results = check_all(&mut registry, &["openai".to_string()], Duration::from_secs(10)).await;
        assert_eq!(results[0].window, None, "a server without /props: unknown");
    }

    #[test]
    fn overview_shows_sources_and_users() {
        let registry = Registry::with_env(|k| (k == "OPENAI_API_KEY").then(|| "sk-secret-value".to_string()));
        let panel = crate::panel::Panel::bundled(crate::panel::DEFAULT_PANEL).expect("bundled panel");
        let choices = bindings::choices(&registry, &panel, None, Some("m1"));
        let mut out = Vec::new();
        write_overview(&mut out, &registry, &panel.name, &choices, None).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("default provider: openai: OPENAI_API_KEY is set"), "{text}");
        assert!(text.contains("$OPENAI_API_KEY (set)"), "{text}");
        assert!(!text.contains("sk-secret-value"));
        assert!(text.contains("model from --model"), "{text}");
        assert!(text.contains("used by: nobody"), "{text}");
        // Long values (timeouts, repetition) wrap: every source in one column.
        let at: Vec<usize> =
            text.lines().filter_map(|l| l.find(" from built-in default").map(|i| l[..i].chars().count())).collect();
        assert!(at.len() > 10 && at.iter().all(|&c| c == at[0]), "{text}");
        // The bindings line up after the longest participant's name.
        let bound: Vec<&str> = text.lines().filter(|l| l.contains("  (provider from ")).collect();
        let column: Vec<Option<usize>> = bound.iter().map(|l| l.find(" openai / ")).collect();
        assert!(bound.len() > 5 && column.iter().all(|c| c.is_some() && *c == column[0]), "{text}");
        let agent = &panel.agents().next().unwrap().1.name;
        assert!(text.lines().any(|l| l.starts_with("  used by:") && l.contains(agent.as_str())), "{text}");
        // On a terminal 80 columns wide, a setting's line fits it.
        let mut out = Vec::new();
        write_overview(&mut out, &registry, &panel.name, &choices, Some(80)).unwrap();
        let narrow = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = narrow.lines().filter(|l| l.ends_with(" from built-in default")).collect();
        assert!(rows.len() > 10 && rows.iter().all(|l| l.chars().count() <= 80), "{narrow}");
        assert!(narrow.lines().all(|l| l.chars().count() <= 80), "every line fits: {narrow}");
    }
}
