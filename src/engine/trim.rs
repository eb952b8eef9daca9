//! Fitting every request into the context of the model that serves it.
//!
//! A request's prompt plus its reply budget (`max_tokens`) must fit the
//! context window the provider reports ([`Provider::context_window`]). When
//! the whole discussion does not fit, the request shows less of it, by one
//! deterministic rule:
//!
//! 1. The system prompt, the item, the group's members, human comments and
//!    overrides, and every agent's latest evaluation (its newest contribution
//!    with readable scores) always stay. So does whatever follows the
//!    discussion (the speaker's part; a reply being repaired).
//! 2. The other contributions, oldest first, are condensed to their score
//!    line (`[Ann, round 1] scores: …`; one without readable scores is left
//!    out), one more at a time until the request fits.
//! 3. If all of them condensed is still too long, they are left out, oldest
//!    first, one more at a time; a line says how many.
//! 4. If nothing more can go, the reply budget shrinks to what is left, down
//!    to [`REPLY_FLOOR`] tokens (or `max_tokens` when that is smaller); below
//!    that the call fails with a message naming the speaker and the numbers.
//!
//! A contribution is never cut in the middle: it is shown whole, condensed
//! or left out. Every change is recorded as a `history_trimmed` event.

use crate::provider::{ChatMessage, Provider, ProviderError};
use crate::session::event::TrimmedEntry;

use super::prompts::{HISTORY_WINDOW, HistoryEntry, history_window};
use crate::panel::Panel;

/// The smallest reply budget a request is sent with when its prompt leaves
/// less room than `max_tokens` (a constrained evaluation needs about 220
/// tokens for its JSON object).
pub const REPLY_FLOOR: u32 = 256;

/// Builds a request's messages for a version of the group's discussion.
pub(crate) type Build<'a> = &'a (dyn Fn(&[HistoryEntry]) -> Vec<ChatMessage> + Sync);

/// A request's messages, with the discussion they show kept apart so that
/// it can be shortened.
#[derive(Clone)]
pub(crate) struct Prompt<'a> {
    discussion: Option<(&'a [HistoryEntry], Build<'a>)>,
    /// The whole request without a discussion; with one, what follows the
    /// built messages (a reply and a repair request, a moderator's retry).
    fixed: Vec<ChatMessage>,
    /// The reply's first words (see [`ChatRequest::opening`](crate::provider::ChatRequest::opening)).
    opening: Option<String>,
    /// The headings of the reply's paragraphs (see
    /// [`ChatRequest::sections`](crate::provider::ChatRequest::sections)).
    sections: Vec<String>,
    /// How many of the discussion's latest contributions the built messages
    /// show (see [`history_window`](super::prompts::history_window)): only
    /// those may be shortened.
    window: usize,
}

impl<'a> Prompt<'a> {
    /// Messages with nothing to shorten.
    pub fn fixed(messages: Vec<ChatMessage>) -> Self {
        Self { discussion: None, fixed: messages, opening: None, sections: Vec::new(), window: HISTORY_WINDOW }
    }

    /// The messages `build` makes of the group's `history`, which shows as
    /// much of it as `panel` says ([`history_window`]).
    pub fn discussion(panel: &Panel, history: &'a [HistoryEntry], build: Build<'a>) -> Self {
        Self {
            discussion: Some((history, build)),
            fixed: Vec::new(),
            opening: None,
            sections: Vec::new(),
            window: history_window(panel),
        }
    }

    /// The reply is to begin with `opening`.
    pub fn opening(mut self, opening: Option<String>) -> Self {
        self.opening = opening;
        self
    }

    /// The reply is written in paragraphs that begin with `headings`, in order.
    pub fn sections(mut self, headings: &[&str]) -> Self {
        self.sections = headings.iter().map(|h| h.to_string()).collect();
        self
    }

    /// The headings of the reply's paragraphs, if it has any.
    pub fn section_headings(&self) -> &[String] {
        &self.sections
    }

    /// What the reply is to begin with, if anything.
    pub fn opening_text(&self) -> Option<&str> {
        self.opening.as_deref()
    }

    /// These messages appended after the others.
    pub fn then(mut self, messages: impl IntoIterator<Item = ChatMessage>) -> Self {
        self.fixed.extend(messages);
        self
    }

    /// The request with the whole discussion.
    pub fn messages(&self) -> Vec<ChatMessage> {
        self.with(&[])
    }

    /// The request with the discussion as `plan` shows it (an empty plan
    /// shows it whole).
    fn with(&self, plan: &[Treatment]) -> Vec<ChatMessage> {
        let mut out = match self.discussion {
            Some((history, build)) if plan.is_empty() => build(history),
            Some((history, build)) => build(&shortened(history, plan)),
            None => Vec::new(),
        };
        out.extend(self.fixed.iter().cloned());
        out
    }

