//! An agent's progress through a session — its latest evaluation, whether it
//! has finished, how often it has spoken — and the rules that move it, in
//! one place: the engine keeps one per agent to run the protocol, and the
//! fold (screens, replays, `sessions show`) one per agent to show it, both
//! changed only through [`AgentProgress::spoke`] and the override rule in
//! [`super::overrides`].

use super::event::{Evaluation, Phase, Scores, TurnKind};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentProgress {
    /// Latest evaluation, a person's overrides applied.
    pub latest: Option<Evaluation>,
    /// The turn the latest evaluation came from.
    pub latest_turn: Option<u64>,
    /// Said `NO MORE COMMENTS` after its first evaluation: it will not be
    /// given the floor again.
    pub finished: bool,
    /// Turns with a reply (a repair request is part of its turn; a failed call is no turn).
    pub turns_spoken: u32,
}

impl AgentProgress {
    /// A reply of the agent was read. `evaluation` is what could be read of
    /// it (none: a parse failure); `done`, whether the reply said it has
    /// nothing more to add.
    pub fn spoke(&mut self, phase: Phase, kind: TurnKind, turn: u64, evaluation: Option<&Evaluation>, done: bool) {
        if kind == TurnKind::Speak {
            self.turns_spoken += 1;
        }
        if let Some(ev) = evaluation {
            match (&mut self.latest, phase) {
                // A score of one dimension (G-Eval) updates that dimension only.
                (Some(latest), Phase::Scoring) => {
                    latest.scores.extend(ev.scores.iter().map(|(k, v)| (k.clone(), *v)));
                    if let Some(w) = &ev.weighted_scores {
                        latest.weighted_scores.get_or_insert_with(Scores::new).extend(w.clone());
                    }
                }
                _ => self.latest = Some(ev.clone()),
            }
            self.latest_turn = Some(turn);
        }
        if (done || evaluation.is_some_and(|e| e.done)) && phase != Phase::Initial {
            self.finished = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finishing_counts_after_the_first_evaluation_and_with_or_without_a_readable_reply() {
        let mut p = AgentProgress::default();
        let ev = Evaluation { overall: Some(3.0), done: true, ..Default::default() };
        p.spoke(Phase::Initial, TurnKind::Speak, 1, Some(&ev), true);
        assert!(!p.finished, "a first evaluation never finishes an agent");
        assert_eq!((p.turns_spoken, p.latest_turn), (1, Some(1)));
        p.spoke(Phase::Debate, TurnKind::Speak, 4, None, true);
        assert!(p.finished, "NO MORE COMMENTS counts in a reply without scores too");
        assert_eq!(p.latest_turn, Some(1), "a parse failure is no evaluation");
        p.spoke(Phase::Debate, TurnKind::Repair, 5, None, false);
        assert_eq!(p.turns_spoken, 2, "a repair request is part of its turn");
    }
}
