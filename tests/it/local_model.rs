//! The embedded model end to end, with the tiny SmolLM2-135M model (fetched
//! into the model cache on first use, ~98 MB). Set `MOOT_SKIP_LOCAL_MODEL=1`
//! to skip these tests on machines without network access.
#![cfg(feature = "local")]

use std::time::{Duration, Instant};

use moot::model::{ensure_model, format_progress, resolve_model};
use moot::provider::gbnf::{PROSE_MIN_CHARS, Prose, lean_gbnf};
use moot::provider::local::{LocalConfig, LocalProvider, grammar_accepts};
use moot::provider::{ChatMessage, ChatRequest, NoCopy, Provider, ProviderError};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const TINY: &str = "smollm2-135m";

/// The tiny model's file (fetched when missing), or `None` when the tests
/// are skipped.
fn tiny_model_path() -> Option<std::path::PathBuf> {
    if std::env::var("MOOT_SKIP_LOCAL_MODEL").is_ok_and(|v| v == "1") {
        eprintln!("MOOT_SKIP_LOCAL_MODEL=1: skipping the local model test");
        return None;
    }
    let spec = resolve_model(TINY);
    let mut last_stage = None;
    let mut report = |p: &moot::model::FetchProgress| {
        if last_stage.as_ref() != Some(&p.stage) {
            eprintln!("{}", format_progress(TINY, p));
            last_stage = Some(p.stage.clone());
        }
    };
    let path = ensure_model(&spec, &mut report)
        .unwrap_or_else(|e| panic!("cannot fetch {TINY}: {e} (set MOOT_SKIP_LOCAL_MODEL=1 to skip)"));
    Some(path)
}

/// The provider for the tiny model, or `None` when the tests are skipped.
fn tiny_provider() -> Option<LocalProvider> {
    let mut config = LocalConfig::new(tiny_model_path()?);
    config.name = TINY.to_string();
    config.context_size = Some(2048);
    config.state_dir = Some(std::env::temp_dir().join("moot-test-prompt-states"));
    Some(LocalProvider::new(config).expect("the tiny model loads"))
}

fn collect(rx: &mut mpsc::UnboundedReceiver<String>) -> Vec<String> {
    let mut deltas = Vec::new();
    while let Ok(d) = rx.try_recv() {
        deltas.push(d);
    }
    deltas
}

