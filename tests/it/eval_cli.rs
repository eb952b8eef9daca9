//! `moot eval` end to end: the real binary against a local OpenAI-compatible
//! server, with a failing item, a bad data line, resume, shards and Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use moot::session::run_folder::{ATTEMPTS, LogState, Manifest, log_state};
use moot::testkit::server::{RecordedRequest, Reply, TestServer};

const SMALL_PANEL: &str = "tests/fixtures/eval/small-panel.toml";
const ITEMS: &str = "tests/fixtures/eval/items.jsonl";

fn evaluation(keys: &[&str]) -> String {
    let scores: Vec<String> = keys.iter().enumerate().map(|(i, k)| format!("\"{k}\": {}", 2 + i % 3)).collect();
    format!(
        "Short view.\n```json\n{{{}, \"overall\": 3, \"confidence\": 0.7, \"justification\": \"As scored.\"}}\n```\nNO MORE COMMENTS",
        scores.join(", ")
    )
}

/// A server that answers every call with an evaluation over `keys`, and
/// fails (400, not retried) calls about the item marked FAIL-ME while `fail` is set.
async fn server(keys: &'static [&'static str], fail: Arc<AtomicBool>) -> TestServer {
    TestServer::with_handler(move |req: &RecordedRequest| {
        if fail.load(Ordering::SeqCst) && req.body_text().contains("FAIL-ME") {
            return Reply::json(
                400,
                &serde_json::json!({"error": {"message": "this item is refused", "type": "invalid_request_error"}}),
            );
        }
        Reply::openai_stream(&[&evaluation(keys)], Some((120, 30)))
    })
    .await
    .expect("test server")
}

fn moot(base_url: &str, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(args)
        .env("OPENAI_BASE_URL", base_url)
        .env_remove("OPENAI_API_KEY")
        .env("MOOT_PROGRESS_SECS", "1")
        .env("NO_COLOR", "1")
        // Batch runs cache responses by default: keep the cache out of the user's folders.
        .env("MOOT_CACHE_DIR", std::env::temp_dir().join(format!("moot-test-cache-{}", std::process::id())))
        .kill_on_drop(true);
    cmd
}

