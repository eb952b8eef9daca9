//! `aggregate`: each group's result from its members' final evaluations by
//! the stage's `rule` (a final judge's evaluation decides its group), the
//! panel's from the groups'; each result recorded with an account of how it
//! came about, or with the aggregator's synthesis (`synthesis`).

mod synthesis;

use super::journey::{GroupPath, Journey};
use crate::engine::runtime::Run;
use crate::engine::vote::GroupRule;
use crate::panel::composition::Stage;
use crate::session::event::{EventKind, Phase};

pub(super) async fn run(run: &Run, stage: &Stage, journey: &Journey) {
    for g in &run.panel.groups {
        if !journey.group(&g.name).finals_recorded {
            journey.record_finals(run, &g.name);
        }
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let rule = GroupRule::named(&stage.choice("rule"));
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
        let (method, note) = account(run, &g.name, rule, &path, journey.scoring().as_deref());
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
