//! The pairwise part of `moot report` and `moot eval`: the statistics
//! against reference values (tests/fixtures/pairwise/make_fixtures.py: scipy
//! and scikit-learn), then the report over session logs written by the real
//! engine with scripted judges — a fair judge, a judge that always says A,
//! a reply that cannot be read, people's labels from the items, a `--human`
//! file and a person's settlement — and `moot eval` then `moot report` with
//! the binary against a local server.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use moot::item::{Candidate, Item};
use moot::panel::{Panel, Protocol};
use moot::provider::ChatRequest;
use moot::report::human::parse_csv;
use moot::report::{Report, ReportOptions, Row, build_report, collect_logs, load_records};
use moot::session::SessionWriter;
use moot::session::event::EndStatus;
use moot::stats::Preference;
use moot::stats::raters::{bootstrap_win_rates, leave_one_rater_out, rater_kappa, wilson_95};
use moot::testkit::scripted::ScriptedReply;
use moot::testkit::server::{RecordedRequest, Reply, TestServer};
use serde::Deserialize;
use support::*;

// ---------------------------------------------------------------------------
// The statistics against scipy and scikit-learn
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct Expected {
    win_rates: Vec<WinCase>,
    wilson: Vec<WilsonCase>,
    rater_kappa: Vec<KappaCase>,
    leave_one_out: Vec<LooCase>,
}

#[derive(Deserialize)]
struct WinCase {
    name: String,
    items: Vec<[u64; 3]>,
    rates: [f64; 4],
    low: [f64; 4],
    high: [f64; 4],
}

#[derive(Deserialize)]
struct WilsonCase {
    k: u64,
    n: u64,
    low: f64,
    high: f64,
}

#[derive(Deserialize)]
struct KappaCase {
    name: String,
    units: Vec<Vec<(String, String)>>,
    mean: Option<f64>,
    pairs: usize,
}

#[derive(Deserialize)]
struct LooCase {
    name: String,
    judge: Vec<Option<String>>,
    units: Vec<Vec<String>>,
    cases: usize,
    rater_rate: Option<f64>,
    judge_rate: Option<f64>,
}

fn expected() -> Expected {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pairwise/expected.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn pref(s: &str) -> Preference {
    s.parse().unwrap()
}

/// scipy draws other resamples than moot: intervals agree loosely.
const BOOTSTRAP_TOL: f64 = 0.03;

#[test]
fn win_rate_intervals_are_close_to_scipys_bootstrap() {
    for c in expected().win_rates {
        let cis = bootstrap_win_rates(&c.items, 10_000, 0, 0.95).unwrap();
        let sum = |k: usize| c.items.iter().map(|i| i[k]).sum::<u64>() as f64;
        let all = sum(0) + sum(1) + sum(2);
        let point = [sum(0) / all, sum(1) / all, sum(2) / all, sum(0) / (sum(0) + sum(1))];
        for k in 0..4 {
            assert!((point[k] - c.rates[k]).abs() < 1e-12, "{}: rate {k}", c.name);
            let ci = cis[k].as_ref().unwrap();
            assert!((ci.low - c.low[k]).abs() < BOOTSTRAP_TOL, "{}: low {k}: {} vs scipy {}", c.name, ci.low, c.low[k]);
            assert!((ci.high - c.high[k]).abs() < BOOTSTRAP_TOL, "{}: high {k}: {} vs {}", c.name, ci.high, c.high[k]);
        }
    }
}

#[test]
fn wilson_intervals_match_scipy() {
    for c in expected().wilson {
        let (lo, hi) = wilson_95(c.k, c.n).unwrap();
        assert!((lo - c.low).abs() < 1e-9 && (hi - c.high).abs() < 1e-9, "{}/{}: {lo} {hi}", c.k, c.n);
    }
}

#[test]
fn kappa_between_raters_matches_sklearn() {
    for c in expected().rater_kappa {
        let mut names: Vec<String> = Vec::new();
        let units: Vec<Vec<(usize, Preference)>> = c
            .units
            .iter()
            .map(|u| {
                u.iter()
                    .map(|(r, l)| {
                        if !names.contains(r) {
                            names.push(r.clone());
                        }
                        (names.iter().position(|n| n == r).unwrap(), pref(l))
                    })
                    .collect()
            })
            .collect();
        let got = rater_kappa(&units, 3);
        match c.mean {
            Some(m) => {
                let k = got.unwrap();
                assert!((k.mean - m).abs() < 1e-9, "{}: {} vs {m}", c.name, k.mean);
                assert_eq!(k.pairs, c.pairs, "{}", c.name);
            }
            None => assert!(got.is_err(), "{}", c.name),
        }
    }
}

#[test]
fn leave_one_rater_out_matches_sklearn_accuracy() {
    for c in expected().leave_one_out {
        let judge: Vec<Option<Preference>> = c.judge.iter().map(|j| j.as_deref().map(pref)).collect();
        let units: Vec<Vec<Preference>> = c.units.iter().map(|u| u.iter().map(|l| pref(l)).collect()).collect();
        let loo = leave_one_rater_out(&judge, &units).unwrap();
        assert_eq!(loo.cases, c.cases, "{}", c.name);
        assert!((loo.rater_rate().unwrap() - c.rater_rate.unwrap()).abs() < 1e-12, "{}", c.name);
        assert!((loo.judge_rate().unwrap() - c.judge_rate.unwrap()).abs() < 1e-12, "{}", c.name);
    }
}

// ---------------------------------------------------------------------------
// The report over logs the engine wrote
// ---------------------------------------------------------------------------

const GOOD: &str = "The council voted 7-2 to close the Elm Street branch in March after a 12% budget cut.";
const MID: &str = "The council will close a library branch because of budget cuts.";
const POOR: &str = "A library is closing.";

fn text_of(id: &str) -> &'static str {
    match id {
        "lead" => GOOD,
        "para" => MID,
        _ => POOR,
    }
}

