//! Speeches checked against their discussion: a reply that repeats an
//! earlier contribution of its group (the rule of [`crate::engine::repeats`])
//! is recorded as repeating it, one that quotes words nothing it was shown
//! contains (the rule of [`crate::engine::quotes`]) as misquoting; either
//! is asked for once more, with a note and another seed, and the second
//! reply is kept, marked too if it still repeats or misquotes.

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
    /// Whether a speech that misquotes is asked for once more (the
    /// protocol's `quotes` setting); either way it is recorded.
    pub redraw_misquotes: bool,
    /// The note a speech asked for again carries: it names the draft's
    /// misquotes, so it is no source of quotations.
    pub note: Option<&'a str>,
    /// Whether the request says what the speech may not copy (the same
    /// setting: see [`crate::provider::NoCopy`]).
    pub guard: bool,
    /// The contribution a speech asked for again had repeated (its words):
    /// not to be copied even where it quotes the item, outside quotation
    /// marks ([`NoCopy::strict`](crate::provider::NoCopy::strict)).
    pub strict: Option<&'a str>,
}

/// A reply as read, the member whose earlier speech it repeats and that
/// speech's words, and its quotations that nothing it was shown contains,
/// each with the nearest sentence it was shown (see
/// [`quotes::nearest`](crate::engine::quotes::nearest)).
pub(crate) struct Reply<T> {
    pub spoken: Spoken<T>,
    pub repeats: Option<(String, String)>,
    pub misquotes: Vec<(String, Option<String>)>,
}

impl RepeatCheck<'_> {
    /// Whether a reply with these marks is to be asked for once more.
    pub fn asks_again(&self, repeats: bool, misquotes: &[(String, Option<String>)]) -> bool {
        repeats && self.redraw || !misquotes.is_empty() && self.redraw_misquotes
    }
}

impl Run {
    /// A speech asking for `verdict`, checked by `check`. When the first
    /// reply repeats or misquotes (and does not end the speaker's part with
    /// NO MORE COMMENTS), it is asked for again; the second reply is the speech
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
        if said_done || turn.cancel.is_cancelled() || !check.asks_again(first.repeats.is_some(), &first.misquotes) {
            return spoken;
        }
        // One note (one message) says what the draft did that is asked again for.
        let mut notes = Vec::new();
        let repeated = first.repeats.as_ref().filter(|_| check.redraw);
        if let Some((who, _)) = repeated {
            notes.push(prompts::redraw_note(who, turn.participant));
        }
        if check.redraw_misquotes && !first.misquotes.is_empty() {
            notes.push(prompts::misquote_note(&first.misquotes));
        }
        let note = notes.join(" ");
        let again = messages.then([crate::provider::ChatMessage::user(note.clone())]);
        let strict = repeated.map(|(_, words)| words.as_str());
        let check = RepeatCheck { redraw: false, redraw_misquotes: false, note: Some(&note), strict, ..check };
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