/// The last `{…}` object in the text that parses as JSON.
fn last_json_object(text: &str) -> Option<Value> {
    let end = text.rfind('}')?;
    text[..=end].match_indices('{').find_map(|(start, _)| serde_json::from_str::<Value>(&text[start..=end]).ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constrained_evaluation_respects_the_schema() {
    let Some(provider) = tiny_provider() else { return };
    let schema = json!({
        "type": "object",
        "properties": {
            "correctness": {"type": "integer", "minimum": 1, "maximum": 5},
            "clarity": {"type": "integer", "minimum": 1, "maximum": 5},
            "overall": {"type": "integer", "minimum": 1, "maximum": 5},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "justification": {"type": "string", "maxLength": 120}
        },
        "required": ["correctness", "clarity", "overall", "confidence", "justification"]
    });
    let request = constrained(
        "You are a strict judge. Rate the answer on correctness and clarity from 1 to 5.",
        "Question: What is the capital of France?\nAnswer: Paris is the capital of France.\n\
             Give a short reason, then a JSON object with correctness, clarity, overall, confidence, justification.",
        48,
        schema,
    );

    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let completion = provider.stream(&request, &tx, &cancel).await.expect("completion");
    let deltas = collect(&mut rx);
    assert_eq!(deltas.concat(), completion.text);
    eprintln!("constrained reply: {:?} {:?}", completion.text, completion.usage);

    let eval = last_json_object(&completion.text).unwrap_or_else(|| panic!("no JSON in {:?}", completion.text));
    assert!(completion.text.trim_end().ends_with('}') || completion.text.trim_end().ends_with("```"));
    // The members' keys are given where the grammar forces them, each in
    // one form, rather than drawn.
    // The comma before a key is drawn, alone or with the key's quote (the
    // tiny model on an H200 drew `,"`): the blank after it is given only
    // after a lone comma.
    let object = &completion.text[completion.text.find('{').expect("an object")..];
    assert!(object.starts_with(r#"{"correctness": "#), "{object}");
    for key in ["clarity", "overall", "confidence"] {
        assert!(
            object.contains(&format!(r#", "{key}": "#)) || object.contains(&format!(r#","{key}": "#)),
            "{key} in {object}"
        );
    }
    assert!(object.contains(r#", "justification": ""#) || object.contains(r#","justification": ""#), "{object}");
    for key in ["correctness", "clarity", "overall"] {
        let score = eval[key].as_i64().unwrap_or_else(|| panic!("{key} missing in {eval}"));
        assert!((1..=5).contains(&score), "{key} = {score}");
    }
    let confidence = eval["confidence"].as_f64().expect("confidence");
    assert!((0.0..=1.0).contains(&confidence), "confidence = {confidence}");
    let justification = eval["justification"].as_str().expect("justification");
    assert!(justification.chars().count() <= 120);

    assert!(!completion.usage.estimated);
    assert!(completion.usage.input_tokens > 20, "{:?}", completion.usage);
    assert!(completion.usage.output_tokens > 5, "{:?}", completion.usage);
    assert_eq!(completion.finish_reason.as_deref(), Some("stop"));
}

/// A moderator's reason begins with the name it chose: the embedded model
/// is given the chosen name as the reason's first words (`echo`), so the
/// reason is about the member chosen whatever the model would have
/// begun it with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_name_opens_the_reason() {
    let Some(provider) = tiny_provider() else { return };
    let schema = json!({
        "type": "object",
        "properties": {
            "next": {"type": "string", "enum": ["Ms. Ito", "Dana"]},
            "reason": {"type": "string", "maxLength": 160}
        },
        "required": ["next", "reason"]
    });
    let mut request = constrained(
        "You moderate a debate between Ms. Ito and Dana.",
        "Ms. Ito gave grammar 2, Dana gave grammar 5. Who speaks next? \
         Answer with {\"next\": \"<name>\", \"reason\": \"<one sentence>\"}.",
        60,
        schema,
    );
    request.prose_first = false;
    request.echo = Some(moot::provider::Echo { from: "next".into(), into: "reason".into() });
    let completion = complete(&provider, request).await;
    eprintln!("echoed reply: {:?}", completion.text);
    let pick = last_json_object(&completion.text).unwrap_or_else(|| panic!("no JSON in {:?}", completion.text));
    let next = pick["next"].as_str().expect("a name");
    let reason = pick["reason"].as_str().expect("a reason");
    assert!(["Ms. Ito", "Dana"].contains(&next), "{pick}");
    assert!(reason.starts_with(next) && reason.len() > next.len(), "{pick}");
}

/// Asking for log-probabilities changes no reply: the members' keys and the
/// closing brace are still given (each with log-probability 0 and no
/// alternatives), drawn tokens carry their alternatives, and the entries
/// spell the reply's object. Each request goes to a model of its own, on
/// which it is the first: on a GPU, a prompt read from a cache left by
/// earlier requests gives logits different enough to change a draw (the
/// tiny model on an H200, with or without log-probabilities).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_probabilities_change_no_draw() {
    if tiny_model_path().is_none() {
        return;
    }
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let schema = json!({"type": "object",
        "properties": {"clarity": {"type": "integer", "minimum": 1, "maximum": 5},
                       "justification": {"type": "string", "maxLength": 80}},
        "required": ["clarity", "justification"], "additionalProperties": false});
    let mut request = constrained(
        "You rate answers for clarity from 1 to 5.",
        "Question: Why is the sky blue?\nAnswer: Air scatters blue light more than red light.",
        64,
        schema,
    );
    let plain = complete(&own_tiny_provider(&first), request.clone()).await;
    request.top_logprobs = Some(5);
    let weighed = complete(&own_tiny_provider(&second), request).await;
    assert_eq!(plain.text, weighed.text, "the same reply");
    assert_eq!(plain.logprobs, None);
    let entries = weighed.logprobs.expect("log-probabilities");
    let spelled: String = entries.iter().map(|e| e.token.as_str()).collect();
    let object = &weighed.text[weighed.text.find('{').expect("an object")..];
    assert_eq!(spelled, object);
    let given: String = entries.iter().filter(|e| e.top.is_empty()).map(|e| e.token.as_str()).collect();
    assert!(given.contains(r#""clarity": "#) && given.ends_with('}'), "given: {given:?}");
    assert!(entries.iter().filter(|e| e.top.is_empty()).all(|e| e.logprob == 0.0));
    let score = entries.iter().find(|e| e.token.trim().parse::<u8>().is_ok()).expect("the score's entry");
    assert!(!score.top.is_empty() && score.logprob < 0.0, "{score:?}");
}

/// A model asked for the JSON object alone still writes prose first: until
/// its prose has a few dozen tokens and a finished sentence, it may neither
/// start the object nor end its turn. The object that follows is complete
/// and valid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_constrained_reply_starts_with_prose_and_ends_with_the_object() {
    let Some(provider) = tiny_provider() else { return };
    let schema = json!({
        "type": "object",
        "properties": {
            "clarity": {"type": "integer", "minimum": 1, "maximum": 5},
            "overall": {"type": "integer", "minimum": 1, "maximum": 5},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "justification": {"type": "string", "maxLength": 120}
        },
        "required": ["clarity", "overall", "confidence", "justification"]
    });
    let request = constrained(
        "You are a judge. You answer with a JSON object and nothing else.",
        "Question: What is the capital of France?\nAnswer: Paris.\n\
             Reply with only {\"clarity\": <1-5>, \"overall\": <1-5>, \"confidence\": <0-1>, \"justification\": \"…\"}.",
        200,
        schema,
    );
    let (tx, _rx) = mpsc::unbounded_channel();
    let completion = provider.stream(&request, &tx, &CancellationToken::new()).await.expect("completion");
    let text = completion.text.as_str();
    eprintln!("constrained reply: {text:?}");
    assert!(!text.trim_start().starts_with(['{', '`']), "the reply starts with prose: {text:?}");
    let start = text.rfind("\n{").expect("the object on a line of its own") + 1;
    let prose = &text[..start];
    assert!(prose.split_whitespace().count() >= 10, "a few sentences first: {prose:?}");
    assert!(prose.contains(['.', '!', '?']), "with a finished sentence: {prose:?}");
    let eval: Value = serde_json::from_str(text[start..].trim_end().trim_end_matches("```"))
        .unwrap_or_else(|e| panic!("the reply ends with the object ({e}): {text:?}"));
    for key in ["clarity", "overall"] {
        let score = eval[key].as_i64().unwrap_or_else(|| panic!("{key} missing in {eval}"));
        assert!((1..=5).contains(&score), "{key} = {score}");
    }
    assert!((0.0..=1.0).contains(&eval["confidence"].as_f64().expect("confidence")));
    assert!(eval["justification"].as_str().is_some_and(|j| j.chars().count() <= 120));
}

/// A reply given opening words (a debate speech's "Dana, I") begins with
/// them, in its text and its first delta, and its prose is one paragraph:
/// no line follows the line in which a sentence first ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_begins_with_its_opening_words_and_says_one_paragraph() {
    let Some(provider) = tiny_provider() else { return };
    let schema = json!({
        "type": "object",
        "properties": {"overall": {"type": "integer", "minimum": 1, "maximum": 5}},
        "required": ["overall"]
    });
    let mut request = constrained(
        "You sit on a panel judging answers. Write a few sentences, then a JSON object.",
        "Question: What is the capital of France?\nAnswer: Paris.\n\
             Dana said the answer deserves 2 out of 5. Answer Dana, then give {\"overall\": <1-5>}.",
        160,
        schema,
    );
    request.opening = Some("Dana, I".into());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let completion = provider.stream(&request, &tx, &CancellationToken::new()).await.expect("completion");
    let text = completion.text.as_str();
    eprintln!("reply with opening words: {text:?}");
    assert!(text.starts_with("Dana, I"), "{text:?}");
    assert!(collect(&mut rx).concat().starts_with("Dana, I"), "the opening words stream first");
    let start = text.rfind("\n{").expect("the object on a line of its own") + 1;
    let lines: Vec<&str> = text[..start].trim_end().lines().collect();
    if let Some(first) = lines.iter().position(|l| l.contains(". ") || l.trim_end().ends_with(['.', '!', '?'])) {
        assert_eq!(first + 1, lines.len(), "one paragraph: {text:?}");
    }
    let eval: Value = serde_json::from_str(text[start..].trim_end()).expect("the object");
    assert!((1..=5).contains(&eval["overall"].as_i64().expect("overall")));
}

/// Free text that reaches the last quarter of its budget ends at the end of
/// a sentence, and counts as ended by its budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn free_text_near_its_budget_ends_at_a_sentence() {
    let Some(provider) = tiny_provider() else { return };
    let mut request =
        ChatRequest::new(vec![ChatMessage::user("Tell a long story about a cat who sails to an island.")]);
    request.max_tokens = 48;
    request.temperature = Some(0.0);
    let (tx, _rx) = mpsc::unbounded_channel();
    let completion = provider.stream(&request, &tx, &CancellationToken::new()).await.expect("completion");
    let text = completion.text.trim_end();
    eprintln!("free text: {:?} ({} tokens)", text, completion.usage.output_tokens);
    assert!(completion.usage.output_tokens <= 48);
    if completion.usage.output_tokens < 48 && completion.finish_reason.as_deref() == Some("length") {
        assert!(
            text.trim_end_matches(['"', '\'', ')']).ends_with(['.', '!', '?']),
            "ended early at a sentence: {text:?}"
        );
        assert!(completion.usage.output_tokens >= 36, "only in the budget's last quarter");
    }
}

/// Free text in headed paragraphs: each paragraph after a finished one
/// begins with the next heading, and the reply ends with the last one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headed_paragraphs_come_in_order_and_end_with_the_last() {
    let Some(provider) = tiny_provider() else { return };
    let headings = ["Agreement:", "Disagreement:", "Overall:"];
    let mut request = ChatRequest::new(vec![ChatMessage::user(
        "Three judges rated a short story: Ann gave 4, Bea 4 and Cy 2, who found the ending rushed. \
         Write three paragraphs on separate lines, beginning with \"Agreement:\", \"Disagreement:\" and \
         \"Overall:\".",
    )]);
    request.max_tokens = 400;
    request.temperature = Some(0.0);
    request.opening = Some(headings[0].into());
    request.sections = headings.map(String::from).to_vec();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let completion = provider.stream(&request, &tx, &CancellationToken::new()).await.expect("completion");
    let text = completion.text.trim_end();
    eprintln!("headed paragraphs: {text:?} ({:?})", completion.finish_reason);
    assert_eq!(collect(&mut rx).concat().trim_end(), text, "the headings stream with the words");
    assert!(text.starts_with("Agreement:"), "{text:?}");
    // Each heading at most once, in order, each after the first at a line's start.
    let mut from = 0;
    let mut written = 0;
    for (i, h) in headings.iter().enumerate() {
        assert!(text.matches(h).count() <= 1, "{h} twice: {text:?}");
        if let Some(at) = text[from..].find(h) {
            assert_eq!(written, i, "{h} after a missing heading: {text:?}");
            assert!(i == 0 || text[..from + at].ends_with('\n'), "{h} begins a line: {text:?}");
            from += at + h.len();
            written += 1;
        }
    }
    assert!(written >= 2, "a finished paragraph was followed by the next heading: {text:?}");
    if completion.finish_reason.as_deref() == Some("stop") && written == headings.len() {
        assert!(!text[from..].contains("\n\n"), "nothing after the last heading's paragraph: {text:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_deltas_and_cancels() {
    let Some(provider) = tiny_provider() else { return };
    let mut request = ChatRequest::new(vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user("Write a long story about the sea, in twenty chapters."),
    ]);
    request.max_tokens = 24;
    request.temperature = Some(0.7);
    request.seed = Some(7);

    // A full, short reply: the deltas are the text.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let completion = provider.stream(&request, &tx, &cancel).await.expect("completion");
    let deltas = collect(&mut rx);
    assert!(deltas.len() > 1, "expected several deltas, got {deltas:?}");
    assert_eq!(deltas.concat(), completion.text);
    assert!(!completion.text.is_empty());
    assert!(completion.usage.output_tokens <= 24);

    // A long reply cancelled after its first delta stops promptly.
    request.max_tokens = 2000;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let stream = provider.stream(&request, &tx, &cancel);
    let canceller = async {
        rx.recv().await.expect("a first delta");
        cancel.cancel();
        Instant::now()
    };
    let (result, cancelled_at) = tokio::join!(stream, canceller);
    assert_eq!(result, Err(ProviderError::Cancelled));
    assert!(cancelled_at.elapsed() < Duration::from_secs(2), "cancellation took {:?}", cancelled_at.elapsed());

    // The worker stopped generating: the next request does not wait for the
    // 2000 tokens of the cancelled one.
    request.max_tokens = 4;
    let (tx, _rx) = mpsc::unbounded_channel();
    let started = Instant::now();
    let completion = provider.stream(&request, &tx, &CancellationToken::new()).await.expect("after cancel");
    assert!(started.elapsed() < Duration::from_secs(10), "next request took {:?}", started.elapsed());
    assert!(completion.usage.output_tokens <= 4);
    assert_eq!(provider.queue_len(), 0);
}

/// A schema of nested objects and arrays (the shape of the persona builder's
/// answer) is followed to the letter: moot writes the grammar for every
/// schema it sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_schemas_are_followed_by_the_grammar() {
    let Some(provider) = tiny_provider() else { return };
    let schema = json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "array", "items": {"enum": ["good", "bad"]}, "minItems": 1, "maxItems": 2},
            "notes": {"type": "array", "maxItems": 2, "items": {
                "type": "object",
                "properties": {"point": {"type": "string", "maxLength": 40}, "weight": {"type": "integer", "minimum": 1, "maximum": 3}},
                "required": ["point", "weight"]
            }}
        },
        "required": ["verdict", "notes"]
    });
    let request = constrained(
        "You judge answers.",
        "Is 2 + 2 = 4 a correct statement? Reply with a JSON verdict and notes.",
        96,
        schema,
    );
    let (tx, _rx) = mpsc::unbounded_channel();
    let completion = provider.stream(&request, &tx, &CancellationToken::new()).await.expect("completion");
    let eval = last_json_object(&completion.text).unwrap_or_else(|| panic!("no JSON in {:?}", completion.text));
    let verdict = eval["verdict"].as_array().expect("verdict array");
    assert!((1..=2).contains(&verdict.len()), "{eval}");
    assert!(verdict.iter().all(|v| v == "good" || v == "bad"), "{eval}");
    let notes = eval["notes"].as_array().expect("notes array");
    assert!(notes.len() <= 2, "{eval}");
    for note in notes {
        assert!(note["point"].as_str().is_some_and(|p| p.chars().count() <= 40), "{eval}");
        assert!(note["weight"].as_i64().is_some_and(|w| (1..=3).contains(&w)), "{eval}");
    }
}