fn verdict(label: &str) -> String {
    format!("Compared. {{\"verdict\": \"{label}\", \"confidence\": \"high\", \"reasoning\": \"As said.\"}}")
}

fn shown(text: &str, which: &str) -> String {
    text.split(&format!("--- SUMMARY {which} ---\n"))
        .nth(1)
        .and_then(|s| s.split('\n').next())
        .unwrap_or("")
        .to_string()
}

/// The better text wins in either position (longer is better here).
fn fair_label(text: &str) -> &'static str {
    match shown(text, "A").len().cmp(&shown(text, "B").len()) {
        std::cmp::Ordering::Greater => "A",
        std::cmp::Ordering::Less => "B",
        std::cmp::Ordering::Equal => "tie",
    }
}

/// Ann and Bea judge fairly, except that Bea's replies about item p4 cannot
/// be read; Cal always says A (a flip, so a tie, after the swap).
fn judges(req: &ChatRequest, _: usize) -> ScriptedReply {
    let text: String = req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n");
    if text.contains("You are Cal") {
        return ScriptedReply::Text(verdict("A"));
    }
    if text.contains("You are Bea") && text.contains("Item four") {
        return ScriptedReply::Text("Both read well enough, I suppose.".into());
    }
    ScriptedReply::Text(verdict(fair_label(&text)))
}

fn pair_item(id: &str, note: &str, cands: &[&str], labels: &[&str]) -> Item {
    let mut it = item();
    it.id = id.into();
    it.content = String::new();
    it.context = Some(format!("{note}. The town council voted 7 to 2 on Tuesday to close the Elm Street branch."));
    it.candidates = Some(cands.iter().map(|c| Candidate { id: (*c).into(), text: text_of(c).into() }).collect());
    it.human_labels = labels.iter().map(|s| s.to_string()).collect();
    it
}

/// The items: candidates in different orders, people's labels as `A`/`B`,
/// `tie` and candidate ids, one item without labels.
fn items() -> Vec<Item> {
    vec![
        pair_item("p1", "Item one", &["lead", "short"], &["A", "A"]),
        pair_item("p2", "Item two", &["short", "lead"], &["B", "tie"]),
        pair_item("p3", "Item three", &["lead", "para"], &["lead", "para", "lead"]),
        pair_item("p4", "Item four", &["short", "lead"], &["tie", "tie"]),
        pair_item("p5", "Item five", &["para", "short"], &[]),
    ]
}

fn pairwise_panel() -> Panel {
    panel(Protocol::Pairwise, &[("Judges", &["Ann", "Bea", "Cal"])])
}

/// Runs every item through the engine, one log each in `dir`.
async fn write_logs(dir: &Path) {
    for it in items() {
        let mut c = config(pairwise_panel(), scripted(judges));
        c.item = it.clone();
        let writer = SessionWriter::create(dir.join(format!("{}.jsonl", it.id))).unwrap();
        let (_, outcome) = Session::start(c, Some(writer)).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{}: {:?}", it.id, outcome.error);
    }
}

fn report_of(dir: &Path, human: Option<&moot::report::HumanFile>, bootstrap: usize) -> Report {
    let files = collect_logs(&[dir.to_path_buf()]).unwrap();
    let loaded = load_records(&files, 2);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    build_report(loaded.records, human, &ReportOptions { bootstrap, ..ReportOptions::default() })
}

