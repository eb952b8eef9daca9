//! `verify`: a verifier checks each member's latest evaluation against the
//! item, the rubric and (where the run wrote them) the evaluation steps,
//! keeping each score it finds right and correcting the others; the
//! verified evaluation becomes the member's final one. A member whose
//! verification brings no readable evaluation keeps its own, and the
//! aggregate's account says how many were checked and changed.

mod prompts;

use super::journey::Journey;
use crate::engine::runtime::{Run, Spoken};
use crate::engine::trim::Prompt;
use crate::provider::ProviderError;
use crate::session::event::{EventKind, Phase, Role};

pub(super) async fn run(run: &Run, group: &str, journey: &Journey) {
    run.emit(EventKind::PhaseStarted { phase: Phase::Verification, group: Some(group.to_string()), round: None });
    let members: Vec<usize> = {
        let st = run.state();
        st.group_agents(group).into_iter().filter(|&i| st.agents[i].progress.latest.is_some()).collect()
    };
    let binding = run.config.bindings.for_role(Role::Verifier).clone();
    let sampling = run.role_sampling(Role::Verifier);
    let (mut checked, mut changed) = (0, 0);
    for index in members {
        if !run.gate().await {
            break;
        }
        let (name, evaluation, steps) = {
            let st = run.state();
            let a = &st.agents[index];
            (a.name.clone(), a.progress.latest.clone(), st.steps.clone())
        };
        let Some(evaluation) = evaluation else { continue };
        let messages = prompts::verify_messages(&run.panel, run.item(), &name, &evaluation, &steps);
        let participant = format!("{} ({name})", Role::Verifier.label());
        let out = run
            .evaluating_turn(
                &participant,
                Some(group),
                Phase::Verification,
                None,
                Role::Verifier,
                &binding,
                Prompt::fixed(messages),
                sampling,
                &run.stop,
                None,
            )
            .await;
        match out {
            Spoken::Evaluated { evaluation: verified, turn, .. } => {
                checked += 1;
                let moved = verified.scores != evaluation.scores;
                if moved {
                    changed += 1;
                }
                let mut st = run.state();
                let a = &mut st.agents[index];
                a.own = Some(verified.clone());
                a.progress.latest = Some(verified);
                a.progress.latest_turn = Some(turn);
            }
            Spoken::Unparsed { .. } | Spoken::Failed(ProviderError::Cancelled) => {}
            Spoken::Failed(e) => {
                let mut failures = 0;
                if run.on_turn_error(&participant, &e, &mut failures) {
                    break;
                }
            }
        }
    }
    let mut path = journey.group(group);
    path.verified = Some((changed, checked));
    path.finals_recorded = false;
}
