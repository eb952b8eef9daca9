//! The parts of a session view: turns, agents, groups and their consensus,
//! aggregated results, trimmed requests, evaluation steps and the timeline.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::{AgentState, TurnState};
use crate::session::event::{
    AgentInfo, EndStatus, Evaluation, EventKind, OverrideTarget, Phase, Role, Scores, SelectedBy, StepsSource,
    TrimmedEntry, TurnKind, Usage,
};
use crate::session::progress::AgentProgress;

/// One model call as seen in the log.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnView {
    pub id: u64,
    pub agent: String,
    pub group: Option<String>,
    pub phase: Phase,
    pub round: Option<u32>,
    pub role: Role,
    pub kind: TurnKind,
    /// The dimension the turn is about, when it is about one.
    pub dimension: Option<String>,
    /// Text so far (streamed) or final.
    pub text: String,
    pub state: TurnState,
    pub evaluation: Option<Evaluation>,
    pub parse_error: Option<String>,
    pub usage: Usage,
    pub latency_ms: Option<u64>,
    pub failed_attempts: u32,
    pub last_error: Option<String>,
    pub cached: bool,
    /// The reply stopped at its token limit.
    pub truncated: bool,
    /// The member whose earlier speech the reply repeats (see
    /// `engine::repeats`).
    pub repeats: Option<String>,
    /// Quotations in the reply that nothing it was shown contains (see
    /// `engine::quotes`).
    pub misquotes: Vec<String>,
    /// A synthesis's claims that the results do not hold (see
    /// `engine::synthesis_claims`).
    pub misstates: Vec<String>,
    pub started: DateTime<Utc>,
    /// Pairwise: the pair the turn compares, in the order it showed them.
    pub pair: Option<crate::session::pairwise::PairRef>,
    /// Pairwise: the verdict read from the reply (`pair_verdict`, which
    /// follows the turn's end).
    pub pair_verdict: Option<crate::session::pairwise::VerdictView>,
    /// Bumped on every change to `text` or to what was read from it; lets
    /// views cache wrapped lines.
    pub revision: u64,
}

/// One agent's state.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentView {
    pub info: AgentInfo,
    pub state: AgentState,
    /// Latest evaluation (overrides applied), finished, turns spoken: moved
    /// by the same rules as the engine's.
    pub progress: AgentProgress,
    /// Indices into [`SessionView::turns`](super::SessionView::turns) of this agent's turns.
    pub turns: Vec<usize>,
    pub current_turn: Option<u64>,
    /// Dimension → original value, for scores a human changed.
    pub overridden: Scores,
    pub usage: Usage,
}

/// The moderator's choice for a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub agent: String,
    pub by: SelectedBy,
    pub reason: String,
    pub fallback: Option<String>,
    pub t: DateTime<Utc>,
}

/// Moderator and consensus state of one group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupView {
    pub name: String,
    pub agents: Vec<String>,
    pub picks: Vec<Pick>,
    /// Debate turns spoken so far in this group.
    pub debate_turns: u32,
    pub round: Option<u32>,
    pub phase: Option<Phase>,
    /// Every consensus check, oldest first.
    pub consensus: Vec<ConsensusView>,
    pub aggregate: Option<AggregateView>,
    pub finals: BTreeMap<String, Evaluation>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConsensusView {
    pub round: Option<u32>,
    pub scores: BTreeMap<String, Scores>,
    pub spread: Scores,
    pub reached: bool,
    pub rule: String,
    /// Each agent's label, when labels were compared instead of scores.
    pub labels: BTreeMap<String, String>,
}

/// An aggregated result, with the values before human overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateView {
    pub feedback: String,
    pub scores: Scores,
    pub overall: Option<f64>,
    pub original: Scores,
    pub method: Option<String>,
    /// Why the result has no scores of the judges, when it has none.
    pub no_result: Option<String>,
    /// Panel-wide: the groups left out of the mean for having no result.
    pub left_out: Vec<String>,
    /// Categorical dimension → the majority label.
    pub labels: BTreeMap<String, String>,
    /// Dimension → the label as the protocol computed it, for labels people changed.
    pub original_labels: BTreeMap<String, String>,
    /// Pairwise: each candidate's record, best first.
    pub ranking: Vec<crate::session::pairwise::RankEntry>,
}

impl AggregateView {
    pub fn score(&self, key: &str) -> Option<f64> {
        if key == "overall" { self.overall } else { self.scores.get(key).copied() }
    }
}

/// A `history_trimmed` event: what a request left out to fit the model's context.
#[derive(Debug, Clone, PartialEq)]
pub struct TrimView {
    pub turn: u64,
    pub agent: String,
    pub group: Option<String>,
    pub left_out: Vec<TrimmedEntry>,
    pub condensed: Vec<TrimmedEntry>,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub context: u64,
    pub reply_tokens: u64,
    pub reply_requested: Option<u64>,
}

