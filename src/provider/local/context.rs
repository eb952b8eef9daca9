//! A llama.cpp context of the shared model ([`ModelContext`]): the sequences
//! it keeps, prompt reuse and reading ahead; saved prompt states are in
//! [`states`], generation in [`generate`].

use super::*;

mod generate;
mod states;

pub(super) use generate::{GenState, Prose};
pub(super) use states::PromptStates;

/// An engine: the sequences it holds in the shared llama.cpp context, and
/// the request it serves.
pub(super) struct ModelContext<'a, 'm> {
    pub(super) model: &'m LlamaModel,
    pub(super) shared: &'a SharedContext<'m>,
    pub(super) handoffs: &'a Handoffs,
    /// Its number among the worker's engines.
    pub(super) id: usize,
    /// The sequence in use.
    pub(super) current: Slot,
    /// The other sequences, kept for prompts that continue them.
    pub(super) parked: Vec<Slot>,
    /// Tokens one sequence may hold.
    pub(super) seq_capacity: usize,
    /// Counts requests, to find the least recently used sequence.
    pub(super) clock: u64,
    pub(super) counters: Arc<Counters>,
    /// Saved states of long system prompts.
    pub(super) states: Option<PromptStates>,
    /// A copy into the working sequence waits for the next decode (llama.cpp
    /// copies a sequence's cells then): no saved state may be loaded into it
    /// before, or the copy would overwrite it.
    pub(super) copy_pending: bool,
    /// The place of the request being served in the order of prompt reading.
    pub(super) order: u64,
    /// Tokens left of its reply's head start (see [`HEAD_START`]).
    pub(super) early: u32,
    /// How prose is kept from repeating (see [`Repetition`]).
    pub(super) repetition: Repetition,
    /// The engine's DRY sampler, built for its first prose and kept.
    pub(super) dry: Option<LlamaSampler>,
}

/// llama.cpp's `LLAMA_FLASH_ATTN_TYPE_ENABLED` and `_DISABLED` (the enum
/// of `llama.h`; llama.cpp's own default, `AUTO`, turns it on for CPUs).
const FLASH_ATTENTION_ON: i32 = 1;
const FLASH_ATTENTION_OFF: i32 = 0;

/// A sequence of the context and what it holds.
pub(super) struct Slot {
    /// Its id in the context.
    pub(super) seq: i32,
    /// Tokens whose keys and values are in the context for `seq`, in order.
    pub(super) cached: Vec<LlamaToken>,
    /// How many of them a later prompt is likely to continue: the last
    /// prompt's tokens before its final message (the panel's instructions,
    /// the item and the discussion so far, not the speaker's own request or
    /// the reply).
    pub(super) keep: usize,
    pub(super) last_used: u64,
}

impl Slot {
    pub(super) fn empty(seq: i32) -> Self {
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
pub(super) const SEQ_SPARE: usize = 8;

/// How many tokens of a sequence's `keep` part a new prompt must leave out
/// for the sequence to be copied first (a few milliseconds for the whole
/// state) rather than cut short.
pub(super) const KEEP_TAIL: usize = 64;

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Finish {
    Stop,
    Length,
}

/// Creates the context the engines share: `engines` × [`SEQUENCES`]
/// sequences of the context size per request each (the cache is not unified:
/// each sequence has cells of its own). Returns it with the tokens one
/// sequence may hold and the facts about the model.
pub(super) fn new_context<'m>(
    backend: &LlamaBackend,
    chat: &Chat<'m>,
    setup: &Setup,
    engines: usize,
) -> Result<(LlamaContext<'m>, usize, LocalModelInfo), ProviderError> {
    let model = chat.model;
    let trained = model.n_ctx_train().max(64);
    let per_seq = match setup.context_size {
        Some(n) => n.min(trained),
        None => auto_context_size(trained, kv_bytes_per_token(model), engines, physical_memory()),
    };
    let (threads, threads_batch) = setup.threads;
    let threads_i32 = i32::try_from(threads).unwrap_or(1);
    let batch_i32 = i32::try_from(threads_batch).unwrap_or(1);
    let sequences = SEQUENCES * engines as u32;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(per_seq.saturating_mul(sequences)))
        .with_n_seq_max(sequences)
        .with_kv_unified(false)
        .with_n_batch(batch_capacity(engines) as u32)
        .with_n_ubatch(PROMPT_CHUNK as u32)
        .with_n_threads(threads_i32)
        .with_n_threads_batch(batch_i32)
        .with_flash_attention_policy(if setup.flash_attention { FLASH_ATTENTION_ON } else { FLASH_ATTENTION_OFF });
    let ctx = model
        .new_context(backend, params)
        .map_err(|e| server_error(format!("cannot create a llama.cpp context: {e}")))?;
    let seq_capacity = (ctx.n_ctx() / sequences).max(64) as usize;
    let info = LocalModelInfo {
        architecture: model.meta_val_str("general.architecture").unwrap_or_default(),
        chat_template: chat.template_name.clone(),
        context_size: seq_capacity as u32,
        threads,
        threads_batch,
        parallel: engines,
        gpu: String::new(),
    };
    Ok((ctx, seq_capacity, info))
}