async fn run(base_url: &str, args: &[&str]) -> Output {
    tokio::time::timeout(Duration::from_secs(120), moot(base_url, args).output())
        .await
        .expect("moot timed out")
        .expect("moot runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn logs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    v
}

const SMALL_KEYS: &[&str] = &["clarity", "accuracy"];

/// What a run prints for resuming repeats its provider, model and seed, and
/// a resume keeps the run's seed and refuses other models or another seed:
/// a folder holds one run, never one split across two judges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_keeps_the_runs_seed_and_models() {
    let fail = Arc::new(AtomicBool::new(true));
    let srv = server(SMALL_KEYS, fail.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let out_s = out.to_str().unwrap();
    let args = ["eval", SMALL_PANEL, "--data", ITEMS, "--provider", "openai", "--model", "m-one", "--seed", "5"];
    let first = run(&srv.base_url(), &[&args[..], &["--out", out_s]].concat()).await;
    let err = stderr(&first);
    assert_eq!(first.status.code(), Some(1), "{err}");
    let printed = err.lines().find_map(|l| l.strip_prefix("moot eval: to run the rest: ")).expect("a resume command");
    assert_eq!(
        printed,
        format!(
            "moot eval {SMALL_PANEL} --data {ITEMS} --provider openai --model m-one --seed 5 --out {out_s} --resume"
        )
    );
    let m = Manifest::load(&out).unwrap().unwrap();
    assert_eq!(m.models["default"], "m-one on openai");
    assert_eq!(m.models["[moderator]"], "m-one on openai");

    let asked = srv.request_count();
    let other = run(
        &srv.base_url(),
        &["eval", SMALL_PANEL, "--data", ITEMS, "--provider", "openai", "--model", "m-two", "--out", out_s, "--resume"],
    )
    .await;
    let err = stderr(&other);
    assert_eq!(other.status.code(), Some(1), "{err}");
    assert!(
        err.contains("was run with other models") && err.contains("m-one on openai there, m-two on openai here"),
        "{err}"
    );
    let reseeded = run(&srv.base_url(), &[&args[..8], &["--seed", "9", "--out", out_s, "--resume"]].concat()).await;
    assert!(stderr(&reseeded).contains("was run with seed 5, not 9"), "{}", stderr(&reseeded));
    assert_eq!(srv.request_count(), asked, "a refused resume asks nothing");

    // The printed command, without --seed too, resumes with the run's seed.
    fail.store(false, Ordering::SeqCst);
    let words: Vec<&str> = printed.split(' ').skip(1).filter(|w| *w != "--seed" && *w != "5").collect();
    let resumed = run(&srv.base_url(), &words).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let m = Manifest::load(&out).unwrap().unwrap();
    assert_eq!((m.seed, m.counts.completed), (5, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_item_bad_line_and_resume() {
    let fail = Arc::new(AtomicBool::new(true));
    let srv = server(SMALL_KEYS, fail.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let out_s = out.to_str().unwrap();
    let args = ["eval", SMALL_PANEL, "--data", ITEMS, "--provider", "openai", "--concurrency", "3", "--out", out_s];

    let first = run(&srv.base_url(), &args).await;
    let err = stderr(&first);
    assert_eq!(first.status.code(), Some(1), "{err}");
    assert!(err.contains("line 3") && err.contains("s-3"), "the bad line is reported: {err}");
    assert!(err.contains("s-4 failed"), "{err}");

    let m = Manifest::load(&out).unwrap().expect("run.json");
    assert_eq!(m.counts.items, 5);
    assert_eq!(m.counts.completed, 4);
    assert_eq!(m.counts.failed, 1);
    assert_eq!(m.counts.bad_items, 1);
    assert_eq!(m.bad_items[0].line, 3);
    assert_eq!(m.status, "incomplete");
    assert_eq!(m.items["s-4"].status, "failed");
    assert!(m.totals.input_tokens > 0 && m.totals.calls > 0);
    let files = logs(&out);
    assert_eq!(files.len(), 5, "one log per item: {files:?}");
    assert_eq!(log_state(&out.join("s-4.jsonl")).unwrap(), LogState::Failed);
    assert_eq!(log_state(&out.join("s-1.jsonl")).unwrap(), LogState::Completed);
    let s1_before = std::fs::read(out.join("s-1.jsonl")).unwrap();

    // Running again into the same folder without --resume is refused.
    let again = run(&srv.base_url(), &args).await;
    assert_ne!(again.status.code(), Some(0));
    assert!(stderr(&again).contains("--resume"), "{}", stderr(&again));

    // Resume once the server accepts the item: only s-4 runs again.
    fail.store(false, Ordering::SeqCst);
    let before = srv.request_count();
    let mut resume_args = args.to_vec();
    resume_args.push("--resume");
    let second = run(&srv.base_url(), &resume_args).await;
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let m = Manifest::load(&out).unwrap().unwrap();
    assert_eq!(m.counts.completed, 5);
    assert_eq!(m.counts.already_done, 4);
    assert_eq!(m.status, "completed");
    assert_eq!(m.invocations.len(), 2);
    assert_eq!(m.invocations[1].ran, 1);
    assert_eq!(m.items["s-4"].attempts, 2);
    assert_eq!(log_state(&out.join("s-4.jsonl")).unwrap(), LogState::Completed);
    let kept = out.join(ATTEMPTS).join("s-4.1.jsonl");
    assert_eq!(log_state(&kept).unwrap(), LogState::Failed, "the failed attempt is kept aside");
    assert_eq!(std::fs::read(out.join("s-1.jsonl")).unwrap(), s1_before, "completed logs are untouched");
    // s-4 alone: 4 initial calls + 2 debate turns per group + the aggregator.
    let requests = srv.request_count() - before;
    assert!((5..=10).contains(&requests), "{requests} calls for one item");

    // The report reads the folder and joins the items' human ratings.
    let report = run(&srv.base_url(), &["report", out_s, "--format", "json", "--bootstrap", "200"]).await;
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let rows: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let sessions = rows.as_array().unwrap().iter().find(|r| r["metric"] == "sessions").expect("a sessions row");
    assert_eq!(sessions["value"], 5.0);
    let rated = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "human_ratings" && r["dimension"] == "clarity")
        .unwrap();
    assert_eq!(rated["value"], 5.0);
    assert_eq!(rated["sources"]["item"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundled_panel_with_a_policy_moderator() {
    const KEYS: &[&str] = &["grammar", "answer_relevancy", "contextual_consistency", "educational_appropriateness"];
    let srv = server(KEYS, Arc::new(AtomicBool::new(false))).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bundled");
    let o = run(
        &srv.base_url(),
        &[
            "eval",
            "storybook-qa",
            "--data",
            "storybook-qa",
            "--limit",
            "3",
            "--moderator",
            "round-robin",
            "--provider",
            "openai",
            "--concurrency",
            "3",
            "--out",
            out.to_str().unwrap(),
            "--price-input",
            "1",
            "--price-output",
            "2",
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = Manifest::load(&out).unwrap().unwrap();
    assert_eq!(m.panel.name, "Storybook QA");
    assert_eq!(m.counts.completed, 3);
    assert_eq!(logs(&out).len(), 3);
    let expected = (m.totals.input_tokens as f64 * 1.0 + m.totals.output_tokens as f64 * 2.0) / 1e6;
    assert!((m.totals.cost.unwrap() - expected).abs() < 1e-12);
    // The plain progress lines (stderr is a pipe here) end with the final count.
    assert!(stderr(&o).contains("3/3 done"), "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_split_the_items_and_report_merges_them() {
    let srv = server(SMALL_KEYS, Arc::new(AtomicBool::new(false))).await;
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for shard in ["1/2", "2/2"] {
        let out = tmp.path().join(shard.replace('/', "of"));
        let o = run(
            &srv.base_url(),
            &[
                "eval",
                SMALL_PANEL,
                "--data",
                ITEMS,
                "--provider",
                "openai",
                "--shard",
                shard,
                "--out",
                out.to_str().unwrap(),
            ],
        )
        .await;
        // A shard may hold no item at all: that is reported, not run.
        if o.status.code() != Some(0) {
            assert!(stderr(&o).contains("no items to run"), "{}", stderr(&o));
        }
        dirs.push(out);
    }
    let mut seen: Vec<String> = Vec::new();
    for (d, shard) in dirs.iter().zip(["1/2", "2/2"]) {
        // A shard describes itself in a manifest of its own (run.shard-I-of-N.json).
        let name = moot::eval::shard::manifest_name(Some(shard.parse().unwrap()));
        if let Some(m) = moot::eval::shard::load(d, &name).unwrap() {
            seen.extend(m.items.keys().cloned());
        }
    }
    seen.sort();
    assert_eq!(seen, ["s-1", "s-2", "s-4", "s-5", "s-6"], "every item in exactly one shard");

    let mut args = vec!["report".to_string()];
    args.extend(dirs.iter().filter(|d| d.exists()).map(|d| d.to_string_lossy().into_owned()));
    args.extend(["--format", "csv", "--bootstrap", "0"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let report = run(&srv.base_url(), &args).await;
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let text = String::from_utf8(report.stdout).unwrap();
    assert!(text.starts_with("panel,dimension,group,stage,metric,value,ci_low,ci_high,n"), "{text}");
    // Both folders together hold every item once.
    assert!(text.lines().any(|l| l.starts_with("Small test panel,,,,sessions,5,")), "{text}");
}

/// Shards sharing one folder judge with the same models: a shard with
/// another model is refused, naming the shard's manifest that differs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_in_one_folder_refuse_other_models() {
    use moot::session::selection::Shard;
    let srv = server(SMALL_KEYS, Arc::new(AtomicBool::new(false))).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("shared");
    let out_s = out.to_str().unwrap();
    let holds = |s: &str| ["s-1", "s-2", "s-4", "s-5", "s-6"].iter().any(|id| s.parse::<Shard>().unwrap().contains(id));
    assert!(holds("1/2") && holds("2/2"), "the fixture's items fall in both shards");
    let shard = |part: &'static str, model: &'static str| {
        [
            "eval",
            SMALL_PANEL,
            "--data",
            ITEMS,
            "--provider",
            "openai",
            "--model",
            model,
            "--shard",
            part,
            "--out",
            out_s,
        ]
    };
    let first = run(&srv.base_url(), &shard("1/2", "m-one")).await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let other = run(&srv.base_url(), &shard("2/2", "m-two")).await;
    let err = stderr(&other);
    assert_eq!(other.status.code(), Some(1), "{err}");
    assert!(
        err.contains("run.shard-1-of-2.json was run with other models")
            && err.contains("m-one on openai there, m-two on openai here"),
        "{err}"
    );
    let same = run(&srv.base_url(), &shard("2/2", "m-one")).await;
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_running_sessions_and_resume_finishes_them() {
    // Every call takes a long time, so the items are mid-flight at Ctrl-C.
    let slow = Arc::new(AtomicBool::new(true));
    let srv = {
        let slow = slow.clone();
        TestServer::with_handler(move |_req: &RecordedRequest| {
            let reply = Reply::openai_stream(&[&evaluation(SMALL_KEYS)], Some((10, 5)));
            if slow.load(Ordering::SeqCst) { Reply::sse().delay(Duration::from_secs(30)).hang() } else { reply }
        })
        .await
        .unwrap()
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let out_s = out.to_str().unwrap();
    let args = ["eval", SMALL_PANEL, "--data", ITEMS, "--provider", "openai", "--concurrency", "2", "--out", out_s];
    let child = moot(&srv.base_url(), &args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Two items × four agents are waiting on the server.
    tokio::time::timeout(Duration::from_secs(60), srv.wait_for_requests(8)).await.expect("calls arrive");
    let pid = child.id().unwrap().to_string();
    let kill = std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(kill.success());
    let o = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let m = Manifest::load(&out).unwrap().unwrap();
    assert_eq!(m.status, "interrupted");
    assert_eq!(m.counts.stopped, 2);
    assert_eq!(m.counts.not_started, 3);
    let stopped: Vec<PathBuf> = logs(&out);
    assert_eq!(stopped.len(), 2);
    for p in &stopped {
        assert_eq!(log_state(p).unwrap(), LogState::Stopped, "{}", p.display());
    }

    slow.store(false, Ordering::SeqCst);
    let mut resume = args.to_vec();
    resume.push("--resume");
    let o = run(&srv.base_url(), &resume).await;
    // s-4 is fine with this server: everything completes.
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = Manifest::load(&out).unwrap().unwrap();
    assert_eq!(m.counts.completed, 5);
    assert_eq!(std::fs::read_dir(out.join(ATTEMPTS)).unwrap().count(), 2, "the stopped logs are kept aside");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_budget_stops_the_run_and_resume_finishes_it() {
    let srv = server(SMALL_KEYS, Arc::new(AtomicBool::new(false))).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let out_s = out.to_str().unwrap();
    let args = ["eval", SMALL_PANEL, "--data", ITEMS, "--provider", "openai", "--concurrency", "1", "--out", out_s];

    // Each call uses 150 tokens: the first item's four initial calls stay under
    // the limit, its first debate turn reaches it.
    let mut budgeted = args.to_vec();
    budgeted.extend(["--run-max-tokens", "700"]);
    let first = run(&srv.base_url(), &budgeted).await;
    let err = stderr(&first);
    assert_eq!(first.status.code(), Some(3), "{err}");
    assert!(err.contains("run budget") && err.contains("--run-max-tokens"), "{err}");
    let m = Manifest::load(&out).unwrap().expect("run.json");
    assert_eq!(m.status, "budget_reached");
    assert_eq!(m.counts.stopped, 1, "{:?}", m.counts);
    assert_eq!(m.counts.not_started, 4, "{:?}", m.counts);
    let files = logs(&out);
    assert_eq!(files.len(), 1, "nothing started after the budget was spent: {files:?}");
    let log = std::fs::read_to_string(&files[0]).unwrap();
    assert!(log.contains("\"author\":\"budget\""), "the stop is recorded as the budget's");
    assert!(log.contains("aggregation_completed"), "the stopped debate is still aggregated");
    assert_eq!(log_state(&files[0]).unwrap(), LogState::Stopped);

    // Without the limit, --resume runs the stopped item again and the rest.
    let mut resume = args.to_vec();
    resume.push("--resume");
    let second = run(&srv.base_url(), &resume).await;
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let m = Manifest::load(&out).unwrap().unwrap();
    assert_eq!(m.status, "completed");
    assert_eq!(m.counts.completed, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_limit_without_prices_is_warned_about() {
    let srv = server(SMALL_KEYS, Arc::new(AtomicBool::new(false))).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let args = [
        "eval",
        SMALL_PANEL,
        "--data",
        ITEMS,
        "--provider",
        "openai",
        "--limit",
        "1",
        "--max-cost",
        "0.5",
        "--run-max-cost",
        "2",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = run(&srv.base_url(), &args).await;
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: --max-cost: no prices for openai"), "{err}");
    assert!(err.contains("warning: --run-max-cost: no prices for openai"), "{err}");
    // Four items at once of a multi-agent panel ask for more calls than the provider's default limit.
    assert!(err.contains("note: provider openai takes at most 8 calls at once"), "{err}");
    let bad = run(&srv.base_url(), &["eval", SMALL_PANEL, "--data", ITEMS, "--max-cost", "0"]).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not a positive number"), "{}", stderr(&bad));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_without_any_readable_evaluation_counts_as_failed_with_its_reason() {
    // Every reply about s-2 is prose without scores.
    let srv = TestServer::with_handler(|req: &RecordedRequest| {
        let text = if req.body_text().contains("Where did the fox go?") {
            "The answer is short and clear; children would follow it.".to_string()
        } else {
            evaluation(SMALL_KEYS)
        };
        Reply::openai_stream(&[&text], Some((120, 30)))
    })
    .await
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let args = ["eval", SMALL_PANEL, "--data", ITEMS, "--provider", "openai", "--out", out.to_str().unwrap()];
    let o = run(&srv.base_url(), &args).await;
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let line = err.lines().find(|l| l.contains("s-2 failed")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("no agent produced a readable evaluation"), "{line}");
    let m = Manifest::load(&out).unwrap().unwrap();
    assert_eq!(m.counts.failed, 1, "{err}");
    assert_eq!(m.items["s-2"].status, "failed");
    assert!(
        m.items["s-2"].error.as_deref().is_some_and(|e| e.contains("replies without scores")),
        "{:?}",
        m.items["s-2"]
    );
    assert_eq!(log_state(&out.join("s-2.jsonl")).unwrap(), LogState::Failed);
    assert_eq!(m.items["s-1"].status, "completed");
}
