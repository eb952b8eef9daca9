//! Several human raters on scores: the statistics against scipy,
//! scikit-learn and the krippendorff package, then the report's "Human
//! raters" section over session logs written by the real engine with a
//! scripted G-Eval judge on items with three raters
//! (tests/fixtures/raters/make_fixtures.py writes the items and the
//! expected values).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use moot::item::load_items;
use moot::panel::{Protocol, SettingValue};
use moot::report::format::{self, CSV_COLUMNS};
use moot::report::{Report, ReportOptions, Row, build_report, collect_logs, load_records};
use moot::session::SessionWriter;
use moot::session::event::EndStatus;
use moot::stats::score_raters::{item_means, item_pluralities, leave_one_rater_out_scores, pair_kappa_quadratic};
use moot::stats::{AlphaLevel, CorrelationKind, complete_pairs, krippendorff_alpha};
use moot::testkit::scripted::ScriptedReply;
use serde_json::Value;
use support::*;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/raters")
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

fn matrix(v: &Value) -> Vec<Vec<Option<f64>>> {
    v.as_array().unwrap().iter().map(|row| row.as_array().unwrap().iter().map(Value::as_f64).collect()).collect()
}

const KINDS: [(CorrelationKind, &str); 2] =
    [(CorrelationKind::Pearson, "pearson"), (CorrelationKind::Spearman, "spearman")];

#[test]
fn score_rater_statistics_match_the_references() {
    let exp = expected();
    for case in exp["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let ratings = matrix(&case["ratings"]);
        let judge: Vec<Option<f64>> = case["judge"].as_array().unwrap().iter().map(Value::as_f64).collect();
        let e = &case["expected"];
        for level in [AlphaLevel::Interval, AlphaLevel::Ordinal] {
            let metric = format!("raters_{}", level.name());
            let a = krippendorff_alpha(&ratings, level).unwrap();
            close(Some(a.alpha), &e[&metric]["value"], &format!("{name}/{metric}"));
            assert_eq!(a.pairable_units as u64, e[&metric]["n"].as_u64().unwrap());
        }
        let levels: Vec<i64> = (1..=5).collect();
        for p in e["pairs"].as_array().unwrap() {
            let (a, b) = (p["raters"][0].as_u64().unwrap() as usize, p["raters"][1].as_u64().unwrap() as usize);
            let col = |r: usize| ratings.iter().map(|row| row[r]).collect::<Vec<_>>();
            let k = pair_kappa_quadratic(&col(a), &col(b), Some(&levels), 3).unwrap();
            assert_eq!(k.n as u64, p["n"].as_u64().unwrap(), "{name}: pair {a} {b}");
            if let Some(why) = p["undefined"].as_str() {
                assert_eq!(k.kappa.clone().unwrap_err().reason, why, "{name}: κ {a} {b}");
            }
            close(k.kappa.ok(), &p["value"], &format!("{name}: κ {a} {b}"));
        }
        for (truth, metric) in [(item_means(&ratings), "raters_mean"), (item_pluralities(&ratings), "raters_majority")]
        {
            let pairs = complete_pairs(&truth, &judge).unwrap();
            for (kind, kname) in KINDS {
                let want = &e[format!("{metric}_{kname}")];
                assert_eq!(pairs.n() as u64, want["n"].as_u64().unwrap());
                close(
                    kind.compute(&pairs.x, &pairs.y).ok().map(|c| c.value),
                    &want["value"],
                    &format!("{name}/{metric}_{kname}"),
                );
            }
        }
        for (kind, kname) in KINDS {
            let loo = leave_one_rater_out_scores(&ratings, &judge, kind, 3).unwrap();
            let want = &e[format!("loo_{kname}")];
            for (h, w) in loo.held_out.iter().zip(want["held_out"].as_array().unwrap()) {
                assert_eq!(h.n as u64, w["n"].as_u64().unwrap());
                if let Some(why) = w["rater_undefined"].as_str() {
                    assert_eq!(h.rater.clone().unwrap_err().reason, why, "{name}/loo rater {kname}");
                }
                close(h.rater.clone().ok(), &w["rater"], &format!("{name}/loo rater {kname}"));
                close(h.judge.clone().ok(), &w["judge"], &format!("{name}/loo judge {kname}"));
            }
            assert_eq!(loo.averaged() as u64, want["averaged"].as_u64().unwrap());
            close(loo.rater_mean().ok(), &want["rater_mean"], &format!("{name}/loo rater mean"));
            close(loo.judge_mean().ok(), &want["judge_mean"], &format!("{name}/loo judge mean"));
        }
    }
}

