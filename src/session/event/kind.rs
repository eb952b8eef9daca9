//! [`EventKind`]: the payload of every event, tagged by `type`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    AgentInfo, AspectValue, Departure, EndStatus, Evaluation, ModelRef, OverrideTarget, Phase, Preset, ProposalKind,
    Role, Scores, SelectedBy, StepsSource, TrimmedEntry, TurnKind, Usage, UsageTotals, first_schema_version,
};

use crate::item::Item;
use crate::session::pairwise::{Confidence, Flip, Label, PairRef, RankEntry};

/// The payload of an event, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    SessionStarted {
        /// The log format's version ([`SCHEMA_VERSION`](super::SCHEMA_VERSION) when written; 1 for
        /// logs written before the field existed).
        #[serde(default = "first_schema_version")]
        schema_version: u32,
        session_id: String,
        protocol: String,
        /// The resolved panel, without secrets.
        panel: serde_json::Value,
        item: Item,
        agents: Vec<AgentInfo>,
        /// Provider and model per non-agent role (moderator, aggregator, final_judge).
        #[serde(default)]
        roles: BTreeMap<String, ModelRef>,
        seed: u64,
        moot_version: String,
        /// Which provider was chosen by default and why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_note: Option<String>,
        /// The protocol's preset (`moot` in logs written before the field existed).
        #[serde(default)]
        preset: Preset,
        /// The settings of the run whose values are not its paper's.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        departures: Vec<Departure>,
    },
    PhaseStarted {
        phase: Phase,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<u32>,
    },
    SpeakerSelected {
        group: String,
        agent: String,
        by: SelectedBy,
        reason: String,
        /// The moderator's raw reply(ies), when an LLM chose.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw: Option<String>,
        /// Set when the moderator's reply was unusable and a policy chose instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fallback: Option<String>,
        /// Set when the policy chose because the moderator's reason claimed
        /// what its scores table does not show, even when asked again (the
        /// rule of `engine::reasons`): what it claimed and what the table shows.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason_replaced: Option<String>,
    },
    TurnStarted {
        turn: u64,
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        phase: Phase,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<u32>,
        #[serde(default)]
        role: Role,
        #[serde(default)]
        kind: TurnKind,
        /// The one dimension the turn is about, when it is about one (G-Eval's steps and scores).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dimension: Option<String>,
        /// The pair the turn compares, in the order shown (pairwise).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pair: Option<PairRef>,
    },
    TurnDelta {
        turn: u64,
        text: String,
    },
    TurnCompleted {
        turn: u64,
        agent: String,
        text: String,
        evaluation: Option<Evaluation>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parse_error: Option<String>,
        usage: Usage,
        latency_ms: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cached: bool,
        /// The reply said `NO MORE COMMENTS` (also when no evaluation could be read from it).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        done: bool,
        /// The reply stopped at its token limit (`max_tokens`): the server's
        /// finish reason was `length` or `max_tokens`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
        /// The reply repeats an earlier speech of its discussion (the rule
        /// of `engine::repeats`): the member who said it first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeats: Option<String>,
        /// Quotations in the speech (four words or more) that neither the
        /// item, nor its request, nor an earlier contribution of its group
        /// contains (the rule of `engine::quotes`), as the speech wrote them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        misquotes: Vec<String>,
        /// A synthesis's claims that give someone a score the results do
        /// not show (the rule of `engine::synthesis_claims`), each with
        /// what the score is.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        misstates: Vec<String>,
        /// The endpoint of a provider's pool that served the call (its base
        /// URL without credentials or query), when the provider has several.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<String>,
    },
    TurnFailed {
        turn: u64,
        agent: String,
        error: String,
        attempt: u32,
        will_retry: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<u64>,
    },
    /// A turn that was streaming when its session was interrupted, closed
    /// when the session was resumed (`moot run --resume`): its call is made
    /// again as a new turn.
    TurnAbandoned {
        turn: u64,
        agent: String,
        reason: String,
    },
    ConsensusChecked {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<u32>,
        scores: BTreeMap<String, Scores>,
        spread: Scores,
        reached: bool,
        rule: String,
        /// Label verdicts compared instead of scores (CollabEval's pairwise
        /// mode): each agent's latest label; agents without one are left out.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        labels: BTreeMap<String, String>,
    },
    /// CollabEval with every criterion discussed to its own consensus
    /// (`scope = "per-criterion"`): where the criteria stand after the
    /// consensus check of `round` (0: the first evaluations). Follows that
    /// check's `consensus_checked`, whose scores and spread are those of the
    /// checked criteria.
    CriteriaChecked {
        group: String,
        round: u32,
        /// The criteria this check was about: those discussed up to it.
        checked: Vec<String>,
        /// Every criterion agreed on so far, with the result agreed on.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        agreed: BTreeMap<String, f64>,
        /// The criteria the next round discusses.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        open: Vec<String>,
        /// Every criterion left to the final judge so far, with why its discussion ended.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        to_judge: BTreeMap<String, String>,
    },
    /// An agent's evaluation that stands as its final one for the group, after the debate.
    FinalEvaluations {
        group: String,
        /// Agent name → final evaluation (the latest valid one).
        evaluations: BTreeMap<String, Evaluation>,
        /// Agent name → the turn that evaluation came from.
        turns: BTreeMap<String, u64>,
    },
    HumanComment {
        text: String,
        author: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
    },
    ScoreOverridden {
        target: OverrideTarget,
        dimension: String,
        from: Option<f64>,
        to: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        author: String,
    },
    /// The human's own rating of the item, for agreement reports.
    HumanRating {
        scores: Scores,
        author: String,
    },
    Paused {
        author: String,
    },
    Resumed {
        author: String,
    },
    StopRequested {
        author: String,
    },
    /// A person chose the next speaker of a debate (or, with `veto`,
    /// refused the one chosen); it takes effect at the group's next pick.
    SpeakerRequested {
        group: String,
        agent: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        veto: bool,
        author: String,
    },
    /// One more turn allowed while paused.
    Stepped {
        author: String,
    },
    /// A human command the engine could not apply (unknown agent, finished agent…).
    CommandRejected {
        command: String,
        reason: String,
        author: String,
    },
    /// A dimension's evaluation steps (G-Eval), as scoring will use them;
    /// a later one for the same dimension replaces it.
    EvaluationSteps {
        dimension: String,
        steps: String,
        source: StepsSource,
        /// The person who edited them (`human`), or who last did so (`cache`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        author: Option<String>,
        /// The turn that wrote them (`generated`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<u64>,
    },
    /// Another participant revised an agent's evaluation of one dimension
    /// (SAGEval: the meta-evaluator rectifying the evaluator's score or
    /// label). The revised value stands until a person rejects it
    /// (`revision_decided`).
    EvaluationRevised {
        /// Who revised it (`meta-evaluator`).
        by: String,
        /// The turn whose reply holds the revision.
        turn: u64,
        /// Whose evaluation was revised.
        agent: String,
        /// The turn that evaluation came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_turn: Option<u64>,
        dimension: String,
        /// The agent's value (absent when it gave none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<AspectValue>,
        to: AspectValue,
        reason: String,
    },
    /// A participant proposed a new definition of a dimension it found
    /// inadequate (SAGEval). Nothing changes until a person adopts it
    /// (`proposal_adopted`).
    DefinitionProposed {
        by: String,
        turn: u64,
        dimension: String,
        definition: String,
        reason: String,
    },
    /// A participant proposed a dimension the panel lacks, with its score of
    /// the item (SAGEval). It is not part of the result.
    AspectProposed {
        by: String,
        turn: u64,
        key: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
        definition: String,
        score: f64,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    /// A person accepted or rejected a revision (`evaluation_revised`); a
    /// rejected one puts the agent's own value back.
    RevisionDecided {
        agent: String,
        dimension: String,
        accepted: bool,
        /// The value that stands now.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<AspectValue>,
        author: String,
    },
    /// A person adopted a proposal into a new panel file written beside the
    /// panel's own (the current directory for a bundled panel).
    ProposalAdopted {
        proposal: ProposalKind,
        /// The dimension's key.
        key: String,
        /// The panel file written.
        path: String,
        author: String,
    },
    /// A provider call is waiting for its turn (rate limit, local model queue, backoff).
    Waiting {
        turn: u64,
        reason: String,
    },
    /// A request was shortened to fit the context of the model serving it:
    /// older contributions condensed to their score line or left out, or
    /// the reply budget lowered. Comes after the turn's `turn_started`.
    HistoryTrimmed {
        turn: u64,
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        /// Contributions left out of the request.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<TrimmedEntry>,
        /// Contributions shown as their score line only.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        condensed: Vec<TrimmedEntry>,
        /// Prompt tokens with the whole discussion.
        tokens_before: u64,
        /// Prompt tokens of the request sent.
        tokens_after: u64,
        /// The context window of the model, in tokens.
        context: u64,
        /// Tokens kept for the reply (the request's `max_tokens`).
        reply_tokens: u64,
        /// The reply budget asked for, when it was lowered to fit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_requested: Option<u64>,
    },
    /// One judge's readable verdict on one order of a pair (pairwise). A
    /// reply that could not be read has no such event: its turn carries the
    /// parse error.
    PairVerdict {
        turn: u64,
        judge: String,
        /// The pair: candidate ids, its first and second.
        first: String,
        second: String,
        /// This order showed `second` as A (and `first` as B).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        swapped: bool,
        /// The vote's number within its order, from 1.
        vote: u32,
        /// The position label the judge gave (A is the candidate shown first).
        label: Label,
        /// Dimension → position label, for the criteria the judge labelled.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        criteria: BTreeMap<String, Label>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confidence: Option<Confidence>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reasoning: String,
    },
    /// What a pair came to: one judge's votes (`judge` set), or the panel's
    /// decision over its judges (`judge` absent).
    PairDecided {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        judge: Option<String>,
        first: String,
        second: String,
        /// The label of the order with `first` as A (the majority of that
        /// order's votes); absent when none of them could be read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_order: Option<Label>,
        /// The label of the swapped order (`second` as A); absent when it
        /// was not run or none of its votes could be read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        swapped_order: Option<Label>,
        /// The candidate preferred; absent for a tie or no result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        winner: Option<String>,
        /// How the two orders disagreed (a judge's decision with both orders).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        flip: Option<Flip>,
        /// Why there is no decision (no readable verdict); absent when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        no_result: Option<String>,
    },
    /// A person decided a pair (settled a tie or a flip, or gave their own
    /// verdict): it replaces the panel's decision and is marked human.
    PairSettled {
        first: String,
        second: String,
        /// The candidate the person preferred; absent for a tie.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        winner: Option<String>,
        author: String,
    },
    /// A person cast one more vote on a pair (pairwise): it counts as one
    /// more judge's decision in the panel's majority. A later vote by the
    /// same person on the same pair replaces theirs.
    PairVoted {
        first: String,
        second: String,
        /// The candidate the person preferred; absent for a tie.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        winner: Option<String>,
        author: String,
    },
    /// A person declined to decide a pair (pairwise): the panel's decision
    /// stands; in a blind run the judges' verdicts are shown without the
    /// person's own label.
    PairAbstained {
        first: String,
        second: String,
        author: String,
    },
    /// A blind run (`moot run --blind`): the screen hides the systems'
    /// names and the judges' verdicts on a pair until a person has given
    /// their own verdict (`pair_labelled`). `pairs` is each pair in the
    /// order the screen shows it (`swapped`: `second` on the left, as A),
    /// drawn from the session's seed.
    BlindOrder {
        pairs: Vec<PairRef>,
    },
    /// A person's own verdict on a pair, given blind (before the judges'
    /// verdicts and the systems' names were shown): a human label.
    PairLabelled {
        first: String,
        second: String,
        /// The candidate the person preferred; absent for a tie.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        winner: Option<String>,
        /// `second` was on the left of the screen (shown as A).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        swapped: bool,
        author: String,
    },
    AggregationCompleted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        feedback: String,
        scores: Scores,
        overall: Option<f64>,
        /// Dimension → value before human overrides, for values that were overridden.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        original: Scores,
        /// What produced this result: `mean`, `consensus`, `final_judge`, `override`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        method: Option<String>,
        /// Why this result has no scores (no agent produced a readable evaluation…); absent when it has some.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        no_result: Option<String>,
        /// Panel-wide result: the groups left out of the mean because they have no result.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<String>,
        /// Categorical dimension → the label most of the evaluations gave
        /// (a group's agents; for the panel, its groups' labels). A tie gives no label.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        labels: BTreeMap<String, String>,
        /// Dimension → the label as the protocol computed it, for labels people changed.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        original_labels: BTreeMap<String, String>,
        /// Pairwise: each candidate's record, best first (win rate, a tie
        /// counting half).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ranking: Vec<RankEntry>,
    },
    SessionEnded {
        status: EndStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Why the debate ended early (user stop, budget), when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        usage: UsageTotals,
        duration_ms: u64,
    },
}

