//! CollabEval: initial evaluations with confidence, consensus checks, rounds
//! of discussion in a seeded shuffled order, and a final judge when the
//! evaluators do not converge.

use futures::future::join_all;
use rand::seq::SliceRandom;

use super::initial_phase;
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::{Run, Spoken, eval_scores};
use crate::engine::trim::Prompt;
use crate::session::event::{EventKind, Phase, Role, Scores, SelectedBy};

/// How a group's discussion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Consensus,
    Judged,
    Mean,
}

pub(crate) async fn run(run: &Run) {
    initial_phase(run, true).await;
    let outcomes = join_all(run.panel.groups.iter().map(|g| discuss(run, &g.name))).await;
    if run.quit.is_cancelled() {
        return;
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let mut notes = Vec::new();
    for (g, outcome) in run.panel.groups.iter().zip(outcomes) {
        let (method, note) = match outcome {
            Outcome::Consensus => ("consensus", format!("{}: consensus reached.", g.name)),
            Outcome::Judged => {
                let why =
                    run.state().judged.get(&g.name).map(|e| e.justification.trim().to_string()).unwrap_or_default();
                ("final_judge", format!("{}: no consensus; the final judge decided. {why}", g.name))
            }
            Outcome::Mean => {
                ("mean", format!("{}: no consensus and no final judgment; mean of the latest evaluations.", g.name))
            }
        };
        let empty = run.base_result(&run.state(), Some(&g.name)).is_empty();
        let note = if empty { format!("{}: no result: no readable evaluation.", g.name) } else { note };
        run.emit_aggregate(Some(&g.name), note.clone(), method);
        notes.push(note);
    }
    let method = if run.panel.groups.len() == 1 {
        run.state()
            .aggregates
            .get(&Some(run.panel.groups[0].name.clone()))
            .map(|a| a.method.clone())
            .unwrap_or_default()
    } else {
        "mean".to_string()
    };
    run.emit_aggregate(None, notes.join("\n"), &method);
    run.state().finished = true;
}

fn snapshot(run: &Run, group: &str) -> std::collections::BTreeMap<String, Scores> {
    let st = run.state();
    st.agents
        .iter()
        .filter(|a| a.group == group)
        .map(|a| (a.name.clone(), a.latest.as_ref().map(eval_scores).unwrap_or_default()))
        .collect()
}

async fn discuss(run: &Run, group: &str) -> Outcome {
    if run.check_consensus(group, Some(0)) {
        run.emit_finals(group);
        return Outcome::Consensus;
    }
    let mut rng = run.rng(&format!("rounds/{group}"));
    let mut previous = snapshot(run, group);
    let mut failures = 0;
    let mut reached = false;
    'rounds: for round in 1..=run.panel.consensus.max_rounds {
        if run.stop.is_cancelled() {
            break;
        }
        run.emit(EventKind::PhaseStarted {
            phase: Phase::Discussion,
            group: Some(group.to_string()),
            round: Some(round),
        });
        let mut order = run.state().group_agents(group);
        order.shuffle(&mut rng);
        let mut pos = 0;
        while pos < order.len() {
            if !run.gate().await {
                break 'rounds;
            }
            let (by, reason) = apply_human_order(run, group, round, &mut order[pos..]);
            let index = order[pos];
            pos += 1;
            let (name, spec, history) = {
                let st = run.state();
                let a = &st.agents[index];
                (a.name.clone(), a.spec.clone(), st.histories[group].clone())
            };
            let build =
                |h: &[HistoryEntry]| prompts::discussion_messages(&run.panel, group, &spec, run.item(), h, round);
            let ahead =
                |so_far: &str| prompts::discussion_ahead(&run.panel, run.item(), group, &history, &name, round, so_far);
            run.emit(EventKind::SpeakerSelected {
                group: group.to_string(),
                agent: name.clone(),
                by,
                reason,
                raw: None,
                fallback: None,
            });
            let prompt = Prompt::discussion(&history, &build);
            match run.agent_turn(index, Phase::Discussion, Some(round), prompt, &run.stop, Some(&ahead)).await {
                Spoken::Failed(e) => {
                    if run.on_turn_error(&name, &e, &mut failures) {
                        break 'rounds;
                    }
                }
                Spoken::Evaluated { evaluation, text, .. } => {
                    failures = 0;
                    run.push_history(
                        group,
                        HistoryEntry::Speech { agent: name, round: Some(round), text, evaluation: Some(evaluation) },
                    );
                }
                Spoken::Unparsed { text, .. } => {
                    failures = 0;
                    run.push_history(
                        group,
                        HistoryEntry::Speech { agent: name, round: Some(round), text, evaluation: None },
                    );
                }
            }
        }
        if run.check_consensus(group, Some(round)) {
            reached = true;
            break;
        }
        let now = snapshot(run, group);
        if now == previous {
            break;
        }
        previous = now;
    }
    run.emit_finals(group);
    if reached {
        return Outcome::Consensus;
    }
    if run.stop.is_cancelled() {
        return Outcome::Mean;
    }
    final_judgment(run, group).await
}

