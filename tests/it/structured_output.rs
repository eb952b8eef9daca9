//! Structured output for HTTP providers, against local HTTP servers: the
//! verdict's schema sent as `response_format` (speech first), the fallback
//! when a server refuses it, Anthropic's forced tool call, and replies the
//! parser salvages (cut off, unescaped quotes).

use std::process::Command;
use std::time::Duration;

use moot::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::provider::structured::StructuredOutput;
use moot::provider::{ChatMessage, ChatRequest, Completion, Provider, ProviderError};
use moot::session::event::EndStatus;
use moot::session::{EventKind, read_log};
use moot::testkit::judge_reply;
use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn verdict_schema() -> Value {
    json!({"type": "object",
           "properties": {"grammar": {"type": "integer", "minimum": 1, "maximum": 5},
                          "justification": {"type": "string"}},
           "required": ["grammar", "justification"], "additionalProperties": false})
}

fn verdict_request() -> ChatRequest {
    let mut r = ChatRequest::new(vec![ChatMessage::system("Judge."), ChatMessage::user("Rate the grammar.")]);
    r.response_schema = Some(std::sync::Arc::new(verdict_schema()));
    r.max_tokens = 300;
    r
}

fn openai_provider(server: &TestServer, form: StructuredOutput) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig {
        base_url: server.base_url(),
        structured_output: form,
        ..OpenAiConfig::default()
    })
    .unwrap()
}

/// A stream of `text` in chunks of `size` characters.
fn streamed(text: &str, size: usize, finish: &str) -> Reply {
    let chars: Vec<char> = text.chars().collect();
    let mut reply = Reply::sse().event(&openai::role_chunk());
    for c in chars.chunks(size) {
        reply = reply.event(&openai::content_chunk(&c.iter().collect::<String>()));
    }
    reply.event(&openai::finish_chunk(finish)).event("[DONE]")
}

async fn stream(provider: &dyn Provider, request: &ChatRequest) -> (Result<Completion, ProviderError>, Vec<String>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = provider.stream(request, &tx, &CancellationToken::new()).await;
    let mut deltas = Vec::new();
    while let Ok(d) = rx.try_recv() {
        deltas.push(d);
    }
    (result, deltas)
}

