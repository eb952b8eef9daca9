//! A stand-in OpenAI-compatible server for trying moot without a model: it
//! answers moot's prompts with canned, slowly streamed evaluations (see
//! `moot::testkit::judge_reply`). Its verdicts are not real
//! judgments; use it to exercise the screens and the CLI.
//!
//! ```sh
//! cargo run --example judge_server            # prints its base URL
//! OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 moot run --provider openai
//! ```

use std::time::Duration;

use moot::testkit::judge_reply;
use moot::testkit::server::TestServer;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let pause = std::env::var("JUDGE_PAUSE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    let server = TestServer::with_handler(move |r| judge_reply(r, Duration::from_millis(pause))).await?;
    println!("{}", server.base_url());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
