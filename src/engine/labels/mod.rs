//! Discussing a pair by labels: the parts that CollabEval's, ChatEval's and
//! the round-table's pairwise modes share. The evaluators compare an item's
//! two candidates (shown as "<noun> A" and "<noun> B", in the item's order)
//! instead of scoring its content; each turn ends with a label verdict (`A`,
//! `B` or `tie`, with a confidence and reasons), which becomes the speaker's
//! latest evaluation. A group agrees when every member's latest label is the
//! same.
//!
//! - [`Pair`]: the two texts and what every request about them starts with;
//! - [`first_verdicts`]: every evaluator's verdict on their own, at once;
//! - [`Talk`]: the discussion's turns (a [`Floor`]) and when its rounds end;
//! - [`majority`] and [`weighted`]: a group's label from its members' labels;
//! - [`publish_result`]: the result, recorded like a pairwise run's:
//!   `pair_decided` for every evaluator (their latest label) and for the
//!   panel, and the ranking of the two candidates.

use std::collections::BTreeMap;

use futures::future::join_all;

use crate::engine::discussion::turns::{self, Ask};
use crate::engine::discussion::{Floor, Turn};
use crate::engine::initial::record_firsts;
use crate::engine::pairs::combine::{self, Preference};
use crate::engine::pairs::label::{DiscussedLabel, Label, LabelVerdict};
use crate::engine::pairs::{PairState, PairwiseState, winner};
use crate::engine::prompts::{self, DISCUSSION_HEADING, HistoryEntry, persona, render_history, roster};
use crate::engine::runtime::{AggregateRecord, Run};
use crate::engine::stages::compare::prompts::{criteria, render_pair, system};
use crate::engine::stages::compare::publish;
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::item::{Candidate, Item};
use crate::panel::Panel;
use crate::provider::ChatMessage;
use crate::session::event::{Evaluation, EventKind, Phase};

/// The verdict every turn of a discussed pair asks for: one overall label.
pub(crate) static VERDICT: DiscussedLabel<'static> = DiscussedLabel(LabelVerdict::new(&[]));

/// The two texts as the evaluators see them, and what they are called.
pub(crate) struct Pair<'a> {
    pub a: &'a Candidate,
    pub b: &'a Candidate,
    pub noun: String,
}

impl<'a> Pair<'a> {
    /// The pair of `cands` (exactly two), called by the protocol's
    /// `candidate_name` setting (`Summary` when empty).
    pub fn of(run: &Run, cands: &'a [Candidate]) -> Option<Self> {
        let [a, b] = cands else { return None };
        let noun = run.panel.protocol.text("candidate_name");
        let noun = noun.trim();
        Some(Pair { a, b, noun: if noun.is_empty() { "Summary".into() } else { noun.to_string() } })
    }
    /// The shared start of every request about the pair: the two texts, then
    /// the group's members.
    pub fn context(&self, panel: &Panel, item: &Item, group: &str) -> String {
        let pair = render_pair(item, &self.noun, &self.a.text, &self.b.text);
        let roster = roster(panel, group);
        if roster.is_empty() { pair } else { format!("{pair}\n\n{}", roster.trim_end()) }
    }
    /// The pair, then the discussion so far.
    pub fn discussion(&self, panel: &Panel, item: &Item, group: &str, history: &[HistoryEntry]) -> String {
        format!("{}\n\n{DISCUSSION_HEADING}\n{}", self.context(panel, item, group), render_history(panel, history))
    }
    pub fn system(&self, panel: &Panel) -> ChatMessage {
        ChatMessage::system(system(panel, &self.noun))
    }
    pub fn criteria_line(&self, panel: &Panel) -> String {
        format!("Compare {n} A and {n} B on these criteria:\n{}", criteria(panel).trim_end(), n = self.noun)
    }
    /// A label in words, with the systems named (for the log and the screen;
    /// never shown to an evaluator).
    pub fn label_words(&self, label: Option<Label>) -> String {
        match label {
            Some(Label::A) => format!("{} A ({}) is better", self.noun, self.a.id),
            Some(Label::B) => format!("{} B ({}) is better", self.noun, self.b.id),
            Some(Label::Tie) => "tie".to_string(),
            None => "no decision".to_string(),
        }
    }
}