/// The row of a decider (`agent`, `stage`), system and metric.
fn row<'a>(r: &'a Report, agent: Option<&str>, stage: Option<&str>, system: Option<&str>, metric: &str) -> &'a Row {
    r.rows
        .iter()
        .find(|x| {
            x.dimension.as_deref() == Some("pairwise")
                && x.agent.as_deref() == agent
                && x.stage.map(|s| s.as_str()) == stage
                && x.system.as_deref() == system
                && x.metric == metric
        })
        .unwrap_or_else(|| panic!("no row {agent:?} {stage:?} {system:?} {metric}"))
}

fn value(r: &Report, agent: Option<&str>, stage: Option<&str>, system: Option<&str>, metric: &str) -> f64 {
    let x = row(r, agent, stage, system, metric);
    x.value.unwrap_or_else(|| panic!("{metric}: undefined: {:?}", x.undefined_reason))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

fn wlt(r: &Report, agent: Option<&str>, stage: &str, system: &str) -> (f64, f64, f64, f64) {
    let v = |m: &str| value(r, agent, Some(stage), Some(system), m);
    (v("pairwise_wins"), v("pairwise_losses"), v("pairwise_ties"), v("pairwise_undecided"))
}

#[tokio::test]
async fn report_over_engine_logs() {
    let tmp = tempfile::tempdir().unwrap();
    write_logs(tmp.path()).await;
    let r = report_of(tmp.path(), None, 2000);
    assert_eq!(r.panels.len(), 1);
    assert_eq!(r.panels[0].protocol, "pairwise");
    assert!(!r.rows.iter().any(|x| x.metric == "pearson"), "no score statistics for pairwise judges");

    // The panel: two of three judges decide; p4 has Ann for lead, Bea no
    // result, Cal a tie: a tie.
    assert_eq!(wlt(&r, None, "aggregate", "lead"), (3.0, 0.0, 1.0, 0.0));
    assert_eq!(wlt(&r, None, "aggregate", "short"), (0.0, 3.0, 1.0, 0.0));
    assert_eq!(wlt(&r, None, "aggregate", "para"), (1.0, 1.0, 0.0, 0.0));
    let win = row(&r, None, Some("aggregate"), Some("lead"), "pairwise_win_rate");
    assert!(close(win.value.unwrap(), 0.75) && win.n == Some(4));
    let (lo, hi) = (win.ci_low.unwrap(), win.ci_high.unwrap());
    assert!((0.0..=0.75).contains(&lo) && (0.75..=1.0).contains(&hi), "{lo} {hi}");
    assert!(close(value(&r, None, Some("aggregate"), Some("lead"), "pairwise_win_rate_excluding_ties"), 1.0));
    assert!(close(value(&r, None, Some("aggregate"), Some("para"), "pairwise_tie_rate"), 0.0));

    // Each judge: Bea's unreadable replies are undecided, never a score.
    assert_eq!(wlt(&r, Some("Ann"), "final", "lead"), (4.0, 0.0, 0.0, 0.0));
    assert_eq!(wlt(&r, Some("Bea"), "final", "lead"), (3.0, 0.0, 0.0, 1.0));
    assert_eq!(wlt(&r, Some("Cal"), "final", "lead"), (0.0, 0.0, 4.0, 0.0));
    let cal = row(&r, Some("Cal"), Some("final"), Some("lead"), "pairwise_win_rate_excluding_ties");
    assert_eq!(cal.value, None);
    assert_eq!(cal.undefined_reason.as_deref(), Some("all 4 decided comparisons are ties"));

    // Position bias: Cal flips every comparison (A↔B), the others none.
    assert!(close(value(&r, Some("Cal"), None, None, "position_bias_rate"), 1.0));
    assert!(close(value(&r, Some("Cal"), None, None, "position_bias_opposite_rate"), 1.0));
    assert!(close(value(&r, Some("Cal"), None, None, "position_bias_win_tie_rate"), 0.0));
    assert!(close(value(&r, Some("Ann"), None, None, "position_bias_rate"), 0.0));
    assert_eq!(row(&r, Some("Bea"), None, None, "position_bias_rate").n, Some(4), "p4 has no decision");
    let pooled = row(&r, None, None, None, "position_bias_rate");
    assert!(close(pooled.value.unwrap(), 5.0 / 14.0) && pooled.n == Some(14));

    // People (item labels, mapped to each log's pair): majority p1 lead,
    // p2 tie (B and tie), p3 lead, p4 tie. The panel said lead, lead, lead, tie.
    let agree = row(&r, None, Some("aggregate"), None, "human_majority_agreement");
    assert!(close(agree.value.unwrap(), 0.75) && agree.n == Some(4), "{agree:?}");
    assert!(agree.ci_low.is_some());
    assert!(close(value(&r, None, Some("aggregate"), None, "human_any_agreement"), 1.0));
    assert!(close(value(&r, None, Some("aggregate"), None, "cohen_kappa"), 0.6));
    assert!(close(value(&r, None, Some("aggregate"), None, "tie_confusion_winner_as_tie"), 0.0));
    assert!(close(value(&r, None, Some("aggregate"), None, "tie_confusion_tie_as_winner"), 0.5));
    let loo = row(&r, None, Some("aggregate"), None, "loo_rater_agreement");
    assert!(close(loo.value.unwrap(), 4.0 / 9.0) && loo.n == Some(9), "{loo:?}");
    assert!(close(value(&r, None, Some("aggregate"), None, "loo_judge_agreement"), 6.0 / 9.0));
    // Between the people: raters #1 and #2 share four comparisons.
    let k = row(&r, None, None, None, "human_rater_kappa");
    assert!(close(k.value.unwrap(), (0.5 - 0.3125) / 0.6875) && k.n == Some(1), "{k:?}");
    let labelled = row(&r, None, None, None, "human_labelled_comparisons");
    assert_eq!((labelled.value, labelled.n), (Some(4.0), Some(5)));
    assert_eq!(labelled.sources, Some(BTreeMap::from([("item".to_string(), 4)])));
    // Bea has no decision on p4: three comparisons with people.
    assert_eq!(row(&r, Some("Bea"), Some("final"), None, "human_majority_agreement").n, Some(3));
    assert!(!r.rows.iter().any(|x| x.stage.map(|s| s.as_str()) == Some("human_adjusted")), "nobody settled");

    // The table states methods and says no data for what has none.
    let mut out = Vec::new();
    moot::report::format::write_table(&r, &mut out, moot::cli::headless::Paint::for_stream(false)).unwrap();
    let table = String::from_utf8(out).unwrap();
    for needle in [
        "Pairwise win rates (share of decided comparisons; 95% percentile bootstrap intervals resampling items, 2000 resamples",
        "3-0-1",
        "Position bias",
        "leave-one-rater-out",
        "all 4 decided comparisons are ties",
    ] {
        assert!(table.contains(needle), "missing {needle:?} in:\n{table}");
    }
    assert!(!table.contains("Human raters"), "pairwise labels have their own rater rows:\n{table}");
    // CSV carries the system column.
    let mut csv = Vec::new();
    moot::report::format::write_csv(&r, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",agent,system,raters,versus"));
    assert!(csv.lines().any(|l| l.contains(",pairwise_win_rate,0.75,") && l.ends_with(",lead,,")), "{csv}");
}

