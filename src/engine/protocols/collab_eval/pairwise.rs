//! CollabEval's pairwise mode: the evaluators compare an item's two
//! candidates (shown as "<noun> A" and "<noun> B", in the item's order)
//! instead of scoring its content. Each gives a label verdict (`A`, `B` or
//! `tie`, with a confidence and reasons) on their own, then they discuss in
//! seeded shuffled rounds; a group agrees when every evaluator's latest
//! label is the same. A group that does not agree is decided by the final
//! judge, or, without a readable judgment, by majority over the evaluators'
//! latest labels (more than half, otherwise tie). Several groups' decisions
//! combine by the same majority rule.
//!
//! The result is recorded like a pairwise run's: `pair_decided` for every
//! evaluator (their latest label) and for the panel, and the ranking of the
//! two candidates.

use std::collections::BTreeMap;

use futures::future::join_all;

use crate::engine::discussion::{self, Floor, Order, Turn};
use crate::engine::prompts::{self, DISCUSSION_HEADING, HistoryEntry, persona, render_history, roster};
use crate::engine::protocols::pairwise::combine::{Preference, majority};
use crate::engine::protocols::pairwise::label::{DiscussedLabel, Label, LabelVerdict};
use crate::engine::protocols::pairwise::prompts::{criteria, render_pair, system};
use crate::engine::protocols::record_firsts;
use crate::engine::protocols::pairwise::{PairState, PairwiseState, publish, winner};
use crate::engine::runtime::{AggregateRecord, Run, Spoken};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::item::{Candidate, Item};
use crate::panel::Panel;
use crate::provider::{ChatMessage, ProviderError};
use crate::session::event::{EventKind, Phase, Role};

/// The verdict every turn of this mode asks for: one overall label.
static VERDICT: DiscussedLabel<'static> = DiscussedLabel(LabelVerdict::new(&[]));

/// How a group's discussion ended, and its label (`None`: nobody gave one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Consensus(Label),
    Judged(Label),
    Majority(Option<Label>),
}

impl Outcome {
    fn label(self) -> Option<Label> {
        match self {
            Outcome::Consensus(l) | Outcome::Judged(l) => Some(l),
            Outcome::Majority(l) => l,
        }
    }
    fn method(self) -> &'static str {
        match self {
            Outcome::Consensus(_) => "consensus",
            Outcome::Judged(_) => "final_judge",
            Outcome::Majority(_) => "majority",
        }
    }
}

/// The two texts as the evaluators see them, and what they are called.
struct Pair<'a> {
    a: &'a Candidate,
    b: &'a Candidate,
    noun: String,
}

impl Pair<'_> {
    /// The shared start of every request about the pair: the two texts, then
    /// the group's members.
    fn context(&self, panel: &Panel, item: &Item, group: &str) -> String {
        let pair = render_pair(item, &self.noun, &self.a.text, &self.b.text);
        let roster = roster(panel, group);
        if roster.is_empty() { pair } else { format!("{pair}\n\n{}", roster.trim_end()) }
    }
    /// The pair, then the discussion so far.
    fn discussion(&self, panel: &Panel, item: &Item, group: &str, history: &[HistoryEntry]) -> String {
        format!("{}\n\n{DISCUSSION_HEADING}\n{}", self.context(panel, item, group), render_history(panel, history))
    }
    fn system(&self, panel: &Panel) -> ChatMessage {
        ChatMessage::system(system(panel, &self.noun))
    }
    fn criteria_line(&self, panel: &Panel) -> String {
        format!("Compare {n} A and {n} B on these criteria:\n{}", criteria(panel).trim_end(), n = self.noun)
    }
}