/// G-Eval with one draw: grammar is the score the item's text names, relevance 3.
fn judge(req: &moot::provider::ChatRequest, _: usize) -> ScriptedReply {
    if req.messages.len() == 2 && req.messages[1].content.contains("evaluation steps") {
        return "1. Read the answer.\n2. Score it.".into();
    }
    let text: String = req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n");
    let last = &req.messages.last().unwrap().content;
    if last.contains("Quality to judge — Grammar") {
        let score = text.split("The judge gives grammar ").nth(1).and_then(|s| s.chars().next()).unwrap();
        format!("Read it.\n{{\"grammar\": {score}}}").into()
    } else {
        "It answers.\n{\"relevance\": 3}".into()
    }
}

async fn write_logs(dir: &Path) {
    let items = load_items(&fixtures().join("items.jsonl")).unwrap();
    assert!(items.skipped.is_empty(), "{:?}", items.skipped);
    let mut p = panel(Protocol::GEval, &[("Judge", &["Ann"])]);
    p.protocol.settings.insert("samples".into(), SettingValue::Integer(1));
    for it in items.items {
        let mut c = config(p.clone(), scripted(judge));
        c.item = it.clone();
        let writer = SessionWriter::create(dir.join(format!("{}.jsonl", it.id))).unwrap();
        let (_, outcome) = Session::start(c, Some(writer)).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{}: {:?}", it.id, outcome.error);
    }
}

fn report_of(dir: &Path) -> Report {
    let files = collect_logs(&[dir.to_path_buf()]).unwrap();
    let loaded = load_records(&files, 2);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    build_report(loaded.records, None, &ReportOptions { bootstrap: 0, ..ReportOptions::default() })
}

fn row<'a>(r: &'a Report, stage: Option<&str>, metric: &str, raters: Option<&[&str]>) -> &'a Row {
    r.rows
        .iter()
        .find(|x| {
            x.dimension.as_deref() == Some("grammar")
                && x.group.is_none()
                && x.stage.map(|s| s.as_str()) == stage
                && x.metric == metric
                && x.raters.as_ref().map(|v| v.iter().map(String::as_str).collect::<Vec<_>>())
                    == raters.map(<[&str]>::to_vec)
        })
        .unwrap_or_else(|| panic!("no row {stage:?} {metric} {raters:?}"))
}

