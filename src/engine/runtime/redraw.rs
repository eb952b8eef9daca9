//! Speeches checked against their discussion: a reply that repeats an
//! earlier contribution of its group (the rule of [`crate::engine::repeats`])
//! is recorded as repeating it, and is asked for once more, with a note and
//! another seed; the second reply is kept, marked too if it still repeats.

use super::{ReadAhead, Run, Spoken, TurnSpec};
use crate::engine::prompts;
use crate::engine::repeats::Earlier;
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::session::event::TurnKind;

/// What a speech is checked against.
#[derive(Clone, Copy)]
pub(crate) struct RepeatCheck<'a> {
    /// The group's contributions before the speech.
    pub earlier: &'a Earlier,
    /// Whether a speech that repeats one is asked for once more (the
    /// protocol's `repeats` setting); either way it is recorded.
    pub redraw: bool,
    /// Whether the request says what the speech may not copy (the same
    /// setting: see [`crate::provider::NoCopy`]).
    pub guard: bool,
}

/// A reply as read, and the member whose earlier speech it repeats.
pub(crate) struct Reply<T> {
    pub spoken: Spoken<T>,
    pub repeats: Option<String>,
}

impl Run {
    /// A speech asking for `verdict`, checked by `check`. When the first
    /// reply repeats (and does not end the speaker's part with NO MORE
    /// COMMENTS), it is asked for again; the second reply is the speech
    /// unless it has no readable verdict (after its repair request) where
    /// the first had one: then the first stands, finished if the second
    /// said so.
    pub(super) async fn speech<V: Verdict>(
        &self,
        verdict: &V,
        turn: TurnSpec<'_>,
        messages: Prompt<'_>,
        ahead: Option<ReadAhead<'_>>,
        check: RepeatCheck<'_>,
    ) -> Spoken {
        let first = self.reply(verdict, turn, verdict.kind(), messages.clone(), ahead, Some(check)).await;
        let spoken = evaluation_of(verdict, first.spoken);
        let said_done = match &spoken {
            Spoken::Evaluated { evaluation, .. } => evaluation.done,
            Spoken::Unparsed { done, .. } => *done,
            Spoken::Failed(_) => return spoken,
        };
        let first_said = match first.repeats {
            Some(who) if check.redraw && !said_done && !turn.cancel.is_cancelled() => who,
            _ => return spoken,
        };
        let again = messages.then([prompts::redraw_note(&first_said, turn.participant)]);
        let check = RepeatCheck { redraw: false, ..check };
        let second = self.reply(verdict, turn, TurnKind::Redraw, again, None, Some(check)).await;
        match (evaluation_of(verdict, second.spoken), spoken) {
            (Spoken::Unparsed { done, .. }, Spoken::Evaluated { mut evaluation, text, turn }) => {
                evaluation.done |= done;
                Spoken::Evaluated { evaluation, text, turn }
            }
            (Spoken::Failed(_), first) => first,
            (second, _) => second,
        }
    }
}

/// A verdict's turn as the speaker's evaluation (the verdict as
/// [`Verdict::evaluation`] records it).
pub(super) fn evaluation_of<V: Verdict>(verdict: &V, spoken: Spoken<V::Output>) -> Spoken {
    match spoken {
        Spoken::Evaluated { evaluation, text, turn } => match verdict.evaluation(&evaluation) {
            Some(evaluation) => Spoken::Evaluated { evaluation, text, turn },
            None => Spoken::Unparsed { text, done: false, error: "the verdict records no evaluation".into() },
        },
        Spoken::Unparsed { text, done, error } => Spoken::Unparsed { text, done, error },
        Spoken::Failed(e) => Spoken::Failed(e),
    }
}