/// When a check was made, in a line that says what it found: "after the
/// first evaluations" (round 0) or "after round 2".
pub fn after_round(round: u32) -> String {
    if round == 0 { "after the first evaluations".to_string() } else { format!("after round {round}") }
}

/// Where and when a consensus check was made, to head its line: "Teachers
/// after round 2", "panel after the first evaluations", or the group (or
/// "panel") alone when the round is not known.
pub fn check_place(group: Option<&str>, round: Option<u32>) -> String {
    let who = group.unwrap_or("panel");
    match round {
        Some(r) => format!("{who} {}", after_round(r)),
        None => who.to_string(),
    }
}

/// The same, where room is short: "first evaluations" or "round 2".
pub fn round_label(round: u32) -> String {
    if round == 0 { "first evaluations".to_string() } else { format!("round {round}") }
}

impl EventKind {
    /// What a `criteria_checked` event says, in one line: `Reviewers after
    /// round 1: agreed coherence 4; still discussed: relevance; to the final
    /// judge: fluency (…)`. None for other events.
    pub fn criteria_line(&self) -> Option<String> {
        let EventKind::CriteriaChecked { group, round, agreed, open, to_judge, .. } = self else { return None };
        let when = after_round(*round);
        let mut parts = Vec::new();
        if !agreed.is_empty() {
            let num = |v: f64| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}") };
            let list: Vec<String> = agreed.iter().map(|(k, v)| format!("{k} {}", num(*v))).collect();
            parts.push(format!("agreed {}", list.join(", ")));
        }
        if !open.is_empty() {
            parts.push(format!("still discussed: {}", open.join(", ")));
        }
        if !to_judge.is_empty() {
            let list: Vec<String> = to_judge.iter().map(|(k, why)| format!("{k} ({why})")).collect();
            parts.push(format!("to the final judge: {}", list.join(", ")));
        }
        Some(format!("{group} {when}: {}", parts.join("; ")))
    }

    /// The `type` tag of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::SessionStarted { .. } => "session_started",
            EventKind::EvaluationSteps { .. } => "evaluation_steps",
            EventKind::PhaseStarted { .. } => "phase_started",
            EventKind::SpeakerSelected { .. } => "speaker_selected",
            EventKind::TurnStarted { .. } => "turn_started",
            EventKind::TurnDelta { .. } => "turn_delta",
            EventKind::TurnCompleted { .. } => "turn_completed",
            EventKind::TurnFailed { .. } => "turn_failed",
            EventKind::TurnAbandoned { .. } => "turn_abandoned",
            EventKind::SpeakerRequested { .. } => "speaker_requested",
            EventKind::ConsensusChecked { .. } => "consensus_checked",
            EventKind::CriteriaChecked { .. } => "criteria_checked",
            EventKind::FinalEvaluations { .. } => "final_evaluations",
            EventKind::HumanComment { .. } => "human_comment",
            EventKind::ScoreOverridden { .. } => "score_overridden",
            EventKind::HumanRating { .. } => "human_rating",
            EventKind::Paused { .. } => "paused",
            EventKind::Resumed { .. } => "resumed",
            EventKind::StopRequested { .. } => "stop_requested",
            EventKind::Stepped { .. } => "stepped",
            EventKind::CommandRejected { .. } => "command_rejected",
            EventKind::EvaluationRevised { .. } => "evaluation_revised",
            EventKind::DefinitionProposed { .. } => "definition_proposed",
            EventKind::AspectProposed { .. } => "aspect_proposed",
            EventKind::RevisionDecided { .. } => "revision_decided",
            EventKind::ProposalAdopted { .. } => "proposal_adopted",
            EventKind::Waiting { .. } => "waiting",
            EventKind::HistoryTrimmed { .. } => "history_trimmed",
            EventKind::PairVerdict { .. } => "pair_verdict",
            EventKind::PairDecided { .. } => "pair_decided",
            EventKind::PairSettled { .. } => "pair_settled",
            EventKind::PairVoted { .. } => "pair_voted",
            EventKind::PairAbstained { .. } => "pair_abstained",
            EventKind::BlindOrder { .. } => "blind_order",
            EventKind::PairLabelled { .. } => "pair_labelled",
            EventKind::AggregationCompleted { .. } => "aggregation_completed",
            EventKind::SessionEnded { .. } => "session_ended",
        }
    }
}
