//! The embedded local model: CPU inference of a GGUF file with llama.cpp.
//!
//! Files: `worker.rs` (the thread that owns the model and takes orders),
//! `schedule.rs` (which engine serves what), `shared.rs` (the llama.cpp
//! context the engines share, and the rounds in which their decodes go
//! together), `context.rs` (an engine, [`ModelContext`], with its sequences
//! of the shared context; `context/states.rs` saves and loads the states
//! of system prompts, `context/generate.rs` writes a reply), `chat.rs` (chat templates and tokenizing),
//! `sampling.rs` and `repetition.rs` (how tokens are drawn, and prose kept
//! from repeating), `grammar.rs` (JSON schema to GBNF) and `prose.rs` (where
//! prose ends).
//!
//! One model instance serves the whole process. A worker thread owns the
//! llama.cpp backend, the model and one context, and hands requests to a
//! few engines, each on a thread of its own with sequences of its own in
//! the context (see [`DEFAULT_PARALLEL`]); [`LocalProvider::stream`] queues a
//! job and awaits its result. The engines' decodes go in rounds: the tokens
//! of every engine serving a request (a generation step, a prompt chunk) are
//! decoded in one batch, which reads the model's weights once for all of
//! them (see [`SharedContext`]).
//! Providers built for the same file share the worker (the first one's
//! settings win), and the worker stops when the last of them is dropped.
//!
//! The model is loaded eagerly: [`LocalProvider::new`] blocks until the file
//! is mapped and a context exists (about a second for a 0.5B model), so a bad
//! path or a file that is not a GGUF fails at construction.
//!
//! Between requests each engine keeps the key/value cache of its last prompts
//! and replies, and reuses their longest common prefix with the next prompt
//! (agents of one panel share the instructions and the item); a request goes
//! to the engine that holds most of its prompt (see [`QueueState::choose`]).
//! While a speech streams, an idle engine reads the prompt that the group's
//! next request will start with, whenever no engine serves a request (see
//! [`Provider::read_ahead`] and [`ModelContext::read_ahead`]).
//!
//! With [`ChatRequest::response_schema`] the reply is free prose followed by a
//! JSON object that a grammar forces to match the schema; see
//! [`schema_to_gbnf`] and `docs/local-model.md`.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc as std_mpsc};

use async_trait::async_trait;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use serde_json::Value;

use super::logprobs::{TokenLogprob, TopLogprob};

mod chat;
mod context;
mod copying;
pub mod gpu;
mod grammar;
mod prose;
mod repetition;
mod sampling;
mod schedule;
mod scripts;
mod shared;
mod speaker;
mod worker;

use chat::*;
use context::*;
use copying::CopyGuard;
pub use repetition::Repetition;
use sampling::*;
use shared::{HEAD_START, Item, Kind, SharedContext};
use speaker::Speaker;
pub use worker::wait_for_workers;
use worker::*;

use schedule::{AHEAD_MIN, AHEAD_PATIENCE, AHEAD_REPORT, AHEAD_STEP, AHEAD_UNSURE, Handoffs, Queue, common_prefix};

