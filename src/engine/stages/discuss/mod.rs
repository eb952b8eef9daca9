//! `discuss`: a group's members talk in turn, each turn ending with the
//! speaker's scores. Its settings say who speaks next (`order`: a moderator,
//! rounds in a shuffled or the panel's order, or simultaneous rounds, with
//! a summarizer after each when `summarizer` is on), what a turn asks for
//! (`talk`), and when the talk ends (`stop`: when the turns or rounds run
//! out, on consensus, or also after a round that moved nobody). Consensus
//! is the panel's rule or the same score from everyone (`agreement`), on
//! the whole evaluation or criterion by criterion (`scope`, [`criteria`]).
//!
//! The turns themselves — a person's pick, veto, comment, pause and step —
//! are the shared discussion loop's (`engine::discussion`); this stage
//! gives it its prompts and its stop rule.

mod criteria;
mod pairs;
pub(crate) mod summary;

use std::collections::BTreeMap;

use super::journey::Journey;
use crate::engine::consensus::{self, ConsensusOutcome};
use crate::engine::discussion::turns::{self, Ask};
use crate::engine::discussion::{self, Floor, Order, Turn};
use crate::engine::labels::Pair;
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::{Run, eval_scores};
use crate::panel::ConsensusRule;
use crate::panel::composition::Stage;
use crate::provider::ChatMessage;
use crate::session::event::{EventKind, Phase, Scores};

/// What a turn asks the speaker for (`talk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Talk {
    /// Answer the others from one's own perspective; a moderator's debate.
    Debate,
    /// Build on the others' points and reconcile.
    Collaborate,
    /// Defend one's scores and attack the others'.
    Argue,
    /// Weigh what was said and give one's scores (opening when nobody has).
    Discuss,
    /// Agree with or revise the evaluation just before one's own.
    Review,
}

impl Talk {
    fn of(stage: &Stage) -> Self {
        match stage.choice("talk").as_str() {
            "debate" => Talk::Debate,
            "collaborate" => Talk::Collaborate,
            "argue" => Talk::Argue,
            "review" => Talk::Review,
            _ => Talk::Discuss,
        }
    }
}

/// When a group's members agree (`agreement`).
pub(crate) struct Agreement {
    rule: ConsensusRule,
    tolerance: f64,
    /// The rule as `consensus_checked` names it.
    label: String,
    /// Whether `overall` must agree besides the dimensions (the panel's rule covers it).
    overall: bool,
}

impl Agreement {
    pub(crate) fn of(run: &Run, stage: &Stage) -> Self {
        if stage.is("agreement", "same") {
            return Agreement {
                rule: ConsensusRule::Exact,
                tolerance: 0.0,
                label: "same score".into(),
                overall: false,
            };
        }
        let c = &run.panel.consensus;
        let label = match c.rule {
            ConsensusRule::Exact => c.rule.as_str().to_string(),
            _ => format!("{} ≤ {}", c.rule.as_str(), prompts::fmt_num(c.tolerance)),
        };
        Agreement { rule: c.rule, tolerance: c.tolerance, label, overall: true }
    }

    /// The keys a check of the whole evaluation covers: every dimension,
    /// and under the panel's rule `overall` where the panel has one.
    fn keys(&self, run: &Run) -> Vec<String> {
        if self.overall { run.panel.score_keys() } else { run.panel.dimension_keys() }
    }
}

/// Check and record whether `group` agrees on `keys` (`round` 0: before
/// the first round); the recorded scores are those of `keys`.
pub(crate) fn consensus_check(
    run: &Run,
    group: &str,
    round: u32,
    agreement: &Agreement,
    keys: &[String],
    rule: String,
) -> ConsensusOutcome {
    let scores = snapshot(run, group, keys);
    let scores: BTreeMap<String, Scores> = scores.into_iter().filter(|(_, s)| !s.is_empty()).collect();
    let outcome = consensus::check(agreement.rule, agreement.tolerance, &scores, keys);
    run.emit(EventKind::ConsensusChecked {
        group: Some(group.to_string()),
        round: Some(round),
        scores,
        spread: outcome.spread.clone(),
        reached: outcome.reached,
        rule,
        labels: BTreeMap::new(),
    });
    outcome
}

