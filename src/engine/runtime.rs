//! The shared machinery of a run: state, model calls as turns, the pause gate,
//! consensus checks and the end of a session.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::consensus;
use super::prompts::{self, HistoryEntry};
use super::trim::{self, Prompt};
use super::verdict::{PanelScores, Verdict};
use super::{Binding, EngineConfig, Recorder, RunOutcome};
use crate::item::Item;
use crate::panel::{AgentSpec, Panel};
use crate::provider::retry::{RetryPolicy, call_with_retry};
use crate::provider::{ChatMessage, ChatRequest, Completion, Provider, ProviderError, READ_AHEAD_STEP};
use crate::session::event::{AgentInfo, EndStatus, Evaluation, EventKind, Phase, Role, Scores, TurnKind, UsageTotals};
use crate::session::progress::AgentProgress;

/// Pause state shared by every group.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Control {
    pub paused: bool,
    /// Turns allowed to start while paused.
    pub step_credits: u32,
}

/// One agent's state during a run.
#[derive(Debug, Clone)]
pub(crate) struct AgentRt {
    pub name: String,
    pub group: String,
    pub spec: AgentSpec,
    pub initial: Option<Evaluation>,
    /// Latest evaluation as the agent gave it.
    pub own: Option<Evaluation>,
    /// Latest evaluation (overrides applied), finished, turns: moved by the
    /// same rules as the view's.
    pub progress: AgentProgress,
}

/// A human's change to an aggregated result.
#[derive(Debug, Clone)]
pub(crate) struct FinalOverride {
    pub group: Option<String>,
    pub dimension: String,
    pub value: f64,
}

/// An aggregated result as first computed, before human overrides.
#[derive(Debug, Clone)]
pub(crate) struct AggregateRecord {
    pub feedback: String,
    pub method: String,
}

/// Mutable state of a run. Locked briefly, never across an await.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub agents: Vec<AgentRt>,
    /// Shared history per group.
    pub histories: BTreeMap<String, Vec<HistoryEntry>>,
    /// Group → (agent, author) chosen by a person to speak next.
    pub pending_pick: HashMap<String, (String, String)>,
    /// Group → (agent, author) a person refused as the next speaker.
    pub veto: HashMap<String, (String, String)>,
    pub final_overrides: Vec<FinalOverride>,
    /// Decisive evaluations that replace a group's mean (CollabEval final judge).
    pub judged: BTreeMap<String, Evaluation>,
    /// Aggregates emitted so far, keyed by group (`None` = panel-wide).
    pub aggregates: BTreeMap<Option<String>, AggregateRecord>,
    /// (group, turn) of agents' replies without a readable evaluation, and of
    /// agents' calls that failed: why a result may have no scores.
    pub unreadable: Vec<(String, u64)>,
    pub failed_calls: Vec<(String, u64)>,
    pub failure: Option<String>,
    pub stop_reason: Option<String>,
    pub stopped: bool,
    /// The protocol finished (aggregation done).
    pub finished: bool,
    /// Evaluation steps per dimension (G-Eval).
    pub steps: BTreeMap<String, String>,
    /// Dimension → the person who last edited its steps.
    pub steps_edited: BTreeMap<String, String>,
    /// Scoring has started: steps can no longer change.
    pub scoring: bool,
    /// Revisions and proposals of SAGEval's meta-evaluator.
    pub sage: super::protocols::sage_eval::SageState,
    /// Why a pairwise item has no result (no pair could be decided).
    pub pair_failure: Option<String>,
    /// Pairwise: the pairs, the judges' decisions and people's part in them.
    pub pairwise: super::protocols::pairwise::PairwiseState,
}

impl State {
    pub fn agent_index(&self, name: &str) -> Option<usize> {
        self.agents.iter().position(|a| a.name == name)
    }
    pub fn group_agents(&self, group: &str) -> Vec<usize> {
        (0..self.agents.len()).filter(|&i| self.agents[i].group == group).collect()
    }
}