/// A short MAJ-EVAL debate on the tiny model: every agent turn yields a
/// readable evaluation (the grammar guarantees the JSON), and the session
/// completes with a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_debate_on_the_tiny_model_parses_every_evaluation() {
    use moot::engine::{self, Binding, Bindings, EngineConfig, EngineHandle, Recorder};
    use moot::session::event::{EndStatus, Role};
    use moot::session::{EventKind, SessionView};

    let Some(provider) = tiny_provider() else { return };
    let mut panel = moot::testkit::panel(moot::panel::Protocol::MajEval, &[("Readers", &["Ann", "Bea"])]);
    panel.moderator.max_turns = 1;
    panel.generation.max_tokens = 48;
    let config = EngineConfig::new(
        std::sync::Arc::new(panel),
        moot::testkit::item(),
        Bindings::uniform(Binding::new(std::sync::Arc::new(provider), "")),
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_handle, commands) = EngineHandle::channel();
    let started = Instant::now();
    let outcome = engine::run(config, Recorder::new(None, Some(tx)), commands).await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let view = SessionView::from_events(&events);
    let agent_turns: Vec<_> = view.turns.iter().filter(|t| t.role == Role::Agent).collect();
    assert!(agent_turns.len() >= 3, "two first evaluations and a debate turn");
    for t in &agent_turns {
        assert!(
            t.evaluation.is_some(),
            "turn {} by {} has no evaluation: {:?}\n{}",
            t.id,
            t.agent,
            t.parse_error,
            t.text
        );
    }
    let synthesis = view.turns.iter().find(|t| t.role == Role::Aggregator).expect("the aggregator's turn");
    assert!(synthesis.text.starts_with("Agreement:"), "{:?}", synthesis.text);
    // A debate speech begins with the member it answers and the speaker's "I".
    let speeches: Vec<_> = agent_turns.iter().filter(|t| t.phase == moot::session::event::Phase::Debate).collect();
    assert!(!speeches.is_empty());
    for t in speeches {
        let other = if t.agent == "Ann" { "Bea" } else { "Ann" };
        assert!(t.text.starts_with(&format!("{other}, I")), "turn {} by {}: {:?}", t.id, t.agent, t.text);
    }
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })));
    eprintln!("tiny debate: {} agent turns in {:.1} s", agent_turns.len(), started.elapsed().as_secs_f64());
}

