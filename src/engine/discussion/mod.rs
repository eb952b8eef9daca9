//! One discussion loop for every protocol whose agents take the floor in
//! turn: who speaks next is a strategy ([`Order`]: a moderator — an LLM or a
//! policy — or seeded shuffled rounds), and a person's pick, veto, comment,
//! pause, step and stop are applied here, once, the same way for every
//! protocol. What a protocol adds — its prompts, what happens after a turn
//! and at the end of a round — is its [`Floor`]. [`turns`] holds the turns
//! ChatEval and the round-table share.

mod moderated;
mod rounds;
mod simultaneous;
pub(crate) mod turns;

use rand_chacha::ChaCha8Rng;

use super::pairs::label::DiscussedLabel;
use super::prompts::HistoryEntry;
use super::repeats::Earlier;
use super::runtime::{RepeatCheck, Run, Spoken};
use super::trim::Prompt;
use crate::item::Item;
use crate::panel::{AgentSpec, ModeratorPolicy, Panel};
use crate::provider::ChatMessage;
use crate::session::event::{Evaluation, EventKind, Phase, SelectedBy};

/// Who takes the floor, in which group and round: what a turn's request is built from.
pub(crate) struct Turn<'a> {
    pub panel: &'a Panel,
    pub item: &'a Item,
    pub group: &'a str,
    pub speaker: &'a AgentSpec,
    /// The speaker's latest evaluation.
    pub latest: Option<&'a Evaluation>,
    pub round: Option<u32>,
}

/// What a protocol says about its discussion.
pub(crate) trait Floor: Sync {
    /// The phase of the discussion's turns.
    fn phase(&self) -> Phase;
    /// The request of a speaker's turn, given the group's history (perhaps shortened to fit).
    fn messages(&self, turn: &Turn<'_>, history: &[HistoryEntry]) -> Vec<ChatMessage>;
    /// What the group's next request will start with, given the history
    /// before this turn and the reply streaming now.
    fn ahead(&self, turn: &Turn<'_>, history: &[HistoryEntry], so_far: &str) -> Vec<ChatMessage>;
    /// The words a speaker's reply begins with, if the floor sets them (see
    /// [`ChatRequest::opening`](crate::provider::ChatRequest::opening)).
    fn opening(&self, _turn: &Turn<'_>, _history: &[HistoryEntry]) -> Option<String> {
        None
    }
    /// The label verdict the speakers give instead of the panel's scores (CollabEval's pairwise mode).
    fn label_verdict(&self) -> Option<&DiscussedLabel<'_>> {
        None
    }
    /// After a turn; `changed` says whether the speaker's result moved (`None`: no readable evaluation).
    fn after_turn(&mut self, _run: &Run, _group: &str, _changed: Option<bool>) {}
    /// At the end of a round; false ends the discussion.
    fn end_of_round(&mut self, _run: &Run, _group: &str, _round: u32) -> bool {
        true
    }
    /// Whether the group came to agree (an agreement ends the discussion).
    fn agreed(&self) -> bool {
        false
    }
}

/// How the next speaker of a group is chosen.
pub(crate) enum Order {
    /// A moderator picks each next speaker among the members who have not
    /// finished, for at most `max_turns` turns.
    Moderated { policy: ModeratorPolicy, max_turns: u32, rng: ChaCha8Rng, last: Option<String>, turns: u32 },
    /// Rounds of `max_rounds`: every member speaks once a round, in a seeded
    /// shuffled order (or the panel's order when `shuffle` is false); `queue`
    /// holds who has not spoken in `round` yet, and `ended` whether the floor
    /// has heard that the round is over. With `reshuffle` false every round
    /// takes the first round's shuffled order.
    Rounds {
        max_rounds: u32,
        rng: ChaCha8Rng,
        round: u32,
        queue: Vec<usize>,
        ended: bool,
        shuffle: bool,
        reshuffle: bool,
    },
    /// Rounds `next..=last` in which every member who has not finished speaks
    /// at once, each seeing only what was said before the round.
    Simultaneous { next: u32, last: u32 },
}

impl Order {
    pub fn moderated(run: &Run, group: &str) -> Self {
        let m = &run.panel.moderator;
        Order::Moderated {
            policy: m.policy,
            max_turns: m.max_turns,
            rng: run.rng(&format!("moderator/{group}")),
            last: None,
            turns: 0,
        }
    }
    /// `max_rounds` rounds, shuffled (seeded) or in the panel's order.
    pub fn rounds_of(run: &Run, group: &str, max_rounds: u32, shuffle: bool) -> Self {
        Order::Rounds {
            max_rounds,
            rng: run.rng(&format!("rounds/{group}")),
            round: 0,
            queue: Vec::new(),
            ended: true,
            shuffle,
            reshuffle: true,
        }
    }
    /// `max_rounds` rounds in one seeded shuffled order, drawn once.
    pub fn rounds_shuffled_once(run: &Run, group: &str, max_rounds: u32) -> Self {
        let mut order = Self::rounds_of(run, group, max_rounds, true);
        if let Order::Rounds { reshuffle, .. } = &mut order {
            *reshuffle = false;
        }
        order
    }
    /// Simultaneous rounds `first..=last`.
    pub fn simultaneous(first: u32, last: u32) -> Self {
        Order::Simultaneous { next: first, last }
    }
}

impl Order {
    /// The round that just ended, once: everyone has spoken in it.
    fn round_over(&mut self) -> Option<u32> {
        match self {
            Order::Rounds { round, queue, ended, .. } if queue.is_empty() && !*ended => {
                *ended = true;
                Some(*round)
            }
            _ => None,
        }
    }