/// Who makes a turn, in which part of the protocol, and how to call its model.
#[derive(Clone, Copy)]
pub(crate) struct TurnSpec<'a> {
    pub participant: &'a str,
    pub group: Option<&'a str>,
    pub phase: Phase,
    pub round: Option<u32>,
    pub role: Role,
    pub binding: &'a Binding,
    /// Temperature and reply length.
    pub sampling: (Option<f32>, u32),
    pub cancel: &'a CancellationToken,
    /// The one dimension the turn is about, if any.
    pub dimension: Option<&'a str>,
    /// The pair a pairwise turn compares.
    pub pair: Option<&'a crate::session::pairwise::PairRef>,
}

/// What came of a turn (after a repair request, if one was needed).
#[derive(Debug, Clone)]
pub(crate) enum Spoken<T = Evaluation> {
    Evaluated {
        evaluation: T,
        text: String,
        turn: u64,
    },
    /// The reply was kept but had no readable evaluation; `done` if the agent
    /// said it had finished; `error` says why the last reply could not be read.
    Unparsed {
        text: String,
        done: bool,
        error: String,
    },
    Failed(ProviderError),
}

pub(crate) fn session_started_event(config: &EngineConfig) -> EventKind {
    let panel = &config.panel;
    let agents = panel
        .agents()
        .map(|(g, a)| {
            let r = config.bindings.for_agent(&a.name).model_ref();
            AgentInfo {
                name: a.name.clone(),
                group: g.name.clone(),
                role: a.role.clone(),
                provider: r.provider,
                model: r.model,
            }
        })
        .collect();
    let roles = panel
        .protocol
        .spec()
        .roles
        .iter()
        .map(|&role| (role.as_str().to_string(), config.bindings.for_role(role).model_ref()))
        .collect();
    EventKind::SessionStarted {
        session_id: config.session_id.clone(),
        protocol: panel.protocol.kind.as_str().to_string(),
        schema_version: crate::session::event::SCHEMA_VERSION,
        panel: panel.to_json(),
        item: config.item.clone(),
        agents,
        roles,
        seed: config.seed,
        moot_version: env!("CARGO_PKG_VERSION").to_string(),
        provider_note: config.provider_note.clone(),
    }
}

/// A model call to make as one turn.
pub(crate) struct CallSpec<'a> {
    /// Who, where in the protocol, and with which provider and sampling.
    pub turn: TurnSpec<'a>,
    pub kind: TurnKind,
    /// The request's messages; a discussion in them is shortened when the
    /// whole request would not fit the model's context (see [`trim`]).
    pub messages: Prompt<'a>,
    pub schema: Option<Arc<serde_json::Value>>,
    pub top_logprobs: Option<u8>,
    /// What the group's next request will start with, given this reply so
    /// far: the run hints it to the providers as the reply streams.
    pub ahead: Option<ReadAhead<'a>>,
}

/// The messages a group's next request will start with, given the reply
/// streaming now (see [`Provider::read_ahead`]).
pub(crate) type ReadAhead<'a> = &'a (dyn Fn(&str) -> Vec<ChatMessage> + Sync);

/// The shared part of a run.
pub(crate) struct Run {
    pub config: EngineConfig,
    pub panel: Arc<Panel>,
    pub rec: Recorder,
    pub retry: RetryPolicy,
    next_turn: AtomicU64,
    totals: Mutex<UsageTotals>,
    /// Turn → group, for usage totals by group.
    turn_groups: Mutex<HashMap<u64, String>>,
    state: Mutex<State>,
    pub control: watch::Sender<Control>,
    /// Ends the debate (turns in flight are cancelled); aggregation still runs.
    pub stop: CancellationToken,
    /// Ends everything, aggregation included.
    pub quit: CancellationToken,
    /// Dimension keys plus `overall`.
    pub keys: Vec<String>,
    quoted: Vec<String>,
}

