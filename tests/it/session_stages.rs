//! The stages of a session's scores (initial, final, aggregate,
//! human_adjusted) read the same in `moot sessions export` (CSV and JSON)
//! and `moot report`, and values a person set are marked with who set them.

use crate::support;

use std::path::Path;
use std::process::Command as Process;

use moot::engine::Command;
use moot::panel::Protocol;
use moot::report::load_records;
use moot::session::event::OverrideTarget;
use moot::session::{EventKind, SessionWriter};
use serde_json::Value;
use support::*;

/// Ann gives 4s, Bea 2s (relevance 3): the group's grammar mean is 3.
fn steady(req: &moot::provider::ChatRequest, _: usize) -> moot::testkit::scripted::ScriptedReply {
    match speaker(req).as_str() {
        "aggregator" => "They differ on grammar.".into(),
        "Ann" => evaluation(4, 4, 4).into(),
        _ => evaluation(2, 3, 2).into(),
    }
}

/// A session whose panel-wide grammar a person set to 2 (`:override final
/// grammar 2`), and Ann's final relevance to 1, after the result.
async fn overridden_session(path: &Path) {
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let mut c = config(p, scripted(steady));
    c.linger = true;
    let mut s = Session::start(c, Some(SessionWriter::create(path).unwrap()));
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    let over = |target, dimension: &str, value| Command::Override {
        target,
        dimension: dimension.into(),
        value,
        reason: Some("too generous".into()),
        author: "alice".into(),
    };
    s.send(over(OverrideTarget::Final { group: None }, "grammar", 2.0));
    s.wait_for(
        |e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, method: Some(m), .. } if m == "override"),
    )
    .await;
    s.send(over(OverrideTarget::Agent { agent: "Ann".into() }, "relevance", 1.0));
    s.wait_for(|e| matches!(&e.kind, EventKind::ScoreOverridden { dimension, .. } if dimension == "relevance")).await;
    s.send(Command::Quit { author: "alice".into() });
    s.finish().await;
}

fn export(path: &Path, format: &str) -> String {
    let out = Process::new(env!("CARGO_BIN_EXE_moot"))
        .args(["sessions", "export"])
        .arg(path)
        .args(["--format", format])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn export_and_report_agree_on_every_stage_and_mark_human_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overridden.jsonl");
    overridden_session(&path).await;

    // CSV: one row per participant and stage, with who set which value.
    let csv = export(&path, "csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(header[5..], ["grammar", "relevance", "overall", "set_by", "no_result"], "{csv}");
    let rows: Vec<Vec<String>> = reader.records().map(|r| r.unwrap().iter().map(str::to_string).collect()).collect();
    let row = |agent: &str, stage: &str| {
        rows.iter().find(|r| r[2] == agent && r[4] == stage).unwrap_or_else(|| panic!("no {agent} {stage} in {csv}"))
    };
    let panel_agg = row("(panel result)", "aggregate");
    assert_eq!((panel_agg[5].as_str(), panel_agg[8].as_str()), ("3", ""), "the protocol's own mean: {csv}");
    let panel_adj = row("(panel result)", "human_adjusted");
    assert_eq!((panel_adj[5].as_str(), panel_adj[8].as_str()), ("2", "grammar=alice;relevance=alice"), "{csv}");
    let group_adj = row("(group result)", "human_adjusted");
    assert_eq!(group_adj[3], "Teachers");
    assert_eq!(group_adj[6], "2", "Ann's relevance set to 1 changes the group's mean: {csv}");
    assert_eq!(group_adj[8], "relevance=alice", "{csv}");
    assert_eq!(row("(group result)", "aggregate")[6], "3.5", "{csv}");
    let ann_final = row("Ann", "final");
    assert_eq!((ann_final[6].as_str(), ann_final[8].as_str()), ("4", ""), "Ann's own final: {csv}");
    let ann_adj = row("Ann", "human_adjusted");
    assert_eq!((ann_adj[6].as_str(), ann_adj[8].as_str()), ("1", "relevance=alice"), "{csv}");
    assert_eq!(row("Bea", "human_adjusted")[8], "", "{csv}");
    assert_eq!(row("Ann", "initial")[5], "4");

    // JSON says the same.
    let json: Vec<Value> = serde_json::from_str(&export(&path, "json")).unwrap();
    let find = |agent: &str, stage: &str| {
        json.iter().find(|r| r["agent"] == agent && r["stage"] == stage).unwrap_or_else(|| panic!("{agent} {stage}"))
    };
    assert_eq!(find("(panel result)", "aggregate")["scores"]["grammar"], 3.0);
    assert_eq!(find("(panel result)", "aggregate")["set_by"], serde_json::json!({}));
    assert_eq!(find("(panel result)", "human_adjusted")["scores"]["grammar"], 2.0);
    assert_eq!(find("(panel result)", "human_adjusted")["set_by"]["grammar"], "alice");
    assert_eq!(find("(panel result)", "human_adjusted")["set_by"]["relevance"], "alice", "through Ann's score");
    assert_eq!(find("Ann", "final")["scores"]["relevance"], 4.0);
    assert_eq!(find("Ann", "human_adjusted")["set_by"]["relevance"], "alice");
    assert_eq!(json.len(), rows.len(), "the same rows in both formats");

    // The report reads the same values for the same stages.
    let loaded = load_records(std::slice::from_ref(&path), 1);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let r = &loaded.records[0];
    let g = r.panel.key_index("grammar").unwrap();
    let rel = r.panel.key_index("relevance").unwrap();
    assert_eq!(r.aggregate.as_ref().unwrap()[g], Some(3.0));
    assert_eq!(r.adjusted.as_ref().unwrap()[g], Some(2.0));
    assert_eq!(r.group_aggregate[0].as_ref().unwrap()[rel], Some(3.5));
    assert_eq!(r.group_adjusted[0].as_ref().unwrap()[rel], Some(2.0));
    let ann = r.agents.iter().find(|a| a.name == "Ann").unwrap();
    assert_eq!(ann.final_.as_ref().unwrap()[rel], Some(4.0), "the report's final is Ann's own, like the export's");
}

#[test]
fn exports_carry_the_labels_of_categorical_dimensions() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/sage-eval.jsonl");
    let csv = export(&path, "csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    let tone = header.iter().position(|h| h == "tone").expect("a tone column");
    let rows: Vec<Vec<String>> = reader.records().map(|r| r.unwrap().iter().map(str::to_string).collect()).collect();
    let labelled: Vec<&str> = rows.iter().map(|r| r[tone].as_str()).filter(|t| !t.is_empty()).collect();
    assert!(
        !labelled.is_empty() && labelled.iter().all(|t| ["formal", "neutral", "friendly", "playful"].contains(t)),
        "{csv}"
    );
    let results = rows.iter().filter(|r| r[2].starts_with('(')).map(|r| r[tone].as_str());
    assert!(results.into_iter().all(str::is_empty), "results have no label: {csv}");
    let json: serde_json::Value = serde_json::from_str(&export(&path, "json")).unwrap();
    assert!(json.as_array().unwrap().iter().any(|r| r["labels"]["tone"].is_string()), "{json}");
}
