//! The embedded local model: CPU inference of a GGUF file with llama.cpp.
//!
//! One model instance serves the whole process. A worker thread owns the
//! llama.cpp backend and the model and hands requests to a few engines, each
//! with a llama.cpp context of its own on a thread of its own (see
//! [`default_parallel`]); [`LocalProvider::stream`] queues a job and awaits
//! its result. Engines generate at the same time, one core each, and take
//! turns at reading prompts, which uses every core (see [`CoreGate`]).
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
//! next request will start with, on a core that would otherwise idle (see
//! [`Provider::read_ahead`] and [`Engine::read_ahead`]).
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
use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState};
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

mod grammar;
mod prose;
mod schedule;

use schedule::{AHEAD_MIN, AHEAD_PATIENCE, AHEAD_REPORT, AHEAD_UNSURE, CoreGate, Handoffs, Queue, common_prefix};

use grammar::json_reserve;
pub use grammar::schema_to_gbnf;
use prose::{ends_prose, ends_sentence, prose_is_enough, starts_json};
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// [`default_parallel`].
    pub parallel: Option<usize>,
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

/// Every core for reading prompts: large batches keep all threads busy, so a
/// second thread pays off even on two cores, unlike token-by-token generation.
pub fn default_threads_batch() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// One thread on machines with two cores or fewer (a second thread makes
/// generation collapse as soon as anything else runs), half the cores above.
pub fn default_threads() -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if cores <= 2 { 1 } else { cores / 2 }
}

/// Most engines [`default_parallel`] starts.
const MAX_PARALLEL: usize = 4;

/// One engine per `threads` cores, plus one, at most [`MAX_PARALLEL`]: while
/// engines generate (token by token, which cannot use more cores usefully)
/// every core works, and the extra engine starts on a new request (reading
/// its prompt, which takes every core in turn) instead of leaving it queued
/// behind whole replies. On two cores with one generation thread, three
/// engines: two requests generate at almost twice the rate of one (measured:
/// 85 tokens/s together against 44 alone), and in a live run of the sample
/// panel (three groups) a turn's first token came about 2 s after its
/// request instead of 5–10 s with two engines. A lone request runs as fast as
/// with one engine.
pub fn default_parallel(threads: usize) -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    (cores / threads.max(1) + 1).clamp(1, MAX_PARALLEL)
}

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

struct Worker {
    path: PathBuf,
    orders: std_mpsc::Sender<Order>,
    counters: Arc<Counters>,
    info: LocalModelInfo,
}

/// What the worker thread and the providers that feed it both see.
#[derive(Debug, Default)]
struct Counters {
    /// Jobs sent but not started.
    waiting: AtomicUsize,
    /// Jobs being served.
    active: AtomicUsize,
    /// Prompt tokens read by the model, over the worker's life.
    read: std::sync::atomic::AtomicU64,
    /// Prompt tokens whose state was reused from an earlier prompt.
    reused: std::sync::atomic::AtomicU64,
    /// Prompt tokens read ahead of their request.
    read_ahead: std::sync::atomic::AtomicU64,
}

/// What the worker thread is asked to do.
enum Order {
    Call(Job),
    /// Read these messages' prompt ahead, with otherwise idle cores (see
    /// [`Provider::read_ahead`]).
    ReadAhead(Vec<ChatMessage>),
    /// Count the tokens of these messages' prompt (see [`Provider::count_tokens`]).
    Count(Vec<ChatMessage>, oneshot::Sender<Result<u64, ProviderError>>),
}

struct Job {
    request: ChatRequest,
    deltas: DeltaSender,
    cancel: CancellationToken,
    reply: oneshot::Sender<Result<Completion, ProviderError>>,
}

/// Workers by canonical model path, so every provider of one file shares one
/// model in memory.
static WORKERS: Mutex<Vec<(PathBuf, Weak<Worker>)>> = Mutex::new(Vec::new());

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

    /// With more than one engine, an idle one reads the prompt ahead while
    /// another generates (see [`Engine::read_ahead`]); with one there is no
    /// idle engine to do it.
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

fn worker_gone() -> ProviderError {
    ProviderError::Server { message: "the local model worker stopped".to_string(), retryable: false }
}

fn server_error(message: impl Into<String>) -> ProviderError {
    ProviderError::Server { message: message.into(), retryable: false }
}

/// The process-wide llama.cpp backend (it may be initialised only once).
fn backend() -> Result<&'static LlamaBackend, ProviderError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            if std::env::var_os(LLAMA_LOG_ENV).is_some() {
                llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            } else {
                // llama.cpp writes to stderr otherwise, which breaks the TUI.
                backend.void_logs();
            }
            Ok(backend)
        })
        .as_ref()
        .map_err(|e| server_error(format!("llama.cpp backend: {e}")))
}

impl Worker {
    fn start(path: PathBuf, config: &LocalConfig) -> Result<Self, ProviderError> {
        let (orders, order_rx) = std_mpsc::channel::<Order>();
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let counters = Arc::new(Counters::default());
        let threads = config.threads.filter(|&t| t > 0).unwrap_or_else(default_threads);
        let threads_batch = config.threads_batch.filter(|&t| t > 0).unwrap_or_else(default_threads_batch);
        let parallel = config.parallel.filter(|&p| p > 0).unwrap_or_else(|| default_parallel(threads));
        let setup = Setup {
            context_size: config.context_size.map(|n| n.max(64)),
            threads: (threads, threads_batch),
            parallel,
            states: config.state_dir.clone().or_else(default_state_dir).and_then(|dir| PromptStates::new(dir, &path)),
            path: path.clone(),
        };
        let worker_counters = counters.clone();
        std::thread::Builder::new()
            .name("moot-local-model".to_string())
            .spawn(move || worker_main(&setup, &ready_tx, &order_rx, &worker_counters))
            .map_err(|e| server_error(format!("cannot start the local model thread: {e}")))?;
        let info = ready_rx.recv().map_err(|_| worker_gone())??;
        Ok(Self { path, orders, counters, info })
    }
}

/// What the worker thread needs to load the model and start its engines.
struct Setup {
    path: PathBuf,
    /// `None`: chosen by [`auto_context_size`].
    context_size: Option<u32>,
    /// Generation and prompt-reading threads.
    threads: (usize, usize),
    parallel: usize,
    states: Option<PromptStates>,
}