#[tokio::test]
async fn the_schema_goes_as_json_schema_with_the_speech_first_and_the_speech_streams_as_prose() {
    let server = TestServer::start().await.unwrap();
    let reply = r#"{"speech": "The sentence \"flows\" well.\nOne comma is missing.", "grammar": 4, "justification": "A missing comma."}"#;
    server.push(streamed(reply, 7, "stop"));
    let provider = openai_provider(&server, StructuredOutput::Auto);
    let (result, deltas) = stream(&provider, &verdict_request()).await;
    let c = result.unwrap();
    assert_eq!(
        c.text,
        "The sentence \"flows\" well.\nOne comma is missing.\n\n{\"grammar\":4,\"justification\":\"A missing comma.\"}"
    );
    assert_eq!(deltas.concat(), c.text, "the deltas are the text");
    assert!(deltas.len() > 3 && deltas[0] == "Th", "the speech streams: {deltas:?}");
    let req = &server.requests()[0];
    let raw = req.body_text();
    assert!(raw.contains("\"schema\":{\"type\":\"object\",\"properties\":{\"speech\":"), "speech first: {raw}");
    let body = req.body_json().unwrap();
    assert_eq!(body["response_format"]["type"], "json_schema");
    let schema = &body["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["speech", "grammar", "justification"]));
    assert_eq!(schema["properties"]["grammar"], verdict_schema()["properties"]["grammar"]);
    assert_eq!(schema["additionalProperties"], false);
    let last = body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(last.starts_with("Rate the grammar.") && last.contains("\"speech\""), "{last}");
    assert_eq!(provider.structured_form(), StructuredOutput::JsonSchema);

    // A request without a schema (a moderator, a synthesis) asks for nothing.
    server.push(Reply::openai_stream(&["Plain."], None));
    let (result, _) = stream(&provider, &ChatRequest::new(vec![ChatMessage::user("hi")])).await;
    assert_eq!(result.unwrap().text, "Plain.");
    assert!(server.requests()[1].body_json().unwrap().get("response_format").is_none());
}

#[tokio::test]
async fn auto_falls_back_once_per_refusal_and_remembers_it() {
    let server = TestServer::start().await.unwrap();
    let refuse = |what: &str| {
        Reply::json(400, &json!({"error": {"message": format!("'response_format.type' {what} is not supported")}}))
    };
    server.push_all([
        refuse("json_schema"),
        streamed("{\"speech\": \"Fine.\", \"grammar\": 5, \"justification\": \"ok\"}", 9, "stop"),
        streamed("{\"speech\": \"Again.\", \"grammar\": 3, \"justification\": \"ok\"}", 9, "stop"),
    ]);
    let provider = openai_provider(&server, StructuredOutput::Auto);
    let (r, _) = stream(&provider, &verdict_request()).await;
    assert!(r.unwrap().text.starts_with("Fine.\n\n{"));
    let (r, _) = stream(&provider, &verdict_request()).await;
    assert!(r.unwrap().text.starts_with("Again."));
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(bodies.len(), 3, "one refusal, one retry, then the remembered form");
    assert_eq!(bodies[0]["response_format"]["type"], "json_schema");
    assert_eq!(bodies[1]["response_format"], json!({"type": "json_object"}));
    assert_eq!(bodies[2]["response_format"], json!({"type": "json_object"}));
    let last = bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(last.contains("must follow this JSON schema"), "json_object puts the schema in the prompt: {last}");
    assert_eq!(provider.structured_form(), StructuredOutput::JsonObject);

    // A server that refuses both gets none, and its prose replies stream as they are.
    let server = TestServer::start().await.unwrap();
    server.push_all([
        refuse("json_schema"),
        refuse("json_object"),
        Reply::openai_stream(&["Good.", " {\"grammar\": 4, \"justification\": \"ok\"}"], None),
    ]);
    let provider = openai_provider(&server, StructuredOutput::Auto);
    let (r, _) = stream(&provider, &verdict_request()).await;
    assert_eq!(r.unwrap().text, "Good. {\"grammar\": 4, \"justification\": \"ok\"}");
    assert!(server.requests()[2].body_json().unwrap().get("response_format").is_none());
    assert_eq!(provider.structured_form(), StructuredOutput::Off);

    // A form set in the configuration is not given up: the refusal is the answer.
    let server = TestServer::start().await.unwrap();
    server.push(refuse("json_schema"));
    let (r, _) = stream(&openai_provider(&server, StructuredOutput::JsonSchema), &verdict_request()).await;
    assert!(matches!(r, Err(ProviderError::Http { status: 400, .. })), "{r:?}");
    assert_eq!(server.request_count(), 1);
}

fn anthropic_frame(event: &str, data: Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

#[tokio::test]
async fn anthropic_is_asked_for_a_forced_tool_call_whose_input_streams_as_speech_then_verdict() {
    let server = TestServer::start().await.unwrap();
    let input = r#"{"speech": "Clear and short.", "grammar": 5, "justification": "No errors."}"#;
    let mut reply = Reply::sse()
        .write(anthropic_frame(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 30, "output_tokens": 1}}}),
        ))
        .write(anthropic_frame(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "tool_use", "id": "t1", "name": "verdict", "input": {}}}),
        ));
    let chars: Vec<char> = input.chars().collect();
    for c in chars.chunks(6) {
        reply = reply.write(anthropic_frame(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": c.iter().collect::<String>()}}),
        ));
    }
    reply = reply
        .write(anthropic_frame(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
        ))
        .write(anthropic_frame("message_stop", json!({"type": "message_stop"})));
    server.push(reply);
    let provider = AnthropicProvider::new(AnthropicConfig {
        base_url: server.base_url(),
        api_key: Some("k".into()),
        ..AnthropicConfig::default()
    })
    .unwrap();
    let (result, deltas) = stream(&provider, &verdict_request()).await;
    let c = result.unwrap();
    assert_eq!(c.text, "Clear and short.\n\n{\"grammar\":5,\"justification\":\"No errors.\"}");
    assert!(deltas[0].starts_with("Cl"), "{deltas:?}");
    let req = &server.requests()[0];
    assert!(req.body_text().contains("\"input_schema\":{\"type\":\"object\",\"properties\":{\"speech\":"));
    let body = req.body_json().unwrap();
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "verdict"}));
    assert_eq!(body["tools"][0]["input_schema"]["required"], json!(["speech", "grammar", "justification"]));
    assert_eq!(provider.structured_form(), StructuredOutput::Tool);
}

/// A server that answers every schema'd request with JSON that follows the
/// schema it was sent (checked: speech first, every property required),
/// and every other request as [`judge_reply`] does.
fn conforming_judge(r: &RecordedRequest) -> Reply {
    let body = r.body_json().unwrap_or_default();
    let Some(format) = body.get("response_format") else {
        return judge_reply(r, Duration::ZERO);
    };
    let schema = &format["json_schema"]["schema"];
    let raw = r.body_text();
    let props = schema["properties"].as_object().cloned().unwrap_or_default();
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    // A first evaluation asks for its verdict at once: no speech.
    let speech = props.contains_key("speech");
    if format["type"] != "json_schema"
        || speech && !raw.contains("\"properties\":{\"speech\":")
        || props.keys().any(|k| !required.contains(&k.as_str()))
        || !props.contains_key("overall")
    {
        return Reply::json(422, &json!({"error": {"message": format!("unexpected schema: {schema}")}}));
    }
    let mut fields = Vec::new();
    if speech {
        fields.push("\"speech\": \"I have read the item carefully. It is mostly fine.\"".to_string());
    }
    for (key, prop) in props.iter().filter(|(k, _)| *k != "speech") {
        let value = match prop["type"].as_str() {
            Some("integer") => json!(prop["maximum"].as_i64().unwrap_or(5) - 1),
            Some("number") => json!(0.7),
            _ => json!(format!("{key} is fine.")),
        };
        fields.push(format!("\"{key}\": {value}"));
    }
    let out = format!("{{{}}}", fields.join(", "));
    streamed(&out, 11, "stop")
}

