//! Speed of the embedded model: time to first token for a new ~1,000-token
//! prompt, for debate turns and a moderator's call of the sample panel
//! (1,300 tokens and more, most of which the previous call or the read-ahead
//! during the previous speech already read),
//! and generation throughput, for one request and for two at once. Uses the default model when it is installed,
//! else the tiny one (`MOOT_BENCH_MODEL` picks another name or a GGUF path,
//! `MOOT_BENCH_THREADS` and `MOOT_BENCH_THREADS_BATCH` the thread counts). Nothing runs when no model is
//! installed: fetch one with `moot model pull`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use moot::model::{DEFAULT_MODEL, installed_path, resolve_model};
use moot::provider::local::{LocalConfig, LocalProvider};
use moot::provider::{ChatMessage, ChatRequest, Completion, Provider, READ_AHEAD_STEP};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

const GENERATED: u32 = 64;

fn provider() -> Option<LocalProvider> {
    let names = match std::env::var("MOOT_BENCH_MODEL") {
        Ok(name) => vec![name],
        Err(_) => vec![DEFAULT_MODEL.to_string(), "smollm2-135m".to_string()],
    };
    let (name, path) = names.iter().find_map(|n| installed_path(&resolve_model(n)).map(|p| (n.clone(), p)))?;
    let mut config = LocalConfig::new(path);
    config.name = name;
    config.threads = std::env::var("MOOT_BENCH_THREADS").ok().and_then(|t| t.parse().ok());
    config.threads_batch = std::env::var("MOOT_BENCH_THREADS_BATCH").ok().and_then(|t| t.parse().ok());
    let provider = LocalProvider::new(config).expect("model loads");
    let info = provider.model_info();
    eprintln!(
        "local bench: {} ({}, {} threads, {} for prompts, {} request(s) at once)",
        provider.info().model,
        info.architecture,
        info.threads,
        info.threads_batch,
        info.parallel
    );
    Some(provider)
}

/// A review prompt of about 1,000 tokens; `nonce` makes its first tokens
/// unique so that no cached prefix is reused.
fn long_prompt(nonce: u64) -> Vec<ChatMessage> {
    let mut item = String::new();
    for i in 0..28 {
        item.push_str(&format!(
            "Step {i}: the service reads record {i} from the queue, checks its signature against the \
             stored key, and writes the normalized record to table shard {}.\n",
            i % 7
        ));
    }
    vec![
        ChatMessage::system(format!("Request {nonce}. You are a careful reviewer of technical documentation.")),
        ChatMessage::user(format!("Review this description for accuracy and clarity:\n\n{item}\nGive a verdict.")),
    ]
}

fn call(rt: &Runtime, provider: &LocalProvider, request: &ChatRequest) -> (Duration, Completion) {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let completion = rt.block_on(provider.stream(request, &tx, &cancel)).expect("completion");
    (start.elapsed(), completion)
}