#[tokio::test]
async fn a_human_file_and_a_settled_pair() {
    let tmp = tempfile::tempdir().unwrap();
    write_logs(tmp.path()).await;
    // A person settles p2 as a tie after the run.
    let p2 = tmp.path().join("p2.jsonl");
    let text = std::fs::read_to_string(&p2).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let seq = last["seq"].as_u64().unwrap() + 1;
    let settled = format!(
        "{{\"seq\":{seq},\"t\":\"2025-03-01T10:00:00Z\",\"type\":\"pair_settled\",\"first\":\"short\",\"second\":\"lead\",\"author\":\"ann\"}}\n"
    );
    std::fs::write(&p2, text + &settled).unwrap();

    // The file's labels replace the item's: p2's rows name the pair in the
    // other order than the log (lead, short); p5 has an item-level label.
    let csv = "id,first,second,label,rater\np2,lead,short,A,ann\np2,lead,short,tie,bob\np2,lead,short,short,cy\np5,,,para,ann\np9,,,A,ann\n";
    let human = parse_csv(csv, "labels.csv".into()).unwrap();
    assert!(human.problems.is_empty(), "{:?}", human.problems);
    let r = report_of(tmp.path(), Some(&human), 0);

    // p2: ann lead (B in the log's order), bob tie, cy short (A): a tie.
    // p5: ann's best is para, the log's first: A. Agreement 4 of 5.
    let agree = row(&r, None, Some("aggregate"), None, "human_majority_agreement");
    assert!(close(agree.value.unwrap(), 0.8) && agree.n == Some(5), "{agree:?}");
    assert_eq!(agree.ci_low, None, "--bootstrap 0: no intervals");
    let labelled = row(&r, None, None, None, "human_labelled_comparisons");
    assert_eq!(labelled.sources, Some(BTreeMap::from([("file".to_string(), 2), ("item".to_string(), 3)])));
    assert!(r.notes.iter().any(|n| n.contains("1 rated ids match no session")), "{:?}", r.notes);

    // The panel with the person's decision: lead 2-0-2, marked human.
    assert_eq!(wlt(&r, None, "human_adjusted", "lead"), (2.0, 0.0, 2.0, 0.0));
    let adj = row(&r, None, Some("human_adjusted"), Some("lead"), "pairwise_win_rate");
    assert_eq!(adj.sources.as_ref().unwrap()["human"], 1);
    assert_eq!(wlt(&r, None, "aggregate", "lead"), (3.0, 0.0, 1.0, 0.0), "the panel's own decision is kept");
    // With p2 settled as a tie the adjusted decisions match all five majorities.
    assert!(close(value(&r, None, Some("human_adjusted"), None, "human_majority_agreement"), 1.0));
}