use grammar::{closes_object, echo_members, forced_text, json_reserve, member_openings, member_value};
pub use grammar::{grammar_accepts, schema_to_gbnf};
use prose::{
    SectionStep, breaks_line_early, closes_quotation_apart, ends_paragraph, ends_prose, ends_sentence,
    opens_quote_in_string, prose_is_enough, reports_speech, section_step, starts_json, string_may_close,
    string_may_close_after_number,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{
    ChatMessage, ChatRequest, ChatRole, Completion, DeltaSender, Provider, ProviderError, ProviderInfo, Usage,
};

/// The context window per request that [`auto_context_size`] aims for,
/// when the model was trained for at least that many tokens and memory
/// allows: a three-round debate of three agents on a long item fits whole.
pub const DEFAULT_CONTEXT_SIZE: u32 = 8192;

/// The smallest context [`auto_context_size`] chooses for lack of memory.
const MIN_AUTO_CONTEXT: u32 = 2048;

/// The share of the machine's memory the key/value caches of all engines may
/// take when the context size is chosen automatically (one part in this many).
const KV_MEMORY_SHARE: u64 = 4;

/// The most memory the key/value caches of all engines may take when the
/// context size is chosen automatically, whatever the machine has.
const KV_MEMORY_MAX: u64 = 2 << 30;

/// The context window per request when none is configured: the model's
/// training length, at most [`DEFAULT_CONTEXT_SIZE`], halved (down to 2048)
/// while the key/value caches of all `engines` (each holds [`SEQUENCES`]
/// sequences of that size) would take more than 2 GiB or a quarter of
/// `memory` bytes (the machine's, when known).
pub fn auto_context_size(n_ctx_train: u32, kv_bytes_per_token: u64, engines: usize, memory: Option<u64>) -> u32 {
    let mut size = DEFAULT_CONTEXT_SIZE.min(n_ctx_train.max(64));
    let budget = memory.map_or(KV_MEMORY_MAX, |m| (m / KV_MEMORY_SHARE).min(KV_MEMORY_MAX));
    let cells = |size: u32| u64::from(size) * u64::from(SEQUENCES) * engines.max(1) as u64;
    while size / 2 >= MIN_AUTO_CONTEXT && cells(size) * kv_bytes_per_token > budget {
        size /= 2;
    }
    size
}

/// The machine's physical memory in bytes (`MemTotal` of `/proc/meminfo`),
/// where the system says.
fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Bytes of key/value cache one token takes in `model` (f16 keys and values
/// in every layer).
fn kv_bytes_per_token(model: &LlamaModel) -> u64 {
    let head_dim = u64::from(model.n_embd().max(1).unsigned_abs()) / u64::from(model.n_head().max(1));
    2 * u64::from(model.n_layer()) * u64::from(model.n_head_kv()) * head_dim * 2
}

/// Environment variable: when set, llama.cpp's own log lines go to `tracing`
/// (target `llama-cpp-2`) instead of being dropped.
pub const LLAMA_LOG_ENV: &str = "MOOT_LLAMA_LOG";

/// Tokens decoded per `llama_decode` call while reading a prompt.
const PROMPT_CHUNK: usize = 256;

/// How a [`LocalProvider`] is set up.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// Model name shown in headers and session logs (e.g. `qwen2.5-coder-0.5b`).
    pub name: String,
    /// CPU threads for generation; `None` means [`default_threads`].
    pub threads: Option<usize>,
    /// CPU threads for reading prompts; `None` means [`default_threads_batch`].
    pub threads_batch: Option<usize>,
    /// Context window per request in tokens (prompt plus reply), capped at
    /// the model's training length; `None` means [`auto_context_size`].
    pub context_size: Option<u32>,
    /// Where the state of long system prompts is saved for later processes;
    /// `None` means [`default_state_dir`].
    pub state_dir: Option<PathBuf>,
    /// How many requests the model serves at once; `None` means
    /// [`DEFAULT_PARALLEL`], or one where a GPU is found ([`gpu::auto_parallel`]).
    pub parallel: Option<usize>,
    /// llama.cpp's flash attention. Off by default: on this project's
    /// 2-core CPU machine it made generation after a 1,200-token prompt
    /// 1.7–2.4 times slower (docs/local-model.md, *Flash attention*).
    pub flash_attention: bool,
    /// How prose is kept from repeating itself and its prompt.
    pub repetition: Repetition,
    /// Layers on a GPU (`gpu_layers`); `None`: automatic ([`gpu::plan`]).
    pub gpu_layers: Option<u32>,
}

impl LocalConfig {
    /// Defaults for a model file: name from the file name, default threads
    /// and context size.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        let model_path = model_path.into();
        let name = model_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Self {
            model_path,
            name,
            threads: None,
            threads_batch: None,
            context_size: None,
            state_dir: None,
            parallel: None,
            flash_attention: false,
            repetition: Repetition::default(),
            gpu_layers: None,
        }
    }
}

/// `prompt-states/` in the platform cache directory: see [`SAVED_PROMPT_MIN`].
pub fn default_state_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "moot").map(|d| d.cache_dir().join("prompt-states"))
}

/// System prompts of at least this many tokens have their state saved to
/// disk after they are first read, so that later runs of the same panel on
/// the same model (another `moot run`, a resumed batch) load it in
/// milliseconds instead of reading it again.
pub const SAVED_PROMPT_MIN: usize = 256;

