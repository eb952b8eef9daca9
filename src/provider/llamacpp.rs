//! What an `openai` provider asks of a llama.cpp server (`llama-server`)
//! beyond the OpenAI fields, so that a reply through the server costs what
//! the embedded model's costs (same GGUF, same llama.cpp): see
//! `docs/scale.md`, *The HTTP path against the embedded model*.
//!
//! The embedded model steers each reply as it writes it: its words come as
//! one paragraph before the verdict's object, the object's keys are given
//! rather than generated, each string ends with its first finished sentence,
//! the opening words ("Dana, I") are the reply's start, and its prose goes
//! through repetition penalties. A server asked for OpenAI's `json_schema`
//! writes the words inside the object instead (a `speech` string that may
//! run to its `maxLength`, several paragraphs, escaped), its strings to
//! their limits, and samples without penalties. So, where the server is
//! llama.cpp's (its stream carries `timings`, which no other server sends)
//! and the provider's `structured_output` is `auto`, a request is sent:
//!
//! - `grammar`: [`lean_gbnf`], the embedded model's reply as one grammar,
//!   instead of `response_format` (and no instruction to write JSON: the
//!   prompt is the embedded model's);
//! - the opening words as a last assistant message, which llama.cpp's
//!   server continues (its `prefill_assistant`, on by default); the reply's
//!   text is then the words and what the server wrote after them, as the
//!   embedded model's is;
//! - the repetition penalties (the embedded model's defaults, or the
//!   provider's `repetition` table) for a reply that writes words (not for
//!   an object alone, which the embedded model samples without them);
//! - for a speech that may not copy its discussion (`no_copy`), DRY over
//!   the end of the prompt and the reply, in place of the embedded model's
//!   copy guard (which refuses, as it writes, a word that would copy five
//!   words of an earlier contribution — a server cannot be told that): DRY
//!   penalises a token that would lengthen a run already in the prompt
//!   ([`Repetition::llama_server`]). moot's repeated-speech rule still asks
//!   a speech that repeats another again.

use serde::Serialize;

use super::gbnf::{PROSE_MIN_CHARS, Prose, lean_gbnf};
use super::repetition::Repetition;
use super::structured::json_reserve;
use super::{ChatMessage, ChatRequest};

/// Characters of words per token of a reply's budget: the words may take
/// about three quarters of what the object leaves (English runs about four
/// characters a token), as the embedded model ends its words at the first
/// finished sentence past three quarters of its budget.
const PROSE_CHARS_PER_TOKEN: u64 = 3;

/// The llama.cpp fields of a request (flattened into its JSON body).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Extras {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grammar: Option<String>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub penalties: Option<Penalties>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub dry: Option<Dry>,
}

/// The repetition penalties, for a reply that writes words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Penalties {
    pub repeat_penalty: f32,
    pub repeat_last_n: i32,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
}

/// DRY, for a speech that may not copy its discussion.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dry {
    pub dry_multiplier: f32,
    pub dry_base: f32,
    pub dry_allowed_length: i32,
    pub dry_penalty_last_n: i32,
    pub dry_sequence_breakers: Vec<String>,
}

/// How one request goes to a llama.cpp server.
#[derive(Debug, Clone, PartialEq)]
pub struct Lean {
    pub extras: Extras,
    /// The reply's opening words, sent as the last (assistant) message and
    /// put before what the server writes.
    pub opening: Option<String>,
}

impl Lean {
    /// The lean form of `request`; `None` when its schema is one moot has
    /// no grammar for (it then goes as to any server).
    pub fn of(request: &ChatRequest, repetition: &Repetition) -> Option<Self> {
        let writes_prose = request.response_schema.is_none() || request.prose_first;
        let opening = request.opening.clone().filter(|o| writes_prose && !o.trim().is_empty());
        let grammar = match &request.response_schema {
            None => None,
            Some(schema) => {
                let prose = request.prose_first.then(|| {
                    let budget = request.max_tokens.saturating_sub(json_reserve(schema));
                    let max_chars = u64::from(budget) * PROSE_CHARS_PER_TOKEN;
                    Prose {
                        min_chars: PROSE_MIN_CHARS.min(max_chars / 2).max(1),
                        max_chars,
                        after_opening: opening.is_some(),
                    }
                });
                Some(lean_gbnf(schema, prose)?)
            }
        };
        let guarded =
            writes_prose && request.no_copy.as_ref().is_some_and(|n| !n.avoid.is_empty()) && repetition.dry_on();
        let r = repetition;
        Some(Self {
            extras: Extras {
                grammar,
                penalties: writes_prose.then_some(Penalties {
                    repeat_penalty: r.repeat_penalty,
                    repeat_last_n: r.repeat_last_n,
                    frequency_penalty: r.frequency_penalty,
                    presence_penalty: r.presence_penalty,
                }),
                dry: guarded.then(|| Dry {
                    dry_multiplier: r.dry_multiplier,
                    dry_base: r.dry_base,
                    dry_allowed_length: r.dry_allowed_length,
                    dry_penalty_last_n: r.dry_last_n,
                    dry_sequence_breakers: r.dry_breakers.clone(),
                }),
            },
            opening,
        })
    }