impl Run {
    pub fn new(config: EngineConfig, rec: Recorder) -> Self {
        let panel = config.panel.clone();
        let agents = panel
            .agents()
            .map(|(g, a)| AgentRt {
                name: a.name.clone(),
                group: g.name.clone(),
                spec: a.clone(),
                initial: None,
                own: None,
                progress: AgentProgress::default(),
            })
            .collect();
        let histories = panel.groups.iter().map(|g| (g.name.clone(), Vec::new())).collect();
        let mut keys = panel.dimension_keys();
        keys.push("overall".into());
        let item = &config.item;
        let quoted = [Some(&item.content), item.context.as_ref(), item.reference.as_ref()]
            .into_iter()
            .flatten()
            .cloned()
            .chain(item.candidates.iter().flatten().map(|c| c.text.clone()))
            .collect();
        let (control, _) = watch::channel(Control::default());
        Self {
            retry: config.retry,
            panel,
            rec,
            next_turn: AtomicU64::new(1),
            totals: Mutex::new(UsageTotals::default()),
            turn_groups: Mutex::new(HashMap::new()),
            state: Mutex::new(State { agents, histories, ..Default::default() }),
            control,
            stop: CancellationToken::new(),
            quit: CancellationToken::new(),
            keys,
            quoted,
            config,
        }
    }

    pub fn item(&self) -> &Item {
        &self.config.item
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn emit(&self, kind: EventKind) {
        self.rec.emit(kind);
    }

    pub fn emit_session_started(&self) {
        self.emit(session_started_event(&self.config));
    }

    /// A seeded generator for one purpose (a group's moderator, a round order…).
    pub fn rng(&self, purpose: &str) -> ChaCha8Rng {
        // FNV-1a: stable across platforms and releases, unlike std's hasher.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in purpose.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        ChaCha8Rng::seed_from_u64(self.config.seed ^ h)
    }

    /// What the item showed the judges (never their verdict when quoted back).
    pub fn quoted(&self) -> Vec<&str> {
        self.quoted.iter().map(String::as_str).collect()
    }

    /// Wait at a safe point while paused. False when the debate is stopping.
    pub async fn gate(&self) -> bool {
        let mut rx = self.control.subscribe();
        loop {
            if self.stop.is_cancelled() {
                return false;
            }
            let mut proceed = false;
            self.control.send_if_modified(|c| {
                if !c.paused {
                    proceed = true;
                    false
                } else if c.step_credits > 0 {
                    c.step_credits -= 1;
                    proceed = true;
                    true
                } else {
                    false
                }
            });
            if proceed {
                return true;
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return false },
                () = self.stop.cancelled() => return false,
            }
        }
    }