fn worker_main(
    setup: &Setup,
    ready: &std_mpsc::Sender<Result<LocalModelInfo, ProviderError>>,
    orders: &std_mpsc::Receiver<Order>,
    counters: &Arc<Counters>,
) {
    let loaded = (|| {
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, &setup.path, &LlamaModelParams::default())
            .map_err(|e| ProviderError::Config(format!("cannot load {} as a GGUF model: {e}", setup.path.display())))?;
        Ok::<_, ProviderError>((backend, model))
    })();
    let (backend, model) = match loaded {
        Ok(loaded) => loaded,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let chat = match Chat::new(&model) {
        Ok(chat) => chat,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let gate = CoreGate::new(cores.max(setup.threads.0));
    let handoffs = Handoffs::new(setup.parallel.max(1));
    let mut engines = Vec::new();
    for id in 0..setup.parallel.max(1) {
        match Engine::new(id, backend, &chat, setup, counters.clone(), (&gate, &handoffs)) {
            Ok(engine) => engines.push(engine),
            Err(e) if engines.is_empty() => {
                let _ = ready.send(Err(e));
                return;
            }
            Err(e) => {
                tracing::warn!(
                    "local model: serving {} request(s) at once, not {}: {e}",
                    engines.len(),
                    setup.parallel
                );
                break;
            }
        }
    }
    let mut info = engines[0].info.clone();
    info.parallel = engines.len();
    let seq_capacity = engines[0].seq_capacity;
    let saves_states = setup.states.is_some();
    let queue = Queue::new(engines.len());
    let _ = ready.send(Ok(info));
    std::thread::scope(|scope| {
        let mut started = 0;
        for (id, engine) in engines.into_iter().enumerate() {
            let queue = &queue;
            let spawned = std::thread::Builder::new()
                .name(format!("moot-local-model-{id}"))
                .spawn_scoped(scope, move || serve(id, engine, queue, counters));
            match spawned {
                Ok(_) => started += 1,
                Err(e) => tracing::warn!("local model: cannot start engine {id}: {e}"),
            }
        }
        while let Ok(order) = orders.recv() {
            let job = match order {
                Order::Call(job) => job,
                Order::ReadAhead(messages) => {
                    if let Some(tokens) = chat.ahead(&messages, seq_capacity) {
                        queue.read_ahead(tokens);
                    }
                    continue;
                }
                Order::Count(messages, reply) => {
                    let _ = reply.send(chat.count(&messages));
                    continue;
                }
            };
            let prepared = if started == 0 {
                Err(server_error("the local model could not start a thread to run on"))
            } else if job.cancel.is_cancelled() || job.reply.is_closed() {
                Err(ProviderError::Cancelled)
            } else {
                chat.prepare(&job.request, seq_capacity, saves_states)
            };
            match prepared {
                Ok(prompt) => queue.push(Pending { job, prompt }),
                Err(e) => {
                    counters.waiting.fetch_sub(1, Ordering::SeqCst);
                    let _ = job.reply.send(Err(e));
                }
            }
        }
        queue.close();
    });
}

/// One engine's loop: takes the requests [`QueueState::choose`] gives it
/// until the worker closes the queue.
fn serve(id: usize, mut engine: Engine<'_>, queue: &Queue, counters: &Counters) {
    while let Some(work) = queue.next_for(id) {
        let Pending { job, prompt } = match work {
            Work::Serve(pending) => pending,
            Work::ReadAhead(tokens, donor) => {
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    engine.read_ahead(&tokens, donor, || queue.has_work(id), |held| queue.holds(id, held))
                }));
                if outcome.is_err() {
                    engine.forget_cache();
                }
                queue.read_ahead_done(id, engine.held());
                continue;
            }
        };
        counters.waiting.fetch_sub(1, Ordering::SeqCst);
        let result = if job.cancel.is_cancelled() || job.reply.is_closed() {
            Err(ProviderError::Cancelled)
        } else {
            counters.active.fetch_add(1, Ordering::SeqCst);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine.run(&job, &prompt)))
                .unwrap_or_else(|_| {
                    engine.forget_cache();
                    Err(server_error("the local model failed on this request"))
                });
            counters.active.fetch_sub(1, Ordering::SeqCst);
            result
        };
        // The queue learns what this engine now holds before the caller
        // hears back: the conversation's next request, which may follow at
        // once, must find the engine idle and holding its prompt.
        queue.done(id, engine.held());
        let _ = job.reply.send(result);
    }
}

/// A request with its prompt rendered and tokenized.
struct Pending {
    job: Job,
    prompt: Prompt,
}

/// A prompt's tokens and the parts of it worth knowing.
struct Prompt {
    tokens: Vec<LlamaToken>,
    /// Tokens of all messages but the last (see [`Slot::keep`]).
    keep: usize,
    /// Tokens of the system prompt when its state may be saved or loaded
    /// (see [`SAVED_PROMPT_MIN`]), else 0.
    system: usize,
}

/// What an engine is given to do.
enum Work {
    Serve(Pending),
    /// Read these prompt tokens ahead of the request that will start with
    /// them, starting from a copy of the given busy engine's sequence when
    /// it holds more of them.
    ReadAhead(Vec<LlamaToken>, Option<usize>),
}

/// The model's chat template and tokenizer, shared by the worker (which
/// prepares prompts) and the engines.
struct Chat<'m> {
    model: &'m LlamaModel,
    template: LlamaChatTemplate,
    template_name: String,
    fallback_template: &'static str,
}

impl<'m> Chat<'m> {
    fn new(model: &'m LlamaModel) -> Result<Self, ProviderError> {
        let architecture = model.meta_val_str("general.architecture").unwrap_or_default();
        let model_name = model.meta_val_str("general.name").unwrap_or_default();
        let fallback_template = fallback_template(&architecture, &model_name);
        let (template, template_name) = match model.chat_template(None) {
            Ok(t) => (t, "gguf".to_string()),
            Err(_) => (named_template(fallback_template)?, fallback_template.to_string()),
        };
        Ok(Self { model, template, template_name, fallback_template })
    }

