//! `moot report --paper NAME`: a paper's table filled from a run made by
//! the binary (`moot eval` against a local OpenAI-compatible server), with
//! the paper's figures beside moot's, as a table, CSV and JSON.

use std::path::Path;
use std::process::{Command, Output};

use moot::testkit::server::{RecordedRequest, Reply, TestServer};

fn moot() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_moot"));
    c.env_remove("OPENAI_API_KEY").env_remove("ANTHROPIC_API_KEY").env("NO_COLOR", "1").env("MOOT_USER", "tester");
    c
}

async fn run_to_end(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run moot")).await.unwrap()
}

const ITEMS: &str = include_str!("../../assets/items/summary-collab.jsonl");

/// Every judge scores an item as its human raters did: the reply carries
/// the human ratings of the item whose summary the request shows.
fn as_the_humans(req: &RecordedRequest) -> Reply {
    let body = String::from_utf8_lossy(&req.body);
    let body: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let text = body["messages"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["content"].as_str()).collect::<String>())
        .unwrap_or_default();
    let item = ITEMS
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|i| i["content"].as_str().is_some_and(|c| text.contains(c)));
    let scores = item
        .map(|i| i["human"].clone())
        // Items nobody rated get middling scores.
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::json!({"coherence": 3, "consistency": 3, "fluency": 3, "relevance": 3}));
    let mut fields: Vec<String> =
        scores.as_object().map(|o| o.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect()).unwrap_or_default();
    fields.push("\"overall\": 3".into());
    let reply = format!(
        "Scores as I read it.\n```json\n{{{}, \"confidence\": 0.8, \"justification\": \"As read.\"}}\n```",
        fields.join(", ")
    );
    Reply::openai_stream(&[&reply], Some((40, 12)))
}

async fn eval(server: &TestServer, out: &Path) {
    let mut cmd = moot();
    cmd.env("OPENAI_BASE_URL", server.base_url())
        .args(["eval", "summary-collab-paper", "--data", "summary-collab", "--limit", "6"])
        .args(["--provider", "openai", "--model", "judge", "--out"])
        .arg(out);
    let output = run_to_end(cmd).await;
    assert!(output.status.success(), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
}

async fn report(out: &Path, args: &[&str]) -> Output {
    let mut cmd = moot();
    cmd.args(["report", "--bootstrap", "200"]).args(args).arg(out);
    run_to_end(cmd).await
}

/// CollabEval's table 1 from a CollabEval run whose judges score as the
/// humans did: accuracy 100 % beside the paper's 49.5, one round per item
/// (every item settled by the first evaluations), the paper's single-LLM
/// row listed as not in this report, and table 2 (pairwise) not filled.
#[tokio::test(flavor = "multi_thread")]
async fn collab_eval_table_one_is_filled_from_a_run() {
    let server = TestServer::with_handler(as_the_humans).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    eval(&server, &out).await;

    let table = report(&out, &["--paper", "collab-eval"]).await;
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(table.status.success(), "{text}{}", String::from_utf8_lossy(&table.stderr));
    assert!(text.contains("Table 1: criteria-based evaluation, SummEval"), "{text}");
    assert!(
        text.contains("moot:  Summary review (CollabEval paper preset) — openai/judge")
            || text.contains("— openai/judge"),
        "the model is named: {text}"
    );
    let line = text.lines().find(|l| l.trim_start().starts_with("CollabEval")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("100.0") && line.contains("49.5"), "moot's accuracy beside the paper's: {line}");
    assert!(line.contains(" 1.00 ") || line.contains(" 1.00"), "one round per item: {line}");
    assert!(text.contains("Single LLM (not in this report)"), "{text}");
    assert!(text.contains("not filled: chatbot-arena"), "{text}");

    let csv = report(&out, &["--paper", "collab-eval:summeval", "--format", "csv"]).await;
    let csv = String::from_utf8_lossy(&csv.stdout);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(moot::report::paper::render::CSV_COLUMNS.join(",").as_str()));
    let acc = csv
        .lines()
        .find(|l| l.starts_with("collab-eval,summeval,CollabEval,") && l.contains(",relevance,Acc %,"))
        .unwrap_or_else(|| panic!("{csv}"));
    let cols: Vec<&str> = acc.split(',').collect();
    assert_eq!(cols[9], "100", "{acc}");
    assert_eq!(cols[15], "49.5", "{acc}");

    let json = report(&out, &["--paper", "collab-eval", "--format", "json"]).await;
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(json["paper"], "collab-eval");
    let t = &json["tables"][0];
    assert_eq!(t["id"], "summeval");
    assert_eq!(t["lines"][0]["models"][0], "openai/judge");
    assert_eq!(t["lines"][0]["cells"][0][0]["paper"], 49.5);
    assert_eq!(t["lines"][0]["cells"][0][0]["n"], 4, "the four rated items of six");
    assert!(json["unfilled"].as_array().is_some_and(|u| u.len() == 2), "both pairwise tables: {json}");
}