    /// Make one model call as a turn: `turn_started`, deltas, a `turn_failed`
    /// per failed attempt. The caller records `turn_completed`.
    pub async fn call(&self, spec: CallSpec<'_>) -> (u64, Result<Completion, ProviderError>, u64) {
        let turn = self.next_turn.fetch_add(1, Ordering::Relaxed);
        if let Some(g) = spec.turn.group {
            self.turn_groups.lock().unwrap_or_else(|e| e.into_inner()).insert(turn, g.to_string());
        }
        self.emit(EventKind::TurnStarted {
            turn,
            agent: spec.turn.participant.to_string(),
            group: spec.turn.group.map(str::to_string),
            phase: spec.turn.phase,
            round: spec.turn.round,
            role: spec.turn.role,
            kind: spec.kind,
            dimension: spec.turn.dimension.map(str::to_string),
            pair: spec.turn.pair.cloned(),
        });
        if let Some(reason) = spec.turn.binding.provider.queue_note() {
            self.emit(EventKind::Waiting { turn, reason });
        }
        let started = Instant::now();
        let provider = spec.turn.binding.provider.clone();
        let fitted = match trim::fit(
            provider.as_ref(),
            &spec.turn.binding.model,
            &spec.messages,
            spec.turn.sampling.1,
            spec.turn.participant,
        )
        .await
        {
            Ok(fitted) => fitted,
            Err(e) => {
                self.emit(EventKind::TurnFailed {
                    turn,
                    agent: spec.turn.participant.to_string(),
                    error: e.to_string(),
                    attempt: 1,
                    will_retry: false,
                    retry_in_ms: None,
                });
                return (turn, Err(e), started.elapsed().as_millis() as u64);
            }
        };
        if let Some(t) = fitted.trimmed {
            self.emit(EventKind::HistoryTrimmed {
                turn,
                agent: spec.turn.participant.to_string(),
                group: spec.turn.group.map(str::to_string),
                left_out: t.left_out,
                condensed: t.condensed,
                tokens_before: t.tokens_before,
                tokens_after: t.tokens_after,
                context: t.context,
                reply_tokens: t.reply_tokens,
                reply_requested: t.reply_requested,
            });
        }
        let request = ChatRequest {
            model: spec.turn.binding.model.clone(),
            messages: fitted.messages,
            max_tokens: fitted.max_tokens,
            temperature: spec.turn.sampling.0,
            seed: Some(self.config.seed),
            response_schema: spec.schema,
            top_logprobs: spec.top_logprobs,
        };
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let ahead = spec.ahead.map(|next| (next, self.read_ahead_providers()));
        let participant = spec.turn.participant;
        let rec = &self.rec;
        let cancel = spec.turn.cancel;
        let policy = &self.retry;
        let attempts = std::sync::atomic::AtomicU32::new(0);
        let attempts = &attempts;
        let call = async move {
            let mut on_failure = |f: &crate::provider::retry::AttemptFailure| {
                attempts.store(f.attempt, Ordering::Relaxed);
                rec.emit(EventKind::TurnFailed {
                    turn,
                    agent: participant.to_string(),
                    error: f.error.to_string(),
                    attempt: f.attempt,
                    will_retry: f.will_retry,
                    retry_in_ms: f.retry_in.map(|d| d.as_millis() as u64),
                });
            };
            let result = call_with_retry(provider.as_ref(), &request, &tx, cancel, policy, &mut on_failure).await;
            drop(tx);
            result
        };
        let forward = async {
            let mut so_far = String::new();
            let mut hinted = 0;
            while let Some(mut text) = rx.recv().await {
                while let Ok(more) = rx.try_recv() {
                    text.push_str(&more);
                }
                if let Some((next, providers)) = &ahead {
                    so_far.push_str(&text);
                    if so_far.len() >= hinted + READ_AHEAD_STEP {
                        hinted = so_far.len();
                        let messages = next(&so_far);
                        providers.iter().for_each(|p| p.read_ahead(&messages));
                    }
                }
                rec.emit(EventKind::TurnDelta { turn, text });
            }
        };
        let (result, ()) = tokio::join!(call, forward);
        if spec.turn.role == Role::Agent
            && let (Some(g), Err(e)) = (spec.turn.group, &result)
            && !matches!(e, ProviderError::Cancelled)
        {
            self.state().failed_calls.push((g.to_string(), turn));
        }
        if matches!(result, Err(ProviderError::Cancelled)) {
            // Close the turn in the log: it will never complete.
            self.emit(EventKind::TurnFailed {
                turn,
                agent: participant.to_string(),
                error: ProviderError::Cancelled.to_string(),
                attempt: attempts.load(Ordering::Relaxed) + 1,
                will_retry: false,
                retry_in_ms: None,
            });
        }
        (turn, result, started.elapsed().as_millis() as u64)
    }

    /// The providers a group's next request may go to (agents' and the
    /// moderator's), each once.
    fn read_ahead_providers(&self) -> Vec<Arc<dyn Provider>> {
        let b = &self.config.bindings;
        let mut out: Vec<Arc<dyn Provider>> = Vec::new();
        for binding in std::iter::once(&b.default).chain(b.agents.values()).chain(b.roles.get(&Role::Moderator)) {
            if !out.iter().any(|p| Arc::ptr_eq(p, &binding.provider)) {
                out.push(binding.provider.clone());
            }
        }
        out
    }

    /// Record the end of a turn. `done`: the reply said it has nothing more
    /// to add (recorded also when no evaluation could be read from it).
    #[allow(clippy::too_many_arguments)]
    pub fn complete_turn(
        &self,
        turn: u64,
        participant: &str,
        role: Role,
        kind: TurnKind,
        completion: &Completion,
        evaluation: Option<Evaluation>,
        parse_error: Option<String>,
        latency_ms: u64,
        done: bool,
    ) {
        let group = self.turn_groups.lock().unwrap_or_else(|e| e.into_inner()).remove(&turn);
        if role == Role::Agent
            && parse_error.is_some()
            && let Some(g) = &group
        {
            self.state().unreadable.push((g.clone(), turn));
        }
        let used = {
            let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
            totals.record_in_group(role, kind, participant, group.as_deref(), &completion.usage);
            totals.total
        };
        self.emit(EventKind::TurnCompleted {
            turn,
            agent: participant.to_string(),
            text: completion.text.clone(),
            evaluation,
            parse_error,
            usage: completion.usage,
            latency_ms,
            cached: completion.cached,
            done,
            truncated: matches!(completion.finish_reason.as_deref(), Some("length" | "max_tokens")),
        });
        let run_spent = self.config.run_budget.as_ref().and_then(|b| b.add(&completion.usage));
        if let Some(reason) = self.config.budget.exceeded(&used).or(run_spent) {
            self.stop_for_budget(reason);
        }
    }

