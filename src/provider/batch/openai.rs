//! OpenAI's Batch API: the lines go up as a JSONL file (`POST /files`,
//! `purpose=batch`), `POST /batches` starts the batch over them
//! (`/v1/chat/completions`, a 24-hour window), `GET /batches/{id}` says how
//! it stands, and its output and error files (`GET /files/{id}/content`)
//! hold one result line per request, in any order. A batch holds requests
//! for one model. Bodies are those of the streaming provider without
//! streaming ([`OpenAiProvider::batch_body`]).

use std::collections::HashMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::api::{self, BatchApi, Line, LineResult, Remote, RemoteState, Submitted};
use crate::provider::http::{self, Redactor, excerpt};
use crate::provider::logprobs::ChoiceLogprobs;
use crate::provider::openai::{OpenAiConfig, OpenAiProvider};
use crate::provider::{ChatRequest, Completion, ProviderError, Usage};

/// The endpoint every line of a batch goes to.
const CHAT_ENDPOINT: &str = "/v1/chat/completions";

/// OpenAI's Batch API on one base URL.
pub struct OpenAiBatch {
    bodies: OpenAiProvider,
    base: String,
    key: Option<String>,
    client: reqwest::Client,
    redactor: Redactor,
}

impl OpenAiBatch {
    /// The batch API beside the chat completions of `config` (its base URL and key).
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let client = http::build_client(&config.timeouts)?;
        let base = config.base_url.trim_end_matches('/').to_string();
        let key = config.api_key.clone();
        let redactor = Redactor::new(key.as_deref());
        Ok(Self { bodies: OpenAiProvider::new(config)?, base, key, client, redactor })
    }

    fn authed(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    async fn file_content(&self, id: &str) -> Result<String, ProviderError> {
        api::send(self.authed(self.client.get(format!("{}/files/{id}/content", self.base))), &self.redactor).await
    }
}

#[derive(Deserialize)]
struct FileObject {
    id: String,
}

#[derive(Deserialize)]
struct BatchObject {
    id: String,
    status: String,
    #[serde(default)]
    input_file_id: Option<String>,
    #[serde(default)]
    metadata: Option<HashMap<String, String>>,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    errors: Option<BatchErrors>,
    request_counts: Option<Counts>,
}

/// A page of `GET /batches` (newest first).
#[derive(Deserialize)]
struct BatchList {
    data: Vec<BatchObject>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    last_id: Option<String>,
}

/// Pages of batches `find` looks through (100 each, newest first).
const FIND_PAGES: usize = 5;

#[derive(Deserialize)]
struct BatchErrors {
    #[serde(default)]
    data: Vec<BatchError>,
}

#[derive(Deserialize)]
struct BatchError {
    code: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct Counts {
    total: u64,
    completed: u64,
    failed: u64,
}

#[derive(Deserialize)]
struct ResultLine {
    custom_id: String,
    response: Option<ResultResponse>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ResultResponse {
    status_code: u16,
    body: Box<RawValue>,
}

#[async_trait]
impl BatchApi for OpenAiBatch {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn endpoint(&self) -> &str {
        &self.base
    }

    fn body(&self, request: &ChatRequest) -> Result<(String, bool), ProviderError> {
        self.bodies.batch_body(request)
    }

    fn one_model_per_batch(&self) -> bool {
        true
    }
    fn max_bytes(&self) -> usize {
        190_000_000
    }

    async fn submit(&self, lines: &[Line], key: &str) -> Result<Submitted, ProviderError> {
        let mut jsonl = String::new();
        for line in lines {
            let id = serde_json::to_string(&line.custom_id).unwrap_or_default();
            jsonl.push_str(&format!(
                "{{\"custom_id\":{id},\"method\":\"POST\",\"url\":\"{CHAT_ENDPOINT}\",\"body\":{}}}\n",
                line.body
            ));
        }
        let part = reqwest::multipart::Part::text(jsonl)
            .file_name("moot-batch.jsonl")
            .mime_str("application/jsonl")
            .map_err(|e| ProviderError::Config(format!("batch file: {e}")))?;
        let form = reqwest::multipart::Form::new().text("purpose", "batch").part("file", part);
        let upload = self.authed(self.client.post(format!("{}/files", self.base)).multipart(form));
        let file: FileObject = api::parse(&api::send(upload, &self.redactor).await?, "the uploaded file")?;
        let create = serde_json::json!({
            "input_file_id": file.id,
            "endpoint": CHAT_ENDPOINT,
            "completion_window": "24h",
            "metadata": {"source": "moot eval", "moot_key": key},
        });
        let start = self.authed(self.client.post(format!("{}/batches", self.base)).json(&create));
        let batch: BatchObject = api::parse(&api::send(start, &self.redactor).await?, "the new batch")?;
        Ok(Submitted { id: batch.id, input_file: Some(file.id) })
    }

