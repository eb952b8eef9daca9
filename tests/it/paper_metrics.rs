//! Metrics as the papers define them, against reference values computed in
//! Python (tests/fixtures/metrics/make_fixtures.py: scikit-learn, scipy,
//! rouge-score, numpy): the statistics on their own, then `moot report`
//! over logs the engine wrote with scripted judges — binary human values
//! (ROC AUC, MASA's detection metrics), ROUGE-L against the reference, two
//! panels on the same items (agreement_difference), and pairwise panels
//! with four raters (MASA's agreement splits, CollabEval's tie ratios).

use crate::support;

use std::path::{Path, PathBuf};

use moot::item::load_items;
use moot::panel::{Dimension, Panel, Protocol, Scale, SettingValue};
use moot::provider::ChatRequest;
use moot::report::format::{self, CSV_COLUMNS};
use moot::report::{Report, ReportOptions, Row, build_report, collect_logs, load_records};
use moot::session::SessionWriter;
use moot::session::event::EndStatus;
use moot::stats::rouge::rouge_l_f1;
use moot::stats::{BinaryCounts, Preference, roc_auc, roc_auc_of_counts, tie_confusion};
use moot::testkit::scripted::ScriptedReply;
use serde_json::Value;
use support::*;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/metrics")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap()).unwrap()
}