fn bench_local(c: &mut Criterion) {
    let Some(provider) = provider() else {
        eprintln!("local bench skipped: no model installed (run `moot model pull`)");
        return;
    };
    let rt = Runtime::new().expect("tokio runtime");
    let nonce = AtomicU64::new(0);

    let mut request = ChatRequest::new(long_prompt(0));
    request.max_tokens = 1;
    let (elapsed, completion) = call(&rt, &provider, &request);
    let prompt_tokens = completion.usage.input_tokens;
    eprintln!(
        "first token after {prompt_tokens} prompt tokens: {elapsed:.2?} ({:.0} prompt tok/s)",
        prompt_tokens as f64 / elapsed.as_secs_f64()
    );

    let mut group = c.benchmark_group("local");
    group.sample_size(10).warm_up_time(Duration::from_millis(1)).measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Elements(prompt_tokens));
    group.bench_function("time_to_first_token_1k_prompt", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let mut request = ChatRequest::new(long_prompt(nonce.fetch_add(1, Ordering::Relaxed) + 1));
                    request.max_tokens = 1;
                    call(&rt, &provider, &request).0
                })
                .sum()
        })
    });

    debate_turns(&rt, &provider, &nonce, &mut group);

    // Generation: a short prompt that stays cached, so the time is spent on
    // new tokens. Times are scaled to GENERATED tokens when the model stops
    // early, so the throughput figure stays per token.
    let mut request = ChatRequest::new(vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user("Tell a long story about a lighthouse keeper."),
    ]);
    request.max_tokens = GENERATED;
    request.temperature = Some(0.0);
    let (elapsed, completion) = call(&rt, &provider, &request);
    eprintln!(
        "generation: {} tokens in {elapsed:.2?} ({:.1} tok/s)",
        completion.usage.output_tokens,
        completion.usage.output_tokens as f64 / elapsed.as_secs_f64()
    );
    group.throughput(Throughput::Elements(u64::from(GENERATED)));
    group.bench_function("generate_64_tokens", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let (elapsed, completion) = call(&rt, &provider, &request);
                    let produced = completion.usage.output_tokens.max(1) as f64;
                    elapsed.mul_f64(f64::from(GENERATED) / produced)
                })
                .sum()
        })
    });

    // Two conversations generating at once (two groups of a panel): with
    // two engines they run side by side.
    let mut other = request.clone();
    other.messages[1] = ChatMessage::user("Tell a long story about a lighthouse keeper's cat.");
    let both = || {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let start = Instant::now();
        let (a, b) = rt.block_on(async {
            tokio::join!(provider.stream(&request, &tx, &cancel), provider.stream(&other, &tx, &cancel))
        });
        let produced = (a.expect("completion").usage.output_tokens + b.expect("completion").usage.output_tokens).max(1);
        start.elapsed().mul_f64(f64::from(2 * GENERATED) / produced as f64)
    };
    let elapsed = both();
    eprintln!(
        "two at once: {} tokens in {elapsed:.2?} ({:.1} tok/s)",
        2 * GENERATED,
        f64::from(2 * GENERATED) / elapsed.as_secs_f64()
    );
    group.throughput(Throughput::Elements(u64::from(2 * GENERATED)));
    group.bench_function("two_conversations_generate_64_tokens_each", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| both()).sum())
    });
    group.finish();
}

/// Streams a debate speech as a run does: every [`READ_AHEAD_STEP`] bytes it
/// hints `ahead(text so far)`, the start of the group's next request.
fn speak(
    rt: &Runtime,
    provider: &LocalProvider,
    request: &ChatRequest,
    ahead: impl Fn(&str) -> Vec<ChatMessage>,
) -> Completion {
    rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let call = async {
            let tx = tx;
            provider.stream(request, &tx, &cancel).await
        };
        let hints = async {
            let (mut so_far, mut hinted) = (String::new(), 0);
            while let Some(delta) = rx.recv().await {
                so_far.push_str(&delta);
                if so_far.len() >= hinted + READ_AHEAD_STEP {
                    hinted = so_far.len();
                    provider.read_ahead(&ahead(&so_far));
                }
            }
        };
        tokio::join!(call, hints).0.expect("the speech")
    })
}

