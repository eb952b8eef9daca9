//! Turns that must give a verdict: an evaluating turn (agent or final judge)
//! and its generic form, with one repair request when the reply has no
//! readable verdict.

use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use super::redraw::{RepeatCheck, Reply, evaluation_of};
use super::{CallSpec, Marks, ReadAhead, Run, Spoken, TurnSpec};
use crate::engine::prompts::reply_words;
use crate::engine::quotes;
use crate::engine::trim::Prompt;
use crate::engine::verdict::{PanelScores, Verdict};
use crate::provider::binding::Binding;
use crate::provider::{ChatMessage, Completion, NoCopy};
use crate::session::event::{Phase, Role, TurnKind};

impl Run {
    /// The verdict of the panel's evaluations (every dimension and overall).
    pub fn panel_scores(&self) -> PanelScores<'_> {
        PanelScores { panel: &self.panel, quoted: self.quoted(), keys: &self.keys }
    }

    /// An evaluating turn (agent or final judge) with one repair request when
    /// the reply has no readable evaluation.
    #[allow(clippy::too_many_arguments)]
    pub async fn evaluating_turn(
        &self,
        participant: &str,
        group: Option<&str>,
        phase: Phase,
        round: Option<u32>,
        role: Role,
        binding: &Binding,
        messages: Prompt<'_>,
        sampling: (Option<f32>, u32),
        cancel: &CancellationToken,
        ahead: Option<ReadAhead<'_>>,
    ) -> Spoken {
        let turn =
            TurnSpec { participant, group, phase, round, role, binding, sampling, cancel, dimension: None, pair: None };
        self.verdict_turn(&self.panel_scores(), turn, messages, ahead).await
    }

    /// A turn that asks for `verdict`, with one repair request when the reply
    /// cannot be read. The reply's words are kept either way.
    pub async fn verdict_turn<V: Verdict>(
        &self,
        verdict: &V,
        turn: TurnSpec<'_>,
        messages: Prompt<'_>,
        ahead: Option<ReadAhead<'_>>,
    ) -> Spoken<V::Output> {
        self.reply(verdict, turn, verdict.kind(), messages, ahead, None).await.spoken
    }

    /// One request of a turn (of `kind`) asking for `verdict`, read, with
    /// one repair request when the reply cannot be read. With `check`, a
    /// reply that repeats one of the group's earlier contributions is
    /// recorded as such, and when it is to be asked for again it is not
    /// repaired.
    pub(super) async fn reply<V: Verdict>(
        &self,
        verdict: &V,
        turn: TurnSpec<'_>,
        kind: TurnKind,
        messages: Prompt<'_>,
        ahead: Option<ReadAhead<'_>>,
        check: Option<RepeatCheck<'_>>,
    ) -> Reply<V::Output> {
        let TurnSpec { participant, role, cancel, .. } = turn;
        let schema = verdict.shared_schema();
        let no_copy = check.filter(|c| c.guard).map(|c| {
            Arc::new(NoCopy {
                avoid: c.earlier.texts().into_iter().chain(instructions(&messages)).collect(),
                quotable: self.quotable(),
                names: c
                    .earlier
                    .names()
                    .iter()
                    .cloned()
                    .chain(self.panel.dimensions.iter().flat_map(|d| [d.key.clone(), d.name.clone()]))
                    .collect(),
                strict: c.strict.map(|words| vec![words.to_string()]).unwrap_or_default(),
                speaker: Some(participant.to_string()),
                answers: messages.opening_text().and_then(crate::engine::prompts::answered_in).map(str::to_string),
            })
        });
        // A repair asks for the object alone, under the verdict's repair schema.
        let spec = |kind, messages, ahead, prose_first, schema| CallSpec {
            turn,
            kind,
            messages,
            schema,
            top_logprobs: verdict.top_logprobs(),
            prose_first,
            ahead,
            no_copy: no_copy.clone(),
            echo: verdict.echo(),
        };
        // Read a reply and record its turn; `done` carries a NO MORE COMMENTS said earlier in this turn.
        let settle = |turn, kind, c: &Completion, latency, done: bool, marks: Marks| match verdict.read(c) {
            Ok(mut out) => {
                if let Some(recorded) = self.logged_evaluation(turn) {
                    verdict.restore(&mut out, &recorded);
                }
                let mut ev = verdict.evaluation(&out);
                if let Some(ev) = ev.as_mut() {
                    ev.done = done || verdict.says_done(&c.text);
                }
                let said = ev.as_ref().is_some_and(|e| e.done);
                self.complete_turn(turn, participant, role, kind, c, ev, None, latency, said, marks);
                Ok(out)
            }
            Err(err) => {
                let said = verdict.says_done(&c.text);
                self.complete_turn(turn, participant, role, kind, c, None, Some(err.clone()), latency, said, marks);
                Err(err)
            }
        };
        let (turn, result, latency) =
            self.call(spec(kind, messages.clone(), ahead, verdict.prose_first(turn.phase), schema)).await;
        let completion = match result {
            Ok(c) => c,
            Err(e) => return Reply { spoken: Spoken::Failed(e), repeats: None, misquotes: Vec::new() },
        };
        let done = verdict.says_done(&completion.text);
        let repeats = check
            .and_then(|c| c.earlier.repeated(&completion.text))
            .map(|(agent, words)| (agent.to_string(), words.to_string()));
        let misquotes =
            if role == Role::Agent { self.misquotes(&completion.text, &messages, check) } else { Vec::new() };
        let marks = Marks {
            repeats: repeats.as_ref().map(|(agent, _)| agent.clone()),
            misquotes: misquotes.iter().map(|(q, _)| q.clone()).collect(),
            ..Marks::default()
        };
        let error = match settle(turn, kind, &completion, latency, false, marks) {
            Ok(evaluation) => {
                let spoken = Spoken::Evaluated { evaluation, text: completion.text, turn };
                return Reply { spoken, repeats, misquotes };
            }
            Err(err) => err,
        };
        let unparsed = |text, error| Spoken::Unparsed { text, done, error };
        // A reply asked for again is not repaired first.
        if cancel.is_cancelled() || check.is_some_and(|c| c.asks_again(repeats.is_some(), &misquotes)) && !done {
            return Reply { spoken: unparsed(completion.text, error), repeats, misquotes };
        }
        // The reply stays whole after the (perhaps shortened) request it answered.
        let repair = messages.then([ChatMessage::assistant(completion.text.clone()), verdict.repair(&error)]);
        let schema2 = verdict.repair_schema(&error).map(Arc::new);
        let (turn2, result2, latency2) = self.call(spec(verdict.repair_kind(), repair, None, false, schema2)).await;
        let spoken = match result2 {
            Err(e) => unparsed(completion.text, format!("{error}; asking again failed: {e}")),
            Ok(c2) => match settle(turn2, verdict.repair_kind(), &c2, latency2, done, Marks::default()) {
                Ok(evaluation) => Spoken::Evaluated { evaluation, text: completion.text, turn: turn2 },
                Err(again) => unparsed(completion.text, again),
            },
        };
        Reply { spoken, repeats, misquotes }
    }

    /// An agent's turn in any phase, asking for the panel's scores.
    pub async fn agent_turn(
        &self,
        index: usize,
        phase: Phase,
        round: Option<u32>,
        messages: Prompt<'_>,
        cancel: &CancellationToken,
        ahead: Option<ReadAhead<'_>>,
    ) -> Spoken {
        self.agent_verdict_turn(&self.panel_scores(), index, phase, round, messages, cancel, ahead, None).await
    }

    /// The quotations of an agent's reply that nothing it was shown
    /// contains (the rule of [`quotes`]), each with the sentence of the
    /// item nearest to it (see [`quotes::nearest`]), else the nearest of the
    /// rest of what the speaker was shown.
    fn misquotes(
        &self,
        text: &str,
        messages: &Prompt<'_>,
        check: Option<RepeatCheck<'_>>,
    ) -> Vec<(String, Option<String>)> {
        let prose = reply_words(text, true, true);
        if !prose.contains(['"', '“']) {
            return Vec::new();
        }
        let (item, rest) = self.quotation_sources(messages, check);
        let item: Vec<&str> = item.iter().map(String::as_str).collect();
        let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
        let sources: Vec<&str> = item.iter().chain(&rest).copied().collect();
        quotes::misquotes(prose, &sources)
            .into_iter()
            .map(|q| {
                let nearest = quotes::nearest(&q, &item).or_else(|| quotes::nearest(&q, &rest));
                (q, nearest)
            })
            .collect()
    }

    /// What a speech may quote: the item's texts (its content, context,
    /// reference and candidates), and the rest: every message of its
    /// request but a redraw's note and, for a speech, its group's earlier
    /// contributions (the request may show the discussion shortened).
    fn quotation_sources(&self, messages: &Prompt<'_>, check: Option<RepeatCheck<'_>>) -> (Vec<String>, Vec<String>) {
        let item = self.item();
        let mut texts: Vec<String> = [Some(&item.content), item.context.as_ref(), item.reference.as_ref()]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        texts.extend(item.candidates.iter().flatten().map(|c| c.text.clone()));
        let note = check.and_then(|c| c.note);
        let mut rest: Vec<String> =
            messages.messages().into_iter().map(|m| m.content).filter(|m| Some(m.as_str()) != note).collect();
        rest.extend(check.map(|c| c.earlier.texts()).unwrap_or_default());
        (texts, rest)
    }

    /// An agent's turn asking for `verdict`, whose evaluation (the verdict
    /// as [`Verdict::evaluation`] records it) becomes the agent's latest.
    /// With `check`, a speech checked against its discussion (see
    /// [`RepeatCheck`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn agent_verdict_turn<V: Verdict>(
        &self,
        verdict: &V,
        index: usize,
        phase: Phase,
        round: Option<u32>,
        messages: Prompt<'_>,
        cancel: &CancellationToken,
        ahead: Option<ReadAhead<'_>>,
        check: Option<RepeatCheck<'_>>,
    ) -> Spoken {
        let (name, group, spec) = {
            let st = self.state();
            let a = &st.agents[index];
            (a.name.clone(), a.group.clone(), a.spec.clone())
        };
        let binding = self.config.bindings.for_agent(&name).clone();
        let sampling = self.agent_sampling(&spec);
        let turn = TurnSpec {
            participant: &name,
            group: Some(&group),
            phase,
            round,
            role: Role::Agent,
            binding: &binding,
            sampling,
            cancel,
            dimension: None,
            pair: None,
        };
        let out = match check {
            Some(check) => self.speech(verdict, turn, messages, ahead, check).await,
            None => evaluation_of(verdict, self.verdict_turn(verdict, turn, messages, ahead).await),
        };
        let mut st = self.state();
        let a = &mut st.agents[index];
        match &out {
            Spoken::Evaluated { evaluation, turn, .. } => {
                if phase == Phase::Initial {
                    a.initial = Some(evaluation.clone());
                }
                a.own = Some(evaluation.clone());
                a.progress.spoke(phase, TurnKind::Speak, *turn, Some(evaluation), false);
            }
            Spoken::Unparsed { done, .. } => a.progress.spoke(phase, TurnKind::Speak, 0, None, *done),
            Spoken::Failed(_) => {}
        }
        out
    }
}

/// The instructions of a speech's request, which the speech should not echo
/// either: every message but the first user message (the item and the
/// discussion, which [`RepeatCheck`]'s contributions and the item cover).
fn instructions(messages: &Prompt<'_>) -> Vec<String> {
    let mut users = 0;
    messages
        .messages()
        .into_iter()
        .filter(|m| {
            m.role != crate::provider::ChatRole::User || {
                users += 1;
                users > 1
            }
        })
        .map(|m| m.content)
        .collect()
}
