//! The shared machinery of a run: state, model calls as turns, the pause gate,
//! consensus checks and the end of a session.

mod call;
mod end;
mod redraw;
mod replay;
mod turns;

pub(crate) use call::Marks;
pub(crate) use redraw::RepeatCheck;
pub(crate) use replay::WRITE_RETRY;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::config::EngineConfig;
use super::prompts::HistoryEntry;
use super::recorder::Recorder;
use super::trim::Prompt;
use crate::item::Item;
use crate::panel::{AgentSpec, Panel};
use crate::provider::binding::Binding;
use crate::provider::retry::RetryPolicy;
use crate::provider::{ChatMessage, ProviderError};
use crate::session::event::{AgentInfo, Evaluation, EventKind, Phase, Role, Scores, TurnKind, UsageTotals};
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
    pub sage: super::review::SageState,
    /// Why a pairwise item has no result (no pair could be decided).
    pub pair_failure: Option<String>,
    /// Pairwise: the pairs, the judges' decisions and people's part in them.
    pub pairwise: super::pairs::PairwiseState,
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

impl<'a> TurnSpec<'a> {
    /// A turn of one of the protocol's roles (moderator, aggregator, final
    /// judge, summarizer): named after the role, with the role's sampling,
    /// about no one dimension or pair and in no round.
    pub fn of_role(
        run: &Run,
        role: Role,
        binding: &'a Binding,
        group: Option<&'a str>,
        phase: Phase,
        cancel: &'a CancellationToken,
    ) -> Self {
        TurnSpec {
            participant: role.label(),
            group,
            phase,
            round: None,
            role,
            binding,
            sampling: run.role_sampling(role),
            cancel,
            dimension: None,
            pair: None,
        }
    }
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
        preset: panel.protocol.preset,
        departures: panel.departures(),
    }
}

/// A model call to make as one turn.
pub(crate) struct CallSpec<'a> {
    /// Who, where in the protocol, and with which provider and sampling.
    pub turn: TurnSpec<'a>,
    pub kind: TurnKind,
    /// The request's messages; a discussion in them is shortened when the
    /// whole request would not fit the model's context (see [`trim`](super::trim)).
    pub messages: Prompt<'a>,
    pub schema: Option<Arc<serde_json::Value>>,
    pub top_logprobs: Option<u8>,
    /// Whether the reply's words come before its verdict's object (see
    /// [`ChatRequest::prose_first`](crate::provider::ChatRequest::prose_first)).
    pub prose_first: bool,
    /// What the group's next request will start with, given this reply so
    /// far: the run hints it to the providers as the reply streams.
    pub ahead: Option<ReadAhead<'a>>,
    /// What the reply may not copy (see [`ChatRequest::no_copy`](crate::provider::ChatRequest::no_copy)).
    pub no_copy: Option<Arc<crate::provider::NoCopy>>,
    /// A member of the verdict's object that begins with another's value
    /// (see [`ChatRequest::echo`](crate::provider::ChatRequest::echo)).
    pub echo: Option<crate::provider::Echo>,
}

/// The messages a group's next request will start with, given the reply
/// streaming now (see [`Provider::read_ahead`](crate::provider::Provider::read_ahead)).
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
    /// Resumed runs: turn → the evaluation its log recorded, for turns
    /// answered from the log (see `logged_evaluation`).
    from_log: Mutex<HashMap<u64, Evaluation>>,
    state: Mutex<State>,
    pub control: watch::Sender<Control>,
    /// Ends the debate (turns in flight are cancelled); aggregation still runs.
    pub stop: CancellationToken,
    /// Ends everything, aggregation included.
    pub quit: CancellationToken,
    /// Dimension keys, then `overall` where the panel has one ([`Panel::score_keys`]).
    pub keys: Vec<String>,
    /// The run's stages, built once from the panel (`None`: it has none, and fails).
    pub composition: Option<crate::panel::composition::Composition>,
    /// How a group's members' scores combine: the rule of the run's aggregate stage.
    pub rule: crate::engine::vote::GroupRule,
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
        let keys = panel.score_keys();
        let composition = panel.protocol.composition();
        let rule = crate::engine::vote::GroupRule::of_stages(composition.as_ref());
        let item = &config.item;
        let quoted = [Some(&item.content), item.context.as_ref(), item.reference.as_ref()]
            .into_iter()
            .flatten()
            .cloned()
            .chain(item.candidates.iter().flatten().map(|c| c.text.clone()))
            .collect();
        let (control, _) = watch::channel(Control::default());
        let first_turn = rec.journal().map_or(1, |j| j.next_turn());
        Self {
            retry: config.retry,
            panel,
            rec,
            next_turn: AtomicU64::new(first_turn),
            totals: Mutex::new(UsageTotals::default()),
            turn_groups: Mutex::new(HashMap::new()),
            from_log: Mutex::new(HashMap::new()),
            state: Mutex::new(State { agents, histories, ..Default::default() }),
            control,
            stop: CancellationToken::new(),
            quit: CancellationToken::new(),
            keys,
            composition,
            rule,
            quoted,
            config,
        }
    }

    pub fn item(&self) -> &Item {
        &self.config.item
    }

    /// The texts of the item a reply may quote (and whose names the
    /// embedded model's copy guard leaves free): its content and context.
    pub(crate) fn quotable(&self) -> Vec<String> {
        let item = self.item();
        [Some(&item.content), item.context.as_ref()].into_iter().flatten().cloned().collect()
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

    /// Wait at a safe point while paused, or while the log cannot be
    /// written. False when the debate is stopping.
    pub async fn gate(&self) -> bool {
        self.yield_to_log().await;
        self.wait_writable().await;
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
            // Paused: a resumed run past its old log applies what is left of it first.
            if self.settle_log().await {
                continue;
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return false },
                () = self.stop.cancelled() => return false,
            }
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
