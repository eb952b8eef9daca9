//! Rounds in a seeded shuffled order (CollabEval): everyone speaks once a
//! round; a person may move someone who has not spoken yet to the front, or
//! behind the others of the round.

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::announce;
use crate::engine::runtime::Run;
use crate::session::event::{EventKind, Phase, SelectedBy};

/// Open round `round`: its phase marker and its speaking order (shuffled
/// with `rng`, or the panel's order without one).
pub(super) fn start(run: &Run, group: &str, round: u32, rng: Option<&mut ChaCha8Rng>) -> Vec<usize> {
    run.emit(EventKind::PhaseStarted { phase: Phase::Discussion, group: Some(group.to_string()), round: Some(round) });
    let mut order = run.state().group_agents(group);
    if let Some(rng) = rng {
        order.shuffle(rng);
    }
    order
}

/// The next speaker of the round (a person's pick or veto applied), announced
/// and taken off `queue`, which must not be empty.
pub(super) fn take_next(run: &Run, group: &str, round: u32, queue: &mut Vec<usize>, shuffled: bool) -> usize {
    let (by, reason) = apply_human_order(run, group, round, queue, shuffled);
    let index = queue.remove(0);
    let name = run.state().agents[index].name.clone();
    announce(run, group, &name, by, reason, None, None);
    index
}

/// A person's pick or veto for a discussion round, applied to the agents who
/// have not yet spoken in it (`rest`, next speaker first). A pick moves that
/// agent to the front; a veto moves that agent behind the others of the
/// round. A pick or veto that cannot apply is refused with `command_rejected`.
fn apply_human_order(run: &Run, group: &str, round: u32, rest: &mut [usize], shuffled: bool) -> (SelectedBy, String) {
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
        None if shuffled => (SelectedBy::Policy, format!("round {round}: next in the shuffled order{veto_note}")),
        None => (SelectedBy::Policy, format!("round {round}: next in the panel's order{veto_note}")),
    }
}
