//! A local server speaking OpenAI's Batch API and Anthropic's Message
//! Batches, and both vendors' streaming chat endpoints, for tests of `moot
//! eval --batch`. Built on [`TestServer`]: real HTTP on 127.0.0.1.
//!
//! Every request, batched or live, is answered by one responder (the
//! request body in, the reply text out), so a batch run and a live run see
//! the same replies. A batch is over after [`BatchServer::set_polls`] looks
//! at it (its lines are run then, in reverse order, as results come in any
//! order); the next batches can be told to expire (OpenAI: `expired`, no
//! output; Anthropic: every line `expired`), to fail (OpenAI: `failed`;
//! Anthropic: every line `errored`), or to lose one line from their results.
//!
//! The answer to the next `POST /v1/batches` can be held back or lost
//! ([`Answer`]) while the batch is kept, as when a run is killed or a
//! network drops the answer.
//!
//! OpenAI paths: `POST /v1/files` (multipart, `purpose=batch`), `POST
//! /v1/batches`, `GET /v1/batches` (all on one page, newest first), `GET
//! /v1/batches/{id}`, `GET /v1/files/{id}/content`, `POST
//! /v1/chat/completions` (SSE). Anthropic paths: `POST /v1/messages/batches`,
//! `GET /v1/messages/batches/{id}`, `GET /v1/messages/batches/{id}/results`,
//! `POST /v1/messages` (SSE).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};

use super::server::{RecordedRequest, Reply, TestServer};

/// Writes the reply text for a request body (an OpenAI chat body or an
/// Anthropic Messages body).
pub type Responder = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// What becomes of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Complete,
    Expire,
    Fail,
    /// Complete, with the result of one line left out.
    LoseLine,
}

/// How the server answers a `POST /v1/batches` that it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The batch, as OpenAI's API does.
    Batch,
    /// No answer at all: the batch is held, the client waits (a run killed
    /// in that instant).
    Silence,
    /// 503, as if the answer were lost on the way: the batch is held.
    Lost,
}

/// One batch the server holds.
#[derive(Debug, Clone)]
pub struct HeldBatch {
    pub id: String,
    /// `openai` or `anthropic`.
    pub kind: &'static str,
    /// Custom ids and bodies, in the order submitted.
    pub lines: Vec<(String, Value)>,
    pub fate: Fate,
    /// OpenAI's metadata, as submitted.
    pub metadata: Value,
    polls: u32,
    /// Results as JSONL, once over.
    results: Option<String>,
    errors: Option<String>,
}

#[derive(Default)]
struct State {
    batches: Vec<HeldBatch>,
    files: HashMap<String, String>,
    fates: VecDeque<Fate>,
    answers: VecDeque<Answer>,
    polls: u32,
    live_calls: usize,
    next: u64,
}