/// A debate of the bundled sample panel as moot sends it to the model: the
/// panel's system prompt, the item, the group's members, their first
/// evaluations and a few speeches (about 1,300 tokens), then the speaker's
/// part. Each measure starts with agent A's real turn, streamed with the
/// read-ahead hints a run sends, then times the first token of the next
/// call: the moderator's, agent B's right after A (a group of two needs no
/// moderator), or agent B's after the moderator's call.
fn debate_turns(rt: &Runtime, provider: &LocalProvider, nonce: &AtomicU64, group: &mut BenchmarkGroup<'_, WallTime>) {
    use moot::engine::parse::{ParseSpec, parse_reply};
    use moot::engine::prompts::{self, HistoryEntry, ScoresRow};
    use moot::session::event::Evaluation;
    let panel = moot::panel::Panel::bundled(moot::panel::DEFAULT_PANEL).expect("the sample panel");
    let item = moot::item::ItemsFile::bundled(moot::panel::DEFAULT_PANEL).expect("the sample items").items.remove(0);
    let team = &panel.groups[0];
    let agents = &team.agents;
    let evaluation = |score: f64| Evaluation {
        scores: panel.dimensions.iter().map(|d| (d.key.clone(), score)).collect(),
        overall: Some(score),
        confidence: Some(0.8),
        justification: "The answer names the storm but not the den, so a child may not see where the fox went.".into(),
        ..Evaluation::default()
    };
    // `n` makes the discussion unique, so only the panel's prompt, the item
    // and the members are cached from earlier iterations.
    let history = |n: u64| -> Vec<HistoryEntry> {
        let mut h: Vec<HistoryEntry> = agents
            .iter()
            .enumerate()
            .map(|(i, a)| HistoryEntry::Initial {
                agent: a.name.clone(),
                evaluation: Some(evaluation(2.0 + i as f64)),
                text: String::new(),
            })
            .collect();
        h.extend((0..3).map(|i| HistoryEntry::Speech {
            agent: agents[i % agents.len()].name.clone(),
            round: None,
            text: format!(
                "Point {n}.{i}: the answer names the storm, which the story gives as the reason, but it leaves out \
                 the den, so a child may not see where the fox went. The wording suits a young reader and the \
                 sentence is short and complete, though the question asked why and the answer only half says it. \
                 I would keep my relevancy score and lower consistency by one."
            ),
            evaluation: Some(evaluation(3.0)),
        }));
        h
    };
    let quoted = [item.content.as_str()];
    let spec = ParseSpec {
        dimensions: &panel.dimensions,
        scale: panel.scale,
        overall: panel.asks_overall(),
        quoted_material: &quoted,
    };
    let (a, b) = (&agents[0], &agents[1 % agents.len()]);
    let one_token = |messages| {
        let mut r = ChatRequest::new(messages);
        r.max_tokens = 1;
        r
    };
    let latest = evaluation(3.0);
    let moderator = |history: &[HistoryEntry]| {
        let rows: Vec<ScoresRow<'_>> = agents
            .iter()
            .map(|a| ScoresRow { agent: &a.name, latest: Some(&latest), turns: 1, finished: false })
            .collect();
        let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
        one_token(prompts::moderator_messages(
            &panel,
            &team.name,
            &item,
            history,
            &prompts::scores_table(&panel, &rows),
            "",
            &names[1..],
        ))
    };
    // Agent A's turn, streamed with read-ahead hints; the history after it.
    let a_speaks = |n: u64| -> Vec<HistoryEntry> {
        let before = history(n);
        let mut request =
            ChatRequest::new(prompts::debate_messages(&panel, &team.name, a, &item, &before, Some(&evaluation(3.0))));
        request.max_tokens = panel.generation.max_tokens;
        request.temperature = Some(panel.generation.temperature);
        request.response_schema = Some(std::sync::Arc::new(prompts::evaluation_schema(&panel)));
        let speech = speak(rt, provider, &request, |so_far| {
            prompts::debate_ahead(&panel, &item, &team.name, &before, &a.name, so_far)
        });
        let mut after = before;
        after.push(HistoryEntry::Speech {
            agent: a.name.clone(),
            round: None,
            evaluation: parse_reply(&speech.text, &spec).ok(),
            text: speech.text,
        });
        after
    };
    let b_turn = |history: &[HistoryEntry]| {
        one_token(prompts::debate_messages(&panel, &team.name, b, &item, history, Some(&evaluation(3.0))))
    };
    let moderator_call = |n: u64| call(rt, provider, &moderator(&a_speaks(n)));
    let answer = |n: u64| call(rt, provider, &b_turn(&a_speaks(n)));
    let after_moderator = |n: u64| {
        let after = a_speaks(n);
        call(rt, provider, &moderator(&after));
        call(rt, provider, &b_turn(&after))
    };
    let new_debate = || nonce.fetch_add(1, Ordering::Relaxed) + 1_000;
    for (name, measure) in [
        ("moderator_first_token_after_a_turn", &moderator_call as &dyn Fn(u64) -> (Duration, Completion)),
        ("debate_turn_first_token_after_another_speech", &answer),
        ("debate_turn_first_token_after_moderator", &after_moderator),
    ] {
        let (elapsed, completion) = measure(new_debate());
        eprintln!("{name}: {} prompt tokens, first token after {elapsed:.2?}", completion.usage.input_tokens);
        group.throughput(Throughput::Elements(completion.usage.input_tokens));
        group.bench_function(name, |b| b.iter_custom(|iters| (0..iters).map(|_| measure(new_debate()).0).sum()));
    }
}

criterion_group!(benches, bench_local);
criterion_main!(benches);