    fn history(&self) -> &[HistoryEntry] {
        self.discussion.map_or(&[], |(h, _)| h)
    }
}

/// How a request shows one contribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Treatment {
    Whole,
    /// Its score line only.
    Condensed,
    LeftOut,
}

/// The contributions that may be shortened, oldest first: speeches and
/// first evaluations among those a prompt shows (the last `window`), except
/// each agent's latest evaluation.
fn trimmable(history: &[HistoryEntry], window: usize) -> Vec<usize> {
    let mut latest = std::collections::HashMap::new();
    for (i, e) in history.iter().enumerate() {
        if let (Some(agent), true) = (speaker(e), has_scores(e)) {
            latest.insert(agent, i);
        }
    }
    let start = history.len().saturating_sub(window);
    (start..history.len()).filter(|&i| speaker(&history[i]).is_some_and(|a| latest.get(a) != Some(&i))).collect()
}

fn speaker(e: &HistoryEntry) -> Option<&str> {
    match e {
        HistoryEntry::Initial { agent, .. } | HistoryEntry::Speech { agent, .. } => Some(agent),
        _ => None,
    }
}

fn has_scores(e: &HistoryEntry) -> bool {
    matches!(e, HistoryEntry::Initial { evaluation: Some(_), .. } | HistoryEntry::Speech { evaluation: Some(_), .. })
}

/// The successive plans of the rule, each showing less than the one before:
/// condense one more contribution (oldest first), then leave out one more.
fn plans(history: &[HistoryEntry], window: usize) -> Vec<Vec<Treatment>> {
    let order = trimmable(history, window);
    let mut plan = vec![Treatment::Whole; history.len()];
    let mut out = Vec::new();
    for &i in &order {
        plan[i] = if has_scores(&history[i]) { Treatment::Condensed } else { Treatment::LeftOut };
        out.push(plan.clone());
    }
    for &i in &order {
        if plan[i] != Treatment::LeftOut {
            plan[i] = Treatment::LeftOut;
            out.push(plan.clone());
        }
    }
    out
}

/// The history as a plan shows it: condensed contributions become
/// [`HistoryEntry::Condensed`], left-out ones [`HistoryEntry::LeftOut`]
/// (entry for entry, so the prompt's window of recent entries is unchanged).
fn shortened(history: &[HistoryEntry], plan: &[Treatment]) -> Vec<HistoryEntry> {
    history
        .iter()
        .zip(plan)
        .map(|(e, t)| match (t, e) {
            (Treatment::Whole, _) => e.clone(),
            (Treatment::Condensed, HistoryEntry::Initial { agent, evaluation: Some(ev), .. }) => {
                HistoryEntry::Condensed { agent: agent.clone(), round: None, first: true, evaluation: ev.clone() }
            }
            (Treatment::Condensed, HistoryEntry::Speech { agent, round, evaluation: Some(ev), .. }) => {
                HistoryEntry::Condensed { agent: agent.clone(), round: *round, first: false, evaluation: ev.clone() }
            }
            _ => HistoryEntry::LeftOut,
        })
        .collect()
}

fn entry(history: &[HistoryEntry], i: usize) -> TrimmedEntry {
    let (agent, round, first) = match &history[i] {
        HistoryEntry::Initial { agent, .. } => (agent.clone(), None, true),
        HistoryEntry::Speech { agent, round, .. } => (agent.clone(), *round, false),
        _ => (String::new(), None, false),
    };
    TrimmedEntry { index: i as u32 + 1, agent, round, first }
}

/// What was changed to make a request fit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trimmed {
    pub left_out: Vec<TrimmedEntry>,
    pub condensed: Vec<TrimmedEntry>,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub context: u64,
    pub reply_tokens: u64,
    /// The reply budget asked for, when it was lowered.
    pub reply_requested: Option<u64>,
}

/// A request made to fit.
#[derive(Debug, Clone)]
pub(crate) struct Fitted {
    pub messages: Vec<ChatMessage>,
    pub max_tokens: u32,
    /// `None` when the request fit as it was (or the context is unknown).
    pub trimmed: Option<Trimmed>,
}