/// The server and its batches.
pub struct BatchServer {
    server: TestServer,
    state: Arc<Mutex<State>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl BatchServer {
    /// Start a server answering with `responder`; batches are over at the second look.
    pub async fn start(responder: impl Fn(&Value) -> String + Send + Sync + 'static) -> std::io::Result<Self> {
        let server = TestServer::start().await?;
        let state = Arc::new(Mutex::new(State { polls: 2, ..State::default() }));
        let responder: Responder = Arc::new(responder);
        let url = server.url();
        let shared = state.clone();
        server.set_handler(move |req| handle(req, &shared, &responder, &url));
        Ok(Self { server, state })
    }

    /// `http://127.0.0.1:PORT/v1`: the base URL of the OpenAI side.
    pub fn openai_base_url(&self) -> String {
        self.server.base_url()
    }

    /// `http://127.0.0.1:PORT`: the base URL of the Anthropic side.
    pub fn anthropic_base_url(&self) -> String {
        self.server.url()
    }

    /// Batches are over at the `n`-th look at them (at least 1).
    pub fn set_polls(&self, n: u32) {
        lock(&self.state).polls = n.max(1);
    }

    /// The fate of the next batch submitted (queued: several calls, several batches).
    pub fn next_batch(&self, fate: Fate) {
        lock(&self.state).fates.push_back(fate);
    }

    /// How the next accepted `POST /v1/batches` is answered (queued).
    pub fn next_answer(&self, answer: Answer) {
        lock(&self.state).answers.push_back(answer);
    }

    /// Every batch submitted so far, in order.
    pub fn batches(&self) -> Vec<HeldBatch> {
        lock(&self.state).batches.clone()
    }

    /// Requests answered live (streamed), batches aside.
    pub fn live_calls(&self) -> usize {
        lock(&self.state).live_calls
    }

    /// Every HTTP request received.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }
}

fn handle(req: &RecordedRequest, state: &Mutex<State>, responder: &Responder, url: &str) -> Reply {
    let path = req.path.split('?').next().unwrap_or_default();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (req.method.as_str(), parts.as_slice()) {
        ("POST", ["v1", "chat", "completions"]) => {
            lock(state).live_calls += 1;
            let body = req.body_json().unwrap_or(Value::Null);
            let text = responder(&body);
            Reply::openai_stream(&[&text], Some(tokens(&body, &text)))
        }
        ("POST", ["v1", "messages"]) => {
            lock(state).live_calls += 1;
            let body = req.body_json().unwrap_or(Value::Null);
            let text = responder(&body);
            anthropic_stream(&text, tokens(&body, &text), body.get("tools").is_some())
        }
        ("POST", ["v1", "files"]) => match multipart_file(req) {
            Some(content) => {
                let mut s = lock(state);
                s.next += 1;
                let id = format!("file-{}", s.next);
                s.files.insert(id.clone(), content);
                Reply::json(200, &json!({"id": id, "object": "file", "purpose": "batch"}))
            }
            None => error(400, "no file part in the upload"),
        },
        ("POST", ["v1", "batches"]) => {
            let body = req.body_json().unwrap_or(Value::Null);
            let file = body["input_file_id"].as_str().unwrap_or_default().to_string();
            let mut s = lock(state);
            let Some(content) = s.files.get(&file).cloned() else { return error(404, "no such file") };
            let mut lines = Vec::new();
            for l in content.lines().filter(|l| !l.trim().is_empty()) {
                let Ok(v) = serde_json::from_str::<Value>(l) else { return error(400, "a line is not JSON") };
                lines.push((v["custom_id"].as_str().unwrap_or_default().to_string(), v["body"].clone()));
            }
            let id = new_batch(&mut s, "openai", lines);
            if let Some(b) = s.batches.iter_mut().find(|b| b.id == id) {
                b.metadata = body["metadata"].clone();
            }
            match s.answers.pop_front().unwrap_or(Answer::Batch) {
                Answer::Batch => Reply::json(200, &openai_batch(&s, &id)),
                Answer::Silence => Reply::silent(),
                Answer::Lost => error(503, "the answer was lost"),
            }
        }
        ("GET", ["v1", "batches"]) => {
            // Newest first, all on one page.
            let s = lock(state);
            let data: Vec<Value> =
                s.batches.iter().rev().filter(|b| b.kind == "openai").map(|b| openai_batch(&s, &b.id)).collect();
            Reply::json(200, &json!({"object": "list", "data": data, "has_more": false}))
        }
        ("GET", ["v1", "batches", id]) => {
            let mut s = lock(state);
            if !s.batches.iter().any(|b| b.id == *id) {
                return error(404, "no such batch");
            }
            look(&mut s, id, responder);
            Reply::json(200, &openai_batch(&s, id))
        }
        ("GET", ["v1", "files", id, "content"]) => match lock(state).files.get(*id) {
            Some(content) => Reply::text(200, content.clone()),
            None => error(404, "no such file"),
        },
        ("POST", ["v1", "messages", "batches"]) => {
            let body = req.body_json().unwrap_or(Value::Null);
            let lines = body["requests"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .map(|x| (x["custom_id"].as_str().unwrap_or_default().to_string(), x["params"].clone()))
                        .collect()
                })
                .unwrap_or_default();
            let mut s = lock(state);
            let id = new_batch(&mut s, "anthropic", lines);
            Reply::json(200, &anthropic_batch(&s, &id, url))
        }
        ("GET", ["v1", "messages", "batches", id]) => {
            let mut s = lock(state);
            if !s.batches.iter().any(|b| b.id == *id) {
                return error(404, "no such batch");
            }
            look(&mut s, id, responder);
            Reply::json(200, &anthropic_batch(&s, id, url))
        }
        ("GET", ["v1", "messages", "batches", id, "results"]) => {
            match lock(state).batches.iter().find(|b| b.id == *id).and_then(|b| b.results.clone()) {
                Some(r) => Reply::text(200, r),
                None => error(404, "no results yet"),
            }
        }
        _ => error(404, &format!("no route for {} {}", req.method, req.path)),
    }
}

