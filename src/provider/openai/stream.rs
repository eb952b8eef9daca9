//! Reading an OpenAI-compatible stream: its `data:` chunks, their
//! deltas, usage (with cached prompt tokens and llama.cpp's `timings`),
//! log-probabilities and errors, folded into one reply.

use serde::Deserialize;

use super::super::http::{MAX_ERROR_BODY_CHARS, MAX_EXCERPT_CHARS, excerpt};
use super::super::logprobs::{ChoiceLogprobs, TokenLogprob};
use super::super::structured::SpeechSplitter;
use super::super::{DeltaSender, ProviderError, Usage};

/// One `data:` chunk of the stream; unknown fields are ignored.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<ChunkUsage>,
    error: Option<serde_json::Value>,
    /// llama.cpp's server: how the prompt was read (`cache_n` tokens from its slot's cache).
    timings: Option<Timings>,
}

#[derive(Deserialize)]
struct Timings {
    cache_n: Option<u64>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    delta: Option<Delta>,
    finish_reason: Option<String>,
    logprobs: Option<ChoiceLogprobs>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Default)]
pub(super) struct StreamState {
    pub(super) text: String,
    pub(super) finish_reason: Option<String>,
    pub(super) usage: Option<Usage>,
    pub(super) logprobs: Vec<TokenLogprob>,
    /// For a structured reply: turns its JSON into the speech, then the verdict.
    pub(super) splitter: Option<SpeechSplitter>,
    /// llama.cpp's `timings.cache_n`, when a chunk carried it.
    pub(super) cache_n: Option<u64>,
    /// A chunk carried `timings`: the server is llama.cpp's.
    pub(super) saw_timings: bool,
    /// The opening words the server was asked to go on from: the reply's
    /// start. Some versions of llama.cpp's server stream them back, others
    /// only what follows; the text is held back until it shows which.
    pub(super) opening: Option<String>,
    pub(super) head: String,
}

impl StreamState {
    /// Pass on streamed text (through the splitter of a structured reply),
    /// after the opening words.
    pub(super) fn pass_on(&mut self, content: &str, deltas: &DeltaSender) {
        if let Some(opening) = &self.opening {
            self.head.push_str(content);
            if self.head.len() < opening.len() && opening.starts_with(self.head.as_str()) {
                return;
            }
            let head = std::mem::take(&mut self.head);
            let text = if head.starts_with(opening.as_str()) { head } else { format!("{opening}{head}") };
            self.opening = None;
            return self.pass_on(&text, deltas);
        }
        let text = match self.splitter.as_mut() {
            Some(s) => s.push(content),
            None => content.to_owned(),
        };
        if !text.is_empty() {
            self.text.push_str(&text);
            // A closed receiver only means nobody watches the stream.
            let _ = deltas.send(text);
        }
    }

    /// The end of the stream: what the splitter of a structured reply kept
    /// back, or the opening words of a reply that got no further.
    pub(super) fn finish(&mut self, deltas: &DeltaSender) {
        if let Some(opening) = self.opening.take() {
            self.head.clear();
            self.pass_on(&opening, deltas);
        }
        if let Some(s) = self.splitter.take() {
            let tail = s.finish();
            if !tail.is_empty() {
                self.text.push_str(&tail);
                let _ = deltas.send(tail);
            }
        }
    }

    /// Handle one event's data; `Ok(true)` once the stream is done.
    pub(super) fn handle(&mut self, data: &str, deltas: &DeltaSender) -> Result<bool, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ProviderError::Protocol(format!("chunk is not valid JSON ({e}): {}", excerpt(data, MAX_EXCERPT_CHARS)))
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(server_error(&error));
        }
        if let Some(choice) = chunk.choices.iter().find(|c| c.index == 0) {
            if let Some(content) = choice.delta.as_ref().and_then(|d| d.content.as_deref())
                && !content.is_empty()
            {
                let content = content.to_owned();
                self.pass_on(&content, deltas);
            }
            if let Some(content) = choice.logprobs.as_ref().and_then(|l| l.content.as_ref()) {
                self.logprobs.extend(content.iter().cloned());
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish_reason = Some(reason.clone());
            }
        }
        if let Some(ChunkUsage { prompt_tokens: Some(input), completion_tokens: Some(output), prompt_tokens_details }) =
            chunk.usage
        {
            let cached = prompt_tokens_details.and_then(|d| d.cached_tokens).or(self.cache_n);
            self.usage = Some(Usage {
                input_tokens: input,
                output_tokens: output,
                cached_input_tokens: cached,
                ..Usage::default()
            });
        }
        if let Some(t) = chunk.timings {
            self.saw_timings = true;
            // llama.cpp counts the prompt's tokens taken from its cache apart from those it read.
            self.cache_n = t.cache_n;
            if let Some(u) = self.usage.as_mut().filter(|u| u.cached_input_tokens.is_none()) {
                u.cached_input_tokens = t.cache_n;
            }
        }
        Ok(false)
    }
}

/// Turn an in-stream `error` value into a [`ProviderError::Server`].
fn server_error(error: &serde_json::Value) -> ProviderError {
    let field = |name: &str| error.get(name).and_then(|v| v.as_str().map(str::to_owned).or_else(|| non_null(v)));
    let message = match error {
        serde_json::Value::String(s) => s.clone(),
        _ => field("message").unwrap_or_else(|| excerpt(&error.to_string(), MAX_EXCERPT_CHARS)),
    };
    let kind = [field("type"), field("code")].into_iter().flatten().collect::<Vec<_>>().join(" ").to_lowercase();
    let permanent =
        ["invalid_request", "authentication", "permission", "not_found", "context_length", "invalid_api_key"];
    let retryable = !permanent.iter().any(|p| kind.contains(p));
    let message = if kind.is_empty() { message } else { format!("{message} ({kind})") };
    ProviderError::Server { message: excerpt(&message, MAX_ERROR_BODY_CHARS), retryable }
}

fn non_null(v: &serde_json::Value) -> Option<String> {
    (!v.is_null()).then(|| v.to_string())
}