#[tokio::test]
async fn the_report_has_a_human_raters_section() {
    let tmp = tempfile::tempdir().unwrap();
    write_logs(tmp.path()).await;
    let r = report_of(tmp.path());
    let exp = expected();
    let e = &exp["report"];
    let names: Vec<&str> = e["raters"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(r.panels[0].raters, names);
    assert_eq!(r.panels[0].rater_items, 10);

    for metric in
        ["raters_krippendorff_alpha_interval", "raters_krippendorff_alpha_ordinal", "raters_cohen_kappa_quadratic_mean"]
    {
        let x = row(&r, None, metric, None);
        close(x.value, &e[metric]["value"], metric);
        assert_eq!(x.n.map(|n| n as u64), e[metric]["n"].as_u64(), "{metric}");
    }
    for p in e["pairs"].as_array().unwrap() {
        let pair = [names[p["raters"][0].as_u64().unwrap() as usize], names[p["raters"][1].as_u64().unwrap() as usize]];
        let x = row(&r, None, "raters_cohen_kappa_quadratic", Some(&pair));
        close(x.value, &p["value"], &format!("κ {pair:?}"));
        assert_eq!(x.n.map(|n| n as u64), p["n"].as_u64());
    }
    for name in ["raters_mean", "raters_majority"] {
        for (_, kname) in KINDS {
            let metric = format!("{name}_{kname}");
            let x = row(&r, Some("aggregate"), &metric, None);
            close(x.value, &e[&metric]["value"], &metric);
            assert_eq!(x.n.map(|n| n as u64), e[&metric]["n"].as_u64(), "{metric}");
            assert_eq!(x.dropped.map(|n| n as u64), e[&metric]["dropped"].as_u64(), "{metric}: q11 has no raters");
        }
    }
    for (_, kname) in KINDS {
        let want = &e[format!("loo_{kname}")];
        for (name, w) in names.iter().zip(want["held_out"].as_array().unwrap()) {
            let rater = row(&r, None, &format!("raters_loo_rater_{kname}"), Some(&[name]));
            close(rater.value, &w["rater"], &format!("loo {name} {kname}"));
            assert_eq!(rater.n.map(|n| n as u64), w["n"].as_u64());
            let judge = row(&r, Some("aggregate"), &format!("raters_loo_judge_{kname}"), Some(&[name]));
            close(judge.value, &w["judge"], &format!("loo judge without {name} {kname}"));
        }
        close(row(&r, None, &format!("raters_loo_rater_{kname}"), None).value, &want["rater_mean"], "loo rater mean");
        let mean = row(&r, Some("aggregate"), &format!("raters_loo_judge_{kname}"), None);
        close(mean.value, &want["judge_mean"], "loo judge mean");
        assert_eq!(mean.n.map(|n| n as u64), want["averaged"].as_u64());
    }
    // Only ann rated relevance: no section for it.
    assert!(!r.rows.iter().any(|x| x.dimension.as_deref() == Some("relevance") && x.metric.starts_with("raters_")));
    // The agreement table uses the raters' mean (and q11's own value).
    let pearson = r.rows.iter().find(|x| {
        x.dimension.as_deref() == Some("grammar")
            && x.group.is_none()
            && x.stage.map(|s| s.as_str()) == Some("aggregate")
            && x.metric == "pearson"
    });
    assert_eq!(pearson.and_then(|x| x.n), Some(11));

    // CSV carries the same numbers.
    let mut csv = Vec::new();
    format::write_csv(&r, &mut csv).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_slice());
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), CSV_COLUMNS);
    let (ci, mi, vi) = (14, 4, 5);
    let records: Vec<csv::StringRecord> = reader.records().flatten().collect();
    let found = records.iter().find(|rec| rec[mi] == *"raters_cohen_kappa_quadratic" && &rec[ci] == "ann;cal").unwrap();
    close(found[vi].parse().ok(), &e["pairs"][1]["value"], "CSV κ ann;cal");
    // Every row of the section, in CSV and JSON, carries the row's own value.
    let section: Vec<&Row> = r.rows.iter().filter(|x| x.metric.starts_with("raters_")).collect();
    let csv_rows: Vec<&csv::StringRecord> = records.iter().filter(|rec| rec[mi].starts_with("raters_")).collect();
    assert_eq!(section.len(), csv_rows.len());
    let mut json = Vec::new();
    format::write_json(&r, &mut json).unwrap();
    let json: Vec<Value> = serde_json::from_slice(&json).unwrap();
    let json_rows: Vec<&Value> = json.iter().filter(|x| x["metric"].as_str().unwrap().starts_with("raters_")).collect();
    assert_eq!(section.len(), json_rows.len());
    for ((row, rec), js) in section.iter().zip(&csv_rows).zip(&json_rows) {
        let raters = row.raters.as_ref().map(|v| v.join(";")).unwrap_or_default();
        assert_eq!((&rec[mi], &rec[ci]), (row.metric.as_str(), raters.as_str()));
        assert_eq!(rec[vi].parse::<f64>().ok(), row.value, "CSV {}", row.metric);
        // serde_json reads floats to within an ulp.
        let same = match (js["value"].as_f64(), row.value) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-12,
            (a, b) => a.is_none() && b.is_none(),
        };
        assert!(same, "JSON {}: {} vs {:?}", row.metric, js["value"], row.value);
        assert_eq!(js["n"].as_u64(), row.n.map(|n| n as u64), "JSON {}", row.metric);
    }
}

