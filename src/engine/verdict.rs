//! Verdicts: what a turn asks a model to end its reply with, and how the
//! reply is read.
//!
//! A verdict supplies the output instructions of its requests, the JSON
//! schema that constrains the local model (and any provider that can follow
//! one), how to read a completed reply, and the repair request sent once
//! after a reply it cannot read. [`Run::verdict_turn`](super::runtime::Run::verdict_turn)
//! makes any verdict's turn the same way; a reply that stays unreadable is a
//! parse failure, recorded as such and never turned into a value.

use std::slice;

use serde_json::json;

use super::moderator::{Pick, parse_moderator_reply};
use super::parse::{ParseSpec, parse_reply, says_no_more_comments};
use super::prompts;
use super::reasons::{self, TableFacts};
use crate::engine::weighted::weighted_scores;
use crate::panel::{Dimension, Panel, Scale};
use crate::provider::{ChatMessage, Completion};
use crate::session::event::{Evaluation, Phase, TurnKind};

/// Alternatives per token asked for when a verdict weighs its scores.
pub const TOP_LOGPROBS: u8 = 10;

pub(crate) trait Verdict: Sync {
    type Output: Clone + Send;
    /// What the request says the reply must end with.
    fn instructions(&self) -> String;
    /// A JSON schema of the verdict, for providers that constrain their output.
    fn schema(&self) -> Option<serde_json::Value>;
    /// [`Self::schema`] as requests carry it; a verdict asked for many times
    /// may build it once.
    fn shared_schema(&self) -> Option<std::sync::Arc<serde_json::Value>> {
        self.schema().map(std::sync::Arc::new)
    }
    /// Log-probabilities to ask for (probability-weighted scores).
    fn top_logprobs(&self) -> Option<u8> {
        None
    }
    /// Read a completed reply; the error says why it holds no verdict.
    fn read(&self, completion: &Completion) -> Result<Self::Output, String>;
    /// The follow-up sent once after a reply that could not be read.
    fn repair(&self, error: &str) -> ChatMessage;
    /// The schema of that follow-up's request (by default the verdict's).
    fn repair_schema(&self, _error: &str) -> Option<serde_json::Value> {
        self.schema()
    }
    /// What the turn's `turn_completed` event records as its evaluation.
    fn evaluation(&self, output: &Self::Output) -> Option<Evaluation>;
    /// Whether the reply says its speaker has nothing more to add.
    fn says_done(&self, _text: &str) -> bool {
        false
    }
    /// Whether the reply says its words before the verdict's object in
    /// `phase` (the embedded model enforces either order).
    fn prose_first(&self, _phase: Phase) -> bool {
        true
    }
    /// The kind of the turn that asks for the verdict.
    fn kind(&self) -> TurnKind {
        TurnKind::Speak
    }
    /// The kind of the turn that asks again after an unreadable reply.
    fn repair_kind(&self) -> TurnKind {
        TurnKind::Repair
    }
    /// A member of the object whose value begins with another member's
    /// (see [`crate::provider::ChatRequest::echo`]).
    fn echo(&self) -> Option<crate::provider::Echo> {
        None
    }
    /// A resumed session's reply answered from its log carries no
    /// log-probabilities: put back what its turn recorded of them
    /// (`recorded`: the turn's evaluation in the log).
    fn restore(&self, _output: &mut Self::Output, _recorded: &Evaluation) {}
}

/// Scores on every dimension of the panel, `overall` (where the panel has one), a confidence and a
/// justification (MAJ-EVAL, CollabEval, a final judge).
pub(crate) struct PanelScores<'a> {
    pub panel: &'a Panel,
    /// Material the item showed the judges: JSON or scores quoted from it are never a verdict.
    pub quoted: Vec<&'a str>,
    /// The panel's score keys (`Panel::score_keys`), for weighted scores.
    pub keys: &'a [String],
}

impl PanelScores<'_> {
    fn spec(&self) -> ParseSpec<'_> {
        ParseSpec {
            dimensions: &self.panel.dimensions,
            scale: self.panel.scale,
            overall: self.panel.asks_overall(),
            quoted_material: &self.quoted,
        }
    }
}

impl Verdict for PanelScores<'_> {
    type Output = Evaluation;
    fn instructions(&self) -> String {
        prompts::output_format(self.panel)
    }
    fn schema(&self) -> Option<serde_json::Value> {
        Some(prompts::evaluation_schema(self.panel))
    }
    fn top_logprobs(&self) -> Option<u8> {
        Some(TOP_LOGPROBS)
    }
    fn read(&self, completion: &Completion) -> Result<Evaluation, String> {
        let mut ev = parse_reply(&completion.text, &self.spec())?;
        weigh(completion, self.keys, self.panel.scale, &mut ev);
        Ok(ev)
    }
    fn repair(&self, error: &str) -> ChatMessage {
        prompts::repair_message(self.panel, error)
    }
    fn evaluation(&self, output: &Evaluation) -> Option<Evaluation> {
        Some(output.clone())
    }
    fn restore(&self, output: &mut Evaluation, recorded: &Evaluation) {
        output.weighted_scores = recorded.weighted_scores.clone();
    }
    fn says_done(&self, text: &str) -> bool {
        says_no_more_comments(text, &self.spec())
    }
    /// A first evaluation gives its scores at once, so that they show as
    /// soon as they are written, unless it is feedback first (MAJ-EVAL's
    /// `first_feedback = "full"`); the debate's turns speak first.
    fn prose_first(&self, phase: Phase) -> bool {
        phase != Phase::Initial || prompts::full_first_feedback(self.panel)
    }
}