fn close(got: Option<f64>, want: &Value, what: &str) {
    match (got, want.as_f64()) {
        (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{what}: got {g}, expected {w}"),
        (None, None) => {}
        (g, _) => panic!("{what}: got {g:?}, expected {want}"),
    }
}

/// A row against its reference: the value and `n` exactly; where the
/// reference has an interval (numpy's draws, not moot's), moot's interval
/// holds the estimate and is about as wide.
fn check(row: &Row, want: &Value, width_tol: f64, what: &str) {
    close(row.value, &want["value"], what);
    assert_eq!(row.n.map(|n| n as u64), want["n"].as_u64(), "n of {what}");
    if let (Some(lo), Some(hi)) = (want["low"].as_f64(), want["high"].as_f64()) {
        let (l, h, v) = (row.ci_low.unwrap(), row.ci_high.unwrap(), row.value.unwrap());
        assert!(l <= v + 1e-12 && v <= h + 1e-12, "{what}: {v} outside [{l}, {h}]");
        let (w, w_np) = (h - l, hi - lo);
        assert!((w - w_np).abs() <= width_tol, "{what}: width {w} ([{l}, {h}]) vs numpy's {w_np} ([{lo}, {hi}])");
    }
}

// ---------------------------------------------------------------------------
// The statistics on their own
// ---------------------------------------------------------------------------

#[test]
fn detection_matches_sklearn() {
    let exp = expected();
    for (i, c) in exp["stats"]["detection"].as_array().unwrap().iter().enumerate() {
        let bools = |v: &Value| v.as_array().unwrap().iter().map(|x| x.as_u64() == Some(1)).collect::<Vec<_>>();
        let counts = BinaryCounts::new(&bools(&c["truth"]), &bools(&c["said"])).unwrap();
        close(counts.accuracy().ok(), &c["detection_accuracy"], &format!("case {i} accuracy"));
        close(counts.macro_precision().ok(), &c["detection_precision"], &format!("case {i} precision"));
        close(counts.macro_sensitivity().ok(), &c["detection_sensitivity"], &format!("case {i} sensitivity"));
        close(counts.specificity().ok(), &c["detection_specificity"], &format!("case {i} specificity"));
        close(counts.macro_f1().ok(), &c["detection_f1"], &format!("case {i} f1"));
    }
}

#[test]
fn roc_auc_matches_sklearn_item_by_item_and_by_level_counts() {
    for c in expected()["stats"]["roc_auc"].as_array().unwrap() {
        let truth: Vec<bool> = c["truth"].as_array().unwrap().iter().map(|x| x.as_u64() == Some(1)).collect();
        let scores: Vec<f64> = c["scores"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        close(roc_auc(&truth, &scores).ok(), &c["value"], "roc_auc");
        let mut levels = scores.clone();
        levels.sort_by(f64::total_cmp);
        levels.dedup();
        let (mut pos, mut neg) = (vec![0u64; levels.len()], vec![0u64; levels.len()]);
        for (t, s) in truth.iter().zip(&scores) {
            let j = levels.iter().position(|l| l == s).unwrap();
            if *t { pos[j] += 1 } else { neg[j] += 1 }
        }
        close(roc_auc_of_counts(&pos, &neg).ok(), &c["value"], "roc_auc of counts");
    }
}

#[test]
fn rouge_l_matches_the_rouge_score_package() {
    for c in expected()["stats"]["rouge_l"].as_array().unwrap() {
        let (r, cand) = (c["reference"].as_str().unwrap(), c["candidate"].as_str().unwrap());
        close(Some(rouge_l_f1(r, cand)), &c["value"], &format!("{r:?} vs {cand:?}"));
    }
}

#[test]
fn collab_eval_tie_ratios_match_sklearns_confusion_matrix() {
    for c in expected()["stats"]["tie_ratios"].as_array().unwrap() {
        let prefs = |v: &Value| -> Vec<Preference> {
            v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().parse().unwrap()).collect()
        };
        let t = tie_confusion(&prefs(&c["truth"]), &prefs(&c["judge"])).unwrap();
        assert_eq!(t.misjudged as u64, c["misjudged"].as_u64().unwrap());
        close(t.gt_win_pred_tie_ratio().ok(), &c["gt_win_pred_tie_ratio"], "gt_win_pred_tie_ratio");
        close(t.gt_tie_pred_win_ratio().ok(), &c["gt_tie_pred_win_ratio"], "gt_tie_pred_win_ratio");
    }
}

// ---------------------------------------------------------------------------
// Score panels: binary human values, ROUGE-L, two panels on the same items
// ---------------------------------------------------------------------------

fn dimension(key: &str) -> Dimension {
    Dimension {
        key: key.into(),
        name: format!("{}{}", key[..1].to_uppercase(), &key[1..]),
        description: format!("Is the summary {key}?"),
        steps: None,
        labels: Vec::new(),
    }
}

/// A G-Eval panel on a 0–1 scale rating correct, support and fluency.
fn score_panel(name: &str, agent: &str) -> Panel {
    let mut p = panel(Protocol::GEval, &[("Judge", &[agent])]);
    p.name = name.into();
    p.scale = Scale { min: 0.0, max: 1.0 };
    p.dimensions = vec![dimension("correct"), dimension("support"), dimension("fluency")];
    p.overall = false;
    p.protocol.settings.insert("samples".into(), SettingValue::Integer(1));
    p
}

/// A judge that gives what the item's context says it gives (`[ann correct=1]`).
fn score_judge(who: &'static str) -> impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static {
    move |req, _| {
        if req.messages.len() == 2 && req.messages[1].content.contains("evaluation steps") {
            return "1. Read the summary.\n2. Score it.".into();
        }
        let text: String = req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n");
        let last = &req.messages.last().unwrap().content;
        let key = ["correct", "support", "fluency"]
            .into_iter()
            .find(|k| last.contains(&format!("Quality to judge — {}{}", k[..1].to_uppercase(), &k[1..])))
            .expect("a dimension");
        let tag = format!("[{who} {key}=");
        let value = text.split(&tag).nth(1).and_then(|s| s.split(']').next()).expect("a directive");
        format!("Read it.\n{{\"{key}\": {value}}}").into()
    }
}

async fn write_score_logs(dir: &Path) {
    let items = load_items(&fixtures().join("scores.jsonl")).unwrap();
    assert!(items.skipped.is_empty(), "{:?}", items.skipped);
    for (name, agent, who) in [("Metrics A", "Ann", "ann"), ("Metrics B", "Bea", "bea")] {
        for it in &items.items {
            let mut c = config(score_panel(name, agent), scripted(score_judge(who)));
            c.item = it.clone();
            let writer = SessionWriter::create(dir.join(format!("{who}-{}.jsonl", it.id))).unwrap();
            let (_, outcome) = Session::start(c, Some(writer)).finish().await;
            assert_eq!(outcome.status, EndStatus::Completed, "{}: {:?}", it.id, outcome.error);
        }
    }
}

fn report_of(dir: &Path, bootstrap: usize) -> Report {
    let files = collect_logs(&[dir.to_path_buf()]).unwrap();
    let loaded = load_records(&files, 2);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    build_report(loaded.records, None, &ReportOptions { bootstrap, ..ReportOptions::default() })
}

fn rows_of<'a>(r: &'a Report, panel: &str, dim: &str, metric: &str) -> Vec<&'a Row> {
    r.rows
        .iter()
        .filter(|x| x.panel == panel && x.dimension.as_deref() == Some(dim) && x.metric == metric && x.agent.is_none())
        .collect()
}

