//! A moderator's choice of the next speaker (MAJ-EVAL): a person's pick
//! first, then the LLM moderator (re-asked once, then a policy) or a policy,
//! among the members who have not finished, a vetoed one left out.

use rand_chacha::ChaCha8Rng;

use super::announce;
use crate::engine::moderator::{self, SpeakerCandidate};
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::reasons::{self, TableFacts};
use crate::engine::runtime::{Run, Spoken, State, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::SpeakerPick;
use crate::panel::ModeratorPolicy;
use crate::session::event::{EventKind, Phase, Role, SelectedBy};

/// Who speaks next: a person's pick, else the moderator policy.
pub(super) async fn choose(
    run: &Run,
    group: &str,
    policy: ModeratorPolicy,
    rng: &mut ChaCha8Rng,
    last: Option<&str>,
    turn_index: u32,
) -> Option<usize> {
    if let Some(i) = take_human_pick(run, group) {
        return Some(i);
    }
    let mut refused = None;
    let (eligible, vetoed) = {
        let mut st = run.state();
        let veto = st.veto.remove(group);
        let mut eligible: Vec<usize> =
            st.group_agents(group).into_iter().filter(|&i| !st.agents[i].progress.finished).collect();
        let vetoed = match veto {
            Some((v, author)) if eligible.len() > 1 && eligible.iter().any(|&i| st.agents[i].name == v) => {
                eligible.retain(|&i| st.agents[i].name != v);
                Some((v, author))
            }
            Some((v, author)) => {
                let why = if eligible.iter().any(|&i| st.agents[i].name == v) {
                    "is the only member who may still speak"
                } else {
                    "has finished and will not speak again"
                };
                refused = Some((format!("{v} {why}"), author));
                None
            }
            None => None,
        };
        // An LLM moderator does not give the floor straight back to who just
        // spoke (it would answer itself; small models name the same agent
        // every time).
        if policy == ModeratorPolicy::Llm
            && eligible.len() > 1
            && let Some(last) = last
        {
            eligible.retain(|&i| st.agents[i].name != last);
        }
        (eligible, vetoed)
    };
    if let Some((reason, author)) = refused {
        run.reject("veto", reason, &author);
    }
    if eligible.is_empty() {
        return None;
    }
    let veto_note = vetoed.map(|(v, author)| format!(" ({v} vetoed by {author})")).unwrap_or_default();
    if eligible.len() == 1 {
        let name = run.state().agents[eligible[0]].name.clone();
        announce(run, group, &name, SelectedBy::Policy, format!("only {name} may still speak{veto_note}"), None, None);
        return Some(eligible[0]);
    }
    if policy == ModeratorPolicy::Llm {
        let chosen = llm_moderator(run, group, &eligible, rng, last, turn_index, &veto_note).await;
        // A person's pick made while the moderator was thinking wins.
        if let Some(i) = take_human_pick(run, group) {
            return Some(i);
        }
        return chosen;
    }
    let (name, reason) = policy_pick(run, policy, group, &eligible, rng, last, turn_index)?;
    let index = run.state().agent_index(&name)?;
    announce(run, group, &name, SelectedBy::Policy, format!("{reason}{veto_note}"), None, None);
    Some(index)
}

fn take_human_pick(run: &Run, group: &str) -> Option<usize> {
    let (index, name, author) = {
        let mut st = run.state();
        let (agent, author) = st.pending_pick.remove(group)?;
        let i = st.agent_index(&agent)?;
        if st.agents[i].progress.finished {
            drop(st);
            run.reject("speaker", format!("{agent} has finished and will not speak again"), &author);
            return None;
        }
        (i, agent, author)
    };
    announce(run, group, &name, SelectedBy::Human, format!("chosen by {author}"), None, None);
    Some(index)
}

fn policy_pick(
    run: &Run,
    policy: ModeratorPolicy,
    group: &str,
    eligible: &[usize],
    rng: &mut ChaCha8Rng,
    last: Option<&str>,
    turn_index: u32,
) -> Option<(String, String)> {
    let st = run.state();
    let candidates = candidates(&st, group, eligible);
    moderator::pick(policy, &candidates, &run.keys, last, turn_index, rng).map(|p| (p.agent, p.reason))
}

/// Every member of `group` as a candidate, in panel order; one not in
/// `eligible` (finished, vetoed, or the last speaker an LLM moderator may
/// not choose) counts as finished, so it is not chosen but its scores count
/// among the group's.
fn candidates<'a>(st: &'a State, group: &str, eligible: &[usize]) -> Vec<SpeakerCandidate<'a>> {
    st.group_agents(group)
        .into_iter()
        .map(|i| {
            let a = &st.agents[i];
            SpeakerCandidate {
                name: &a.name,
                latest: a.progress.latest.as_ref(),
                turns_spoken: a.progress.turns_spoken,
                finished: a.progress.finished || !eligible.contains(&i),
            }
        })
        .collect()
}