/// Most tokens one decode of the shared context takes: a prompt chunk and a
/// generation step of every engine.
pub(super) fn batch_capacity(engines: usize) -> usize {
    PROMPT_CHUNK + engines
}

impl<'a, 'm> ModelContext<'a, 'm> {
    /// Engine `id` of `engines`. It reads and generates in sequence `id` of
    /// the context, its *working* sequence (the engines' working sequences
    /// have consecutive ids, so llama.cpp steps them together), and keeps
    /// [`SEQUENCES`] − 1 more, after all the working ones, whose contents are
    /// copied into the working sequence when a prompt continues them.
    pub(super) fn new(
        (id, engines): (usize, usize),
        model: &'m LlamaModel,
        (shared, handoffs): (&'a SharedContext<'m>, &'a Handoffs),
        seq_capacity: usize,
        setup: &Setup,
        counters: Arc<Counters>,
    ) -> Self {
        let seq = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let kept = SEQUENCES as usize - 1;
        let parked = (0..kept).map(|k| Slot::empty(seq(engines + id * kept + k))).collect();
        Self {
            model,
            shared,
            handoffs,
            id,
            current: Slot::empty(seq(id)),
            parked,
            seq_capacity,
            clock: 0,
            counters,
            states: setup.states.clone(),
            copy_pending: false,
            order: 0,
            early: 0,
            repetition: setup.repetition.clone(),
            dry: None,
        }
    }

    /// The token sequences the engine holds.
    pub(super) fn held(&self) -> Vec<Vec<LlamaToken>> {
        std::iter::once(&self.current).chain(&self.parked).map(|s| s.cached.clone()).filter(|c| !c.is_empty()).collect()
    }

    /// Decodes `items` with the other engines' tokens of the same round (see
    /// [`SharedContext`]); `kind` says what they are. Returns the logits of
    /// the items that want them.
    pub(super) fn decode(&mut self, items: Vec<Item>, kind: Kind) -> Result<Vec<Vec<f32>>, String> {
        let decoded = self.shared.decode(items, self.order, kind);
        self.copy_pending = false;
        decoded
    }

    /// Items for `tokens`, following what the working sequence holds; with
    /// `logits_last`, the last one's logits are wanted.
    pub(super) fn following(&self, tokens: &[LlamaToken], logits_last: bool) -> Vec<Item> {
        let (start, seq) = (self.current.cached.len(), self.current.seq);
        let last = tokens.len().saturating_sub(1);
        let pos = |i: usize| i32::try_from(start + i).unwrap_or(i32::MAX);
        tokens
            .iter()
            .enumerate()
            .map(|(i, &token)| Item { token, pos: pos(i), seq, logits: logits_last && i == last })
            .collect()
    }

    /// Forgets every sequence of this engine (the other engines' stay).
    pub(super) fn forget_cache(&mut self) {
        let mut ctx = self.shared.lock();
        for slot in std::iter::once(&mut self.current).chain(&mut self.parked) {
            let _ = ctx.kv_cache_seq_rm(slot.seq, None, None);
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
    pub(super) fn choose_sequence(&mut self, tokens: &[LlamaToken]) -> usize {
        let common = |cached: &[LlamaToken]| common_prefix(cached, tokens);
        let worth_keeping = 64.min(tokens.len() / 4).max(1);
        let current = common(&self.current.cached);
        let best = self
            .parked
            .iter()
            .enumerate()
            .map(|(i, slot)| (common(&slot.cached), i))
            .max_by_key(|&(c, i)| (c, std::cmp::Reverse(i)));
        match best {
            Some((c, i)) if c > current && c >= worth_keeping => {
                self.park_current(Some(i));
                self.unpark(i);
            }
            _ if current >= worth_keeping || self.current.cached.is_empty() => {}
            // Nothing worth continuing: the least recently used sequence is
            // given up for what the working one holds.
            _ => self.park_current(None),
        }
        let shared = common(&self.current.cached);
        if shared >= worth_keeping && self.current.keep >= shared + KEEP_TAIL {
            self.park_current(None);
        }
        self.clock += 1;
        shared
    }

    pub(super) fn least_recently_used(&self, except: Option<usize>) -> Option<usize> {
        self.parked
            .iter()
            .enumerate()
            .filter(|&(i, _)| Some(i) != except)
            .min_by_key(|(_, s)| s.last_used)
            .map(|(i, _)| i)
    }

    /// Copies the working sequence into the least recently used parked one
    /// (not `except`), so that its conversation can continue it later.
    pub(super) fn park_current(&mut self, except: Option<usize>) {
        let Some(j) = self.least_recently_used(except) else { return };
        let target = self.parked[j].seq;
        if self.shared.lock().kv_cache_seq_cp(self.current.seq, target, None, None).is_ok() {
            self.parked[j].cached.clone_from(&self.current.cached);
            self.parked[j].keep = self.current.keep;
            self.parked[j].last_used = self.clock;
            tracing::debug!(engine = self.id, from = self.current.seq, to = target, "local model: sequence copied");
        } else {
            self.parked[j].cached.clear();
        }
    }

    /// Copies parked sequence `i` into the working one.
    pub(super) fn unpark(&mut self, i: usize) {
        let from = self.parked[i].seq;
        self.parked[i].last_used = self.clock;
        if self.shared.lock().kv_cache_seq_cp(from, self.current.seq, None, None).is_ok() {
            self.current.cached.clone_from(&self.parked[i].cached);
            self.current.keep = self.parked[i].keep;
            self.copy_pending = true;
        } else {
            self.forget_cache();
        }
    }

    pub(super) fn run(&mut self, job: &Job, prompt: &Prompt) -> Result<Completion, ProviderError> {
        // Rounds wait for this engine's tokens while it serves.
        let serving = self.shared.rounds.serving();
        self.order = serving.order;
        self.serve(job, prompt)
    }

    fn serve(&mut self, job: &Job, prompt: &Prompt) -> Result<Completion, ProviderError> {
        let request = &job.request;
        let tokens = &prompt.tokens;
        let mut out = Output::new(&job.deltas);
        let logits = self.read_prompt(prompt, &job.cancel)?;
        self.early = HEAD_START;

        let grammar = match &request.response_schema {
            Some(schema) => Some(self.grammar_for(schema)?),
            None => None,
        };
        let budget = match &request.response_schema {
            Some(schema) => request.max_tokens.saturating_sub(json_reserve(schema)),
            None => request.max_tokens,
        };
        // A reply that writes prose needs DRY (the JSON object alone does not).
        let writes_prose = grammar.is_none() || request.prose_first;
        if writes_prose && self.dry.is_none() {
            self.dry = self.repetition.dry(self.model);
        }
        let dry = if writes_prose { self.dry.take() } else { None };
        let banned = (!prompt.east_asian).then(|| self.shared.east_asian.clone());
        let mut sampling = Sampling::new(self.model, request, tokens, &self.repetition, (dry, banned));
        let mut state = GenState { logits, generated: 0 };
        let mut logprobs = Vec::new();
        if let Some(words) = &prompt.opening {
            out.push_str(words);
        }

        // A request that wants the object at once writes no prose before it.
        let mut finish = if grammar.is_some() && !request.prose_first {
            Finish::Stop
        } else {
            let guard = request.no_copy.as_ref().map(|n| {
                CopyGuard::new(&n.avoid, &n.quotable, &n.names)
                    .strict(&n.strict)
                    .answering(n.answers.as_deref(), &n.names)
            });
            let speaker = request
                .no_copy
                .as_ref()
                .and_then(|n| Speaker::new(n.speaker.as_deref()?, n.answers.as_deref(), &n.names));
            let prose = Prose {
                budget,
                json_follows: grammar.is_some(),
                guard: guard.as_ref(),
                speaker: speaker.as_ref(),
                sections: &request.sections,
            };
            self.generate_prose(job, &mut sampling, &mut state, prose, &mut out)?
        };
        if let Some(grammar) = grammar {
            // Start the object on a line of its own.
            let prose = out.text().to_string();
            let mut lead = Vec::new();
            if !prose.is_empty() && !prose.ends_with('\n') {
                lead = self.model.vocab().tokenize(b"\n", false, false);
                lead.truncate(self.seq_capacity.saturating_sub(self.current.cached.len() + 1));
                out.push_str("\n");
            }
            let fence_open = prose.matches("```").count() % 2 == 1;
            let top = request.top_logprobs.map(usize::from);
            let schema = request.response_schema.as_deref();
            let openings = schema.map(member_openings).unwrap_or_default();
            let echo = request.echo.as_ref().zip(schema).and_then(|(e, s)| echo_members(s, e));
            finish = self.generate_json(
                job,
                &mut sampling,
                (grammar, openings, echo, lead),
                &mut state,
                &mut out,
                top,
                &mut logprobs,
            )?;
            if fence_open {
                out.push_str("\n```");
            }
        }
        self.dry = sampling.dry.take().or(self.dry.take());
        let text = out.finish();
        Ok(Completion {
            text,
            usage: Usage { input_tokens: tokens.len() as u64, output_tokens: state.generated, ..Usage::default() },
            finish_reason: Some(match finish {
                Finish::Stop => "stop".to_string(),
                Finish::Length => "length".to_string(),
            }),
            cached: false,
            logprobs: (!logprobs.is_empty()).then_some(logprobs),
            endpoint: None,
        })
    }

    /// Brings the context to the prompt's tokens, reusing the cached prefix
    /// (or the saved state of its system prompt), and returns the logits of
    /// the last token.
    pub(super) fn read_prompt(
        &mut self,
        prompt: &Prompt,
        cancel: &CancellationToken,
    ) -> Result<Vec<f32>, ProviderError> {
        let started = std::time::Instant::now();
        let tokens = &prompt.tokens;
        let mut common = self.choose_sequence(tokens);
        self.current.keep = prompt.keep;
        // A copy from another sequence is not settled until it is decoded
        // into, so no state is loaded or saved over it.
        let system = prompt.system.as_ref().filter(|_| self.states.is_some() && !self.copy_pending);
        let mut loaded = false;
        // Held while this engine reads and saves the system prompt.
        let mut claim = None;
        if let Some(system) = system.filter(|s| common < s.len) {
            claim = self.states.as_ref().map(|s| s.claim(&system.path));
            if self.load_state(&system.path, &tokens[..system.len]) {
                common = system.len;
                loaded = true;
                claim = None;
            }
        }
        // The last prompt token is always decoded again: its logits are needed.
        common = self.cut_to(common.min(tokens.len() - 1));
        self.counters.reused.fetch_add(common as u64, Ordering::Relaxed);
        self.counters.read.fetch_add((tokens.len() - common) as u64, Ordering::Relaxed);
        let mut from = common;
        if let Some(system) = system.filter(|s| from < s.len) {
            // Read the system prompt on its own first and save its state.
            self.decode_prompt(&tokens[from..system.len], cancel)?;
            self.save_state(&system.path);
            from = system.len;
        }
        drop(claim);
        let logits = self.decode_prompt(&tokens[from..], cancel)?;
        tracing::debug!(
            engine = self.id,
            seq = self.current.seq,
            reused = common,
            read = tokens.len() - common,
            loaded,
            ms = started.elapsed().as_millis() as u64,
            "local model: prompt read"
        );
        Ok(logits)
    }

    /// Drops what the sequence in use holds beyond its first `len` tokens;
    /// returns how many it holds then (none if llama.cpp could not drop them).
    pub(super) fn cut_to(&mut self, len: usize) -> usize {
        if len < self.current.cached.len() {
            let seq = self.current.seq;
            let removed =
                u32::try_from(len).ok().and_then(|p0| self.shared.lock().kv_cache_seq_rm(seq, Some(p0), None).ok());
            if removed.is_some() {
                self.current.cached.truncate(len);
            } else {
                self.forget_cache();
            }
        }
        self.current.cached.len()
    }

    /// Reads `tokens`, the start of a request expected soon, into the
    /// working sequence, [`AHEAD_STEP`] tokens a round, while no engine
    /// serves a request (a prompt's tokens cost a generation step more than
    /// they save it). Starts from a copy of `donor`'s sequence when that
    /// engine holds more of them (a copy within the context takes
    /// milliseconds). Stops when all are read or when `interrupted` says a
    /// request waits for this engine; `report` hears what the engine holds as
    /// it goes, so requests can be routed to it.
    pub(super) fn read_ahead(
        &mut self,
        tokens: &[LlamaToken],
        donor: Option<usize>,
        interrupted: impl Fn() -> bool,
        report: impl Fn(Vec<Vec<LlamaToken>>),
    ) {
        let started = std::time::Instant::now();
        let copy = donor.filter(|_| !interrupted()).and_then(|d| self.handoffs.take(d));
        let common = self.choose_sequence(tokens);
        let copied = match copy {
            Some((seq, held)) if common_prefix(&held, tokens) > common => self.copy_from(seq, held),
            _ => false,
        };
        let from = self.cut_to(common_prefix(&self.current.cached, tokens));
        self.current.keep = tokens.len();
        if copied {
            report(self.held());
        }
        let mut reported = from;
        while self.current.cached.len() < tokens.len() {
            // Only while no engine serves a request: reading ahead is worth
            // no reply's step.
            while !interrupted() && !self.shared.rounds.idle() {
                std::thread::sleep(AHEAD_PATIENCE);
            }
            if interrupted() {
                break;
            }
            let position = self.current.cached.len();
            let step = &tokens[position..tokens.len().min(position + AHEAD_STEP)];
            if self.decode(self.following(step, false), Kind::Ahead).is_err() {
                self.forget_cache();
                return;
            }
            self.current.cached.extend_from_slice(step);
            self.counters.read_ahead.fetch_add(step.len() as u64, Ordering::Relaxed);
            if self.current.cached.len() >= reported + AHEAD_REPORT {
                reported = self.current.cached.len();
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

    /// Replaces what the sequence in use holds with a copy of sequence `seq`
    /// of another engine, which held `held` when it offered it (it may hold
    /// more by now: what follows `held` is dropped from the copy).
    pub(super) fn copy_from(&mut self, seq: i32, held: Vec<LlamaToken>) -> bool {
        let target = self.current.seq;
        let mut ctx = self.shared.lock();
        let _ = ctx.kv_cache_seq_rm(target, None, None);
        self.current.cached.clear();
        let len = u32::try_from(held.len()).unwrap_or(u32::MAX);
        let copied = ctx.kv_cache_seq_cp(seq, target, None, None).is_ok()
            && ctx.kv_cache_seq_rm(target, Some(len), None).is_ok();
        if copied {
            self.current.cached = held;
            self.copy_pending = true;
        } else {
            tracing::warn!("local model: cannot copy another engine's sequence");
            let _ = ctx.kv_cache_seq_rm(target, None, None);
        }
        copied
    }

    /// Appends `tokens` to the sequence in use, in chunks, and returns the
    /// logits of the last token. Each chunk is read over one or more rounds
    /// (see [`Rounds`](super::shared::Rounds)).
    pub(super) fn decode_prompt(
        &mut self,
        tokens: &[LlamaToken],
        cancel: &CancellationToken,
    ) -> Result<Vec<f32>, ProviderError> {
        let mut logits = Vec::new();
        let mut done = 0;
        while done < tokens.len() {
            if cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            let chunk = &tokens[done..tokens.len().min(done + PROMPT_CHUNK)];
            let last_chunk = done + chunk.len() == tokens.len();
            match self.decode(self.following(chunk, last_chunk), Kind::Read) {
                Ok(mut rows) => {
                    if last_chunk {
                        logits = rows.pop().unwrap_or_default();
                    }
                }
                Err(e) => {
                    self.forget_cache();
                    return Err(server_error(format!("llama.cpp could not read the prompt: {e}")));
                }
            }
            self.current.cached.extend_from_slice(chunk);
            done += chunk.len();
        }
        numbers(logits).inspect_err(|_| self.forget_cache())
    }
}

/// `logits`, or an error where llama.cpp's are not numbers (NaN), which no
/// token can be drawn from: the sampler would find none and say only that.
/// The cache that gave them is forgotten by the caller.
fn numbers(logits: Vec<f32>) -> Result<Vec<f32>, ProviderError> {
    if logits.iter().any(|x| x.is_nan()) {
        return Err(server_error(
            "llama.cpp's output for this step is not a number (NaN): a numeric fault in the model or in \
             llama.cpp's backend for it; another model, or a build without a GPU backend, may avoid it",
        ));
    }
    Ok(logits)
}
