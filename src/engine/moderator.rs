//! Moderator policies: who speaks next in a debate.

use crate::panel::ModeratorPolicy;
use crate::session::event::Evaluation;

pub struct SpeakerCandidate<'a> {
    pub name: &'a str,
    pub latest: Option<&'a Evaluation>,
    pub turns_spoken: u32,
    pub finished: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub agent: String,
    pub reason: String,
}

pub fn pick(
    policy: ModeratorPolicy,
    candidates: &[SpeakerCandidate<'_>],
    keys: &[String],
    last_speaker: Option<&str>,
    turn_index: u32,
    rng: &mut impl rand::Rng,
) -> Option<Pick> {
    let _ = (policy, keys, last_speaker, turn_index, rng);
    candidates
        .iter()
        .filter(|c| !c.finished)
        .min_by_key(|c| c.turns_spoken)
        .map(|c| Pick { agent: c.name.to_string(), reason: "has spoken least".into() })
}

pub fn parse_moderator_reply(reply: &str, eligible: &[&str], all_agents: &[&str]) -> Result<Pick, String> {
    let _ = all_agents;
    let named: Vec<&&str> = eligible.iter().filter(|n| reply.contains(**n)).collect();
    match named.as_slice() {
        [one] => Ok(Pick { agent: one.to_string(), reason: reply.trim().to_string() }),
        [] => Err("the reply names no eligible agent".into()),
        _ => Err("the reply names several agents".into()),
    }
}