    /// Renders the chat with the model's template (or the fallback when
    /// llama.cpp cannot run the GGUF's template).
    fn render(&self, messages: &[ChatMessage], add_assistant: bool) -> Result<String, ProviderError> {
        let chat = messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    ChatRole::System => "system",
                    ChatRole::User => "user",
                    ChatRole::Assistant => "assistant",
                };
                LlamaChatMessage::new(role.to_string(), m.content.replace('\0', ""))
                    .map_err(|e| ProviderError::Config(format!("invalid message: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        match self.model.apply_chat_template(&self.template, &chat, add_assistant) {
            Ok(prompt) => Ok(prompt),
            Err(_) => self
                .model
                .apply_chat_template(&named_template(self.fallback_template)?, &chat, add_assistant)
                .map_err(|e| server_error(format!("cannot apply the chat template: {e}"))),
        }
    }

    /// The number of tokens of the prompt of `messages`, as [`Chat::prepare`]
    /// would read it.
    fn count(&self, messages: &[ChatMessage]) -> Result<u64, ProviderError> {
        let prompt = self.render(messages, true)?;
        Ok(self.model.vocab().tokenize(prompt.as_bytes(), true, true).len() as u64)
    }

    /// The request's prompt, checked against the room a sequence has.
    /// `saves_states`: whether system prompts' states are saved.
    fn prepare(&self, request: &ChatRequest, seq_capacity: usize, saves_states: bool) -> Result<Prompt, ProviderError> {
        let prompt = self.render(&request.messages, true)?;
        let tokens = self.model.vocab().tokenize(prompt.as_bytes(), true, true);
        if tokens.is_empty() {
            return Err(ProviderError::Config("empty prompt".to_string()));
        }
        if tokens.len() + SEQ_SPARE > seq_capacity {
            return Err(ProviderError::Config(format!(
                "the prompt has {} tokens but the local context holds {seq_capacity}; raise `context_size`",
                tokens.len()
            )));
        }
        let keep = match request.messages.split_last() {
            Some((_, head)) if !head.is_empty() => self.prefix_len(head, &tokens),
            _ => 0,
        };
        let system = match request.messages.first() {
            Some(m) if m.role == ChatRole::System && saves_states => self.prefix_len(&request.messages[..1], &tokens),
            _ => 0,
        };
        Ok(Prompt { tokens, keep, system })
    }

    /// The start of a prompt that will begin with `messages`: their tokens up
    /// to where the last message's text ends so far, less the last few,
    /// which may merge with text still to come. `None` when there is too
    /// little to be worth it or more than a sequence holds.
    fn ahead(&self, messages: &[ChatMessage], seq_capacity: usize) -> Option<Vec<LlamaToken>> {
        let last = messages.last()?.content.replace('\0', "");
        let last = last.trim_end();
        let rendered = self.render(messages, false).ok()?;
        let mut start = last.len().saturating_sub(48);
        while !last.is_char_boundary(start) {
            start += 1;
        }
        let tail = &last[start..];
        let end = rendered.rfind(tail)? + tail.len();
        let mut tokens = self.model.vocab().tokenize(&rendered.as_bytes()[..end], true, true);
        tokens.truncate(tokens.len().saturating_sub(AHEAD_UNSURE));
        (tokens.len() >= AHEAD_MIN && tokens.len() + 8 < seq_capacity).then_some(tokens)
    }

    /// How many of the prompt's `tokens` the messages `head` (its first
    /// ones) make up.
    fn prefix_len(&self, head: &[ChatMessage], tokens: &[LlamaToken]) -> usize {
        let Ok(text) = self.render(head, false) else { return 0 };
        let head = self.model.vocab().tokenize(text.as_bytes(), true, true);
        common_prefix(&head, tokens)
    }
}

/// A llama.cpp context of the shared model and the sequences it holds.
struct Engine<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    gate: &'m CoreGate,
    handoffs: &'m Handoffs,
    /// Its number among the worker's engines.
    id: usize,
    /// The sequence in use.
    current: Slot,
    /// The other sequences, kept for prompts that continue them.
    parked: Vec<Slot>,
    /// Tokens one sequence may hold.
    seq_capacity: usize,
    /// Counts requests, to find the least recently used sequence.
    clock: u64,
    counters: Arc<Counters>,
    info: LocalModelInfo,
    /// Saved states of long system prompts.
    states: Option<PromptStates>,
}

/// Saved key/value states of long system prompts, one file per prompt, named
/// by a hash of the model file's identity and the prompt's tokens.
#[derive(Clone)]
struct PromptStates {
    dir: PathBuf,
    /// The model file (path, size, modification time) and moot's version,
    /// whose llama.cpp wrote the state.
    model: String,
}

impl PromptStates {
    fn new(dir: PathBuf, model_path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(model_path).ok()?;
        let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        let model = format!(
            "{} {} {:?} moot {}",
            model_path.display(),
            meta.len(),
            modified.map(|d| d.as_nanos()),
            env!("CARGO_PKG_VERSION")
        );
        Some(Self { dir, model })
    }

    fn path(&self, tokens: &[LlamaToken]) -> PathBuf {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        hash.update(self.model.as_bytes());
        for t in tokens {
            hash.update(t.0.to_le_bytes());
        }
        self.dir.join(format!("{:x}.state", hash.finalize()))
    }

    /// Removes all but the newest [`SAVED_PROMPTS_KEPT`] states.
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        let mut states: Vec<(std::time::SystemTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "state"))
            .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
            .collect();
        states.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (_, path) in states.into_iter().skip(SAVED_PROMPTS_KEPT) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A sequence of the context and what it holds.
struct Slot {
    /// Its id in the context.
    seq: i32,
    /// Tokens whose keys and values are in the context for `seq`, in order.
    cached: Vec<LlamaToken>,
    /// How many of them a later prompt is likely to continue: the last
    /// prompt's tokens before its final message (the panel's instructions,
    /// the item and the discussion so far, not the speaker's own request or
    /// the reply).
    keep: usize,
    last_used: u64,
}

impl Slot {
    fn empty(seq: i32) -> Self {
        Self { seq, cached: Vec::new(), keep: 0, last_used: 0 }
    }
}

/// How many prompts the context keeps state for at once. Calls of different
/// conversations interleave (a panel's groups debate at the same time, the
/// moderator and the aggregator have prompts of their own), so one prompt's
/// state would be overwritten by the next; with several, a turn usually
/// finds its conversation's earlier prompt and reads only what is new.
pub const SEQUENCES: u32 = 4;

/// Tokens of a sequence a prompt must leave free (the reply needs room to
/// start; the generation inserts a newline or closes a code fence).
const SEQ_SPARE: usize = 8;

/// How many tokens of a sequence's `keep` part a new prompt must leave out
/// for the sequence to be copied first (a few milliseconds for the whole
/// state) rather than cut short.
const KEEP_TAIL: usize = 64;

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    Stop,
    Length,
}

