//! The size of one lever for the embedded model, measured on llama.cpp
//! directly: generation steps of several sequences decoded in one batch
//! (the weights are read once per step for all of them) against one
//! sequence per step, as moot's engines decode today (each engine its own
//! context and sequence, side by side on the cores). Each sequence first
//! holds `MOOT_BENCH_CONTEXT` tokens (default 800, about a debate call's
//! discussion), then 32 steps are timed. Uses the default model when it is
//! installed, else the tiny one (`MOOT_BENCH_MODEL` picks another name or a
//! GGUF path). Prints one line per thread count and number of sequences,
//! with the speed at which the sequences' prompts were read (in chunks of 256).

use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use moot::model::{DEFAULT_MODEL, installed_path, resolve_model};

const STEPS: usize = 32;
const WARM_UP: usize = 4;
const CHUNK: usize = 256;

fn main() {
    let names = match std::env::var("MOOT_BENCH_MODEL") {
        Ok(name) => vec![name],
        Err(_) => vec![DEFAULT_MODEL.to_string(), "smollm2-135m".to_string()],
    };
    let Some((name, path)) = names.iter().find_map(|n| installed_path(&resolve_model(n)).map(|p| (n.clone(), p)))
    else {
        eprintln!("batched decode bench skipped: no model installed (run `moot model pull`)");
        return;
    };
    let context: usize = std::env::var("MOOT_BENCH_CONTEXT").ok().and_then(|c| c.parse().ok()).unwrap_or(800);
    let mut backend = LlamaBackend::init().expect("llama.cpp backend");
    backend.void_logs();
    let model = LlamaModel::load_from_file(&backend, &path, &LlamaModelParams::default()).expect("model loads");
    // Any tokens serve: the cost of a step does not depend on which they are.
    let held: Vec<LlamaToken> = (0..context).map(|i| LlamaToken(1000 + (i as i32 * 37) % 20_000)).collect();
    println!("batched decode: {name}, {context} tokens held per sequence, {STEPS} steps");
    for threads in [1, 2] {
        for sequences in 1..=4usize {
            let params = LlamaContextParams::default()
                .with_n_ctx(NonZeroU32::new(4 * (context as u32 + 2 * (WARM_UP + STEPS) as u32)))
                .with_n_seq_max(4)
                .with_kv_unified(false)
                .with_n_batch(CHUNK as u32)
                .with_n_ubatch(CHUNK as u32)
                .with_n_threads(threads)
                // llama.cpp decodes any batch of more than one token with
                // the batch threads: the same count, so that a row's steps
                // all run on `threads` threads.
                .with_n_threads_batch(threads)
                .with_flash_attention_policy(0);
            let mut ctx = model.new_context(&backend, params).expect("context");
            let mut batch = LlamaBatch::new(CHUNK, 4);
            let read = Instant::now();
            for seq in 0..sequences as i32 {
                for (c, chunk) in held.chunks(CHUNK).enumerate() {
                    batch.clear();
                    for (i, &t) in chunk.iter().enumerate() {
                        batch.add(t, (c * CHUNK + i) as i32, &[seq], false).expect("batch");
                    }
                    ctx.decode(&mut batch).expect("prompt decodes");
                }
            }
            let read = read.elapsed().as_secs_f64();
            // Four steps untimed (the first decodes of a context are slower),
            // then the timed ones.
            let mut start = Instant::now();
            for step in 0..WARM_UP + STEPS {
                if step == WARM_UP {
                    start = Instant::now();
                }
                batch.clear();
                for seq in 0..sequences as i32 {
                    batch.add(held[step % 16], (context + step) as i32, &[seq], true).expect("batch");
                }
                ctx.decode(&mut batch).expect("step decodes");
            }
            let elapsed = start.elapsed().as_secs_f64();
            println!(
                "  {threads} thread(s), {sequences} sequence(s) a step: {:6.1} ms a step, {:5.1} tokens/s in all \
                 (their prompts read at {:.0} tokens/s)",
                elapsed * 1000.0 / STEPS as f64,
                (STEPS * sequences) as f64 / elapsed,
                (context * sequences) as f64 / read
            );
        }
    }
}
