//! `judge`: a final judge reads a group's whole discussion and gives the
//! group's decisive evaluation (it replaces the group's vote in the
//! result); on a pair, its verdict.

use super::journey::Journey;
use crate::engine::labels::{Pair, VERDICT};
use crate::engine::pairs::label::{DiscussedLabel, Label};
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::{Run, Spoken};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::provider::{ChatMessage, ProviderError};
use crate::session::event::{EventKind, Phase, Role};

pub(super) async fn run(run: &Run, group: &str, journey: &Journey, pair: Option<&Pair<'_>>) {
    run.emit(EventKind::PhaseStarted { phase: Phase::FinalJudgment, group: Some(group.to_string()), round: None });
    if let Some(pair) = pair {
        let decided = judge_pair(run, pair, group).await.is_some();
        journey.group(group).judged = Some(decided);
        return;
    }
    let history = run.state().histories.get(group).cloned().unwrap_or_default();
    let build = |h: &[HistoryEntry]| prompts::final_judge_messages(&run.panel, run.item(), h);
    let binding = run.config.bindings.for_role(Role::FinalJudge).clone();
    let sampling = run.role_sampling(Role::FinalJudge);
    let prompt = Prompt::discussion(&run.panel, &history, &build);
    let out = run
        .evaluating_turn(
            Role::FinalJudge.label(),
            Some(group),
            Phase::FinalJudgment,
            None,
            Role::FinalJudge,
            &binding,
            prompt,
            sampling,
            &run.quit,
            None,
        )
        .await;
    let decided = match out {
        Spoken::Evaluated { evaluation, .. } => {
            run.state().judged.insert(group.to_string(), evaluation);
            true
        }
        Spoken::Unparsed { .. } | Spoken::Failed(crate::provider::ProviderError::Cancelled) => false,
        Spoken::Failed(e) => {
            run.fail(format!("final judge: {e}"));
            false
        }
    };
    journey.group(group).judged = Some(decided);
}

/// The final judge's verdict on a group that did not agree, from the pair
/// and the discussion; `None` when it could not be had.
async fn judge_pair(run: &Run, pair: &Pair<'_>, group: &str) -> Option<Label> {
    let history = run.state().histories.get(group).cloned().unwrap_or_default();
    let build = |h: &[HistoryEntry]| {
        let turn = format!(
            "You are the final judge. The evaluators above did not agree. {}\nWeigh their arguments against the two \
             texts themselves, say in a few sentences which arguments hold, then give the verdict. {}",
            pair.criteria_line(&run.panel),
            VERDICT.instructions(),
        );
        vec![
            pair.system(&run.panel),
            ChatMessage::user(pair.discussion(&run.panel, run.item(), group, h)),
            ChatMessage::user(turn),
        ]
    };
    let binding = run.config.bindings.for_role(Role::FinalJudge).clone();
    let turn = crate::engine::runtime::TurnSpec::of_role(
        run,
        Role::FinalJudge,
        &binding,
        Some(group),
        Phase::FinalJudgment,
        &run.quit,
    );
    let prompt = Prompt::discussion(&run.panel, &history, &build);
    match run.verdict_turn(&VERDICT, turn, prompt, None).await {
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
