//! `aggregate`: each group's result from its members' final evaluations by
//! the stage's `rule` (a final judge's evaluation decides its group), the
//! panel's from the groups'; each result recorded with an account of how it
//! came about, or with the aggregator's synthesis (`synthesis`).

mod synthesis;

use super::journey::{GroupPath, Journey};
use crate::engine::labels::{self, GroupOutcome, Pair};
use crate::engine::runtime::Run;
use crate::engine::vote::GroupRule;
use crate::panel::composition::Stage;
use crate::session::event::{EventKind, Phase};

pub(super) async fn run(run: &Run, stage: &Stage, journey: &Journey, pair: Option<&Pair<'_>>) {
    for g in &run.panel.groups {
        if !journey.group(&g.name).finals_recorded {
            journey.record_finals(run, &g.name);
        }
    }
    let rule = GroupRule::named(&stage.choice("rule"));
    if let Some(pair) = pair {
        let outcomes: Vec<GroupOutcome> =
            run.panel.groups.iter().map(|g| pair_outcome(run, &g.name, rule, &journey.group(&g.name), pair)).collect();
        return labels::publish_result(run, pair, &outcomes);
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let synthesis = stage.choice("synthesis");
    let has_any = {
        let st = run.state();
        st.failure.is_none() && st.agents.iter().any(|a| a.progress.latest.is_some())
    };
    let mut notes = Vec::new();
    let mut parts = Vec::new();
    let mut methods = Vec::new();
    for g in &run.panel.groups {
        let path = journey.group(&g.name).clone();
        let (method, note) = account(run, &g.name, rule, &path, journey.account().as_deref());
        let feedback = match synthesis.as_str() {
            "per-group" => {
                let text = if has_any { synthesis::of_group(run, &g.name).await } else { String::new() };
                if !text.is_empty() {
                    parts.push(format!("{}: {text}", g.name));
                }
                text
            }
            "panel" => String::new(),
            _ => note.clone(),
        };
        run.emit_aggregate(Some(&g.name), feedback, method);
        notes.push(note);
        methods.push(method);
    }
    let feedback = match synthesis.as_str() {
        "per-group" => parts.join("\n\n"),
        "panel" if has_any => synthesis::of_panel(run).await,
        "panel" => String::new(),
        _ => notes.join("\n"),
    };
    let method = match methods.as_slice() {
        [one] => one,
        _ => rule.method(),
    };
    run.emit_aggregate(None, feedback, method);
    run.state().finished = true;
}

/// How a group's result came about: the method it is recorded with, and
/// the words that say it.
fn account(run: &Run, group: &str, rule: GroupRule, path: &GroupPath, scoring: Option<&str>) -> (&'static str, String) {
    let how = match rule {
        GroupRule::Majority => "majority of the last evaluations (per dimension the score most agents gave)",
        GroupRule::ConfidenceWeighted => "confidence-weighted mean of the last evaluations",
        GroupRule::Mean => "mean of each agent's last evaluation",
    };
    let mut how = how.to_string();
    if let Some((changed, checked)) = path.verified {
        how.push_str(&format!("; a verifier checked {checked} and corrected {changed}"));
    }
    if let Some(s) = scoring {
        how.push_str(&format!("; {s}"));
    }
    let (method, note) = if let Some((method, note)) = &path.criteria {
        (*method, format!("{group}: {note}"))
    } else {
        match (path.judged, path.settled, path.agreed) {
            (Some(true), ..) => {
                let why = run.state().judged.get(group).map(|e| e.justification.trim().to_string()).unwrap_or_default();
                ("final_judge", format!("{group}: no consensus; the final judge decided. {why}"))
            }
            (Some(false), ..) => (rule.method(), format!("{group}: no consensus and no final judgment; {how}.")),
            (None, true, Some(true)) if rule == GroupRule::Mean => {
                ("consensus", format!("{group}: consensus reached."))
            }
            (None, true, Some(true)) => (rule.method(), format!("{group}: all agreed; {how}.")),
            (None, true, _) => (rule.method(), format!("{group}: no agreement within the rounds; {how}.")),
            (None, false, _) => (rule.method(), format!("{group}: {how}.")),
        }
    };
    if run.base_result(&run.state(), Some(group)).is_empty() {
        return (method, format!("{group}: no result: no readable evaluation."));
    }
    (method, note)
}

/// A group's decision on the pair: the label everyone agreed on, the final
/// judge's, or the vote of the members' latest labels by the rule (a
/// confidence-weighted vote, else the majority).
fn pair_outcome(run: &Run, group: &str, rule: GroupRule, path: &GroupPath, pair: &Pair<'_>) -> GroupOutcome {
    let words = |l| pair.label_words(l);
    let latest = labels::snapshot(run, group);
    let same = {
        let mut given = latest.values();
        let first = given.next().copied().flatten();
        first.filter(|_| latest.values().all(|l| *l == first))
    };
    let judged = || labels::label_of(run.state().judged.get(group));
    let (label, how) = match rule {
        GroupRule::ConfidenceWeighted => {
            (labels::weighted(run, group), "the verdict with the most confidence behind it")
        }
        _ => (labels::majority(run, group), "majority of the last verdicts"),
    };
    let no_result = format!("{group}: no result: no evaluator gave a readable verdict.");
    match (path.settled, path.agreed, path.judged) {
        (true, Some(true), _) if same.is_some() => {
            let method = if rule == GroupRule::Mean { "consensus" } else { rule.method() };
            GroupOutcome { label: same, method, note: format!("{group}: every agent agreed: {}.", words(same)) }
        }
        (_, _, Some(true)) if judged().is_some() => {
            let l = judged();
            let note = format!("{group}: no agreement; the final judge decided: {}.", words(l));
            GroupOutcome { label: l, method: "final_judge", note }
        }
        _ if label.is_none() => GroupOutcome { label, method: rule_method(rule), note: no_result },
        (_, _, Some(false)) => GroupOutcome {
            label,
            method: "majority",
            note: format!(
                "{group}: no agreement and no final judgment; majority of the latest verdicts: {}.",
                words(label)
            ),
        },
        (true, ..) => GroupOutcome {
            label,
            method: rule_method(rule),
            note: format!("{group}: no agreement within the rounds; {how}: {}.", words(label)),
        },
        (false, ..) => GroupOutcome {
            label,
            method: rule_method(rule),
            note: format!("{group}: majority of each agent's last verdict: {}.", words(label)),
        },
    }
}

/// The method a vote of labels by `rule` is recorded with (the mean of
/// labels is their majority).
fn rule_method(rule: GroupRule) -> &'static str {
    if rule == GroupRule::Mean { "majority" } else { rule.method() }
}