/// Each of the group's members' latest scores on `keys` (none for a member without an evaluation).
fn snapshot(run: &Run, group: &str, keys: &[String]) -> BTreeMap<String, Scores> {
    let st = run.state();
    st.agents
        .iter()
        .filter(|a| a.group == group)
        .map(|a| {
            let scores = a.progress.latest.as_ref().map(eval_scores).unwrap_or_default();
            (a.name.clone(), scores.into_iter().filter(|(k, _)| keys.contains(k)).collect())
        })
        .collect()
}

/// The group's talk, to its end; its finals are recorded after it. On a
/// pair, the talk is of labels ([`pairs`]).
pub(super) async fn run(run: &Run, stage: &Stage, group: &str, journey: &Journey, pair: Option<&Pair<'_>>) {
    if let Some(pair) = pair {
        return pairs::run(run, stage, group, journey, pair).await;
    }
    let talk = Talk::of(stage);
    let agreement = Agreement::of(run, stage);
    let stops = stage.stops_on_consensus();
    if stops && stage.is("scope", "per-criterion") {
        let (method, note) = criteria::discuss(run, group, &agreement, rounds(run, stage), talk == Talk::Argue).await;
        let mut path = journey.group(group);
        path.finals_recorded = true;
        path.criteria = Some((method, note));
        path.settled = true;
        return;
    }
    if talk == Talk::Debate {
        run.emit(EventKind::PhaseStarted { phase: Phase::Debate, group: Some(group.to_string()), round: None });
    }
    let keys = agreement.keys(run);
    let mut floor = Speaking {
        talk,
        stop: if stops { Some(stage.is("stop", "consensus-or-unchanged")) } else { None },
        agreement: &agreement,
        keys: &keys,
        previous: snapshot(run, group, &keys),
        reached: false,
        summarized: stage.flag("summarizer"),
        journey,
    };
    // A debate reports how far apart the first evaluations are; a talk that
    // stops on consensus does not begin when the first evaluations agree.
    if talk == Talk::Debate && journey.evaluated() {
        journey.group(group).agreed = Some(run.check_consensus(group, Some(0)));
    } else if stops && journey.evaluated() {
        let agreed = consensus_check(run, group, 0, &agreement, &keys, agreement.label.clone()).reached;
        journey.group(group).agreed = Some(agreed);
        floor.reached = agreed;
    }
    if !floor.reached {
        let subject = run.item().content.clone();
        talk_to_end(run, stage, group, &mut floor, &subject).await;
    }
    journey.record_finals(run, group);
    if stops {
        let mut path = journey.group(group);
        path.settled = true;
        path.agreed = Some(floor.reached);
    }
}

/// The most rounds: the stage's `rounds`, else the panel's `[consensus] max_rounds`.
fn rounds(run: &Run, stage: &Stage) -> u32 {
    match u32::try_from(stage.integer("rounds")).unwrap_or(0) {
        0 => run.panel.consensus.max_rounds,
        n => n,
    }
}