pub(super) async fn run(run: &Run) {
    let Some(cands) = run.item().candidates.clone() else { return };
    let [a, b] = &cands[..] else { return };
    let noun = run.panel.protocol.text("candidate_name");
    let noun = noun.trim();
    let pair = Pair { a, b, noun: if noun.is_empty() { "Summary".into() } else { noun.to_string() } };

    first_verdicts(run, &pair).await;
    let outcomes = join_all(run.panel.groups.iter().map(|g| discuss(run, &pair, &g.name))).await;
    if run.quit.is_cancelled() {
        return;
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let mut notes = Vec::new();
    let mut group_labels = Vec::new();
    for (g, &outcome) in run.panel.groups.iter().zip(&outcomes) {
        decide_members(run, &pair, &g.name);
        let note = group_note(&g.name, outcome, &pair);
        let no_result = outcome.label().is_none().then(|| format!("{}: no evaluator gave a readable verdict", g.name));
        run.state()
            .aggregates
            .insert(Some(g.name.clone()), AggregateRecord { feedback: note.clone(), method: outcome.method().into() });
        run.emit(EventKind::AggregationCompleted {
            group: Some(g.name.clone()),
            feedback: note.clone(),
            scores: Default::default(),
            overall: None,
            original: Default::default(),
            method: Some(outcome.method().into()),
            no_result,
            left_out: Vec::new(),
            labels: Default::default(),
            original_labels: Default::default(),
            ranking: Vec::new(),
        });
        notes.push(note);
        group_labels.push(outcome.label());
    }
    // The panel: one group's label as it is, several by majority.
    let panel = majority(&group_labels, group_labels.len(), Label::Tie);
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
        no_result: no_result.clone(),
    });
    let method = match &outcomes[..] {
        [one] => one.method(),
        _ => "majority",
    };
    let mut st = run.state();
    st.pairwise = PairwiseState {
        cands: cands.iter().map(|c| c.id.clone()).collect(),
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

/// What a group decided, in words, with the systems named (for the log and
/// the screen; never shown to an evaluator).
fn group_note(group: &str, outcome: Outcome, pair: &Pair<'_>) -> String {
    let label = match outcome.label() {
        Some(Label::A) => format!("{} A ({}) is better", pair.noun, pair.a.id),
        Some(Label::B) => format!("{} B ({}) is better", pair.noun, pair.b.id),
        Some(Label::Tie) => "tie".to_string(),
        None => "no decision".to_string(),
    };
    match outcome {
        Outcome::Consensus(_) => format!("{group}: every evaluator agreed: {label}."),
        Outcome::Judged(_) => format!("{group}: no agreement; the final judge decided: {label}."),
        Outcome::Majority(Some(_)) => {
            format!("{group}: no agreement and no final judgment; majority of the latest verdicts: {label}.")
        }
        Outcome::Majority(None) => format!("{group}: no result: no evaluator gave a readable verdict."),
    }
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

fn latest_label(ev: Option<&crate::session::event::Evaluation>) -> Option<Label> {
    ev.and_then(|e| e.label.as_deref()).and_then(Label::parse)
}

/// Every evaluator's first verdict, on their own, at once.
async fn first_verdicts(run: &Run, pair: &Pair<'_>) {
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
        let messages =
            vec![pair.system(&run.panel), ChatMessage::user(pair.context(&run.panel, run.item(), &group)), ChatMessage::user(turn)];
        let spoken = run.agent_verdict_turn(&VERDICT, i, Phase::Initial, None, Prompt::fixed(messages), &run.stop, None);
        Some(spoken.await)
    });
    record_firsts(run, join_all(calls).await);
}

/// Each member's latest label (members without one are left out) and
/// whether every member gave the same one; recorded as `consensus_checked`.
fn check(run: &Run, group: &str, round: Option<u32>) -> Option<Label> {
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

/// Each member's latest label (`None`: no readable verdict yet).
fn snapshot(run: &Run, group: &str) -> BTreeMap<String, Option<Label>> {
    let st = run.state();
    st.agents
        .iter()
        .filter(|a| a.group == group)
        .map(|a| (a.name.clone(), latest_label(a.progress.latest.as_ref())))
        .collect()
}

async fn discuss(run: &Run, pair: &Pair<'_>, group: &str) -> Outcome {
    if let Some(label) = check(run, group, Some(0)) {
        run.emit_finals(group);
        return Outcome::Consensus(label);
    }
    let mut rounds = LabelRounds { pair, previous: snapshot(run, group), agreed: None };
    discussion::discuss(run, group, &mut rounds, Order::rounds(run, group)).await;
    run.emit_finals(group);
    if let Some(label) = rounds.agreed {
        return Outcome::Consensus(label);
    }
    if !run.stop.is_cancelled()
        && let Some(label) = final_judgment(run, pair, group).await
    {
        return Outcome::Judged(label);
    }
    let latest: Vec<Option<Label>> = snapshot(run, group).into_values().collect();
    Outcome::Majority(majority(&latest, latest.len(), Label::Tie))
}

/// The discussion of the labels: after each round the agreement is checked;
/// the rounds end when it holds or when a round changed nobody's label.
struct LabelRounds<'p> {
    pair: &'p Pair<'p>,
    previous: BTreeMap<String, Option<Label>>,
    agreed: Option<Label>,
}