/// One score on one dimension (G-Eval), with its probability-weighted value
/// when the provider returns log-probabilities.
pub(crate) struct DimensionScore<'a> {
    pub dimension: &'a Dimension,
    pub scale: Scale,
    /// Material the item showed the judges: JSON or scores quoted from it are never a verdict.
    pub quoted: Vec<&'a str>,
}

impl Verdict for DimensionScore<'_> {
    type Output = Evaluation;
    fn instructions(&self) -> String {
        format!(
            "End your reply with your score as one JSON object: {{\"{}\": <score from {} to {}>}}",
            self.dimension.key,
            prompts::fmt_num(self.scale.min),
            prompts::fmt_num(self.scale.max)
        )
    }
    fn schema(&self) -> Option<serde_json::Value> {
        let score = prompts::score_schema(&self.scale);
        Some(json!({
            "type": "object",
            "properties": {self.dimension.key.clone(): score},
            "required": [self.dimension.key],
            "additionalProperties": false
        }))
    }
    fn top_logprobs(&self) -> Option<u8> {
        Some(TOP_LOGPROBS)
    }
    fn read(&self, completion: &Completion) -> Result<Evaluation, String> {
        let spec = ParseSpec {
            dimensions: slice::from_ref(self.dimension),
            scale: self.scale,
            overall: false,
            quoted_material: &self.quoted,
        };
        // One dimension's score is not an overall judgment, unless the
        // dimension is keyed `overall`: then the parser made it the overall.
        let mut ev = parse_reply(&completion.text, &spec)?;
        ev.done = false;
        weigh(completion, slice::from_ref(&self.dimension.key), self.scale, &mut ev);
        Ok(ev)
    }
    fn repair(&self, error: &str) -> ChatMessage {
        ChatMessage::user(format!(
            "Your score could not be read: {error}. Reply again with only the JSON object, no other text.\n{}",
            self.instructions()
        ))
    }
    fn evaluation(&self, output: &Evaluation) -> Option<Evaluation> {
        Some(output.clone())
    }
    fn restore(&self, output: &mut Evaluation, recorded: &Evaluation) {
        output.weighted_scores = recorded.weighted_scores.clone();
    }
}

/// Free text: evaluation steps, a synthesis, a rewritten prompt.
pub(crate) struct Text<'a> {
    /// What the text is, for the instructions and the repair request ("the evaluation steps").
    pub what: &'a str,
}

impl Verdict for Text<'_> {
    type Output = String;
    fn instructions(&self) -> String {
        format!("Reply with {} only, as plain text.", self.what)
    }
    fn schema(&self) -> Option<serde_json::Value> {
        None
    }
    fn read(&self, completion: &Completion) -> Result<String, String> {
        let text = completion.text.trim();
        if text.is_empty() {
            Err(format!("the reply was empty instead of {}", self.what))
        } else {
            Ok(text.to_string())
        }
    }
    fn repair(&self, error: &str) -> ChatMessage {
        ChatMessage::user(format!("{error}. {}", self.instructions()))
    }
    fn evaluation(&self, _output: &String) -> Option<Evaluation> {
        None
    }
}

/// The next speaker of a debate, chosen by an LLM moderator among `eligible`
/// (`all`: every member, so that naming one who may not speak is told apart
/// from naming nobody). The moderator answers with a JSON object only: its
/// schema allows only an eligible name and a one-sentence reason, and asks
/// for the object at once, so the embedded model writes nothing else; other
/// replies are read leniently (a name in prose counts).
pub(crate) struct SpeakerPick<'a> {
    pub eligible: &'a [&'a str],
    pub all: &'a [&'a str],
    /// What the request's scores table showed, when the reason is checked
    /// against it (see [`reasons::check`]): a reason that fails is read as
    /// an error beginning with [`reasons::MISMATCH`].
    pub facts: Option<&'a TableFacts>,
    /// What the request said the table shows about each member who may
    /// speak ([`prompts::standings`]; empty when it said nothing), said
    /// again in the follow-up to a reply that could not be used.
    pub standings: &'a str,
}