/// Ask the LLM moderator; re-ask once with the reason a reply failed (no
/// usable name, or, under `reasons = "checked"`, a reason that claims what
/// the scores table does not show), then fall back to `disagreement`.
async fn llm_moderator(
    run: &Run,
    group: &str,
    eligible: &[usize],
    rng: &mut ChaCha8Rng,
    last: Option<&str>,
    turn_index: u32,
    veto_note: &str,
) -> Option<usize> {
    let checked = !run.panel.protocol.has("reasons", "as-given");
    let (names, all, table, standings, facts, history) = {
        let st = run.state();
        let names: Vec<String> = eligible.iter().map(|&i| st.agents[i].name.clone()).collect();
        let members = st.group_agents(group);
        let all: Vec<String> = members.iter().map(|&i| st.agents[i].name.clone()).collect();
        let rows: Vec<prompts::ScoresRow<'_>> = members
            .iter()
            .map(|&i| {
                let a = &st.agents[i];
                prompts::ScoresRow {
                    agent: &a.name,
                    latest: a.progress.latest.as_ref(),
                    turns: a.progress.turns_spoken,
                    finished: a.progress.finished,
                }
            })
            .collect();
        let table = prompts::scores_table(&run.panel, &rows);
        let standings = if checked {
            let members = candidates(&st, group, eligible);
            let lines: Vec<String> =
                members.iter().filter(|c| !c.finished).map(|c| moderator::standing(c, &members, &run.keys)).collect();
            prompts::standings(&lines)
        } else {
            String::new()
        };
        let history = st.histories[group].clone();
        let facts = TableFacts {
            group: group.to_string(),
            rows: rows.iter().map(|r| (r.agent.to_string(), prompts::score_row(&run.panel, r.latest))).collect(),
            keys: run.panel.score_keys(),
            last: prompts::last_to_speak(&history).map(str::to_string),
            outsiders: st.agents.iter().filter(|a| a.group != group).map(|a| a.name.clone()).collect(),
        };
        (names, all, table, standings, facts, history)
    };
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let build =
        |h: &[HistoryEntry]| prompts::moderator_messages(&run.panel, group, run.item(), h, &table, &standings, &refs);
    let all_refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let binding = run.config.bindings.for_role(Role::Moderator).clone();
    let turn = TurnSpec::of_role(run, Role::Moderator, &binding, Some(group), Phase::Debate, &run.stop);
    // A pick is a name and a sentence.
    let turn = TurnSpec { sampling: (turn.sampling.0, turn.sampling.1.min(200)), ..turn };
    let verdict =
        SpeakerPick { eligible: &refs, all: &all_refs, facts: checked.then_some(&facts), standings: &standings };
    // Asked once more with the reason when a reply names nobody who may speak.
    let (failure, raw) =
        match run.verdict_turn(&verdict, turn, Prompt::discussion(&run.panel, &history, &build), None).await {
            Spoken::Evaluated { evaluation: choice, text, .. } => {
                let index = run.state().agent_index(&choice.pick.agent)?;
                let raw = if choice.raw == text { text } else { format!("{text}\n---\n{}", choice.raw) };
                let reason = format!("{}{veto_note}", choice.pick.reason);
                announce(run, group, &choice.pick.agent, SelectedBy::Moderator, reason, Some(raw), None);
                return Some(index);
            }
            Spoken::Failed(crate::provider::ProviderError::Cancelled) => return None,
            Spoken::Failed(e) => (format!("the moderator call failed: {e}"), None),
            Spoken::Unparsed { text, error, .. } => (error, Some(text)),
        };
    let (name, reason) = policy_pick(run, ModeratorPolicy::Disagreement, group, eligible, rng, last, turn_index)?;
    let index = run.state().agent_index(&name)?;
    let replaced = reasons::mismatch(&failure).map(str::to_string);
    let why = match &replaced {
        Some(claim) => format!("the moderator's reason did not match its scores table ({claim})"),
        None => format!("moderator reply unusable ({failure})"),
    };
    run.emit(EventKind::SpeakerSelected {
        group: group.to_string(),
        agent: name,
        by: SelectedBy::Policy,
        reason: format!("{why}; {reason}{veto_note}"),
        raw,
        fallback: Some(ModeratorPolicy::Disagreement.as_str().to_string()),
        reason_replaced: replaced,
    });
    Some(index)
}