/// A paper none of whose tables the run can fill is an error naming what
/// each table needs; an unknown name lists the known ones.
#[tokio::test(flavor = "multi_thread")]
async fn a_paper_the_run_cannot_fill_says_what_it_needs() {
    let server = TestServer::with_handler(as_the_humans).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    eval(&server, &out).await;
    let o = report(&out, &["--paper", "maj-eval"]).await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("no table of maj-eval can be filled") && err.contains("run by chat-eval or g-eval or maj-eval"),
        "{err}"
    );
    let o = report(&out, &["--paper", "maj"]).await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("known: maj-eval, collab-eval"), "{err}");
}

/// `--plot` draws the papers' figures: for a SAGEval session, the
/// evaluator's score distribution beside the rectified one (SAGEval's
/// figure 3); correlation charts are in Spearman's ρ (MAJ-EVAL's figure 4).
#[tokio::test(flavor = "multi_thread")]
async fn plots_draw_the_evaluator_beside_the_rectified_scores() {
    let dir = tempfile::tempdir().unwrap();
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/sage-eval.jsonl");
    let mut cmd = moot();
    cmd.args(["report", "--bootstrap", "0", "--format", "csv", "--plot"]).arg(dir.path()).arg(&log);
    let o = run_to_end(cmd).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svgs: Vec<std::path::PathBuf> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.path()).collect();
    let dist =
        svgs.iter().find(|p| p.to_string_lossy().ends_with("-distribution.svg")).unwrap_or_else(|| panic!("{svgs:?}"));
    let svg = std::fs::read_to_string(dist).unwrap();
    assert!(svg.contains("evaluator") && svg.contains("rectified (meta-evaluator)"), "{svg}");
    assert!(!svg.contains("aggregate"), "the reviewed panel's chart is not the debate's");
}

/// The judge on model `a` always prefers the summary shown first (every
/// pair flips under the swap: a tie); on model `b`, the second.
fn by_model(req: &RecordedRequest) -> Reply {
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
    let verdict = if body["model"] == "a" { "A" } else { "B" };
    let text = format!("{{\"verdict\": \"{verdict}\", \"confidence\": \"high\", \"reasoning\": \"Reads better.\"}}");
    Reply::openai_stream(&[&text], Some((30, 10)))
}

/// MASA's prompt comparison: the same pairs judged on two models are two
/// panels (the panel's name, then `#2`), and the `prompts` table gives the
/// difference in agreement with its paired interval, naming the other
/// panel — the report's `agreement_difference` row, in percent.
#[tokio::test(flavor = "multi_thread")]
async fn masa_compares_two_judges_on_the_same_pairs() {
    let server = TestServer::with_handler(by_model).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    for model in ["a", "b"] {
        let mut cmd = moot();
        cmd.env("OPENAI_BASE_URL", server.base_url())
            .args(["eval", "pairwise-summaries-paper", "--data", "pairwise-summaries", "--limit", "5"])
            .args(["--provider", "openai", "--model", model, "--out"])
            .arg(dir.path().join(model));
        let o = run_to_end(cmd).await;
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let mut cmd = moot();
    cmd.args(["report", "--bootstrap", "300", "--format", "json"]).arg(dir.path().join("a")).arg(dir.path().join("b"));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&run_to_end(cmd).await.stdout).expect("report json");
    let diff = rows.iter().find(|r| r["metric"] == "agreement_difference").expect("a difference row");
    let mut cmd = moot();
    cmd.args(["report", "--bootstrap", "300", "--format", "json", "--paper", "masa:prompts"])
        .arg(dir.path().join("a"))
        .arg(dir.path().join("b"));
    let o = run_to_end(cmd).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("paper json");
    let lines = json["tables"][0]["lines"].as_array().expect("lines");
    let first = &lines[0];
    assert_eq!(first["models"][0], "openai/a");
    let cell = &first["cells"][0][0];
    assert_eq!(cell["versus"], diff["versus"], "{cell}");
    assert!(diff["versus"].as_str().is_some_and(|v| v.ends_with("#2")), "{diff}");
    let close =
        |a: &serde_json::Value, b: &serde_json::Value| (a.as_f64().unwrap() - 100.0 * b.as_f64().unwrap()).abs() < 1e-9;
    assert!(close(&cell["value"], &diff["value"]) && close(&cell["ci_low"], &diff["ci_low"]), "{cell} vs {diff}");
    assert_eq!(cell["paper"], 3.12);
}