/// Make `prompt` with a reply of `max_tokens` fit the context of `model` on
/// `provider`, by the rule of this module. `who` names the speaker in errors.
pub(crate) async fn fit(
    provider: &dyn Provider,
    model: &str,
    prompt: &Prompt<'_>,
    max_tokens: u32,
    who: &str,
) -> Result<Fitted, ProviderError> {
    let messages = prompt.messages();
    let Some(context) = provider.context_window(model) else {
        return Ok(Fitted { messages, max_tokens, trimmed: None });
    };
    let reply = u64::from(max_tokens);
    let before = provider.count_tokens(model, &messages).await?;
    if before + reply <= context {
        return Ok(Fitted { messages, max_tokens, trimmed: None });
    }
    let history = prompt.history();
    let mut best = (Vec::new(), messages, before);
    for plan in plans(history, prompt.window) {
        let messages = prompt.with(&plan);
        let tokens = provider.count_tokens(model, &messages).await?;
        best = (plan, messages, tokens);
        if tokens + reply <= context {
            break;
        }
    }
    let (plan, messages, after) = best;
    let room = context.saturating_sub(after);
    let floor = u64::from(max_tokens.min(REPLY_FLOOR));
    if room < floor {
        let trimmed = if plan.is_empty() { "" } else { " even with the older discussion shortened" };
        return Err(ProviderError::Config(format!(
            "{who}: the request does not fit the model's context: its prompt takes {after} tokens{trimmed} \
             ({before} in full), leaving {room} for the reply (at least {floor} needed) in a context of {context}; \
             raise `context_size` (local model) or `context_length` (HTTP provider), or shorten the item"
        )));
    }
    let reply_tokens = reply.min(room);
    let pick = |t: Treatment| -> Vec<TrimmedEntry> {
        plan.iter().enumerate().filter(|&(_, &p)| p == t).map(|(i, _)| entry(history, i)).collect()
    };
    let trimmed = Trimmed {
        left_out: pick(Treatment::LeftOut),
        condensed: pick(Treatment::Condensed),
        tokens_before: before,
        tokens_after: after,
        context,
        reply_tokens,
        reply_requested: (reply_tokens < reply).then_some(reply),
    };
    Ok(Fitted { messages, max_tokens: reply_tokens as u32, trimmed: Some(trimmed) })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::prompts;
    use crate::panel::Protocol;
    use crate::provider::conservative_prompt_tokens;
    use crate::provider::window::WindowedProvider;
    use crate::session::event::Evaluation;
    use crate::testkit::scripted::ScriptedProvider;

    fn ev(score: f64, why: &str) -> Evaluation {
        Evaluation {
            scores: [("grammar".to_string(), score)].into(),
            overall: Some(score),
            confidence: Some(0.5),
            justification: why.into(),
            ..Evaluation::default()
        }
    }

    fn speech(agent: &str, round: u32, words: &str, score: Option<f64>) -> HistoryEntry {
        HistoryEntry::Speech {
            agent: agent.into(),
            round: Some(round),
            text: format!("{words} {}", "blah ".repeat(120)),
            evaluation: score.map(|s| ev(s, "because")),
        }
    }

    fn long(words: &str) -> String {
        format!("{words} {}", "so ".repeat(40))
    }

    /// Ann and Bea: first evaluations, then two rounds each, and a comment.
    fn history() -> Vec<HistoryEntry> {
        vec![
            HistoryEntry::Initial {
                agent: "Ann".into(),
                evaluation: Some(ev(2.0, &long("ann first"))),
                text: String::new(),
            },
            HistoryEntry::Initial {
                agent: "Bea".into(),
                evaluation: Some(ev(4.0, &long("bea first"))),
                text: String::new(),
            },
            speech("Ann", 1, "ANN-R1", Some(3.0)),
            HistoryEntry::Comment { author: "lead".into(), text: "Mind the ending.".into() },
            speech("Bea", 1, "BEA-R1", None),
            speech("Ann", 2, "ANN-R2", Some(3.0)),
            speech("Bea", 2, "BEA-R2", None),
        ]
    }

    fn provider(context: u64) -> WindowedProvider {
        WindowedProvider::new(Arc::new(ScriptedProvider::new(|_, _| "".into())), context)
    }

    #[test]
    fn the_latest_evaluation_of_each_agent_and_human_entries_are_never_trimmed() {
        let h = history();
        // Ann's latest evaluation is round 2 (index 5); Bea's speeches had
        // no readable scores, so her first evaluation (index 1) stays.
        assert_eq!(trimmable(&h, HISTORY_WINDOW), vec![0, 2, 4, 6]);
        let plans = plans(&h, HISTORY_WINDOW);
        use Treatment::*;
        assert_eq!(plans[0], vec![Condensed, Whole, Whole, Whole, Whole, Whole, Whole]);
        assert_eq!(plans[2], vec![Condensed, Whole, Condensed, Whole, LeftOut, Whole, Whole], "no scores: left out");
        assert_eq!(plans[3], vec![Condensed, Whole, Condensed, Whole, LeftOut, Whole, LeftOut]);
        assert_eq!(plans[4], vec![LeftOut, Whole, Condensed, Whole, LeftOut, Whole, LeftOut], "then oldest first");
        assert_eq!(plans.last().unwrap(), &vec![LeftOut, Whole, LeftOut, Whole, LeftOut, Whole, LeftOut]);
        assert_eq!(plans.len(), 6);
    }

    #[tokio::test]
    async fn a_long_discussion_is_shortened_oldest_first_until_it_fits() {
        let panel = crate::testkit::panel(Protocol::CollabEval, &[("Parents", &["Ann", "Bea"])]);
        let item = crate::testkit::item();
        let h = history();
        let ann = panel.agents().next().unwrap().1.clone();
        let build = |h: &[HistoryEntry]| prompts::discussion_messages(&panel, "Parents", &ann, &item, h, 3, false);
        let prompt = Prompt::discussion(&panel, &h, &build);
        let full = conservative_prompt_tokens(&prompt.messages());

        // Room enough: nothing changes.
        let roomy = fit(&provider(full + 300), "", &prompt, 300, "Ann").await.unwrap();
        assert!(roomy.trimmed.is_none());
        assert_eq!(roomy.messages, prompt.messages());

        // Short of room by a little: only the oldest contribution is condensed.
        let fitted = fit(&provider(full + 290), "", &prompt, 300, "Ann").await.unwrap();
        let t = fitted.trimmed.expect("trimmed");
        assert_eq!(
            t.condensed.iter().map(|e| (e.index, e.agent.as_str(), e.first)).collect::<Vec<_>>(),
            [(1, "Ann", true)]
        );
        assert!(t.left_out.is_empty());
        assert_eq!((t.tokens_before, t.context, t.reply_tokens, t.reply_requested), (full, full + 290, 300, None));
        assert!(t.tokens_after + 300 <= full + 290 && t.tokens_after < full);
        let shared = &fitted.messages[1].content;
        assert!(
            shared.contains("[Ann, first evaluation] scores: grammar 2, overall 2 (confidence 0.50)\n"),
            "{shared}"
        );
        assert!(!shared.contains("ann first"), "the condensed entry has no justification: {shared}");

        // Much shorter: the speeches go, oldest first; what always stays stays.
        let keep = fit(&provider(full - 200), "", &prompt, 300, "Ann").await.unwrap();
        let t = keep.trimmed.expect("trimmed");
        let shared = &keep.messages[1].content;
        assert!(t.tokens_after + 300 <= full - 200, "{t:?}");
        assert!(!shared.contains("BEA-R1") && !shared.contains("ANN-R1"), "{shared}");
        assert!(shared.contains("ANN-R2"), "Ann's latest evaluation stays whole: {shared}");
        assert!(shared.contains("bea first"), "Bea's latest readable evaluation stays whole: {shared}");
        assert!(shared.contains("Mind the ending."), "human comments stay: {shared}");
        assert!(shared.contains(&prompts::render_item(&item)), "the item stays");
        assert!(shared.contains("older contributions left out to fit the model's context"), "{shared}");
        let left: Vec<u32> = t.left_out.iter().map(|e| e.index).collect();
        let condensed: Vec<u32> = t.condensed.iter().map(|e| e.index).collect();
        assert!(left.contains(&5), "Bea's unreadable first speech is left out: {t:?}");
        assert!(condensed.contains(&3) || left.contains(&3), "older than it, Ann's first speech went too: {t:?}");
        assert!(left.iter().chain(&condensed).all(|i| [1, 3, 5, 7].contains(i)), "{t:?}");
        assert_eq!(keep.messages[0], prompt.messages()[0], "the system prompt stays");
        assert_eq!(keep.messages[2], prompt.messages()[2], "the speaker's part stays");
    }

    #[tokio::test]
    async fn the_reply_budget_shrinks_to_a_floor_and_then_the_call_fails() {
        let panel = crate::testkit::panel(Protocol::CollabEval, &[("Parents", &["Ann", "Bea"])]);
        let item = crate::testkit::item();
        let messages = prompts::aggregator_messages(&panel, &item, "- Ann: grammar 2", "");
        let tokens = conservative_prompt_tokens(&messages);
        let prompt = Prompt::fixed(messages.clone());
        let fitted = fit(&provider(tokens + 400), "", &prompt, 1000, "aggregator").await.unwrap();
        assert_eq!(fitted.max_tokens, 400);
        let t = fitted.trimmed.unwrap();
        assert_eq!((t.reply_tokens, t.reply_requested, t.tokens_after), (400, Some(1000), tokens));
        assert!(t.left_out.is_empty() && t.condensed.is_empty());
        let err = fit(&provider(tokens + 100), "", &prompt, 1000, "aggregator").await.unwrap_err();
        let msg = err.to_string();
        assert!(!err.is_retryable());
        for part in ["aggregator:", &format!("takes {tokens} tokens"), "leaving 100", "at least 256", "context_size"] {
            assert!(msg.contains(part), "{part} missing from: {msg}");
        }
    }
}