impl<'m> Engine<'m> {
    fn new(
        id: usize,
        backend: &LlamaBackend,
        chat: &'m Chat<'m>,
        setup: &Setup,
        counters: Arc<Counters>,
        (gate, handoffs): (&'m CoreGate, &'m Handoffs),
    ) -> Result<Self, ProviderError> {
        let model = chat.model;
        let trained = model.n_ctx_train().max(64);
        let per_seq = match setup.context_size {
            Some(n) => n.min(trained),
            None => auto_context_size(trained, kv_bytes_per_token(model), setup.parallel, physical_memory()),
        };
        let (threads, threads_batch) = setup.threads;
        let threads_i32 = i32::try_from(threads).unwrap_or(1);
        let batch_i32 = i32::try_from(threads_batch).unwrap_or(1);
        // Each sequence gets `per_seq` cells of its own (the cache is not unified).
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(per_seq.saturating_mul(SEQUENCES)))
            .with_n_seq_max(SEQUENCES)
            .with_kv_unified(false)
            .with_n_batch(PROMPT_CHUNK as u32)
            .with_n_ubatch(PROMPT_CHUNK as u32)
            .with_n_threads(threads_i32)
            .with_n_threads_batch(batch_i32);
        let ctx = model
            .new_context(backend, params)
            .map_err(|e| server_error(format!("cannot create a llama.cpp context: {e}")))?;
        let seq_capacity = (ctx.n_ctx() / SEQUENCES).max(64) as usize;
        let info = LocalModelInfo {
            architecture: model.meta_val_str("general.architecture").unwrap_or_default(),
            chat_template: chat.template_name.clone(),
            context_size: seq_capacity as u32,
            threads,
            threads_batch,
            parallel: 1,
        };
        let parked = (1..SEQUENCES as i32).map(Slot::empty).collect();
        Ok(Self {
            model,
            ctx,
            gate,
            handoffs,
            id,
            current: Slot::empty(0),
            parked,
            seq_capacity,
            clock: 0,
            counters,
            info,
            states: setup.states.clone(),
        })
    }

    /// The token sequences the context holds.
    fn held(&self) -> Vec<Vec<LlamaToken>> {
        std::iter::once(&self.current).chain(&self.parked).map(|s| s.cached.clone()).filter(|c| !c.is_empty()).collect()
    }

    /// Decodes a batch once the cores it needs are free (see [`CoreGate`]).
    fn decode(&mut self, batch: &mut LlamaBatch) -> Result<(), llama_cpp_2::DecodeError> {
        let reading = batch.n_tokens() > 1;
        let threads = if reading { self.info.threads_batch } else { self.info.threads };
        let _cores = self.gate.enter(threads, reading);
        self.ctx.decode(batch)
    }

    fn forget_cache(&mut self) {
        self.ctx.clear_kv_cache();
        for slot in std::iter::once(&mut self.current).chain(&mut self.parked) {
            slot.cached.clear();
            slot.keep = 0;
        }
    }

    /// Make the sequence that best continues `tokens` the one in use: the one
    /// sharing the longest prefix with it, unless that prefix is short (only
    /// the chat template's opening, say), in which case the least recently
    /// used sequence is given up rather than one that may serve a later turn.
    /// When the prompt shares less of that sequence than its `keep` part
    /// (another group's discussion after the same instructions and item), the
    /// sequence is first copied into the least recently used one, so its own
    /// conversation can still continue it. Returns how many of `tokens` the
    /// chosen sequence already holds.
    fn choose_sequence(&mut self, tokens: &[LlamaToken]) -> usize {
        let common = |cached: &[LlamaToken]| common_prefix(cached, tokens);
        let worth_keeping = 64.min(tokens.len() / 4).max(1);
        let current = common(&self.current.cached);
        let best = self
            .parked
            .iter()
            .enumerate()
            .map(|(i, slot)| (common(&slot.cached), i))
            .max_by_key(|&(c, i)| (c, std::cmp::Reverse(i)));
        let pick = match best {
            Some((c, i)) if c > current && c >= worth_keeping => Some(i),
            _ if current >= worth_keeping || self.current.cached.is_empty() => None,
            // Nothing worth continuing: take the least recently used sequence.
            _ => self.least_recently_used(),
        };
        if let Some(i) = pick {
            self.swap_with(i);
        }
        let shared = common(&self.current.cached);
        if shared >= worth_keeping
            && self.current.keep >= shared + KEEP_TAIL
            && let Some(i) = self.least_recently_used()
        {
            let target = self.parked[i].seq;
            if self.ctx.kv_cache_seq_cp(self.current.seq, target, None, None).is_ok() {
                self.parked[i].cached.clone_from(&self.current.cached);
                self.parked[i].keep = self.current.keep;
                self.swap_with(i);
                tracing::debug!(
                    engine = self.id,
                    from = self.parked[i].seq,
                    to = self.current.seq,
                    "local model: sequence copied"
                );
            }
        }
        self.clock += 1;
        shared
    }

    fn least_recently_used(&self) -> Option<usize> {
        self.parked.iter().enumerate().min_by_key(|(_, s)| s.last_used).map(|(i, _)| i)
    }

    /// Parks the sequence in use in slot `i` and takes the one that was there.
    fn swap_with(&mut self, i: usize) {
        std::mem::swap(&mut self.current, &mut self.parked[i]);
        self.parked[i].last_used = self.clock;
    }

    fn run(&mut self, job: &Job, prompt: &Prompt) -> Result<Completion, ProviderError> {
        let request = &job.request;
        let tokens = &prompt.tokens;
        let mut out = Output::new(&job.deltas);
        let logits_index = self.read_prompt(tokens, prompt.keep, prompt.system, &job.cancel)?;

        let grammar = match &request.response_schema {
            Some(schema) => Some(self.grammar_for(schema)?),
            None => None,
        };
        let budget = match &request.response_schema {
            Some(schema) => request.max_tokens.saturating_sub(json_reserve(schema)),
            None => request.max_tokens,
        };
        let mut sampling = Sampling::new(self.model, request);
        let mut state = GenState { logits_index, generated: 0 };
        let mut logprobs = Vec::new();

        let mut finish = self.generate_prose(job, &mut sampling, &mut state, budget, grammar.is_some(), &mut out)?;
        if let Some(grammar) = grammar {
            // Start the object on a line of its own.
            let prose = out.text().to_string();
            if !prose.is_empty() && !prose.ends_with('\n') {
                self.inject("\n", &mut state)?;
                out.push_str("\n");
            }
            let fence_open = prose.matches("```").count() % 2 == 1;
            let top = request.top_logprobs.map(usize::from);
            finish = self.generate_json(job, &mut sampling, grammar, &mut state, &mut out, top, &mut logprobs)?;
            if fence_open {
                out.push_str("\n```");
            }
        }
        let text = out.finish();
        Ok(Completion {
            text,
            usage: Usage {
                input_tokens: tokens.len() as u64,
                output_tokens: state.generated,
                estimated: false,
                cost: None,
            },
            finish_reason: Some(match finish {
                Finish::Stop => "stop".to_string(),
                Finish::Length => "length".to_string(),
            }),
            cached: false,
            logprobs: (!logprobs.is_empty()).then_some(logprobs),
        })
    }

    /// Brings the context to `tokens`, reusing the cached prefix (or a saved
    /// state of the system prompt, its first `system` tokens), and returns
    /// the batch index of the logits of the last token. `keep` is the part of
    /// `tokens` worth keeping for later prompts.
    fn read_prompt(
        &mut self,
        tokens: &[LlamaToken],
        keep: usize,
        system: usize,
        cancel: &CancellationToken,
    ) -> Result<i32, ProviderError> {
        let started = std::time::Instant::now();
        let mut common = self.choose_sequence(tokens);
        self.current.keep = keep;
        let saved = system >= SAVED_PROMPT_MIN && system < tokens.len() && self.states.is_some();
        let mut loaded = false;
        if saved && common < system && self.load_state(&tokens[..system]) {
            common = system;
            loaded = true;
        }
        // The last prompt token is always decoded again: its logits are needed.
        common = self.cut_to(common.min(tokens.len() - 1));
        self.counters.reused.fetch_add(common as u64, Ordering::Relaxed);
        self.counters.read.fetch_add((tokens.len() - common) as u64, Ordering::Relaxed);
        let mut from = common;
        if saved && from < system {
            // Read the system prompt on its own first and save its state.
            self.decode_prompt(&tokens[from..system], cancel)?;
            self.save_state();
            from = system;
        }
        let last_index = self.decode_prompt(&tokens[from..], cancel)?;
        tracing::debug!(
            engine = self.id,
            seq = self.current.seq,
            reused = common,
            read = tokens.len() - common,
            loaded,
            ms = started.elapsed().as_millis() as u64,
            "local model: prompt read"
        );
        Ok(last_index)
    }

    /// Drops what the sequence in use holds beyond its first `len` tokens;
    /// returns how many it holds then (none if llama.cpp could not drop them).
    fn cut_to(&mut self, len: usize) -> usize {
        if len < self.current.cached.len() {
            let removed =
                u32::try_from(len).ok().and_then(|p0| self.ctx.kv_cache_seq_rm(self.current.seq, Some(p0), None).ok());
            if removed.is_some() {
                self.current.cached.truncate(len);
            } else {
                self.forget_cache();
            }
        }
        self.current.cached.len()
    }

    /// Reads `tokens`, the start of a request expected soon, into the
    /// sequence that holds most of them, while cores are otherwise idle: a
    /// token per decode, so that it uses one core (llama.cpp reads a batch
    /// of several on every prompt thread) and gives the core back at once to
    /// any request's decode. Stops when all are read or when `interrupted`
    /// says a request waits for this engine; `report` hears what the engine
    /// holds as it goes, so requests can be routed to it.
    fn read_ahead(
        &mut self,
        tokens: &[LlamaToken],
        donor: Option<usize>,
        interrupted: impl Fn() -> bool,
        report: impl Fn(Vec<Vec<LlamaToken>>),
    ) {
        let idle_core = || loop {
            if interrupted() {
                return None;
            }
            if let Some(core) = self.gate.enter_idle(AHEAD_PATIENCE) {
                return Some(core);
            }
        };
        let started = std::time::Instant::now();
        let snapshot = donor.filter(|_| !interrupted()).and_then(|d| self.handoffs.take(d));
        // No sequence is given up before there is a core to read with or a
        // copy to start from.
        let mut core = match snapshot {
            Some(_) => None,
            None => Some(idle_core()).flatten(),
        };
        if core.is_none() && snapshot.is_none() {
            return;
        }
        let common = self.choose_sequence(tokens);
        let copied = match snapshot {
            Some((state, held)) if common_prefix(&held, tokens) > common => self.install(&state, held),
            _ => false,
        };
        let from = self.cut_to(common_prefix(&self.current.cached, tokens));
        self.current.keep = tokens.len();
        if copied {
            report(self.held());
        }
        let mut batch = LlamaBatch::new(1, 1);
        while self.current.cached.len() < tokens.len() {
            let Some(held_core) = core.take().or_else(idle_core) else { break };
            let position = self.current.cached.len();
            let token = tokens[position];
            batch.clear();
            let pos = i32::try_from(position).unwrap_or(i32::MAX);
            if batch.add(token, pos, &[self.current.seq], false).is_err() {
                break;
            }
            let decoded = self.ctx.decode(&mut batch);
            drop(held_core);
            if decoded.is_err() {
                self.forget_cache();
                return;
            }
            self.current.cached.push(token);
            self.counters.read_ahead.fetch_add(1, Ordering::Relaxed);
            if (position + 1 - from).is_multiple_of(AHEAD_REPORT) {
                report(self.held());
            }
        }
        tracing::debug!(
            engine = self.id,
            seq = self.current.seq,
            reused = from,
            copied,
            read = self.current.cached.len() - from,
            left = tokens.len() - self.current.cached.len(),
            ms = started.elapsed().as_millis() as u64,
            "local model: prompt read ahead"
        );
    }

    /// Replaces what the sequence in use holds with another engine's copy of
    /// a sequence holding `held`.
    fn install(&mut self, state: &SeqState, held: Vec<LlamaToken>) -> bool {
        let seq = self.current.seq;
        let _ = self.ctx.kv_cache_seq_rm(seq, None, None);
        self.current.cached.clear();
        match self.ctx.state_seq_set(state, seq) {
            Ok(()) => {
                self.current.cached = held;
                true
            }
            Err(e) => {
                tracing::warn!("local model: cannot load another engine's sequence: {e}");
                let _ = self.ctx.kv_cache_seq_rm(seq, None, None);
                false
            }
        }
    }

    /// Appends `tokens` to the sequence in use, in chunks, and returns the
    /// batch index of the last token's logits.
    fn decode_prompt(&mut self, tokens: &[LlamaToken], cancel: &CancellationToken) -> Result<i32, ProviderError> {
        let mut batch = LlamaBatch::new(PROMPT_CHUNK, 1);
        let chunks = tokens.len().div_ceil(PROMPT_CHUNK);
        let mut last_index = 0;
        for (c, chunk) in tokens.chunks(PROMPT_CHUNK).enumerate() {
            if cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            batch.clear();
            let last_chunk = c + 1 == chunks;
            for (i, &token) in chunk.iter().enumerate() {
                let pos = i32::try_from(self.current.cached.len() + i).unwrap_or(i32::MAX);
                let logits = last_chunk && i + 1 == chunk.len();
                batch.add(token, pos, &[self.current.seq], logits).map_err(|e| server_error(e.to_string()))?;
            }
            if let Err(e) = self.decode(&mut batch) {
                self.forget_cache();
                return Err(server_error(format!("llama.cpp could not read the prompt: {e}")));
            }
            self.current.cached.extend_from_slice(chunk);
            last_index = batch.n_tokens() - 1;
        }
        Ok(last_index)
    }

    /// Loads the saved state of `prefix` into the sequence in use, replacing
    /// what it held. A state that cannot be loaded or holds other tokens is
    /// deleted.
    fn load_state(&mut self, prefix: &[LlamaToken]) -> bool {
        let Some(path) = self.states.as_ref().map(|s| s.path(prefix)).filter(|p| p.exists()) else {
            return false;
        };
        let seq = self.current.seq;
        let _ = self.ctx.kv_cache_seq_rm(seq, None, None);
        self.current.cached.clear();
        match self.ctx.state_seq_load_file(&path, seq, prefix.len()) {
            Ok((tokens, _)) if tokens == prefix => {
                self.current.cached = tokens;
                true
            }
            outcome => {
                tracing::warn!("local model: dropping the saved prompt state {} ({:?})", path.display(), outcome.err());
                let _ = self.ctx.kv_cache_seq_rm(seq, None, None);
                let _ = std::fs::remove_file(&path);
                false
            }
        }
    }

    /// Saves the state of the sequence in use (a system prompt just read):
    /// written under a temporary name, then renamed, so that a reader never
    /// sees half a file.
    fn save_state(&self) {
        let Some(states) = &self.states else { return };
        let path = states.path(&self.current.cached);
        if path.exists() || std::fs::create_dir_all(&states.dir).is_err() {
            return;
        }
        // Unique among processes and among this process's engines.
        let partial = path.with_extension(format!("partial-{}-{:?}", std::process::id(), std::thread::current().id()));
        match self.ctx.state_seq_save_file(&partial, self.current.seq, &self.current.cached) {
            Ok(_) if std::fs::rename(&partial, &path).is_ok() => states.prune(),
            outcome => {
                tracing::warn!(
                    "local model: cannot save the prompt state in {}: {:?}",
                    states.dir.display(),
                    outcome.err()
                );
                let _ = std::fs::remove_file(&partial);
            }
        }
    }

    /// Decodes one token after the cached ones; its logits are at index 0.
    fn decode_one(&mut self, token: LlamaToken, state: &mut GenState) -> Result<(), ProviderError> {
        let mut batch = LlamaBatch::new(1, 1);
        let pos = i32::try_from(self.current.cached.len()).unwrap_or(i32::MAX);
        batch.add(token, pos, &[self.current.seq], true).map_err(|e| server_error(e.to_string()))?;
        if let Err(e) = self.decode(&mut batch) {
            self.forget_cache();
            return Err(server_error(format!("llama.cpp could not decode: {e}")));
        }
        self.current.cached.push(token);
        state.logits_index = 0;
        if self.handoffs.is_wanted(self.id) {
            self.handoffs.give(
                self.id,
                self.ctx
                    .state_seq_get(self.current.seq, LlamaStateSeqFlags::empty())
                    .ok()
                    .map(|state| (state, self.current.cached.clone())),
            );
        }
        Ok(())
    }

    /// Feeds text that the model did not write (but that is part of the reply).
    fn inject(&mut self, text: &str, state: &mut GenState) -> Result<(), ProviderError> {
        for token in self.model.vocab().tokenize(text.as_bytes(), false, false) {
            if self.current.cached.len() + 1 >= self.seq_capacity {
                break;
            }
            self.decode_one(token, state)?;
        }
        Ok(())
    }

    fn room_left(&self) -> bool {
        self.current.cached.len() + 1 < self.seq_capacity
    }

    fn piece(&self, token: LlamaToken) -> Vec<u8> {
        self.model.vocab().token_to_piece(token, false, None)
    }

    /// Free generation. With `json_follows`, stops (without emitting) where
    /// the model starts a JSON object, at the end of the budget or at its end
    /// of turn; but not before the prose is long enough (see
    /// [`prose_is_enough`]): until then, tokens that would end the turn or
    /// start the object (or a code fence) are not drawn.
    fn generate_prose(
        &mut self,
        job: &Job,
        sampling: &mut Sampling,
        state: &mut GenState,
        budget: u32,
        json_follows: bool,
        out: &mut Output,
    ) -> Result<Finish, ProviderError> {
        let mut produced = 0u32;
        loop {
            if job.cancel.is_cancelled() || job.reply.is_closed() {
                return Err(ProviderError::Cancelled);
            }
            if produced >= budget {
                return Ok(Finish::Length);
            }
            if !self.room_left() {
                return Ok(Finish::Length);
            }
            let token = if json_follows && !prose_is_enough(produced, out.text()) {
                // Too little prose yet: the reply may neither end nor turn to
                // its JSON object here.
                let vocab = self.model.vocab();
                let text = out.text();
                sampling.pick_where(&self.ctx, state.logits_index, |t| {
                    !vocab.is_eog(t) && !ends_prose(text, &vocab.token_to_piece(t, false, None))
                })?
            } else {
                sampling.pick(&self.ctx, state.logits_index, None)?
            };
            if self.model.vocab().is_eog(token) {
                return Ok(Finish::Stop);
            }
            let piece = self.piece(token);
            if json_follows && starts_json(out.text(), &piece) {
                return Ok(Finish::Stop);
            }
            produced += 1;
            state.generated += 1;
            out.push_bytes(&piece);
            self.decode_one(token, state)?;
            // Near the end of the budget, a finished sentence ends the prose
            // rather than a cut one.
            if json_follows && produced >= budget.saturating_sub(budget / 4) && ends_sentence(out.text()) {
                return Ok(Finish::Stop);
            }
        }
    }

    /// Grammar-constrained generation of the JSON object, until the grammar
    /// is complete (the model's end of turn) or the context is full. With
    /// `top`, each token's log-probability and its `top` most likely
    /// alternatives (from the model's distribution before the grammar and the
    /// sampler) are added to `logprobs`.
    #[allow(clippy::too_many_arguments)]
    fn generate_json(
        &mut self,
        job: &Job,
        sampling: &mut Sampling,
        mut grammar: LlamaSampler,
        state: &mut GenState,
        out: &mut Output,
        top: Option<usize>,
        logprobs: &mut Vec<TokenLogprob>,
    ) -> Result<Finish, ProviderError> {
        loop {
            if job.cancel.is_cancelled() || job.reply.is_closed() {
                return Err(ProviderError::Cancelled);
            }
            if !self.room_left() {
                return Ok(Finish::Length);
            }
            let token = sampling.pick(&self.ctx, state.logits_index, Some(&mut grammar))?;
            if self.model.vocab().is_eog(token) {
                return Ok(Finish::Stop);
            }
            let piece = self.piece(token);
            if let Some(k) = top {
                let logits = self.ctx.get_logits_ith(state.logits_index);
                let (logprob, best) = super::logprobs::top_of_logits(logits, token.0, k);
                let text = |t: i32| String::from_utf8_lossy(&self.piece(LlamaToken(t))).into_owned();
                logprobs.push(TokenLogprob {
                    token: String::from_utf8_lossy(&piece).into_owned(),
                    logprob,
                    top: best.into_iter().map(|(t, lp)| TopLogprob { token: text(t), logprob: lp }).collect(),
                });
            }
            state.generated += 1;
            out.push_bytes(&piece);
            self.decode_one(token, state)?;
        }
    }

    fn grammar_for(&self, schema: &Value) -> Result<LlamaSampler, ProviderError> {
        let gbnf = match schema_to_gbnf(schema) {
            Some(gbnf) => gbnf,
            None => llama_cpp_2::json_schema_to_grammar(&schema.to_string())
                .map_err(|e| ProviderError::Config(format!("unsupported response schema: {e}")))?,
        };
        LlamaSampler::grammar(self.model, &gbnf, "root")
            .map_err(|e| ProviderError::Config(format!("invalid grammar for the response schema: {e}")))
    }
}