    /// Stop the debate because a budget is spent: the same path as a human
    /// stop (turns in flight cancelled, aggregation still runs), once.
    fn stop_for_budget(&self, reason: String) {
        {
            let mut st = self.state();
            if st.stopped || st.finished {
                return;
            }
            st.stopped = true;
            st.stop_reason = Some(reason);
        }
        self.emit(EventKind::StopRequested { author: "budget".into() });
        self.stop.cancel();
        self.control.send_modify(|c| c.paused = false);
    }

    /// Sampling settings of an agent.
    pub fn agent_sampling(&self, spec: &AgentSpec) -> (Option<f32>, u32) {
        let g = &self.panel.generation;
        (Some(spec.model.temperature.unwrap_or(g.temperature)), spec.model.max_tokens.unwrap_or(g.max_tokens))
    }

    /// Sampling settings of a role.
    pub fn role_sampling(&self, role: Role) -> (Option<f32>, u32) {
        let g = &self.panel.generation;
        if role == Role::Agent {
            return (Some(g.temperature), g.max_tokens);
        }
        let s = self.panel.role_model(role);
        (Some(s.temperature.unwrap_or(g.temperature)), s.max_tokens.unwrap_or(g.max_tokens))
    }

    /// The verdict of the panel's evaluations (every dimension and overall).
    pub fn panel_scores(&self) -> PanelScores<'_> {
        PanelScores { panel: &self.panel, quoted: self.quoted(), keys: &self.keys }
    }

    /// An evaluating turn (agent or final judge) with one repair request when
    /// the reply has no readable evaluation.
    #[allow(clippy::too_many_arguments)]
    pub async fn evaluating_turn(
        &self,
        participant: &str,
        group: Option<&str>,
        phase: Phase,
        round: Option<u32>,
        role: Role,
        binding: &Binding,
        messages: Prompt<'_>,
        sampling: (Option<f32>, u32),
        cancel: &CancellationToken,
        ahead: Option<ReadAhead<'_>>,
    ) -> Spoken {
        let turn =
            TurnSpec { participant, group, phase, round, role, binding, sampling, cancel, dimension: None, pair: None };
        self.verdict_turn(&self.panel_scores(), turn, messages, ahead).await
    }

    /// A turn that asks for `verdict`, with one repair request when the reply
    /// cannot be read. The reply's words are kept either way.
    pub async fn verdict_turn<V: Verdict>(
        &self,
        verdict: &V,
        turn: TurnSpec<'_>,
        messages: Prompt<'_>,
        ahead: Option<ReadAhead<'_>>,
    ) -> Spoken<V::Output> {
        let TurnSpec { participant, role, cancel, .. } = turn;
        let schema = verdict.shared_schema();
        let spec = |kind, messages, ahead| CallSpec {
            turn,
            kind,
            messages,
            schema: schema.clone(),
            top_logprobs: verdict.top_logprobs(),
            ahead,
        };
        // Read a reply and record its turn; `done` carries a NO MORE COMMENTS said earlier in this turn.
        let settle = |turn, kind, c: &Completion, latency, done: bool| match verdict.read(c) {
            Ok(out) => {
                let mut ev = verdict.evaluation(&out);
                if let Some(ev) = ev.as_mut() {
                    ev.done = done || verdict.says_done(&c.text);
                }
                let said = ev.as_ref().is_some_and(|e| e.done);
                self.complete_turn(turn, participant, role, kind, c, ev, None, latency, said);
                Ok(out)
            }
            Err(err) => {
                let said = verdict.says_done(&c.text);
                self.complete_turn(turn, participant, role, kind, c, None, Some(err.clone()), latency, said);
                Err(err)
            }
        };
        let (turn, result, latency) = self.call(spec(verdict.kind(), messages.clone(), ahead)).await;
        let completion = match result {
            Ok(c) => c,
            Err(e) => return Spoken::Failed(e),
        };
        let done = verdict.says_done(&completion.text);
        let error = match settle(turn, verdict.kind(), &completion, latency, false) {
            Ok(evaluation) => return Spoken::Evaluated { evaluation, text: completion.text, turn },
            Err(err) => err,
        };
        if cancel.is_cancelled() {
            return Spoken::Unparsed { text: completion.text, done, error };
        }
        // The reply stays whole after the (perhaps shortened) request it answered.
        let repair = messages.then([ChatMessage::assistant(completion.text.clone()), verdict.repair(&error)]);
        let (turn2, result2, latency2) = self.call(spec(verdict.repair_kind(), repair, None)).await;
        let c2 = match result2 {
            Ok(c) => c,
            Err(e) => {
                return Spoken::Unparsed {
                    text: completion.text,
                    done,
                    error: format!("{error}; asking again failed: {e}"),
                };
            }
        };
        match settle(turn2, verdict.repair_kind(), &c2, latency2, done) {
            Ok(evaluation) => Spoken::Evaluated { evaluation, text: completion.text, turn: turn2 },
            Err(again) => Spoken::Unparsed { text: completion.text, done, error: again },
        }
    }

    /// An agent's turn in any phase, asking for the panel's scores.
    pub async fn agent_turn(
        &self,
        index: usize,
        phase: Phase,
        round: Option<u32>,
        messages: Prompt<'_>,
        cancel: &CancellationToken,
        ahead: Option<ReadAhead<'_>>,
    ) -> Spoken {
        self.agent_verdict_turn(&self.panel_scores(), index, phase, round, messages, cancel, ahead).await
    }

    /// An agent's turn asking for `verdict`, whose evaluation (the verdict
    /// as [`Verdict::evaluation`] records it) becomes the agent's latest.
    #[allow(clippy::too_many_arguments)]
    pub async fn agent_verdict_turn<V: Verdict>(
        &self,
        verdict: &V,
        index: usize,
        phase: Phase,
        round: Option<u32>,
        messages: Prompt<'_>,
        cancel: &CancellationToken,
        ahead: Option<ReadAhead<'_>>,
    ) -> Spoken {
        let (name, group, spec) = {
            let st = self.state();
            let a = &st.agents[index];
            (a.name.clone(), a.group.clone(), a.spec.clone())
        };
        let binding = self.config.bindings.for_agent(&name).clone();
        let sampling = self.agent_sampling(&spec);
        let turn = TurnSpec {
            participant: &name,
            group: Some(&group),
            phase,
            round,
            role: Role::Agent,
            binding: &binding,
            sampling,
            cancel,
            dimension: None,
            pair: None,
        };
        let out = match self.verdict_turn(verdict, turn, messages, ahead).await {
            Spoken::Evaluated { evaluation, text, turn } => match verdict.evaluation(&evaluation) {
                Some(evaluation) => Spoken::Evaluated { evaluation, text, turn },
                None => Spoken::Unparsed { text, done: false, error: "the verdict records no evaluation".into() },
            },
            Spoken::Unparsed { text, done, error } => Spoken::Unparsed { text, done, error },
            Spoken::Failed(e) => Spoken::Failed(e),
        };
        let mut st = self.state();
        let a = &mut st.agents[index];
        match &out {
            Spoken::Evaluated { evaluation, turn, .. } => {
                if phase == Phase::Initial {
                    a.initial = Some(evaluation.clone());
                }
                a.own = Some(evaluation.clone());
                a.progress.spoke(phase, TurnKind::Speak, *turn, Some(evaluation), false);
            }
            Spoken::Unparsed { done, .. } => a.progress.spoke(phase, TurnKind::Speak, 0, None, *done),
            Spoken::Failed(_) => {}
        }
        out
    }

    /// Add an agent's contribution to its group's history.
    pub fn push_history(&self, group: &str, entry: HistoryEntry) {
        self.state().histories.entry(group.to_string()).or_default().push(entry);
    }

    /// Latest scores of a group's agents (agent → key → score).
    pub fn group_scores(&self, group: &str) -> BTreeMap<String, Scores> {
        let st = self.state();
        st.agents
            .iter()
            .filter(|a| a.group == group)
            .filter_map(|a| a.progress.latest.as_ref().map(|ev| (a.name.clone(), eval_scores(ev))))
            .collect()
    }

    /// Check and record the consensus of a group.
    pub fn check_consensus(&self, group: &str, round: Option<u32>) -> bool {
        let scores = self.group_scores(group);
        let c = &self.panel.consensus;
        let outcome = consensus::check(c.rule, c.tolerance, &scores, &self.keys);
        self.emit(EventKind::ConsensusChecked {
            group: Some(group.to_string()),
            round,
            scores,
            spread: outcome.spread,
            reached: outcome.reached,
            rule: format!("{} ≤ {}", c.rule.as_str(), prompts::fmt_num(c.tolerance)),
            labels: BTreeMap::new(),
        });
        outcome.reached
    }

    /// Record the final evaluations of a group's agents.
    pub fn emit_finals(&self, group: &str) {
        let (evaluations, turns) = {
            let st = self.state();
            let mut evs = BTreeMap::new();
            let mut turns = BTreeMap::new();
            for a in st.agents.iter().filter(|a| a.group == group) {
                if let Some(ev) = &a.progress.latest {
                    evs.insert(a.name.clone(), ev.clone());
                    if let Some(t) = a.progress.latest_turn {
                        turns.insert(a.name.clone(), t);
                    }
                }
            }
            (evs, turns)
        };
        self.emit(EventKind::FinalEvaluations { group: group.to_string(), evaluations, turns });
    }

    /// Note a failure that ends the debate (the first one wins).
    pub fn fail(&self, message: String) {
        {
            let mut st = self.state();
            if st.failure.is_none() {
                st.failure = Some(message);
            }
        }
        self.stop.cancel();
    }

    /// Interpret a failed agent turn: stop on errors that retrying cannot fix.
    pub fn on_turn_error(&self, who: &str, error: &ProviderError, consecutive: &mut u32) -> bool {
        if matches!(error, ProviderError::Cancelled) {
            return true;
        }
        *consecutive += 1;
        if !error.is_retryable() {
            self.fail(format!("{who}: {error}"));
            return true;
        }
        if *consecutive >= self.config.max_consecutive_failures {
            self.fail(format!("{who}: giving up after {consecutive} failed turns in a row; last error: {error}"));
            return true;
        }
        false
    }

    pub fn finish_lingering(&self) {
        self.quit.cancel();
    }

    /// Emit `session_ended` and summarise.
    pub fn finish(&self, elapsed: Duration) -> RunOutcome {
        let (status, error, reason) = {
            let st = self.state();
            if let Some(f) = &st.failure {
                (EndStatus::Failed, Some(f.clone()), st.stop_reason.clone())
            } else if st.stopped {
                (EndStatus::Stopped, None, st.stop_reason.clone())
            } else if let Some(why) = self.empty_result(&st) {
                // An empty result is never a success.
                (EndStatus::Failed, Some(why), None)
            } else {
                (EndStatus::Completed, None, None)
            }
        };
        let error = match (error, self.rec.write_error()) {
            (Some(e), _) => Some(e),
            (None, Some(w)) => Some(w),
            (None, None) => None,
        };
        let status = if error.is_some() { EndStatus::Failed } else { status };
        let usage = self.totals.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.emit(EventKind::SessionEnded {
            status,
            error: error.clone(),
            reason: reason.clone(),
            usage: usage.clone(),
            duration_ms: elapsed.as_millis() as u64,
        });
        let result = {
            let st = self.state();
            Some(self.result_scores(&st, None)).filter(|s| st.aggregates.contains_key(&None) && !s.is_empty())
        };
        RunOutcome {
            session_id: self.config.session_id.clone(),
            status,
            error,
            reason,
            usage,
            result,
            log_path: self.rec.log_path(),
        }
    }
}

/// An evaluation's scores with `overall` as a key.
pub(crate) fn eval_scores(ev: &Evaluation) -> Scores {
    let mut s = ev.scores.clone();
    if let Some(o) = ev.overall {
        s.insert("overall".into(), o);
    }
    s
}