    /// `messages` with the opening words as the assistant's reply so far.
    pub fn messages(&self, mut messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
        if let Some(words) = &self.opening {
            messages.push(ChatMessage::assistant(words.clone()));
        }
        messages
    }
}

/// Whether an error answer refuses the lean form (a server that is not
/// llama.cpp's after all, or one started with `--no-prefill-assistant`): a
/// 400, 422 or 500 naming the grammar or the assistant message.
pub fn refuses(error: &super::ProviderError) -> bool {
    match error {
        super::ProviderError::Http { status: 400 | 422 | 500, body, .. } => {
            let b = body.to_ascii_lowercase();
            ["grammar", "assistant", "prefill", "repeat_", "dry_"].iter().any(|f| b.contains(f))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn schema() -> Arc<serde_json::Value> {
        Arc::new(json!({"type": "object",
            "properties": {"grammar": {"type": "integer", "minimum": 1, "maximum": 5},
                           "justification": {"type": "string", "maxLength": 200}},
            "required": ["grammar", "justification"]}))
    }

    fn server() -> Repetition {
        Repetition::llama_server()
    }

    fn penalties() -> Penalties {
        Penalties { repeat_penalty: 1.1, repeat_last_n: 64, frequency_penalty: 0.0, presence_penalty: 0.0 }
    }

    fn moot_no_copy() -> crate::provider::NoCopy {
        crate::provider::NoCopy { avoid: vec!["An earlier speech.".into()], ..Default::default() }
    }

    #[test]
    fn a_speech_gets_words_then_its_object_penalties_and_its_opening() {
        let mut request = ChatRequest::new(vec![ChatMessage::user("Debate.")]);
        request.response_schema = Some(schema());
        request.max_tokens = 400;
        request.opening = Some("Dana, I".into());
        let lean = Lean::of(&request, &server()).unwrap();
        let g = lean.extras.grammar.as_deref().unwrap();
        assert!(g.starts_with("root ::= prose \"\\n\" \"\\n\"? object\nprose ::= ([ ] [A-Za-z]"), "{g}");
        // 400 tokens less the object's reserve (32 + 8 × 2 + 200 / 3 = 114), three characters each.
        assert!(g.contains(&format!("word{{99,{}}}", (400 - 114) * 3 - 1)), "{g}");
        assert_eq!(lean.extras.penalties, Some(penalties()));
        assert_eq!(lean.extras.dry, None, "nothing it may not copy: no DRY");
        request.no_copy = Some(Arc::new(moot_no_copy()));
        let guarded = Lean::of(&request, &server()).unwrap().extras;
        let dry = guarded.dry.unwrap();
        assert_eq!(
            (dry.dry_multiplier, dry.dry_base, dry.dry_allowed_length, dry.dry_penalty_last_n),
            (0.8, 1.75, 2, 2048)
        );
        // A provider's table changes what is sent; DRY turned off sends none.
        let table = Repetition { dry_allowed_length: 3, repeat_penalty: 1.05, ..server() };
        let set = Lean::of(&request, &table).unwrap().extras;
        assert_eq!((set.dry.unwrap().dry_allowed_length, set.penalties.unwrap().repeat_penalty), (3, 1.05));
        let off = Repetition { dry_multiplier: 0.0, ..server() };
        assert_eq!(Lean::of(&request, &off).unwrap().extras.dry, None);
        let messages = lean.messages(request.messages.clone());
        assert_eq!(messages.last(), Some(&ChatMessage::assistant("Dana, I")));
    }

    #[test]
    fn an_object_alone_has_no_words_penalties_or_opening() {
        let mut request = ChatRequest::new(vec![ChatMessage::user("Score.")]);
        request.response_schema = Some(schema());
        request.prose_first = false;
        request.opening = Some("Dana, I".into());
        let lean = Lean::of(&request, &server()).unwrap();
        assert!(lean.extras.grammar.as_deref().unwrap().starts_with("root ::= \"{\""));
        assert_eq!(lean.extras.penalties, None);
        assert_eq!(lean.opening, None);
        // Free text: penalties, no grammar.
        let lean = Lean::of(&ChatRequest::new(vec![ChatMessage::user("Sum up.")]), &server()).unwrap();
        assert_eq!(lean.extras, Extras { penalties: Some(penalties()), ..Extras::default() });
        // A schema moot has no grammar for: not lean.
        let mut odd = ChatRequest::new(vec![ChatMessage::user("x")]);
        odd.response_schema = Some(Arc::new(json!({"type": "object", "properties": {"x": {"oneOf": []}}})));
        assert_eq!(Lean::of(&odd, &server()), None);
    }

    #[test]
    fn the_body_carries_only_the_fields_set() {
        let text = serde_json::to_string(&Extras { penalties: Some(penalties()), ..Extras::default() }).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            json!({"repeat_penalty": 1.1, "repeat_last_n": 64, "frequency_penalty": 0.0, "presence_penalty": 0.0})
        );
    }
}
