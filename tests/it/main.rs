//! moot's integration tests, in one test binary: each module is one area
//! (a protocol, a screen, a provider, a subcommand); the helpers they share
//! are moot's test kit (`moot::testkit`, compiled for tests and benches). One binary links moot and llama.cpp once instead of
//! once per file. Run one area with `cargo test --test it <module>::`.

/// The test kit's engine runner and optimisation judge, as the areas name them.
mod support {
    pub use moot::testkit::engine::*;
    pub use moot::testkit::optimize;

    /// The `moot` binary asking the OpenAI-compatible server at `base_url`,
    /// with caches of its own under `cache`, no colours and no keys.
    pub fn moot_at(base_url: &str, cache: &std::path::Path) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_moot"));
        c.env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env("NO_COLOR", "1")
            .env("MOOT_USER", "tester")
            .env("MOOT_CACHE_DIR", cache)
            .env("OPENAI_BASE_URL", base_url);
        c
    }
}

mod batch;
mod bench_cli;
mod build_deps;
mod build_llama_server;
mod chat_eval;
mod cli_headless;
mod collab_pairwise;
mod compositions;
mod context_fit;
mod datasets;
mod engine_protocols;
mod eval_cli;
mod fuzz_corpus;
mod g_eval;
mod html_export;
mod layers;
mod llama_server;
mod local_context;
mod local_model;
mod log_compat;
mod log_errors;
mod moderator_reasons;
mod optimize;
mod optimize_cli;
mod optimize_paper;
mod optimize_resume;
mod overall;
mod pairwise;
mod pairwise_report;
mod panel_item_loading;
mod paper_chateval;
mod paper_collab;
mod paper_geval;
mod paper_maj_eval;
mod paper_metrics;
mod paper_pairwise;
mod paper_tables;
mod personas;
mod personas_cli;
mod prompt_blinding;
mod protocol_names;
mod provider_anthropic;
mod provider_cache;
mod provider_limits;
mod provider_openai;
mod provider_pools;
mod pty;
mod quotations;
mod repeated_speeches;
mod report_fixtures;
mod resume_cli;
mod resume_protocols;
mod sage_eval;
mod score_raters;
mod session_stages;
mod shards;
mod stats_fixtures;
mod structured_output;
mod synthesis_claims;
mod tui_chateval;
mod tui_examples;
mod tui_optimize;
mod tui_optimize_pty;
mod tui_pairwise;
mod tui_personas;
mod tui_pty;
mod tui_sage;
mod tui_screens;
mod verdict_lines;
