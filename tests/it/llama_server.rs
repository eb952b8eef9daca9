//! An `openai` provider in front of a llama.cpp server, against a local HTTP
//! server that answers as llama.cpp's does (its `/props`, `timings` in its
//! last chunk): once the server has shown itself, requests go in the lean form — the
//! embedded model's reply as a GBNF `grammar`, the opening words as the
//! assistant's reply so far, the embedded model's repetition penalty, DRY
//! for a speech that may not copy its discussion —
//! and other servers never get llama.cpp's fields.

use std::sync::Arc;

use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::provider::structured::StructuredOutput;
use moot::provider::{ChatMessage, ChatRequest, Completion, NoCopy, Provider, ProviderError};
use moot::testkit::server::{Reply, TestServer, openai};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn schema() -> Value {
    json!({"type": "object",
           "properties": {"grammar": {"type": "integer", "minimum": 1, "maximum": 5},
                          "justification": {"type": "string", "maxLength": 200}},
           "required": ["grammar", "justification"], "additionalProperties": false})
}

fn speech() -> ChatRequest {
    let mut r = ChatRequest::new(vec![ChatMessage::system("Judge."), ChatMessage::user("Answer Dana.")]);
    r.response_schema = Some(Arc::new(schema()));
    r.max_tokens = 300;
    r.opening = Some("Dana, I".into());
    r.no_copy = Some(Arc::new(NoCopy { avoid: vec!["Dana: the story reads well.".into()], ..NoCopy::default() }));
    r
}

/// A llama.cpp-style stream: `deltas`, then usage and `timings`.
fn llama_reply(deltas: &[&str], prompt: u64, completion: u64, cache_n: u64) -> Reply {
    let mut reply = Reply::sse().event(&openai::role_chunk());
    for d in deltas {
        reply = reply.event(&openai::content_chunk(d));
    }
    let last = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
                      "timings": {"cache_n": cache_n, "prompt_n": prompt - cache_n}});
    reply.event(&last.to_string()).event("[DONE]")
}

fn provider(server: &TestServer, form: StructuredOutput) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig {
        base_url: server.base_url(),
        structured_output: form,
        ..OpenAiConfig::default()
    })
    .unwrap()
}

async fn stream(provider: &dyn Provider, request: &ChatRequest) -> (Result<Completion, ProviderError>, String) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = provider.stream(request, &tx, &CancellationToken::new()).await;
    let mut deltas = String::new();
    while let Ok(d) = rx.try_recv() {
        deltas.push_str(&d);
    }
    (result, deltas)
}