/// How many saved prompt states are kept (the newest).
const SAVED_PROMPTS_KEPT: usize = 32;

/// Every core for reading prompts (batches of many tokens).
pub fn default_threads_batch() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Every core for generation too: one thread decodes the engines' rounds
/// (see `shared.rs`), so nothing of the model's competes for the cores, and
/// a lone reply's step takes 34 ms with two threads against 69 ms with one
/// (`cargo bench --bench batched_decode`, docs/local-model.md).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Requests served at once when none is configured, on a machine without a
/// GPU ([`gpu::auto_parallel`]): a round of four
/// replies' steps generates more in all than one of three (52 tokens a
/// second against 47 on two cores), and the sample panel's three groups
/// debate at once while a fourth request need not wait for an engine.
pub const DEFAULT_PARALLEL: usize = 4;

/// Facts about the loaded model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModelInfo {
    /// `general.architecture` from the GGUF (`qwen2`, `llama`, …).
    pub architecture: String,
    /// Which chat template is used: `gguf` (the file's own) or the name of
    /// the built-in fallback.
    pub chat_template: String,
    /// Context window actually allocated.
    pub context_size: u32,
    pub threads: usize,
    pub threads_batch: usize,
    /// Engines started: requests served at once.
    pub parallel: usize,
    /// Where the layers run ([`gpu::describe`]).
    pub gpu: String,
}

/// The embedded llama.cpp backend. Cheap to clone; clones share the worker.
#[derive(Clone)]
pub struct LocalProvider {
    worker: Arc<Worker>,
    name: String,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProvider").field("name", &self.name).field("path", &self.worker.path).finish()
    }
}

impl LocalProvider {
    /// Loads the model (on the worker thread; this call blocks until it is
    /// loaded) or joins the worker that already serves this file.
    pub fn new(config: LocalConfig) -> Result<Self, ProviderError> {
        let path = std::fs::canonicalize(&config.model_path)
            .map_err(|e| ProviderError::Config(format!("local model {}: {e}", config.model_path.display())))?;
        let mut workers = WORKERS.lock().unwrap_or_else(|p| p.into_inner());
        workers.retain(|(_, w)| w.strong_count() > 0);
        if let Some(worker) = workers.iter().find(|(p, _)| *p == path).and_then(|(_, w)| w.upgrade()) {
            return Ok(Self { worker, name: config.name });
        }
        let worker = Arc::new(Worker::start(path.clone(), &config)?);
        workers.push((path, Arc::downgrade(&worker)));
        Ok(Self { worker, name: config.name })
    }

    /// Number of requests waiting for the model, not counting those being
    /// served.
    pub fn queue_len(&self) -> usize {
        self.worker.counters.waiting.load(Ordering::SeqCst)
    }

    /// Number of requests being served right now.
    pub fn active(&self) -> usize {
        self.worker.counters.active.load(Ordering::SeqCst)
    }

    /// Prompt tokens read and reused so far by the model this provider shares
    /// (with every provider of the same file): `(read, reused)`.
    pub fn prompt_stats(&self) -> (u64, u64) {
        let s = &self.worker.counters;
        (s.read.load(Ordering::Relaxed), s.reused.load(Ordering::Relaxed))
    }

    /// Prompt tokens read ahead of their requests so far (see
    /// [`Provider::read_ahead`]).
    pub fn read_ahead_tokens(&self) -> u64 {
        self.worker.counters.read_ahead.load(Ordering::Relaxed)
    }

    /// Whether an engine is reading a prompt ahead at this moment.
    pub fn reading_ahead(&self) -> bool {
        self.worker.counters.reading_ahead.load(Ordering::SeqCst) > 0
    }

    /// Facts about the loaded model.
    pub fn model_info(&self) -> &LocalModelInfo {
        &self.worker.info
    }

    /// The GGUF file in use.
    pub fn model_path(&self) -> &Path {
        &self.worker.path
    }
}

#[async_trait]
impl Provider for LocalProvider {
    fn info(&self) -> ProviderInfo {
        ProviderInfo { name: "local".to_string(), kind: "local".to_string(), model: self.name.clone(), base_url: None }
    }