fn error(status: u16, message: &str) -> Reply {
    Reply::json(status, &json!({"error": {"message": message, "type": "invalid_request_error"}}))
}

/// Token counts from the sizes of the request and the reply.
fn tokens(body: &Value, text: &str) -> (u64, u64) {
    ((body.to_string().len() as u64).div_ceil(4), (text.len() as u64).div_ceil(4).max(1))
}

fn new_batch(s: &mut State, kind: &'static str, lines: Vec<(String, Value)>) -> String {
    s.next += 1;
    let id = match kind {
        "openai" => format!("batch_{}", s.next),
        _ => format!("msgbatch_{}", s.next),
    };
    let fate = s.fates.pop_front().unwrap_or(Fate::Complete);
    s.batches.push(HeldBatch {
        id: id.clone(),
        kind,
        lines,
        fate,
        metadata: Value::Null,
        polls: 0,
        results: None,
        errors: None,
    });
    id
}

/// A look at batch `id`: at the set number of looks it is over and its results are written.
fn look(s: &mut State, id: &str, responder: &Responder) {
    let polls = s.polls;
    let mut files = Vec::new();
    if let Some(b) = s.batches.iter_mut().find(|b| b.id == id) {
        b.polls += 1;
        if b.polls >= polls && b.results.is_none() {
            let (results, errors) = run_lines(b, responder);
            if b.kind == "openai" {
                files.push((format!("{id}-output"), results.clone()));
                files.push((format!("{id}-errors"), errors.clone()));
            }
            b.results = Some(results);
            b.errors = Some(errors);
        }
    }
    for (name, content) in files {
        s.files.insert(name, content);
    }
}