/// Every evaluator's first verdict, on their own, at once.
pub(crate) async fn first_verdicts(run: &Run, pair: &Pair<'_>) {
    run.emit(EventKind::PhaseStarted { phase: Phase::Initial, group: None, round: None });
    let count = run.state().agents.len();
    let calls = (0..count).map(|i| async move {
        if !run.gate().await {
            return None;
        }
        let (group, spec) = {
            let st = run.state();
            (st.agents[i].group.clone(), st.agents[i].spec.clone())
        };
        let turn = format!(
            "{}\n{}\nOn your own, before hearing anyone else: in a few sentences, say from your perspective where the \
             two differ and which difference decides it, quoting the words that matter; then give your verdict (A, \
             B, or tie when neither is better) and how confident you are. {}",
            persona(&run.panel, &group, &spec),
            pair.criteria_line(&run.panel),
            VERDICT.instructions(),
        );
        let messages = vec![
            pair.system(&run.panel),
            ChatMessage::user(pair.context(&run.panel, run.item(), &group)),
            ChatMessage::user(turn),
        ];
        let spoken =
            run.agent_verdict_turn(&VERDICT, i, Phase::Initial, None, Prompt::fixed(messages), &run.stop, None, None);
        Some(spoken.await)
    });
    record_firsts(run, join_all(calls).await);
}

/// An evaluation's label, if it carries a readable one.
pub(crate) fn label_of(ev: Option<&Evaluation>) -> Option<Label> {
    ev.and_then(|e| e.label.as_deref()).and_then(Label::parse)
}

/// Each member's latest label (`None`: no readable verdict yet).
pub(crate) fn snapshot(run: &Run, group: &str) -> BTreeMap<String, Option<Label>> {
    let st = run.state();
    st.agents
        .iter()
        .filter(|a| a.group == group)
        .map(|a| (a.name.clone(), label_of(a.progress.latest.as_ref())))
        .collect()
}

/// Each member's latest label (members without one are left out) and
/// whether every member gave the same one; recorded as `consensus_checked`.
pub(crate) fn check(run: &Run, group: &str, round: Option<u32>) -> Option<Label> {
    let latest = snapshot(run, group);
    let members = latest.len();
    let labels: BTreeMap<String, Label> = latest.into_iter().filter_map(|(name, l)| Some((name, l?))).collect();
    let first = labels.values().next().copied();
    let agreed = first.filter(|f| members > 0 && labels.len() == members && labels.values().all(|l| l == f));
    run.emit(EventKind::ConsensusChecked {
        group: Some(group.to_string()),
        round,
        scores: BTreeMap::new(),
        spread: Default::default(),
        reached: agreed.is_some(),
        rule: "every evaluator gives the same verdict".into(),
        labels: labels.iter().map(|(k, l)| (k.clone(), l.as_str().to_string())).collect(),
    });
    agreed
}

/// A group's label by majority of its members' latest labels: a label needs
/// more than half of the members (one without a readable verdict counts
/// against every label), otherwise tie; `None` when nobody gave one.
pub(crate) fn majority(run: &Run, group: &str) -> Option<Label> {
    let latest: Vec<Option<Label>> = snapshot(run, group).into_values().collect();
    combine::majority(&latest, latest.len(), Label::Tie)
}

/// How much a label verdict weighs in a confidence-weighted vote: a number
/// as given (0–1); a level `low` 1/3, `medium` 2/3, `high` 1; none 0.5
/// (as a score's missing confidence).
pub(crate) fn label_weight(ev: &Evaluation) -> f64 {
    if let Some(c) = ev.confidence {
        return c.clamp(0.0, 1.0);
    }
    // A level is kept in words at the start of the justification (see `DiscussedLabel::to_evaluation`).
    match ev.justification.strip_prefix("(confidence ").and_then(|r| r.split(')').next()) {
        Some("low") => 1.0 / 3.0,
        Some("medium") => 2.0 / 3.0,
        Some("high") => 1.0,
        _ => 0.5,
    }
}

/// A group's label by confidence: the label with the most weight behind it
/// (see [`label_weight`]); tie when two labels have the same most weight;
/// `None` when nobody gave one.
pub(crate) fn weighted(run: &Run, group: &str) -> Option<Label> {
    let votes: Vec<(Label, f64)> = {
        let st = run.state();
        st.agents
            .iter()
            .filter(|a| a.group == group)
            .filter_map(|a| {
                let ev = a.progress.latest.as_ref()?;
                Some((label_of(Some(ev))?, label_weight(ev)))
            })
            .collect()
    };
    weighted_vote(&votes)
}

/// The label with the most weight among `votes`; tie when the most weight is shared.
pub(crate) fn weighted_vote(votes: &[(Label, f64)]) -> Option<Label> {
    if votes.is_empty() {
        return None;
    }
    let weight = |l: Label| votes.iter().filter(|(v, _)| *v == l).map(|(_, w)| w).sum::<f64>();
    let tally = [Label::A, Label::B, Label::Tie].map(|l| (l, weight(l)));
    let top = tally.iter().map(|(_, w)| *w).fold(f64::NEG_INFINITY, f64::max);
    let mut best = tally.iter().filter(|(_, w)| (w - top).abs() < 1e-9);
    match (best.next(), best.next()) {
        (Some((l, _)), None) => Some(*l),
        _ => Some(Label::Tie),
    }
}

