//! `moot eval --shard I/N` from several processes into one shared folder:
//! each shard writes its own manifest, one shard killed mid-run and resumed
//! loses and duplicates nothing, and `moot report` over the folder equals
//! the report of an unsharded run of the same items.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use moot::eval::Shard;
use moot::eval::shard::manifest_name;
use moot::session::run_folder::{ATTEMPTS, LogState, log_state};
use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};

const PANEL: &str = "tests/fixtures/eval/small-panel.toml";
const REPLY: &str = "Short view.\n```json\n{\"clarity\": 4, \"accuracy\": 3, \"overall\": 3, \"confidence\": 0.7, \"justification\": \"As scored.\"}\n```\nNO MORE COMMENTS";
const ITEMS: usize = 16;

async fn server(latency: Duration) -> TestServer {
    TestServer::with_handler(move |_: &RecordedRequest| {
        openai::events(&[REPLY], Some((120, 30))).iter().fold(Reply::sse().delay(latency), |r, e| r.event(e))
    })
    .await
    .unwrap()
}

fn data(dir: &Path) -> PathBuf {
    let path = dir.join("items.jsonl");
    let lines: Vec<String> = (0..ITEMS)
        .map(|i| {
            serde_json::json!({
                "id": format!("item-{i:02}"),
                "content": format!("Question {i}: why did the fox run? Answer: the storm."),
                "human": {"clarity": 1 + i % 5, "accuracy": 1 + (i * 3) % 5},
            })
            .to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn moot(base_url: &str, cache: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(args)
        .env("OPENAI_BASE_URL", base_url)
        .env_remove("OPENAI_API_KEY")
        .env("MOOT_PROGRESS_SECS", "1")
        .env("NO_COLOR", "1")
        .env("MOOT_CACHE_DIR", cache)
        .kill_on_drop(true);
    cmd
}

async fn run(base_url: &str, cache: &Path, args: &[&str]) -> Output {
    tokio::time::timeout(Duration::from_secs(120), moot(base_url, cache, args).output())
        .await
        .expect("moot timed out")
        .expect("moot runs")
}

fn eval_args<'a>(data: &'a str, out: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["eval", PANEL, "--data", data, "--provider", "openai", "--no-cache", "--out", out];
    args.extend(more);
    args
}

fn completed_logs(dir: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter(|p| log_state(p).ok() == Some(LogState::Completed))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

async fn report(base_url: &str, cache: &Path, dir: &Path) -> String {
    let o = run(base_url, cache, &["report", dir.to_str().unwrap(), "--format", "csv", "--bootstrap", "0"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_in_one_folder_one_killed_and_resumed_report_as_one_run() {
    let srv = server(Duration::from_millis(150)).await;
    let url = srv.base_url();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let data = data(tmp.path());
    let data = data.to_str().unwrap();
    let shared = tmp.path().join("shared");
    let shared_s = shared.to_str().unwrap();

    // Shard 1 is killed (as a machine that goes away) with items mid-flight.
    let mut child = moot(&url, &cache, &eval_args(data, shared_s, &["--shard", "1/2", "--concurrency", "2"]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    // Killed once two of its items have completed and another is running.
    let running = |dir: &Path| {
        std::fs::read_dir(dir).is_ok_and(|d| {
            d.flatten().any(|e| {
                let p = e.path();
                p.extension().is_some_and(|x| x == "jsonl") && log_state(&p).ok() == Some(LogState::Incomplete)
            })
        })
    };
    while !shared.exists() || completed_logs(&shared).len() < 2 || !running(&shared) {
        assert!(tokio::time::Instant::now() < deadline, "shard 1 never completed an item");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().await.unwrap();
    let done_before_kill = completed_logs(&shared);

    // Shard 2 runs whole meanwhile, into the same folder.
    let o = run(&url, &cache, &eval_args(data, shared_s, &["--shard", "2/2", "--concurrency", "4"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    // Shard 1 again without --resume is refused; with it, it finishes.
    let o = run(&url, &cache, &eval_args(data, shared_s, &["--shard", "1/2"])).await;
    assert_ne!(o.status.code(), Some(0), "a second start is refused");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resume"));
    let o = run(&url, &cache, &eval_args(data, shared_s, &["--shard", "1/2", "--resume", "--concurrency", "4"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));

    // Every item once, the items completed before the kill kept as they were.
    let done = completed_logs(&shared);
    let expected: Vec<String> = (0..ITEMS).map(|i| format!("item-{i:02}")).collect();
    assert_eq!(done, expected, "every item completed exactly once");
    for id in &done_before_kill {
        assert!(done.contains(id));
    }
    // The items cut off by the kill were moved aside and run again; none that had completed.
    let moved: Vec<String> = std::fs::read_dir(shared.join(ATTEMPTS))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(!moved.is_empty(), "the kill left items mid-flight");
    for name in &moved {
        assert!(!done_before_kill.iter().any(|d| name.starts_with(&format!("{d}."))), "{name} was moved aside");
        assert!(Shard { index: 1, count: 2 }.contains(name.split('.').next().unwrap()), "{name} is shard 1's");
    }
    // Each shard's manifest lists its own items; there is no run.json to fight over.
    assert!(!shared.join("run.json").exists());
    let mut listed = Vec::new();
    for index in 1..=2 {
        let name = manifest_name(Some(Shard { index, count: 2 }));
        let m: moot::session::run_folder::Manifest =
            serde_json::from_str(&std::fs::read_to_string(shared.join(&name)).unwrap()).unwrap();
        assert_eq!(m.status, "completed", "{name}");
        for (id, entry) in &m.items {
            assert!(Shard { index, count: 2 }.contains(id), "{name} lists {id}");
            assert_eq!(entry.status, "completed");
        }
        listed.extend(m.items.into_keys());
    }
    listed.sort();
    assert_eq!(listed, expected);

    // The report over the shared folder is the report of an unsharded run.
    let whole = tmp.path().join("whole");
    let o = run(&url, &cache, &eval_args(data, whole.to_str().unwrap(), &["--concurrency", "8"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let sharded = report(&url, &cache, &shared).await;
    assert!(sharded.lines().any(|l| l.starts_with(&format!("Small test panel,,,,sessions,{ITEMS},"))), "{sharded}");
    // Every figure but the time the sessions took.
    let figures = |report: &str| -> Vec<String> {
        report.lines().filter(|l| !l.contains(",duration_ms_per_item,")).map(str::to_owned).collect()
    };
    let unsharded = report(&url, &cache, &whole).await;
    assert_eq!(figures(&sharded), figures(&unsharded));
    assert!(figures(&sharded).len() > 100 && figures(&sharded).len() + 1 == sharded.lines().count());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_of_another_count_are_refused_from_a_shared_folder() {
    let srv = server(Duration::ZERO).await;
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let data = data(tmp.path());
    let out = tmp.path().join("shared");
    let (d, o) = (data.to_str().unwrap(), out.to_str().unwrap());
    let first = run(&srv.base_url(), &cache, &eval_args(d, o, &["--shard", "1/2"])).await;
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let other = run(&srv.base_url(), &cache, &eval_args(d, o, &["--shard", "1/3"])).await;
    assert_ne!(other.status.code(), Some(0));
    let e = String::from_utf8_lossy(&other.stderr);
    assert!(e.contains("shards of 2") && e.contains("--shard I/2"), "{e}");
    let whole = run(&srv.base_url(), &cache, &eval_args(d, o, &[])).await;
    assert!(String::from_utf8_lossy(&whole.stderr).contains("sharded run"), "an unsharded run is refused too");
}

/// A server whose usage says 90 of its 120 prompt tokens came from its cache.
async fn caching_server() -> TestServer {
    TestServer::with_handler(|_: &RecordedRequest| {
        let mut events = openai::events(&[REPLY], None);
        let done = events.pop().unwrap();
        events.push(
            serde_json::json!({
                "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": "test-model",
                "choices": [],
                "usage": {"prompt_tokens": 120, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 90}},
            })
            .to_string(),
        );
        events.push(done);
        events.iter().fold(Reply::sse(), |r, e| r.event(e))
    })
    .await
    .unwrap()
}

fn metric(csv: &str, name: &str) -> Option<String> {
    csv.lines().find(|l| l.split(',').any(|f| f == name)).map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_folder_is_priced_from_its_shards_and_shows_cached_tokens() {
    let srv = caching_server().await;
    let url = srv.base_url();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let data = data(tmp.path());
    let out = tmp.path().join("shared");
    let (d, o) = (data.to_str().unwrap(), out.to_str().unwrap());
    let prices = ["--price-input", "2", "--price-output", "8"];
    for shard in ["1/2", "2/2"] {
        let mut more = vec!["--shard", shard];
        more.extend(prices);
        let r = run(&url, &cache, &eval_args(d, o, &more)).await;
        assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    }
    let csv = report(&url, &cache, &out).await;
    // Every call: 120 in, 30 out at 2 and 8 a million tokens.
    let calls = srv.requests().len() as f64;
    let cost = metric(&csv, "cost_total").expect("a cost_total row");
    let value: f64 = cost.split(',').find_map(|f| f.parse::<f64>().ok().filter(|v| *v > 0.0)).expect("a cost");
    assert!((value - calls * (120.0 * 2.0 + 30.0 * 8.0) / 1e6).abs() < 1e-9, "{cost} for {calls} calls");
    let share = metric(&csv, "cached_input_share").expect("a cached_input_share row");
    assert!(share.split(',').any(|f| f == "0.75"), "{share}");

    // The text report says it in words.
    let text = run(&url, &cache, &["report", o, "--bootstrap", "0"]).await;
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("cached prompt tokens") && text.contains("75% of the prompt"), "{text}");

    // Shards priced differently: no cost, and a warning naming both.
    let m = out.join(manifest_name(Some(Shard { index: 2, count: 2 })));
    let mut manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
    manifest["pricing"]["input_per_mtok"] = serde_json::json!(3.0);
    std::fs::write(&m, manifest.to_string()).unwrap();
    let o2 = run(&url, &cache, &["report", o, "--format", "csv", "--bootstrap", "0"]).await;
    let e = String::from_utf8_lossy(&o2.stderr);
    assert!(e.contains("priced differently") && e.contains("shard 1/2") && e.contains("shard 2/2"), "{e}");
    let cost = metric(&String::from_utf8_lossy(&o2.stdout), "cost_total").unwrap();
    assert!(cost.contains("no prices given"), "{cost}");
}

/// `--resume` while the run is still going in another process is refused:
/// the logs it is writing are locked, and none is moved aside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_run_still_going_elsewhere_is_refused() {
    let srv = server(Duration::from_millis(300)).await;
    let url = srv.base_url();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let data = data(tmp.path());
    let out = tmp.path().join("run");
    let (d, o) = (data.to_str().unwrap(), out.to_str().unwrap());
    let mut first = moot(&url, &cache, &eval_args(d, o, &["--concurrency", "2"]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !std::fs::read_dir(&out)
        .is_ok_and(|d| d.flatten().any(|e| e.path().extension().is_some_and(|x| x == "jsonl")))
    {
        assert!(std::time::Instant::now() < deadline, "no item log appeared");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = run(&url, &cache, &eval_args(d, o, &["--resume"])).await;
    let e = String::from_utf8_lossy(&second.stderr);
    assert_ne!(second.status.code(), Some(0), "{e}");
    assert!(e.contains("being written by another moot process"), "{e}");
    assert!(!out.join(ATTEMPTS).exists(), "nothing was moved aside");
    let done = first.wait().await.unwrap();
    assert!(done.success());
    assert_eq!(completed_logs(&out).len(), ITEMS);
}