/// Conversations that interleave (a panel's groups, the moderator) each keep
/// their state: a prompt that continues an earlier one reads only what is new,
/// even after other prompts came in between.
/// A provider with a model of its own (a copy of the tiny model's file in
/// `dir`, so another worker; saved prompt states go to `dir` too): other
/// tests' calls must not move its counters.
fn own_tiny_provider(dir: &tempfile::TempDir) -> LocalProvider {
    own_tiny_provider_serving(dir, None)
}

/// [`own_tiny_provider`] serving `parallel` requests at once (`None`: the
/// default for this machine).
fn own_tiny_provider_serving(dir: &tempfile::TempDir, parallel: Option<usize>) -> LocalProvider {
    let copy = dir.path().join("tiny-copy.gguf");
    if !copy.exists() {
        std::fs::copy(moot::model::installed_path(&resolve_model(TINY)).unwrap(), &copy).unwrap();
    }
    let mut config = LocalConfig::new(copy);
    config.context_size = Some(2048);
    config.state_dir = Some(dir.path().join("states"));
    config.parallel = parallel;
    LocalProvider::new(config).expect("the copy loads")
}

/// A request of a system prompt and alternating user and assistant turns,
/// answered with three tokens.
/// A request at temperature 0 whose reply follows `schema`.
fn constrained(system: &str, user: &str, max_tokens: u32, schema: Value) -> ChatRequest {
    let mut request = ChatRequest::new(vec![ChatMessage::system(system), ChatMessage::user(user)]);
    request.max_tokens = max_tokens;
    request.temperature = Some(0.0);
    request.response_schema = Some(std::sync::Arc::new(schema));
    request
}

