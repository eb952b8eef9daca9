//! `moot bench` end to end against a local HTTP server: it times runs and
//! prints one row per run and the medians.

use std::process::Command;
use std::time::Duration;

use moot::testkit::judge_reply;
use moot::testkit::server::TestServer;

#[tokio::test(flavor = "multi_thread")]
async fn bench_times_each_run_and_prints_the_medians() {
    let server = TestServer::with_handler(|r| judge_reply(r, Duration::from_millis(2))).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_moot"));
    c.env_remove("OPENAI_API_KEY").env_remove("ANTHROPIC_API_KEY").env("OPENAI_BASE_URL", server.base_url());
    c.args([
        "bench",
        "storybook-qa",
        "--id",
        "qa-03",
        "--runs",
        "2",
        "--provider",
        "openai",
        "--moderator",
        "round-robin",
    ]);
    c.arg("--out").arg(out.path());
    let output = tokio::task::spawn_blocking(move || c.output().unwrap()).await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].contains("qa-03"), "{stdout}");
    assert!(lines[1].contains("first score") && lines[1].contains("whole run"), "{stdout}");
    for (i, label) in ["1", "2", "med"].iter().enumerate() {
        let cells: Vec<&str> = lines[2 + i].split_whitespace().collect();
        assert_eq!(cells[0], *label, "{stdout}");
        // setup, first score, every first eval, whole run: numbers of seconds.
        assert_eq!(cells.iter().filter(|c| **c == "s").count(), 4, "{}", lines[2 + i]);
        let turns: u64 = cells[cells.len() - 2].parse().unwrap();
        assert!(turns >= 6, "every agent spoke at least once: {}", lines[2 + i]);
    }
    let logs = std::fs::read_dir(out.path()).unwrap().count();
    assert_eq!(logs, 2, "one session log per run, kept with --out");
}