/// When a discussion of labels ends, besides the round limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Until {
    /// It runs all its rounds (ChatEval).
    AllRounds,
    /// It ends once every member gives the same label (the round-table).
    Agreed,
    /// It ends once every member gives the same label, or a round changed
    /// nobody's label (CollabEval).
    AgreedOrStill,
}

/// A discussion of the labels: the turns' requests, and the agreement
/// checked after each round.
pub(crate) struct Talk<'p> {
    pub pair: &'p Pair<'p>,
    pub until: Until,
    pub ask: Ask,
    /// Show the latest summary (ChatEval's summarizer) instead of the raw history once there is one.
    pub summarized: bool,
    previous: BTreeMap<String, Option<Label>>,
    /// The label every member came to, if they did.
    pub agreed: Option<Label>,
}

impl<'p> Talk<'p> {
    pub fn new(run: &Run, group: &str, pair: &'p Pair<'p>, until: Until, ask: Ask) -> Self {
        Talk { pair, until, ask, summarized: false, previous: snapshot(run, group), agreed: None }
    }
}

impl Floor for Talk<'_> {
    fn phase(&self) -> Phase {
        Phase::Discussion
    }
    fn label_verdict(&self) -> Option<&DiscussedLabel<'_>> {
        Some(&VERDICT)
    }
    fn messages(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Vec<ChatMessage> {
        let view = if self.summarized { turns::summary_view(history) } else { None };
        let history = view.as_deref().unwrap_or(history);
        let shared = self.pair.discussion(t.panel, t.item, t.group, history);
        let round = t.round.unwrap_or(1);
        let name = &t.speaker.name;
        let last = turns::last_speaker(history, name);
        let task = if turns::opens(history) {
            format!(
                "Discussion round {round}. {name}, you speak first: nobody has given a verdict yet. In a few \
                 sentences, say from your perspective where the two differ and which difference decides it, quoting \
                 the words that matter; then give your verdict (A, B, or tie when neither is better) and how \
                 confident you are."
            )
        } else if let (Ask::Review, Some(last)) = (self.ask, last) {
            format!(
                "Discussion round {round}. {name}, {last} gave the verdict just before yours. Review it: begin with \
                 \"{last}, …\", say whether you agree with it or would revise it and why, pointing to the two texts. \
                 Then give your own verdict (the same or another) and how confident you are."
            )
        } else {
            let others: Vec<&str> = t
                .panel
                .groups
                .iter()
                .filter(|g| g.name == t.group)
                .flat_map(|g| &g.agents)
                .map(|a| a.name.as_str())
                .filter(|n| n != name)
                .collect();
            let answer = match others.first() {
                Some(first) => {
                    format!(" Answer at least one of the others ({}) by name, as in \"{first}, …\".", others.join(", "))
                }
                None => String::new(),
            };
            if prompts::debates(t.panel) {
                format!(
                    "Discussion round {round}. {name}, argue your case: defend your own verdict, and point out where \
                     the others' verdicts and reasons are weak or wrong, pointing to the two texts.{answer} Change \
                     your verdict only when an argument against it convinces you. Then give your verdict and how \
                     confident you are."
                )
            } else {
                format!(
                    "Discussion round {round}. {name}, say briefly where you agree and where you disagree with the \
                     others' verdicts and why, pointing to the two texts.{answer} Then give your verdict again \
                     (changed or not) and how confident you are."
                )
            }
        };
        let turn = format!("{}\n{task} {}", persona(t.panel, t.group, t.speaker), VERDICT.instructions());
        vec![self.pair.system(t.panel), ChatMessage::user(shared), ChatMessage::user(turn)]
    }
    fn ahead(&self, t: &Turn<'_>, history: &[HistoryEntry], so_far: &str) -> Vec<ChatMessage> {
        let history = prompts::with_placeholder(history, &t.speaker.name, t.round);
        let shared = self.pair.discussion(t.panel, t.item, t.group, &history);
        let shared = prompts::shared_so_far(t.panel, shared, &t.speaker.name, t.round, so_far);
        vec![self.pair.system(t.panel), ChatMessage::user(shared)]
    }
    fn agreed(&self) -> bool {
        self.agreed.is_some()
    }
    fn end_of_round(&mut self, run: &Run, group: &str, round: u32) -> bool {
        if self.until == Until::AllRounds {
            return true;
        }
        if let Some(label) = check(run, group, Some(round)) {
            self.agreed = Some(label);
            return false;
        }
        if self.until == Until::Agreed {
            return true;
        }
        let now = snapshot(run, group);
        let moved = now != self.previous;
        self.previous = now;
        moved
    }
}

