//! Speed of the embedded model: time to first token for a ~1,000-token prompt
//! and generation throughput. Uses the default model when it is installed,
//! else the tiny one (`MOOT_BENCH_MODEL` picks another name or a GGUF path,
//! `MOOT_BENCH_THREADS` the thread count). Nothing runs when no model is
//! installed: fetch one with `moot model pull`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use moot::model::{DEFAULT_MODEL, installed_path, resolve_model};
use moot::provider::local::{LocalConfig, LocalProvider};
use moot::provider::{ChatMessage, ChatRequest, Completion, Provider};
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
    let provider = LocalProvider::new(config).expect("model loads");
    let info = provider.model_info();
    eprintln!("local bench: {} ({}, {} threads)", provider.info().model, info.architecture, info.threads);
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
    group.finish();
}

criterion_group!(benches, bench_local);
criterion_main!(benches);
