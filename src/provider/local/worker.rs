//! The worker thread: it owns the llama.cpp backend and the model, takes
//! orders from the providers and hands requests to the model contexts.

use super::*;

pub(super) struct Worker {
    pub(super) path: PathBuf,
    pub(super) orders: std_mpsc::Sender<Order>,
    pub(super) counters: Arc<Counters>,
    pub(super) info: LocalModelInfo,
    /// The worker thread, handed to [`ENDING`] when the worker is dropped.
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Worker threads whose last provider is gone, freeing their model.
static ENDING: Mutex<Vec<std::thread::JoinHandle<()>>> = Mutex::new(Vec::new());

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the order channel ends the thread's loop; the thread then
        // frees the model's contexts and the model.
        let (closed, _) = std_mpsc::channel();
        drop(std::mem::replace(&mut self.orders, closed));
        if let Some(thread) = self.thread.take() {
            ENDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(thread);
        }
    }
}

/// Waits, up to `limit` in all, for the worker threads whose providers are
/// gone to free their models. A process that ends while one still frees
/// llama.cpp's state runs llama.cpp's own teardown at the same time, and
/// crashed so (a segmentation fault after `moot bench` had printed its
/// results); `cli::main` calls this before returning.
pub fn wait_for_workers(limit: std::time::Duration) {
    let deadline = std::time::Instant::now() + limit;
    let threads = std::mem::take(&mut *ENDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    for thread in threads {
        while !thread.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
}

/// Makes [`wait_for_workers`] run as the process exits, once a model is
/// loaded: a process that ends while a worker still frees its model on a
/// GPU otherwise has CUDA's driver shut down under it, and llama.cpp
/// aborts (seen on an H200 at the end of the test binary, whose tests drop
/// their providers as they end). Exit handlers run in the reverse order of
/// their registration, and this one is registered after llama.cpp's
/// backend first ran, so it runs before the backend's own teardown.
/// `cli::main` also waits before returning.
fn wait_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn at_exit() {
        wait_for_workers(std::time::Duration::from_secs(10));
    }
    unsafe extern "C" {
        fn atexit(handler: extern "C" fn()) -> std::ffi::c_int;
    }
    ONCE.call_once(|| {
        // SAFETY: `atexit` only stores the handler, a plain function that
        // takes nothing and unwinds nothing (`wait_for_workers` neither
        // panics on a poisoned lock nor waits past its limit).
        unsafe {
            atexit(at_exit);
        }
    });
}

/// What the worker thread and the providers that feed it both see.
#[derive(Debug, Default)]
pub(super) struct Counters {
    /// Jobs sent but not started.
    pub(super) waiting: AtomicUsize,
    /// Jobs being served.
    pub(super) active: AtomicUsize,
    /// Prompt tokens read by the model, over the worker's life.
    pub(super) read: std::sync::atomic::AtomicU64,
    /// Prompt tokens whose state was reused from an earlier prompt.
    pub(super) reused: std::sync::atomic::AtomicU64,
    /// Prompt tokens read ahead of their request.
    pub(super) read_ahead: std::sync::atomic::AtomicU64,
    /// Engines reading a prompt ahead now.
    pub(super) reading_ahead: AtomicUsize,
}

/// What the worker thread is asked to do.
pub(super) enum Order {
    Call(Job),
    /// Read these messages' prompt ahead, with otherwise idle cores (see
    /// [`Provider::read_ahead`]).
    ReadAhead(Vec<ChatMessage>),
    /// Count the tokens of these messages' prompt (see [`Provider::count_tokens`]).
    Count(Vec<ChatMessage>, oneshot::Sender<Result<u64, ProviderError>>),
}

pub(super) struct Job {
    pub(super) request: ChatRequest,
    pub(super) deltas: DeltaSender,
    pub(super) cancel: CancellationToken,
    pub(super) reply: oneshot::Sender<Result<Completion, ProviderError>>,
}

/// Workers by canonical model path, so every provider of one file shares one
/// model in memory.
pub(super) static WORKERS: Mutex<Vec<(PathBuf, Weak<Worker>)>> = Mutex::new(Vec::new());

pub(super) fn worker_gone() -> ProviderError {
    ProviderError::Server { message: "the local model worker stopped".to_string(), retryable: false }
}

pub(super) fn server_error(message: impl Into<String>) -> ProviderError {
    ProviderError::Server { message: message.into(), retryable: false }
}

/// The process-wide llama.cpp backend (it may be initialised only once).
pub(super) fn backend() -> Result<&'static LlamaBackend, ProviderError> {
    pub(super) static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
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
    pub(super) fn start(path: PathBuf, config: &LocalConfig) -> Result<Self, ProviderError> {
        let (orders, order_rx) = std_mpsc::channel::<Order>();
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let counters = Arc::new(Counters::default());
        let threads = config.threads.filter(|&t| t > 0).unwrap_or_else(default_threads);
        let threads_batch = config.threads_batch.filter(|&t| t > 0).unwrap_or_else(default_threads_batch);
        let gpus = gpu::gpus();
        let parallel = config.parallel.filter(|&p| p > 0).unwrap_or_else(|| gpu::auto_parallel(&gpus));
        let setup = Setup {
            context_size: config.context_size.map(|n| n.max(64)),
            threads: (threads, threads_batch),
            parallel,
            flash_attention: config.flash_attention,
            repetition: config.repetition.clone(),
            gpu_layers: config.gpu_layers,
            gpus,
            states: config
                .state_dir
                .clone()
                .or_else(default_state_dir)
                .and_then(|dir| PromptStates::new(dir, &path, (config.flash_attention, parallel))),
            path: path.clone(),
        };
        let worker_counters = counters.clone();
        let thread = std::thread::Builder::new()
            .name("moot-local-model".to_string())
            .spawn(move || worker_main(&setup, &ready_tx, &order_rx, &worker_counters))
            .map_err(|e| server_error(format!("cannot start the local model thread: {e}")))?;
        let info = ready_rx.recv().map_err(|_| worker_gone())??;
        wait_at_exit();
        Ok(Self { path, orders, counters, info, thread: Some(thread) })
    }
}

