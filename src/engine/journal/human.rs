//! A person's actions in a log, as the commands that made them.

use crate::engine::command::{Command, SAGE_REVIEW_AUTHOR, STEPS_REVIEW_AUTHOR};
use crate::session::event::{EventKind, StepsSource};

/// The author of a stop the run made itself when a budget was spent.
const BUDGET_AUTHOR: &str = "budget";

/// The command a person gave for this event of the log, if a person caused it.
/// Events the run emits itself (the review's pause, a budget's stop) are not.
pub(super) fn command_of(kind: &EventKind) -> Option<Command> {
    let author = |a: &String| a.clone();
    Some(match kind {
        EventKind::HumanComment { text, author: a, group } => {
            Command::Comment { text: text.clone(), author: author(a), group: group.clone() }
        }
        EventKind::ScoreOverridden { target, dimension, to, reason, author: a, .. } => Command::Override {
            target: target.clone(),
            dimension: dimension.clone(),
            value: *to,
            reason: reason.clone(),
            author: author(a),
        },
        EventKind::HumanRating { scores, author: a } => Command::Rate { scores: scores.clone(), author: author(a) },
        EventKind::SpeakerRequested { agent, veto: false, author: a, .. } => {
            Command::PickSpeaker { agent: agent.clone(), author: author(a) }
        }
        EventKind::SpeakerRequested { agent, veto: true, author: a, .. } => {
            Command::VetoSpeaker { agent: agent.clone(), author: author(a) }
        }
        EventKind::Paused { author: a } if a != SAGE_REVIEW_AUTHOR && a != STEPS_REVIEW_AUTHOR => {
            Command::Pause { author: author(a) }
        }
        EventKind::Resumed { author: a } => Command::Resume { author: author(a) },
        EventKind::Stepped { author: a } => Command::Step { author: author(a) },
        EventKind::StopRequested { author: a } if a != BUDGET_AUTHOR => Command::Stop { author: author(a) },
        EventKind::EvaluationSteps { dimension, steps, source: StepsSource::Human, author: a, .. } => {
            Command::EditSteps {
                dimension: dimension.clone(),
                steps: steps.clone(),
                author: a.clone().unwrap_or_else(|| "human".into()),
            }
        }
        EventKind::RevisionDecided { agent, dimension, accepted, author: a, .. } => Command::Decide {
            dimension: dimension.clone(),
            agent: Some(agent.clone()),
            accept: *accepted,
            author: author(a),
        },
        EventKind::PairSettled { first, second, winner, author: a } => Command::SettlePair {
            first: first.clone(),
            second: second.clone(),
            winner: winner.clone(),
            author: author(a),
        },
        EventKind::PairVoted { first, second, winner, author: a } => Command::VotePair {
            first: first.clone(),
            second: second.clone(),
            winner: winner.clone(),
            author: author(a),
        },
        EventKind::PairAbstained { first, second, author: a } => {
            Command::AbstainPair { first: first.clone(), second: second.clone(), author: author(a) }
        }
        EventKind::PairLabelled { first, second, winner, author: a, .. } => Command::LabelPair {
            first: first.clone(),
            second: second.clone(),
            winner: winner.clone(),
            author: author(a),
        },
        // An adoption wrote its panel file already: it is not made again.
        _ => return None,
    })
}