struct GenState {
    /// Batch index of the logits to sample from.
    logits_index: i32,
    /// Tokens the model generated (not counting injected text).
    generated: u64,
}

/// How many drawn tokens [`Sampling::pick_where`] refuses before it keeps
/// the next one whatever it is.
const REFUSALS_MAX: usize = 32;

/// The sampler chains of one request: prose gets a mild repetition penalty,
/// the JSON object none (it would push scores away from numbers the prose
/// mentioned).
struct Sampling {
    prose: LlamaSampler,
    json: LlamaSampler,
}

impl Sampling {
    fn new(model: &LlamaModel, request: &ChatRequest) -> Self {
        let temperature = request.temperature.unwrap_or(0.0);
        let seed = request.seed.map(|s| (s ^ (s >> 32)) as u32).unwrap_or_else(rand::random);
        let pick = |seed: u32| {
            if temperature > 0.0 {
                vec![
                    LlamaSampler::top_k(40),
                    LlamaSampler::top_p(0.95, 1),
                    LlamaSampler::min_p(0.05, 1),
                    LlamaSampler::temp(temperature),
                    LlamaSampler::dist(seed),
                ]
            } else {
                vec![LlamaSampler::greedy()]
            }
        };
        let mut prose = vec![LlamaSampler::penalties(model.n_vocab(), 64, 1.1, 0.0, 0.0)];
        prose.extend(pick(seed));
        Self { prose: LlamaSampler::chain_simple(prose), json: LlamaSampler::chain_simple(pick(seed.wrapping_add(1))) }
    }

