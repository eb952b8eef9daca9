//! `judge`: a final judge reads a group's whole discussion and gives the
//! group's decisive evaluation (it replaces the group's vote in the result).

use super::journey::Journey;
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::{Run, Spoken};
use crate::engine::trim::Prompt;
use crate::session::event::{EventKind, Phase, Role};

pub(super) async fn run(run: &Run, group: &str, journey: &Journey) {
    run.emit(EventKind::PhaseStarted { phase: Phase::FinalJudgment, group: Some(group.to_string()), round: None });
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