    /// Nobody will speak again: the turns are used up, every member has
    /// finished, or the last round is over.
    fn exhausted(&self, run: &Run, group: &str) -> bool {
        match self {
            Order::Moderated { max_turns, turns, .. } => {
                let st = run.state();
                *turns >= *max_turns || st.group_agents(group).iter().all(|&i| st.agents[i].progress.finished)
            }
            Order::Rounds { max_rounds, round, queue, ended, .. } => {
                *ended && queue.is_empty() && *round >= *max_rounds
            }
            Order::Simultaneous { next, last } => *next > *last,
        }
    }
}

/// Run a group's discussion to its end: the order runs out, the floor ends
/// it, a person stops it, or turns keep failing.
pub(crate) async fn discuss<F: Floor>(run: &Run, group: &str, floor: &mut F, mut order: Order) {
    let mut failures = 0;
    // The group's contributions as the repeat rule reads them, kept as its history grows.
    let mut earlier: Option<Earlier> = None;
    loop {
        if run.stop.is_cancelled() {
            break;
        }
        // A round's end is no turn: it passes the pause gate without using a step.
        if let Some(round) = order.round_over() {
            if floor.end_of_round(run, group, round) {
                continue;
            }
            break;
        }
        if order.exhausted(run, group) || !run.gate().await {
            break;
        }
        if let Order::Simultaneous { next, .. } = &mut order {
            let round = *next;
            *next += 1;
            if !simultaneous::round(run, group, floor, round, &mut failures).await
                || !floor.end_of_round(run, group, round)
            {
                break;
            }
            continue;
        }
        let Some((index, round)) = next(run, group, &mut order).await else { break };
        let (name, spec, latest, history) = {
            let st = run.state();
            let a = &st.agents[index];
            (a.name.clone(), a.spec.clone(), a.progress.latest.clone(), st.histories[group].clone())
        };
        let turn = Turn { panel: &run.panel, item: run.item(), group, speaker: &spec, latest: latest.as_ref(), round };
        let build = |h: &[HistoryEntry]| floor.messages(&turn, h);
        let ahead = |so_far: &str| floor.ahead(&turn, &history, so_far);
        let prompt = Prompt::discussion(&run.panel, &history, &build).opening(floor.opening(&turn, &history));
        let earlier = earlier.get_or_insert_with(|| earlier_for(run, index));
        earlier.extend(&history);
        let spoken = speak(run, floor, index, round, prompt, Some(&ahead), earlier).await;
        if let Order::Moderated { last, .. } = &mut order {
            *last = Some(name.clone());
        }
        let changed = match spoken {
            Spoken::Failed(e) => {
                if run.on_turn_error(&name, &e, &mut failures) {
                    break;
                }
                continue;
            }
            Spoken::Evaluated { evaluation, text, .. } => {
                let changed = latest.as_ref().map(|b| moved(b, &evaluation));
                let entry = HistoryEntry::Speech { agent: name.clone(), round, text, evaluation: Some(evaluation) };
                run.push_history(group, entry);
                Some(changed.unwrap_or(true))
            }
            Spoken::Unparsed { text, .. } => {
                run.push_history(group, HistoryEntry::Speech { agent: name.clone(), round, text, evaluation: None });
                None
            }
        };
        failures = 0;
        floor.after_turn(run, group, changed);
    }
}

/// The names of the members of agent `index`'s group.
fn group_names(run: &Run, index: usize) -> Vec<String> {
    let st = run.state();
    st.group_agents(&st.agents[index].group).into_iter().map(|i| st.agents[i].name.clone()).collect()
}

/// [`Earlier::new`] for agent `index`'s group.
fn earlier_for(run: &Run, index: usize) -> Earlier {
    let names = group_names(run, index);
    Earlier::new(&names.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A speaker's turn, asking for the floor's verdict: a speech checked
/// against the group's contributions before it (see [`crate::engine::repeats`]).
async fn speak<F: Floor>(
    run: &Run,
    floor: &F,
    index: usize,
    round: Option<u32>,
    prompt: Prompt<'_>,
    ahead: Option<crate::engine::runtime::ReadAhead<'_>>,
    earlier: &Earlier,
) -> Spoken {
    let redraw = redraws(&run.panel);
    let redraw_misquotes = !run.panel.protocol.has("quotes", "keep");
    let check = Some(RepeatCheck { earlier, redraw, redraw_misquotes, guard: redraw, note: None, strict: None });
    let (phase, stop) = (floor.phase(), &run.stop);
    match floor.label_verdict() {
        Some(v) => run.agent_verdict_turn(v, index, phase, round, prompt, stop, ahead, check).await,
        None => run.agent_verdict_turn(&run.panel_scores(), index, phase, round, prompt, stop, ahead, check).await,
    }
}

/// Whether a speech that repeats an earlier one is asked for once more
/// (the protocol's `repeats` setting); it is recorded as repeating either way.
/// The same setting turns the embedded model's copy guard on.
pub(crate) fn redraws(panel: &Panel) -> bool {
    !panel.protocol.has("repeats", "keep")
}

/// Whether a speaker's result moved from `before` to `now`.
fn moved(before: &Evaluation, now: &Evaluation) -> bool {
    before.scores != now.scores || before.overall != now.overall || before.label != now.label
}

/// The next speaker (announced) and the round, if anyone is to speak.
async fn next(run: &Run, group: &str, order: &mut Order) -> Option<(usize, Option<u32>)> {
    match order {
        Order::Moderated { policy, max_turns, rng, last, turns } => {
            if *turns >= *max_turns {
                return None;
            }
            let index = moderated::choose(run, group, *policy, rng, last.as_deref(), *turns).await?;
            *turns += 1;
            Some((index, None))
        }
        Order::Rounds { max_rounds, rng, round, queue, ended, shuffle, reshuffle } => {
            if queue.is_empty() {
                if *round >= *max_rounds {
                    return None;
                }
                *round += 1;
                *ended = false;
                // Drawn from a copy, the order comes out the same every round.
                let mut once = rng.clone();
                let rng = if *reshuffle { rng } else { &mut once };
                *queue = rounds::start(run, group, *round, shuffle.then_some(rng));
            }
            let index = rounds::take_next(run, group, *round, queue, *shuffle);
            Some((index, Some(*round)))
        }
        Order::Simultaneous { .. } => None,
    }
}

/// Record who takes the floor and why.
pub(crate) fn announce(
    run: &Run,
    group: &str,
    agent: &str,
    by: SelectedBy,
    reason: String,
    raw: Option<String>,
    fallback: Option<String>,
) {
    run.emit(EventKind::SpeakerSelected {
        group: group.to_string(),
        agent: agent.to_string(),
        by,
        reason,
        raw,
        fallback,
        reason_replaced: None,
    });
}
