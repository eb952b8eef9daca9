//! A simultaneous round (ChatEval): every member who has not finished speaks
//! at once, each seeing only what was said before the round; their words
//! join the group's history when all have spoken, in the panel's order. A
//! person's comment made during the round is seen in the next one; a pick
//! or veto has no place (nobody waits for the floor) and is refused.

use futures::future::join_all;

use super::{Floor, Turn, announce};
use crate::engine::prompts::HistoryEntry;
use crate::engine::runtime::{Run, Spoken};
use crate::engine::trim::Prompt;
use crate::session::event::{EventKind, SelectedBy};

/// Run round `round` of `group`; false when the discussion must end (turns
/// keep failing, or nobody is left to speak).
pub(super) async fn round<F: Floor>(run: &Run, group: &str, floor: &mut F, round: u32, failures: &mut u32) -> bool {
    refuse_picks(run, group);
    let (members, history) = {
        let st = run.state();
        let members: Vec<usize> =
            st.group_agents(group).into_iter().filter(|&i| !st.agents[i].progress.finished).collect();
        (members, st.histories.get(group).cloned().unwrap_or_default())
    };
    if members.is_empty() {
        return false;
    }
    run.emit(EventKind::PhaseStarted { phase: floor.phase(), group: Some(group.to_string()), round: Some(round) });
    for &i in &members {
        let name = run.state().agents[i].name.clone();
        announce(run, group, &name, SelectedBy::Policy, format!("round {round}: everyone speaks at once"), None, None);
    }
    let shared: &F = floor;
    let calls = members.iter().map(|&index| {
        let history = &history;
        async move {
            let (spec, latest) = {
                let st = run.state();
                let a = &st.agents[index];
                (a.spec.clone(), a.progress.latest.clone())
            };
            let turn = Turn {
                panel: &run.panel,
                item: run.item(),
                group,
                speaker: &spec,
                latest: latest.as_ref(),
                round: Some(round),
            };
            let build = |h: &[HistoryEntry]| shared.messages(&turn, h);
            let prompt = Prompt::discussion(&run.panel, history, &build);
            let mut earlier = super::earlier_for(run, index);
            earlier.extend(history);
            let spoken = super::speak(run, shared, index, Some(round), prompt, None, &earlier).await;
            (index, latest, spoken)
        }
    });
    let results = join_all(calls).await;
    let mut spoke = false;
    for (index, latest, spoken) in results {
        let name = run.state().agents[index].name.clone();
        let changed = match spoken {
            Spoken::Failed(e) => {
                if run.on_turn_error(&name, &e, failures) {
                    return false;
                }
                continue;
            }
            Spoken::Evaluated { evaluation, text, .. } => {
                let changed = latest.as_ref().map(|b| super::moved(b, &evaluation));
                let entry =
                    HistoryEntry::Speech { agent: name, round: Some(round), text, evaluation: Some(evaluation) };
                run.push_history(group, entry);
                Some(changed.unwrap_or(true))
            }
            Spoken::Unparsed { text, .. } => {
                run.push_history(
                    group,
                    HistoryEntry::Speech { agent: name, round: Some(round), text, evaluation: None },
                );
                None
            }
        };
        spoke = true;
        *failures = 0;
        floor.after_turn(run, group, changed);
    }
    spoke || !run.stop.is_cancelled()
}

/// A pick or veto made for a group that speaks all at once: refused, named.
fn refuse_picks(run: &Run, group: &str) {
    let (pick, veto) = {
        let mut st = run.state();
        (st.pending_pick.remove(group), st.veto.remove(group))
    };
    let why = "everyone speaks at once in a simultaneous round: there is no next speaker to choose";
    if let Some((_, author)) = pick {
        run.reject("speaker", why.to_string(), &author);
    }
    if let Some((_, author)) = veto {
        run.reject("veto", why.to_string(), &author);
    }
}