fn one<'a>(r: &'a Report, panel: &str, dim: &str, stage: &str, metric: &str) -> &'a Row {
    let found: Vec<&Row> = rows_of(r, panel, dim, metric)
        .into_iter()
        .filter(|x| x.group.is_none() && x.stage.map(|s| s.as_str()) == Some(stage))
        .collect();
    assert_eq!(found.len(), 1, "{panel} {dim} {stage} {metric}: {found:?}");
    found[0]
}

#[tokio::test]
async fn binary_values_rouge_l_and_two_panels_on_the_same_items() {
    let tmp = tempfile::tempdir().unwrap();
    write_score_logs(tmp.path()).await;
    let r = report_of(tmp.path(), 10_000);
    let exp = expected();
    let exp = &exp["scores"];
    assert_eq!(r.panels.len(), 2);

    // ROC AUC and detection: every stage and group of a G-Eval judge has
    // the same values; the panel-wide aggregate carries the checked interval.
    for panel in ["Metrics A", "Metrics B"] {
        for key in ["correct", "support"] {
            for (metric, want) in exp["panels"][panel][key].as_object().unwrap() {
                let all = rows_of(&r, panel, key, metric);
                // G-Eval records no phase-1 scores: its initial stage has no pairs.
                let judges: Vec<&&Row> =
                    all.iter().filter(|x| x.stage.map(|s| s.as_str()) != Some("rouge_l") && x.n != Some(0)).collect();
                assert_eq!(judges.len(), 6, "{panel} {key} {metric}: 3 stages × (panel, group)");
                for row in judges {
                    close(row.value, &want["value"], &format!("{panel} {key} {metric} {:?}", row.stage));
                }
                check(one(&r, panel, key, "aggregate", metric), want, 0.08, &format!("{panel} {key} {metric}"));
            }
        }
        // A judge giving tenths is ranked, not a detector; fluency is not binary.
        assert!(rows_of(&r, panel, "support", "detection_accuracy").is_empty());
        assert!(rows_of(&r, panel, "fluency", "roc_auc").is_empty());
    }

    // ROUGE-L of each item against its reference, beside the judges.
    for key in ["correct", "support", "fluency"] {
        for (metric, want) in exp["rouge_l"][key].as_object().unwrap() {
            check(one(&r, "Metrics A", key, "rouge_l", metric), want, 0.0, &format!("rouge_l {key} {metric}"));
        }
        assert!(rows_of(&r, "Metrics A", key, "detection_f1").iter().all(|x| x.stage.unwrap().as_str() != "rouge_l"));
    }
    let rouge = one(&r, "Metrics A", "fluency", "rouge_l", "spearman");
    assert!(rouge.ci_low.is_some(), "ROUGE-L's correlations have intervals");
    assert_eq!(rouge.dropped, Some(2), "s07 has no fluency rating, s29 no reference");

    // agreement_difference: Spearman ρ of A's aggregate minus B's, paired.
    for key in ["correct", "support", "fluency"] {
        let found = rows_of(&r, "Metrics A", key, "agreement_difference");
        assert_eq!(found.len(), 1, "{key}");
        let d = found[0];
        assert_eq!(d.versus.as_deref(), Some("Metrics B"));
        assert_eq!(d.stage.map(|s| s.as_str()), Some("aggregate"));
        check(d, &exp["difference"][key], 0.1, &format!("difference {key}"));
    }
    assert!(rows_of(&r, "Metrics B", "correct", "agreement_difference").is_empty(), "each pair once");

    // The outputs: the table's sections, the CSV's versus column, JSON's field.
    let mut table = Vec::new();
    format::write_table(&r, &mut table, moot::cli::headless::Paint::for_stream(false)).unwrap();
    let table = String::from_utf8(table).unwrap();
    for needle in ["Binary human values", "rouge_l", "Against other panels", "Metrics B", "detection as MASA"] {
        assert!(table.contains(needle), "missing {needle:?} in:\n{table}");
    }
    let mut csv = Vec::new();
    format::write_csv(&r, &mut csv).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_slice());
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), CSV_COLUMNS);
    assert_eq!(CSV_COLUMNS.last(), Some(&"versus"));
    let versus: Vec<String> = reader.records().map(|rec| rec.unwrap()[15].to_string()).collect();
    assert_eq!(versus.iter().filter(|v| v.as_str() == "Metrics B").count(), 3);
    let mut json = Vec::new();
    format::write_json(&r, &mut json).unwrap();
    let json: Vec<Value> = serde_json::from_slice(&json).unwrap();
    assert!(json.iter().all(|x| x.get("versus").is_some() == (x["metric"] == "agreement_difference")));
}

// ---------------------------------------------------------------------------
// Pairwise panels with four raters
// ---------------------------------------------------------------------------

