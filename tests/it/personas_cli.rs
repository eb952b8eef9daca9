//! `moot personas --headless` end to end against a real local HTTP server
//! streaming SSE, on the bundled sample documents.

use std::path::Path;
use std::process::{Command, Output};

use moot::panel::Panel;
use moot::personas::log::read_log;
use moot::personas::state::BuildState;
use moot::testkit::server::TestServer;

fn moot() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_moot"));
    c.env_remove("OPENAI_API_KEY").env_remove("ANTHROPIC_API_KEY").env("NO_COLOR", "1").env("MOOT_USER", "tester");
    c
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run moot")).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sample_builds_a_panel_that_loads() {
    let server = TestServer::with_handler(moot::testkit::builder_server_reply).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("panels/reading.toml");
    let mut c = moot();
    c.env("OPENAI_BASE_URL", server.base_url())
        .args(["personas", "--sample", "--headless", "--provider", "openai", "--model", "m", "--out"])
        .arg(&out);
    let o = output(c).await;
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    for needle in [
        "building personas with openai/m; estimate: ≈",
        "read teachers-interviews.md: ",
        "left out: Related Work (1), References (1)",
        "[extract] teachers-interviews.md: 300 in / 120 out tokens",
        "[consolidate]",
        "[persona]",
        "build completed",
        "panel written:",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    let panel = Panel::load(&out).unwrap();
    let groups: Vec<&str> = panel.groups.iter().map(|g| g.name.as_str()).collect();
    assert!(groups.contains(&"Teachers") && groups.contains(&"Parents"), "{groups:?}");
    // The sample uses the storybook panel's dimensions.
    assert_eq!(panel.dimension_keys()[0], "grammar");
    let log = dir.path().join("panels/reading.build.jsonl");
    let events = read_log(&log).unwrap();
    let state = BuildState::from_events(&events);
    assert_eq!(state.panels, std::slice::from_ref(&out));
    assert_eq!(state.unverified(), 0, "the scripted model quotes word for word");

    // The file is never overwritten without --force.
    let mut again = moot();
    again.env("OPENAI_BASE_URL", server.base_url()).args(["personas", "--sample", "--headless", "--out"]).arg(&out);
    let o = output(again).await;
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists (use --force to replace it)"));

    // The log alone writes the panel again, without a model.
    let copy = dir.path().join("copy.toml");
    let mut from_log = moot();
    from_log.args(["personas", "--from-log"]).arg(&log).arg("--out").arg(&copy);
    let o = output(from_log).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(Panel::load(&copy).unwrap().groups.len(), panel.groups.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_document_is_named_before_any_model_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = moot();
    c.current_dir(dir.path()).args([
        "personas",
        "--task",
        "Judge answers.",
        "--docs",
        "studies/teachers.pdf",
        "--out",
        "p.toml",
        "--headless",
    ]);
    let o = output(c).await;
    assert!(!o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr).trim(), "moot: studies/teachers.pdf: no such file");
    assert!(!Path::new(&dir.path().join("p.toml")).exists());
}