/// The result lines of a batch (reverse order), and its error lines.
fn run_lines(b: &HeldBatch, responder: &Responder) -> (String, String) {
    let mut results = String::new();
    let mut errors = String::new();
    for (i, (custom_id, body)) in b.lines.iter().enumerate().rev() {
        let line = match (b.kind, b.fate) {
            (_, Fate::LoseLine) if i == 0 => continue,
            ("openai", Fate::Expire) => {
                errors.push_str(
                    &json!({"id": format!("r{i}"), "custom_id": custom_id, "response": null,
                        "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}})
                    .to_string(),
                );
                errors.push('\n');
                continue;
            }
            ("openai", Fate::Fail) => continue,
            ("openai", _) => {
                let text = responder(body);
                let (input, output) = tokens(body, &text);
                json!({"id": format!("r{i}"), "custom_id": custom_id, "error": null, "response": {"status_code": 200, "request_id": format!("req{i}"), "body": {
                    "id": format!("chatcmpl-{i}"), "object": "chat.completion",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}}}})
            }
            (_, Fate::Expire) => json!({"custom_id": custom_id, "result": {"type": "expired"}}),
            (_, Fate::Fail) => json!({"custom_id": custom_id, "result": {"type": "errored",
                "error": {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}}}),
            _ => {
                let text = responder(body);
                let (input, output) = tokens(body, &text);
                // A verdict tool's input is written as the model wrote it (its field order kept).
                let (content, stop) = match body.get("tools") {
                    Some(_) if serde_json::from_str::<Value>(&text).is_ok() => (
                        format!(
                            "[{{\"type\":\"tool_use\",\"id\":\"toolu_{i}\",\"name\":\"verdict\",\"input\":{text}}}]"
                        ),
                        "tool_use",
                    ),
                    _ => (json!([{"type": "text", "text": text}]).to_string(), "end_turn"),
                };
                let id = serde_json::to_string(custom_id).unwrap_or_default();
                results.push_str(&format!(
                    "{{\"custom_id\":{id},\"result\":{{\"type\":\"succeeded\",\"message\":{{\"id\":\"msg_{i}\",\"type\":\"message\",\"role\":\"assistant\",\"model\":{},\"content\":{content},\"stop_reason\":\"{stop}\",\"usage\":{{\"input_tokens\":{input},\"output_tokens\":{output}}}}}}}}}\n",
                    body["model"]
                ));
                continue;
            }
        };
        results.push_str(&line.to_string());
        results.push('\n');
    }
    (results, errors)
}

fn openai_batch(s: &State, id: &str) -> Value {
    let Some(b) = s.batches.iter().find(|b| b.id == id) else { return Value::Null };
    let total = b.lines.len();
    let (status, output, errors) = match (&b.results, b.fate) {
        (None, _) => ("in_progress", Value::Null, Value::Null),
        (Some(_), Fate::Expire) => ("expired", Value::Null, json!(format!("{id}-errors"))),
        (Some(_), Fate::Fail) => ("failed", Value::Null, Value::Null),
        (Some(_), _) => ("completed", json!(format!("{id}-output")), json!(format!("{id}-errors"))),
    };
    let failed = if b.fate == Fate::Fail {
        json!({"object": "list", "data": [{"code": "invalid_request", "message": "the input file could not be read"}]})
    } else {
        Value::Null
    };
    json!({"id": id, "object": "batch", "endpoint": "/v1/chat/completions", "status": status, "metadata": b.metadata,
        "completion_window": "24h", "output_file_id": output, "error_file_id": errors, "errors": failed,
        "request_counts": {"total": total, "completed": if b.results.is_some() { total } else { 0 }, "failed": 0}})
}

fn anthropic_batch(s: &State, id: &str, url: &str) -> Value {
    let Some(b) = s.batches.iter().find(|b| b.id == id) else { return Value::Null };
    let n = b.lines.len();
    let over = b.results.is_some();
    json!({"id": id, "type": "message_batch", "processing_status": if over { "ended" } else { "in_progress" },
        "request_counts": {"processing": if over { 0 } else { n }, "succeeded": if over { n } else { 0 }, "errored": 0, "canceled": 0, "expired": 0},
        "results_url": if over { json!(format!("{url}/v1/messages/batches/{id}/results")) } else { Value::Null }})
}

/// An Anthropic Messages stream of `text`: a verdict tool's input when the
/// request offered the tool and `text` is JSON, else text.
fn anthropic_stream(text: &str, (input, output): (u64, u64), tool: bool) -> Reply {
    let frame = |event: &str, data: Value| format!("event: {event}\ndata: {data}\n\n");
    let tool = tool && serde_json::from_str::<Value>(text).is_ok();
    let (block, delta) = match tool {
        true => (
            json!({"type": "tool_use", "id": "toolu", "name": "verdict", "input": {}}),
            json!({"type": "input_json_delta", "partial_json": text}),
        ),
        false => (json!({"type": "text", "text": ""}), json!({"type": "text_delta", "text": text})),
    };
    Reply::sse()
        .write(frame("message_start", json!({"type": "message_start", "message": {"id": "msg", "usage": {"input_tokens": input, "output_tokens": 1}}})))
        .write(frame("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": block})))
        .write(frame("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": delta})))
        .write(frame("content_block_stop", json!({"type": "content_block_stop", "index": 0})))
        .write(frame("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": output}})))
        .write(frame("message_stop", json!({"type": "message_stop"})))
}

/// The content of the part named `file` of a multipart upload.
fn multipart_file(req: &RecordedRequest) -> Option<String> {
    let boundary = req.header("content-type")?.split("boundary=").nth(1)?.trim_matches('"').to_string();
    let body = req.body_text();
    let delimiter = format!("--{boundary}");
    body.split(&delimiter).find_map(|part| {
        let (head, content) = part.split_once("\r\n\r\n")?;
        head.contains("name=\"file\"").then(|| content.strip_suffix("\r\n").unwrap_or(content).to_string())
    })
}

/// Prose for a request that asks for no verdict (evaluation steps, a synthesis).
pub const PROSE: &str = "1. Read the text and its source.\n2. Check each claim against the source.\n3. Weigh what matters most to the reader.";

/// The responder of a server that honours structured output, for both
/// vendors: a request with a verdict schema (OpenAI's `response_format`,
/// Anthropic's verdict tool) gets an object that follows it, drawn from a
/// hash of the request's messages (so a batched and a live request get the
/// same reply); any other request gets [`PROSE`].
pub fn schema_responder(body: &Value) -> String {
    let schema = body.pointer("/response_format/json_schema/schema").or_else(|| body.pointer("/tools/0/input_schema"));
    match schema {
        Some(schema) => {
            let messages = format!("{}{}", body["system"], body["messages"]);
            let seed = messages
                .bytes()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
            super::schema_json(schema, seed >> 7)
        }
        None => PROSE.to_string(),
    }
}