impl Verdict for SpeakerPick<'_> {
    type Output = SpeakerChoice;
    fn instructions(&self) -> String {
        prompts::moderator_format(self.eligible)
    }
    fn schema(&self) -> Option<serde_json::Value> {
        Some(json!({
            "type": "object",
            "properties": {
                "next": {"type": "string", "enum": self.eligible},
                "reason": {"type": "string", "maxLength": prompts::JUSTIFICATION_MAX}
            },
            "required": ["next", "reason"],
            "additionalProperties": false
        }))
    }
    fn prose_first(&self, _phase: Phase) -> bool {
        false
    }
    fn read(&self, completion: &Completion) -> Result<SpeakerChoice, String> {
        let pick = parse_moderator_reply(&completion.text, self.eligible, self.all)?;
        if let Some(facts) = self.facts {
            reasons::check(&pick.reason, facts)
                .and_then(|()| reasons::names_choice(&pick.reason, &pick.agent, facts))
                .map_err(|why| format!("{}{why}", reasons::MISMATCH))?;
        }
        Ok(SpeakerChoice { pick, raw: completion.text.clone() })
    }
    fn repair(&self, error: &str) -> ChatMessage {
        prompts::moderator_retry(error, self.standings, self.eligible)
    }
    /// The reason begins with the name chosen, so that it is about the
    /// member chosen: asked for a reason after the name, the 1.5B model
    /// gave one about the item alone ("The question and answer are
    /// clear…"), and again when sent back; the 0.5B one about another
    /// member than the one it chose.
    fn echo(&self) -> Option<crate::provider::Echo> {
        Some(crate::provider::Echo { from: "next".into(), into: "reason".into() })
    }
    fn evaluation(&self, _output: &SpeakerChoice) -> Option<Evaluation> {
        None
    }
    fn kind(&self) -> TurnKind {
        TurnKind::Select
    }
    fn repair_kind(&self) -> TurnKind {
        TurnKind::Select
    }
}

/// A moderator's pick and the reply it was read from.
#[derive(Debug, Clone)]
pub(crate) struct SpeakerChoice {
    pub pick: Pick,
    pub raw: String,
}

/// Probability-weighted scores from the completion's log-probabilities, if any.
fn weigh(completion: &Completion, keys: &[String], scale: Scale, evaluation: &mut Evaluation) {
    if let Some(tokens) = &completion.logprobs {
        let weighted = weighted_scores(tokens, keys, scale);
        if !weighted.is_empty() {
            evaluation.weighted_scores = Some(weighted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::logprobs::{TokenLogprob, TopLogprob};

    fn dim() -> Dimension {
        Dimension {
            key: "fluency".into(),
            name: "Fluency".into(),
            description: String::new(),
            steps: None,
            labels: Vec::new(),
        }
    }

    /// The name before the reason: asked for the reason first, the 0.5B
    /// model reasoned about one member and chose another (docs/agent-output.md).
    #[test]
    fn a_moderator_names_its_choice_before_its_reason() {
        let pick = SpeakerPick { eligible: &["Ann", "Bea"], all: &["Ann", "Bea", "Cy"], facts: None, standings: "" };
        let schema = pick.schema().expect("a schema");
        assert_eq!(crate::provider::gbnf::object_keys(&schema), Some(vec!["next", "reason"]));
        let form = pick.instructions();
        assert!(form.find("\"next\"").expect("a name") < form.find("\"reason\"").expect("a reason"), "{form}");
    }

    #[test]
    fn a_dimension_score_reads_its_one_key_and_weighs_it() {
        let d = dim();
        let v = DimensionScore { dimension: &d, scale: Scale { min: 1.0, max: 5.0 }, quoted: vec![] };
        let tok = |t: &str, top: &[(&str, f64)]| TokenLogprob {
            token: t.into(),
            logprob: top.iter().find(|(x, _)| *x == t).map_or(-0.1, |(_, p)| p.ln()),
            top: top.iter().map(|(t, p)| TopLogprob { token: (*t).into(), logprob: p.ln() }).collect(),
        };
        let completion = Completion {
            text: "Reads well.\n{\"fluency\": 4}".into(),
            logprobs: Some(vec![
                tok("{\"", &[]),
                tok("fluency", &[]),
                tok("\":", &[]),
                tok(" ", &[]),
                tok("4", &[("4", 0.5), ("5", 0.5)]),
                tok("}", &[]),
            ]),
            ..Default::default()
        };
        let ev = v.read(&completion).expect("a score");
        assert_eq!(ev.scores["fluency"], 4.0);
        assert_eq!(ev.overall, None);
        assert_eq!(ev.weighted_scores.expect("weighted")["fluency"], 4.5);
        let bad = Completion { text: "No score here.".into(), ..Default::default() };
        assert!(v.read(&bad).is_err());
        assert!(v.schema().unwrap()["required"][0] == "fluency");
    }

    #[test]
    fn empty_text_is_not_a_verdict() {
        let v = Text { what: "the evaluation steps" };
        assert!(v.read(&Completion { text: "  \n".into(), ..Default::default() }).is_err());
        assert_eq!(v.read(&Completion { text: " 1. Read.\n".into(), ..Default::default() }).unwrap(), "1. Read.");
    }
}