#[tokio::test]
async fn a_llama_cpp_server_gets_the_embedded_models_reply_as_a_grammar() {
    let server = TestServer::start().await.unwrap();
    // The first call goes as to any server: its /props said nothing (404).
    server.push(llama_reply(&["{\"speech\": \"Hi.\", \"grammar\": 4, \"justification\": \"ok\"}"], 50, 20, 0));
    let words =
        " disagree: the second sentence lacks a verb.\n{\"grammar\": 3, \"justification\": \"One verb is missing.\"}";
    server.push(llama_reply(&[&words[..20], &words[20..]], 60, 31, 48));
    let p = provider(&server, StructuredOutput::Auto);
    assert!(!p.is_llama_cpp());
    let (first, _) = stream(&p, &speech()).await;
    assert!(first.unwrap().text.starts_with("Hi.\n\n{"));
    assert!(p.is_llama_cpp(), "the stream's timings name llama.cpp");

    let (second, deltas) = stream(&p, &speech()).await;
    let c = second.unwrap();
    assert_eq!(c.text, format!("Dana, I{words}"), "the opening words, then what the server wrote");
    assert_eq!(deltas, c.text, "the deltas are the text");
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens, c.usage.cached_input_tokens), (60, 31, Some(48)));

    let requests = server.requests();
    assert_eq!(requests[0].header("connection"), None);
    assert_eq!(requests[1].header("connection"), Some("close"), "llama.cpp closes it after the stream anyway");
    let bodies: Vec<Value> = requests.iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(bodies[0]["response_format"]["type"], "json_schema");
    assert!(bodies[0].get("grammar").is_none() && bodies[0].get("repeat_penalty").is_none());
    let lean = &bodies[1];
    assert!(lean.get("response_format").is_none(), "a grammar instead: {lean}");
    let grammar = lean["grammar"].as_str().unwrap();
    assert!(grammar.starts_with("root ::= prose \"\\n\" \"\\n\"? object\n"), "{grammar}");
    assert!(grammar.contains(r#"object ::= "{" "\"grammar\"" ": " v0 ", " "\"justification\"" ": " v1 "}""#));
    assert_eq!(lean["repeat_penalty"], json!(1.1));
    assert_eq!(lean["repeat_last_n"], json!(64));
    assert_eq!(lean["dry_multiplier"], json!(0.8), "DRY stands in for the copy guard");
    assert_eq!(lean["dry_penalty_last_n"], json!(2048));
    assert_eq!(lean["max_tokens"], json!(300));
    let messages = lean["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap(), &json!({"role": "assistant", "content": "Dana, I"}));
    let user = messages[messages.len() - 2]["content"].as_str().unwrap();
    assert_eq!(user, "Answer Dana.", "no instruction to write JSON: the prompt is the embedded model's");

    // A verdict wanted at once: the object alone, no penalties, no opening.
    server.push(llama_reply(&["{\"grammar\": 5, \"justification\": \"Fine.\"}"], 40, 12, 30));
    let mut at_once = speech();
    at_once.prose_first = false;
    let (r, _) = stream(&p, &at_once).await;
    assert_eq!(r.unwrap().text, "{\"grammar\": 5, \"justification\": \"Fine.\"}");
    let body = server.requests()[2].body_json().unwrap();
    assert!(body["grammar"].as_str().unwrap().starts_with("root ::= \"{\""), "{body}");
    assert!(body.get("repeat_penalty").is_none() && body.get("dry_multiplier").is_none());
    assert_eq!(body["messages"].as_array().unwrap().last().unwrap()["role"], "user");

    // A server that streams the opening words back (llama.cpp's does, in
    // some versions): they are not doubled, even split over chunks.
    let echoed = "Dana, I agree that it reads well.\n{\"grammar\": 4, \"justification\": \"Fine.\"}";
    server.push(llama_reply(&["Da", "na, ", "I agree", &echoed[13..]], 60, 20, 40));
    let (r, deltas) = stream(&p, &speech()).await;
    assert_eq!(r.unwrap().text, echoed);
    assert_eq!(deltas, echoed);
}

#[tokio::test]
async fn a_server_that_refuses_the_lean_form_is_asked_as_any_server_from_then_on() {
    let server = TestServer::start().await.unwrap();
    server.push_all([
        llama_reply(&["Plain words."], 10, 3, 0),
        Reply::json(
            400,
            &json!({"error": {"message": "Cannot have 2 or more assistant messages", "type": "invalid_request_error"}}),
        ),
        llama_reply(&["{\"speech\": \"Dana, I agree.\", \"grammar\": 4, \"justification\": \"ok\"}"], 50, 20, 0),
        llama_reply(&["{\"speech\": \"Again.\", \"grammar\": 4, \"justification\": \"ok\"}"], 50, 20, 0),
    ]);
    let p = provider(&server, StructuredOutput::Auto);
    let (r, _) = stream(&p, &ChatRequest::new(vec![ChatMessage::user("hi")])).await;
    assert_eq!(r.unwrap().text, "Plain words.");
    let (r, _) = stream(&p, &speech()).await;
    assert!(r.unwrap().text.starts_with("Dana, I agree.\n\n{"), "asked again at once, OpenAI's way");
    let (r, _) = stream(&p, &speech()).await;
    assert!(r.unwrap().text.starts_with("Again."));
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(bodies.len(), 4);
    assert!(bodies[1].get("grammar").is_some());
    for b in &bodies[2..] {
        assert!(b.get("grammar").is_none() && b.get("repeat_penalty").is_none(), "{b}");
        assert_eq!(b["response_format"]["type"], "json_schema");
    }
}

#[tokio::test]
async fn a_pinned_form_or_another_server_never_gets_llama_cpps_fields() {
    let server = TestServer::start().await.unwrap();
    let json_reply = "{\"speech\": \"Dana, I see.\", \"grammar\": 4, \"justification\": \"ok\"}";
    server.push_all([llama_reply(&[json_reply], 50, 20, 0), llama_reply(&[json_reply], 50, 20, 0)]);
    let pinned = provider(&server, StructuredOutput::JsonSchema);
    for _ in 0..2 {
        let (r, _) = stream(&pinned, &speech()).await;
        assert!(r.unwrap().text.starts_with("Dana, I see."));
    }
    assert!(pinned.is_llama_cpp());
    // A server without timings (vLLM, OpenAI) is never taken for llama.cpp.
    let other = TestServer::start().await.unwrap();
    other.push_all([
        Reply::openai_stream(&[json_reply], Some((50, 20))),
        Reply::openai_stream(&[json_reply], Some((50, 20))),
    ]);
    let auto = provider(&other, StructuredOutput::Auto);
    for _ in 0..2 {
        let (r, _) = stream(&auto, &speech()).await;
        assert!(r.unwrap().text.starts_with("Dana, I see."));
    }
    assert!(!auto.is_llama_cpp());
    for req in server.requests().iter().chain(other.requests().iter()) {
        let b = req.body_json().unwrap();
        assert!(b.get("grammar").is_none() && b.get("repeat_penalty").is_none(), "{b}");
        assert!(b.get("dry_multiplier").is_none(), "{b}");
        assert_eq!(b["messages"].as_array().unwrap().last().unwrap()["role"], "user");
    }
}

/// What llama.cpp's server answers to `GET /props` (abridged).
fn llama_props() -> Value {
    json!({"default_generation_settings": {"params": {"temperature": 0.8}, "n_ctx": 8192},
           "total_slots": 4, "model_path": "qwen2.5-coder-0.5b.gguf", "build_info": "b1-test"})
}

#[tokio::test]
async fn a_server_that_answers_props_as_llama_cpp_gets_the_lean_form_from_the_first_call() {
    let server = TestServer::start().await.unwrap();
    server.serve_props(llama_props());
    let words = " agree.\n{\"grammar\": 4, \"justification\": \"Fine.\"}";
    for _ in 0..3 {
        server.push(llama_reply(&[words], 60, 20, 0));
    }
    let p = Arc::new(provider(&server, StructuredOutput::Auto));
    // Three first calls at once: the server is asked once, before any of them.
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let p = Arc::clone(&p);
            tokio::spawn(async move { stream(p.as_ref(), &speech()).await.0 })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().text, format!("Dana, I{words}"));
    }
    assert_eq!(server.props_asked(), 1);
    assert!(p.is_llama_cpp());
    for r in server.requests() {
        let b = r.body_json().unwrap();
        assert!(b.get("grammar").is_some() && b.get("response_format").is_none(), "{b}");
        assert_eq!(r.header("connection"), Some("close"));
    }

    // A provider's repetition table goes to the server as it is set.
    let tuned = OpenAiProvider::new(OpenAiConfig {
        base_url: server.base_url(),
        repetition: moot::provider::repetition::Repetition {
            dry_allowed_length: 3,
            dry_breakers: vec!["\n".into()],
            ..moot::provider::repetition::Repetition::llama_server()
        },
        ..OpenAiConfig::default()
    })
    .unwrap();
    server.push(llama_reply(&[words], 60, 20, 0));
    stream(&tuned, &speech()).await.0.unwrap();
    let body = server.requests().last().unwrap().body_json().unwrap();
    assert_eq!(body["dry_allowed_length"], json!(3));
    assert_eq!(body["dry_sequence_breakers"], json!(["\n"]));
    assert_eq!(body["repeat_penalty"], json!(1.1));

    // The slots' context window is the provider's from then on.
    assert_eq!(p.context_window("any"), Some(8192));
    // A pinned form asks too (the window) but never goes lean; another
    // server's 404 leaves it as any server, with no window known.
    let pinned = provider(&server, StructuredOutput::JsonSchema);
    server.push(llama_reply(&["{\"speech\": \"Dana, I see.\", \"grammar\": 4, \"justification\": \"ok\"}"], 50, 20, 0));
    stream(&pinned, &speech()).await.0.unwrap();
    assert_eq!(server.props_asked(), 3);
    assert_eq!(pinned.context_window("any"), Some(8192));
    let body = server.requests().last().unwrap().body_json().unwrap();
    assert!(body.get("grammar").is_none() && body["response_format"]["type"] == "json_schema", "{body}");
    let other = TestServer::start().await.unwrap();
    other.push(Reply::openai_stream(
        &["{\"speech\": \"Dana, I see.\", \"grammar\": 4, \"justification\": \"ok\"}"],
        None,
    ));
    let auto = provider(&other, StructuredOutput::Auto);
    stream(&auto, &speech()).await.0.unwrap();
    assert_eq!(other.props_asked(), 1);
    assert!(!auto.is_llama_cpp());
    assert_eq!(auto.context_window("any"), None);
    assert!(other.requests()[0].body_json().unwrap().get("grammar").is_none());
}
