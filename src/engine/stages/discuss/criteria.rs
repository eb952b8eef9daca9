//! CollabEval with every criterion discussed to its own consensus (`scope =
//! "per-criterion"`, the paper's criteria mode).
//!
//! After the first evaluations, and after every round, each criterion still
//! discussed is checked on its own. One the evaluators agree on is settled
//! with the result they agree on, and later rounds leave it alone. One that
//! nobody moved in the round, or that is still apart after the last round,
//! goes to the final judge. The next round discusses only the criteria left
//! open; the evaluators still give every score (their evaluation has them
//! all), told which criteria are settled. The final judge decides each
//! criterion left to it in a call of its own, shown only that criterion's
//! rubric and scores. `criteria_checked` records where the criteria stand
//! after each check; a judgment's turn names its criterion (`dimension`).

use std::collections::BTreeMap;

use super::{Agreement, consensus_check as check, snapshot};
use crate::engine::consensus::agreed_value;
use crate::engine::discussion::{self, Floor, Order, Turn};
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::PanelScores;
use crate::panel::{OVERALL, Panel};
use crate::provider::{ChatMessage, ProviderError};
use crate::session::event::{Evaluation, EventKind, Phase, Role, Scores};

/// How one criterion was settled.
enum Settled {
    /// The evaluators agreed after `round` (0: the first evaluations).
    Agreed { value: f64, round: u32 },
    /// The final judge decided; `why` its discussion ended.
    Judged { value: f64, why: String },
    /// The mean of the evaluators' latest scores: the discussion was stopped,
    /// or the final judge gave no readable score.
    Mean { value: f64, why: String },
}

/// The discussion's state: which criteria are agreed, open, or left to the final judge.
struct Criteria<'a> {
    agreement: &'a Agreement,
    /// The turns argue rather than collaborate.
    argue: bool,
    max_rounds: u32,
    /// The panel's dimensions, in its order.
    all: Vec<String>,
    /// Criterion → (agreed result, round agreed after).
    agreed: BTreeMap<String, (f64, u32)>,
    /// Still discussed, in the panel's order.
    open: Vec<String>,
    /// Criterion → why its discussion ended without consensus.
    to_judge: BTreeMap<String, String>,
    /// The evaluators' scores at the previous check.
    previous: BTreeMap<String, Scores>,
}

/// Discuss each criterion to its own end; the group's result method and
/// what became of each criterion. The group's finals are recorded before
/// the final judge is asked.
pub(super) async fn discuss(
    run: &Run,
    group: &str,
    agreement: &Agreement,
    max_rounds: u32,
    argue: bool,
) -> (&'static str, String) {
    let all = run.panel.dimension_keys();
    let mut floor = Criteria {
        agreement,
        argue,
        max_rounds,
        open: all.clone(),
        previous: snapshot(run, group, &all),
        all,
        agreed: BTreeMap::new(),
        to_judge: BTreeMap::new(),
    };
    floor.check(run, group, 0);
    if !floor.open.is_empty() {
        discussion::discuss(run, group, &mut floor, Order::rounds_of(run, group, max_rounds, true)).await;
    }
    run.emit_finals(group);
    let stopped = run.stop.is_cancelled();
    let latest = snapshot(run, group, &floor.all);
    let mut settled: BTreeMap<String, Settled> = BTreeMap::new();
    for (k, (value, round)) in &floor.agreed {
        settled.insert(k.clone(), Settled::Agreed { value: *value, round: *round });
    }
    let mut unsettled: Vec<(String, String)> = floor
        .all
        .iter()
        .filter(|k| !floor.agreed.contains_key(*k))
        .map(|k| {
            let why = floor.to_judge.get(k).cloned().unwrap_or_else(|| "its discussion ended early".to_string());
            (k.clone(), why)
        })
        .collect();
    if !stopped && !unsettled.is_empty() {
        run.emit(EventKind::PhaseStarted { phase: Phase::FinalJudgment, group: Some(group.to_string()), round: None });
        let mut left = Vec::new();
        for (k, why) in unsettled {
            // After a failed call (the session fails) or a quit, no more judgments.
            if run.quit.is_cancelled() || run.state().failure.is_some() {
                left.push((k, "the final judge was not asked".to_string()));
                continue;
            }
            match judge(run, group, &k).await {
                Some(value) => {
                    settled.insert(k, Settled::Judged { value, why });
                }
                None => left.push((k, "the final judge gave no readable score".to_string())),
            }
        }
        unsettled = left;
    } else if stopped {
        for (_, why) in &mut unsettled {
            *why = "the discussion was stopped".to_string();
        }
    }
    for (k, why) in unsettled {
        if let Some(value) = mean_of(&latest, &k) {
            settled.insert(k, Settled::Mean { value, why });
        }
    }
    result(run, group, &floor.all, settled)
}