    /// `request.model` is ignored: the provider serves one model.
    fn queue_note(&self) -> Option<String> {
        // A new call starts at once while an engine is free.
        let ahead = (self.queue_len() + self.active() + 1).saturating_sub(self.worker.info.parallel);
        (ahead > 0).then(|| format!("waiting for the local model ({ahead} call(s) ahead)"))
    }

    /// With more than one engine, an idle one reads the prompt ahead while no
    /// request is served (see [`ModelContext::read_ahead`]); with one there is
    /// no idle engine to do it.
    fn read_ahead(&self, messages: &[ChatMessage]) {
        if self.worker.info.parallel > 1 {
            let _ = self.worker.orders.send(Order::ReadAhead(messages.to_vec()));
        }
    }

    /// What a request may hold, prompt and reply together: a sequence of
    /// the context, less the [`SEQ_SPARE`] tokens a prompt must leave.
    fn context_window(&self, _model: &str) -> Option<u64> {
        Some(u64::from(self.worker.info.context_size).saturating_sub(SEQ_SPARE as u64))
    }

    /// Exact: the prompt as the model will read it (chat template, tokenizer).
    async fn count_tokens(&self, _model: &str, messages: &[ChatMessage]) -> Result<u64, ProviderError> {
        let (reply, result) = oneshot::channel();
        self.worker.orders.send(Order::Count(messages.to_vec(), reply)).map_err(|_| worker_gone())?;
        result.await.unwrap_or_else(|_| Err(worker_gone()))
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let (reply, result) = oneshot::channel();
        let job = Job { request: request.clone(), deltas: deltas.clone(), cancel: cancel.clone(), reply };
        self.worker.counters.waiting.fetch_add(1, Ordering::SeqCst);
        if self.worker.orders.send(Order::Call(job)).is_err() {
            self.worker.counters.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(worker_gone());
        }
        tokio::select! {
            result = result => result.unwrap_or_else(|_| Err(worker_gone())),
            () = cancel.cancelled() => Err(ProviderError::Cancelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::schedule::{EngineView, QueueState, TAKE_OVER};
    use super::*;
    use serde_json::json;

    #[test]
    fn the_automatic_context_follows_training_length_and_memory() {
        const GB: u64 = 1 << 30;
        // Qwen2.5-0.5B: 12 KiB of cache a token, 32k training length.
        let qwen = 12 * 1024;
        assert_eq!(auto_context_size(32_768, qwen, 3, Some(24 * GB)), DEFAULT_CONTEXT_SIZE);
        assert_eq!(auto_context_size(32_768, qwen, 3, None), DEFAULT_CONTEXT_SIZE);
        assert_eq!(auto_context_size(2048, qwen, 3, Some(24 * GB)), 2048, "never past the training length");
        // 3 engines × 4 sequences × 8192 tokens × 12 KiB = 1.125 GiB: too much for a quarter of 4 GiB.
        assert_eq!(auto_context_size(32_768, qwen, 3, Some(4 * GB)), 4096);
        assert_eq!(auto_context_size(32_768, qwen, 3, Some(GB / 4)), 2048, "down to the floor, no further");
        // SmolLM2-135M: 22.5 KiB a token; three engines at 8192 would take 2.1 GiB.
        assert_eq!(auto_context_size(8192, 23_040, 3, Some(24 * GB)), 4096, "at most 2 GiB of caches");
        assert_eq!(auto_context_size(8192, 23_040, 2, Some(24 * GB)), 8192);
    }

    #[test]
    fn one_engine_at_a_time_reads_a_system_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model.gguf");
        std::fs::write(&model, b"GGUF").unwrap();
        let states = PromptStates::new(dir.path().to_path_buf(), &model, (false, 4)).unwrap();
        let path = states.path(&[LlamaToken(1), LlamaToken(2)]);
        let first = states.claim(&path);
        // Another path is free at once.
        drop(states.claim(&states.path(&[LlamaToken(3)])));
        let (tx, rx) = std_mpsc::channel();
        let other = states.clone();
        let waiter = std::thread::spawn(move || {
            let claim = other.claim(&path);
            tx.send(()).unwrap();
            drop(claim);
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200)).is_err(),
            "a second engine waits while the first reads"
        );
        drop(first);
        assert!(rx.recv_timeout(std::time::Duration::from_secs(5)).is_ok(), "and goes on once it is done");
        waiter.join().unwrap();
    }

    #[test]
    fn utf8_split_across_pieces_is_held_back() {
        let mut buf = Vec::new();
        let euro = "€".as_bytes();
        buf.extend_from_slice(&[b'a', euro[0]]);
        assert_eq!(take_utf8(&mut buf), "a");
        assert_eq!(buf, [euro[0]]);
        buf.extend_from_slice(&euro[1..]);
        assert_eq!(take_utf8(&mut buf), "€");
        assert!(buf.is_empty());
        buf.extend_from_slice(&[0xff, b'b']);
        assert_eq!(take_utf8(&mut buf), "\u{FFFD}b");
    }

    #[test]
    fn output_emits_only_whole_characters() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut out = Output::new(&tx);
        let bytes = "né".as_bytes();
        out.push_bytes(&bytes[..2]);
        out.push_bytes(&bytes[2..]);
        out.push_str("!");
        assert_eq!(out.finish(), "né!");
        let mut deltas = Vec::new();
        while let Ok(d) = rx.try_recv() {
            deltas.push(d);
        }
        assert_eq!(deltas, ["n", "é", "!"]);
    }

