//! `assess`: every member judges every dimension G-Eval style (its
//! definition, its evaluation steps, reasoning, then a score, or a label
//! for a dimension with `labels`), in one request, or (`per_aspect`) one
//! request per dimension in turn (SAGEval's evaluator). What each member
//! said about each dimension goes to the `review` stage.

pub(crate) mod prompts;
pub(crate) mod verdicts;

use std::collections::BTreeMap;

use futures::future::join_all;

use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::panel::Dimension;
use crate::panel::composition::Stage;
use crate::provider::ProviderError;
use crate::session::event::{Evaluation, EventKind, Phase, Role, TurnKind};
use verdicts::{AspectScores, Assessed};

/// Each member's assessment with the turn that gave it (none where no reply could be read).
pub(crate) type Assessments = Vec<Option<(Assessed, u64)>>;

/// Every member's assessment, once the evaluation steps are fixed.
pub(super) async fn run(run: &Run, stage: &Stage) -> Assessments {
    if !run.gate().await {
        return Vec::new();
    }
    let steps = super::steps::start_scoring(run);
    evaluate(run, &steps, stage.flag("per_aspect")).await
}

/// Every evaluator judges every aspect: in one turn, or (`per_aspect`) in
/// one turn per aspect, one after the other.
async fn evaluate(run: &Run, steps: &BTreeMap<String, String>, per_aspect: bool) -> Assessments {
    run.emit(EventKind::PhaseStarted { phase: Phase::Initial, group: None, round: None });
    let count = run.state().agents.len();
    let calls = (0..count).map(|i| async move {
        if !per_aspect {
            return judge(run, i, steps, &run.panel.dimensions, None).await.read();
        }
        let mut so_far: Option<(Assessed, u64)> = None;
        for d in &run.panel.dimensions {
            let before = so_far.as_ref().map(|(a, _)| &a.evaluation);
            match judge(run, i, steps, std::slice::from_ref(d), before).await {
                Judged::Read(one, turn) => {
                    so_far = Some(match so_far {
                        Some((all, _)) => (all.with(*one, &run.panel), turn),
                        None => (*one, turn),
                    });
                }
                Judged::Unread => {}
                Judged::Stopped => break,
            }
        }
        so_far
    });
    join_all(calls).await
}

/// What one evaluator turn came to.
enum Judged {
    Read(Box<Assessed>, u64),
    /// No readable value (a parse failure, or a failure worth going on after).
    Unread,
    /// The run is stopping, or failed.
    Stopped,
}

impl Judged {
    fn read(self) -> Option<(Assessed, u64)> {
        match self {
            Judged::Read(a, turn) => Some((*a, turn)),
            _ => None,
        }
    }
}

/// Evaluator `i` judges `aspects` in one turn; `so_far` holds its values of
/// the aspects it judged before (one turn per aspect), recorded with this
/// turn's.
async fn judge(
    run: &Run,
    i: usize,
    steps: &BTreeMap<String, String>,
    aspects: &[Dimension],
    so_far: Option<&Evaluation>,
) -> Judged {
    if !run.gate().await {
        return Judged::Stopped;
    }
    let (name, group, spec) = {
        let st = run.state();
        let a = &st.agents[i];
        (a.name.clone(), a.group.clone(), a.spec.clone())
    };
    let binding = run.config.bindings.for_agent(&name).clone();
    let verdict = AspectScores { panel: &run.panel, aspects, so_far };
    let messages = prompts::evaluate_messages(&run.panel, run.item(), &spec, steps, aspects, &verdict_text(&verdict));
    let one = match aspects {
        [d] => Some(d.key.as_str()),
        _ => None,
    };
    let turn = TurnSpec {
        participant: &name,
        group: Some(&group),
        phase: Phase::Initial,
        round: None,
        role: Role::Agent,
        binding: &binding,
        sampling: run.agent_sampling(&spec),
        cancel: &run.stop,
        dimension: one,
        pair: None,
    };
    match run.verdict_turn(&verdict, turn, Prompt::fixed(messages), None).await {
        Spoken::Evaluated { evaluation, turn, .. } => {
            let recorded = verdict.evaluation(&evaluation).unwrap_or_else(|| evaluation.evaluation.clone());
            let mut st = run.state();
            let a = &mut st.agents[i];
            a.initial = Some(recorded.clone());
            a.own = Some(recorded.clone());
            a.progress.spoke(Phase::Initial, TurnKind::Speak, turn, Some(&recorded), false);
            let evaluation = Assessed { turns: aspects.iter().map(|d| (d.key.clone(), turn)).collect(), ..evaluation };
            Judged::Read(Box::new(evaluation), turn)
        }
        Spoken::Unparsed { .. } => Judged::Unread,
        Spoken::Failed(ProviderError::Cancelled) => Judged::Stopped,
        Spoken::Failed(e) if !e.is_retryable() => {
            run.fail(format!("{name}: {e}"));
            Judged::Stopped
        }
        Spoken::Failed(_) => Judged::Unread,
    }
}

fn verdict_text<V: crate::engine::verdict::Verdict>(v: &V) -> String {
    v.instructions()
}