    /// Picks the next prose token among those `allowed` accepts: a token the
    /// chain draws that `allowed` refuses is taken out and the draw repeated
    /// (refused tokens are few, and rarely drawn).
    fn pick_where(
        &mut self,
        ctx: &LlamaContext<'_>,
        index: i32,
        allowed: impl Fn(LlamaToken) -> bool,
    ) -> Result<LlamaToken, ProviderError> {
        let mut candidates = ctx.token_data_array_ith(index);
        let mut token = None;
        for _ in 0..REFUSALS_MAX {
            let mut drawn = candidates.clone();
            drawn.apply_sampler(&mut self.prose);
            let Some(t) = drawn.selected_token() else { break };
            token = Some(t);
            if allowed(t) {
                break;
            }
            // The array holds the vocabulary in token order.
            match usize::try_from(t.0).ok().and_then(|i| candidates.data.get_mut(i)).filter(|d| d.id() == t) {
                Some(d) => d.set_logit(f32::NEG_INFINITY),
                None => break,
            }
        }
        let token = token.ok_or_else(|| server_error("the sampler selected no token"))?;
        self.prose.accept(token);
        Ok(token)
    }

    /// Picks the next token. With a grammar, the unconstrained choice is kept
    /// when the grammar accepts it (cheap), otherwise the grammar filters the
    /// whole vocabulary first.
    fn pick(
        &mut self,
        ctx: &LlamaContext<'_>,
        index: i32,
        grammar: Option<&mut LlamaSampler>,
    ) -> Result<LlamaToken, ProviderError> {
        let mut candidates = ctx.token_data_array_ith(index);
        let chain = if grammar.is_some() { &mut self.json } else { &mut self.prose };
        let token = match grammar {
            None => {
                candidates.apply_sampler(chain);
                candidates.selected_token()
            }
            Some(grammar) => {
                let mut free = candidates.clone();
                free.apply_sampler(chain);
                let accepted = free.selected_token().filter(|&t| {
                    let mut single = LlamaTokenDataArray::new(vec![LlamaTokenData::new(t, 1.0, 0.0)], false);
                    single.apply_sampler(grammar);
                    single.data.first().is_some_and(|d| d.logit().is_finite())
                });
                let token = match accepted {
                    Some(t) => Some(t),
                    None => {
                        candidates.apply_sampler(grammar);
                        candidates.apply_sampler(chain);
                        candidates.selected_token()
                    }
                };
                if let Some(t) = token {
                    grammar.accept(t);
                }
                token
            }
        };
        let token = token.ok_or_else(|| server_error("the sampler selected no token"))?;
        chain.accept(token);
        Ok(token)
    }
}