    #[test]
    fn json_start_detection() {
        assert!(starts_json("Good answer.\n", b"{"));
        assert!(starts_json("Good answer.\n", b" {\""));
        assert!(starts_json("My evaluation:", b" {"));
        assert!(starts_json("", b"{"));
        assert!(starts_json("Verdict:\n```json\n", b"{\n"));
        assert!(!starts_json("The code calls `format!(\"", b"{}"));
        assert!(!starts_json("It prints", b" {"));
        assert!(starts_json("My scores", b" ({\""));
        assert!(!starts_json("plain", b" words"));
    }

    #[test]
    fn fallback_templates() {
        assert_eq!(fallback_template("qwen2", "Qwen2.5 Coder 0.5B Instruct"), "chatml");
        assert_eq!(fallback_template("llama", "SmolLM2 135M Instruct"), "chatml");
        assert_eq!(fallback_template("gemma3", "Gemma 3 270m"), "gemma");
        assert_eq!(fallback_template("llama", "Llama 3.2 1B Instruct"), "llama3");
        assert_eq!(fallback_template("unknown", ""), "chatml");
    }

    fn eval_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "accuracy": {"type": "integer", "minimum": 1, "maximum": 5},
                "clarity": {"type": "integer", "minimum": 1, "maximum": 5},
                "overall": {"type": "integer", "minimum": 1, "maximum": 5},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "justification": {"type": "string", "maxLength": 200}
            },
            "required": ["accuracy", "clarity", "overall", "confidence", "justification"]
        })
    }

    #[test]
    fn the_members_openings_are_given_where_the_grammar_forces_them() {
        let openings = member_openings(&eval_schema());
        assert_eq!(
            openings,
            [r#""accuracy": "#, r#""clarity": "#, r#""overall": "#, r#""confidence": "#, r#""justification": ""#]
        );
        let forced = |json: &str| forced_text(json, &openings);
        assert_eq!(forced("").as_deref(), Some(r#"{"accuracy": "#), "the object's start");
        assert_eq!(forced(r#"{"accuracy": 4"#), None, "a value is the model's");
        assert_eq!(forced(r#"{"accuracy": 4,"#).as_deref(), Some(r#" "clarity": "#));
        assert_eq!(forced("{\"accuracy\": 4,\n  ").as_deref(), Some(r#""clarity": "#), "after the model's blanks");
        assert_eq!(forced(r#"{"accuracy": 4, "cla"#).as_deref(), Some(r#"rity": "#), "the rest of a key begun");
        assert_eq!(forced(r#"{"accuracy": 4, "clarity": "#), None, "the opening is written");
        assert_eq!(
            forced(r#"{"accuracy": 4, "clarity": 3, "overall": 4, "confidence": 0.8,"#).as_deref(),
            Some(r#" "justification": ""#),
            "a string value's opening quote too"
        );
        assert_eq!(
            forced(r#"{"accuracy": 4, "clarity": 3, "overall": 4, "confidence": 0.8, "justification": "Fine, it"#),
            None,
            "a comma inside a string"
        );
        assert_eq!(forced(r#"{"accuracy": 4, "x"#), None, "text the openings do not foresee");
        let nested = json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}}, "b": {"type": "boolean"}},
            "required": ["items", "b"]
        });
        let openings = member_openings(&nested);
        assert_eq!(forced_text(r#"{"items": [{"a": 1},"#, &openings), None, "inside a nested value");
        assert_eq!(forced_text(r#"{"items": [{"a": 1}],"#, &openings).as_deref(), Some(r#" "b": "#));
        assert_eq!(forced_text(r#"{"items": [], "b": true,"#, &openings), None, "after the last member");
        // Only the brace may follow a closed string value of the last member.
        let openings = member_openings(&eval_schema());
        let head = r#"{"accuracy": 4, "clarity": 3, "overall": 4, "confidence": 0.8, "justification": ""#;
        assert!(closes_object(&format!("{head}Fine.\""), &openings));
        assert!(!closes_object(&format!("{head}Fine."), &openings), "still open");
        assert!(!closes_object(&format!("{head}He said \\\""), &openings), "an escaped quote");
        assert!(!closes_object(r#"{"accuracy": 4, "clarity": 3"#, &openings), "not the last member");
        assert!(!closes_object(&format!("{head}Fine.\"}}"), &openings), "already closed");
    }

    #[test]
    fn an_echoed_members_value_opens_the_member_that_echoes_it() {
        let schema = json!({
            "type": "object",
            "properties": {"next": {"type": "string", "enum": ["Ms. Ito", "Dr. \"K\""]}, "reason": {"type": "string"}},
            "required": ["next", "reason"]
        });
        let echo = |from: &str, into: &str| crate::provider::Echo { from: from.into(), into: into.into() };
        assert_eq!(echo_members(&schema, &echo("next", "reason")), Some((0, 1)));
        assert_eq!(echo_members(&schema, &echo("reason", "next")), None, "the echo comes after its source");
        assert_eq!(echo_members(&schema, &echo("next", "why")), None, "no such member");
        let openings = member_openings(&schema);
        assert_eq!(member_value(r#"{"next": "Ms. I"#, &openings[0]), None, "not closed yet");
        assert_eq!(member_value(r#"{"next": "Ms. Ito""#, &openings[0]), Some("Ms. Ito"));
        assert_eq!(member_value(r#"{"next": "Dr. \"K\"","#, &openings[0]), Some(r#"Dr. \"K\""#), "escapes kept");
        let mut openings = openings;
        openings[1].push_str("Ms. Ito");
        assert_eq!(forced_text(r#"{"next": "Ms. Ito","#, &openings).as_deref(), Some(r#" "reason": "Ms. Ito"#));
        assert!(closes_object(r#"{"next": "Ms. Ito", "reason": "Ms. Ito has spoken least.""#, &openings));
    }

    #[test]
    fn gbnf_for_evaluation_schema() {
        let g = schema_to_gbnf(&eval_schema()).unwrap();
        let root = g.lines().next().unwrap();
        assert_eq!(
            root,
            r#"root ::= "{" ws "\"accuracy\"" ws ":" ws v0 "," ws "\"clarity\"" ws ":" ws v1 "," ws "\"overall\"" ws ":" ws v2 "," ws "\"confidence\"" ws ":" ws v3 "," ws "\"justification\"" ws ":" ws v4 ws "}""#
        );
        assert!(g.contains(r#"v0 ::= ("5" | "4" | "3" | "2" | "1")"#), "{g}");
        assert!(g.contains(r#"v3 ::= ("1" ("." "0"{1,3})? | "0" ("." [0-9]{1,3})?)"#), "{g}");
        assert!(g.contains(r#"v4 ::= "\"" char{0,200} "\"""#), "{g}");
        assert!(json_reserve(&eval_schema()) >= 32 + 5 * 8 + 66);
    }

    #[test]
    fn unsupported_schemas_have_no_grammar() {
        assert_eq!(schema_to_gbnf(&json!({"type": "array"})), None);
        assert_eq!(schema_to_gbnf(&json!({"type": "object", "properties": {"x": {"type": "object"}}})), None);
        let untyped = json!({"type": "object", "properties": {"x": {"type": "array", "items": {"oneOf": []}}}});
        assert_eq!(schema_to_gbnf(&untyped), None);
        let impossible = json!({"type": "object", "properties": {"x": {"type": "array", "items": {"type": "boolean"}, "minItems": 3, "maxItems": 2}}});
        assert_eq!(schema_to_gbnf(&impossible), None);
        assert!(schema_to_gbnf(&json!({"type": "object", "properties": {"k": {"enum": ["a", "b"]}}})).is_some());
    }

    #[test]
    fn nested_objects_and_arrays_have_their_own_rules() {
        // The shape of the persona builder's answer: an array of objects, each
        // with a string and an array of ids from a set.
        let schema = json!({
            "type": "object",
            "properties": {"groups": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 80},
                    "members": {"type": "array", "items": {"type": "string", "enum": ["D1.S1", "D1.S2"]}, "minItems": 1}
                },
                "required": ["name", "members"]
            }}},
            "required": ["groups"]
        });
        let g = schema_to_gbnf(&schema).unwrap();
        let rules: Vec<&str> = g.lines().collect();
        assert_eq!(rules[0], r#"root ::= "{" ws "\"groups\"" ws ":" ws v4 ws "}""#, "{g}");
        assert_eq!(rules[3], r#"v0 ::= "\"" char{0,80} "\"""#, "{g}");
        assert_eq!(rules[4], r#"v1 ::= ("\"D1.S1\"" | "\"D1.S2\"")"#, "{g}");
        assert_eq!(rules[5], r#"v2 ::= "[" ws v1 ("," ws v1)* ws "]""#, "{g}");
        assert_eq!(
            rules[6], r#"v3 ::= "{" ws "\"name\"" ws ":" ws v0 "," ws "\"members\"" ws ":" ws v2 ws "}""#,
            "{g}"
        );
        assert_eq!(rules[7], r#"v4 ::= "[" ws v3 ("," ws v3){0,2} ws "]""#, "{g}");
        // No lower bound: the list may be empty; at most one item: no repetition.
        let optional = json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"type": "boolean"}, "maxItems": 1},
            "b": {"type": "array", "items": {"type": "boolean"}, "maxItems": 0}
        }});
        let g = schema_to_gbnf(&optional).unwrap();
        assert!(g.contains(r#"v1 ::= "[" ws (v0)? ws "]""#), "{g}");
        assert!(g.contains(r#"v2 ::= "[" ws "]""#), "{g}");
    }

    #[test]
    fn default_threads_is_positive() {
        assert!(default_threads() >= 1);
        assert_eq!(default_threads(), default_threads_batch(), "decodes take turns, so each may use every core");
    }

    fn tokens(range: std::ops::Range<i32>) -> Vec<LlamaToken> {
        range.map(LlamaToken::new).collect()
    }

    /// A waiting request whose first `system` tokens are a system prompt
    /// with a saved state.
    fn pending(tokens: Vec<LlamaToken>, system: usize) -> Pending {
        let (deltas, _) = tokio::sync::mpsc::unbounded_channel();
        let (reply, _) = oneshot::channel();
        let job = Job { request: ChatRequest::new(vec![]), deltas, cancel: CancellationToken::new(), reply };
        let system =
            (system > 0).then(|| SavedSystem { len: system, path: PathBuf::from("system.state"), saved: true });
        Pending { job, prompt: Prompt { tokens, keep: 0, system, opening: None, east_asian: false } }
    }

    fn queue(engines: Vec<(Vec<Vec<LlamaToken>>, bool)>, waiting: Vec<Pending>) -> QueueState {
        QueueState {
            pending: waiting.into(),
            closed: false,
            engines: engines.into_iter().map(|(held, busy)| EngineView { held, busy }).collect(),
            ahead: Vec::new(),
        }
    }

    #[test]
    fn a_prompt_is_read_ahead_by_the_idle_engine_holding_most_of_it_until_its_request_comes() {
        let q = Queue::new(3);
        {
            let mut s = q.lock();
            // ModelContext 0 generates the speech; engines 1 and 2 are idle.
            s.engines[0] = EngineView { held: vec![tokens(0..300)], busy: true };
            s.engines[1] = EngineView { held: vec![tokens(0..250)], busy: false };
            s.engines[2] = EngineView { held: vec![tokens(0..40)], busy: false };
        }
        q.read_ahead(tokens(0..320));
        assert_eq!(q.lock().choose_ahead(2), None, "left to engine 1, which holds more of it");
        assert_eq!(q.lock().choose_ahead(1), Some(0));
        // The speech grew: the newer prompt replaces the older one.
        q.read_ahead(tokens(0..360));
        assert_eq!(q.lock().ahead.len(), 1);
        // Another conversation's prompt is kept beside it.
        let other = [tokens(0..10), tokens(5000..5300)].concat();
        q.read_ahead(other.clone());
        assert_eq!(q.lock().ahead.len(), 2);
        match q.next_for(1) {
            Some(Work::ReadAhead(t, donor)) => assert_eq!((t, donor), (tokens(0..360), Some(0))),
            _ => panic!("engine 1 should read ahead"),
        }
        // Being read by engine 1, it is nobody else's; engine 2 takes the other.
        match q.next_for(2) {
            Some(Work::ReadAhead(t, donor)) => assert_eq!((t, donor), (other, None)),
            _ => panic!("engine 2 should read the other prompt ahead"),
        }
        q.read_ahead_done(1, vec![tokens(0..360)]);
        assert_eq!(q.lock().choose_ahead(1), None, "all of it is held");
        // The request it was read for comes: the prompt is dropped, and the
        // engine that read it serves the request.
        q.push(pending(tokens(0..380), 0));
        assert_eq!(q.lock().ahead.len(), 1);
        assert!(q.has_work(1));
        assert!(!q.has_work(2));
    }

    #[test]
    fn a_request_goes_to_the_engine_that_holds_its_prompt() {
        let conversation = tokens(0..300);
        let next = || pending(tokens(0..320), 0);
        // ModelContext 0 holds the conversation and is idle: engine 1 leaves it alone.
        let q = queue(vec![(vec![conversation.clone()], false), (vec![], false)], vec![next()]);
        assert_eq!(q.choose(1), None);
        assert_eq!(q.choose(0), Some(0));
        // ModelContext 0 is busy: engine 1 reads the 300 tokens rather than wait.
        let q = queue(vec![(vec![conversation.clone()], true), (vec![], false)], vec![next()]);
        assert_eq!(q.choose(1), Some(0));
        // ...but not a discussion of more than `TAKE_OVER` tokens.
        let long = tokens(0..(TAKE_OVER as i32 + 100));
        let q = queue(vec![(vec![long], true), (vec![], false)], vec![pending(tokens(0..(TAKE_OVER as i32 + 120)), 0)]);
        assert_eq!(q.choose(1), None);
        // A saved system prompt counts as held by every engine.
        let q = queue(vec![(vec![conversation.clone()], false), (vec![], false)], vec![pending(tokens(0..320), 290)]);
        assert_eq!(q.choose(1), Some(0));
        // ...but one not saved yet only by the engine that holds it (read
        // ahead, say): the other would read it all.
        let mut unsaved = pending(tokens(0..320), 290);
        if let Some(system) = unsaved.prompt.system.as_mut() {
            system.saved = false;
        }
        let q = queue(vec![(vec![conversation.clone()], false), (vec![], false)], vec![unsaved]);
        assert_eq!(q.choose(1), None);
        assert_eq!(q.choose(0), Some(0));
        // Of two requests, the one another engine holds less of.
        let other = pending([tokens(1000..1010), tokens(0..50)].concat(), 0);
        let q = queue(vec![(vec![conversation], true), (vec![], false)], vec![next(), other]);
        assert_eq!(q.choose(1), Some(1));
        // Nothing held anywhere: the oldest request.
        let q = queue(vec![(vec![], false), (vec![], false)], vec![next(), pending(tokens(5..9), 0)]);
        assert_eq!(q.choose(1), Some(0));
    }
}