    /// Looks through the newest batches for the mark in their metadata.
    async fn find(&self, key: &str) -> Result<Option<Submitted>, ProviderError> {
        let mut after: Option<String> = None;
        for _ in 0..FIND_PAGES {
            let mut url = format!("{}/batches?limit=100", self.base);
            if let Some(a) = &after {
                url.push_str(&format!("&after={a}"));
            }
            let page: BatchList =
                api::parse(&api::send(self.authed(self.client.get(url)), &self.redactor).await?, "the batch list")?;
            let marked = page
                .data
                .iter()
                .find(|b| b.metadata.as_ref().and_then(|m| m.get("moot_key")).is_some_and(|k| k == key));
            if let Some(b) = marked {
                return Ok(Some(Submitted { id: b.id.clone(), input_file: b.input_file_id.clone() }));
            }
            match (page.has_more, page.last_id.or_else(|| page.data.last().map(|b| b.id.clone()))) {
                (true, Some(last)) => after = Some(last),
                _ => break,
            }
        }
        Ok(None)
    }

    async fn status(&self, id: &str) -> Result<Remote, ProviderError> {
        let get = self.authed(self.client.get(format!("{}/batches/{id}", self.base)));
        let b: BatchObject = api::parse(&api::send(get, &self.redactor).await?, "the batch")?;
        let state = match b.status.as_str() {
            "validating" | "in_progress" | "finalizing" | "cancelling" => RemoteState::Pending,
            "completed" => RemoteState::Ended,
            "expired" => RemoteState::Expired,
            "cancelled" => RemoteState::Cancelled,
            "failed" => {
                let why: Vec<String> = b
                    .errors
                    .map(|e| e.data)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| [e.code, e.message].into_iter().flatten().collect::<Vec<_>>().join(": "))
                    .collect();
                RemoteState::Failed(if why.is_empty() { "the batch failed".into() } else { why.join("; ") })
            }
            other => {
                return Err(ProviderError::Protocol(format!("batch {}: unknown status {other:?}", b.id)));
            }
        };
        let counts = b.request_counts.map(|c| format!("{} of {} done, {} failed", c.completed, c.total, c.failed));
        Ok(Remote { state, results: [b.output_file_id, b.error_file_id].into_iter().flatten().collect(), counts })
    }

    async fn results(&self, remote: &Remote) -> Result<HashMap<String, LineResult>, ProviderError> {
        let mut out = HashMap::new();
        for file in &remote.results {
            let text = self.file_content(file).await?;
            for line in api::jsonl::<ResultLine>(&text, &format!("results file {file}"))? {
                let result = match (line.response, line.error.filter(|e| !e.is_null())) {
                    (_, Some(error)) => {
                        let code = error.get("code").and_then(|c| c.as_str()).unwrap_or_default();
                        let message = error.get("message").and_then(|m| m.as_str()).unwrap_or(code).to_string();
                        match code {
                            "batch_expired" | "batch_cancelled" => LineResult::NotRun(message),
                            _ => LineResult::Error(format!("{message} ({code})")),
                        }
                    }
                    (Some(r), None) if (200..300).contains(&r.status_code) => {
                        LineResult::Reply(r.body.get().to_string())
                    }
                    (Some(r), None) => {
                        LineResult::Error(format!("HTTP {}: {}", r.status_code, excerpt(r.body.get(), 300)))
                    }
                    (None, None) => LineResult::Error("a result line with neither a response nor an error".into()),
                };
                out.insert(line.custom_id, result);
            }
        }
        Ok(out)
    }

    fn completion(&self, reply: &str, structured: bool) -> Result<Completion, ProviderError> {
        completion(reply, structured)
    }
}

#[derive(Deserialize)]
struct ChatCompletion {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<Message>,
    finish_reason: Option<String>,
    logprobs: Option<ChoiceLogprobs>,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

/// A chat completion (not streamed) as a [`Completion`].
fn completion(reply: &str, structured: bool) -> Result<Completion, ProviderError> {
    let c: ChatCompletion = api::parse(reply, "a batch reply")?;
    let choice =
        c.choices.into_iter().next().ok_or_else(|| {
            ProviderError::Protocol(format!("a batch reply without choices: {}", excerpt(reply, 120)))
        })?;
    let content = choice.message.and_then(|m| m.content).unwrap_or_default();
    let text = if structured { api::split_structured(&content) } else { content };
    let usage = match c.usage {
        Some(u) => Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cached_input_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
            ..Usage::default()
        },
        None => Usage { output_tokens: crate::provider::estimate_tokens(&text), estimated: true, ..Usage::default() },
    };
    let logprobs = choice.logprobs.and_then(|l| l.content).filter(|c| !c.is_empty());
    Ok(Completion { text, usage, finish_reason: choice.finish_reason, logprobs, ..Completion::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_with_usage_and_a_structured_reply() {
        let reply = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{\"speech\":\"Fine work.\",\"clarity\":4}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":32}}}"#;
        let c = completion(reply, true).expect("a completion");
        assert!(c.text.starts_with("Fine work."), "{}", c.text);
        assert!(c.text.contains("\"clarity\":4") || c.text.contains("\"clarity\": 4"), "{}", c.text);
        assert_eq!((c.usage.input_tokens, c.usage.output_tokens, c.usage.cached_input_tokens), (50, 9, Some(32)));
        assert_eq!(c.finish_reason.as_deref(), Some("stop"));
        let plain = completion(reply, false).expect("a completion");
        assert!(plain.text.starts_with("{\"speech\""), "unstructured text is kept as is");
        assert!(matches!(completion(r#"{"choices":[]}"#, false), Err(ProviderError::Protocol(_))));
        assert!(matches!(completion("oops", false), Err(ProviderError::Protocol(_))));
    }
}