fn conversation(system: &str, turns: &[&str]) -> ChatRequest {
    let mut messages = vec![ChatMessage::system(system)];
    for (i, t) in turns.iter().enumerate() {
        messages.push(if i % 2 == 0 { ChatMessage::user(*t) } else { ChatMessage::assistant(*t) });
    }
    let mut r = ChatRequest::new(messages);
    r.max_tokens = 3;
    r.temperature = Some(0.0);
    r
}

async fn complete(provider: &LocalProvider, request: ChatRequest) -> moot::provider::Completion {
    let (tx, _rx) = mpsc::unbounded_channel();
    provider.stream(&request, &tx, &CancellationToken::new()).await.expect("completion")
}

/// Tokens of prompts that `run` reused from the model's cached state.
async fn reused_by<F: std::future::Future>(provider: &LocalProvider, run: F) -> u64 {
    let (_, before) = provider.prompt_stats();
    run.await;
    provider.prompt_stats().1 - before
}

fn rules(name: &str, count: usize) -> String {
    let mut s = format!("You review texts about {name}. ");
    for i in 0..count {
        s.push_str(&format!("Rule {i} for {name}: be precise and short. "));
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_conversations_keep_their_cached_prefixes() {
    if tiny_model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let provider = own_tiny_provider(&dir);
    let (a, b, c) = (rules("bridges", 40), rules("gardens", 40), rules("trains", 40));
    let first = complete(&provider, conversation(&a, &["Is this clear?"])).await;
    complete(&provider, conversation(&b, &["Is this clear?"])).await;
    complete(&provider, conversation(&c, &["Is this clear?"])).await;
    let reused =
        reused_by(&provider, complete(&provider, conversation(&a, &["Is this clear?", "Mostly.", "And now?"]))).await;
    assert!(
        reused as f64 >= 0.8 * first.usage.input_tokens as f64,
        "the continued conversation reused {reused} of its first prompt's {} tokens",
        first.usage.input_tokens
    );
}

/// A panel's groups share the system prompt, then their discussions differ:
/// one group's prompt must not cut off the other's cached discussion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_sharing_only_the_start_of_another_keeps_the_other_whole() {
    if tiny_model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let provider = own_tiny_provider(&dir);
    // As moot asks: system prompt, the group's discussion, the speaker's part.
    let ask = |discussion: &str, speaker: &str| {
        let mut r = conversation(&rules("stories", 30), &[]);
        r.messages.extend([ChatMessage::user(discussion), ChatMessage::user(speaker)]);
        r
    };
    let discussion = rules("the first group's discussion", 30);
    let first = complete(&provider, ask(&discussion, "You are Ann.")).await;
    let other = rules("the second group's discussion", 20);
    let second = complete(&provider, ask(&other, "You are Cy.")).await;
    let reused =
        reused_by(&provider, complete(&provider, ask(&format!("{discussion}\nAnn: agreed."), "You are Bea."))).await;
    assert!(
        reused as f64 >= 0.9 * first.usage.input_tokens as f64,
        "the first group's next prompt reused {reused} of the {} tokens its last one had",
        first.usage.input_tokens
    );
    // A turn of the same conversation replaces the last speaker's part
    // instead of copying the state: the other group's state stays too.
    let reused = reused_by(&provider, complete(&provider, ask(&format!("{other}\nCy: fine."), "You are Dee."))).await;
    let shared = second.usage.input_tokens - 30;
    assert!(reused >= shared, "the second group's next prompt reused {reused} tokens, not the {shared} it shares");
}

/// The next run of a panel (another process, here another worker: the first
/// stops with its last provider) loads the saved state of the panel's long
/// system prompt instead of reading it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_system_prompt_is_read_once_across_runs() {
    if tiny_provider().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let system = rules("stories", 40);
    let first = {
        let provider = own_tiny_provider(&dir);
        complete(&provider, conversation(&system, &["Is this clear?"])).await
    };
    let saved = std::fs::read_dir(dir.path().join("states")).unwrap().filter_map(Result::ok).count();
    assert_eq!(saved, 1, "one saved state, no partial file left");

    let provider = own_tiny_provider(&dir);
    let reused = reused_by(&provider, complete(&provider, conversation(&system, &["Something else?"]))).await;
    let system_tokens = first.usage.input_tokens - 20;
    assert!(
        reused as usize >= moot::provider::local::SAVED_PROMPT_MIN && reused >= system_tokens,
        "the new worker reused {reused} tokens, not the system prompt's {system_tokens} or so"
    );

    // A state that does not load is dropped and the prompt is read instead.
    drop(provider);
    for entry in std::fs::read_dir(dir.path().join("states")).unwrap().filter_map(Result::ok) {
        std::fs::write(entry.path(), b"not a state").unwrap();
    }
    let provider = own_tiny_provider(&dir);
    let reused = reused_by(&provider, complete(&provider, conversation(&system, &["And now?"]))).await;
    assert_eq!(reused, 0, "nothing to reuse from a damaged state");
    let saved: Vec<_> = std::fs::read_dir(dir.path().join("states")).unwrap().filter_map(Result::ok).collect();
    assert_eq!(saved.len(), 1, "the damaged state was replaced");
    assert!(std::fs::metadata(saved[0].path()).unwrap().len() > 1000);
}