#[test]
fn no_decisions_is_no_data_not_zero() {
    use moot::session::event::{Event, EventKind, UsageTotals};
    let dir = tempfile::tempdir().unwrap();
    // A stopped session whose only judge gave no readable verdict.
    let mut w = SessionWriter::create(dir.path().join("p1.jsonl")).unwrap();
    let decided = |judge: Option<&str>| EventKind::PairDecided {
        judge: judge.map(Into::into),
        first: "lead".into(),
        second: "short".into(),
        first_order: None,
        swapped_order: None,
        winner: None,
        flip: None,
        no_result: Some("no readable verdict".into()),
    };
    let kinds = vec![
        EventKind::SessionStarted {
            schema_version: moot::session::event::SCHEMA_VERSION,
            session_id: "s1".into(),
            protocol: "pairwise".into(),
            panel: pairwise_panel().to_json(),
            item: pair_item("p1", "Item one", &["lead", "short"], &["A"]),
            agents: Vec::new(),
            roles: Default::default(),
            seed: 1,
            moot_version: "0".into(),
            provider_note: None,
            preset: Default::default(),
            departures: Vec::new(),
        },
        decided(Some("Ann")),
        decided(None),
        EventKind::SessionEnded {
            status: EndStatus::Stopped,
            error: None,
            reason: None,
            usage: UsageTotals::default(),
            duration_ms: 5,
        },
    ];
    for (seq, kind) in kinds.into_iter().enumerate() {
        w.write(&Event { seq: seq as u64, t: chrono::Utc::now(), kind }).unwrap();
    }
    drop(w);
    let r = report_of(dir.path(), None, 100);
    let win = row(&r, None, Some("aggregate"), Some("lead"), "pairwise_win_rate");
    assert_eq!(win.value, None);
    assert_eq!(win.undefined_reason.as_deref(), Some("no decided comparisons (1 without a result)"));
    assert_eq!(value(&r, None, Some("aggregate"), Some("lead"), "pairwise_undecided"), 1.0);
    let agree = row(&r, Some("Ann"), Some("final"), None, "human_majority_agreement");
    assert_eq!((agree.value, agree.n), (None, Some(0)));
    assert_eq!(agree.undefined_reason.as_deref(), Some("n < 3"));
}

// ---------------------------------------------------------------------------
// `moot eval` then `moot report`, with the binary
// ---------------------------------------------------------------------------

