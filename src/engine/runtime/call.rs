//! Model calls as turns: `turn_started`, streamed deltas, retries recorded
//! as `turn_failed`, read-ahead of the next request, the end of a turn with
//! its usage, the token budget, and sampling settings per agent and role.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::mpsc;

use super::{CallSpec, Run};
use crate::engine::trim;
use crate::panel::AgentSpec;
use crate::provider::batch::BatchTag;
use crate::provider::retry::call_with_retry;
use crate::provider::{ChatRequest, Completion, Provider, ProviderError, READ_AHEAD_STEP};
use crate::session::event::{Evaluation, EventKind, Phase, Role, TurnKind};

/// What the checks after a speech's reply found in it.
#[derive(Debug, Clone, Default)]
pub struct Marks {
    /// The member whose earlier speech it repeats (see [`crate::engine::repeats`]).
    pub repeats: Option<String>,
    /// Its quotations that nothing it was shown contains (see [`crate::engine::quotes`]).
    pub misquotes: Vec<String>,
    /// A synthesis's claims the results do not hold (see
    /// [`crate::engine::synthesis_claims`]).
    pub misstates: Vec<String>,
}

impl Run {
    /// Make one model call as a turn: `turn_started`, deltas, a `turn_failed`
    /// per failed attempt. The caller records `turn_completed`.
    pub async fn call(&self, spec: CallSpec<'_>) -> (u64, Result<Completion, ProviderError>, u64) {
        if let Some(journal) = self.rec.journal()
            && let Some(answer) = self.answer_from_log(&journal, &spec).await
        {
            return answer;
        }
        let turn = self.next_turn.fetch_add(1, Ordering::Relaxed);
        self.start_turn(turn, &spec);
        if let Some(reason) = spec.turn.binding.provider.queue_note() {
            self.emit(EventKind::Waiting { turn, reason });
        }
        let started = Instant::now();
        let provider = spec.turn.binding.provider.clone();
        // A repair asks for the object alone, so has no opening words.
        let opening = spec.messages.opening_text().filter(|_| spec.prose_first).map(str::to_string);
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
        let batch = self.batch_tag(&spec);
        let request = ChatRequest {
            model: spec.turn.binding.model.clone(),
            messages: fitted.messages,
            max_tokens: fitted.max_tokens,
            temperature: spec.turn.sampling.0,
            top_p: spec.turn.binding.top_p.or(self.panel.generation.top_p),
            seed: Some(request_seed(self.config.seed, spec.kind)),
            response_schema: spec.schema,
            top_logprobs: spec.top_logprobs,
            prose_first: spec.prose_first,
            opening,
            sections: if spec.prose_first { spec.messages.section_headings().to_vec() } else { Vec::new() },
            // A repair asks for the object alone: no prose to guard.
            no_copy: spec.no_copy.filter(|_| spec.prose_first),
            echo: spec.echo,
            batch,
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

    /// The item and turn of a call no one waits for live, which a batch
    /// API may answer (`moot eval --batch`): an agent's own first request of
    /// a first evaluation, a G-Eval score or its steps, or a pairwise
    /// judgment. Repairs, debates, moderators and judges run live.
    fn batch_tag(&self, spec: &CallSpec<'_>) -> Option<Arc<BatchTag>> {
        let t = &spec.turn;
        let independent = matches!(t.phase, Phase::Initial | Phase::Steps | Phase::Scoring | Phase::Comparison);
        (independent && t.role == Role::Agent && spec.kind == TurnKind::Speak).then(|| {
            Arc::new(BatchTag {
                item: self.item().id.as_str().into(),
                turn: format!("{}|{}|{:?}|{:?}|{:?}", t.participant, t.phase.as_str(), t.round, t.dimension, t.pair),
            })
        })
    }

    /// Record the start of turn `turn` of `spec`.
    pub(super) fn start_turn(&self, turn: u64, spec: &CallSpec<'_>) {
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
    /// to add (recorded also when no evaluation could be read from it);
    /// `marks`: what the checks after the reply found in it.
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
        marks: Marks,
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
            repeats: marks.repeats,
            misquotes: marks.misquotes,
            misstates: marks.misstates,
            endpoint: completion.endpoint.clone(),
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
}

/// The seed a request carries: the run's, or for a speech asked for again
/// (a [`TurnKind::Redraw`]) another one drawn from it, so that a provider
/// that honours seeds does not draw the same words again.
pub(crate) fn request_seed(seed: u64, kind: TurnKind) -> u64 {
    match kind {
        // A fixed odd constant (the 64-bit golden ratio): every seed maps to another.
        TurnKind::Redraw => seed.wrapping_add(0x9E37_79B9_7F4A_7C15),
        _ => seed,
    }
}
