//! The first evaluations that open a debate: every agent's own, at once,
//! before anyone has seen another's.

use futures::future::join_all;

use super::prompts::{self, HistoryEntry};
use super::runtime::{Run, Spoken};
use super::trim::Prompt;
use crate::session::event::{EventKind, Phase};

/// Independent first evaluations by every agent, concurrently. Fills each
/// group's history in panel order once all are in.
pub(crate) async fn initial_phase(run: &Run, with_confidence: bool) {
    run.emit(EventKind::PhaseStarted { phase: Phase::Initial, group: None, round: None });
    let count = run.state().agents.len();
    let calls = (0..count).map(|i| async move {
        if !run.gate().await {
            return None;
        }
        let messages = {
            let st = run.state();
            let a = &st.agents[i];
            prompts::initial_messages(&run.panel, &a.group, &a.spec, run.item(), with_confidence)
        };
        // Feedback before the scores begins with the item's first part.
        let opening =
            prompts::full_first_feedback(&run.panel).then(|| prompts::feedback_opening(&run.panel, run.item()));
        let prompt = Prompt::fixed(messages).opening(opening);
        Some(run.agent_turn(i, Phase::Initial, None, prompt, &run.stop, None).await)
    });
    let results = join_all(calls).await;
    record_firsts(run, results);
}

/// The first evaluations, once all are in: each one (or its unreadable
/// reply) joins its group's history in panel order; a failure that retrying
/// cannot fix, or every call failing, fails the run. `None`: the call was
/// never made (the run was stopping).
pub(crate) fn record_firsts(run: &Run, results: Vec<Option<Spoken>>) {
    let count = results.len();
    let mut failures = 0;
    let mut fatal = None;
    let mut first_failure = None;
    for (i, out) in results.into_iter().enumerate() {
        let (name, group) = {
            let st = run.state();
            (st.agents[i].name.clone(), st.agents[i].group.clone())
        };
        match out {
            Some(Spoken::Evaluated { evaluation, text, .. }) => {
                run.push_history(&group, HistoryEntry::Initial { agent: name, evaluation: Some(evaluation), text });
            }
            Some(Spoken::Unparsed { text, .. }) => {
                run.push_history(&group, HistoryEntry::Initial { agent: name, evaluation: None, text });
            }
            Some(Spoken::Failed(crate::provider::ProviderError::Cancelled)) => {}
            Some(Spoken::Failed(e)) => {
                failures += 1;
                if !e.is_retryable() && fatal.is_none() {
                    fatal = Some(format!("{name}: {e}"));
                }
                first_failure.get_or_insert_with(|| format!("{name}: {e}"));
            }
            None => {}
        }
    }
    if let Some(f) = fatal {
        run.fail(f);
    } else if failures == count && count > 0 {
        let first = first_failure.unwrap_or_default();
        run.fail(format!(
            "every agent's first evaluation failed — {first} (each failure is a turn_failed event in the log)"
        ));
    }
}