/// A request for a reply that runs into the last quarter of its limit of
/// 150 tokens (where free text ends at its next sentence end).
fn long_request() -> ChatRequest {
    let mut long =
        conversation("You are a storyteller.", &["Write a very long story about a lighthouse keeper and her cat."]);
    long.max_tokens = 150;
    long
}

/// Waits until `call` has streamed its first delta to `rx`.
async fn first_delta<F>(call: std::pin::Pin<&mut F>, rx: &mut mpsc::UnboundedReceiver<String>)
where
    F: std::future::Future<Output = Result<moot::provider::Completion, ProviderError>>,
{
    tokio::select! {
        _ = rx.recv() => {}
        done = call => panic!("the long reply ended before streaming: {:?}", done.map(|c| c.text)),
    }
}

fn assert_ran_long(long: &moot::provider::Completion) {
    assert!(
        long.usage.output_tokens >= 150 - 150 / 4 && long.finish_reason.as_deref() == Some("length"),
        "the long reply ran to its limit: {} tokens, {:?}: {}",
        long.usage.output_tokens,
        long.finish_reason,
        long.text
    );
}

/// Starts a long reply, then a short request once the long one streams, and
/// says whether the short one finished first.
async fn short_request_finishes_first(provider: &LocalProvider) -> bool {
    let long = long_request();
    let short = conversation("You answer briefly.", &["Say hello."]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let long_call = provider.stream(&long, &tx, &cancel);
    tokio::pin!(long_call);
    first_delta(long_call.as_mut(), &mut rx).await;
    let short_call = complete(provider, short);
    tokio::pin!(short_call);
    tokio::select! {
        _ = &mut short_call => {
            let long_done = long_call.await.expect("the long reply");
            assert_ran_long(&long_done);
            true
        }
        long_done = &mut long_call => {
            let long_done = long_done.expect("the long reply");
            assert_ran_long(&long_done);
            short_call.await;
            false
        }
    }
}

/// A model serving two requests at once answers a short one while a long
/// one is still generating; serving one at a time, the short one waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_engine_serves_a_request_while_the_first_generates() {
    if tiny_provider().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let two = own_tiny_provider_serving(&dir, Some(2));
    assert_eq!(two.model_info().parallel, 2);
    assert!(short_request_finishes_first(&two).await, "with two engines the short request did not get through first");
    drop(two);
    let dir = tempfile::tempdir().unwrap();
    let one = own_tiny_provider_serving(&dir, Some(1));
    assert_eq!(one.model_info().parallel, 1);
    assert!(!short_request_finishes_first(&one).await, "with one engine the short request should wait");
}

/// While one request generates, a prompt that the next request will start
/// with is read by the other engine, so that request reads only its own end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_hinted_during_a_reply_is_read_ahead_and_reused_by_its_request() {
    if tiny_provider().is_none() {
        return;
    }
    // Timing on a loaded machine: each attempt is a fresh model; one must show it.
    let mut failures = Vec::new();
    for _ in 0..3 {
        match read_ahead_attempt().await {
            Ok(()) => return,
            Err(why) => failures.push(why),
        }
    }
    panic!("no attempt read a prompt ahead and reused it: {failures:?}");
}

async fn read_ahead_attempt() -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let provider = own_tiny_provider_serving(&dir, Some(2));
    let shared = [ChatMessage::system(rules("harbours", 30)), ChatMessage::user(rules("the discussion", 20))];
    let long = long_request();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let long_call = provider.stream(&long, &tx, &cancel);
    tokio::pin!(long_call);
    first_delta(long_call.as_mut(), &mut rx).await;
    provider.read_ahead(&shared);
    long_call.await.expect("the long reply");
    // Reading ahead goes while no request is served: it starts once the
    // reply has ended. Let it finish: something was read, no engine reads
    // ahead now, and the count stays the same for a quarter of a second (a
    // loaded machine may stall one step of the reading for longer than that,
    // so the count alone does not tell).
    let mut read = provider.read_ahead_tokens();
    let mut still = 0;
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = provider.read_ahead_tokens();
        still = if now == read && now > 0 && !provider.reading_ahead() { still + 1 } else { 0 };
        read = now;
        if still == 5 {
            break;
        }
    }
    let mut next = ChatRequest::new([&shared[..], &[ChatMessage::user("You are Ana. Say one word.")]].concat());
    next.max_tokens = 3;
    let (before_read, _) = provider.prompt_stats();
    let reused = reused_by(&provider, complete(&provider, next)).await;
    let (after_read, _) = provider.prompt_stats();
    if read == 0 {
        return Err("nothing was read ahead".into());
    }
    if reused + 2 < read {
        return Err(format!("the request reused {reused} tokens, {read} had been read ahead"));
    }
    if after_read - before_read >= 40 {
        return Err(format!("the request read {} tokens of its own", after_read - before_read));
    }
    Ok(())
}