/// What the worker thread needs to load the model and start its engines.
pub(super) struct Setup {
    pub(super) path: PathBuf,
    /// `None`: chosen by [`auto_context_size`].
    pub(super) context_size: Option<u32>,
    /// Generation and prompt-reading threads.
    pub(super) threads: (usize, usize),
    pub(super) parallel: usize,
    /// llama.cpp's flash attention (see [`LocalConfig::flash_attention`]).
    pub(super) flash_attention: bool,
    /// How prose is kept from repeating (see [`LocalConfig::repetition`]).
    pub(super) repetition: Repetition,
    /// `gpu_layers` (`None`: automatic).
    pub(super) gpu_layers: Option<u32>,
    /// The GPUs llama.cpp found as the worker started.
    pub(super) gpus: Vec<gpu::Gpu>,
    pub(super) states: Option<PromptStates>,
}

pub(super) fn worker_main(
    setup: &Setup,
    ready: &std_mpsc::Sender<Result<LocalModelInfo, ProviderError>>,
    orders: &std_mpsc::Receiver<Order>,
    counters: &Arc<Counters>,
) {
    let loaded = (|| {
        let backend = backend()?;
        let bytes = std::fs::metadata(&setup.path).map(|m| m.len()).unwrap_or(0);
        let offload = gpu::plan(setup.gpu_layers, bytes, &setup.gpus);
        let params = LlamaModelParams::default().with_n_gpu_layers(offload.layers);
        let model = LlamaModel::load_from_file(backend, &setup.path, &params)
            .map_err(|e| ProviderError::Config(format!("cannot load {} as a GGUF model: {e}", setup.path.display())))?;
        Ok::<_, ProviderError>((backend, model, offload))
    })();
    let (backend, model, offload) = match loaded {
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
    // One context for all engines; with less memory than it needs, fewer engines.
    let mut engines_wanted = setup.parallel.max(1);
    let (ctx, seq_capacity, mut info) = loop {
        match new_context(backend, &chat, setup, engines_wanted) {
            Ok(made) => break made,
            Err(e) if engines_wanted == 1 => {
                let _ = ready.send(Err(e));
                return;
            }
            Err(e) => {
                tracing::warn!(
                    "local model: serving {} request(s) at once, not {engines_wanted}: {e}",
                    engines_wanted / 2
                );
                engines_wanted /= 2;
            }
        }
    };
    info.gpu = gpu::describe(&offload, model.n_layer());
    let shared = SharedContext::new(ctx, batch_capacity(engines_wanted), scripts::east_asian_tokens(&model));
    let handoffs = Handoffs::new(engines_wanted);
    let engines: Vec<ModelContext<'_, '_>> = (0..engines_wanted)
        .map(|id| {
            ModelContext::new((id, engines_wanted), &model, (&shared, &handoffs), seq_capacity, setup, counters.clone())
        })
        .collect();
    let queue = Queue::new(engines.len());
    let _ = ready.send(Ok(info));
    std::thread::scope(|scope| {
        let decoder = std::thread::Builder::new()
            .name("moot-local-model-decoder".to_string())
            .spawn_scoped(scope, || shared.run_decoder());
        let mut serving = Vec::new();
        if let Err(e) = decoder {
            tracing::warn!("local model: cannot start the decoder: {e}");
        } else {
            for (id, engine) in engines.into_iter().enumerate() {
                let queue = &queue;
                let spawned = std::thread::Builder::new()
                    .name(format!("moot-local-model-{id}"))
                    .spawn_scoped(scope, move || serve(id, engine, queue, counters));
                match spawned {
                    Ok(handle) => serving.push(handle),
                    Err(e) => tracing::warn!("local model: cannot start engine {id}: {e}"),
                }
            }
        }
        let started = serving.len();
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
                chat.prepare(&job.request, seq_capacity, setup.states.as_ref())
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
        // The engines finish what they serve; then the decoder stops.
        for engine in serving {
            let _ = engine.join();
        }
        shared.rounds.close();
    });
}

/// One engine's loop: takes the requests [`QueueState::choose`] gives it
/// until the worker closes the queue.
pub(super) fn serve(id: usize, mut engine: ModelContext<'_, '_>, queue: &Queue, counters: &Counters) {
    while let Some(work) = queue.next_for(id) {
        let Pending { job, prompt } = match work {
            Work::Serve(pending) => *pending,
            Work::ReadAhead(tokens, donor) => {
                counters.reading_ahead.fetch_add(1, Ordering::SeqCst);
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    engine.read_ahead(&tokens, donor, || queue.has_work(id), |held| queue.holds(id, held))
                }));
                if outcome.is_err() {
                    engine.forget_cache();
                }
                queue.read_ahead_done(id, engine.held());
                counters.reading_ahead.fetch_sub(1, Ordering::SeqCst);
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
pub(super) struct Pending {
    pub(super) job: Job,
    pub(super) prompt: Prompt,
}

/// A prompt's tokens and the parts of it worth knowing.
pub(super) struct Prompt {
    pub(super) tokens: Vec<LlamaToken>,
    /// Tokens of all messages but the last (see [`Slot::keep`]).
    pub(super) keep: usize,
    /// The system prompt, when its state may be saved or loaded (see
    /// [`SAVED_PROMPT_MIN`]).
    pub(super) system: Option<SavedSystem>,
    /// The reply's opening words, whose tokens end `tokens` (see
    /// [`ChatRequest::opening`]).
    pub(super) opening: Option<String>,
    /// Whether the prompt holds an East Asian character (else none is
    /// drawn, see [`super::scripts`]).
    pub(super) east_asian: bool,
}

/// A system prompt whose state is saved, or will be.
pub(super) struct SavedSystem {
    /// Its tokens, the first of the prompt's.
    pub(super) len: usize,
    /// Where its state is saved.
    pub(super) path: std::path::PathBuf,
    /// Whether the state was saved when the request came (an engine can
    /// then load it in milliseconds instead of reading it).
    pub(super) saved: bool,
}

/// What an engine is given to do.
pub(super) enum Work {
    Serve(Box<Pending>),
    /// Read these prompt tokens ahead of the request that will start with
    /// them, starting from a copy of the given busy engine's sequence when
    /// it holds more of them.
    ReadAhead(Vec<LlamaToken>, Option<usize>),
}
