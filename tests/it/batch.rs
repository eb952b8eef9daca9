//! `moot eval --batch` end to end: the real binary against a local server
//! speaking OpenAI's Batch API and Anthropic's Message Batches
//! (`moot::testkit::batch_server`): first phases filled by batches and the
//! rest live, G-Eval and pairwise runs, logs shaped like a live run's, the
//! cost at batch prices, a run killed after it submitted (or while the
//! server's answer to its submission was on the way) and resumed without
//! submitting again, a lost answer not submitted twice, an expired batch
//! submitted again, a lost line
//! asked again live, a server without batch endpoints, `batch = true` in
//! moot.toml, and the refusal for the embedded model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use moot::session::run_folder::{LogState, Manifest, log_state};
use moot::testkit::batch_server::{Answer, BatchServer, Fate, schema_responder};

const SMALL_PANEL: &str = "tests/fixtures/eval/small-panel.toml";
const ITEMS: &str = "tests/fixtures/eval/items.jsonl";
/// Batches watched every few milliseconds, submitted after 300 ms of quiet
/// (long enough for every running item to join, on a busy machine too).
const FAST: [&str; 4] = ["--batch-poll", "0.01", "--batch-gather", "0.3"];

fn moot(srv: &BatchServer, cache: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(args)
        .env("OPENAI_BASE_URL", srv.openai_base_url())
        .env("ANTHROPIC_BASE_URL", srv.anthropic_base_url())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("MOOT_CONFIG")
        .env("MOOT_PROGRESS_SECS", "1")
        .env("NO_COLOR", "1")
        .env("MOOT_USER", "tester")
        .env("MOOT_CACHE_DIR", cache)
        .kill_on_drop(true);
    cmd
}