/// A reply told what it may not copy writes no run of five words of it
/// outside quotation marks, but may quote the item; asked to repeat the
/// text, it has to find other words (or quote it, which the guard leaves
/// free: `provider::local::copying`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_does_not_copy_what_it_is_told_not_to() {
    let Some(provider) = tiny_provider() else { return };
    let earlier = "I think the answer is too short for a child and it misses why the snail went home.";
    let item = "Mila carried the snail back to the wall so it could find its family.";
    let mut request = ChatRequest::new(vec![
        ChatMessage::system("You sit on a panel judging answers for children. Reply in one short paragraph."),
        ChatMessage::user(format!(
            "Story: {item}\nDana said: {earlier}\nRepeat exactly what Dana said, without quotation marks, then \
             quote the story."
        )),
    ]);
    request.max_tokens = 80;
    request.temperature = Some(0.0);
    let plain = complete(&provider, request.clone()).await.text;
    request.no_copy = Some(std::sync::Arc::new(NoCopy {
        avoid: vec![earlier.into()],
        quotable: vec![item.into()],
        names: vec!["Dana".into()],
        ..NoCopy::default()
    }));
    let guarded = complete(&provider, request).await.text;
    eprintln!("without the guard: {plain:?}\nwith it: {guarded:?}");
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    };
    // The reply's words outside quotation marks, each stretch on its own.
    let unquoted = |t: &str| -> Vec<String> { t.split('"').step_by(2).map(str::to_string).collect() };
    let runs = |t: &str| -> std::collections::HashSet<Vec<String>> {
        unquoted(t).iter().flat_map(|p| words(p).windows(5).map(<[String]>::to_vec).collect::<Vec<_>>()).collect()
    };
    let avoided = runs(earlier);
    let copied = |reply: &str| -> Vec<Vec<String>> {
        runs(reply).intersection(&avoided).filter(|r| !runs(item).contains(*r)).cloned().collect()
    };
    assert!(!copied(&plain).is_empty(), "unguarded, the model copies: {plain:?}");
    assert!(copied(&guarded).is_empty(), "copied {:?} in {guarded:?}", copied(&guarded));
    assert!(words(&guarded).len() >= 5, "it still says something: {guarded:?}");
}

/// A text not to copy strictly (the speech a redraw's draft repeated) is
/// not copied even where it quotes the item, which the guard otherwise
/// leaves free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strict_text_is_not_copied_even_where_it_quotes_the_item() {
    let Some(provider) = tiny_provider() else { return };
    let item = "Question: Why did Mila carry the snail back to the wall? Answer: So that it could find its family.";
    let earlier = format!("The pair reads: {item}");
    let mut request = ChatRequest::new(vec![
        ChatMessage::system("You sit on a panel judging answers for children. Reply in one short paragraph."),
        ChatMessage::user(format!("The item: {item}\nDana said: {earlier}\nWrite Dana's words again, word for word.")),
    ]);
    request.max_tokens = 60;
    request.temperature = Some(0.0);
    let loose = NoCopy { avoid: vec![earlier.clone()], quotable: vec![item.into()], ..NoCopy::default() };
    request.no_copy = Some(std::sync::Arc::new(loose.clone()));
    let quoted = complete(&provider, request.clone()).await.text;
    request.no_copy = Some(std::sync::Arc::new(NoCopy { strict: vec![earlier.clone()], ..loose }));
    let strict = complete(&provider, request).await.text;
    eprintln!("loose: {quoted:?}\nstrict: {strict:?}");
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    };
    let runs =
        |t: &str| -> std::collections::HashSet<Vec<String>> { words(t).windows(5).map(<[String]>::to_vec).collect() };
    let copied = |reply: &str| runs(reply).intersection(&runs(&earlier)).count();
    assert!(copied(&quoted) > 0, "a quotation of the item is free under the loose guard: {quoted:?}");
    assert_eq!(copied(&strict), 0, "{strict:?}");
    assert!(words(&strict).len() >= 5, "it still says something: {strict:?}");
}

/// A debate speech's speaker is never the member it says it agrees or
/// disagrees with (`provider::local::speaker`): told to write a sentence
/// that says so, the model writes the name of the member the speech
/// answers there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_speech_answers_the_member_it_addresses_not_its_own_speaker() {
    let Some(provider) = tiny_provider() else { return };
    let mut request = ChatRequest::new(vec![
        ChatMessage::system("You sit on a panel judging answers for children. Reply in one short paragraph."),
        ChatMessage::user(
            "Write exactly this sentence and nothing else: Dana, I disagree with Amara because the answer is too \
             short."
                .to_string(),
        ),
    ]);
    request.max_tokens = 40;
    request.temperature = Some(0.0);
    let plain = complete(&provider, request.clone()).await.text;
    request.no_copy = Some(std::sync::Arc::new(NoCopy {
        speaker: Some("Amara".into()),
        answers: Some("Dana".into()),
        ..NoCopy::default()
    }));
    let guarded = complete(&provider, request).await.text;
    eprintln!("without the speaker: {plain:?}\nwith it: {guarded:?}");
    assert!(plain.to_lowercase().contains("disagree with amara"), "told to, the model writes the sentence: {plain:?}");
    assert!(guarded.to_lowercase().contains("disagree with dana"), "{guarded:?}");
    assert!(!guarded.to_lowercase().contains("amara"), "{guarded:?}");
}