/// A person's pick or veto for a discussion round, applied to the agents who
/// have not yet spoken in it (`rest`, next speaker first). A pick moves that
/// agent to the front; a veto moves that agent behind the others of the
/// round. A pick or veto that cannot apply is refused with `command_rejected`.
fn apply_human_order(run: &Run, group: &str, round: u32, rest: &mut [usize]) -> (SelectedBy, String) {
    let (pick, veto, mut names) = {
        let mut st = run.state();
        let pick = st.pending_pick.remove(group);
        let veto = st.veto.remove(group);
        let names: Vec<String> = rest.iter().map(|&i| st.agents[i].name.clone()).collect();
        (pick, veto, names)
    };
    let mut picked = None;
    if let Some((agent, author)) = pick {
        match names.iter().position(|n| *n == agent) {
            Some(k) => {
                rest[..=k].rotate_right(1);
                names[..=k].rotate_right(1);
                picked = Some((agent, author));
            }
            None => run.reject(
                "speaker",
                format!("{agent} has already spoken in round {round}; a pick applies to who has not spoken yet"),
                &author,
            ),
        }
    }
    let mut veto_note = String::new();
    if let Some((agent, author)) = veto {
        match names.iter().position(|n| *n == agent) {
            _ if picked.as_ref().is_some_and(|(p, _)| *p == agent) => {
                run.reject("veto", format!("{agent} was chosen to speak next by a person"), &author)
            }
            None => run.reject("veto", format!("{agent} has already spoken in round {round}"), &author),
            Some(k) if k + 1 == rest.len() => {
                run.reject("veto", format!("{agent} is already the last to speak in round {round}"), &author)
            }
            Some(k) => {
                rest[k..].rotate_left(1);
                veto_note = format!(" ({agent} vetoed by {author}: speaks last this round)");
            }
        }
    }
    match picked {
        Some((_, author)) => (SelectedBy::Human, format!("chosen by {author}{veto_note}")),
        None => (SelectedBy::Policy, format!("round {round}: next in the shuffled order{veto_note}")),
    }
}

async fn final_judgment(run: &Run, group: &str) -> Outcome {
    run.emit(EventKind::PhaseStarted { phase: Phase::FinalJudgment, group: Some(group.to_string()), round: None });
    let history = run.state().histories[group].clone();
    let build = |h: &[HistoryEntry]| prompts::final_judge_messages(&run.panel, run.item(), h);
    let binding = run.config.bindings.for_role(Role::FinalJudge).clone();
    let sampling = run.role_sampling(Role::FinalJudge);
    let out = run
        .evaluating_turn(
            Role::FinalJudge.label(),
            Some(group),
            Phase::FinalJudgment,
            None,
            Role::FinalJudge,
            &binding,
            Prompt::discussion(&history, &build),
            sampling,
            &run.quit,
            None,
        )
        .await;
    match out {
        Spoken::Evaluated { evaluation, .. } => {
            run.state().judged.insert(group.to_string(), evaluation);
            Outcome::Judged
        }
        Spoken::Unparsed { .. } => Outcome::Mean,
        Spoken::Failed(crate::provider::ProviderError::Cancelled) => Outcome::Mean,
        Spoken::Failed(e) => {
            run.fail(format!("final judge: {e}"));
            Outcome::Mean
        }
    }
}