fn moot() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_moot"));
    c.env_remove("OPENAI_API_KEY").env_remove("ANTHROPIC_API_KEY").env("NO_COLOR", "1").env("MOOT_USER", "tester");
    c
}

async fn headless_run(server: &TestServer, out: &std::path::Path) -> (String, moot::session::LoadedLog) {
    let mut c = moot();
    c.env("OPENAI_BASE_URL", server.base_url()).args([
        "run",
        "storybook-qa",
        "--id",
        "qa-03",
        "--headless",
        "--provider",
        "openai",
        "--model",
        "judge-model",
        "--moderator",
        "round-robin",
        "--out",
    ]);
    c.arg(out);
    let output = tokio::task::spawn_blocking(move || c.output().unwrap()).await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let log = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"));
    (stdout, read_log(&log.unwrap()).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_debate_on_a_server_that_follows_the_schema_reads_every_verdict_and_shows_the_speech() {
    let server = TestServer::with_handler(conforming_judge).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let (stdout, log) = headless_run(&server, out.path()).await;
    let structured = server.requests().iter().filter(|r| r.body_text().contains("\"response_format\"")).count();
    assert!(structured >= 6, "every agent turn asked for its verdict's schema ({structured})");
    let mut read = 0;
    for e in &log.events {
        if let EventKind::TurnCompleted { evaluation, parse_error, agent, .. } = &e.kind {
            assert_eq!(parse_error, &None, "{agent}: {parse_error:?}");
            read += usize::from(evaluation.is_some());
        }
    }
    assert!(read >= 6);
    assert!(stdout.contains("It is mostly fine.\n  ✓ grammar "), "speech, then the scores line:\n{stdout}");
    assert!(!stdout.contains("\"speech\""), "the JSON is not shown:\n{stdout}");
    assert!(matches!(&log.events.last().unwrap().kind, EventKind::SessionEnded { status: EndStatus::Completed, .. }));
}

/// Every schema'd request answered with `broken`'s verdict; the rest as [`judge_reply`].
fn broken_judge(r: &RecordedRequest, cut: bool) -> Reply {
    let body = r.body_json().unwrap_or_default();
    let Some(schema) = body.get("response_format").map(|f| f["json_schema"]["schema"].clone()) else {
        return judge_reply(r, Duration::ZERO);
    };
    let keys: Vec<String> = schema["properties"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, p)| p["type"] == "integer")
        .map(|(k, _)| k.clone())
        .collect();
    let scores: String = keys.iter().map(|k| format!(", \"{k}\": 3")).collect();
    let text = if cut {
        format!("{{\"speech\": \"Mostly right.\"{scores}, \"confidence\": 0.6, \"justification\": \"The answer says")
    } else {
        format!(
            "{{\"speech\": \"Mostly right.\"{scores}, \"confidence\": 0.6, \"justification\": \"It says \"So Pebble\" well.\"}}"
        )
    };
    streamed(&text, 13, if cut { "length" } else { "stop" })
}

#[tokio::test(flavor = "multi_thread")]
async fn cut_and_malformed_verdicts_are_salvaged_marked_and_never_invented() {
    for cut in [true, false] {
        let server = TestServer::with_handler(move |r| broken_judge(r, cut)).await.unwrap();
        let out = tempfile::tempdir().unwrap();
        let (stdout, log) = headless_run(&server, out.path()).await;
        let mut salvaged = 0;
        for e in &log.events {
            if let EventKind::TurnCompleted { evaluation: Some(ev), truncated, .. } = &e.kind
                && ev.justification.contains("Mostly right")
            {
                let why = ev.salvaged.as_deref().expect("marked as salvaged");
                assert!(why.contains(if cut { "cut off" } else { "malformed" }), "{why}");
                assert_eq!(*truncated, cut, "a reply stopped at its limit is recorded as such");
                assert!(ev.scores.values().all(|v| *v == 3.0));
                salvaged += 1;
            }
        }
        assert!(salvaged >= 6, "every agent's verdict was salvaged ({salvaged})");
        assert!(stdout.contains("salvaged: its JSON object was"), "{stdout}");
        if cut {
            assert!(stdout.contains("cut at the reply limit"), "{stdout}");
        }
    }
}