async fn run(srv: &BatchServer, cache: &Path, args: &[&str]) -> Output {
    tokio::time::timeout(Duration::from_secs(120), moot(srv, cache, args).output())
        .await
        .expect("moot timed out")
        .expect("moot runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn with<S: AsRef<str>>(base: &[S], more: &[&str]) -> Vec<String> {
    base.iter().map(|s| s.as_ref()).chain(more.iter().copied()).map(str::to_string).collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The session logs of a run folder, by file name.
fn logs(dir: &Path) -> BTreeMap<String, Vec<Value>> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| {
            let events = std::fs::read_to_string(&p)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect();
            (p.file_name().unwrap().to_string_lossy().into_owned(), events)
        })
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Turn → phase, from the `turn_started` events.
fn phases(events: &[Value]) -> BTreeMap<u64, String> {
    of_type(events, "turn_started")
        .into_iter()
        .map(|e| (e["turn"].as_u64().unwrap(), e["phase"].as_str().unwrap_or_default().to_string()))
        .collect()
}

/// Whether a completed turn's reply came from a batch.
fn batched(completed: &Value) -> bool {
    let usage = &completed["usage"];
    let marked = usage["batch_input_tokens"] == usage["input_tokens"] && usage["batch_output_tokens"].is_u64();
    marked && completed["endpoint"].as_str().is_some_and(|e| e.starts_with("batch "))
}

/// What a log is made of, whatever the order of concurrent turns, the
/// number of deltas and the waits for a free connection: each event type
/// with its agent, phase and kind.
fn shape(events: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = events
        .iter()
        .filter(|e| e["type"] != "turn_delta" && e["type"] != "waiting")
        .map(|e| format!("{} {} {} {}", e["type"], e["agent"], e["phase"], e["kind"]))
        .collect();
    out.sort();
    out
}

fn records(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("batches.json")).expect("batches.json");
    serde_json::from_str::<Value>(&text).unwrap()["batches"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_phase_in_one_batch_debate_live_logs_like_a_live_run_and_cost_at_batch_prices() {
    let srv = BatchServer::start(schema_responder).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (out, live_out) = (tmp.path().join("batched"), tmp.path().join("live"));
    let base =
        ["eval", SMALL_PANEL, "--data", ITEMS, "--provider", "openai", "--price-input", "1", "--price-output", "2"];
    let args = with(&base, &["--out", out.to_str().unwrap(), "--batch"]);
    let o = run(&srv, &tmp.path().join("cache-a"), &strs(&with(&strs(&args), &FAST))).await;
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("moot eval: batches: 1 submitted, "), "a line when the batch goes up: {err}");
    assert!(err.contains("moot eval: batches this run: 1 submitted with 20 requests"), "{err}");
    assert!(err.contains("billed at 50% of the listed prices"), "{err}");

    // Every item's first evaluations went up together: 5 items × 4 agents.
    let batches = srv.batches();
    assert_eq!(batches.len(), 1, "{batches:?}");
    assert_eq!(batches[0].lines.len(), 20);
    for (_, body) in &batches[0].lines {
        assert_eq!(body["stream"], false, "a batch line does not stream: {body}");
        assert!(body.get("stream_options").is_none());
        assert!(body.pointer("/response_format/json_schema").is_some(), "the verdict schema is sent as live");
    }
    assert!(srv.live_calls() > 0, "the debates ran live");
    let recorded = records(&out);
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["state"], "ended");
    assert_eq!(recorded[0]["requests"].as_array().unwrap().len(), 20);
    assert!(!std::fs::read_to_string(out.join("batches.json")).unwrap().contains("Bearer"));

    let batched_logs = logs(&out);
    assert_eq!(batched_logs.len(), 5);
    let (mut full, mut billed) = (0.0, 0.0);
    for (name, events) in &batched_logs {
        let phases = phases(events);
        let mut initial = 0;
        for c in of_type(events, "turn_completed") {
            let phase = &phases[&c["turn"].as_u64().unwrap()];
            assert_eq!(batched(c), phase == "initial", "{name}: a {phase} turn: {c}");
            initial += usize::from(phase == "initial");
            assert!(phase != "initial" || !c["evaluation"].is_null(), "{name}: a batch reply is read: {c}");
            let u = &c["usage"];
            let (i, o) = (u["input_tokens"].as_f64().unwrap(), u["output_tokens"].as_f64().unwrap());
            let (bi, bo) =
                (u["batch_input_tokens"].as_f64().unwrap_or(0.0), u["batch_output_tokens"].as_f64().unwrap_or(0.0));
            full += (i + 2.0 * o) / 1e6;
            billed += (i - 0.5 * bi + 2.0 * (o - 0.5 * bo)) / 1e6;
        }
        assert_eq!(initial, 4, "{name}: one first evaluation per agent");
        assert_eq!(of_type(events, "session_ended")[0]["status"], "completed");
    }
    assert!(billed < full * 0.9, "batch calls are billed at half price: {billed} of {full}");

    // The same run live: the logs are made of the same events.
    let live_args = with(&base, &["--out", live_out.to_str().unwrap()]);
    let o = run(&srv, &tmp.path().join("cache-b"), &strs(&live_args)).await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(srv.batches().len(), 1, "no batch without --batch");
    let live_logs = logs(&live_out);
    for (name, events) in &batched_logs {
        assert_eq!(shape(events), shape(&live_logs[name]), "{name}");
    }

    // The report reads the batched folder, and costs it at batch prices.
    let report = run(
        &srv,
        &tmp.path().join("cache-a"),
        &[
            "report",
            out.to_str().unwrap(),
            "--format",
            "json",
            "--bootstrap",
            "0",
            "--price-input",
            "1",
            "--price-output",
            "2",
        ],
    )
    .await;
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let rows: Value = serde_json::from_slice(&report.stdout).unwrap();
    let cost = rows.as_array().unwrap().iter().find(|r| r["metric"] == "cost_total").expect("a cost row");
    assert!((cost["value"].as_f64().unwrap() - billed).abs() < 1e-9, "{cost} vs {billed}");
    let m = Manifest::load(&out).unwrap().unwrap();
    assert!((m.totals.cost.unwrap() - billed).abs() < 1e-9, "run.json: {:?} vs {billed}", m.totals.cost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g_eval_filled_by_anthropic_message_batches() {
    let srv = BatchServer::start(schema_responder).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let args = ["eval", "summary-geval", "--data", "summary-collab", "--limit", "2", "--provider", "anthropic"];
    let args = with(&args, &["--out", out.to_str().unwrap(), "--batch"]);
    let o = run(&srv, &tmp.path().join("cache"), &strs(&with(&strs(&args), &FAST))).await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let batches = srv.batches();
    assert!(batches.len() >= 2, "the steps, then the scores: {batches:?}");
    assert!(batches.iter().all(|b| b.kind == "anthropic" && b.id.starts_with("msgbatch_")));
    assert!(batches.iter().flat_map(|b| &b.lines).all(|(_, p)| p["stream"] == false && p.get("model").is_some()));
    for (name, events) in logs(&out) {
        let phases = phases(&events);
        let completed = of_type(&events, "turn_completed");
        let scores = completed.iter().filter(|c| phases[&c["turn"].as_u64().unwrap()] == "scoring").count();
        assert_eq!(scores, 4, "{name}: one score per dimension");
        for c in completed {
            assert!(batched(c), "{name}: every G-Eval call waits for no one: {c}");
        }
        assert_eq!(log_state(&out.join(&name)).unwrap(), LogState::Completed);
    }
    assert_eq!(srv.live_calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairwise_judgments_filled_by_openai_batches_and_reported() {
    let srv = BatchServer::start(schema_responder).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let args = ["eval", "pairwise-summaries", "--data", "pairwise-summaries", "--limit", "2", "--provider", "openai"];
    let args = with(&args, &["--out", out.to_str().unwrap(), "--batch"]);
    let o = run(&srv, &tmp.path().join("cache"), &strs(&with(&strs(&args), &FAST))).await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!srv.batches().is_empty());
    let mut comparisons = 0;
    for (name, events) in logs(&out) {
        let phases = phases(&events);
        for c in of_type(&events, "turn_completed") {
            if phases[&c["turn"].as_u64().unwrap()] == "comparison" {
                comparisons += 1;
                assert!(batched(c), "{name}: a pairwise judgment comes from a batch: {c}");
            }
        }
    }
    assert!(comparisons >= 4, "both orders of each pair, for two items: {comparisons}");
    let report = run(
        &srv,
        &tmp.path().join("cache"),
        &["report", out.to_str().unwrap(), "--format", "json", "--bootstrap", "0"],
    )
    .await;
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
}

/// The arguments of a two-item `moot eval --batch` into `out`.
fn batch_eval(out: &Path) -> Vec<String> {
    let base = ["eval", SMALL_PANEL, "--data", ITEMS, "--limit", "2", "--provider", "openai", "--batch"];
    with(&with(&base, &["--out", out.to_str().unwrap()]), &FAST)
}

/// Start `args`, and kill the run once `ready` holds.
async fn kill_when(srv: &BatchServer, cache: &Path, args: &[String], ready: impl Fn() -> bool) {
    let mut child = moot(srv, cache, &strs(args)).spawn().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(tokio::time::Instant::now() < deadline, "no batch was submitted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().await.unwrap();
}

/// Resume `args`: the run ends well with the server's one batch collected
/// from the earlier run, recorded as ended, and each first evaluation from it.
async fn resume_collects_the_one_batch(srv: &BatchServer, cache: &Path, args: &[String], out: &Path) -> String {
    let o = run(srv, cache, &strs(&with(args, &["--resume"]))).await;
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(srv.batches().len(), 1, "nothing submitted again: {:?}", srv.batches());
    assert!(err.contains("(1 from an earlier run)"), "{err}");
    let recorded = records(out);
    assert_eq!((recorded.len(), recorded[0]["state"].as_str()), (1, Some("ended")), "{recorded:?}");
    let id = recorded[0]["id"].as_str().unwrap().to_string();
    firsts_from(out, &id);
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_after_submitting_resumes_without_submitting_again() {
    let srv = BatchServer::start(schema_responder).await.unwrap();
    srv.set_polls(1_000_000);
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("run"));
    let args = batch_eval(&out);
    // Wait for the batch to be submitted and recorded, then kill the run.
    let recorded = || std::fs::read_to_string(out.join("batches.json")).is_ok_and(|t| t.contains("batch_"));
    kill_when(&srv, &cache, &args, recorded).await;
    assert_eq!(srv.batches().len(), 1);
    let submitted: Vec<String> = srv.batches()[0].lines.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(submitted.len(), 8, "2 items × 4 agents");
    assert_eq!(records(&out)[0]["state"], "submitted");

    // The batch finishes while no one watches; the resumed run collects it.
    srv.set_polls(1);
    resume_collects_the_one_batch(&srv, &cache, &args, &out).await;
    let m = Manifest::load(&out).unwrap().unwrap();
    assert_eq!((m.counts.completed, m.status.as_str()), (2, "completed"));
    assert!(out.join("attempts").read_dir().unwrap().count() >= 2, "the killed run's logs are kept aside");
}

/// Each item's first evaluations came once, all from batch `batch`, and nothing failed.
fn firsts_from(out: &Path, batch: &str) {
    for (name, events) in logs(out) {
        let phases = phases(&events);
        let initial: Vec<&Value> = of_type(&events, "turn_completed")
            .into_iter()
            .filter(|c| phases[&c["turn"].as_u64().unwrap()] == "initial")
            .collect();
        assert_eq!(initial.len(), 4, "{name}: each first evaluation once");
        assert!(initial.iter().all(|c| batched(c) && c["endpoint"] == format!("batch {batch}")), "{name}");
        assert!(of_type(&events, "turn_failed").is_empty(), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_while_its_batch_was_being_accepted_finds_it_by_its_mark() {
    let srv = BatchServer::start(schema_responder).await.unwrap();
    srv.set_polls(1);
    // The server takes the batch and never answers: the run is killed meanwhile.
    srv.next_answer(Answer::Silence);
    let tmp = tempfile::tempdir().unwrap();
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("run"));
    let args = batch_eval(&out);
    kill_when(&srv, &cache, &args, || !srv.batches().is_empty()).await;
    let recorded = records(&out);
    assert_eq!((recorded.len(), recorded[0]["state"].as_str()), (1, Some("submitting")), "{recorded:?}");
    let key = recorded[0]["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("moot-"), "{key}");
    assert_eq!(srv.batches()[0].metadata["moot_key"], key.as_str(), "the batch carries its mark");

    let id = resume_collects_the_one_batch(&srv, &cache, &args, &out).await;
    assert_eq!(id, srv.batches()[0].id, "found by its mark");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_whose_answer_was_lost_is_not_submitted_twice() {
    let srv = BatchServer::start(schema_responder).await.unwrap();
    srv.set_polls(1);
    srv.next_answer(Answer::Lost);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = run(&srv, &tmp.path().join("cache"), &strs(&batch_eval(&out))).await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(srv.batches().len(), 1, "asked for its mark, not submitted again: {:?}", srv.batches());
    let recorded = records(&out);
    assert_eq!((recorded.len(), recorded[0]["state"].as_str()), (1, Some("ended")), "{recorded:?}");
    firsts_from(&out, recorded[0]["id"].as_str().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_anthropic_batch_is_submitted_again() {
    let srv = BatchServer::start(schema_responder).await.unwrap();
    srv.next_batch(Fate::Expire);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let args = ["eval", SMALL_PANEL, "--data", ITEMS, "--limit", "1", "--provider", "anthropic", "--batch"];
    let args = with(&with(&args, &["--out", out.to_str().unwrap()]), &FAST);
    let o = run(&srv, &tmp.path().join("cache"), &strs(&args)).await;
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let batches = srv.batches();
    assert_eq!(batches.len(), 2, "{batches:?}");
    let ids = |b: &moot::testkit::batch_server::HeldBatch| {
        let mut v: Vec<String> = b.lines.iter().map(|(id, _)| id.clone()).collect();
        v.sort();
        v
    };
    assert_eq!(ids(&batches[0]), ids(&batches[1]), "the same requests, asked again");
    assert!(err.contains("4 submitted again"), "{err}");
    let recorded = records(&out);
    assert_eq!(recorded[0]["not_run"].as_array().unwrap().len(), 4);
    assert!(recorded[0]["note"].as_str().unwrap().contains("4 submitted again"), "{}", recorded[0]);
    assert_eq!(recorded[1]["state"], "ended");
    let (_, events) = logs(&out).into_iter().next().unwrap();
    let phases = phases(&events);
    let initial: Vec<&Value> = of_type(&events, "turn_completed")
        .into_iter()
        .filter(|c| phases[&c["turn"].as_u64().unwrap()] == "initial")
        .collect();
    assert_eq!(initial.len(), 4);
    let second = format!("batch {}", batches[1].id);
    assert!(initial.iter().all(|c| c["endpoint"] == second.as_str() && !c["evaluation"].is_null()), "{initial:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_lost_from_the_results_is_asked_again_live_with_batch_set_in_moot_toml() {
    let srv = BatchServer::start(schema_responder).await.unwrap();
    srv.next_batch(Fate::LoseLine);
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("moot.toml");
    std::fs::write(&config, "[providers.openai]\nbatch = true\n").unwrap();
    let out = tmp.path().join("run");
    let args = ["eval", SMALL_PANEL, "--data", ITEMS, "--limit", "1", "--provider", "openai"];
    let args = with(&with(&args, &["--out", out.to_str().unwrap()]), &FAST);
    let o = moot(&srv, &tmp.path().join("cache"), &strs(&args)).env("MOOT_CONFIG", &config).output().await.unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(srv.batches().len(), 1, "batch = true in moot.toml batches without --batch");
    assert!(err.contains("1 asked live"), "{err}");
    let (_, events) = logs(&out).into_iter().next().unwrap();
    let failed = of_type(&events, "turn_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    let why = failed[0]["error"].as_str().unwrap();
    assert!(why.contains("ended without a result for this request") && why.contains("asking again live"), "{why}");
    assert_eq!(failed[0]["will_retry"], true);
    let turn = failed[0]["turn"].as_u64().unwrap();
    let completed: Vec<&Value> = of_type(&events, "turn_completed").into_iter().filter(|c| c["turn"] == turn).collect();
    assert_eq!(completed.len(), 1);
    assert!(!batched(completed[0]) && !completed[0]["evaluation"].is_null(), "answered live: {}", completed[0]);
    let phases = phases(&events);
    let initial =
        of_type(&events, "turn_completed").into_iter().filter(|c| phases[&c["turn"].as_u64().unwrap()] == "initial");
    assert_eq!(initial.filter(|c| batched(c)).count(), 3, "the other three came from the batch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_model_has_no_batch_api() {
    let srv = BatchServer::start(schema_responder).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out: PathBuf = tmp.path().join("run");
    let args = ["eval", SMALL_PANEL, "--data", ITEMS, "--provider", "local", "--batch", "--out", out.to_str().unwrap()];
    let o = run(&srv, &tmp.path().join("cache"), &args).await;
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("--batch: none of the providers this panel uses (local) has a batch API"), "{err}");
    assert!(!out.exists(), "nothing ran");
    assert!(srv.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_batch_endpoints_runs_every_call_live() {
    use moot::testkit::server::{RecordedRequest, Reply, TestServer};
    // An OpenAI-compatible server that streams chats and knows no /files or /batches.
    let plain = TestServer::with_handler(|req: &RecordedRequest| {
        if req.path.ends_with("/chat/completions") {
            let body = req.body_json().unwrap_or_default();
            Reply::openai_stream(&[&schema_responder(&body)], Some((100, 20)))
        } else {
            Reply::json(404, &serde_json::json!({"error": {"message": "Not Found", "type": "invalid_request_error"}}))
        }
    })
    .await
    .unwrap();
    let srv = BatchServer::start(schema_responder).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let args = ["eval", SMALL_PANEL, "--data", ITEMS, "--limit", "2", "--provider", "openai", "--batch"];
    let args = with(&with(&args, &["--out", out.to_str().unwrap()]), &FAST);
    let o = moot(&srv, &tmp.path().join("cache"), &strs(&args))
        .env("OPENAI_BASE_URL", plain.base_url())
        .output()
        .await
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("a batch could not be submitted (HTTP 404") && err.contains("run live from now on"), "{err}");
    for (name, events) in logs(&out) {
        assert_eq!(log_state(&out.join(&name)).unwrap(), LogState::Completed);
        let failed = of_type(&events, "turn_failed");
        assert_eq!(failed.len(), 4, "{name}: each first evaluation told why once: {failed:?}");
        assert!(failed.iter().all(|f| f["will_retry"] == true));
        assert!(of_type(&events, "turn_completed").iter().all(|c| !batched(c)), "{name}: all live");
    }
    assert!(!out.join("batches.json").exists(), "no batch was submitted, none recorded");
}