/// A local OpenAI-compatible server that judges like `fair_label`.
async fn fair_server() -> TestServer {
    TestServer::with_handler(|req: &RecordedRequest| {
        let body: serde_json::Value = serde_json::from_str(&req.body_text()).unwrap_or_default();
        let text: String = body["messages"]
            .as_array()
            .map(|m| m.iter().filter_map(|x| x["content"].as_str()).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        Reply::openai_stream(&[&verdict(fair_label(&text))], Some((200, 20)))
    })
    .await
    .expect("test server")
}

fn moot(base_url: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(args)
        .env("OPENAI_BASE_URL", base_url)
        .env_remove("OPENAI_API_KEY")
        .env("MOOT_PROGRESS_SECS", "1")
        .env("NO_COLOR", "1")
        .env("MOOT_CACHE_DIR", std::env::temp_dir().join(format!("moot-test-cache-pw-{}", std::process::id())));
    cmd.output().expect("moot runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_then_report_with_the_binary() {
    let srv = fair_server().await;
    let tmp = tempfile::tempdir().unwrap();
    let out: PathBuf = tmp.path().join("run");
    let out_s = out.to_str().unwrap().to_string();
    let url = srv.base_url();
    let eval = tokio::task::spawn_blocking({
        let (url, out_s) = (url.clone(), out_s.clone());
        move || {
            moot(
                &url,
                &[
                    "eval",
                    "assets/panels/pairwise-summaries.toml",
                    "--data",
                    "assets/items/pairwise-summaries.jsonl",
                    "--provider",
                    "openai",
                    "--out",
                    &out_s,
                ],
            )
        }
    });
    let eval = tokio::time::timeout(Duration::from_secs(120), eval).await.unwrap().unwrap();
    let err = String::from_utf8_lossy(&eval.stderr).into_owned();
    assert_eq!(eval.status.code(), Some(0), "{err}");
    // Progress and the end summary: W-L-T per system with its interval.
    // The running line, best first, with a Wilson interval (5 of 11: 21%–72%).
    let running = err.lines().rfind(|l| l.starts_with("moot eval: pairwise: sys-")).expect("a running line");
    assert!(running.starts_with("moot eval: pairwise: sys-para 4-3-0 win 57% ["), "{running}");
    assert!(running.contains("sys-lead 5-6-0 win 45% [21%, 72%]"), "{running}");
    assert!(err.contains("moot eval: pairwise: 12 comparisons over 10 items; 0 without a result"), "{err}");
    let lead = err.lines().find(|l| l.starts_with("moot eval:   sys-lead ")).expect("sys-lead's line");
    // The longer summary wins (see the items): sys-lead 5-6-0 over 11 comparisons.
    assert!(lead.contains(" 5-6-0 win rate 0.455 ["), "{lead}");

    let report =
        tokio::task::spawn_blocking(move || moot(&url, &["report", &out_s, "--format", "json", "--bootstrap", "500"]));
    let report = report.await.unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", String::from_utf8_lossy(&report.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&report.stdout).unwrap();
    let find = |agent: Option<&str>, system: Option<&str>, metric: &str| {
        rows.iter()
            .find(|r| {
                r["dimension"] == "pairwise"
                    && r["metric"] == metric
                    && r.get("agent").and_then(|a| a.as_str()) == agent
                    && r.get("system").and_then(|a| a.as_str()) == system
                    && (agent.is_some() || r["stage"] == "aggregate" || r["stage"].is_null())
            })
            .unwrap_or_else(|| panic!("no {metric} row"))
    };
    assert_eq!(find(None, Some("sys-lead"), "pairwise_wins")["value"], 5.0);
    assert_eq!(find(None, Some("sys-lead"), "pairwise_losses")["value"], 6.0);
    let win = find(None, Some("sys-lead"), "pairwise_win_rate");
    assert!((win["value"].as_f64().unwrap() - 5.0 / 11.0).abs() < 1e-12);
    assert!(win["ci_low"].as_f64().unwrap() < win["ci_high"].as_f64().unwrap());
    // A judge that follows the text, not the place, never flips.
    assert_eq!(find(Some("Fact checker"), None, "position_bias_rate")["value"], 0.0);
    assert_eq!(find(Some("Fact checker"), None, "position_bias_rate")["n"], 12);
    // Labelled: the comparisons of the eight items with labels (pair-03 has
    // two; there one rater's best, sys-para, says nothing about sys-lead
    // against sys-short, the other's does).
    let labelled = find(None, None, "human_labelled_comparisons");
    assert_eq!((labelled["value"].as_f64(), labelled["n"].as_u64()), (Some(9.0), Some(12)));
    assert!(find(None, None, "human_majority_agreement")["value"].as_f64().is_some());
}

// ---------------------------------------------------------------------------
// CollabEval's pairwise mode, and people's blind labels
// ---------------------------------------------------------------------------

/// Ann and Bea judge fairly, Cal always says A; a final judge judges fairly.
fn collab_judges(req: &ChatRequest, _: usize) -> ScriptedReply {
    let text: String = req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n");
    if text.contains("You are Cal") && !text.contains("You are the final judge") {
        return ScriptedReply::Text(verdict("A"));
    }
    ScriptedReply::Text(verdict(fair_label(&text)))
}

fn collab_panel() -> Panel {
    let mut p = panel(Protocol::CollabEval, &[("Readers", &["Ann", "Bea", "Cal"])]);
    p.protocol.settings.insert("mode".into(), moot::panel::SettingValue::Text("pairwise".into()));
    p.consensus.max_rounds = 2;
    p
}

/// Runs every item through a CollabEval pairwise panel, one log each.
async fn write_collab_logs(dir: &Path) {
    for it in items() {
        let mut c = config(collab_panel(), scripted(collab_judges));
        c.item = it.clone();
        let writer = SessionWriter::create(dir.join(format!("{}.jsonl", it.id))).unwrap();
        let (_, outcome) = Session::start(c, Some(writer)).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{}: {:?}", it.id, outcome.error);
    }
}

/// Appends a person's blind verdict on a pair to a log.
fn append_label(log: &Path, first: &str, second: &str, winner: Option<&str>, author: &str) {
    let text = std::fs::read_to_string(log).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let mut event = serde_json::json!({
        "seq": last["seq"].as_u64().unwrap() + 1,
        "t": "2025-03-01T10:00:00Z",
        "type": "pair_labelled",
        "first": first,
        "second": second,
        "author": author,
    });
    if let Some(w) = winner {
        event["winner"] = w.into();
    }
    std::fs::write(log, format!("{text}{event}\n")).unwrap();
}

#[tokio::test]
async fn collab_eval_pairwise_sessions_are_reported_as_pairwise() {
    let tmp = tempfile::tempdir().unwrap();
    write_collab_logs(tmp.path()).await;
    let r = report_of(tmp.path(), None, 2000);
    assert_eq!(r.panels.len(), 1);
    assert_eq!(r.panels[0].protocol, "collab-eval");
    assert!(r.panels[0].pairwise);
    assert!(!r.rows.iter().any(|x| x.metric == "pearson" || x.metric == "krippendorff_alpha_interval"));
    assert!(!r.rows.iter().any(|x| x.dimension.as_deref() == Some("overall")), "no score statistics");

    // The panel: the fair readers agree when the better text comes first;
    // otherwise Cal keeps saying A and the final judge decides, fairly.
    assert_eq!(wlt(&r, None, "aggregate", "lead"), (4.0, 0.0, 0.0, 0.0));
    assert_eq!(wlt(&r, None, "aggregate", "short"), (0.0, 4.0, 0.0, 0.0));
    assert_eq!(wlt(&r, None, "aggregate", "para"), (1.0, 1.0, 0.0, 0.0));
    let win = row(&r, None, Some("aggregate"), Some("lead"), "pairwise_win_rate");
    assert!(close(win.value.unwrap(), 1.0) && win.n == Some(4), "{win:?}");
    assert!(win.ci_low.is_some() && win.ci_high.is_some());
    assert!(close(value(&r, None, Some("aggregate"), Some("para"), "pairwise_win_rate"), 0.5));
    // Each evaluator's latest label: Cal's A is the first candidate.
    assert_eq!(wlt(&r, Some("Ann"), "final", "lead"), (4.0, 0.0, 0.0, 0.0));
    assert_eq!(wlt(&r, Some("Cal"), "final", "lead"), (2.0, 2.0, 0.0, 0.0));
    assert_eq!(wlt(&r, Some("Cal"), "final", "short"), (2.0, 2.0, 0.0, 0.0));
    assert_eq!(
        row(&r, Some("Cal"), Some("final"), Some("lead"), "pairwise_win_rate").group.as_deref(),
        Some("Readers")
    );

    // One order only: position bias is no data, never 0%.
    for agent in [Some("Ann"), Some("Cal"), None] {
        for metric in ["position_bias_rate", "position_bias_win_tie_rate", "position_bias_opposite_rate"] {
            let b = row(&r, agent, None, None, metric);
            assert_eq!(b.value, None, "{agent:?} {metric}");
            assert_eq!(b.undefined_reason.as_deref(), Some("no data: judged in one order only"));
            assert_eq!(b.n, Some(0));
        }
    }
    assert_eq!(row(&r, None, None, None, "position_bias_rate").dropped, Some(15));

    // People: majorities p1 lead, p2 tie, p3 lead, p4 tie; the panel said
    // lead each time.
    let agree = row(&r, None, Some("aggregate"), None, "human_majority_agreement");
    assert!(close(agree.value.unwrap(), 0.5) && agree.n == Some(4), "{agree:?}");
    assert!(close(value(&r, None, Some("aggregate"), None, "human_any_agreement"), 0.75));
    assert!(close(value(&r, None, Some("aggregate"), None, "cohen_kappa"), 1.0 / 3.0));
    assert!(close(value(&r, None, Some("aggregate"), None, "tie_confusion_winner_as_tie"), 0.0));
    assert!(close(value(&r, None, Some("aggregate"), None, "tie_confusion_tie_as_winner"), 1.0));
    // Cal's first-candidate labels: right on p1 and p3 only.
    assert!(close(value(&r, Some("Cal"), Some("final"), None, "human_majority_agreement"), 0.5));
    assert!(close(value(&r, Some("Cal"), Some("final"), None, "human_any_agreement"), 0.5));
    let labelled = row(&r, None, None, None, "human_labelled_comparisons");
    assert_eq!((labelled.value, labelled.n), (Some(4.0), Some(5)));

    // The table says so in words.
    let mut out = Vec::new();
    moot::report::format::write_table(&r, &mut out, moot::cli::headless::Paint::for_stream(false)).unwrap();
    let table = String::from_utf8(out).unwrap();
    assert!(table.contains("Pairwise win rates") && table.contains("4-0-0"), "{table}");
    assert!(table.contains("no data: judged in one order only"), "{table}");
    assert!(!table.contains("human ratings:"), "{table}");

    // `moot eval`'s progress reads the same decisions from the logs.
    let mut tally = moot::eval::pairwise::PairTally::default();
    for it in items() {
        let comparisons = moot::eval::pairwise::comparisons_of_log(&tmp.path().join(format!("{}.jsonl", it.id)));
        tally.add_item(&comparisons.unwrap());
    }
    assert_eq!((tally.comparisons, tally.undecided, tally.items), (5, 0, 5));
    assert!(tally.line(3).unwrap().starts_with("lead 4-0-0 win 100% ["), "{:?}", tally.line(3));
}

#[tokio::test]
async fn blind_labels_are_their_authors_human_labels() {
    let tmp = tempfile::tempdir().unwrap();
    write_collab_logs(tmp.path()).await;
    // Dan labelled p5 (no item labels) and p2 blind: para, then lead.
    append_label(&tmp.path().join("p5.jsonl"), "para", "short", Some("para"), "dan");
    append_label(&tmp.path().join("p2.jsonl"), "short", "lead", Some("lead"), "dan");
    let r = report_of(tmp.path(), None, 0);
    // p2: #1 B (lead), #2 tie, dan lead: lead. p5: dan's para. The panel
    // agrees on p1, p2, p3 and p5.
    let agree = row(&r, None, Some("aggregate"), None, "human_majority_agreement");
    assert!(close(agree.value.unwrap(), 0.8) && agree.n == Some(5), "{agree:?}");
    let labelled = row(&r, None, None, None, "human_labelled_comparisons");
    assert_eq!(labelled.value, Some(5.0));
    assert_eq!(labelled.sources, Some(BTreeMap::from([("item".to_string(), 4), ("session".to_string(), 2)])));
    assert_eq!(value(&r, None, None, None, "human_raters"), 4.0);

    // A file's label by the same person replaces their blind one on that
    // pair, and the file's labels replace the item's: p2 is dan's tie.
    let human = parse_csv("id,first,second,label,rater\np2,lead,short,tie,dan\n", "labels.csv".into()).unwrap();
    let r = report_of(tmp.path(), Some(&human), 0);
    let agree = row(&r, None, Some("aggregate"), None, "human_majority_agreement");
    assert!(close(agree.value.unwrap(), 0.6) && agree.n == Some(5), "{agree:?}");
    let labelled = row(&r, None, None, None, "human_labelled_comparisons");
    assert_eq!(
        labelled.sources,
        Some(BTreeMap::from([("file".to_string(), 1), ("item".to_string(), 3), ("session".to_string(), 1)]))
    );
}

#[tokio::test]
async fn a_blind_run_records_a_human_label_the_report_counts() {
    use moot::engine::Command;
    use moot::session::event::EventKind;
    let tmp = tempfile::tempdir().unwrap();
    write_logs(tmp.path()).await;
    // p5 again, blind: dan gives his verdict before seeing the judges'.
    let it = items().pop().unwrap();
    let mut c = config(pairwise_panel(), scripted(judges));
    c.item = it.clone();
    c.blind = true;
    c.linger = true;
    std::fs::remove_file(tmp.path().join("p5.jsonl")).unwrap();
    let writer = SessionWriter::create(tmp.path().join("p5.jsonl")).unwrap();
    let mut s = Session::start(c, Some(writer));
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    s.send(Command::LabelPair {
        first: "para".into(),
        second: "short".into(),
        winner: Some("para".into()),
        author: "dan".into(),
    });
    s.wait_for(|e| matches!(&e.kind, EventKind::PairLabelled { .. })).await;
    s.send(Command::Quit { author: "dan".into() });
    let (_, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);

    let r = report_of(tmp.path(), None, 0);
    // As in `report_over_engine_logs`, and p5's para agrees with the panel.
    let agree = row(&r, None, Some("aggregate"), None, "human_majority_agreement");
    assert!(close(agree.value.unwrap(), 0.8) && agree.n == Some(5), "{agree:?}");
    let labelled = row(&r, None, None, None, "human_labelled_comparisons");
    assert_eq!(labelled.sources, Some(BTreeMap::from([("item".to_string(), 4), ("session".to_string(), 1)])));
    assert_eq!(value(&r, None, None, None, "human_raters"), 4.0);
}