/// How a group's discussion of the pair ended.
#[derive(Debug, Clone)]
pub(crate) struct GroupOutcome {
    /// The group's label (`None`: nobody gave a readable verdict).
    pub label: Option<Label>,
    /// How it was reached: `consensus`, `final_judge`, `majority`, `confidence_weighted`.
    pub method: &'static str,
    /// What the group decided, in words (the log and the screen).
    pub note: String,
}

/// Record the result: each evaluator's latest label as their decision on
/// the pair, each group's outcome, and the panel's decision (one group's
/// label as it is, several groups' by majority) with the ranking.
pub(crate) fn publish_result(run: &Run, pair: &Pair<'_>, outcomes: &[GroupOutcome]) {
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let mut notes = Vec::new();
    let mut group_labels = Vec::new();
    for (g, outcome) in run.panel.groups.iter().zip(outcomes) {
        decide_members(run, pair, &g.name);
        let no_result = outcome.label.is_none().then(|| format!("{}: no evaluator gave a readable verdict", g.name));
        run.state().aggregates.insert(Some(g.name.clone()), AggregateRecord { feedback: outcome.note.clone() });
        run.emit(EventKind::AggregationCompleted {
            group: Some(g.name.clone()),
            feedback: outcome.note.clone(),
            scores: Default::default(),
            overall: None,
            original: Default::default(),
            method: Some(outcome.method.into()),
            no_result,
            left_out: Vec::new(),
            labels: Default::default(),
            original_labels: Default::default(),
            ranking: Vec::new(),
        });
        notes.push(outcome.note.clone());
        group_labels.push(outcome.label);
    }
    let panel = combine::majority(&group_labels, group_labels.len(), Label::Tie);
    let (first, second) = (&pair.a.id, &pair.b.id);
    let no_result = panel.is_none().then(|| format!("no group decided {first} against {second}"));
    run.emit(EventKind::PairDecided {
        judge: None,
        first: first.clone(),
        second: second.clone(),
        first_order: panel,
        swapped_order: None,
        winner: panel.and_then(|l| winner(Preference::from_label(l, false), first, second)),
        flip: None,
        no_result,
    });
    let method = match outcomes {
        [one] => one.method,
        _ => "majority",
    };
    let mut st = run.state();
    st.pairwise = PairwiseState {
        cands: vec![pair.a.id.clone(), pair.b.id.clone()],
        pairs: vec![PairState {
            pair: (0, 1),
            judged: Some(group_labels.iter().map(|l| l.map(|l| Preference::from_label(l, false))).collect()),
            orders: (panel, None, None),
            ..Default::default()
        }],
        method: Some(method.to_string()),
        notes,
        ..Default::default()
    };
    drop(st);
    publish(run);
}

/// Record each evaluator's latest label as their decision on the pair.
fn decide_members(run: &Run, pair: &Pair<'_>, group: &str) {
    let (first, second) = (&pair.a.id, &pair.b.id);
    for (name, label) in snapshot(run, group) {
        run.emit(EventKind::PairDecided {
            judge: Some(name.clone()),
            first: first.clone(),
            second: second.clone(),
            first_order: label,
            swapped_order: None,
            winner: label.and_then(|l| winner(Preference::from_label(l, false), first, second)),
            flip: None,
            no_result: label.is_none().then(|| format!("{name} gave no readable verdict")),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_confident_label_wins_and_an_even_weight_is_a_tie() {
        assert_eq!(weighted_vote(&[]), None);
        assert_eq!(weighted_vote(&[(Label::A, 0.9), (Label::B, 0.3), (Label::B, 0.3)]), Some(Label::A));
        assert_eq!(weighted_vote(&[(Label::A, 0.5), (Label::B, 0.5)]), Some(Label::Tie));
        assert_eq!(weighted_vote(&[(Label::Tie, 1.0), (Label::A, 0.4)]), Some(Label::Tie));
    }

    #[test]
    fn a_level_weighs_by_its_rank_and_a_number_as_given() {
        let ev = |confidence: Option<f64>, justification: &str| Evaluation {
            confidence,
            justification: justification.into(),
            ..Evaluation::default()
        };
        assert_eq!(label_weight(&ev(Some(0.8), "")), 0.8);
        assert_eq!(label_weight(&ev(None, "(confidence high) A keeps the facts.")), 1.0);
        assert!((label_weight(&ev(None, "(confidence low)")) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(label_weight(&ev(None, "No level given.")), 0.5);
    }
}