impl TrimView {
    /// The view of a `history_trimmed` event (`None` for any other).
    pub fn of(kind: &EventKind) -> Option<Self> {
        let EventKind::HistoryTrimmed {
            turn,
            agent,
            group,
            left_out,
            condensed,
            tokens_before,
            tokens_after,
            context,
            reply_tokens,
            reply_requested,
        } = kind
        else {
            return None;
        };
        Some(Self {
            turn: *turn,
            agent: agent.clone(),
            group: group.clone(),
            left_out: left_out.clone(),
            condensed: condensed.clone(),
            tokens_before: *tokens_before,
            tokens_after: *tokens_after,
            context: *context,
            reply_tokens: *reply_tokens,
            reply_requested: *reply_requested,
        })
    }

    /// One line for transcripts: `history trimmed for Ann: 3 older
    /// contributions left out, 1 condensed (5,210 → 3,480 tokens of 4,096,
    /// 512 kept for the reply)`.
    pub fn summary(&self) -> String {
        let mut what = Vec::new();
        if !self.left_out.is_empty() {
            what.push(format!("{} older contribution{} left out", self.left_out.len(), plural(self.left_out.len())));
        }
        if !self.condensed.is_empty() {
            what.push(format!("{} condensed to scores", self.condensed.len()));
        }
        if let Some(asked) = self.reply_requested {
            what.push(format!("reply budget lowered from {}", thousands(asked)));
        }
        format!(
            "history trimmed for {}: {} ({} → {} tokens of {}, {} kept for the reply)",
            self.agent,
            what.join(", "),
            thousands(self.tokens_before),
            thousands(self.tokens_after),
            thousands(self.context),
            thousands(self.reply_tokens)
        )
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `4096` → `4,096`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An entry of the transcript, in log order.
#[derive(Debug, Clone, PartialEq)]
pub enum TimelineEntry {
    Phase {
        phase: Phase,
        group: Option<String>,
        round: Option<u32>,
    },
    /// Index into [`SessionView::turns`](super::SessionView::turns).
    Turn(usize),
    Pick {
        group: String,
        pick: Pick,
    },
    Comment {
        text: String,
        author: String,
        group: Option<String>,
    },
    Override {
        target: OverrideTarget,
        dimension: String,
        from: Option<f64>,
        to: f64,
        reason: Option<String>,
        author: String,
    },
    Rating {
        scores: Scores,
        author: String,
    },
    Control {
        what: &'static str,
        author: String,
    },
    Rejected {
        command: String,
        reason: String,
    },
    Consensus {
        group: Option<String>,
        round: Option<u32>,
        reached: bool,
        /// The rule checked, as the event gives it (e.g. `range ≤ 1`).
        rule: String,
    },
    Aggregate {
        group: Option<String>,
    },
    /// A request was shortened to fit the model's context.
    Trimmed(TrimView),
    /// A dimension's evaluation steps were set (G-Eval), as they were then.
    Steps {
        dimension: String,
        steps: StepsView,
    },
    /// A revision, proposal or decision (SAGEval), as one line; `human` when a person made it.
    Note {
        text: String,
        human: bool,
    },
    Ended {
        status: EndStatus,
        error: Option<String>,
        reason: Option<String>,
    },
}

/// A dimension's evaluation steps and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct StepsView {
    pub steps: String,
    pub source: StepsSource,
    pub author: Option<String>,
    pub turn: Option<u64>,
}

/// What a run's consensus check means: its recorded panel's, else its
/// protocol's by name (`None`: a protocol this build does not know).
pub fn consensus_check(protocol: &str, panel: Option<&crate::panel::Panel>) -> Option<crate::panel::ConsensusCheck> {
    match panel {
        Some(p) => Some(p.protocol.consensus_check()),
        None => {
            crate::panel::Protocol::parse(protocol).map(|p| crate::panel::ProtocolSection::new(p).consensus_check())
        }
    }
}

/// What a consensus check says, on the screen and in the headless
/// transcript. Where the protocol's check only reports how far apart a
/// group's scores are ([`ConsensusCheck::Reports`], MAJ-EVAL's), the debate
/// goes on until every member is done or the turns run out, so "consensus
/// reached" there would read as a contradiction of the turns that follow it.
/// A protocol this build does not know: its log's check is read as one that
/// stops the discussion, the one every other protocol makes.
pub fn consensus_words(check: Option<crate::panel::ConsensusCheck>, reached: bool, rule: &str) -> String {
    use crate::panel::ConsensusCheck;
    let reports_only = match check {
        Some(ConsensusCheck::Reports) => true,
        Some(ConsensusCheck::Stops | ConsensusCheck::None) | None => false,
    };
    match (reports_only, reached) {
        (true, true) => format!("scores within {rule} (the debate goes on until every member is done)"),
        (true, false) => format!("scores not within {rule}"),
        (false, true) => format!("consensus reached ({rule})"),
        (false, false) => format!("no consensus yet ({rule})"),
    }
}
