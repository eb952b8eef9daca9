//! CollabEval's pairwise mode: the evaluators compare an item's two
//! candidates instead of scoring its content (the shared parts are in
//! [`labels`](crate::engine::labels)). Each gives a label verdict
//! on their own, then they discuss in seeded shuffled rounds, which end when
//! every evaluator's latest label is the same or a round changed nobody's. A
//! group that does not agree is decided by the final judge, or, without a
//! readable judgment, by majority over the evaluators' latest labels (more
//! than half, otherwise tie). Several groups' decisions combine by the same
//! majority rule.

use futures::future::join_all;

use crate::engine::discussion::turns::Ask;
use crate::engine::discussion::{self, Order};
use crate::engine::labels::{self, GroupOutcome, Pair, Talk, Until, VERDICT};
use crate::engine::pairs::label::{DiscussedLabel, Label};
use crate::engine::prompts::HistoryEntry;
use crate::engine::runtime::{Run, Spoken};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::provider::{ChatMessage, ProviderError};
use crate::session::event::{EventKind, Phase, Role};

pub(super) async fn run(run: &Run) {
    let Some(cands) = run.item().candidates.clone() else { return };
    let Some(pair) = Pair::of(run, &cands) else { return };
    labels::first_verdicts(run, &pair).await;
    let outcomes = join_all(run.panel.groups.iter().map(|g| discuss(run, &pair, &g.name))).await;
    if run.quit.is_cancelled() {
        return;
    }
    labels::publish_result(run, &pair, &outcomes);
}

async fn discuss(run: &Run, pair: &Pair<'_>, group: &str) -> GroupOutcome {
    let words = |l: Option<Label>| pair.label_words(l);
    let agreed = |label: Label| GroupOutcome {
        label: Some(label),
        method: "consensus",
        note: format!("{group}: every evaluator agreed: {}.", words(Some(label))),
    };
    if let Some(label) = labels::check(run, group, Some(0)) {
        run.emit_finals(group);
        return agreed(label);
    }
    let mut rounds = Talk::new(run, group, pair, Until::AgreedOrStill, Ask::Discuss);
    discussion::discuss(run, group, &mut rounds, Order::rounds(run, group)).await;
    run.emit_finals(group);
    if let Some(label) = rounds.agreed {
        return agreed(label);
    }
    if !run.stop.is_cancelled()
        && let Some(label) = final_judgment(run, pair, group).await
    {
        let note = format!("{group}: no agreement; the final judge decided: {}.", words(Some(label)));
        return GroupOutcome { label: Some(label), method: "final_judge", note };
    }
    let label = labels::majority(run, group);
    let note = match label {
        Some(_) => {
            format!("{group}: no agreement and no final judgment; majority of the latest verdicts: {}.", words(label))
        }
        None => format!("{group}: no result: no evaluator gave a readable verdict."),
    };
    GroupOutcome { label, method: "majority", note }
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