/// The group's result from its settled criteria: stored as the group's
/// decisive evaluation (no overall of its own: no criterion is the whole,
/// unless one is keyed `overall`).
fn result(run: &Run, group: &str, order: &[String], settled: BTreeMap<String, Settled>) -> (&'static str, String) {
    let mut scores = Scores::new();
    let mut parts = Vec::new();
    let (mut agreed, mut judged, mut mean) = (0, 0, 0);
    for k in order {
        let Some(s) = settled.get(k) else {
            parts.push(format!("{k}: no score"));
            continue;
        };
        let (value, how) = match s {
            Settled::Agreed { value, round: 0 } => (*value, "agreed in the first evaluations".to_string()),
            Settled::Agreed { value, round } => (*value, format!("agreed in round {round}")),
            Settled::Judged { value, why } => (*value, format!("the final judge decided ({why})")),
            Settled::Mean { value, why } => (*value, format!("mean of the latest scores ({why})")),
        };
        match s {
            Settled::Agreed { .. } => agreed += 1,
            Settled::Judged { .. } => judged += 1,
            Settled::Mean { .. } => mean += 1,
        }
        scores.insert(k.clone(), value);
        parts.push(format!("{k} {}: {how}", prompts::fmt_num(value)));
    }
    let method = match (agreed, judged, mean) {
        (_, 0, 0) => "consensus",
        (0, _, 0) => "final_judge",
        (0, 0, _) => "mean",
        _ => "per_criterion",
    };
    let note = format!("each criterion to its own consensus. {}.", parts.join("; "));
    // A criterion keyed `overall` is the result's overall, as it is each evaluation's.
    let overall = scores.remove(OVERALL);
    if !scores.is_empty() || overall.is_some() {
        let decided = Evaluation { scores, overall, justification: note.clone(), ..Evaluation::default() };
        run.state().judged.insert(group.to_string(), decided);
    }
    (method, note)
}

/// The mean of the evaluators' latest scores on `key`.
fn mean_of(scores: &BTreeMap<String, Scores>, key: &str) -> Option<f64> {
    let values: Vec<f64> = scores.values().filter_map(|s| s.get(key).copied()).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

impl Criteria<'_> {
    /// Check the open criteria after `round` (0: the first evaluations) and
    /// record where every criterion stands.
    fn check(&mut self, run: &Run, group: &str, round: u32) {
        let checked = self.open.clone();
        let rule = format!("{}, per criterion", self.agreement.label);
        let outcome = check(run, group, round, self.agreement, &checked, rule);
        let now = snapshot(run, group, &self.all);
        let mut open = Vec::new();
        for k in &checked {
            if let Some(value) = agreed_value(&now, k).filter(|_| outcome.agrees(k)) {
                self.agreed.insert(k.clone(), (value, round));
                continue;
            }
            if round > 0 && round >= self.max_rounds {
                let rounds = if round == 1 { "1 round".to_string() } else { format!("{round} rounds") };
                self.to_judge.insert(k.clone(), format!("no consensus after {rounds}, the limit"));
            } else if round > 0 && unchanged(&self.previous, &now, k) {
                self.to_judge.insert(k.clone(), format!("nobody changed their score in round {round}"));
            } else {
                open.push(k.clone());
            }
        }
        self.open = open;
        self.previous = now;
        run.emit(EventKind::CriteriaChecked {
            group: group.to_string(),
            round,
            checked,
            agreed: self.agreed.iter().map(|(k, (v, _))| (k.clone(), *v)).collect(),
            open: self.open.clone(),
            to_judge: self.to_judge.clone(),
        });
    }

    /// What a speaker is told about the criteria: which are still discussed,
    /// which are agreed (and on what), which are left to the final judge.
    fn focus(&self) -> String {
        let mut s = format!("This round discusses only {}.", self.open.join(", "));
        if !self.agreed.is_empty() {
            let agreed: Vec<String> =
                self.agreed.iter().map(|(k, (v, _))| format!("{k} {}", prompts::fmt_num(*v))).collect();
            s.push_str(&format!(
                " The evaluators already agree on {}: give those scores again as agreed.",
                agreed.join(", ")
            ));
        }
        if !self.to_judge.is_empty() {
            let left: Vec<&str> = self.to_judge.keys().map(String::as_str).collect();
            s.push_str(&format!(
                " {} will be settled by the final judge: keep your scores on them as they are.",
                left.join(", ")
            ));
        }
        s
    }
}