/// A title the answered member lacks, right before the answered member's
/// name, is written as theirs, though another member of the request has it
/// (`provider::local::speaker`): the model is looked ahead past the title.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_speech_gives_the_answered_member_their_own_title() {
    let Some(provider) = tiny_provider() else { return };
    let ask = |named: &str| {
        let mut request = ChatRequest::new(vec![
            ChatMessage::system("You sit on a panel judging answers for children. Reply in one short paragraph."),
            ChatMessage::user(format!(
                "Copy this line: Mr. Lindqvist, I disagree with {named} because the answer is too short."
            )),
        ]);
        // The line's start is given, so the model only copies what follows.
        request.opening = Some("Mr. Lindqvist, I disagree with".into());
        request.max_tokens = 40;
        request.temperature = Some(0.0);
        request
    };
    let plain = complete(&provider, ask("Ms. Lindqvist")).await.text;
    // Ms. Ito answers Mr. Lindqvist; Ms. Okafor shares her title.
    let speaking = |mut request: ChatRequest| {
        request.no_copy = Some(std::sync::Arc::new(NoCopy {
            speaker: Some("Ms. Ito".into()),
            answers: Some("Mr. Lindqvist".into()),
            names: vec!["Ms. Okafor".into()],
            ..NoCopy::default()
        }));
        request
    };
    let guarded = complete(&provider, speaking(ask("Ms. Lindqvist"))).await.text;
    eprintln!("without the speaker: {plain:?}\nwith it: {guarded:?}");
    let lower = |t: &str| t.to_lowercase();
    assert!(lower(&plain).contains("disagree with ms. lindqvist"), "told to, the model writes it: {plain:?}");
    assert!(lower(&guarded).contains("disagree with mr. lindqvist"), "{guarded:?}");
    // Where the name that follows is another member's, the title stands.
    let other = complete(&provider, speaking(ask("Ms. Okafor"))).await.text;
    assert!(lower(&other).contains("disagree with ms. okafor"), "{other:?}");
}

/// The grammar a llama.cpp server is sent (the lean form) reads in llama.cpp's
/// own engine, and a string value in it never ends right after a blank: a
/// quotation mark the model opens there (`a child in the "Why`) is not taken
/// for the value's end, which would cut its words mid-sentence; nor does it
/// hold a brace.
#[test]
fn the_lean_grammar_reads_in_llama_cpp_and_ends_no_string_after_a_blank() {
    let Some(path) = tiny_model_path() else { return };
    let schema = json!({"type": "object",
        "properties": {"grammar": {"type": "integer", "minimum": 1, "maximum": 5},
                       "justification": {"type": "string", "maxLength": 200}},
        "required": ["grammar", "justification"], "additionalProperties": false});
    let prose = Prose { min_chars: PROSE_MIN_CHARS, max_chars: 900, after_opening: false };
    let grammar = lean_gbnf(&schema, Some(prose)).unwrap();
    let words = "The answer keeps to the story and uses words that a young child knows well, so it reads easily aloud.";
    let reply = |justification: &str| format!("{words}\n{{\"grammar\": 4, \"justification\": \"{justification}\"}}");
    let accepts = |justification: &str| grammar_accepts(&path, &grammar, &reply(justification)).unwrap();
    // Short values close at will; long ones at their first finished sentence.
    assert!(accepts("Clear."));
    assert!(accepts("Clear"));
    assert!(accepts(r#"The child hears \"why\" in the words the story itself uses."#));
    // Never right after a blank, short or long.
    assert!(!accepts("Clear "));
    assert!(!accepts("This pair is suitable for a young child in the "));
    // Nor on past a long value's first finished sentence.
    assert!(!accepts("The answer keeps to the story and reads well. It is short."));
    // No brace inside a value: the model's way of ending the object early.
    assert!(!accepts("This is more important than the }"));
    assert!(!accepts("Clear {"));
    // A grammar llama.cpp cannot read is an error, not a refusal.
    assert!(grammar_accepts(&path, "root ::= (", "x").is_err());
}

/// Where llama.cpp finds a GPU (a build with `--features cuda` or
/// `vulkan` on a machine that has one), the model's layers go to it by
/// default and a reply comes back; elsewhere the test says why it is skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layers_go_to_the_gpu_where_there_is_one() {
    use moot::provider::local::gpu;
    let gpus = gpu::gpus();
    if gpus.is_empty() {
        let why = if gpu::BUILT_WITH_GPU { "llama.cpp found none" } else { "this build has no GPU backend" };
        eprintln!("skipped: no GPU ({why})");
        return;
    }
    if tiny_model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let provider = own_tiny_provider(&dir);
    let shown = provider.model_info().gpu.clone();
    eprintln!("GPUs: {gpus:?}\nthe model: {shown}");
    let best = gpus.iter().max_by_key(|g| g.free).unwrap();
    assert!(shown.starts_with(&best.name) && shown.contains(": all "), "{shown}");
    let mut request = ChatRequest::new(vec![ChatMessage::user("Say hello.")]);
    request.max_tokens = 8;
    request.temperature = Some(0.0);
    assert!(!complete(&provider, request).await.text.is_empty());
    // The model is freed on its worker's thread: a process that ends first
    // tears CUDA down under it, and llama.cpp aborts freeing its GPU memory
    // pool (seen on an H200 after the test had passed).
    drop(provider);
    moot::provider::local::wait_for_workers(Duration::from_secs(30));
}

/// Whether `text` holds a Han, kana or Hangul character or a full-width form.
fn east_asian(text: &str) -> bool {
    text.chars().any(|c| matches!(u32::from(c), 0x3000..=0x9FFF | 0xAC00..=0xD7AF | 0xFF00..=0xFFEF))
}

/// A prompt without East Asian characters gets none in its reply, even when
/// it asks for them (the tiny model, greedy, answers this one "晨花, 安宁, 水香"
/// when it may); a prompt that holds some may have them in its reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_writes_no_east_asian_script_its_prompt_does_not_use() {
    let Some(provider) = tiny_provider() else { return };
    let mut english = conversation(
        "You are a translator.",
        &["Translate into Chinese characters: good morning, thank you, friend, water, mountain."],
    );
    english.max_tokens = 40;
    let reply = complete(&provider, english).await.text;
    assert!(!east_asian(&reply), "{reply}");
    assert!(!reply.trim().is_empty());
    let mut chinese = conversation("You are a translator.", &["Translate into English: 早上好，谢谢，朋友。"]);
    chinese.max_tokens = 40;
    let reply = complete(&provider, chinese).await.text;
    assert!(east_asian(&reply), "{reply}");
}