fn named_template(name: &str) -> Result<LlamaChatTemplate, ProviderError> {
    LlamaChatTemplate::new(name).map_err(|e| server_error(format!("chat template {name}: {e}")))
}

/// The llama.cpp built-in template used when a GGUF carries none (or one
/// llama.cpp cannot run), chosen from `general.architecture` and
/// `general.name`. Qwen and SmolLM use ChatML; ChatML is also the last resort.
pub fn fallback_template(architecture: &str, model_name: &str) -> &'static str {
    let arch = architecture.to_ascii_lowercase();
    let name = model_name.to_ascii_lowercase();
    if arch.starts_with("qwen") || name.contains("smollm") || name.contains("qwen") {
        "chatml"
    } else if arch.starts_with("gemma") {
        "gemma"
    } else if arch.starts_with("phi3") {
        "phi3"
    } else if arch == "llama" && name.contains("llama") {
        "llama3"
    } else if arch.starts_with("mistral") {
        "mistral-v7"
    } else {
        "chatml"
    }
}

/// Emits text as complete UTF-8 (token pieces may split a character).
struct Output<'a> {
    deltas: &'a DeltaSender,
    text: String,
    pending: Vec<u8>,
}

impl<'a> Output<'a> {
    fn new(deltas: &'a DeltaSender) -> Self {
        Self { deltas, text: String::new(), pending: Vec::new() }
    }