fn shown(text: &str, which: &str) -> String {
    text.split(&format!("--- SUMMARY {which} ---\n"))
        .nth(1)
        .and_then(|s| s.split('\n').next())
        .unwrap_or("")
        .to_string()
}

/// A judge that answers as the item's context says (`[ann lead]`: prefer
/// lead in either order; `first`: always the first shown; `tie`).
fn pair_judge(who: &'static str) -> impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static {
    move |req, _| {
        let text: String = req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n");
        let tag = format!("[{who} ");
        let how = text.split(&tag).nth(1).and_then(|s| s.split(']').next()).expect("a directive");
        let label = match how {
            "first" => "A",
            "tie" => "tie",
            best if shown(&text, "A").starts_with(&format!("Summary {best}:")) => "A",
            _ => "B",
        };
        format!("Compared. {{\"verdict\": \"{label}\", \"confidence\": \"high\", \"reasoning\": \"As told.\"}}").into()
    }
}

async fn write_pair_logs(dir: &Path) {
    let items = load_items(&fixtures().join("pairs.jsonl")).unwrap();
    assert!(items.skipped.is_empty(), "{:?}", items.skipped);
    for (name, agent, who) in [("Pairs A", "Ann", "ann"), ("Pairs B", "Bea", "bea")] {
        let mut p = panel(Protocol::Pairwise, &[("Judges", &[agent])]);
        p.name = name.into();
        for it in &items.items {
            let mut c = config(p.clone(), scripted(pair_judge(who)));
            c.item = it.clone();
            let writer = SessionWriter::create(dir.join(format!("{who}-{}.jsonl", it.id))).unwrap();
            let (_, outcome) = Session::start(c, Some(writer)).finish().await;
            assert_eq!(outcome.status, EndStatus::Completed, "{}: {:?}", it.id, outcome.error);
        }
    }
}

fn pair_row<'a>(r: &'a Report, panel: &str, agent: Option<&str>, metric: &str) -> &'a Row {
    let stage = match agent {
        Some(_) => Some("final"),
        None if metric.starts_with("human_unanimous") || metric.starts_with("human_consensus") => None,
        None => Some("aggregate"),
    };
    r.rows
        .iter()
        .find(|x| {
            x.panel == panel
                && x.dimension.as_deref() == Some("pairwise")
                && x.agent.as_deref() == agent
                && x.stage.map(|s| s.as_str()) == stage
                && x.system.is_none()
                && x.versus.is_none()
                && x.metric == metric
        })
        .unwrap_or_else(|| panic!("no row {panel} {agent:?} {metric}"))
}

#[tokio::test]
async fn masa_splits_tie_ratios_and_the_difference_of_two_pairwise_panels() {
    let tmp = tempfile::tempdir().unwrap();
    write_pair_logs(tmp.path()).await;
    let r = report_of(tmp.path(), 10_000);
    let exp = expected();
    let exp = &exp["pairs"];
    for (panel, judge) in [("Pairs A", "Ann"), ("Pairs B", "Bea")] {
        for (metric, want) in exp["panels"][panel].as_object().unwrap() {
            // One judge: the panel decides as its judge does.
            let deciders: &[Option<&str>] =
                if metric.contains("position") { &[Some(judge)] } else { &[Some(judge), None] };
            for &agent in deciders {
                let what = format!("{panel} {agent:?} {metric}");
                check(pair_row(&r, panel, agent, metric), want, 0.12, &what);
            }
        }
        assert!(
            !r.rows.iter().any(|x| x.panel == panel && x.agent.is_none() && x.metric.contains("position_biased")),
            "the position split is a judge's"
        );
        for (metric, want) in exp["people"].as_object().unwrap() {
            check(pair_row(&r, panel, None, metric), want, 0.12, &format!("{panel} {metric}"));
        }
    }
    let d: Vec<&Row> = r.rows.iter().filter(|x| x.metric == "agreement_difference").collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].panel.as_str(), d[0].versus.as_deref()), ("Pairs A", Some("Pairs B")));
    assert_eq!(d[0].dimension.as_deref(), Some("pairwise"));
    check(d[0], &exp["difference"], 0.12, "pairwise difference");

    let mut table = Vec::new();
    format::write_table(&r, &mut table, moot::cli::headless::Paint::for_stream(false)).unwrap();
    let table = String::from_utf8(table).unwrap();
    for needle in ["As MASA reports", "all raters agree", "Against other panels"] {
        assert!(table.contains(needle), "missing {needle:?} in:\n{table}");
    }
}