impl Floor for LabelRounds<'_> {
    fn phase(&self) -> Phase {
        Phase::Discussion
    }
    fn label_verdict(&self) -> Option<&DiscussedLabel<'_>> {
        Some(&VERDICT)
    }
    fn messages(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Vec<ChatMessage> {
        let shared = self.pair.discussion(t.panel, t.item, t.group, history);
        let round = t.round.unwrap_or(1);
        let others: Vec<&str> = t
            .panel
            .groups
            .iter()
            .filter(|g| g.name == t.group)
            .flat_map(|g| &g.agents)
            .map(|a| a.name.as_str())
            .filter(|n| *n != t.speaker.name)
            .collect();
        let answer = match others.first() {
            Some(first) => format!(" Answer at least one of the others ({}) by name, as in \"{first}, …\".", others.join(", ")),
            None => String::new(),
        };
        let turn = format!(
            "{}\nDiscussion round {round}. {}, say briefly where you agree and where you disagree with the others' \
             verdicts and why, pointing to the two texts.{answer} Then give your verdict again (changed or not) and \
             how confident you are. {}",
            persona(t.panel, t.group, t.speaker),
            t.speaker.name,
            VERDICT.instructions(),
        );
        vec![self.pair.system(t.panel), ChatMessage::user(shared), ChatMessage::user(turn)]
    }
    fn ahead(&self, t: &Turn<'_>, history: &[HistoryEntry], so_far: &str) -> Vec<ChatMessage> {
        let history = prompts::with_placeholder(history, &t.speaker.name, t.round);
        let shared = self.pair.discussion(t.panel, t.item, t.group, &history);
        let shared = prompts::shared_so_far(t.panel, shared, &t.speaker.name, t.round, so_far);
        vec![self.pair.system(t.panel), ChatMessage::user(shared)]
    }
    fn end_of_round(&mut self, run: &Run, group: &str, round: u32) -> bool {
        if let Some(label) = check(run, group, Some(round)) {
            self.agreed = Some(label);
            return false;
        }
        let now = snapshot(run, group);
        let moved = now != self.previous;
        self.previous = now;
        moved
    }
}

/// The final judge's verdict on a group that did not agree, from the pair
/// and the discussion; `None` when it could not be had.
async fn final_judgment(run: &Run, pair: &Pair<'_>, group: &str) -> Option<Label> {
    run.emit(EventKind::PhaseStarted { phase: Phase::FinalJudgment, group: Some(group.to_string()), round: None });
    let history = run.state().histories[group].clone();
    let build = |h: &[HistoryEntry]| {
        let turn = format!(
            "You are the final judge. The evaluators above did not agree. {}\nWeigh their arguments against the two \
             texts themselves, say in a few sentences which arguments hold, then give the verdict. {}",
            pair.criteria_line(&run.panel),
            VERDICT.instructions(),
        );
        vec![pair.system(&run.panel), ChatMessage::user(pair.discussion(&run.panel, run.item(), group, h)), ChatMessage::user(turn)]
    };
    let binding = run.config.bindings.for_role(Role::FinalJudge).clone();
    let turn = crate::engine::runtime::TurnSpec {
        participant: Role::FinalJudge.label(),
        group: Some(group),
        phase: Phase::FinalJudgment,
        round: None,
        role: Role::FinalJudge,
        binding: &binding,
        sampling: run.role_sampling(Role::FinalJudge),
        cancel: &run.quit,
        dimension: None,
        pair: None,
    };
    match run.verdict_turn(&VERDICT, turn, Prompt::discussion(&history, &build), None).await {
        Spoken::Evaluated { evaluation, .. } => {
            run.state().judged.insert(group.to_string(), DiscussedLabel::to_evaluation(&evaluation));
            Some(evaluation.label)
        }
        Spoken::Unparsed { .. } | Spoken::Failed(ProviderError::Cancelled) => None,
        Spoken::Failed(e) => {
            run.fail(format!("final judge: {e}"));
            None
        }
    }
}
