//! Anthropic's Message Batches: `POST /v1/messages/batches` with the
//! requests (`custom_id` and `params`, a Messages body), `GET
//! /v1/messages/batches/{id}` until `processing_status` is `ended`, then
//! the JSONL at its `results_url`: one line per request, `succeeded` with
//! the message, or `errored`, `canceled`, `expired`. Bodies are those of the
//! streaming provider without streaming ([`AnthropicProvider::batch_params`]).

use std::collections::HashMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::api::{self, BatchApi, Line, LineResult, Remote, RemoteState, Submitted};
use crate::provider::anthropic::{API_VERSION, AnthropicConfig, AnthropicProvider};
use crate::provider::http::{self, Redactor, excerpt};
use crate::provider::{ChatRequest, Completion, ProviderError, Usage};

/// Anthropic's Message Batches on one base URL.
pub struct AnthropicBatch {
    bodies: AnthropicProvider,
    /// `…/v1/messages/batches`.
    batches: String,
    key: Option<String>,
    client: reqwest::Client,
    redactor: Redactor,
    base: String,
}

impl AnthropicBatch {
    /// The batch API beside the messages endpoint of `config` (its base URL and key).
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let client = http::build_client(&config.timeouts)?;
        let batches = format!("{}/batches", config.endpoint());
        let key = config.api_key.clone();
        let redactor = Redactor::new(key.as_deref());
        let base = config.base_url.trim_end_matches('/').to_string();
        Ok(Self { bodies: AnthropicProvider::new(config)?, batches, key, client, redactor, base })
    }

    /// A request with the version header, and the key when `url` is on the configured server.
    fn request(&self, builder: reqwest::RequestBuilder, url: &str) -> reqwest::RequestBuilder {
        let builder = builder.header("anthropic-version", API_VERSION);
        match &self.key {
            Some(key) if same_origin(url, &self.batches) => builder.header("x-api-key", key),
            _ => builder,
        }
    }
}