#[tokio::test]
async fn moot_report_prints_the_section() {
    let tmp = tempfile::tempdir().unwrap();
    write_logs(tmp.path()).await;
    let run = |format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_moot"))
            .arg("report")
            .arg(tmp.path())
            .args(["--format", format, "--bootstrap", "0"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let table = run("table");
    assert!(table.contains("Human raters (ann, bob, cal)"), "{table}");
    let alpha = expected()["report"]["raters_krippendorff_alpha_interval"]["value"].as_f64().unwrap();
    assert!(table.contains(&format!("interval {alpha:.3}")), "{table}");
    assert!(
        table.contains(
            "10 items rated by named raters (human_raters): the agreement table uses the mean of each item's raters"
        ),
        "{table}"
    );
    let rows: Vec<Value> = serde_json::from_str(&run("json")).unwrap();
    let pair = rows
        .iter()
        .find(|x| x["metric"] == "raters_cohen_kappa_quadratic" && x["raters"] == serde_json::json!(["ann", "bob"]))
        .unwrap();
    close(pair["value"].as_f64(), &expected()["report"]["pairs"][0]["value"], "JSON κ ann bob");
}

/// The same raters given in a `--human` file, one row per rater and item,
/// instead of in the items: every "Human raters" row is the same; renaming
/// a rater in the file shows the file's raters replace the items'.
#[tokio::test]
async fn raters_in_a_human_file_are_kept_apart_as_in_the_items() {
    let tmp = tempfile::tempdir().unwrap();
    write_logs(tmp.path()).await;
    let files = collect_logs(&[tmp.path().to_path_buf()]).unwrap();
    let opts = ReportOptions { bootstrap: 0, ..ReportOptions::default() };
    let items = load_items(&fixtures().join("items.jsonl")).unwrap();
    let csv = |rename: Option<(&str, &str)>| {
        let mut text = String::from("id,rater,grammar,relevance\n");
        for it in &items.items {
            for (rater, s) in &it.human_raters {
                let name = match rename {
                    Some((from, to)) if from == rater => to,
                    _ => rater.as_str(),
                };
                let cell = |k: &str| s.get(k).map(|v| v.to_string()).unwrap_or_default();
                text.push_str(&format!("{},{name},{},{}\n", it.id, cell("grammar"), cell("relevance")));
            }
        }
        text
    };
    let with = |text: String| {
        let file = moot::report::human::parse_csv(&text, "ratings.csv".into()).unwrap();
        assert!(file.problems.is_empty(), "{:?}", file.problems);
        build_report(load_records(&files, 2).records, Some(&file), &opts)
    };
    let raters_rows = |r: &Report| -> Vec<(String, Option<Vec<String>>, Option<f64>)> {
        r.rows
            .iter()
            .filter(|x| x.metric.starts_with("raters_") || x.metric.starts_with("loo_"))
            .map(|x| (x.metric.clone(), x.raters.clone(), x.value))
            .collect()
    };
    let from_items = report_of(tmp.path());
    let from_file = with(csv(None));
    assert!(!raters_rows(&from_items).is_empty());
    assert_eq!(raters_rows(&from_file), raters_rows(&from_items));
    assert_eq!(from_file.panels[0].raters, ["ann", "bob", "cal"]);
    let renamed = with(csv(Some(("ann", "ada"))));
    assert_eq!(renamed.panels[0].raters, ["ada", "bob", "cal"], "the file's raters, not the items'");
}