    fn text(&self) -> &str {
        &self.text
    }

    fn push_bytes(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        let chunk = take_utf8(&mut self.pending);
        self.emit(chunk);
    }

    fn push_str(&mut self, s: &str) {
        let mut chunk = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
        chunk.push_str(s);
        self.emit(chunk);
    }

    fn emit(&mut self, chunk: String) {
        if !chunk.is_empty() {
            let _ = self.deltas.send(chunk.clone());
            self.text.push_str(&chunk);
        }
    }

    fn finish(mut self) -> String {
        let rest = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
        self.emit(rest);
        self.text
    }
}

/// Takes the longest prefix of `buf` that is complete UTF-8; invalid bytes
/// become U+FFFD, an incomplete character at the end stays in `buf`.
fn take_utf8(buf: &mut Vec<u8>) -> String {
    let mut out = String::new();
    loop {
        match std::str::from_utf8(buf) {
            Ok(s) => {
                out.push_str(s);
                buf.clear();
                return out;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                out.push_str(std::str::from_utf8(&buf[..valid]).unwrap_or_default());
                match e.error_len() {
                    Some(bad) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        buf.drain(..valid + bad);
                    }
                    None => {
                        buf.drain(..valid);
                        return out;
                    }
                }
            }
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
    fn unsupported_schemas_fall_back() {
        assert_eq!(schema_to_gbnf(&json!({"type": "array"})), None);
        assert_eq!(schema_to_gbnf(&json!({"type": "object", "properties": {"x": {"type": "object"}}})), None);
        assert!(schema_to_gbnf(&json!({"type": "object", "properties": {"k": {"enum": ["a", "b"]}}})).is_some());
    }

    #[test]
    fn default_threads_is_positive() {
        assert!(default_threads() >= 1);
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        assert_eq!(default_parallel(1), (cores + 1).min(MAX_PARALLEL), "a core each, and one more");
        assert_eq!(default_parallel(cores * 4), 1);
    }

    fn tokens(range: std::ops::Range<i32>) -> Vec<LlamaToken> {
        range.map(LlamaToken::new).collect()
    }

    fn pending(tokens: Vec<LlamaToken>, system: usize) -> Pending {
        let (deltas, _) = tokio::sync::mpsc::unbounded_channel();
        let (reply, _) = oneshot::channel();
        let job = Job { request: ChatRequest::new(vec![]), deltas, cancel: CancellationToken::new(), reply };
        Pending { job, prompt: Prompt { tokens, keep: 0, system } }
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
            // Engine 0 generates the speech; engines 1 and 2 are idle.
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
    fn reading_ahead_takes_a_core_only_when_no_request_waits_for_one() {
        let patience = std::time::Duration::from_millis(10);
        let gate = Arc::new(CoreGate::new(2));
        let ahead = gate.enter_idle(patience).expect("a free core");
        let step = gate.enter(1, false);
        assert!(gate.enter_idle(patience).is_none(), "both cores are taken");
        drop(ahead);
        let reader = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let _cores = gate.enter(2, true);
                std::thread::sleep(std::time::Duration::from_millis(50));
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(gate.enter_idle(patience).is_none(), "a prompt chunk waits for the free core");
        drop(step);
        reader.join().unwrap();
        assert!(gate.enter_idle(patience).is_some());
    }

    #[test]
    fn a_request_goes_to_the_engine_that_holds_its_prompt() {
        let conversation = tokens(0..300);
        let next = || pending(tokens(0..320), 0);
        // Engine 0 holds the conversation and is idle: engine 1 leaves it alone.
        let q = queue(vec![(vec![conversation.clone()], false), (vec![], false)], vec![next()]);
        assert_eq!(q.choose(1), None);
        assert_eq!(q.choose(0), Some(0));
        // Engine 0 is busy: engine 1 reads the 300 tokens rather than wait.
        let q = queue(vec![(vec![conversation.clone()], true), (vec![], false)], vec![next()]);
        assert_eq!(q.choose(1), Some(0));
        // ...but not a discussion of more than `TAKE_OVER` tokens.
        let long = tokens(0..(TAKE_OVER as i32 + 100));
        let q = queue(vec![(vec![long], true), (vec![], false)], vec![pending(tokens(0..(TAKE_OVER as i32 + 120)), 0)]);
        assert_eq!(q.choose(1), None);
        // A saved system prompt counts as held by every engine.
        let q = queue(vec![(vec![conversation.clone()], false), (vec![], false)], vec![pending(tokens(0..320), 290)]);
        assert_eq!(q.choose(1), Some(0));
        // Of two requests, the one another engine holds less of.
        let other = pending([tokens(1000..1010), tokens(0..50)].concat(), 0);
        let q = queue(vec![(vec![conversation], true), (vec![], false)], vec![next(), other]);
        assert_eq!(q.choose(1), Some(1));
        // Nothing held anywhere: the oldest request.
        let q = queue(vec![(vec![], false), (vec![], false)], vec![next(), pending(tokens(5..9), 0)]);
        assert_eq!(q.choose(1), Some(0));
    }

    #[test]
    fn prompt_chunks_wait_for_every_core_and_go_before_generation_steps() {
        let gate = Arc::new(CoreGate::new(2));
        let step = gate.enter(1, false);
        let (tx, rx) = std_mpsc::channel();
        let reader = {
            let (gate, tx) = (gate.clone(), tx.clone());
            std::thread::spawn(move || {
                let _cores = gate.enter(2, true);
                tx.send("read").unwrap();
                std::thread::sleep(std::time::Duration::from_millis(50));
            })
        };
        // The reader is waiting for the core the step holds.
        assert!(rx.recv_timeout(std::time::Duration::from_millis(100)).is_err());
        let stepper = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let _cores = gate.enter(1, false);
                tx.send("step").unwrap();
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(step);
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(5)), Ok("read"));
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(5)), Ok("step"));
        reader.join().unwrap();
        stepper.join().unwrap();
        assert_eq!(gate.lock().free, 2);
    }
}