/// Whether two URLs share scheme, host and port (a key goes only to its own server).
fn same_origin(a: &str, b: &str) -> bool {
    match (reqwest::Url::parse(a), reqwest::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

#[derive(Deserialize)]
struct BatchObject {
    id: String,
    processing_status: String,
    request_counts: Option<Counts>,
    results_url: Option<String>,
}

#[derive(Deserialize)]
struct Counts {
    processing: u64,
    succeeded: u64,
    errored: u64,
    canceled: u64,
    expired: u64,
}

#[derive(Deserialize)]
struct ResultLine {
    custom_id: String,
    result: LineOutcome,
}

#[derive(Deserialize)]
struct LineOutcome {
    #[serde(rename = "type")]
    kind: String,
    message: Option<Box<RawValue>>,
    error: Option<serde_json::Value>,
}

#[async_trait]
impl BatchApi for AnthropicBatch {
    fn kind(&self) -> &'static str {
        "anthropic"
    }

    fn endpoint(&self) -> &str {
        &self.base
    }

    fn body(&self, request: &ChatRequest) -> Result<(String, bool), ProviderError> {
        self.bodies.batch_params(request)
    }

    fn one_model_per_batch(&self) -> bool {
        false
    }
    fn max_bytes(&self) -> usize {
        240_000_000
    }

    async fn submit(&self, lines: &[Line], _key: &str) -> Result<Submitted, ProviderError> {
        let mut body = String::from("{\"requests\":[");
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            let id = serde_json::to_string(&line.custom_id).unwrap_or_default();
            body.push_str(&format!("{{\"custom_id\":{id},\"params\":{}}}", line.body));
        }
        body.push_str("]}");
        let post = self.client.post(&self.batches).header(reqwest::header::CONTENT_TYPE, "application/json").body(body);
        let b: BatchObject =
            api::parse(&api::send(self.request(post, &self.batches), &self.redactor).await?, "the new batch")?;
        Ok(Submitted { id: b.id, input_file: None })
    }

    async fn status(&self, id: &str) -> Result<Remote, ProviderError> {
        let url = format!("{}/{id}", self.batches);
        let get = self.request(self.client.get(&url), &url);
        let b: BatchObject = api::parse(&api::send(get, &self.redactor).await?, "the batch")?;
        let state = match b.processing_status.as_str() {
            "in_progress" | "canceling" => RemoteState::Pending,
            // Lines that expired or were cancelled say so themselves.
            "ended" => RemoteState::Ended,
            other => {
                return Err(ProviderError::Protocol(format!("batch {}: unknown processing_status {other:?}", b.id)));
            }
        };
        let counts = b.request_counts.map(|c| {
            format!(
                "{} processing, {} succeeded, {} errored, {} canceled, {} expired",
                c.processing, c.succeeded, c.errored, c.canceled, c.expired
            )
        });
        Ok(Remote { state, results: b.results_url.into_iter().collect(), counts })
    }

    async fn results(&self, remote: &Remote) -> Result<HashMap<String, LineResult>, ProviderError> {
        let mut out = HashMap::new();
        for url in &remote.results {
            let text = api::send(self.request(self.client.get(url), url), &self.redactor).await?;
            for line in api::jsonl::<ResultLine>(&text, "the batch's results")? {
                let why = || {
                    line.result
                        .error
                        .as_ref()
                        .map(|e| {
                            let inner = e.get("error").unwrap_or(e);
                            let kind = inner.get("type").and_then(|t| t.as_str()).unwrap_or("error");
                            let message = inner.get("message").and_then(|m| m.as_str()).unwrap_or_default();
                            format!("{message} ({kind})")
                        })
                        .unwrap_or_else(|| line.result.kind.clone())
                };
                let result = match (line.result.kind.as_str(), &line.result.message) {
                    ("succeeded", Some(m)) => LineResult::Reply(m.get().to_string()),
                    ("canceled" | "expired", _) => LineResult::NotRun(format!("the request was {}", line.result.kind)),
                    _ => LineResult::Error(why()),
                };
                out.insert(line.custom_id.clone(), result);
            }
        }
        Ok(out)
    }

    fn completion(&self, reply: &str, structured: bool) -> Result<Completion, ProviderError> {
        completion(reply, structured)
    }
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Vec<Block>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    /// A tool call's input, kept as written (its field order is the verdict's).
    input: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct WireUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

/// A message (not streamed) as a [`Completion`]: the verdict tool's input
/// through the speech splitter when the request asked for it, else its text.
fn completion(reply: &str, structured: bool) -> Result<Completion, ProviderError> {
    let m: Message = api::parse(reply, "a batch reply")?;
    let tool = m.content.iter().find(|b| b.kind == "tool_use").and_then(|b| b.input.as_ref());
    let text = match tool {
        Some(input) if structured => api::split_structured(input.get()),
        _ => m.content.iter().filter(|b| b.kind == "text").filter_map(|b| b.text.as_deref()).collect(),
    };
    if text.is_empty() && m.content.is_empty() {
        return Err(ProviderError::Protocol(format!("a batch reply without content: {}", excerpt(reply, 120))));
    }
    let usage = match m.usage {
        // Anthropic counts cached prompt tokens apart; moot's input counts the whole prompt.
        Some(u) => Usage {
            input_tokens: u.input_tokens
                + u.cache_read_input_tokens.unwrap_or(0)
                + u.cache_creation_input_tokens.unwrap_or(0),
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cache_read_input_tokens,
            ..Usage::default()
        },
        None => Usage { output_tokens: crate::provider::estimate_tokens(&text), estimated: true, ..Usage::default() },
    };
    Ok(Completion { text, usage, finish_reason: m.stop_reason, ..Completion::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_with_a_tool_call_or_text() {
        let tool = r#"{"id":"m","type":"message","role":"assistant","content":[{"type":"tool_use","id":"t","name":"verdict","input":{"speech":"Clear enough.","clarity":3}}],"stop_reason":"tool_use","usage":{"input_tokens":20,"output_tokens":8,"cache_read_input_tokens":100}}"#;
        let c = completion(tool, true).expect("a completion");
        assert!(c.text.starts_with("Clear enough."), "{}", c.text);
        assert!(c.text.contains("clarity"), "{}", c.text);
        assert_eq!((c.usage.input_tokens, c.usage.cached_input_tokens), (120, Some(100)));
        let text = r#"{"content":[{"type":"text","text":"Hello "},{"type":"text","text":"there"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}"#;
        assert_eq!(completion(text, false).unwrap().text, "Hello there");
        assert!(matches!(completion(r#"{"content":[]}"#, false), Err(ProviderError::Protocol(_))));
    }

    #[test]
    fn keys_go_only_to_their_own_server() {
        assert!(same_origin(
            "https://api.anthropic.com/v1/messages/batches/x/results",
            "https://api.anthropic.com/v1/messages/batches"
        ));
        assert!(!same_origin("https://elsewhere.example/results", "https://api.anthropic.com/v1/messages/batches"));
        assert!(!same_origin("http://127.0.0.1:9/x", "http://127.0.0.1:10/x"));
    }
}