/// The turns in the stage's order until it runs out or the floor ends it;
/// `subject` is what the summarizer is told is under evaluation.
async fn talk_to_end<F: Floor>(run: &Run, stage: &Stage, group: &str, floor: &mut F, subject: &str) {
    let max = rounds(run, stage);
    match stage.choice("order").as_str() {
        "moderated" => discussion::discuss(run, group, floor, Order::moderated(run, group)).await,
        "simultaneous" if stage.flag("summarizer") => {
            for round in 1..=max {
                if ended(run) {
                    break;
                }
                discussion::discuss(run, group, floor, Order::simultaneous(round, round)).await;
                if ended(run) || floor.agreed() {
                    break;
                }
                summary::summarize(run, group, round, subject).await;
            }
        }
        "simultaneous" => discussion::discuss(run, group, floor, Order::simultaneous(1, max)).await,
        _ => {
            let order = match stage.choice("shuffle").as_str() {
                "once" => Order::rounds_shuffled_once(run, group, max),
                "none" => Order::rounds_of(run, group, max, false),
                _ => Order::rounds_of(run, group, max, true),
            };
            discussion::discuss(run, group, floor, order).await;
        }
    }
}

fn ended(run: &Run) -> bool {
    run.stop.is_cancelled() || run.state().failure.is_some()
}

/// The discussion loop's floor: the stage's prompts and stop rule.
struct Speaking<'a> {
    talk: Talk,
    /// Stops on consensus; `Some(true)`: also after a round that moved nobody.
    stop: Option<bool>,
    agreement: &'a Agreement,
    /// What must agree, and what a round must move to go on.
    keys: &'a [String],
    previous: BTreeMap<String, Scores>,
    reached: bool,
    summarized: bool,
    journey: &'a Journey,
}

impl Floor for Speaking<'_> {
    fn agreed(&self) -> bool {
        self.reached
    }
    fn phase(&self) -> Phase {
        if self.talk == Talk::Debate { Phase::Debate } else { Phase::Discussion }
    }
    fn messages(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Vec<ChatMessage> {
        let round = t.round.unwrap_or(1);
        match self.talk {
            Talk::Debate => prompts::debate_messages(t.panel, t.group, t.speaker, t.item, history, t.latest),
            Talk::Collaborate | Talk::Argue => {
                let argue = self.talk == Talk::Argue;
                prompts::discussion_messages(t.panel, t.group, t.speaker, t.item, history, round, argue)
            }
            Talk::Discuss | Talk::Review => {
                let ask = if self.talk == Talk::Review { Ask::Review } else { Ask::Discuss };
                match self.summarized.then(|| turns::summary_view(history)).flatten() {
                    Some(view) => turns::scoring_messages(t, &view, ask),
                    None => turns::scoring_messages(t, history, ask),
                }
            }
        }
    }
    /// A debate turn opens by addressing the last speaker (unless `turns = "free"`).
    fn opening(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Option<String> {
        if self.talk != Talk::Debate || t.panel.protocol.has("turns", "free") {
            return None;
        }
        prompts::addressee(t.panel, t.group, &t.speaker.name, history, t.latest).map(|a| prompts::opening_words(&a))
    }
    fn ahead(&self, t: &Turn<'_>, history: &[HistoryEntry], so_far: &str) -> Vec<ChatMessage> {
        match self.talk {
            Talk::Debate => prompts::debate_ahead(t.panel, t.item, t.group, history, &t.speaker.name, so_far),
            _ => prompts::discussion_ahead(
                t.panel,
                t.item,
                t.group,
                history,
                &t.speaker.name,
                t.round.unwrap_or(1),
                so_far,
            ),
        }
    }
    /// A debate reports the group's consensus whenever someone's scores move.
    fn after_turn(&mut self, run: &Run, group: &str, changed: Option<bool>) {
        if self.talk == Talk::Debate && changed == Some(true) {
            self.journey.group(group).agreed = Some(run.check_consensus(group, None));
        }
    }
    fn end_of_round(&mut self, run: &Run, group: &str, round: u32) -> bool {
        let Some(or_unchanged) = self.stop else { return true };
        let label = self.agreement.label.clone();
        if consensus_check(run, group, round, self.agreement, self.keys, label).reached {
            self.reached = true;
            return false;
        }
        if !or_unchanged {
            return true;
        }
        let now = snapshot(run, group, self.keys);
        let moved = now != self.previous;
        self.previous = now;
        moved
    }
}