/// Whether no evaluator's score on `key` moved between two checks.
fn unchanged(before: &BTreeMap<String, Scores>, now: &BTreeMap<String, Scores>, key: &str) -> bool {
    before.keys().chain(now.keys()).all(|a| {
        let was = before.get(a).and_then(|s| s.get(key));
        let is = now.get(a).and_then(|s| s.get(key));
        was == is
    })
}

impl Floor for Criteria<'_> {
    fn phase(&self) -> Phase {
        Phase::Discussion
    }
    fn messages(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Vec<ChatMessage> {
        let round = t.round.unwrap_or(1);
        let mut messages =
            prompts::discussion_messages(t.panel, t.group, t.speaker, t.item, history, round, self.argue);
        if let Some(last) = messages.last_mut() {
            let focus = self.focus();
            last.content = match last.content.find("Discussion round ") {
                Some(at) => format!("{}{focus}\n{}", &last.content[..at], &last.content[at..]),
                None => format!("{}\n\n{focus}", last.content),
            };
        }
        messages
    }
    fn ahead(&self, t: &Turn<'_>, history: &[HistoryEntry], so_far: &str) -> Vec<ChatMessage> {
        prompts::discussion_ahead(t.panel, t.item, t.group, history, &t.speaker.name, t.round.unwrap_or(1), so_far)
    }
    fn end_of_round(&mut self, run: &Run, group: &str, round: u32) -> bool {
        self.check(run, group, round);
        !self.open.is_empty()
    }
}

/// The final judge's score on one criterion: a call of its own, shown the
/// whole discussion with that criterion's rubric and scores alone. None when
/// its reply has no readable score or the call failed.
async fn judge(run: &Run, group: &str, criterion: &str) -> Option<f64> {
    let dimension = run.panel.dimensions.iter().find(|d| d.key == criterion)?.clone();
    let narrow = Panel { dimensions: vec![dimension], ..(*run.panel).clone() };
    let keys = narrow.score_keys();
    let verdict = PanelScores { panel: &narrow, quoted: run.quoted(), keys: &keys };
    let history = run.state().histories[group].clone();
    let build = |h: &[HistoryEntry]| prompts::final_judge_messages(&narrow, run.item(), h);
    let binding = run.config.bindings.for_role(Role::FinalJudge).clone();
    let turn = TurnSpec {
        dimension: Some(criterion),
        ..TurnSpec::of_role(run, Role::FinalJudge, &binding, Some(group), Phase::FinalJudgment, &run.quit)
    };
    let prompt = Prompt::discussion(&run.panel, &history, &build);
    match run.verdict_turn(&verdict, turn, prompt, None).await {
        Spoken::Evaluated { evaluation, .. } => evaluation.score(criterion),
        Spoken::Unparsed { .. } | Spoken::Failed(ProviderError::Cancelled) => None,
        Spoken::Failed(e) => {
            run.fail(format!("final judge ({criterion}): {e}"));
            None
        }
    }
}
